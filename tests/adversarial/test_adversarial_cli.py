"""The CLI contract on adversarial files, as a subprocess (docs/design.md, "The command line and JSON contract").

* Bad input (NaN, inf, asymmetric or indefinite Sigma0, bad shapes, ...): exit code 2, nothing on
  stdout, exactly one line on stderr that names the key, no traceback.
* Overflow-prone valid input: exit 0, one strict-JSON document on stdout that the oracle accepts,
  and no raw numpy ``RuntimeWarning`` on stderr.

Subprocess runs are few by default (each starts Python, sympy, scipy); the in-process
``flowcert.cli.main`` covers every rejected input cheaply, and ``--full`` runs them all as
subprocesses too.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from adv_cases import CASES, REJECTED, rejected_json_text
from adv_oracle import judge
from adv_run import TALLY, time_limit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUBPROCESS = {"A_nan", "Sigma0_asymmetric", "Sigma0_indefinite", "A_wrong_shape", "B_inf"}
BY_NAME = {c["name"]: c for c in CASES}


def _cli(path: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    TALLY.add_inputs("CLI subprocess")
    return subprocess.run([sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(path), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    f = tmp_path / f"{name}.json"
    f.write_text(text)
    return f


def _check_rejection(rc: int, out: str, err: str, key: str) -> None:
    assert rc == 2, (rc, out[-500:], err[-2000:])
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("flowcert: error: params: "), lines[0]
    assert f"key '{key}'" in lines[0], lines[0]


@pytest.mark.parametrize("name,spec,key", [
    pytest.param(n, s, k, id=n, marks=() if n in DEFAULT_SUBPROCESS else pytest.mark.slow) for n, s, k in REJECTED])
def test_cli_rejects_bad_input_subprocess(tmp_path, name, spec, key):
    r = _cli(_write(tmp_path, name, rejected_json_text(spec)))
    _check_rejection(r.returncode, r.stdout, r.stderr, key)


@pytest.mark.parametrize("name,spec,key", [pytest.param(n, s, k, id=n) for n, s, k in REJECTED])
def test_cli_rejects_bad_input_in_process(tmp_path, name, spec, key):
    from flowcert import cli

    TALLY.add_inputs("CLI in-process (rejected inputs)")
    f = _write(tmp_path, name, rejected_json_text(spec))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), time_limit(60):
        rc = cli.main(["verify", "gaussian", "--params", str(f), "--json"])
    _check_rejection(rc, out.getvalue(), err.getvalue(), key)


def _valid_run(tmp_path: Path, case_name: str) -> None:
    c = BY_NAME[case_name]
    r = _cli(_write(tmp_path, case_name, json.dumps(c["raw"])))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "RuntimeWarning" not in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda s: pytest.fail(f"non-strict JSON constant {s}"))
    jd = judge(c["raw"], doc, c["meta"])
    TALLY.record(f"cli:{case_name}", jd, known_bug=bool(c["bug"]), regime=doc["regime"])
    assert jd.false_total == 0 and not jd.false_fails, jd.describe()


@pytest.mark.parametrize("case_name", [
    "blowup_in_5e-13",
    "sigma_scaled_1e-150_stable",
    pytest.param("blowup_after_5e9", marks=pytest.mark.slow),
    pytest.param("stable_scaled_1e-300", marks=pytest.mark.slow),
    pytest.param("nonnormal_1e8", marks=pytest.mark.slow),
])
def test_cli_overflow_prone_input_answers_cleanly(tmp_path, case_name):
    _valid_run(tmp_path, case_name)


def test_cli_huge_scale_is_not_an_internal_error(tmp_path):
    """Regression (FIXED_HUGE_CRASH): entries ~1e150 overflow the field at t = 0; the CLI must still answer."""
    c = BY_NAME["stable_scaled_1e+150"]
    r = _cli(_write(tmp_path, "huge", json.dumps(c["raw"])))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda s: pytest.fail(f"non-strict JSON constant {s}"))
    jd = judge(c["raw"], doc, c["meta"])
    TALLY.record("cli:huge", jd, known_bug=False, regime=doc["regime"])
    assert jd.false_total == 0 and not jd.false_fails, jd.describe()


# FIXED (regression test), was: a successful verify printed a raw library warning on stderr: cvxpy's
#   'UserWarning: Solution may
#   be inaccurate...' from certificates/lmi.py:50 (problem.solve), plus the source line, for A = [[5e-10]],
#   B = [[1]], V = [[-1]], Sigma0 = [[1]]; numpy RuntimeWarnings were silenced but library UserWarnings were not.
def test_cli_success_prints_no_raw_warnings(tmp_path):
    c = BY_NAME["thm41_scalar_unstable_5e-10"]
    r = _cli(_write(tmp_path, "warn", json.dumps(c["raw"])))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Warning" not in r.stderr, r.stderr
