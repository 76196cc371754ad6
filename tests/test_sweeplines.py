"""Sweep lines bound to their files and consistent in themselves (issue 44, item 5), and --resume re-runs a line
that does not re-check instead of trusting it."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from flowcert import sweep
from flowcert.recheck import recheck_files

DATA = Path(__file__).parent / "data"


@pytest.fixture()
def swept(tmp_path, monkeypatch):
    for name in ("gaussian_stable_2d.json", "gaussian_3d.json"):
        shutil.copy(DATA / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    buf = io.StringIO()
    assert sweep.run("gaussian", ["."], progress=False, out=buf) == 0
    lines = [json.loads(s) for s in buf.getvalue().splitlines()]
    assert all(len(rec["sha256"]) == 64 for rec in lines)
    return tmp_path, lines


def write(path: Path, lines) -> str:
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    return str(path)


def refused_paths(path: str) -> list[tuple[int | None, str]]:
    return [(r.line, r.path) for r in recheck_files([path]).refused]


def test_untouched_sweep_rechecks(swept):
    tmp, lines = swept
    out = recheck_files([write(tmp / "out.jsonl", lines)])
    assert not out.refused and not out.unread


def test_forged_lines_are_refused(swept):
    tmp, (a, b) = swept
    swapped = [{**a, "file": b["file"]}, {**b, "file": a["file"]}]
    assert {p for _, p in refused_paths(write(tmp / "swap.jsonl", swapped))} >= {"$.sha256"}
    # the same swap with the digests swapped too: the parameters are not the file's
    both = [{**a, "file": b["file"], "sha256": b["sha256"]}, {**b, "file": a["file"], "sha256": a["sha256"]}]
    assert {p for _, p in refused_paths(write(tmp / "both.jsonl", both))} >= {"$.result.params"}
    assert (2, "$.file") in refused_paths(write(tmp / "dup.jsonl", [a, a]))
    assert (1, "$.exit_code") in refused_paths(write(tmp / "st.jsonl", [{**a, "status": "bad_input"}, b]))
    assert (2, "$.index") in refused_paths(write(tmp / "ix.jsonl", [a, {**b, "index": a["index"]}]))


def test_resume_reruns_a_line_that_does_not_recheck(swept):
    tmp, (a, b) = swept
    forged = json.loads(json.dumps(a))
    forged["result"]["theorems"][0]["statement"] = "x"
    old = write(tmp / "old.jsonl", [forged, b])
    buf = io.StringIO()
    assert sweep.run("gaussian", ["."], resume=old, progress=False, out=buf) == 0
    assert [json.loads(s)["file"] for s in buf.getvalue().splitlines()] == [a["file"]]
    buf = io.StringIO()  # an honest old output: nothing left to run
    sweep.run("gaussian", ["."], resume=write(tmp / "ok.jsonl", [a, b]), progress=False, out=buf)
    assert buf.getvalue() == ""
