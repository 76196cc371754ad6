r"""Exact test-side arithmetic shared by the tests (independent of the code under test).

:func:`q` is the rational a binary64 number denotes exactly; :func:`exact_psd` and
:func:`exact_pd` decide :math:`M\succeq0` / :math:`M\succ0` for a symmetric rational matrix from
the coefficients of :math:`\det(xI+M)=\prod_i(x+\lambda_i)`: all :math:`\lambda_i\ge0` iff every
coefficient is :math:`\ge0` (Descartes, all roots real), and :math:`>0` for :math:`\succ0`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp


def q(x: Any) -> sp.Rational:
    """The exact rational a float (or int, or Fraction) denotes; booleans are refused."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("boolean is not a number")
    if isinstance(x, Fraction):
        f = x
    elif isinstance(x, (int, np.integer)):
        f = Fraction(int(x))
    else:
        f = Fraction(float(x))
    return sp.Rational(f.numerator, f.denominator)


def qmat(M: Any) -> sp.Matrix:
    """Exact rational matrix of nested rows (a flat sequence gives a column)."""
    rows = list(M)
    if rows and not hasattr(rows[0], "__len__"):
        return sp.Matrix([q(x) for x in rows])
    return sp.Matrix([[q(x) for x in row] for row in rows])


def char_coeffs(M: sp.Matrix) -> list:
    r"""Coefficients of :math:`\det(xI+M)=\prod_i(x+\lambda_i)`, highest degree first."""
    x = sp.Symbol("x")
    return sp.Poly((-M).charpoly(x).as_expr(), x).all_coeffs()


def exact_psd(M: sp.Matrix) -> bool:
    """``M`` is symmetric and positive semidefinite, decided exactly."""
    return M == M.T and all(c >= 0 for c in char_coeffs(M))


def exact_pd(M: sp.Matrix) -> bool:
    """``M`` is symmetric and positive definite, decided exactly."""
    return M == M.T and all(c > 0 for c in char_coeffs(M))
