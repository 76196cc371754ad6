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
:data:`RANK_RTOL`); it is a simulation, never a certificate. :func:`integrate_reduced` and
:func:`integrate_factored` (the :class:`FactoredTransport` of :math:`A=0`) are the runs of eq. (7)
through these reductions, lifted back to dimension :math:`d`; :func:`flowcert.numeric.gaussian.moments.integrate_moments`
chooses them.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..integration import IntegrationFailed, solve_switching
from .moments import (MEAN_ESCAPE, TRAJECTORY_BYTES, Array, ConstantCoefficients, MomentSolution, integrate_moments,
                      manifold_drift)

Array = np.ndarray

#: Singular values below this fraction of the largest count as zero when ranges are taken.
RANK_RTOL = 1e-12


def _orth(columns: Array, scale: float) -> Array:
    """Orthonormal basis of the span of ``columns`` (singular values above ``RANK_RTOL * scale``)."""
    if columns.shape[1] == 0:
        return columns
    U, s, _ = np.linalg.svd(columns, full_matrices=False)
    return U[:, s > RANK_RTOL * scale]


_SPANS: dict[str, Array] = {}


def _parameter_span(A: Array, B: Array, V: Array, scale: float) -> Array:
    """:func:`_orth` of :math:`[A,A^\top,B,B^\top,V,V^\top]`, kept for the last parameter triple (a digest
    of its bytes): Newton from every extension of a run asks for it again (an SVD of :math:`d\times6d`)."""
    key = hashlib.sha256(b"".join(np.ascontiguousarray(M, dtype=float).tobytes() for M in (A, B, V))
                         + repr((A.shape, scale)).encode()).hexdigest()
    if key not in _SPANS:
        _SPANS.clear()
        _SPANS[key] = _orth(np.hstack([A, A.T, B, B.T, V, V.T]), scale)
    return _SPANS[key]


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
    S = _parameter_span(A, B, V, np.sqrt(d) * scale)
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


# ---------------------------------------------------------------------------------------
# A = 0: the transport of Lemma 3.1 in factored form (r_V x r_B unknowns)
# ---------------------------------------------------------------------------------------
FACTORED_DOC = r"""
With :math:`A=0`, :math:`V=V_lV_r^\top` (:math:`d\times r_V` factors) and :math:`B=B_lB_r^\top`
(:math:`d\times r_B`), the transport :math:`\dot\Psi=V\Sigma B\,\Psi`, :math:`\Psi(0)=I`,
:math:`\Sigma=\Psi\Sigma_0\Psi^\top` of Lemma 3.1 stays of the form
:math:`\Psi=I+V_lHB_r^\top` with :math:`H\in\mathbb R^{r_V\times r_B}`, :math:`H(0)=0`:

.. math::

    \dot H=G\,(I+QH),\qquad G=V_r^\top\Sigma B_l=(C_1+PHC_2)+(C_3+PHC_4)H^\top R,

:math:`P=V_r^\top V_l`, :math:`Q=B_r^\top V_l`, :math:`R=V_l^\top B_l`, :math:`C_1=V_r^\top\Sigma_0B_l`,
:math:`C_2=B_r^\top\Sigma_0B_l`, :math:`C_3=V_r^\top\Sigma_0B_r`, :math:`C_4=B_r^\top\Sigma_0B_r`
(substitute :math:`\Psi` into :math:`\dot\Psi=V_l(V_r^\top\Sigma B_l)B_r^\top\Psi`). The mean is
:math:`\mu=\mu_0+tb+V_lw`, :math:`w(0)=0`,
:math:`\dot w=V_r^\top\mu+G\,B_r^\top\mu` with :math:`V_r^\top\mu=V_r^\top\mu_0+tV_r^\top b+Pw` and
:math:`B_r^\top\mu=B_r^\top\mu_0+tB_r^\top b+Qw`. With :math:`N=V_lH`, :math:`K=B_r^\top\Sigma_0`,
:math:`Z=[N\;K^\top]` and :math:`J=\begin{pmatrix}C_4&I\\I&0\end{pmatrix}`,
:math:`\Sigma=\Sigma_0+ZJZ^\top`, so :math:`\|\Sigma\|_F^2=\operatorname{tr}\Sigma_0^2
+2\operatorname{tr}(JZ^\top\Sigma_0Z)+\operatorname{tr}(JZ^\top ZJZ^\top Z)` needs only
:math:`r\times r` Gram matrices. :math:`\Sigma(t)` is a congruence of :math:`\Sigma_0`: PSD by
construction.
"""


class FactoredTransport:
    __doc__ = "Eq. (7) with A = 0 through the factored transport." + FACTORED_DOC + r"""
    When :math:`V_r^\top\mu_0=V_r^\top b=B_r^\top\mu_0=B_r^\top b=0` (exactly, as floats: a pretrained
    head has :math:`\mu_0=b=0`), :math:`\dot w=Pw+GQw` is linear homogeneous from :math:`w(0)=0`, so
    :math:`w\equiv0` and the state is :math:`H` alone (``mean_free``). ``svd`` passes the SVDs of V
    and B when the caller has them (:func:`factored_ranks` computes them).
    """

    def __init__(self, B: Array, V: Array, b: Array, mu0: Array, Sigma0: Array, rv: int, rb: int,
                 svd: tuple[tuple[Array, Array, Array], tuple[Array, Array, Array]] | None = None) -> None:
        (Uv, sv, Wv), (Ub, sb, Wb) = svd if svd is not None else (np.linalg.svd(V), np.linalg.svd(B))
        self.Vl, self.Vr = Uv[:, :rv] * sv[:rv], Wv[:rv].T
        self.Bl, self.Br = Ub[:, :rb] * sb[:rb], Wb[:rb].T
        Vl, Vr, Bl, Br, S0 = self.Vl, self.Vr, self.Bl, self.Br, Sigma0
        self.rv, self.rb, self.S0, self.mu0, self.b = rv, rb, S0, mu0, b
        self.P, self.Q, self.R = Vr.T @ Vl, Br.T @ Vl, Vl.T @ Bl
        S0Bl, S0Br, S0Vl = S0 @ Bl, S0 @ Br, S0 @ Vl
        self.C1, self.C2, self.C3, self.C4 = Vr.T @ S0Bl, Br.T @ S0Bl, Vr.T @ S0Br, Br.T @ S0Br
        self.C13, self.C24 = np.hstack([self.C1, self.C3]), np.hstack([self.C2, self.C4])
        self.K = S0Br.T  # B_r^T Sigma0
        # Grams for ||Sigma||_F
        self.g_VV, self.g_VS0V = Vl.T @ Vl, Vl.T @ S0Vl
        self.g_KV, self.g_KS0V = S0Br.T @ Vl, S0Br.T @ S0Vl
        self.g_KK, self.g_KS0K = S0Br.T @ S0Br, S0Br.T @ (S0 @ S0Br)
        self.tr_S0sq = float(np.sum(S0 * S0))
        self.m_v, self.m_vb = Vr.T @ mu0, Vr.T @ b
        self.m_b, self.m_bb = Br.T @ mu0, Br.T @ b
        self.mean_free = not (self.m_v.any() or self.m_vb.any() or self.m_b.any() or self.m_bb.any())
        self.J = np.block([[self.C4, np.eye(rb)], [np.eye(rb), np.zeros((rb, rb))]])

    @property
    def size(self) -> int:
        return self.rv * self.rb + (0 if self.mean_free else self.rv)

    def unpack(self, y: Array) -> tuple[Array, Array]:
        n = self.rv * self.rb
        return y[:n].reshape(self.rv, self.rb), (np.zeros(self.rv) if self.mean_free else y[n:])

    def G(self, H: Array) -> Array:
        rb = self.rb
        X = self.C13 + (self.P @ H) @ self.C24  # [C1 + P H C2 | C3 + P H C4]
        return X[:, :rb] + X[:, rb:] @ (H.T @ self.R)

    def rhs(self, t: float, y: Array) -> Array:
        r"""The field: :math:`\dot H=G(I+QH)` (7 products of :math:`r\times r` matrices), and :math:`\dot w`."""
        n = self.rv * self.rb
        H = y[:n].reshape(self.rv, self.rb)
        G = self.G(H)
        Phi = self.Q @ H
        Phi[np.diag_indices_from(Phi)] += 1.0  # I + Q H
        if self.mean_free:
            return (G @ Phi).ravel()
        w = y[n:]
        out = np.empty_like(y)
        out[:n] = (G @ Phi).ravel()
        out[n:] = self.m_v + t * self.m_vb + self.P @ w + G @ (self.m_b + t * self.m_bb + self.Q @ w)
        return out

    def sigma_norm(self, y: Array) -> float:
        r""":math:`\|\Sigma\|_F` from the Gram matrices (class docstring), block by block: with
        :math:`Z^\top Z=\begin{pmatrix}a&c^\top\\c&g_{KK}\end{pmatrix}`, :math:`a=H^\top g_{VV}H`,
        :math:`c=g_{KV}H` (and the same with :math:`\Sigma_0` inside),
        :math:`\operatorname{tr}(JX)=\operatorname{tr}(C_4X_{11})+2\operatorname{tr}X_{21}` and
        :math:`JZ^\top Z=\begin{pmatrix}C_4a+c&C_4c^\top+g_{KK}\\a&c^\top\end{pmatrix}`."""
        H = y[: self.rv * self.rb].reshape(self.rv, self.rb)
        C4 = self.C4
        sa, sc = H.T @ (self.g_VS0V @ H), self.g_KS0V @ H
        a, c = H.T @ (self.g_VV @ H), self.g_KV @ H
        cross = float(np.sum(C4 * sa.T)) + 2.0 * float(np.trace(sc))
        X11, X12 = C4 @ a + c, C4 @ c.T + self.g_KK
        quad = float(np.sum(X11 * X11.T)) + 2.0 * float(np.sum(X12 * a.T)) + float(np.sum(c * c.T))
        return math.sqrt(max(self.tr_S0sq + 2.0 * cross + quad, 0.0))

    def sigma(self, y: Array) -> Array:
        H, _ = self.unpack(y)
        Z = np.hstack([self.Vl @ H, self.K.T])
        S = self.S0 + Z @ self.J @ Z.T
        return 0.5 * (S + S.T)

    def mu(self, t: float, y: Array) -> Array:
        _, w = self.unpack(y)
        return self.mu0 + t * self.b + self.Vl @ w


Svd = tuple[Array, Array, Array]


_SVDS: dict[str, tuple[Svd, Svd]] = {}


def factored_svd(A: Array, B: Array, V: Array) -> tuple[int, int, tuple[Svd, Svd]] | None:
    """``(r_V, r_B, (svd(V), svd(B)))`` when :math:`A=0` and both ranks are below :math:`d/4` (else None);
    the SVDs are those :class:`FactoredTransport` takes its factors from (kept for the last pair of
    matrices, by a digest of their bytes: the size limits, the run and its extensions ask the same)."""
    d = A.shape[0]
    if np.any(A) or not np.any(B) or not np.any(V):
        return None
    key = hashlib.sha256(np.ascontiguousarray(B, dtype=float).tobytes() + np.ascontiguousarray(V, dtype=float).tobytes()
                         + repr((B.shape, V.shape)).encode()).hexdigest()
    if key not in _SVDS:
        _SVDS.clear()
        _SVDS[key] = (np.linalg.svd(V), np.linalg.svd(B))
    svd_v, svd_b = _SVDS[key]
    sv, sb = svd_v[1], svd_b[1]
    rv, rb = int(np.sum(sv > RANK_RTOL * sv[0])), int(np.sum(sb > RANK_RTOL * sb[0]))
    return (rv, rb, (svd_v, svd_b)) if 4 * max(rv, rb) <= d else None


def factored_ranks(A: Array, B: Array, V: Array) -> tuple[int, int] | None:
    """``(r_V, r_B)`` of :func:`factored_svd` (None when the factored transport does not apply)."""
    got = factored_svd(A, B, V)
    return None if got is None else got[:2]
