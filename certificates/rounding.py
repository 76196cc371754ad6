r"""Rigorously rounded definiteness: a float64 Cholesky whose success proves :math:`M\succ0`.

If a floating-point Cholesky factorisation of :math:`M-cI` runs to completion, with
:math:`c` an a-priori bound on the backward error of that very algorithm
(:math:`|\Delta M|\le\gamma_{n+1}|R^\top||R|`, :math:`\gamma_k=ku/(1-ku)`, :math:`u=2^{-53}`;
Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 10.3, plus underflow terms),
then :math:`M\succ0` (:func:`is_pd_float_rigorous`; it may answer ``False`` for a positive
definite matrix, never ``True`` for one that is not). :func:`is_pd_rounded` tries it before the
exact :math:`LDL^\top` of :mod:`flowcert.certificates.exact`. Shared by every system's certificates.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .rationals import scalar_to_fraction, square_symmetric, to_rational

UNIT_ROUNDOFF = Fraction(1, 2**53)  # unit roundoff of binary64, rounding to nearest
MIN_SUBNORMAL = Fraction(1, 2**1074)  # smallest positive subnormal (bound on underflow errors)


def fp_environment_ok() -> bool:
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
    d = [scalar_to_fraction(x) for x in diag]
    g = (n + 1) * UNIT_ROUNDOFF / (1 - (n + 1) * UNIT_ROUNDOFF)
    tr = sum(d, Fraction(0))
    amax = max(d)
    c1 = g / (1 - g) * (tr + 3 * n * n * MIN_SUBNORMAL) + n * (1 + g) * MIN_SUBNORMAL * (
        2 * n + 1 + (amax + 3 * n * MIN_SUBNORMAL) / (1 - g)
    )
    c2 = sum(((i + 3) * UNIT_ROUNDOFF * d[i] for i in range(n)), Fraction(0)) + 6 * n * (n + amax) * MIN_SUBNORMAL
    return max(2 * c1, c2)


def float_cholesky(A: np.ndarray) -> np.ndarray | None:
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
    :func:`float_cholesky` of :math:`\tilde B` runs to completion with finite values.

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

    Before computing anything, :func:`fp_environment_ok` probes that numpy arithmetic
    rounds to nearest with gradual underflow; otherwise the answer is ``False``.  Cost:
    :math:`n` numpy rank-one updates, :math:`O(n^3)` flops.
    """
    A = _as_float64_exact(M)
    n = A.shape[0]
    if not math.isfinite(float(margin)):
        raise ValueError("margin must be finite")
    if not fp_environment_ok():
        return False
    if (n + 1) * UNIT_ROUNDOFF >= Fraction(1, 100):
        return False  # far outside any practical size; the bound would be meaningless

    A = A.copy()
    mu = scalar_to_fraction(margin)
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
    return float_cholesky(Bt) is not None


FAST_PATH_MIN_DIM = 12  # below this, exact LDL^T is already cheap


def rounding_bound(F: np.ndarray) -> Fraction:
    r"""An exact rational :math:`\delta\ge\max_i\sum_j|Q_{ij}-F_{ij}|` for ``F`` the correctly rounded float of ``Q``.

    Round to nearest gives :math:`|q-\mathrm{fl}(q)|\le u|\mathrm{fl}(q)|+\eta/2` (``float`` of a
    :class:`~fractions.Fraction` is correctly rounded in CPython: integer true division). The row
    sums :math:`\hat S_i` of :math:`|F|` are computed in floating point, so
    :math:`S_i\le\hat S_i/(1-nu)\le\hat S_i(1+2nu)`; hence
    :math:`\delta=u(1+2nu)\max_i\hat S_i+n\eta` (evaluated exactly). :math:`O(n^2)` flops.
    """
    n = F.shape[0]
    S = float(np.abs(F).sum(axis=1).max()) if F.size else 0.0
    return UNIT_ROUNDOFF * (1 + 2 * n * UNIT_ROUNDOFF) * Fraction(S) + n * MIN_SUBNORMAL


def is_pd_rounded(M: Any) -> bool:
    r"""Sufficient test for :math:`Q\succ0` (Q exact rational, symmetric), never a false True.

    :math:`F` is the entrywise nearest float64 of :math:`Q` (symmetric, since rounding is
    deterministic) and :math:`\delta\ge\|Q-F\|_\infty\ge\|Q-F\|_2` is :func:`rounding_bound`
    (0 when ``M`` is a float array: no rounding); then :math:`Q\succeq F-\delta I\succ0` by
    :func:`is_pd_float_rigorous`. Cost :math:`O(n^3)` flops instead of exact pivots whose numbers
    grow with :math:`n`; used before the exact :math:`LDL^\top` by :func:`is_pd_exact` and
    :func:`is_psd_exact` (a ``False`` here only means "not proved").
    """
    if isinstance(M, np.ndarray) and M.dtype == np.float64:
        try:
            return is_pd_float_rigorous(M, 0.0) if M.size else False
        except ValueError:
            return False
    Q = to_rational(M)
    n = square_symmetric(Q)
    try:
        F = np.array([[float(q) for q in row] for row in Q], dtype=np.float64)
    except OverflowError:
        return False
    if not np.all(np.isfinite(F)):
        return False
    delta = rounding_bound(F)
    try:
        return is_pd_float_rigorous(F, delta) if n else False
    except ValueError:
        return False
