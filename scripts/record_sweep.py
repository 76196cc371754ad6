"""Record a whole-model ``flowcert pretrained verify`` sweep for the report (``reports/data/minilm_verify.jsonl``).

Reads the sweep's JSON lines (one per head, as printed by ``pretrained verify --json``), keeps what
the per-head table reads (:func:`flowcert.pretrained.command.compact_record`) and writes one
provenance line per sweep first: the command, flowcert's version, the date, the machine and the
wall time measured around the command.

    python scripts/record_sweep.py --sweep gaussian.jsonl "COMMAND" WALL_S [--sweep ...] --out reports/data/minilm_verify.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

from flowcert import __version__
from flowcert.pretrained.command import compact_record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", nargs=3, action="append", required=True, metavar=("JSONL", "COMMAND", "WALL_S"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    lines: list[str] = []
    records: list[str] = []
    for path, command, wall in args.sweep:
        with open(path, encoding="utf-8") as fh:
            recs = [compact_record(json.loads(x)) for x in fh if x.strip().startswith("{")]
        secs = [r["seconds"] for r in recs if r.get("seconds") is not None]
        lines.append(json.dumps({"provenance": {
            "command": command, "flowcert": __version__, "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, CPU only",
            "heads": len(recs), "wall_s": float(wall), "median_s": statistics.median(secs) if secs else 0.0,
            "max_s": max(secs, default=0.0)}}))
        records += [json.dumps(r) for r in recs]
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines + records) + "\n")
    print(f"wrote {args.out}: {len(records)} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
