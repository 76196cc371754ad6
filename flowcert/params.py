"""Parameter files: loading, validation and the schema of each system.

A parameter file is JSON (an object at the top level) or ``.npz`` (one array per key,
0-d arrays read as scalars). Matrices are nested lists of numbers, row-major; vectors are
flat lists. Nothing is silently coerced: a scalar where a vector is expected, a ``(d, 1)``
column where a ``(d,)`` vector is expected, a boolean where a number is expected, an
asymmetric covariance -- each is an error that names the key and says what was expected.

Schema of the ``gaussian`` system (``d`` is the number of rows of ``Sigma0``)::

    key         required  value
    ----------  --------  ----------------------------------------------------------
    A           yes       d x d matrix; entries numbers or strings in t
    B           yes       d x d matrix; entries numbers or strings in t
    V           yes       d x d matrix; entries numbers or strings in t
    b           yes       length-d vector; entries numbers or strings in t
    mu0         yes       length-d vector of numbers
    Sigma0      yes       d x d matrix of numbers, exactly symmetric, not indefinite
    t_end       no        positive finite number (default 10.0)
    activation  no        "identity" (default) or "relu"

All numbers must be finite (JSON ``NaN``/``Infinity`` are read and then rejected) and
``d >= 1``. If any entry of ``A``, ``B``, ``V`` or ``b`` is a string, that parameter is
time-varying: its entries become SymPy expressions in the real symbol :data:`t` (SymPy
syntax; only ``t``, ``pi``, ``E`` and elementary functions may appear; ``^`` means power),
and its numeric entries are kept exactly (``sympy.Float`` / ``sympy.Integer``).

Every problem raises :class:`ParamError`, whose ``str`` is one line, e.g.
``params: key 'A': expected shape (2, 2), got (2, 3)``.

Other systems are added by writing a :class:`Schema` (a table ``key -> Field``) from the
reusable validators :func:`as_matrix`, :func:`as_vector`, :func:`as_positive_float`,
:func:`as_choice`, :func:`check_finite`, :func:`check_symmetric` and
:func:`check_not_indefinite`, and validating with :func:`validate`.
"""

from __future__ import annotations

import difflib
import io
import json
import keyword
import math
import os
import tokenize
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Union

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.printing.str import StrPrinter
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

__all__ = [
    "ParamError",
    "t",
    "ELEMENTARY_FUNCTIONS",
    "Field",
    "Schema",
    "GAUSSIAN_SCHEMA",
    "GaussianParams",
    "load_file",
    "parse_gaussian",
    "load_gaussian",
    "validate",
    "check_keys",
    "nested_shape",
    "as_matrix",
    "as_vector",
    "as_positive_float",
    "as_choice",
    "as_time_expression",
    "check_finite",
    "check_symmetric",
    "check_not_indefinite",
]

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
INDEFINITE_RTOL = 1e-10

Value = Union[np.ndarray, sp.Matrix]


class ParamError(ValueError):
    """A parameter file or mapping is malformed.

    Parameters
    ----------
    key : str or None
        The offending key (``None`` for problems with the file as a whole).
    problem : str
        What is wrong and what was expected, one line.
    file : str, optional
        The file the parameters came from.
    names_key : bool
        True when ``problem`` already names the key (unknown / missing keys), so the
        message does not repeat the ``key '...':`` prefix.

    Attributes
    ----------
    key, problem, file

    Notes
    -----
    ``str(err)`` is one line: ``params: [file 'F': ][key 'K': ]problem``.
    """

    def __init__(
        self,
        key: str | None,
        problem: str,
        *,
        file: str | None = None,
        names_key: bool = False,
    ) -> None:
        self.key = key
        self.problem = " ".join(str(problem).splitlines())
        self.file = file
        self.names_key = names_key
        super().__init__(self._message())

    def _message(self) -> str:
        parts = ["params: "]
        if self.file is not None:
            parts.append(f"file {self.file!r}: ")
        if self.key is not None and not self.names_key:
            parts.append(f"key {self.key!r}: ")
        parts.append(self.problem)
        return "".join(parts)

    def __str__(self) -> str:
        return self._message()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_param_error, (self.key, self.problem, self.file, self.names_key))

    def with_file(self, file: str) -> ParamError:
        """Return a copy of this error that also names ``file``."""
        return ParamError(self.key, self.problem, file=file, names_key=self.names_key)


def _rebuild_param_error(
    key: str | None, problem: str, file: str | None, names_key: bool
) -> ParamError:
    return ParamError(key, problem, file=file, names_key=names_key)


# ---------------------------------------------------------------------------------------
# formatting helpers
# ---------------------------------------------------------------------------------------


def _show(value: object, limit: int = 40) -> str:
    """Short, JSON-flavoured rendering of a raw value for messages."""
    if value is None:
        text = "null"
    elif isinstance(value, (bool, np.bool_)):
        text = "true" if value else "false"
    elif isinstance(value, (list, tuple, dict, np.ndarray)):
        text = f"a {_type_name(value)}"
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "number"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, np.ndarray):
        return f"array of shape {_fmt_shape(value.shape)}"
    return type(value).__name__


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _fmt_index(index: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in index)


def _nonfinite_name(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    return "inf" if x > 0 else "-inf"


# ---------------------------------------------------------------------------------------
# reusable validators
# ---------------------------------------------------------------------------------------


def nested_shape(raw: object, key: str) -> tuple[int, ...]:
    """Shape of a rectangular nested list (or array); ``()`` for a scalar.

    Parameters
    ----------
    raw : object
        Nested lists/tuples, a numpy array, a ``sympy.Matrix`` or a scalar.
    key : str
        Key named in errors.

    Returns
    -------
    tuple of int

    Raises
    ------
    ParamError
        If the nesting is ragged.
    """
    if isinstance(raw, np.ndarray):
        return tuple(raw.shape)
    if isinstance(raw, sp.MatrixBase):
        return tuple(raw.shape)
    return _list_shape(raw, key, ())


def _list_shape(raw: object, key: str, path: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(raw, (list, tuple)):
        return ()
    if not raw:
        return (0,)
    subs = [_list_shape(item, key, path + (i,)) for i, item in enumerate(raw)]
    for i, sub in enumerate(subs):
        if sub != subs[0]:
            raise ParamError(
                key,
                f"not a rectangular nested list: {_fmt_index(path + (i,))} has shape "
                f"{_fmt_shape(sub)} but {_fmt_index(path + (0,))} has shape "
                f"{_fmt_shape(subs[0])}",
            )
    return (len(raw),) + subs[0]


def _leaves(raw: object, shape: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], object]]:
    """Yield ``(index, leaf)`` in row-major order for a nested list of ``shape``."""
    if not shape:
        yield (), raw
        return
    for i, item in enumerate(raw):  # type: ignore[arg-type]
        for sub, leaf in _leaves(item, shape[1:]):
            yield (i,) + sub, leaf


def _check_shape(
    raw: object, key: str, got: tuple[int, ...], shape: tuple[int | None, ...]
) -> None:
    ok = len(got) == len(shape) and all(s is None or s == g for s, g in zip(shape, got))
    if ok:
        return
    if len(shape) == 2 and shape[0] is None and shape[1] is None:
        expected = "a matrix (a list of rows)"
    elif len(shape) == 1 and shape[0] is None:
        expected = "a vector (a flat list)"
    else:
        expected = "shape " + _fmt_shape(tuple(shape))  # type: ignore[arg-type]
    if got == ():
        found = f"a scalar ({_show(raw)})"
    else:
        found = _fmt_shape(got)
    raise ParamError(key, f"expected {expected}, got {found}")


def _number(leaf: object, key: str, index: tuple[int, ...], allow_expr: bool) -> float:
    """Convert one numeric leaf to float, with a precise error for anything else."""
    where = f"entry {_fmt_index(index)}"
    if isinstance(leaf, (bool, np.bool_)):
        raise ParamError(key, f"{where} is a boolean ({_show(leaf)}), expected a number")
    if leaf is None:
        raise ParamError(key, f"{where} is null, expected a number")
    if isinstance(leaf, str):
        hint = (
            "" if allow_expr else "; strings in t are allowed only in A, B, V and b"
        )
        raise ParamError(key, f"{where} is a string ({_show(leaf)}), expected a number{hint}")
    if isinstance(leaf, (int, np.integer)):
        try:
            return float(leaf)
        except OverflowError:
            raise ParamError(key, f"{where} is an integer too large for float64") from None
    if isinstance(leaf, (float, np.floating)):
        return float(leaf)
    if isinstance(leaf, sp.Basic) and leaf.is_Number:
        return float(leaf)
    raise ParamError(key, f"{where} is a {_type_name(leaf)}, expected a number")


def check_finite(array: np.ndarray, key: str) -> None:
    """Reject NaN and infinite entries, naming the first one.

    Parameters
    ----------
    array : numpy.ndarray
        Float array.
    key : str
        Key named in errors.

    Raises
    ------
    ParamError
        ``entry [i][j] is NaN`` (or ``inf`` / ``-inf``).
    """
    bad = ~np.isfinite(array)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ParamError(
            key,
            f"entry {_fmt_index(index)} is {_nonfinite_name(float(array[index]))}, "
            "expected a finite number",
        )


def check_symmetric(array: np.ndarray, key: str) -> None:
    """Require exact symmetry (no tolerance, no coercion).

    Raises
    ------
    ParamError
        With the largest asymmetry and the suggestion to symmetrise as (S + S.T)/2.
    """
    if not np.array_equal(array, array.T):
        gap = float(np.max(np.abs(array - array.T)))
        raise ParamError(
            key,
            f"must be symmetric (max |S - S^T| = {gap:.1e}); "
            "if the asymmetry is rounding, write (S + S.T)/2 instead",
        )


def check_not_indefinite(array: np.ndarray, key: str, rtol: float = INDEFINITE_RTOL) -> None:
    """Reject a symmetric matrix that is clearly not positive semidefinite.

    The test is ``lambda_min < -rtol * max(1, ||S||_2)``. This is a screen for input
    mistakes, not a verdict: the exact semidefiniteness decision (and whether the matrix
    is singular) is made later by the certificate layer with rigorous arithmetic.

    Raises
    ------
    ParamError
        ``not positive semidefinite (smallest eigenvalue -1.0e-01)``.
    """
    eig = np.linalg.eigvalsh(array)
    norm = float(np.max(np.abs(eig))) if eig.size else 0.0
    if eig.size and eig[0] < -rtol * max(1.0, norm):
        raise ParamError(
            key,
            f"not positive semidefinite (smallest eigenvalue {eig[0]:.1e}); "
            "expected a covariance matrix",
        )


def _as_array(
    raw: object,
    key: str,
    shape: tuple[int | None, ...],
    allow_expr: bool,
) -> Value:
    value = raw
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiu":
            _check_shape(raw, key, tuple(value.shape), shape)
            arr = np.array(value, dtype=np.float64)  # a copy we own
            check_finite(arr, key)
            arr.setflags(write=False)
            return arr
        if value.dtype.kind == "b":
            raise ParamError(key, "is a boolean array, expected numbers")
        value = value.tolist()
    if isinstance(value, sp.MatrixBase):
        if len(shape) == 1 and 1 in value.shape:
            value = list(value)  # a sympy column/row stands for a vector
        else:
            value = value.tolist()
    got = nested_shape(value, key)
    _check_shape(raw, key, got, shape)
    leaves = list(_leaves(value, got))
    symbolic = allow_expr and any(isinstance(leaf, (str, sp.Basic)) for _, leaf in leaves)
    if symbolic:
        exprs = [_symbolic_leaf(leaf, key, index) for index, leaf in leaves]
        rows = got[0]
        return sp.Matrix(rows, len(exprs) // rows if rows else 0, exprs)
    if all(type(leaf) in (float, int) for _, leaf in leaves):
        try:
            arr = np.array(value, dtype=np.float64).reshape(got)
        except OverflowError:
            arr = None
    else:
        arr = None
    if arr is None:
        flat = [_number(leaf, key, index, allow_expr) for index, leaf in leaves]
        arr = np.array(flat, dtype=np.float64).reshape(got)
    check_finite(arr, key)
    arr.setflags(write=False)
    return arr


def as_matrix(
    raw: object,
    key: str,
    shape: tuple[int | None, int | None] | None = None,
    *,
    allow_expr: bool = False,
) -> Value:
    """Validate a matrix given as a nested list (or a 2-d array).

    Parameters
    ----------
    raw : object
        Rows as a list of lists of numbers (JSON), or a numeric 2-d array (``.npz``).
    key : str
        Key named in errors.
    shape : tuple, optional
        Required ``(rows, cols)``; ``None`` for either means any size.
    allow_expr : bool
        If True, entries may be strings in :data:`t`; if any entry is a string the
        result is a ``sympy.Matrix`` of expressions (numbers kept exactly).

    Returns
    -------
    numpy.ndarray or sympy.Matrix
        A read-only float64 array, or a ``sympy.Matrix`` when time-varying.

    Raises
    ------
    ParamError
        Wrong shape, ragged rows, non-numeric or non-finite entries, bad expressions.
    """
    return _as_array(raw, key, shape if shape is not None else (None, None), allow_expr)


def as_vector(
    raw: object,
    key: str,
    length: int | None = None,
    *,
    allow_expr: bool = False,
) -> Value:
    """Validate a vector given as a flat list (or a 1-d array).

    A ``(d, 1)`` column or a scalar is an error, not a vector. With ``allow_expr`` a
    time-varying vector is returned as a ``d x 1`` ``sympy.Matrix``.

    Parameters
    ----------
    raw : object
        A flat list of numbers (or strings in t when ``allow_expr``), or a 1-d array.
    key : str
        Key named in errors.
    length : int, optional
        Required length.
    allow_expr : bool
        Allow strings in :data:`t` (see :func:`as_matrix`).

    Returns
    -------
    numpy.ndarray or sympy.Matrix
    """
    return _as_array(raw, key, (length,), allow_expr)


def as_positive_float(raw: object, key: str) -> float:
    """Validate a positive finite number (booleans and strings are not numbers).

    Raises
    ------
    ParamError
        ``must be a positive finite number, got -1``.
    """
    value: float | None = None
    if isinstance(raw, (int, float, np.integer, np.floating)) and not isinstance(
        raw, (bool, np.bool_)
    ):
        try:
            value = float(raw)
        except OverflowError:
            value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise ParamError(key, f"must be a positive finite number, got {_show(raw)}")
    return value


def as_choice(raw: object, key: str, choices: tuple[str, ...]) -> str:
    """Validate a string among ``choices``.

    Raises
    ------
    ParamError
        ``expected one of 'identity', 'relu', got 'tanh'``.
    """
    if not isinstance(raw, str) or raw not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ParamError(key, f"expected one of {options}, got {_show(raw)}")
    return raw


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


# ---------------------------------------------------------------------------------------
# schema tables
# ---------------------------------------------------------------------------------------

Validator = Callable[[object, str, Mapping[str, int]], object]


@dataclass(frozen=True)
class Field:
    """One key of a schema.

    Attributes
    ----------
    validate : callable
        ``validate(raw, key, dims) -> value``; ``dims`` holds the inferred sizes.
    required : bool
        Whether the key must be present.
    default : object
        Value used when an optional key is absent.
    doc : str
        One-line description.
    """

    validate: Validator
    required: bool = True
    default: object = None
    doc: str = ""


@dataclass(frozen=True)
class Schema:
    """The keys of one system's parameter file.

    Attributes
    ----------
    system : str
        System key (``"gaussian"``).
    fields : Mapping[str, Field]
        In the order keys are listed in messages and validated.
    infer_dims : callable
        ``infer_dims(raw) -> {"d": ...}``, run after the key check and before the fields.
    """

    system: str
    fields: Mapping[str, Field]
    infer_dims: Callable[[Mapping[str, object]], dict[str, int]]

    @property
    def allowed(self) -> tuple[str, ...]:
        """All keys, in schema order."""
        return tuple(self.fields)

    @property
    def required(self) -> tuple[str, ...]:
        """Required keys, in schema order."""
        return tuple(k for k, f in self.fields.items() if f.required)


def check_keys(raw: object, schema: Schema) -> Mapping[str, object]:
    """Require a mapping with no unknown keys and every required key.

    Raises
    ------
    ParamError
        ``unknown key 'Sigma_0' (allowed: ...)`` or ``missing required key 'V'``.
    """
    if not isinstance(raw, Mapping):
        raise ParamError(
            None,
            f"{schema.system} parameters must be an object (mapping), got a {_type_name(raw)}",
        )
    allowed = schema.allowed
    for key in raw:
        if key not in schema.fields:
            hint = ""
            if isinstance(key, str):
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                if close:
                    hint = f"; did you mean {close[0]!r}?"
            raise ParamError(
                str(key),
                f"unknown key {str(key)!r} (allowed: {', '.join(allowed)}){hint}",
                names_key=True,
            )
    for key in schema.required:
        if key not in raw:
            raise ParamError(key, f"missing required key {key!r}", names_key=True)
    return raw


def validate(raw: object, schema: Schema) -> dict[str, object]:
    """Validate a raw mapping against a schema.

    Parameters
    ----------
    raw : object
        The mapping read from a file (see :func:`load_file`).
    schema : Schema

    Returns
    -------
    dict
        Every key of the schema (defaults filled in), validated values.

    Raises
    ------
    ParamError
        The first problem found: keys first, then sizes, then fields in schema order.
    """
    mapping = check_keys(raw, schema)
    dims = schema.infer_dims(mapping)
    out: dict[str, object] = {}
    for key, fld in schema.fields.items():
        out[key] = fld.validate(mapping[key], key, dims) if key in mapping else fld.default
    return out


def _gaussian_dims(raw: Mapping[str, object]) -> dict[str, int]:
    # d is the number of rows of Sigma0; every other key must agree with it.
    sigma = raw["Sigma0"]
    shape = nested_shape(sigma, "Sigma0")
    if shape and 0 in shape:
        raise ParamError("Sigma0", "dimension d must be at least 1, got an empty matrix")
    if len(shape) != 2 or shape[0] != shape[1]:
        found = f"a scalar ({_show(sigma)})" if shape == () else _fmt_shape(shape)
        raise ParamError("Sigma0", f"expected a square d x d matrix, got {found}")
    return {"d": shape[0]}


def _square(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_matrix(raw, key, (dims["d"], dims["d"]), allow_expr=allow_expr)

    return validator


def _vector(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_vector(raw, key, dims["d"], allow_expr=allow_expr)

    return validator


def _covariance(raw: object, key: str, dims: Mapping[str, int]) -> object:
    sigma = as_matrix(raw, key, (dims["d"], dims["d"]))
    assert isinstance(sigma, np.ndarray)
    check_symmetric(sigma, key)
    check_not_indefinite(sigma, key)
    return sigma


GAUSSIAN_ACTIVATIONS = ("identity", "relu")

#: Schema of the ``gaussian`` system (key order = the order messages list them in).
GAUSSIAN_SCHEMA = Schema(
    system="gaussian",
    fields={
        "A": Field(_square(True), doc="feed-forward matrix, d x d, constant or in t"),
        "B": Field(_square(True), doc="attention bilinear form, d x d, constant or in t"),
        "V": Field(_square(True), doc="value matrix, d x d, constant or in t"),
        "b": Field(_vector(True), doc="feed-forward bias, length d, constant or in t"),
        "mu0": Field(_vector(False), doc="initial mean, length d"),
        "Sigma0": Field(_covariance, doc="initial covariance, d x d, symmetric PSD"),
        "t_end": Field(
            lambda raw, key, dims: as_positive_float(raw, key),
            required=False,
            default=10.0,
            doc="final time, > 0",
        ),
        "activation": Field(
            lambda raw, key, dims: as_choice(raw, key, GAUSSIAN_ACTIVATIONS),
            required=False,
            default="identity",
            doc='feed-forward activation: "identity" or "relu"',
        ),
    },
    infer_dims=_gaussian_dims,
)

_TIME_KEYS = ("A", "B", "V", "b")


# ---------------------------------------------------------------------------------------
# the gaussian parameters
# ---------------------------------------------------------------------------------------


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


@dataclass(frozen=True, eq=False)
class GaussianParams:
    """Validated parameters of the ``gaussian`` system.

    Constructing an instance validates it (same rules as :func:`parse_gaussian`), so
    every instance is valid. Constant parameters are read-only float64 arrays;
    time-varying ones (any string entry) are ``sympy.Matrix`` objects in :data:`t`
    (``b`` as a ``d x 1`` column).

    Attributes
    ----------
    A, B, V : numpy.ndarray or sympy.Matrix
        d x d.
    b : numpy.ndarray or sympy.Matrix
        Shape (d,), or a d x 1 ``sympy.Matrix`` when time-varying.
    mu0 : numpy.ndarray
        Shape (d,).
    Sigma0 : numpy.ndarray
        Shape (d, d), exactly symmetric, not clearly indefinite.
    t_end : float
        Final time, default 10.0.
    activation : str
        ``"identity"`` (default) or ``"relu"``.
    """

    A: Value
    B: Value
    V: Value
    b: Value
    mu0: np.ndarray
    Sigma0: np.ndarray
    t_end: float = 10.0
    activation: str = "identity"

    def __post_init__(self) -> None:
        raw = {key: getattr(self, key) for key in GAUSSIAN_SCHEMA.fields}
        for key, value in validate(raw, GAUSSIAN_SCHEMA).items():
            object.__setattr__(self, key, value)

    @property
    def d(self) -> int:
        """State dimension."""
        return int(self.Sigma0.shape[0])

    @property
    def time_varying_keys(self) -> tuple[str, ...]:
        """The keys among A, B, V, b that depend on time (are ``sympy.Matrix``)."""
        return tuple(k for k in _TIME_KEYS if isinstance(getattr(self, k), sp.MatrixBase))

    @property
    def time_varying(self) -> bool:
        """True if any of A, B, V, b is time-varying."""
        return bool(self.time_varying_keys)

    @cached_property
    def _evaluators(self) -> dict[str, Callable[[float], np.ndarray]]:
        return {
            key: _compile(key, getattr(self, key), vector=(key == "b"))
            for key in self.time_varying_keys
        }

    def at(self, time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Numeric ``(A, B, V, b)`` at a time.

        Parameters
        ----------
        time : float
            The time t.

        Returns
        -------
        tuple of numpy.ndarray
            float64 arrays of shapes (d, d), (d, d), (d, d), (d,). Constant parameters
            are returned as the stored read-only arrays.

        Raises
        ------
        ParamError
            If a time-varying entry is not a finite real number at ``time``.
        """
        tau = float(time)
        if not math.isfinite(tau):
            raise ValueError(f"time must be finite, got {time!r}")
        evaluators = self._evaluators
        out = []
        for key in _TIME_KEYS:
            value = getattr(self, key)
            out.append(evaluators[key](tau) if key in evaluators else value)
        return (out[0], out[1], out[2], out[3])

    def to_json(self) -> dict[str, object]:
        """The parameters as understood, as a JSON-ready dict.

        Numbers are nested lists of floats (repr round-trips exactly). In a time-varying
        matrix, integer and float entries are echoed as numbers and every other entry as
        ``str(expr)``; ``parse_gaussian(p.to_json())`` rebuilds ``p`` (a time-varying
        parameter whose entries are all plain numbers comes back constant).
        """
        return {
            "A": _echo(self.A, False),
            "B": _echo(self.B, False),
            "V": _echo(self.V, False),
            "b": _echo(self.b, True),
            "mu0": _echo(self.mu0, True),
            "Sigma0": _echo(self.Sigma0, False),
            "t_end": self.t_end,
            "activation": self.activation,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GaussianParams):
            return NotImplemented
        for key in GAUSSIAN_SCHEMA.fields:
            mine, theirs = getattr(self, key), getattr(other, key)
            if isinstance(mine, np.ndarray) or isinstance(theirs, np.ndarray):
                if not (
                    isinstance(mine, np.ndarray)
                    and isinstance(theirs, np.ndarray)
                    and np.array_equal(mine, theirs)
                ):
                    return False
            elif mine != theirs:
                return False
        return True


# ---------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def load_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read a parameter file into a raw mapping (not yet validated).

    Parameters
    ----------
    path : str or path-like
        A ``.json`` file holding an object, or a ``.npz`` archive (read with
        ``allow_pickle=False``; 0-d arrays become Python scalars).

    Returns
    -------
    dict
        Key -> raw value (nested lists for JSON, numpy arrays for ``.npz``).

    Raises
    ------
    ParamError
        Wrong suffix, missing or unreadable file, invalid JSON (with line and column),
        duplicate keys, a top level that is not an object, a corrupt archive.
    """
    name = os.fspath(path)
    p = Path(name)
    suffix = p.suffix.lower()

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=name)

    if suffix not in (".json", ".npz"):
        raise fail("expected a .json or .npz file")
    if not p.exists():
        raise fail("no such file")
    if p.is_dir():
        raise fail("is a directory, expected a file")
    if suffix == ".json":
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise fail("not valid UTF-8 text") from None
        except OSError as exc:
            raise fail(f"cannot read ({exc.strerror or exc})") from None
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise fail(
                f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
            ) from None
        except _DuplicateKey as exc:
            raise fail(f"duplicate key {exc.args[0]!r}") from None
        except RecursionError:
            raise fail("not valid JSON (nested too deeply)") from None
        if not isinstance(data, dict):
            raise fail(f"top level must be an object, got {_json_kind(data)}")
        return data
    try:
        loaded = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise fail(f"not a valid .npz file ({exc})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise fail("not a valid .npz file (it holds a single .npy array, expected an archive)")
    out: dict[str, object] = {}
    with loaded:
        for key in loaded.files:
            try:
                arr = loaded[key]
            except ValueError:
                raise fail(
                    f"entry {key!r} is an object array (needs pickle), expected numbers"
                ) from None
            except (OSError, EOFError, zipfile.BadZipFile) as exc:
                raise fail(f"not a valid .npz file ({exc})") from None
            out[key] = arr.item() if arr.ndim == 0 else arr
    return out


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def parse_gaussian(raw: Mapping[str, object]) -> GaussianParams:
    """Validate a raw mapping as ``gaussian`` parameters.

    Parameters
    ----------
    raw : Mapping
        As returned by :func:`load_file`, or a dict built in code.

    Returns
    -------
    GaussianParams

    Raises
    ------
    ParamError
        The first problem, naming the key (see the module docstring for the schema).
    """
    check_keys(raw, GAUSSIAN_SCHEMA)
    return GaussianParams(**raw)  # type: ignore[arg-type]  # __post_init__ validates


def load_gaussian(path: str | os.PathLike[str]) -> GaussianParams:
    """Read and validate a ``gaussian`` parameter file.

    Errors about keys name the file too: ``params: file 'p.json': key 'A': ...``.
    """
    raw = load_file(path)
    try:
        return parse_gaussian(raw)
    except ParamError as err:
        raise err.with_file(os.fspath(path)) from None
