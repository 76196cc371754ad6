"""Re-check time of the README's example documents, old code against this tree (issue 38 item 8: within 1.5x).

For each document: the old code (``--baseline REV``, extracted with ``git archive`` into a temporary
folder laid out as installed, by the package-dir table of that revision's ``pyproject.toml``) writes its
document and re-checks it; this tree writes its document and re-checks it. Each ``flowcert recheck`` is a
fresh process (imports included, bytecode cached, as a user runs it); old and new alternate ``--repeat`` times and the
best of each is kept. Prints one JSON object: per document the seconds of each, the ratio new/old,
whether it is within ``--limit`` (1.5), and the exit code and counts of each re-check. Documents about a
checkpoint's heads are re-checked with ``--checkpoint`` (the installed MiniLM weights).

    python benchmarks/recheck_examples.py                      # every document, best of 3, baseline 738cc72
    python benchmarks/recheck_examples.py --only attention_consensus_fig1 --repeat 5
    python benchmarks/recheck_examples.py --smoke              # one document, one repetition (CI)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
G, A, R = ROOT / "tests/data", ROOT / "tests/data/attention", ROOT / "tests/data/rnn"

#: name -> arguments of ``flowcert`` that write the document (``--json`` is added)
DOCUMENTS: dict[str, list[str]] = {
    "gaussian_stable_2d_simulate": ["verify", "gaussian", "--params", str(G / "gaussian_stable_2d.json"), "--simulate"],
    "gaussian_blowup_2d_simulate": ["verify", "gaussian", "--params", str(G / "cli/gaussian_blowup_2d.json"), "--simulate"],
    "attention_consensus_fig1": ["verify", "attention", "--params", str(A / "consensus_fig1.json")],
    "attention_multistable_d3": ["verify", "attention", "--params", str(A / "multistable_d3.json")],
    "equilibria_multistable_d3": ["equilibria", "attention", "--params", str(A / "multistable_d3.json")],
    "rnn_gru_small": ["verify", "rnn", "--params", str(R / "gru_small.json")],
    "pretrained_minilm_layer0": ["pretrained", "heads", "--model", "minilm", "--layer", "0"],
    "pretrained_verify_minilm_L0H0": ["pretrained", "verify", "--system", "gaussian", "--model", "minilm", "--layers", "0",
                                      "--heads", "0"],
}
#: documents about a checkpoint's heads, re-checked against its weights (``recheck --checkpoint DIR``)
CHECKPOINT = ("pretrained_minilm_layer0", "pretrained_verify_minilm_L0H0")
SMOKE = "gaussian_stable_2d_simulate"
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def extract(rev: str, dest: Path) -> Path:
    """The package tree of ``rev`` under ``dest`` as it is installed (``flowcert/``, ``flowcert/symbolic/`` ...)."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True, check=True).stdout
    src = dest / "src"
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(src, filter="data")
    table = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-dir", {"flowcert": "flowcert"})
    tree = dest / "tree"
    for pkg, folder in sorted(table.items(), key=lambda kv: kv[0].count(".")):
        if (src / folder).is_dir():
            shutil.copytree(src / folder, tree / pkg.replace(".", "/"), dirs_exist_ok=True)
    return tree


class Side:
    """One code tree: ``pythonpath`` None is this tree (the running interpreter's install)."""

    def __init__(self, name: str, pythonpath: Path | None, workdir: Path) -> None:
        self.name, self.pythonpath, self.workdir = name, pythonpath, workdir
        # bytecode cached as in an installed package (a PYTHONDONTWRITEBYTECODE environment would recompile
        # every module of both trees in every process, a cost no user pays)
        self.env = {k: v for k, v in {**os.environ, **ENV}.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if pythonpath is None:
            self.env.pop("PYTHONPATH", None)
        else:
            self.env["PYTHONPATH"] = str(pythonpath)

    def run(self, *args: str) -> tuple[subprocess.CompletedProcess, float]:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "flowcert", *args], cwd=self.workdir, env=self.env,
                             capture_output=True, text=True)
        return out, time.perf_counter() - t0

    def origin(self) -> str:
        out = subprocess.run([sys.executable, "-c", "import flowcert; print(flowcert.__file__)"], cwd=self.workdir,
                             env=self.env, capture_output=True, text=True)
        return out.stdout.strip()


def _counts(out: subprocess.CompletedProcess) -> dict:
    try:
        got = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"exit": out.returncode, "error": out.stderr.strip()[-300:]}
    return {"exit": out.returncode, "certificates": got.get("certificates"), "bound": got.get("bound"),
            "unbound": got.get("unbound"), "refused": len(got.get("refused", []))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="738cc72", help="git revision of the old code (default 738cc72)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=1.5)
    ap.add_argument("--only", nargs="*", choices=sorted(DOCUMENTS), help="these documents only")
    ap.add_argument("--smoke", action="store_true", help=f"{SMOKE} only, one repetition (CI)")
    args = ap.parse_args()
    names = [SMOKE] if args.smoke else (args.only or list(DOCUMENTS))
    repeat = 1 if args.smoke else args.repeat
    from flowcert.pretrained import find_minilm

    minilm = find_minilm()
    if minilm is None:
        names = [n for n in names if n not in CHECKPOINT]
    result: dict = {"baseline": args.baseline, "repeat": repeat, "limit": args.limit, "seconds": "best of repeat, "
                    "fresh process each, bytecode cached", "documents": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        work = tmpdir / "cwd"
        work.mkdir()
        sides = [Side("new", None, work)]
        try:
            sides.insert(0, Side("old", extract(args.baseline, tmpdir / "old"), work))
        except (subprocess.CalledProcessError, OSError, KeyError, tarfile.TarError) as exc:
            result["baseline_error"] = f"cannot extract {args.baseline}: {exc}"
        result["code"] = {s.name: s.origin() for s in sides}
        for name in names:
            entry: dict = {}
            docs = {}
            for s in sides:
                out, secs = s.run(*DOCUMENTS[name], "--json")
                if out.returncode:
                    entry[s.name] = {"error": f"writing the document exited {out.returncode}: {out.stderr.strip()[-300:]}"}
                    continue
                docs[s.name] = tmpdir / f"{s.name}_{name}.json"
                docs[s.name].write_text(out.stdout)
                entry[s.name] = {"write_seconds": round(secs, 3), "bytes": len(out.stdout)}
            best = {s.name: float("inf") for s in sides if s.name in docs}
            for _ in range(repeat):
                for s in sides:
                    if s.name in docs:
                        extra = ["--checkpoint", str(minilm)] if name in CHECKPOINT else []
                        out, secs = s.run("recheck", str(docs[s.name]), "--json", *extra)
                        best[s.name] = min(best[s.name], secs)
                        entry[s.name]["recheck"] = _counts(out)
            for side, secs in best.items():
                entry[side]["recheck_seconds"] = round(secs, 3)
            if "old" in best and "new" in best:
                entry["ratio"] = round(best["new"] / best["old"], 3)
                entry["within_limit"] = entry["ratio"] <= args.limit
            result["documents"][name] = entry
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
