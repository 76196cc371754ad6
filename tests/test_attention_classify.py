"""Every settled run classified, for every structure (issue 28, class 4).

Expected classes come from the notes, not from the code: Thm 5.1 (causal, U = I: every token ->
y_1(0), consensus); a causal sqrt-normalised run with U = diag(1, -1), P = 0 (token 1 is an Oja
flow -> +v; token 2 at -v is an equilibrium with tangent eigenvalue -c/2 < 0, derived by hand in
the test: a bipolar/antipodal end state); the regular tetrahedron with P = -beta I, beta = 3 > 1.5
(note 003 Pitfall 6: a stable 4-point configuration, not polygonal since sum_j A_ij x_j =
(A_ii - A_off) x_i != 0). The end states are also integrated independently here with the note's
reference implementation (scipy DOP853)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from flowcert import attention
from flowcert.attention import parse
from flowcert.attention.classify import drive, limit_of
from flowcert.numeric.attention.classify import classify_limit, clusters


def test_geometric_classes_of_constructed_end_states():
    v = np.array([0.6, 0.8, 0.0])
    w = np.array([0.0, 0.0, 1.0])
    assert classify_limit(np.tile(v, (4, 1)), 0.0).labels == ["consensus"]
    lc = classify_limit(np.array([v, -v, v, v]), 1e-9)
    assert lc.labels == ["bipartite"] and lc.label == "bipartite (3:1)"
    lc = classify_limit(np.array([v, w, -v, w, v]), 0.0)
    assert lc.labels == ["clustering"] and lc.clusters == 3
    # antipodal 2:2 with a vanishing drive: both bipartite and polygonal
    lc = classify_limit(np.array([v, -v, v, -v]), 0.0, drive=np.zeros((4, 3)))
    assert lc.labels == ["bipartite", "polygonal"]
    lc = classify_limit(np.array([v, w]), 3e-3, 12.5)
    assert not lc.settled and lc.labels == ["not_settled"] and lc.final_speed == 3e-3 and lc.t_final == 12.5


def test_clusters_single_linkage():
    X = np.array([[1.0, 0.0], [1.0, 5e-5], [1.0, 1e-4 + 4e-5], [0.0, 1.0]])
    centres, assign = clusters(X, 1e-4)
    assert assign.tolist() == [0, 0, 0, 1] and len(centres) == 2


def _ref_field(Y, heads, causal, c):
    """Note 003 §1.5 reference implementation (rows = tokens), W = I."""
    ell, d = Y.shape
    out = np.zeros_like(Y)
    for P, U in heads:
        S = Y @ P @ Y.T
        if causal:
            S = np.where(np.tril(np.ones((ell, ell), bool)), S, -np.inf)
        E = np.exp(S - S.max(1, keepdims=True))
        A = c * E / E.sum(1, keepdims=True)
        M = A @ Y @ U.T
        out += M - (Y * M).sum(1)[:, None] * Y
    return out


def _ref_run(X0, heads, causal, c, T):
    shape = X0.shape

    def f(t, y):
        Y = y.reshape(shape)
        Y = Y / np.linalg.norm(Y, axis=1, keepdims=True)
        return _ref_field(Y, heads, causal, c).ravel()

    sol = solve_ivp(f, (0, T), X0.ravel(), method="DOP853", rtol=1e-11, atol=1e-13)
    Y = sol.y[:, -1].reshape(shape)
    return Y / np.linalg.norm(Y, axis=1, keepdims=True)


def test_causal_sqrt_bipolar_end_state():
    # U = diag(1, -1), P = 0, causal, sqrt rows (c = 1/sqrt 2): y_1 -> e_1, y_2 -> -e_1.
    # At (e_1, -e_1) token 2's drive is c/2 (U e_1 - U e_1) = 0 and y_2 = -e_1 + eps e_2 gives
    # ydot_2 = (c/2)(eps - 2 eps) e_2 = -(c/2) eps e_2: stable.
    X0 = np.array([[0.8, 0.6], [-0.6, 0.8]])
    raw = {"P": [[0.0, 0.0], [0.0, 0.0]], "V": [[1.0, 0.0], [0.0, -1.0]], "causal": True, "normalization": "sqrt",
           "X0": X0.tolist(), "t_end": 80}
    p = parse(raw)
    ref = _ref_run(X0, [(np.zeros((2, 2)), np.diag([1.0, -1.0]))], True, 1 / math.sqrt(2), 80.0)
    assert np.allclose(ref, [[1, 0], [-1, 0]], atol=1e-7)
    sim = attention.simulate(p)
    assert np.allclose(sim["X_final"], ref, atol=1e-6)
    assert sim["limit_classes"] == ["bipartite"] and sim["limit_class"] == "bipartite" and sim["limit"]["cluster_sizes"] == [1, 1]


def test_causal_consensus_thm_5_1():
    rng = np.random.default_rng(4)
    X0 = rng.normal(size=(3, 3))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    P = 0.3 * rng.normal(size=(3, 3))
    raw = {"P": P.tolist(), "V": np.eye(3).tolist(), "causal": True, "normalization": "sqrt", "X0": X0.tolist(), "t_end": 150}
    p = parse(raw)
    sim = attention.simulate(p)
    assert np.allclose(sim["X_final"], np.tile(X0[0], (3, 1)), atol=1e-6)  # Thm 5.1: the limit is y_1(0)
    assert sim["limit_classes"] == ["consensus"] and sim["limit_class"] == "consensus"


def _tetrahedron():
    return np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / math.sqrt(3)


@pytest.mark.slow
def test_tetrahedron_clustering_k4_multi_head():
    # two heads (P = -3 I, V = I/2) sum to the one-head P = -3 I, U = I flow: beta = 3 > 1.5, stable
    T = _tetrahedron()
    rng = np.random.default_rng(0)
    X0 = T + 1e-3 * rng.normal(size=T.shape)
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    h = {"P": (-3.0 * np.eye(3)).tolist(), "V": (0.5 * np.eye(3)).tolist()}
    raw = {"heads": [h, h], "X0": X0.tolist(), "t_end": 200}
    p = parse(raw)
    sim = attention.simulate(p)
    X = np.array(sim["X_final"])
    G = X @ X.T
    assert np.abs(G - (4 / 3 * np.eye(4) - 1 / 3)).max() < 1e-6  # a rotated regular tetrahedron
    assert sim["limit_classes"] == ["clustering"] and sim["limit_class"] == "clustering" and sim["limit"]["clusters"] == 4
    D = drive(p, 200.0, X)
    assert np.abs(D).min(axis=None) >= 0 and np.linalg.norm(D, axis=1).min() > 1e-2  # not polygonal


def test_not_settled_reports_speed_and_time():
    X0 = np.array([[0.8, 0.6], [-0.6, 0.8]])
    p = parse({"P": [[0.0, 0.0], [0.0, 0.0]], "V": [[1.0, 0.0], [0.0, -1.0]], "causal": True, "normalization": "sqrt",
               "X0": X0.tolist(), "t_end": 0.5})
    sim = attention.simulate(p)
    assert sim["limit_class"] is None and sim["limit_classes"] is None and sim["limit"]["settled"] is False
    assert sim["limit"]["t_final"] == pytest.approx(0.5) and sim["limit"]["final_speed"] > 1e-3
    lc = limit_of(p, np.array(sim["X_final"]), t=0.5)
    assert lc.final_speed == pytest.approx(sim["limit"]["final_speed"], rel=1e-12)


@pytest.mark.parametrize("structure", ["two_heads", "causal"])
def test_equilibria_outside_model_1_are_zeros_of_the_field(structure):
    """equilibria attention answers for several heads and causal masks: every listed point is a zero of
    the field on the sphere (evaluated independently here), consensus points have equal tokens, and no
    point claims a stability verdict it cannot certify."""
    from flowcert.attention import equilibria
    from flowcert.attention.system import SYSTEM

    K1 = [[3, 0.5, 0], [0, 0.5, 0], [0.3, 0, -1]]
    V1 = [[1, 0.2, 0], [0.2, 0.1, 0], [0, 0, -0.5]]
    eye = np.eye(3).tolist()
    raw = ({"heads": [{"Q": eye, "K": K1, "V": V1}, {"Q": eye, "K": eye, "V": np.diag([0.5, 0.2, 0.1]).tolist()}],
            "n": 4, "seed": 2} if structure == "two_heads" else {"Q": eye, "K": K1, "V": V1, "n": 4, "seed": 1,
                                                               "causal": True})
    p = SYSTEM.load(raw)
    doc = equilibria(p)
    assert doc["equilibria"] and doc["classes"] == []
    for e in doc["equilibria"]:
        X = np.array(e["X"])
        F = np.zeros_like(X)
        for hd in raw.get("heads", [{"Q": eye, "K": K1, "V": V1}]):
            S = X @ np.array(hd["Q"]).T @ np.array(hd["K"]) @ X.T  # score of query i on key j: x_i^T Q^T K x_j (beta 1)
            if structure == "causal":
                S = np.where(np.tril(np.ones_like(S)) > 0, S, -np.inf)
            A = np.exp(S - S.max(axis=1, keepdims=True))
            A /= A.sum(axis=1, keepdims=True)
            F += (A @ X) @ np.array(hd["V"]).T
        F -= (F * X).sum(axis=1, keepdims=True) * X  # tangent projection (I - x x^T)
        assert np.abs(F).max() < 1e-5, e["class"]
        assert e["stable"] is None and e["certificate"] is None
        if e["class"] == ["consensus"]:
            assert np.abs(X - X[0]).max() < 1e-4
