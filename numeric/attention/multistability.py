r"""Jacobians, spectra, Newton refinement and classification for the multistability paper
(Altafini; note 001 §1.5–2), for one head, full or causal attention, any ellipsoid.

**Ambient Jacobian** (Lemma 8 corrected: :math:`x_k\to x_h`; general :math:`M`, :math:`V`,
:math:`W`, row sum :math:`c`, causal mask). With :math:`\sigma=A/c` (rows summing to 1),
:math:`\mu_i=\sum_l\sigma_{il}x_l`, :math:`m_i=\sum_jA_{ij}x_j`, :math:`y_i=Vm_i`,
:math:`\Pi_i=I-x_ix_i^\top W`:

.. math::

    \frac{\partial m_i}{\partial x_h} = A_{ih}\big(I+(x_h-\mu_i)\,x_i^\top M\big)
      + \delta_{ih}\sum_jA_{ij}\,x_j(x_j-\mu_i)^\top M^\top,\qquad
    \frac{\partial f_i}{\partial x_h} = \Pi_iV\frac{\partial m_i}{\partial x_h}
      - \delta_{ih}\big[(x_i^\top Wy_i)\,I + x_i(Wy_i)^\top\big].

For the Oja variants :math:`A` is constant (:math:`I` or :math:`\frac1n\mathbb 1\mathbb 1^\top`)
and the attention terms vanish. Blocks are stacked as :math:`\mathbf x=` ``X.ravel()`` (block
:math:`(i,h)` at rows ``i*d:(i+1)*d``, columns ``h*d:(h+1)*d``).

**Spectra** (note §1.6): the tangent spectrum is that of :math:`B^\top FB` with
:math:`B=\operatorname{blkdiag}(U_i)`, :math:`U_i` an orthonormal basis of
:math:`\{z: x_i^\top Wz=0\}`; at an equilibrium :math:`F` maps the tangent space into itself and the
ambient spectrum is the tangent one plus the normal eigenvalues :math:`-2\gamma_i`,
:math:`\gamma_i=x_i^\top Wy_i`.

**Newton** (Gauss–Newton in tangent coordinates with retraction): solve
:math:`\min\|B^\top f(\mathbf x)+B^\top FB\,\delta\|` by least squares, set
:math:`\mathbf x\leftarrow\pi_W(\mathbf x+B\delta)`.

**Closed-form spectra** at consensus/bipartite points (note §3, Lemma 10 and D1):
:func:`bipartite_spectra`.

Public API: :func:`ambient_jacobian`, :func:`tangent_basis`, :func:`spectra`, :func:`newton`,
:func:`classify`, :func:`bipartite_spectra`, :func:`eigen_desc`, :func:`bipartite_point`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .field import project

Array = np.ndarray


def eigen_desc(V: Array) -> tuple[Array, Array]:
    """Eigenvalues (descending, the paper's order) and unit eigenvectors (columns) of symmetric V."""
    w, U = np.linalg.eigh(V)
    return w[::-1], U[:, ::-1]


def attention_weights(X: Array, M: Array, c: float = 1.0, causal: bool = False, variant: str = "self_attention") -> Array:
    """:math:`A` (rows summing to ``c``) for one configuration."""
    n = X.shape[0]
    if variant == "oja":
        return np.eye(n)
    if variant == "multiagent_oja":
        return np.full((n, n), 1.0 / n)
    S = X @ M @ X.T
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    S = S - S.max(1, keepdims=True)
    E = np.exp(S)
    return c * E / E.sum(1, keepdims=True)


def field_one_head(X: Array, M: Array, V: Array, c: float = 1.0, causal: bool = False, W: Array | None = None,
                   variant: str = "self_attention") -> Array:
    """The field for one configuration (reference for the Jacobian; the kernels are generated)."""
    A = attention_weights(X, M, c, causal, variant)
    Y = A @ X @ V.T
    XW = X if W is None else X @ W
    return Y - np.sum(XW * Y, 1, keepdims=True) * X


def ambient_jacobian(X: Array, M: Array, V: Array, c: float = 1.0, causal: bool = False, W: Array | None = None,
                     variant: str = "self_attention") -> Array:
    """Ambient :math:`nd\\times nd` Jacobian of the field at ``X`` (module docstring)."""
    n, d = X.shape
    Wm = np.eye(d) if W is None else W
    A = attention_weights(X, M, c, causal, variant)
    m = A @ X
    Y = m @ V.T
    J = np.zeros((n, d, n, d))
    I = np.eye(d)
    for i in range(n):
        Pi = I - np.outer(X[i], Wm @ X[i])
        dm = A[i][:, None, None] * I[None]  # (h, d, d): A_ih I
        if variant == "self_attention":
            sig = A[i] / c
            mu = sig @ X
            xM = X[i] @ M  # x_i^T M
            dm = dm + A[i][:, None, None] * np.einsum("hp,q->hpq", X - mu, xM)
            dm[i] += np.einsum("j,jp,jq->pq", A[i], X, (X - mu) @ M.T)
        blocks = np.einsum("pq,hqr->hpr", Pi @ V, dm)
        gam = X[i] @ Wm @ Y[i]
        blocks[i] -= gam * I + np.outer(X[i], Wm @ Y[i])
        J[i] = blocks.transpose(1, 0, 2)
    return J.reshape(n * d, n * d)


def tangent_basis(X: Array, W: Array | None = None) -> Array:
    """:math:`B=\\operatorname{blkdiag}(U_i)`, :math:`U_i` an orthonormal basis of :math:`(Wx_i)^\\perp`
    (shape (nd, n(d-1)))."""
    n, d = X.shape
    B = np.zeros((n * d, n * (d - 1)))
    for i in range(n):
        w = X[i] if W is None else W @ X[i]
        _, _, Vt = np.linalg.svd(w[None, :])
        B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = Vt[1:].T
    return B


@dataclass
class Spectra:
    """Tangent (:math:`n(d-1)` values), normal (:math:`n`) and ambient (:math:`nd`) eigenvalues."""

    tangent: Array
    normal: Array
    ambient: Array


def spectra(F: Array, X: Array, W: Array | None = None) -> Spectra:
    """Tangent, normal and ambient spectra of the ambient Jacobian ``F`` at ``X``."""
    n, d = X.shape
    B = tangent_basis(X, W)
    N = np.zeros((n * d, n))
    for i in range(n):
        w = X[i] if W is None else W @ X[i]
        N[i * d:(i + 1) * d, i] = w / np.linalg.norm(w)
    Bp = np.linalg.pinv(B)
    return Spectra(np.linalg.eigvals(Bp @ F @ B), np.linalg.eigvals(np.linalg.pinv(N) @ F @ N), np.linalg.eigvals(F))


@dataclass
class NewtonResult:
    X: Array
    residual: float
    converged: bool
    iterations: int


def newton(X0: Array, M: Array, V: Array, c: float = 1.0, causal: bool = False, W: Array | None = None,
           variant: str = "self_attention", tol: float = 1e-13, max_iter: int = 30) -> NewtonResult:
    """Gauss–Newton on :math:`f=0` in tangent coordinates with retraction (module docstring)."""
    X = project(np.asarray(X0, float), W)
    scale = 1.0 + np.abs(V).max()
    res = float(np.abs(field_one_head(X, M, V, c, causal, W, variant)).max())
    for it in range(max_iter):
        if res <= tol * scale:
            return NewtonResult(X, res, True, it)
        B = tangent_basis(X, W)
        F = ambient_jacobian(X, M, V, c, causal, W, variant)
        f = field_one_head(X, M, V, c, causal, W, variant).ravel()
        delta = np.linalg.lstsq(F @ B, -f, rcond=1e-12)[0]
        Xn = project(X + (B @ delta).reshape(X.shape), W)
        rn = float(np.abs(field_one_head(Xn, M, V, c, causal, W, variant)).max())
        if not rn < res:
            break
        X, res = Xn, rn
    return NewtonResult(X, res, res <= tol * scale, max_iter)


def bipartite_point(v: Array, signs: Array) -> Array:
    """:math:`x_i=s_iv` as an (n, d) array."""
    return np.asarray(signs, float)[:, None] * np.asarray(v, float)[None, :]


def scaled_weights(a: float) -> tuple[float, float]:
    r""":math:`(e^{a},e^{-a})` divided by the larger of the two: :math:`(1,e^{-2a})` for :math:`a\ge0`,
    :math:`(e^{2a},1)` otherwise. Every bipartite quantity (eq. (8), :math:`\delta_\ell`, the
    :math:`2\times2` blocks) is homogeneous of degree 0 in :math:`(\alpha_1,\alpha_2)`, so the scaled
    pair gives the same values and never overflows (a tiny entry underflows to 0 harmlessly)."""
    a = float(a)
    return (1.0, math.exp(-2.0 * a) if -2.0 * a > -745.0 else 0.0) if a >= 0 else \
        (math.exp(2.0 * a) if 2.0 * a > -745.0 else 0.0, 1.0)


def bipartite_spectra(lam: Array, a: float, k: int, n1: int, n2: int, c: float = 1.0,
                      variant: str = "self_attention") -> tuple[Array, Array]:
    """Closed-form tangent and normal spectra at :math:`x_i=\\pm v_k` with ``n1`` plus and ``n2``
    minus signs (note 001, Lemma 10 corrected + D1): within-group modes :math:`-c\\lambda_k\\delta_\\ell`
    (:math:`(n_\\ell-1)(d-1)` each), the :math:`2\\times2` blocks
    :math:`c\\big(\\lambda_jA_2-\\lambda_k\\operatorname{diag}(\\delta)\\big)` for :math:`j\\ne k`, and the
    normal eigenvalues :math:`-2c\\lambda_k\\delta_\\ell` (:math:`n_\\ell` each). ``k`` is 0-based."""
    d = len(lam)
    lk = lam[k]
    others = [lam[j] for j in range(d) if j != k]
    if variant == "oja":
        tang = np.repeat(np.array(others) - lk, n1 + n2)
        return tang.astype(complex), np.full(n1 + n2, -2 * lk, complex)
    a = a if variant == "self_attention" else 0.0
    al1, al2 = scaled_weights(a)
    b1, b2 = n1 * al1 + n2 * al2, n1 * al2 + n2 * al1
    d1 = (n1 * al1 - n2 * al2) / b1 if n1 else 0.0
    d2 = (n2 * al1 - n1 * al2) / b2 if n2 else 0.0
    tang: list[complex] = []
    tang += [-c * lk * d1] * max(n1 - 1, 0) * (d - 1)
    tang += [-c * lk * d2] * max(n2 - 1, 0) * (d - 1)
    for lj in others:
        if n1 and n2:
            A2 = np.array([[n1 * al1 / b1, n2 * al2 / b1], [n1 * al2 / b2, n2 * al1 / b2]])
            tang += list(np.linalg.eigvals(c * (lj * A2 - lk * np.diag([d1, d2]))))
        else:
            tang.append(c * (lj - lk))
    normal = [-2 * c * lk * d1] * n1 + [-2 * c * lk * d2] * n2
    return np.array(tang, complex), np.array(normal, complex)


@dataclass
class Classification:
    """Labels of an equilibrium (all that apply) and what identified them."""

    labels: list[str]
    k: int | None = None  # 0-based eigenvector index for consensus/bipartite
    signs: Array | None = None
    clusters: int = 0
    details: dict[str, Any] = field(default_factory=dict)


def classify(X: Array, V: Array, M: Array, c: float = 1.0, variant: str = "self_attention",
             tol: float = 1e-8) -> Classification:
    """Classes of an equilibrium ``X`` (refined by Newton) of (1)/(5) on the sphere (note §2): a
    consensus/bipartite point when every token is :math:`\\pm v_k` for one simple eigenvector
    (:math:`\\|x_i\\mp v_k\\|\\le` ``tol``), polygonal when every :math:`y_i=0`, clustering otherwise
    (``clusters`` = number of distinct token positions at ``tol``)."""
    lam, U = eigen_desc(V)
    labels: list[str] = []
    out = Classification(labels)
    proj = X @ U
    for k in range(U.shape[1]):
        s = np.sign(proj[:, k])
        if np.all(s != 0) and np.abs(X - bipartite_point(U[:, k], s)).max() <= tol:
            out.k, out.signs = k, s
            labels.append("consensus" if abs(s.sum()) == len(s) else "bipartite")
            break
    A = attention_weights(X, M, c, False, variant)
    Y = A @ X @ V.T
    if np.abs(Y).max() <= tol * (1 + np.abs(V).max()):
        labels.append("polygonal")
    centres: list[Array] = []
    for x in X:
        if not any(np.linalg.norm(x - w) <= np.sqrt(tol) for w in centres):
            centres.append(x)
    out.clusters = len(centres)
    if not labels:
        labels.append("clustering")
    out.details = {"clusters": len(centres)}
    return out
