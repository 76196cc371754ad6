r"""Parameter schemas shared by every system: errors, validators and schema tables.

A parameter file is a mapping ``key -> value``; a :class:`Schema` is a table ``key -> Field``
whose validators check one value each (shape, type, finiteness, symmetry, definiteness).
Nothing is silently coerced. A covariance :math:`\Sigma` is "clearly indefinite" when
:math:`\lambda_{\min}(\Sigma) < -\varepsilon\,\max(1,\lambda_{\max}(\Sigma))`, with
:math:`\varepsilon` = :data:`INDEFINITE_RTOL` (gaussian paper, Prop. 2.1 needs
:math:`\Sigma_0\succeq0`). Every problem raises :class:`ParamError`, whose ``str`` is one line,
e.g. ``params: key 'A': expected shape (2, 2), got (2, 3)``.

A system is added by writing a :class:`Schema` from the reusable validators :func:`as_positive_float`,
:func:`as_choice`, :func:`check_finite`, :func:`check_symmetric`, :func:`check_not_indefinite`
and the array validators of :mod:`flowcert.arrays` (:func:`~flowcert.arrays.as_matrix`,
:func:`~flowcert.arrays.as_vector`), and validating with :func:`validate`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import sympy as sp

from .errors import OptionError, ParamError  # noqa: F401  (re-exported: the one input-error type)


INDEFINITE_RTOL = 1e-10

Value = Union[np.ndarray, sp.Matrix]


# ---------------------------------------------------------------------------------------
# formatting helpers
# ---------------------------------------------------------------------------------------


def show_value(value: object, limit: int = 40) -> str:
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
        return f"array of shape {shape_text(value.shape)}"
    return type(value).__name__


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as Python writes a tuple: ``(3, 4)``, ``(3,)``."""
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def index_text(index: tuple[int, ...]) -> str:
    """An entry's index as it is subscripted: ``[1][2]``."""
    return "".join(f"[{i}]" for i in index)


def nonfinite_name(x: float) -> str:
    """The name of a non-finite float in messages: ``NaN``, ``inf`` or ``-inf``."""
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
    rows = _matrix_rows(raw)
    if rows is not None:  # a list of equal rows of scalars (a d = 384 matrix): no call per entry
        return (len(raw), rows)
    subs = [_list_shape(item, key, path + (i,)) for i, item in enumerate(raw)]
    for i, sub in enumerate(subs):
        if sub != subs[0]:
            raise ParamError(
                key,
                f"not a rectangular nested list: {index_text(path + (i,))} has shape "
                f"{shape_text(sub)} but {index_text(path + (0,))} has shape "
                f"{shape_text(subs[0])}",
            )
    return (len(raw),) + subs[0]


def _matrix_rows(raw: list[object] | tuple[object, ...]) -> int | None:
    """The common length of the rows of ``raw`` when every row is a non-empty list or tuple of the same
    length with no list or tuple in it (what :func:`_list_shape` would find, in C loops), else None."""
    if not all(type(r) in (list, tuple) for r in raw):
        return None
    lengths = set(map(len, raw))
    if len(lengths) != 1 or 0 in lengths:
        return None
    kinds: set[type] = set()
    for r in raw:
        kinds.update(map(type, r))  # type: ignore[call-overload]
    if any(issubclass(k, (list, tuple)) for k in kinds):
        return None
    return lengths.pop()


def nested_leaves(raw: object, shape: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], object]]:
    """Yield ``(index, leaf)`` in row-major order for a nested list of ``shape``."""
    if not shape:
        yield (), raw
        return
    for i, item in enumerate(raw):  # type: ignore[arg-type]
        for sub, leaf in nested_leaves(item, shape[1:]):
            yield (i,) + sub, leaf


def check_shape(
    raw: object, key: str, got: tuple[int, ...], shape: tuple[int | None, ...]
) -> None:
    """Raise :class:`ParamError` for ``key`` unless the shape ``got`` of ``raw`` is ``shape`` (None: any size)."""
    ok = len(got) == len(shape) and all(s is None or s == g for s, g in zip(shape, got))
    if ok:
        return
    if len(shape) == 2 and shape[0] is None and shape[1] is None:
        expected = "a matrix (a list of rows)"
    elif len(shape) == 1 and shape[0] is None:
        expected = "a vector (a flat list)"
    else:
        expected = "shape " + shape_text(tuple(shape))  # type: ignore[arg-type]
    if got == ():
        found = f"a scalar ({show_value(raw)})"
    else:
        found = shape_text(got)
    raise ParamError(key, f"expected {expected}, got {found}")


def leaf_number(leaf: object, key: str, index: tuple[int, ...], allow_expr: bool) -> float:
    """Convert one numeric leaf to float, with a precise error for anything else."""
    where = f"entry {index_text(index)}"
    if isinstance(leaf, (bool, np.bool_)):
        raise ParamError(key, f"{where} is a boolean ({show_value(leaf)}), expected a number")
    if leaf is None:
        raise ParamError(key, f"{where} is null, expected a number")
    if isinstance(leaf, str):
        hint = (
            "" if allow_expr else "; strings in t are allowed only in A, B, V and b"
        )
        raise ParamError(key, f"{where} is a string ({show_value(leaf)}), expected a number{hint}")
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
            f"entry {index_text(index)} is {nonfinite_name(float(array[index]))}, "
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


def check_magnitude(array: object, key: str, file: str | None = None, *, limit: float | None = None,
                    source: str = "flowcert.limits.LIMITS['magnitude']") -> None:
    """Reject entries larger than ``flowcert.limits.LIMITS['magnitude']`` (or ``limit``, named by ``source``)
    in absolute value.

    Products of two such entries (scores, Gram matrices, squared norms) then stay finite in
    float64, so no later intermediate overflows to ``inf``/``NaN``. Arrays only (symbolic,
    time-varying entries are bounded by the expression parser); ``None`` passes.
    """
    if not isinstance(array, np.ndarray) or array.size == 0 or array.dtype.kind not in "biuf":
        return
    from .limits import LIMITS

    limit = float(LIMITS["magnitude"]) if limit is None else limit
    big = np.abs(array.astype(float, copy=False)) > limit
    if big.any():
        index = tuple(int(i) for i in np.argwhere(big)[0])
        raise ParamError(key, f"entry {index_text(index)} = {float(array[index]):.3g} is larger than {limit:g} in "
                              f"absolute value ({source}); rescale the parameters", file=file)


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
        raise ParamError(key, f"must be a positive finite number, got {show_value(raw)}")
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
        raise ParamError(key, f"expected one of {options}, got {show_value(raw)}")
    return raw


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


#: The one key every parameter file may carry besides its schema's: where the parameters came from
#: (:mod:`flowcert.pretrained.provenance`); its shape is checked, it is echoed as the verify document's
#: top-level ``provenance`` and never enters the mathematics.
PROVENANCE_KEY = "provenance"


def check_keys(raw: object, schema: Schema) -> Mapping[str, object]:
    """Require a mapping with no unknown keys and every required key (and a well-formed ``provenance``).

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
        if key == PROVENANCE_KEY:  # where the parameters came from: checked, echoed, never used
            from .pretrained.provenance import check_provenance

            check_provenance(raw[key])
            continue
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
