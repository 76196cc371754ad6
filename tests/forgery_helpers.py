"""Shared by the forgery tests of issue 38 (tests/test_bound_*.py): the CLI in a fresh process, the path
of a hypothesis in a document, the refusals of a document, and all forgeries re-checked in one process."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from flowcert.recheck import recheck_document


def flowcert(*args: str) -> subprocess.CompletedProcess:
    """``python -m flowcert ARGS`` in a fresh process."""
    return subprocess.run([sys.executable, "-m", "flowcert", *args], capture_output=True, text=True, timeout=900)


def hyp(doc: dict, theorem: str, name: str) -> tuple[str, dict]:
    """The JSON path and the record of hypothesis ``name`` of entry ``theorem``."""
    for i, t in enumerate(doc["theorems"]):
        if t["id"] == theorem:
            for j, h in enumerate(t["hypotheses"]):
                if h["name"] == name:
                    return f"$.theorems[{i}].hypotheses[{j}]", h
    raise KeyError((theorem, name))


def refusals(doc: dict) -> set[str]:
    """The JSON paths refused by an in-process recheck of ``doc``."""
    return {p for p, _, _ in recheck_document(doc).refused}


def assert_refused_at(doc: dict, forge: Callable[[dict], list[str]]) -> None:
    """Forge a copy of ``doc`` with ``forge`` (which returns the paths it must be refused at) and check that
    an in-process recheck refuses every one of them."""
    forged = copy.deepcopy(doc)
    want = forge(forged)
    got = refusals(forged)
    for p in want:
        assert p in got, (p, sorted(got))


def remove_every_certificate(doc: dict, skip: tuple[str, ...] = ()) -> list[str]:
    """Set every hypothesis (but those named in ``skip``) to ``holds`` with no certificate and every entry
    to ``applies``; the paths of the hypotheses changed."""
    paths = []
    for i, t in enumerate(doc["theorems"]):
        for j, h in enumerate(t["hypotheses"]):
            if h["name"] in skip:
                continue
            h["certificate"], h["status"] = None, "holds"
            paths.append(f"$.theorems[{i}].hypotheses[{j}]")
        t["applies"] = True
    return paths


def false_claims(doc: dict) -> list[str]:
    """Replace the claim of every hypothesis certificate by a false sentence; their paths, in order."""
    paths = []
    for i, t in enumerate(doc["theorems"]):
        for j, h in enumerate(t["hypotheses"]):
            if h.get("certificate"):
                h["certificate"]["claim"] = "1 = 0"
                paths.append(f"$.theorems[{i}].hypotheses[{j}].certificate")
    return paths


def eighths(draw: Any, lo: float, hi: float) -> float:
    """A multiple of 1/8 in [lo, hi] (an exact float) from a hypothesis ``draw``."""
    from hypothesis import strategies as st

    return draw(st.integers(int(lo * 8), int(hi * 8))) / 8.0


def assert_all_refused_through_the_cli(forgeries: list[tuple[dict, Callable[[dict], list[str]]]], tmp: Path,
                                       *extra: str) -> None:
    """Each ``(document, forge)``: forge a copy, write it, then re-check all in one fresh process (with the
    options ``extra``): exit 3, and every file refused at (at least) the paths its forgery names."""
    files, wants = [], {}
    for doc, forge in forgeries:
        forged = copy.deepcopy(doc)
        wants[forge.__name__] = forge(forged)
        f = tmp / f"{forge.__name__}.json"
        f.write_text(json.dumps(forged))
        files.append(str(f))
    out = flowcert("recheck", *files, "--json", *extra)
    assert out.returncode == 3
    refused = json.loads(out.stdout)["refused"]
    for name, paths in wants.items():
        mine = {r["path"] for r in refused if Path(r["file"]).stem == name}
        assert set(paths) <= mine, (name, paths, mine)
