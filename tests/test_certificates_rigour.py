"""Rigour of the fast paths: rounded PD test, approximate-inverse Kantorovich bounds, eq. (20).

Each fast path must never claim more than the exact computation: the rounded PD test is
compared with exact LDL^T, the inverse bounds with the exact inverse (SymPy), the blow-up
bound with the closed-form blow-up time evaluated independently in mpmath.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core, exact, lmi, spectrum
from flowcert.certificates import gaussian as cg
from flowcert.gaussian.asymptotics import blowup_bound
from flowcert.gaussian.params import parse_gaussian

SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(n=st.integers(13, 28), seed=st.integers(0, 2**31 - 1), log_gap=st.floats(-15, -1), sign=st.sampled_from([-1, 1]))
def test_rounded_pd_test_never_beats_exact_ldl(n, seed, log_gap, sign):
    """Shift a random Gram matrix to within 10^log_gap of singular (either side)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n))
    M = X @ X.T
    lam = float(np.linalg.eigvalsh(M)[0])
    shift = Fraction(lam) + sign * Fraction(10.0**log_gap) * Fraction(1 + abs(lam))
    Q = [[Fraction(M[i, j]) - (shift if i == j else 0) for j in range(n)] for i in range(n)]
    truth = exact.ldl_inertia(Q).status == "pd"
    if exact.is_pd_rounded(Q):
        assert truth
    assert exact.is_pd_exact(Q)[0] == truth  # the fast path inside is_pd_exact changes nothing


def test_rounded_pd_test_proves_well_conditioned_matrices():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 40))
    Q = exact.to_rational(X @ X.T / 40 + np.eye(40))
    assert exact.is_pd_rounded(Q)
    Q[0][0] -= 10**6  # clearly indefinite
    assert not exact.is_pd_rounded(Q)


@SETTINGS
@given(n=st.integers(1, 6), seed=st.integers(0, 2**31 - 1), cond=st.floats(0, 6))
def test_inverse_bounds_dominate_the_exact_inverse(n, seed, cond):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    Wm, _ = np.linalg.qr(rng.normal(size=(n, n)))
    J = sp.Matrix(core.rational_matrix(U @ np.diag(np.logspace(0, -cond, n)) @ Wm))
    f = sp.Matrix(core.rational_matrix(rng.normal(size=(n, 1))))
    if J.det() == 0:
        return
    bounds = cg._inverse_bounds(J, f)
    # cond(J) <= 1e6: the float64 inverse X has ||I - XJ||_F <~ n eps cond << 1, so the bound must be found
    assert bounds is not None
    beta2, eta2 = bounds
    Jinv = J.inv()
    exact_beta2, exact_eta2 = sum(e**2 for e in Jinv), sum(e**2 for e in Jinv * f)
    assert beta2 >= exact_beta2 and eta2 >= exact_eta2
    # ... and tight: the factor 1/(1 - rho)^2 is 1 + O(1e-8) here
    assert beta2 <= exact_beta2 * (1 + sp.Rational(1, 10**6)) and eta2 <= exact_eta2 * (1 + sp.Rational(1, 10**6))


def test_inverse_bounds_refuse_a_singular_matrix():
    J = sp.Matrix([[1, 2], [2, 4]])
    assert cg._inverse_bounds(J, sp.Matrix([1, 1])) is None


def _blowup_params(a: float, v: float, c: float, s0: float) -> dict:
    return {"A": [[a]], "B": [[c]], "V": [[v]], "Sigma0": [[s0]], "mu0": [0.0], "b": [0.0]}


@pytest.mark.parametrize(
    "a, v, c, s0",
    [(0.0, 3e150, 3e150, 1.0), (0.0, 9e153, 9e153, 1.0), (1.0, 1e150, 1e150, 1e10), (0.5, 1.0, 2.0, 0.25),
     (-1.0, 2.0, 1.0, 3.0), (0.0, 1e160, 1e160, 1.0), (2.0, 1e-5, 1e-5, 1e-3),
     # beta tr(Sigma0) + alpha in (0, 1): a bound exists (kills a mutated "<= 0" test)
     (0.125, 0.5, 0.5, 1.0), (-0.25, 0.5, 0.5, 2.0)],
)
def test_blowup_bound_is_an_upper_bound_of_the_exact_time(a, v, c, s0):
    """d = 1: s' = 2 a s + 2 v c s^2 blows up at log(1 + a/(v c s0)) / (2a) (1/(2 v c s0) for a = 0)."""
    p = parse_gaussian(_blowup_params(a, v, c, s0))
    bound = blowup_bound(p)
    assert bound is not None and bound > 0
    with mpmath.workprec(400):
        A, V, C, S0 = (mpmath.mpf(x) for x in (a, v, c, s0))
        exact_time = 1 / (2 * V * C * S0) if a == 0 else mpmath.log1p(A / (V * C * S0)) / (2 * A)
        assert mpmath.mpf(bound) >= exact_time
        # and not absurdly loose: the certified eigenvalue bounds lose at most ~1e-9 relative
        assert mpmath.mpf(bound) <= exact_time * (1 + mpmath.mpf(10) ** -6) + mpmath.mpf(2) ** -1074


def test_lmi_problem_is_reused_and_each_answer_rechecks():
    """The cached DPP problem solved for several J gives certificates valid for each J."""
    rng = np.random.default_rng(5)
    for _ in range(4):
        J = rng.normal(size=(5, 5)) - 4 * np.eye(5)
        sol = lmi.solve_lyapunov_lmi(J)
        assert sol.status == "optimal" and sol.P is not None
        P = spectrum.dyadic(sol.P)
        margin = spectrum.half_margin(J, sol.P)
        cert = core.Certificate("lyapunov", "J is Hurwitz",
                                {"J": core.encode(core.rational_matrix(J)), "P": core.encode(P), "margin": str(margin)})
        assert core.recheck(cert)
    assert lmi._model.cache_info().hits >= 3


@pytest.mark.parametrize("diag, rank", [([1.0, 1e-300], 2), ([1.0, 0.0], 1), ([0.0, 0.0], 0), ([2.0, 3.0], 2)])
def test_inertia_certificate_gives_the_exact_rank(diag, rank):
    """Exact inertia of a rotated diagonal matrix (rotation by a Pythagorean triple, in rationals)."""
    M = sp.Matrix([[sp.Rational(3, 5), sp.Rational(4, 5)], [-sp.Rational(4, 5), sp.Rational(3, 5)]])
    S = M * sp.diag(*[sp.Rational(x) for x in diag]) * M.T
    cert = core.inertia_certificate(S, "S")
    assert cert.data["inertia"] == [rank, 0, 2 - rank]
    assert core.recheck(cert)
    forged = core.Certificate("inertia", cert.claim, dict(cert.data, inertia=[2 - rank, rank, 0] if rank else [1, 0, 1]))
    assert not core.recheck(forged)


def test_lemma_3_1_reports_the_exact_rank_of_a_tiny_eigenvalue():
    from flowcert.gaussian import lemma_3_1

    p = parse_gaussian({"A": [[-1.0, 0.0], [0.0, -1.0]], "B": [[1.0, 0.0], [0.0, 1.0]], "V": [[-1.0, 0.0], [0.0, -1.0]],
                        "Sigma0": [[1.0, 0.0], [0.0, 1e-300]], "mu0": [0.0, 0.0], "b": [0.0, 0.0], "t_end": 1.0})
    result = lemma_3_1(p)
    assert result.prediction["rank"] == 2
    cert = result.prediction["certificate"]  # bound to params.Sigma0: re-checked with the parameters filled in
    assert cert["subject"] == {"M": "params.Sigma0"}
    assert core.recheck({**cert, "data": {**cert["data"], "M": core.encode(np.asarray(p.Sigma0, float))}})
