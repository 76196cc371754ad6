r"""Time-varying attention heads: the vectorised head evaluation
(:meth:`flowcert.attention.params.AttentionParams.kernel_args_many`) against SymPy, the RK4 on
the half-step grid against the per-stage evaluation, and ``verify --simulate`` reusing the
consensus catalogue's run for the ``simulation`` record.

.. math::

    P_\eta(t),\ U_\eta(t)\ \text{evaluated at the RK4 stage times}\ t_0+kh/2,\qquad
    \dot y_i=\sum_\eta\sum_j\alpha^\eta_{ij}(t,y)\big(U_\eta y_j-(y_i^\top U_\eta y_j)\,y_i\big)

(consensus paper, eq. (7)).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from flowcert import attention
from flowcert.catalogue import CrossCheck, TheoremResult
from flowcert.expressions import t as T

torch.set_num_threads(1)

TOKENS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8], [0.0, -0.6, 0.8]]


def _raw(t_end: float = 1.0) -> dict:
    return {
        "heads": [
            {"P": [["2*cos(10*pi*t)*(0.0805)", "0.3", "sin(3*t)"],
                   ["-0.25", "exp(-t)*(0.1929)", "0"],
                   ["t/(1 + t**2)", "1.5", "2*cos(6*pi*t)*(-0.1594)"]],
             "V": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]},
            {"Q": [["cos(t)", "0.5", "0"], ["1", "sin(2*t)", "0.25"]],
             "K": [["0.7", "0", "t"], ["0.1", "-0.2", "cos(t)**2"]],
             "V": [["1", "0.1*sin(t)", "0"], ["0", "1", "0"], ["0.1*sin(t)", "0", "1"]]},
        ],
        "beta": 1.3, "normalization": "sqrt", "X0": TOKENS, "t_end": t_end,
    }


def _sympy_args(raw: dict, time: float, beta: float) -> list[np.ndarray]:
    """Kernel arguments straight from the strings (SymPy substitution, high precision)."""
    def mat(rows: list) -> np.ndarray:
        return np.array([[float(sp.sympify(str(e), locals={"t": T}).subs(T, sp.Rational(time)).evalf(30)) for e in r]
                         for r in rows])

    out = []
    for head in raw["heads"]:
        if "P" in head:
            q, k = np.eye(3), mat(head["P"])
        else:
            q, k = np.eye(3), mat(head["Q"]).T @ mat(head["K"])  # m x d Q, K: square (I, Q^T K)
        out += [beta * q, k, mat(head["V"])]
    return out


def test_vectorised_heads_match_sympy_at_random_times() -> None:
    raw = _raw()
    p = attention.parse(raw)
    assert p.time_varying
    times = np.random.default_rng(7).uniform(0.0, 5.0, size=6)
    many = p.kernel_args_many(times)
    assert all(a.shape[0] == times.size for a in many)
    for k, time in enumerate(times):
        ref = _sympy_args(raw, float(time), p.beta)
        single = p.kernel_args(float(time))
        assert len(ref) == len(single) == len(many)
        for a, b, c in zip(ref, single, many):
            scale = max(1.0, float(np.abs(a).max()))
            assert np.abs(np.asarray(b) - a).max() <= 1e-13 * scale
            assert np.abs(c[k] - a).max() <= 1e-13 * scale


def test_grid_rk4_equals_per_stage_rk4() -> None:
    from flowcert.gpu import attention as ga

    p = attention.parse(_raw())
    X0 = torch.as_tensor(p.initial_tokens())[None]
    args = attention._tensor_args(p, p.n, "cpu")
    steps = 40  # chunks of 16 steps: the chunk boundaries are crossed
    slow = ga.simulate(p.structure, X0, args, 0.4, steps)
    fast = ga.simulate(p.structure, X0, args, 0.4, steps, args_grid=attention._grid_args(p, p.n, "cpu"), chunk_steps=16)
    assert float((slow.X - fast.X).abs().max()) <= 1e-13
    assert fast.max_drift <= 1e-9  # RK4 local error O(h^5) before the retraction


def test_verify_simulate_reuses_the_catalogue_run() -> None:
    p = attention.parse(_raw(t_end=1.0))
    doc = attention.verify_document(p, simulate=True)
    sim = doc["simulation"]
    for key in ("t_end", "blowup_time", "X_final", "limit_class", "agrees", "X0", "max_drift", "final_speed", "integrator"):
        assert key in sim
    assert sim["t_end"] == 1.0 and sim["t_reached"] == 1.0 and sim["blowup_time"] is None
    X = np.array(sim["X_final"])
    assert np.abs(np.linalg.norm(X, axis=1) - 1.0).max() <= 1e-8  # on the sphere
    # an independent integrator (torch RK4, dt = 1e-3) reaches the same state
    rk4 = attention.simulate(p, t_end=1.0)
    assert np.abs(np.array(rk4["X_final"]) - X).max() <= 1e-6
    # agrees is the catalogue's verdict: False on any disagreement, True on an agreement, else None
    status = {th["id"]: th["cross_check"]["status"] for th in doc["theorems"]
              if th["id"].startswith("consensus:") and th["cross_check"] is not None}
    expected = False if "disagrees" in status.values() else (True if "agrees" in status.values() else None)
    assert sim["agrees"] is expected
    assert sim["limit_class"] in (None, "consensus")  # not settled by t = 1, or certified consensus


def test_simulation_record_reports_disagreement_and_failed_runs() -> None:
    from flowcert.attention import consensus as cat

    p = attention.parse(_raw(t_end=0.5))
    s = cat.setting(p, 0)
    run = cat.run_simulation(s, samples=11)

    def result(status: str) -> TheoremResult:
        r = TheoremResult("consensus:x", "x", "x", [], {})
        r.cross_check = CrossCheck(status, {})
        return r

    agree = attention._simulation_from_run(p, cat, run, [result("agrees")], 0)
    both = attention._simulation_from_run(p, cat, run, [result("agrees"), result("disagrees")], 0)
    none = attention._simulation_from_run(p, cat, run, [result("skipped")], 0)
    assert (agree["agrees"], both["agrees"], none["agrees"]) == (True, False, None)
    failed = cat.Run(run.t, run.X, False, "step size too small", run.drift, run.speed)
    rec = attention._simulation_from_run(p, cat, failed, [result("agrees")], 0)
    assert rec["agrees"] is None and rec["limit_class"] is None and "failed run" in rec["limit_class_reason"]


@pytest.mark.parametrize("bad", ["1/(t - 0.5)"])
def test_vectorised_heads_reject_non_finite_entries(bad: str) -> None:
    raw = _raw()
    raw["heads"][0]["P"][0][1] = bad
    from flowcert.errors import ParamError

    with pytest.raises(ParamError):  # refused at load (a pole in [0, t_end]) or, failing that, on evaluation
        attention.parse(raw).kernel_args_many(np.array([0.0, 0.5, 1.0]))
