r"""What re-checking one certificate will cost, estimated from the size of its data before any exact arithmetic.

A checker decides its claim in exact rational arithmetic (:mod:`flowcert.certificates.second_opinion`: the
characteristic polynomial up to :data:`~flowcert.certificates.second_opinion.DESCARTES_MAX` rows, a congruence
of the float image above). Its cost is not set by the size of the file but by the size of the numbers once
every entry is put over one denominator: a matrix of :math:`n\times n` entries :math:`p_{ij}/q_{ij}` is the
integer matrix :math:`Z/L` with :math:`L=\operatorname{lcm}(q_{ij})`, whose entries have

.. math:: b=\max_{ij}\bigl(\operatorname{bits}(p_{ij})-\operatorname{bits}(q_{ij})\bigr)+\operatorname{bits}(L)+1

bits. Fraction-free elimination and the characteristic polynomial grow each intermediate entry to about
:math:`n b` bits (Hadamard's bound), so on :math:`m=\min(n,\text{DESCARTES\_MAX})` rows

.. math:: \text{bytes}\approx m^3 b/8,\qquad \text{seconds}\approx c\,m^{3.3}\,b^{1.4}

(fitted to python-flint's ``charpoly`` on the 2-core development machine: :data:`SECONDS_PER_UNIT`), and
above DESCARTES_MAX rows the congruence :math:`U^\top ZU` adds integer products of :math:`n^2` entries of
:math:`b+` :data:`CONGRUENCE_BITS` bits. Random 1000-digit rationals make :math:`L` a product of every
denominator (a 20 x 20 ``pd`` certificate: :math:`b\approx 7\cdot10^5`, minutes and a gigabyte), while the
floats flowcert writes share power-of-two denominators (:math:`b` below about 1,200 bits).

The estimate is conservative in two ways: every denominator of the certificate (its scalars included: a
``margin`` shifts the diagonal) enters :math:`L`, and with two matrices or more (:math:`J^\top P+PJ`) the
entry size is doubled. A decimal string with an exponent (``"1e-999999"``) counts the digits its value has,
not the characters it is written with. :func:`estimate` reads nothing but the JSON value; the caller compares
it with the limits table (:func:`flowcert.recheck.recheck_files`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Cost", "estimate", "exceeds"]

#: rows decided by the characteristic polynomial (:data:`flowcert.certificates.second_opinion.DESCARTES_MAX`)
EXACT_ROWS = 128
#: ``c`` of :math:`c\,m^{3.3}b^{1.4}` seconds (fitted: n = 16..128, b = 64..32768 bits; the largest ratio of
#: measured to fitted time, 1.3, is folded in)
SECONDS_PER_UNIT = 1.4e-10 * 1.3
#: bits a congruence by a float eigenbasis adds to each entry (two 53-bit mantissas, their exponent spread, the sum)
CONGRUENCE_BITS = 256
#: seconds per word-multiply of a dense integer product (n^3 (b / 64) word operations)
SECONDS_PER_WORD_OP = 2e-9
#: seconds to read one number of a factor from its JSON text into an exact form
SECONDS_PER_NUMBER = 5e-7
#: ``bits(L)`` is computed exactly, stopping once it passes this (the estimate is then over any budget)
LCM_BITS_CAP = 1 << 24
_LOG2_10 = math.log2(10)
_RATIONAL = re.compile(r"\s*[+-]?(\d+)(?:/(\d+))?\s*\Z")
_DECIMAL = re.compile(r"\s*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,12}))?\s*\Z")


@dataclass
class Cost:
    """The estimate for one certificate: seconds and peak bytes, and what they come from."""

    seconds: float
    bytes: float
    rows: int
    bits: int
    #: the common denominator was not computed to the end (the estimate is a lower bound, over the budget)
    partial: bool = False

    def describe(self) -> str:
        if math.isinf(self.seconds):
            return f"a number of more than {LCM_BITS_CAP:,} bits (its digits, or a decimal exponent)"
        cost = f"more than {self.seconds:.3g} s" if self.partial else \
            f"{self.seconds:.3g} s and {self.bytes / 2**30:.3g} GB"
        more = "more than " if self.partial else ""
        return (f"estimated {cost} for exact work on {self.rows} row(s) of {more}{self.bits:,}-bit entries "
                "(over one common denominator)")


def _digits_bits(digits: int) -> int:
    return int(digits * _LOG2_10) + 1


class _Scan:
    """Numbers and matrices of one certificate's data."""

    def __init__(self) -> None:
        self.denominators: set[int | str] = set()
        self.excess = 0  # max bits(p) - bits(q) over every number
        self.rows = 0
        self.matrices = 0
        self.overflow = False  # a number too large to take apart: over any budget

    def number(self, x: Any) -> None:
        if isinstance(x, bool):
            return
        if isinstance(x, int):
            self.excess = max(self.excess, x.bit_length())
        elif isinstance(x, float):
            if math.isfinite(x) and x != 0:
                p, q = x.as_integer_ratio()
                self.excess = max(self.excess, p.bit_length() - q.bit_length())
                if q > 1:
                    self.denominators.add(q)
        elif isinstance(x, str):
            self._text(x)

    def numbers(self, values: list[Any]) -> None:
        """Every number of a flat list; its floats at once (a parameter matrix at d = 768 is 589,824 of them)."""
        floats = [x for x in values if type(x) is float]
        for x in values:
            if type(x) is not float:
                self.number(x)
        if not floats:
            return
        import numpy as np

        F = np.asarray(floats, dtype=np.float64)
        F = F[np.isfinite(F) & (F != 0)]
        if F.size == 0:
            return
        mant, exp = np.frexp(np.abs(F))  # |x| = mant 2^exp, mant in [1/2, 1): x = (mant 2^53) / 2^(53 - exp)
        m = (mant * 2.0**53).astype(np.int64)
        zeros = np.log2(m & -m).astype(np.int64)  # trailing zero bits of the 53-bit integer mantissa
        self.excess = max(self.excess, int(exp.max()))
        shift = int((53 - exp - zeros).max())  # the largest power of two among the denominators
        if shift > 0:
            self.denominators.add(1 << shift)

    def _text(self, x: str) -> None:
        m = _RATIONAL.match(x)
        if m is not None:
            num, den = m.group(1), m.group(2)
            nb = _digits_bits(len(num.lstrip("0")))
            if den is None:
                self.excess = max(self.excess, nb)
                return
            den = den.lstrip("0")
            if len(den) > 4 * LCM_BITS_CAP // 3:
                self.overflow = True
                return
            self.excess = max(self.excess, nb - _digits_bits(len(den)) + 4)
            if den not in ("", "1"):
                self.denominators.add(den)  # a string: converted once per distinct denominator
            return
        m = _DECIMAL.match(x)
        if m is None or not (m.group(1) or m.group(2)):
            return  # not a number: the checker refuses it, at no cost
        intpart, frac, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
        digits = len((intpart + frac).lstrip("0"))
        shift = exp - len(frac)  # value = mantissa * 10**shift
        if abs(shift) > LCM_BITS_CAP:
            self.overflow = True
            return
        if shift >= 0:
            self.excess = max(self.excess, _digits_bits(digits + shift))
        else:
            self.excess = max(self.excess, _digits_bits(digits))
            self.denominators.add(10 ** -shift)

    def walk(self, value: Any, depth: int = 0) -> None:
        if depth > 64:
            return
        if isinstance(value, dict):
            for v in value.values():
                self.walk(v, depth + 1)
        elif isinstance(value, list):
            if value and all(isinstance(r, list) for r in value):
                if all(not isinstance(x, (list, dict)) for r in value for x in r):  # a matrix
                    self.rows = max(self.rows, len(value), max(len(r) for r in value))
                    self.matrices += 1
                    self.numbers([x for r in value for x in r])
                    return
            elif value and not any(isinstance(x, (list, dict)) for x in value):
                self.rows = max(self.rows, len(value))  # a vector: one column of a matrix
                self.numbers(value)
                return
            for v in value:
                self.walk(v, depth + 1)
        else:
            self.number(value)

    def lcm_bits(self, cap: int) -> int:
        """``bits(L)``, exactly up to ``cap`` (beyond it: ``cap + 1``, and :attr:`overflow` is set)."""
        dens = {int(q) for q in self.denominators}
        if sum(q.bit_length() for q in dens) <= cap:  # the product bounds the lcm: nothing to compute
            cap = math.inf
        lcm = 1
        for q in sorted(dens, key=lambda q: q.bit_length()):
            lcm = math.lcm(lcm, q)
            if lcm.bit_length() > cap:
                self.overflow = True
                return int(cap) + 1
        return lcm.bit_length()


def _cost(n: int, b: int) -> tuple[float, float]:
    m = min(n, EXACT_ROWS)
    seconds = SECONDS_PER_UNIT * m ** 3.3 * b ** 1.4
    peak = m ** 3 * b / 8
    if n > m:
        words = (b + CONGRUENCE_BITS) / 64
        seconds += SECONDS_PER_WORD_OP * n ** 3 * words
        peak += 4 * n * n * words * 8
    return seconds, peak


def _inner_rows(value: Any) -> tuple[int, int] | None:
    """``(d, k)`` of a factored form ``{"factors": [L, R]}`` (d rows of L, k columns), else None."""
    fs = value.get("factors") if isinstance(value, dict) else None
    L = fs[0] if isinstance(fs, list) and len(fs) == 2 else None
    if not (isinstance(L, list) and L and isinstance(L[0], list)):
        return None
    return len(L), len(L[0])


def _structured(data: Any) -> Cost | None:
    r"""The cost of a certificate whose matrices are all factored (``{"factors": [L, R]}``, :math:`d\times k`
    factors) or diagonal (``{"diagonal": [...]}``), None when any is dense. Its checker multiplies factors by
    vectors and forms :math:`k\times k` Gram matrices (:math:`dk^2` products of :math:`b`-bit integers) and
    decides :math:`k\times k` conditions of :math:`3b`-bit entries, or reads a diagonal entry by entry: no
    :math:`d\times d` exact matrix is formed (:mod:`flowcert.certificates.lowrank`, :mod:`.diagonal`)."""
    if not isinstance(data, dict):
        return None
    values = list(data.values())
    shapes = [_inner_rows(v) for v in values if isinstance(v, dict) and "factors" in v]
    if not shapes and not any(isinstance(v, dict) and "diagonal" in v for v in values):
        return None
    if any(s is None for s in shapes) or any(isinstance(v, list) and v and isinstance(v[0], list) for v in values):
        return None  # a malformed factored form, or a dense matrix beside: the generic estimate
    scan = _Scan()
    for v in values:  # the bits of every number; a factor counts as numbers, not as a d x d matrix
        if isinstance(v, dict):
            for x in v.values():
                for part in (x if isinstance(x, list) and x and isinstance(x[0], list) and isinstance(x[0][0], list) else [x]):
                    scan.numbers([y for r in part for y in r] if isinstance(part, list) and part and isinstance(part[0], list)
                                 else part if isinstance(part, list) else [part])
        elif isinstance(v, list):
            scan.numbers([y for y in v if not isinstance(y, (list, dict))])
        else:
            scan.number(v)
    if scan.overflow:
        return Cost(math.inf, math.inf, 0, LCM_BITS_CAP, True)
    d, k = max(shapes, default=(1, 1))
    b = max(scan.excess + scan.lcm_bits(LCM_BITS_CAP) + 1, 1)
    words = (b + CONGRUENCE_BITS) / 64
    small_t, small_p = _cost(k, 3 * b) if "u" in data else (0.0, 0.0)  # k x k conditions: a norm bound only
    products = d * k * k if "u" in data else d * k  # Gram matrices, or factors times a vector (or one entry pair)
    seconds = SECONDS_PER_NUMBER * 2 * d * k + SECONDS_PER_WORD_OP * 4 * products * words + small_t
    return Cost(seconds, 16 * d * k * words * 8 + small_p, k, b)


def estimate(data: Any, seconds: float = math.inf, peak_bytes: float = math.inf) -> Cost:
    """The cost of re-checking a certificate whose ``data`` (a JSON value) are given (see the module docstring).

    The common denominator is computed only as far as the budget ``seconds`` / ``peak_bytes`` needs: once the
    estimate passes it, it stops (what it returns is then a lower bound, already over the budget). Data whose
    matrices are factored or diagonal are priced by :func:`_structured`."""
    low = _structured(data)
    if low is not None:
        return low
    scan = _Scan()
    scan.walk(data)
    if scan.overflow:  # a number whose digits alone are past any budget
        return Cost(math.inf, math.inf, scan.rows, LCM_BITS_CAP, True)
    n = max(scan.rows, 1)
    lo, hi = 1, LCM_BITS_CAP  # the largest lcm bits within the budget (monotone: bisection on _cost)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        t, p = _cost(n, _entry_bits(scan, n, mid))
        lo, hi = (mid, hi) if t <= seconds and p <= peak_bytes else (lo, mid - 1)
    lcm = scan.lcm_bits(lo)
    b = _entry_bits(scan, n, lcm)
    t, p = _cost(n, b)
    return Cost(t, p, n, b, scan.overflow)


def _entry_bits(scan: _Scan, n: int, lcm: int) -> int:
    b = max(scan.excess + lcm + 1, 1)
    if scan.matrices >= 2:  # products of two matrices (J^T P + P J) before the decision
        b = 2 * b + n.bit_length()
    return b


def exceeds(data: Any, seconds: float, peak_bytes: float) -> Cost | None:
    """The estimate of :func:`estimate` when it is over ``seconds`` or ``peak_bytes``, else None."""
    cost = estimate(data, seconds, peak_bytes)
    return cost if cost.seconds > seconds or cost.bytes > peak_bytes else None
