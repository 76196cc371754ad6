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

*No PD equilibrium* (trace monotonicity). :math:`\operatorname{tr}F(\Sigma)=\operatorname{tr}((A+A^\top)\Sigma)
+2\operatorname{tr}(X Y)` with :math:`X=\Sigma^{1/2}V_s\Sigma^{1/2}`, :math:`Y=\Sigma^{1/2}B_s\Sigma^{1/2}`
(:math:`V_s,B_s` symmetric parts; exact when V or B is symmetric). If
:math:`s(A+A^\top)\succeq0`, :math:`\sigma_VV_s\succeq0`, :math:`\sigma_BB_s\succeq0` with
:math:`\sigma_V\sigma_B=s`, and one of them strictly (:math:`s(A+A^\top)\succ0`, or
:math:`V_s,B_s` both definite), then :math:`s\operatorname{tr}F(\Sigma)>0` for every
:math:`\Sigma\succ0`: eq. (18) has no positive definite solution.

*PD equilibria for* :math:`V=\eta I` (exact). With :math:`P=\Sigma^{-1}`, eq. (18) reads
:math:`A^\top P+PA=Q`, :math:`Q=-\eta(B+B^\top)`. If :math:`Q\succ0`, a PD solution exists iff every
eigenvalue of A has :math:`\operatorname{Re}>0` (Ostrowski–Schneider: :math:`\operatorname{In}P=
\operatorname{In}A`; then the Lyapunov operator is invertible and its solution is PD); if
:math:`Q\prec0`, iff A is Hurwitz. The inertia of A comes from a certified count.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, TypedDict

import flint
import numpy as np
import sympy as sp

from ..numeric import gaussian as ng
from ..symbolic import codegen
from ..symbolic.gaussian import linearisation_program, moment_program
from . import core, second_opinion, spectrum

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


class KantorovichData(TypedDict):
    r"""Newton–Kantorovich data: :math:`\eta^2\ge\|J^{-1}F\|^2` and :math:`L^2` (:func:`kantorovich`)."""

    eta2: sp.Expr
    L2: sp.Expr


class RealEquilibrium(TypedDict):
    r"""A real symmetric solution of (18) (:func:`real_equilibria_d2`): its float approximation and exact signs."""

    Sigma_approx: list[list[float]]
    sign_Sigma11: int
    sign_det: int
    pd: bool


def kantorovich(A: Any, B: Any, V: Any, S: Any) -> KantorovichData | None:
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
    out = core.certified(name, "holds", cert, margin, r"Newton–Kantorovich (exact) + exact $LDL^\top$ of $\Sigma-\rho I$",
                         f"$\\rho$ = {float(rho):.3e}")
    if out.status != "holds":
        out.detail = "the existence ball is not inside the PD cone (candidate singular or too close to the boundary)"
    return out


def _check_pd_equilibrium(data: dict[str, Any]) -> bool:
    A, B, V, S = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma"))
    rho = Fraction(data["rho"])
    if not core.is_symmetric(S):
        return False
    res = kantorovich(A, B, V, S)
    return res is not None and sp.Rational(rho * rho) >= 8 * res["eta2"] and second_opinion.is_pd(core.shift(S, rho))


# ---------------------------------------------------------------------------------------
# All real equilibria for d = 2, exactly (refutations of Thm 4.7(1) on the user's float data)
# ---------------------------------------------------------------------------------------
#
# Lex Groebner basis of (18) in (a, b, c), Sigma = [[a, b], [b, c]], over Q. In shape position it
# holds f(c) (univariate), a p_a(c) + q_a(c) and b p_b(c) + q_b(c). Every real root of f (exact
# CRootOf, irreducible factor g) with p_a, p_b not divisible by g gives one real equilibrium
# (extension theorem); the remaining basis elements are checked to reduce to 0 mod g. Signs of
# a and of det Sigma = a c - b^2 at the root are decided exactly: a polynomial h with
# g does not divide h has h(c) != 0, and its sign is read off rational interval Horner
# evaluation on a shrinking isolating interval of c.


def _interval_horner(coeffs: list[sp.Rational], lo: sp.Rational, hi: sp.Rational) -> tuple[sp.Rational, sp.Rational]:
    rlo = rhi = sp.Rational(0)
    for a in coeffs:
        prods = [rlo * lo, rlo * hi, rhi * lo, rhi * hi]
        rlo, rhi = min(prods) + a, max(prods) + a
    return rlo, rhi


def _real_roots(f: sp.Poly) -> list[tuple[sp.Poly, Any]]:
    """Real roots of a univariate rational polynomial, one entry per root: its irreducible factor
    and either the exact rational root or an isolating rational interval ``(s, t)``."""
    out: list[tuple[sp.Poly, Any]] = []
    for g, _ in f.factor_list()[1]:
        if g.degree() == 1:
            c1, c0 = g.all_coeffs()
            out.append((g, sp.Rational(-c0, c1)))
        else:
            out.extend((g, iv) for iv, _ in g.intervals())
    return out


def _sign_at(h: sp.Poly, g: sp.Poly, root: Any) -> int:
    """Exact sign of ``h`` at a real root of the irreducible ``g`` (0 iff g divides h): ``root``
    is the rational root or an isolating interval, refined until interval Horner decides."""
    r = h.rem(g) if g.degree() > 0 else h
    if r.is_zero:
        return 0
    if not isinstance(root, tuple):
        return int(sp.sign(r.eval(root)))
    coeffs = [sp.Rational(x) for x in r.all_coeffs()]
    s, t = root
    for k in range(64):
        lo, hi = _interval_horner(coeffs, sp.Rational(s), sp.Rational(t))
        if lo > 0:
            return 1
        if hi < 0:
            return -1
        s, t = g.refine_root(s, t, eps=sp.Rational(t - s) / 2**32)
    raise ArithmeticError("sign at an algebraic root not decided")


def _approx(root: Any, g: sp.Poly) -> float:
    if not isinstance(root, tuple):
        return float(root)
    s, t = g.refine_root(*root, eps=sp.Rational(1, 10**15) * (1 + abs(sp.Rational(root[0]))))
    return float((sp.Rational(s) + sp.Rational(t)) / 2)


def real_equilibria_d2(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix) -> list[RealEquilibrium] | None:
    """Every real symmetric solution of (18) for rational 2 x 2 data, with the exact signs of
    :math:`\\Sigma_{11}` and :math:`\\det\\Sigma`; None when the lex basis is not in shape position
    at some root (beyond one rational level of back-substitution) or the variety is not finite."""
    a, b, c = sp.symbols("a b c")
    S = sp.Matrix([[a, b], [b, c]])
    F = A * S + S * A.T + V * S * B * S + S * B.T * S * V.T
    eqs = [sp.expand(F[0, 0]), sp.expand(F[0, 1]), sp.expand(F[1, 1])]
    G = sp.groebner(eqs, a, b, c, order="lex")
    if not G.is_zero_dimensional:
        return None
    polys = [sp.Poly(g, a, b, c) for g in G.exprs]
    uni = [g for g in polys if g.degree(a) == 0 and g.degree(b) == 0]
    lin_a = [g for g in polys if g.degree(a) == 1 and g.degree(b) == 0]
    lin_b = [g for g in polys if g.degree(a) == 0 and g.degree(b) == 1]
    if len(uni) != 1 or not lin_a or not lin_b:
        return None

    def parts(g: sp.Poly, x: sp.Symbol) -> tuple[sp.Poly, sp.Poly]:
        e = sp.expand(g.as_expr())
        return sp.Poly(e.coeff(x, 1), c), sp.Poly(e.coeff(x, 0), c)

    pa, qa = parts(lin_a[0], a)
    pb, qb = parts(lin_b[0], b)
    out: list[RealEquilibrium] = []
    for g, root in _real_roots(sp.Poly(uni[0].as_expr(), c)):
        if pa.rem(g).is_zero or pb.rem(g).is_zero:
            if isinstance(root, tuple):
                return None
            sub = _rational_fibre(eqs, a, b, c, root)  # c rational: solve for (a, b) again
            if sub is None:
                return None
            out.extend(sub)
            continue
        for P in polys:  # a = -qa/pa, b = -qb/pb must satisfy the whole basis (mod g)
            num = sp.together(P.as_expr().subs({a: -qa.as_expr() / pa.as_expr(), b: -qb.as_expr() / pb.as_expr()}))
            if not sp.Poly(sp.numer(num), c).rem(g).is_zero:
                return None
        s_a = -_sign_at(qa, g, root) * _sign_at(pa, g, root)
        det_num = sp.Poly(-qa.as_expr() * c * pb.as_expr() ** 2 - qb.as_expr() ** 2 * pa.as_expr(), c)
        s_det = _sign_at(det_num, g, root) * _sign_at(pa, g, root)
        cv = _approx(root, g)
        av = float(-qa.eval(cv) / pa.eval(cv)) if pa.eval(cv) else float("nan")
        bv = float(-qb.eval(cv) / pb.eval(cv)) if pb.eval(cv) else float("nan")
        out.append({"Sigma_approx": [[av, bv], [bv, cv]], "sign_Sigma11": s_a, "sign_det": s_det,
                    "pd": s_a > 0 and s_det > 0})
    return out


def _rational_fibre(eqs: list[sp.Expr], a: sp.Symbol, b: sp.Symbol, c: sp.Symbol,
                    c0: sp.Rational) -> list[RealEquilibrium] | None:
    """Real solutions with c = c0 (rational): b must come out rational, a may be algebraic."""
    G = sp.groebner([sp.expand(e.subs(c, c0)) for e in eqs], a, b, order="lex")
    if G.exprs == [1] or G.exprs == [sp.Integer(1)]:
        return []
    unib = [sp.Poly(g, b) for g in G.exprs if not sp.Poly(g, a, b).degree(a)]
    if len(unib) != 1:
        return None
    out: list[RealEquilibrium] = []
    for gb, broot in _real_roots(unib[0]):
        if isinstance(broot, tuple):
            return None
        polys_a = [sp.Poly(sp.expand(g.subs(b, broot)), a) for g in G.exprs]
        ga = sp.Poly(0, a)
        for q in polys_a:
            ga = q if ga.is_zero else ga.gcd(q)
        if ga.is_zero:
            return None
        if ga.degree() == 0:
            continue
        for g, aroot in _real_roots(ga):
            s_a = _sign_at(sp.Poly(a, a), g, aroot)
            s_det = _sign_at(sp.Poly(c0 * a - broot**2, a), g, aroot)
            out.append({"Sigma_approx": [[_approx(aroot, g), float(broot)], [float(broot), float(c0)]],
                        "sign_Sigma11": s_a, "sign_det": s_det, "pd": s_a > 0 and s_det > 0})
    return out


def no_pd_equilibrium_d2(A: np.ndarray, B: np.ndarray, V: np.ndarray) -> core.HypothesisResult:
    """``pd_equilibrium_exists`` decided exactly for d = 2 on the data as given (floats are
    dyadic rationals): ``fails`` with a ``d2_equilibria`` certificate when no real equilibrium is
    PD, ``holds`` when one is, ``unknown`` when the basis is not in shape position."""
    name = "pd_equilibrium_exists"
    Aq, Bq, Vq = (core.rational_matrix(M) for M in (A, B, V))
    try:
        eqs = real_equilibria_d2(Aq, Bq, Vq)
    except (ArithmeticError, ValueError, NotImplementedError, sp.PolynomialError) as exc:
        return core.HypothesisResult(name, "unknown", None, "Groebner basis", None, f"SymPy could not finish: {exc}")
    if eqs is None:
        return core.HypothesisResult(name, "unknown", None, "Groebner basis", None,
                                     "the lex basis is not in shape position (or the variety is not finite)")
    n_pd = sum(e["pd"] for e in eqs)
    listing = "; ".join(f"{e['Sigma_approx']} (sign Sigma11 {e['sign_Sigma11']}, sign det {e['sign_det']})" for e in eqs)
    cert = core.Certificate("d2_equilibria", f"eq. (18) has {len(eqs)} real equilibria, {n_pd} of them PD",
                            {"A": core.encode(Aq), "B": core.encode(Bq), "V": core.encode(Vq),
                             "count": len(eqs), "pd_count": n_pd}, checker="exact-groebner-sturm")
    return core.certified(name, "holds" if n_pd else "fails", cert, None,
                          "lex Groebner basis over Q + exact signs at the real algebraic roots",
                          f"{len(eqs)} real equilibria: {listing}; PD among them: {n_pd}")


def _check_d2_equilibria(data: dict[str, Any]) -> bool:
    A, B, V = (core.decode(data[k]) for k in ("A", "B", "V"))
    if A.shape != (2, 2):
        return False
    eqs = real_equilibria_d2(A, B, V)
    return eqs is not None and len(eqs) == int(data["count"]) and sum(e["pd"] for e in eqs) == int(data["pd_count"])


def _sign(M: np.ndarray, strict: bool = False) -> int | None:
    """+1 / -1 when the float eigenvalues of M's symmetric part are all >= 0 / <= 0 (> 0 / < 0 when
    ``strict``), else None: a guess of the sign an exact certificate then has to prove."""
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    if w.min() > 0 or (not strict and w.min() >= 0):
        return 1
    return -1 if w.max() < 0 or (not strict and w.max() <= 0) else None


def _trace_monotone_parts(data: dict[str, Any]) -> list[tuple[Any, bool]] | None:
    """The (matrix, strict) definiteness claims behind a ``trace_monotone`` certificate."""
    A, B, V = (core.qmat(data[k]) for k in ("A", "B", "V"))
    sv, sb = int(data["sign_V"]), int(data["sign_B"])
    if sv not in (1, -1) or sb not in (1, -1) or not (core.is_symmetric(V) or core.is_symmetric(B)):
        return None
    half = flint.fmpq(1, 2)
    As, Vs, Bs = A + A.transpose(), (V + V.transpose()) * half, (B + B.transpose()) * half
    strict_a = data["strict"] == "A+A^T"
    return [(As * (sv * sb), strict_a), (Vs * sv, not strict_a), (Bs * sb, not strict_a)]


def _check_trace_monotone(data: dict[str, Any]) -> bool:
    parts = _trace_monotone_parts(data)
    return parts is not None and all(second_opinion.is_pd(M) if strict else second_opinion.is_psd(M) for M, strict in parts)


@core.memoised
def no_pd_equilibrium_trace(A: np.ndarray, B: np.ndarray, V: np.ndarray,
                            name: str = "pd_equilibrium_exists") -> core.HypothesisResult | None:
    """``pd_equilibrium_exists`` fails when tr F has a strict sign on the PD cone (any d; see the
    module docstring); None when the signs of A + A^T, V, B do not line up (nothing proved)."""
    sv, sb = _sign(V), _sign(B)
    if sv is None or sb is None or not (np.array_equal(V, V.T) or np.array_equal(B, B.T)):
        return None
    s = sv * sb
    strict = "A+A^T" if np.linalg.eigvalsh(s * (A + A.T)).min() > 0 else "V,B"
    data = {"A": core.encode(A), "B": core.encode(B), "V": core.encode(V),
            "sign_V": sv, "sign_B": sb, "strict": strict}
    direction = "increases" if s > 0 else "decreases"
    cert = core.Certificate("trace_monotone", f"tr Sigma strictly {direction} along eq. (7) at every Sigma > 0, so eq. (18) "
                                              "has no positive definite solution", data)
    out = core.certified(name, "fails", cert, None,
                         "trace monotonicity: exact definiteness of s(A + A^T), sign_V V, sign_B B",
                         f"s = {s:+d}: s tr F(Sigma) = s tr((A + A^T) Sigma) + 2 s tr(V Sigma B Sigma) > 0 on Sigma > 0 "
                         f"(strict part: {strict})")
    return out if out.status == "fails" else None


def _inertia_of(count: dict[str, Any], d: int) -> tuple[int, int, int] | None:
    """(n+, n-, n0) of A from an ``unstable_count`` (Lyapunov: no imaginary axis) or ``spectrum_inertia`` certificate."""
    if count.get("kind") == "unstable_count":
        k = int(count["data"]["count"])
        return k, d - k, 0
    if count.get("kind") == "spectrum_inertia":
        p, n, z = (int(x) for x in count["data"]["inertia"])
        return p, n, z
    return None


def _check_eta_pd_equilibrium(data: dict[str, Any]) -> bool:
    A, B = core.qmat(data["A"]), core.qmat(data["B"])
    eta, s, count = core.to_fmpq(data["eta"]), int(data["sign_Q"]), data["count_certificate"]
    d = A.nrows()
    if s not in (1, -1) or eta == 0 or not core.recheck(count) or core.qmat(count["data"]["J"]) != A:
        return False
    inertia = _inertia_of(count, d)
    if inertia is None or not second_opinion.is_pd((B + B.transpose()) * (-eta * s)):
        return False
    return _lyapunov_pd_solution_exists(inertia, s) == bool(data["exists"])


def _lyapunov_pd_solution_exists(inertia: tuple[int, int, int], sign_q: int) -> bool:
    """A^T P + P A = Q with sign_q Q > 0 has a PD solution iff A is anti-stable (+1) / Hurwitz (-1)."""
    return inertia[0 if sign_q > 0 else 1] == sum(inertia)


def pd_equilibrium_eta(A: np.ndarray, B: np.ndarray, eta: float, count: core.Certificate | None,
                       name: str = "pd_equilibrium_exists") -> core.HypothesisResult | None:
    """``pd_equilibrium_exists`` for V = eta I with eta(B + B^T) definite, decided exactly from the
    certified inertia of A (module docstring); None when that route does not apply."""
    if eta == 0 or count is None:
        return None
    s = _sign(-eta * (B + B.T), strict=True)
    inertia = _inertia_of(count.to_json(), A.shape[0])
    if s is None or inertia is None:
        return None
    exists = _lyapunov_pd_solution_exists(inertia, s)
    data = {"A": core.encode(A), "B": core.encode(B), "eta": str(core.to_fmpq(eta)), "sign_Q": s,
            "exists": exists, "count_certificate": count.to_json()}
    need = "every eigenvalue of A has Re > 0" if s > 0 else "A is Hurwitz"
    cert = core.Certificate("eta_pd_equilibrium", f"eq. (18) with V = eta I {'has' if exists else 'has no'} positive "
                                                  f"definite solution ({need} {'holds' if exists else 'fails'})", data)
    out = core.certified(name, "holds" if exists else "fails", cert, None,
                         "P = Sigma^-1 solves A^T P + P A = -eta(B + B^T) (definite): inertia theorem + certified inertia of A",
                         f"inertia of A (n+, n-, n0) = {inertia}; a PD equilibrium exists iff {need}")
    return out if out.status != "unknown" else None
