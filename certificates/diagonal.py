r"""Exact diagonal matrices given by their diagonal, and their certificates in :math:`O(d)`.

A parameter ``{"diagonal": [a_1, ..., a_d]}`` is the exact matrix :math:`D=\operatorname{diag}(a_i)`
(numbers or ``"p/q"`` texts). A pretrained head has :math:`A=0` and :math:`\Sigma_0=I`; at
:math:`d=4096` a dense exact copy is :math:`1.7\times10^7` rationals, while everything the gaussian
theorems ask of a diagonal matrix is read off its entries:

* inertia :math:`(n_+, n_-, n_0)` = the signs of the :math:`a_i` (so :math:`D\succeq0`, :math:`D\succ0`,
  :math:`D-mI\succ0` for a margin :math:`m`);
* :math:`Dv=0` for :math:`v\ne0` iff :math:`a_iv_i=0` for every :math:`i` (a zero eigenvalue);
* :math:`D=0` iff every :math:`a_i=0`; :math:`\lambda_{\max}(D)=\max_i a_i` and the Rayleigh quotient
  :math:`y^\top Dy/y^\top y=\sum_i a_iy_i^2/\sum_i y_i^2`.

The checkers of the dense kinds (``psd``, ``pd``, ``inertia``, ``zero_eigenvalue``, the ``zero`` and
``numeric`` predicates, ``lemma23_condition``'s :math:`\Sigma_0`) read this form with the functions here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flint

from .records import JSONObject

__all__ = ["Diagonal", "is_diagonal_form", "diagonal_form", "quadratic_form"]


def is_diagonal_form(value: Any) -> bool:
    """Whether a JSON value is the form ``{"diagonal": [...]}`` of a square matrix."""
    return isinstance(value, dict) and "diagonal" in value


def _entry(x: Any) -> flint.fmpq:
    """The exact value of an entry: an int, a finite float (the rational it is) or a ``"p/q"`` text."""
    from fractions import Fraction

    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ValueError(f"a diagonal entry must be a number or a \"p/q\" text, got {x!r}")
    try:
        q = Fraction(*x.as_integer_ratio()) if isinstance(x, float) else Fraction(x)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        raise ValueError(f"a diagonal entry must be a finite number or a \"p/q\" text, got {x!r}") from None
    return flint.fmpq(q.numerator, q.denominator)


@dataclass(frozen=True, eq=False)
class Diagonal:
    r"""The exact matrix :math:`\operatorname{diag}(a_1,\dots,a_d)`; JSON ``{"diagonal": [a_1, ...]}``."""

    entries: tuple[flint.fmpq, ...]

    @classmethod
    def from_json(cls, value: Any) -> "Diagonal":
        """The matrix of a diagonal JSON value; ValueError naming what is wrong."""
        if isinstance(value, Diagonal):
            return value
        if not is_diagonal_form(value):
            raise ValueError("a diagonal matrix is an object {\"diagonal\": [a_1, ..., a_d]}")
        extra = sorted(set(value) - {"diagonal"})
        if extra:
            raise ValueError(f"unknown key {extra[0]!r} in a diagonal matrix (allowed: diagonal)")
        a = value["diagonal"]
        if not isinstance(a, list) or not a:
            raise ValueError("diagonal must be a non-empty list of numbers")
        return cls(tuple(_entry(x) for x in a))

    @property
    def n(self) -> int:
        return len(self.entries)

    def to_json(self) -> JSONObject:
        """Entries that are float64 numbers as numbers, others as ``"p/q"`` texts."""
        def text(q: flint.fmpq) -> Any:
            f = float(int(q.p)) / float(int(q.q)) if abs(int(q.p)) < 2**53 and int(q.q) < 2**53 else None
            if f is not None and flint.fmpq(*f.as_integer_ratio()) == q:
                return f
            return str(q)

        return {"diagonal": [text(q) for q in self.entries]}

    def floats(self) -> list[float]:
        """The entries as floats (nearest; exact for a parameter given as numbers)."""
        return [float(int(q.p)) / float(int(q.q)) for q in self.entries]

    def scaled(self, c: flint.fmpq) -> "Diagonal":
        return Diagonal(tuple(c * q for q in self.entries))

    def plus(self, other: "Diagonal", sign: int = 1) -> "Diagonal":
        if other.n != self.n:
            raise ValueError(f"{self.n} x {self.n} and {other.n} x {other.n} do not fit")
        return Diagonal(tuple(a + sign * b for a, b in zip(self.entries, other.entries)))

    def dense(self) -> flint.fmpq_mat:
        """The dense exact matrix (only where a dense operand meets it)."""
        M = flint.fmpq_mat(self.n, self.n)
        for i, q in enumerate(self.entries):
            M[i, i] = q
        return M

    def inertia(self, shift: flint.fmpq = flint.fmpq(0)) -> tuple[int, int, int]:
        r"""Inertia of :math:`D-\mathrm{shift}\,I`: the signs of :math:`a_i-\mathrm{shift}`."""
        s = [q - shift for q in self.entries]
        return (sum(x > 0 for x in s), sum(x < 0 for x in s), sum(x == 0 for x in s))

    def kills(self, v: list[Any]) -> bool:
        """Whether :math:`v\\ne0` (exact entries) and :math:`Dv=0`."""
        w = [_entry(x) for x in v]
        return len(w) == self.n and any(w) and all(a * x == 0 for a, x in zip(self.entries, w))

    def quadratic(self, v: list[Any]) -> flint.fmpq | None:
        """:math:`v^\\top Dv` exactly (None for a zero or ill-sized v)."""
        w = [_entry(x) for x in v]
        if len(w) != self.n or not any(w):
            return None
        return sum((a * x * x for a, x in zip(self.entries, w)), flint.fmpq(0))

    def rayleigh(self, y: list[Any]) -> flint.fmpq:
        """:math:`y^\\top Dy/y^\\top y` exactly (ValueError for a zero or ill-sized y)."""
        q = self.quadratic(y)
        if q is None:
            raise ValueError("zero Rayleigh vector, or of the wrong length")
        return q / sum((x * x for x in map(_entry, y)), flint.fmpq(0))

    def same(self, other: Any) -> bool:
        return isinstance(other, Diagonal) and other.entries == self.entries


def quadratic_form(M: Any, v: list[Any]) -> Any:
    r""":math:`v^\top Dv` of a diagonal form ``M`` (None when v is zero or ill-sized); None for any other M."""
    return Diagonal.from_json(M).quadratic(v) if is_diagonal_form(M) else None


def diagonal_form(M: Any) -> Diagonal | None:
    """The :class:`Diagonal` of a ``{"diagonal": [...]}`` form (its checks are read off the entries), else None."""
    return Diagonal.from_json(M) if is_diagonal_form(M) else None
