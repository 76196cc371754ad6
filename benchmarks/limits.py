r"""Each command at the entries of :data:`flowcert.limits.LIMITS`: wall seconds and peak memory; prints JSON.

The contract (issue 24): at a limit, a command ends within :data:`flowcert.limits.COMMAND_SECONDS`
and :data:`flowcert.limits.COMMAND_BYTES` on 2 cores. Every case runs ``python -m flowcert …`` in a
fresh process (one thread) and reads that child's own ``rusage`` (``os.wait4``): peak resident set
and CPU seconds. ``reference`` is the same command on the smallest input of the same kind, in the
same run, so ``ratio`` (wall at the limit / wall of the reference) survives a noisy machine. The
commands run one thread, so ``within_budget`` compares CPU seconds (the wall time of a quiet machine)
with the budget; ``load_before``/``load_after`` say how quiet the machine was.

    python benchmarks/limits.py [--only equilibria:n rnn:bytes ...] [--smoke]

The rnn rows follow the cost model of :func:`flowcert.limits.kpflow_cost`: ``rnn:bytes`` and
``rnn:cpu_seconds`` run the largest request it accepts (GRU, T = 100, H = 128; stored and recomputed
Jacobians), ``rnn:consensus_*`` the --consensus T requests of issue 36, ``rnn:B*T*H`` one above the
ceiling (refused, exit 2). ``--smoke`` (CI) runs one small reference command.
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
from typing import Any, Callable

import numpy as np

from flowcert import limits

ROOT = Path(__file__).resolve().parents[1]
MS = json.loads((ROOT / "tests/data/attention/multistable_d3.json").read_text())
GAUSS = ROOT / "tests/data/gaussian_stable_2d.json"


def _write(folder: Path, name: str, doc: dict[str, Any]) -> str:
    path = folder / name
    path.write_text(json.dumps(doc))
    return str(path)


def _attention(n: int, **extra: Any) -> dict[str, Any]:
    return {**MS, "n": n, **extra}


def _kpflow(B: int, T: int, H: int, I: int = 3) -> dict[str, Any]:
    return {"cell": "gru", "B": B, "T": T, "H": H, "I": I, "g": 0.8, "seed": 1}


def _largest_B(T: int, H: int, **options: Any) -> int:
    """The largest number of trials the cost model accepts for a GRU with T steps and H units."""
    B = 1
    while limits.kpflow_fits(B + 1, T, H, 3, "gru", **options):
        B += 1
    return B


def _analyze(f: Path, name: str, params: dict[str, Any], *extra: str) -> list[str]:
    return ["kpflow", "analyze", "--params", _write(f, name, params), "--json", *extra]


PEER = (32, 100, 128)  # kpflow's own benchmark: GRU, B = 32, T = 100, H = 128


def _design(d: int) -> dict[str, Any]:
    """Lemma 4.4's inverse design at dimension d: Sigma_inf > 0, K skew, V < 0, B > 0 (seeded)."""
    rng = np.random.default_rng(0)
    G = rng.normal(size=(d, d))
    S = G @ G.T / d + np.eye(d)
    K = rng.normal(size=(d, d))
    return {"Sigma_inf": S.tolist(), "K": (K - K.T).tolist(), "V": (-np.eye(d)).tolist(), "B": (0.5 * np.eye(d)).tolist()}


#: limit entry -> (argv at the limit, argv of the small reference), each given the scratch folder.
Case = Callable[[Path], list[str]]
CASES: dict[str, tuple[Case, Case]] = {
    "attention:samples": (
        lambda f: ["simulate", "attention", "--params", _write(f, "ms.json", MS),
                   "--samples", str(int(limits.LIMITS["attention:samples"])), "--json"],
        lambda f: ["simulate", "attention", "--params", _write(f, "ms.json", MS), "--samples", "4", "--json"]),
    "attention:step_work": (  # n = 512, d = 3, t_end at the step_work limit with the fixed-step budget dt = 0.01
        lambda f: ["simulate", "attention", "--params",
                   _write(f, "big.json", _attention(int(limits.LIMITS["attention:n"]), t_end=6.3)), "--json"],
        lambda f: ["simulate", "attention", "--params", _write(f, "small.json", _attention(6, t_end=6.3)), "--json"]),
    "equilibria:n": (
        lambda f: ["equilibria", "attention", "--params",
                   _write(f, "eq.json", _attention(int(limits.LIMITS["equilibria:n"]))), "--json"],
        lambda f: ["equilibria", "attention", "--params", _write(f, "eq6.json", _attention(6)), "--json"]),
    "equilibria:cap*n*d": (
        lambda f: ["equilibria", "attention", "--params", _write(f, "eq24.json", _attention(24)), "--json",
                   "--cap", str(int(limits.LIMITS["equilibria:cap*n*d"]) // (24 * 3))],
        lambda f: ["equilibria", "attention", "--params", _write(f, "eq6.json", _attention(6)), "--json"]),
    # kpflow analyze: the cost model (rnn:cpu_seconds, rnn:bytes) at its edges, the peer's size, the new
    # --consensus rows; each beside the smallest request
    "rnn:bytes": (  # the largest B (T = 100, H = 128) the model accepts with stored Jacobians
        lambda f: _analyze(f, "kb.json", _kpflow(_largest_B(100, 128, mode="stored"), 100, 128)),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9))),
    "rnn:cpu_seconds": (  # the largest B (T = 100, H = 128) the model accepts with recomputed Jacobians
        lambda f: _analyze(f, "kc.json", _kpflow(_largest_B(100, 128, mode="recompute"), 100, 128), "--mode", "recompute"),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9))),
    "rnn:consensus_peer": (  # --consensus T (PKP*, 48 probes) at the peer's size
        lambda f: _analyze(f, "kp.json", _kpflow(*PEER), "--consensus", "T", "--probes", "48"),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9), "--consensus", "T", "--probes", "48")),
    "rnn:consensus_B1": (  # --consensus T at B = 1, T = 100, H = 128
        lambda f: _analyze(f, "k1.json", _kpflow(1, 100, 128), "--consensus", "T", "--probes", "48"),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9), "--consensus", "T", "--probes", "48")),
    "rnn:B*T*H": (  # above the ceiling: refused (exit 2) before anything is built
        lambda f: _analyze(f, "kbig.json", _kpflow(1000, 1000, 100)),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9))),
    "rnn:H": (
        lambda f: _analyze(f, "kh.json", _kpflow(2, 10, int(limits.LIMITS["rnn:H"])), ),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9))),
    "rnn:I": (
        lambda f: _analyze(f, "ki.json", _kpflow(2, 10, 16, int(limits.LIMITS["rnn:I"]))),
        lambda f: _analyze(f, "k0.json", _kpflow(2, 5, 9))),
    "design:d": (
        lambda f: ["design", "gaussian", "--spec", _write(f, "s.json", _design(int(limits.LIMITS["design:d"]))),
                   "--json"],
        lambda f: ["design", "gaussian", "--spec", _write(f, "s2.json", _design(2)), "--json"]),
}


def measure(argv: list[str], cwd: Path, timeout: float) -> dict[str, Any]:
    """Run ``python -m flowcert argv``; its exit code, wall and CPU seconds and peak RSS (MB), from ``wait4``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "flowcert", *argv], cwd=cwd, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        while True:  # reap this child only, with its own rusage
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
            time.sleep(0.05)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        err.seek(0)
        tail = err.read().decode(errors="replace")[-300:]
    rec: dict[str, Any] = {"exit_code": code, "wall_s": round(wall, 2),
                           "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1)}
    if code:
        rec["stderr"] = tail
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=None, metavar="LIMIT", choices=sorted(CASES))
    ap.add_argument("--smoke", action="store_true", help="the small reference of one case only (CI)")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"budget": {"seconds": limits.COMMAND_SECONDS, "mb": limits.COMMAND_BYTES / 2**20},
                           "cores": len(os.sched_getaffinity(0)), "load_before": os.getloadavg()[0], "limits": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ["rnn:H"] if args.smoke else args.only or sorted(CASES):
            at_limit, small = CASES[name]
            argv = at_limit(folder)
            ref = measure(small(folder), folder, 600)
            rec = dict(ref) if args.smoke else measure(argv, folder, 600)
            params = next((a for a in argv if a.endswith(".json")), None)
            rec["command"] = " ".join(a for a in argv if not a.startswith("/"))
            if params is not None:
                rec["params"] = json.loads(Path(params).read_text()) if Path(params).stat().st_size < 10_000 else None
            rec.update(limit=limits.LIMITS.get(name), reference=ref,
                       ratio=round(rec["wall_s"] / ref["wall_s"], 2) if ref["wall_s"] else None,
                       within_budget=rec["exit_code"] == 0 and rec["cpu_s"] <= limits.COMMAND_SECONDS
                       and rec["peak_mb"] <= limits.COMMAND_BYTES / 2**20)
            out["limits"][name] = rec
            print(json.dumps({"progress": name, "wall_s": rec["wall_s"], "peak_mb": rec.get("peak_mb")}), file=sys.stderr)
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
