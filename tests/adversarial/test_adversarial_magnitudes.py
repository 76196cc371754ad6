"""Extreme magnitudes through ``verify gaussian`` and ``verify attention`` (issue 33, item 5).

Every case of :mod:`adv_magnitudes` (each structure -- diagonal, rotation, defective/Jordan, random --
at 1e+-150 and 1e+-308, one key at a time) must

* end within the documented budget (:data:`flowcert.limits.COMMAND_SECONDS` of CPU time, watched
  by :func:`adv_run.cpu_limit`), and
* either run (a strict-JSON document whose every ``holds``, certificate and certified regime the
  independent oracle of :mod:`adv_oracle` confirms, for gaussian), or be refused by the limits as
  bad input: one line, naming the key.

The default suite runs :data:`adv_magnitudes.DEFAULT` (the issue's cases and one attention case,
about 20 s of CPU); the whole table (about 70 cases, minutes) is ``slow``. ``verify attention
--simulate`` runs on the attention cases under ``slow`` too.
"""

from __future__ import annotations

import contextlib
import io
import json
import time

import pytest

from adv_magnitudes import DEFAULT, attention_cases, gaussian_cases
from adv_oracle import judge
from adv_run import TALLY, Timeout, cpu_limit, run_verify

from flowcert import cli
from flowcert.errors import ParamError
from flowcert.limits import COMMAND_SECONDS


def _marked(cases: list[tuple[str, dict]]) -> list:
    return [pytest.param(name, raw, id=name, marks=() if name in DEFAULT else (pytest.mark.slow,)) for name, raw in cases]


@pytest.mark.parametrize("name, raw", _marked(gaussian_cases()))
def test_gaussian_magnitudes_end_within_the_budget(name: str, raw: dict) -> None:
    TALLY.add_inputs("verify: extreme magnitudes (in-process)")
    t0 = time.process_time()
    with cpu_limit(COMMAND_SECONDS):
        o = run_verify(raw, timeout=20 * COMMAND_SECONDS)  # the wall clock only catches a hang
    if isinstance(o.error, ParamError):  # refused by the limits: one line naming the key
        assert "\n" not in str(o.error) and o.error.key is not None
        return
    assert o.error is None, f"{type(o.error).__name__}: {o.error} after {time.process_time() - t0:.1f} s CPU"
    jd = judge(raw, o.doc, {})
    TALLY.record(name, jd, known_bug=False, regime=o.doc["regime"])
    assert not jd.false_holds and not jd.regime_errors and not jd.bad_certificates, jd.describe()
    assert not (o.doc.get("consistency") or {}).get("conflicts"), o.doc["consistency"]


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("simulate", [pytest.param(False, id="verify"), pytest.param(True, id="simulate", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name, raw", _marked(attention_cases()))
def test_attention_magnitudes_end_within_the_budget(name: str, raw: dict, simulate: bool, tmp_path) -> None:
    TALLY.add_inputs("verify attention: extreme magnitudes (in-process)")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw))
    argv = ["verify", "attention", "--params", str(path), "--json"] + (["--simulate"] if simulate else [])
    try:
        with cpu_limit(COMMAND_SECONDS):
            code, out, err = _cli(argv)
    except Timeout as exc:
        pytest.fail(f"verify attention ran past the budget: {exc}")
    assert code in (0, 2), err
    if code == 2:
        assert err.count("\n") == 1 and "internal" not in err and out == ""
        return
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc["system"] == "attention" and all(h["status"] in ("holds", "fails", "unknown")
                                                for t in doc["theorems"] for h in t["hypotheses"])
