r"""Time-varying entries: the expression parser shared by every system.

An entry is a string in the real time symbol :math:`t` (SymPy syntax; only ``t``, ``pi``, ``E``
and the elementary functions of :data:`ELEMENTARY_FUNCTIONS` may appear; ``^`` means power),
e.g. :math:`A_{11}(t)=\sin t` for the time-varying parameters of the gaussian paper (eq. (7)
with continuous :math:`A,B,V,b`, Prop. 2.1). Nothing is ``eval``-ed: the text is parsed by
:func:`ast.parse` (``eval`` mode), every node is checked against a whitelist and built into SymPy;
every constant subexpression :math:`c` is evaluated at fixed precision (interval arithmetic,
:mod:`flowcert.certificates.continuity`) and must satisfy :math:`|c|<2^{1024}` before SymPy
combines it, so towers such as :math:`9^{9^{9}}` or :math:`e^{e^{e^{100}}}` are refused at once;
there is no user-chosen precision, and each entry has a time budget. The value at :math:`t=0`
must be a finite real number on the evaluator's real (principal) branch.
:func:`expression_text` prints an expression back as text that parses to it again.
"""

from __future__ import annotations

import ast
import math
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.printing.str import StrPrinter

from .certificates import continuity
from .schema import ParamError, Value, index_text, nonfinite_name, leaf_number


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

#: Caps of the grammar: text length, syntax-tree nodes, nesting depth, digits of a literal.
MAX_TEXT = 2000
MAX_NODES = 400
MAX_DEPTH = 40
MAX_LITERAL_DIGITS = 400
#: Every constant subexpression must have magnitude below this (float64 ends near 1.8e308).
MAX_CONSTANT = continuity.MAX_MAGNITUDE
#: Wall-clock budget for parsing and checking one entry (seconds).
TIME_BUDGET_S = 2.0

_BINARY: dict[type, Callable[[sp.Expr, sp.Expr], sp.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_ARITY = {name: 2 if name == "atan2" else 1 for name in ELEMENTARY_FUNCTIONS if name not in ("pi", "E")}
_CONSTANTS = {"pi": sp.pi, "E": sp.E}


class _Reject(Exception):
    """A grammar or bound violation; the message is the reason."""


class _Unknown(_Reject):
    """An unknown name or function; the message follows ``entry ... '<text>'`` directly."""


class _OutOfTime(Exception):
    pass


@contextmanager
def _time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`_OutOfTime` after ``seconds`` (SIGALRM; only in the main thread, else no limit).

    An outer interval timer (a caller's own time limit) is respected: when it fires first it is
    left alone, and otherwise it is re-armed with its remaining time afterwards.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    outer_remaining, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer_remaining <= seconds:
        yield  # the caller's timer fires first anyway
        return

    def alarm(signum: int, frame: object) -> None:
        raise _OutOfTime()

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_remaining > 0:
            left = max(outer_remaining - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


def _literal(value: object) -> sp.Expr:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Reject(f"literal {value!r} is not a real number")
    if isinstance(value, int):
        if value.bit_length() > 1024:
            raise _Reject("an integer literal exceeds 2^1024")
        return sp.Integer(value)
    if not math.isfinite(value):
        raise _Reject("a decimal literal is beyond float64")
    return sp.Float(value)  # the float64 value, 53 bits, as everywhere else in a parameter file


def _bounded(expr: sp.Expr) -> sp.Expr:
    """Check a constant subexpression's magnitude on the evaluator's real branch (fixed precision)."""
    if expr.free_symbols:
        return expr
    if expr.is_Rational and max(abs(expr.p).bit_length(), expr.q.bit_length()) > 1100:
        raise _Reject(f"the constant {sp.sstr(expr)[:40]} has far more digits than float64")
    try:
        lo, hi = continuity.point_enclosure(expr, t, 0)
    except continuity.TooLarge:
        raise _Reject(f"the constant {sp.sstr(expr)[:40]} is far outside float64") from None
    except (continuity.NotReal, continuity.Undecided):
        return expr  # not real or not decided: the value at t = 0 is checked later
    if max(abs(lo), abs(hi)) > MAX_CONSTANT:
        raise _Reject(f"the constant {sp.sstr(expr)[:40]} is far outside float64")
    return expr


def _build(node: ast.AST, depth: int) -> sp.Expr:
    """SymPy expression of a whitelisted syntax tree; constants are bounded before SymPy combines them."""
    if depth > MAX_DEPTH:
        raise _Reject(f"nested deeper than {MAX_DEPTH}")
    if isinstance(node, ast.Constant):
        return _literal(node.value)
    if isinstance(node, ast.Name):
        if node.id == "t":
            return t
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in _ARITY:
            raise _Reject(f"function {node.id!r} used without arguments")
        raise _Unknown(f"uses symbols other than t ({node.id})")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _build(node.operand, depth + 1)
        return inner if isinstance(node.op, ast.UAdd) else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _build(node.left, depth + 1), _build(node.right, depth + 1)
        if isinstance(node.op, ast.Pow) and not left.free_symbols and not right.free_symbols:
            # estimate |b^e| = 2^(e log2|b|) before SymPy evaluates an exact power
            try:
                _bounded(sp.exp(sp.Mul(right, sp.log(sp.Abs(left)), evaluate=False), evaluate=False)
                         if left != 0 else sp.Integer(0))
            except _Reject:
                raise _Reject(f"the power {ast.unparse(node)[:40]} is far outside float64") from None
        if isinstance(node.op, (ast.Div,)) and right == 0:
            raise _Reject("division by zero")
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise _Reject("only named elementary functions may be called")
        if node.func.id not in _ARITY:
            raise _Unknown(f"uses unknown function {node.func.id} (allowed: elementary functions such as "
                           f"exp, log, sqrt, sin, cos, tanh; all: {', '.join(sorted(_ARITY))})")
        if node.keywords:
            raise _Reject(f"{node.func.id}() takes no keyword arguments")
        if len(node.args) != _ARITY[node.func.id]:
            raise _Reject(f"{node.func.id}() takes {_ARITY[node.func.id]} argument(s), got {len(node.args)}")
        args = [_build(a, depth + 1) for a in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Reject("starred arguments are not allowed")
        if node.func.id == "exp" and not args[0].free_symbols:
            _bounded(sp.exp(args[0], evaluate=False))
        return _bounded(ELEMENTARY_FUNCTIONS[node.func.id](*args))
    what = type(node).__name__
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        what = type(node.op).__name__
    raise _Reject(f"{what} is not allowed (only numbers, t, pi, E, + - * / ** ^ and elementary functions)")


def _parse(text: str) -> sp.Expr:
    """Parse with :func:`ast.parse` in ``eval`` mode, whitelist, build into SymPy (no ``eval``)."""
    if len(text) > MAX_TEXT:
        raise _Reject(f"longer than {MAX_TEXT} characters")
    if "\n" in text or "\r" in text:
        raise _Reject("line breaks are not allowed")
    for run in re.findall(r"\d+", text):
        if len(run) > MAX_LITERAL_DIGITS:
            raise _Reject(f"a number with more than {MAX_LITERAL_DIGITS} digits")
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval")  # "^" is power, with its precedence
    except SyntaxError as exc:
        raise _Reject(f"syntax error: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise _Reject(f"syntax error: {type(exc).__name__}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise _Reject(f"more than {MAX_NODES} syntax nodes")
    return _build(tree.body, 0)


def as_time_expression(text: str, key: str, index: tuple[int, ...] = ()) -> sp.Expr:
    """Parse one time-varying entry into an expression in :data:`t`, without ``eval``.

    Grammar: numbers, ``t``, ``pi``, ``E``, ``+ - * / **``, ``^`` (power), parentheses and calls of
    the functions in :data:`ELEMENTARY_FUNCTIONS` with positional arguments (Python's ``ast`` in
    ``eval`` mode, every node checked against a whitelist). Bounds: :data:`MAX_TEXT`,
    :data:`MAX_NODES`, :data:`MAX_DEPTH`, :data:`MAX_LITERAL_DIGITS`, every constant
    subexpression below :data:`MAX_CONSTANT` in magnitude (evaluated at fixed precision before
    SymPy combines it), and :data:`TIME_BUDGET_S` seconds in all. The expression must be a finite
    real number at ``t = 0``.

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
        One line: grammar violations, other names, bound violations, or a value at ``t = 0``
        that is not a finite real number.
    """
    where = f"entry {index_text(index)} {text[:60]!r}" + ("..." if len(text) > 60 else "")
    try:
        with _time_budget(TIME_BUDGET_S):
            expr = _parse(text)
            return _check_time_expr(expr, key, where)
    except _Unknown as exc:
        raise ParamError(key, f"{where} {exc}") from None
    except _Reject as exc:
        raise ParamError(key, f"{where} is not a valid expression in t ({exc})") from None
    except _OutOfTime:
        raise ParamError(key, f"{where} is not a valid expression in t (took longer than {TIME_BUDGET_S} s)") from None
    except RecursionError:
        raise ParamError(key, f"{where} is not a valid expression in t (nested too deeply)") from None


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
    try:
        lo, hi = continuity.point_enclosure(expr, t, 0)
        finite = max(abs(lo), abs(hi)) <= MAX_CONSTANT and math.isfinite(float((lo + hi) / 2))
        problem = None if finite else "beyond float64"
    except continuity.NotReal as exc:
        problem = f"not real: {exc}"
    except continuity.TooLarge:
        problem = "beyond float64"
    except continuity.Undecided as exc:
        problem = f"undecided: {exc}"
    if problem is not None:
        raise ParamError(key, f"{where} is not a finite real number at t = 0 ({problem})")
    return expr


def symbolic_leaf(leaf: object, key: str, index: tuple[int, ...]) -> sp.Expr:
    """One entry of a matrix that may depend on ``t``: an expression string parsed, a SymPy value
    checked, a number as a finite float (exact: an integer stays an integer)."""
    if isinstance(leaf, str):
        return as_time_expression(leaf, key, index)
    if isinstance(leaf, sp.Basic):
        return _check_time_expr(leaf, key, f"entry {index_text(index)} {str(leaf)!r}")
    x = leaf_number(leaf, key, index, allow_expr=True)
    if not math.isfinite(x):
        raise ParamError(
            key, f"entry {index_text(index)} is {nonfinite_name(x)}, expected a finite number"
        )
    if isinstance(leaf, (int, np.integer)):
        return sp.Integer(int(leaf))
    return sp.Float(x)  # from a Python float: exact (53-bit) value


def compile_matrix(key: str, matrix: sp.Matrix, vector: bool) -> Callable[[float], np.ndarray]:
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
                        f"entry {index_text(tuple(index))} {str(expr)!r} is not a finite "
                        f"real number at t = {time!r}",
                    )
        return out.reshape(shape)

    return evaluate


def echo_value(value: Value, vector: bool) -> list[Any]:
    """A matrix or vector of parameters as written back into a document: nested lists of numbers and
    expression strings (``vector``: a flat list)."""
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
