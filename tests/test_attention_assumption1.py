"""Assumption 1 as stated (issue 28, class 2): only lambda_1 must be simple.

Independent references: an exactly rational orthogonal matrix (Cayley transform of a rational
skew matrix) makes V = Q diag(lambda) Q^T with a known repeated eigenvalue; the tangent spectrum
at x_i = s_i v_k is computed here from the note-001 field (eq. (1)) by complex-step
differentiation projected on the tangent spaces, not by the package's Jacobian."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from flowcert.attention import load, parse
from flowcert.attention import enumeration as en
from flowcert.attention import multistability as ms
from flowcert.certificates import core
from flowcert.recheck import recheck_document
from flowcert.certificates.attention import multistability as cm

V_REP = np.diag([1.0, 0.3, 0.3, -0.5])  # lambda_2 = lambda_3 repeated below a simple lambda_1
K_REP = [[3, 0.5, 0, 0], [0, 0.5, 0, 0], [0.3, 0, -1, 0], [0, 0, 0, 2]]
RAW = {"V": V_REP.tolist(), "Q": np.eye(4).tolist(), "K": K_REP, "n": 4, "seed": 1}


def _cayley(S: sp.Matrix) -> sp.Matrix:
    I = sp.eye(S.rows)
    return (I - S) * (I + S).inv()


def test_exact_multiplicities_of_a_rationally_rotated_spectrum():
    S = sp.Matrix([[0, sp.Rational(1, 3), sp.Rational(-2, 7)], [sp.Rational(-1, 3), 0, sp.Rational(1, 5)],
                   [sp.Rational(2, 7), sp.Rational(-1, 5), 0]])
    Q = _cayley(S)
    assert sp.simplify(Q * Q.T - sp.eye(3)) == sp.zeros(3, 3)
    V = Q * sp.diag(sp.Rational(2), sp.Rational(1, 3), sp.Rational(1, 3)) * Q.T
    vals = cm.exact_eigenvalues(V)
    assert [m for _, _, m in vals] == [1, 2]
    assert vals[0][0] <= 2 <= vals[0][1] and vals[1][0] <= Fraction(1, 3) <= vals[1][1]
    enc = cm.spectral_enclosure(V)
    assert enc.mult(0) == 1 and enc.mult(1) == enc.mult(2) == 2 and enc.cluster(1) == [1, 2]


def test_near_repeated_float_data_are_simple_exactly():
    # a float rotation of diag(1, .3, .3) rounds the repeated eigenvalue apart: the exact answer is 'simple'
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    V = Q @ np.diag([1.0, 0.3, 0.3]) @ Q.T
    V = (V + V.T) / 2
    vals = cm.exact_eigenvalues(core.rational_matrix(V))
    assert vals is not None and sum(m for *_, m in vals) == 3


def _field(X, V, M):
    S = X @ M @ X.T
    A = np.exp(S - S.max(1, keepdims=True).real)
    A = A / A.sum(1, keepdims=True)
    Y = (A @ X) @ V.T
    return Y - X * np.sum(X * Y, 1, keepdims=True)


def _tangent_spectrum(X, V, M):
    n, d = X.shape
    h = 1e-30
    J = np.zeros((n * d, n * d))
    for i in range(n * d):
        E = np.zeros(n * d, complex)
        E[i] = 1j * h
        J[:, i] = (_field(X.astype(complex) + E.reshape(n, d), V, M).imag / h).ravel()
    B = np.zeros((n * d, n * (d - 1)))
    for i in range(n):
        U = np.linalg.svd(np.eye(d) - np.outer(X[i], X[i]))[0][:, : d - 1]
        B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = U
    return np.linalg.eigvals(B.T @ J @ B)


def test_equilibria_answers_and_keeps_the_v1_classes(tmp_path):
    f = tmp_path / "rep.json"
    f.write_text(json.dumps(RAW))
    out = subprocess.run([sys.executable, "-m", "flowcert", "equilibria", "attention", "--params", str(f), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    M = np.array(K_REP, float)
    at_v1 = [c for c in doc["classes"] if c["k"] == 1]
    assert {(c["n1"], c["n2"]) for c in at_v1} == {(4, 0), (3, 1), (2, 2)}
    for c in at_v1:  # verdicts against the complex-step tangent spectrum
        s = np.array([1.0] * c["n1"] + [-1.0] * c["n2"])
        X = np.outer(s, np.eye(4)[0])
        top = _tangent_spectrum(X, V_REP, M).real.max()
        assert c["verdict"] in ("stable", "unstable") and (c["verdict"] == "stable") == (top < 0), (c, top)
    sub = [c for c in doc["classes"] if "subspace" in c]
    assert sub and all(c["subspace"]["dimension"] == 2 and c["subspace"]["eigvec_indices"] == [2, 3] for c in sub)
    assert all(c["stable"] is False for c in sub)
    # consensus in the repeated eigenspace: lambda_1 - lambda_2 = 0.7 > 0 at every w (exact)
    cons = next(c for c in sub if c["n2"] == 0)
    assert cons["verdict"] == "unstable"
    check = recheck_document(doc)  # each class certificate with V and beta Q^T K filled in from the document
    assert not check.refused and check.unbound == 0
    assert check.bound >= sum(c["certificate"] is not None for c in doc["classes"])


def test_subspace_class_is_a_continuum_of_equilibria():
    # every w in span(e2, e3) gives an equilibrium x_i = s_i w: the field vanishes (so none is asymptotically stable)
    M = np.array(K_REP, float)
    for th in (0.1, 0.7, 2.0):
        w = np.array([0.0, np.cos(th), np.sin(th), 0.0])
        X = np.outer([1.0, 1.0, -1.0, 1.0], w)
        assert np.abs(_field(X, V_REP, M)).max() < 1e-15
        # and a zero tangent eigenvalue along the continuum
        assert np.abs(_tangent_spectrum(X, V_REP, M)).min() < 1e-9


def test_subspace_certificate_recheck_refuses_a_wrong_claim():
    D = en.data_of(parse(RAW))
    cl = en.class_result(D, 1, 2, 2)
    assert cl["certificate"] is not None
    bad = json.loads(json.dumps(cl["certificate"]))
    bad["data"]["claim"] = "stable"
    assert core.recheck(cl["certificate"]) and not core.recheck(bad)


def test_verify_keeps_the_stable_v1_classes():
    th = {t.id: t for t in ms.theorems(parse(RAW))}
    pred = th["multistability:thm-2"].prediction
    assert pred["consensus_v1_certified"] == "stable"
    assert {"k": 1, "n1": 4, "n2": 0} in pred["stable_classes"]
    a1 = {h.name: h.status for h in th["multistability:thm-2"].hypotheses}
    assert a1["Assumption 1: lambda_1 simple"] == "holds"


def test_repeated_top_eigenvalue_fails_assumption_1():
    raw = {**RAW, "V": np.diag([1.0, 1.0, 0.3, -0.5]).tolist()}
    th = {t.id: t for t in ms.theorems(parse(raw))}
    a1 = {h.name: h for h in th["multistability:thm-2"].hypotheses}
    assert a1["Assumption 1: lambda_1 simple"].status == "fails"
    assert "multiplicity 2" in a1["Assumption 1: lambda_1 simple"].detail
