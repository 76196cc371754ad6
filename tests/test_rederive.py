"""Re-derivation (issue 44): a verify document is what flowcert computes on its own parameters, or recheck refuses
it. Each forgery class of the issue, made on a real document, is refused with its JSON path; the untouched
documents re-check; exact rescalings keep a regime read off a run; a bounded mutation study finds no accepted
mutation of a derived field."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flowcert.documents import plain, verify_document
from flowcert.recheck import recheck_document
from flowcert.rederive import field_class

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from document_mutations import leaves, path_text, perturbed  # noqa: E402  (the study's own edits, in a bounded sample)

DATA = Path(__file__).parent / "data"


def gaussian_doc(params: dict, simulate: bool = False) -> dict:
    return plain(verify_document("gaussian", params, simulate=simulate))


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return {
        "stable": gaussian_doc(load("gaussian_stable_2d.json")),
        "stable_sim": gaussian_doc(load("gaussian_stable_2d.json"), simulate=True),
        "bistable_sim": gaussian_doc(load("cli/gaussian_bistable_pd_2d.json"), simulate=True),
        "blowup": gaussian_doc(load("cli/gaussian_blowup_2d.json")),
        "erratum": gaussian_doc({"A": [[1.0, 4.0], [0.0, 1.0]], "B": [[1.0, 0.0], [0.0, 1.0]],
                                 "V": [[-1.0, 0.0], [0.0, -1.0]], "b": [0.0, 0.0], "mu0": [1.0, 1.0],
                                 "Sigma0": [[1.0, 0.0], [0.0, 1.0]]}),
        "attention": plain(verify_document("attention", load("attention/multistable_d3.json"))),
    }


def refused(doc: dict) -> list[str]:
    return [p for p, _, _ in recheck_document(json.loads(json.dumps(doc, allow_nan=False))).refused]


def theorem(doc: dict, tid: str) -> dict:
    return next(t for t in doc["theorems"] if t["id"] == tid)


def test_untouched_documents_recheck(docs):
    for name, doc in docs.items():
        out = recheck_document(doc)
        assert not out.refused, (name, out.refused)
        assert out.rederived
    assert recheck_document(docs["stable_sim"]).records_not_rerun > 0


def forge(doc: dict, edit) -> dict:
    d = copy.deepcopy(doc)
    edit(d)
    return d


def test_regime_forgeries_are_refused(docs):
    # no simulation ran: the regime is the re-derived "unknown", not a limit written in
    fake = forge(docs["stable"], lambda d: d["regime"].update(Sigma="converges_pd", Sigma_inf=[[7.0, 0.0], [0.0, 7.0]]))
    assert "$.regime.Sigma" in refused(fake) and "$.regime.Sigma_inf" in refused(fake)
    # the certified blow-up bound (Thm 4.8) moved
    fake = forge(docs["blowup"], lambda d: d["regime"].update(blowup_time_upper_bound=0.001))
    assert set(refused(fake)) == {"$.regime.blowup_time_upper_bound"}
    # after a run: the limit, the mean and the class are those of the certified equilibrium
    fake = forge(docs["bistable_sim"], lambda d: d["regime"].update(mu_inf=[0.3, 1.0]))
    assert "$.regime.mu_inf[0]" in refused(fake)
    fake = forge(docs["bistable_sim"], lambda d: d["regime"].update(mu="diverges"))
    assert "$.regime.mu" in refused(fake)
    fake = forge(docs["bistable_sim"], lambda d: d["regime"].update(Sigma="converges_singular"))
    assert "$.regime.Sigma" in refused(fake)


def test_status_and_structure_forgeries_are_refused(docs):
    doc = docs["stable"]
    i, t = next((i, t) for i, t in enumerate(doc["theorems"]) if any(h["status"] == "fails" for h in t["hypotheses"]))
    failing = [j for j, h in enumerate(t["hypotheses"]) if h["status"] == "fails"]

    def drop_failing(d):
        th = d["theorems"][i]
        th["hypotheses"] = [h for j, h in enumerate(th["hypotheses"]) if j not in failing]
        th["applies"] = True

    assert any(p.startswith(f"$.theorems[{i}]") for p in refused(forge(doc, drop_failing)))

    def assumed(d):
        for h in d["theorems"][i]["hypotheses"]:
            if h["status"] == "fails":
                h["status"] = "assumed"
        d["params"]["assume"] = ["smooth"]

    assert refused(forge(doc, assumed))
    holds = next((k, j) for k, th in enumerate(doc["theorems"]) for j, h in enumerate(th["hypotheses"])
                 if h["status"] == "holds")
    assert refused(forge(doc, lambda d: d["theorems"][holds[0]]["hypotheses"][holds[1]].update(status="fails")))
    for edit in (lambda d: d["theorems"][0].update(statement="x = y"),
                 lambda d: next(t for t in d["theorems"] if t["correction"] is not None).update(correction=None),
                 lambda d: d["theorems"].append(copy.deepcopy(d["theorems"][0])),
                 lambda d: d["theorems"].pop(3),
                 lambda d: d["theorems"].reverse(),
                 lambda d: d.update(theorems={t["id"]: t for t in d["theorems"]})):
        assert refused(forge(doc, edit))


def test_stale_predictions_and_refused_parameters(docs):
    doc = docs["stable"]
    assert refused(forge(doc, lambda d: d["params"].update(mu0=[-x for x in d["params"]["mu0"]])))
    for bad in (-1.0, None, 0.0):
        assert any(p.startswith("$.params") for p in refused(forge(doc, lambda d: d["params"].update(t_end=bad))))
    assert "$.params" in refused(forge(doc, lambda d: d["params"]["A"][0].__setitem__(0, None)))
    att = docs["attention"]
    other = "ellipsoid" if att["params"]["normalization"] != "ellipsoid" else "sphere"
    assert refused(forge(att, lambda d: d["params"].update(normalization=other)))
    assert refused(forge(att, lambda d: d["params"].update(d=4)))


@pytest.mark.parametrize("text", ['{"flowcert": "0.1.0", "system": "gaussian", "x": NaN}',
                                  '{"flowcert": "0.1.0", "system": "gaussian", "x": Infinity}',
                                  '{"flowcert": "0.1.0", "system": "gaussian", "x": 0.' + "1" * 300 + '}'])
def test_literals_flowcert_never_writes_are_refused(tmp_path, text):
    from flowcert.errors import ParamError
    from flowcert.recheck import read_documents

    f = tmp_path / "doc.json"
    f.write_text(text)
    with pytest.raises(ParamError, match="not a flowcert document"):
        read_documents(f)


def test_system_must_be_flowcerts_and_match_the_parameters(docs):
    assert "$.system" in refused(forge(docs["stable"], lambda d: d.update(system="gaussianx")))
    assert refused(forge(docs["stable"], lambda d: d.update(system="attention")))
    assert refused(forge(docs["stable"], lambda d: d.pop("params")))
    assert "$.system" in refused(forge(docs["stable"], lambda d: d.update(system="pretrained")))


def scaled(params: dict, k: float) -> dict:
    """Sigma -> Sigma / k with B -> k B maps solutions of eq. (7) to solutions (mu unchanged)."""
    return {**params, "B": (k * np.array(params["B"])).tolist(), "Sigma0": (np.array(params["Sigma0"]) / k).tolist()}


@pytest.mark.parametrize("k", [2.0 ** -33, 2.0 ** 20])
def test_a_regime_read_off_a_run_is_scale_free(k):
    """Exact rescalings (powers of 2) of the bistable case keep its simulation-based class, converges_pd, and map
    its limit to the limit / k; every document re-checks."""
    base = load("cli/gaussian_bistable_pd_2d.json")
    d1, dk = gaussian_doc(base, simulate=True), gaussian_doc(scaled(base, k), simulate=True)
    assert d1["regime"]["Sigma"] == dk["regime"]["Sigma"] == "converges_pd"
    assert np.allclose(np.array(dk["regime"]["Sigma_inf"]) * k, d1["regime"]["Sigma_inf"], rtol=1e-8, atol=0)
    assert "observed" in dk["regime"]["argument"] and "not proved" in dk["regime"]["argument"]
    assert not recheck_document(dk).refused


def test_field_classes():
    assert field_class("$.simulation") == field_class("$.theorems[3].cross_check") == "record"
    assert field_class("$.theorems[0].hypotheses[1].certificate.data") == "certified"
    assert field_class("$.regime.mu_inf") == field_class("$.theorems[2].prediction") == "derived"


@pytest.mark.parametrize("name", ["stable", "stable_sim", "blowup", "erratum", "attention"])
def test_mutation_study_accepts_no_false_derived_field(docs, name):
    """Every mutated leaf of a derived field, in a bounded seeded sample, is refused or leaves the document equal to
    its re-derivation; records (runs, cross-checks) and certificate data are the checkers' and the --rerun's."""
    doc = docs[name]
    rng = random.Random(44)
    cands = [(p, v) for p, v in leaves(doc) if field_class(path_text(p)) == "derived"
             and not any(field_class(path_text(p[:i])) != "derived" for i in range(1, len(p)))]
    accepted = []
    for p, v in rng.sample(cands, min(40, len(cands))):
        d = copy.deepcopy(doc)
        node = d
        for k in p[:-1]:
            node = node[k]
        node[p[-1]] = perturbed(v)
        if p[:2] == ("params", "t_end") and "simulation" not in doc:
            continue  # t_end enters only a run: a document without one is re-derived equal (harmless)
        if not refused(d):
            accepted.append(path_text(p))
    assert not accepted, accepted


def test_recheck_in_a_fresh_process_refuses_a_forged_regime(docs, tmp_path):
    fake = forge(docs["blowup"], lambda d: d["regime"].update(blowup_time_upper_bound=0.001))
    f = tmp_path / "forged.json"
    f.write_text(json.dumps(fake))
    proc = subprocess.run([sys.executable, "-m", "flowcert", "recheck", str(f), "--json"], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    out = json.loads(proc.stdout)
    assert {r["path"] for r in out["refused"]} == {"$.regime.blowup_time_upper_bound"}


def test_rnn_documents_are_rederived():
    """``verify rnn`` of a parameter file: re-derived in its operator mode (identities, ranks, numerical predictions
    and consensus are records); a changed parameter, status or reordered theorem is refused. A user's module
    cannot be re-derived (its weights are not in the document) and is said not to be."""
    doc = plain(verify_document("rnn", load("rnn/gru_small.json")))
    out = recheck_document(doc)
    assert not out.refused and out.rederived
    assert refused(forge(doc, lambda d: d["params"].update(g=0.9)))
    assert refused(forge(doc, lambda d: d["theorems"][3]["hypotheses"][0].update(status="fails")))
    assert refused(forge(doc, lambda d: d["theorems"].reverse()))
    assert refused(forge(doc, lambda d: d.update(operator_mode="recompute"))) == []  # the same verdicts either way
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    res = __import__("flowcert").verify("rnn", torch.nn.RNNCell(2, 3).double(), inputs=torch.randn(2, 3, 2, dtype=torch.float64))
    assert not recheck_document(res.to_json()).rederived


def test_one_table1_entry_never_takes_the_others_down(monkeypatch):
    """Issue 44, item 7: a Table 1 entry that raises is undecided alone, with the reason; the others and the regime
    are decided as without it."""
    from flowcert.gaussian import asymptotics

    params = load("cli/gaussian_blowup_2d.json")
    before = gaussian_doc(params)

    def broken(*a, **k):
        raise np.linalg.LinAlgError("a singular matrix in one entry")

    monkeypatch.setattr(asymptotics, "thm_4_7_1", broken)
    after = gaussian_doc(params)
    for t0, t1 in zip(before["theorems"], after["theorems"]):
        if t0["id"] == "gaussian:thm-4.7.1":
            assert t1["applies"] is None and "LinAlgError" in json.dumps(t1)
        else:
            assert t1 == t0, t0["id"]
    assert after["regime"] == before["regime"]


def test_equilibria_documents_are_rederived():
    """``equilibria attention`` names its cap (added) and is re-derived with it: flipping ``causal`` (whose model has
    no exact enumeration) with the certified classes kept, or dropping a class, is refused."""
    from flowcert.systems import get_system

    system = get_system("attention")
    doc = plain(system.equilibria(system.load(load("attention/multistable_d3.json")))[0])
    assert isinstance(doc["cap"], int)
    assert not recheck_document(doc).refused and recheck_document(doc).rederived
    assert "$.classes" in refused(forge(doc, lambda d: d["params"].update(causal=True)))
    assert refused(forge(doc, lambda d: d["classes"].pop()))
    assert refused(forge(doc, lambda d: d["equilibria"][0].update(stable=not d["equilibria"][0]["stable"])))


def test_thm_3_3_states_the_exact_rank():
    """Issue 44, item 6: Sigma0 = [[1, 1 - 2^-40], [1 - 2^-40, 1]] has rank 2 exactly (Lemma 3.1's certificate); Thm
    3.3's prediction says rank 2, not a float threshold's 1."""
    e = 1 - 2.0 ** -40
    doc = gaussian_doc({"A": [[-1.0, 0.0], [0.0, -1.0]], "B": [[0.5, 0.0], [0.0, 0.5]], "V": [[-0.2, 0.0], [0.0, -0.2]],
                        "b": [0.0, 0.0], "mu0": [1.0, 1.0], "Sigma0": [[1.0, e], [e, 1.0]]})
    assert theorem(doc, "gaussian:lemma-3.1")["prediction"]["rank"] == 2
    assert "of rank 2," in theorem(doc, "gaussian:thm-3.3")["prediction"]["reachable_set"]
    from flowcert.numeric.gaussian.reach import numerical_rank

    assert numerical_rank(np.array([[1.0, e], [e, 1.0]])) == 1  # what the float threshold said before


def test_assumed_only_for_the_hypothesis_an_assumption_names():
    """Issue 44, item 4: with params.assume = ["smooth"], only 'F differentiable' may be 'assumed'; laundering another
    hypothesis (here a refuted or a certified one) through 'assumed' is refused, even where nothing is re-derived."""
    torch = pytest.importorskip("torch")
    import flowcert

    torch.manual_seed(0)
    cell = torch.nn.RNNCell(2, 3, nonlinearity="relu").double()
    doc = flowcert.verify("rnn", cell, inputs=torch.randn(2, 3, 2, dtype=torch.float64), assume=["smooth"]).to_json()
    assert not recheck_document(doc).refused
    th = doc["theorems"][3]  # Thm 2: 'every A_t invertible'

    def launder(d):
        h = d["theorems"][3]["hypotheses"][0]
        h.update(status="assumed", certificate=None)

    assert th["hypotheses"][0]["name"] == "every A_t invertible"
    assert "$.theorems[3].hypotheses[0].status" in refused(forge(doc, launder))


def test_a_modules_float_certificates_without_their_stack_are_unchecked_not_refused(tmp_path):
    """A user's module above the exact budget gets rigorous-float certificates about a Jacobian stack kept in memory
    or a side file; re-checked in a fresh process without that file they are unchecked (nothing to check them on),
    never refused: the document is not called re-checked, and exit 0."""
    torch = pytest.importorskip("torch")
    import flowcert

    torch.manual_seed(0)
    res = flowcert.verify("rnn", torch.nn.GRUCell(3, 16).double(), inputs=torch.randn(4, 20, 3, dtype=torch.float64))
    doc = res.to_json()
    assert doc["certificates"][0]["certificate"]["kind"] == "contraction_float"
    f = tmp_path / "module.json"
    f.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "flowcert", "recheck", str(f), "--json"], capture_output=True,
                          text=True, cwd=tmp_path)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["refused"] == [] and len(out["unchecked"]) >= 1 and not out["rechecked"]


def _command_docs(tmp_path) -> dict[str, dict]:
    from flowcert.gaussian.reach import run
    from flowcert.systems import get_system

    spec = {"Sigma_inf": [[2.0, 0.5], [0.5, 1.0]], "K": [[0.0, 1.0], [-1.0, 0.0]], "V": [[1.0, 0.0], [0.0, 1.0]],
            "B": [[0.5, 0.0], [0.0, 0.25]]}
    start = dict(load("gaussian_stable_2d.json"), Sigma0=[[1.0, 0.0], [0.0, 2.0]])
    (tmp_path / "start.json").write_text(json.dumps(start))
    (tmp_path / "target.json").write_text(json.dumps({"mu": [1.0, 0.5], "Sigma": [[2.0, 0.3], [0.3, 1.0]]}))
    return {"design": plain(get_system("gaussian").design_document(spec)),
            "reach": plain(run(str(tmp_path / "start.json"), str(tmp_path / "target.json"), 1.0))}


def test_design_and_reach_documents_are_rederived(tmp_path):
    """``design gaussian`` is made again from its specification; ``reach gaussian``'s rank (exact), method, notes
    and inputs from its start, target and horizon, its integration a record checked by type and range. Every
    mutated derived leaf is refused; the reach inputs (start, target, T) are what the record was run on, which only
    a re-run could bind, so they are left out of the study (the summary counts the record as not re-run)."""
    for name, doc in _command_docs(tmp_path).items():
        out = recheck_document(doc)
        assert not out.refused and out.rederived, (name, out.refused)
        inputs = {"params", "target", "T"} if name == "reach" else set()
        cands = [(p, v) for p, v in leaves(doc) if p[0] not in inputs and field_class(path_text(p), "gaussian", doc)
                 == "derived" and not any(field_class(path_text(p[:i]), "gaussian", doc) != "derived"
                                          for i in range(1, len(p)))]
        assert len(cands) >= 8
        accepted = []
        for p, v in cands:
            d = copy.deepcopy(doc)
            node = d
            for k in p[:-1]:
                node = node[k]
            node[p[-1]] = perturbed(v)
            if not refused(d):
                accepted.append(path_text(p))
        assert not accepted, (name, accepted)
        assert refused(forge(doc, lambda d: d.update(extra=1))), name
        for key in doc:  # any one key removed (the one that made it a reach document too)
            if key not in ("flowcert", "system"):
                assert refused(forge(doc, lambda d, key=key: d.pop(key))), (name, key)
    reach = _command_docs(tmp_path)["reach"]
    assert reach["rank"] == 2 and reach["rank_basis"].startswith("exact")
    for edit in (lambda d: d["terminal_error"].update(mu=-1.0), lambda d: d["integration"].update(status="failed")):
        assert refused(forge(reach, edit))


def _first_certificate(doc: dict) -> dict:
    return next(h["certificate"] for t in doc["theorems"] for h in t["hypotheses"] if h.get("certificate"))


def test_certificate_data_keep_the_form_of_their_kind(docs):
    """The mutation study's certificate edits: a key added to a certificate's data (its checker ignores it) or an
    integer of the data (an index, an inertia count) turned into a float is refused, though the values of the data
    stay the checker's to judge."""
    doc = docs["erratum"]
    assert refused(forge(doc, lambda d: _first_certificate(d)["data"].update(extra=1)))
    with_int = [(t, h) for t in range(len(doc["theorems"])) for h, hyp in enumerate(doc["theorems"][t]["hypotheses"])
                if (hyp.get("certificate") or {}).get("data") and any(
                    isinstance(v, int) and not isinstance(v, bool) for v in hyp["certificate"]["data"].values())]
    assert with_int
    t, h = with_int[0]
    key = next(k for k, v in doc["theorems"][t]["hypotheses"][h]["certificate"]["data"].items()
               if isinstance(v, int) and not isinstance(v, bool))
    assert refused(forge(doc, lambda d: d["theorems"][t]["hypotheses"][h]["certificate"]["data"].update(
        {key: d["theorems"][t]["hypotheses"][h]["certificate"]["data"][key] + 0.25})))


def test_an_eigenvector_matrix_with_a_row_more_is_refused():
    """An equilibria class certificate whose eigenvector matrix U gains a row (its checker read only d rows) is
    refused: V, U and M of the bipartite-spectrum certificate are all d x d."""
    from flowcert.systems import get_system

    system = get_system("attention")
    doc = plain(system.equilibria(system.load(load("attention/multistable_d3.json")))[0])
    cls = next(i for i, c in enumerate(doc["classes"]) if (c.get("certificate") or {}).get("kind")
               == "attention_bipartite_spectrum")
    assert refused(forge(doc, lambda d: d["classes"][cls]["certificate"]["data"]["U"].append(
        list(d["classes"][cls]["certificate"]["data"]["U"][0]))))
