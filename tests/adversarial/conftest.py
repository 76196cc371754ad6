"""Fixtures of the adversarial suite and its end-of-run summary.

``--full`` (registered in ``tests/conftest.py``) scales the suite up: every case of
``adv_cases.CASES`` (the ``full_only`` ones are marked ``slow``), more hypothesis examples, more CLI
subprocess runs. The tally of everything tried is printed at the end of the run and written as JSON
to ``$TMPDIR/flowcert-adversarial-summary.json`` (``tempfile.gettempdir()``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # adv_* helper modules (no __init__.py in tests/)

from adv_run import TALLY  # noqa: E402

SUMMARY = Path(tempfile.gettempdir()) / "flowcert-adversarial-summary.json"


@pytest.fixture(scope="session")
def full(request: pytest.FixtureRequest) -> bool:
    """True under ``--full``."""
    try:
        return bool(request.config.getoption("--full"))
    except ValueError:  # option not registered (tests/conftest.py missing)
        return False


@pytest.fixture(scope="session")
def tally():
    return TALLY


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not TALLY.inputs:
        return
    data = TALLY.to_json()
    try:
        SUMMARY.write_text(json.dumps(data, indent=1))
        where = str(SUMMARY)
    except OSError as exc:
        where = f"(not written: {exc})"
    tr = terminalreporter
    tr.section("flowcert adversarial summary")
    tr.write_line(f"inputs tried: {data['inputs_tried']}  {data['inputs_by_kind']}")
    tr.write_line(f"verdicts: {data['verdicts']}  holds checked independently: {data['holds_checked_independently']}, "
                  f"holds without an oracle: {data['holds_without_oracle']}, certificates re-checked: "
                  f"{data['certificates_rechecked']}")
    tr.write_line(f"regimes: {data['regimes']}")
    tr.write_line(f"false verdicts (false holds + false certified regimes + rejected certificates), outside known "
                  f"bugs: {data['false_verdicts']}; false fails: {len(data['false_fails'])}")
    for line in data["false_holds"] + data["false_regimes"] + data["rejected_certificates"] + data["false_fails"]:
        tr.write_line(f"  FALSE: {line}")
    tr.write_line(f"known-bug findings (xfail cases): {len(data['known_bug_findings (xfail cases)'])}; "
                  f"crashes: {len(data['crashes'])}")
    for line in data["known_bug_findings (xfail cases)"] + data["crashes"]:
        tr.write_line(f"  known/crash: {line}")
    tr.write_line(f"summary JSON: {where}")


def pytest_collection_modifyitems(session, config, items):
    """The adversarial summary runs last, whatever the file order or selection."""
    last = [it for it in items if it.nodeid.split("::")[0].endswith("adversarial/test_zz_summary.py")]
    if last:
        items[:] = [it for it in items if it not in last] + last
