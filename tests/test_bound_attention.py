"""A document no one has to trust (issue 38), for the ``attention`` system: ``verify attention`` and
``equilibria attention`` documents are bound to their parameters, and every forgery is refused.

Each forgery edits a real document written by the CLI and must make ``flowcert recheck`` exit 3 in a
fresh process, with the refusal at exactly the JSON path of what was forged. The untouched documents
exit 0 with every ``holds`` bound. The expectations are the structure of the forgery (which path was
edited), never an output of the code under test.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from flowcert.certificates import core
from flowcert.recheck import recheck_document
from forgery_helpers import (assert_all_refused_through_the_cli, assert_refused_at, eighths, false_claims,
                             flowcert, hyp, refusals, remove_every_certificate)

DATA = Path(__file__).parent / "data" / "attention"


def produce(command: str, params: dict | Path, tmp: Path, name: str) -> dict:
    path = params if isinstance(params, Path) else tmp / f"{name}.params.json"
    if not isinstance(params, Path):
        path.write_text(json.dumps(params))
    out = flowcert(command, "attention", "--params", str(path), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, dict]:
    """multistable_d3 (no X0: tokens drawn from the seed; heads Q, K), consensus_fig4 (causal, X0 given,
    time-varying P), consensus_fig1 (W = P given), and the equilibria of multistable_d3."""
    tmp = tmp_path_factory.mktemp("bound_attention")
    return {"ms": produce("verify", DATA / "multistable_d3.json", tmp, "ms"),
            "fig4": produce("verify", DATA / "consensus_fig4.json", tmp, "fig4"),
            "fig1": produce("verify", DATA / "consensus_fig1.json", tmp, "fig1"),
            "eq": produce("equilibria", DATA / "multistable_d3.json", tmp, "eq")}


def test_untouched_documents_recheck_bound_in_a_fresh_process(docs, tmp_path):
    files = []
    for name, doc in docs.items():
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(doc))
    out = flowcert("recheck", *map(str, files), "--json")
    assert out.returncode == 0, out.stdout
    got = json.loads(out.stdout)
    assert got["refused"] == [] and got["holds_unbound"] == [] and got["rechecked"] is True
    assert got["unbound"] == 0 and got["bound"] >= 300
    assert got["certificates"] == got["bound"]  # every certificate, also the equilibria's, is bound


# --- each forgery of the issue, with the path it must be refused at ---------------------------------------

V_SYM, LAM1 = "Assumption 1: V symmetric", "Assumption 1: lambda_1 simple"


def forge_V_not_symmetric(doc):
    doc["params"]["heads"][0]["V"][0][1] += 0.25  # parameters changed, certificates kept
    return [hyp(doc, "multistability:lemma-1", V_SYM)[0] + ".certificate",
            hyp(doc, "multistability:thm-2", LAM1)[0] + ".certificate"]


def forge_enclosure_of_another_V(doc):
    from flowcert.certificates.attention import multistability as cm

    path, h = hyp(doc, "multistability:lemma-1", LAM1)
    V = core.rational_matrix(np.diag([3.0, 2.0, 1.0]))
    other = cm.enclosure_certificate(V, cm.eigen_enclosure(V)).to_json()
    h["certificate"]["data"].update(other["data"])  # valid on its own: a saved V that is not params.heads[0].V
    return [path + ".certificate"]


def forge_fails_to_holds(doc):
    path, h = hyp(doc, "consensus:thm-3.1", "U_eta = I")
    assert h["status"] == "fails" and h["certificate"] is not None
    h["status"] = "holds"
    return [path + ".certificate"]


def forge_remove_certificates_all_hold(doc):
    paths = remove_every_certificate(doc)
    return paths[:4] + paths[-3:]


def forge_swap_names(doc):
    a, ha = hyp(doc, "consensus:thm-3.1", "h = 1")
    b, hb = hyp(doc, "consensus:thm-3.1", "U_eta = I")
    ha["name"], hb["name"] = hb["name"], ha["name"]
    return [a + ".certificate", b + ".certificate"]


def forge_P_renamed(doc):
    path, h = hyp(doc, "consensus:thm-3.1", "P > 0")
    h["name"] = "P = P^T > 0"  # the time-varying alternative: its not_symmetric certificate cannot decide that
    return [path + ".certificate"]


def forge_claim_texts(doc):
    paths = false_claims(doc)
    return paths[:3] + paths[-2:]


def forge_subject_elsewhere(doc):
    path, h = hyp(doc, "multistability:lemma-1", V_SYM)
    h["certificate"]["subject"] = {"M": "params.heads[0].K"}
    return [path + ".certificate"]


def forge_move_certificate(doc):
    _, src = hyp(doc, "consensus:lemma-6.1", "U constant")
    dst, h = hyp(doc, "consensus:lemma-6.1", "h = 1")
    h["certificate"] = copy.deepcopy(src["certificate"])
    return [dst + ".certificate"]


def forge_seed(doc):
    doc["seed"] += 1  # X0 is drawn from the seed: another seed, other tokens
    return [hyp(doc, "consensus:thm-4.1", "open hemisphere containing y_i(0) (SOCP witness v)")[0] + ".certificate",
            hyp(doc, "consensus:thm-5.1", "y_j(0) != -y_1(0) (j >= 2)")[0] + ".certificate"]


def forge_bound_of_other_heads(doc):
    path, h = hyp(doc, "consensus:lemma-4.1", "sup_t |P_eta(t)| <= b")
    h["certificate"]["data"]["heads"] = [{"constant": {"beta": 1.0, "K": np.eye(3).tolist()}}]  # bounded, not these
    return [path + ".certificate"]


def forge_K(doc):
    doc["params"]["heads"][0]["K"][0][0] += 0.5
    return [hyp(doc, "consensus:lemma-4.1", "sup_t |P_eta(t)| <= b")[0] + ".certificate",
            hyp(doc, "consensus:thm-3.1", "P > 0")[0] + ".certificate"]


def forge_causal(doc):
    doc["params"]["causal"] = True
    return [hyp(doc, "multistability:lemma-1", "model (1): one constant head, full attention, unit sphere")[0]
            + ".certificate", hyp(doc, "consensus:thm-3.1", "full attention")[0] + ".certificate"]


def forge_applies(doc):
    i = next(i for i, t in enumerate(doc["theorems"]) if t["applies"] is False)
    doc["theorems"][i]["applies"] = True
    return [f"$.theorems[{i}].applies"]


def forge_unknown_theorem(doc):
    doc["theorems"][0]["id"] = "multistability:thm-9"
    return ["$.theorems[0].id"]


def forge_antipodal_X0(doc):
    X0 = doc["params"]["X0"]
    X0[1] = [-x for x in X0[0]]
    return [hyp(doc, "consensus:thm-5.1", "y_j(0) != -y_1(0) (j >= 2)")[0] + ".certificate",
            hyp(doc, "consensus:thm-4.1", "open hemisphere containing y_i(0) (SOCP witness v)")[0] + ".certificate"]


def forge_lyapunov_of_another_matrix(doc):
    path, h = hyp(doc, "consensus:thm-5.1", "consensus_locally_stable")
    assert h["certificate"]["kind"] == "lyapunov"
    h["certificate"]["data"].update(J=[["-1"]], P=[["1"]], margin="1/2")  # -1 is Hurwitz: not the transverse matrix
    return [path + ".certificate"]


def forge_U_perturbed(doc):
    doc["params"]["heads"][0]["V"][0][0] += 2.0 ** -20  # still symmetric, another U
    return [hyp(doc, "consensus:thm-6.1", "U symmetric, lambda_max(U) > 0 simple")[0] + ".certificate",
            hyp(doc, "consensus:thm-6.1", "v^T y_i(0) of one strict sign for all i")[0] + ".certificate"]


def forge_W(doc):
    doc["params"]["W"][0][0] += 0.01
    return [hyp(doc, "consensus:lemma-4.1", "W = W^T > 0")[0] + ".certificate",
            hyp(doc, "consensus:thm-3.2", "tokens on E_P (W = P; erratum)")[0] + ".certificate"]


def _certified_class(doc, verdict: str) -> int:
    return next(i for i, c in enumerate(doc["classes"]) if c["verdict"] == verdict and c["certificate"])


def forge_class_verdict(doc):
    i = _certified_class(doc, "unstable")
    doc["classes"][i].update(verdict="stable", stable=True)
    return [f"$.classes[{i}].verdict"]


def forge_class_certificate_swapped(doc):
    doc["classes"][0]["certificate"] = copy.deepcopy(doc["classes"][1]["certificate"])  # valid, for another class
    return ["$.classes[0].certificate"]


def forge_class_subject_stripped(doc):
    c = doc["classes"][0]["certificate"]
    del c["subject"], c["digest"]
    return ["$.classes[0].certificate"]


def forge_equilibria_V(doc):
    V = doc["params"]["heads"][0]["V"]
    V[0][1] += 0.125
    V[1][0] += 0.125
    return ["$.classes[0].certificate"]


def _record(doc, stable) -> int:
    return next(j for j, e in enumerate(doc["equilibria"]) if e["eigvec_index"] is not None and e["stable"] is stable)


def forge_record_stable(doc):
    j = _record(doc, False)
    doc["equilibria"][j]["stable"] = True
    return [f"$.equilibria[{j}].stable"]


def forge_record_eigvec_index(doc):
    j = _record(doc, False)
    e = doc["equilibria"][j]
    e["eigvec_index"] = 1 if e["eigvec_index"] != 1 else 2
    return [f"$.equilibria[{j}].certificate"]


def forge_record_class(doc):
    j = next(j for j, e in enumerate(doc["equilibria"]) if e["class"] == ["consensus"])
    doc["equilibria"][j]["class"] = ["bipartite"]
    return [f"$.equilibria[{j}].class"]


FORGERIES = {"ms": [forge_V_not_symmetric, forge_enclosure_of_another_V, forge_fails_to_holds,
                    forge_remove_certificates_all_hold, forge_swap_names, forge_P_renamed, forge_claim_texts,
                    forge_subject_elsewhere, forge_move_certificate, forge_seed, forge_bound_of_other_heads, forge_K,
                    forge_causal, forge_applies, forge_unknown_theorem],
             "fig4": [forge_antipodal_X0, forge_lyapunov_of_another_matrix, forge_U_perturbed],
             "fig1": [forge_W],
             "eq": [forge_class_verdict, forge_class_certificate_swapped, forge_class_subject_stripped,
                    forge_equilibria_V, forge_record_stable, forge_record_eigvec_index, forge_record_class]}
ALL = [(name, f) for name, fs in FORGERIES.items() for f in fs]


@pytest.mark.parametrize("name,forge", ALL, ids=[f.__name__ for _, f in ALL])
def test_each_forgery_is_refused_at_its_path(name, forge, docs):
    assert_refused_at(docs[name], forge)


def test_a_certificate_transplanted_from_another_document_is_refused(docs):
    """fig1's P is PD: its pd certificate backs 'P > 0: holds' in the document of multistable_d3 (P not symmetric)."""
    _, good = hyp(docs["fig1"], "consensus:thm-3.1", "P > 0")
    forged = copy.deepcopy(docs["ms"])
    path, bad = hyp(forged, "consensus:thm-3.1", "P > 0")
    assert good["status"] == "holds" and bad["status"] == "fails"
    bad.update(status="holds", certificate=copy.deepcopy(good["certificate"]))
    assert path + ".certificate" in refusals(forged)


def test_every_forgery_exits_3_through_the_cli(docs, tmp_path):
    """All forgeries in one fresh process: exit 3, and each file refused at its forged paths."""
    assert_all_refused_through_the_cli([(docs[name], forge) for name, forge in ALL], tmp_path)


# --- random valid parameters: bound; one entry of a bound parameter perturbed: refused -------------------


@st.composite
def attention_params(draw):
    d = 3
    V = [[0.0] * d for _ in range(d)]
    for i in range(d):
        for j in range(i, d):
            V[i][j] = V[j][i] = eighths(draw, -1, 1)
    Q = [[eighths(draw, -1, 1) for _ in range(d)] for _ in range(d)]
    K = [[eighths(draw, -1, 1) for _ in range(d)] for _ in range(d)]
    return {"V": V, "Q": Q, "K": K, "n": draw(st.integers(2, 5)), "seed": draw(st.integers(0, 9)), "t_end": 5}


def _perturbed(doc: dict, key: str, k: int) -> dict:
    forged = copy.deepcopy(doc)
    i, j = divmod(k, 3)
    forged["params"]["heads"][0][key][i][j] += 2.0 ** -20
    return forged


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attention_params(), st.sampled_from(["V", "Q", "K"]), st.integers(0, 8))
def test_random_parameters_bind_and_any_perturbation_is_refused(params, key, k, tmp_path):
    doc = produce("verify", params, tmp_path, "random")
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(doc))
    out = flowcert("recheck", str(f), "--json")
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout)["holds_unbound"] == []
    f.write_text(json.dumps(_perturbed(doc, key, k)))
    assert flowcert("recheck", str(f)).returncode == 3


def test_one_random_document_binds_and_a_perturbed_entry_is_refused(tmp_path):
    """The default-suite instance of the property above (one draw, in-process recheck)."""
    rng = np.random.default_rng(38)
    A = rng.integers(-8, 9, (3, 3)) / 8
    params = {"V": ((A + A.T) / 2).tolist(), "Q": (rng.integers(-8, 9, (3, 3)) / 8).tolist(),
              "K": (rng.integers(-8, 9, (3, 3)) / 8).tolist(), "n": 4, "seed": 3, "t_end": 5}
    doc = produce("verify", params, tmp_path, "one")
    check = recheck_document(doc)
    assert not check.refused and not check.holds_unbound and check.unbound == 0
    for key in ("V", "Q", "K"):
        assert recheck_document(_perturbed(doc, key, 0)).refused, key


@pytest.mark.slow
def test_every_repository_example_rechecks_bound(tmp_path):
    """Every parameter file of tests/data/attention (verify, and equilibria where it enumerates)."""
    files = []
    for p in sorted(DATA.glob("*.json")):
        if "X_near" in json.loads(p.read_text()):
            continue
        for command in ("verify", "equilibria"):
            out = flowcert(command, "attention", "--params", str(p), "--json")
            if command == "equilibria" and out.returncode != 0:
                continue  # not model (1) with one constant head: runs to rest, nothing certified to bind
            assert out.returncode == 0, out.stderr
            files.append(tmp_path / f"{p.stem}.{command}.json")
            files[-1].write_text(out.stdout)
    out = flowcert("recheck", *map(str, files), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["refused"] == [] and got["holds_unbound"] == [] and got["unbound"] == 0
