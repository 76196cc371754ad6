"""Exact decisions on exact data (issue 28, class 3): float64 inputs are rationals.

References: eigenvectors in closed form (v = (1, 1, 0)/sqrt 2 for [[1,1,0],[1,1,0],[0,0,.5]];
the golden-ratio eigenvector (phi, 1) of [[1,1],[1,0]]), skew score matrices (every score
x^T M x = 0, so A = 11^T/n and the 2:2 point has V sum_j A_ij x_j = 0), and a zero eigenvalue."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from flowcert.attention import consensus as cat
from flowcert.attention import enumeration as en
from flowcert.attention import multistability as ms
from flowcert.attention import parse
from flowcert.certificates.attention.algebraic import AlgebraicEigenvector

U61 = [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.5]]  # lambda_max = 2 simple, v = (1, 1, 0)/sqrt 2
R = 0.7071067811865476


def test_algebraic_eigenvector_signs_golden_ratio():
    phi = (1 + 5 ** 0.5) / 2  # the float is above the true phi (1.6180339887498949025 > 1.6180339887498948482)
    assert Fraction(phi) > Fraction(16180339887498948482, 10**19)
    e = AlgebraicEigenvector([[1, 1], [1, 0]], 0)  # v ~ (phi, 1)
    assert e.f.degree() == 2
    s = e.inner_signs([[1, -1], [-1, phi], [0, 1], [-1, 0]])
    g = s[2]  # the global sign of w: v^T (0, 1) = 1 > 0
    assert [x * g for x in s] == [1, 1, 1, -1]


def test_algebraic_eigenvector_exact_zeros_and_quadratic_forms():
    e = AlgebraicEigenvector([[2, 1, 0], [1, 2, 0], [0, 0, 1]], 0)  # v = (1, 1, 0)/sqrt 2
    assert e.inner_signs([[1, -1, 0], [0, 0, 1]]) == [0, 0]
    assert e.quadratic_sign([[0, 1, 0], [-1, 0, 0], [0, 0, 3]]) == 0  # skew part + e3 e3^T: v^T M v = 0
    assert e.quadratic_sign([[1, 0, 0], [0, -1, 0], [0, 0, 0]]) == 0
    assert e.quadratic_sign([[1, 0, 0], [0, 0, 0], [0, 0, 0]]) == 1
    assert e.quadratic_sign([[0, -1, 0], [0, 0, 0], [0, 0, 0]]) == -1  # v^T M v = -1/2
    with pytest.raises(ValueError):
        AlgebraicEigenvector([[1, 0], [0, 1]], 0)  # not simple


def _thm61(X0):
    raw = {"P": [[0.3, 0.1, 0], [0, 0.2, 0], [0.1, 0, -0.1]], "V": U61, "causal": True, "normalization": "sqrt",
           "X0": X0, "t_end": 5}
    th = {t.id: t for t in cat.theorems(parse(raw))}["consensus:thm-6.1"]
    return th, next(h for h in th.hypotheses if h.name.startswith("v^T y_i(0)"))


def test_thm61_token_exactly_on_v_perp_fails_exactly():
    # (R, -R, 0) with the same float R: v^T y = 0 exactly, although the float inner product has no pad to decide it
    th, side = _thm61([[0.6, 0.8, 0], [R, -R, 0], [0, 0.6, 0.8]])
    assert side.status == "fails" and r"exactly on $v^\perp$" in side.detail and "[2]" in side.detail
    assert th.applies.json is False


def test_thm61_strict_side_holds_with_the_right_limit():
    th, side = _thm61([[0.6, 0.8, 0], [R, -R + 1e-15, 0.0], [0, 0.6, 0.8]])  # v^T y_2 = 1e-15/sqrt 2 > 0
    assert side.status == "holds", side.detail
    lim = np.array(th.prediction["limit_point"])
    assert np.allclose(lim, [R, R, 0], atol=1e-12)
    th, side = _thm61([[-0.6, -0.8, 0], [-R, R - 1e-15, 0.0]])
    assert side.status == "holds" and np.allclose(th.prediction["limit_point"], [-R, -R, 0], atol=1e-12)


def test_thm61_both_sides_fails():
    _, side = _thm61([[0.6, 0.8, 0], [-R, -R, 0.0]])
    assert side.status == "fails"


SKEW = {"V": np.diag([1.0, 0.4, -0.3]).tolist(), "Q": np.eye(3).tolist(),
        "K": [[0, 2, -1], [-2, 0, 0.5], [1, -0.5, 0]], "n": 4, "seed": 0}


def test_skew_scores_lemma7_rank_1():
    th = {t.id: t for t in ms.theorems(parse(SKEW))}["multistability:lemma-7"]
    for row in th.prediction["per_eigenvector"]:
        assert row["a_k_zero_exact"] is True and row["bipartite_rank_prediction"] == 1


def _attention(X, M):
    S = X @ M @ X.T
    A = np.exp(S - S.max(1, keepdims=True))
    return A / A.sum(1, keepdims=True)


def test_skew_scores_2_2_points_are_bipartite_and_polygonal(tmp_path):
    f = tmp_path / "skew.json"
    f.write_text(json.dumps(SKEW))
    out = subprocess.run([sys.executable, "-m", "flowcert", "equilibria", "attention", "--params", str(f), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    V, M = np.array(SKEW["V"]), np.array(SKEW["K"])
    seen = 0
    for e in doc["equilibria"]:
        if e["eigvec_index"] is None:
            continue
        X = np.array(e["X"])
        polygonal = np.abs(_attention(X, M) @ X @ V.T).max() < 1e-14  # V sum_j A_ij x_j = 0 (here exactly 11^T/n)
        assert ("polygonal" in e["class"]) == polygonal, e
        if e["n1"] == e["n2"] == 2:
            assert set(e["class"]) == {"bipartite", "polygonal"}
            seen += 1
    assert seen == 3 * 3  # the three 2:2 patterns with s_1 = +1, at each of the 3 eigenvectors


def test_zero_eigenvalue_makes_every_class_at_it_polygonal():
    raw = {"V": np.diag([1.0, 0.0, -0.3]).tolist(), "Q": np.eye(3).tolist(), "K": np.diag([1.0, 2.0, 0.5]).tolist(), "n": 3}
    D = en.data_of(parse(raw))
    assert en.lambda_is_zero(D, 1) and not en.lambda_is_zero(D, 0) and not en.lambda_is_zero(D, 2)
    assert en.eigen_labels(D, 1, 3, 0) == ["consensus", "polygonal"]
    assert en.eigen_labels(D, 0, 2, 1) == ["bipartite"]
    # a_1 = 1 > 0 exactly, a_2 = 2
    assert en.a_sign(D, 0) == 1 and en.a_sign(D, 1) == 1


def test_a_sign_exact_where_the_interval_straddles_zero():
    # V with an irrational top eigenvector; M = e1 e2^T - phi-ish: choose M so that v1^T M v1 = 0 exactly
    V = [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -2.0]]  # v1 ~ (phi, 1, 0)
    # v^T M v = phi^2 m11 + phi (m12 + m21) + m22 with phi^2 = phi + 1: m11 = 1, m12 + m21 = -1, m22 = -1 -> 0
    K = [[1.0, -0.5, 0.0], [-0.5, -1.0, 0.0], [0.0, 0.0, 1.0]]
    D = en.data_of(parse({"V": V, "Q": np.eye(3).tolist(), "K": K, "n": 2}))
    assert en.a_sign(D, 0) == 0
    phi = (1 + math.sqrt(5)) / 2
    v = np.array([phi, 1.0, 0.0]) / math.hypot(phi, 1.0)
    assert abs(v @ np.array(K) @ v) < 1e-15


def test_lemma_11_cross_check_on_exact_polygonal_points():
    # a_k = 0 at every k (skew M): the 2:2 points are polygonal; D2 with tanh(0) = 0 gives the tangent
    # spectrum {0} u {lambda_j}_{j != k}, so each has a positive eigenvalue (lambda = 1, .4 > 0): unstable
    th = {t.id: t for t in ms.theorems(parse(SKEW))}["multistability:lemma-11"]
    assert th.cross_check.status == "agrees"
    lam = [1.0, 0.4, -0.3]
    got = {r["k"]: r["verdict"] for r in th.cross_check.details["polygonal_classes"]}
    assert got == {k + 1: ("unstable" if max(lam[j] for j in range(3) if j != k) > 0 else "unknown") for k in range(3)}
    # no polygonal point known exactly: skipped, not agrees
    raw = {**SKEW, "K": np.diag([1.0, 2.0, 0.5]).tolist()}
    th = {t.id: t for t in ms.theorems(parse(raw))}["multistability:lemma-11"]
    assert th.cross_check.status == "skipped"
