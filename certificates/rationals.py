r"""Exact rationals of float, integer and rational data: the conversions every exact check starts from.

A float64 is the dyadic rational :math:`m\,2^e` it denotes; :func:`to_rational` takes matrices of
floats, integers, :class:`~fractions.Fraction`, :class:`~decimal.Decimal` or ``"p/q"`` strings exactly
(no rounding), :func:`square_symmetric` checks exact symmetry, and :func:`float_matrix` gives the
nearest float64 matrix back. python-flint's ``fmpq`` is used when importable. Shared by
:mod:`.exact`, :mod:`.rounding` and :mod:`.pivot`, which import nothing from one another in a circle.
"""

from __future__ import annotations

import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

try:  # pragma: no cover - exercised implicitly depending on the environment
    import flint  # the module (None without python-flint); fmpq, fmpz its rational and integer types

    fmpq: Any = flint.fmpq
    fmpz: Any = flint.fmpz
except ImportError:  # pragma: no cover
    flint = None
    fmpq = None
    fmpz = None

HAVE_FLINT: bool = fmpq is not None
RationalMatrix = list[list[Fraction]]


def scalar_to_fraction(x: Any) -> Fraction:
    """Exact rational value of one real scalar; NaN/inf raise ``ValueError``."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if fmpq is not None and isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    if fmpz is not None and isinstance(x, fmpz):
        return Fraction(int(x))
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            raise ValueError(f"non-finite entry {x!r} cannot be converted to a rational")
        # as_integer_ratio is exact for every binary float type (float16 ... longdouble).
        num, den = x.as_integer_ratio()
        return Fraction(num, den)
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValueError(f"non-finite entry {x!r} cannot be converted to a rational")
        return Fraction(x)
    raise TypeError(f"cannot convert {type(x).__name__} {x!r} exactly to a rational")


def to_rational(M: Any) -> RationalMatrix:
    r"""Convert a matrix to exact rationals, entry by entry, without rounding.

    Parameters
    ----------
    M : array_like
        A 2-D numpy array (any real float or integer dtype, or ``object`` holding
        rationals), or a nested sequence of ints, floats, :class:`~fractions.Fraction`,
        ``flint.fmpq`` or other :class:`numbers.Rational` values.  A float ``x`` is mapped to
        the rational it denotes exactly (``Fraction(0.1) != Fraction(1, 10)``).

    Returns
    -------
    list of list of Fraction
        The rows of :math:`M` as exact rationals.

    Raises
    ------
    ValueError
        If an entry is NaN or infinite, or ``M`` is not a (non-ragged) 2-D matrix.
    TypeError
        If an entry has no exact rational value (complex, strings, ...).
    """
    if isinstance(M, np.ndarray):
        if M.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got an array with shape {M.shape}")
        if np.iscomplexobj(M):
            raise TypeError("complex matrices are not supported")
        rows: Sequence[Sequence[Any]] = [list(r) for r in M]
    else:
        if isinstance(M, (str, bytes)) or not isinstance(M, Sequence):
            raise ValueError("expected a 2-D matrix (nested sequence or numpy array)")
        rows = []
        for r in M:
            if isinstance(r, np.ndarray):
                if r.ndim != 1:
                    raise ValueError("expected a 2-D matrix")
                r = list(r)
            if isinstance(r, (str, bytes)) or not isinstance(r, Sequence):
                raise ValueError("expected a 2-D matrix (each row a sequence)")
            rows.append(r)
        if rows and len({len(r) for r in rows}) != 1:
            raise ValueError("ragged nested sequence: rows have different lengths")
    return [[scalar_to_fraction(x) for x in r] for r in rows]


def square_symmetric(Q: RationalMatrix) -> int:
    """The order :math:`n` of a square, exactly symmetric rational matrix; ``ValueError`` otherwise."""
    n = len(Q)
    if n == 0:
        raise ValueError("empty matrix")
    if any(len(r) != n for r in Q):
        lengths = sorted({len(r) for r in Q})
        raise ValueError(f"matrix is not square ({n} rows, row lengths {lengths})")
    for i in range(n):
        for j in range(i + 1, n):
            if Q[i][j] != Q[j][i]:
                raise ValueError(f"matrix is not exactly symmetric: M[{i}][{j}] != M[{j}][{i}]")
    return n


def float_matrix(Q: RationalMatrix) -> np.ndarray | None:
    """The nearest float64 matrix of a rational one; None if an entry overflows."""
    try:
        F = np.array([[float(q) for q in r] for r in Q], dtype=np.float64)
    except OverflowError:
        return None
    return F if np.all(np.isfinite(F)) else None
