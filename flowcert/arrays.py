r"""Matrices and vectors of a parameter file: nested lists to arrays, or to SymPy matrices in t.

A matrix :math:`M\in\mathbb R^{r\times c}` is a list of :math:`r` rows of :math:`c` numbers
(row-major), a vector a flat list; the declared shape is checked before anything is built.
Where a validator allows expressions and an entry is a string, the value is a
``sympy.Matrix`` :math:`M(t)` of expressions in the time symbol :data:`flowcert.expressions.t`
(numbers kept exactly); otherwise a read-only float64 array with finite entries.

From Python an array may also be a numpy array of any real dtype or a ``torch.Tensor`` (CPU or
CUDA, any floating dtype, with or without grad): :func:`to_numpy` turns it into float64, with a
:class:`~flowcert.errors.PrecisionWarning` when its format was not float64 (float16, bfloat16 and
float32 embed exactly in float64; a long double is rounded). Complex, boolean and object arrays
are refused with one line naming the key.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import sympy as sp

from .errors import PrecisionWarning, note_precision, precision_message
from .expressions import symbolic_leaf
from .schema import ParamError, Value, check_shape, nested_leaves, leaf_number, check_finite, nested_shape

__all__ = ["as_matrix", "as_vector", "is_tensor", "to_numpy"]


def is_tensor(value: object) -> bool:
    """Whether ``value`` is a ``torch.Tensor`` (without importing torch when it is not loaded)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside this package (the user's call)."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def _note_precision(key: str, dtype: str, exact: bool) -> None:
    """One note for the call in progress (:class:`~flowcert.errors.precision_notes`), or a warning now."""
    if not note_precision(key, dtype, exact):
        warnings.warn(precision_message([(key, dtype, exact)]), PrecisionWarning, stacklevel=_user_stacklevel())


def to_numpy(value: Any, key: str) -> Any:
    """A torch tensor or a real numpy array as a numpy array (float64 where floating); anything else
    unchanged.

    Parameters
    ----------
    value : object
        A ``torch.Tensor`` (any device and floating or integer dtype), a numpy array, or anything
        else (returned as it is: nested lists, numbers, strings).
    key : str
        The parameter named in errors and notes.

    Returns
    -------
    object
        A numpy array (float64 for floating input, the integer dtype kept for integer input), a
        Python number for a 0-d tensor or array, or ``value`` itself.

    Raises
    ------
    ParamError
        Complex, boolean or object (ragged) arrays and tensors: one line naming ``key`` and the dtype.

    Warns
    -----
    PrecisionWarning
        Floating input in another format than float64.
    """
    if is_tensor(value):
        import torch

        t = value.detach()
        if t.is_complex():
            raise ParamError(key, f"is a complex tensor ({t.dtype}), expected real numbers")
        if t.dtype == torch.bool:
            raise ParamError(key, "is a boolean tensor, expected real numbers")
        if t.is_floating_point():
            if t.dtype != torch.float64:
                _note_precision(key, str(t.dtype).replace("torch.", ""), exact=True)
            t = t.to(device="cpu", dtype=torch.float64)
        else:
            t = t.cpu()
        arr = t.numpy().copy()
        return arr.item() if arr.ndim == 0 else arr
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        kind = arr.dtype.kind
        if kind == "c":
            raise ParamError(key, f"is a complex array ({arr.dtype}), expected real numbers")
        if kind == "O":
            raise ParamError(key, f"is an object array of shape {tuple(arr.shape)} (ragged rows or non-numbers), "
                                  "expected a real array")
        if kind in "US":
            return arr.tolist()  # strings in t: the expression parser decides
        if kind == "f" and arr.dtype != np.float64:
            _note_precision(key, str(arr.dtype), exact=arr.dtype.itemsize < 8)
            arr = arr.astype(np.float64)
        return arr.item() if arr.ndim == 0 else arr
    return value


def _float_rows(value: object) -> np.ndarray | None:
    """A list of equal-length lists of Python ``float``/``int`` (a matrix as JSON gives it) as float64,
    checked row by row at C speed (a 384 x 384 matrix: milliseconds, against a second for the general
    path, which walks every leaf); None for anything else, which the general path checks and names
    (booleans are neither ``float`` nor ``int`` here, so they are never coerced)."""
    if type(value) is not list or not value or type(value[0]) is not list:
        return None
    n, numbers = len(value[0]), {float, int}
    for row in value:
        if type(row) is not list or len(row) != n or not set(map(type, row)) <= numbers:
            return None
    try:
        return np.array(value, dtype=np.float64)
    except OverflowError:  # an integer beyond the float range: the general path names it
        return None


def _as_array(
    raw: object,
    key: str,
    shape: tuple[int | None, ...],
    allow_expr: bool,
) -> Value:
    raw = to_numpy(raw, key)
    value = raw
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiu":
            check_shape(raw, key, tuple(value.shape), shape)
            arr = np.array(value, dtype=np.float64)  # a copy we own
            check_finite(arr, key)
            arr.setflags(write=False)
            return arr
        if value.dtype.kind == "b":
            raise ParamError(key, "is a boolean array, expected numbers")
        value = value.tolist()
    fast = _float_rows(value) if len(shape) == 2 else None
    if fast is not None:
        check_shape(raw, key, tuple(fast.shape), shape)
        check_finite(fast, key)
        fast.setflags(write=False)
        return fast
    if isinstance(value, sp.MatrixBase):
        if len(shape) == 1 and 1 in value.shape:
            value = list(value)  # a sympy column/row stands for a vector
        else:
            value = value.tolist()
    got = nested_shape(value, key)
    check_shape(raw, key, got, shape)
    leaves = list(nested_leaves(value, got))
    symbolic = allow_expr and any(isinstance(leaf, (str, sp.Basic)) for _, leaf in leaves)
    if symbolic:
        exprs = [symbolic_leaf(leaf, key, index) for index, leaf in leaves]
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
        flat = [leaf_number(leaf, key, index, allow_expr) for index, leaf in leaves]
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
