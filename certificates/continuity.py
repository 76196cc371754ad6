r"""Real-valued continuity of a coefficient :math:`f(t)` on :math:`[0,T]`, certified by interval arithmetic.

Time-varying coefficients (gaussian paper, eq. (7) with continuous :math:`A,B,V,b`, Prop. 2.1)
must be real and continuous on :math:`[0,T]`. The question is decided on the function *as the
evaluator computes it*: principal branches, real arithmetic (``numpy`` semantics of
:func:`sympy.lambdify`), so :math:`\sqrt[3]{1-t}=(1-t)^{1/3}` is *not* real for :math:`t>1`.

Interval evaluation (``mpmath.iv``, outward rounding, fixed precision) over a subdivision
:math:`0=t_0<\dots<t_n=T`: on each piece :math:`I_k=[t_{k-1},t_k]` every node's argument
enclosure :math:`X` is checked against the open set where the node's function is real and
continuous (e.g. :math:`\log`: :math:`X\subset(0,\infty)`; :math:`x^{p/q}`: :math:`X\subset[0,\infty)`;
:math:`\tan`: :math:`0\notin\cos X`). If every node passes on every piece, :math:`f` is a
composition of functions continuous on the enclosures, hence continuous on each closed
:math:`I_k` and on :math:`[0,T]`: ``holds``. If on some piece an argument enclosure lies entirely
outside the real domain, :math:`f` is not real there: ``fails``. Anything else (an enclosure
straddling a boundary after the subdivision budget, an unsupported function, a magnitude beyond
float64) is ``unknown``.

The same bounded evaluator gives the value at a point (:func:`point_enclosure`): fixed working
precision, every intermediate magnitude capped at :math:`2^{1024}` before the next operation, so
towers such as :math:`e^{e^{e^{100}}}` stop at once instead of allocating huge exponents.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import mpmath
import sympy as sp
from mpmath import iv

#: Working precision (bits) of every interval operation.
PREC = 80
#: Magnitude cap on every intermediate enclosure: beyond it nothing is float64 anyway.
MAX_MAGNITUDE = mpmath.mpf(2) ** 1024
#: Subdivision budget of :func:`certify_continuous`.
MAX_PIECES = 4096
#: Initial number of pieces of :math:`[0,T]`.
INITIAL_PIECES = 32


class NotReal(Exception):
    """The argument enclosure lies entirely outside the node's real domain."""


class Undecided(Exception):
    """The enclosure straddles a domain boundary, or the node is not supported."""


class TooLarge(Exception):
    """An intermediate enclosure exceeds :data:`MAX_MAGNITUDE`."""


def _lo(x: iv.mpf) -> mpmath.mpf:
    """Lower endpoint, exactly (``mpmath.mpf(x.a)`` would round it to the ambient 53 bits)."""
    return mpmath.mp.make_mpf(x._mpi_[0])


def _hi(x: iv.mpf) -> mpmath.mpf:
    """Upper endpoint, exactly."""
    return mpmath.mp.make_mpf(x._mpi_[1])


def _checked(x: iv.mpf) -> iv.mpf:
    if not (mpmath.isfinite(_lo(x)) and mpmath.isfinite(_hi(x))):
        raise TooLarge("an intermediate value is not finite")
    if max(abs(_lo(x)), abs(_hi(x))) > MAX_MAGNITUDE:
        raise TooLarge("an intermediate value exceeds 2^1024")
    return x


def _monotone(f: Callable[[mpmath.mpf], mpmath.mpf], x: iv.mpf, increasing: bool = True) -> iv.mpf:
    """Enclosure of a monotone function: endpoint values at higher precision, widened outward."""
    with mpmath.workprec(PREC + 20):
        a, b = f(_lo(x)), f(_hi(x))
        if not increasing:
            a, b = b, a
        pad = mpmath.mpf(2) ** (-PREC + 4)
        tiny = mpmath.mpf(2) ** -1070
        return iv.mpf([a - abs(a) * pad - tiny, b + abs(b) * pad + tiny])


def _excludes_zero(x: iv.mpf) -> bool:
    return _lo(x) > 0 or _hi(x) < 0


def _need(ok: bool, impossible: bool, what: str) -> None:
    if ok:
        return
    raise NotReal(what) if impossible else Undecided(what)


def _pow(b: iv.mpf, e_expr: sp.Expr, e: iv.mpf) -> iv.mpf:
    if e_expr.is_Integer or (e_expr.is_Float and e_expr == int(e_expr)):
        n = int(e_expr)
        if n >= 0:
            return b**n
        _need(_excludes_zero(b), _lo(b) == 0 == _hi(b), "a negative power of a value that may be 0")
        return 1 / b ** (-n)
    if e_expr.is_Rational or e_expr.is_Float:  # principal branch: real only for a base >= 0
        positive = e_expr > 0
        _need(_lo(b) > 0 or (positive and _lo(b) >= 0), _hi(b) < 0 or (not positive and _hi(b) <= 0),
              f"a power x^{e_expr} of a value that may be negative")
        if _lo(b) > 0:
            return iv.exp(e * iv.log(b))
        if _hi(b) == 0:
            return iv.mpf(0)
        top = iv.exp(e * iv.log(iv.mpf(_hi(b))))
        return iv.mpf([0, _hi(top)])
    _need(_lo(b) > 0, _hi(b) <= 0, "a variable power of a value that may be <= 0")
    return iv.exp(e * iv.log(b))


def _exp(x: iv.mpf) -> iv.mpf:
    if _lo(x) > 710:
        raise TooLarge("exp of a value beyond 710")
    if _hi(x) > 710:
        raise Undecided("exp may exceed float64")
    return iv.exp(x)


def _unary(name: str, x: iv.mpf) -> iv.mpf:
    lo, hi = _lo(x), _hi(x)
    if name == "exp":
        return _exp(x)
    if name == "log":
        _need(lo > 0, hi <= 0, "log of a value that may be <= 0")
        return iv.log(x)
    if name in ("sin", "cos"):
        return getattr(iv, name)(x)
    if name in ("tan", "sec"):
        c = iv.cos(x)
        _need(_excludes_zero(c), False, f"{name} near a pole")
        return iv.sin(x) / c if name == "tan" else 1 / c
    if name in ("cot", "csc"):
        s = iv.sin(x)
        _need(_excludes_zero(s), False, f"{name} near a pole")
        return iv.cos(x) / s if name == "cot" else 1 / s
    if name in ("asin", "acos"):
        _need(lo >= -1 and hi <= 1, lo > 1 or hi < -1, f"{name} of a value that may be outside [-1, 1]")
        return _monotone(getattr(mpmath, name), x, increasing=name == "asin")
    if name == "atan":
        return _monotone(mpmath.atan, x)
    if name == "acot":  # the evaluator computes arctan(1/x): a jump at 0, acot(0) = pi/2
        if lo == 0 == hi:
            return iv.pi / 2
        _need(_excludes_zero(x), False, "acot of a value that may be 0")
        return _monotone(mpmath.acot, x, increasing=False)
    if name in ("sinh", "tanh", "asinh"):
        if name == "sinh" and max(abs(lo), abs(hi)) > 710:
            raise TooLarge("sinh beyond float64")
        return _monotone(getattr(mpmath, name), x)
    if name == "cosh":
        if max(abs(lo), abs(hi)) > 710:
            raise TooLarge("cosh beyond float64")
        ends = _monotone(mpmath.cosh, iv.mpf([min(abs(lo), abs(hi)), max(abs(lo), abs(hi))]))
        return iv.mpf([1 if lo <= 0 <= hi else _lo(ends), _hi(ends)])
    if name == "coth":
        _need(_excludes_zero(x), lo == 0 == hi, "coth of a value that may be 0")
        return 1 / _monotone(mpmath.tanh, x)
    if name == "acosh":
        _need(lo >= 1, hi < 1, "acosh of a value that may be < 1")
        return _monotone(mpmath.acosh, x)
    if name == "atanh":
        _need(lo > -1 and hi < 1, lo >= 1 or hi <= -1, "atanh of a value that may be outside (-1, 1)")
        return _monotone(mpmath.atanh, x)
    if name == "Abs":
        return abs(x)
    raise Undecided(f"function {name} is not supported by the interval evaluator")


def _enclose(expr: sp.Expr, t: sp.Symbol, x: iv.mpf) -> iv.mpf:
    if expr == t:
        return x
    if expr.is_Integer:
        return _checked(iv.mpf(int(expr)))
    if expr.is_Rational:
        return _checked(iv.mpf(int(expr.p)) / int(expr.q))
    if expr.is_Float:
        return _checked(iv.mpf(mpmath.mpf(expr._mpf_)))
    if expr in (sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise TooLarge(f"{expr} is not a finite number")
    if expr.is_number and expr.is_extended_real is False:
        raise NotReal(f"{sp.sstr(expr)[:40]} is not real")
    if expr is sp.pi:
        return iv.pi
    if expr is sp.E:
        return iv.e
    if expr.is_Add:
        out = iv.mpf(0)
        for a in expr.args:
            out = _checked(out + _enclose(a, t, x))
        return out
    if expr.is_Mul:
        out = iv.mpf(1)
        for a in expr.args:
            out = _checked(out * _enclose(a, t, x))
        return out
    if expr.is_Pow:
        base, exponent = expr.args
        return _checked(_pow(_enclose(base, t, x), exponent, _enclose(exponent, t, x)))
    if isinstance(expr, sp.atan2):
        y, z = (_enclose(a, t, x) for a in expr.args)
        _need(_lo(z) > 0 or _excludes_zero(y), _hi(z) <= 0 and _lo(y) == 0 == _hi(y), "atan2 on its branch cut")
        return iv.mpf([-iv.pi.b, iv.pi.b])
    if isinstance(expr, sp.Function) and len(expr.args) == 1:
        name = type(expr).__name__
        return _checked(_unary(name, _enclose(expr.args[0], t, x)))
    raise Undecided(f"{type(expr).__name__} is not supported by the interval evaluator")


def point_enclosure(expr: sp.Expr, t: sp.Symbol, value: float | int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Enclosure ``(lo, hi)`` of ``expr`` at ``t = value`` on the evaluator's real branch.

    Raises :class:`NotReal`, :class:`Undecided` or :class:`TooLarge`.
    """
    old = iv.prec
    iv.prec = PREC
    try:
        y = _enclose(expr, t, iv.mpf(mpmath.mpf(value)))
        return _lo(y), _hi(y)
    finally:
        iv.prec = old


@dataclass
class ContinuityVerdict:
    """``status`` is ``holds``, ``fails`` or ``unknown``; ``detail`` says why; ``pieces`` how many were checked."""

    status: str
    detail: str
    pieces: int


def certify_continuous(expr: sp.Expr, t: sp.Symbol, t_end: float, *, budget_s: float = 2.0) -> ContinuityVerdict:
    """Certify that ``expr`` is real and continuous on ``[0, t_end]`` (see the module docstring).

    Parameters
    ----------
    expr : sympy.Expr
        The coefficient, an expression in ``t``.
    t : sympy.Symbol
        The time symbol.
    t_end : float
        Right end of the window (finite, > 0).
    budget_s : float
        Wall-clock budget; when it runs out the verdict is ``unknown``.

    Returns
    -------
    ContinuityVerdict
    """
    if t not in expr.free_symbols:
        try:
            point_enclosure(expr, t, 0)
        except NotReal as exc:
            return ContinuityVerdict("fails", f"not real: {exc}", 1)
        except (Undecided, TooLarge) as exc:
            return ContinuityVerdict("unknown", str(exc), 1)
        return ContinuityVerdict("holds", "constant", 1)
    old = iv.prec
    iv.prec = PREC
    start = time.monotonic()
    try:
        T = mpmath.mpf(t_end)
        queue = [(T * k / INITIAL_PIECES, T * (k + 1) / INITIAL_PIECES) for k in range(INITIAL_PIECES)]
        checked = 0
        while queue:
            a, b = queue.pop()
            checked += 1
            if checked > MAX_PIECES or time.monotonic() - start > budget_s:
                return ContinuityVerdict("unknown", f"no certificate within {MAX_PIECES} pieces / {budget_s} s "
                                         f"(undecided near t = {float(a):.6g})", checked)
            try:
                _enclose(expr, t, iv.mpf([a, b]))
            except NotReal as exc:
                return ContinuityVerdict("fails", f"not real on t in [{float(a):.6g}, {float(b):.6g}]: {exc}", checked)
            except (Undecided, TooLarge) as exc:
                if b - a < T * mpmath.mpf(2) ** -30:
                    # a point check may still prove failure at the midpoint
                    try:
                        _enclose(expr, t, iv.mpf((a + b) / 2))
                    except NotReal as exc2:
                        return ContinuityVerdict("fails", f"not real at t = {float((a + b) / 2):.6g}: {exc2}", checked)
                    except (Undecided, TooLarge):
                        pass
                    return ContinuityVerdict("unknown", f"undecided near t = {float(a):.6g}: {exc}", checked)
                m = (a + b) / 2
                queue += [(m, b), (a, m)]
        return ContinuityVerdict("holds", f"interval evaluation on {checked} pieces of [0, {float(T):.6g}]", checked)
    finally:
        iv.prec = old
