r"""Consensus spectra you can believe (issue 46, item 5): coverage of the eigenvalue error bars, and the
consensus stage's cost model against measured CPU; prints JSON.

**Coverage.** Random cases (cell, operator, kept axes, size, gain, seed; small enough that the exact
partial trace is the reference): for m = 4, 8, 16, 64 probes (factor-domain estimator, forced), the
fraction of the top five eigenvalues whose truth lies

* ``old``: within :math:`\hat\lambda_j\pm2\,\mathrm{se}^\delta_j` (``stderr_delta``, the delta-method
  bars before issue 46);
* ``new``: in ``[lower, upper]`` (jackknife hull with Student-t, :mod:`flowcert.gpu.rnn.consensus`);
* ``new_2se``: within :math:`\hat\lambda_j\pm2\,s_j` (the new ``stderr`` about the plain estimate);

and the same for :math:`\lambda_1` alone, with the median interval width over :math:`\lambda_1`, and the
coverage on the cases marked ``trusted``.

**Cost.** ``cpu_s`` measured by :func:`~flowcert.gpu.rnn.consensus.consensus` (``time.process_time``, one
thread, after a warm-up call) beside ``predicted_cpu_s`` (:func:`flowcert.gpu.rnn.work.consensus_plan`),
on both paths; ``--calibrate`` refits :data:`flowcert.gpu.rnn.work.CONSENSUS_UNIT_SECONDS` (non-negative
least squares on relative error) from the calibration set and reports the fit's ratios.

    python benchmarks/kpflow_consensus_coverage.py [--cases 60] [--calibrate] [--skip-coverage]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np
import torch

torch.set_num_threads(1)

from flowcert.gpu.rnn import cells, work  # noqa: E402
from flowcert.gpu.rnn import consensus as C  # noqa: E402
from flowcert.gpu.rnn.operators import KPFlow, Trajectory  # noqa: E402

F64 = torch.float64
MS = (4, 8, 16, 64)
TOP = 5
KINDS = ("gru", "rnn_tanh", "torch_rnn")
KEEPS = ("T", "TH", "H", "BT", "B", "BH")
OPS = ("PKP", "PP", "K")

#: Cost cases: (cell, B, T, H, keep, probes, op, mode, exact).
COST_CASES: list[tuple[str, int, int, int, str, int, str, str, bool]] = [
    ("gru", 8, 10, 8, "TH", 8, "PKP", "stored", True),
    ("gru", 8, 10, 8, "TH", 4, "PKP", "stored", False),
    ("gru", 4, 10, 16, "T", 8, "PKP", "stored", True),
    ("gru", 8, 50, 64, "T", 48, "PKP", "stored", False),
    ("gru", 4, 50, 32, "T", 16, "PKP", "stored", False),
    ("gru", 16, 50, 32, "T", 64, "PKP", "stored", False),
    ("rnn_tanh", 8, 50, 64, "T", 48, "PKP", "stored", False),
    ("rnn_tanh", 8, 20, 16, "H", 16, "PKP", "stored", True),
    ("gru", 8, 20, 16, "H", 16, "PKP", "stored", False),
    ("gru", 3, 10, 50, "T", 8, "PKP", "stored", False),
    ("gru", 3, 10, 50, "T", 8, "PKP", "stored", True),
    ("gru", 1, 100, 128, "T", 48, "PKP", "stored", False),
    ("gru", 4, 20, 32, "B", 16, "PKP", "stored", True),
    ("gru", 8, 30, 32, "BT", 16, "PKP", "stored", False),
    ("gru", 8, 30, 32, "TH", 16, "PKP", "stored", False),
    ("gru", 8, 20, 16, "TH", 16, "PP", "stored", True),
    ("gru", 8, 50, 64, "T", 48, "PP", "stored", False),
    ("gru", 8, 50, 64, "T", 48, "K", "stored", False),
    ("gru", 8, 20, 16, "T", 16, "K", "stored", True),
    ("torch_rnn", 8, 40, 32, "T", 32, "PKP", "stored", False),
    ("torch_rnn", 4, 10, 16, "BT", 8, "PKP", "stored", True),
    ("gru", 4, 30, 32, "T", 16, "PKP", "recompute", False),
    ("gru", 4, 10, 16, "T", 8, "PKP", "recompute", True),
    ("gru", 32, 100, 128, "T", 48, "PKP", "stored", False),
    ("gru", 16, 100, 64, "T", 128, "PKP", "stored", False),
    ("gru", 2, 20, 128, "T", 32, "PKP", "stored", True),
    ("rnn_tanh", 16, 20, 32, "T", 64, "PP", "stored", True),
    ("gru", 8, 25, 24, "T", 8, "PKP", "stored", True),
]


def _trajectory(kind: str, B: int, T: int, H: int, I: int, seed: int, g: float) -> Trajectory:
    cell, th = cells.init_params(kind, H, I, g=g, seed=seed)
    x = torch.randn(B, T, I, dtype=F64, generator=torch.Generator().manual_seed(seed + 1))
    return Trajectory.run(cell, th, x, cells.initial_state(cell, B))


def coverage(cases: int, seed: int = 0) -> dict[str, Any]:
    """The coverage table over ``cases`` random cases (module docstring)."""
    rng = np.random.default_rng(seed)
    hit: dict[tuple[int, str, str], list[bool]] = {}
    width: dict[tuple[int, str], list[float]] = {}
    trusted: dict[int, list[bool]] = {m: [] for m in MS}

    def note(m: int, rule: str, lo: torch.Tensor, hi: torch.Tensor, truth: torch.Tensor, scale: float) -> None:
        ok = ((truth >= lo) & (truth <= hi)).tolist()
        hit.setdefault((m, rule, "top5"), []).extend(ok)
        hit.setdefault((m, rule, "lambda1"), []).append(ok[0])
        width.setdefault((m, rule), []).append(float(hi[0] - lo[0]) / scale)

    for c in range(cases):
        kind, keep, op = KINDS[rng.integers(3)], KEEPS[rng.integers(6)], OPS[rng.integers(3)]
        g = (0.8, 1.5)[rng.integers(2)]
        B, T, H = (int(v) for v in rng.integers([3, 4, 3], [9, 11, 9]))
        kp = KPFlow.build(_trajectory(kind, B, T, H, 3, c, g))
        A, fa, _, _ = C.gram_factors(kp, op)
        ex = C.partial_trace(A, keep, exact=True, factor_adjoint=fa)
        lam = torch.linalg.eigvalsh((ex.matrix + ex.matrix.T) / (2 * ex.traced_size)).flip(0)
        for m in MS:
            d = C.consensus(kp, op, keep, probes=m, seed=7919 * c + m, exact=False, top=TOP)
            k = len(d["eigenvalues"])
            truth = lam[:k]
            est = torch.tensor(d["eigenvalues"], dtype=F64)
            sd, se = torch.tensor(d["stderr_delta"], dtype=F64), torch.tensor(d["stderr"], dtype=F64)
            scale = float(lam[0])
            note(m, "old", est - 2 * sd, est + 2 * sd, truth, scale)
            note(m, "new", torch.tensor(d["lower"], dtype=F64), torch.tensor(d["upper"], dtype=F64), truth, scale)
            note(m, "new_2se", est - 2 * se, est + 2 * se, truth, scale)
            inside = (torch.tensor(d["lower"], dtype=F64) <= truth) & (truth <= torch.tensor(d["upper"], dtype=F64))
            if d["trusted"]:
                trusted[m].extend(inside.tolist())
    table = {}
    for m in MS:
        row: dict[str, Any] = {}
        for rule in ("old", "new", "new_2se"):
            row[rule] = {"top5": round(float(np.mean(hit[(m, rule, "top5")])), 3),
                         "lambda1": round(float(np.mean(hit[(m, rule, "lambda1")])), 3),
                         "median_width_over_lambda1": round(statistics.median(width[(m, rule)]), 3)}
        row["new_on_trusted"] = {"cases_eigenvalues": len(trusted[m]),
                                 "top5": round(float(np.mean(trusted[m])), 3) if trusted[m] else None}
        table[str(m)] = row
    return {"cases": cases, "eigenvalues_per_case": TOP, "table": table,
            "rules": {"old": "eigenvalues +- 2 stderr_delta (delta method)", "new": "[lower, upper]",
                      "new_2se": "eigenvalues +- 2 stderr (new stderr, no bias hull)"}}


def _measure(case: tuple[str, int, int, int, str, int, str, str, bool]) -> dict[str, Any]:
    kind, B, T, H, keep, m, op, mode, exact = case
    kp = KPFlow.build(_trajectory(kind, B, T, H, 3, 1, 0.8), mode)
    C.consensus(kp, op, keep, probes=m, seed=0, exact=exact)  # warm-up (the CLI's stage runs after others)
    cpus, pred = [], 0.0
    for r in range(3 if B * T * H < 200_000 else 1):
        d = C.consensus(kp, op, keep, probes=m, seed=r + 1, exact=exact)
        cpus.append(d["cpu_s"])
        pred = d["predicted_cpu_s"]
    feats = work.consensus_work(B, T, H, 3, kind, keep, m, op=op, mode=mode, exact=exact)
    cpu = statistics.median(cpus)
    return {"case": list(case), "path": d["path"], "cpu_s": round(cpu, 4), "predicted_cpu_s": round(pred, 4),
            "ratio_measured_over_predicted": round(cpu / pred, 3), "features": feats}


def calibrate(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Non-negative least squares of the measured seconds on the features, each row divided by its seconds."""
    from scipy.optimize import nnls

    keys = [k for k in work.CONSENSUS_UNIT_SECONDS if any(r["features"][k] for r in rows)]
    X = np.array([[r["features"][k] for k in keys] for r in rows])
    y = np.array([r["cpu_s"] for r in rows])
    scale = X.max(0)
    coef, _ = nnls(X / scale / y[:, None], np.ones(len(y)))
    fit = {k: float(c / s) for k, c, s in zip(keys, coef, scale)}
    return {k: fit.get(k, v) for k, v in work.CONSENSUS_UNIT_SECONDS.items()}


def cost(do_calibrate: bool) -> dict[str, Any]:
    rows = []
    for case in COST_CASES:
        rows.append(_measure(case))
        print(json.dumps({"progress": rows[-1]["case"], "cpu_s": rows[-1]["cpu_s"],
                          "predicted": rows[-1]["predicted_cpu_s"]}), file=__import__("sys").stderr)
    out: dict[str, Any] = {"runs": [{k: v for k, v in r.items() if k != "features"} for r in rows]}
    ratios = [r["ratio_measured_over_predicted"] for r in rows]
    out["ratio_range"] = [min(ratios), max(ratios)]
    if do_calibrate:
        fit = calibrate(rows)
        pred = [sum(fit[k] * v for k, v in r["features"].items()) for r in rows]
        fr = [r["cpu_s"] / p for r, p in zip(rows, pred)]
        out["fit"] = {k: float(f"{v:.3g}") for k, v in fit.items()}
        out["fit_ratio_range"] = [round(min(fr), 3), round(max(fr), 3)]
    out["model_in_use"] = work.CONSENSUS_UNIT_SECONDS
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--skip-coverage", action="store_true")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="4 coverage cases, no cost table (the smoke test)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.cases, args.skip_cost = 4, True
    doc: dict[str, Any] = {"benchmark": "kpflow_consensus_coverage", "threads": 1, "load_before": os.getloadavg()[0]}
    t0 = time.time()
    if not args.skip_coverage:
        doc["coverage"] = coverage(args.cases, args.seed)
    if not args.skip_cost:
        doc["cost"] = cost(args.calibrate)
    doc["load_after"] = os.getloadavg()[0]
    doc["wall_s"] = round(time.time() - t0, 1)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
