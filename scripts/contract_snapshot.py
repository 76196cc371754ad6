"""Run the example commands of the CLI contract and keep what they print, to compare two trees byte for byte.

    python scripts/contract_snapshot.py run OUT_DIR [--python PY]   # stdout, stderr, exit code of each command
    python scripts/contract_snapshot.py diff DIR_A DIR_B             # which commands differ, and where first

A refactoring that keeps the contract leaves every file identical (timing fields are blanked: keys
whose name ends in ``seconds``, ``_s`` or ``wall``). Commands run from the repository root with
``OMP_NUM_THREADS=1``; the list is :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
G = "tests/data"
A = "tests/data/attention"
R = "tests/data/rnn"

#: name -> arguments of ``flowcert``
COMMANDS: dict[str, list[str]] = {
    "verify_gaussian_stable": ["verify", "gaussian", "--params", f"{G}/gaussian_stable_2d.json", "--json"],
    "verify_gaussian_stable_sim": ["verify", "gaussian", "--params", f"{G}/gaussian_stable_2d.json", "--simulate", "--json"],
    "verify_gaussian_3d": ["verify", "gaussian", "--params", f"{G}/gaussian_3d.json", "--json"],
    "verify_gaussian_tv": ["verify", "gaussian", "--params", f"{G}/gaussian_time_varying.json", "--json"],
    "verify_gaussian_blowup": ["verify", "gaussian", "--params", f"{G}/cli/gaussian_blowup_2d.json", "--json"],
    "verify_gaussian_bistable": ["verify", "gaussian", "--params", f"{G}/cli/gaussian_bistable_pd_2d.json", "--json"],
    "verify_gaussian_zero": ["verify", "gaussian", "--params", f"{G}/cli/gaussian_certified_zero_2d.json", "--json"],
    "verify_gaussian_rounding": ["verify", "gaussian", "--params", f"{G}/cli/gaussian_rounding_sym_part.json", "--json"],
    "verify_gaussian_thm471": ["verify", "gaussian", "--params", f"{G}/errata/thm47_1_counterexample.json", "--json"],
    "verify_gaussian_row2": ["verify", "gaussian", "--params", f"{G}/errata/table1_row2_bistable.json", "--json"],
    "verify_gaussian_text": ["verify", "gaussian", "--params", f"{G}/gaussian_stable_2d.json"],
    "verify_attention_multistable": ["verify", "attention", "--params", f"{A}/multistable_d3.json", "--json"],
    "verify_attention_multistable_sim": ["verify", "attention", "--params", f"{A}/multistable_d3.json", "--simulate", "--json"],
    "verify_attention_clustering": ["verify", "attention", "--params", f"{A}/clustering_d3.json", "--json"],
    "verify_attention_fig1": ["verify", "attention", "--params", f"{A}/consensus_fig1.json", "--json"],
    "verify_attention_fig3": ["verify", "attention", "--params", f"{A}/consensus_fig3.json", "--json"],
    "verify_attention_tetra": ["verify", "attention", "--params", f"{A}/consensus_tetrahedron.json", "--json"],
    "verify_attention_thm51": ["verify", "attention", "--params", f"{A}/consensus_thm51_counterexample.json", "--json"],
    "verify_attention_text": ["verify", "attention", "--params", f"{A}/multistable_d3.json"],
    "equilibria_multistable": ["equilibria", "attention", "--params", f"{A}/multistable_d3.json", "--json"],
    "equilibria_clustering": ["equilibria", "attention", "--params", f"{A}/clustering_d3.json", "--json"],
    "verify_rnn_gru": ["verify", "rnn", "--params", f"{R}/gru_small.json", "--json"],
    "verify_rnn_tanh": ["verify", "rnn", "--params", f"{R}/rnn_tanh_small.json", "--json"],
    "kpflow_gru": ["kpflow", "analyze", "--params", f"{R}/gru_small.json", "--json"],
    "kpflow_tanh": ["kpflow", "analyze", "--params", f"{R}/rnn_tanh_small.json", "--json"],
    "simulate_gaussian": ["simulate", "gaussian", "--params", f"{G}/gaussian_stable_2d.json", "--json"],
    "simulate_attention": ["simulate", "attention", "--params", f"{A}/multistable_d3.json", "--json"],
    "codegen_gaussian_numpy": ["codegen", "gaussian", "--backend", "numpy"],
    "codegen_attention_torch": ["codegen", "attention", "--backend", "torch"],
    "verify_missing_file": ["verify", "gaussian", "--params", f"{G}/does_not_exist.json", "--json"],
    "verify_bad_sigma0": ["verify", "gaussian", "--params", f"{G}/malformed/Sigma0_indefinite.json", "--json"],
    "verify_unknown_system": ["verify", "lorenz", "--params", f"{G}/gaussian_stable_2d.json"],
}

_TIMING = re.compile(r"(seconds|_s|wall|wall_time|cpu_seconds)$")


def _blank(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: ("<t>" if _TIMING.search(str(k)) else _blank(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_blank(v) for v in obj]
    return obj


def run(out: Path, python: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    for name, args in COMMANDS.items():
        p = subprocess.run([python, "-m", "flowcert", *args], cwd=ROOT, capture_output=True, text=True, env=env,
                           timeout=1200)
        stdout = p.stdout
        try:
            stdout = json.dumps(_blank(json.loads(stdout)), indent=1, sort_keys=False) + "\n"
        except ValueError:
            pass
        (out / f"{name}.out").write_text(stdout)
        (out / f"{name}.err").write_text(p.stderr)
        (out / f"{name}.rc").write_text(f"{p.returncode}\n")
        print(f"{name}: exit {p.returncode}", flush=True)


def diff(a: Path, b: Path) -> int:
    bad = 0
    for name in COMMANDS:
        for ext in ("out", "err", "rc"):
            fa, fb = a / f"{name}.{ext}", b / f"{name}.{ext}"
            ta = fa.read_text() if fa.exists() else None
            tb = fb.read_text() if fb.exists() else None
            if ta != tb:
                bad += 1
                la, lb = (ta or "").splitlines(), (tb or "").splitlines()
                i = next((k for k, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
                print(f"{name}.{ext}: differs at line {i + 1}\n  - {la[i] if i < len(la) else '<end>'}\n"
                      f"  + {lb[i] if i < len(lb) else '<end>'}")
    print(f"{len(COMMANDS)} commands, {bad} file(s) differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--python", default=sys.executable)
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.out, args.python)
        return 0
    return diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
