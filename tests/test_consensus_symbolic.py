"""Symbolic derivations of the consensus paper: identities reduce to zero, wrong variants do not,
and the closed forms agree with independent numerics (finite differences, eigenvalues)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.numeric.attention import consensus as nc
from flowcert.symbolic.attention import consensus as sc


@pytest.mark.parametrize("proofs", [sc.theorem_3_2_proofs, sc.theorem_4_1_proofs, sc.lemma_5_1_proofs,
                                    sc.lemma_6_1_proofs, sc.two_token_proofs])
def test_identities_proved(proofs):
    for p in proofs():
        assert p.proved, (p.name, p.residual)


def test_sphere_reduction_can_fail():
    y0, y = sc.unit_vector("u", 3), sc.unit_vector("w", 3)
    a = sc._dot(y0, y)
    assert sc.on_spheres(sc._dot(y0 - a * y, y0 - a * y) - (1 - a**2), y0, y) == 0
    assert sc.on_spheres(sc._dot(y0 - a * y, y0 - a * y) - (1 - a**2) + sp.Rational(1, 10) * a, y0, y) != 0
    # not an identity off the sphere: without the relations the residual is nonzero
    assert sp.expand(sc._dot(y0 - a * y, y0 - a * y) - (1 - a**2)) != 0


def test_lyapunov_5_sign():
    a = sc.a_sym
    V = sc.V_5()
    assert sp.factor(V) == (a - 1) ** 2 * (a + 2) / 3
    xs = np.linspace(-1, 1, 201)
    assert np.all(sp.lambdify(a, V)(xs) >= -1e-15)


def _ref_field(X, P, U=None, causal=False, W=None, h=1):
    """Independent numpy transcription of eq. (7) (the note's reference), for finite differences."""
    ell, d = X.shape
    S = X @ P @ X.T
    if causal:
        S = np.where(np.tril(np.ones((ell, ell), bool)), S, -np.inf)
    E = np.exp(S - S.max(1, keepdims=True))
    A = E / (np.sqrt(d) * E.sum(1, keepdims=True))
    M = A @ (X if U is None else X @ U.T)
    XW = X if W is None else X @ W
    return h * (M - (XW * M).sum(1)[:, None] * X)


@pytest.mark.parametrize("kind,ell,dim,h", [("full", 3, 2, 1), ("full", 2, 3, 2), ("causal", 3, 2, 2), ("causal", 4, 2, 1)])
def test_consensus_linearisation_closed_form(kind, ell, dim, h):
    J, ev = sc.consensus_linearisation(kind, ell, dim, h)
    got = sorted(float(k) for k, m in ev.items() for _ in range(m))
    if kind == "full":
        want = [0.0] * (dim - 1) + [float(sc.full_consensus_eigenvalue(h, dim))] * ((ell - 1) * (dim - 1))
    else:
        want = [float(sc.causal_consensus_eigenvalue(h, dim, i)) for i in range(1, ell + 1) for _ in range(dim - 1)]
    assert np.allclose(got, sorted(want), atol=1e-14)


def test_thm_6_1_linearisation_closed_form_and_fd():
    J, ev = sc.consensus_linearisation("thm6.1", 3, 2)
    lam, mu = sp.Symbol("lambda", positive=True), sp.Symbol("mu_2", real=True)
    want = {sp.simplify(sc.theorem_6_1_eigenvalue(mu, lam, 2, i)) for i in (1, 2, 3)}
    assert {sp.simplify(k) for k in ev} == want
    # finite differences of an independent numpy field at (v, v, v), random P, U = diag(2, 1, .5)
    rng = np.random.default_rng(1)
    U = np.diag([2.0, 1.0, 0.5])
    P = rng.uniform(-0.5, 0.5, (3, 3))
    X = np.tile(np.eye(3)[0], (4, 1))
    Jn = nc.numerical_jacobian(lambda Z: _ref_field(Z, P, U, causal=True), X)
    T = nc.tangent_basis(X)
    got = np.sort(np.linalg.eigvals(T.T @ Jn @ T).real)
    want = np.sort([(m - i * 2.0) / (i * np.sqrt(3)) for i in range(1, 5) for m in (1.0, 0.5)])
    assert np.allclose(got, want, atol=1e-7)


@settings(max_examples=10, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_full_consensus_rate_fd(ell, h, seed):
    rng = np.random.default_rng(seed)
    d = 3
    P = rng.uniform(-1, 1, (d, d))
    W = np.diag(rng.uniform(0.5, 2.0, d))
    y = rng.normal(size=d)
    y /= np.sqrt(y @ W @ y)
    X = np.tile(y, (ell, 1))
    Jn = nc.numerical_jacobian(lambda Z: _ref_field(Z, P, W=W, h=h), X)
    T = nc.tangent_basis(X, W)
    # T is orthonormal but the tangent space is invariant: eigenvalues of the compression
    ev = np.sort(np.linalg.eigvals(np.linalg.pinv(T) @ Jn @ T).real)
    want = np.sort([0.0] * (d - 1) + [-h / np.sqrt(d)] * ((ell - 1) * (d - 1)))
    assert np.allclose(ev, want, atol=1e-6)


def test_tetrahedron_spectrum_matches_finite_differences():
    X = nc.regular_tetrahedron()
    for beta in (-1.0, 1.0, 1.4, 1.6, 3.0):
        P = -beta * np.eye(3)
        assert np.abs(_ref_field(X, P)).max() < 1e-14  # an equilibrium for every beta
        Jn = nc.numerical_jacobian(lambda Z: _ref_field(Z, P), X)
        T = nc.tangent_basis(X)
        ev = np.sort(np.linalg.eigvals(T.T @ Jn @ T).real)
        spec = {k: float(v) for k, v in sc.tetrahedron_spectrum(sp.Float(beta)).items()}
        want = np.sort([0.0] * 3 + [spec["E"]] * 2 + [spec["T"]] * 3)
        assert np.allclose(ev, want, atol=1e-7)
    # the note's values for P = I
    spec = sc.tetrahedron_spectrum(-1)
    assert abs(float(spec["E"]) - 0.2266) < 1e-4 and abs(float(spec["T"]) - 0.3777) < 1e-4


@pytest.mark.slow
def test_tetrahedron_power_sums_symbolic():
    for p in sc.tetrahedron_proofs():
        assert p.proved, p.name


def test_two_token_closed_form_derivative():
    a0, k = 0.3, 0.7
    ts = np.linspace(0, 3, 31)
    a = nc.two_token_inner_product(a0, k, ts)
    h = 1e-6
    da = (nc.two_token_inner_product(a0, k, ts + h) - nc.two_token_inner_product(a0, k, ts - h)) / (2 * h)
    assert np.allclose(da, k * (1 - a**2), atol=1e-8)
    assert abs(a[0] - a0) < 1e-15
