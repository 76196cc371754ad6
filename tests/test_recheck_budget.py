"""``flowcert recheck`` stays within the limits table (issue 44, item 8) and ``--strict`` names every unbound
certificate (issue 47, item 6).

* A certificate whose data call for more exact work than ``LIMITS['recheck:seconds']`` / ``['recheck:bytes']``
  (random 1000-digit rationals: a common denominator of hundreds of thousands of bits) is refused before any
  exact arithmetic: exit 2, one line naming the file, the certificate and the budget, in seconds.
* The certificates flowcert writes at the largest sizes it writes them (float matrices at d = 128, the exact
  rows of the characteristic polynomial, and d = 768, GPT-2's width) are estimated well inside the budget.
* ``recheck --strict`` names each unbound certificate by file and JSON path with why (text and ``--json``).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from flowcert import limits
from flowcert.certificates import budget
from flowcert.certificates.claims import claim
from flowcert.certificates.core import encode

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
SECONDS, BYTES = float(limits.LIMITS["recheck:seconds"]), float(limits.LIMITS["recheck:bytes"])


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowcert", *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=300)


def hostile_pd(n: int, digits: int = 1000, seed: int = 0) -> dict:
    """A ``pd`` certificate of a symmetric n x n matrix of random ``digits``-digit rationals."""
    rng = random.Random(seed)
    M = [[""] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            M[i][j] = M[j][i] = f"{rng.randrange(10**(digits - 1), 10**digits)}/{rng.randrange(10**(digits - 1), 10**digits)}"
    data = {"M": M, "margin": "0"}
    return {"kind": "pd", "claim": claim("pd", data, {}), "checker": "exact-ldl", "data": data}


def float_pd(d: int, seed: int = 0) -> dict:
    """A ``pd`` certificate as flowcert writes it for a float matrix (``"p/q"`` texts of its floats)."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((d, d)) / np.sqrt(d)
    data = {"M": [list(r) for r in encode(G @ G.T + np.eye(d) * 1e-3)], "margin": "0"}
    return {"kind": "pd", "claim": claim("pd", data, {}), "checker": "exact-ldl", "data": data}


@pytest.mark.parametrize("n", [20, 30, 60])
def test_random_1000_digit_rationals_are_estimated_over_the_budget_in_a_moment(n):
    data = hostile_pd(n)["data"]
    start = time.process_time()
    cost = budget.exceeds(data, SECONDS, BYTES)
    assert time.process_time() - start < 5
    assert cost is not None and cost.rows == n and cost.bits > 10_000
    assert cost.seconds > SECONDS or cost.bytes > BYTES


def test_a_short_decimal_with_a_huge_exponent_counts_the_digits_of_its_value():
    cost = budget.estimate({"M": [["1e-999999999", "0"], ["0", "1"]], "margin": "0"})
    assert cost.seconds == float("inf") and "decimal exponent" in cost.describe()
    assert budget.estimate({"M": [["1e-300", "0"], ["0", "1"]]}).bits > 996  # 10^300 needs 997 bits
    assert budget.estimate({"M": [["15/2", "0"], ["0", "1"]]}).bits < 16


@pytest.mark.parametrize("d", [128, 768])
def test_the_certificates_flowcert_writes_at_its_largest_sizes_are_inside_the_budget(d):
    cost = budget.estimate(float_pd(d)["data"])
    assert cost.rows == d and cost.bits < 1_300  # floats share power-of-two denominators
    assert cost.seconds < SECONDS / 4 and cost.bytes < BYTES / 2, cost.describe()


def test_recheck_refuses_the_hostile_certificate_with_exit_2_and_one_line(tmp_path):
    path = tmp_path / "pd20.json"
    path.write_text(json.dumps(hostile_pd(20)))
    start = time.monotonic()
    proc = run_cli("recheck", str(path), "--json")
    assert time.monotonic() - start < 60  # before the budget: minutes and a gigabyte of exact work not started
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    line = proc.stderr
    assert "pd20.json" in line and "$ (pd)" in line and "re-check budget" in line
    assert "LIMITS['recheck:seconds']" in line and "20 row(s)" in line


def test_certificates_each_inside_the_budget_are_refused_when_their_sum_is_not(tmp_path, monkeypatch):
    from flowcert.recheck import recheck_files
    from flowcert.schema import ParamError

    cert = float_pd(128)
    one = budget.estimate(cert["data"]).seconds
    monkeypatch.setitem(limits.LIMITS, "recheck:seconds", 2.5 * one)
    path = tmp_path / "three.jsonl"
    path.write_text("\n".join(json.dumps(cert) for _ in range(3)) + "\n")
    with pytest.raises(ParamError) as err:
        recheck_files([str(path)])
    assert "line 3: $ (pd) with the certificates before it exceeds the re-check budget" in str(err.value)


def test_a_refused_budget_is_never_a_verdict(tmp_path):
    """The budget refuses the input (exit 2): no recheck document, no 'accepted', whatever else the file holds."""
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(float_pd(4)) + "\n" + json.dumps(hostile_pd(20)) + "\n")
    proc = run_cli("recheck", str(path), "--json")
    assert proc.returncode == 2 and proc.stdout == "" and "line 2: $ (pd)" in proc.stderr


def _bare(tmp_path: Path) -> Path:
    data = {"M": [["2", "0"], ["0", "3"]], "margin": "1/2"}
    path = tmp_path / "bare.json"
    path.write_text(json.dumps({"kind": "pd", "claim": claim("pd", data, {}), "checker": "exact-ldl", "data": data}))
    return path


def test_strict_names_each_unbound_certificate_and_why(tmp_path):
    path = _bare(tmp_path)
    proc = run_cli("recheck", str(path), "--strict")
    assert proc.returncode == 3, proc.stderr
    assert "STRICT: 1 unbound certificate(s):" in proc.stdout
    assert f"UNBOUND {path} $: no subject: it proves its claim only for the data it carries" in proc.stdout
    proc = run_cli("recheck", str(path), "--strict", "--json")
    doc = json.loads(proc.stdout)
    assert doc["unbound"] == 1 and doc["accepted"] == 1  # the former keys, unchanged
    assert doc["unbound_certificates"] == [{"file": str(path), "line": None, "path": "$",
                                            "reason": "no subject: it proves its claim only for the data it carries"}]


def test_strict_names_unbound_certificates_of_json_lines_and_unchecked_ones(tmp_path):
    from flowcert.recheck import recheck_files
    from flowcert.recheck_text import UNCHECKED

    bare = json.loads(_bare(tmp_path).read_text())
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(bare) + "\n" + json.dumps(bare) + "\n")
    out = recheck_files([str(path)], strict=True)
    assert [(u["line"], u["path"]) for u in out.unbound_certificates] == [(1, "$"), (2, "$")]
    assert out.unbound == len(out.unbound_certificates) == 2 and not out.ok
    assert f"UNBOUND {path}:2 $: no subject" in out.summary()
    # a certificate that names inputs the document does not carry: unbound, named, not checked
    from flowcert.recheck import Recheck

    hand = Recheck(files=["a.json"], unbound=1, strict=True, unchecked=["a.json $.x.certificate"])
    assert f"UNBOUND a.json $.x.certificate: {UNCHECKED}" in hand.summary()


def test_parameters_subjects_are_re_derived_from_are_estimated_too_in_a_sweep_line(tmp_path):
    """A certificate may carry no matrix and name ``params.Sigma0`` as its subject: the parameters are estimated
    as one more certificate, in a document and in a sweep line's ``result``."""
    from flowcert.recheck import recheck_files
    from flowcert.schema import ParamError

    line = {"file": "a.json", "index": 0, "status": "ok", "exit_code": 0, "error": None,
            "result": {"flowcert": "0.1.0", "system": "gaussian", "params": {"Sigma0": hostile_pd(20)["data"]["M"]}}}
    path = tmp_path / "sweep.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(ParamError) as err:
        recheck_files([str(path)])
    assert "line 1: $.result.params (parameters) exceeds the re-check budget" in str(err.value)


def test_the_python_api_recheck_keeps_the_budget_too():
    """``recheck_document`` (the Python API, and ``Result.recheck``) estimates before any exact work, as the CLI
    does: the 30 x 30 certificate of 1000-digit rationals raises the one-line ParamError naming the budget, at
    once, instead of running out of memory in flint; ``budget=False`` is only for callers that estimated already."""
    from flowcert.errors import ParamError
    from flowcert.recheck import recheck_document

    t0 = time.process_time()
    with pytest.raises(ParamError, match=r"re-check budget"):
        recheck_document(hostile_pd(30))
    assert time.process_time() - t0 < 30


def test_a_resumed_line_over_the_budget_is_not_trusted(tmp_path):
    """``--resume`` re-checks each old line before skipping its file; a line whose certificates exceed the budget
    is not re-checked, so its file is run again (never trusted, never an unbounded exact run)."""
    from flowcert.sweep import done_files
    from flowcert.sweeplines import file_digest

    f = tmp_path / "p.json"
    f.write_text(json.dumps(json.loads((ROOT / "tests/data/gaussian_stable_2d.json").read_text())))
    line = {"file": str(f), "index": 0, "status": "ok", "exit_code": 0, "error": None, "seconds": 0.1,
            "provenance": None, "sha256": file_digest(str(f)), "result": {"flowcert": "0.1.0", "system": "gaussian",
                                                                "certificates": [hostile_pd(30)]}}
    resume = tmp_path / "old.jsonl"
    resume.write_text(json.dumps(line) + "\n")
    assert done_files(str(resume)) == set()
