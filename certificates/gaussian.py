r"""Certificates for the Gaussian Transformer covariance equation (gaussian paper, eq. (7)).

Equilibria of :math:`F(\Sigma)=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`
and their linear stability on symmetric matrices.

*Existence* (Newton–Kantorovich, exact rationals). At a rational symmetric
:math:`\tilde\Sigma`, with :math:`J=DF_{\tilde\Sigma}` in :math:`\mathrm{vech}` coordinates,
:math:`\eta=\|J^{-1}\mathrm{vech}F(\tilde\Sigma)\|_2`, :math:`\beta=\|J^{-1}\|_2` and the Lipschitz
constant :math:`L=8\|V\|_F\|B\|_F` of :math:`\Sigma\mapsto DF_\Sigma` (vech, 2-norm), if
:math:`h=\beta L\eta\le\tfrac12` there is a unique zero :math:`\Sigma^*` with
:math:`\|\mathrm{vech}(\Sigma^*-\tilde\Sigma)\|_2\le 2\eta`.

*Stability* (Lyapunov). :math:`P\succeq\epsilon I` and :math:`J^\top P+PJ\preceq-\epsilon I`
certify :math:`J` Hurwitz; the certificate transfers to :math:`\Sigma^*` when
:math:`2\|P\|_2 L\,(2\eta)<\epsilon`, checked as :math:`16\|P\|_F^2L^2\eta^2<\epsilon^2`.
*Instability*: :math:`J^\top P+PJ\prec0` with :math:`v^\top Pv<0` (Ostrowski–Schneider).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from ..numeric import gaussian as ng
from ..symbolic import codegen
from . import core, lmi

EXACT_MAX_VECH = 36  # exact rational re-checks up to d = 8


def _basis(d: int) -> list[sp.Matrix]:
    out = []
    for i, j in zip(*ng.vech_indices(d)):
        E = sp.zeros(d, d)
        E[i, j] = E[j, i] = 1
        out.append(E)
    return out


def _vech(M: sp.Matrix) -> sp.Matrix:
    return sp.Matrix([M[i, j] for i, j in zip(*ng.vech_indices(M.rows))])


def exact_field(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix, S: sp.Matrix) -> sp.Matrix:
    """:math:`F(\\Sigma)` in exact arithmetic, interpreting the generated program."""
    d = A.rows
    values = {"A": A, "B": B, "V": V, "b": sp.zeros(d, 1), "mu": sp.zeros(d, 1), "Sigma": S}
    return codegen.evaluate(ng.moment_program(), values, codegen.MatrixOps())[1]


def exact_jacobian(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix, S: sp.Matrix) -> sp.Matrix:
    """:math:`DF_\\Sigma` in vech coordinates, exactly, from the generated linearisation."""
    prog = ng.linearisation_program()
    cols = [
        _vech(codegen.evaluate(prog, {"A": A, "B": B, "V": V, "Sigma": S, "Delta": E}, codegen.MatrixOps())[0])
        for E in _basis(A.rows)
    ]
    return sp.Matrix.hstack(*cols)


def _fro2(M: sp.Matrix) -> sp.Rational:
    return sum((e * e for e in M), sp.Integer(0))


def kantorovich(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix, S: sp.Matrix) -> dict[str, Any] | None:
    """Exact Newton–Kantorovich data at ``S``; None when :math:`h>1/2` or J is singular.

    Returns ``eta2`` (:math:`\\eta^2`, a bound on the squared vech radius over 4) and ``L2``.
    """
    f = _vech(exact_field(A, B, V, S))
    L2 = 64 * _fro2(V) * _fro2(B)
    if f.is_zero_matrix:
        return {"eta2": sp.Integer(0), "L2": L2}
    J = exact_jacobian(A, B, V, S)
    if J.det() == 0:
        return None
    Jinv = J.inv()
    step = Jinv * f
    eta2 = _fro2(step)
    beta2 = _fro2(Jinv)
    if 4 * beta2 * L2 * eta2 > 1:  # h^2 = beta^2 L^2 eta^2 <= 1/4
        return None
    return {"eta2": eta2, "L2": L2}


def _check_kantorovich(data: dict[str, Any]) -> bool:
    A, B, V, S = (core.decode(data[k]) for k in ("A", "B", "V", "Sigma"))
    res = kantorovich(A, B, V, S)
    return res is not None and 4 * res["eta2"] <= sp.Rational(data["radius_sq"]) and S == S.T


def _check_stable_equilibrium(data: dict[str, Any]) -> bool:
    """Kantorovich ball plus a Lyapunov certificate robust over the ball."""
    A, B, V, S, P = (core.decode(data[k]) for k in ("A", "B", "V", "Sigma", "P"))
    e = sp.Rational(data["margin"])
    res = kantorovich(A, B, V, S)
    if res is None or S != S.T:
        return False
    J = exact_jacobian(A, B, V, S)
    lyap = core.CHECKERS["lyapunov"]({"J": core.encode(J), "P": core.encode(P), "margin": str(e)})
    return lyap and 16 * _fro2(P) * res["L2"] * res["eta2"] < e * e


core.register("kantorovich", _check_kantorovich)
core.register("stable_equilibrium", _check_stable_equilibrium)


def _round(P: np.ndarray, bits: int = 30) -> sp.Matrix:
    """Round to dyadic rationals relative to the scale of P (keeps exact checks fast)."""
    scale = 2.0 ** math.floor(math.log2(max(np.abs(P).max(), 1e-300)))
    Q = np.round(P / scale * 2**bits)
    M = sp.Matrix([[sp.Rational(int(q)) * sp.Rational(Fraction(scale)) / 2**bits for q in row] for row in Q])
    return (M + M.T) / 2


def stability(A: np.ndarray, B: np.ndarray, V: np.ndarray, Sigma: np.ndarray, name: str = "linearisation_hurwitz") -> core.HypothesisResult:
    """Decide whether the equilibrium near ``Sigma`` is linearly stable on Sym(d).

    Returns ``holds`` (a ``stable_equilibrium`` certificate: existence ball plus a robust
    Lyapunov matrix found by the cvxpy LMI, or by the Lyapunov equation if the SDP's answer
    fails its re-check), ``fails`` (an ``unstable`` certificate with the offending eigenvalue
    in ``detail``), or ``unknown`` with the reason.
    """
    d = A.shape[0]
    n = d * (d + 1) // 2
    J = ng.jacobian_vech(A, B, V, Sigma)
    eig = np.linalg.eigvals(J)
    k = int(np.argmax(eig.real))
    abscissa = float(eig.real[k])
    detail = f"spectral abscissa {abscissa:.6g} (eigenvalue {eig[k]:.6g})"
    if n > EXACT_MAX_VECH:
        return core.HypothesisResult(name, "unknown", -abscissa, "size", None, f"vech dimension {n} beyond exact re-check; {detail}")
    Aq, Bq, Vq, Sq = (core.rational_matrix(M) for M in (A, B, V, Sigma))
    Sq = (Sq + Sq.T) / 2
    if abscissa < 0:
        candidates = []
        sol = lmi.solve_lyapunov_lmi(J)
        if sol.P is not None:
            candidates.append((sol.P, f"cvxpy LMI ({sol.solver}, {sol.seconds:.3f}s)"))
        P_eq = lmi.lyapunov_equation(J)
        if P_eq is not None:
            candidates.append((P_eq / np.linalg.eigvalsh(P_eq).min(), "Lyapunov equation (SciPy)"))
        for P, method in candidates:
            margin = sp.Rational(1, 2) * min(1, sp.Rational(Fraction(float(np.linalg.eigvalsh(-(J.T @ P + P @ J)).min())).limit_denominator(2**20)))
            if margin <= 0:
                continue
            cert = core.Certificate(
                "stable_equilibrium",
                "an equilibrium of eq. (7) exists within radius_sq of Sigma and DF there is Hurwitz on Sym(d)",
                {"A": core.encode(Aq), "B": core.encode(Bq), "V": core.encode(Vq), "Sigma": core.encode(Sq),
                 "P": core.encode(_round(P)), "margin": str(margin)},
            )
            res = core.certified(name, "holds", cert, -abscissa, f"{method}; exact re-check", detail)
            if res.status == "holds":
                return res
    elif abscissa > 0:
        P = lmi.lyapunov_equation(J)
        if P is not None:
            w, U = np.linalg.eigh(P)
            Pq = _round(P)
            vq = [str(sp.Rational(Fraction(float(x)).limit_denominator(2**30))) for x in U[:, 0]]
            cert = core.Certificate(
                "unstable",
                "DF at Sigma has an eigenvalue with positive real part",
                {"J": core.encode(exact_jacobian(Aq, Bq, Vq, Sq)), "P": core.encode(Pq), "v": vq},
            )
            res = core.certified(name, "fails", cert, -abscissa, "inertia theorem (Lyapunov equation); exact re-check", detail)
            if res.status == "fails":
                return res
    return core.HypothesisResult(name, "unknown", -abscissa, "near-marginal or certificate re-check failed", None, detail)
