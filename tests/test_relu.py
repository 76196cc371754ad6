"""Tests for flowcert.numeric.gaussian_relu: Lemma 2.3 / Prop. 2.4 of the gaussian paper."""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest
import scipy.linalg

from flowcert.numeric import gaussian as G
from flowcert.numeric.gaussian import relu as R

# A running example that satisfies Lemma 2.3's hypothesis 8 ||B|| lmax(Sigma0) < 1 and has
# -(A mu0 + b) of mixed signs, so both branches of the ReLU matter.
A2 = np.array([[1.0, 0.5], [-0.3, 0.8]])
b2 = np.array([0.2, -0.4])
B2 = np.array([[0.15, 0.05], [0.05, 0.1]])
V2 = np.array([[-0.5, 0.2], [0.1, -0.3]])
MU2 = np.array([0.1, 0.3])
S2 = np.array([[0.5, 0.1], [0.1, 0.3]])


def _mc_relu_sq(A, b, X):
    Z = np.maximum(0.0, -(X @ A.T + b))
    return np.sum(Z * Z, axis=1)


# ---------------------------------------------------------------------------------------
# Prop. 2.4 (a): closed form of the slope
# ---------------------------------------------------------------------------------------


def _cases():
    rng = np.random.default_rng(11)
    A3 = rng.normal(size=(3, 3))
    L = rng.normal(size=(3, 3))
    yield pytest.param("generic-2d", A2, b2, MU2, S2, id="generic-2d")
    yield pytest.param("generic-3d", A3, rng.normal(size=3), rng.normal(size=3), 0.5 * L @ L.T, id="generic-3d")
    # degenerate: Sigma0 = diag(1, 0, 0.5); rows 0 and 1 of A only see the null direction e2,
    # so s_0 = s_1 = 0 exactly, with m_0 > 0 (term m_0^2) and m_1 < 0 (term 0).
    Ad = np.array([[0.0, 1.0, 0.0], [0.0, -2.0, 0.0], [1.0, 0.3, -0.7]])
    bd, mud = np.array([-0.5, 0.9, 0.2]), np.array([0.4, 0.3, -0.2])
    yield pytest.param("degenerate", Ad, bd, mud, np.diag([1.0, 0.0, 0.5]), id="degenerate")


@pytest.mark.parametrize("name,A,b,mu0,Sigma0", list(_cases()))
def test_relu_slope_closed_form_vs_monte_carlo(name, A, b, mu0, Sigma0):
    n = 100_000
    X = G.sample_gaussian(mu0, Sigma0, n, np.random.default_rng(2024))
    Q = _mc_relu_sq(A, b, X)
    se = Q.std(ddof=1) / np.sqrt(n)
    cf2 = R.relu_slope(A, b, mu0, Sigma0) ** 2
    assert abs(Q.mean() - cf2) <= 4.0 * se, (name, Q.mean(), cf2, se)
    if name == "degenerate":
        s2 = np.diag(A @ Sigma0 @ A.T)
        assert s2[0] == 0.0 and s2[1] == 0.0
        m = -(A @ mu0 + b)
        assert m[0] > 0.0 > m[1]


def test_relu_slope_point_mass_exact_and_continuous():
    A, b, mu0 = A2, b2, MU2
    exact = float(np.linalg.norm(np.maximum(0.0, -(A @ mu0 + b))))
    assert exact > 0.0
    assert R.relu_slope(A, b, mu0, np.zeros((2, 2))) == pytest.approx(exact, rel=1e-15, abs=0.0)
    # s -> 0 limit of the s > 0 branch agrees with the s = 0 branch
    for eps in (1e-6, 1e-10, 1e-14):
        assert R.relu_slope(A, b, mu0, eps * np.eye(2)) == pytest.approx(exact, rel=10 * np.sqrt(eps))


@pytest.mark.parametrize("r", [-35.0, -30.0, -20.0, -10.0, -5.0, -1.0, 0.0, 0.7, 5.0])
def test_relu_second_moment_tail_against_mpmath(r):
    """E[max(0,z)^2], z ~ N(r s, s^2): the naive formula loses digits for r << 0."""
    mp.mp.dps = 60
    s = 1.7
    m = mp.mpf(r)
    exact = float(mp.mpf(s) ** 2 * ((m * m + 1) * mp.ncdf(m) + m * mp.npdf(m)))
    A = np.eye(1)
    got = R.relu_slope(A, np.array([-r * s]), np.zeros(1), np.array([[s * s]])) ** 2
    assert got == pytest.approx(exact, rel=1e-9, abs=0.0)


def test_empirical_relu_slope_matches_definition():
    X = G.sample_gaussian(MU2, S2, 500, np.random.default_rng(0))
    direct = np.sqrt(np.mean([np.sum(np.maximum(0.0, -(A2 @ x + b2)) ** 2) for x in X]))
    assert R.empirical_relu_slope(A2, b2, X) == pytest.approx(direct, rel=1e-14)


# ---------------------------------------------------------------------------------------
# Lemma 2.3
# ---------------------------------------------------------------------------------------


def test_lemma23_interval():
    B = np.diag([0.1, -0.05])
    Sigma0 = np.diag([0.8, 0.2])
    lo, hi, ok = R.lemma23_kappa_interval(B, Sigma0)
    assert lo == pytest.approx(0.4) and hi == pytest.approx(1 / 1.6) and ok
    # 8 ||B|| lmax = 8 * 0.2 * 0.8 > 1: empty
    lo, hi, ok = R.lemma23_kappa_interval(2 * B, Sigma0)
    assert lo == pytest.approx(0.8) and not ok
    # the nonempty flag is exactly 8 ||B|| lmax < 1 on random inputs
    rng = np.random.default_rng(5)
    for _ in range(200):
        Bm = rng.normal(size=(3, 3)) * rng.uniform(0.01, 0.3)
        L = rng.normal(size=(3, 3)) * rng.uniform(0.1, 1.0)
        S = L @ L.T
        crit = 8 * np.linalg.norm(Bm, 2) * np.linalg.eigvalsh(S)[-1]
        if abs(crit - 1) > 1e-9:
            assert R.lemma23_kappa_interval(Bm, S)[2] == (crit < 1)
    assert R.lemma23_kappa_interval(np.eye(2), np.zeros((2, 2)))[1] == np.inf


def test_E0_closed_form_vs_monte_carlo():
    mu0 = np.array([0.5, -0.3, 0.2])
    Sigma0 = np.array([[0.20, 0.05, 0.00], [0.05, 0.10, 0.02], [0.00, 0.02, 0.15]])
    B = 0.12 * np.eye(3)
    lo, hi, ok = R.lemma23_kappa_interval(B, Sigma0)
    assert ok
    kappa = 0.5  # in [lo, hi) = [0.48, ~2.1); 4 kappa lmax < 1 so the MC variance is finite
    assert lo <= kappa < hi and 4 * kappa * np.linalg.eigvalsh(Sigma0)[-1] < 1
    n = 200_000
    X = G.sample_gaussian(mu0, Sigma0, n, np.random.default_rng(7))
    vals = np.exp(kappa * np.sum(X * X, axis=1))
    e0 = R.E0(kappa, mu0, Sigma0)
    # exact variance from the same closed form: E[e^{2 kappa |x|^2}] = E0(2 kappa)
    se_exact = np.sqrt((R.E0(2 * kappa, mu0, Sigma0) - e0**2) / n)
    assert se_exact == pytest.approx(vals.std() / np.sqrt(n), rel=0.1)
    assert abs(vals.mean() - e0) <= 4 * se_exact, (vals.mean(), e0, se_exact)


def test_E0_special_cases():
    mu0 = np.array([1.0, -2.0])
    # point mass: exp(kappa |mu|^2)
    assert R.E0(0.3, mu0, np.zeros((2, 2))) == pytest.approx(np.exp(0.3 * 5.0), rel=1e-14)
    # standard normal in 1-D: (1 - 2 kappa)^{-1/2}
    assert R.E0(0.2, np.zeros(1), np.eye(1)) == pytest.approx((1 - 0.4) ** -0.5, rel=1e-14)
    assert R.E0(0.0, mu0, np.eye(2)) == pytest.approx(1.0)
    # divergent
    assert R.E0(0.5, mu0, np.eye(2)) == np.inf
    assert R.E0(0.6, mu0, np.diag([1.0, 0.0])) == np.inf


# ---------------------------------------------------------------------------------------
# W2 between Gaussians
# ---------------------------------------------------------------------------------------


def _random_spd(rng, d, rank=None):
    L = rng.normal(size=(d, rank or d))
    return L @ L.T


def _w2_sqrtm(mu1, S1, mu2, S2):
    r1 = scipy.linalg.sqrtm(S1).real
    c = scipy.linalg.sqrtm(r1 @ S2 @ r1).real
    return np.sqrt(np.sum((mu1 - mu2) ** 2) + np.trace(S1 + S2 - 2 * c))


def test_gaussian_w2_known_cases():
    rng = np.random.default_rng(3)
    for d in (1, 2, 4):
        mu1, mu2 = rng.normal(size=d), rng.normal(size=d)
        S = _random_spd(rng, d)
        # equal covariances: the mean shift
        assert R.gaussian_w2(mu1, S, mu2, S) == pytest.approx(np.linalg.norm(mu1 - mu2), rel=1e-10)
        # identical: zero (no sqrt(eps) cancellation)
        assert R.gaussian_w2(mu1, S, mu1, S) <= 1e-12
        # commuting (diagonal) covariances
        a, c = rng.uniform(0.0, 3.0, d), rng.uniform(0.0, 3.0, d)
        exact = np.sqrt(np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(c)) ** 2))
        assert R.gaussian_w2(mu1, np.diag(a), mu2, np.diag(c)) == pytest.approx(exact, rel=1e-12)
        # commuting but not diagonal: same spectra in a common rotated basis
        Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
        got = R.gaussian_w2(mu1, Q @ np.diag(a) @ Q.T, mu2, Q @ np.diag(c) @ Q.T)
        assert got == pytest.approx(exact, rel=1e-10)
    # orthogonal rank-one covariances: S1^{1/2} S2 S1^{1/2} = 0, so W2^2 = tr S1 + tr S2
    got = R.gaussian_w2(np.zeros(2), np.diag([2.0, 0.0]), np.zeros(2), np.diag([0.0, 3.0]))
    assert got == pytest.approx(np.sqrt(5.0), rel=1e-14)


def test_gaussian_w2_symmetric_and_matches_sqrtm_formula():
    rng = np.random.default_rng(4)
    for d in (2, 3, 5):
        for _ in range(10):
            mu1, mu2 = rng.normal(size=d), rng.normal(size=d)
            S1, S2 = _random_spd(rng, d), _random_spd(rng, d)
            w12 = R.gaussian_w2(mu1, S1, mu2, S2)
            assert w12 == pytest.approx(R.gaussian_w2(mu2, S2, mu1, S1), rel=1e-12)
            assert w12 == pytest.approx(_w2_sqrtm(mu1, S1, mu2, S2), rel=1e-8)
    # singular covariances (rank 1 in 3-D) are allowed
    S1, S2 = _random_spd(rng, 3, rank=1), _random_spd(rng, 3, rank=2)
    w = R.gaussian_w2(np.zeros(3), S1, np.ones(3), S2)
    assert np.isfinite(w) and w == pytest.approx(R.gaussian_w2(np.ones(3), S2, np.zeros(3), S1), rel=1e-10)


# ---------------------------------------------------------------------------------------
# Empirical W2
# ---------------------------------------------------------------------------------------


def test_empirical_w2_against_brute_force():
    rng = np.random.default_rng(9)
    for n in range(1, 7):
        for d in (1, 2, 3):
            X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 0.3
            C = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
            best = min(C[np.arange(n), list(p)].sum() for p in itertools.permutations(range(n)))
            got = R.empirical_w2(X, Y)
            assert got == pytest.approx(np.sqrt(best / n), rel=1e-12)
            assert got == pytest.approx(R.empirical_w2(Y, X), rel=1e-12)
            assert got == pytest.approx(R.empirical_w2(X, Y[rng.permutation(n)]), rel=1e-12)
            # Gelbrich: the Gaussian W2 of the (1/n) moments is a lower bound
            assert R.gaussian_w2(*R.moments(X), *R.moments(Y)) <= got + 1e-12
    X = rng.normal(size=(5, 2))
    assert R.empirical_w2(X, X[::-1]) == 0.0
    with pytest.raises(ValueError):
        R.empirical_w2(X, X[:4])


# ---------------------------------------------------------------------------------------
# Prop. 2.4 (c): the particle study
# ---------------------------------------------------------------------------------------


def test_short_time_slope_relu_vs_identity():
    assert R.lemma23_kappa_interval(B2, S2)[2]
    N, t = 2000, np.array([5e-4, 1e-3, 2e-3])
    st = R.relu_study(A2, B2, V2, b2, MU2, S2, t, N, seed=1)
    i = 1  # t = 1e-3
    ratio = st.coupling_l2[i] / t[i]
    # the exact t -> 0 limit on this sample
    assert st.slope_sample == pytest.approx(R.empirical_relu_slope(A2, b2, st.X0), rel=1e-15)
    assert ratio == pytest.approx(st.slope_sample, rel=1e-2)
    assert st.slope_fit == pytest.approx(st.slope_sample, rel=1e-5)  # t^2 term fitted out
    # against the closed form: the sample slope is an estimate with a standard error
    Q = _mc_relu_sq(A2, b2, st.X0)
    se = Q.std(ddof=1) / (2 * np.sqrt(Q.mean()) * np.sqrt(N))  # delta method for sqrt(mean Q)
    assert abs(st.slope_sample - st.slope_closed_form) <= 4 * se
    assert abs(ratio - st.slope_closed_form) <= 4 * se + 1e-2 * st.slope_closed_form
    assert ratio == pytest.approx(st.slope_closed_form, rel=5e-2)
    # W2 <= synchronous coupling; Gelbrich <= W2
    assert np.all(st.w2_empirical <= st.coupling_l2 * (1 + 1e-12))
    assert np.all(st.w2_gelbrich <= st.w2_empirical + 1e-12)
    # Prop. 2.4's first-order term t ||max(0, -(A x + b))||_{L2(N(mu0, Sigma0))}, the norm by quadrature
    np.testing.assert_allclose(st.first_order_bound, t * _relu_l2_by_quadrature(A2, b2, MU2, S2), rtol=1e-12)


def _relu_l2_by_quadrature(A, b, mu0, Sigma0):
    """sqrt(sum_i E[max(0, m_i + s_i Z)^2]), Z ~ N(0, 1), each expectation by mpmath quadrature."""
    m = -(A @ mu0 + b)
    s = np.sqrt(np.diag(A @ Sigma0 @ A.T))
    total = mp.mpf(0)
    with mp.workdps(30):
        for mi, si in zip(m, s):
            mi, si = mp.mpf(mi), mp.mpf(si)
            total += mp.quad(lambda z: (mi + si * z) ** 2 * mp.npdf(z), [-mi / si, mp.inf])
    return float(mp.sqrt(total))


def test_relu_slope_against_quadrature():
    for A, b, mu0, S0 in [(A2, b2, MU2, S2), (-A2, 3 * b2, -MU2, 2 * S2), (A2.T, -b2, MU2, S2 / 10)]:
        assert R.relu_slope(A, b, mu0, S0) == pytest.approx(_relu_l2_by_quadrature(A, b, mu0, S0), rel=1e-12)


def test_identity_activation_gives_zero_distance():
    t = np.array([0.0, 0.01, 0.05])
    st = R.relu_study(A2, B2, V2, b2, MU2, S2, t, 200, seed=3, activation="identity")
    assert np.all(st.coupling_l2 == 0.0)
    assert np.all(st.w2_empirical == 0.0)
    assert st.slope_closed_form == 0.0 and st.slope_sample == 0.0
    assert np.all(st.first_order_bound == 0.0)


def test_gaussian_reference_start():
    t = np.array([0.0, 0.01])
    st = R.relu_study(A2, B2, V2, b2, MU2, S2, t, 300, seed=4, nu_start="population")
    assert st.w2_gaussian[0] == pytest.approx(R.gaussian_w2(*R.moments(st.X0), MU2, S2), rel=1e-12)
    np.testing.assert_allclose(st.mu_nu[0], MU2)
    sol = G.integrate_moments(G.constant(A2, B2, V2, b2), MU2, S2, 0.01, t_eval=t)
    np.testing.assert_allclose(st.Sigma_nu[-1], sol.Sigma[-1], rtol=1e-12)
    st2 = R.relu_study(A2, B2, V2, b2, MU2, S2, t, 300, seed=4, nu_start="sample")
    assert st2.w2_gaussian[0] <= 1e-12
    # same sample and particles; only the reference Gaussian differs
    np.testing.assert_array_equal(st2.coupling_l2, st.coupling_l2)


def test_relu_study_rejects_bad_times():
    with pytest.raises(ValueError):
        R.relu_study(A2, B2, V2, b2, MU2, S2, np.array([0.1, 0.05]), 10, 0)
    with pytest.raises(ValueError):
        R.relu_study(A2, B2, V2, b2, MU2, S2, np.array([0.1]), 10, 0, activation="tanh")
