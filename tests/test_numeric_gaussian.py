"""Tests for flowcert.numeric.gaussian: the moment ODE (eq. (7)) against closed forms
(scalar Bernoulli solution and blow-up time, Liouville's log-det identity, rank-one
reduction), Newton equilibria from the inverse design of Lemma 4.4, vech Jacobians and the
particle field of eq. (2)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.integrate import simpson, solve_ivp

from flowcert.numeric import gaussian as ng

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------
# hand-written references
# ---------------------------------------------------------------------------------------------


def F_hand(A, B, V, S):
    return A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T


def F_mag(A, B, V, S):
    a, bb, v, s = (np.abs(z) for z in (A, B, V, S))
    return a @ s + s @ a.T + v @ s @ bb @ s + s @ bb.T @ s @ v.T


def DF_hand(A, B, V, S, D):
    M = A + V @ S @ B
    return M @ D + D @ M.T + V @ D @ B @ S + S @ B.T @ D @ V.T


def vech(S):
    r, c = np.triu_indices(S.shape[-1])
    return S[..., r, c]


def sym_basis(d):
    out = []
    for i in range(d):
        for j in range(i, d):  # same order as np.triu_indices
            E = np.zeros((d, d))
            E[i, j] = E[j, i] = 1.0
            out.append(E)
    return np.array(out)


def sqrtm_spd(S):
    w, Q = np.linalg.eigh(S)
    return (Q * np.sqrt(w)) @ Q.T, (Q / np.sqrt(w)) @ Q.T


def spd(rng, d, floor=0.3, scale=1.0):
    L = rng.uniform(-1, 1, (d, d)) * scale
    return L @ L.T + floor * np.eye(d)


def mats(rng, d, lo=-1.0, hi=1.0):
    return tuple(rng.uniform(lo, hi, (d, d)) for _ in range(3))


# ---------------------------------------------------------------------------------------------
# scalar case: Bernoulli closed form
# ---------------------------------------------------------------------------------------------


def s_exact(t, a, v, c, s0):
    """s' = 2 a s + 2 v c s^2, s(0) = s0: s = a s0 e^{2at} / (a - v c s0 (e^{2at} - 1))."""
    e = np.exp(2 * a * t)
    return a * s0 * e / (a - v * c * s0 * (e - 1))


def t_blowup_exact(a, v, c, s0):
    return np.log1p(a / (v * c * s0)) / (2 * a)


def test_scalar_oracles_are_right():
    """The closed forms used below, checked symbolically (independent of flowcert)."""
    t, a, v, c, s0, m0 = sp.symbols("t a v c s0 mu0", positive=True)
    e = sp.exp(2 * a * t)
    s = a * s0 * e / (a - v * c * s0 * (e - 1))
    # d=1 covariance field: a s + s a + v s c s + s c s v
    assert sp.simplify(sp.diff(s, t) - (2 * a * s + 2 * v * c * s**2)) == 0
    assert sp.simplify(s.subs(t, 0) - s0) == 0
    tb = sp.log(1 + a / (v * c * s0)) / (2 * a)
    assert sp.simplify((a - v * c * s0 * (e - 1)).subs(t, tb)) == 0
    # mean with b = 0: mu = mu0 e^{v t} sqrt(s/s0) solves mu' = (a + v + v s c) mu
    m = m0 * sp.exp(v * t) * sp.sqrt(s / s0)
    assert sp.simplify(sp.diff(m, t) - (a + v + v * s * c) * m) == 0


def _scalar(a, v, c, b=0.0):
    return ng.constant(np.array([[a]]), np.array([[c]]), np.array([[v]]), np.array([b]))


@SETTINGS
@given(
    a=st.one_of(st.floats(0.05, 2), st.floats(-2, -0.05)),
    v=st.floats(-2, 2),
    c=st.floats(-2, 2),
    s0=st.floats(0.1, 2),
    m0=st.floats(-2, 2),
)
def test_scalar_bernoulli_closed_form(a, v, c, s0, m0):
    vc = v * c
    # horizon: 1, or 80% of the blow-up time when there is one
    T = 1.0
    if vc * s0 > 1e-200 and (a > 0 or vc * s0 > -a):
        T = min(T, 0.8 * t_blowup_exact(a, v, c, s0))
    t_eval = np.linspace(0, T, 41)
    sol = ng.integrate_moments(_scalar(a, v, c), np.array([m0]), np.array([[s0]]), T, t_eval=t_eval)
    assert sol.status == "ok" and sol.blowup_time is None
    want_s = s_exact(t_eval, a, v, c, s0)
    assert np.allclose(sol.Sigma[:, 0, 0], want_s, rtol=1e-7, atol=1e-12)
    want_m = m0 * np.exp(v * t_eval) * np.sqrt(want_s / s0)
    assert np.allclose(sol.mu[:, 0], want_m, rtol=1e-7, atol=1e-10 * (1 + abs(m0)))


@settings(SETTINGS, max_examples=12)
@given(
    a=st.floats(0.1, 2),
    v=st.floats(0.2, 2),
    c=st.floats(0.2, 2),
    sign=st.sampled_from([1.0, -1.0]),
    s0=st.floats(0.1, 2),
)
def test_scalar_blowup_time(a, v, c, sign, s0):
    v, c = sign * v, sign * c  # v c > 0
    tb = t_blowup_exact(a, v, c, s0)
    sol = ng.integrate_moments(_scalar(a, v, c), np.array([1.0]), np.array([[s0]]), 2 * tb + 1)
    assert sol.status == "blowup"
    te = sol.blowup_time
    assert te is not None and te <= tb
    assert (tb - te) / tb < 1e-3
    # sharper: the documented event level ||Sigma||_F = 1e8 (1 + ||Sigma0||_F) is hit when
    # a s0 e^{2at} = L (a - vc s0 (e^{2at}-1))
    L = 1e8 * (1 + s0)
    t_hit = np.log(L * (a + v * c * s0) / (s0 * (a + L * v * c))) / (2 * a)
    assert abs(te - t_hit) <= 1e-6 * tb
    assert sol.t[-1] == te
    assert abs(sol.Sigma[-1, 0, 0] - L) <= 1e-3 * L


def test_scalar_no_blowup_for_negative_a_and_small_s0():
    a, v, c, s0 = -1.0, 1.0, 1.0, 0.5  # v c s0 < |a|: s -> 0
    sol = ng.integrate_moments(_scalar(a, v, c), np.array([0.3]), np.array([[s0]]), 5.0,
                               t_eval=np.linspace(0, 5, 11))
    assert sol.status == "ok"
    assert np.allclose(sol.Sigma[:, 0, 0], s_exact(sol.t, a, v, c, s0), rtol=1e-7, atol=1e-12)
    # v c s0 > |a| with a < 0 blows up at the same formula
    s0 = 2.0
    tb = t_blowup_exact(a, v, c, s0)
    sol = ng.integrate_moments(_scalar(a, v, c), np.array([0.3]), np.array([[s0]]), 10.0)
    assert sol.status == "blowup" and sol.blowup_time <= tb and (tb - sol.blowup_time) / tb < 1e-3


def test_blowup_before_first_t_eval_point():
    a, v, c, s0 = 1.0, 1.0, 1.0, 2.0
    tb = t_blowup_exact(a, v, c, s0)
    sol = ng.integrate_moments(_scalar(a, v, c), np.array([1.0]), np.array([[s0]]), 5.0,
                               t_eval=np.array([2 * tb, 5.0]))
    assert sol.status == "blowup" and sol.blowup_time <= tb
    assert sol.t.shape == (1,) and sol.Sigma.shape == (1, 1, 1) and sol.mu.shape == (1, 1)
    assert sol.t[0] == sol.blowup_time


def test_time_varying_scalar():
    """B = 0: s = s0 exp(2 int a), mu' = (a(t) + v) mu + b(t) with b = 0."""
    v = -0.7
    coeffs = lambda t: (np.array([[0.2 + np.sin(t)]]), np.zeros((1, 1)), np.array([[v]]), np.zeros(1))  # noqa: E731
    t_eval = np.linspace(0, 3, 31)
    sol = ng.integrate_moments(coeffs, np.array([1.5]), np.array([[0.4]]), 3.0, t_eval=t_eval)
    ia = 0.2 * t_eval + 1 - np.cos(t_eval)
    assert sol.status == "ok"
    assert np.allclose(sol.Sigma[:, 0, 0], 0.4 * np.exp(2 * ia), rtol=1e-8)
    assert np.allclose(sol.mu[:, 0], 1.5 * np.exp(ia + v * t_eval), rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# matrix case: symmetry, PSD, Liouville, rank
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_symmetry_and_psd_preserved(seed, d):
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d)
    b, mu0 = rng.uniform(-2, 2, d), rng.uniform(-2, 2, d)
    # PSD start, possibly singular
    L = rng.uniform(-1, 1, (d, rng.integers(1, d + 1)))
    S0 = L @ L.T
    sol = ng.integrate_moments(ng.constant(A, B, V, b), mu0, S0, 0.3, t_eval=np.linspace(0, 0.3, 16))
    assume(sol.status == "ok")
    for S in sol.Sigma:
        scale = 1 + np.abs(S).max()
        assert np.abs(S - S.T).max() <= 1e-12 * scale
        assert np.linalg.eigvalsh(0.5 * (S + S.T)).min() >= -1e-9 * scale


@settings(SETTINGS, max_examples=12)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_log_det_liouville_identity(seed, d):
    """d/dt log det Sigma = 2 tr(A + V Sigma B), integrated by Simpson on a dense grid."""
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d)
    S0 = spd(rng, d)
    T = 0.3
    t_eval = np.linspace(0, T, 801)
    sol = ng.integrate_moments(ng.constant(A, B, V, np.zeros(d)), np.zeros(d), S0, T, t_eval=t_eval)
    assume(sol.status == "ok")
    # near blow-up Sigma can become so ill-conditioned that its smallest eigenvalue drowns in
    # the integration error (atol 1e-12); log det is then not computable from the trajectory
    assume(max(np.linalg.cond(S) for S in sol.Sigma) < 1e6)
    trM = np.array([np.trace(A + V @ S @ B) for S in sol.Sigma])
    integral = 2 * simpson(trM, x=sol.t)
    lhs = np.linalg.slogdet(sol.Sigma[-1])[1] - np.linalg.slogdet(S0)[1]
    assert abs(lhs - integral) <= 1e-7 * (1 + abs(integral) + np.abs(trM).max())


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 5))
def test_rank_one_initial_covariance_stays_rank_one(seed, d):
    """Sigma0 = v v^T: Sigma(t) = w w^T with w' = (A + V w w^T B) w (independent oracle)."""
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d)
    v0 = rng.uniform(-1, 1, d)
    assume(np.linalg.norm(v0) > 0.1)
    T = 0.4
    t_eval = np.linspace(0, T, 9)
    sol = ng.integrate_moments(ng.constant(A, B, V, np.zeros(d)), np.zeros(d), np.outer(v0, v0), T,
                               t_eval=t_eval)
    assume(sol.status == "ok")
    ref = solve_ivp(lambda t, w: (A + V @ np.outer(w, w) @ B) @ w, (0, T), v0, t_eval=t_eval,
                    rtol=1e-12, atol=1e-14, method="DOP853")
    for S, w in zip(sol.Sigma, ref.y.T):
        s = np.linalg.svd(S, compute_uv=False)
        assert s[1] / s[0] < 1e-8
        assert np.abs(S - np.outer(w, w)).max() <= 1e-8 * (1 + np.abs(S).max())


def test_transport_check_rank_deficient():
    rng = np.random.default_rng(5)
    d = 3
    A, B, V = mats(rng, d)
    L = rng.uniform(-1, 1, (d, 2))
    chk = ng.transport_check(ng.constant(A, B, V, np.zeros(d)), L @ L.T, 0.5, n_eval=11)
    assert chk.residual < 1e-8 and chk.liouville < 1e-8
    assert chk.ranks == [2] * len(chk.t)


# ---------------------------------------------------------------------------------------------
# covariance field, vech Jacobian, Newton
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5), batch=st.integers(1, 6))
def test_covariance_field_matches_hand(seed, d, batch):
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d, -2, 2)
    X = rng.uniform(-2, 2, (batch, d, d))
    S = X + np.swapaxes(X, -1, -2)
    got = ng.covariance_field(A, B, V, S)
    assert got.shape == (batch, d, d)
    assert np.all(np.abs(got - F_hand(A, B, V, S)) <= 1e-12 * F_mag(A, B, V, S) + 1e-300)


def test_symmetric_basis_and_vech():
    rng = np.random.default_rng(0)
    for d in range(1, 6):
        X = rng.uniform(-2, 2, (d, d))
        S = X + X.T
        E = ng.symmetric_basis(d)
        assert E.shape == (d * (d + 1) // 2, d, d)
        assert np.array_equal(np.einsum("k,kij->ij", vech(S), E), S)
        r, c = ng.vech_indices(d)
        assert np.array_equal(S[r, c], vech(S))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_jacobian_vech_finite_difference_and_kronecker(seed, d):
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d, -2, 2)
    X = rng.uniform(-2, 2, (d, d))
    S = X + X.T
    J = ng.jacobian_vech(A, B, V, S)
    m = d * (d + 1) // 2
    assert J.shape == (m, m)
    E = sym_basis(d)
    h = 1e-3
    fd = np.array([vech(ng.covariance_field(A, B, V, S + h * Ek) - ng.covariance_field(A, B, V, S - h * Ek))
                   for Ek in E]).T / (2 * h)
    mag = np.array([vech(F_mag(A, B, V, np.abs(S) + np.abs(Ek))) for Ek in E]).T
    assert np.all(np.abs(J - fd) <= 1e-10 * mag / h + 1e-12)
    # Kronecker form, column-major vec: I(x)M + M(x)I + (S B^T)(x)V + V(x)(S B^T)
    M = A + V @ S @ B
    I = np.eye(d)
    K = np.kron(I, M) + np.kron(M, I) + np.kron(S @ B.T, V) + np.kron(V, S @ B.T)
    Dup = np.array([Ek.ravel(order="F") for Ek in E]).T  # vec(E_k) as columns
    r, c = np.triu_indices(d)
    Sel = np.zeros((m, d * d))
    Sel[np.arange(m), c * d + r] = 1.0  # picks entry (r, c) from a column-major vec
    assert np.allclose(J, Sel @ K @ Dup, rtol=1e-12, atol=1e-12 * (1 + np.abs(K).max()))


def _inverse_design(rng, d):
    """Lemma 4.4: Sigma PD, K skew, A := Sigma^{1/2} K Sigma^{-1/2} - V Sigma B."""
    S = spd(rng, d, floor=0.5)
    X = rng.uniform(-1, 1, (d, d))
    K = X - X.T
    B, V = rng.uniform(-1, 1, (d, d)), rng.uniform(-1, 1, (d, d))
    R, Ri = sqrtm_spd(S)
    A = R @ K @ Ri - V @ S @ B
    return A, B, V, S, K


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 4))
def test_newton_inverse_design(seed, d):
    rng = np.random.default_rng(seed)
    A, B, V, S, K = _inverse_design(rng, d)
    # the oracle itself: Sigma is an equilibrium, and spec(A + V S B) = spec(K) is imaginary
    assert np.abs(F_hand(A, B, V, S)).max() <= 1e-12 * (1 + F_mag(A, B, V, S).max())
    ev = np.linalg.eigvals(A + V @ S @ B)
    assert np.abs(ev.real).max() <= 1e-10 * (1 + np.abs(ev).max())
    # Newton from a nearby symmetric start, when the Jacobian is well conditioned
    E = sym_basis(d)
    J = np.array([vech(DF_hand(A, B, V, S, Ek)) for Ek in E]).T
    # Newton's basin has radius ~ 1/(||J^-1|| L): keep the 1e-3 start well inside it (another
    # equilibrium can attract an ill-conditioned start; seen at cond(J) = 4e4)
    assume(np.linalg.cond(J) < 1e3)
    Y = rng.uniform(-1, 1, (d, d))
    start = S + 1e-3 * (Y + Y.T)
    out = ng.newton_equilibrium(A, B, V, start)
    assert out is not None
    assert np.array_equal(out, out.T)
    assert np.abs(F_hand(A, B, V, out)).max() <= 1e-10 * (1 + F_mag(A, B, V, out).max())
    assert np.abs(out - S).max() <= 1e-8 * np.linalg.cond(J) * (1 + np.abs(S).max())
    # at the equilibrium itself Newton returns at once
    at = ng.newton_equilibrium(A, B, V, S)
    assert at is not None and np.abs(at - S).max() <= 1e-12 * (1 + np.abs(S).max())


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 4))
def test_newton_result_is_a_root_when_returned(seed, d):
    rng = np.random.default_rng(seed)
    A, B, V = mats(rng, d, -2, 2)
    out = ng.newton_equilibrium(A, B, V, spd(rng, d))
    if out is not None:
        assert np.array_equal(out, out.T)
        assert np.abs(F_hand(A, B, V, out)).max() <= 1e-9 * (1 + F_mag(A, B, V, out).max())


def test_newton_scalar_roots():
    # 2 a s + 2 v c s^2 = 0: roots 0 and -a/(v c)
    a, v, c = 1.0, -0.5, 2.0
    A, B, V = np.array([[a]]), np.array([[c]]), np.array([[v]])
    out = ng.newton_equilibrium(A, B, V, np.array([[0.9]]))
    assert out is not None and abs(out[0, 0] - (-a / (v * c))) < 1e-12
    out0 = ng.newton_equilibrium(A, B, V, np.array([[0.1]]))
    assert out0 is not None and abs(out0[0, 0]) < 1e-12


# ---------------------------------------------------------------------------------------------
# particles
# ---------------------------------------------------------------------------------------------


def particle_field_loops(X, A, B, V, b, act):
    n, d = X.shape
    out = np.zeros_like(X)
    for i in range(n):
        logits = np.array([X[j] @ B @ X[i] for j in range(n)])  # x_j^T B x_i
        w = np.exp(logits - logits.max())
        w /= w.sum()
        out[i] = act(A @ X[i] + b) + sum(w[j] * (V @ X[j]) for j in range(n))
    return out


@pytest.mark.parametrize("activation", ["identity", "relu"])
def test_particle_field_matches_loops(activation):
    rng = np.random.default_rng(11)
    n, d = 7, 3
    X = rng.uniform(-2, 2, (n, d))
    A, B, V = mats(rng, d, -2, 2)
    b = rng.uniform(-2, 2, d)
    act = (lambda z: z) if activation == "identity" else (lambda z: np.maximum(z, 0))
    got = ng.particle_field(X, A, B, V, b, activation)
    assert np.allclose(got, particle_field_loops(X, A, B, V, b, act), rtol=1e-12, atol=1e-12)
    # the convention x_j^T B x_i is not the transposed one
    assert not np.allclose(got, particle_field_loops(X, A, B.T, V, b, act), atol=1e-6)


def test_particle_attention_converges_to_gaussian_formula():
    """Empirical attention over N samples of N(mu, Sigma) at query points -> V(mu + Sigma B x)."""
    rng = np.random.default_rng(2024)
    d, N = 2, 4000
    mu = np.array([0.3, -0.2])
    S = np.array([[1.0, 0.3], [0.3, 0.6]])
    B = np.array([[0.3, 0.5], [-0.4, 0.1]])  # non-symmetric
    V = np.array([[1.0, -0.5], [0.2, 0.8]])
    A, b = np.zeros((d, d)), np.zeros(d)
    Q = np.array([[1.0, 0.5], [-1.0, 1.0], [0.5, -1.5]])
    Y = ng.sample_gaussian(mu, S, N, rng)
    field = ng.particle_field(np.vstack([Y, Q]), A, B, V, b)[N:]  # A = 0, b = 0: pure attention
    L = np.linalg.cholesky(S)
    scale_V = np.linalg.norm(V, 2) * np.linalg.norm(L, 2)
    for q, f in zip(Q, field):
        w = np.exp(Y @ B @ q - (Y @ B @ q).max())
        ess = w.sum() ** 2 / (w**2).sum()  # effective sample size of the tilted average
        tol = 5 * scale_V / np.sqrt(ess)
        want = V @ (mu + S @ B @ q)
        assert np.linalg.norm(f - want) < tol
        # the check has power: the transposed convention is far outside the tolerance
        assert np.linalg.norm(f - V @ (mu + S @ B.T @ q)) > tol


def test_sample_gaussian_singular_rank():
    rng = np.random.default_rng(8)
    d, r, n = 4, 2, 5000
    L = rng.uniform(-1, 1, (d, r))
    S = L @ L.T
    mu = rng.uniform(-1, 1, d)
    Y = ng.sample_gaussian(mu, S, n, rng)
    assert Y.shape == (n, d)
    sv = np.linalg.svd(Y - mu, compute_uv=False)
    assert sv[r - 1] / sv[0] > 1e-3 and sv[r] / sv[0] < 1e-6
    # samples lie in mu + range(Sigma) (up to the sqrt(eps) leak documented below)
    Nul = np.linalg.svd(L.T)[2][r:]  # orthonormal basis of ker(Sigma) = ker(L^T)
    assert np.abs((Y - mu) @ Nul.T).max() < 1e-6 * (1 + np.abs(Y).max())
    # moments, 5 / sqrt(n) scale-aware
    tol = 5 / np.sqrt(n) * (1 + np.abs(S).max())
    assert np.abs(Y.mean(0) - mu).max() < tol * np.sqrt(np.abs(S).max())
    assert np.abs(np.cov(Y.T, bias=True) - S).max() < 2 * tol


def test_sample_gaussian_singular_has_no_sqrt_eps_leak():
    worst = 0.0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(2, 6))
        r = int(rng.integers(1, d))
        L = rng.uniform(-1, 1, (d, r))
        Y = ng.sample_gaussian(np.zeros(d), L @ L.T, 500, rng)
        sv = np.linalg.svd(Y, compute_uv=False)
        worst = max(worst, sv[r] / sv[0])
    # an exact-rank sampler leaves only rounding noise: ~ eps, far below 1e-12
    assert worst < 1e-12
