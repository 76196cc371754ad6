r"""``pretrained verify --system gaussian`` at real width, side by side with the code at ``--baseline REV``; prints JSON.

A head exports :math:`B=K^\top Q/\sqrt{d_h}` and :math:`V=W_OW_V` factored, :math:`A=0` and :math:`\Sigma_0=I`
diagonal (gaussian paper, eq. (7): :math:`\dot\mu=(A+V+V\Sigma B)\mu+b`,
:math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`), so its verdicts are decided on the
factors. For each width ``--d`` a GPT-2-shaped checkpoint (``flowcert.pretrained.synthetic``, seeded random
weights, one layer, heads of ``--d-head``) is written, and one head is verified by the whole command
(load, export, verify) in a fresh process, by this tree and by the code at ``REV`` (``git archive``, its limits
raised to the width so that it runs at all), alternating; the baseline is skipped above ``--baseline-max-d``
(it grows like :math:`d^{2.0\text{--}2.3}`). Per run: CPU seconds and peak RSS (``os.wait4``), the export's
bytes, and whether every verdict is the same. ``exponent``: the log-log slope of this tree's CPU seconds from
the smallest to the largest width. ``--layer D`` verifies every head of one layer of width D (this tree; with
``--scheduler local`` on a Dask ``LocalCluster`` of two one-thread workers), CPU seconds summed over the
command and its workers.

    python benchmarks/pretrained_scale.py [--d 1024 2048 4096] [--baseline 6eed9b7] [--layer 4096] [--scheduler local]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

RUNNER = """
import sys
from flowcert import limits
d = int(sys.argv[1])
limits.COMMAND_MAX_D["verify"] = max(limits.COMMAND_MAX_D["verify"], d)
for k in ("gaussian:integrate", "gaussian:prop-2.1", "gaussian:lemma-2.3", "gaussian:prop-2.4", "gaussian:table-1"):
    limits.STAGE_MAX_D[k] = max(limits.STAGE_MAX_D[k], d)
    if hasattr(limits, "LOW_RANK_STAGE_MAX_D") and k in limits.LOW_RANK_STAGE_MAX_D:
        limits.LOW_RANK_STAGE_MAX_D[k] = max(limits.LOW_RANK_STAGE_MAX_D[k], d)
from flowcert.cli import main
sys.exit(main(sys.argv[2:]))
"""


def checkpoint(where: Path, d: int, d_head: int, seed: int = 0) -> Path:
    """A one-layer GPT-2-shaped checkpoint of width d (heads of d_head), seeded random weights."""
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    cfg, tensors = random_tensors("gpt2", d=d, n_heads=d // d_head, n_layers=1, d_ff=64, seed=seed)
    return write_checkpoint(where, cfg, tensors)


def run(model: Path, heads: list[int], out_dir: Path, site: Path | None, d: int,
        scheduler: str | None = None) -> dict[str, Any]:
    """``pretrained verify --system gaussian --json`` in a fresh process: CPU s, peak RSS, the verdicts."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    if site is not None:
        env["PYTHONPATH"] = str(site)
    else:
        env.pop("PYTHONPATH", None)
    args = ["pretrained", "verify", "--model", str(model), "--system", "gaussian", "--layers", "0", "--heads",
            *map(str, heads), "--out-dir", str(out_dir), "--json"] + (["--scheduler", scheduler] if scheduler else [])
    t0 = time.perf_counter()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / "stdout.txt", "w") as fo, open(out_dir.parent / "stderr.txt", "w") as fe:
        proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(d), *args], stdout=fo, stderr=fe, env=env,
                                cwd=out_dir.parent)
        _, status, usage = os.wait4(proc.pid, 0)  # this process alone: its CPU seconds and peak RSS
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    out, err = (out_dir.parent / "stdout.txt").read_text(), (out_dir.parent / "stderr.txt").read_text()
    lines = [json.loads(x) for x in out.splitlines() if x.strip().startswith("{")]
    verdicts = {}
    for r in lines:
        head = (r.get("provenance") or {}).get("head")
        for t in (r.get("result") or {}).get("theorems", []):
            verdicts[f"H{head} {t['id']} applies"] = t.get("applies")
            for h in t["hypotheses"]:
                verdicts[f"H{head} {t['id']} {h['name']}"] = h["status"]
    return {"rc": proc.returncode, "wall_s": wall, "lines": len(lines), "error": err.strip().splitlines()[-1:] if proc.returncode else [],
            "export_bytes": sum(f.stat().st_size for f in out_dir.glob("*.json")) if out_dir.is_dir() else 0,
            "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024, "verdicts": verdicts}


def side_by_side(ds: list[int], d_head: int, rev: str | None, baseline_max_d: int, tmp: Path) -> dict[str, Any]:
    from pretrained_verify import tree_at

    site = tree_at(rev, tmp / "rev") if rev else None
    rows = []
    for d in ds:
        model = checkpoint(tmp / f"g{d}", d, d_head)
        row: dict[str, Any] = {"d": d, "d_head": d_head}
        sides = [("current", None)] + ([("baseline", site)] if site is not None and d <= baseline_max_d else [])
        for side, where in sides:
            rec = run(model, [0], tmp / f"{side}-{d}" / "out", where, d)
            row[side] = rec
            print(json.dumps({"progress": f"d = {d} {side}", "cpu_s": rec["cpu_s"], "rc": rec["rc"]}), file=sys.stderr, flush=True)
        if "baseline" in row:
            b, c = row["baseline"], row["current"]
            row["ratio_cpu"] = c["cpu_s"] / b["cpu_s"] if b["cpu_s"] else None
            if b["rc"] == 0:
                row["verdict_differences"] = {k: [b["verdicts"].get(k), c["verdicts"].get(k)]
                                              for k in sorted(set(b["verdicts"]) | set(c["verdicts"]))
                                              if b["verdicts"].get(k) != c["verdicts"].get(k)}
                row["verdicts_identical"] = not row["verdict_differences"]
        for side, _ in sides:
            row[side].pop("verdicts")
        rows.append(row)
    ok = [r for r in rows if r["current"]["rc"] == 0]
    exponent = (math.log(ok[-1]["current"]["cpu_s"] / ok[0]["current"]["cpu_s"]) / math.log(ok[-1]["d"] / ok[0]["d"])
                if len(ok) >= 2 and ok[-1]["d"] > ok[0]["d"] else None)
    return {"baseline": rev, "widths": rows, "exponent": exponent}


def layer(d: int, d_head: int, scheduler: str | None, tmp: Path) -> dict[str, Any]:
    """Every head of one layer of width d, in one command (serial, or on a Dask LocalCluster)."""
    model = checkpoint(tmp / f"layer{d}", d, d_head)
    heads = list(range(d // d_head))
    if scheduler != "local":
        rec = run(model, heads, tmp / "layer" / "out", None, d, scheduler)
    else:
        from dask.distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            before = _descendant_cpu()
            rec = run(model, heads, tmp / "layer" / "out", None, d, cluster.scheduler_address)
            rec["workers"] = len(cluster.workers)
            rec["worker_cpu_s"] = _descendant_cpu() - before  # the live workers (the command itself is in cpu_s)
            rec["total_cpu_s"] = rec["cpu_s"] + rec["worker_cpu_s"]
    rec.pop("verdicts")
    rec.update(d=d, d_head=d_head, heads=len(heads), scheduler=scheduler)
    return rec


def _descendant_cpu() -> float:
    """CPU seconds so far of every live descendant of this process (``/proc``: utime + stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = parent.get(pid)
        while p is not None and p != me and p > 1:
            p = parent.get(p)
        total += cpu[pid] if p == me else 0.0
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, nargs="*", default=[1024, 2048, 4096])
    ap.add_argument("--d-head", type=int, default=128)
    ap.add_argument("--baseline", default=None, metavar="REV", help="also run the code at REV (git archive)")
    ap.add_argument("--baseline-max-d", type=int, default=1024, help="the baseline's largest width (its cost grows like d^2)")
    ap.add_argument("--layer", type=int, default=None, metavar="D", help="verify every head of one layer of width D")
    ap.add_argument("--scheduler", default=None, help="--layer on a Dask cluster: an address, or 'local' (LocalCluster)")
    ap.add_argument("--smoke", action="store_true", help="one head at d = 64 (d_h = 16), no baseline, no layer")
    ap.add_argument("--out", default=None, metavar="FILE.json")
    args = ap.parse_args(argv)
    if args.smoke:
        args.d, args.d_head, args.baseline, args.layer = [64], 16, None, None
    with tempfile.TemporaryDirectory(prefix="flowcert-scale-") as tmp:
        doc = side_by_side(args.d, args.d_head, args.baseline, args.baseline_max_d, Path(tmp))
        if args.layer:
            doc["layer"] = layer(args.layer, args.d_head, args.scheduler, Path(tmp))
    text = json.dumps(doc, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
