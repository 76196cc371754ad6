"""Sweeps of ``flowcert verify`` over many parameter files (serial, ``--jobs``, Dask LocalCluster).

Expected regimes are derived by hand (see tests/test_cli.py): ``cli/gaussian_certified_zero_2d.json``
has V = -I, B = I, A = -I, so Thm 4.7(2) gives Sigma -> 0; ``cli/gaussian_blowup_2d.json`` has
V = B = I, A = diag(1, 2), Sigma0 = I, so Thm 4.8(1) gives finite-time blow-up. A file with a
missing key is bad input (its own line, exit code 2) and must not stop the others.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from flowcert import cli, sweep

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "tests" / "data" / "cli"
EXPECTED = {"zero.json": "converges_zero", "blowup.json": "blows_up"}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    shutil.copy(CLI / "gaussian_certified_zero_2d.json", tmp_path / "zero.json")
    shutil.copy(CLI / "gaussian_blowup_2d.json", tmp_path / "blowup.json")
    raw = json.loads((CLI / "gaussian_blowup_2d.json").read_text())
    del raw["B"]
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    (tmp_path / "notes.txt").write_text("not a parameter file")
    return tmp_path


def _lines(text: str) -> dict[str, dict]:
    recs = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {Path(r["file"]).name: r for r in recs}


def _check(recs: dict[str, dict]) -> None:
    assert set(recs) == {"zero.json", "blowup.json", "broken.json"}
    for name, regime in EXPECTED.items():
        assert recs[name]["status"] == "ok" and recs[name]["exit_code"] == 0
        assert recs[name]["result"]["regime"]["Sigma"] == regime
        assert recs[name]["result"]["regime"]["basis"] == "certified"
    bad = recs["broken.json"]
    assert bad["status"] == "bad_input" and bad["exit_code"] == 2 and bad["result"] is None
    assert "'B'" in bad["error"]


def test_sweep_directory_one_line_per_set(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["verify", "gaussian", "--params", str(folder), "--json"])
    out, err = capsys.readouterr()
    assert code == 2  # one set was bad input; the others ran
    assert err == ""  # quiet under --json (and stderr is not a terminal here)
    _check(_lines(out))


def test_sweep_resume_skips_reported_files(folder: Path) -> None:
    previous = folder / "previous.jsonl"
    previous.write_text(json.dumps({"file": str(folder / "zero.json")}) + "\nnot json\n")
    out = io.StringIO()
    code = sweep.run("gaussian", [str(folder / "zero.json"), str(folder / "blowup.json")], resume=str(previous), out=out)
    recs = _lines(out.getvalue())
    assert code == 0 and set(recs) == {"blowup.json"}
    assert recs["blowup.json"]["result"]["regime"]["Sigma"] == "blows_up"


def test_single_file_keeps_the_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["verify", "gaussian", "--params", str(CLI / "gaussian_certified_zero_2d.json"), "--json"])
    out, _ = capsys.readouterr()
    doc = json.loads(out)  # exactly one JSON document, not JSON lines
    assert code == 0 and doc["system"] == "gaussian" and doc["regime"]["Sigma"] == "converges_zero"


def test_sweep_bad_options_exit_2(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", "gaussian", "--params", str(folder), "--jobs", "0"]) == 2
    assert cli.main(["verify", "gaussian", "--params", str(folder / "missing.json"), str(folder / "zero.json")]) == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and "missing.json" in err and "Traceback" not in err


def test_sweep_local_processes(folder: Path) -> None:
    out = io.StringIO()
    code = sweep.run("gaussian", [str(folder)], jobs=2, out=out)
    assert code == 2
    _check(_lines(out.getvalue()))


def test_sweep_on_dask_local_cluster(folder: Path) -> None:
    distributed = pytest.importorskip("dask.distributed", reason="dask.distributed not installed (extra 'flowcert[dask]')")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        out = io.StringIO()
        code = sweep.run("gaussian", [str(folder)], scheduler=cluster.scheduler_address, out=out)
    assert code == 2
    _check(_lines(out.getvalue()))


def _pool_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [int(pool["num_threads"]) for pool in threadpool_info()]


def test_local_workers_run_one_blas_thread() -> None:
    """The worker initializer caps the pools numpy already loaded (forked workers inherit them)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import numpy  # noqa: F401 - the BLAS pool must be loaded before the fork, as in a sweep

    from threadpoolctl import threadpool_limits

    sweep._warm("gaussian")
    with threadpool_limits(2):  # as a parent with a multi-threaded BLAS (CI's OMP_NUM_THREADS=1 would hide it)
        if max(_pool_threads(), default=1) < 2:
            pytest.skip("this BLAS cannot run two threads here")
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                 initializer=sweep._single_thread) as pool:
            threads = pool.submit(_pool_threads).result()
    assert threads and all(n == 1 for n in threads), threads


def test_summary_table_reads_full_and_compact_records_alike(tmp_path):
    """The per-head table of pretrained verify: the theorems that apply are those of the document,
    and a compact record (what the report keeps) gives the same table."""
    import shutil

    from flowcert import sweep as sw
    from flowcert.pretrained.command import compact_record, summary_table

    src = Path(__file__).parent / "data" / "gaussian_stable_2d.json"
    f = tmp_path / "L3_H7.json"
    shutil.copy(src, f)
    rec = sw.verify_file("gaussian", str(f))
    assert rec["status"] == "ok"
    table = summary_table([rec])
    row = table.splitlines()[2]
    applying = [t["id"] for t in rec["result"]["theorems"] if t["applies"]]
    assert row.startswith("| 3 | 7 | Sigma ") and all(tid in row for tid in applying)
    assert all(line.replace("\\|", "").count("|") == 7 for line in table.splitlines())  # six cells, pipes escaped
    small = compact_record(rec)
    assert summary_table([small]) == table
    assert len(json.dumps(small)) < len(json.dumps(rec))


def test_resume_streams_a_file_of_any_size_line_by_line(tmp_path, monkeypatch):
    """A whole-model sweep's JSON lines exceed the one-file cap (17 MB a line at d = 384): --resume
    reads them a line at a time; only a single over-long line is bad input."""
    from flowcert import files
    from flowcert.schema import OptionError

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 2000)
    old = tmp_path / "old.jsonl"
    lines = [json.dumps({"file": f"h{i}.json", "pad": "x" * 900}) for i in range(6)]  # 6 * ~930 bytes > 2000
    old.write_text("\n".join(lines[:3] + ["not json", '{"no_file": 1}'] + lines[3:]) + "\n")
    assert sweep.done_files(str(old)) == {f"h{i}.json" for i in range(6)}
    assert sweep.resumed_records(str(old), lambda r: len(r["pad"])) == [900] * 6
    old.write_text(lines[0] + "\n" + json.dumps({"file": "big.json", "pad": "x" * 3000}) + "\n")
    with pytest.raises(OptionError, match="line 2 is longer than the 2000 bytes"):
        sweep.done_files(str(old))


def test_grouped_table_merges_heads_with_the_same_answers(tmp_path):
    import copy
    import shutil

    from flowcert import sweep as sw
    from flowcert.pretrained.command import compact_record, grouped_table

    f = tmp_path / "L0_H0.json"
    shutil.copy(Path(__file__).parent / "data" / "gaussian_stable_2d.json", f)
    a = compact_record(sw.verify_file("gaussian", str(f)))
    b = {**copy.deepcopy(a), "file": str(tmp_path / "L0_H1.json"), "seconds": 9.0}
    assert grouped_table([a, b]).splitlines()[2].startswith("| all 2 | ")
    c = copy.deepcopy(b)
    c["file"] = str(tmp_path / "L1_H3.json")
    c["result"]["regime"]["Sigma"] = "blows_up"
    rows = grouped_table([a, b, c]).splitlines()[2:]
    assert len(rows) == 2 and rows[0].startswith("| 2: L0H0, L0H1 | ") and rows[1].startswith("| 1: L1H3 | Sigma blows_up")
