r"""The document mutation study of issue 44: every document type, every kind of edit (not run in CI).

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/document_mutations.py [--max N] [--only TYPE] [--json OUT]

Each document type is made by the command a user runs (``python -m flowcert … --json`` in a fresh process), then
edited one way at a time: a leaf perturbed (a number :math:`x\mapsto 1.5x+0.25`, a word ``+"x"``, a boolean
negated, null to 0.5), a key removed, a key added, a list item removed or duplicated (a seeded sample of at most
``--max`` edits per type). Each edited document is re-checked in process by
:func:`flowcert.recheck.recheck_document` (with ``--checkpoint`` for pretrained ones) and classified:

* ``refused``: exit 3 would be given;
* ``harmless``: accepted, and the command run again on the edited document's own inputs gives the edited
  document's derived fields (the edit changed an input that no derived field depends on, such as ``t_end``
  without a run), or the edit is in certificate data whose checker re-proved the claim from it;
* ``record``: accepted, the edit is in a record (a run's output) that ``--rerun`` does not re-run (a pretrained
  or sweep document); refused by ``--rerun`` counts as refused;
* ``accepted-false``: accepted, and the document says something its inputs do not give.

The independent check of ``harmless`` re-runs the producing command (``verify_document`` on the edited
``params``), never the re-checker.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
Path_ = tuple[Any, ...]


def _cli(*args: str, cwd: str | None = None) -> Any:
    proc = subprocess.run([sys.executable, "-m", "flowcert", *args, "--json"], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{args}: exit {proc.returncode}: {proc.stderr[-400:]}")
    return json.loads(proc.stdout)


def documents(tmp: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    """``type -> (document, recheck keyword arguments)``, each made by its command."""
    from flowcert.pretrained.binding import open_checkpoint
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    out: dict[str, tuple[Any, dict[str, Any]]] = {}
    for name, f, extra in [("verify gaussian", "gaussian_stable_2d.json", ()),
                           ("verify gaussian (blow-up)", "cli/gaussian_blowup_2d.json", ()),
                           ("verify gaussian --simulate", "cli/gaussian_bistable_pd_2d.json", ("--simulate",)),
                           ("verify attention", "attention/multistable_d3.json", ()),
                           ("verify rnn", "rnn/gru_small.json", ())]:
        out[name] = (_cli("verify", name.split()[1], "--params", str(DATA / f), *extra), {})
    out["equilibria attention"] = (_cli("equilibria", "attention", "--params", str(DATA / "attention/multistable_d3.json")), {})
    spec = {"Sigma_inf": [[2.0, 0.5], [0.5, 1.0]], "K": [[0.0, 1.0], [-1.0, 0.0]], "V": [[1.0, 0.0], [0.0, 1.0]],
            "B": [[0.5, 0.0], [0.0, 0.25]]}
    (tmp / "spec.json").write_text(json.dumps(spec))
    out["design gaussian"] = (_cli("design", "gaussian", "--spec", str(tmp / "spec.json")), {})
    start = dict(json.loads((DATA / "gaussian_stable_2d.json").read_text()), Sigma0=[[1.0, 0.0], [0.0, 2.0]])
    (tmp / "start.json").write_text(json.dumps(start))
    (tmp / "target.json").write_text(json.dumps({"mu": [1.0, 0.5], "Sigma": [[2.0, 0.3], [0.3, 1.0]]}))
    out["reach gaussian"] = (_cli("reach", "gaussian", "--params", str(tmp / "start.json"), "--target",
                                  str(tmp / "target.json"), "--T", "1.0"), {})
    cfg, T = random_tensors("bert", d=16, n_heads=2, n_layers=2, d_ff=32, seed=3)
    ck = write_checkpoint(tmp / "bert", cfg, T, tokenizer_vocab=["[UNK]", "the", "cat", "sat", "on", "mat"])
    ref = open_checkpoint(str(ck))
    out["pretrained heads"] = (_cli("pretrained", "heads", "--model", str(ck)), {"checkpoint": ref})
    proc = subprocess.run([sys.executable, "-m", "flowcert", "pretrained", "verify", "--model", str(ck), "--system",
                           "gaussian", "--layers", "0", "--heads", "0", "--out-dir", str(tmp / "sweep"), "--json"],
                          capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    line = json.loads(proc.stdout.splitlines()[0])
    out["pretrained verify line"] = (line, {"checkpoint": ref, "origin": str(tmp / "sweep" / "lines.jsonl")})
    return out


def nodes(o: Any, p: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every node of a JSON value with its path (a tuple of keys and indices), the value itself first."""
    yield p, o
    if isinstance(o, dict):
        for k, v in o.items():
            yield from nodes(v, p + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from nodes(v, p + (i,))


def leaves(o: Any) -> Iterator[tuple[Path_, Any]]:
    """The nodes of a JSON value that are neither objects nor lists, with their paths."""
    return ((p, v) for p, v in nodes(o) if not isinstance(v, (dict, list)))


def path_text(p: Path_) -> str:
    """A path as the JSON path recheck names (``$.theorems[0].id``)."""
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in p)


def perturbed(v: Any) -> Any:
    """A leaf changed: a number to 1.5x + 0.25, a word + "x", a boolean negated, null to 0.5."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v * 1.5 + 0.25
    if isinstance(v, str):
        return v + "x"
    return 0.5


def edits(doc: Any) -> Iterator[tuple[str, Path_, Callable[[Any], None]]]:
    """Every edit of ``doc``: (kind, path, function editing a copy in place)."""
    def at(d: Any, p: Path_) -> Any:
        for k in p:
            d = d[k]
        return d

    for p, v in leaves(doc):
        if p:
            yield "perturbed", p, lambda d, p=p, v=v: at(d, p[:-1]).__setitem__(p[-1], perturbed(v))
    for p, node in nodes(doc):
        if isinstance(node, dict):
            for k in node:
                yield "removed", p + (k,), lambda d, p=p, k=k: at(d, p).pop(k)
            yield "added", p + ("extra",), lambda d, p=p: at(d, p).__setitem__("extra", 1)
        elif isinstance(node, list) and node:
            yield "item removed", p + (0,), lambda d, p=p: at(d, p).pop(0)
            yield "item duplicated", p + (0,), lambda d, p=p: at(d, p).append(copy.deepcopy(at(d, p)[0]))


def _rebuilt(doc: Any) -> Any:
    """The producing command run again on ``doc``'s own inputs (verify, design and reach documents), or None."""
    from flowcert.documents import plain, verify_document

    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict):
        return None
    try:
        if "theorems" in doc:
            return plain(verify_document(doc["system"], doc["params"], simulate="simulation" in doc))
        if "target" in doc and "T" in doc:
            from flowcert.gaussian.reach import run

            with tempfile.TemporaryDirectory() as tmp:
                start, target = Path(tmp, "start.json"), Path(tmp, "target.json")
                d = len(doc["params"].get("mu0") or [])
                zeros = {"A": [[0.0] * d] * d, "B": [[0.0] * d] * d, "V": [[0.0] * d] * d, "b": [0.0] * d}
                start.write_text(json.dumps({**zeros, **doc["params"]}))  # reach reads mu0, Sigma0 only
                target.write_text(json.dumps(doc["target"]))
                return plain(run(str(start), str(target), float(doc["T"])))
    except Exception:  # noqa: BLE001 - inputs the command refuses: not rebuildable, so not harmless
        return None
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal words and structure; numbers within 1e-3 relative or 1e-6 absolute (runs of the same inputs)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= max(1e-3 * max(abs(a), abs(b)), 1e-6)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _class_of(doc: Any, p: Path_) -> str:
    """The class of path ``p`` of ``doc``: that of its first prefix that is not derived (a record's or a
    certificate's leaves are the record's); a sweep line's ``result`` is classified as the document it is."""
    from flowcert.rederive import field_class

    if p[:1] == ("result",) and isinstance(doc, dict) and isinstance(doc.get("result"), dict):
        doc, p = doc["result"], p[1:]
    system = doc.get("system") if isinstance(doc, dict) else None
    for i in range(1, len(p) + 1):
        cls = field_class(path_text(p[:i]), system, doc)
        if cls != "derived":
            return cls
    return "derived"


def classify(doc: Any, kind: str, p: Path_, edit: Callable[[Any], None], kw: dict[str, Any]) -> str:
    """``refused``, ``harmless``, ``record`` or ``accepted-false`` for one edit (module docstring)."""
    from flowcert.recheck import recheck_document

    d = copy.deepcopy(doc)
    edit(d)
    if recheck_document(copy.deepcopy(d), **kw).refused:
        return "refused"
    if recheck_document(copy.deepcopy(d), rerun=True, **kw).refused:
        return "refused"
    cls = _class_of(doc, p)
    if cls == "certified" and kind == "perturbed":
        return "harmless"  # the checker re-proved the claim from the edited data
    if cls == "record":
        return "record"
    rebuilt = _rebuilt(d)
    if rebuilt is not None and rebuilt.keys() == d.keys() and all(
            _same(rebuilt[k], d[k]) for k in d if k != "flowcert" and _class_of(d, (k,)) == "derived"):
        return "harmless"  # the records were compared by --rerun above
    return "accepted-false"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=300, help="edits per document type (seeded sample)")
    ap.add_argument("--only", default=None, help="one document type")
    ap.add_argument("--json", default=None, help="write the table and every accepted edit here")
    args = ap.parse_args()
    rng = random.Random(44)
    table: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (doc, kw) in documents(Path(tmp)).items():
            if args.only and args.only != name:
                continue
            all_edits = list(edits(doc))
            sample = rng.sample(all_edits, min(args.max, len(all_edits)))
            counts = {"tried": 0, "refused": 0, "harmless": 0, "record": 0, "accepted-false": 0}
            accepted: list[str] = []
            for kind, p, edit in sample:
                try:
                    verdict = classify(doc, kind, p, edit, kw)
                except Exception as exc:  # noqa: BLE001 - a crash of the re-checker is a finding too
                    verdict = "accepted-false"
                    accepted.append(f"{kind} {path_text(p)}: recheck raised {type(exc).__name__}: {exc}")
                counts["tried"] += 1
                counts[verdict] += 1
                if verdict in ("accepted-false", "record"):
                    accepted.append(f"{verdict}: {kind} {path_text(p)}")
            table[name] = {**counts, "accepted": accepted}
            print(json.dumps({"type": name, **counts}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
