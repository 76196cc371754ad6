"""Certified hypotheses of the consensus paper: every verdict is checked against independent
mathematics (eigenvalues, explicit witnesses, known bounds), and tampered certificates fail."""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core
from flowcert.certificates.attention import consensus as cc
from flowcert.numeric.attention import consensus as nc

P71 = np.array([[0.9432, 0.0587, -0.1813], [0.0587, 0.8450, -0.1013], [-0.1813, -0.1013, 0.5519]])
U73 = np.array([[-0.2590, 0.4965, 0.5609], [0.4965, -0.7174, -0.5003], [0.5609, -0.5003, -0.0247]])
t = sp.Symbol("t", real=True)


def test_spd_exact():
    assert cc.symmetric_positive_definite(P71).status == "holds"
    assert cc.symmetric_positive_definite(-P71).status == "fails"
    A = P71.copy()
    A[0, 1] += 1e-17 if A[0, 1] + 1e-17 != A[0, 1] else 1e-15  # asymmetric by one ulp
    assert cc.symmetric_positive_definite(A).status == "fails"
    # nearly singular but positive definite: decided exactly, not by a float eigenvalue
    B = np.diag([1.0, 1e-300])
    assert cc.symmetric_positive_definite(B).status == "holds"


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 12), st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_hemisphere_witness_is_real(ell, d, seed):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(ell, d))
    Y /= np.linalg.norm(Y, axis=1)[:, None]
    res, v = cc.open_hemisphere(Y)
    if res.status == "holds":
        assert np.all(Y @ v > 0)
        vq = [Fraction(x) for x in res.certificate.data["v"]]
        for row in Y:
            assert sum(Fraction(float(a)) * b for a, b in zip(row, vq)) > 0
    elif res.status == "fails":
        lam = np.array([float(Fraction(x)) for x in res.certificate.data["lambda"]])
        assert np.all(lam >= 0) and abs(lam.sum() - 1) < 1e-12
        assert np.linalg.norm(lam @ Y) < 1e-9
    if ell <= d:  # Wendel: always in a hemisphere (probability 1); generic data decide
        assert res.status == "holds"


def test_hemisphere_refuted_for_tetrahedron_and_antipodes():
    res, v = cc.open_hemisphere(nc.regular_tetrahedron())
    assert res.status == "fails" and v is None
    res, _ = cc.open_hemisphere(np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [0.6, 0.8, 0.0]]))
    assert res.status == "fails"


def test_hemisphere_tampered_certificate_rejected():
    Y = np.array([[1.0, 0.1, 0.0], [0.9, -0.3, 0.2], [0.8, 0.0, -0.5]])
    res, _ = cc.open_hemisphere(Y)
    assert res.status == "holds" and core.recheck(res.certificate)
    bad = copy.deepcopy(res.certificate.to_json())
    bad["data"]["v"] = ["-1", "0", "0"]
    assert not core.recheck(bad)


def test_hemisphere_boundary_not_claimed():
    # two antipodal tokens plus one more: only a closed hemisphere exists
    Y = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    res, _ = cc.open_hemisphere(Y)
    assert res.status == "fails"


def test_top_eigenvalue_gap():
    res, te = cc.simple_positive_top_eigenvalue(U73)
    w = np.linalg.eigvalsh(U73)
    assert res.status == "holds"
    c = float(te.c)
    assert w[-2] < c < w[-1] and c >= 0
    assert abs(abs(te.v @ np.array([-0.57806, 0.10208, -0.80958])) - 1) < 1e-4
    assert cc.simple_positive_top_eigenvalue(np.eye(3))[0].status == "fails"  # repeated
    assert cc.simple_positive_top_eigenvalue(-np.eye(3))[0].status == "fails"  # not positive
    assert cc.simple_positive_top_eigenvalue(np.diag([-1.0, -2.0, 0.0]))[0].status == "fails"
    assert cc.simple_positive_top_eigenvalue(np.array([[1.0, 2.0], [0.0, 1.0]]))[0].status == "fails"


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5))
def test_top_eigenvalue_agrees_with_eigh(seed, d):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (d, d))
    U = A + A.T
    w = np.linalg.eigvalsh(U)
    res, _ = cc.simple_positive_top_eigenvalue(U)
    if res.status == "holds":
        assert w[-1] > 0 and w[-1] > w[-2]
    if w[-1] > 1e-6 and w[-1] - w[-2] > 1e-6:
        assert res.status == "holds"
    if w[-1] < -1e-6:
        assert res.status == "fails"


def test_sup_bounds_paper_7_2():
    P1 = sp.Matrix([[0.0805, -0.1929, 0.1991], [-0.2312, 0.3131, -0.2335], [0.1788, -0.1732, -0.1594]])
    D1 = sp.diag(2 * sp.cos(10 * sp.pi * t), 2 * sp.sin(10 * sp.pi * t), 2 * sp.cos(6 * sp.pi * t))
    P = D1 * P1
    res, b = cc.bounded([P])
    assert res.status == "holds"
    f = sp.lambdify(t, P, "numpy")
    f_dot = sp.lambdify(t, P.diff(t), "numpy")
    ts = np.linspace(0, 10, 4001)
    assert max(np.linalg.norm(np.array(f(s), float), 2) for s in ts) <= float(b)
    uc = cc.uniformly_continuous([P])
    assert uc.status == "holds"
    assert max(np.linalg.norm(np.array(f_dot(s), float), 2) for s in ts) <= uc.margin
    # the note's measured sup |P_1(t)| = 0.953 must lie below the proven bound
    assert 0.953 <= float(b)


@pytest.mark.parametrize("expr", [t, sp.exp(t), sp.sin(t) / (t - 1), t * sp.sin(t)])
def test_unbounded_or_unproven_is_unknown(expr):
    res, b = cc.bounded([sp.Matrix([[expr]])])
    assert res.status == "unknown" and b is None


def test_uniform_continuity_unknown_without_derivative_bound():
    assert cc.uniformly_continuous([sp.Matrix([[sp.sin(t**2)]])]).status == "unknown"
    assert cc.uniformly_continuous([sp.Matrix([[sp.exp(-t) * sp.cos(3 * t)]])]).status == "holds"


@settings(max_examples=12, deadline=None)
@given(st.floats(-5, 5), st.floats(0.1, 20), st.floats(0, 6.3), st.floats(-3, 3))
def test_interval_bound_contains_samples(a, w, phi, c):
    e = a * sp.cos(w * t + phi) + c * sp.exp(-t) * sp.sin(t) ** 2
    lo, hi = cc.interval(e, t)
    f = sp.lambdify(t, e, "numpy")
    ts = np.linspace(0, 50, 1001)
    vals = np.broadcast_to(f(ts), ts.shape)
    assert float(lo) <= vals.min() + 1e-12 and vals.max() <= float(hi) + 1e-12


def test_recheck_of_bound_certificate():
    res, b = cc.bounded([sp.Matrix([[3 * sp.cos(t), 0], [0, 4 * sp.sin(t)]])])
    assert res.status == "holds" and 5 <= float(b) < 5 + 1e-6
    bad = copy.deepcopy(res.certificate.to_json())
    bad["data"]["bound"] = "4"
    assert not core.recheck(bad)


def test_consensus_transverse_certificates():
    for ell in (2, 3, 6):
        A = np.array(cc.causal_transverse_matrix(ell).tolist(), float)
        assert np.allclose(sorted(np.linalg.eigvals(A).real), sorted(-(i - 1) / i for i in range(2, ell + 1)))
        assert cc.consensus_stability(True, ell, 2, 3).status == "holds"
        assert cc.consensus_stability(False, ell, 1, 3).status == "holds"


def test_tetrahedron_threshold():
    assert cc.tetrahedron_stability(1.6).status == "holds"
    assert cc.tetrahedron_stability(1.4).status == "fails"
    assert cc.tetrahedron_stability(-1.0).status == "fails"
    assert cc.tetrahedron_stability(1.5).status == "unknown"


def test_abs_is_lipschitz_but_sign_is_not_continuous():
    # |2 sin(w t + phi)| (Figure 5) is Lipschitz: its a.e. derivative is bounded
    P = sp.Matrix([[sp.Abs(2 * sp.sin(sp.Rational(3, 10) * t + 1)) * sp.Rational(1, 7)]])
    uc = cc.uniformly_continuous([P])
    assert uc.status == "holds" and uc.margin >= 2 * 0.3 / 7
    # a jump is never certified uniformly continuous
    assert cc.uniformly_continuous([sp.Matrix([[sp.sign(sp.sin(t))]])]).status == "unknown"
    assert cc.bounded([sp.Matrix([[sp.sign(t - 1)]])])[0].status == "unknown"


def _exact_frobenius_sq(beta: float, Q: np.ndarray | None, K: np.ndarray) -> Fraction:
    """||beta Q^T K||_F^2 in exact rationals (an independent O(m n r) Fraction loop)."""
    b = Fraction(beta)
    Kf = [[Fraction(x) for x in row] for row in K.tolist()]
    if Q is None:
        return sum((b * x) ** 2 for row in Kf for x in row)
    Qf = [[Fraction(x) for x in row] for row in Q.tolist()]
    r, m, n = len(Qf), len(Qf[0]), len(Kf[0])
    return sum((b * sum(Qf[k][i] * Kf[k][j] for k in range(r))) ** 2 for i in range(m) for j in range(n))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.sampled_from([1e-160, 1e-3, 1.0, 1e150]), st.booleans(),
       st.integers(0, 2**31 - 1))
def test_constant_head_bound_is_an_exact_upper_bound(r, d, scale, from_P, seed):
    """The low-cost bound of a constant head is >= the exact norm and tight to rounding where no overflow occurs."""
    rng = np.random.default_rng(seed)
    K = rng.normal(size=(r, d)) * scale
    Q = None if from_P else rng.normal(size=(r, d))
    beta = float(rng.uniform(0.05, 3.0))
    head = cc.ScaledProduct(beta, K, Q)
    b = head.frobenius_upper()
    exact = _exact_frobenius_sq(beta, Q, K)
    assert b >= 0 and b * b >= exact
    if exact > 0 and scale >= 1e-3:  # away from underflow: within a relative 1e-9 of the truth
        assert b * b <= exact * Fraction(1 + 10**-9) ** 2


def test_constant_head_certificate_rechecks_and_refuses_a_lower_bound():
    rng = np.random.default_rng(7)
    Q, K = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    res, b = cc.bounded([cc.ScaledProduct(0.25, K, Q)])
    assert res.status == "holds" and b is not None
    assert b * b >= _exact_frobenius_sq(0.25, Q, K)
    cert = copy.deepcopy(res.certificate)
    assert core.recheck(cert)
    cert.data["bound"] = str(Fraction(cert.data["bound"]) * Fraction(99, 100))  # 1% below: no longer an upper bound
    assert not core.recheck(cert)
    bad = copy.deepcopy(res.certificate)
    bad.data["constant"]["K"][0][0] = float("nan")
    assert not core.recheck(bad)
    uc = cc.uniformly_continuous([cc.ScaledProduct(0.25, K, Q)])
    assert uc.status == "holds" and uc.margin == 0.0
