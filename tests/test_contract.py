"""The CLI + JSON contract, replayed (issue 33, item 7).

``docs/cli.md`` ("Key types") lists, per command, every documented key of its ``--json`` document
with its type. This test parses that table, runs the example commands once each (in-process), and
checks every row on every element of every list on the way: a key that changes type (as
``simulation.limit_class`` once did, from a string to a list) fails here. A ``required`` key must be
present; an optional one is checked when present. The table is the contract; the documents are
produced by the code under test and judged only against it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from flowcert import cli

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
GAUSS, ATT, RNN = DATA / "gaussian_stable_2d.json", DATA / "attention" / "multistable_d3.json", DATA / "rnn" / "gru_small.json"

COMMANDS: dict[str, list[str]] = {
    "verify gaussian": ["verify", "gaussian", "--params", str(GAUSS), "--simulate", "--json"],
    "verify attention": ["verify", "attention", "--params", str(ATT), "--simulate", "--json"],
    "verify rnn": ["verify", "rnn", "--params", str(RNN), "--json"],
    "kpflow analyze": ["kpflow", "analyze", "--params", str(RNN), "--json"],
    "equilibria attention": ["equilibria", "attention", "--params", str(ATT), "--json"],
    "simulate gaussian": ["simulate", "gaussian", "--params", str(GAUSS), "--json"],
    "simulate attention": ["simulate", "attention", "--params", str(ATT), "--json"],
}
KINDS = {"str": str, "int": int, "number": (int, float), "bool": bool, "null": type(None), "list": list, "object": dict}


def contract_rows() -> list[tuple[tuple[str, ...], str, str]]:
    """``(commands, key, type)`` of every row of the docs' key-types table."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## Key types", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("command", "---") or set(cells[0]) <= {"-"}:
            continue
        rows.append((tuple(c.strip() for c in cells[0].split(",")), cells[1], cells[2]))
    return rows


def _run(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(argv)
    return code, buf.getvalue()


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Each example command's document(s), run once (the sweep: two lines; recheck: of the verify document)."""
    docs: dict[str, list[dict[str, Any]]] = {}
    for name, argv in COMMANDS.items():
        code, out = _run(argv)
        assert code == 0, name
        docs[name] = [json.loads(out)]
    where = tmp_path_factory.mktemp("contract")
    saved = where / "verify.json"
    saved.write_text(json.dumps(docs["verify gaussian"][0]))
    code, out = _run(["recheck", str(saved), "--json"])
    assert code == 0
    docs["recheck"] = [json.loads(out)]
    bad, worse = where / "bad.json", where / "worse.json"
    bad.write_text(json.dumps({"A": [[1.0]]}))
    worse.write_text("{")
    code, out = _run(["verify", "gaussian", "--params", str(bad), str(worse), "--json"])
    docs["sweep"] = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(docs["sweep"]) == 2 and code == 2
    return docs


def _values(doc: Any, key: str) -> Iterator[tuple[bool, Any]]:
    """``(present, value)`` for ``key`` (``a.b``, ``a[].b``: every element) wherever its parent is an
    object; nothing where the parent is not (a ``null`` parent is judged by its own row)."""
    part, _, rest = key.partition(".")
    many = part.endswith("[]")
    name = part[:-2] if many else part
    if not isinstance(doc, dict):
        return
    if name not in doc:
        yield False, None
        return
    value = doc[name]
    if many and not isinstance(value, list):
        yield True, value  # reported as a type error of the list itself
        return
    for item in (value if many else [value]):
        if rest:
            yield from _values(item, rest)
        else:
            yield True, item


def _accepts(spec: str, value: Any) -> bool:
    spec = spec.replace(", required", "").replace("; required", "")
    if spec.startswith("one of "):
        return isinstance(value, str) and value in {s.strip() for s in spec[len("one of "):].split(",")}
    for kind in (k.strip() for k in spec.split(" or ")):
        if isinstance(value, bool) and kind not in ("bool",):
            continue
        if isinstance(value, KINDS[kind]):
            return True
    return False


def test_the_table_covers_every_command_and_parses() -> None:
    rows = contract_rows()
    named = {c for commands, _, _ in rows for c in commands}
    assert named >= set(COMMANDS) | {"recheck", "sweep", "*"}
    for _, key, spec in rows:
        base = spec.replace(", required", "").replace("; required", "")
        assert base.startswith("one of ") or all(k.strip() in KINDS for k in base.split(" or ")), (key, spec)
    keys = {(c, k) for commands, k, _ in rows for c in commands}
    # the keys of issue 33: limit_class a string, limit_classes its list, provenance on every sweep line
    assert ("verify attention", "simulation.limit_class") in keys and ("sweep", "provenance") in keys


@pytest.mark.parametrize("command", [*COMMANDS, "recheck", "sweep"])
def test_every_documented_key_has_its_documented_type(documents: dict[str, list[dict[str, Any]]], command: str) -> None:
    wrong = []
    checked = 0
    for commands, key, spec in contract_rows():
        if command not in commands and "*" not in commands:
            continue
        if command == "sweep" and "*" in commands:
            continue  # a sweep line has no version key: its documents (result) do
        for doc in documents[command]:
            for present, value in _values(doc, key):
                if not present:
                    if "required" in spec:
                        wrong.append(f"{key}: missing (documented {spec})")
                    continue
                checked += 1
                if not _accepts(spec, value):
                    wrong.append(f"{key}: {type(value).__name__} {str(value)[:40]!r} (documented {spec})")
    assert not wrong, f"{command}: " + "; ".join(wrong)
    assert checked > 0


def test_limit_class_is_the_first_of_limit_classes(documents: dict[str, list[dict[str, Any]]]) -> None:
    for name in ("verify attention", "simulate attention"):
        sim = documents[name][0]["simulation"]
        classes = sim["limit_classes"]
        assert sim["limit_class"] == (classes[0] if classes else None)


def test_a_type_change_is_caught() -> None:
    """The checker itself: the list that limit_class once was is refused, a string accepted."""
    rows = [r for r in contract_rows() if r[1] == "simulation.limit_class"]
    (spec,) = {r[2] for r in rows}
    assert _accepts(spec, "consensus") and _accepts(spec, None) and not _accepts(spec, ["consensus"])
    assert not _accepts("number or null", True) and _accepts("number", 3) and not _accepts("one of a, b", "c")
