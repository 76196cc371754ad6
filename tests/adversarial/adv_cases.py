"""The adversarial parameter sets (gaussian system), one dict per case.

Each case: ``name``, ``raw`` (the parameter mapping, exactly what a JSON file would hold), ``tags``
(the issue's categories), ``full_only`` (marked ``slow``: run under ``--full``), ``bug`` (a defect
still present: the test of this case is ``xfail(strict=True)``), ``regression`` (a defect this
suite found and that has been fixed since: the case guards it), ``meta`` (facts the oracle cannot
derive itself, e.g. whether a time-varying coefficient is continuous) and ``timeout`` (seconds).

Cases that the loader must reject (NaN, inf, asymmetric or indefinite Sigma0, bad shapes) are in
:data:`REJECTED`; each names the key the one-line error must mention.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EPS = 1e-9

# --- defects still open: the case is xfail(strict=True) with reason ``bug=`` (none at present) -----

# --- defects this suite found that have been fixed since (commits 980ae47, 4b6e1b0) ------------------
# The cases that found them stay as regression tests (``regression=``).

FIXED_BOUND_OVERFLOW = (
    "FIXED (false certified claim), was: gaussian_asymptotics.blowup_bound evaluates eq. (20) in float64; when "
    "beta * tr(Sigma0) overflows (V = B = 1e150 I with Sigma0 = 1e10 I, or tr Sigma0 = inf for Sigma0 = 9e307 I) "
    "it returns log1p(alpha / inf) / alpha = 0.0, and the regime certifies blows_up with "
    "blowup_time_upper_bound = 0.0 -- blow-up before t = 0 -- although the true blow-up time is positive "
    "(about 5e-311 for A = I, V = B = 1e150 I, Sigma0 = 1e10 I)")
FIXED_BOUND_SUBNORMAL = (
    "FIXED (false certified claim), was: gaussian_asymptotics.blowup_bound computes log1p(alpha / (beta y0)) / alpha "
    "* (1 + 1e-12) in float64; with beta y0 ~ 1e301 the quotient alpha / (beta y0) (alpha = -1e-12, the certified "
    "lower bound of lambda_min(A + A^T) = 0) is subnormal and keeps only ~37 bits, an error far above the 1e-12 "
    "safety factor. For d = 1, A = 0, V = B = 3e150, Sigma0 = 1 the exact blow-up time is 1/(2 * 3e150^2) = "
    "5.5555555555555556e-302, but the regime certifies blowup_time_upper_bound = 5.555555555470242e-302 "
    "(1.5e-11 too small; 3e-4 too small for V = B = 9e153)")
FIXED_SLOW_FAST_BLOWUP = (
    "FIXED (performance), was: verify takes about 70 s for d = 1, A = 0, V = B = 1e150, Sigma0 = 1 (blow-up at "
    "t = 5e-301): numeric/gaussian.integrate_moments in verify spends its whole budget of 2e6 field evaluations "
    "(then transport_check its 1e6) creeping towards the blow-up instead of stopping at the blow-up event; the "
    "per-case limit here is 20 s")


FIXED_ZERO_K = (
    "FIXED, was: the Thm 4.1 regime counted unstable eigenvalues of A with the numeric Schur threshold Re > 1e-9 "
    "(numeric/gaussian_riccati.ordered_real_schur tol) instead of the certified inertia count, so an eigenvalue "
    "with 0 < Re <= 1e-9 (or any at scale 1e-150) was dropped and the regime certified Sigma -> 0 although the "
    "exact limit has rank k >= 1")
FIXED_MU_DIVERGES = (
    "FIXED, was: regime.mu = 'diverges' was certified whenever Thm 4.11(2) applies, even for mu0 = 0, b = 0 where "
    "mu(t) = 0 for all t (the theorem only speaks of generic mu0)")
FIXED_HUGE_CRASH = (
    "FIXED, was: verify crashed (ValueError 'array must not contain infs or NaNs' from Radau's LU in "
    "numeric/gaussian.integrate_moments) when the moment field overflows at t = 0 (entries ~1e150); CLI exit 1")
FIXED_HANG = (
    "FIXED, was: verify did not finish (DOP853 looping on an overflowing field in "
    "numeric/gaussian.integrate_moments, no step limit) for Sigma0 ~ 1e160 I")
FIXED_SLOW_REACH = (
    "FIXED, was: verify took minutes (256 s) for Sigma0 = 1e150 I, A = -I, B = V = I: gaussian.thm_3_3 -> "
    "numeric/gaussian_reach.reach -> integrate_moments ground through its budget of 2e6 field evaluations")
FIXED_ZERODIV = (
    "FIXED, was: verify crashed with ZeroDivisionError in gaussian_asymptotics.thm_4_7_3 (y_star = -d lam_a / "
    "(2 lam_v lam_b): the float product lam_v * lam_b underflows to 0) for V, B ~ 1e-300")
FIXED_GROEBNER = (
    "FIXED, was: verify crashed with OverflowError ('int too large to convert to float') inside sympy "
    "solve_poly_system, called by symbolic/gaussian.equilibria_exact (Thm 4.7(1) witness, d = 2), on generic floats")
FIXED_GROEBNER_SLOW = (
    "FIXED, was: verify did not finish in 15 minutes: the exact Groebner enumeration of equilibria "
    "(symbolic/gaussian.equilibria_exact, Thm 4.7(1) witness) had no budget (B = [[0.5, 0.01], [0.01, 0.5]])")
FIXED_TV_CONST_OVERFLOW = (
    "FIXED, was: a time-varying entry that is a number beyond float64 ('1e999', '1e308*10', '2**100000') passed "
    "the loader and verify then died with ValueError 'time must be finite, got nan' (CLI exit 1, not 2)")
FIXED_INF_JSON = (
    "FIXED, was: Sigma0 = 0 (a valid, singular covariance) put kappa0_interval = [.., inf] into the Lemma 2.3 "
    "prediction; the CLI's json.dump(allow_nan=False) then failed: exit 1 'Out of range float values are not JSON "
    "compliant: inf' (also trace_bound = inf in Thm 4.7(3) for a rank-1 Sigma0)")
FIXED_CONTINUITY = (
    "FIXED, was: verify crashed with TypeError 'cannot determine truth value of Relational' inside sympy "
    "continuous_domain (flowcert.gaussian._continuity) for A[0][0] = '1/(1e300*sin(t) - 1e300)', t_end 4")
FIXED_TINY_REACH = (
    "FIXED, was: verify crashed in thm_3_3 -> numeric/gaussian_reach.reach -> integrate_moments (ValueError 'array "
    "must not contain infs or NaNs') for Sigma0 ~ 1e-160 I")


def _vec(x: Any, d: int) -> list[float]:
    return [float(v) for v in np.broadcast_to(np.asarray(x, float), (d,))]


def _has_str(x: Any) -> bool:
    return isinstance(x, str) or (isinstance(x, (list, tuple)) and any(_has_str(e) for e in x))


def P(A: Any, B: Any, V: Any, Sigma0: Any, b: Any = 0.0, mu0: Any = 0.0, **extra: Any) -> dict[str, Any]:
    """A raw gaussian parameter mapping from array-likes (floats, row-major nested lists)."""
    A = np.asarray(A, dtype=object if _has_str(A) else float)
    d = A.shape[0]
    out = {
        "A": A.tolist() if A.dtype == object else A.tolist(),
        "B": np.asarray(B, float).tolist(),
        "V": np.asarray(V, float).tolist(),
        "b": _vec(b, d),
        "mu0": _vec(mu0, d),
        "Sigma0": np.asarray(Sigma0, float).tolist(),
    }
    out.update(extra)
    return out


def _rot(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def case(name: str, raw: dict[str, Any], tags: tuple[str, ...], *, full_only: bool = False, bug: str | None = None,
         regression: str | None = None, meta: dict[str, Any] | None = None, timeout: float = 120.0) -> dict[str, Any]:
    """``bug``: a defect still present (the test is xfail(strict=True)); ``regression``: a fixed one it guards."""
    return {"name": name, "raw": raw, "tags": tags, "full_only": full_only, "bug": bug, "regression": regression,
            "meta": meta or {}, "timeout": timeout}


I1, I2, I3 = np.eye(1), np.eye(2), np.eye(3)


def hilbert(n: int) -> np.ndarray:
    return np.array([[1.0 / (i + j + 1) for j in range(n)] for i in range(n)])


def build_cases() -> list[dict[str, Any]]:
    C: list[dict[str, Any]] = []
    add = C.append
    NM, IC, NS, SG, SC, FAST, SLOW, TV = ("near_marginal", "ill_conditioned", "non_symmetric", "singular_sigma0",
                                          "scale", "fast_blowup", "slow_blowup", "time_varying")

    # --- near-marginal spectra: abscissa +-1e-9 --------------------------------------------------
    add(case("thm41_scalar_unstable_5e-10", P([[5e-10]], I1, -I1, I1), (NM,), regression=FIXED_ZERO_K))
    add(case("thm41_diag_unstable_1e-9", P(np.diag([EPS, -1.0]), I2, -I2, I2), (NM,), regression=FIXED_ZERO_K))
    add(case("thm41_diag_unstable_2e-9", P(np.diag([2 * EPS, -1.0]), I2, -I2, I2), (NM,)))
    add(case("thm41_diag_stable_-1e-9", P(np.diag([-EPS, 1.0]), I2, -I2, I2), (NM,)))
    add(case("thm41_rotation_re_+5e-10", P([[5e-10, 1.0], [-1.0, 5e-10]], I2, -I2, I2), (NM,), regression=FIXED_ZERO_K))
    add(case("thm41_rotation_re_-1e-9", P([[-EPS, 1.0], [-1.0, -EPS]], I2, -I2, I2), (NM,)))
    add(case("jordan_re_+1e-9", P([[EPS, 1.0], [0.0, EPS]], I2, -I2, I2), (NM, IC)))
    add(case("jordan_re_-1e-9", P([[-EPS, 1.0], [0.0, -EPS]], I2, -I2, I2), (NM, IC)))
    U = _rot(0.6435011087932844)
    nonnormal = U @ np.array([[EPS, 1e3], [0.0, -EPS]]) @ U.T  # float rounding moves the spectrum
    add(case("rotated_nonnormal_pm1e-9", P(nonnormal, I2, -I2, I2), (NM, IC)))
    add(case("rotated_nonnormal_pm1e-9_V_pd", P(nonnormal, I2, I2, I2), (NM, IC)))
    add(case("imaginary_axis_rotation", P([[0.0, 1.0], [-1.0, 0.0]], I2, -I2, I2), (NM,)))
    add(case("nilpotent_A", P([[0.0, 1.0], [0.0, 0.0]], I2, -I2, I2), (NM, IC)))
    add(case("zero_A", P(np.zeros((2, 2)), I2, -I2, I2), (NM,)))
    add(case("sym_part_+1e-9", P(np.diag([EPS / 2, -1.0]), I2, -I2, I2, b=[1.0, -1.0]), (NM,), regression=FIXED_ZERO_K))
    add(case("sym_part_-1e-9_nonsym_V", P(np.diag([-EPS / 2, -1.0]), I2, [[-1.0, 0.0], [0.0, -2.0]], I2), (NM,)))
    add(case("thm47_3_abscissa_-1e-9_nonnormal", P([[-EPS, 1e3], [0.0, -EPS]], I2, np.diag([-1.0, -0.5]), I2),
             (NM, IC)))
    add(case("thm47_1_abscissa_+1e-9", P([[EPS, 0.0], [0.0, 1.0]], I2 / 2, np.diag([-0.5, -0.1]), I2), (NM,)))
    add(case("thm47_1_erratum_example", P([[1.0, 4.0], [0.0, 1.0]], I2 / 2, np.diag([-0.5, -0.1]), I2), (NM,),
             full_only=True))
    add(case("lemma23_at_1+1e-9", P(-I2, I2 / 8, -I2, (1 + EPS) * I2), (NM,)))
    add(case("lemma23_at_1-1e-9", P(-I2, I2 / 8, -I2, (1 - EPS) * I2), (NM,)))
    add(case("lemma23_at_1_exact", P(-I2, I2 / 8, -I2, I2), (NM,)))
    for sign, tag in ((1, "+"), (-1, "-")):  # beta tr Sigma0 + alpha = 2 s - 2 a with s = a (1 +- 1e-9)
        add(case(f"thm48_2_trace_margin_{tag}1e-9", P(-I2, I2, I2, (1 + sign * EPS) * I2, t_end=5.0), (NM, SLOW)))
    add(case("thm48_2_trace_margin_exact0", P(-I2, I2, I2, I2, t_end=5.0), (NM,)))
    add(case("Sigma0_tiny_negative_eig", P(-I2, I2, -I2, [[1.0, 0.0], [0.0, -1e-12]]), (NM, SG)))
    add(case("Sigma0_det_negative_by_rounding", P(-I2, I2, -I2, [[1.0, 1.0], [1.0, 1.0 - 2.0**-52]]), (NM, SG)))
    add(case("B_near_singular_pd", P(-I2, [[1.0, 1.0 - 1e-12], [1.0 - 1e-12, 1.0]], -I2, I2), (NM, IC)))
    add(case("V_eta_tiny", P(np.diag([1.0, -1.0]), I2, -1e-300 * I2, I2), (NM, SC)))

    # --- ill-conditioned and defective -----------------------------------------------------------
    J3 = -1e-3 * I3 + np.diag([1.0, 1.0], 1)
    add(case("jordan3_-1e-3", P(J3, I3, -I3, I3), (IC,)))
    add(case("jordan3_+1e-3", P(1e-3 * I3 + np.diag([1.0, 1.0], 1), I3, -I3, I3), (IC,)))
    add(case("hilbert3", P(-hilbert(3), hilbert(3), -I3, hilbert(3)), (IC,)))
    add(case("nonnormal_1e8", P([[-1.0, 1e8], [0.0, -1.0]], I2, -I2, I2), (IC,)))
    add(case("B_psd_singular", P(-I2, [[1.0, 1.0], [1.0, 1.0]], -I2, I2), (IC, SG)))
    add(case("ill_conditioned_V_B_pd", P(I2, np.diag([1.0, 1e-12]), np.diag([1e12, 1.0]), I2), (IC,)))

    # --- non-symmetric where symmetry is required ------------------------------------------------
    add(case("B_nonsym_pd_sympart", P(-I2, [[1.0, 2.0], [0.0, 1.0]], -I2, I2), (NS,)))
    add(case("V_nonsym_neg_sympart", P(-I2, I2, [[-1.0, 0.5], [-0.5, -1.0]], I2), (NS,)))
    add(case("B_one_ulp_asymmetric", P(I2, [[1.0, 0.1], [np.nextafter(0.1, 1.0), 1.0]], I2, I2), (NS,)))
    add(case("V_eta_I_plus_1e-300", P(np.diag([1.0, -1.0]), I2, [[-1.0, 1e-300], [0.0, -1.0]], I2), (NS,)))
    add(case("blowup_nonsym_B", P(I2, [[1.0, 1.0], [-1.0, 1.0]], I2, I2), (NS,)))

    # --- singular Sigma0 -------------------------------------------------------------------------
    add(case("Sigma0_zero", P(I2, I2, I2, np.zeros((2, 2))), (SG,), regression=FIXED_INF_JSON))
    add(case("Sigma0_zero_stable", P(-I2, I2, -I2, np.zeros((2, 2))), (SG,), regression=FIXED_INF_JSON,
             full_only=True))
    add(case("Sigma0_rank1_blowup_params", P(I2, I2, I2, [[1.0, 1.0], [1.0, 1.0]]), (SG,)))
    add(case("Sigma0_rank1_eta", P(np.diag([1.0, -1.0]), I2, -I2, [[1.0, 0.0], [0.0, 0.0]]), (SG,)))
    add(case("Sigma0_entries_1e-300", P(-I2, I2, -I2, 1e-300 * I2), (SG, SC), regression=FIXED_TINY_REACH))

    # --- scales 1e+-150 (and beyond) -------------------------------------------------------------
    for s in (1e-150, 1e-300):
        add(case(f"stable_scaled_{s:g}", P(-s * I2, s * I2, -s * I2, I2), (SC,)))
        add(case(f"blowup_scaled_{s:g}", P(s * I2, s * I2, s * I2, I2), (SC,)))
    add(case("sigma_scaled_1e-150_stable", P(-I2, I2, I2, 1e-150 * I2), (SC,)))
    add(case("sigma_scaled_1e-300_stable", P(-I2, I2, I2, 1e-300 * I2), (SC,), regression=FIXED_TINY_REACH,
             full_only=True))
    add(case("eta_scaled_1e-150", P(np.diag([1.0, -1.0]) * 1e-150, 1e-150 * I2, -1e-150 * I2, I2), (SC,),
             regression=FIXED_ZERO_K))
    add(case("eta_scaled_1e-300", P(np.diag([1.0, -1.0]) * 1e-300, 1e-300 * I2, -1e-300 * I2, I2), (SC,),
             regression=FIXED_ZERODIV))
    add(case("blowup_sigma_scaled_1e-150", P(I2, I2, I2, 1e-150 * I2), (SC, SLOW)))
    for s in (1e150, 1e300):
        add(case(f"stable_scaled_{s:g}", P(-s * I2, s * I2, -s * I2, I2), (SC,), regression=FIXED_HUGE_CRASH,
                 full_only=s > 1e200))
        add(case(f"blowup_scaled_{s:g}", P(s * I2, s * I2, s * I2, I2), (SC, FAST), regression=FIXED_HUGE_CRASH,
                 full_only=s > 1e200))
    add(case("sigma_scaled_1e150_stable", P(-I2, I2, I2, 1e150 * I2), (SC,), regression=FIXED_SLOW_REACH,
             timeout=60.0))
    add(case("sigma_scaled_1e160_stable", P(-I2, I2, I2, 1e160 * I2), (SC,), regression=FIXED_HANG,
             timeout=60.0, full_only=True))
    add(case("sigma_scaled_1e-160_stable", P(-I2, I2, I2, 1e-160 * I2), (SC,), regression=FIXED_TINY_REACH))
    add(case("blowup_bound_overflow_VB_1e150_Sigma0_1e10", P(I2, 1e150 * I2, 1e150 * I2, 1e10 * I2), (SC, FAST),
             regression=FIXED_BOUND_OVERFLOW))
    add(case("blowup_bound_overflow_trace_9e307", P(I2, I2, I2, 9e307 * I2), (SC, FAST), regression=FIXED_BOUND_OVERFLOW))
    add(case("blowup_bound_overflow_VB_1e155_A0", P(np.zeros((2, 2)), 1e155 * I2, 1e155 * I2, I2), (SC, FAST),
             regression=FIXED_BOUND_OVERFLOW, full_only=True))
    add(case("blowup_VB_1e160_overflow_d1", P(np.zeros((1, 1)), 1e160 * I1, 1e160 * I1, I1), (SC, FAST),
             regression=FIXED_BOUND_OVERFLOW, full_only=True))
    add(case("blowup_bound_subnormal_VB_3e150", P([[0.0]], [[3e150]], [[3e150]], [[1.0]]), (SC, FAST),
             regression=FIXED_BOUND_SUBNORMAL))
    add(case("blowup_bound_subnormal_VB_9e153", P([[0.0]], [[9e153]], [[9e153]], [[1.0]]), (SC, FAST),
             regression=FIXED_BOUND_SUBNORMAL, full_only=True))
    add(case("blowup_bound_tight_VB_1e150", P([[0.0]], [[1e150]], [[1e150]], [[1.0]]), (SC, FAST),
             regression=FIXED_SLOW_FAST_BLOWUP, timeout=20.0))
    add(case("mixed_scales", P([[-1.0, 1e150], [0.0, -1e-150]], I2, -I2, I2), (SC, IC), full_only=True))

    # --- blow-up within 1e-6 time units ----------------------------------------------------------
    add(case("blowup_in_5e-13", P(I2, 1e6 * I2, 1e6 * I2, I2), (FAST,)))
    add(case("blowup_in_5e-7", P(np.zeros((2, 2)), 1e3 * I2, 1e3 * I2, I2), (FAST,)))
    add(case("blowup_thm48_2_fast", P(-I2, 1e4 * I2, 1e4 * I2, I2), (FAST,)))
    add(case("blowup_fast_3d_nondiag", P(np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.5]]),
                                         1e3 * (I3 + 0.1), 1e3 * I3, hilbert(3)), (FAST,)))

    # --- blow-up only after long times -----------------------------------------------------------
    add(case("blowup_after_5e9", P(np.zeros((2, 2)), 1e-4 * I2, 1e-4 * I2, 1e-2 * I2, t_end=1000.0), (SLOW,)))
    add(case("exp_growth_then_blowup", P(I2, 1e-12 * I2, 1e-12 * I2, I2), (SLOW,)))
    add(case("blowup_near_threshold_thm48_2", P(-I2, I2, I2, (1 + 1e-6) * I2, t_end=20.0), (SLOW, NM)))
    add(case("exp_growth_no_blowup", P(5 * I2, -I2, np.zeros((2, 2)), I2), (SLOW,)))

    # --- mean regime -----------------------------------------------------------------------------
    add(case("mu_on_stable_manifold", P(I2, -I2, I2, I2), ("mean",), regression=FIXED_MU_DIVERGES))
    add(case("mu_generic_diverges", P(I2, -I2, I2, I2, mu0=[1.0, 0.5]), ("mean",)))

    # --- time-varying ----------------------------------------------------------------------------
    tv = lambda e: [[e, 0.0], [0.0, -1.0]]  # noqa: E731
    add(case("tv_pole_inside", P(tv("1/(t - 1)"), I2, -I2, I2, t_end=2.0), (TV,), meta={"continuous": False}))
    add(case("tv_tan_pole_inside", P(tv("tan(t)"), I2, -I2, I2, t_end=2.0), (TV,), meta={"continuous": False}))
    add(case("tv_pole_outside", P(tv("1/(t - 20)"), I2, -I2, I2, t_end=10.0), (TV,), meta={"continuous": True}))
    add(case("tv_abs_kink", P(tv("Abs(t - 1)"), I2, -I2, I2, t_end=2.0), (TV,), meta={"continuous": True}))
    add(case("tv_log_pole_inside", P(tv("log(Abs(t - 1))"), I2, -I2, I2, t_end=2.0), (TV,),
             meta={"continuous": False}, full_only=True))

    # --- activation ------------------------------------------------------------------------------
    add(case("tv_pole_huge_coefficients", P(tv("1/(1e300*sin(t) - 1e300)"), I2, -I2, I2, t_end=4.0), (TV, SC),
             regression=FIXED_CONTINUITY, meta={"continuous": False}))

    # --- Thm 4.7(1'): -(P V + V P) > 0 at the PD equilibrium S = diag(1, 4), margin +-1e-9 -------
    for c, tag in ((0.8 - EPS, "+"), (0.8 + EPS, "-")):
        Vc = np.array([[-1.0, c], [c, -1.0]])
        S = np.diag([1.0, 4.0])
        add(case(f"thm47_1_prime_lmi_margin_{tag}1e-9", P(-Vc @ S, I2, Vc, S), (NM,)))

    # --- Thm 4.7(1) witness: exact Groebner enumeration on generic floats -------------------------
    add(case("thm47_1_groebner_generic_floats", {
        "A": [[1.0034558419206479, 4.008216181435012], [0.003304370761833871, 0.9869684276839564]],
        "B": [[0.5090535586667312, -0.00045289331498136933], [-0.00045289331498136933, 0.5058111810419635]],
        "V": [[-0.49635427603813925, 0.0016127736898566137], [0.0016127736898566137, -0.09453287013387554]],
        "b": [0.0, 0.0], "mu0": [0.0, 0.0], "Sigma0": [[1.0, 0.0], [0.0, 1.0]]}, (IC,), regression=FIXED_GROEBNER))
    add(case("thm47_1_groebner_B12_0.01", P([[1.0, 4.0], [0.0, 1.0]], [[0.5, 0.01], [0.01, 0.5]], np.diag([-0.5, -0.1]),
                                            I2), (IC,), regression=FIXED_GROEBNER_SLOW, timeout=120.0,
             full_only=True))

    add(case("relu_activation", P(-I2, I2, -I2, I2, activation="relu"), ("activation",)))

    # --- stiffness: eigenvalues of A spread over 6 and 9 decades (DOP853 must hand over to Radau) -----
    add(case("stiff_A_1e6", P(np.diag([-1e6, -1.0]), I2, -I2, I2, t_end=50.0), (IC,)))
    add(case("stiff_A_1e9_nonnormal", P([[-1e9, 1e3], [0.0, 0.5]], I2, -I2, I2, t_end=20.0), (IC, NM)))

    # --- sizes where the rounded-float PD proof and the approximate-inverse Kantorovich bound act ---
    rng = np.random.default_rng(12)
    for d in (10, 14):
        K = rng.normal(size=(d, d))
        # A = I + skew, V = -I, B = I: Sigma = I is a PD equilibrium (A + A^T + 2 V B = 0)
        add(case(f"pd_equilibrium_d{d}", P(np.eye(d) + 0.3 * (K - K.T), np.eye(d), -np.eye(d),
                                          np.eye(d) + 0.01 * np.diag(rng.random(d))), ("size",),
                 full_only=True))  # the mpmath oracle needs ~30 s at d = 10

    # --- issue 10: regimes that only a proof may decide (run with --full) ------------------------------
    Z2, ROT = np.zeros((2, 2)), [[0.0, -1.0], [1.0, 0.0]]
    G10 = "issue10"
    add(case("exp_growth_A_I_B_V_0", P(I2, Z2, Z2, [[1.0, 0.2], [0.2, 0.5]], t_end=20.0), (G10,), full_only=True))
    add(case("exp_growth_skew_B", P(I2, [[0.0, 1.0], [-1.0, 0.0]], I2, I2, t_end=20.0), (G10,), full_only=True))
    add(case("near_singular_Sigma_t", P([[0.0, 5.0], [-5.0, 0.1]], I2, -0.01 * I2,
                                        [[1.0, 1.0 - 1e-12], [1.0 - 1e-12, 1.0]], t_end=30.0), (G10,), full_only=True))
    add(case("detectable_not_strict_rotation", P(ROT, np.diag([1.0, 0.0]), -I2, I2, t_end=20.0), (G10,),
             full_only=True))
    add(case("eigenvalues_sum_zero", P(np.diag([1.0, -1.0]), I2, -I2, I2), (G10,), full_only=True))
    add(case("eigenvalues_sum_zero_complex", P([[1.0, 2.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -0.5]], np.eye(3),
                                               -np.eye(3), np.eye(3)), (G10,), full_only=True))
    add(case("rotation_free", P(ROT, Z2, Z2, I2, t_end=10.0), (G10,), full_only=True))
    add(case("float_refutation_thm47_1", P([[1.0, 4.0], [0.0, 1.0]], I2 / 2, np.diag([-0.5, -0.1]), I2, t_end=60.0),
             (G10,), full_only=True))
    add(case("slow_singular_limit_short_t_end", P([[1.0, 4.0], [0.0, 1.0]], I2 / 2, np.diag([-0.5, -0.1]), I2,
                                                  t_end=3.0), (G10,), full_only=True))
    add(case("heavy_tailed_particles", P(Z2, 2 * I2, -I2, I2, t_end=1.0), (G10,), full_only=True))
    return C


CASES = build_cases()


# --- inputs the loader must reject with exit code 2 and one line naming the key -------------------
def _json_raw(**kw: Any) -> dict[str, Any]:
    raw = P(-I2, I2, -I2, I2)
    raw.update(kw)
    return raw


REJECTED: list[tuple[str, Any, str]] = [
    # (name, raw mapping or JSON text, key that the message must name)
    ("A_nan", "NAN_A", "A"),
    ("B_inf", "INF_B", "B"),
    ("Sigma0_neg_inf", "NEGINF_SIGMA", "Sigma0"),
    ("Sigma0_asymmetric", _json_raw(Sigma0=[[1.0, 0.1], [0.2, 1.0]]), "Sigma0"),
    ("Sigma0_asym_one_ulp", _json_raw(Sigma0=[[1.0, 0.1], [float(np.nextafter(0.1, 1)), 1.0]]), "Sigma0"),
    ("Sigma0_indefinite", _json_raw(Sigma0=[[1.0, 0.0], [0.0, -1.0]]), "Sigma0"),
    ("Sigma0_indefinite_small", _json_raw(Sigma0=[[1.0, 0.0], [0.0, -1e-6]]), "Sigma0"),
    ("A_wrong_shape", _json_raw(A=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), "A"),
    ("b_column", _json_raw(b=[[0.0], [0.0]]), "b"),
    ("mu0_scalar", _json_raw(mu0=0.0), "mu0"),
    ("V_ragged", _json_raw(V=[[1.0], [0.0, 1.0]]), "V"),
    ("Sigma0_empty", _json_raw(Sigma0=[]), "Sigma0"),
    ("B_bool", _json_raw(B=[[True, 0.0], [0.0, 1.0]]), "B"),
    ("int_too_large", _json_raw(A=[[10**400, 0], [0, 1]]), "A"),
    # FIXED_TV_CONST_OVERFLOW: numbers beyond float64 written as time-varying strings
    ("A_tv_constant_1e999", _json_raw(A=[["1e999", 0.0], [0.0, -1.0]]), "A"),
    ("B_tv_constant_1e308x10", _json_raw(B=[["1e308*10", 0.0], [0.0, 1.0]]), "B"),
    ("b_tv_constant_2pow100000", _json_raw(b=["2**100000", 0.0]), "b"),
]


def rejected_json_text(spec: Any) -> str:
    import json

    if isinstance(spec, str):
        base = json.dumps(_json_raw())
        raw = _json_raw()
        if spec == "NAN_A":
            raw["A"] = [[float("nan"), 0.0], [0.0, -1.0]]
        elif spec == "INF_B":
            raw["B"] = [[1.0, float("inf")], [0.0, 1.0]]
        elif spec == "NEGINF_SIGMA":
            raw["Sigma0"] = [[float("-inf"), 0.0], [0.0, 1.0]]
        del base
        return json.dumps(raw)  # json writes NaN / Infinity / -Infinity, which load_file reads
    return json.dumps(spec)
