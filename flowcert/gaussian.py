r"""Catalogue entries and the ``verify gaussian`` job (gaussian paper: Prop. 2.1, Lemma 3.1,
Thm. 4.7(2), Thm. 4.8(1), the local stability certificate of Thm. 4.7(1′), Table 1).

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

Blow-up bound of Thm. 4.8, eq. (20), with :math:`\alpha=\lambda_{\min}(A+A^\top)`,
:math:`\beta=2\lambda_{\min}(V)\lambda_{\min}(B)/d`, :math:`y_0=\operatorname{tr}\Sigma_0`:
:math:`T_f\le\frac1\alpha\log(1+\frac{\alpha}{\beta y_0})` (and :math:`1/(\beta y_0)` at :math:`\alpha=0`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from . import __version__
from .catalogue import CrossCheck, TheoremResult
from .certificates import core
from .certificates import gaussian as cert
from .numeric import gaussian as ng
from .params import GaussianParams
from .symbolic import gaussian as sym

ZERO_TOL = 1e-9


def coefficients(p: GaussianParams) -> ng.Coefficients:
    """``t -> (A, B, V, b)`` for the integrators."""
    return ng.constant(p.A, p.B, p.V, p.b) if not p.time_varying else p.at


def _holds(name: str, method: str, detail: str = "") -> core.HypothesisResult:
    return core.HypothesisResult(name, "holds", None, method, None, detail)


def lower_eigenvalue_bound(M: np.ndarray) -> Fraction | None:
    """A rational :math:`\\ell` with :math:`M-\\ell I\\succeq0` proved exactly (M symmetric)."""
    lam = float(np.linalg.eigvalsh(M).min())
    Mq = core.rational_matrix(M)
    if Mq != Mq.T:
        return None
    for slack in (1e-12, 1e-9, 1e-6, 1e-3):
        ell = Fraction(lam - slack * max(1.0, abs(lam)))
        if core.is_psd(Mq - sp.Rational(ell.numerator, ell.denominator) * sp.eye(Mq.rows)):
            return ell
    return None


def definite(M: np.ndarray, name: str, sign: int) -> core.HypothesisResult:
    """Exact verdict on :math:`\\mathrm{sign}\\cdot M\\succ0` (M must be symmetric)."""
    Mq = core.rational_matrix(sign * M)
    what = f"{'' if sign > 0 else '-'}{name}"
    if Mq != Mq.T:
        return core.HypothesisResult(f"{what} > 0", "fails", None, "exact symmetry", None, f"{name} is not symmetric")
    margin = float(np.linalg.eigvalsh(sign * M).min())
    if core.is_pd(Mq):
        c = core.Certificate("pd", f"{what} is positive definite", {"M": core.encode(Mq), "margin": "0"})
        return core.certified(f"{what} > 0", "holds", c, margin, "exact rational LDL^T")
    return core.HypothesisResult(f"{what} > 0", "fails", margin, "exact rational LDL^T", None, f"smallest eigenvalue of {what} is {margin:.3e}")


def semidefinite(M: np.ndarray, name: str) -> core.HypothesisResult:
    """Exact verdict on :math:`M\\succeq0`."""
    return core.psd_hypothesis(f"{name} >= 0", M, name)


# ---------------------------------------------------------------------------------------
# Prop. 2.1 and Lemma 3.1
# ---------------------------------------------------------------------------------------


def prop_2_1(p: GaussianParams, simulate: bool, seed: int = 0) -> TheoremResult:
    """Prop. 2.1: Gaussian data stay Gaussian, with moments solving eq. (7)."""
    proofs = sym.proofs()
    hyps = [
        _holds("activation_identity", "parameter") if p.activation == "identity"
        else core.HypothesisResult("activation_identity", "fails", None, "parameter", None, f"activation is {p.activation}"),
        semidefinite(p.Sigma0, "Sigma0"),
        _continuity(p),
        core.HypothesisResult(
            "moment_closure_proved",
            "holds" if all(q.proved for q in proofs) else "unknown",
            None,
            "SymPy matrix-level normal forms (size-independent)",
            None,
            ", ".join(f"{q.name}: {'0' if q.proved else 'nonzero'}" for q in proofs),
        ),
    ]
    prediction = {
        "law": "rho_t = N(mu(t), Sigma(t)) on [0, T_max), (mu, Sigma) solving eq. (7)",
        "mu_dot": "(A + V + V Sigma B) mu + b",
        "Sigma_dot": "A Sigma + Sigma A^T + V Sigma B Sigma + Sigma B^T Sigma V^T",
    }
    result = TheoremResult(
        "gaussian:prop-2.1", "Proposition 2.1",
        r"\rho_0=\mathcal N(\mu_0,\Sigma_0),\ \sigma=\mathrm{id}\ \Rightarrow\ \rho_t=\mathcal N(\mu(t),\Sigma(t)),\ "
        r"\dot\mu=(A+V+V\Sigma B)\mu+b,\ \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top",
        hyps, prediction,
    )
    if simulate:
        result.cross_check = particle_cross_check(p, seed)
    return result


def _continuity(p: GaussianParams) -> core.HypothesisResult:
    if not p.time_varying:
        return _holds("coefficients_continuous", "constant parameters")
    from sympy.calculus.util import continuous_domain

    t = sp.Symbol("t", real=True)
    window = sp.Interval(0, p.t_end)
    for key in ("A", "B", "V", "b"):
        value = getattr(p, key)
        if isinstance(value, sp.MatrixBase):
            for e in value:
                if e.free_symbols and not window.is_subset(continuous_domain(e, t, window)):
                    return core.HypothesisResult("coefficients_continuous", "fails", None, "sympy continuous_domain", None, f"{key} entry {e} is discontinuous on [0, t_end]")
    return _holds("coefficients_continuous", "sympy continuous_domain on [0, t_end]")


def particle_cross_check(p: GaussianParams, seed: int = 0) -> CrossCheck:
    """Particles with empirical attention vs eq. (7): the error must shrink as N grows."""
    if p.activation != "identity":
        return CrossCheck("skipped", {"reason": "Prop. 2.1 needs the identity activation"})
    c = coefficients(p)
    t_check = min(1.0, p.t_end)
    sol = ng.integrate_moments(c, p.mu0, p.Sigma0, t_check)
    if sol.blowup_time is not None:
        t_check = 0.5 * sol.blowup_time
    study = ng.particle_study(c, p.mu0, p.Sigma0, t_check, seed=seed)
    ok = study.rate < -0.25 and study.errors[-1] < study.errors[0]
    return CrossCheck(
        "agrees" if ok else "disagrees",
        {"N": study.Ns, "error": study.errors, "rate": study.rate, "t": study.t_check,
         "criterion": "log-log slope of the moment error against N below -0.25 (theory: -1/2)"},
    )


def lemma_3_1(p: GaussianParams) -> TheoremResult:
    """Lemma 3.1: Sigma(t) = Psi Sigma0 Psi^T with det Psi > 0, so rank and inertia are constant."""
    t_end = min(p.t_end, 10.0)
    tc = ng.transport_check(coefficients(p), p.Sigma0, t_end)
    r0 = int(np.linalg.matrix_rank(p.Sigma0, tol=1e-8 * max(float(np.linalg.norm(p.Sigma0, 2)), 1e-300)))
    tol = 1e-8 + 1e-9 * tc.cond_psi  # errors in Sigma are amplified by cond(Psi)
    ok = tc.residual < tol and tc.liouville < 1e-7
    details = {
        "t_end": float(tc.t[-1]), "transport_residual": tc.residual, "liouville_residual": tc.liouville,
        "rank0": r0, "numerical_ranks": sorted(set(tc.ranks)), "max_cond_Psi": tc.cond_psi,
        "tolerance": tol,
        "criterion": "relative residual of Sigma = Psi Sigma0 Psi^T below 1e-8 + 1e-9 cond(Psi), and of "
                     "log det Psi = int tr M below 1e-7 (integration at rtol 1e-11); numerical ranks use sigma_i > 1e-8 sigma_max and can "
                     "drop only when Psi is ill conditioned (rank is lost in the limit t -> inf, not before)",
    }
    return TheoremResult(
        "gaussian:lemma-3.1", "Lemma 3.1",
        r"\operatorname{rank}\Sigma(t)=\operatorname{rank}\Sigma_0\ \text{for } t<T_{\max},\ \Sigma(t)=\Psi\Sigma_0\Psi^\top,\ \dot\Psi=(A+V\Sigma B)\Psi",
        [semidefinite(p.Sigma0, "Sigma0"), _continuity(p)],
        {"rank": r0, "inertia": [r0, 0, p.d - r0]},
        CrossCheck("agrees" if ok else "disagrees", details),
    )


# ---------------------------------------------------------------------------------------
# Table 1: global results with certified hypotheses, then the local analysis
# ---------------------------------------------------------------------------------------


def thm_4_7_2(p: GaussianParams) -> TheoremResult:
    """Thm. 4.7(2): V < 0, B > 0, lambda_max(A + A^T) <= 0 imply Sigma(t) -> 0."""
    hyps = [definite(p.V, "V", -1), definite(p.B, "B", 1), semidefinite(-(p.A + p.A.T), "-(A + A^T)")]
    return TheoremResult(
        "gaussian:thm-4.7.2", "Theorem 4.7 (2)",
        r"V\prec0,\ B\succ0,\ \lambda_{\max}(A+A^\top)\le0\ \Rightarrow\ \Sigma(t)\to0",
        hyps, {"Sigma": "converges_zero"},
        correction="The hypothesis Re spec(A) <= 0 is implied by lambda_max(A + A^T) <= 0 (note 000, erratum 7).",
    )


def thm_4_8_1(p: GaussianParams) -> TheoremResult:
    """Thm. 4.8(1): V > 0, B > 0, lambda_min(A + A^T) >= 0 imply blow-up before bound (20)."""
    hyps = [definite(p.V, "V", 1), definite(p.B, "B", 1), semidefinite(p.A + p.A.T, "A + A^T"), definite(p.Sigma0, "Sigma0", 1)]
    result = TheoremResult(
        "gaussian:thm-4.8.1", "Theorem 4.8 (1)",
        r"V\succ0,\ B\succ0,\ \alpha=\lambda_{\min}(A+A^\top)\ge0\ \Rightarrow\ T_f\le\tfrac1\alpha\log\!\big(1+\tfrac{\alpha}{\beta\operatorname{tr}\Sigma_0}\big)",
        hyps, {"Sigma": "blows_up"},
    )
    if result.applies:
        result.prediction["blowup_time_upper_bound"] = blowup_bound(p)
    return result


def blowup_bound(p: GaussianParams) -> float | None:
    """Eq. (20) from certified lower bounds of alpha and beta (the bound decreases in both)."""
    a = lower_eigenvalue_bound(p.A + p.A.T)
    lv, lb = lower_eigenvalue_bound(p.V), lower_eigenvalue_bound(p.B)
    if a is None or lv is None or lb is None or lv <= 0 or lb <= 0:
        return None
    alpha = max(float(a), 0.0)
    beta = 2 * float(lv) * float(lb) / p.d
    y0 = float(np.trace(p.Sigma0))
    bound = 1.0 / (beta * y0) if alpha == 0 else math.log1p(alpha / (beta * y0)) / alpha
    return bound * (1 + 1e-12)  # round up past floating-point error


def regime(p: GaussianParams, sol: ng.MomentSolution, theorems: list[TheoremResult]) -> dict[str, Any]:
    """Table 1 as an answer for constant parameters, certified wherever a theorem applies."""
    out: dict[str, Any] = {"Sigma": "unknown", "mu": "unknown", "Sigma_inf": None, "mu_inf": None,
                           "blowup_time_upper_bound": None, "basis": "simulation", "equilibrium": None}
    if p.time_varying:
        out["reason"] = "time-varying parameters: Table 1 covers constant ones"
        return out
    by_id = {t.id: t for t in theorems}
    if by_id["gaussian:thm-4.8.1"].applies:
        out.update(Sigma="blows_up", basis="certified",
                   blowup_time_upper_bound=by_id["gaussian:thm-4.8.1"].prediction.get("blowup_time_upper_bound"))
        return out
    if by_id["gaussian:thm-4.7.2"].applies:
        out.update(Sigma="converges_zero", Sigma_inf=np.zeros((p.d, p.d)).tolist(), basis="certified")
        return _mean_limit(p, sol, np.zeros((p.d, p.d)), out)
    if sol.status == "blowup":
        out.update(Sigma="blows_up", blowup_time_upper_bound=None)
        return out
    S_end = sol.Sigma[-1]
    S_inf = ng.newton_equilibrium(p.A, p.B, p.V, S_end)
    scale = 1.0 + np.abs(p.Sigma0).max()
    if S_inf is None or np.abs(S_inf - S_end).max() > 1e-4 * scale:
        grows = np.linalg.norm(S_end) > 1e3 * scale
        out["Sigma"] = "unbounded" if grows else "bounded"
        return out
    if np.abs(S_inf).max() <= ZERO_TOL * scale:
        S_inf = np.zeros_like(S_inf)
    w = np.linalg.eigvalsh(S_inf)
    tol = 1e-8 * max(1.0, float(np.abs(w).max()))
    kind = "converges_zero" if not S_inf.any() else ("converges_pd" if w.min() > tol else "converges_singular")
    out.update(Sigma=kind, Sigma_inf=S_inf.tolist())
    out["equilibrium"] = cert.stability(p.A, p.B, p.V, S_inf).to_json()
    return _mean_limit(p, sol, S_inf, out)


def _mean_limit(p: GaussianParams, sol: ng.MomentSolution, S_inf: np.ndarray, out: dict[str, Any]) -> dict[str, Any]:
    """Mean limit :math:`-(A+V+V\\Sigma_\\infty B)^{-1}b` when that matrix is Hurwitz."""
    M_mu = p.A + p.V + p.V @ S_inf @ p.B
    abscissa = float(np.linalg.eigvals(M_mu).real.max())
    if abscissa < -1e-9:
        out.update(mu="converges", mu_inf=(-np.linalg.solve(M_mu, p.b)).tolist())
    elif abscissa > 1e-9:
        out["mu"] = "diverges" if np.linalg.norm(sol.mu[-1]) > 1e3 * (1 + np.linalg.norm(p.mu0) + np.linalg.norm(p.b)) else "unknown"
    return out


def _agrees(reg: dict[str, Any], sol: ng.MomentSolution) -> bool | None:
    kind = reg["Sigma"]
    if kind == "blows_up":
        bound = reg["blowup_time_upper_bound"]
        return sol.blowup_time is not None and (bound is None or sol.blowup_time <= bound)
    if kind.startswith("converges") and reg["Sigma_inf"] is not None:
        S_inf = np.array(reg["Sigma_inf"])
        return bool(np.abs(sol.Sigma[-1] - S_inf).max() <= 1e-3 * (1 + np.abs(S_inf).max()))
    return None


def verify(p: GaussianParams, simulate: bool = False, seed: int = 0) -> dict[str, Any]:
    """Run every gaussian catalogue entry on ``p``; the JSON document of ``verify gaussian``."""
    sol = ng.integrate_moments(coefficients(p), p.mu0, p.Sigma0, p.t_end)
    theorems = [prop_2_1(p, simulate, seed), lemma_3_1(p)]
    if not p.time_varying:
        theorems += [thm_4_7_2(p), thm_4_8_1(p)]
    doc: dict[str, Any] = {
        "flowcert": __version__,
        "system": "gaussian",
        "params": p.to_json(),
        "theorems": [t.to_json() for t in theorems],
        "regime": regime(p, sol, theorems),
    }
    if simulate:
        doc["simulation"] = {
            "t_end": float(sol.t[-1]),
            "blowup_time": sol.blowup_time,
            "mu_final": sol.mu[-1].tolist(),
            "Sigma_final": sol.Sigma[-1].tolist(),
            "agrees": _agrees(doc["regime"], sol),
            "integrator": "scipy solve_ivp DOP853 (Radau on stall), rtol 1e-10, atol 1e-12, terminal blow-up event",
        }
    return doc
