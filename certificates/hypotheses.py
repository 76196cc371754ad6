"""Hypothesis checks shared by every system: exact definiteness and certified eigenvalue bounds.

:math:`M\\succ0`, :math:`M\\succeq0` are decided by exact rational LDL^T of the given float data
(no rounding: every float is a dyadic rational), and :math:`\\lambda_{\\min}(M)\\ge\\ell` by the
exact check :math:`M-\\ell I\\succeq0`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp

from . import core


def holds_by(name: str, method: str, detail: str = "") -> core.HypothesisResult:
    """A hypothesis true by construction (the model or the parameter type), with its reason."""
    return core.HypothesisResult(name, "holds", None, method, None, detail)


def as_float(Mq: sp.Matrix) -> np.ndarray:
    """Nearest float64 matrix of a rational one (for margins and eigenvalue estimates only)."""
    return np.array(Mq.tolist(), dtype=float)


def sym_part(A: np.ndarray) -> sp.Matrix:
    """:math:`A+A^\\top` formed exactly in rationals (a float sum would round)."""
    Aq = core.rational_matrix(A)
    return Aq + Aq.T


def gram(B: np.ndarray) -> sp.Matrix:
    """:math:`B^\\top B` formed exactly in rationals."""
    Bq = core.rational_matrix(B)
    return Bq.T * Bq


def lower_eigenvalue_bound(M: np.ndarray | sp.Matrix) -> Fraction | None:
    """A rational :math:`\\ell` with :math:`M-\\ell I\\succeq0` proved exactly (M symmetric)."""
    Mq = core.rational_matrix(M)
    lam = float(np.linalg.eigvalsh(as_float(Mq)).min())
    if Mq != Mq.T:
        return None
    for slack in (1e-12, 1e-9, 1e-6, 1e-3):
        ell = Fraction(lam - slack * max(1.0, abs(lam)))
        if core.is_psd(Mq - sp.Rational(ell.numerator, ell.denominator) * sp.eye(Mq.rows)):
            return ell
    return None


def definite(M: np.ndarray | sp.Matrix, name: str, sign: int) -> core.HypothesisResult:
    """Exact verdict on :math:`\\mathrm{sign}\\cdot M\\succ0` (M must be symmetric)."""
    Mq = sign * core.rational_matrix(M)
    what = f"{'' if sign > 0 else '-'}{name}"
    if Mq != Mq.T:
        return core.HypothesisResult(f"{what} > 0", "fails", None, "exact symmetry", None, f"{name} is not symmetric")
    margin = float(np.linalg.eigvalsh(as_float(Mq)).min())
    if core.is_pd(Mq):
        c = core.Certificate("pd", f"{what} is positive definite", {"M": core.encode(Mq), "margin": "0"})
        return core.certified(f"{what} > 0", "holds", c, margin, "exact rational LDL^T")
    return core.HypothesisResult(f"{what} > 0", "fails", margin, "exact rational LDL^T", None, f"smallest eigenvalue of {what} is {margin:.3e}")


def semidefinite(M: np.ndarray | sp.Matrix, name: str) -> core.HypothesisResult:
    """Exact verdict on :math:`M\\succeq0`."""
    return core.psd_hypothesis(f"{name} >= 0", M, name)


def upper_eigenvalue_bound(M: np.ndarray | sp.Matrix) -> Fraction | None:
    """A rational :math:`u` with :math:`uI-M\\succeq0` proved exactly (M symmetric)."""
    low = lower_eigenvalue_bound(-core.rational_matrix(M))
    return None if low is None else -low
