r"""Solver interface for Lyapunov LMIs (modelling kept apart from the solver, as in cvxpy).

Stability LMI, normalised and with an explicit margin (homogeneous, so the scale is free):

.. math::

    P = P^\top,\qquad P \succeq I,\qquad J^\top P + P J \preceq -I,
    \qquad \text{minimise } \operatorname{tr} P .

The returned :math:`P` is never evidence by itself: callers re-check it exactly with a
smaller margin (see :mod:`flowcert.certificates.core`). Only the status ``optimal`` is
accepted; ``optimal_inaccurate`` and everything else is reported as a failure to solve. Above
:data:`SDP_MAX_DIM` rows no SDP is tried, and one SCS solve stops after :data:`SCS_SECONDS`.
Each problem is built once per size with :math:`J` a ``cvxpy.Parameter`` (DPP) and re-solved.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

CLARABEL_MAX_DIM = 40  # interior point is dense in the n(n+1)/2 PSD block; SCS beyond
SDP_MAX_DIM = 96  # beyond it an SDP in n(n+1)/2 unknowns is not tried (SCS took minutes at n = 200)
SCS_SECONDS = 60.0  # wall-clock cap of one SCS solve (a stage budget, not a tolerance)


@dataclass
class LMISolution:
    """Outcome of one solve: ``P`` only when the status was ``optimal``.

    ``warnings`` holds the solver's own warnings (for example cvxpy's "Solution may be
    inaccurate"); they are kept for the record and never printed.
    """

    status: str
    P: np.ndarray | None
    solver: str
    seconds: float
    warnings: tuple[str, ...] = ()


@dataclass
class _LyapunovModel:
    """A parametrised problem in :math:`J` (DPP), built once per size and reused."""

    J: Any
    P: Any
    problem: Any
    solver: str
    options: dict[str, Any]


def _solver_for(n: int) -> tuple[str, dict[str, Any]]:
    if n <= CLARABEL_MAX_DIM:
        return "CLARABEL", {}
    return "SCS", {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200000, "time_limit_secs": SCS_SECONDS}


@lru_cache(maxsize=32)
def _model(n: int, margin: float, definite: bool) -> _LyapunovModel:
    r"""Stability LMI (``definite``: :math:`P\succeq I`, minimise tr P) or inertia LMI (min :math:`\|P\|_F`)."""
    import cvxpy as cp  # lazy: keeps ``flowcert --help`` fast

    J = cp.Parameter((n, n), name="J")
    P = cp.Variable((n, n), symmetric=True, name="P")
    lyap = J.T @ P + P @ J
    constraints = [0.5 * (lyap + lyap.T) << -margin * np.eye(n)]  # the symmetric part, stated explicitly
    if definite:
        problem = cp.Problem(cp.Minimize(cp.trace(P)), [P >> np.eye(n)] + constraints)
    else:
        problem = cp.Problem(cp.Minimize(cp.norm(P, "fro")), constraints)
    solver, options = _solver_for(n)
    return _LyapunovModel(J, P, problem, solver, options)


def _solve(n: int, margin: float, definite: bool, J: np.ndarray) -> LMISolution:
    import cvxpy as cp

    if n > SDP_MAX_DIM:
        return LMISolution(f"skipped: n = {n} > SDP_MAX_DIM = {SDP_MAX_DIM}", None, "none", 0.0)
    model = _model(n, margin, definite)
    model.J.value = np.asarray(J, dtype=float)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.problem.solve(solver=model.solver, **model.options)
        except cp.SolverError as exc:
            return LMISolution(f"solver_error: {exc}", None, model.solver, time.perf_counter() - t0)
    secs = time.perf_counter() - t0
    notes = tuple(str(w.message) for w in caught)
    P = model.P.value
    if model.problem.status != cp.OPTIMAL or P is None:
        return LMISolution(str(model.problem.status), None, model.solver, secs, notes)
    return LMISolution(model.problem.status, 0.5 * (P + P.T), model.solver, secs, notes)


def solve_lyapunov_lmi(J: np.ndarray, margin: float = 1.0) -> LMISolution:
    r"""Find :math:`P\succeq I` with :math:`J^\top P+PJ\preceq-\text{margin}\,I` by SDP."""
    return _solve(J.shape[0], float(margin), True, J)


def lyapunov_equation(J: np.ndarray) -> np.ndarray | None:
    """Solve :math:`J^\\top P+PJ=-I` (SciPy); None when it has no finite solution."""
    from scipy.linalg import solve_continuous_lyapunov  # here, not at import: recheck never solves

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            P = solve_continuous_lyapunov(J.T, -np.eye(J.shape[0]))
        except (np.linalg.LinAlgError, ValueError):
            return None
    if not np.all(np.isfinite(P)):
        return None
    return 0.5 * (P + P.T)


def solve_inertia_lmi(J: np.ndarray, margin: float = 1.0) -> LMISolution:
    """Find a symmetric (possibly indefinite) :math:`P` with :math:`J^\\top P+PJ\\preceq-\\text{margin}\\,I`.

    Feasible iff J has no eigenvalue on the imaginary axis; used when the Lyapunov equation is
    singular (two eigenvalues summing to zero). Minimises :math:`\\|P\\|_F`.
    """
    return _solve(J.shape[0], float(margin), False, J)
