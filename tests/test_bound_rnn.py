"""A document no one has to trust (issue 38), for the ``rnn`` system: ``kpflow analyze`` and ``verify rnn``
documents are bound to their parameters, the Jacobians along the trajectory are re-derived from
``params`` by ``flowcert recheck``, and every forgery is refused.

Each forgery edits a real document written by the CLI and must make ``flowcert recheck`` exit 3 in a
fresh process, with the refusal at exactly the JSON path of what was forged. The untouched documents
exit 0 with every ``holds`` bound. The expectations are the structure of the forgery (which path was
edited), never an output of the code under test.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flowcert.recheck import recheck_document
from forgery_helpers import (assert_all_refused_through_the_cli, assert_refused_at, eighths,
                             false_claims, flowcert, hyp, refusals)

DATA = Path(__file__).parent / "data" / "rnn"
#: an eq. 8 cell with explicit weights (every entry a multiple of 1/8: exact floats)
WEIGHTS = {"cell": "rnn_tanh", "B": 2, "T": 5, "H": 3, "I": 2, "dt": 0.5,
           "weights": {"W": [[0.5, -0.25, 0.125], [0.25, 0.375, -0.5], [0.0, 0.25, 0.5]],
                       "W_in": [[1.0, 0.0], [0.5, -0.5], [0.0, 1.0]]}}
#: the linear cell (a bounded-real certificate besides the contraction)
LINEAR = {"cell": "linear", "B": 2, "T": 4, "H": 2, "I": 1, "seed": 3, "g": 0.7}

SMOOTH, GD = "F differentiable in (z, theta)", "plain gradient descent, first order in eta"
ONCE, GRAM = "each W_j used once per evaluation of f", "K = (1/B) G G^T is positive semidefinite"
OUTER, INV = "outer Jacobian D f^outer constant", "every A_t invertible"
CONTRACTION = "$.certificates[0].certificate"


def produce(args: list[str], params: dict | Path, tmp: Path, name: str) -> dict:
    path = params if isinstance(params, Path) else tmp / f"{name}.params.json"
    if not isinstance(params, Path):
        path.write_text(json.dumps(params))
    out = flowcert(*args, "--params", str(path), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, dict]:
    """``kpflow analyze`` of the repository's rnn_tanh example and of explicit weights, ``verify rnn`` of
    the GRU example (the two commands write the same document)."""
    tmp = tmp_path_factory.mktemp("bound_rnn")
    return {"tanh": produce(["kpflow", "analyze"], DATA / "rnn_tanh_small.json", tmp, "tanh"),
            "gru": produce(["verify", "rnn"], DATA / "gru_small.json", tmp, "gru"),
            "w": produce(["kpflow", "analyze"], WEIGHTS, tmp, "w")}


def test_untouched_documents_recheck_bound_in_a_fresh_process(docs, tmp_path):
    files = []
    for name, doc in docs.items():
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(doc))
    out = flowcert("recheck", *map(str, files), "--json")
    assert out.returncode == 0, out.stdout
    got = json.loads(out.stdout)
    assert got["refused"] == [] and got["holds_unbound"] == [] and got["rechecked"] is True
    assert got["unbound"] == 0 and got["certificates"] == got["bound"] == 30  # 10 per document
    strict = flowcert("recheck", "--strict", *map(str, files))
    assert strict.returncode == 0, strict.stdout


def test_every_holds_and_fails_carries_a_certificate(docs):
    for doc in docs.values():
        for t in doc["theorems"]:
            for h in t["hypotheses"]:
                assert (h["certificate"] is not None) == (h["status"] in ("holds", "fails")), (t["id"], h["name"])
        c = doc["certificates"][0]
        assert c["status"] == "holds" and c["certificate"]["subject"] == {"jacobians": "derived.jacobians"}
        assert len(c["certificate"]["data"]["jacobians"]) == doc["params"]["B"] * doc["params"]["T"]  # kept: a contract


# --- each forgery of the issue, with the path it must be refused at ---------------------------------------


def _computed(doc) -> list[str]:
    """The certificates about the Jacobians: the contraction and Thm 2's invertibility."""
    return [CONTRACTION, hyp(doc, "kpflow:thm-2", INV)[0] + ".certificate"]


def forge_seed(doc):
    doc["params"]["seed"] += 1  # weights and inputs are drawn from the seed: other Jacobians
    return _computed(doc)


def forge_gain(doc):
    doc["params"]["g"] = 0.9
    return _computed(doc)


def forge_step(doc):
    doc["params"]["dt"] = 0.2
    return _computed(doc)


def forge_weight(doc):
    doc["params"]["weights"]["W"][0][0] += 0.125
    return _computed(doc)


def forge_input_weight(doc):
    doc["params"]["weights"]["W_in"][2][1] -= 0.5
    return _computed(doc)


def forge_trials(doc):
    doc["params"]["B"] = 40  # more trials than any certificate speaks of: refused, never computed
    return _computed(doc)


def forge_diverging_gain(doc):
    doc["params"].update(g=1000.0, dt=1.0)
    return _computed(doc)


def forge_cell(doc):
    doc["params"]["cell"] = "torch_rnn"  # smooth too, and also 'one of the cells': another subject all the same
    return [hyp(doc, "kpflow:prop-1", SMOOTH)[0] + ".certificate", hyp(doc, "kpflow:thm-1", ONCE)[0] + ".certificate"]


def forge_contraction_of_other_data(doc):
    d = doc["certificates"][0]["certificate"]["data"]  # X, rho^2 of another trajectory (the GRU's), kept valid
    d.update(X=[["1", "0", "0", "0"], ["0", "1", "0", "0"], ["0", "0", "1", "0"], ["0", "0", "0", "1"]],
             kappa_upper="1", rho2="1/4")
    return [CONTRACTION]


def forge_carried_jacobian(doc):
    J = doc["certificates"][0]["certificate"]["data"]["jacobians"]
    J[3][1][2] = str(Fraction(J[3][1][2]) + Fraction(1, 10**6))  # far beyond rounding noise
    return [CONTRACTION]


def forge_outer_fails_to_holds(doc):
    path, h = hyp(doc, "kpflow:thm-1", OUTER)
    assert h["status"] == "fails" and h["certificate"] is not None
    h["status"] = "holds"
    return [path + ".certificate", "$.theorems[2].applies"]


def forge_remove_certificates_all_hold(doc):
    paths = []
    for i, t in enumerate(doc["theorems"]):
        for j, h in enumerate(t["hypotheses"]):
            h["certificate"], h["status"] = None, "holds"
            paths.append(f"$.theorems[{i}].hypotheses[{j}]")
        t["applies"] = True
    doc["certificates"][0]["certificate"] = None
    return paths + ["$.certificates[0].status"]


def forge_contraction_removed(doc):
    del doc["certificates"][0]
    return ["$.certificates"]


def forge_swap_names(doc):
    a, ha = hyp(doc, "kpflow:thm-1", ONCE)
    b, hb = hyp(doc, "kpflow:thm-1", OUTER)
    ha["name"], hb["name"] = hb["name"], ha["name"]
    return [a + ".certificate", b + ".certificate"]


def forge_rename_to_another_entry(doc):
    path, h = hyp(doc, "kpflow:thm-2", INV)
    h["name"] = SMOOTH
    return [path + ".name"]


def forge_claim_texts(doc):
    paths = false_claims(doc)
    doc["certificates"][0]["certificate"]["claim"] = "the trajectory diverges"
    return paths + [CONTRACTION]


def forge_move_certificate(doc):
    _, src = hyp(doc, "kpflow:thm-1", ONCE)  # one_of params.cell, true: but with another list of cells
    dst, h = hyp(doc, "kpflow:prop-1", SMOOTH)
    h["certificate"] = copy.deepcopy(src["certificate"])
    return [dst + ".certificate"]


def forge_identity_swapped(doc):
    path, h = hyp(doc, "kpflow:thm-1", GRAM)
    h["certificate"]["data"]["identity"] = "consensus:lemma_5_1"  # proved, but another identity
    h["certificate"]["claim"] = "the identity consensus:lemma_5_1 holds for every parameter value"
    return [path + ".certificate"]


def forge_subject_elsewhere(doc):
    path, h = hyp(doc, "kpflow:prop-1", SMOOTH)
    h["certificate"]["subject"] = {"x": "params.task"}
    doc["certificates"][0]["certificate"]["subject"] = {"jacobians": "params.weights"}
    return [path + ".certificate", CONTRACTION]


def forge_contraction_subject_stripped(doc):
    c = doc["certificates"][0]["certificate"]
    del c["subject"], c["digest"]
    return [CONTRACTION]


def forge_invertibility_subject_elsewhere(doc):
    path, h = hyp(doc, "kpflow:thm-2", INV)  # a hypothesis's subject is the catalogue's, whatever the copy says
    h["certificate"]["subject"] = {"jacobians": "params.weights"}
    return [path + ".certificate"]


def forge_protocol(doc):
    doc["protocol"]["descent"] = "adam"
    return ["$.protocol", hyp(doc, "kpflow:prop-1", GD)[0] + ".certificate"]


def forge_prediction(doc):
    i = next(i for i, t in enumerate(doc["theorems"]) if t["id"] == "kpflow:thm-2")
    doc["theorems"][i]["prediction"]["certified_lyapunov_upper"] -= 0.5
    return [f"$.theorems[{i}].prediction.certified_lyapunov_upper"]


def forge_applies(doc):
    i = next(i for i, t in enumerate(doc["theorems"]) if t["applies"] is False)
    doc["theorems"][i]["applies"] = True
    return [f"$.theorems[{i}].applies"]


def forge_theorem_removed(doc):
    del doc["theorems"][3]  # Thm 2 and its certified invertibility: the document says less than it must
    return ["$.theorems"]


def forge_unknown_theorem(doc):
    doc["theorems"][0]["id"] = "kpflow:thm-9"
    return ["$.theorems[0].id"]


FORGERIES = {"tanh": [forge_seed, forge_gain, forge_step, forge_trials, forge_diverging_gain, forge_cell, forge_contraction_of_other_data,
                      forge_carried_jacobian, forge_remove_certificates_all_hold, forge_contraction_removed,
                      forge_rename_to_another_entry, forge_claim_texts, forge_move_certificate, forge_identity_swapped,
                      forge_subject_elsewhere, forge_contraction_subject_stripped, forge_invertibility_subject_elsewhere,
                      forge_protocol, forge_prediction, forge_theorem_removed, forge_unknown_theorem],
             "gru": [forge_outer_fails_to_holds, forge_swap_names, forge_applies],
             "w": [forge_weight, forge_input_weight]}
ALL = [(name, f) for name, fs in FORGERIES.items() for f in fs]


@pytest.mark.parametrize("name,forge", ALL, ids=[f.__name__ for _, f in ALL])
def test_each_forgery_is_refused_at_its_path(name, forge, docs):
    assert_refused_at(docs[name], forge)


def test_a_contraction_transplanted_from_another_document_is_refused(docs):
    """The GRU's contraction record (valid for its own Jacobians, same H) in the rnn_tanh document."""
    forged = copy.deepcopy(docs["tanh"])
    forged["certificates"][0] = copy.deepcopy(docs["gru"]["certificates"][0])
    assert CONTRACTION in refusals(forged)


def test_every_forgery_exits_3_through_the_cli(docs, tmp_path):
    """All forgeries in one fresh process: exit 3, and each file refused at its forged paths."""
    assert_all_refused_through_the_cli([(docs[name], forge) for name, forge in ALL], tmp_path)


def test_rounding_noise_in_the_carried_jacobians_is_checked_on_the_rederived_ones(docs):
    """A platform's last-bit difference (one ulp in a carried Jacobian) does not unbind the certificate: the
    checker runs on the Jacobians re-derived from params; beyond rounding noise it is refused."""
    forged = copy.deepcopy(docs["tanh"])
    J = forged["certificates"][0]["certificate"]["data"]["jacobians"]
    v = Fraction(J[0][0][0])
    J[0][0][0] = str(v + v * Fraction(1, 2**52))
    check = recheck_document(forged)
    assert not check.refused and check.unbound == 0 and check.bound == 10
    J[0][0][0] = str(v + Fraction(1, 2**20))
    assert CONTRACTION in {p for p, _, _ in recheck_document(forged).refused}


def test_python_recheck_gives_the_same_counts(docs):
    from flowcert.certificates import recheck_document as public

    got = public(docs["gru"])
    assert (got.bound, got.unbound, got.refused, got.rechecked) == (10, 0, [], True)


def test_a_users_module_is_unbound_not_refused():
    """A user's torch cell: its weights are not in the document, so the Jacobians cannot be re-derived; the
    certificates about them prove their claims for the data they carry (unbound), and the document is not
    called re-checked."""
    torch = pytest.importorskip("torch")
    import flowcert

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(2, 4, 2, dtype=torch.float64)
    check = flowcert.verify("rnn", torch.nn.RNNCell(2, 3).double(), inputs=x).recheck()  # Result.recheck()
    assert not check.refused, check.refused
    assert check.unbound >= 1 and check.holds_unbound and not check.rechecked


@pytest.mark.slow
def test_linear_cell_binds_its_bounded_real_certificate(tmp_path):
    doc = produce(["kpflow", "analyze"], LINEAR, tmp_path, "lin")
    assert [c["name"] for c in doc["certificates"]] == ["common quadratic Lyapunov contraction",
                                                        "||P|| <= gamma (bounded-real lemma)"]
    f = tmp_path / "lin.json"
    f.write_text(json.dumps(doc))
    out = flowcert("recheck", str(f), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["unbound"] == 0 and got["bound"] == 11 and got["holds_unbound"] == []
    forged = copy.deepcopy(doc)
    forged["params"]["seed"] += 1  # A = 0.9 g Q, Q drawn from the seed
    assert "$.certificates[1].certificate" in refusals(forged)


@pytest.mark.slow
def test_relu_cell_binds_its_smoothness_to_the_states(tmp_path):
    """The ReLU cell is differentiable along the run when no state z_{t-1} (t >= 2) is 0: a predicate of the
    states re-derived from params, so another seed or a copy off the states is refused."""
    doc = produce(["kpflow", "analyze"], {"cell": "relu_rnn", "B": 2, "T": 4, "H": 3, "I": 2, "seed": 1}, tmp_path, "relu")
    check = recheck_document(doc)
    assert not check.refused and not check.holds_unbound and check.unbound == 0 and check.bound == 10
    path, h = hyp(doc, "kpflow:prop-1", SMOOTH)
    assert h["certificate"]["subject"] == {"M": "derived.relu_states"}
    forged = copy.deepcopy(doc)
    forged["params"]["seed"] = 2
    assert path + ".certificate" in refusals(forged)
    forged = copy.deepcopy(doc)
    _, fh = hyp(forged, "kpflow:prop-1", SMOOTH)
    fh["certificate"]["data"]["M"][0][0] = "0"  # a kink where the run has none
    assert path + ".certificate" in refusals(forged)


@st.composite
def rnn_params(draw):
    return {"cell": draw(st.sampled_from(["rnn_tanh", "torch_rnn", "gru"])), "B": draw(st.integers(1, 3)),
            "T": draw(st.integers(2, 6)), "H": draw(st.integers(2, 4)), "I": draw(st.integers(1, 3)),
            "seed": draw(st.integers(0, 9)), "g": eighths(draw, 0.25, 1.5)}


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=rnn_params(), key=st.sampled_from(["seed", "g", "B", "T"]))
def test_random_parameters_bind_and_any_perturbation_is_refused(params, key, tmp_path):
    """Random valid parameters: the document re-checks bound (exit 0, fresh process); one bound parameter
    changed with the certificates kept: exit 3."""
    doc = produce(["kpflow", "analyze"], params, tmp_path, "random")
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(doc))
    out = flowcert("recheck", "--strict", str(f), "--json")
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout)["holds_unbound"] == []
    forged = copy.deepcopy(doc)
    forged["params"][key] += 1 if key != "g" else 0.125
    f.write_text(json.dumps(forged))
    assert flowcert("recheck", str(f)).returncode == 3
