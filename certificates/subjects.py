r"""Subjects of certificates: exact expressions over a document's parameters.

A certificate proves a claim about the data it carries; its *subject* says what those data are in
terms of the problem. The subject is a mapping from a data field to an expression over named
inputs, for example ``{"M": "-(A + A^T)"}`` or ``{"M": "heads[0].V"}``, evaluated exactly:
floats are taken as the dyadic rationals they are, and

.. math::

    e ::= \mathrm{name}\;|\;\mathrm{name}[i,j]\;|\;q\;|\;e^\top\;|\;-e\;|\;e+e\;|\;e-e\;|\;e\,{*}\,e\;|\;(e),

with :math:`q` a rational literal (``3``, ``-1/2``), ``*`` the matrix (or scalar) product, ``^T`` the
transpose and ``[i,j]`` one entry (0-based). Names are resolved by the caller (a document's
``params``, with paths such as ``heads[0].V``). Matrices are ``flint.fmpq_mat``, scalars
``flint.fmpq``; strings, booleans and integers that are not numbers pass through unchanged when an
expression is a bare name (``activation``, ``causal``).

:func:`matches` compares a subject's value with the field of a certificate exactly (rationals, or
JSON equality for non-numeric values). Nothing here knows about any system.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from math import gcd, isfinite
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from .core import encode
from .diagonal import Diagonal, is_diagonal_form
from .lowrank import LowRank, is_factored
from .forms import LARGE, Encoded, float_image, float_rows, float_text, ratio_rows_text, ratio_text

__all__ = ["SubjectError", "evaluate", "matches", "exact_value", "canonical", "subject_digest"]

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:/\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*)*)"
                    r"|(?P<op>\^T|[-+*()\[\],]))")


class SubjectError(ValueError):
    """A subject expression is malformed, names an input that is absent, or mixes shapes."""


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            raise SubjectError(f"cannot read subject {expr!r} at {expr[pos:pos + 12]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return out


def exact_value(value: Any) -> Any:
    """Exact form of a JSON value: a matrix (list of rows) or vector (list) of numbers -> ``fmpq_mat``
    (a vector as one column), a number -> ``fmpq``, anything else unchanged."""
    from .core import to_fmpq, qmat

    if isinstance(value, bool) or value is None or isinstance(value, str):
        if isinstance(value, str):
            try:
                return to_fmpq(value)
            except (ValueError, ZeroDivisionError):
                return value
        return value
    if isinstance(value, (int, float, Fraction)):
        return to_fmpq(value)
    if isinstance(value, (flint.fmpq, flint.fmpz)):
        return flint.fmpq(value)
    if isinstance(value, flint.fmpq_mat):
        return value
    if isinstance(value, (LowRank, Diagonal)):
        return value
    if is_diagonal_form(value):  # {"diagonal": [...]}: the exact diag(a), kept as its diagonal
        try:
            return Diagonal.from_json(value)
        except ValueError:
            return value
    if is_factored(value):  # {"factors": [L, R], "scale_squared": q}: the exact sqrt(q) L R, kept factored
        try:
            return LowRank.from_json(value)
        except ValueError:
            return value  # malformed: compared as JSON, never as a matrix
    if isinstance(value, (list, tuple)):
        try:
            if value and all(isinstance(r, (list, tuple)) for r in value):
                return qmat([list(r) for r in value])
            if all(isinstance(x, (int, float, str, Fraction)) and not isinstance(x, bool) for x in value):
                return qmat([[x] for x in value]) if value else value
        except (ValueError, TypeError, ZeroDivisionError):
            return value  # not all numbers (an expression in t): compared as JSON
    if hasattr(value, "shape") and hasattr(value, "tolist"):  # numpy arrays
        return exact_value(value.tolist())
    return value


class _Parser:
    def __init__(self, expr: str, resolve: Callable[[str], Any]) -> None:
        self.expr, self.toks, self.i, self.resolve = expr, _tokens(expr), 0, resolve

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks) or (want is not None and self.toks[self.i][1] != want):
            raise SubjectError(f"malformed subject {self.expr!r}" + (f": expected {want!r}" if want else ""))
        self.i += 1
        return self.toks[self.i - 1]

    def parse(self) -> Any:
        v = self.sum()
        if self.i != len(self.toks):
            raise SubjectError(f"malformed subject {self.expr!r}: trailing {self.peek()!r}")
        return v

    def sum(self) -> Any:
        v = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            w = self.product()
            v = _binary(op, v, w, self.expr)
        return v

    def product(self) -> Any:
        v = self.unary()
        while self.peek() == "*":
            self.take()
            v = _binary("*", v, self.unary(), self.expr)
        return v

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return _binary("*", flint.fmpq(-1), self.unary(), self.expr)
        return self.postfix()

    def postfix(self) -> Any:
        v = self.atom()
        while self.peek() in ("^T", "["):
            if self.take()[1] == "^T":
                if isinstance(v, Diagonal):
                    continue
                if isinstance(v, LowRank):
                    v = v.transpose()
                    continue
                if not isinstance(v, flint.fmpq_mat):
                    raise SubjectError(f"transpose of a non-matrix in {self.expr!r}")
                v = v.transpose()
            else:
                i = int(self.take()[1])
                self.take(",")
                j = int(self.take()[1])
                self.take("]")
                if isinstance(v, Diagonal) and i < v.n and j < v.n:
                    v = v.entries[i] if i == j else flint.fmpq(0)
                    continue
                if not isinstance(v, flint.fmpq_mat) or not (i < v.nrows() and j < v.ncols()):
                    raise SubjectError(f"entry [{i},{j}] out of range in {self.expr!r}")
                v = flint.fmpq(v[i, j])
        return v

    def atom(self) -> Any:
        kind, text = self.take()
        if text == "(":
            v = self.sum()
            self.take(")")
            return v
        if kind == "num":
            num, _, den = text.partition("/")
            return flint.fmpq(int(num), int(den or 1))
        if kind == "name":
            try:
                return exact_value(self.resolve(text))
            except KeyError:
                raise SubjectError(f"subject names {text!r}, which the document does not have") from None
        raise SubjectError(f"malformed subject {self.expr!r} at {text!r}")


def _binary(op: str, a: Any, b: Any, expr: str) -> Any:
    if isinstance(b, LowRank) and op == "*" and a == flint.fmpq(-1):
        return b.negated()  # -N of a factored N: exact, still factored
    if isinstance(a, LowRank) or isinstance(b, LowRank):
        raise SubjectError(f"only -N and N^T of a factored matrix are kept factored in {expr!r}")
    if isinstance(a, Diagonal) or isinstance(b, Diagonal):
        out = _diagonal_binary(op, a, b)
        if out is not None:
            return out
        a, b = (x.dense() if isinstance(x, Diagonal) else x for x in (a, b))  # meets a dense matrix
    num = (flint.fmpq, flint.fmpq_mat)
    if not isinstance(a, num) or not isinstance(b, num):
        raise SubjectError(f"arithmetic on a non-numeric value in {expr!r}")
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        return a * b
    except (ValueError, TypeError) as exc:
        raise SubjectError(f"shapes do not fit in {expr!r} ({exc})") from None


def _diagonal_binary(op: str, a: Any, b: Any) -> Diagonal | None:
    """``a op b`` kept diagonal (sum, difference of diagonals; a rational times a diagonal), else None."""
    try:
        if isinstance(a, Diagonal) and isinstance(b, Diagonal) and op in "+-":
            return a.plus(b, 1 if op == "+" else -1)
    except ValueError as exc:
        raise SubjectError(str(exc)) from None
    if op == "*" and isinstance(a, flint.fmpq) and isinstance(b, Diagonal):
        return b.scaled(a)
    if op == "*" and isinstance(b, flint.fmpq) and isinstance(a, Diagonal):
        return a.scaled(b)
    return None


def evaluate(expr: str, resolve: Callable[[str], Any]) -> Any:
    """The exact value of a subject expression; ``resolve(name)`` gives an input's JSON value
    (``KeyError`` when absent).

    Raises
    ------
    SubjectError
        Malformed expression, absent input, or shapes that do not fit.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise SubjectError(f"a subject must be a non-empty string, got {expr!r}")
    return _Parser(expr, resolve).parse()


def matches(value: Any, field: Any) -> bool:
    """Whether a certificate's data field equals a subject's value exactly."""
    if isinstance(value, (LowRank, Diagonal)):  # compared in its own form: nothing is multiplied out
        return value.same(exact_value(field))
    if isinstance(value, (flint.fmpq_mat, flint.fmpq)):
        try:
            got = exact_value(field)
        except (ValueError, TypeError, ZeroDivisionError):
            return False
        if isinstance(value, flint.fmpq_mat) and isinstance(got, flint.fmpq_mat):
            return value.nrows() == got.nrows() and value.ncols() == got.ncols() and value == got
        return isinstance(got, flint.fmpq) and isinstance(value, flint.fmpq) and value == got
    return type(value) is type(field) and value == field


def canonical(value: Any) -> Any:
    """The canonical JSON form of a subject's value: exact ``"p/q"`` strings for numbers and matrices
    (:func:`flowcert.certificates.core.encode`), other values (strings, booleans, expressions in t) as
    they are. Equal exact values give equal canonical forms."""
    from .core import encode

    if isinstance(value, LowRank) or is_factored(value):
        low = exact_value(value)
        if isinstance(low, LowRank):
            return _canonical_factored(low)
    if isinstance(value, Diagonal) or is_diagonal_form(value):
        diag = exact_value(value)
        if isinstance(diag, Diagonal):
            return {"diagonal": [str(q) for q in diag.entries]}
    fast = _canonical_matrix(value)
    if fast is not None:
        return fast
    v = exact_value(value)
    if isinstance(v, flint.fmpq_mat):
        return encode(v)
    if isinstance(v, flint.fmpq):
        return str(v)
    return v


def _canonical_factored(N: LowRank) -> dict[str, Any]:
    """The canonical form of a factored matrix: each factor by its float64 bytes' SHA-256 (as
    :func:`subject_digest` names a large float matrix), and the scale as ``"p/q"``."""
    import hashlib

    def ref(F: np.ndarray) -> dict[str, Any]:
        data = np.ascontiguousarray(F + 0.0, dtype="<f8").tobytes()
        return {"float64": list(F.shape), "sha256": hashlib.sha256(data).hexdigest()}

    return {"factors": [ref(N.L), ref(N.R)], "scale_squared": str(N.scale_squared)}


_RATIONAL_TEXT = re.compile(r"(-?\d+)(?:/(\d+))?")


def _entry_text(x: Any) -> str | None:
    """``str(fmpq(x))`` for an int, a finite float or a ``"p/q"``/``"n"`` text (None: another form)."""
    t = type(x)
    if t is float:
        return float_text(x) if isfinite(x) else None
    if t is int:
        return str(x)
    if t is not str:
        return None
    m = _RATIONAL_TEXT.fullmatch(x)
    if m is None:
        return None
    p, q = int(m.group(1)), int(m.group(2) or 1)
    if q == 0:
        return None
    g = gcd(p, q)
    return ratio_text(p // g, q // g)


def _canonical_matrix(value: Any) -> list[list[str]] | None:
    """:func:`canonical` of a matrix (list of equal-length rows) or vector of plain numbers and
    ``"p/q"`` texts, entry by entry without building the exact matrix; None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(r, list) for r in value):
        n = len(value[0])
        if n == 0 or any(len(r) != n for r in value):
            return None
        rows = value
    elif any(isinstance(x, (list, tuple, dict)) for x in value):
        return None
    else:
        rows = [[x] for x in value]  # a vector is one column, as exact_value makes it
    F = float_rows(rows) if len(rows) * len(rows[0]) >= LARGE else None
    if F is not None:  # a large float matrix: its texts through the memoised encoder
        import numpy as np

        return encode(F) if np.all(np.isfinite(F)) else None
    out = []
    for r in rows:
        texts = [_entry_text(x) for x in r]
        if None in texts:
            return None
        out.append(texts)
    return out  # type: ignore[return-value]


def subject_digest(values: Mapping[str, object], legacy: bool = False) -> str:
    """``sha256:<hex>`` of the canonical values of a certificate's subject fields (by field name): what
    ties a certificate to the exact data it was made for, when the data themselves are not copied.

    A large matrix (at least :data:`~flowcert.certificates.forms.LARGE` entries) whose entries are all
    exactly float64 numbers enters as ``{"float64": [rows, cols], "sha256": HEX}``, HEX the SHA-256 of
    those floats' bytes (little-endian, row-major, ``-0.0`` as ``0.0``): the value determines its
    floats and they determine it, and a d = 384 head's matrix is hashed in milliseconds instead of
    being written as 147,456 ``"p/q"`` texts. Any other value enters as its canonical JSON text
    (:func:`canonical`), as every value did before (``legacy``: that form for every value, the digest
    of documents written before the float form existed)."""
    import hashlib
    import json

    def text(v: Any) -> str:
        F = None if legacy else _float_form(v)
        if F is None:
            return _canonical_text(v)
        data = np.ascontiguousarray(F + 0.0, dtype="<f8").tobytes()  # + 0.0: -0.0 is the rational 0
        return json.dumps({"float64": list(F.shape), "sha256": hashlib.sha256(data).hexdigest()},
                          separators=(",", ":"))

    body = "{" + ",".join(f"{json.dumps(k)}:{text(values[k])}" for k in sorted(values)) + "}"
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def _float_form(value: Any) -> np.ndarray | None:
    """The finite float64 matrix exactly equal to ``value``, when ``value`` is a matrix of at least
    :data:`~flowcert.certificates.forms.LARGE` entries in any form (floats, ``"p/q"`` texts, an
    :class:`~flowcert.certificates.forms.Encoded` that remembers its floats, an ``fmpq_mat``) whose
    entries are all float64 numbers; None otherwise. The same exact value gives the same answer in
    every form (:func:`~flowcert.certificates.forms.float_image` decides the general case)."""
    F = getattr(value, "floats", None) if isinstance(value, Encoded) else None
    if F is None and isinstance(value, np.ndarray) and value.dtype == np.float64 and value.ndim in (1, 2):
        F = value.reshape(-1, 1) if value.ndim == 1 else value  # a vector is one column, as exact_value makes it
    if F is None and isinstance(value, list):
        F = float_rows(value)
    if F is None:
        if isinstance(value, list):
            rows = value if value and all(isinstance(r, list) for r in value) else [value]
            if sum(len(r) for r in rows) < LARGE:
                return None
        elif not isinstance(value, flint.fmpq_mat):
            return None
        try:
            v = exact_value(value)
        except (ValueError, TypeError, ZeroDivisionError):
            return None
        F = float_image(v) if isinstance(v, flint.fmpq_mat) else None
    if F is None or F.ndim != 2 or F.size < LARGE or not np.all(np.isfinite(F)):
        return None
    return F


#: canonical JSON texts of recent large values, keyed by the SHA-256 of the value's own JSON text: a
#: content key (a value changed in place is a new key), so a d x d matrix bound to thirty hypotheses of
#: one document is made exact once, not thirty times (a MiniLM head: 160 of 330 CPU s before)
_CANONICAL_TEXT: OrderedDict[bytes, str] = OrderedDict()
_CANONICAL_TEXT_MAX = 64


def _canonical_text(value: Any) -> str:
    """``json.dumps(canonical(value), sort_keys=True, separators=(",", ":"))``, memoised by content."""
    import json

    from .forms import content_memo

    def text() -> str:
        c = canonical(value)
        return (isinstance(c, Encoded) and ratio_rows_text(c)) or json.dumps(c, sort_keys=True, separators=(",", ":"))

    if isinstance(value, Encoded):  # canonical already: its JSON text, no entry parsed again
        return ratio_rows_text(value) or json.dumps(value, separators=(",", ":"))
    if not isinstance(value, (list, tuple, dict)) or (
            len(value) < 16 and not any(isinstance(x, (list, tuple, dict)) for x in
                                        (value.values() if isinstance(value, dict) else value))):
        return text()
    return content_memo(_CANONICAL_TEXT, _CANONICAL_TEXT_MAX, value, text)


def near(value: Any, field: Any, rel: Fraction = Fraction(1, 2**30)) -> bool:
    r"""Whether a certificate's carried copy ``field`` of a *computed* subject (a float computation, such as
    the Jacobians along a trajectory) is the re-derived ``value`` up to rounding noise: same shape, and
    every entry :math:`|c-v|\le\tau\max(1,|v|)`, :math:`\tau=` ``rel``, in exact rationals. This only ties
    the copy to its subject; what the certificate proves is checked on ``value`` itself."""
    if isinstance(value, dict) and "sha256" in value:  # a float64 stack by reference (rnn_float): its fingerprint
        from .rnn_float import ties

        return isinstance(field, dict) and ties(value, field)
    def flat(x: Any) -> tuple[list[int], list[Fraction]] | None:
        if isinstance(x, flint.fmpq_mat):
            x = [[str(x[i, j]) for j in range(x.ncols())] for i in range(x.nrows())]
        if isinstance(x, (list, tuple)):
            parts = [flat(y) for y in x]
            if any(p is None for p in parts) or len({tuple(p[0]) for p in parts if p}) > 1:  # type: ignore[index]
                return None
            inner = parts[0][0] if parts else []  # type: ignore[index]
            return [len(x), *inner], [q for p in parts for q in p[1]]  # type: ignore[index]
        if isinstance(x, bool) or not isinstance(x, (int, float, str, Fraction)):
            return None
        try:
            return [], [Fraction(x)]
        except (ValueError, ZeroDivisionError):
            return None

    a, b = flat(value), flat(field)
    if a is None or b is None or a[0] != b[0]:
        return False
    return all(abs(c - v) <= rel * max(1, abs(v)) for v, c in zip(a[1], b[1]))
