"""``recheck --rerun``: records run again from the document's own parameters and compared (flowcert.rerun).

An honest document's records re-run equal within the stated tolerances; a forged verdict word, a moved
simulation state or a forged terminal error is refused; a record whose run cannot be repeated is counted,
never taken as re-checked.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from flowcert.documents import plain, verify_document
from flowcert.rerun import RERUN_FLOOR, RERUN_RTOL, compare_run, rerun

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def simulated() -> dict:
    return plain(verify_document("gaussian", json.loads((DATA / "gaussian_stable_2d.json").read_text()), simulate=True))


@pytest.fixture(scope="module")
def reach_doc(tmp_path_factory) -> dict:
    from flowcert.gaussian.reach import run

    tmp = tmp_path_factory.mktemp("reach")
    start = dict(json.loads((DATA / "gaussian_stable_2d.json").read_text()), Sigma0=[[1.0, 0.0], [0.0, 2.0]])
    (tmp / "start.json").write_text(json.dumps(start))
    (tmp / "target.json").write_text(json.dumps({"mu": [1.0, 0.5], "Sigma": [[2.0, 0.3], [0.3, 1.0]]}))
    return plain(run(str(tmp / "start.json"), str(tmp / "target.json"), 1.0))


def test_honest_records_rerun_equal(simulated, reach_doc):
    found, n, not_rerun = rerun(simulated)
    assert found == [] and n == 1 + len(simulated["theorems"]) and not_rerun == 0
    found, n, _ = rerun(reach_doc)
    assert found == [] and n == 3  # terminal error, integration, controls


def test_forged_records_are_refused(simulated, reach_doc):
    d = copy.deepcopy(simulated)
    i = next(i for i, t in enumerate(d["theorems"]) if t["cross_check"]["status"] == "agrees")
    d["theorems"][i]["cross_check"]["status"] = "disagrees"
    assert [p for p, _ in rerun(d)[0]] == [f"$.theorems[{i}].cross_check.status"]
    d = copy.deepcopy(simulated)
    d["simulation"]["mu_final"][0] += 0.01
    assert [p for p, _ in rerun(d)[0]] == ["$.simulation.mu_final[0]"]
    d = copy.deepcopy(reach_doc)
    d["terminal_error"]["Sigma"] = 0.5
    assert [p for p, _ in rerun(d)[0]] == ["$.terminal_error.Sigma"]
    d = copy.deepcopy(reach_doc)
    d["integration"]["status"] = "failed"
    assert "$.integration.status" in [p for p, _ in rerun(d)[0]]


def test_tolerance_is_scale_free():
    for k in (1e-12, 1.0, 1e9):
        out: list = []
        compare_run({"x": 1.0 * k, "y": 2e-14 * k}, {"x": (1.0 + 0.5 * RERUN_RTOL) * k, "y": 3e-14 * k}, "$", 1.0 * k, out)
        assert out == [], k
        compare_run({"x": 1.0 * k}, {"x": (1.0 + 3 * RERUN_RTOL) * k}, "$", 1e3 * RERUN_FLOOR * k, out)
        assert [p for p, _ in out] == ["$.x"], k


def test_recheck_rerun_in_a_fresh_process(reach_doc, tmp_path):
    """``flowcert recheck --rerun`` refuses a forged terminal error that plain ``recheck`` can only count as a record
    not re-run, and says so in its JSON."""
    import subprocess
    import sys

    forged = copy.deepcopy(reach_doc)
    forged["terminal_error"]["Sigma"] = 0.5
    f = tmp_path / "forged.json"
    f.write_text(json.dumps(forged))

    def recheck(*flags: str) -> tuple[int, dict]:
        proc = subprocess.run([sys.executable, "-m", "flowcert", "recheck", *flags, "--json", str(f)],
                              capture_output=True, text=True)
        return proc.returncode, json.loads(proc.stdout)

    rc, plain_out = recheck()
    assert rc == 0 and plain_out["records_rerun"] == 0 and plain_out["records_not_rerun"] > 0
    rc, rerun_out = recheck("--rerun")
    assert rc == 3 and [r["path"] for r in rerun_out["refused"]] == ["$.terminal_error.Sigma"]
    assert rerun_out["records_rerun"] == 3 and rerun_out["records_not_rerun"] == 0


def test_a_rank_in_a_record_is_not_measured_against_the_records_largest_number():
    """An rnn document's per-weight rank table is a record whose largest numbers are singular-value gaps (about
    1e14): a rank moved from 4 to 6.25 was inside the floor 1e-6 * 1e14 and re-ran "equal". Integers of a record
    are compared relatively only, so it is refused; the honest document re-runs equal."""
    import copy
    import json
    from pathlib import Path

    from flowcert.documents import plain, verify_document
    from flowcert.recheck import recheck_document

    raw = json.loads((Path(__file__).parent / "data" / "rnn" / "gru_small.json").read_text())
    doc = plain(verify_document("rnn", raw))
    assert not recheck_document(copy.deepcopy(doc), rerun=True).refused
    per_weight = doc["theorems"][2]["prediction"]["per_weight"]
    name = next(iter(per_weight))
    forged = copy.deepcopy(doc)
    forged["theorems"][2]["prediction"]["per_weight"][name]["rank_features"] += 2
    assert recheck_document(copy.deepcopy(forged)).refused == []  # a record: only --rerun can bind it
    assert recheck_document(forged, rerun=True).refused
