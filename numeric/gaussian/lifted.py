r"""Runs of eq. (7) (gaussian paper) through one of its proved reductions, lifted back to dimension d.

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

:func:`integrate_reduced` integrates the invariant block (:math:`S_{11}` of dimension :math:`k`,
the complement frozen) and :func:`integrate_factored` the factored transport
:math:`\Psi=I+V_lHB_r^\top` of :math:`A=0` (:math:`r_Vr_B` states, :math:`r_V` more for the mean);
both are the equations of :mod:`.reduction`, proved at the matrix level by
:func:`flowcert.symbolic.gaussian.reduction_proofs` (``invariant_block_*``, ``factored_*``), and
:func:`.moments.integrate_moments` calls them only when those proofs hold. Split from
:mod:`.moments`, which chooses the path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..integration import IntegrationFailed, solve_switching
from .moments import (MEAN_ESCAPE, TRAJECTORY_BYTES, ConstantCoefficients, MomentSolution, integrate_moments,
                      manifold_drift)

Array = np.ndarray

#: Lifted d x d covariances a factored run keeps (evenly spaced steps, the first and last included): each
#: costs a d x d x 2r product, and the verdicts read the last one and the trend of the distance to a limit.
FACTORED_KEEP = 65


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
    note = (f"integrated on the invariant subspace of dimension {red.k} of {d} (A, B, V vanish off it; "
            "reduction proved: flowcert.symbolic.gaussian.reduction_proofs); ")
    return MomentSolution(t, mu, Sigma, sol.status, sol.blowup_time, note + sol.message, sol.method, drift,
                          sol.mean_escape_time, sol.reason, red.k * (red.k + 1))


def integrate_factored(ranks: tuple[int, int, Any], coeffs: ConstantCoefficients, mu0: Array, Sigma0: Array,
                        t_end: float, *, rtol: float, atol: float, blowup_factor: float, method: str,
                        max_evaluations: int, implicit_rtol: float | None,
                        max_seconds: float | None) -> MomentSolution | None:
    r"""Eq. (7) with :math:`A=0` through :class:`.reduction.FactoredTransport`, lifted back to :math:`d`.

    Same events as the full run (:math:`\|\Sigma\|_F` from Gram matrices; the mean's escape returns
    None, and the caller integrates otherwise). Explicit steps only: on real heads the stiffness
    monitor fires on the non-normal growth before a blow-up, where Radau (a finite-difference
    Jacobian of the :math:`r_Vr_B` states) stalls; the budgets bound the run. Kept steps are thinned to :data:`FACTORED_KEEP` (and :data:`TRAJECTORY_BYTES`);
    ``drift`` is measured on up to 8 kept covariances (PSD by construction up to rounding).
    """
    from .reduction import FactoredTransport

    A, B, V, b = coeffs.values
    d = mu0.shape[0]
    ft = FactoredTransport(B, V, b, mu0, Sigma0, ranks[0], ranks[1], svd=ranks[2])
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
    keep = max(2, min(ts.size, FACTORED_KEEP, TRAJECTORY_BYTES // (8 * (d * d + d))))
    idx = np.unique(np.round(np.linspace(0, ts.size - 1, keep)).astype(int))
    with np.errstate(all="ignore"):
        Sigma = np.stack([ft.sigma(ys[i]) for i in idx])
        mu = np.stack([ft.mu(float(ts[i]), ys[i]) for i in idx])
    probe = idx[np.unique(np.round(np.linspace(0, idx.size - 1, min(8, idx.size))).astype(int))]
    drift = manifold_drift(Sigma[np.searchsorted(idx, probe)])
    status = "blowup" if tb is not None else ("ok" if sol.status == 0 else "failed")
    note = (f"factored transport Psi = I + V_l H B_r^T (A = 0, rank V = {ft.rv}, rank B = {ft.rb}: "
            f"{ft.size} states; reduction proved: flowcert.symbolic.gaussian.reduction_proofs); " + note)
    return MomentSolution(ts[idx], mu, Sigma, status, tb, note + sol.message, meth, drift, None, "", ft.size)
