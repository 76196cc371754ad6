"""The public typed results (:mod:`flowcert.result`) and their Jupyter display (:mod:`flowcert.display`).

* the typed objects encode back to the document byte for byte (the CLI contract) for every system,
  including a document whose keys are in an unusual order and one with keys the types do not know;
* the verdict constants are their JSON words and map to the document's true/false/null;
* the overall status follows its definition on constructed results (disagrees > undecided > decided);
* the papers are the catalogue's (same files), with arXiv ids;
* the HTML is well-formed, one folded row per theorem, and its size does not grow with the
  certificates or the length of the details (the former rnn display printed the whole document);
* dict access works for one release and warns.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import flowcert
from flowcert.catalogue import PAPERS as CATALOGUE_FILES
from flowcert.documents import plain, verify_document
from flowcert.result import PAPERS, Applies, CheckStatus, Result, Status, Verdict

DATA = Path(__file__).parent / "data"


def _dump(doc: dict) -> str:
    return json.dumps(doc, indent=1, allow_nan=False)


@pytest.mark.parametrize("system, path, simulate", [
    ("gaussian", DATA / "gaussian_stable_2d.json", True),
    ("gaussian", DATA / "gaussian_time_varying.json", False),
    ("rnn", DATA / "rnn" / "rnn_tanh_small.json", False),
    ("attention", DATA / "attention" / "clustering_d3.json", False),
])
def test_typed_result_encodes_the_document_byte_for_byte(system, path, simulate):
    doc = verify_document(system, path, simulate=simulate)
    res = Result.from_document(doc)
    assert _dump(res.to_json()) == _dump(plain(doc))
    assert list(res.theorems) == [t["id"] for t in doc["theorems"]]
    for t in doc["theorems"]:
        typed = res.theorems[t["id"]]
        assert typed.applies.json is t["applies"]
        assert [h.status.value for h in typed.hypotheses] == [h["status"] for h in t["hypotheses"]]
        assert typed.paper is PAPERS[t["id"].split(":")[0]] and typed.label == t["source"]["label"]


def test_key_order_and_unknown_keys_survive():
    """A record with its keys shuffled and keys the types do not know is written back as it came."""
    doc = {"system": "x", "flowcert": "9", "extra_top": [1, 2], "params": {"a": 1},
           "theorems": [{"applies": None, "id": "kpflow:prop-1", "hypotheses": [
               {"status": "unknown", "name": "h", "margin": float("nan"), "method": "m", "certificate": {
                   "data": {"M": [["1/3"]]}, "kind": "psd", "claim": "c", "checker": "exact-ldl", "note": 1},
                "detail": "", "subject": "S"}], "source": {"file": "f", "label": "L"}, "new_key": {"k": 1},
               "cross_check": {"status": "skipped", "details": {"reason": "r"}}}]}
    assert _dump(Result.from_document(doc).to_json()) == _dump(plain(doc))


def test_verdict_words():
    assert [Applies.from_json(v) for v in (True, False, None)] == [Applies.YES, Applies.NO, Applies.UNDECIDED]
    assert [a.json for a in Applies] == [True, False, None]
    assert Applies.YES == "applies" and Applies.NO == "inapplicable" and Applies.UNDECIDED == "undecided"
    assert bool(Applies.YES) and not Applies.NO and not Applies.UNDECIDED
    assert {s.value for s in Status} == {"holds", "fails", "unknown", "assumed"}
    assert {c.value for c in CheckStatus} == {"agrees", "disagrees", "skipped"}
    assert f"{Status.HOLDS}" == "holds" and str(CheckStatus.AGREES) == "agrees"


def _theorem(i: int, applies, check: str = "skipped", statuses=("holds",)) -> dict:
    return {"id": f"gaussian:thm-{i}", "source": {"file": "f", "label": f"T{i}"}, "applies": applies,
            "hypotheses": [{"name": f"h{k}", "status": s, "margin": 1.0, "method": "m", "certificate": None,
                            "detail": ""} for k, s in enumerate(statuses)],
            "prediction": {}, "cross_check": {"status": check, "details": {}}}


@pytest.mark.parametrize("theorems, expected", [
    ([_theorem(1, True, "agrees"), _theorem(2, False, statuses=("fails",))], Verdict.DECIDED),
    ([_theorem(1, True), _theorem(2, None, statuses=("unknown",))], Verdict.UNDECIDED),
    ([_theorem(1, None, statuses=("unknown",)), _theorem(2, True, "disagrees")], Verdict.DISAGREES),
])
def test_overall_status(theorems, expected):
    res = Result.from_document({"flowcert": "0", "system": "gaussian", "params": {}, "theorems": theorems})
    assert res.status is expected
    lines = res.summary().splitlines()
    assert len(lines) == 1 + len(theorems) and expected.value in lines[0]
    undecided = next((t for t in res.theorems.values() if t.applies is Applies.UNDECIDED), None)
    if undecided is not None:  # the deciding hypothesis is named on its line
        assert undecided.deciding.status is Status.UNKNOWN
        assert any(line.startswith(undecided.id) and "unknown: h0" in line for line in lines)


def test_papers_are_the_catalogues():
    assert set(PAPERS) == set(CATALOGUE_FILES)
    for key, paper in PAPERS.items():
        assert paper.file == CATALOGUE_FILES[key]
        assert paper.arxiv.count(".") == 1 and paper.arxiv.replace(".", "").isdigit() and paper.title


def _big(n_theorems: int, n_hyps: int, detail_chars: int, cert_entries: int) -> Result:
    cert = {"kind": "psd", "claim": "M >= 0", "checker": "exact-ldl",
            "data": {"M": [[f"{i}/{j + 1}" for j in range(cert_entries)] for i in range(cert_entries)]}}
    theorems = [{**_theorem(i, None, statuses=("unknown",) * n_hyps)} for i in range(n_theorems)]
    for t in theorems:
        for h in t["hypotheses"]:
            h.update(detail="x" * detail_chars, certificate=cert, method="y" * detail_chars)
    return Result.from_document({"flowcert": "0", "system": "gaussian", "params": {}, "theorems": theorems})


def test_html_size_does_not_grow_with_certificates_or_details():
    small, large = _big(14, 6, 10, 2), _big(14, 6, 100_000, 300)
    assert len(json.dumps(large.to_json())) > 10_000_000
    page = large._repr_html_()
    ET.fromstring(page)
    assert len(page) < 20_000
    assert "result.to_json()" in page and "certificate: psd" not in page  # the notes left out past the budget
    assert "certificate: psd" in small._repr_html_() and len(small._repr_html_()) < 20_000


def test_real_results_display_under_20kb():
    """The former rnn display printed the whole document (over 100 KB); now a table of a few KB."""
    res = flowcert.verify("rnn", DATA / "rnn" / "gru_small.json")
    page = res._repr_html_()
    root = ET.fromstring(page)
    assert len(page) < 20_000 < len(repr(res.to_json()))
    assert len(list(root.iter("details"))) == len(res.theorems) == len(list(root.iter("tr"))) - 1


def test_dict_access_works_and_warns():
    res = flowcert.verify("gaussian", DATA / "gaussian_stable_2d.json")
    with pytest.warns(DeprecationWarning):
        theorems = res["theorems"]
    assert theorems == res.to_json()["theorems"] and "regime" in res and set(res.keys()) == set(res.to_json())
    with pytest.warns(DeprecationWarning):
        assert res.get("nope", 3) == 3


def test_simulation_exposes_the_run_as_arrays():
    """From the gaussian run of eq. (7): t, the states along it, success and message; the record's
    final state is the run's last row. From a record alone (attention): its final state at t_reached."""
    import numpy as np

    from flowcert.numeric import gaussian as ng
    from flowcert.result import Simulation

    A, B, V = -np.eye(2), np.eye(2) / 2, -np.eye(2) / 5
    run = ng.integrate_moments(ng.constant(A, B, V, np.zeros(2)), np.ones(2), np.eye(2), 3.0)
    sim = Simulation.from_run({"t_end": 3.0, "mu_final": run.mu[-1].tolist(), "agrees": True}, run)
    assert sim.t[0] == 0.0 and sim.t[-1] == 3.0 and np.all(np.diff(sim.t) > 0)
    assert sim.states["mu"].shape == (len(sim.t), 2) and sim.states["Sigma"].shape == (len(sim.t), 2, 2)
    assert sim.success is True and sim.agrees is True and sim.record["mu_final"] == sim.states["mu"][-1].tolist()
    # the moment equation itself: d mu/dt = (A + V + V Sigma B) mu at the stored points (b = 0)
    k = len(sim.t) // 2
    h = 1e-3
    ref = ng.integrate_moments(ng.constant(A, B, V, np.zeros(2)), sim.states["mu"][k], sim.states["Sigma"][k], h,
                               t_eval=np.array([h]))
    S, mu = sim.states["Sigma"][k], sim.states["mu"][k]
    assert np.allclose((ref.mu[-1] - mu) / h, (A + V + V @ S @ B) @ mu, atol=5e-3)
    rec = Simulation.from_run({"t_end": 5.0, "t_reached": 4.0, "X_final": [[1.0, 0.0], [0.0, 1.0]], "agrees": None})
    assert rec.t.tolist() == [4.0] and rec.states["X"].shape == (1, 2, 2) and rec.sol is None


# --- one family (issue 34): the engine's objects are the public ones --------------------------------------------


def test_verify_returns_the_engines_own_objects():
    """The public names are the engine's classes, and flowcert.verify hands out the very objects the
    catalogue made (no second family rebuilt from them)."""
    from flowcert import catalogue, result
    from flowcert.certificates import core

    assert result.Theorem is catalogue.Theorem is catalogue.TheoremResult
    assert result.Hypothesis is core.Hypothesis is core.HypothesisResult
    assert result.Certificate is core.Certificate and result.CrossCheck is catalogue.CrossCheck
    res = flowcert.verify("gaussian", DATA / "gaussian_stable_2d.json")
    t = res.theorems["gaussian:prop-2.1"]
    assert type(t) is catalogue.Theorem and result.Theorem.of(t) is t
    assert all(type(h) is core.Hypothesis and isinstance(h.status, Status) for h in t.hypotheses)
    certs = [h.certificate for t in res.theorems.values() for h in t.hypotheses if h.certificate is not None]
    assert certs and all(type(c) is core.Certificate for c in certs)
    # the certificate's data are whole (subject fields included), so it re-checks from the object itself
    bound = [c for c in certs if c.subject]
    assert bound and all(set(c.subject) <= set(c.data) for c in bound) and all(c.recheck() for c in bound)


def test_statuses_are_verdict_words_and_a_bad_word_is_refused():
    from flowcert.catalogue import CrossCheck
    from flowcert.certificates.core import Hypothesis

    h = Hypothesis("h", "holds")
    assert h.status is Status.HOLDS and h.to_json()["status"] == "holds" and type(h.to_json()["status"]) is str
    h.status = "fails"  # an assignment is made a word too
    assert h.status is Status.FAILS
    with pytest.raises(ValueError):
        Hypothesis("h", "maybe")
    c = CrossCheck("agrees", {})
    assert c.status is CheckStatus.AGREES and c.to_json() == {"status": "agrees", "details": {}}
    with pytest.raises(ValueError):
        CrossCheck("perhaps")


@pytest.mark.parametrize("statuses, expected", [
    (set(), Applies.YES), ({"holds"}, Applies.YES), ({"holds", "assumed"}, Applies.YES),
    ({"holds", "unknown"}, Applies.UNDECIDED), ({"unknown", "fails"}, Applies.NO), ({"assumed", "fails"}, Applies.NO),
])
def test_applies_follows_the_statuses(statuses, expected):
    """Applies.of is the rule of the papers' theorems: one failing hypothesis makes it inapplicable,
    all holding (or assumed) make it apply; recheck re-derives applies with the same rule."""
    from flowcert.catalogue import Theorem
    from flowcert.certificates.core import Hypothesis
    from flowcert.recheck_certificate import applies_of

    assert Applies.of(statuses) is expected
    t = Theorem("gaussian:prop-2.1", "P", "", [Hypothesis(f"h{i}", s) for i, s in enumerate(sorted(statuses))])
    assert t.applies is expected and t.to_json()["applies"] is expected.json
    assert applies_of(sorted(statuses)) is expected.json


def test_a_subject_stamped_after_reading_is_written():
    """A certificate read from a saved record (no subject) and then bound (subject and digest added,
    as the equilibria listing does) writes its subject and digest, after the record's own keys."""
    import dataclasses

    from flowcert.certificates.core import Certificate

    rec = {"kind": "psd", "claim": "V >= 0", "checker": "exact-ldl", "data": {"M": [["1"]], "t": "2"}, "note": 1}
    c = Certificate.from_json(rec)
    assert c.to_json() == rec and list(c.to_json()) == list(rec)
    bound = dataclasses.replace(c, subject={"M": "params.V"}, digest="sha256:00")
    out = bound.to_json()
    assert list(out) == ["kind", "claim", "checker", "data", "note", "subject", "digest"]
    assert out["data"] == {"t": "2"} and out["subject"] == {"M": "params.V"} and out["digest"] == "sha256:00"


def test_the_display_and_the_text_share_the_systems_lines():
    """The notebook's extra lines are the system's own summary lines (with the reasons), the command
    line's text the same lines without them: no system's keys are read in shared code."""
    from flowcert.display import extras
    from flowcert.result import verify_summary

    res = flowcert.verify("gaussian", DATA / "gaussian_time_varying.json")
    reason = res.regime["reason"]
    line = "regime: Sigma unknown, mu unknown (basis: no simulation asked: simulate=True (--simulate) runs one)"
    assert extras(res) == [f"{line}; {reason}"]  # no run was asked: the basis says so, not "simulation"
    text = verify_summary(res.to_json())
    assert f"{line}\n" in text and reason not in text
    assert extras(flowcert.verify("rnn", DATA / "rnn" / "rnn_tanh_small.json")) == []
