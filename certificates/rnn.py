r"""Certificates for the ``rnn`` system: a bound on :math:`\|\mathcal P\|` (bounded-real lemma) and a
contraction rate (common quadratic Lyapunov function), both re-checked in exact rational arithmetic.

**Bounded-real lemma** (constant Jacobian A, the ``linear`` cell; note §2.4). P is the input–output
map of :math:`x_{t+1}=Ax_t+q_t,\ p_t=Ax_t+q_t` (:math:`x_t=p_{t-1}`, :math:`x_1=0`). If a rational
:math:`X\succeq0` and :math:`\gamma^2` satisfy

.. math::

    M=\begin{bmatrix}A^\top(X+I)A-X & A^\top(X+I)\\ (X+I)A & X+I-\gamma^2I\end{bmatrix}\preceq0,

then :math:`V(x)=x^\top Xx` obeys :math:`V(x_{t+1})-V(x_t)+|p_t|^2-\gamma^2|q_t|^2\le0`; summing from
:math:`x_1=0` gives :math:`\|\mathcal P_T\|_2\le\gamma` for every horizon T and every trial.

**Common quadratic Lyapunov function** (any cell, on the Jacobians of a given trajectory). If a
rational :math:`X\succeq I` and :math:`\rho^2` satisfy :math:`\rho^2X-A_t^\top XA_t\succeq0` for every
:math:`A_t` used by P, then :math:`\|\Phi(t,s)\|_2\le\sqrt{\kappa}\rho^{t-s}` with
:math:`\kappa\le\lambda_{\max}(X)` (bounded by the Gershgorin radius), hence the largest finite-time
Lyapunov exponent is :math:`\le\log\rho` and :math:`\|\mathcal P_T\|_2\le\sqrt\kappa\sum_{k<T}\rho^k`
(triangle inequality over the block diagonals of P).

Candidates come from cvxpy (SDP); only the exact check of the rounded rational data decides.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import core, exact, second_opinion
from .claims import claim

RMat = list[list[Fraction]]


def _mm(A: RMat, B: RMat) -> RMat:
    Bt = list(zip(*B))
    return [[sum((a * b for a, b in zip(row, col)), Fraction(0)) for col in Bt] for row in A]


def _t(A: RMat) -> RMat:
    return [list(r) for r in zip(*A)]


def _add(A: RMat, B: RMat, s: Fraction = Fraction(1)) -> RMat:
    return [[a + s * b for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


def _eye(n: int, c: Fraction = Fraction(1)) -> RMat:
    return [[c if i == j else Fraction(0) for j in range(n)] for i in range(n)]


def _enc(M: RMat) -> list[list[str]]:
    return [[str(v) for v in r] for r in M]


def _dec(rows: Any) -> RMat:
    return [[Fraction(v) for v in r] for r in rows]


def _symmetric(M: RMat) -> bool:
    return all(M[i][j] == M[j][i] for i in range(len(M)) for j in range(i))


def _brl_matrix(A: RMat, X: RMat, g2: Fraction) -> RMat:
    n = len(A)
    Y = _add(X, _eye(n))
    At = _t(A)
    tl = _add(_mm(_mm(At, Y), A), X, Fraction(-1))
    tr = _mm(At, Y)
    bl = _mm(Y, A)
    br = _add(Y, _eye(n, g2), Fraction(-1))
    return [ra + rb for ra, rb in zip(tl, tr)] + [ra + rb for ra, rb in zip(bl, br)]


def _check_bounded_real(data: dict[str, Any]) -> bool:
    A, X, g2 = _dec(data["A"]), _dec(data["X"]), Fraction(data["gamma2"])
    if not _symmetric(X) or g2 < 0 or not second_opinion.is_psd(X):
        return False
    M = _brl_matrix(A, X, g2)
    negM = [[-v for v in r] for r in M]
    return second_opinion.is_psd(negM)


def gershgorin_upper(X: RMat) -> Fraction:
    """Rigorous :math:`\\lambda_{\\max}(X)\\le\\max_i\\sum_j|X_{ij}|`."""
    return max(sum(abs(v) for v in r) for r in X)


def _check_contraction(data: dict[str, Any]) -> bool:
    X, r2 = _dec(data["X"]), Fraction(data["rho2"])
    n = len(X)
    if not _symmetric(X) or r2 < 0 or not second_opinion.is_psd(_add(X, _eye(n), Fraction(-1))):
        return False
    for A_rows in data["jacobians"]:
        A = _dec(A_rows)
        R = _add([[r2 * v for v in row] for row in X], _mm(_mm(_t(A), X), A), Fraction(-1))
        if not second_opinion.is_psd(R):
            return False
    return Fraction(data["kappa_upper"]) >= gershgorin_upper(X)


def _dyadic(M: np.ndarray, bits: int = 40) -> RMat:
    return exact.round_rational(np.asarray(M, dtype=float), bits, symmetrize=True)


def _solve(problem: Any) -> str:
    import cvxpy as cp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            problem.solve(solver="CLARABEL")
        except cp.SolverError as exc:
            return f"solver_error: {exc}"
    return str(problem.status)


def bounded_real_bound(A: np.ndarray, name: str = "||P|| <= gamma (bounded-real lemma)") -> tuple[core.HypothesisResult, float | None]:
    r"""Certified :math:`\gamma\ge\|\mathcal P_T\|_2` (all T) for constant Jacobian A.

    Returns the hypothesis result and :math:`\gamma` (None unless certified).
    """
    import cvxpy as cp

    A = np.asarray(A, dtype=float)
    n = A.shape[0]
    if np.max(np.abs(np.linalg.eigvals(A))) >= 1:
        return core.HypothesisResult(name, "unknown", None, "bounded-real LMI", None,
                                     "A is not Schur stable (spectral radius >= 1): ||P_T|| grows with T"), None
    X = cp.Variable((n, n), symmetric=True)
    g2 = cp.Variable()
    Y = X + np.eye(n)
    M = cp.bmat([[A.T @ Y @ A - X, A.T @ Y], [Y @ A, Y - g2 * np.eye(n)]])
    prob = cp.Problem(cp.Minimize(g2), [X >> 0, 0.5 * (M + M.T) << 0])
    status = _solve(prob)
    if status != "optimal" or X.value is None:
        return core.HypothesisResult(name, "unknown", None, "bounded-real LMI (cvxpy/CLARABEL)", None,
                                     f"solver status {status}"), None
    Xq = _dyadic(0.5 * (X.value + X.value.T))
    ev = np.linalg.eigvalsh(np.array([[float(v) for v in r] for r in Xq]))
    if ev.min() < 0:
        Xq = _add(Xq, _eye(n, Fraction(-float(ev.min())) * 2))
    Aq = exact.to_rational(A)
    for infl in (1e-8, 1e-6, 1e-4, 1e-2):
        g2q = Fraction(float(g2.value) * (1 + infl) + infl)
        data = {"A": _enc(Aq), "X": _enc(Xq), "gamma2": str(g2q)}
        cert = core.Certificate("bounded_real", claim("bounded_real", data) or "", data)
        res = core.certified(name, "holds", cert, None, "bounded-real LMI (cvxpy/CLARABEL), exact rational re-check")
        if res.status == "holds":
            gamma = math.sqrt(float(g2q))
            res.margin = gamma
            res.detail = f"gamma = {gamma:.6g} (solver optimum sqrt({float(g2.value):.6g}), inflated by {infl:g})"
            return res, gamma
    return core.HypothesisResult(name, "unknown", None, "bounded-real LMI", None,
                                 "rounded certificate failed the exact re-check at every inflation"), None


def contraction_rate(jacobians: Sequence[np.ndarray], name: str = "common quadratic Lyapunov contraction",
                     iters: int = 14) -> tuple[core.HypothesisResult, dict[str, float] | None]:
    r"""Certified :math:`\rho` with :math:`A_t^\top XA_t\preceq\rho^2X`, :math:`X\succeq I`, for all given :math:`A_t`.

    Bisection on :math:`\rho` (cvxpy feasibility), then exact re-check of the rounded X.
    Returns the hypothesis result and ``{"rho", "kappa", "lyapunov_upper": log rho}``.
    """
    import cvxpy as cp

    Js = [np.asarray(J, dtype=float) for J in jacobians]
    n = Js[0].shape[0]
    lo = max(max(abs(np.linalg.eigvals(J))) for J in Js)
    hi = max(np.linalg.norm(J, 2) for J in Js) * 1.001 + 1e-12
    X = cp.Variable((n, n), symmetric=True)
    r2 = cp.Parameter(nonneg=True)
    cons = [X >> np.eye(n)] + [r2 * X - J.T @ X @ J >> 0 for J in Js]
    prob = cp.Problem(cp.Minimize(cp.trace(X)), cons)
    best = None
    r2.value = hi**2
    if _solve(prob) == "optimal":
        best = (hi, X.value.copy())
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        r2.value = mid**2
        if _solve(prob) == "optimal" and X.value is not None:
            hi, best = mid, (mid, X.value.copy())
        else:
            lo = mid
    if best is None:
        return core.HypothesisResult(name, "unknown", None, "CQLF LMI (cvxpy/CLARABEL)", None, "no feasible rho found"), None
    Xq = _dyadic(best[1])
    Xq = _add(Xq, _eye(n, Fraction(1, 2**20)))
    ev = np.linalg.eigvalsh(np.array([[float(v) for v in r] for r in Xq]))
    if ev.min() < 1:
        Xq = [[v / Fraction(float(ev.min()) * (1 - 1e-9)) for v in r] for r in Xq]
    kappa = gershgorin_upper(Xq)
    Aq = [exact.to_rational(J) for J in Js]
    for infl in (1e-8, 1e-6, 1e-4, 1e-2):
        rho2 = Fraction(best[0] ** 2 * (1 + infl))
        data = {"X": _enc(Xq), "rho2": str(rho2), "kappa_upper": str(kappa), "jacobians": [_enc(A) for A in Aq]}
        cert = core.Certificate("contraction", claim("contraction", data) or "", data)
        res = core.certified(name, "holds", cert, None, "CQLF LMI (cvxpy/CLARABEL) + bisection, exact rational re-check")
        if res.status == "holds":
            rho = math.sqrt(float(rho2))
            out = {"rho": rho, "kappa": float(kappa), "lyapunov_upper": math.log(rho)}
            res.margin = 1.0 - rho
            res.detail = (f"$\\rho$ = {rho:.6g}, $\\kappa(X)$ ≤ {float(kappa):.6g}: "
                          r"$\lVert\Phi(t,s)\rVert\le\sqrt{\kappa}\,\rho^{t-s}$, "
                          f"$\\lambda_{{\\max}}\\le\\log\\rho$ = {math.log(rho):.4g}")
            return res, out
    return core.HypothesisResult(name, "unknown", None, "CQLF LMI", None,
                                 "rounded certificate failed the exact re-check at every inflation"), None


def propagation_bound(rho: float, kappa: float, T: int) -> float:
    r""":math:`\sqrt\kappa\sum_{k<T}\rho^k`, the bound on :math:`\|\mathcal P_T\|_2` implied by a CQLF."""
    return math.sqrt(kappa) * (T if abs(rho - 1) < 1e-15 else (1 - rho**T) / (1 - rho))
