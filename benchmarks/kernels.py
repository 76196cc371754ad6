"""Generated kernels vs hand-written numpy/torch and sympy.lambdify; prints one JSON document.

Gaussian moment field, eq. (7) of the gaussian paper, for d in {2, 8, 32, 64} and batch in
{1, 1024}. Times are per call (best of repeats, ``time.perf_counter``); ratios are what to read,
since the machines are shared. ``--device cuda`` adds torch on the GPU and 10^6 trajectories at
d = 8 through the batched RK4.

    python benchmarks/kernels.py [--quick | --smoke] [--device cuda]

``--smoke`` (CI): d = 2, batch 1, no lambdify, the matrix-level derivation only.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402
import torch  # noqa: E402

from flowcert.numeric import gaussian as ng  # noqa: E402
from flowcert.numeric import native as cbuild  # noqa: E402
from flowcert.symbolic import codegen  # noqa: E402

torch.set_num_threads(1)


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


def hand_numpy(A, B, V, b, mu, S):  # noqa: N803
    M = V @ S @ B @ S
    AS = A @ S
    dS = AS + np.swapaxes(AS, -1, -2) + M + np.swapaxes(M, -1, -2)
    dmu = ((A + V + V @ S @ B) @ mu[..., None])[..., 0] + b
    return dmu, dS


def hand_torch(A, B, V, b, mu, S):  # noqa: N803
    M = V @ S @ B @ S
    AS = A @ S
    return ((A + V + V @ S @ B) @ mu[..., None])[..., 0] + b, AS + AS.mT + M + M.mT


def lambdify_kernel(d: int, cse: bool, limit_s: float) -> tuple[Callable[..., Any] | None, float]:
    """Scalarised SymPy expression of eq. (7) through ``lambdify`` (the baseline to beat)."""
    t0 = time.perf_counter()
    Am, Bm, Vm = (sp.Matrix(d, d, lambda i, j, n=n: sp.Symbol(f"{n}{i}_{j}")) for n in "ABV")
    S = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"S{min(i, j)}_{max(i, j)}"))
    mu = sp.Matrix(d, 1, lambda i, j: sp.Symbol(f"m{i}"))
    bv = sp.Matrix(d, 1, lambda i, j: sp.Symbol(f"c{i}"))
    dmu = (Am + Vm + Vm * S * Bm) * mu + bv
    dS = Am * S + S * Am.T + Vm * S * Bm * S + S * Bm.T * S * Vm.T
    if time.perf_counter() - t0 > limit_s:
        return None, time.perf_counter() - t0
    args = list(Am) + list(Bm) + list(Vm) + list(bv) + list(mu) + [S[i, j] for i in range(d) for j in range(i, d)]
    f = sp.lambdify(args, [list(dmu), list(dS)], modules="numpy", cse=cse)
    iu = np.triu_indices(d)

    def call(A, B, V, b, m, Sg):  # noqa: N803
        flat = [*A.reshape(-1), *B.reshape(-1), *V.reshape(-1), *b, *np.moveaxis(m, -1, 0), *np.moveaxis(Sg[..., iu[0], iu[1]], -1, 0)]
        return f(*flat)

    return call, time.perf_counter() - t0


def gaussian_rows(quick: bool, device: str, smoke: bool = False) -> list[dict[str, Any]]:
    rows = []
    program = ng.moment_program()
    gen_np = codegen.NumpyPrinter().compile(program)
    gen_torch = codegen.TorchPrinter().compile(program)
    try:
        gen_c: Callable[..., Any] | None = cbuild.compile_c(program)
    except cbuild.CompilerUnavailable:
        gen_c = None
    dims = (2,) if smoke else (2, 8, 32) if quick else (2, 8, 32, 64)
    for d in dims:
        for batch in (1,) if smoke else (1, 1024):
            rng = np.random.default_rng(d)
            A, B, V = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
            b = rng.normal(size=d)
            mu = rng.normal(size=(batch, d))
            L = rng.normal(size=(batch, d, d)) / np.sqrt(d)
            S = L @ np.swapaxes(L, -1, -2)
            T = [torch.tensor(x, device=device) for x in (A, B, V, b, mu, S)]
            row: dict[str, Any] = {"system": "gaussian", "d": d, "batch": batch}
            row["hand_numpy_s"] = best_time(lambda: hand_numpy(A, B, V, b, mu, S))
            row["generated_numpy_s"] = best_time(lambda: gen_np(A, B, V, b, mu, S))
            row["hand_torch_s"] = best_time(lambda: hand_torch(*T))
            row["generated_torch_s"] = best_time(lambda: gen_torch(*T))
            if gen_c is not None:
                row["generated_c_s"] = best_time(lambda: gen_c(A, B, V, b, mu, S))
            for cse in (False, True):
                key = f"lambdify{'_cse' if cse else ''}"
                if not smoke and d <= (8 if quick else 16):
                    f, setup = lambdify_kernel(d, cse, 60.0)
                    row[f"{key}_setup_s"] = setup
                    row[f"{key}_s"] = best_time(lambda: f(A, B, V, b, mu, S)) if f else None
                else:
                    row[f"{key}_s"] = None
                    row[f"{key}_note"] = "not run: scalarised expression grows like d^5"
            row["ratio_generated_numpy_vs_hand"] = row["generated_numpy_s"] / row["hand_numpy_s"]
            row["ratio_generated_torch_vs_hand"] = row["generated_torch_s"] / row["hand_torch_s"]
            if gen_c is not None:
                row["ratio_generated_c_vs_hand_numpy"] = row["generated_c_s"] / row["hand_numpy_s"]
            if row.get("lambdify_s"):
                row["speedup_generated_numpy_vs_lambdify"] = row["lambdify_s"] / row["generated_numpy_s"]
            if row.get("lambdify_cse_s"):
                row["speedup_generated_numpy_vs_lambdify_cse"] = row["lambdify_cse_s"] / row["generated_numpy_s"]
                if gen_c is not None:
                    row["speedup_generated_c_vs_lambdify_cse"] = row["lambdify_cse_s"] / row["generated_c_s"]
            rows.append(row)
    return rows


def derivation_rows(smoke: bool = False) -> list[dict[str, Any]]:
    """Matrix-level derivation and lowering time: independent of d by construction."""
    from flowcert.symbolic import gaussian as sym

    t0 = time.perf_counter()
    sym.proofs()
    proofs_s = time.perf_counter() - t0
    ng.moment_program.cache_clear()
    t0 = time.perf_counter()
    ng.moment_program()
    lower_s = time.perf_counter() - t0
    rows = [{"derivation": "matrix-level proofs + lowering", "d": "symbolic", "proofs_s": proofs_s, "lowering_s": lower_s}]
    for dim in () if smoke else (1, 2, 3):
        t0 = time.perf_counter()
        sym.scalarised_proofs(dim)
        rows.append({"derivation": "scalarised cross-check", "d": dim, "seconds": time.perf_counter() - t0})
    return rows


def gpu_rows(device: str) -> list[dict[str, Any]]:
    from flowcert.gpu import gaussian as gg

    d, n = 8, 10**6
    g = torch.Generator(device=device).manual_seed(0)
    A = (torch.randn(d, d, generator=g, device=device, dtype=torch.float64) / d**0.5 - torch.eye(d, device=device, dtype=torch.float64))
    B = torch.eye(d, device=device, dtype=torch.float64)
    V = -0.5 * torch.eye(d, device=device, dtype=torch.float64)
    b = torch.zeros(d, device=device, dtype=torch.float64)
    L = torch.randn(n, d, d, generator=g, device=device, dtype=torch.float64) / d**0.5
    S0 = L @ L.mT
    mu0 = torch.zeros(n, d, device=device, dtype=torch.float64)
    steps = 100
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    gg.simulate_moments(A, B, V, b, mu0, S0, 1.0, method="rk4", steps=steps)
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    evals = 4 * steps * n
    flops = evals * (2 * 4 * d**3 + 6 * d**2)
    return [{"gpu": torch.cuda.get_device_name(), "trajectories": n, "d": d, "rk4_steps": steps, "seconds": secs,
             "field_evals_per_s": evals / secs, "achieved_fp64_tflops": flops / secs / 1e12}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--smoke", action="store_true", help="d = 2, batch 1, no lambdify (CI)")
    args = parser.parse_args()
    doc: dict[str, Any] = {"torch_threads": torch.get_num_threads(), "device": args.device, "smoke": args.smoke,
                           "kernels": gaussian_rows(args.quick, args.device, args.smoke),
                           "derivation": derivation_rows(args.smoke)}
    if args.device.startswith("cuda"):
        doc["gpu"] = gpu_rows(args.device)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
