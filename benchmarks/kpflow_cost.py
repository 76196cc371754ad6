r"""The cost model of ``kpflow analyze`` (:func:`flowcert.limits.kpflow_cost`): calibrate its unit costs,
and check its predictions against measured runs; prints JSON.

``--calibrate`` times each primitive of :mod:`flowcert.gpu.rnn.work` (P and P* batched, in stored and
recompute mode; G and G^T batched, closed form and autograd; one rollout pass; the Lyapunov QR; a dense
SVD; a tall QR) at two sizes, one thread, CPU seconds (``time.process_time``, median of 3), and fits
:math:`t=a\cdot\text{multiply-adds}+b\cdot\text{steps}` per primitive from the two: the ``(a, b)`` pairs of
:data:`flowcert.limits.RNN_UNIT_SECONDS` (the larger fit where a size is dominated by overhead).

``--validate`` runs ``python -m flowcert kpflow analyze`` on a set of requests in fresh processes and
reads each child's own rusage (``os.wait4``: CPU seconds and peak RSS), beside the model's prediction:
``cpu_ratio`` = measured / predicted (the margin :data:`flowcert.limits.RNN_COST_MARGIN` must cover the
largest), the same for memory.

    python benchmarks/kpflow_cost.py --calibrate
    python benchmarks/kpflow_cost.py --validate [--only NAME ...]
    python benchmarks/kpflow_cost.py --smoke          # smallest sizes, one repetition (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from flowcert import limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from limits import measure  # noqa: E402  (benchmarks/limits.py: one child process, its own rusage)

#: Requests of --validate: name -> (params, extra CLI arguments).
REQUESTS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "tiny": ({"cell": "gru", "B": 2, "T": 5, "H": 8, "I": 3}, []),
    "smoke": ({"cell": "gru", "B": 2, "T": 4, "H": 9, "I": 3}, []),
    "dense_limit": ({"cell": "gru", "B": 3, "T": 10, "H": 40, "I": 3}, []),
    "rnn_tanh_mid": ({"cell": "rnn_tanh", "B": 8, "T": 50, "H": 64, "I": 3}, []),
    "gru_mid_consensus": ({"cell": "gru", "B": 8, "T": 50, "H": 64, "I": 3}, ["--consensus", "T", "--probes", "48"]),
    "gru_H256": ({"cell": "gru", "B": 2, "T": 10, "H": 256, "I": 3}, []),
    "gru_I1024": ({"cell": "gru", "B": 2, "T": 10, "H": 16, "I": 1024}, []),
    "b1_consensus": ({"cell": "gru", "B": 1, "T": 100, "H": 128, "I": 3}, ["--consensus", "T", "--probes", "48"]),
    "peer_consensus": ({"cell": "gru", "B": 32, "T": 100, "H": 128, "I": 3}, ["--consensus", "T", "--probes", "48"]),
    "peer_recompute": ({"cell": "gru", "B": 32, "T": 100, "H": 128, "I": 3}, ["--mode", "recompute"]),
    "linear_mid": ({"cell": "linear", "B": 8, "T": 50, "H": 32, "I": 3}, []),
}
SMOKE = ("smoke",)


def _cpu(f: Callable[[], Any], reps: int) -> float:
    f()
    ts = []
    for _ in range(reps):
        c0 = time.process_time()
        f()
        ts.append(time.process_time() - c0)
    return statistics.median(ts)


def _primitives(B: int, T: int, H: int, I: int, reps: int) -> dict[str, tuple[float, float, float]]:
    """{primitive: (seconds of one, multiply-adds of one, steps of one)} at one size (GRU; linear for autograd)."""
    import torch

    from flowcert.gpu.rnn import cells
    from flowcert.gpu.rnn.operators import ParameterJacobian, Propagation, Trajectory, rollout
    from flowcert.gpu.rnn.spectra import lyapunov_qr
    from flowcert.gpu.rnn.work import analysis_work

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(B, T, I, generator=gen, dtype=torch.float64)
    out: dict[str, tuple[float, float, float]] = {}
    for kind in ("gru", "linear"):
        cell, th = cells.init_params(kind, H, I, g=1.0, seed=0)
        tr = Trajectory.run(cell, th, x, torch.zeros(B, H, dtype=torch.float64))
        sz = analysis_work(B, T, H, I, kind)["sizes"]
        m = 8
        V = torch.randn(m, B, T, H, generator=gen, dtype=torch.float64)
        G = ParameterJacobian(tr)
        W = torch.randn(m, G.dim, generator=gen, dtype=torch.float64)
        g = (_cpu(lambda: G.apply_batch(W), reps) + _cpu(lambda: G.adjoint_batch(V), reps)) / (2 * m)
        if kind == "linear":
            out["G_autograd"] = (g, sz["G_autograd"], 0)
            continue
        out["G"] = (g, sz["G"], 0)
        P, Pr = Propagation(tr), Propagation(tr, "recompute")
        out["P"] = (_cpu(lambda: P.apply_batch(V), reps) / m, sz["P"], T / m)
        out["P_recompute"] = (_cpu(lambda: Pr.apply_batch(V), 1) / m, sz["P_recompute"], T / m)
        out["cell"] = (_cpu(lambda: rollout(cell, th, x, tr.h0), reps), sz["cell"], T)
        out["qr"] = (_cpu(lambda: lyapunov_qr(P.J), 1) / (B * T), sz["qr"], 1 / B)
        n = min(1200, B * T * H)
        M = torch.randn(n, n, generator=gen, dtype=torch.float64)
        out["dense"] = (_cpu(lambda: torch.linalg.svdvals(M), 1), float(n) ** 3, 0)
        A = torch.randn(B * T * H, 40, generator=gen, dtype=torch.float64)
        out["flops"] = (_cpu(lambda: torch.linalg.qr(A), reps), float(B * T * H) * 40 * 40, 0)
    return out


def calibrate(sizes: list[tuple[int, int, int, int]], reps: int) -> dict[str, Any]:
    """Fit (a per multiply-add, b per step) per primitive from the two sizes; a alone where there are no steps."""
    small, large = (_primitives(*s, reps) for s in sizes)
    fit: dict[str, list[float]] = {}
    for k in small:
        (t1, f1, s1), (t2, f2, s2) = small[k], large[k]
        if s1 == 0 or s2 == 0 or abs(f1 * s2 - f2 * s1) < 1e-12 * f1 * s2:
            fit[k] = [max(t1 / f1, t2 / f2), 0.0]
            continue
        det = f1 * s2 - f2 * s1
        a = (t1 * s2 - t2 * s1) / det
        b = (f1 * t2 - f2 * t1) / det
        if a <= 0 or b < 0:  # overhead- or flop-dominated at both sizes: one term, the larger per unit
            a, b = max(t1 / f1, t2 / f2), 0.0
        fit[k] = [a, b]
    return {"sizes": sizes, "small": small, "large": large, "fit_per_multiply_add_and_step": fit,
            "model_in_use": limits.RNN_UNIT_SECONDS}


def validate(names: list[str], timeout: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            params, extra = REQUESTS[name]
            path = Path(tmp) / f"{name}.json"
            path.write_text(json.dumps({**params, "g": 0.8, "seed": 1}))
            cons = extra[extra.index("--consensus") + 1] if "--consensus" in extra else None
            probes = int(extra[extra.index("--probes") + 1]) if "--probes" in extra else 64
            mode = extra[extra.index("--mode") + 1] if "--mode" in extra else "stored"
            pred = limits.kpflow_cost(params["B"], params["T"], params["H"], params["I"], params["cell"], mode=mode,
                                      consensus=cons, probes=probes)
            rec = measure(["kpflow", "analyze", "--params", str(path), "--json", *extra], Path(tmp), timeout)
            rec.update(request={**params, "args": extra}, predicted_cpu_s=round(pred["cpu_seconds"], 2),
                       predicted_mb=round(pred["bytes"] / 2**20, 1),
                       cpu_ratio=round(rec["cpu_s"] / pred["cpu_seconds"], 3),
                       bytes_ratio=round(rec["peak_mb"] * 2**20 / pred["bytes"], 3))
            out[name] = rec
            print(json.dumps({"progress": name, "cpu_s": rec["cpu_s"], "predicted": rec["predicted_cpu_s"]}), file=sys.stderr)
    ratios = [r["cpu_ratio"] for r in out.values() if r["exit_code"] == 0]
    mem = [r["bytes_ratio"] for r in out.values() if r["exit_code"] == 0]
    return {"runs": out, "largest_cpu_ratio": max(ratios, default=None), "largest_bytes_ratio": max(mem, default=None),
            "margin": limits.RNN_COST_MARGIN}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--only", nargs="*", choices=sorted(REQUESTS), default=None)
    ap.add_argument("--smoke", action="store_true", help="smallest sizes, one repetition")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    doc: dict[str, Any] = {"benchmark": "kpflow_cost", "threads": 1, "load_before": os.getloadavg()[0]}
    if args.smoke:
        doc["calibration"] = calibrate([(2, 5, 8, 3), (2, 6, 12, 3)], 1)
        doc["validation"] = validate(list(SMOKE), 300)
    else:
        if args.calibrate or not args.validate:
            doc["calibration"] = calibrate([(4, 50, 32, 3), (32, 100, 128, 3)], args.reps)
        if args.validate:
            doc["validation"] = validate(args.only or list(REQUESTS), 900)
    doc["load_after"] = os.getloadavg()[0]
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
