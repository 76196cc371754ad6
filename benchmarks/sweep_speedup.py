"""Speed-up of ``flowcert verify gaussian --params DIR --jobs N`` over the serial sweep; prints JSON.

Writes ``--files`` seeded random parameter sets at dimension ``--d`` (the three regimes of
:mod:`verify_scaling` in turn), then times, as separate ``flowcert`` processes on the same
directory:

* ``serial``: no ``--jobs``, one BLAS thread (``OPENBLAS_NUM_THREADS=1``: the single-thread baseline);
* ``serial_default_threads``: no ``--jobs``, the libraries' default thread pools;
* ``jobs_N``: ``--jobs N`` local processes.

Each run's per-set results must be identical to the serial run's (the timings aside), else the
benchmark reports ``"identical": false``. Ratios, not absolute times, are what to read.

    python benchmarks/sweep_speedup.py [--files 72] [--d 32] [--jobs 2] [--dask]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verify_scaling import REGIMES, case  # noqa: E402

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def write_cases(folder: Path, n: int, d: int) -> None:
    for k in range(n):
        regime = REGIMES[k % len(REGIMES)]
        (folder / f"p{k:03d}_{regime}.json").write_text(json.dumps(case(regime, d, seed=k)))


def sweep(folder: Path, extra: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """Wall time of one sweep process and its lines keyed by file."""
    cmd = [sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(folder), "--json", *extra]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"sweep {extra} exited {out.returncode}: {out.stderr[-2000:]}")
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return wall, {rec["file"]: rec for rec in lines}


def same_results(a: dict[str, Any], b: dict[str, Any]) -> bool:
    key = lambda rec: json.dumps([rec["status"], rec["result"]], sort_keys=True)  # noqa: E731
    return a.keys() == b.keys() and all(key(a[f]) == key(b[f]) for f in a)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=72)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dask", action="store_true", help="also run on a dask LocalCluster of --jobs workers")
    ap.add_argument("--smoke", action="store_true", help="2 files at d = 2, serial and --jobs only (CI)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.files, args.d, args.dask = 2, 2, False
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_cases(folder, args.files, args.d)
        runs: dict[str, dict[str, Any]] = {}
        serial_wall, serial = sweep(folder, [], ONE_THREAD)
        per_set = sorted(rec["seconds"] for rec in serial.values())
        runs["serial"] = {"wall_s": serial_wall}
        if not args.smoke:
            wall, lines = sweep(folder, [], {})
            runs["serial_default_threads"] = {"wall_s": wall, "identical": same_results(serial, lines)}
        wall, lines = sweep(folder, ["--jobs", str(args.jobs)], {})
        runs[f"jobs_{args.jobs}"] = {"wall_s": wall, "identical": same_results(serial, lines)}
        if args.dask:
            from distributed import LocalCluster

            with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster:
                wall, lines = sweep(folder, ["--scheduler", cluster.scheduler_address], ONE_THREAD)
            runs[f"dask_{args.jobs}_workers"] = {"wall_s": wall, "identical": same_results(serial, lines)}
    for r in runs.values():
        r["ratio_to_serial"] = r["wall_s"] / serial_wall
    print(json.dumps({
        "benchmark": "sweep_speedup", "files": args.files, "d": args.d, "jobs": args.jobs,
        "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0],
        "per_set_s": {"sum": sum(per_set), "median": per_set[len(per_set) // 2], "max": per_set[-1]},
        "runs": runs,
    }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
