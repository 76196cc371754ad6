"""Tests of exact finite-time reachability (gaussian paper, Thm 3.3 / Proof 3.4).

flowcert.numeric.gaussian_reach (congruence, path, controls, verification by integrating
eq. (7)) and flowcert.reach.run (the job behind ``flowcert reach gaussian``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from flowcert.engine import asked
import pytest
from scipy.stats import special_ortho_group

from flowcert.numeric import gaussian as ng
from flowcert.numeric.gaussian import reach as gr
from flowcert.errors import ParamError
from flowcert.gaussian import reach as controls_io  # controls files: the public face
from flowcert.gaussian.reach import run

TOL = 1e-8  # terminal error bound (relative, see ReachResult.mu_relative / Sigma_relative)


def random_psd(rng: np.random.Generator, d: int, r: int, scale: float = 1.0) -> np.ndarray:
    """Exactly symmetric PSD matrix of rank r (Gaussian factor), times scale."""
    G = rng.standard_normal((d, r))
    S = scale * (G @ G.T)
    return 0.5 * (S + S.T)


def random_problem(rng: np.random.Generator, d: int, r: int):
    """Start and target of rank r with random scales, means and horizon."""
    c0, c1 = 10.0 ** rng.uniform(-2, 2, size=2)
    S0 = random_psd(rng, d, r, c0)
    S1 = random_psd(rng, d, r, c1)
    m0 = rng.standard_normal(d) * 10.0 ** rng.uniform(-1, 1)
    m1 = rng.standard_normal(d) * 10.0 ** rng.uniform(-1, 1)
    T = float(10.0 ** rng.uniform(-1, 0.7))
    return m0, S0, m1, S1, T


def rel(X: np.ndarray, Y: np.ndarray) -> float:
    return float(np.linalg.norm(X - Y) / max(np.linalg.norm(Y), 1e-300))


CASES = [(d, r) for d in range(1, 6) for r in range(1, d + 1)]


# ---------------------------------------------------------------------------------------
# the sweep: every rank 1..d, d <= 5
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d,r", CASES)
def test_reach_hits_random_targets(d: int, r: int) -> None:
    rng = np.random.default_rng(1000 * d + r)
    for _ in range(2):
        m0, S0, m1, S1, T = random_problem(rng, d, r)
        res = gr.reach(m0, S0, m1, S1, T)
        assert res.status == "ok"
        assert res.rank == r
        assert res.mu_relative <= TOL, (res.mu_relative, res.condition)
        assert res.Sigma_relative <= TOL, (res.Sigma_relative, res.condition)
        # the reported numbers are what they say
        muT, ST = res.solution.mu[-1], res.solution.Sigma[-1]
        assert res.mu_error == pytest.approx(np.linalg.norm(muT - m1), rel=1e-12, abs=0)
        assert res.Sigma_error == pytest.approx(np.linalg.norm(ST - S1), rel=1e-12, abs=0)


@pytest.mark.slow
@pytest.mark.parametrize("ramp", gr.RAMPS)
@pytest.mark.parametrize("d,r", CASES)
def test_reach_sweep_many_seeds(d: int, r: int, ramp: str) -> None:
    rng = np.random.default_rng(77 + 100 * d + r)
    for _ in range(10):
        m0, S0, m1, S1, T = random_problem(rng, d, r)
        res = gr.reach(m0, S0, m1, S1, T, ramp=ramp)
        assert res.status == "ok"
        assert res.mu_relative <= TOL and res.Sigma_relative <= TOL, res.condition


def test_rank_zero_moves_only_the_mean() -> None:
    d = 3
    res = gr.reach(np.zeros(d), np.zeros((d, d)), np.array([1.0, -2.0, 3.0]), np.zeros((d, d)), 0.5)
    assert res.rank == 0
    assert res.Sigma_error == 0.0
    assert res.mu_relative <= 1e-14
    A, B, V, b = res.coefficients(0.2)
    assert np.array_equal(B, np.zeros((d, d)))


# ---------------------------------------------------------------------------------------
# congruence
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", range(1, 6))
def test_congruence_identity_and_positive_determinant(d: int) -> None:
    rng = np.random.default_rng(d)
    for r in range(0, d + 1):
        for _ in range(3):
            S0, S1 = random_psd(rng, d, r), random_psd(rng, d, r, 3.0)
            M = gr.congruence(S0, S1)
            assert np.linalg.det(M) > 0
            got = M @ S0 @ M.T
            scale = max(np.linalg.norm(S1), np.linalg.norm(S0), 1e-300)
            assert np.linalg.norm(got - S1) <= 1e-13 * scale * max(1.0, np.linalg.norm(M, 2) ** 2)


def test_congruence_rank_mismatch_refused() -> None:
    rng = np.random.default_rng(5)
    S0, S1 = random_psd(rng, 4, 2), random_psd(rng, 4, 3)
    with pytest.raises(ValueError, match=r"rank mismatch: .*= 2.*= 3") as info:
        gr.congruence(S0, S1)
    assert isinstance(info.value, gr.RankMismatchError)
    assert (info.value.rank0, info.value.rank_hat) == (2, 3)
    with pytest.raises(gr.RankMismatchError):
        gr.reach(np.zeros(4), S0, np.zeros(4), S1, 1.0)


def test_numerical_rank_tolerance() -> None:
    S = np.diag([1.0, 1e-9, 1e-11, 0.0])
    assert gr.numerical_rank(S) == 2  # eigenvalues > 1e-10 * largest
    assert gr.numerical_rank(np.zeros((2, 2))) == 0
    assert gr.numerical_rank(1e-200 * np.eye(3)) == 3  # relative, not absolute


def test_indefinite_and_nonsquare_rejected() -> None:
    with pytest.raises(ValueError, match="positive semidefinite"):
        gr.congruence(np.eye(2), np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="square"):
        gr.congruence(np.eye(2), np.ones((2, 3)))


# ---------------------------------------------------------------------------------------
# the path Phi in GL+(d)
# ---------------------------------------------------------------------------------------


def _path_matrices() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    Ms = [np.eye(1) * 3.0, -np.eye(2), np.diag([-1.0, -1.0, 1.0]), -np.eye(4),
          np.diag([-1.0, 2.0, -0.5, 1.0, 1.0])]
    for d in (2, 3, 5):
        U = special_ortho_group.rvs(d, random_state=d)
        R = np.diag([-1.0, -1.0] + [1.0] * (d - 2))  # rotation by pi, generic axis
        Ms.append(U @ R @ U.T @ np.diag(rng.uniform(0.3, 3.0, d)))
        th = math.pi - 1e-9  # almost pi
        R = np.eye(d)
        R[:2, :2] = [[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]]
        Ms.append(U @ R @ U.T)
        G = rng.standard_normal((d, d))
        if np.linalg.det(G) < 0:
            G[:, 0] = -G[:, 0]
        Ms.append(G)
    return Ms


@pytest.mark.parametrize("ramp", gr.RAMPS)
def test_path_endpoints_and_derivative(ramp: str) -> None:
    rng = np.random.default_rng(3)
    for M in _path_matrices():
        d = M.shape[0]
        T = 1.7
        path = gr.gl_path(M, T, ramp)
        scale = max(1.0, np.linalg.norm(M, 2))
        assert np.allclose(path.phi(0.0), np.eye(d), rtol=0, atol=1e-15)
        assert np.linalg.norm(path.phi(T) - M) <= 1e-13 * scale
        assert np.allclose(path.K, -path.K.T, atol=0)  # real skew log of Q
        assert np.allclose(path.L, path.L.T, atol=0)
        for t in rng.uniform(0.05, T - 0.05, size=3):
            h = 1e-5
            fd = (path.phi(t + h) - path.phi(t - h)) / (2 * h)
            assert np.linalg.norm(path.phi_dot(t) - fd) <= 1e-7 * max(1.0, np.linalg.norm(fd))
            P = path.phi(t)
            assert np.linalg.det(P) > 0
            assert np.linalg.norm(path.phi_inv(t) @ P - np.eye(d)) <= 1e-12 * np.linalg.cond(P)
            V = path.velocity(t)
            assert np.linalg.norm(V + path.phi_dot(t) @ np.linalg.inv(P)) <= 1e-11 * max(
                1.0, np.linalg.norm(V)
            ) * np.linalg.cond(P)


def test_path_refuses_negative_determinant() -> None:
    with pytest.raises(ValueError, match="positive determinant"):
        gr.gl_path(np.diag([-1.0, 1.0]), 1.0)
    with pytest.raises(ValueError, match="T must be"):
        gr.gl_path(np.eye(2), 0.0)


def test_smoothstep_controls_vanish_at_the_ends() -> None:
    rng = np.random.default_rng(8)
    ctl = gr.build_controls(np.zeros(3), random_psd(rng, 3, 3), np.ones(3), random_psd(rng, 3, 3), 2.0)
    for t in (0.0, 2.0):
        assert np.abs(ctl.coefficients(t)[2]).max() == 0.0  # V(0) = V(T) = 0


# ---------------------------------------------------------------------------------------
# the feedback identity, eq. (10)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d,r", [(1, 1), (2, 1), (3, 1), (3, 2), (3, 3), (5, 2), (5, 5)])
def test_feedback_reduces_eq7_to_eq10(d: int, r: int) -> None:
    rng = np.random.default_rng(10 * d + r)
    m0, S0, m1, S1, T = random_problem(rng, d, r)
    ctl = gr.build_controls(m0, S0, m1, S1, T)
    kernel = ng.moment_kernel()
    for t in rng.uniform(0, T, size=5):
        A, B, V, b = ctl.coefficients(t)
        S = ctl.Sigma(t)
        mu = rng.standard_normal(d) * 5.0  # any mean: the drift (A + V + V S B) vanishes
        mu_dot, S_dot = kernel(A, B, V, b, mu, S)
        scale_b = max(np.linalg.norm(b), 1.0)
        assert np.linalg.norm(mu_dot - b) <= 1e-11 * scale_b * max(1.0, np.linalg.norm(V)) * (
            np.linalg.norm(mu) + 1.0
        )
        target = -V @ S - S @ V.T
        assert np.linalg.norm(S_dot - target) <= 1e-11 * max(1.0, np.linalg.norm(V)) * np.linalg.norm(S)
        # B is the Moore-Penrose inverse of the planned Sigma
        assert np.allclose(B, np.linalg.pinv(S, rcond=1e-10, hermitian=True), rtol=1e-7,
                           atol=1e-9 * np.linalg.norm(B))
        # and the planned Sigma solves eq. (10): Sigma' = -V Sigma - Sigma V^T
        h = 1e-5 * T
        if h < t < T - h:
            fd = (ctl.Sigma(t + h) - ctl.Sigma(t - h)) / (2 * h)
            assert np.linalg.norm(fd - target) <= 1e-6 * max(np.linalg.norm(target), np.linalg.norm(S))


# ---------------------------------------------------------------------------------------
# rank-deficient start: rank is invariant along the trajectory (Lemma 3.1)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1, 2])
def test_rank_deficient_start_keeps_rank(r: int) -> None:
    d = 3
    rng = np.random.default_rng(40 + r)
    m0, S0, m1, S1, T = random_problem(rng, d, r)
    res = gr.reach(m0, S0, m1, S1, T)
    assert res.mu_relative <= TOL and res.Sigma_relative <= TOL
    ts = np.linspace(0.0, T, 41)
    sol = ng.integrate_moments(res.coefficients, res.controls.mu0, res.controls.Sigma0, T,
                               t_eval=ts, rtol=1e-12, atol=1e-14 * np.linalg.norm(S0, 2))
    assert sol.status == "ok"
    for S in sol.Sigma:
        s = np.linalg.svd(S, compute_uv=False)
        assert int((s > 1e-8 * s[0]).sum()) == r
    # and the simulated trajectory follows the plan Phi Sigma0 Phi^T
    for t, S in zip(sol.t, sol.Sigma):
        assert rel(S, res.controls.Sigma(t)) <= 1e-9


# ---------------------------------------------------------------------------------------
# controls files
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_controls_file_round_trip(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(9)
    m0, S0, m1, S1, T = random_problem(rng, 3, 2)
    res = gr.reach(m0, S0, m1, S1, T, n_knots=17)
    path = controls_io.save_controls(res, tmp_path / f"controls{suffix}")
    data = controls_io.load_controls(path)
    table = res.tabulate()
    assert data["format"] == gr.FORMAT and data["ramp"] == "smoothstep"
    assert data["t"].shape == (17,) and data["A"].shape == (17, 3, 3) and data["b"].shape == (17, 3)
    assert data["t"][0] == 0.0 and data["t"][-1] == T
    for key in ("t", "A", "B", "V", "b", "mu0", "Sigma0", "mu_hat", "Sigma_hat", "M", "Phi",
                "Sigma_plan", "mu_plan"):
        assert np.array_equal(data[key], table[key]), key  # exact: repr of floats round-trips
    assert data["rank"] == 2 and data["T"] == T
    rebuilt = controls_io.controls_from_file(path)
    for t in rng.uniform(0, T, size=4):
        for x, y in zip(rebuilt.coefficients(t), res.coefficients(t)):
            assert np.allclose(x, y, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(y).max()))
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:  # plain arrays, no pickle
            assert {"t", "A", "B", "V", "b", "mu0", "Sigma0"} <= set(z.files)


def test_controls_json_is_serialisable() -> None:
    rng = np.random.default_rng(12)
    m0, S0, m1, S1, T = random_problem(rng, 2, 2)
    doc = controls_io.controls_json(gr.build_controls(m0, S0, m1, S1, T), n_knots=5)
    back = json.loads(json.dumps(doc, allow_nan=False))
    assert back["format"] == gr.FORMAT
    assert np.asarray(back["V"]).shape == (5, 2, 2)
    assert back["Sigma0"] == S0.tolist()


def test_bad_controls_suffix(tmp_path: Path) -> None:
    res = gr.reach(np.zeros(1), np.eye(1), np.ones(1), 2 * np.eye(1), 1.0)
    with pytest.raises(ValueError, match=r"\.npz or \.json"):
        controls_io.save_controls(res, tmp_path / "c.txt")


# ---------------------------------------------------------------------------------------
# flowcert.reach.run (the CLI job)
# ---------------------------------------------------------------------------------------


def _params_file(tmp_path: Path, mu0: list[float], Sigma0: list[list[float]]) -> str:
    d = len(mu0)
    doc = {"A": np.eye(d).tolist(), "B": np.eye(d).tolist(), "V": (-np.eye(d)).tolist(),
           "b": [0.0] * d, "mu0": mu0, "Sigma0": Sigma0}
    p = tmp_path / "params.json"
    p.write_text(json.dumps(doc))
    return str(p)


def _target_file(tmp_path: Path, doc: dict, name: str = "target.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


SIGMA0 = [[0.5, 0.1, 0.0], [0.1, 0.4, 0.05], [0.0, 0.05, 0.3]]
TARGET = {"mu": [1.0, 2.0, 3.0], "Sigma": [[2.0, 0.5, 0.0], [0.5, 1.0, 0.1], [0.0, 0.1, 0.5]]}


def test_run_reaches_and_writes_controls(tmp_path: Path) -> None:
    params = _params_file(tmp_path, [0.0, 1.0, 2.0], SIGMA0)
    target = _target_file(tmp_path, TARGET)
    out = str(tmp_path / "ctl.npz")
    doc = run(params, target, 2.0, out)
    json.dumps(doc, allow_nan=False)
    assert {"flowcert", "system", "T", "rank", "terminal_error", "controls", "method",
            "theorem"} <= set(doc)
    assert doc["system"] == "gaussian" and doc["theorem"] == "gaussian:thm-3.3"
    assert doc["rank"] == 3 and doc["T"] == 2.0 and doc["controls"] == out
    err = doc["terminal_error"]
    assert err["Sigma_relative"] <= TOL and err["mu"] <= TOL * 4 and err["Sigma"] <= TOL * 3
    assert any("ignored" in n for n in doc["notes"])
    assert controls_io.load_controls(out)["A"].shape == (101, 3, 3)
    assert run(params, target, 2.0, None)["controls"] is None


def test_run_rank_deficient_npz_target(tmp_path: Path) -> None:
    params = _params_file(tmp_path, [0.0, 0.0, 0.0], [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    target = tmp_path / "target.npz"
    np.savez(target, mu=np.array([1.0, 0.0, -1.0]), Sigma=np.diag([0.0, 0.0, 4.0]))
    doc = run(params, str(target), 1.0, None)
    assert doc["rank"] == 1 and doc["terminal_error"]["Sigma_relative"] <= TOL


def test_run_refuses_rank_mismatch(tmp_path: Path) -> None:
    params = _params_file(tmp_path, [0.0, 1.0, 2.0], SIGMA0)
    target = _target_file(tmp_path, {"mu": [0, 0, 0], "Sigma": [[1, 0, 0], [0, 1, 0], [0, 0, 0]]})
    with pytest.raises(ParamError) as info:
        run(params, target, 1.0, None)
    msg = str(info.value)
    assert "rank mismatch" in msg and "rank 2" in msg and "rank 3" in msg and "Lemma 3.1" in msg
    assert info.value.key == "Sigma" and "\n" not in msg


@pytest.mark.parametrize("T", [0.0, -1.0, math.inf, math.nan])
def test_run_refuses_bad_T(tmp_path: Path, T: float) -> None:
    params = _params_file(tmp_path, [0.0, 1.0, 2.0], SIGMA0)
    target = _target_file(tmp_path, TARGET)
    with pytest.raises(ParamError, match="key 'T': must be a positive finite number"):
        run(params, target, T, None)


@pytest.mark.parametrize(
    "doc,key,fragment",
    [
        ({**TARGET, "Sigma_hat": [[1]]}, "Sigma_hat", "unknown key 'Sigma_hat'"),
        ({"mu": TARGET["mu"]}, "Sigma", "missing required key 'Sigma'"),
        ({**TARGET, "mu": [1.0, 2.0]}, "mu", "expected shape (3,), got (2,)"),
        ({**TARGET, "Sigma": [[1, 0], [0, 1]]}, "Sigma", "expected shape (3, 3), got (2, 2)"),
        ({**TARGET, "Sigma": [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]}, "Sigma", "must be symmetric"),
        ({**TARGET, "Sigma": [[1, 0, 0], [0, -1, 0], [0, 0, 1]]}, "Sigma", "not positive semidefinite"),
        ({**TARGET, "mu": [1.0, float("nan"), 0.0]}, "mu", "is NaN"),
        ({**TARGET, "Sigma": "eye(3)"}, "Sigma", "expected shape (3, 3)"),
    ],
)
def test_run_validates_target(tmp_path: Path, doc: dict, key: str, fragment: str) -> None:
    params = _params_file(tmp_path, [0.0, 1.0, 2.0], SIGMA0)
    target = _target_file(tmp_path, doc)
    with pytest.raises(ParamError) as info:
        run(params, target, 1.0, None)
    assert info.value.key == key
    assert fragment in str(info.value)
    assert "target.json" in str(info.value)


def test_run_refuses_bad_out(tmp_path: Path) -> None:
    params = _params_file(tmp_path, [0.0, 1.0, 2.0], SIGMA0)
    target = _target_file(tmp_path, TARGET)
    with pytest.raises(ParamError, match="key 'out'"):
        run(params, target, 1.0, str(tmp_path / "c.csv"))
    with pytest.raises(ParamError, match="key 'out'"):
        run(params, target, 1.0, str(tmp_path / "no" / "such" / "dir" / "c.npz"))


def _gaussian(Sigma0: list[list[float]]):
    from flowcert.gaussian.params import parse_gaussian

    d = len(Sigma0)
    return parse_gaussian({"A": (-np.eye(d)).tolist(), "B": np.eye(d).tolist(), "V": (0.1 * np.eye(d)).tolist(),
                           "Sigma0": Sigma0, "mu0": [0.0] * d, "b": [0.0] * d, "t_end": 1.0})


def test_thm33_cross_check_agrees_when_well_conditioned() -> None:
    from flowcert.gaussian import thm_3_3

    with asked(frozenset({"reach"})):
        check = thm_3_3(_gaussian(SIGMA0)).cross_check
    assert check.status == "agrees"
    assert check.details["mu_relative_error"] <= TOL and check.details["Sigma_relative_error"] <= TOL


def test_thm33_cross_check_skips_an_ill_conditioned_sigma0() -> None:
    """cond(Sigma0) = 8.5e9 on its range: B = Sigma^+ makes eq. (7) too stiff to integrate; say so."""
    from flowcert.gaussian import REACH_MAX_COND, thm_3_3

    lam = 1e-9
    Q = np.array([[1.0, 4.0], [-4.0, 1.0]]) / math.sqrt(17.0)
    S0 = Q @ np.diag([8.5, lam]) @ Q.T
    S0 = 0.5 * (S0 + S0.T)
    assert np.linalg.cond(S0) > REACH_MAX_COND
    with asked(frozenset({"reach"})):
        check = thm_3_3(_gaussian(S0.tolist())).cross_check
    assert check.status == "skipped" and "ill-conditioned" in check.details["reason"]


def test_reach_budget_ends_as_failed_not_as_an_error() -> None:
    """A budget too small for the construction gives status 'failed' and infinite errors."""
    rng = np.random.default_rng(3)
    m0, S0, m1, S1, T = random_problem(rng, 2, 2)
    res = gr.reach(m0, S0, m1, S1, T, max_evaluations=20)
    assert res.solution.status == "failed" and "20 field evaluations" in res.solution.message
    assert math.isinf(res.mu_relative) and math.isinf(res.Sigma_relative)
