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
    __doc__ = "Eq. (7) with A = 0 through the factored transport." + FACTORED_DOC

    def __init__(self, B: Array, V: Array, b: Array, mu0: Array, Sigma0: Array, rv: int, rb: int) -> None:
        Uv, sv, Wv = np.linalg.svd(V)
        Ub, sb, Wb = np.linalg.svd(B)
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
        self.J = np.block([[self.C4, np.eye(rb)], [np.eye(rb), np.zeros((rb, rb))]])

    @property
    def size(self) -> int:
        return self.rv * self.rb + self.rv

    def unpack(self, y: Array) -> tuple[Array, Array]:
        return y[: self.rv * self.rb].reshape(self.rv, self.rb), y[self.rv * self.rb:]

    def G(self, H: Array) -> Array:
        rb = self.rb
        X = self.C13 + (self.P @ H) @ self.C24  # [C1 + P H C2 | C3 + P H C4]
        return X[:, :rb] + X[:, rb:] @ (H.T @ self.R)

    def rhs(self, t: float, y: Array) -> Array:
        H, w = self.unpack(y)
        G = self.G(H)
        QHw = self.Q @ np.column_stack([H, w])  # Q H and Q w in one product
        out = np.empty_like(y)
        out[: self.rv * self.rb] = (G + G @ QHw[:, :-1]).ravel()
        out[self.rv * self.rb:] = self.m_v + t * self.m_vb + self.P @ w + G @ (self.m_b + t * self.m_bb + QHw[:, -1])
        return out

    def sigma_norm(self, y: Array) -> float:
        """:math:`\\|\\Sigma\\|_F` from the Gram matrices (class docstring)."""
        H, _ = self.unpack(y)
        rb = self.rb
        ZtS0Z = np.block([[H.T @ self.g_VS0V @ H, (self.g_KS0V @ H).T], [self.g_KS0V @ H, self.g_KS0K]])
        ZtZ = np.block([[H.T @ self.g_VV @ H, (self.g_KV @ H).T], [self.g_KV @ H, self.g_KK]])
        JZ = self.J @ ZtZ
        val = self.tr_S0sq + 2.0 * float(np.trace(self.J @ ZtS0Z)) + float(np.sum(JZ * JZ.T))
        del rb
        return math.sqrt(max(val, 0.0))

    def sigma(self, y: Array) -> Array:
        H, _ = self.unpack(y)
        Z = np.hstack([self.Vl @ H, self.K.T])
        S = self.S0 + Z @ self.J @ Z.T
        return 0.5 * (S + S.T)

    def mu(self, t: float, y: Array) -> Array:
        _, w = self.unpack(y)
        return self.mu0 + t * self.b + self.Vl @ w


def factored_ranks(A: Array, B: Array, V: Array) -> tuple[int, int] | None:
    """``(r_V, r_B)`` when :math:`A=0` and both ranks are below :math:`d/4` (else None)."""
    d = A.shape[0]
    if np.any(A) or not np.any(B) or not np.any(V):
        return None
    sv, sb = np.linalg.svd(V, compute_uv=False), np.linalg.svd(B, compute_uv=False)
    rv, rb = int(np.sum(sv > RANK_RTOL * sv[0])), int(np.sum(sb > RANK_RTOL * sb[0]))
    return (rv, rb) if 4 * max(rv, rb) <= d else None


# ---------------------------------------------------------------------------------------
# eq. (7) integrated through a reduction (called by moments._integrate_moments)
# ---------------------------------------------------------------------------------------


def integrate_reduced(red: Any, coeffs: ConstantCoefficients, mu0: Array, Sigma0: Array, t_end: float, *,
                       blowup_factor: float, **options: Any) -> MomentSolution:
    r"""Eq. (7) through its invariant-subspace reduction (:mod:`.reduction`), lifted back to :math:`d`.

    The reduced run gets the full system's event levels: :math:`\|\Sigma\|_F^2=\|S_{11}\|_F^2+\|S_{22}\|_F^2`
    with :math:`S_{22}` frozen, :math:`\|\mu\|^2=\|\mu_1\|^2+\|\mu_2\|^2` (:math:`\mu_2(t)=\mu_2(0)+tb_2`,
    bounded on the run by its value at ``t_end``). The kept steps are thinned to
    :data:`TRAJECTORY_BYTES`; ``drift`` is that of :math:`S_{11}` and of the frozen :math:`S_{22}`.
    """
    A, B, V, b = coeffs.values
    d, Q1, Q2 = mu0.shape[0], red.Q1, red.Q2
    S11_0, S22 = red.block(Sigma0), Q2.T @ Sigma0 @ Q2
    m1_0, b2 = Q1.T @ mu0, Q2.T @ b
    with np.errstate(all="ignore"):
        threshold = blowup_factor * (1.0 + np.linalg.norm(Sigma0))
        escape = min(MEAN_ESCAPE * (1.0 + np.linalg.norm(mu0) + np.linalg.norm(b)), np.finfo(float).max)
        level_S = math.sqrt(max(threshold**2 - float(np.linalg.norm(S22)) ** 2, 0.0))
        m2_end = float(np.linalg.norm(Q2.T @ mu0 + min(t_end, 1e300) * b2))
        level_mu = math.sqrt(max(escape**2 - m2_end**2, 0.0)) if math.isfinite(escape) else escape
    small = ConstantCoefficients(red.block(A), red.block(B), red.block(V), Q1.T @ b)
    sol = integrate_moments(small, m1_0, S11_0, t_end, reduce=False, levels=(level_S, level_mu), **options)
    keep = max(2, min(sol.t.size, TRAJECTORY_BYTES // (8 * (d * d + d))))
    idx = np.unique(np.round(np.linspace(0, sol.t.size - 1, keep)).astype(int))
    t = sol.t[idx]
    dS = sol.Sigma[idx] - S11_0
    Sigma = Sigma0 + np.einsum("ia,nab,jb->nij", Q1, dS, Q1, optimize=True)
    m1 = sol.mu[idx]
    finite = np.all(np.isfinite(m1), axis=1)
    with np.errstate(all="ignore"):
        mu = mu0 + np.where(finite[:, None], m1 - m1_0, 0.0) @ Q1.T + np.outer(t, Q2 @ b2)
        if not finite.all():  # after the mean escaped it is +-inf along Q1 (its finite part is meaningless)
            v = np.nan_to_num(m1[~finite], nan=0.0, posinf=1.0, neginf=-1.0) @ Q1.T
            mu[~finite] = np.where(v == 0.0, 0.0, np.copysign(np.inf, v))
    drift = dict(sol.drift) if sol.drift is not None else None
    if drift is not None and S22.size:
        w22 = np.linalg.eigvalsh(0.5 * (S22 + S22.T))
        scale = max(float(np.abs(w22).max()), float(np.abs(Sigma[-1]).max()) if np.all(np.isfinite(Sigma[-1])) else 0.0,
                    1e-300)
        drift["negative_eigenvalue"] = max(drift["negative_eigenvalue"], max(0.0, -float(w22[0])) / scale)
    note = f"integrated on the invariant subspace of dimension {red.k} of {d} (A, B, V vanish off it); "
    return MomentSolution(t, mu, Sigma, sol.status, sol.blowup_time, note + sol.message, sol.method, drift,
                          sol.mean_escape_time, sol.reason, red.k * (red.k + 1))


def integrate_factored(ranks: tuple[int, int], coeffs: ConstantCoefficients, mu0: Array, Sigma0: Array,
                        t_end: float, *, rtol: float, atol: float, blowup_factor: float, method: str,
                        max_evaluations: int, implicit_rtol: float | None,
                        max_seconds: float | None) -> MomentSolution | None:
    r"""Eq. (7) with :math:`A=0` through :class:`.reduction.FactoredTransport`, lifted back to :math:`d`.

    Same events as the full run (:math:`\|\Sigma\|_F` from Gram matrices; the mean's escape returns
    None, and the caller integrates otherwise). Explicit steps only: on real heads the stiffness
    monitor fires on the non-normal growth before a blow-up, where Radau (a finite-difference
    Jacobian of the :math:`r_Vr_B` states) stalls; the budgets bound the run. Kept steps are thinned to :data:`TRAJECTORY_BYTES`;
    ``drift`` is measured on up to 8 kept covariances (PSD by construction up to rounding).
    """
    A, B, V, b = coeffs.values
    d = mu0.shape[0]
    ft = FactoredTransport(B, V, b, mu0, Sigma0, *ranks)
    with np.errstate(all="ignore"):
        threshold = blowup_factor * (1.0 + np.linalg.norm(Sigma0))
        escape = min(MEAN_ESCAPE * (1.0 + np.linalg.norm(mu0) + np.linalg.norm(b)), np.finfo(float).max)
    vl_norm = float(np.linalg.norm(ft.Vl, 2)) if ft.Vl.size else 0.0

    def blowup(t: float, y: Array) -> float:
        return threshold - ft.sigma_norm(y)

    def mean_escape(t: float, y: Array) -> float:
        return escape - vl_norm * float(np.linalg.norm(y[ft.rv * ft.rb:]))

    for event in (blowup, mean_escape):
        event.terminal = True  # type: ignore[attr-defined]
        event.direction = -1  # type: ignore[attr-defined]
    y0 = np.zeros(ft.size)
    try:
        with np.errstate(all="ignore"):
            sol, meth, note = solve_switching(ft.rhs, (0.0, float(t_end)), y0, method=method,
                                              events=[blowup, mean_escape], max_evaluations=max_evaluations,
                                              rtol=rtol, atol=atol, implicit_rtol=implicit_rtol,
                                              max_seconds=max_seconds, implicit_max_states=0)
    except IntegrationFailed as exc:
        return MomentSolution(np.array([0.0]), mu0[None], Sigma0[None], "failed", None,
                              "factored transport (A = 0, low rank): " + str(exc), exc.method, reason=exc.reason,
                              reduced_dimension=ft.size)
    if sol.status == 1 and sol.t_events[1].size and not sol.t_events[0].size:
        return None  # the mean escaped: the full path freezes it and goes on with Sigma
    ts, ys = np.asarray(sol.t, dtype=float), np.asarray(sol.y, dtype=float).T
    tb = None
    if sol.status == 1 and sol.t_events[0].size:
        tb = float(sol.t_events[0][0])
        ts, ys = np.append(ts, tb), np.vstack([ys, sol.y_events[0][0]])
    keep = max(2, min(ts.size, TRAJECTORY_BYTES // (8 * (d * d + d))))
    idx = np.unique(np.round(np.linspace(0, ts.size - 1, keep)).astype(int))
    with np.errstate(all="ignore"):
        Sigma = np.stack([ft.sigma(ys[i]) for i in idx])
        mu = np.stack([ft.mu(float(ts[i]), ys[i]) for i in idx])
    probe = idx[np.unique(np.round(np.linspace(0, idx.size - 1, min(8, idx.size))).astype(int))]
    drift = manifold_drift(Sigma[np.searchsorted(idx, probe)])
    status = "blowup" if tb is not None else ("ok" if sol.status == 0 else "failed")
    note = (f"factored transport Psi = I + V_l H B_r^T (A = 0, rank V = {ft.rv}, rank B = {ft.rb}: "
            f"{ft.size} states); " + note)
    return MomentSolution(ts[idx], mu, Sigma, status, tb, note + sol.message, meth, drift, None, "", ft.size)
