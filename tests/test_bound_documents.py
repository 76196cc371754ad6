"""A document no one has to trust (issue 38): every forgery of a verify gaussian document is refused.

Each forgery edits a real document written by ``flowcert verify gaussian --json`` and must make
``flowcert recheck`` exit 3 in a fresh process, with the refusal at exactly the JSON path of what was
forged. The untouched documents exit 0 with every ``holds`` bound. The expectations are the structure
of the forgery (which path was edited), never an output of the code under test.
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

DATA = Path(__file__).parent / "data"


def verify(params: dict | Path, tmp: Path, name: str) -> dict:
    path = params if isinstance(params, Path) else tmp / f"{name}.params.json"
    if not isinstance(params, Path):
        path.write_text(json.dumps(params))
    out = flowcert("verify", "gaussian", "--params", str(path), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("bound")
    stable = verify(DATA / "gaussian_stable_2d.json", tmp, "stable")
    blowup = verify(DATA / "cli" / "gaussian_blowup_2d.json", tmp, "blowup")
    return {"stable": stable, "blowup": blowup}


def test_untouched_documents_recheck_bound_in_a_fresh_process(docs, tmp_path):
    for name, doc in docs.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(doc))
        out = flowcert("recheck", str(f), "--json")
        assert out.returncode == 0, out.stdout
        got = json.loads(out.stdout)
        assert got["refused"] == [] and got["holds_unbound"] == [] and got["rechecked"] is True
        assert got["bound"] >= 30 and got["unbound"] <= 2


# --- each forgery of the issue, with the path it must be refused at ---------------------------------------


def forge_sigma0_indefinite(doc):
    doc["params"]["Sigma0"] = [[1.0, 0.0], [0.0, -1.0]]
    return [hyp(doc, "gaussian:prop-2.1", "Sigma0 >= 0")[0] + ".certificate"]


def forge_A_unstable(doc):
    doc["params"]["A"] = [[1.0, 0.0], [0.0, 1.0]]
    return [hyp(doc, "gaussian:thm-4.7.3", "Re spec(A) < 0")[0] + ".certificate"]


def forge_other_psd_matrix(doc):
    path, h = hyp(doc, "gaussian:prop-2.1", "Sigma0 >= 0")
    h["certificate"]["data"]["M"] = [["1", "0"], ["0", "1"]]  # PSD, valid on its own, not this Sigma0
    return [path + ".certificate"]


def forge_fails_to_holds(doc):
    path, h = hyp(doc, "gaussian:thm-4.7.3", "B > 0")
    assert h["status"] == "fails" and h["certificate"] is not None
    h["status"] = "holds"
    return [path + ".certificate"]


def forge_remove_certificates_all_hold(doc):
    paths = remove_every_certificate(doc, skip=("stage_within_budget", "size_within_limit", "entry_evaluated"))
    return paths[:3]


def forge_regime_blowup(doc):
    doc["regime"].update(Sigma="blows_up", basis="certified", blowup_time_upper_bound=0.5, argument="Theorem 4.8 (1)")
    return ["$.regime.Sigma"]


def forge_rename_B_to_V(doc):
    path, h = hyp(doc, "gaussian:thm-4.8.1", "B > 0")
    assert h["status"] == "holds"
    doc["params"]["V"] = [[-1.0, 0.0], [0.0, -1.0]]
    h["name"] = "V > 0"
    vpath, v = hyp(doc, "gaussian:thm-4.8.1", "V > 0")  # the first one: the real V > 0
    v["name"] = "B > 0"  # keep the names distinct and both present
    return [path + ".certificate"]


def forge_claim_texts(doc):
    paths = false_claims(doc)
    return paths[:3]


def forge_applies(doc):
    i = next(i for i, t in enumerate(doc["theorems"]) if t["applies"] is False)
    doc["theorems"][i]["applies"] = True
    return [f"$.theorems[{i}].applies"]


def forge_subject_elsewhere(doc):
    path, h = hyp(doc, "gaussian:prop-2.1", "Sigma0 >= 0")
    h["certificate"]["subject"] = {"M": "params.B"}
    return [path + ".certificate"]


def forge_move_certificate(doc):
    src, h = hyp(doc, "gaussian:thm-4.8.1", "V > 0")
    dst, g = hyp(doc, "gaussian:thm-4.8.1", "Sigma0 > 0")
    g["certificate"] = copy.deepcopy(h["certificate"])
    return [dst + ".certificate"]


def forge_unknown_theorem(doc):
    doc["theorems"][0]["id"] = "gaussian:thm-9.9"
    return ["$.theorems[0].id"]


STABLE_FORGERIES = [forge_sigma0_indefinite, forge_A_unstable, forge_other_psd_matrix, forge_fails_to_holds,
                    forge_remove_certificates_all_hold, forge_regime_blowup, forge_claim_texts, forge_applies,
                    forge_subject_elsewhere, forge_unknown_theorem]
BLOWUP_FORGERIES = [forge_rename_B_to_V, forge_move_certificate]


@pytest.mark.parametrize("forge", STABLE_FORGERIES + BLOWUP_FORGERIES, ids=lambda f: f.__name__)
def test_each_forgery_is_refused_at_its_path(forge, docs):
    assert_refused_at(docs["blowup" if forge in BLOWUP_FORGERIES else "stable"], forge)


def test_transplanted_lyapunov_certificate_is_refused(tmp_path):
    """A Lyapunov certificate of A = -I backs 'Re spec(A) < 0: holds' in the document of A = I."""
    base = json.loads((DATA / "gaussian_stable_2d.json").read_text())
    stable = verify({**base, "A": [[-1.0, 0.0], [0.0, -1.0]]}, tmp_path, "stable")
    unstable = verify({**base, "A": [[1.0, 0.0], [0.0, 1.0]]}, tmp_path, "unstable")
    _, good = hyp(stable, "gaussian:thm-4.7.3", "Re spec(A) < 0")
    path, bad = hyp(unstable, "gaussian:thm-4.7.3", "Re spec(A) < 0")
    assert good["status"] == "holds" and bad["status"] == "fails"
    bad.update(status="holds", certificate=good["certificate"])
    assert path + ".certificate" in refusals(unstable)


def test_bare_certificate_with_a_false_claim_is_refused():
    cert = core.Certificate("pd", "M is positive definite", {"M": core.encode(np.eye(2)), "margin": "0"}).to_json()
    assert recheck_document(cert).bound == 0 and not recheck_document(cert).refused
    cert["claim"] = "the identity matrix is NOT positive definite"
    assert recheck_document(cert).refused


def test_every_forgery_exits_3_through_the_cli(docs, tmp_path):
    """All forgeries in one fresh process: exit 3, and each file refused at its forged path."""
    assert_all_refused_through_the_cli([(docs["blowup" if f in BLOWUP_FORGERIES else "stable"], f)
                                        for f in STABLE_FORGERIES + BLOWUP_FORGERIES], tmp_path)


# --- random valid parameters: bound; any entry of any bound parameter perturbed: refused ---------------


@st.composite
def gaussian_params(draw):
    A = [[eighths(draw, -2, 2) for _ in range(2)] for _ in range(2)]
    B = [[eighths(draw, -1, 1) for _ in range(2)] for _ in range(2)]
    b12 = eighths(draw, -1, 1)
    V = [[eighths(draw, -1, 1), b12], [b12, eighths(draw, -1, 1)]]
    s = eighths(draw, 0.25, 2)
    return {"A": A, "B": B, "V": V, "b": [0.0, 0.0], "mu0": [0.5, -0.5], "Sigma0": [[s, 0.0], [0.0, 1.0]], "t_end": 1.0}


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=gaussian_params(), key=st.sampled_from(["A", "B", "V", "Sigma0"]), k=st.integers(0, 3))
def test_random_parameters_bind_and_any_perturbation_is_refused(params, key, k, tmp_path):
    doc = verify(params, tmp_path, "random")
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(doc))
    assert flowcert("recheck", str(f)).returncode == 0
    forged = copy.deepcopy(doc)
    M = forged["params"][key]
    i, j = divmod(k, 2)
    M[i][j] = M[i][j] + 2.0 ** -20
    if key == "Sigma0" and i != j:
        M[j][i] = M[i][j]  # keep Sigma0 symmetric: the forgery is of the value, not of the shape
    f.write_text(json.dumps(forged))
    assert flowcert("recheck", str(f)).returncode == 3


def test_one_random_document_binds_and_a_perturbed_entry_is_refused(tmp_path):
    """The default-suite instance of the property above (one draw, in-process recheck)."""
    rng = np.random.default_rng(38)
    params = {"A": (rng.integers(-16, 17, (2, 2)) / 8).tolist(), "B": (rng.integers(-8, 9, (2, 2)) / 8).tolist(),
              "V": [[0.5, 0.125], [0.125, -0.25]], "b": [0.0, 0.0], "mu0": [0.5, -0.5],
              "Sigma0": [[1.0, 0.0], [0.0, 0.5]], "t_end": 1.0}
    doc = verify(params, tmp_path, "one")
    assert not recheck_document(doc).refused
    for key in ("A", "B", "V", "Sigma0"):
        forged = copy.deepcopy(doc)
        forged["params"][key][0][0] += 2.0 ** -20
        assert recheck_document(forged).refused, key


def test_margins_are_positive_when_a_hypothesis_holds(docs, tmp_path):
    """The margin's sign convention (issue 35): >= 0 when it holds, <= 0 when it fails (None: no scale).
    Checked on the documents above and on V = eta I (eta < 0), where the margin of 'eta < 0' is -eta."""
    eta_doc = verify({"A": [[-1.0, 0.0], [0.0, -1.0]], "B": [[0.5, 0.0], [0.0, 0.5]], "V": [[-0.2, 0.0], [0.0, -0.2]],
                      "b": [0.0, 0.0], "mu0": [1.0, 1.0], "Sigma0": [[1.0, 0.0], [0.0, 1.0]], "t_end": 1.0}, tmp_path, "eta")
    seen = 0
    for doc in (*docs.values(), eta_doc):
        for t in doc["theorems"]:
            for h in t["hypotheses"]:
                m = h["margin"]
                if m is None or h["status"] == "unknown":
                    continue
                seen += 1
                assert (m >= 0) if h["status"] == "holds" else (m <= 0), (t["id"], h["name"], h["status"], m)
    _, neg = hyp(eta_doc, "gaussian:thm-4.11.1", "eta < 0")
    assert neg["status"] == "holds" and neg["margin"] == 0.2
    assert seen >= 40


_ENTRY = st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=False, allow_infinity=False, width=64),
                   st.tuples(st.integers(-10**6, 10**6), st.integers(1, 10**6)).map(lambda pq: f"{pq[0]}/{pq[1]}"),
                   st.sampled_from(["0", "-0", "12", "-7", "1/0", "a", " 3", "2.5", "1e3"]))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(_ENTRY, min_size=1, max_size=6),
                 st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(_ENTRY, min_size=n, max_size=n),
                                                              min_size=1, max_size=4))))
def test_the_fast_canonical_form_is_the_exact_one(value):
    """``canonical``'s entry-by-entry path (no exact matrix built) gives the text of the exact matrix
    (``encode(qmat(...))``) wherever it applies, and the content memo of ``subject_digest`` gives the
    digest of the value as it is now."""
    import flint

    from flowcert.certificates import subjects

    fast = subjects._canonical_matrix(value)
    if fast is not None:
        v = subjects.exact_value(value)
        assert isinstance(v, flint.fmpq_mat) and fast == core.encode(v)
    before = subjects.subject_digest({"M": value})
    changed = copy.deepcopy(value)
    row = changed[0] if isinstance(changed[0], list) else changed
    row[0] = "123456789/2" if row[0] != "123456789/2" else "1"
    assert subjects.subject_digest({"M": value}) == before and subjects.subject_digest({"M": changed}) != before


def test_memoised_exact_forms_follow_the_content():
    """The content memos of large values (``subject_digest``, ``qmat``): the same content gives the same
    digest and matrix, and a value changed in place gives the new one (never a stale answer)."""
    import flint

    from flowcert.certificates import subjects

    M = core.encode(np.arange(1.0, 101.0).reshape(10, 10) / 3.0)  # 100 entries: over the memo thresholds
    big = [row * 50 for row in M]  # 10 x 500: qmat's memo applies too
    d0, Q0 = subjects.subject_digest({"M": M}), core.qmat(big)
    assert subjects.subject_digest({"M": copy.deepcopy(M)}) == d0 and core.qmat(copy.deepcopy(big)) == Q0
    M[3][4], big[3][4] = "7/2", "7/2"
    assert subjects.subject_digest({"M": M}) != d0
    assert core.qmat(big)[3, 4] == flint.fmpq(7, 2) and core.qmat(big) != Q0
    assert subjects.subject_digest({"M": M}) == subjects.subject_digest({"M": [list(r) for r in M]})
