"""Integrator discipline for eq. (7): stiffness switching, extreme time scales, manifold drift.

Oracles are closed forms of the scalar covariance equation
:math:`\\dot s = 2as + 2vc\\,s^2` (d = 1, A = a, V = v, B = c), which blows up at
:math:`T=\\log(1+a/(vcs_0))/(2a)` (and at :math:`1/(2vcs_0)` for a = 0), and finite differences.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.numeric import gaussian as ng

SETTINGS = settings(max_examples=25, deadline=None)


def _scalar(a: float, v: float, c: float) -> ng.Coefficients:
    return ng.constant(np.array([[a]]), np.array([[c]]), np.array([[v]]), np.zeros(1))


@pytest.mark.parametrize("scale", [1e100, 1e150, 3e150, 9e153])
def test_blowup_time_at_extreme_scales(scale):
    """V = B = scale, A = 0, s0 = 1: T = 1 / (2 scale^2), down to the subnormal range."""
    sol = ng.integrate_moments(_scalar(0.0, scale, scale), np.zeros(1), np.eye(1), 1.0)
    exact = 1.0 / (2.0 * scale * scale)
    assert sol.status == "blowup"
    # the event fires when s = 1e8 (1 + s0): t = T (1 - 1 / s) exactly for this equation
    assert sol.blowup_time <= exact
    assert sol.blowup_time == pytest.approx(exact * (1 - 1 / 2e8), rel=1e-6)


def test_time_unit_is_an_exact_power_of_two_and_identity_for_moderate_rates():
    big = _scalar(1e200, 1.0, 1.0)
    c = ng.time_unit(big, np.eye(1))
    assert c < 1e-199 and math.frexp(c)[0] == 0.5  # a power of two: rescaling is exact
    assert ng.time_unit(_scalar(-3.0, 2.0, 5.0), np.eye(1)) == 1.0


@SETTINGS
@given(a=st.floats(0.1, 2.0), v=st.floats(0.1, 2.0), c=st.floats(0.1, 2.0), e=st.integers(60, 140))
def test_rescaled_time_matches_closed_form(a, v, c, e):
    """Same blow-up relative to the natural time scale, with coefficients scaled by 2^e (A and V)."""
    k = 2.0**e
    sol = ng.integrate_moments(_scalar(k * a, k * v, c), np.zeros(1), np.eye(1), 1.0)
    exact = math.log1p(a / (v * c)) / (2 * a * k)
    assert sol.status == "blowup"
    assert sol.blowup_time == pytest.approx(exact, rel=1e-5)
    assert sol.blowup_time <= exact * (1 + 1e-9)


@pytest.mark.parametrize("lam", [1e3, 1e5])
def test_stiff_problem_switches_to_radau_and_stays_accurate(lam):
    """A = diag(-lam, -1), V = B = 0: Sigma(t) = diag(e^{-2 lam t}, e^{-2t}), mu(t) = e^{-t}(...)."""
    A = np.diag([-lam, -1.0])
    t_end = 20.0
    sol = ng.integrate_moments(ng.constant(A, np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)),
                               np.ones(2), np.eye(2), t_end, t_eval=np.array([1.0, t_end]))
    assert sol.status == "ok"
    assert sol.method == "Radau" and "stiff" in sol.message
    assert sol.Sigma[0, 1, 1] == pytest.approx(math.exp(-2.0), rel=1e-6)
    assert sol.mu[-1, 1] == pytest.approx(math.exp(-t_end), rel=1e-5, abs=1e-12)
    assert abs(sol.Sigma[-1, 0, 0]) < 1e-10


def test_non_stiff_problem_keeps_the_explicit_method():
    rot = np.array([[-0.1, 1.0], [-1.0, -0.1]])
    sol = ng.integrate_moments(ng.constant(rot, np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)),
                               np.ones(2), np.eye(2), 30.0)
    assert sol.status == "ok" and sol.method == "DOP853"
    # Sigma(t) = e^{-0.2 t} I for a rotation plus damping
    assert np.allclose(sol.Sigma[-1], math.exp(-0.2 * 30.0) * np.eye(2), rtol=1e-8)


@SETTINGS
@given(d=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_moment_jacobian_matches_finite_differences(d, seed):
    rng = np.random.default_rng(seed)
    A, B, V = (rng.normal(size=(d, d)) for _ in range(3))
    X = rng.normal(size=(d, d))
    S, mu = X @ X.T, rng.normal(size=d)
    J = ng.moment_jacobian(A, B, V, mu, S)
    kernel = ng.moment_kernel()

    def f(y: np.ndarray) -> np.ndarray:
        dm, dS = kernel(A, B, V, np.zeros(d), y[:d], y[d:].reshape(d, d))
        return np.concatenate([dm, dS.ravel()])

    y = np.concatenate([mu, S.ravel()])
    h = 1e-6 * (1 + np.abs(y).max())
    Jfd = np.array([(f(y + h * e) - f(y - h * e)) / (2 * h) for e in np.eye(y.size)]).T
    scale = 1 + np.abs(J).max()
    assert np.abs(J - Jfd).max() <= 1e-6 * scale


def test_manifold_drift_measures_asymmetry_and_negative_eigenvalues():
    good = np.stack([np.eye(2), np.diag([2.0, 0.0])])
    assert ng.manifold_drift(good) == {"asymmetry": 0.0, "negative_eigenvalue": 0.0}
    bad = np.array([[[1.0, 0.1], [0.0, -0.5]]])
    drift = ng.manifold_drift(bad)
    assert drift["asymmetry"] == pytest.approx(np.linalg.norm(bad[0] - bad[0].T) / np.linalg.norm(bad[0]))
    w = np.linalg.eigvalsh(0.5 * (bad[0] + bad[0].T))
    assert drift["negative_eigenvalue"] == pytest.approx(-w[0] / np.abs(w).max())


def test_trajectory_stays_on_the_psd_cone():
    """Lemma 3.1: Sigma(t) = Psi Sigma0 Psi^T stays symmetric PSD; a singular Sigma0 stays singular."""
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(3, 3)), np.eye(3)
    V = -np.eye(3)
    u = rng.normal(size=3)
    sol = ng.integrate_moments(ng.constant(A, B, V, np.zeros(3)), np.zeros(3), np.outer(u, u), 2.0)
    assert sol.drift["asymmetry"] < 1e-14  # the field is exactly symmetric; BLAS sums may differ by an ulp
    assert sol.drift["negative_eigenvalue"] < 1e-8


def test_escaping_mean_is_cut_off_and_sigma_integrated_on():
    r"""d = 1, A = V = 1, B = -1, s0 = 1/2: s(t) = 1/(1 + e^{-2t}) and
    :math:`\log\mu(t) = t + \tfrac12\log 2 - \tfrac12\log(1+e^{-2t})`, so the mean passes
    MEAN_ESCAPE (1 + |mu0|) at a known time while Sigma converges to 1."""
    sol = ng.integrate_moments(_scalar(1.0, 1.0, -1.0), np.ones(1), np.array([[0.5]]), 1000.0)
    assert sol.status == "ok" and sol.t[-1] == 1000.0
    level = math.log(ng.MEAN_ESCAPE * 2.0)
    t_star = level - 0.5 * math.log(2.0)  # e^{-2t} is below 1e-200 there
    assert sol.mean_escape_time == pytest.approx(t_star, rel=1e-8)
    assert sol.mu[-1, 0] == math.inf
    assert np.all(np.isfinite(sol.mu[sol.t <= sol.mean_escape_time]))
    assert sol.Sigma[-1, 0, 0] == pytest.approx(1.0, abs=1e-9)


def test_escaping_mean_respects_t_eval_and_signs():
    """A = I, V = B = 0, Sigma0 = 0 (Sigma stays 0): the escape is reported as +-inf per component."""
    coeffs = ng.constant(np.eye(2), np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2))
    t_eval = np.array([0.0, 100.0, 300.0, 400.0])
    sol = ng.integrate_moments(coeffs, np.array([1.0, -2.0]), np.zeros((2, 2)), 400.0, t_eval=t_eval)
    assert sol.status == "ok" and np.array_equal(sol.t, t_eval)
    # |mu(t)| = sqrt(5) e^t passes 1e100 (1 + sqrt(5)) at log(1e100 (1 + sqrt 5) / sqrt 5)
    assert sol.mean_escape_time == pytest.approx(math.log(1e100 * (1 + math.sqrt(5)) / math.sqrt(5)), rel=1e-8)
    assert sol.mu[1] == pytest.approx(np.array([1.0, -2.0]) * math.exp(100.0), rel=1e-7)
    assert list(sol.mu[2]) == [math.inf, -math.inf] and list(sol.mu[3]) == [math.inf, -math.inf]
    assert not sol.Sigma.any()


def test_finite_time_blowup_is_not_mistaken_for_stiffness():
    """Riccati S' = S B S, S(0) = s0 I: S(t) = (I/s0 - tB)^{-1} blows up at 1/(s0 lambda_max(B)).

    Near the blow-up rho(J) ~ ||S|| grows within each window; a growth mode is accuracy-limited,
    so the explicit method must stay (Radau on d^2 states was 700x dearer), and the event time
    must match the closed form where ||S||_F first reaches the threshold.
    """
    from flowcert.numeric.integration import solve_switching

    d, s0, level = 8, 0.1, 1e8
    rng = np.random.default_rng(3)
    G = np.eye(d) + 0.1 * rng.normal(size=(d, d))
    B = G @ G.T
    lam, Q = np.linalg.eigh(B)

    def field(t, y):
        S = y.reshape(d, d)
        return (S @ B @ S).ravel()

    def event(t, y):
        return level - np.linalg.norm(y)

    event.terminal = True
    sol, method, note = solve_switching(field, (0.0, 10.0), s0 * np.eye(d).ravel(), rtol=1e-11, atol=1e-13,
                                        events=event)
    assert method == "DOP853" and note == ""
    # ||S(t)||_F = ||(1/s0 - t lam)^{-1}||_2 in the eigenbasis of B: root of the event in closed form
    from scipy.optimize import brentq

    t_star = 1.0 / (s0 * lam[-1])
    t_hit = brentq(lambda t: np.linalg.norm(1.0 / (1.0 / s0 - t * lam)) - level, 0.0, t_star * (1 - 1e-14))
    assert sol.t[-1] == pytest.approx(t_hit, rel=1e-9)
    assert sol.nfev < 20_000


def test_budget_spent_without_stiffness_is_not_retried_implicitly():
    """A fast rotation (omega = 1000) is accuracy-limited: a small budget fails at once with the reason."""
    A = np.array([[-1.0, 1000.0], [-1000.0, -1.0]])
    coeffs = ng.constant(A, np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2))
    sol = ng.integrate_moments(coeffs, np.ones(2), np.eye(2), 50.0, max_evaluations=20_000)
    assert sol.status == "failed"
    assert "no implicit retry" in sol.message and "Radau" not in sol.message


def test_verify_reads_no_regime_from_a_failed_run(monkeypatch):
    """With the run cut short by its budget, the simulation-based regime is 'unknown', not 'bounded'."""
    import functools

    from flowcert.gaussian.catalogue import verify
    from flowcert.gaussian.params import parse_gaussian

    # V not a multiple of I, B neither PD nor 0: no theorem of Table 1 and no Riccati form decides
    # (with V = B = 0 the field is linear and the exact spectrum of A decides: converges_zero, certified)
    p = parse_gaussian({"A": [[-1.0, 1000.0], [-1000.0, -1.0]], "B": [[0.0, 1e-3], [0.0, 0.0]],
                        "V": [[1e-3, 0.0], [0.0, 2e-3]], "b": [0.0, 0.0], "mu0": [1.0, 1.0],
                        "Sigma0": [[1.0, 0.0], [0.0, 1.0]], "t_end": 50.0})
    monkeypatch.setattr(ng, "integrate_moments", functools.partial(ng.integrate_moments, max_evaluations=5_000))
    doc = verify(p, simulate=True)
    assert doc["simulation"]["method"] == "DOP853" and "no implicit retry" in doc["simulation"]["integrator_message"]
    reg = doc["regime"]
    assert reg["basis"] == "simulation"  # no theorem of Table 1 decides this case
    assert reg["Sigma"] == "unknown" and reg["mu"] == "unknown" and "could not be integrated" in reg["reason"]


def test_particle_study_refuses_work_beyond_its_budget():
    """The work estimate after the smallest N is evaluations x seeds x sum N^2; beyond max_work: an error."""
    coeffs = ng.constant(-np.eye(2), 0.1 * np.eye(2), 0.1 * np.eye(2), np.zeros(2))
    study = ng.particle_study(coeffs, np.zeros(2), np.eye(2), 0.1, Ns=(20, 40), seeds=1)
    assert len(study.errors) == 2
    with pytest.raises(FloatingPointError, match="particle-pair evaluations"):
        ng.particle_study(coeffs, np.zeros(2), np.eye(2), 0.1, Ns=(20, 40), seeds=1, max_work=10.0)


def test_particle_integration_has_an_evaluation_budget():
    X0 = np.random.default_rng(0).standard_normal((10, 2))
    coeffs = ng.constant(-np.eye(2), np.eye(2), np.eye(2), np.zeros(2))
    counts: list[int] = []
    ng.simulate_particles(coeffs, X0, np.array([0.0, 1.0]), evaluations=counts)
    assert len(counts) == 1 and counts[0] > 10
    with pytest.raises(FloatingPointError, match="more than 10 evaluations"):
        ng.simulate_particles(coeffs, X0, np.array([0.0, 1.0]), max_evaluations=10)
