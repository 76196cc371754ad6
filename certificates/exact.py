r"""Exact and rigorously rounded definiteness checks.

What this module decides, for a real symmetric matrix :math:`M \in \mathbb{Q}^{n\times n}`
(floating-point data is taken as the exact rational it denotes):

* the inertia :math:`(n_+, n_-, n_0)` of :math:`M`, by an exact symmetric factorisation
  :math:`\Pi M \Pi^\top = L D L^\top` over :math:`\mathbb{Q}` with :math:`1\times 1` and
  :math:`2\times 2` pivots (Sylvester's law of inertia), hence whether
  :math:`M \succ 0`, :math:`M \succeq 0`, :math:`M \preceq 0`, :math:`M \prec 0`, or indefinite;
* :math:`M - \mu I \succ 0` and :math:`M - \mu I \succeq 0` for a rational margin :math:`\mu`,
  each refuted by an exact rational witness :math:`v \neq 0` with
  :math:`v^\top (M - \mu I) v < 0` (or :math:`= 0` with :math:`(M-\mu I)v = 0`), which is
  re-checked in exact arithmetic before it is returned;
* for larger float64 matrices, a *sufficient* test: if a floating-point Cholesky
  factorisation of :math:`M - cI` runs to completion, with :math:`c` an a-priori bound on the
  backward error of that very algorithm, then :math:`M \succ 0`
  (:func:`is_pd_float_rigorous`; it may answer ``False`` for a positive definite matrix,
  never ``True`` for one that is not).

Rational arithmetic uses ``python-flint`` (``fmpq``) when it is importable and
:class:`fractions.Fraction` otherwise; the public API speaks :class:`~fractions.Fraction`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Literal, Sequence

import numpy as np

try:  # pragma: no cover - exercised implicitly depending on the environment
    import flint as _flint

    _fmpq: Any = _flint.fmpq
    _fmpz: Any = _flint.fmpz
except ImportError:  # pragma: no cover
    _flint = None
    _fmpq = None
    _fmpz = None

__all__ = [
    "LDLResult",
    "Status",
    "HAVE_FLINT",
    "to_rational",
    "round_rational",
    "ldl_inertia",
    "is_pd_exact",
    "is_psd_exact",
    "is_pd_float_rigorous",
    "float_shift_bound",
]

HAVE_FLINT: bool = _fmpq is not None

Status = Literal["pd", "psd", "nd", "nsd", "indefinite", "zero"]
RationalMatrix = list[list[Fraction]]


# --------------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------------


def _scalar_to_fraction(x: Any) -> Fraction:
    """Exact rational value of one real scalar; NaN/inf raise ``ValueError``."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if _fmpq is not None and isinstance(x, _fmpq):
        return Fraction(int(x.p), int(x.q))
    if _fmpz is not None and isinstance(x, _fmpz):
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
    return [[_scalar_to_fraction(x) for x in r] for r in rows]


def round_rational(M: Any, bits: int = 30, *, symmetrize: bool = False) -> RationalMatrix:
    r"""Round every entry to the nearest dyadic rational :math:`k / 2^{\text{bits}}`.

    Used to simplify a solver's floating-point output before it is re-checked exactly: the
    rounded matrix is the candidate certificate, and the exact check is done on *it*.

    Parameters
    ----------
    M : array_like
        Matrix accepted by :func:`to_rational`.
    bits : int, default 30
        Number of fractional bits kept; ``bits >= 0``.
    symmetrize : bool, default False
        If True, round :math:`(M + M^\top)/2` (computed exactly) instead of :math:`M`, so the
        result is exactly symmetric even when ``M`` is symmetric only up to rounding.

    Returns
    -------
    list of list of Fraction
        Entries :math:`\operatorname{round}(2^{b} m_{ij}) / 2^{b}` (ties to even), each within
        :math:`2^{-b-1}` of the exact entry.

    Raises
    ------
    ValueError
        On NaN/inf entries, negative ``bits``, or a non-square ``M`` with ``symmetrize``.
    """
    if bits < 0:
        raise ValueError("bits must be non-negative")
    Q = to_rational(M)
    if symmetrize:
        n = len(Q)
        if any(len(r) != n for r in Q):
            raise ValueError("symmetrize needs a square matrix")
        Q = [[(Q[i][j] + Q[j][i]) / 2 for j in range(n)] for i in range(n)]
    scale = 1 << bits
    return [[Fraction(round(q * scale), scale) for q in r] for r in Q]


# --------------------------------------------------------------------------------------------
# Exact LDL^T with 1x1 / 2x2 diagonal pivoting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LDLResult:
    r"""Outcome of :func:`ldl_inertia`.

    Attributes
    ----------
    status : {"pd", "psd", "nd", "nsd", "indefinite", "zero"}
        Definiteness class of :math:`M`, from the exact inertia.
    n_pos, n_neg, n_zero : int
        The inertia of :math:`M` (numbers of positive, negative and zero eigenvalues).
    order : tuple of int
        Pivot order :math:`\Pi` (original indices); trailing indices form the zero block.
    pivots : tuple of Fraction or None
        The diagonal of :math:`D` in pivot order when only :math:`1\times 1` pivots were
        used, one per non-zero pivot (length :math:`n - n_0`).  When :math:`M \succ 0`,
        ``order`` is the identity and ``pivots[k]`` is the ratio of consecutive leading
        principal minors.  ``None`` when a :math:`2\times 2` pivot was needed.
    witness : tuple of Fraction or None
        When :math:`n_- > 0`: an integer-valued vector :math:`v` with
        :math:`v^\top M v < 0`, verified exactly.
    witness_value : Fraction or None
        :math:`v^\top M v` for ``witness``.
    kernel_vector : tuple of Fraction or None
        When :math:`n_0 > 0`: an integer-valued :math:`v \neq 0` with :math:`M v = 0`,
        verified exactly.
    """

    status: Status
    n_pos: int
    n_neg: int
    n_zero: int
    order: tuple[int, ...]
    pivots: tuple[Fraction, ...] | None
    witness: tuple[Fraction, ...] | None = None
    witness_value: Fraction | None = None
    kernel_vector: tuple[Fraction, ...] | None = None

    @property
    def is_pd(self) -> bool:
        """True iff the matrix is positive definite."""
        return self.status == "pd"

    @property
    def is_psd(self) -> bool:
        """True iff the matrix is positive semidefinite."""
        return self.n_neg == 0


def _field() -> tuple[Callable[[Fraction], Any], Callable[[Any], Fraction]]:
    """Converters Fraction -> working field element and back."""
    if _fmpq is not None:
        return (lambda q: _fmpq(q.numerator, q.denominator)), (
            lambda x: Fraction(int(x.p), int(x.q))
        )
    return (lambda q: q), (lambda x: x)


def _square_symmetric(Q: RationalMatrix) -> int:
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


def _quad_form(Q: RationalMatrix, v: Sequence[Fraction]) -> Fraction:
    """Exact :math:`v^\\top Q v` in Fractions (independent of the factorisation)."""
    n = len(v)
    Mv = [sum((Q[i][j] * v[j] for j in range(n) if v[j]), Fraction(0)) for i in range(n)]
    return sum((v[i] * Mv[i] for i in range(n) if v[i]), Fraction(0))


def _mat_vec(Q: RationalMatrix, v: Sequence[Fraction]) -> list[Fraction]:
    n = len(v)
    return [sum((Q[i][j] * v[j] for j in range(n) if v[j]), Fraction(0)) for i in range(n)]


def _integerize(v: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """Scale a rational vector by a positive number so its entries are coprime integers."""
    den = 1
    for x in v:
        den = den * x.denominator // math.gcd(den, x.denominator)
    ints = [int(x * den) for x in v]
    g = 0
    for k in ints:
        g = math.gcd(g, k)
    g = g or 1
    return tuple(Fraction(k // g) for k in ints)


def ldl_inertia(M: Any) -> LDLResult:
    r"""Exact inertia of a symmetric rational matrix by :math:`LDL^\top` with diagonal pivoting.

    The factorisation :math:`\Pi M \Pi^\top = L D L^\top` is computed over :math:`\mathbb{Q}`
    with :math:`L` unit lower triangular and :math:`D` block diagonal.  At each step the first
    non-zero diagonal entry of the current Schur complement is the pivot; if all its
    diagonal entries are zero but some off-diagonal entry :math:`s_{pq} \ne 0` is not, the
    :math:`2\times 2` block :math:`\begin{pmatrix}0 & s_{pq}\\ s_{pq} & 0\end{pmatrix}` (one
    positive and one negative eigenvalue) is the pivot; if the Schur complement is zero the
    remaining indices are the zero block.  By Sylvester's law of inertia the signs of
    :math:`D` are the inertia of :math:`M`.

    Parameters
    ----------
    M : array_like
        Square, exactly symmetric matrix, in any form :func:`to_rational` accepts (floats
        are used as the exact rationals they denote).

    Returns
    -------
    LDLResult
        Status, inertia, pivot order, pivots (when all :math:`1\times1`), and exact witnesses:
        ``witness`` with :math:`v^\top M v < 0` whenever :math:`n_- > 0` and
        ``kernel_vector`` with :math:`Mv = 0` whenever :math:`n_0 > 0`.

    Raises
    ------
    ValueError
        If ``M`` is empty, not square, not exactly symmetric, or has NaN/inf entries.

    Notes
    -----
    Witnesses come from the factorisation: with :math:`y` a unit vector on a negative (or
    zero) pivot, or :math:`(1, -\operatorname{sign} s_{pq})` on a :math:`2\times2` block,
    :math:`v = \Pi^\top L^{-\top} y` satisfies :math:`v^\top M v = y^\top D y`.  Each witness
    is then re-checked against the input in plain :class:`~fractions.Fraction` arithmetic,
    independently of the factorisation; a failed re-check raises ``AssertionError`` (it would
    be a bug, never silently a wrong answer).
    """
    Q = to_rational(M)
    n = _square_symmetric(Q)
    to_f, from_f = _field()
    zero = to_f(Fraction(0))
    W = [[to_f(x) for x in r] for r in Q]
    L: dict[int, dict[int, Any]] = {}  # L[i][p]: multiplier of pivot column p in row i
    remaining = list(range(n))
    order: list[int] = []
    blocks: list[tuple[int, ...]] = []
    dvals: list[Any] = []  # 1x1 block (p,): the pivot d; 2x2 block (p, q): the off-diagonal b

    while remaining:
        p = next((i for i in remaining if W[i][i] != 0), None)
        if p is not None:
            piv = W[p][p]
            rest = [i for i in remaining if i != p]
            col = {i: W[i][p] for i in rest if W[i][p] != 0}
            for i, wip in col.items():
                li = wip / piv
                L.setdefault(i, {})[p] = li
                Wi = W[i]
                Wp = W[p]
                for j in rest:
                    wpj = Wp[j]
                    if wpj != 0:
                        Wi[j] = Wi[j] - li * wpj
            order.append(p)
            blocks.append((p,))
            dvals.append(piv)
            remaining = rest
            continue
        pair = next(
            ((i, j) for ii, i in enumerate(remaining) for j in remaining[ii + 1 :] if W[i][j] != 0),
            None,
        )
        if pair is None:
            break  # the Schur complement is zero
        p, q = pair
        b = W[p][q]  # block [[0, b], [b, 0]], inverse [[0, 1/b], [1/b, 0]]
        rest = [i for i in remaining if i not in (p, q)]
        for i in rest:
            wip, wiq = W[i][p], W[i][q]
            if wip == 0 and wiq == 0:
                continue
            lp, lq = wiq / b, wip / b  # (w_ip, w_iq) E^{-1}
            row = L.setdefault(i, {})
            row[p], row[q] = lp, lq
            Wi, Wp, Wq = W[i], W[p], W[q]
            for j in rest:
                Wi[j] = Wi[j] - lp * Wp[j] - lq * Wq[j]
        order.extend((p, q))
        blocks.append((p, q))
        dvals.append(b)
        remaining = rest

    zero_block = list(remaining)
    full_order = order + zero_block
    n_pos = n_neg = 0
    for blk, d in zip(blocks, dvals):
        if len(blk) == 1:
            if d > 0:
                n_pos += 1
            else:
                n_neg += 1
        else:
            n_pos += 1
            n_neg += 1
    n_zero = len(zero_block)

    if n_neg == 0 and n_zero == 0:
        status: Status = "pd"
    elif n_pos == 0 and n_zero == 0:
        status = "nd"
    elif n_pos == 0 and n_neg == 0:
        status = "zero"
    elif n_neg == 0:
        status = "psd"
    elif n_pos == 0:
        status = "nsd"
    else:
        status = "indefinite"

    pivots = None
    if all(len(b) == 1 for b in blocks):
        pivots = tuple(from_f(d) for d in dvals)

    # Column view of L: cols[j] = [(i, L[i][j]), ...]; row i is always eliminated after j.
    cols: dict[int, list[tuple[int, Any]]] = {}
    for i, row in L.items():
        for j, lij in row.items():
            cols.setdefault(j, []).append((i, lij))

    def back_substitute(y: dict[int, Any]) -> tuple[Fraction, ...]:
        # Solve L^T x = y in reverse pivot order: x_j = y_j - sum_{i after j} L[i][j] x_i.
        x: dict[int, Any] = {}
        for j in reversed(full_order):
            s = y.get(j, zero)
            for i, lij in cols.get(j, ()):
                s = s - lij * x[i]
            x[j] = s
        return _integerize([from_f(x[i]) for i in range(n)])

    witness = witness_value = kernel = None
    if n_neg > 0:
        one = to_f(Fraction(1))
        # First negative direction: a negative 1x1 pivot, or a 2x2 block [[0, b], [b, 0]]
        # with y = (1, -sign b), for which y^T D y = -2|b| < 0.
        k = next(t for t, blk in enumerate(blocks) if len(blk) == 2 or dvals[t] < 0)
        if len(blocks[k]) == 1:
            y = {blocks[k][0]: one}
        else:
            p, q = blocks[k]
            y = {p: one, q: (-one if dvals[k] > 0 else one)}
        witness = back_substitute(y)
        witness_value = _quad_form(Q, witness)
        if not witness_value < 0:  # pragma: no cover - would be a bug
            raise AssertionError("internal error: LDL witness failed its exact re-check")
    if n_zero > 0:
        kernel = back_substitute({zero_block[0]: to_f(Fraction(1))})
        if any(kernel_i != 0 for kernel_i in _mat_vec(Q, kernel)) or not any(kernel):
            raise AssertionError("internal error: kernel vector failed its exact re-check")

    return LDLResult(
        status=status,
        n_pos=n_pos,
        n_neg=n_neg,
        n_zero=n_zero,
        order=tuple(full_order),
        pivots=pivots,
        witness=witness,
        witness_value=witness_value,
        kernel_vector=kernel,
    )


def _shifted(M: Any, margin: Any) -> RationalMatrix:
    Q = to_rational(M)
    mu = _scalar_to_fraction(margin)
    if mu != 0:
        _square_symmetric(Q)
        Q = [[x - mu if i == j else x for j, x in enumerate(r)] for i, r in enumerate(Q)]
    return Q


def is_pd_exact(M: Any, margin: Any = 0) -> tuple[bool, tuple[Fraction, ...] | None]:
    r"""Decide :math:`M - \mu I \succ 0` exactly.

    Parameters
    ----------
    M : array_like
        Square, exactly symmetric matrix (see :func:`to_rational`).
    margin : int, float or rational, default 0
        The margin :math:`\mu`, taken exactly.

    Returns
    -------
    holds : bool
        True iff :math:`M - \mu I` is positive definite.
    witness : tuple of Fraction or None
        ``None`` when ``holds``; otherwise an integer-valued :math:`v \ne 0` with
        :math:`v^\top (M - \mu I) v < 0` if :math:`M - \mu I` has a negative eigenvalue, or
        with :math:`(M - \mu I) v = 0` if it is singular and positive semidefinite.

    Raises
    ------
    ValueError
        As :func:`ldl_inertia`.
    """
    Q = _shifted(M, margin)
    if len(Q) > FAST_PATH_MIN_DIM and is_pd_rounded(Q):
        return True, None
    res = ldl_inertia(Q)
    if res.status == "pd":
        return True, None
    return False, (res.witness if res.witness is not None else res.kernel_vector)


def is_psd_exact(M: Any, margin: Any = 0) -> tuple[bool, tuple[Fraction, ...] | None]:
    r"""Decide :math:`M - \mu I \succeq 0` exactly.

    Parameters
    ----------
    M : array_like
        Square, exactly symmetric matrix (see :func:`to_rational`).
    margin : int, float or rational, default 0
        The margin :math:`\mu`, taken exactly.

    Returns
    -------
    holds : bool
        True iff :math:`M - \mu I` is positive semidefinite.
    witness : tuple of Fraction or None
        ``None`` when ``holds``; otherwise an integer-valued :math:`v` with
        :math:`v^\top (M - \mu I) v < 0`.

    Raises
    ------
    ValueError
        As :func:`ldl_inertia`.
    """
    Q = _shifted(M, margin)
    if len(Q) > FAST_PATH_MIN_DIM and is_pd_rounded(Q):
        return True, None
    res = ldl_inertia(Q)
    if res.n_neg == 0:
        return True, None
    return False, res.witness


# --------------------------------------------------------------------------------------------
# Floating-point rigorous positive-definiteness test
# --------------------------------------------------------------------------------------------

_U = Fraction(1, 2**53)  # unit roundoff of binary64, rounding to nearest
_ETA = Fraction(1, 2**1074)  # smallest positive subnormal (bound on underflow errors)


def _fp_environment_ok() -> bool:
    """Probe that numpy float64 arithmetic rounds to nearest with gradual underflow.

    The error model of :func:`is_pd_float_rigorous` assumes IEEE round-to-nearest and
    subnormal numbers; a library may have switched the FPU to flush-to-zero /
    denormals-are-zero or to a directed rounding mode, in which case we refuse to certify.
    """
    k = 16  # long enough to take numpy's vectorised loops
    one = np.ones(k)
    tiny = np.full(k, 2.0**-1074)
    small = np.full(k, 2.0**-1022)
    with np.errstate(all="ignore"):
        checks = (
            np.all(tiny * one == 2.0**-1074),  # DAZ would give 0
            np.all(small * 0.5 == 2.0**-1023),  # FTZ on multiply
            np.all(small * 1.5 - small == 2.0**-1023),  # FTZ on subtract
            np.all(small / 4.0 == 2.0**-1024),  # FTZ on divide
            np.all(one + 2.0**-53 == 1.0),  # to nearest (ties to even), not upward
            np.all(one + 3 * 2.0**-54 == 1.0 + 2.0**-52),  # not downward / toward zero
            np.all(-one - 3 * 2.0**-54 == -1.0 - 2.0**-52),  # not upward / toward zero
            np.all(np.sqrt(np.full(k, 2.0)) == math.sqrt(2.0)),
        )
    return bool(all(checks))


def _round_down(q: Fraction) -> float:
    """Largest float64 <= q (raises OverflowError if q is below -max float)."""
    f = float(q)  # correctly rounded in CPython
    if Fraction(f) > q:
        f = float(np.nextafter(f, -np.inf))
    return f


def _round_up(q: Fraction) -> float:
    """Smallest float64 >= q (may be inf)."""
    try:
        f = float(q)
    except OverflowError:
        return math.inf
    if math.isfinite(f) and Fraction(f) < q:
        f = float(np.nextafter(f, np.inf))
    return f


def float_shift_bound(diag: Sequence[float]) -> Fraction:
    r"""The shift :math:`c` used by :func:`is_pd_float_rigorous`, as an exact rational.

    Parameters
    ----------
    diag : sequence of float
        The (positive) diagonal of the matrix to be tested, of length :math:`n`.

    Returns
    -------
    Fraction
        :math:`c = \max(2 c_1, c_2)` with (:math:`u = 2^{-53}`, :math:`\eta = 2^{-1074}`,
        :math:`g = \gamma_{n+1} = (n+1)u / (1-(n+1)u)`, :math:`a = \max_i a_{ii}`)

        .. math::
            c_1 = \frac{g}{1-g}\,(\operatorname{tr} A + 3n^2\eta)
                  + n(1+g)\,\eta\,\Bigl(2n + 1 + \frac{a + 3n\eta}{1-g}\Bigr),
            \qquad
            c_2 = \sum_{i=1}^n (i+2)\,u\,a_{ii} + 6n(n + a)\,\eta .

        :math:`c_1` is derived in :func:`is_pd_float_rigorous`; :math:`c_2` is the shift of
        INTLAB's ``isspd`` (Rump 2006) for a dense matrix.
    """
    n = len(diag)
    d = [_scalar_to_fraction(x) for x in diag]
    g = (n + 1) * _U / (1 - (n + 1) * _U)
    tr = sum(d, Fraction(0))
    amax = max(d)
    c1 = g / (1 - g) * (tr + 3 * n * n * _ETA) + n * (1 + g) * _ETA * (
        2 * n + 1 + (amax + 3 * n * _ETA) / (1 - g)
    )
    c2 = sum(((i + 3) * _U * d[i] for i in range(n)), Fraction(0)) + 6 * n * (n + amax) * _ETA
    return max(2 * c1, c2)


def _float_cholesky(A: np.ndarray) -> np.ndarray | None:
    r"""Right-looking floating-point Cholesky :math:`A \approx R^\top R`; None if it breaks down.

    Entry :math:`(i, j)`, :math:`i \le j`, is updated by :math:`s \leftarrow
    \mathrm{fl}(s - \mathrm{fl}(r_{ki} r_{kj}))` for :math:`k = 1, \dots, i-1` in this order,
    then :math:`r_{ij} = \mathrm{fl}(s / r_{ii})` or :math:`r_{ii} = \mathrm{fl}(\sqrt{s})`:
    every operation is a separately rounded IEEE operation (numpy ufuncs), which is what the
    error analysis of :func:`is_pd_float_rigorous` assumes.  Returns the upper triangular
    :math:`R` when every pivot is positive and every computed value is finite.
    """
    B = np.array(A, dtype=np.float64, copy=True)
    n = B.shape[0]
    R = np.zeros_like(B)
    with np.errstate(all="ignore"):
        for k in range(n):
            s = B[k, k]
            if not (s > 0.0) or not math.isfinite(s):
                return None
            rkk = np.sqrt(s)
            row = B[k, k + 1 :] / rkk
            if not np.all(np.isfinite(row)):
                return None
            R[k, k] = rkk
            R[k, k + 1 :] = row
            # Every upper-triangular entry is later read as a pivot or in a row, so a
            # non-finite value produced here is caught by one of the two checks above.
            B[k + 1 :, k + 1 :] -= np.multiply.outer(row, row)
    return R


def _as_float64_exact(M: Any) -> np.ndarray:
    A = np.asarray(M)
    if A.dtype == object or np.iscomplexobj(A) or not (
        np.issubdtype(A.dtype, np.floating)
        or np.issubdtype(A.dtype, np.integer)
        or A.dtype == np.bool_
    ):
        raise TypeError(f"expected a real float64 array, got dtype {A.dtype}; use is_pd_exact")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError("empty matrix")
    with np.errstate(all="ignore"):
        F = A.astype(np.float64)
    if np.issubdtype(A.dtype, np.floating) and not np.all(np.isfinite(A)):
        raise ValueError("matrix has NaN or infinite entries")
    if not np.all(np.isfinite(F)) or not np.array_equal(F.astype(A.dtype), A):
        raise ValueError("matrix entries are not exactly representable in float64")
    if np.issubdtype(A.dtype, np.integer) and np.any(np.abs(F) > 2.0**53):
        raise ValueError("integer entries beyond 2**53 are not exactly representable in float64")
    if not np.array_equal(F, F.T):
        raise ValueError("matrix is not exactly symmetric")
    return F


def is_pd_float_rigorous(M: np.ndarray, margin: float | Fraction = 0.0) -> bool:
    r"""Sufficient floating-point test for :math:`M - \mu I \succ 0` (never a false True).

    ``M`` (float64, exactly symmetric) is taken as exact data.  ``True`` is a proof that
    :math:`M - \mu I` is positive definite; ``False`` means "not proved" (the matrix may be
    indefinite, singular, or merely too ill-conditioned for the test).

    Parameters
    ----------
    M : numpy.ndarray
        Square, exactly symmetric, finite, real matrix; values must be exactly
        representable in float64 (float16/32/64 and integers up to :math:`2^{53}` are).
    margin : float, default 0.0
        :math:`\mu`, taken exactly.

    Returns
    -------
    bool
        True only if :math:`M - \mu I \succ 0` is proved.

    Raises
    ------
    ValueError
        If ``M`` is empty, non-square, not exactly symmetric, or has NaN/inf entries.
    TypeError
        For object or complex arrays (use :func:`is_pd_exact`).

    Notes
    -----
    Steps: (1) :math:`A = \mathrm{fl}_\downarrow(M - \mu I)` (diagonal rounded down, so
    :math:`M - \mu I \succeq A`); (2) exact van der Sluis scaling :math:`B = DAD` with
    :math:`D` a diagonal of powers of two (kept only if it is exact, which is re-checked);
    (3) :math:`\tilde B = \mathrm{fl}_\downarrow(B - cI)` with :math:`c` from
    :func:`float_shift_bound` rounded up; (4) ``True`` iff the right-looking Cholesky
    :func:`_float_cholesky` of :math:`\tilde B` runs to completion with finite values.

    Why (4) proves :math:`B \succ 0`.  Model: each ufunc operation gives
    :math:`\mathrm{fl}(x \circ y) = (x\circ y)(1+\delta) + \epsilon`, :math:`|\delta|\le u`,
    :math:`|\epsilon| \le \eta` (gradual underflow; :math:`\sqrt{\cdot}` of a positive float
    does not underflow).  Unrolling the recursive update of entry :math:`(i,j)` as in
    Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Lemma 8.4 and
    Thm 10.3, with the underflow terms carried along, the computed :math:`R` satisfies
    :math:`R^\top R = \tilde B + \Delta` with

    .. math::
        |\Delta_{ij}| \le g\,(|R|^\top |R|)_{ij} + (1+g)\,\eta\,(2n + r_{\max}),
        \qquad g = \gamma_{n+1},

    (:math:`2n` counts the at most :math:`n-1` products and :math:`n-1` subtractions, and the
    division contributes :math:`r_{ii}\eta`).  Hence :math:`\|\Delta\|_2 \le g\|R\|_F^2 +
    n(1+g)\eta(2n + r_{\max})`, and from the diagonal,
    :math:`\sum_k r_{ki}^2 \le (\tilde b_{ii} + 3n\eta)/(1-g)`, so
    :math:`\|R\|_F^2 \le (\operatorname{tr} B + 3n^2\eta)/(1-g)` and
    :math:`r_{\max} \le 1 + r_{\max}^2 \le 1 + (\max_i b_{ii} + 3n\eta)/(1-g)`.  This is
    :math:`\|\Delta\|_2 \le c_1`.  Since the factorisation completed, :math:`R` has a
    positive diagonal and :math:`R^\top R \succ 0`, so

    .. math::
        B = R^\top R - \Delta + (B - cI - \tilde B) + cI \succ 0
        \quad\text{because } B - cI - \tilde B \succeq 0,\ cI - \Delta \succeq 0 .

    We use :math:`c \ge \max(2c_1, c_2)`: the factor 2 is a safety margin against slips in
    the argument above, and :math:`c_2` is the shift of INTLAB's ``isspd``, which implements
    S. M. Rump, "Verification of positive definiteness", *BIT Numer. Math.* 46 (2006)
    433-452 (there for any floating-point Cholesky; here for the algorithm above), so the
    test is valid if either derivation is.  In effect the test proves :math:`M \succ 0`
    whenever :math:`\lambda_{\min}(DMD)` exceeds about :math:`2(n+1)u\operatorname{tr}(DMD)`.

    Before computing anything, :func:`_fp_environment_ok` probes that numpy arithmetic
    rounds to nearest with gradual underflow; otherwise the answer is ``False``.  Cost:
    :math:`n` numpy rank-one updates, :math:`O(n^3)` flops.
    """
    A = _as_float64_exact(M)
    n = A.shape[0]
    if not math.isfinite(float(margin)):
        raise ValueError("margin must be finite")
    if not _fp_environment_ok():
        return False
    if (n + 1) * _U >= Fraction(1, 100):
        return False  # far outside any practical size; the bound would be meaningless

    A = A.copy()
    mu = _scalar_to_fraction(margin)
    if mu != 0:
        try:
            for i in range(n):
                A[i, i] = _round_down(Fraction(A[i, i]) - mu)
        except OverflowError:
            return False
        if not np.all(np.isfinite(np.diag(A))):
            return False
    d = np.diag(A).copy()
    if not np.all(d > 0):
        return False

    # Exact power-of-two (van der Sluis) scaling: D A D with D_ii ~ d_i^{-1/2}.
    # S_ij = s_i s_j is an exact power of two (|exponents| <= 1022), so B = fl(A * S) has one
    # rounding per entry, which is exact unless it underflows or overflows; an inexact
    # entry cannot survive the exact back-scaling B / S unchanged, hence the check.
    _, e = np.frexp(d)
    s = np.ldexp(1.0, np.clip(-(e // 2), -511, 511))
    S = np.multiply.outer(s, s)
    with np.errstate(all="ignore"):
        B = A * S
        back = B / S
    if not (np.all(np.isfinite(B)) and np.array_equal(back, A) and np.array_equal(B, B.T)):
        B = A  # scaling was not exact: test A itself

    dB = np.diag(B).copy()
    c = _round_up(float_shift_bound(dB.tolist()))
    if not math.isfinite(c):
        return False
    Bt = B.copy()
    try:
        for i in range(n):
            Bt[i, i] = _round_down(Fraction(dB[i]) - Fraction(c))
    except OverflowError:
        return False
    return _float_cholesky(Bt) is not None


FAST_PATH_MIN_DIM = 12  # below this, exact LDL^T is already cheap


def is_pd_rounded(M: Any) -> bool:
    r"""Sufficient test for :math:`Q\succ0` (Q exact rational, symmetric), never a false True.

    :math:`F` is the entrywise nearest float64 of :math:`Q` (symmetric, since rounding is
    deterministic) and :math:`\delta=\max_i\sum_j|Q_{ij}-F_{ij}|\ge\|Q-F\|_2` is computed in
    exact rationals; then :math:`Q\succeq F-\delta I\succ0` by :func:`is_pd_float_rigorous`.
    Cost :math:`O(n^3)` flops instead of exact pivots whose numbers grow with :math:`n`; used
    before the exact :math:`LDL^\top` by :func:`is_pd_exact` and :func:`is_psd_exact` (a
    ``False`` here only means "not proved").
    """
    Q = to_rational(M)
    n = _square_symmetric(Q)
    try:
        F = np.array([[float(q) for q in row] for row in Q], dtype=np.float64)
    except OverflowError:
        return False
    if not np.all(np.isfinite(F)):
        return False
    delta = max(sum((abs(q - Fraction(f)) for q, f in zip(row, frow)), Fraction(0))
                for row, frow in zip(Q, F.tolist()))
    try:
        return is_pd_float_rigorous(F, delta) if n else False
    except ValueError:
        return False
