r"""Certified location of a spectrum relative to the imaginary axis (system-agnostic).

*Hurwitz*: a rational :math:`P` with :math:`P\succeq\epsilon I` and
:math:`J^\top P+PJ\preceq-\epsilon I`, :math:`\epsilon>0`, proves
:math:`\max\operatorname{Re}\lambda(J)<0` (Lyapunov). Candidates for :math:`P` come from the
Lyapunov equation :math:`J^\top P+PJ=-I` and, only if that one fails its check, from the cvxpy
LMI :math:`P\succeq I,\ J^\top P+PJ\preceq-I`; each is rounded to dyadic rationals and
re-checked in exact arithmetic with half its observed margin.

*Unstable*: :math:`J^\top P+PJ\prec0` and :math:`v^\top Pv<0` prove an eigenvalue with
:math:`\operatorname{Re}\lambda>0` (inertia theorem of Ostrowski and Schneider).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterator

import flint
import numpy as np
import sympy as sp

from . import core, lmi


def dyadic(P: np.ndarray, bits: int = 30) -> Any:
    """Symmetric rational rounding of ``P`` to ``bits`` bits relative to its largest entry (``fmpq_mat``)."""
    scale = 2.0 ** math.floor(math.log2(max(float(np.abs(P).max()), 1e-300)))
    Q = np.round(P / scale * 2**bits)
    Q = Q + Q.T  # exact: integers below 2**53; halved in the unit below
    unit = Fraction(scale) / 2 ** (bits + 1)
    return core.qmat(Q) * flint.fmpq(unit.numerator, unit.denominator)


def lyapunov_candidates(J: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    """Lyapunov matrices for a (numerically) Hurwitz ``J``, lazily: the equation, then the SDP.

    The equation :math:`J^\top P+PJ=-I` (SciPy, Bartels–Stewart) suffices whenever its solution
    survives the re-check; the LMI (more robust near the margin) is solved only if it does not.
    """
    P_eq = lmi.lyapunov_equation(J)
    if P_eq is not None and np.linalg.eigvalsh(P_eq).min() > 0:
        yield P_eq / np.linalg.eigvalsh(P_eq).min(), "Lyapunov equation (SciPy)"
    sol = lmi.solve_lyapunov_lmi(J)
    if sol.P is not None:
        yield sol.P, f"cvxpy LMI ({sol.solver}, status {sol.status}, {sol.seconds:.3f}s)"


def half_margin(J: np.ndarray, P: np.ndarray) -> sp.Rational:
    """Half the observed margin :math:`\\min(1,\\lambda_{\\min}(-(J^\\top P+PJ)))`, as a rational."""
    lam = float(np.linalg.eigvalsh(-(J.T @ P + P @ J)).min())
    if not lam > 0:
        return sp.Integer(0)
    return sp.Rational(1, 2) * min(sp.Integer(1), sp.Rational(Fraction(lam).limit_denominator(2**20)))


def spectrum_verdict(
    name: str,
    J: np.ndarray,
    J_exact: Any,
    *,
    stable_kind: str = "lyapunov",
    stable_claim: str = "J is Hurwitz",
    unstable_kind: str = "unstable",
    extra: dict[str, Any] | None = None,
) -> core.HypothesisResult:
    """``holds`` if J is certified Hurwitz, ``fails`` if certified unstable, else ``unknown``.

    ``stable_kind``/``extra`` let a system wrap the Lyapunov data in a stronger claim (for
    example a robust one over an existence ball); the data always carry ``P`` and ``margin``.
    """
    eig = np.linalg.eigvals(J)
    k = int(np.argmax(eig.real))
    abscissa = float(eig.real[k])
    detail = f"spectral abscissa {abscissa:.6g} (eigenvalue {complex(eig[k]):.6g})"
    if abscissa < 0:
        for P, method in lyapunov_candidates(J):
            margin = half_margin(J, P)
            if margin <= 0:
                continue
            data = dict(extra) if extra else {"J": core.encode(J_exact)}
            data.update(P=core.encode(dyadic(P)), margin=str(margin))
            res = core.certified(name, "holds", core.Certificate(stable_kind, stable_claim, data), -abscissa,
                                 f"{method}; exact re-check", detail)
            if res.status == "holds":
                return res
    elif abscissa > 0:
        candidates = [(lmi.lyapunov_equation(J), "Lyapunov equation (SciPy)")]
        if candidates[0][0] is None or np.linalg.eigvalsh(-(J.T @ candidates[0][0] + candidates[0][0] @ J)).min() <= 0:
            sol = lmi.solve_inertia_lmi(J)
            candidates.append((sol.P, f"cvxpy inertia LMI ({sol.solver}, status {sol.status})"))
        for P, method in candidates:
            if P is None:
                continue
            w, U = np.linalg.eigh(P)
            v = [str(sp.Rational(Fraction(float(x)).limit_denominator(2**30))) for x in U[:, 0] / np.abs(U[:, 0]).max()]
            data = dict(extra) if extra else {}
            data.update(J=core.encode(J_exact), P=core.encode(dyadic(P)), v=v)
            cert = core.Certificate(unstable_kind, "J has an eigenvalue with positive real part", data)
            res = core.certified(name, "fails", cert, -abscissa, f"inertia theorem, {method}; exact re-check", detail)
            if res.status == "fails":
                return res
    return core.HypothesisResult(name, "unknown", -abscissa, "no certificate passed its exact re-check", None,
                                 f"{detail}; near-marginal or ill-conditioned")


@core.memoised
def hurwitz(name: str, J: np.ndarray) -> core.HypothesisResult:
    """Certified verdict on :math:`\\max\\operatorname{Re}\\lambda(J)<0` for float data J (exact)."""
    return spectrum_verdict(name, np.asarray(J, float), core.qmat(np.asarray(J, float)))


@core.memoised
def unstable_count(A: np.ndarray) -> tuple[int | None, core.Certificate | None]:
    r"""Certified number of eigenvalues of A with :math:`\operatorname{Re}\lambda>0`.

    If :math:`A^\top P+PA\prec0` (checked exactly), A has no imaginary-axis eigenvalue and the
    count equals the number of negative eigenvalues of P (Ostrowski–Schneider), read off an
    exact LDL^T. Returns (None, None) when no such P passes the check.
    """
    from . import exact

    P = lmi.lyapunov_equation(A)
    if P is None:
        sol = lmi.solve_inertia_lmi(A)
        P = sol.P
    if P is None:
        return None, None
    Pq, Aq = dyadic(P), core.qmat(np.asarray(A, float))
    if not core.is_pd(core.lyapunov_form(Aq, Pq)):
        return None, None
    got = exact.inertia(core.fractions(Pq))
    if got is None or got[2]:
        return None, None
    n_neg = got[1]
    cert = core.Certificate("unstable_count", f"A has exactly {n_neg} eigenvalues with positive real part",
                            {"J": core.encode(Aq), "P": core.encode(Pq), "count": n_neg})
    return (n_neg, cert) if core.recheck(cert) else (None, None)


def _check_unstable_count(data: dict[str, Any]) -> bool:
    from . import exact

    J, P = core.qmat(data["J"]), core.qmat(data["P"])
    if not core.is_symmetric(P) or not core.is_pd(core.lyapunov_form(J, P)):
        return False
    got = exact.inertia(core.fractions(P))
    return got is not None and got[2] == 0 and got[1] == int(data["count"])


core.register("unstable_count", _check_unstable_count)
