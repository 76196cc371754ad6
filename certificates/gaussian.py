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

import flint
import numpy as np
import sympy as sp

from ..numeric import gaussian as ng
from ..symbolic import codegen
from ..symbolic.gaussian import linearisation_program, moment_program
from . import core, spectrum

EXACT_MAX_VECH = 136  # rational re-checks up to d = 16 (about 8 s there; beyond: unknown, "size")


class FlintOps:
    """Exact arithmetic on ``flint.fmpq_mat`` for :func:`codegen.evaluate` (the generated programs)."""

    @staticmethod
    def matmul(a: Any, b: Any) -> Any:
        return a * b

    @staticmethod
    def transpose(a: Any) -> Any:
        return a.transpose()

    @staticmethod
    def linear(args: list[Any], coeffs: list[Any]) -> Any:
        def q(c: Any) -> Any:
            r = sp.Rational(sp.nsimplify(c))
            return flint.fmpq(int(r.p), int(r.q))

        out = args[0] * q(coeffs[0])
        for a, c in zip(args[1:], coeffs[1:]):
            out = out + a * q(c)
        return out


def _vech(M: Any) -> list[Any]:
    d = M.nrows()
    return [M[int(i), int(j)] for i, j in zip(*ng.vech_indices(d))]


def exact_field(A: Any, B: Any, V: Any, S: Any) -> Any:
    """:math:`F(\\Sigma)` in exact arithmetic (``fmpq_mat``), interpreting the generated program."""
    A, B, V, S = (core.qmat(M) for M in (A, B, V, S))
    d = A.nrows()
    values = {"A": A, "B": B, "V": V, "b": flint.fmpq_mat(d, 1), "mu": flint.fmpq_mat(d, 1), "Sigma": S}
    return codegen.evaluate(moment_program(), values, FlintOps())[1]


def exact_jacobian(A: Any, B: Any, V: Any, S: Any) -> Any:
    """:math:`DF_\\Sigma` in vech coordinates, exactly (``fmpq_mat``), from the generated linearisation."""
    A, B, V, S = (core.qmat(M) for M in (A, B, V, S))
    d = A.nrows()
    prog = linearisation_program()
    cols = []
    for i, j in zip(*ng.vech_indices(d)):
        E = flint.fmpq_mat(d, d)
        E[int(i), int(j)] = 1
        E[int(j), int(i)] = 1
        cols.append(_vech(codegen.evaluate(prog, {"A": A, "B": B, "V": V, "Sigma": S, "Delta": E}, FlintOps())[0]))
    n = len(cols)
    return flint.fmpq_mat(n, n, [cols[k][r] for r in range(n) for k in range(n)])


def _fro2(M: Any) -> Fraction:
    Q = core.qmat(M)
    t = sum((e * e for e in Q.entries()), flint.fmpq(0))
    return Fraction(int(t.p), int(t.q))


def _sqrt_up(q: Fraction) -> Fraction:
    r"""A rational :math:`r\ge\sqrt q` within a relative :math:`2^{-20}`."""
    r = Fraction(math.sqrt(float(q))) * (1 + Fraction(1, 2**40)) if q > 0 else Fraction(0)
    while r * r < q:
        r *= 1 + Fraction(1, 2**20)
    return r


def _inverse_bounds(J: Any, f: Any) -> tuple[sp.Rational, sp.Rational] | None:
    r"""Rational upper bounds on :math:`\|J^{-1}\|_F^2` and :math:`\|J^{-1}f\|_2^2`.

    :math:`X` is the float64 inverse of :math:`J`, taken as the exact dyadic matrix it is;
    with :math:`R=I-XJ` computed exactly and :math:`\bar\rho\ge\|R\|_F\ge\|R\|_2`,
    :math:`\bar\rho<1`, we have :math:`J^{-1}=(I-R)^{-1}X`, so
    :math:`\|J^{-1}\|_F\le\|X\|_F/(1-\bar\rho)` and :math:`\|J^{-1}f\|\le\|Xf\|/(1-\bar\rho)`.
    This replaces the exact inverse, whose entries grow quickly with the size. None when
    :math:`\bar\rho\ge1` (J singular or too ill-conditioned). Exact products in python-flint.
    """
    Jq, fq = core.qmat(J), core.qmat(f)
    n = Jq.nrows()
    with np.errstate(all="ignore"):
        try:
            Jf = np.array([float(Fraction(int(e.p), int(e.q))) for e in Jq.entries()]).reshape(n, n)
            Xf = np.linalg.inv(Jf)
        except (np.linalg.LinAlgError, OverflowError):
            return None
    if not np.all(np.isfinite(Xf)):
        return None
    X = core.qmat(Xf)
    R = flint.fmpq_mat(n, n, [1 if i == j else 0 for i in range(n) for j in range(n)]) - X * Jq
    rho = _sqrt_up(_fro2(R))
    if rho >= 1:
        return None
    scale = 1 / (1 - rho) ** 2
    x2 = _fro2(X)
    s2 = _fro2(X * fq)
    return sp.Rational(x2 * scale), sp.Rational(s2 * scale)


def kantorovich(A: Any, B: Any, V: Any, S: Any) -> dict[str, Any] | None:
    r"""Exact Newton–Kantorovich data at ``S``; None when :math:`h>1/2` or J is not invertible.

    Returns ``eta2`` (a rational upper bound on :math:`\|J^{-1}F\|^2`, the squared vech radius
    over 4) and ``L2``; :math:`\|J^{-1}\|` and :math:`\|J^{-1}F\|` are bounded through an
    approximate inverse (:func:`_inverse_bounds`), every step in exact rationals (python-flint).
    """
    f = _vech(exact_field(A, B, V, S))
    L2 = sp.Rational(64 * _fro2(V) * _fro2(B))
    if all(x == 0 for x in f):
        return {"eta2": sp.Integer(0), "L2": L2}
    bounds = _inverse_bounds(exact_jacobian(A, B, V, S), flint.fmpq_mat(len(f), 1, f))
    if bounds is None:
        return None
    beta2, eta2 = bounds
    if 4 * beta2 * L2 * eta2 > 1:  # h^2 = beta^2 L^2 eta^2 <= 1/4
        return None
    return {"eta2": eta2, "L2": L2}


def _check_kantorovich(data: dict[str, Any]) -> bool:
    A, B, V, S = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma"))
    if not core.is_symmetric(S):
        return False
    res = kantorovich(A, B, V, S)
    return res is not None and 4 * res["eta2"] <= sp.Rational(Fraction(data["radius_sq"]))


def _check_stable_equilibrium(data: dict[str, Any]) -> bool:
    """Kantorovich ball plus a Lyapunov certificate robust over the ball."""
    A, B, V, S, P = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma", "P"))
    e = sp.Rational(Fraction(data["margin"]))
    if not core.is_symmetric(S):
        return False
    res = kantorovich(A, B, V, S)
    if res is None:
        return False
    J = exact_jacobian(A, B, V, S)
    lyap = core.CHECKERS["lyapunov"]({"J": J, "P": P, "margin": str(e)})
    return lyap and 16 * sp.Rational(_fro2(P)) * res["L2"] * res["eta2"] < e * e


def _check_unstable_point(data: dict[str, Any]) -> bool:
    """DF at the rational point Sigma (recomputed from A, B, V) has an eigenvalue with Re > 0."""
    A, B, V, S = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma"))
    J = exact_jacobian(A, B, V, S)
    return J == core.qmat(data["J"]) and core.CHECKERS["unstable"](data)


core.register("unstable_point", _check_unstable_point)
core.register("kantorovich", _check_kantorovich)
core.register("stable_equilibrium", _check_stable_equilibrium)


@core.memoised
def stability(A: np.ndarray, B: np.ndarray, V: np.ndarray, Sigma: np.ndarray, name: str = "linearisation_hurwitz") -> core.HypothesisResult:
    """Decide whether the equilibrium near ``Sigma`` is linearly stable on Sym(d).

    ``holds``: a ``stable_equilibrium`` certificate (Kantorovich existence ball plus a Lyapunov
    matrix robust over the ball); ``fails``: an ``unstable`` certificate for DF at the rational
    point ``Sigma`` (exact when ``Sigma`` is an exact equilibrium, such as 0), with the
    offending eigenvalue in ``detail``; otherwise ``unknown`` with the reason.
    """
    d = A.shape[0]
    n = d * (d + 1) // 2
    if n > EXACT_MAX_VECH:
        return core.HypothesisResult(name, "unknown", None, "size", None,
                                     f"needs a Lyapunov LMI on Sym(d): vech dimension {n} beyond exact re-check "
                                     f"(limit {EXACT_MAX_VECH}, d = 16)")
    J = ng.jacobian_vech(A, B, V, Sigma)
    Aq, Bq, Vq, Sq = (core.qmat(np.asarray(M, float)) for M in (A, B, V, Sigma))
    Sq = (Sq + Sq.transpose()) * flint.fmpq(1, 2)
    extra = {"A": core.encode(Aq), "B": core.encode(Bq), "V": core.encode(Vq), "Sigma": core.encode(Sq)}
    return spectrum.spectrum_verdict(
        name, J, exact_jacobian(Aq, Bq, Vq, Sq), stable_kind="stable_equilibrium",
        stable_claim="an equilibrium of eq. (7) lies in the Kantorovich ball around Sigma and DF there is Hurwitz on Sym(d)",
        unstable_kind="unstable_point", extra=extra,
    )


@core.memoised
def pd_equilibrium(A: np.ndarray, B: np.ndarray, V: np.ndarray, Sigma: np.ndarray, name: str = "pd_equilibrium_exists") -> core.HypothesisResult:
    r"""Certify a positive definite equilibrium near ``Sigma``: Kantorovich ball inside the PD cone.

    With :math:`\|\mathrm{vech}(\Sigma^*-\tilde\Sigma)\|_2\le2\eta`, the Frobenius (hence spectral)
    distance is at most :math:`\rho` with :math:`\rho^2\ge8\eta^2`; :math:`\tilde\Sigma-\rho I\succ0`
    then gives :math:`\Sigma^*\succ0`.
    """
    n = A.shape[0] * (A.shape[0] + 1) // 2
    if n > EXACT_MAX_VECH:
        return core.HypothesisResult(name, "unknown", None, "size", None,
                                     f"the Newton-Kantorovich bound needs the inverse of DF on Sym(d): vech dimension {n} "
                                     f"beyond exact re-check (limit {EXACT_MAX_VECH}, d = 16)")
    Aq, Bq, Vq, Sq = (core.qmat(np.asarray(M, float)) for M in (A, B, V, Sigma))
    Sq = (Sq + Sq.transpose()) * flint.fmpq(1, 2)
    res = kantorovich(Aq, Bq, Vq, Sq)
    if res is None:
        return core.HypothesisResult(name, "unknown", None, "Newton-Kantorovich", None, "h > 1/2 or singular Jacobian at the candidate")
    rho = sp.Rational(Fraction(math.sqrt(float(8 * res["eta2"]))))  # exact dyadic, then enlarged until proved
    rho = max(rho, sp.Rational(1, 2**1074)) if res["eta2"] > 0 else rho
    while rho * rho < 8 * res["eta2"]:
        rho *= sp.Rational(9, 8)
    data = {"A": core.encode(Aq), "B": core.encode(Bq), "V": core.encode(Vq), "Sigma": core.encode(Sq), "rho": str(rho)}
    cert = core.Certificate("pd_equilibrium", "a positive definite equilibrium of eq. (18) lies within spectral distance rho of Sigma", data)
    margin = float(np.linalg.eigvalsh(Sigma).min())
    out = core.certified(name, "holds", cert, margin, "Newton-Kantorovich (exact) + exact LDL^T of Sigma - rho I",
                         f"rho = {float(rho):.3e}")
    if out.status != "holds":
        out.detail = "the existence ball is not inside the PD cone (candidate singular or too close to the boundary)"
    return out


def _check_pd_equilibrium(data: dict[str, Any]) -> bool:
    A, B, V, S = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma"))
    rho = Fraction(data["rho"])
    if not core.is_symmetric(S):
        return False
    res = kantorovich(A, B, V, S)
    return res is not None and sp.Rational(rho * rho) >= 8 * res["eta2"] and core.is_pd(core.shift(S, rho))


core.register("pd_equilibrium", _check_pd_equilibrium)
