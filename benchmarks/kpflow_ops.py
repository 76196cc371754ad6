r"""Benchmark of the KPFlow operators on a GRU (B=32, T=100, H=128): set-up of P, mat-vec of P, P^T
and K, and peak memory, for flowcert (float64 and float32; P stored or recomputed) against

* the direct reference in the same run: A_t by one ``jacrev`` per (b, t) sample, P q by explicit
  Jacobian products :math:`\sum_{s\le t}A_t\cdots A_{s+1}q_s` (O(T^2) products), K by
  reverse-over-reverse autograd (``torch.autograd.grad`` twice), and
* the public ``kpflow`` package (``PropagationOperator_LinearForm``, ``ParameterOperator``; float32
  only) when it can be imported: ``KPFLOW_PATH`` names a local checkout of meeree/kpflow (its
  ``src`` folder is put on ``sys.path``; it is not on PyPI and is never vendored here).

Times are medians of wall-clock seconds and, beside them (``*_cpu_s``), of process CPU seconds
(``time.process_time``): on a loaded machine the CPU time is the fairer measure of the work.

``--consensus`` adds the keep-T consensus spectrum of P K P* at the same size (true partial trace by
Rademacher probes, :mod:`flowcert.gpu.rnn.consensus`), with both estimators (probes in the factor's
domain, the default, and on the traced axes): CPU times and their ratio, top eigenvalues with standard
errors, kpflow's block sum beside them, and, at a size where the exact partial trace is affordable
(B=8, T=25, H=32), each estimator's measured error against the exact one, in standard errors.

Each configuration runs in a fresh process (spawn) so that its peak RSS (``ru_maxrss``) is its own;
memory is reported as the peak minus the RSS after the model and trajectory were built. Outputs are
cross-checked (relative differences of P q, P^T q and K q against the float64 flowcert result).
Prints one JSON document with times (seconds), memory (MiB) and ratios. ``--small`` runs B=4, T=20,
H=16; ``--smoke`` (CI) B=2, T=5, H=8, one repetition, without the reference and recompute runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import time
from typing import Any

import os
import sys

SIZES = {"B": 32, "T": 100, "H": 128, "I": 3}
if os.environ.get("KPFLOW_PATH"):  # also runs in the spawned workers (they re-import this module)
    _src = os.path.join(os.environ["KPFLOW_PATH"], "src")
    sys.path.insert(0, _src if os.path.isdir(_src) else os.environ["KPFLOW_PATH"])


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _setup(sizes: dict[str, int], dtype_name: str):
    import torch

    torch.set_num_threads(1)
    dtype = getattr(torch, dtype_name)
    from flowcert.gpu.rnn import cells
    from flowcert.gpu.rnn.operators import Trajectory

    cell, th = cells.init_params("gru", sizes["H"], sizes["I"], g=1.0, seed=0)
    th = {k: v.to(dtype) for k, v in th.items()}
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(sizes["B"], sizes["T"], sizes["I"], generator=gen, dtype=torch.float64).to(dtype)
    tr = Trajectory.run(cell, th, x, torch.zeros(sizes["B"], sizes["H"], dtype=dtype))
    q = torch.randn(tr.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(dtype)
    return torch, cell, th, x, tr, q


CPU: dict[str, float] = {}


def _time(f, reps: int) -> tuple[float, Any]:
    """Median wall time (returned) and median CPU time (left in CPU["last"]) of ``reps`` calls."""
    out = f()  # warm-up
    ts, cs = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    CPU["last"] = statistics.median(cs)
    return statistics.median(ts), out


def _timed(res: dict[str, Any], key: str, f, reps: int) -> Any:
    res[key], out = _time(f, reps)
    res[key.replace("_s", "_cpu_s")] = CPU["last"]
    return out


def _worker(kind: str, sizes: dict[str, int], reps: int, queue: Any) -> None:
    try:
        queue.put(_run(kind, sizes, reps))
    except Exception as exc:  # noqa: BLE001 - reported in the JSON
        queue.put({"config": kind, "error": f"{type(exc).__name__}: {exc}"})


def _run(kind: str, sizes: dict[str, int], reps: int) -> dict[str, Any]:
    dtype_name = "float32" if kind.endswith("f32") else "float64"
    torch, cell, th, x, tr, q = _setup(sizes, dtype_name)
    base = _rss_mib()
    res: dict[str, Any] = {"config": kind, "dtype": dtype_name}
    if kind.startswith("flowcert"):
        from flowcert.gpu.rnn.operators import Propagation, parameter_operator

        mode = "recompute" if "recompute" in kind else "stored"
        t0, c0 = time.perf_counter(), time.process_time()
        P = Propagation(tr, mode)
        K = parameter_operator(tr)
        res["setup_P_s"], res["setup_P_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        Pq = _timed(res, "P_matvec_s", lambda: P(q), reps)
        PTq = _timed(res, "PT_matvec_s", lambda: P.adjoint(q), reps)
        Kq = _timed(res, "K_matvec_s", lambda: K(q), reps)
        res["K_scale"] = "1/B"
    elif kind == "reference":
        B, T, H = tr.shape
        t0 = time.perf_counter()
        A = torch.empty(B, T, H, H, dtype=q.dtype)
        Zp = tr.Zprev
        for b in range(B):
            for t in range(T):
                A[b, t] = torch.func.jacrev(lambda z: cell.step(th, z[None], x[b, t][None])[0])(Zp[b, t])
        res["setup_P_s"] = time.perf_counter() - t0

        def P_ref(v):  # explicit products, O(T^2)
            out = torch.zeros_like(v)
            for s in range(T):
                w = v[:, s]
                out[:, s] += w
                for t in range(s + 1, T):
                    w = torch.bmm(A[:, t], w[:, :, None])[:, :, 0]
                    out[:, t] += w
            return out

        def PT_ref(v):
            out = torch.zeros_like(v)
            for s in range(T):
                w = v[:, s]
                out[:, s] += w
                for t in range(s - 1, -1, -1):
                    w = torch.bmm(A[:, t + 1].transpose(1, 2), w[:, :, None])[:, :, 0]
                    out[:, t] += w
            return out

        zp, xf = tr._flat()
        params = [p.detach().clone().requires_grad_(True) for p in th.values()]

        def K_ref(v):  # reverse-over-reverse: J_theta^T v, then J_theta u via a dummy cotangent
            out = cell.step(dict(zip(th, params)), zp, xf)
            u = torch.zeros_like(out, requires_grad=True)
            g = torch.autograd.grad(out, params, u, create_graph=True)
            gq = torch.autograd.grad(out, params, v.reshape(B * T, H), retain_graph=True)
            jv = torch.autograd.grad(g, u, [gi / B for gi in gq])[0]
            return jv.reshape(B, T, H)

        r = max(1, reps // 3)
        res["P_matvec_s"], Pq = _time(lambda: P_ref(q), r)
        res["PT_matvec_s"], PTq = _time(lambda: PT_ref(q), r)
        res["K_matvec_s"], Kq = _time(lambda: K_ref(q), r)
        res["K_scale"] = "1/B"
    else:  # kpflow
        from kpflow.parameter_op import ParameterOperator
        from kpflow.propagation_op import PropagationOperator_LinearForm

        B, T, H = tr.shape
        gru = torch.nn.GRUCell(sizes["I"], H).to(q.dtype)
        with torch.no_grad():
            for k, v in th.items():
                getattr(gru, k).copy_(v)
        t0, c0 = time.perf_counter(), time.process_time()
        P = PropagationOperator_LinearForm(gru, x, tr.Z)
        K = ParameterOperator(gru, x, tr.Z)
        res["setup_P_s"], res["setup_P_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
        Pq = _timed(res, "P_matvec_s", lambda: P._matvec(q), reps)
        PTq = _timed(res, "PT_matvec_s", lambda: P._rmatvec(q), reps)
        Kqr = _timed(res, "K_matvec_s", lambda: K._matvec(q), reps)
        Kq = Kqr / B  # kpflow's ParameterOperator has no 1/B
        res["K_scale"] = "none (divided by B here for the comparison)"
    res["peak_rss_over_base_MiB"] = _rss_mib() - base
    res["outputs"] = [t.detach().to(torch.float64).reshape(-1).tolist()[:0] for t in ()]  # nothing large in JSON
    import numpy as np

    np.save(f"/tmp/kpflow_bench_{kind}.npy", np.stack([t.detach().double().numpy() for t in (Pq, PTq, Kq)]))
    return res


def _interleaved(sizes: dict[str, int], reps: int, queue: Any) -> None:
    """Mat-vec times of flowcert (stored, f64 and f32) and kpflow (f32) interleaved in one process,
    so that load from other processes affects all of them alike (medians over ``reps`` rounds)."""
    try:
        import torch

        from flowcert.gpu.rnn.operators import Propagation, parameter_operator
        from kpflow.parameter_op import ParameterOperator
        from kpflow.propagation_op import PropagationOperator_LinearForm

        ops = {}
        for dt in ("float64", "float32"):
            _, cell, th, x, tr, q = _setup(sizes, dt)
            P, K = Propagation(tr, "stored"), parameter_operator(tr)
            ops[f"flowcert_{dt}"] = (lambda P=P, q=q: P(q), lambda P=P, q=q: P.adjoint(q), lambda K=K, q=q: K(q))
        gru = torch.nn.GRUCell(sizes["I"], sizes["H"])
        with torch.no_grad():
            for k, v in th.items():
                getattr(gru, k).copy_(v)
        P2, K2 = PropagationOperator_LinearForm(gru, x, tr.Z), ParameterOperator(gru, x, tr.Z)
        ops["kpflow_float32"] = (lambda: P2._matvec(q), lambda: P2._rmatvec(q), lambda: K2._matvec(q))
        times: dict[str, dict[str, list[float]]] = {k: {"P": [], "PT": [], "K": []} for k in ops}
        for _ in range(reps + 1):
            for name, fs in ops.items():
                for op, f in zip(("P", "PT", "K"), fs):
                    t0 = time.perf_counter()
                    f()
                    times[name][op].append(time.perf_counter() - t0)
        med = {k: {op: statistics.median(v[op][1:]) for op in v} for k, v in times.items()}
        ratio = {f"kpflow_float32/{k}": {op: med["kpflow_float32"][op] / med[k][op] for op in ("P", "PT", "K")}
                 for k in ("flowcert_float64", "flowcert_float32")}
        queue.put({"median_s": med, "ratios (>1: flowcert faster)": ratio})
    except Exception as exc:  # noqa: BLE001
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def _consensus(sizes: dict[str, int], probes: int, queue: Any, exact_size: dict[str, int]) -> None:
    """keep-T consensus of P K P* at ``sizes``: both estimators (probes in the factor's domain, the default,
    and on the traced axes), their times and top eigenvalues with standard errors, kpflow's block sum; and
    both estimators' measured error against the exact partial trace at ``exact_size``."""
    try:
        import torch

        from flowcert.gpu.rnn import consensus as C
        from flowcert.gpu.rnn.operators import KPFlow

        out: dict[str, Any] = {"operator": "PKP*", "keep": "T", "probes": probes}
        for label, sz in (("peer_size", sizes), ("exact_check_size", exact_size)):
            torch_, cell, th, x, tr, q = _setup(sz, "float64")
            kp = KPFlow.build(tr)
            row: dict[str, Any] = {"sizes": sz}
            for est in ("factor", "traced"):
                t0, c0 = time.perf_counter(), time.process_time()
                doc = C.consensus(kp, "PKP", "T", probes=probes, seed=0, exact=False, top=6, estimator=est)
                row[est] = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                            "eigenvalues": doc["eigenvalues"], "stderr": doc["stderr"],
                            "stderr_frobenius": doc["stderr_frobenius"], "method": doc["method"]}
            row["block_sum_eigenvalues"] = doc["block_sum_eigenvalues"]
            row["cpu_ratio_traced_over_factor"] = row["traced"]["cpu_s"] / row["factor"]["cpu_s"]
            if label == "exact_check_size":
                ex = C.consensus(kp, "PKP", "T", exact=True, top=6)
                row["exact_eigenvalues"] = ex["eigenvalues"]
                for est in ("factor", "traced"):
                    r = row[est]
                    r["eigenvalue_error_in_stderr"] = [(e - t) / s for e, t, s in zip(r["eigenvalues"], ex["eigenvalues"], r["stderr"])]
            out[label] = row
        queue.put(out)
    except Exception as exc:  # noqa: BLE001
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="B=4, T=20, H=16")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--no-recompute", action="store_true", help="leave out the recompute-mode configurations")
    ap.add_argument("--consensus", action="store_true", help="also time the keep-T consensus spectrum")
    ap.add_argument("--probes", type=int, default=48)
    ap.add_argument("--smoke", action="store_true", help="B=2, T=5, H=8, one repetition, no reference (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.reps, args.no_reference, args.no_recompute, args.consensus, args.probes = 1, True, True, True, 6
    sizes = ({"B": 2, "T": 5, "H": 8, "I": 3} if args.smoke else {"B": 4, "T": 20, "H": 16, "I": 3} if args.small
             else dict(SIZES))
    exact_size = {"B": 2, "T": 4, "H": 6, "I": 3} if args.smoke else {"B": 8, "T": 25, "H": 32, "I": 3}
    configs = ["flowcert_stored_f64", "flowcert_stored_f32"]
    if not args.no_recompute:
        configs += ["flowcert_recompute_f64", "flowcert_recompute_f32"]
    if not args.no_reference:
        configs.append("reference")
    try:
        import kpflow.propagation_op  # noqa: F401

        configs.append("kpflow_f32")
        kp_available = True
    except ImportError:
        kp_available = False
    ctx = mp.get_context("spawn")
    results = {}
    for c in configs:
        qu = ctx.Queue()
        p = ctx.Process(target=_worker, args=(c, sizes, args.reps, qu))
        p.start()
        results[c] = qu.get()
        p.join()
    import numpy as np

    ref = np.load("/tmp/kpflow_bench_flowcert_stored_f64.npy")
    for c, r in results.items():
        if "error" in r:
            continue
        out = np.load(f"/tmp/kpflow_bench_{c}.npy")
        r["rel_diff_vs_flowcert_f64"] = {n: float(np.linalg.norm(out[i] - ref[i]) / np.linalg.norm(ref[i]))
                                         for i, n in enumerate(("P", "PT", "K"))}
    ratios: dict[str, Any] = {}
    ours = results["flowcert_stored_f64"]
    for other in ("reference", "kpflow_f32"):
        if other in results and "error" not in results[other]:
            for c in configs:
                if c == other or c not in results or "error" in results[c] or not c.startswith("flowcert"):
                    continue
                r = results[c]
                keys = ("setup_P_s", "P_matvec_s", "PT_matvec_s", "K_matvec_s")
                ratios[f"{other}/{c}"] = {k: results[other][k] / r[k] for k in keys}
                ratios[f"{other}/{c} (cpu)"] = {k: results[other][k.replace("_s", "_cpu_s")] / r[k.replace("_s", "_cpu_s")]
                                               for k in keys if k.replace("_s", "_cpu_s") in results[other]}
    interleaved = None
    if kp_available:
        qu = ctx.Queue()
        p = ctx.Process(target=_interleaved, args=(sizes, max(args.reps, 7), qu))
        p.start()
        interleaved = qu.get()
        p.join()
    if "flowcert_recompute_f64" in results:
        ratios["recompute/stored_f64"] = {k: results["flowcert_recompute_f64"][k] / ours[k]
                                          for k in ("setup_P_s", "P_matvec_s", "PT_matvec_s", "K_matvec_s", "peak_rss_over_base_MiB")}
    ratios["stored_f64: PT/P"] = ours["PT_matvec_s"] / ours["P_matvec_s"]
    cons = None
    if args.consensus:
        qu = ctx.Queue()
        p = ctx.Process(target=_consensus, args=(sizes, args.probes, qu, exact_size))
        p.start()
        cons = qu.get()
        p.join()
    print(json.dumps({"consensus": cons, "benchmark": "kpflow_ops", "cell": "gru", "sizes": sizes, "threads": 1,
                      "kpflow_available": kp_available, "results": results, "interleaved_matvecs": interleaved,
                      "ratios_other_over_flowcert (>1: flowcert faster)": ratios}, indent=1))


if __name__ == "__main__":
    main()
