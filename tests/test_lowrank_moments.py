r"""The invariant-subspace reduction of eq. (7) (gaussian paper) and the bounded integrator.

With :math:`A,B,V` supported on a subspace :math:`\mathcal S` invariant under :math:`\Sigma_0`,
eq. (7) splits into eq. (7) on :math:`\mathcal S` and a frozen complement
(:mod:`flowcert.numeric.gaussian.reduction`): the reduced and the full integration must agree
where both run. A stiff wide system must end within its budget under a memory cap, never by
handing a dense Jacobian of its :math:`d+d^2` states to an implicit method.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from flowcert.numeric import gaussian as ng
from flowcert.numeric.gaussian.reduction import active_subspace


def _low_rank_case(d: int, r: int, seed: int, with_A: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.normal(size=(d, d)))[0][:, : 2 * r]  # the active subspace, dimension 2r
    V = 0.4 * U[:, :r] @ rng.normal(size=(r, 2 * r)) @ U.T / np.sqrt(r)
    B = 0.4 * U[:, r:] @ rng.normal(size=(r, 2 * r)) @ U.T / np.sqrt(r)
    A = 0.2 * U @ rng.normal(size=(2 * r, 2 * r)) @ U.T if with_A else np.zeros((d, d))
    G = U @ rng.normal(size=(2 * r, 2 * r)) @ U.T
    Sigma0 = np.eye(d) + 0.3 * G @ G.T  # Sigma0 maps the subspace into itself
    return A, B, V, rng.normal(size=d), rng.normal(size=d), Sigma0


@pytest.mark.parametrize("path,with_A", [("subspace", False), ("subspace", True), ("factored", False)])
@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_and_full_integration_agree(path: str, with_A: bool, seed: int) -> None:
    d, r = 14, 2
    A, B, V, b, mu0, Sigma0 = _low_rank_case(d, r, seed, with_A)
    c = ng.constant(A, B, V, b)
    full = ng.integrate_moments(c, mu0, Sigma0, 1.5, reduce=False)
    red = ng.integrate_moments(c, mu0, Sigma0, 1.5, reduce=path)
    assert full.status == red.status == "ok"
    assert full.reduced_dimension is None
    assert red.reduced_dimension is not None and red.reduced_dimension < d + d * d
    assert (path == "factored") == red.message.startswith("factored transport")
    scale = 1.0 + np.abs(full.Sigma[-1]).max()
    assert np.abs(full.Sigma[-1] - red.Sigma[-1]).max() <= 1e-7 * scale
    assert np.abs(full.mu[-1] - red.mu[-1]).max() <= 1e-7 * (1.0 + np.abs(full.mu[-1]).max())
    # every kept time of the reduced run is a point of the exact flow: the field there is tangent (symmetry, PSD)
    assert np.allclose(red.Sigma, np.swapaxes(red.Sigma, 1, 2))


def test_reduced_blowup_time_matches_the_full_run() -> None:
    """V, B positive definite on a 4-dimensional subspace of R^12: Sigma_11 blows up (Thm 4.8 on the
    subspace); the reduced run gets the full system's event level, so the event times agree."""
    d, k = 12, 4
    rng = np.random.default_rng(3)
    U = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :k]
    G, H = rng.normal(size=(k, k)), rng.normal(size=(k, k))
    V, B = U @ (G @ G.T + np.eye(k)) @ U.T, U @ (H @ H.T + np.eye(k)) @ U.T
    c = ng.constant(np.zeros((d, d)), B, V, np.zeros(d))
    full = ng.integrate_moments(c, rng.normal(size=d), np.eye(d), 50.0, reduce=False)
    for path in ("subspace", "factored"):
        red = ng.integrate_moments(c, full.mu[0], np.eye(d), 50.0, reduce=path)
        assert full.status == red.status == "blowup"
        assert red.blowup_time == pytest.approx(full.blowup_time, rel=1e-6)


def test_factored_transport_norm_and_field_match_the_moment_equation() -> None:
    """||Sigma||_F from the Gram matrices equals the norm of the lifted Sigma; the lifted
    (mu, Sigma) moves with the field of eq. (7) (central difference in t along the factored flow)."""
    from flowcert.numeric.gaussian.reduction import FactoredTransport, factored_ranks

    d, r = 16, 2
    A, B, V, b, mu0, Sigma0 = _low_rank_case(d, r, 7, False)
    ranks = factored_ranks(A, B, V)
    assert ranks == (r, r)
    ft = FactoredTransport(B, V, b, mu0, Sigma0, *ranks)
    y = np.random.default_rng(1).normal(size=ft.size)
    S = ft.sigma(y)
    assert ft.sigma_norm(y) == pytest.approx(np.linalg.norm(S), rel=1e-12)
    t, h = 0.3, 1e-5
    f = ft.rhs(t, y)
    dS = (ft.sigma(y + h * f) - ft.sigma(y - h * f)) / (2 * h)
    dmu = (ft.mu(t + h, y + h * f) - ft.mu(t - h, y - h * f)) / (2 * h)
    mu = ft.mu(t, y)
    want_S = V @ S @ B @ S + S @ B.T @ S @ V.T
    want_mu = (V + V @ S @ B) @ mu + b
    assert np.abs(dS - want_S).max() <= 1e-6 * (1 + np.abs(want_S).max())
    assert np.abs(dmu - want_mu).max() <= 1e-6 * (1 + np.abs(want_mu).max())


def test_active_subspace_splits_the_parameters() -> None:
    d, r = 20, 3
    A, B, V, _, _, Sigma0 = _low_rank_case(d, r, 5, True)
    red = active_subspace(A, B, V, Sigma0)
    assert red is not None and red.k == 2 * r
    Q = np.hstack([red.Q1, red.Q2])
    assert np.allclose(Q.T @ Q, np.eye(d), atol=1e-12)
    for X in (A, B, V, Sigma0):
        Y = Q.T @ X @ Q  # block diagonal in the split (Sigma0 too: S is Sigma0-invariant)
        assert np.abs(Y[: red.k, red.k:]).max() <= 1e-12 * (1 + np.abs(X).max())
        assert np.abs(Y[red.k:, : red.k]).max() <= 1e-12 * (1 + np.abs(X).max())
    for X in (A, B, V):
        assert np.abs((Q.T @ X @ Q)[red.k:, red.k:]).max() <= 1e-12 * (1 + np.abs(X).max())


def test_full_rank_parameters_are_not_reduced() -> None:
    rng = np.random.default_rng(0)
    d = 20
    assert active_subspace(np.zeros((d, d)), rng.normal(size=(d, d)), np.eye(d), np.eye(d)) is None


_HARD = textwrap.dedent("""
    import json, resource, sys, time
    cap = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import numpy as np
    from flowcert.numeric import gaussian as ng
    d = 100
    rng = np.random.default_rng(0)
    A = -np.diag(np.logspace(0, 4, d))            # rates 1 .. 1e4: stiff for an explicit method
    B = 0.01 * rng.normal(size=(d, d)); V = 0.01 * rng.normal(size=(d, d))  # full rank: no reduction
    start = time.monotonic()
    sol = ng.integrate_moments(ng.constant(A, B, V, np.zeros(d)), np.ones(d), np.eye(d), 10.0,
                               max_seconds=float(sys.argv[2]))
    print(json.dumps({"status": sol.status, "reason": sol.reason, "message": sol.message,
                      "seconds": time.monotonic() - start}))
""")


def test_stiff_wide_system_ends_within_budget_under_a_memory_cap() -> None:
    """d = 100 (10 100 states), stiff: Radau's dense Jacobian alone would need 0.8 GB and its complex LU 1.6 GB
    more; under a 1.5 GB address-space cap the run must end by its own budget, with the reason."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _HARD, str(1536 * 2**20), "8"], capture_output=True, text=True,
                         env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["status"] in ("failed", "ok")
    if doc["status"] == "failed":
        assert doc["reason"] == "budget" and "reached t =" in doc["message"]
        assert "Radau" not in doc["message"]


def test_an_entry_over_its_budget_is_unknown_with_reason_budget(monkeypatch) -> None:
    """A catalogue entry that would run for minutes is stopped by its CPU-time budget: one
    'unknown' hypothesis, method 'budget', and the stage's own `except Exception` cannot swallow it."""
    import time

    from flowcert import engine

    def slow():
        end = time.monotonic() + 60.0
        while time.monotonic() < end:
            try:
                sum(range(10_000))
            except Exception:  # noqa: BLE001 - a stage that catches everything
                pass
        raise AssertionError("not stopped")

    t0 = time.monotonic()
    res = engine.evaluate("gaussian:prop-2.1", "Proposition 2.1", slow, seconds=0.3)
    assert time.monotonic() - t0 < 30.0
    (h,) = res.hypotheses
    assert h.status == "unknown" and h.method == "budget" and "budget" in h.detail
    assert not res.applies


def test_nested_budgets_restore_the_outer_one() -> None:
    import signal

    from flowcert.numeric.integration import BudgetExceeded, stage_budget

    with pytest.raises(BudgetExceeded):
        with stage_budget(0.5, "outer"):
            with stage_budget(30.0, "inner"):  # longer than the outer: the outer governs
                pass
            left, _ = signal.getitimer(signal.ITIMER_PROF)
            assert 0.0 < left <= 0.5 + 0.05  # the CPU timer counts in clock ticks
            while True:
                pass
    assert signal.getitimer(signal.ITIMER_PROF)[0] == 0.0


def test_newton_on_the_active_block_finds_an_equilibrium_of_the_full_field() -> None:
    """A = 0, V = -(PD), B = PD on a 4-dimensional subspace of R^20 (Thm 4.7 signs on the block):
    the reduced Newton polish returns a Sigma with F(Sigma) = 0 for the full field (eq. (18))."""
    d, k = 20, 4
    rng = np.random.default_rng(11)
    U = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :k]
    G, H = rng.normal(size=(k, k)), rng.normal(size=(k, k))
    V, B = -U @ (G @ G.T + np.eye(k)) @ U.T, U @ (H @ H.T + np.eye(k)) @ U.T
    A = U @ (0.5 * np.eye(k)) @ U.T  # Re spec > 0 on the block: a PD equilibrium there
    sol = ng.integrate_moments(ng.constant(A, B, V, np.zeros(d)), np.zeros(d), np.eye(d), 60.0, reduce=False)
    S = ng.newton_equilibrium(A, B, V, sol.Sigma[-1])
    assert S is not None
    F = ng.covariance_field(A, B, V, S)
    assert np.abs(F).max() <= 1e-9 * (1 + np.abs(S).max()) ** 2
    assert np.abs(S - sol.Sigma[-1]).max() <= 1e-4 * (1 + np.abs(S).max())
    Q2 = np.linalg.svd(np.eye(d) - U @ U.T)[0][:, : d - k]
    assert np.allclose(Q2.T @ S @ Q2, np.eye(d - k), atol=1e-9)  # the complement is frozen at Sigma0


@pytest.mark.parametrize("path,with_A", [("factored", False), ("subspace", True)])
def test_reduced_and_full_runs_agree_at_d64(path: str, with_A: bool) -> None:
    """d = 64, rank 4: the reduced run (1 040 or 16 + 4 unknowns instead of 4 160) and the full run of
    eq. (7) agree on the whole kept trajectory, and the reductions are used only because
    flowcert.symbolic.gaussian.reduction_proofs holds."""
    from flowcert.symbolic.gaussian import reduction_proofs

    assert all(p.proved for p in reduction_proofs())
    d, r = 64, 4
    A, B, V, b, mu0, Sigma0 = _low_rank_case(d, r, 11, with_A)
    if not with_A:
        mu0, b = np.zeros(d), np.zeros(d)  # a pretrained head: the mean-free factored state (H alone)
    c = ng.constant(A, B, V, b)
    full = ng.integrate_moments(c, mu0, Sigma0, 1.0, reduce=False)
    red = ng.integrate_moments(c, mu0, Sigma0, 1.0, reduce=path)
    assert full.status == red.status == "ok"
    assert red.reduced_dimension == (r * r if path == "factored" else 2 * r * (2 * r + 1))
    assert "reduction proved" in red.message
    for t, S, m in zip(red.t, red.Sigma, red.mu):
        i = int(np.argmin(np.abs(full.t - t)))
        if abs(full.t[i] - t) > 1e-12:
            continue  # compare where both runs kept a step (the first and the last always)
        assert np.abs(full.Sigma[i] - S).max() <= 1e-7 * (1.0 + np.abs(S).max())
        assert np.abs(full.mu[i] - m).max() <= 1e-7 * (1.0 + np.abs(m).max())
    assert np.abs(full.Sigma[-1] - red.Sigma[-1]).max() <= 1e-7 * (1.0 + np.abs(full.Sigma[-1]).max())
    assert np.abs(full.mu[-1] - red.mu[-1]).max() <= 1e-7 * (1.0 + np.abs(full.mu[-1]).max())


def test_low_rank_parameters_get_the_larger_stage_limits(monkeypatch) -> None:
    """Above STAGE_MAX_D a full-rank input skips the moment run and Table 1 (the reason names the low-rank
    table); a low-rank one (A = 0, rank V, B <= d/4) of the same size runs them (LOW_RANK_STAGE_MAX_D),
    and above that table it is skipped too."""
    from flowcert import limits
    from flowcert.gaussian import catalogue
    from flowcert.gaussian.params import parse_gaussian

    d, r = 16, 2
    A, B, V, b, mu0, Sigma0 = _low_rank_case(d, r, 2, False)
    Sigma0 = 0.5 * (Sigma0 + Sigma0.T)
    rng = np.random.default_rng(4)
    low = {"A": A, "B": B, "V": V, "b": b, "mu0": mu0, "Sigma0": Sigma0, "t_end": 1.0}
    full = dict(low, B=0.1 * rng.normal(size=(d, d)), V=-np.eye(d))
    for stage in limits.LOW_RANK_STAGE_MAX_D:
        monkeypatch.setitem(limits.STAGE_MAX_D, stage, 8)
        monkeypatch.setitem(limits.LOW_RANK_STAGE_MAX_D, stage, 16)
    parse = lambda raw: parse_gaussian({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in raw.items()})  # noqa: E731
    doc_low, doc_full = catalogue.verify(parse(low)), catalogue.verify(parse(full))
    assert "low-rank parameters" in doc_full["regime"]["reason"] and "d = 16 exceeds 8" in doc_full["regime"]["reason"]
    assert "table-1" not in (doc_low["regime"].get("reason") or "")
    assert {t["id"]: t for t in doc_low["theorems"]}["gaussian:thm-4.8.1"]["hypotheses"][0]["name"] != "size_within_limit"
    for stage in limits.LOW_RANK_STAGE_MAX_D:
        monkeypatch.setitem(limits.LOW_RANK_STAGE_MAX_D, stage, 12)
    doc = catalogue.verify(parse(low))
    assert "d = 16 exceeds 12" in doc["regime"]["reason"] and "low-rank" in doc["regime"]["reason"]
