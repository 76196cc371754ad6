r"""Time-varying entries: the expression parser shared by every system.

An entry is a string in the real time symbol :math:`t` (SymPy syntax; only ``t``, ``pi``, ``E``
and the elementary functions of :data:`ELEMENTARY_FUNCTIONS` may appear; ``^`` means power),
e.g. :math:`A_{11}(t)=\sin t` for the time-varying parameters of the gaussian paper (eq. (7)
with continuous :math:`A,B,V,b`, Prop. 2.1). Tokens are checked before parsing, constant powers
are bounded before evaluation, and the value at :math:`t=0` must be a finite real number.
:func:`expression_text` prints an expression back as text that parses to it again.
"""

from __future__ import annotations

import io
import keyword
import math
import tokenize
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.printing.str import StrPrinter
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from .schema import ParamError, Value, _fmt_index, _nonfinite_name, _number


#: The time symbol of time-varying parameters.
t = sp.Symbol("t", real=True)

#: Names a time-varying entry may use besides ``t``.
ELEMENTARY_FUNCTIONS: dict[str, Any] = {
    name: getattr(sp, name)
    for name in (
        "exp", "log", "sqrt", "cbrt",
        "sin", "cos", "tan", "cot", "sec", "csc",
        "asin", "acos", "atan", "acot", "atan2",
        "sinh", "cosh", "tanh", "coth",
        "asinh", "acosh", "atanh",
        "Abs", "pi", "E",
    )
}
ELEMENTARY_FUNCTIONS["abs"] = sp.Abs
ELEMENTARY_FUNCTIONS["ln"] = sp.log

#: Relative tolerance of the "clearly indefinite" test on covariances.


# ---------------------------------------------------------------------------------------
# time-varying entries
# ---------------------------------------------------------------------------------------

_ALLOWED_OPS = frozenset({"+", "-", "*", "/", "**", "^", "(", ")", ","})
_PARSE_GLOBALS: dict[str, Any] = {
    "__builtins__": {},
    "Symbol": sp.Symbol,
    "Function": sp.Function,
    "Integer": sp.Integer,
    "Float": sp.Float,
    "Rational": sp.Rational,
}
_PARSE_LOCALS: dict[str, Any] = {"t": t, **ELEMENTARY_FUNCTIONS}
_TRANSFORMATIONS = standard_transformations + (convert_xor,)


def _token_problem(text: str) -> str | None:
    """Lexical screen run before ``parse_expr`` (which evaluates Python code)."""
    if "\n" in text or "\r" in text:
        return "line breaks are not allowed"
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        return str(exc.args[0]) if exc.args else type(exc).__name__
    for tok in tokens:
        if tok.type in (tokenize.NUMBER, tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
            continue
        if tok.type == tokenize.NAME:
            if keyword.iskeyword(tok.string) or tok.string.startswith("_"):
                return f"name {tok.string!r} is not allowed"
            continue
        if tok.type == tokenize.OP and tok.string in _ALLOWED_OPS:
            continue
        return f"unexpected {tok.string!r}"
    return None


_MAX_POWER_BITS = 10_000  # |value| < 2^1024 is needed anyway; beyond 2^10000 exact evaluation is not attempted


def _parse(text: str, evaluate: bool) -> sp.Expr:
    # evaluate=False rewrites operators into the constructors below
    unevaluated = {} if evaluate else {"Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow}
    return parse_expr(text.strip(), local_dict=dict(_PARSE_LOCALS), global_dict={**_PARSE_GLOBALS, **unevaluated},
                      transformations=_TRANSFORMATIONS, evaluate=evaluate)


def _power_problem(expr: sp.Basic) -> str | None:
    r"""Reject constant powers :math:`b^e` with :math:`|e\log_2|b||>10^4` before SymPy evaluates them.

    The tree is unevaluated and visited bottom-up, so every inner power is already known to be
    moderate when an outer one is estimated (``9**9**9**9`` stops at ``9**(9**9)``).
    """
    for node in sp.postorder_traversal(expr):
        if not isinstance(node, sp.Pow) or node.has(t):
            continue
        base, exponent = (sp.N(abs(x), 30) for x in node.args)
        if not (base.is_number and exponent.is_number) or base == 0 or base == 1:
            continue
        bits = abs(exponent * sp.log(base, 2)).evalf(30)
        if bits.is_finite is False or bits > _MAX_POWER_BITS:
            return f"the power {sp.sstr(node)[:40]} is far outside float64"
    return None


def as_time_expression(text: str, key: str, index: tuple[int, ...] = ()) -> sp.Expr:
    """Parse one time-varying entry (SymPy syntax) into an expression in :data:`t`.

    Only ``t`` and the names in :data:`ELEMENTARY_FUNCTIONS` may appear; ``^`` is read
    as power. The expression must be a finite real number at ``t = 0``.

    Parameters
    ----------
    text : str
        The entry, e.g. ``"sin(t)"``.
    key : str
        Key named in errors.
    index : tuple of int
        Entry index named in errors.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    ParamError
        Parse errors, other symbols, unknown functions, non-scalar results, or a value
        at ``t = 0`` that is not a finite real number.
    """
    where = f"entry {_fmt_index(index)} {text!r}"
    reason = _token_problem(text.strip())
    if reason is None:
        try:
            # screen the unevaluated tree first: SymPy evaluates integer powers exactly
            reason = _power_problem(_parse(text, evaluate=False))
            if reason is None:
                expr = _parse(text, evaluate=True)
        except Exception as exc:  # parse_expr raises many types
            first = str(exc).strip().splitlines()
            reason = first[0] if first else type(exc).__name__
    if reason is not None:
        raise ParamError(key, f"{where} is not a valid expression in t ({reason})")
    return _check_time_expr(expr, key, where)


class _RoundTripPrinter(StrPrinter):
    """``str`` with every Float printed as the shortest decimal that reads back to the same float64."""

    def _print_Float(self, expr: sp.Float) -> str:
        return repr(float(expr))


def expression_text(expr: sp.Expr) -> str:
    """Text of a time-varying entry that :func:`as_time_expression` reads back to ``expr``."""
    return _RoundTripPrinter().doprint(expr)


def _check_time_expr(expr: object, key: str, where: str) -> sp.Expr:
    if not isinstance(expr, sp.Expr):
        raise ParamError(key, f"{where} is not a scalar expression in t")
    # decimal literals are float64 numbers, as everywhere else in a parameter file
    expr = expr.xreplace({f: sp.Float(float(f)) for f in expr.atoms(sp.Float)})
    # a symbol spelled "t" without real=True (direct construction) is the same time
    expr = expr.xreplace(
        {s: t for s in expr.free_symbols if isinstance(s, sp.Symbol) and s.name == "t"}
    )
    others = sorted(str(s) for s in expr.free_symbols if s != t)
    if others:
        raise ParamError(key, f"{where} uses symbols other than t ({', '.join(others)})")
    unknown = sorted({str(f.func) for f in expr.atoms(AppliedUndef)})
    if unknown:
        raise ParamError(
            key,
            f"{where} uses unknown function {', '.join(unknown)} "
            "(allowed: elementary functions such as exp, log, sqrt, sin, cos, tanh)",
        )
    value = sp.N(expr.subs(t, 0))
    if not (value.is_extended_real and value.is_finite and math.isfinite(float(value))):
        raise ParamError(key, f"{where} is not a finite real number at t = 0 (value {value})")
    return expr


def _symbolic_leaf(leaf: object, key: str, index: tuple[int, ...]) -> sp.Expr:
    if isinstance(leaf, str):
        return as_time_expression(leaf, key, index)
    if isinstance(leaf, sp.Basic):
        return _check_time_expr(leaf, key, f"entry {_fmt_index(index)} {str(leaf)!r}")
    x = _number(leaf, key, index, allow_expr=True)
    if not math.isfinite(x):
        raise ParamError(
            key, f"entry {_fmt_index(index)} is {_nonfinite_name(x)}, expected a finite number"
        )
    if isinstance(leaf, (int, np.integer)):
        return sp.Integer(int(leaf))
    return sp.Float(x)  # from a Python float: exact (53-bit) value


def _compile(key: str, matrix: sp.Matrix, vector: bool) -> Callable[[float], np.ndarray]:
    """Numeric evaluator of a time-varying matrix; numbers keep their exact float value."""
    entries = list(matrix)  # row-major
    shape = (matrix.rows * matrix.cols,) if vector else (matrix.rows, matrix.cols)
    base = np.zeros(len(entries), dtype=np.float64)
    positions: list[int] = []
    exprs: list[sp.Expr] = []
    for i, entry in enumerate(entries):
        if entry.is_Number:
            base[i] = float(entry)
        else:
            positions.append(i)
            exprs.append(entry)
    # lambdify prints Floats with 15 digits; pass them as arguments to keep all 53 bits
    floats = sorted(set().union(*(e.atoms(sp.Float) for e in exprs)), key=sp.default_sort_key)
    dummies = [sp.Dummy() for _ in floats]
    table = dict(zip(floats, dummies))
    consts = [float(f) for f in floats]
    fn = (
        sp.lambdify([t, *dummies], [e.xreplace(table) for e in exprs], modules="numpy")
        if exprs
        else None
    )
    cols = matrix.cols

    def evaluate(time: float) -> np.ndarray:
        out = base.copy()
        if fn is not None:
            try:
                with np.errstate(all="ignore"):
                    values = fn(np.float64(time), *consts)
            except (ArithmeticError, ValueError, TypeError):
                values = [math.nan] * len(exprs)
            for pos, expr, v in zip(positions, exprs, values):
                try:
                    out[pos] = float(v)
                except (TypeError, ValueError):
                    out[pos] = math.nan
                if not math.isfinite(out[pos]):
                    index = (pos,) if vector else divmod(pos, cols)
                    raise ParamError(
                        key,
                        f"entry {_fmt_index(tuple(index))} {str(expr)!r} is not a finite "
                        f"real number at t = {time!r}",
                    )
        return out.reshape(shape)

    return evaluate


def _echo(value: Value, vector: bool) -> list[Any]:
    if isinstance(value, np.ndarray):
        return value.tolist()
    entries = []
    for e in value:
        if isinstance(e, sp.Integer):
            entries.append(int(e))
        elif isinstance(e, sp.Float):
            entries.append(float(e))
        else:
            entries.append(expression_text(e))
    if vector:
        return entries
    return [entries[r * value.cols : (r + 1) * value.cols] for r in range(value.rows)]
