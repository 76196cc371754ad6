"""The totals over everything the adversarial suite tried (run last whatever the file order).

The per-case tests already fail on their own false verdicts; this asserts the issue's headline
number -- false verdicts found outside the cases marked as open bugs -- is 0, and prints the counts
(also written to ``$TMPDIR/flowcert-adversarial-summary.json`` by the conftest).

``tests/adversarial/conftest.py`` moves this test to the end of the session, so it does not
depend on file order. When it runs with nothing tried before it (the file alone, or the other
adversarial files deselected), it judges a baseline of :data:`BASELINE` catalogue cases itself:
a summary over zero inputs would pass vacuously, so it asserts that inputs were tried.
"""

from __future__ import annotations

import json

from adv_cases import CASES
from adv_oracle import judge
from adv_run import TALLY, run_verify

#: Ordinary (not known-bug, not --full-only) catalogue cases judged when nothing ran before.
BASELINE = 3


def _baseline() -> None:
    cases = [c for c in CASES if not c["bug"] and not c["full_only"]][:BASELINE]
    for c in cases:
        TALLY.add_inputs("verify: summary baseline (in-process)")
        o = run_verify(c["raw"], timeout=c["timeout"])
        assert o.error is None, f"{c['name']}: verify raised {type(o.error).__name__}: {o.error}"
        TALLY.record(c["name"], judge(c["raw"], o.doc, c["meta"]), known_bug=False, regime=o.doc["regime"])


def test_no_false_verdicts_in_total():
    if not TALLY.inputs:
        _baseline()
    data = TALLY.to_json()
    print("\nflowcert adversarial totals:", json.dumps({k: data[k] for k in
                                                     ("inputs_tried", "inputs_by_kind", "verdicts", "false_verdicts")}))
    assert data["inputs_tried"] > 0, "the summary judged no input at all"
    assert sum(data["verdicts"].values()) > 0, "no verdict was judged"
    assert TALLY.false_verdicts == 0, json.dumps(data, indent=1)
    assert not data["false_holds"], data["false_holds"]
