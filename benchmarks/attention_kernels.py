"""Self-attention field kernels: generated (numpy, torch, C) vs hand-written (numpy, torch) vs
scalarised ``sympy.lambdify`` (with and without ``cse=True``); prints one JSON document.

Field (multistability paper, eq. (1)): ``F = Y - diag(rowdot(X, Y)) X``, ``Y = softmax_rows(X Q^T K
X^T) X V^T``, for n in {8, 32, 128}, d in {2, 8, 32}, batch in {1, 1024}. Times are seconds per
call (best of 5 interleaved rounds of an autoranged loop, ``time.perf_counter``, one
thread); ratios are what
to read, since machines are shared. ``lambdify`` baselines run in a subprocess and are abandoned
after ``--lambdify-limit`` seconds (setup plus timing); a size is not tried once a smaller one
timed out. ``--device cuda`` runs the two torch kernels on the GPU.

    python benchmarks/attention_kernels.py [--quick | --smoke] [--device cuda] [--lambdify-limit 60]

``--smoke`` (CI): n = 8, d = 2, batch 1, one round, no C build and no lambdify baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402
import torch  # noqa: E402

from flowcert.symbolic import attention as sa  # noqa: E402
from flowcert.numeric import native as cbuild  # noqa: E402
from flowcert.symbolic import codegen  # noqa: E402

torch.set_num_threads(1)

FULL = {"n": (8, 32, 128), "d": (2, 8, 32), "batch": (1, 1024)}
QUICK = {"n": (8, 32), "d": (2, 8), "batch": (1, 1024)}
QUICK_EXTRA = [(128, 32, 1024)]  # one large point in --quick
SMOKE = {"n": (8,), "d": (2,), "batch": (1,)}
ROUNDS = 5


def best_time(fn: Callable[[], Any], budget: float = 0.3, repeats: int = 3) -> float:
    """Seconds per call: best of ``repeats`` runs of an autoranged loop."""
    fn()
    n, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t > budget / repeats or n > 1 << 20:
            break
        n *= 4
    out = t / n
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out = min(out, (time.perf_counter() - t0) / n)
    return out


# ---------------------------------------------------------------------------------------------
# hand-written references (the engineering anchors' kernels)
# ---------------------------------------------------------------------------------------------


def hand_numpy(X, Q, K, V):  # noqa: N803
    q, k, v = X @ np.swapaxes(Q, -1, -2), X @ np.swapaxes(K, -1, -2), X @ np.swapaxes(V, -1, -2)
    S = q @ np.swapaxes(k, -1, -2)
    S -= S.max(-1, keepdims=True)
    E = np.exp(S)
    E /= E.sum(-1, keepdims=True)
    Y = E @ v
    return Y - (X * Y).sum(-1, keepdims=True) * X


def hand_torch(X, Q, K, V):  # noqa: N803
    q, k, v = X @ Q.mT, X @ K.mT, X @ V.mT
    Y = torch.softmax(q @ k.mT, dim=-1) @ v
    return Y - (X * Y).sum(-1, keepdim=True) * X


# ---------------------------------------------------------------------------------------------
# lambdify baseline, in a subprocess with a time limit
# ---------------------------------------------------------------------------------------------


def lambdify_child(n: int, d: int, cse: bool, batches: list[int]) -> dict[str, Any]:
    """Runs inside the subprocess: build the scalarised field, lambdify, time it."""
    t0 = time.perf_counter()
    Xs, Qs, Ks, Vs, F = sa.scalarised_field(n, d)
    syms = [*Xs, *Qs, *Ks, *Vs]
    f = sp.lambdify(syms, F, modules="numpy", cse=cse)
    setup = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, d, d)) / np.sqrt(d)
    out: dict[str, Any] = {"setup_s": setup, "per_call_s": {}, "max_abs_err": {}}
    for batch in batches:
        X = rng.normal(size=(batch, n, d))
        X /= np.linalg.norm(X, axis=-1, keepdims=True)
        if batch == 1:
            flat = [float(v) for v in X[0].ravel()] + [float(v) for m in (Q, K, V) for v in m.ravel()]
            call = lambda: f(*flat)  # noqa: E731
            got = np.asarray(call(), dtype=float)[None]
        else:
            cols = list(X.reshape(batch, -1).T) + [float(v) for m in (Q, K, V) for v in m.ravel()]
            call = lambda: f(*cols)  # noqa: E731
            got = np.moveaxis(np.asarray(call(), dtype=float), -1, 0)
        out["per_call_s"][str(batch)] = best_time(call)
        out["max_abs_err"][str(batch)] = float(np.max(np.abs(got - hand_numpy(X, Q, K, V))))
    return out


def lambdify_baseline(n: int, d: int, cse: bool, batches: list[int], limit: float) -> dict[str, Any]:
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r});"
            "import json, attention_kernels as b;"
            f"print(json.dumps(b.lambdify_child({n}, {d}, {cse}, {batches!r})))")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "limit_s": limit}
    if proc.returncode != 0:
        return {"status": "error", "stderr": proc.stderr.strip()[-400:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["status"] = "ok"
    out["wall_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n in {8, 32}, d in {2, 8}, plus n=128, d=32, batch=1024")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="device of the torch kernels")
    ap.add_argument("--lambdify-limit", type=float, default=60.0, help="seconds per lambdify baseline")
    ap.add_argument("--no-lambdify", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="n = 8, d = 2, batch 1, one round, no C build, no lambdify")
    args = ap.parse_args()
    rounds = 1 if args.smoke else ROUNDS
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "--device cuda: torch.cuda.is_available() is False"}))
        sys.exit(2)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    grid = SMOKE if args.smoke else QUICK if args.quick else FULL
    configs = [(n, d, b) for n in grid["n"] for d in grid["d"] for b in grid["batch"]]
    if args.quick:
        configs += QUICK_EXTRA

    t0 = time.perf_counter()
    sa.structure_program.cache_clear()  # attention_program is a shorthand of the cached structure_program
    program = sa.attention_program("unit")
    gen_numpy = codegen.NumpyPrinter().compile(program)
    gen_torch = codegen.TorchPrinter().compile(program)
    codegen_s = time.perf_counter() - t0
    os.environ["FLOWCERT_CACHE"] = tempfile.mkdtemp(prefix="flowcert-bench-")  # a cold C build
    gen_c, c_build_s = None, None
    try:
        if not args.smoke:
            t0 = time.perf_counter()
            gen_c = cbuild.compile_c_shaped(program)
            c_build_s = time.perf_counter() - t0
    except cbuild.CompilerUnavailable as exc:
        print(f"C backend skipped: {exc}", file=sys.stderr)

    rng = np.random.default_rng(0)
    results = []
    for n, d, batch in configs:
        X = rng.normal(size=(batch, n, d))
        X /= np.linalg.norm(X, axis=-1, keepdims=True)
        Q, K, V = rng.normal(size=(3, d, d)) / np.sqrt(d)
        Xt, Qt, Kt, Vt = (torch.from_numpy(a).to(dev) for a in (X, Q, K, V))
        ref = hand_numpy(X, Q, K, V)

        def torch_call(kernel: Callable[..., Any]) -> Callable[[], Any]:
            def call() -> Any:
                with torch.no_grad():
                    out = kernel(Xt, Qt, Kt, Vt)
                sync()
                return out
            return call

        calls: dict[str, Callable[[], Any]] = {
            "generated_numpy": lambda: gen_numpy(X, Q, K, V)[0],
            "hand_numpy": lambda: hand_numpy(X, Q, K, V),
            "generated_torch": torch_call(lambda *a: gen_torch(*a)[0]),
            "hand_torch": torch_call(hand_torch),
        }
        if gen_c is not None:
            calls["generated_c"] = lambda: gen_c(X, Q, K, V)[0]
        times, errs = {}, {}
        for name, call in calls.items():
            out = call()
            out = out.cpu().numpy() if isinstance(out, torch.Tensor) else out
            errs[name] = float(np.max(np.abs(out - ref)))
        for _ in range(rounds):  # interleaved rounds, so that load changes hit every kernel alike
            for name, call in calls.items():
                times[name] = min(times.get(name, np.inf), best_time(call, budget=0.1, repeats=1))
        ratios = {
            "generated_numpy/hand_numpy": times["generated_numpy"] / times["hand_numpy"],
            "generated_torch/hand_torch": times["generated_torch"] / times["hand_torch"],
        }
        if gen_c is not None:
            ratios["generated_c/hand_numpy"] = times["generated_c"] / times["hand_numpy"]
            ratios["generated_c/hand_torch"] = times["generated_c"] / times["hand_torch"]
        results.append({"n": n, "d": d, "batch": batch, "per_call_s": times, "ratios": ratios,
                        "max_abs_err_vs_hand_numpy": errs})
        print(f"n={n} d={d} batch={batch}: " + ", ".join(f"{k} {v * 1e6:.1f}us" for k, v in times.items()),
              file=sys.stderr)

    lambdify = []
    if not (args.no_lambdify or args.smoke):
        sizes = sorted({(n, d) for n, d, _ in configs}, key=lambda s: (s[0] * s[1], s))
        if args.quick:
            sizes = sizes[:1]  # (8, 2): the larger ones do not finish within the limit
        for cse in (False, True):
            failed: list[tuple[int, int]] = []
            for n, d in sizes:
                if any(n >= fn and d >= fd for fn, fd in failed):
                    lambdify.append({"n": n, "d": d, "cse": cse, "status": "skipped: a smaller size timed out"})
                    continue
                batches = sorted({b for nn, dd, b in configs if (nn, dd) == (n, d)})
                res = lambdify_baseline(n, d, cse, batches, args.lambdify_limit)
                res.update({"n": n, "d": d, "cse": cse})
                if res["status"] == "ok":
                    res["generated_speedup"] = {}
                    for b, t in res["per_call_s"].items():
                        row = next(r for r in results if (r["n"], r["d"], r["batch"]) == (n, d, int(b)))
                        best = min(v for k, v in row["per_call_s"].items() if k.startswith("generated"))
                        res["generated_speedup"][b] = {
                            "lambdify/generated_numpy": t / row["per_call_s"]["generated_numpy"],
                            "lambdify/best_generated": t / best,
                        }
                else:
                    failed.append((n, d))
                lambdify.append(res)
                print(f"lambdify n={n} d={d} cse={cse}: {res['status']}", file=sys.stderr)

    print(json.dumps({
        "benchmark": "attention_kernels",
        "quick": args.quick,
        "smoke": args.smoke,
        "device": args.device,
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__,
                        "sympy": sp.__version__, "machine": platform.machine(), "cpus": os.cpu_count(),
                        "threads": 1, "cuda_device": torch.cuda.get_device_name() if args.device == "cuda" else None},
        "setup_s": {"lower_and_print_numpy_torch": codegen_s, "c_build": c_build_s},
        "results": results,
        "lambdify": lambdify,
        "summary": summarise(results, lambdify),
    }, indent=1))


def summarise(results: list[dict[str, Any]], lambdify: list[dict[str, Any]]) -> dict[str, Any]:
    """Ranges of the ratios and the targets they are read against."""
    out: dict[str, Any] = {"targets": {"generated/hand": "<= 1.25", "lambdify/generated": ">= 10"}}
    for key in results[0]["ratios"]:
        vals = [r["ratios"][key] for r in results]
        out[key] = {"min": min(vals), "median": float(np.median(vals)), "max": max(vals),
                    "over_1.25": [(r["n"], r["d"], r["batch"]) for r in results if r["ratios"][key] > 1.25]}
    speed = [(x["n"], x["d"], x["cse"], b, v["lambdify/generated_numpy"])
             for x in lambdify if x.get("status") == "ok" for b, v in x["generated_speedup"].items()]
    out["lambdify/generated_numpy"] = [
        {"n": n, "d": d, "cse": cse, "batch": int(b), "ratio": v} for n, d, cse, b, v in speed]
    return out


if __name__ == "__main__":
    main()
