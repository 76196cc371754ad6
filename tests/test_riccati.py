"""V = eta I case of the gaussian paper (§4.1): Thm 4.1 limit, exact linearisation, blow-up time,
Thm 4.11 mean matching, and the errata of note 000 §6 items 3-5.

Every prediction of :mod:`flowcert.numeric.gaussian_riccati` is compared with an independent
computation: the adaptive integration of eq. (7) (:func:`flowcert.numeric.gaussian.integrate_moments`),
closed forms derived by hand in the tests, or quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad_vec, solve_ivp
from scipy.linalg import expm

from flowcert.numeric.gaussian import riccati as R
from flowcert.numeric.gaussian import constant, covariance_field, integrate_moments

SIGMA0_51 = np.array([[0.4, 0.2], [0.2, 0.2]])  # Section 5.1 initial covariance


def random_case(seed: int, d: int, eta: float) -> tuple[np.ndarray, np.ndarray]:
    """Random A with |Re spec A| >= 0.3 and B with eta (B + B^T) negative definite."""
    rng = np.random.default_rng(seed)
    while True:
        A = rng.standard_normal((d, d))
        if np.abs(np.linalg.eigvals(A).real).min() >= 0.3:
            break
    C = rng.standard_normal((d, d))
    S = C @ C.T / d + 0.5 * np.eye(d)
    K = rng.standard_normal((d, d))
    B = -math.copysign(1.0, eta) * (S + (K - K.T))  # eta (B + B^T) = -2 |eta| S < 0, B not symmetric
    return A, B


def simulate(A, B, eta, Sigma0, t_eval, mu0=None, b=None, *, dense=False, **kw):
    """integrate_moments for V = eta I; ``dense`` keeps all solver steps (needed when the run may
    stop at a blow-up event before the first requested time)."""
    d = A.shape[0]
    mu0 = np.zeros(d) if mu0 is None else mu0
    b = np.zeros(d) if b is None else b
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    coeffs = constant(A, B, eta * np.eye(d), b)
    return integrate_moments(coeffs, mu0, Sigma0, float(t_eval[-1]), t_eval=None if dense else t_eval, **kw)


def rel(X, Y) -> float:
    return float(np.linalg.norm(X - Y) / max(np.linalg.norm(Y), 1e-300))


# ---------------------------------------------------------------------------------------------
# ordered real Schur form and detectability
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_ordered_real_schur(seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 5))
    A[:, 0] = 0.0  # an exact zero eigenvalue: must land in A_n for a positive tol
    U, T, k = sch = R.ordered_real_schur(A, tol=1e-9)
    assert np.allclose(U.T @ U, np.eye(5), atol=1e-13)
    assert np.allclose(U @ T @ U.T, A, atol=1e-12)
    assert np.allclose(np.tril(T, -2), 0.0)
    ea, en = np.linalg.eigvals(sch.A_a), np.linalg.eigvals(sch.A_n)
    assert k == int((np.linalg.eigvals(A).real > 1e-9).sum())
    assert np.all(ea.real > 1e-9) and np.all(en.real <= 1e-9)
    assert sch.A_12.shape == (k, 5 - k)
    if 0 < k < 5:
        assert T[k, k - 1] == 0.0  # no 2x2 block split across the partition


def test_detectable_pbh():
    # weight nd: trivially detectable
    assert R.detectable(np.diag([1.0, -1.0]), np.eye(2), -1.0) is True
    # H observes only the second coordinate
    assert R.detectable(np.diag([1.0, -1.0]), np.diag([0.0, 1.0]), -1.0) is False  # unstable mode hidden
    assert R.detectable(np.diag([-1.0, 1.0]), np.diag([0.0, 1.0]), -1.0) is True  # stable mode hidden
    # coupled: A = [[1, 1], [0, -1]], H = e_2^T; eigenvector of 1 is e_1, H e_1 = 0
    assert R.detectable(np.array([[1.0, 1.0], [0.0, -1.0]]), np.diag([0.0, 1.0]), -1.0) is False
    # A^T-coupled: eigenvector of 1 is (1, 1)/..., observed through the second coordinate
    assert R.detectable(np.array([[1.0, 0.0], [2.0, -1.0]]), np.diag([0.0, 1.0]), -1.0) is True
    # eq. (12) fails: no H exists
    assert R.detectable(np.eye(2), np.eye(2), 1.0) is None
    # unobserved eigenvalues on the imaginary axis: ambiguous, never True
    assert R.detectable(np.array([[0.0, 1.0], [-1.0, 0.0]]), np.zeros((2, 2)), -1.0) is None


# ---------------------------------------------------------------------------------------------
# (i) Theorem 4.1: the simulated covariance converges to the limit, whatever Sigma0
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,d,eta", [(0, 3, -1.0), (1, 3, 0.7), (2, 3, -0.5), (3, 4, 1.3), (4, 2, -2.0)])
def test_thm41_limit_matches_simulation(seed, d, eta):
    A, B = random_case(seed, d, eta)
    lim = R.thm41_limit(A, B, eta)
    assert lim.weight_nd and lim.weight_nsd and lim.detectable is True and lim.guaranteed
    assert lim.p11_pd and lim.Sigma_inf is not None
    S_inf = lim.Sigma_inf
    # independent of the module: an equilibrium of eq. (7), PSD of rank k
    scale = 1.0 + np.linalg.norm(S_inf)
    assert np.abs(covariance_field(A, B, eta * np.eye(d), S_inf)).max() < 1e-10 * scale**2
    w = np.linalg.eigvalsh(S_inf)
    k = lim.schur.k
    assert np.all(w > -1e-12 * scale) and int((w > 1e-9 * scale).sum()) == k
    rng = np.random.default_rng(100 + seed)
    finals = []
    for Sigma0 in (np.eye(d), (lambda C: C @ C.T + 0.05 * np.eye(d))(rng.standard_normal((d, d)))):
        sol = simulate(A, B, eta, Sigma0, [60.0])
        assert sol.status == "ok"
        finals.append(sol.Sigma[-1])
        assert np.linalg.norm(sol.Sigma[-1] - S_inf) < 1e-6 * max(1.0, np.linalg.norm(S_inf))
        # the exact solution reaches the limit too
        S_exact = R.inverse_covariance_solution(A, B, eta, Sigma0, 60.0)
        assert np.linalg.norm(S_exact - S_inf) < 1e-6 * max(1.0, np.linalg.norm(S_inf))
    assert np.linalg.norm(finals[0] - finals[1]) < 2e-6 * max(1.0, np.linalg.norm(S_inf))
    # Lemma 4.4 / Proof 4.12: M_inf = A + eta Sigma_inf B has Re spec <= 0
    M = A + eta * S_inf @ B
    assert np.linalg.eigvals(M).real.max() < 1e-8


def test_thm41_schur_block_equation():
    """Sigma_a solves eq. (15) 0 = A_a S + S A_a^T + S B11 S and P11 is the Gramian integral."""
    A, B = random_case(7, 4, -1.0)
    lim = R.thm41_limit(A, B, -1.0)
    k, U = lim.schur.k, lim.schur.U
    assert k >= 1
    Sa = (U.T @ lim.Sigma_inf @ U)[:k, :k]
    Aa = lim.schur.A_a
    assert np.abs(Aa @ Sa + Sa @ Aa.T + Sa @ lim.B11 @ Sa).max() < 1e-10 * (1 + np.abs(Sa).max()) ** 2
    assert np.allclose(lim.B11, -(U.T @ (B + B.T) @ U)[:k, :k])
    gram, _ = quad_vec(lambda s: expm(-Aa.T * s) @ (-lim.B11) @ expm(-Aa * s), 0.0, np.inf, epsabs=1e-13)
    assert np.allclose(gram, lim.P11, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# (ii) exact linearisation P = Sigma^{-1} against the integrator
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "A,B,eta,Sigma0,times",
    [
        (*random_case(10, 3, -1.0), -1.0, np.diag([2.0, 0.5, 1.0]), [0.25, 0.5, 1.0, 2.0, 4.0]),
        (*random_case(11, 3, 0.8), 0.8, np.eye(3), [0.25, 0.5, 1.0, 2.0, 4.0]),
        (*random_case(12, 4, -0.3), -0.3, 0.3 * np.eye(4), [0.5, 1.5, 3.0]),
        # blow-up regime (eta (B + B^T) > 0), before the blow-up time 0.46815
        (np.diag([1.0, 2.0]), np.eye(2), 1.0, SIGMA0_51, [0.1, 0.2, 0.3, 0.4, 0.45]),
        # indefinite weight
        # indefinite weight, blow-up at 0.41673
        (np.array([[0.5, 1.0], [-1.0, -0.2]]), np.diag([1.0, -1.0]), 1.0, np.eye(2), [0.1, 0.2, 0.3, 0.4]),
    ],
)
def test_riccati_identity(A, B, eta, Sigma0, times):
    times = np.asarray(times)
    sol = simulate(A, B, eta, Sigma0, times, rtol=1e-12, atol=1e-14)
    assert sol.status == "ok"
    S_exact = R.inverse_covariance_solution(A, B, eta, Sigma0, times)
    P = R.inverse_covariance(A, B, eta, Sigma0, times)
    d = A.shape[0]
    Q = -eta * (B + B.T)
    # the linear ODE P' = -A^T P - P A + Q, integrated independently
    lin = solve_ivp(
        lambda t, p: (-A.T @ p.reshape(d, d) - p.reshape(d, d) @ A + Q).ravel(),
        (0.0, float(times[-1])), np.linalg.inv(Sigma0).ravel(), method="DOP853",
        t_eval=times, rtol=1e-13, atol=1e-14,
    )
    for i in range(times.size):
        assert rel(S_exact[i], sol.Sigma[i]) < 1e-8
        assert rel(P[i], lin.y[:, i].reshape(d, d)) < 1e-9
    # the P formula against quadrature of its integral (independent of Van Loan)
    t = float(times[1])
    Q = -eta * (B + B.T)
    integral, _ = quad_vec(lambda s: expm(-A.T * s) @ Q @ expm(-A * s), 0.0, t, epsabs=1e-14, epsrel=1e-13)
    E = expm(-A * t)
    P_quad = E.T @ np.linalg.inv(Sigma0) @ E + integral
    assert rel(P[1], P_quad) < 1e-10
    # scalar t returns one matrix; order of times does not matter
    assert np.allclose(R.inverse_covariance_solution(A, B, eta, Sigma0, t), S_exact[1], rtol=1e-12)
    assert np.allclose(R.inverse_covariance(A, B, eta, Sigma0, times[::-1])[::-1], P, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# (iii) the paper's Theorem 4.1 without the corrected hypothesis (note §6 item 3)
# ---------------------------------------------------------------------------------------------


def test_thm41_counterexample_skew_B():
    """B skew: eta (B + B^T) = 0 satisfies (12), yet Sigma = e^{At} Sigma0 e^{A^T t} diverges for A = I."""
    A, B, eta = np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]]), -1.0
    lim = R.thm41_limit(A, B, eta)
    assert lim.weight_nsd and not lim.weight_nd  # the paper's hypothesis (12) holds
    assert lim.detectable is False and not lim.guaranteed  # the corrected one does not
    assert not lim.p11_pd and lim.Sigma_inf is None  # (15) has no PD solution: B11 = 0
    sol = simulate(A, B, eta, SIGMA0_51, [5.0, 10.0], blowup_factor=1e12)
    assert sol.status == "ok"
    for t, S in zip((5.0, 10.0), sol.Sigma):
        assert rel(S, math.exp(2 * t) * SIGMA0_51) < 1e-6  # integration error grows with e^{2t}
    assert np.linalg.norm(sol.Sigma[-1]) > 1e8
    assert rel(R.inverse_covariance_solution(A, B, eta, SIGMA0_51, 10.0), math.exp(20.0) * SIGMA0_51) < 1e-10
    assert R.blowup_analysis(A, B, eta, SIGMA0_51).status == "global"  # diverges, but in infinite time


def test_thm41_counterexample_rotation():
    """A skew, B = 0: the formula gives Sigma_inf = 0 (k = 0) but Sigma(t) rotates forever."""
    A, B, eta = np.array([[0.0, 1.0], [-1.0, 0.0]]), np.zeros((2, 2)), -1.0
    lim = R.thm41_limit(A, B, eta)
    assert lim.schur.k == 0 and np.allclose(lim.Sigma_inf, 0.0)
    assert not lim.guaranteed and lim.detectable is not True
    sol = simulate(A, B, eta, SIGMA0_51, [50.0])
    assert abs(np.trace(sol.Sigma[-1]) - np.trace(SIGMA0_51)) < 1e-8  # tr Sigma is conserved, no decay


# ---------------------------------------------------------------------------------------------
# (iv) blow-up time: first zero of det P(t)
# ---------------------------------------------------------------------------------------------


def test_blowup_time_note_example():
    """A = diag(1, 2), V = B = I: the note's 0.46815 is the Section 5.1 Sigma0; Sigma0 = I gives ln(3)/4."""
    A, B, eta = np.diag([1.0, 2.0]), np.eye(2), 1.0
    tb = R.blowup_time_eta(A, B, eta, SIGMA0_51)
    assert tb is not None and abs(tb - 0.46815) < 5e-6
    # by hand, Sigma0 diagonal decouples: p_i' = -2 a_i p_i - 2, p_i(0) = 1/s_i,
    # p_i = 0 at t_i = ln(1 + a_i / s_i) / (2 a_i); Sigma0 = I gives min(ln 2 / 2, ln 3 / 4)
    assert abs(R.blowup_time_eta(A, B, eta, np.eye(2)) - math.log(3.0) / 4.0) < 1e-13
    assert abs(R.blowup_time_eta(A, B, eta, np.diag([0.1, 0.4])) - min(math.log(11) / 2, math.log(6) / 4)) < 1e-13
    # Theorem 4.8 bound (20): T_f <= log(1 + alpha / (beta y0)) / alpha, alpha = 2, beta = 1
    for S0 in (SIGMA0_51, np.eye(2)):
        assert R.blowup_time_eta(A, B, eta, S0) <= math.log(1.0 + 2.0 / np.trace(S0)) / 2.0


@pytest.mark.parametrize(
    "A,B,eta,Sigma0",
    [
        (np.diag([1.0, 2.0]), np.eye(2), 1.0, SIGMA0_51),
        (np.array([[0.3, 1.0], [-0.5, -0.4]]), np.array([[1.0, 0.7], [-0.3, 0.5]]), 0.8, np.eye(2)),
        (np.array([[-1.0, 2.0, 0.0], [0.0, -0.5, 1.0], [0.3, 0.0, -2.0]]), np.diag([2.0, 1.0, 0.5]), 1.5, 2.0 * np.eye(3)),
        # indefinite eta (B + B^T): lambda_min(G(t)) is not monotone, still found
        (np.array([[0.5, 1.0], [-1.0, -0.2]]), np.diag([1.0, -1.0]), 1.0, np.eye(2)),
    ],
)
def test_blowup_time_matches_simulation(A, B, eta, Sigma0):
    ba = R.blowup_analysis(A, B, eta, Sigma0)
    assert ba.status == "blows_up"
    assert ba.monotone == bool(np.linalg.eigvalsh(eta * (B + B.T)).min() >= 0)
    sol = simulate(A, B, eta, Sigma0, [50.0], blowup_factor=1e10, dense=True)
    assert sol.status == "blowup"
    t_sim, t_exact = sol.blowup_time, ba.time
    assert abs(t_sim - t_exact) < 1e-4 * t_exact
    assert t_sim < t_exact + 1e-9 * t_exact  # the event time is a slight underestimate
    # before it, the exact solution exists and is PD; at and after it, NaN
    S = R.inverse_covariance_solution(A, B, eta, Sigma0, [0.99 * t_exact, t_exact, 2 * t_exact])
    assert np.linalg.eigvalsh(S[0]).min() > 0 and np.isnan(S[1:]).all()
    assert np.linalg.eigvalsh(R.inverse_covariance(A, B, eta, Sigma0, t_exact)).min() == pytest.approx(0.0, abs=1e-9)


def test_no_blowup_cases():
    # eq. (12): global existence
    assert R.blowup_analysis(np.eye(2), np.eye(2), -1.0, np.eye(2)).status == "global"
    # A = -I, B = I, eta = 1: p' = 2p - 2, p(0) = 1/s, blow-up iff s > 1, at ln(s / (s - 1)) / 2
    A = -np.eye(2)
    assert R.blowup_analysis(A, np.eye(2), 1.0, 0.5 * np.eye(2)).status == "global"
    assert abs(R.blowup_time_eta(A, np.eye(2), 1.0, 2.0 * np.eye(2)) - math.log(2.0) / 2.0) < 1e-13
    sol = simulate(A, np.eye(2), 1.0, 0.5 * np.eye(2), [30.0])
    assert sol.status == "ok" and np.abs(sol.Sigma[-1]).max() < 1e-10


# ---------------------------------------------------------------------------------------------
# (v) Theorem 4.11 mean matching, Section 5.1 setup
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "A,k_expected",
    [
        (np.array([[1.0, 1.0], [-1.0, 2.0]]), 2),  # (a) Re spec A > 0
        (np.array([[-1.0, 2.0], [0.0, -0.5]]), 0),  # (b) Re spec A <= 0
        (np.array([[1.0, 2.0], [0.0, -1.0]]), 1),  # (c) mixed
    ],
)
def test_mean_matching_section51(A, k_expected):
    B, eta = np.array([[2.0, 0.5], [0.5, 1.0]]), -1.0
    mu0, target = np.array([-1.0, -1.0]), np.array([1.0, 2.0])
    lim = R.thm41_limit(A, B, eta)
    assert lim.schur.k == k_expected and lim.guaranteed
    b = R.bias_for_target_mean(A, B, eta, lim.Sigma_inf, target)
    assert np.allclose(R.mean_limit(A, B, eta, lim.Sigma_inf, b), target, atol=1e-12)
    sol = simulate(A, B, eta, SIGMA0_51, [100.0], mu0=mu0, b=b)
    assert sol.status == "ok"
    assert np.abs(sol.mu[-1] - target).max() < 1e-6
    assert np.abs(sol.Sigma[-1] - lim.Sigma_inf).max() < 1e-6
    # by hand, with V = -I the recipe reads b = -(A - Sigma_inf B - I) mu_target
    assert np.allclose(b, -(A - lim.Sigma_inf @ B - np.eye(2)) @ target)


def test_mean_limit_not_hurwitz():
    # eta > 0 with an unstable block: A + eta Sigma_inf B + eta I is not Hurwitz (Thm 4.11(2))
    A, B, eta = np.array([[1.0, 2.0], [0.0, -1.0]]), -np.array([[2.0, 0.5], [0.5, 1.0]]), 1.0
    lim = R.thm41_limit(A, B, eta)
    assert lim.guaranteed
    assert R.mean_limit(A, B, eta, lim.Sigma_inf, np.ones(2)) is None


# ---------------------------------------------------------------------------------------------
# (vi) Proof 4.12 block formula (note §6 item 5)
# ---------------------------------------------------------------------------------------------


def test_proof412_block_erratum():
    A, B, eta = np.array([[1.0, 3.0], [0.0, -2.0]]), np.array([[2.0, 1.0], [0.0, 1.0]]), -1.0
    lim = R.thm41_limit(A, B, eta)
    U, k = lim.schur.U, lim.schur.k
    # A is upper triangular with the eigenvalue 1 (Re > 0) first: U = diag(s1, s2), s_i = +-1
    assert k == 1 and np.allclose(np.abs(U), np.eye(2))
    s = np.diag(U)
    # by hand: eta (B + B^T) = -[[4, 1], [1, 2]], B11 = -4 (twice eta (U^T B U)_11 = -2);
    # A_a^T P + P A_a = -B11 -> 2P = 4, P11 = 2, Sigma_a = 1/2, Sigma_inf = diag(1/2, 0)
    assert lim.B11[0, 0] == pytest.approx(-4.0, abs=1e-14)
    assert lim.P11[0, 0] == pytest.approx(2.0, abs=1e-14)
    assert np.allclose(lim.Sigma_inf, np.diag([0.5, 0.0]), atol=1e-14)
    # M_inf = A + eta Sigma_inf B = [[1 - 1/2 * 2, 3 - 1/2 * 1], [0, -2]] = [[0, 5/2], [0, -2]]
    M = A + eta * lim.Sigma_inf @ B
    Mt = U.T @ M @ U
    assert Mt[0, 0] == pytest.approx(0.0, abs=1e-14)  # correct (1,1) block
    assert Mt[0, 1] == pytest.approx(2.5 * s[0] * s[1], abs=1e-14)  # correct (1,2) block
    assert Mt[1, 0] == pytest.approx(0.0, abs=1e-14) and Mt[1, 1] == pytest.approx(-2.0, abs=1e-14)
    # the paper's blocks A_a + Sigma_a B11 = -1 and A_12 = 3 are wrong
    Aa, A12 = lim.schur.A_a[0, 0], lim.schur.A_12[0, 0]
    assert Aa + 0.5 * lim.B11[0, 0] == pytest.approx(-1.0) and abs(A12) == pytest.approx(3.0)
    assert abs(Mt[0, 0] - (Aa + 0.5 * lim.B11[0, 0])) == pytest.approx(1.0)
    # the corrected formula: A_a + eta Sigma_a (U^T B U)_11 and A_12 + eta Sigma_a (U^T B U)_12
    Bt = U.T @ B @ U
    assert Mt[0, 0] == pytest.approx(Aa + eta * 0.5 * Bt[0, 0], abs=1e-14)
    assert Mt[0, 1] == pytest.approx(A12 + eta * 0.5 * Bt[0, 1], abs=1e-14)
    # spectral conclusion survives: spec(M_inf) = {0, -2}, Re <= 0
    ev = np.sort(np.linalg.eigvals(M).real)
    assert np.allclose(ev, [-2.0, 0.0], atol=1e-14) and ev.max() <= 1e-14
    # and the simulation goes there
    sol = simulate(A, B, eta, SIGMA0_51, [40.0])
    assert np.abs(sol.Sigma[-1] - np.diag([0.5, 0.0])).max() < 1e-8
