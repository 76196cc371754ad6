"""Exact decisions on PD equilibria of eq. (18) and on hypotheses of Thms 4.8(2) and 4.11(2).

Oracles, all independent of the code under test:

* trace monotonicity: for random PD Sigma the sign of tr F(Sigma), F recomputed by hand
  (F = A S + S A^T + V S B S + S B^T S V^T);
* V = eta I, A = a I + K (K skew), B = b I: P = Sigma^{-1} solves A^T P + P A = -2 eta b I, so
  P = (-eta b / a) I and Sigma = (a / (-eta b)) I is the unique PD equilibrium iff a / (-eta b) > 0;
* Thm 4.8(2) with V = v I, B = c I, A + A^T = 2a I, Sigma0 = s I: alpha = 2a, beta = 2 v c / d,
  so the condition reads 2 v c s + 2a > 0 exactly;
* eigenvalue counts of block-diagonal A with known spectra.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exact_helpers import exact_pd, exact_psd, qmat
from flowcert.certificates import core
from flowcert.certificates import gaussian as cg
from flowcert.certificates.hypotheses import min_eigenvalue_upper_bound
from flowcert.gaussian import asymptotics, catalogue
from flowcert.numeric import gaussian as ng
from flowcert.gaussian.params import parse_gaussian

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _F(A, B, V, S):
    return A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T


def _p(A, B, V, Sigma0, t_end=2.0):
    d = len(A)
    return parse_gaussian({"A": np.asarray(A, float).tolist(), "B": np.asarray(B, float).tolist(),
                           "V": np.asarray(V, float).tolist(), "b": [0.0] * d, "mu0": [0.0] * d,
                           "Sigma0": np.asarray(Sigma0, float).tolist(), "t_end": t_end})


def _theorems(p):
    sol = ng.integrate_moments(catalogue.coefficients(p), p.mu0, p.Sigma0, p.t_end)
    theorems, _ = asymptotics.entries(p, sol)
    return {t.id: t for t in theorems}


def _hyp(theorem, name):
    return next(h for h in theorem.hypotheses if h.name == name)


def _spd(rng, d, lo=0.2):
    G = rng.normal(size=(d, d))
    return G @ G.T / d + lo * np.eye(d)


# ---- trace monotonicity ------------------------------------------------------------------


@SETTINGS
@given(d=st.integers(1, 5), seed=st.integers(0, 2**31 - 1), sv=st.sampled_from([1, -1]), sb=st.sampled_from([1, -1]))
def test_trace_certificate_sign_matches_random_pd_points(d, seed, sv, sb):
    rng = np.random.default_rng(seed)
    s = sv * sb
    K = rng.normal(size=(d, d))
    A = 0.5 * (K - K.T) + s * 0.5 * _spd(rng, d)  # s (A + A^T) > 0
    V, B = sv * _spd(rng, d), sb * _spd(rng, d)
    V = 0.5 * (V + V.T)
    out = cg.no_pd_equilibrium_trace(A, B, V)
    assert out is not None and out.status == "fails" and core.recheck(out.certificate)
    for _ in range(20):
        S = _spd(rng, d, lo=1e-3)
        assert s * np.trace(_F(A, B, V, S)) > 0


def test_trace_certificate_rejects_forged_signs_and_mixed_data():
    A, B, V = -np.eye(3), np.eye(3), -np.eye(3)
    out = cg.no_pd_equilibrium_trace(A, B, V)
    assert out is not None and out.status == "fails"
    forged = out.certificate.to_json()
    forged["data"] = {**forged["data"], "sign_V": 1}
    assert not core.recheck(forged)  # V = -I is not PSD
    # a V of mixed sign: nothing proved (and a PD equilibrium does exist for some such data)
    assert cg.no_pd_equilibrium_trace(A, B, np.diag([1.0, -1.0, -1.0])) is None


def test_trace_certificate_needs_one_symmetric_factor():
    K = np.array([[0.0, 1.0], [-1.0, 0.0]])
    assert cg.no_pd_equilibrium_trace(-np.eye(2), np.eye(2) + K, -np.eye(2) + K) is None


# ---- V = eta I: existence decided by the inertia of A ---------------------------------------


@pytest.mark.parametrize("a, eta, b, exists", [(0.7, -1.0, 2.0, True), (-0.7, -1.0, 2.0, False),
                                               (-0.5, 1.0, 1.5, True), (0.5, 1.0, 1.5, False)])
def test_eta_route_matches_the_scalar_closed_form(a, eta, b, exists):
    d = 3
    K = np.array([[0.0, 1.0, -0.5], [-1.0, 0.0, 0.25], [0.5, -0.25, 0.0]])
    A, B, V = a * np.eye(d) + K, b * np.eye(d), eta * np.eye(d)
    p = _p(A, B, V, 0.3 * np.eye(d))
    lemma = _theorems(p)["gaussian:lemma-4.4"]
    h = _hyp(lemma, "pd_equilibrium_exists")
    assert h.status == ("holds" if exists else "fails")
    assert core.recheck(h.certificate)
    if exists:
        S = (a / (-eta * b)) * np.eye(d)
        assert np.abs(_F(A, B, V, S)).max() < 1e-14
        M = A + V @ S @ B  # = K: purely imaginary spectrum (Lemma 4.4)
        assert lemma.cross_check.status == "agrees"
        assert np.allclose(sorted(np.array(lemma.prediction["eigenvalues"])[:, 1]), sorted(np.linalg.eigvals(M).imag))


def test_eta_route_at_a_size_beyond_the_kantorovich_cap():
    """d = 24 (vech 300 > 136): the existence is still decided, and Lemma 4.4's spectrum checked."""
    rng = np.random.default_rng(7)
    d = 24
    G = rng.normal(size=(d, d)) / np.sqrt(d)
    A = 0.5 * (G - G.T) + 0.8 * np.eye(d)  # A + A^T = 1.6 I: every eigenvalue has Re = 0.8
    B = _spd(rng, d)
    B = 0.5 * (B + B.T)
    p = _p(A, B, -np.eye(d), 0.2 * np.eye(d))
    lemma = _theorems(p)["gaussian:lemma-4.4"]
    h = _hyp(lemma, "pd_equilibrium_exists")
    assert h.status == "holds" and core.recheck(h.certificate)
    assert lemma.cross_check.status == "agrees"
    assert lemma.cross_check.details["max_abs_real_part"] < 1e-8


def test_eta_certificate_with_a_forged_count_is_refused():
    A, B = np.diag([1.0, 2.0]), np.eye(2)
    k, count = cg.spectrum.unstable_count(A)
    out = cg.pd_equilibrium_eta(A, B, -1.0, count)
    assert out is not None and out.status == "holds"
    forged = out.certificate.to_json()
    forged["data"] = {**forged["data"], "exists": False}
    assert not core.recheck(forged)
    other = out.certificate.to_json()
    other["data"] = {**other["data"], "A": core.encode(core.qmat(np.diag([1.0, -2.0])))}
    assert not core.recheck(other)  # the count certificate is about a different matrix


# ---- Thm 4.8(2) trace condition and Thm 4.11(2) unstable count --------------------------------


@pytest.mark.parametrize("a, v, c, s", [(-1.0, 1.0, 1.0, 0.75), (-1.0, 1.0, 1.0, 0.25), (-0.5, 2.0, 0.5, 0.4),
                                        (-0.5, 2.0, 0.5, 0.6), (-1.0, -1.0, 1.0, 0.5), (-1.0, -1.0, -1.0, 0.75),
                                        (-1.0, -1.0, -1.0, 1.5), (1.0, 1.0, -2.0, 0.5)])
def test_thm48_2_trace_condition_matches_closed_form(a, v, c, s):
    d = 3
    K = np.array([[0.0, 2.0, 0.0], [-2.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    p = _p(a * np.eye(d) + K, c * np.eye(d), v * np.eye(d), s * np.eye(d), t_end=0.5)
    h = _hyp(_theorems(p)["gaussian:thm-4.8.2"], "tr Sigma0 > -alpha / beta")
    # beta > 0 and beta tr Sigma0 + alpha > 0, with alpha = 2a, beta = 2 v c / d, tr = d s
    want = v * c > 0 and 2 * v * c * s + 2 * a > 0
    assert h.status == ("holds" if want else "fails")


def test_thm48_2_trace_condition_needs_symmetric_V():
    p = _p(-np.eye(2), np.eye(2), np.array([[1.0, 0.5], [0.0, 1.0]]), np.eye(2), t_end=0.5)
    assert _hyp(_theorems(p)["gaussian:thm-4.8.2"], "tr Sigma0 > -alpha / beta").status == "fails"


@SETTINGS
@given(d=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_min_eigenvalue_upper_bound_is_an_upper_bound(d, seed):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(d, d))
    M = G + G.T
    u = min_eigenvalue_upper_bound(M)
    assert u is not None
    # exactly: M - u I is not positive definite, i.e. lambda_min(M) <= u
    assert not exact_pd(qmat(M) - sp.Rational(u.numerator, u.denominator) * sp.eye(d))
    assert u - float(np.linalg.eigvalsh(M).min()) < 1e-6 * (1 + np.abs(M).max())


@pytest.mark.parametrize("spectrum_real, want", [([1.0, -2.0, -3.0], "holds"), ([-1.0, -2.0, -0.5], "fails")])
def test_thm411_2_unstable_hypothesis_decided_for_any_V(spectrum_real, want):
    """The count is a fact about A alone: decided even when V is not a multiple of I."""
    A = np.diag(spectrum_real)
    p = _p(A, np.eye(3), np.diag([1.0, 2.0, 3.0]), 0.5 * np.eye(3), t_end=0.2)
    h = _hyp(_theorems(p)["gaussian:thm-4.11.2"], "A has an eigenvalue with Re > 0")
    assert h.status == want and core.recheck(h.certificate)


def test_exact_psd_oracle_agrees_on_the_trace_certificate_parts():
    """The certificate's definiteness claims, re-decided by the test-side characteristic polynomial."""
    A, B, V = np.array([[-1.0, 0.5], [-0.5, -2.0]]), np.array([[2.0, 0.5], [0.5, 1.0]]), -np.eye(2)
    out = cg.no_pd_equilibrium_trace(A, B, V)
    assert out is not None
    data = out.certificate.data
    s = data["sign_V"] * data["sign_B"]
    assert exact_pd(s * (qmat(A) + qmat(A).T))
    assert exact_psd(data["sign_V"] * qmat(V)) and exact_psd(data["sign_B"] * qmat(B))


# ---- forged certificates: the checkers refuse data whose claim is false ----------------------


K2 = np.array([[0.0, 1.0], [-1.0, 0.0]])


def _trace_cert(A, B, V, sign_V, sign_B, strict):
    return {"kind": "trace_monotone", "claim": "forged", "checker": "exact-ldl",
            "data": {"A": core.encode(core.qmat(A)), "B": core.encode(core.qmat(B)), "V": core.encode(core.qmat(V)),
                     "sign_V": sign_V, "sign_B": sign_B, "strict": strict}}


def test_trace_checker_needs_the_strict_part_strictly():
    """A skew, V = 0, B = I: Sigma = I is a PD equilibrium, so no strict-part claim may pass."""
    A, B, V = K2, np.eye(2), np.zeros((2, 2))
    assert np.abs(_F(A, B, V, np.eye(2))).max() == 0.0
    for strict in ("A+A^T", "V,B"):
        assert not core.recheck(_trace_cert(A, B, V, -1, 1, strict))


def test_trace_checker_checks_the_sign_of_B():
    """d = 1, A = V = B = -1: F(s) = -2s + 2s^2 vanishes at s = 1 > 0; claiming sign_B = +1 must fail."""
    A = B = V = -np.eye(1)
    assert _F(A, B, V, np.eye(1))[0, 0] == 0.0
    assert not core.recheck(_trace_cert(A, B, V, -1, 1, "A+A^T"))


def test_trace_checker_needs_one_symmetric_factor():
    """V = -I + 3K, B = I - 3K (both non-symmetric, symmetric parts -I and I): s tr F(I) < 0 refutes the claim."""
    A, V, B = -0.1 * np.eye(2), -np.eye(2) + 3 * K2, np.eye(2) - 3 * K2
    assert -np.trace(_F(A, B, V, np.eye(2))) < 0
    assert not core.recheck(_trace_cert(A, B, V, -1, 1, "A+A^T"))


def test_trace_certificate_with_singular_V_uses_the_strict_A_part():
    A, B, V = -np.eye(2), np.eye(2), -np.diag([1.0, 0.0])
    out = cg.no_pd_equilibrium_trace(A, B, V)
    assert out is not None and out.status == "fails" and out.certificate.data["strict"] == "A+A^T"


def test_eta_checker_needs_a_definite_Q():
    """A = 1, B = 0, eta = -1: Q = 0 and F(s) = 2s has no positive zero; 'exists' must not pass."""
    A, B = np.eye(1), np.zeros((1, 1))
    k, count = cg.spectrum.unstable_count(A)
    assert k == 1
    forged = {"kind": "eta_pd_equilibrium", "claim": "forged", "checker": "exact-ldl",
              "data": {"A": core.encode(core.qmat(A)), "B": core.encode(core.qmat(B)), "eta": "-1", "sign_Q": 1,
                       "exists": True, "count_certificate": count.to_json()}}
    assert not core.recheck(forged)


@pytest.mark.parametrize("alpha, lam_v, lam_b, trace, want, real", [
    ((-3, -1), (1, 1), (2, 2), 2, "holds", (-2, 1, 2)),        # d = 2: beta = lam_v lam_b = 2, beta tr + alpha in [1, 3]
    ((-5, -4.5), (1, 1), (2, 2), 2, "fails", (-4.75, 1, 2)),   # [-1, -0.5]
    ((-4.5, -3.5), (1, 1), (2, 2), 2, "unknown", (-4, 1, 2)),  # [-0.5, 0.5]
    ((-3, -3), (0.5, 1.5), (2, 2), 2, "unknown", (-3, 1, 2)),  # beta in [1, 3]: [-1, 3]
    ((-1.5, -1.5), (0.5, 1.5), (2, 2), 2, "holds", (-1.5, 1, 2)),  # [0.5, 4.5]
    ((-1, 1), (-1, 0.5), (1, 1), 2, "unknown", (0, -0.5, 1)),  # the sign of beta is undecided
    ((-1, 1), (-2, -1), (1, 1), 2, "fails", (0, -1.5, 1)),     # beta < 0
])
def test_trace_condition_interval_logic(monkeypatch, alpha, lam_v, lam_b, trace, want, real):
    """Wide enclosures (monkeypatched) exercise the interval arithmetic: lower ends decide 'holds',
    upper ends decide 'fails', and an enclosure containing the boundary stays 'unknown'. The matrices
    have their true values (``real``: alpha = lambda_min(A + A^T), lambda_min V, lambda_min B) inside the
    enclosures, so the certificate of a decided verdict, which re-derives its own bounds from the
    matrices, confirms it."""
    from fractions import Fraction

    enclosures = iter([tuple(map(Fraction, alpha)), tuple(map(Fraction, lam_v)), tuple(map(Fraction, lam_b))])
    monkeypatch.setattr(asymptotics, "_lambda_min_interval", lambda M: next(enclosures))
    a, v, b = real
    p = _p(0.5 * a * np.eye(2), b * np.eye(2), v * np.eye(2), 0.5 * trace * np.eye(2))
    assert asymptotics._trace_condition(p).status == want
