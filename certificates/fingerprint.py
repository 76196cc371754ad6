r"""Exact fingerprints of the arguments of a memoised computation (:func:`flowcert.certificates.core.memoised`).

:func:`digest` is the SHA-256 of a canonical byte string: for a float array its dtype, shape and
bytes; for a SymPy matrix the numerator/denominator pairs of its entries; for a ``flint.fmpq_mat``
the float64 bytes of its entries when each entry is exactly a float64 (:func:`~flowcert.certificates.forms.float_image`),
else its common denominator :math:`D` and integer numerators :math:`N` with :math:`M = N/D`; for
containers, their items in order (mappings by sorted key). Equal fingerprints mean equal exact
values, so a memo keyed by them never returns the result of another input.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from typing import Any

import flint
import numpy as np
import sympy as sp

from .forms import float_image as _float_image

__all__ = ["digest"]


def _feed(h: Any, obj: Any) -> None:
    if isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        h.update(f"nd{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    elif isinstance(obj, sp.MatrixBase):
        h.update(f"sp{obj.shape}".encode())
        h.update(repr([(e.p, e.q) if e.is_Rational else str(e) for e in obj]).encode())
    elif isinstance(obj, flint.fmpq_mat):
        F = _float_image(obj)
        if F is not None:  # exactly these floats: their bytes name the matrix
            h.update(f"fqf{obj.nrows()}x{obj.ncols()}".encode())
            h.update(F.tobytes())
        else:  # a common denominator and the integer numerators, as flint prints them (rows, in order)
            N, D = obj.numer_denom()
            h.update(f"fqn{obj.nrows()}x{obj.ncols()}/{D}:".encode())
            h.update(N.str().encode())
    elif isinstance(obj, (list, tuple)):
        h.update(f"seq{len(obj)}(".encode())
        for x in obj:
            _feed(h, x)
        h.update(b")")
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=str):
            _feed(h, k)
            _feed(h, obj[k])
        h.update(b"}")
    elif isinstance(obj, (str, int, float, bool, Fraction, type(None), np.generic)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    else:
        raise TypeError(f"no digest for {type(obj).__name__}")


def digest(*objs: Any) -> str:
    r"""SHA-256 of arrays, matrices, scalars and containers (exact: data, dtype and shape)."""
    h = hashlib.sha256()
    for o in objs:
        _feed(h, o)
    return h.hexdigest()
