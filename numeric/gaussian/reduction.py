r"""Invariant-subspace reduction of the moment ODE (gaussian paper, eq. (7)) for low-rank parameters.

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

A pretrained head has :math:`A=0` and :math:`B=M^\top`, :math:`V=U` of rank :math:`r=d_{\rm head}`
in a residual stream of width :math:`d\gg r`. Let :math:`\mathcal S\subseteq\mathbb R^d` be the
smallest subspace that contains the ranges of :math:`A,A^\top,V,V^\top,B,B^\top` and is invariant
under :math:`\Sigma_0`, :math:`Q=[Q_1\,Q_2]` an orthonormal basis adapted to
:math:`\mathcal S\oplus\mathcal S^\perp` (:math:`k=\dim\mathcal S\le 6r`). In these coordinates
:math:`A=\operatorname{diag}(A_{11},0)`, :math:`V=\operatorname{diag}(V_{11},0)`,
:math:`B=\operatorname{diag}(B_{11},0)` and, :math:`\Sigma_0` being symmetric with
:math:`\Sigma_0\mathcal S\subseteq\mathcal S`, also :math:`\Sigma_0\mathcal S^\perp\subseteq\mathcal S^\perp`,
so :math:`\Sigma_{12}(0)=0`. With :math:`\Sigma=\begin{pmatrix}S_{11}&S_{12}\\S_{21}&S_{22}\end{pmatrix}`,
:math:`V\Sigma B=\operatorname{diag}(V_{11}S_{11}B_{11},0)` and eq. (7) splits exactly into

.. math::

    \dot S_{11}=A_{11}S_{11}+S_{11}A_{11}^\top+V_{11}S_{11}B_{11}S_{11}+S_{11}B_{11}^\top S_{11}V_{11}^\top,\qquad
    \dot\mu_1=(A_{11}+V_{11}+V_{11}S_{11}B_{11})\mu_1+b_1,

    \dot S_{12}=(A_{11}+V_{11}S_{11}B_{11})S_{12},\qquad \dot S_{22}=0,\qquad \dot\mu_2=b_2 .

The first line is eq. (7) itself in dimension :math:`k` with :math:`(A_{11},B_{11},V_{11},b_1)`;
:math:`S_{12}\equiv0` (a linear homogeneous equation from zero), :math:`S_{22}` is frozen and
:math:`\mu_2(t)=\mu_2(0)+tb_2`. Hence

.. math::

    \Sigma(t)=\Sigma_0+Q_1\big(S_{11}(t)-S_{11}(0)\big)Q_1^\top,\qquad
    \mu(t)=\mu_0+Q_1\big(\mu_1(t)-\mu_1(0)\big)+t\,Q_2Q_2^\top b,

and :math:`\operatorname{spec}\Sigma(t)=\operatorname{spec}S_{11}(t)\cup\operatorname{spec}S_{22}`.
The subspace is found numerically (ranks by a relative singular-value threshold), so the reduced
run equals the full one up to rounding of the parameters' negligible part (relative size below
:data:`RANK_RTOL`); it is a simulation, never a certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Array = np.ndarray

#: Singular values below this fraction of the largest count as zero when ranges are taken.
RANK_RTOL = 1e-12


def _orth(columns: Array, scale: float) -> Array:
    """Orthonormal basis of the span of ``columns`` (singular values above ``RANK_RTOL * scale``)."""
    if columns.shape[1] == 0:
        return columns
    U, s, _ = np.linalg.svd(columns, full_matrices=False)
    return U[:, s > RANK_RTOL * scale]


@dataclass
class Reduction:
    """An orthonormal split :math:`\\mathbb R^d=\\mathcal S\\oplus\\mathcal S^\\perp` (module docstring)."""

    Q1: Array  # d x k, basis of S
    Q2: Array  # d x (d - k), basis of its complement

    @property
    def k(self) -> int:
        return int(self.Q1.shape[1])

    def block(self, X: Array) -> Array:
        """:math:`Q_1^\\top XQ_1`."""
        return self.Q1.T @ X @ self.Q1


def active_subspace(A: Array, B: Array, V: Array, Sigma0: Array, *, max_fraction: float = 0.5) -> Reduction | None:
    r"""The reduction of the module docstring, or None when :math:`k>` ``max_fraction`` :math:`\cdot d`.

    :math:`\mathcal S` starts as the span of the ranges of :math:`A,A^\top,V,V^\top,B,B^\top` and is
    closed under :math:`\Sigma_0` (Krylov: :math:`\mathcal S\leftarrow\mathcal S+\Sigma_0\mathcal S`
    until the dimension stops growing).
    """
    d = A.shape[0]
    scale = max(float(np.abs(X).max()) if X.size else 0.0 for X in (A, B, V))
    if scale == 0.0:
        return Reduction(np.zeros((d, 0)), np.eye(d))
    S = _orth(np.hstack([A, A.T, B, B.T, V, V.T]), np.sqrt(d) * scale)
    limit = max_fraction * d
    s0_scale = max(float(np.abs(Sigma0).max()), 1e-300)
    while S.shape[1] <= limit:
        grown = _orth(np.hstack([S, Sigma0 @ S]), np.sqrt(d) * s0_scale)
        if grown.shape[1] <= S.shape[1]:
            break
        S = grown
    if S.shape[1] > limit:
        return None
    # complement: the left singular vectors of I - S S^T with unit singular values
    P = np.eye(d) - S @ S.T
    U, s, _ = np.linalg.svd(P)
    Q2 = U[:, : d - S.shape[1]]
    return Reduction(S, Q2)
