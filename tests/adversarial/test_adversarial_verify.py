"""Adversarial parameter sets through ``flowcert.gaussian.verify`` (in-process, as the CLI runs it).

For every case of ``adv_cases.CASES`` (near-marginal spectra, ill-conditioned and defective
matrices, non-symmetric B/V, singular Sigma0, scales 1e+-150 and beyond, blow-up within 1e-6 time
units and after ~1e9, time-varying coefficients with poles):

* nothing crashes, hangs (per-case wall-clock limit) or leaks a numpy ``RuntimeWarning``;
* the document is strict JSON (no NaN / inf);
* every ``holds`` is true, decided independently in ``adv_oracle`` (exact rational arithmetic,
  60-digit mpmath, a hand-written moment ODE), and so is every ``fails`` where an oracle exists;
* every embedded certificate passes ``flowcert.certificates.core.recheck``;
* a ``regime`` with ``basis: certified`` is true (blow-up bound, convergence class, mean).

Open defects are ``xfail(strict=True)`` with the reason ``BUG: ...``; cases that found defects fixed
since carry ``regression`` and run as ordinary tests (see ``adv_cases``).
"""

from __future__ import annotations

import traceback

import pytest

from adv_cases import CASES
from adv_oracle import judge
from adv_run import TALLY, run_verify


def _params():
    out = []
    for c in CASES:
        marks = []
        if c["bug"]:
            marks.append(pytest.mark.xfail(strict=True, reason=c["bug"]))
        if c["full_only"]:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(c, id=c["name"], marks=marks))
    return out


@pytest.mark.parametrize("c", _params())
def test_adversarial_case(c):
    TALLY.add_inputs("verify: adversarial catalogue (in-process)")
    o = run_verify(c["raw"], timeout=c["timeout"])
    TALLY.warnings.extend(o.warnings)
    if o.error is not None:
        where = " <- ".join(f.name for f in reversed(traceback.extract_tb(o.error.__traceback__)[-4:]))
        TALLY.crashes.append(f"{c['name']}: {type(o.error).__name__}: {str(o.error)[:120]} ({where})"
                             + (" [known bug]" if c["bug"] else ""))
        pytest.fail(f"verify raised {type(o.error).__name__}: {o.error} after {o.seconds:.1f} s ({where})")
    jd = judge(c["raw"], o.doc, c["meta"])
    TALLY.record(c["name"], jd, known_bug=bool(c["bug"]), regime=o.doc["regime"])
    assert not jd.false_holds, jd.describe()
    assert not jd.regime_errors, jd.describe()
    assert not jd.bad_certificates, jd.describe()
    assert not jd.false_fails, jd.describe()
    # one document, no contradictions: the consistency pass found nothing to downgrade
    assert not (o.doc.get("consistency") or {}).get("conflicts"), o.doc["consistency"]
    leaked = [w for w in o.warnings if w.startswith("RuntimeWarning")]
    assert not leaked, f"numpy RuntimeWarnings escape to stderr: {leaked}"
    # the regime block is one of the documented answers
    reg = o.doc["regime"]
    assert reg["Sigma"] in {"converges_pd", "converges_zero", "converges_singular", "blows_up", "bounded",
                            "unbounded", "unknown"}
    assert reg["basis"] in {"certified", "simulation"}
