"""Certificates that travel: every kind re-checks in a fresh process, and ``flowcert recheck``.

* The table :data:`flowcert.certificates.kinds.KINDS` names a checker for every kind the package
  can emit (found by scanning the source), and no module registers a checker at import time.
* A real certificate of every kind, built by the package's own code on small inputs, is accepted
  by :func:`flowcert.certificates.core.explain` in a subprocess that imported nothing but
  :mod:`flowcert.certificates` (and no solver); one exact rational changed, so that the claim is
  false by a short argument stated beside each change, is refused there.
* ``flowcert recheck``: real documents accepted (exit 0), a tampered copy refused with the JSON
  path of the changed certificate (exit 3), bad input one line (exit 2).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from flowcert.certificates import core, kinds
from flowcert.certificates.hypotheses import psd_hypothesis

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("flowcert", "certificates", "numeric", "gpu", "reports", "symbolic")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}

# the fresh process: import flowcert.certificates and nothing else, then re-check every certificate
FRESH = r"""
import json, sys
import flowcert.certificates as fc
preloaded = sorted(m for m in sys.modules if m.startswith("flowcert"))
listed = sorted(fc.core.CHECKERS)
certs = json.load(open(sys.argv[1]))
verdicts = {name: fc.explain(c) for name, c in certs.items()}
print(json.dumps({"preloaded": preloaded, "listed": listed, "verdicts": verdicts,
                  "solver": sorted(m for m in ("cvxpy", "clarabel", "scs", "torch") if m in sys.modules)}))
"""


def fresh_explain(tmp_path: Path, certs: dict[str, dict]) -> dict:
    from flowcert.certificates import rnn_float

    for c in certs.values():  # a float64 Jacobian stack by reference: its side file beside the certificates
        ref = c.get("data", {}).get("jacobians") if isinstance(c.get("data"), dict) else None
        if isinstance(ref, dict) and ref.get("sha256") in rnn_float._STORE:
            rnn_float.save_stack(ref, str(tmp_path))
    path = tmp_path / "certs.json"
    path.write_text(json.dumps(certs))
    proc = subprocess.run([sys.executable, "-c", FRESH, str(path)], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------
# the table covers every kind the source can emit
# ---------------------------------------------------------------------------------------------

LITERAL = re.compile(r'(?<![A-Za-z_])Certificate\(\s*"([A-Za-z0-9_]+)"')
ANY = re.compile(r'(?<![A-Za-z_])(?<!class )Certificate\(\s*(\S)')  # a call, not the class statement
KEYWORD = re.compile(r'\b(?:stable_kind|unstable_kind)\s*(?::\s*str\s*)?=\s*"([A-Za-z0-9_]+)"')
REGISTER = re.compile(r'^\s*(?:core\.)?register\(', re.M)


def _sources():
    for d in PACKAGE_DIRS:
        yield from sorted((ROOT / d).rglob("*.py"))


def emitted_kinds() -> dict[str, set[str]]:
    """kind -> files: every ``Certificate("kind", ...)`` and every kind passed by keyword to
    :func:`spectrum.spectrum_verdict` (its only builder with a variable kind)."""
    found: dict[str, set[str]] = {}
    for p in _sources():
        text = p.read_text()
        for m in (*LITERAL.finditer(text), *KEYWORD.finditer(text)):
            found.setdefault(m.group(1), set()).add(str(p.relative_to(ROOT)))
        for m in ANY.finditer(text):
            if m.group(1) != '"':  # a kind held in a variable: only spectrum_verdict's keywords, scanned above
                assert p.name == "spectrum.py", f"{p}: Certificate({m.group(1)}... has a kind this scan cannot read"
    return found


def test_every_kind_the_source_emits_has_a_checker_in_the_table():
    found = emitted_kinds()
    assert len(found) >= 25  # the scan sees the builders (28 kinds when written)
    missing = sorted(set(found) - set(kinds.KINDS))
    assert not missing, f"kinds emitted but not in certificates/kinds.py: {missing} ({[found[k] for k in missing]})"
    # the table lists nothing that is neither emitted nor kept for saved documents
    assert set(kinds.KINDS) - set(found) <= {"kantorovich"}


def test_certificates_are_serialised_in_one_place():
    """The scan above is complete only if no module writes a certificate object by hand."""
    writers = [str(p.relative_to(ROOT)) for p in _sources() if '"checker":' in p.read_text()]
    assert set(writers) <= {"certificates/core.py"}


def test_no_module_registers_a_checker_at_import_time():
    offenders = [str(p.relative_to(ROOT)) for p in _sources()
                 if p.name != "core.py" and REGISTER.search(p.read_text())]
    assert not offenders


@pytest.mark.parametrize("kind", sorted(kinds.KINDS))
def test_every_table_entry_resolves_to_its_checker(kind):
    module, function = kinds.location(kind)
    fn = kinds.resolve(kind)
    assert callable(fn) and fn.__module__ == module and fn.__name__ == function
    assert core.CHECKERS[kind] is fn
    assert kinds.resolve("no such kind") is None and kinds.location("no such kind") is None


def test_register_still_overrides_and_adds_kinds(monkeypatch):
    monkeypatch.setattr(core, "_RECHECKED", {})
    monkeypatch.setitem(core.CHECKERS, "test_always", lambda data: data.get("x") == 1)
    assert "test_always" in core.CHECKERS and "test_always" in list(core.CHECKERS)
    assert core.recheck({"kind": "test_always", "claim": "x = 1", "checker": "test", "data": {"x": 1}})
    assert core.explain({"kind": "test_always", "claim": "x = 1", "checker": "test", "data": {"x": 2}}) == (
        False, "the test_always check does not hold on these data")
    assert core.explain({"kind": "nope", "claim": "", "checker": "", "data": {}}) == (False, "unknown kind 'nope'")


# ---------------------------------------------------------------------------------------------
# a real certificate of every kind, from the package's own builders
# ---------------------------------------------------------------------------------------------


def _cert(result) -> dict:
    r = result[0] if isinstance(result, tuple) else result
    c = getattr(r, "certificate", r)
    assert c is not None, r  # a builder that did not certify: no certificate to test
    return json.loads(json.dumps(c.to_json()))


def build_real_certificates() -> dict[str, dict]:
    """One certificate per kind, by the code that emits it in the commands."""
    import sympy as sp

    from flowcert.certificates import gaussian as cg
    from flowcert.certificates import hypotheses, lowrank, spectrum
    from flowcert.certificates import rnn as crnn
    from flowcert.certificates.attention import consensus as cc
    from flowcert.certificates.attention import multistability as cm

    out: dict[str, dict] = {}

    def add(result):
        c = _cert(result)
        out.setdefault(c["kind"], c)

    S = np.array([[2.0, 0.5], [0.5, 1.0]])
    add(psd_hypothesis("S_psd", S, "S"))
    add(hypotheses.definite(S, "S_pd", 1))
    add(core.inertia_certificate(S, "S"))
    J_unstable = np.array([[0.5, 1.0], [0.0, -1.0]])
    add(spectrum.hurwitz("J", np.array([[-1.0, 3.0], [0.0, -2.0]])))  # lyapunov
    add(spectrum.hurwitz("J", J_unstable))  # unstable
    add(spectrum.inertia_certificate(J_unstable))
    add(spectrum.hurwitz("J", np.array([[-1.0, 0.0], [2.0, 0.0]])))  # zero_eigenvalue: J e_2 = 0
    add(spectrum.unstable_count(J_unstable)[1])
    add(spectrum.detectability_certificate(sp.Matrix([[1, 0], [0, -1]]), sp.Matrix([[1, 0], [0, 0]])))

    # gaussian: the note's bistable example (an exact PD equilibrium) and a Hurwitz non-normal A
    A_bi, B_bi = np.array([[-5.0, -5.0], [5.0, 4.0]]), np.array([[5.0, 3.0], [3.0, 2.0]])
    V_bi, S_bi = -np.diag([5.0, 1.0]), np.array([[1.0, -2.0], [-2.0, 5.0]])
    A_h, B_h, V_h = np.array([[-1.0, 3.0], [0.0, -2.0]]), np.array([[2.0, 1.0], [0.0, 1.0]]), np.array([[0.5, -1.0], [2.0, 0.25]])
    add(cg.stability(A_h, B_h, V_h, np.zeros((2, 2))))  # stable_equilibrium
    add(cg.stability(-A_h, B_h, V_h, np.zeros((2, 2))))  # unstable_point
    add(cg.pd_equilibrium(A_bi, B_bi, V_bi, S_bi))
    add(cg.no_pd_equilibrium_d2(A_bi, B_bi, V_bi))
    add(cg.no_pd_equilibrium_trace(-np.eye(2), np.eye(2), -np.eye(2)))
    A2 = np.diag([1.0, 2.0])
    add(cg.pd_equilibrium_eta(A2, np.eye(2), -1.0, spectrum.unstable_count(A2)[1]))
    Aq, Bq, Vq, Sq = (core.qmat(M) for M in (A_bi, B_bi, V_bi, S_bi))
    ball = cg.kantorovich(Aq, Bq, Vq, Sq)
    add(core.Certificate("kantorovich", "a zero of eq. (18) lies within vech distance 2 sqrt(eta2) of Sigma",
                         {"A": core.encode(Aq), "B": core.encode(Bq), "V": core.encode(Vq), "Sigma": core.encode(Sq),
                          "radius_sq": str(4 * ball["eta2"])}))

    # attention, consensus paper
    Y = np.array([[1.0, 0.2, 0.0], [0.8, -0.3, 0.1], [0.9, 0.0, -0.4]])
    add(cc.open_hemisphere(Y))
    add(cc.open_hemisphere(np.vstack([Y, -Y.sum(0)])))  # 0 is in the convex hull: no_open_hemisphere
    add(cc.simple_positive_top_eigenvalue(np.diag([2.0, 1.0, -1.0])))
    add(cc.simple_positive_top_eigenvalue(np.diag([1.0, 1.0, -1.0])))  # repeated_top_eigenvalue
    add(cc.simple_positive_top_eigenvalue(np.diag([-1.0, -2.0, -1.0])))  # nonpositive_top_eigenvalue
    add(cc.bounded([np.array([[1.0, 0.5], [0.0, 2.0]])]))  # sup_norm_bound
    add(cc.tetrahedron_stability(2.0))
    from flowcert.certificates.attention import eigenvectors as ce

    add(ce.simple_top_certificate(np.diag([2.0, 1.0, 1.0]), Fraction(3, 2)))
    add(ce.side_certificate(np.diag([2.0, 1.0, -1.0]), Y, [Fraction(1), Fraction(0), Fraction(0)], Fraction(3, 2)))

    # attention, multistability paper (tests/data/attention/multistable_d3.json, beta = 1)
    V = np.array([[1.0, 0.2, 0.0], [0.2, 0.1, 0.0], [0.0, 0.0, -0.5]])
    Q, K = np.eye(3), np.array([[3.0, 0.5, 0.0], [0.0, 0.5, 0.0], [0.3, 0.0, -1.0]])
    Vr, Mr = core.rational_matrix(V), core.rational_matrix(Q).T * core.rational_matrix(K)
    enc = cm.eigen_enclosure(Vr)
    add(cm.enclosure_certificate(Vr, enc))
    verdict, _ = cm.verdict_from_data(Vr, Mr, enc, 0, 6, 0, "self_attention")
    assert verdict in ("stable", "unstable")
    add(cm.verdict_certificate(Vr, Mr, enc, 0, 6, 0, "self_attention", verdict))

    # rnn
    add(crnn.bounded_real_bound(np.array([[0.5, 0.1], [0.0, 0.4]])))
    add(crnn.contraction_rate([np.array([[0.5, 0.1], [0.0, 0.4]]), np.array([[0.3, -0.2], [0.1, 0.5]])]))
    # rnn at real size: rigorous float bounds on a stack named by its digest (a side file in a fresh process)
    from flowcert.certificates import rnn_float as rf

    stack = np.stack([np.array([[0.5, 0.1], [0.0, 0.4]]), np.array([[0.3, -0.2], [0.1, 0.5]])])
    add(rf.invertible_float(stack))
    add(rf.contraction_rate_float(stack))

    # products of low-rank factors (pretrained heads): N = A B = [[1, -1], [2, -2]]
    A, B = np.array([[1.0], [2.0]]), np.array([[1.0, -1.0]])
    add(lowrank.asymmetry_certificate(A, B, lowrank.find_asymmetric_entry(A @ B), "N"))
    add(lowrank.minor_certificate(A, B, [([1], 1)], "N"))  # (N + N^T)_11 = -4 < 0
    add(lowrank.low_rank_asymmetry_certificate(lowrank.LowRank(A, B, Fraction(1, 2)), (0, 1), "N"))  # N_01 = -1, N_10 = 2
    # a Newton-located 2:2 bipartite point of the multistability paper (rows of +-e1, a11 = 2:
    # stable by the equal-split closed form), certified by the Krawczyk test
    from flowcert.certificates.attention import krawczyk

    X = np.outer([1.0, 1.0, -1.0, -1.0], [1.0, 0.0, 0.0]) + 1e-9 * np.random.default_rng(1).normal(size=(4, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    M = np.array([[2.0, 0.3, 0.0], [-0.1, 0.5, 0.2], [0.0, 0.4, -1.0]])
    add(krawczyk.certify_equilibrium(X, np.diag([1.0, 0.2, -0.5]), M)[2])

    # predicates, definiteness witnesses, identities and the gaussian scalar conditions (issue 38)
    from flowcert.certificates import conditions, identities, predicates

    add(predicates.predicate_certificate("scalar_identity", True, None, M=core.encode(2 * np.eye(2))))
    add(hypotheses.definite(np.diag([1.0, -1.0]), "D", 1))  # not_pd
    add(psd_hypothesis("D >= 0", np.diag([1.0, -1.0]), "D"))  # not_psd
    add(hypotheses.definite(np.array([[1.0, 2.0], [0.0, 1.0]]), "N", 1))  # not_symmetric
    add(identities.identity_certificate("gaussian:moment_closure"))
    add(conditions.lemma23_certificate(np.eye(2), np.eye(2), None, None))  # 8 ||I|| 1 > 1: refuted
    add(conditions.thm48_trace_certificate(np.eye(2), np.eye(2), np.eye(2), np.eye(2), (Fraction(1), Fraction(1, 2),
                                                                                          Fraction(1, 2)), True))
    import sympy as sp2

    S2, K2 = sp2.Matrix([[2, 0], [0, 1]]), sp2.Matrix([[0, 1], [-1, 0]])
    A2 = K2 * S2.inv() + S2  # V = -I, B = I: A = K S^-1 - V S B
    add(conditions.lemma44_design_certificate(A2, sp2.eye(2), -sp2.eye(2), S2, True))
    return out


@pytest.fixture(scope="module")
def real() -> dict[str, dict]:
    return build_real_certificates()


def test_a_real_certificate_of_every_kind_rechecks_in_a_fresh_process(real, tmp_path):
    assert set(real) == set(kinds.KINDS)
    got = fresh_explain(tmp_path, real)
    # nothing but the certificates package was loaded before the re-checks, and no solver after
    assert set(got["preloaded"]) <= {"flowcert", "flowcert.certificates", "flowcert.certificates.core",
                                     "flowcert.certificates.exact", "flowcert.certificates.kinds",
                                     "flowcert.certificates.forms", "flowcert.certificates.fingerprint",
                                     "flowcert.certificates.verdicts",
                                     "flowcert.certificates.rounding", "flowcert.certificates.documents",
                                     "flowcert.certificates.rationals", "flowcert.certificates.pivot"}
    assert got["listed"] == sorted(kinds.KINDS)
    refused = {k: why for k, (ok, why) in got["verdicts"].items() if not ok}
    assert not refused
    assert got["solver"] == []


def _neg(q: str) -> str:
    return str(-Fraction(q))


def _largest_diagonal(M: list[list[str]]) -> int:
    i = max(range(len(M)), key=lambda k: Fraction(M[k][k]))
    assert Fraction(M[i][i]) > 0
    return i


def tamper(kind: str, cert: dict) -> tuple[dict, str]:
    """``cert`` with one exact number changed so that its claim is false, and why it is false."""
    c = copy.deepcopy(cert)
    d = c["data"]
    if kind in ("psd", "pd"):
        i = _largest_diagonal(d["M"])
        d["M"][i][i] = _neg(d["M"][i][i])
        return c, "a symmetric matrix with a negative diagonal entry is not PSD"
    if kind == "lyapunov":  # P is the witness (the subject J is bound: not in the data)
        i = _largest_diagonal(d["P"])
        d["P"][i][i] = _neg(d["P"][i][i])
        return c, "P with a negative diagonal entry is not positive definite"
    if kind == "attention_bipartite_spectrum" and "V" not in d:  # V is bound: the equilibrium's index moves
        d["k"] = int(d["k"]) % 3 + 1
        return c, "the tangent spectrum of another eigenvector's class"
    if kind == "pd_equilibrium":
        i = _largest_diagonal(d["Sigma"])
        d["Sigma"][i][i] = _neg(d["Sigma"][i][i])
        return c, "Sigma - rho I with rho >= 0 then has a negative diagonal entry: not PD"
    if kind == "zero_eigenvalue":
        j = next(i for i, x in enumerate(d["v"]) if Fraction(x) != 0)
        d["J"][0][j] = "1"
        return c, "column j of J is no longer 0, so J v != 0 for v = e_j"
    if kind == "sup_norm_bound":
        assert Fraction(d["bound"]) > 0
        d["bound"] = _neg(d["bound"])
        return c, "a norm is never below a negative number"
    if kind in ("attention_bipartite_spectrum", "symmetric_eigen_enclosure"):
        assert Fraction(d["V"][0][1]) != 0
        d["V"][0][1] = _neg(d["V"][0][1])
        return c, "V is no longer symmetric (V_01 = -V_10 != 0)"
    if kind in ("contraction", "contraction_float"):
        assert Fraction(d["rho2"]) > 0
        d["rho2"] = _neg(d["rho2"])
        return c, "A^T X A >= 0 > -rho^2 X for X > 0: no Jacobian satisfies A^T X A <= -rho^2 X"
    if kind == "entry_asymmetry":  # the data are float.hex strings (stored weights), not p/q
        d["a_j"], d["b_i"] = list(d["a_i"]), list(d["b_j"])
        return c, "with a_j = a_i and b_i = b_j, (AB)_ji = a_j . b_i = a_i . b_j = (AB)_ij"
    if kind == "low_rank_asymmetry":  # swap the factors' roles: N = L L^T is symmetric
        L = d["N"]["factors"][0]
        d["N"]["factors"][1] = [list(col) for col in zip(*L)]
        return c, "with R = L^T the product L L^T is symmetric: no entry pair differs"
    raise KeyError(kind)


#: system -> kinds tampered (gaussian, attention: both papers, rnn, low-rank products of pretrained heads)
TAMPERED = {"gaussian": ("psd", "pd", "pd_equilibrium"),
            "attention": ("sup_norm_bound", "symmetric_eigen_enclosure", "attention_bipartite_spectrum"),
            "rnn": ("contraction", "contraction_float"), "pretrained": ("entry_asymmetry", "low_rank_asymmetry")}


def test_a_tampered_rational_is_refused_in_a_fresh_process(real, tmp_path):
    forged = {}
    for system, ks in TAMPERED.items():
        for k in ks:
            forged[f"{system}/{k}"], _why = tamper(k, real[k])
    got = fresh_explain(tmp_path, forged)
    accepted = [name for name, (ok, _) in got["verdicts"].items() if ok]
    assert not accepted
    assert all(why for _, why in got["verdicts"].values())


# ---------------------------------------------------------------------------------------------
# flowcert recheck: fast checks on certificate files, in and out of process
# ---------------------------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowcert", *args], cwd=cwd or ROOT, env=ENV,
                          capture_output=True, text=True, timeout=600)


def test_recheck_bare_certificates_and_json_lines(real, tmp_path, capsys):
    from flowcert.cli import main

    bare = tmp_path / "one.json"
    bare.write_text(json.dumps(real["sup_norm_bound"]))
    lines = tmp_path / "sweep.jsonl"
    lines.write_text("\n".join(json.dumps({"file": f"f{i}.json", "index": i, "status": "ok", "exit_code": 0,
                                           "result": {"c": real[k]}, "error": None})
                               for i, k in enumerate(("pd", "contraction", "pd"))) + "\n")
    assert main(["recheck", str(bare), str(lines), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == [str(bare), str(lines)]
    assert (doc["certificates"], doc["accepted"], doc["refused"]) == (4, 4, [])
    assert doc["by_kind"] == {"contraction": {"accepted": 1, "refused": 0}, "pd": {"accepted": 2, "refused": 0},
                              "sup_norm_bound": {"accepted": 1, "refused": 0}}

    forged, _ = tamper("contraction", real["contraction"])
    lines.write_text("\n".join(json.dumps({"file": f"f{i}.json", "index": i, "status": "ok", "exit_code": 0,
                                           "result": {"c": c}, "error": None})
                               for i, c in enumerate((real["pd"], forged))) + "\n")
    proc = run_cli("recheck", str(lines), "--json")  # exit 3 reaches the shell
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["certificates"], doc["accepted"]) == (2, 1)
    (r,) = doc["refused"]
    assert (r["file"], r["line"], r["path"], r["kind"]) == (str(lines), 2, "$.result.c", "contraction")
    assert r["reason"]
    assert main(["recheck", str(lines)]) == 3  # the text form names the file, line and path too
    assert f"{lines}:2 $.result.c" in capsys.readouterr().out


def test_recheck_says_why(real, tmp_path, capsys):
    from flowcert.cli import main

    unknown = {**real["pd"], "kind": "made_up"}
    broken = {**real["pd"], "data": {"margin": "0"}}  # no matrix
    hidden = {k: v for k, v in real["pd"].items() if k != "checker"}  # a key deleted: still found, and refused
    doc = {"flowcert": "0", "theorems": [{"hypotheses": [{"status": "holds", "certificate": unknown},
                                                         {"status": "holds", "certificate": broken}], "applies": True}],
           "weird key": [real["psd"], {"certificate": hidden}],
           "reference": {"kind": "pd", "claim": "not a certificate: no data", "class": 0}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    assert main(["recheck", str(path), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    reasons = {r["path"]: r["reason"] for r in out["refused"]}
    assert sorted(reasons) == sorted(['$["weird key"][1].certificate', "$.system",  # a document of no system (issue 44)
                                      "$.theorems[0].hypotheses[0].certificate", "$.theorems[0].hypotheses[1].certificate"])
    assert reasons["$.theorems[0].hypotheses[0].certificate"] == "unknown kind 'made_up'"
    assert "missing entry 'M'" in reasons["$.theorems[0].hypotheses[1].certificate"]
    assert reasons['$["weird key"][1].certificate'].startswith("malformed certificate: keys")
    assert (out["certificates"], out["accepted"]) == (4, 1) and out["by_kind"]["psd"] == {"accepted": 1, "refused": 0}
    assert out["by_kind"]["pd"] == {"accepted": 0, "refused": 2}


def test_recheck_document_without_certificates_is_fine(tmp_path, capsys):
    from flowcert.cli import main

    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"flowcert": "0", "system": "rnn"}))  # a header: it claims nothing
    assert main(["recheck", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["certificates"], out["accepted"], out["refused"], out["by_kind"]) == (0, 0, [], {})


BAD = {
    "missing": (None, "no such file"),
    "folder": ("<dir>", "directory"),
    "not_json": ("this is not json", "not valid JSON"),
    "array": ("[1, 2]", "not a flowcert document"),
    "params": ((ROOT / "tests/data/gaussian_3d.json").read_text(), "not a flowcert document"),
    "bad_line": ('{"flowcert": "0"}\n{"flowcert": \n', "line 2: not valid JSON"),
    "duplicate": ('{"flowcert": "0", "flowcert": "1"}', "duplicate key"),
    "binary": (b"\xff\xfe\x00", "UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_recheck_bad_input_is_one_line_exit_2(case, tmp_path, capsys):
    from flowcert.cli import main

    content, problem = BAD[case]
    path = tmp_path / f"{case}.json"
    if content == "<dir>":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["recheck", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("flowcert: error: FILE: ") and problem in err, err
    assert str(path) in err


def test_recheck_bad_input_exit_2_from_the_command_line(tmp_path):
    proc = run_cli("recheck", str(tmp_path / "nothing.json"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no such file" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------------
# flowcert recheck on the documents the commands write (slow: each command runs in a subprocess)
# ---------------------------------------------------------------------------------------------

COMMANDS = {
    "verify_gaussian": ("verify", "gaussian", "--params", "tests/data/gaussian_stable_2d.json", "--json"),
    "verify_gaussian_bistable": ("verify", "gaussian", "--params", "tests/data/cli/gaussian_bistable_pd_2d.json", "--json"),
    "verify_attention": ("verify", "attention", "--params", "tests/data/attention/multistable_d3.json", "--json"),
    "equilibria_attention": ("equilibria", "attention", "--params", "tests/data/attention/multistable_d3.json", "--json"),
    "kpflow_analyze": ("kpflow", "analyze", "--params", "tests/data/rnn/rnn_tanh_small.json", "--json"),
    "pretrained_heads": ("pretrained", "heads", "--model", "{checkpoint}", "--json"),
}
#: document -> the kind whose first certificate is tampered (see :func:`tamper`)
TAMPER_IN = {"verify_gaussian": "lyapunov", "verify_gaussian_bistable": "lyapunov", "verify_attention": "sup_norm_bound",
             "equilibria_attention": "attention_bipartite_spectrum", "kpflow_analyze": "contraction",
             "pretrained_heads": "entry_asymmetry"}


def _paths(obj, path="$"):
    """Independent walk: (JSON path, certificate) in document order."""
    if isinstance(obj, dict):
        if {"kind", "claim", "checker", "data"} <= set(obj) <= {"kind", "claim", "checker", "data", "subject", "digest"}:
            yield path, obj
            return
        for k, v in obj.items():
            yield from _paths(v, f"{path}.{k}" if re.fullmatch(r"[A-Za-z_]\w*", k) else f"{path}[{json.dumps(k)}]")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, f"{path}[{i}]")


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("documents")
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    vocab = ["[UNK]", "the", "cat", "sat", "on", "mat", "."]  # a seeded random BERT, as in test_pretrained.py
    cfg, T = random_tensors("bert", seed=7, std=0.3, d=8, n_heads=2, n_layers=2, d_ff=16, vocab=len(vocab), n_pos=16,
                            bias_std=0.1, ln_std=0.1)
    checkpoint = write_checkpoint(tmp_path_factory.mktemp("bert"), cfg, T, vocab)
    procs = {name: subprocess.Popen([sys.executable, "-m", "flowcert", *(a.format(checkpoint=checkpoint) for a in args)],
                                    cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, args in COMMANDS.items()}
    paths = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, (name, stderr)
        paths[name] = out / f"{name}.json"
        paths[name].write_text(stdout)
    return paths


@pytest.mark.slow
def test_recheck_accepts_every_certificate_the_commands_write(documents):
    proc = run_cli("recheck", *map(str, documents.values()), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    expected = [c for p in documents.values() for _, c in _paths(json.loads(p.read_text()))]
    assert doc["certificates"] == doc["accepted"] == len(expected) and doc["refused"] == []
    assert doc["bound"] + doc["unbound"] == len(expected)
    for k in set(TAMPER_IN.values()):  # every tampered kind below is present, and accepted untouched
        assert doc["by_kind"][k]["accepted"] == sum(c["kind"] == k for c in expected) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_recheck_refuses_a_tampered_document_and_names_the_path(name, documents, tmp_path, capsys):
    from flowcert.cli import main

    doc = json.loads(documents[name].read_text())
    kind = TAMPER_IN[name]
    where, cert = next((p, c) for p, c in _paths(doc) if c["kind"] == kind)
    forged, _why = tamper(kind, cert)
    cert.clear()
    cert.update(forged)  # in place: the document now carries the forged certificate at `where`
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc, indent=1))
    proc = run_cli("recheck", str(path), "--json")
    assert proc.returncode == 3, proc.stderr
    out = json.loads(proc.stdout)
    # the certificate is refused at its path; what the document re-derives from it (a prediction, a
    # document-level record) may be refused beside it
    assert (where, kind) in [(r["path"], r["kind"]) for r in out["refused"]]
    assert out["accepted"] == out["certificates"] - 1
    assert main(["recheck", str(path)]) == 3
    assert f"{path} {where} ({kind})" in capsys.readouterr().out


@pytest.mark.slow
def test_recheck_a_sweep_of_verify_documents(tmp_path):
    sweep = tmp_path / "sweep.jsonl"
    proc = run_cli("verify", "gaussian", "--params", "tests/data/gaussian_stable_2d.json", "tests/data/gaussian_3d.json",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    sweep.write_text(proc.stdout)
    lines = [json.loads(s) for s in proc.stdout.splitlines() if s.strip()]
    expected = sum(1 for rec in lines for _ in _paths(rec))
    assert len(lines) == 2 and expected > 0
    proc = run_cli("recheck", str(sweep), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["accepted"] == expected
