"""Last in the directory (file order): the totals over everything the adversarial suite tried.

The per-case tests already fail on their own false verdicts; this asserts the issue's headline
number -- false verdicts found outside the cases marked as open bugs -- is 0, and prints the counts
(also written to ``$TMPDIR/flowcert-adversarial-summary.json`` by the conftest).
"""

from __future__ import annotations

import json

from adv_run import TALLY


def test_no_false_verdicts_in_total():
    data = TALLY.to_json()
    print("\nflowcert adversarial totals:", json.dumps({k: data[k] for k in
                                                     ("inputs_tried", "inputs_by_kind", "verdicts", "false_verdicts")}))
    assert TALLY.false_verdicts == 0, json.dumps(data, indent=1)
    assert not data["false_holds"], data["false_holds"]
