r"""Bounded and uniformly continuous :math:`P(t)` on :math:`t\ge0` (consensus paper, Lemma 4.1,
Thms 4.1, 5.1, 6.1; ``003_951a97dfacf88740.txt``), re-exported by
:mod:`flowcert.certificates.attention.consensus`.

Rigorous interval evaluation of every entry of :math:`P(t)` and of :math:`\dot P(t)` (SymPy
derivative) over :math:`t\in[0,\infty)`, with rational endpoints rounded outward, gives

.. math:: \sup_{t\ge0}\|P(t)\|_2\le\sup_{t\ge0}\|P(t)\|_F\le b,\qquad
          \sup_{t\ge0}\|\dot P(t)\|_2\le b' \ \Rightarrow\ P \text{ Lipschitz, hence uniformly continuous.}

No proven bound gives ``unknown``. A constant head :math:`P=\beta Q^\top K` is bounded from its
float data instead (:class:`ScaledProduct`): exact sums of squares and a rigorous rounding pad
for :math:`\mathrm{fl}(Q^\top K)`, :math:`O(d^2r)` flops however wide the head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from collections.abc import Mapping
from typing import Any, Sequence, TypedDict

import numpy as np
import sympy as sp

from .. import core

INF = math.inf


class Unbounded(Exception):
    """The interval evaluation cannot bound an expression."""


Interval = tuple[Any, Any]  # Fraction or +-inf endpoints


def _bracket(x: sp.Expr) -> Interval:
    """Rational interval containing a real constant (exact for rationals, outward-padded otherwise)."""
    if x.is_Rational:
        q = Fraction(int(x.p), int(x.q))
        return q, q
    if x.is_Float:
        q = Fraction(float(x))  # parameter-file floats are float64: exact
        if sp.Float(q.numerator) / q.denominator == x:
            return q, q
    val = sp.N(x, 40)
    if not (val.is_real and val.is_finite):
        raise Unbounded(f"constant {x} is not a finite real")
    q = Fraction(str(sp.Float(val, 40)))
    pad = abs(q) * Fraction(1, 10**30) + Fraction(1, 10**300)
    return q - pad, q + pad


def _mul(a: Any, b: Any) -> Any:
    if a == 0 or b == 0:
        return Fraction(0)
    return a * b


def _imul(x: Interval, y: Interval) -> Interval:
    p = [_mul(a, b) for a in x for b in y]
    return min(p), max(p)


def _ipow_int(x: Interval, n: int) -> Interval:
    lo, hi = x
    if n == 0:
        return Fraction(1), Fraction(1)
    if n < 0:
        if lo <= 0 <= hi:
            raise Unbounded("negative power of an interval containing 0")
        r = _ipow_int(x, -n)
        return Fraction(1) / r[1] if r[1] != INF else Fraction(0), Fraction(1) / r[0]
    cands = [lo**n if lo not in (INF, -INF) else (INF if n % 2 == 0 or lo > 0 else -INF),
             hi**n if hi not in (INF, -INF) else (INF if n % 2 == 0 or hi > 0 else -INF)]
    if n % 2 == 0 and lo <= 0 <= hi:
        return Fraction(0), max(cands)
    return min(cands), max(cands)


def _monotone(f: Any, x: Interval) -> Interval:
    """Image of an increasing function f (mpmath-evaluated, padded outward) on x."""
    def bound(e: Any, side: int) -> Any:
        if e in (INF, -INF):
            return f(e)
        q = Fraction(str(sp.Float(f(sp.Rational(e.numerator, e.denominator)), 40)))
        pad = abs(q) * Fraction(1, 10**30) + Fraction(1, 10**300)
        return q - pad if side < 0 else q + pad
    return bound(x[0], -1), bound(x[1], +1)


def _exp(e: Any) -> Any:
    if e == -INF:
        return Fraction(0)
    if e == INF:
        return INF
    return sp.N(sp.exp(e), 45)


def interval(expr: sp.Expr, t: sp.Symbol, domain: Interval = (Fraction(0), INF), allow_sign: bool = False) -> Interval:
    r"""Rigorous enclosure of :math:`\{e(t): t\in\text{domain}\}` for an elementary expression.

    Supported: rationals, float64 constants, :math:`\pi`, :math:`e`, ``t``, ``+``, ``*``,
    integer powers, ``exp``, ``sin``, ``cos``, ``tanh``, ``atan``, ``Abs`` (and ``sign``, in
    :math:`[-1,1]`, only with ``allow_sign``: it appears in the a.e. derivative of ``Abs``). Anything
    else (or an unbounded enclosure) raises :class:`Unbounded`.
    """
    def sub(e: sp.Expr) -> Interval:
        return interval(e, t, domain, allow_sign)

    if expr == t:
        return domain
    if not expr.free_symbols:
        return _bracket(expr)
    if expr.free_symbols - {t}:
        raise Unbounded(f"symbols other than t in {expr}")
    if isinstance(expr, sp.Add):
        lo, hi = Fraction(0), Fraction(0)
        for a in expr.args:
            x = sub(a)
            lo, hi = lo + x[0], hi + x[1]
        return lo, hi
    if isinstance(expr, sp.Mul):
        acc: Interval = (Fraction(1), Fraction(1))
        for a in expr.args:
            acc = _imul(acc, sub(a))
        return acc
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer:
        return _ipow_int(sub(expr.base), int(expr.exp))
    if isinstance(expr, (sp.sin, sp.cos, sp.tanh)):
        return Fraction(-1), Fraction(1)
    if allow_sign and isinstance(expr, sp.sign):
        return Fraction(-1), Fraction(1)
    if isinstance(expr, sp.atan):
        return Fraction(-2), Fraction(2)
    if isinstance(expr, sp.exp):
        return _monotone(_exp, sub(expr.args[0]))
    if isinstance(expr, sp.Abs):
        lo, hi = sub(expr.args[0])
        if lo >= 0:
            return lo, hi
        if hi <= 0:
            return -hi, -lo
        return Fraction(0), max(-lo, hi)
    raise Unbounded(f"no interval rule for {type(expr).__name__} in {expr}")


def _finite(x: Interval) -> bool:
    return x[0] not in (INF, -INF) and x[1] not in (INF, -INF)


def sqrt_upper(q: Fraction) -> Fraction:
    """A rational :math:`b\\ge\\sqrt q` with about 50 significant bits (exact integer square root, no float)."""
    if q <= 0:
        return Fraction(0)
    k = max(0, (100 - (q.numerator.bit_length() - q.denominator.bit_length())) // 2)
    scaled = -((-q.numerator << (2 * k)) // q.denominator)  # ceil(q 4^k)
    return Fraction(math.isqrt(scaled) + 1, 1 << k)  # (isqrt(N)+1)^2 > N >= q 4^k


#: limbs of a 53-bit significand: m = m2 2^36 + m1 2^18 + m0 with m2 < 2^17 and m1, m0 < 2^18, so every
#: limb product is < 2^37 and up to 2^25 of them sum exactly in int64
_LIMB, _CHUNK = 18, 1 << 25


def square_sum(A: np.ndarray) -> Fraction:
    r""":math:`\sum_{ij}A_{ij}^2` exactly for a finite float64 array, vectorised in integers.

    Every nonzero entry is :math:`|a|=m\,2^{e}` with an integer significand :math:`m<2^{53}`
    (``frexp``, subnormals included), so :math:`\sum a^2=\sum_e 4^{e}\sum_{a:\,e(a)=e}m^2`. Each
    :math:`m` is split into three 18-bit limbs; the five limb-product sums per exponent are exact
    int64 sums (products :math:`<2^{37}`, at most :math:`2^{25}` terms per chunk), combined in Python
    integers.
    """
    a = np.abs(np.asarray(A, dtype=np.float64).ravel())
    a = a[a != 0]
    if not np.isfinite(a).all():
        raise ValueError("square_sum: entries must be finite")
    if a.size == 0:
        return Fraction(0)
    frac, exp = np.frexp(a)
    m = np.ldexp(frac, 53).astype(np.int64)  # exact: frac 2^53 is an integer below 2^53
    exp = exp.astype(np.int64) - 53  # |a| = m 2^exp
    order = np.argsort(exp, kind="stable")
    m, exp = m[order], exp[order]
    mask = (1 << _LIMB) - 1
    m2, m1, m0 = m >> (2 * _LIMB), (m >> _LIMB) & mask, m & mask
    terms = (m2 * m2, 2 * m2 * m1, 2 * m2 * m0 + m1 * m1, 2 * m1 * m0, m0 * m0)  # coefficients of 2^(18(4-k))
    emin = int(exp[0])
    total = 0
    for lo in range(0, a.size, _CHUNK):
        e = exp[lo:lo + _CHUNK]
        starts = np.flatnonzero(np.r_[True, e[1:] != e[:-1]])
        sums = [np.add.reduceat(t[lo:lo + _CHUNK], starts) for t in terms]
        for g, start in enumerate(starts.tolist()):
            s = sum(int(c[g]) << (_LIMB * (4 - k)) for k, c in enumerate(sums))
            total += s << (2 * (int(e[start]) - emin))
    return Fraction(total << (2 * emin)) if emin >= 0 else Fraction(total, 1 << (-2 * emin))


def _finite_matrix(x: Any) -> np.ndarray | None:
    """``x`` as a finite float64 matrix when it is numbers (bools refused), else None."""
    if isinstance(x, sp.MatrixBase):
        return None
    if isinstance(x, list) and bool in set(map(type, chain.from_iterable(r for r in x if isinstance(r, list)))):
        return None
    try:
        A = np.asarray(x)
    except (ValueError, TypeError):
        return None
    if A.dtype.kind not in "fiu" or A.ndim != 2 or A.size == 0 or not np.isfinite(A).all():
        return None
    return A.astype(np.float64)


class ScaledProductData(TypedDict, total=False):
    r"""A constant head's data: :math:`\beta`, and the float rows of :math:`K` and (when given) :math:`Q`."""

    beta: float
    K: list[list[float]]
    Q: list[list[float]]


@dataclass(frozen=True)
class ScaledProduct:
    r"""A constant head :math:`P=\beta\,Q^\top K` given by float64 data (``Q is None``: :math:`P=\beta K`).

    :meth:`frobenius_upper` is a rational :math:`b\ge\|P\|_F` of the *exact* product: with
    :math:`\hat P=\mathrm{fl}(Q^\top K)` (``r`` terms per entry),
    :math:`|Q^\top K-\hat P|\le\gamma_r|Q|^\top|K|+r\eta` entrywise (Higham, Thm 3.5, with
    underflow), so :math:`\|Q^\top K\|_F\le\|\hat P\|_F+\gamma_r\|Q\|_F\|K\|_F+mnr\eta`; every
    Frobenius norm of float data is summed exactly (:func:`square_sum`). Where the float
    environment is not IEEE round-to-nearest, :math:`\|Q\|_F\|K\|_F` alone (exact, looser).
    """

    beta: float
    K: np.ndarray
    Q: np.ndarray | None = None

    def frobenius_upper(self) -> Fraction:
        from ..rounding import MIN_SUBNORMAL, UNIT_ROUNDOFF, fp_environment_ok

        beta = abs(Fraction(self.beta))
        if self.Q is None:
            return beta * sqrt_upper(square_sum(self.K))
        r, (m, n) = self.Q.shape[0], (self.Q.shape[1], self.K.shape[1])
        factors = sqrt_upper(square_sum(self.Q)) * sqrt_upper(square_sum(self.K))
        if not fp_environment_ok():
            return beta * factors
        with np.errstate(all="ignore"):
            P_hat = self.Q.T @ self.K
        if not np.isfinite(P_hat).all():
            return beta * factors
        gamma = r * UNIT_ROUNDOFF / (1 - r * UNIT_ROUNDOFF)
        return beta * min(factors, sqrt_upper(square_sum(P_hat)) + gamma * factors + m * n * r * MIN_SUBNORMAL)

    def data(self) -> ScaledProductData:
        """The head as certificate data (floats, exactly as given)."""
        out: ScaledProductData = {"beta": self.beta, "K": self.K.tolist()}
        if self.Q is not None:
            out["Q"] = self.Q.tolist()
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, object]) -> "ScaledProduct | None":
        """The head of certificate data (:meth:`data`); None when they are not finite numbers of matching shapes."""
        beta, K = data.get("beta"), _finite_matrix(data.get("K"))
        Q = _finite_matrix(data["Q"]) if "Q" in data else None
        if (not isinstance(beta, (int, float)) or isinstance(beta, bool) or not math.isfinite(beta) or K is None
                or ("Q" in data and (Q is None or Q.shape[0] != K.shape[0]))):
            return None
        return cls(float(beta), K, Q)


def frobenius_sup_bound(M: sp.Matrix, t: sp.Symbol, allow_sign: bool = False) -> tuple[Fraction | None, str]:
    r"""Rational :math:`b\ge\sup_{t\ge0}\|M(t)\|_F` by interval evaluation of every entry, or (None, reason)."""
    total = Fraction(0)
    for e in M:
        e = sp.sympify(e)
        try:
            lo, hi = interval(e, t, allow_sign=allow_sign)
        except Unbounded as exc:
            return None, f"entry {e}: {exc}"
        if not _finite((lo, hi)):
            return None, f"entry {e} is not bounded on $t\\ge0$ by interval evaluation"
        m = max(abs(lo), abs(hi))
        total += m * m
    return sqrt_upper(total), "interval evaluation of each entry over t in [0, oo), Frobenius norm"


def as_symbolic(M: Any) -> tuple[sp.Matrix, sp.Symbol]:
    """A head :math:`P(t)` as an exact SymPy matrix in ``t`` (floats made the rationals they are) and its symbol."""
    Ms = sp.Matrix(M) if not isinstance(M, sp.MatrixBase) else M
    ts = sorted((s for s in Ms.free_symbols if s.name == "t"), key=str)
    t = ts[0] if ts else sp.Symbol("t", real=True)
    if Ms.free_symbols - {t}:
        raise ValueError(f"P(t) may depend on t only, got symbols {Ms.free_symbols - {t}}")
    # floats in parameter files are float64: make them exact rationals
    Ms = Ms.applyfunc(lambda e: sp.sympify(e).xreplace({f: sp.Rational(f) for f in sp.sympify(e).atoms(sp.Float)}))  # exact
    return Ms, t


def srepr_rows(M: sp.Matrix) -> list[list[str]]:
    """The entries of a SymPy matrix as text, row by row (what a certificate carries)."""
    return [[str(M[i, j]) for j in range(M.cols)] for i in range(M.rows)]


@dataclass
class SupBounds:
    """Per head: bound on :math:`\\sup\\|P(t)\\|` and on :math:`\\sup\\|\\dot P(t)\\|` (None = unproven)."""

    P: list[Fraction | None]
    dP: list[Fraction | None]


_DOT_P = r"\dot P"


def _tex(x: Fraction) -> str:
    """``x`` to 6 significant digits as TeX (an exponent as a power of ten)."""
    mantissa, _, exponent = f"{float(x):.6g}".partition("e")
    return mantissa if not exponent else rf"{mantissa}\times10^{{{int(exponent)}}}"


def _sup(what: str, b: Fraction) -> str:
    r"""The TeX of :math:`\sup_t\|P(t)\|_F\le b` for ``what`` (``P`` or its derivative)."""
    return rf"\sup_t\lVert {what}(t)\rVert_F\le{_tex(b)}"


def sup_bounds(heads_P: Sequence[Any]) -> tuple[SupBounds, list[str]]:
    """Interval bounds for every head's :math:`P_\\eta(t)` and :math:`\\dot P_\\eta(t)` (see :func:`frobenius_sup_bound`).

    A head given as numbers is constant: its bound is exact (:func:`square_sum`), its derivative 0.
    """
    out = SupBounds([], [])
    notes = []
    for k, P in enumerate(heads_P):
        if isinstance(P, ScaledProduct):
            b, db = P.frobenius_upper(), Fraction(0)
            notes.append(f"head {k + 1}: constant, $\\lVert P\\rVert_F$ bounded from its float data, "
                         f"$\\sup_t\\lVert P(t)\\rVert_F\\le{_tex(b)}$; $\\dot P=0$")
            out.P.append(b)
            out.dP.append(db)
            continue
        Ms, t = as_symbolic(P)
        b, why = frobenius_sup_bound(Ms, t)
        # sign() only from differentiating Abs: |f| is Lipschitz with constant sup|f'| (a.e. derivative)
        db, why_d = frobenius_sup_bound(Ms.diff(t), t, allow_sign=True) if b is not None else (None, "P(t) not bounded")
        out.P.append(b)
        out.dP.append(db)
        bound_P = why if b is None else f"${_sup('P', b)}$"
        bound_dP = why_d if db is None else f"${_sup(_DOT_P, db)}$"
        notes.append(f"head {k + 1}: {bound_P}; {bound_dP}")
    return out, notes


def _bound_certificate(P: Any, bound: Fraction, derivative: bool) -> core.Certificate:
    claim = f"sup_(t>=0) |{'dP/dt' if derivative else 'P'}(t)|_F <= {bound}"
    if isinstance(P, ScaledProduct):
        return core.Certificate("sup_norm_bound", claim, {"constant": P.data(), "bound": str(bound),
                                                          "derivative": derivative}, "exact-rational+rounding")
    Ms, t = as_symbolic(P)
    return core.Certificate("sup_norm_bound", claim,
                            {"M": srepr_rows(Ms), "t": t.name, "bound": str(bound), "derivative": derivative},
                            "interval-arithmetic")


def bounded(heads_P: Sequence[Any], name: str = "P_bounded") -> tuple[core.HypothesisResult, Fraction | None]:
    r"""``holds`` with a proven :math:`b\ge\max_\eta\sup_{t\ge0}\|P_\eta(t)\|_2`; ``unknown`` otherwise.

    Each head is a constant :class:`ScaledProduct` or a SymPy matrix in ``t``."""
    bounds, notes = sup_bounds(heads_P)
    if any(b is None for b in bounds.P):
        return core.HypothesisResult(name, "unknown", None, r"interval arithmetic on $t\ge0$", None, "; ".join(notes)), None
    k = max(range(len(bounds.P)), key=lambda i: bounds.P[i])
    b = bounds.P[k]
    res = core.certified(name, "holds", _bound_certificate(heads_P[k], b, False), float(b),
                         r"interval arithmetic on $t\ge0$ ($\sup_t\lVert P(t)\rVert_2\le\sup_t\lVert P(t)\rVert_F$); re-evaluated",
                         "; ".join(notes))
    return res, (b if res.status == "holds" else None)


def uniformly_continuous(heads_P: Sequence[Any], name: str = "P_uniformly_continuous") -> core.HypothesisResult:
    r"""``holds`` with a proven bound on :math:`\sup_{t\ge0}\|\dot P_\eta(t)\|` (Lipschitz in t); ``unknown`` otherwise.

    The interval rules only admit expressions built from continuous elementary functions, so a
    finite derivative bound proves Lipschitz continuity on :math:`[0,\infty)`.
    """
    bounds, notes = sup_bounds(heads_P)
    if any(b is None for b in bounds.dP):
        return core.HypothesisResult(name, "unknown", None, r"interval arithmetic on $\dot P(t)$, $t\ge0$", None, "; ".join(notes))
    k = max(range(len(bounds.dP)), key=lambda i: bounds.dP[i])
    b = bounds.dP[k]
    return core.certified(name, "holds", _bound_certificate(heads_P[k], b, True), float(b),
                          r"Lipschitz: interval arithmetic on $\dot P(t)$ over $t\ge0$; re-evaluated", "; ".join(notes))
