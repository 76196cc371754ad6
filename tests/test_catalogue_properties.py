"""Property tests for every catalogue entry, with the strategies of ``flowcert.testing.for_theorem``.

* satisfied side: the hypotheses are true by construction, so flowcert must never refute them
  (``applies`` is never ``False``); where they are certified (``applies is True``) the prediction
  must agree with simulation: the entry's own cross-check never ``disagrees``, and the oracle's
  checks (tests/catalogue_oracle.py) hold;
* violated side: flowcert never reports the theorem as applying;
* failures found by these searches are kept below as regression examples (``@example``), and
  those that still fail as strict ``xfail`` tests naming the defect.

Cheap settings: dimension <= 3, entries <= 1, short horizons. The gaussian entries run by default
(a few examples each); the particle Monte Carlo of Prop 2.1 and the attention / rnn systems
(whose catalogues are evaluated through their ``verify``, with simulation) are marked ``slow``; their
violated sides (no simulation, about 0.1 s each) run by default once those systems are on the branch.
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, example, given, settings

from catalogue_oracle import gaussian_entry
from flowcert.testing import CASES, for_theorem

CHEAP = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))

GAUSSIAN = sorted(i for i in CASES if i.startswith("gaussian:"))
COSTLY = {"gaussian:prop-2.1", "gaussian:thm-4.11.2"}  # particle Monte Carlo / long mean horizons
# hypotheses decided by exact algebra alone: on the satisfied side they must be certified, not 'unknown'
ALGEBRAIC = {"gaussian:lemma-2.3", "gaussian:prop-2.4", "gaussian:lemma-3.1", "gaussian:thm-3.3", "gaussian:thm-4.1",
             "gaussian:thm-4.11.1", "gaussian:thm-4.7.2", "gaussian:thm-4.7.3", "gaussian:thm-4.8.1", "gaussian:thm-4.8.2"}


def check_satisfied(theorem_id: str, doc: dict) -> None:
    res, extra = gaussian_entry(theorem_id, doc)
    failing = [(h.name, h.detail) for h in res.hypotheses if h.status == "fails"]
    assert res.applies.json is not False, f"{theorem_id}: a hypothesis true by construction was refuted: {failing}"
    if theorem_id in ALGEBRAIC:
        assert res.applies.json is True, [(h.name, h.status, h.detail) for h in res.hypotheses]
    if res.applies:
        assert res.cross_check.status != "disagrees", res.cross_check.to_json()
        assert extra is None or extra["ok"], extra


def check_violated(theorem_id: str, doc: dict) -> None:
    res, _ = gaussian_entry(theorem_id, doc, simulate=False)
    assert res.applies.json is not True, [(h.name, h.status) for h in res.hypotheses]


def _params(ids, costly):
    return [pytest.param(i, marks=pytest.mark.slow) if i in costly else i for i in ids]


@pytest.mark.parametrize("theorem_id", _params([i for i in GAUSSIAN if CASES[i].satisfied is not None], COSTLY))
def test_gaussian_satisfied_prediction_agrees(theorem_id):
    @CHEAP
    @given(for_theorem(theorem_id, satisfied=True))
    def run(doc):
        check_satisfied(theorem_id, doc)

    run()


@pytest.mark.parametrize("theorem_id", [i for i in GAUSSIAN if CASES[i].violated is not None])
def test_gaussian_violated_never_applies(theorem_id):
    @CHEAP
    @given(for_theorem(theorem_id, satisfied=False))
    def run(doc):
        check_violated(theorem_id, doc)

    run()


def test_every_entry_has_both_sides_or_a_reason():
    for cid, case in CASES.items():
        for side in (case.satisfied, case.violated):
            assert side is not None or len(case.reason) > 20, cid
        assert case.satisfied is not None, f"{cid}: a satisfying side always exists"


# ---------------------------------------------------------------------------------------------
# regressions found by the searches above (strict xfail: each names a defect of the gaussian catalogue)
# ---------------------------------------------------------------------------------------------

# mu0 = b = 0 is a fixed point of the mean: Thm 4.11(2) claims divergence for generic mu0 only, yet the
# cross-check said 'disagrees'. Fixed: the check runs from a seeded generic perturbation of mu0.
NON_GENERIC_4_11_2 = {"A": [[0.25]], "B": [[-0.25]], "V": [[1.0]], "b": [0.0], "mu0": [0.0], "Sigma0": [[0.25]],
                      "t_end": 2.0}


def test_regression_thm_4_11_2_non_generic_mean():
    res, _ = gaussian_entry("gaussian:thm-4.11.2", NON_GENERIC_4_11_2)
    assert res.applies.json is True
    assert res.cross_check.status == "agrees", res.cross_check.to_json()
    (used,) = res.cross_check.details["mu0_used"]
    assert used != 0.0 and abs(used) <= 1e-3  # a generic start next to the given one


# B indefinite: the attention weights exp(y^T B x) are heavy-tailed and the particle Monte Carlo of Prop 2.1
# has a 30% moment error at N = 1600; the check calls a true theorem 'disagrees' instead of 'skipped'.
HEAVY_TAILED_2_1 = {
    "A": [[0.84375, -0.859375, 0.28125], [0.0, -0.796875, 0.09375], [0.0, 0.0, -0.703125]],
    "B": [[0.84375, 0.0, 0.0], [0.0, -0.765625, 0.0], [0.0, 0.0, 0.0]],
    "V": [[0.52490234375, -0.2362060546875, 0.31494140625], [-0.2362060546875, 0.106292724609375, -0.1417236328125],
          [0.31494140625, -0.1417236328125, 0.18896484375]],
    "b": [0.0, 0.75, 0.0], "mu0": [-2.3193825280598546e-05, 0.0, 0.571235864275772],
    "Sigma0": [[0.88525390625, 0.10546875, 0.0], [0.10546875, 0.82373046875, 0.0], [0.0, 0.0, 0.40283203125]],
    "t_end": 2.0}


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="gaussian:prop-2.1 particle check: false 'disagrees' with heavy-tailed weights "
                                        "(Monte Carlo; the outcome depends on the sample)")
def test_regression_prop_2_1_heavy_tailed_weights():
    res, _ = gaussian_entry("gaussian:prop-2.1", HEAVY_TAILED_2_1)
    assert res.applies.json is True
    assert res.cross_check.status != "disagrees", res.cross_check.to_json()


# ---------------------------------------------------------------------------------------------
# attention (multistability, consensus) and rnn (kpflow): through each system's verify, when present
# ---------------------------------------------------------------------------------------------

def _system_api(system: str):
    """``(parse, verify(p, simulate) -> document)`` of a system, or skip when it is not on this branch."""
    try:
        if system == "attention":
            api = importlib.import_module("flowcert.attention")
            return api.parse, lambda p, simulate: api.verify(p, simulate=simulate)
        params = importlib.import_module("flowcert.rnn.params")
        analyze = importlib.import_module("flowcert.rnn.analyze")
        return params.parse_rnn, lambda p, simulate: analyze.analyze(p)  # its cross-checks always run
    except (ModuleNotFoundError, AttributeError) as exc:
        pytest.skip(f"the {system} system's catalogue is not on this branch ({exc})")


def _entry(api, theorem_id: str, doc: dict, simulate: bool) -> dict:
    parse, verify = api
    by_id = {t["id"]: t for t in verify(parse(doc), simulate)["theorems"]}
    assert theorem_id in by_id, f"{theorem_id} missing from verify's theorems"
    return by_id[theorem_id]


OTHER = sorted(i for i in CASES if not i.startswith("gaussian:"))


@pytest.mark.slow
@pytest.mark.parametrize("theorem_id", OTHER)
def test_other_systems_satisfied(theorem_id):
    api = _system_api(CASES[theorem_id].system)

    @SLOW
    @given(for_theorem(theorem_id, satisfied=True))
    def run(doc):
        th = _entry(api, theorem_id, doc, simulate=True)
        assert th["applies"] is not False, [(h["name"], h["status"]) for h in th["hypotheses"]]
        if th["applies"]:
            assert th["cross_check"]["status"] != "disagrees", th["cross_check"]

    run()


@pytest.mark.parametrize("theorem_id", [i for i in OTHER if CASES[i].violated is not None])
def test_other_systems_violated(theorem_id):
    api = _system_api(CASES[theorem_id].system)

    @CHEAP
    @given(for_theorem(theorem_id, satisfied=False))
    def run(doc):
        assert _entry(api, theorem_id, doc, simulate=False)["applies"] is not True

    run()


# The mean integration of this case ran for minutes (about 400 s on the shared machine) to t = 100 and
# ended at t = 0 with status 'disagrees': a failed run was reported as evidence against Thm 4.11(2).
# Fixed: shorter horizons first (|mu| passes its threshold by t = 10), and a failed run is 'skipped'.
STALLED_4_11_2 = {
    "A": [[-0.171875, 0.4375, 0.5], [0.6875, -0.421875, 0.8125], [0.078125, -0.078125, -0.859375]],
    "B": [[-0.438690185546875, 0.0, 0.0], [0.0, -0.8159637451171875, -0.09613037109375],
          [0.0, -0.09613037109375, -0.872039794921875]],
    "V": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], "b": [-0.75, 0.0, 0.25],
    "mu0": [0.9999999999999999, 1e-10, 1.1997570253141617e-284],
    "Sigma0": [[0.71875, 0.0, 0.0], [0.0, 0.671875, 0.0], [0.0, 0.0, 0.921875]], "t_end": 2.0}


def test_regression_thm_4_11_2_failed_run_is_not_evidence(monkeypatch):
    res, _ = gaussian_entry("gaussian:thm-4.11.2", STALLED_4_11_2)
    assert res.cross_check.status == "agrees" and res.cross_check.details["t"] > 0, res.cross_check.to_json()
    from flowcert.gaussian import asymptotics

    real = asymptotics.ng.integrate_moments

    def stalled(*args, **kwargs):
        sol = real(*args, **{**kwargs, "max_evaluations": 10})
        assert sol.status == "failed"
        return sol

    monkeypatch.setattr(asymptotics.ng, "integrate_moments", stalled)
    res, _ = gaussian_entry("gaussian:thm-4.11.2", STALLED_4_11_2)
    assert res.cross_check.status == "skipped" and "not evidence" in res.cross_check.details["reason"]


# Psi(t) becomes singular to working precision near the blow-up of Sigma (cond 1e17): log det Psi
# overflowed, the Liouville residual was inf, and a true Lemma 3.1 was reported 'disagrees'. Fixed:
# the comparison stops where cond(Psi) passes 1e12 and says so.
ILL_CONDITIONED_3_1 = {
    "A": [[1.2265625, 0.703125, 0.3671875], [-0.71875, 0.859375, -0.015625], [-0.7421875, -0.703125, 0.1171875]],
    "B": [[-0.476837158203125, 0.0, 0.0], [0.0, -0.6580352783203125, 0.0], [0.0, 0.0, 0.7724761962890625]],
    "V": [[0.7579803466796875, 0.0, 0.26092529296875], [0.0, 0.91552734375, 0.0],
          [0.26092529296875, 0.0, 0.60577392578125]],
    "b": [0.0, 0.25, -1.0], "mu0": [0.020313078872383317, -2.225073858507e-311, -5.960464477539063e-08],
    "Sigma0": [[0.555206298828125, -0.113525390625, -0.05877685546875],
               [-0.113525390625, 0.516510009765625, 0.08514404296875],
               [-0.05877685546875, 0.08514404296875, 0.5209197998046875]], "t_end": 2.0}


@pytest.mark.slow  # about 7 s
def test_regression_lemma_3_1_ill_conditioned_transport():
    res, _ = gaussian_entry("gaussian:lemma-3.1", ILL_CONDITIONED_3_1)
    assert res.applies.json is True
    details = res.cross_check.details
    assert res.cross_check.status == "agrees", res.cross_check.to_json()
    assert "singular to working precision" in details["truncated"] and details["max_cond_Psi"] <= 1e12
    assert details["transport_residual"] < 1e-7 and details["liouville_residual"] < 1e-7
