r"""Solver interface for Lyapunov LMIs (modelling kept apart from the solver, as in cvxpy).

Stability LMI, normalised and with an explicit margin (homogeneous, so the scale is free):

.. math::

    P = P^\top,\qquad P \succeq I,\qquad J^\top P + P J \preceq -I,
    \qquad \text{minimise } \operatorname{tr} P .

The returned :math:`P` is never evidence by itself: callers re-check it exactly with a
smaller margin (see :mod:`flowcert.certificates.core`). Only the status ``optimal`` is
accepted; ``optimal_inaccurate`` and everything else is reported as a failure to solve.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_continuous_lyapunov

CLARABEL_MAX_DIM = 40  # interior point is dense in the n(n+1)/2 PSD block; SCS beyond


@dataclass
class LMISolution:
    """Outcome of one solve: ``P`` only when the status was ``optimal``."""

    status: str
    P: np.ndarray | None
    solver: str
    seconds: float


def solve_lyapunov_lmi(J: np.ndarray, margin: float = 1.0) -> LMISolution:
    """Find :math:`P\\succeq I` with :math:`J^\\top P+PJ\\preceq-\\text{margin}\\,I` by SDP."""
    import cvxpy as cp  # lazy: keeps ``flowcert --help`` fast

    n = J.shape[0]
    P = cp.Variable((n, n), symmetric=True)
    lyap = J.T @ P + P @ J
    constraints = [P >> np.eye(n), 0.5 * (lyap + lyap.T) << -margin * np.eye(n)]
    problem = cp.Problem(cp.Minimize(cp.trace(P)), constraints)
    solver = "CLARABEL" if n <= CLARABEL_MAX_DIM else "SCS"
    opts = {} if solver == "CLARABEL" else {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200000}
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver, **opts)
    except cp.SolverError as exc:
        return LMISolution(f"solver_error: {exc}", None, solver, time.perf_counter() - t0)
    secs = time.perf_counter() - t0
    if problem.status != cp.OPTIMAL or P.value is None:
        return LMISolution(str(problem.status), None, solver, secs)
    Pv = 0.5 * (P.value + P.value.T)
    return LMISolution(problem.status, Pv, solver, secs)


def lyapunov_equation(J: np.ndarray) -> np.ndarray | None:
    """Solve :math:`J^\\top P+PJ=-I` (SciPy); None when it has no finite solution."""
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
    import cvxpy as cp

    n = J.shape[0]
    P = cp.Variable((n, n), symmetric=True)
    lyap = J.T @ P + P @ J
    problem = cp.Problem(cp.Minimize(cp.norm(P, "fro")), [0.5 * (lyap + lyap.T) << -margin * np.eye(n)])
    solver = "CLARABEL" if n <= CLARABEL_MAX_DIM else "SCS"
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver)
    except cp.SolverError as exc:
        return LMISolution(f"solver_error: {exc}", None, solver, time.perf_counter() - t0)
    secs = time.perf_counter() - t0
    if problem.status != cp.OPTIMAL or P.value is None:
        return LMISolution(str(problem.status), None, solver, secs)
    return LMISolution(problem.status, 0.5 * (P.value + P.value.T), solver, secs)
