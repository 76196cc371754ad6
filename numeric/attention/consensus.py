r"""Consensus measures and Lyapunov functions of the consensus paper (Rodríguez Abella, Silvestre,
Tabuada, *The asymptotic behavior of attention in transformers*), evaluated on numpy arrays of
tokens ``X`` of shape (..., ℓ, d) (rows are tokens; a trajectory is (m, ℓ, d)).

* Paper's measure, eq. (25) (index from 1, the typo :math:`i=0` corrected):
  :math:`E=1-\frac1\ell\sum_{i=1}^{\ell}\frac{|y_1^\top y_i|}{|y_1||y_i|}`. It vanishes on
  bipolar configurations :math:`y_i=\pm y_1` (erratum).
* Corrected (signed) measure: :math:`E_\pm=1-\frac1\ell\sum_{i}\frac{y_1^\top y_i}{|y_1||y_i|}`, zero iff
  every token points along :math:`y_1`; and the spread :math:`\max_{i,j}|y_i-y_j|`.
* Thm 3.2: :math:`V_P=-\frac12\sum_{ij}e^{y_i^\top Py_j}\ge-\ell^2e/2` on :math:`\mathcal E_P`.
* Thm 4.1: :math:`V=\max_i(1-v^\top y_i)`, upper Dini derivative
  :math:`D^+V=\max_{i\in\mathcal I}(-v^\top\dot y_i)` over the active set :math:`\mathcal I`.
* Thm 5.1: :math:`V(a_i)=\tfrac23-a_i+\tfrac{a_i^3}3`, :math:`a_i=y_1(0)^\top y_i`.
* Thm 6.1: :math:`V_+(b_i)=1-b_i`, :math:`b_i=v^\top y_i`.
"""

from __future__ import annotations

import math

import numpy as np

Array = np.ndarray


def _unit(X: Array) -> Array:
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def paper_measure(X: Array) -> Array:
    r"""Eq. (25) as intended: :math:`1-\frac1\ell\sum_i|\cos\angle(y_1,y_i)|` (blind to sign)."""
    U = _unit(np.asarray(X, float))
    return 1.0 - np.abs(np.einsum("...d,...id->...i", U[..., 0, :], U)).mean(axis=-1)


def signed_measure(X: Array) -> Array:
    r"""Corrected measure :math:`1-\frac1\ell\sum_i\cos\angle(y_1,y_i)\in[0,2]`: zero iff consensus."""
    U = _unit(np.asarray(X, float))
    return 1.0 - np.einsum("...d,...id->...i", U[..., 0, :], U).mean(axis=-1)


def spread(X: Array) -> Array:
    r""":math:`\max_{i,j}|y_i-y_j|` (Euclidean)."""
    X = np.asarray(X, float)
    D = X[..., :, None, :] - X[..., None, :, :]
    return np.sqrt((D**2).sum(-1)).max(axis=(-1, -2))


def V_P(X: Array, P: Score) -> Array:
    r"""Thm 3.2 potential :math:`V_P=-\frac12\sum_{ij}e^{y_i^\top Py_j}`."""
    return -0.5 * np.exp(scores(X, P)).sum(axis=(-1, -2))


def V_P_minimum(ell: int) -> float:
    r""":math:`-\ell^2e/2`, the value of :math:`V_P` exactly at consensus on :math:`\mathcal E_P`."""
    return -0.5 * ell**2 * np.e


def V_max(X: Array, v: Array) -> Array:
    r"""Thm 4.1 Lyapunov function :math:`\max_i(1-v^\top y_i)`."""
    return (1.0 - np.asarray(X, float) @ np.asarray(v, float)).max(axis=-1)


def dini_max(X: Array, F: Array, v: Array, active_tol: float = 1e-12) -> float:
    r"""Upper Dini derivative of :func:`V_max` at ``X`` with velocity ``F`` (Danskin):
    :math:`\max_{i\in\mathcal I}(-v^\top f_i)`, :math:`\mathcal I=\{i: 1-v^\top y_i\ge V-\text{tol}\}`."""
    g = 1.0 - np.asarray(X, float) @ v
    active = g >= g.max() - active_tol * max(1.0, abs(g.max()))
    return float((-(np.asarray(F, float) @ v))[active].max())


def V_causal(X: Array, y0: Array) -> Array:
    r"""Thm 5.1 per token: :math:`V(a_i)=\tfrac23-a_i+\tfrac{a_i^3}3`, :math:`a_i=y^{0\top}y_i`; shape (..., ℓ)."""
    a = np.clip(np.asarray(X, float) @ np.asarray(y0, float), -1.0, 1.0)
    return 2.0 / 3.0 - a + a**3 / 3.0


def V_plus(X: Array, v: Array) -> Array:
    r"""Thm 6.1 per token: :math:`V_+=1-v^\top y_i`; shape (..., ℓ)."""
    return 1.0 - np.asarray(X, float) @ np.asarray(v, float)


def largest_increase(values: Array) -> float:
    r"""Largest step-to-step increase of a sampled function along a trajectory (axis 0)
    (:math:`\le0` if it never increases); for per-token arrays the maximum over tokens."""
    v = np.asarray(values, float)
    if v.shape[0] < 2:
        return 0.0
    return float(np.diff(v, axis=0).max())


def scale_of(values: Array) -> float:
    """Size of a sampled function (for scale-aware round-off tolerances)."""
    return float(np.abs(np.asarray(values, float)).max()) or 1.0


def hemisphere_min(X: Array, v: Array) -> Array:
    r""":math:`\min_iv^\top y_i` (positive inside the open hemisphere)."""
    return (np.asarray(X, float) @ np.asarray(v, float)).min(axis=-1)


def two_token_inner_product(a0: float, k: float, t: Array) -> Array:
    r""":math:`y_1^\top y_2(t)=\tanh(\operatorname{artanh}a_0+kt)`."""
    return np.tanh(np.arctanh(a0) + k * np.asarray(t, float))


def wendel_probability(ell: int, d: int) -> float:
    r"""Corrected Wendel formula: :math:`2^{-(\ell-1)}\sum_{k=0}^{d-1}\binom{\ell-1}{k}` that :math:`\ell`
    uniform points on :math:`\mathbb S^{d-1}` lie in an open hemisphere (1 iff :math:`\ell\le d`)."""
    from math import comb

    return sum(comb(ell - 1, k) for k in range(min(d, ell))) / 2 ** (ell - 1)


def regular_tetrahedron() -> Array:
    """Vertices of the regular tetrahedron on :math:`\\mathbb S^2` (rows)."""
    return np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) / np.sqrt(3.0)


def tangent_basis(X: Array, W: Array | None = None) -> Array:
    r"""Orthonormal basis (columns) of :math:`\prod_iT_{y_i}\mathcal E_W=\{\delta_i: y_i^\top W\delta_i=0\}`."""
    X = np.asarray(X, float)
    ell, d = X.shape
    N = X if W is None else X @ W
    blocks = []
    for i in range(ell):
        n = N[i] / np.linalg.norm(N[i])
        _, _, Vt = np.linalg.svd(n[None])
        B = Vt[1:].T
        full = np.zeros((ell * d, d - 1))
        full[i * d:(i + 1) * d] = B
        blocks.append(full)
    return np.hstack(blocks)


def numerical_jacobian(f, X: Array, h: float = 1e-6) -> Array:
    """Central-difference Jacobian of ``f(X) -> (ℓ, d)`` in the flattened coordinates."""
    X = np.asarray(X, float)
    n = X.size
    J = np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        J[:, k] = (f((X.ravel() + e).reshape(X.shape)) - f((X.ravel() - e).reshape(X.shape))).ravel() / (2 * h)
    return J


Score = Array | tuple[Array, Array]


def scores(X: Array, P: Score) -> Array:
    r"""Scores :math:`s_{ij}=y_i^\top Py_j` of tokens ``X`` (..., ℓ, d), as matrix products.

    ``P`` is a (d, d) array, or a factor pair ``(A, B)`` with :math:`P=A^\top B` (:math:`A, B` of
    shape (r, d)): then :math:`S=(XA^\top)(XB^\top)^\top` costs :math:`O(\ell dr)` instead of
    :math:`O(\ell d^2)` (a head's :math:`\beta Q^\top K` has rank :math:`\le d_h`)."""
    X = np.asarray(X, float)
    if isinstance(P, tuple):
        A, B = (np.asarray(F, float) for F in P)
        return (X @ A.T) @ np.swapaxes(X @ B.T, -1, -2)
    return (X @ np.asarray(P, float)) @ np.swapaxes(X, -1, -2)


def log_attention_weights(X: Array, P: Score, *, causal: bool = False, row_sum: float | None = None) -> Array:
    r""":math:`\log\alpha_{ij}=\log c+s_{ij}-\log\sum_ke^{s_{ik}}` (log-sum-exp; finite for every finite
    score, where :math:`\alpha_{ij}` itself may underflow); :math:`-\infty` above the diagonal when causal.
    ``P`` as in :func:`scores`; ``X`` may carry leading axes (a stack of samples)."""
    X = np.asarray(X, float)
    ell, d = X.shape[-2:]
    S = scores(X, P)
    if causal:
        S = np.where(np.tril(np.ones((ell, ell), bool)), S, -np.inf)
    top = S.max(axis=-1, keepdims=True)
    c = 1.0 / np.sqrt(d) if row_sum is None else row_sum
    return math.log(c) + S - top - np.log(np.exp(S - top).sum(axis=-1, keepdims=True))


def attention_weights(X: Array, P: Score, *, causal: bool = False, row_sum: float | None = None) -> Array:
    r"""Attention matrix :math:`\alpha_{ij}=c\,e^{y_i^\top Py_j}/\sum_ke^{y_i^\top Py_k}` (Lemma 4.1's
    quantity), rows summing to ``row_sum`` (default :math:`c=1/\sqrt d`, the paper's convention)."""
    return np.exp(log_attention_weights(X, P, causal=causal, row_sum=row_sum))


def oja_token(y0: Array, U: Array, t: Array, rate: float) -> Array:
    r"""Token 1 of a causal model (or one token) with symmetric :math:`U`:
    :math:`y(t)=e^{rUt}y_0/|e^{rUt}y_0|` (:math:`r` the row sum, :math:`1/\sqrt d` in the paper)."""
    w, Q = np.linalg.eigh(U)
    c = Q.T @ y0
    Y = (Q[None] * (np.exp(rate * np.outer(np.asarray(t, float), w)) * c)[:, None, :]).sum(-1)
    return Y / np.linalg.norm(Y, axis=-1, keepdims=True)
