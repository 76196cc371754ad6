"""Certified verdicts at numerically located equilibria (issue 28, class 5): Krawczyk existence in
a chart of (S^{d-1})^n and a ball-Lyapunov inertia test on the enclosed tangent linearisation.

References are independent of the code: the equal-split bipartite closed form of note 001 (D2:
tangent spectrum {-tanh(a) l_k}^{(n-2)(d-1)} u {l_j - tanh(a) l_k, tanh(a)(l_j - l_k)}), and a
complex-step tangent spectrum of the note's field (eq. (1)) at a clustering point."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from flowcert.certificates import core
from flowcert.certificates.attention import krawczyk as kr

DATA = Path(__file__).parent / "data" / "attention"


def _d2_stable(lam, a, k):
    t = math.tanh(a)
    vals = [-t * lam[k]] + [lam[j] - t * lam[k] for j in range(len(lam)) if j != k] + \
        [t * (lam[j] - lam[k]) for j in range(len(lam)) if j != k]
    return max(vals) < 0


@pytest.mark.parametrize("a11", [2.0, 0.1, -1.5])
def test_krawczyk_verdict_matches_the_bipartite_closed_form(a11):
    lam = [1.0, 0.2, -0.5]
    V = np.diag(lam)
    M = np.array([[a11, 0.3, 0.0], [-0.1, 0.5, 0.2], [0.0, 0.4, -1.0]])
    X = np.outer([1.0, 1.0, -1.0, -1.0], [1.0, 0.0, 0.0])
    X = X + 1e-9 * np.random.default_rng(1).normal(size=X.shape)  # as if located by Newton
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    verdict, why, cert = kr.certify_equilibrium(X, V, M)
    assert cert is not None, why
    assert verdict == ("stable" if _d2_stable(lam, a11, 0) else "unstable")
    assert core.recheck(cert)
    bad = json.loads(json.dumps(cert.to_json()))
    bad["data"]["claim"] = "unstable" if verdict == "stable" else "stable"
    assert not core.recheck(bad)


def test_krawczyk_refuses_a_point_that_is_not_near_an_equilibrium():
    V = np.diag([1.0, 0.2, -0.5])
    M = np.eye(3)
    X = np.outer([1.0, 1.0, -1.0, -1.0], [1.0, 0.0, 0.0])
    X[0] = [0.8, 0.6, 0.0]  # the field is O(1) here
    verdict, why, cert = kr.certify_equilibrium(X, V, M)
    assert cert is None and verdict == "unknown"


def test_krawczyk_sqrt_rows_scale_but_keep_the_verdict():
    lam = [1.0, 0.2, -0.5]
    V, M = np.diag(lam), np.diag([2.0, 0.0, 0.0])
    X = np.outer([1.0, -1.0, 1.0, -1.0], [1.0, 0.0, 0.0])
    v1, _, c1 = kr.certify_equilibrium(X, V, M)
    v2, _, c2 = kr.certify_equilibrium(X, V, M, sqrt_d=3)
    assert c1 is not None and c2 is not None and v1 == v2 == "stable"


def test_continuum_is_not_certified():
    # P = -3 I, V = I: the regular tetrahedron is an equilibrium on a rotation orbit (3 zero tangent eigenvalues)
    T = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / math.sqrt(3)
    verdict, why, cert = kr.certify_equilibrium(T, np.eye(3), -3.0 * np.eye(3))
    assert cert is None and verdict == "unknown"


def _field(X, V, M):
    S = X @ M @ X.T
    A = np.exp(S - S.real.max(1, keepdims=True))
    A = A / A.sum(1, keepdims=True)
    Y = (A @ X) @ V.T
    return Y - X * np.sum(X * Y, 1, keepdims=True)


def _tangent_spectrum(X, V, M):
    n, d = X.shape
    J = np.zeros((n * d, n * d))
    for i in range(n * d):
        E = np.zeros(n * d, complex)
        E[i] = 1e-30j
        J[:, i] = (_field(X.astype(complex) + E.reshape(n, d), V, M).imag / 1e-30).ravel()
    B = np.zeros((n * d, n * (d - 1)))
    for i in range(n):
        B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = np.linalg.svd(np.eye(d) - np.outer(X[i], X[i]))[0][:, : d - 1]
    return np.linalg.eigvals(B.T @ J @ B)


def test_clustering_point_of_the_repository_example():
    # a stable 2-clustering of tests/data/attention/clustering_d3.json (start near it; Newton refines)
    from flowcert.attention import enumeration as en
    from flowcert.attention import load
    from flowcert.numeric.attention import multistability as nm

    p = load(DATA / "clustering_d3.json")
    D = en.data_of(p)
    W = np.array(json.loads((DATA / "clustering_d3_point.json").read_text())["X_near"])
    nr = nm.newton(W, D.Mb, D.V, D.c)
    assert nr.converged and np.abs(_field(nr.X, D.V, D.Mb)).max() < 1e-12
    verdict, why, cert = en.certify_newton_point(D, nr.X)
    assert cert is not None, why
    top = _tangent_spectrum(nr.X, D.V, D.Mb).real.max()
    assert (verdict == "stable") == (top < 0) and abs(top) > 1e-6
