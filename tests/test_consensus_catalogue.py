"""The consensus catalogue on the paper's examples: verdicts against independent mathematics
(eigenvectors by numpy, exact re-checks of the hemisphere witness, the tetrahedron threshold),
simulated limits against the predictions, and the CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flowcert.attention.params", reason="the attention model core (branch attn) is not merged here")

from flowcert.attention import load, parse  # noqa: E402
from flowcert.attention import consensus as cat  # noqa: E402
from flowcert.attention import examples  # noqa: E402
from flowcert.certificates import core  # noqa: E402

DATA = Path(__file__).parent / "data" / "attention"
IDS = ["consensus:lemma-3.1", "consensus:thm-3.1", "consensus:thm-3.2", "consensus:lemma-4.1", "consensus:lemma-4.2",
       "consensus:thm-4.1", "consensus:lemma-5.1", "consensus:thm-5.1", "consensus:lemma-6.1", "consensus:thm-6.1"]


def _by_id(results):
    return {r.id: r for r in results}


@pytest.fixture(scope="module")
def fig1():
    return _by_id(cat.theorems(load(DATA / "consensus_fig1.json"), simulate=True, seed=0))


@pytest.fixture(scope="module")
def fig3():
    return _by_id(cat.theorems(load(DATA / "consensus_fig3.json"), simulate=True, seed=0))


@pytest.fixture(scope="module")
def fig4():
    return _by_id(cat.theorems(load(DATA / "consensus_fig4.json"), simulate=True, seed=0))


def test_all_ids_reported(fig1):
    assert list(fig1) == IDS
    for r in fig1.values():
        j = r.to_json()
        assert j["source"]["arxiv"] == "2412.02682" and "txt" not in json.dumps(j["source"])  # the paper, not a file
        assert j["cross_check"]["status"] in ("agrees", "disagrees", "skipped")


def test_section_3_on_E_P(fig1):
    for k in ("consensus:lemma-3.1", "consensus:thm-3.1", "consensus:thm-3.2"):
        assert fig1[k].applies.json is True, k
        assert fig1[k].cross_check.status == "agrees", (k, fig1[k].cross_check.details)
    d = fig1["consensus:thm-3.2"].cross_check.details
    assert d["V_P"]["largest_increase"] <= 1e-8 * d["V_P"]["scale"]
    # V_P reaches its global minimum -l^2 e / 2 exactly at consensus (10 tokens: -50 e)
    assert abs(d["V_P_final"] + 50 * np.e) < 1e-8
    assert fig1["consensus:thm-3.2"].correction


def test_thm_3_2_needs_W_equal_P():
    p = parse({"P": np.diag([3.0, 1.0, 0.2]).tolist(), "V": np.eye(3).tolist(), "normalization": "sqrt", "n": 5})
    r = _by_id(cat.theorems(p, simulate=False))["consensus:thm-3.2"]
    assert r.applies.json is False
    assert any(h.status == "fails" and "E_P" in h.name for h in r.hypotheses)


def test_hemisphere_witness_in_json(fig3):
    r = fig3["consensus:thm-4.1"]
    assert r.applies.json is True and r.cross_check.status == "agrees", r.cross_check.details
    hemi = next(h for h in r.hypotheses if h.name.startswith("open hemisphere"))
    assert core.recheck(hemi.certificate)
    X0 = load(DATA / "consensus_fig3.json").X0
    vq = [Fraction(x) for x in hemi.certificate.data["v"]]
    assert all(sum(Fraction(float(a)) * b for a, b in zip(row, vq)) > 0 for row in X0)
    v = np.array(r.prediction["hemisphere_witness"])
    assert np.all(X0 @ v > 0)
    d = r.cross_check.details
    assert d["V_max"]["largest_increase"] <= d["V_max"]["tolerance"]
    assert d["min_v_y"] > 0 and d["spread_final"] < 1e-5


def test_thm_6_1_limit_is_top_eigenvector(fig4):
    r = fig4["consensus:thm-6.1"]
    assert r.applies.json is True and r.cross_check.status == "agrees", r.cross_check.details
    U = np.array(load(DATA / "consensus_fig4.json").V, float)
    w, Q = np.linalg.eigh(U)
    v = Q[:, -1]
    lim = np.array(r.prediction["limit_point"])
    assert abs(abs(lim @ v) - 1) < 1e-12
    X0 = load(DATA / "consensus_fig4.json").X0
    assert np.all(np.sign(X0 @ lim) > 0)
    # closed-form transverse spectrum (mu_k - i lambda) / (i sqrt d)
    want = sorted({(m - i * w[-1]) / (i * np.sqrt(3)) for i in range(1, 11) for m in w[:-1]})
    assert np.allclose(r.prediction["transverse_eigenvalues"], want)
    assert fig4["consensus:lemma-6.1"].cross_check.status == "agrees"


def test_causal_token_one_fixed():
    res = _by_id(cat.theorems(load(DATA / "consensus_fig5_reduced.json"), simulate=True, seed=0))
    r = res["consensus:thm-5.1"]
    assert r.applies.json is True and r.cross_check.status == "agrees", r.cross_check.details
    assert r.cross_check.details["token_1_motion"] <= 1e-14  # round-off of the retraction only
    assert res["consensus:lemma-5.1"].cross_check.status == "agrees"
    assert r.correction and "l >= 3" in r.correction


def test_tetrahedron_is_stable_non_consensus():
    res = _by_id(cat.theorems(load(DATA / "consensus_tetrahedron.json"), simulate=True, seed=0))
    r = res["consensus:thm-4.1"]
    assert r.applies.json is False
    hemi = next(h for h in r.hypotheses if h.name.startswith("open hemisphere"))
    assert hemi.status == "fails" and core.recheck(hemi.certificate)
    assert r.prediction["consensus_predicted"] is False
    assert r.prediction["equilibrium"]["stability"]["status"] == "holds"
    assert r.cross_check.status == "agrees", r.cross_check.details
    assert r.cross_check.details["limit_class"] == "non_consensus"
    assert res["consensus:thm-3.2"].applies.json is False  # P = -2 I is not positive definite


def test_tetrahedron_below_threshold_not_claimed_stable():
    raw = json.loads((DATA / "consensus_tetrahedron.json").read_text())
    raw["P"] = (-1.0 * np.eye(3)).tolist()
    r = _by_id(cat.theorems(parse(raw), simulate=False))["consensus:thm-4.1"]
    assert r.prediction["equilibrium"]["stability"]["status"] == "fails"
    assert r.prediction["consensus_predicted"] is None


def test_cli_verify_json():
    out = subprocess.run([sys.executable, "-m", "flowcert", "verify", "attention", "--params", str(DATA / "consensus_fig3.json"),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    ids = [t["id"] for t in doc["theorems"]]
    for k in IDS:
        assert k in ids
    th = next(t for t in doc["theorems"] if t["id"] == "consensus:thm-4.1")
    assert th["applies"] is True and th["prediction"]["hemisphere_witness"] is not None


def test_parameter_files_are_the_paper_examples():
    for key, raw in cat.paper_examples().items():
        on_disk = json.loads((DATA / f"consensus_{key}.json").read_text())
        assert json.loads(json.dumps(raw)) == on_disk, key
    # the printed matrices: U of §7.3 has the eigenvalues quoted in the note
    assert np.allclose(np.linalg.eigvalsh(np.array(examples.U_7_3)), [-1.41849, -0.02148, 0.43888], atol=1e-5)


def test_theorem_5_1_domain_correction():
    """Inside {y_j != -y_1}, token 3 heads for -y_1 (note 003's S^1 counterexample): the hypotheses
    hold, the corrected statement does not promise convergence from there, and the cross-check never
    reports 'agrees' for a run that approaches the non-consensus equilibrium (y_1, y_1, -y_1)."""
    p = load(DATA / "consensus_thm51_counterexample.json")
    results, run = cat.theorems_with_run(p, simulate=True, seed=0)
    r = _by_id(results)["consensus:thm-5.1"]
    assert r.applies.json is True and "too strong" in r.prediction["domain"]
    y1, y3 = run.X[-1, 0], run.X[-1, 2]
    assert y1 @ y3 < -1 + 1e-9  # within 1e-4 rad of the antipode at t = 30
    assert r.cross_check.status != "agrees"


class _Run:
    def __init__(self, ok: bool) -> None:
        self.ok, self.message = ok, "step size underflow"

    def summary(self) -> dict:
        return {"integrator": "x"}


@pytest.mark.parametrize("simulate, statuses, run, ready, expected", [
    (False, ("holds",), _Run(True), True, "not requested"),      # not asked: the default record stays
    (True, ("fails",), _Run(True), True, "why"),                  # does not apply
    (True, ("holds",), None, True, "why"),                        # no run
    (True, ("holds",), _Run(True), False, "why"),                 # the setting is not ready (e.g. one token)
    (True, ("holds",), _Run(False), True, "failed run: step size underflow"),
    (True, ("holds",), _Run(True), True, "checked"),
])
def test_cross_checked_skips_for_each_reason_and_checks_otherwise(simulate, statuses, run, ready, expected):
    """The consensus catalogue's one rule for a cross-check: skipped (with its reason) unless it was asked
    for, the theorem applies, its run exists and succeeded and the setting is ready; else the check runs."""
    from flowcert.attention.consensus import _cross_checked
    from flowcert.catalogue import CrossCheck, Theorem
    from flowcert.certificates.core import Hypothesis

    calls = []

    def check() -> CrossCheck:
        calls.append(1)
        return CrossCheck("agrees", {"reason": "checked"})

    r = Theorem("consensus:thm-3.2", "Theorem 3.2", "", [Hypothesis(f"h{i}", s) for i, s in enumerate(statuses)])
    out = _cross_checked(r, simulate, check, run, ready=ready, why="why")
    assert out is r and out.cross_check.details["reason"] == expected
    assert calls == ([1] if expected == "checked" else [])
    assert out.cross_check.status == ("agrees" if expected == "checked" else "skipped")
