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
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Literal, Sequence

import numpy as np

from .pivot import inertia_low_rank
from .rationals import (HAVE_FLINT, RationalMatrix, float_matrix, flint, fmpq, fmpz,  # noqa: F401 (re-exported)
                        scalar_to_fraction, square_symmetric, to_rational)
from .rounding import (  # noqa: F401 (the rigorous float test is re-exported here)
    MIN_SUBNORMAL,
    UNIT_ROUNDOFF,
    FAST_PATH_MIN_DIM,
    float_cholesky,
    fp_environment_ok,
    float_shift_bound,
    is_pd_float_rigorous,
    is_pd_rounded,
    rounding_bound,
)

__all__ = [
    "LDLResult",
    "Status",
    "HAVE_FLINT",
    "to_rational",
    "round_rational",
    "ldl_inertia",
    "is_pd_exact",
    "is_psd_exact",
    "decide_definite",
    "float_witness",
    "inertia",
    "inertia_congruence",
    "inertia_charpoly",
    "is_pd_float_rigorous",
    "float_shift_bound",
]


Status = Literal["pd", "psd", "nd", "nsd", "indefinite", "zero"]


# --------------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------------


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
    if fmpq is not None:
        return (lambda q: fmpq(q.numerator, q.denominator)), (
            lambda x: Fraction(int(x.p), int(x.q))
        )
    return (lambda q: q), (lambda x: x)


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
    n = square_symmetric(Q)
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
    mu = scalar_to_fraction(margin)
    if mu != 0:
        square_symmetric(Q)
        Q = [[x - mu if i == j else x for j, x in enumerate(r)] for i, r in enumerate(Q)]
    return Q


def _exact_quad(Q: RationalMatrix, v: Sequence[Fraction]) -> Fraction:
    r""":math:`v^\top Qv` exactly (python-flint when present)."""
    if flint is None:
        return _quad_form(Q, v)
    n = len(v)
    Qm = flint.fmpq_mat(n, n, [fmpq(x.numerator, x.denominator) for r in Q for x in r])
    vm = flint.fmpq_mat(n, 1, [fmpq(x.numerator, x.denominator) for x in v])
    r = (vm.transpose() * Qm * vm)[0, 0]
    return Fraction(int(r.p), int(r.q))


def float_witness(Q: RationalMatrix) -> tuple[Fraction, ...] | None:
    r"""A rational :math:`v` with :math:`v^\top Qv<0` found in floating point, re-checked exactly.

    :math:`v` is the eigenvector of the smallest float eigenvalue, rounded to 30-bit integers;
    the returned vector has passed the exact test :math:`v^\top Qv<0` (None otherwise).
    Cost: one ``eigh`` and one exact quadratic form.
    """
    F = float_matrix(Q)
    if F is None or len(Q) < 2:
        return None
    w, U = np.linalg.eigh(F)
    if not w[0] < 0:
        return None
    u = U[:, 0] / np.abs(U[:, 0]).max()
    v = tuple(Fraction(int(x)) for x in np.round(u * 2**30))
    if not any(v):
        return None
    return v if _exact_quad(Q, v) < 0 else None


def decide_definite(M: Any, margin: Any = 0, *, strict: bool = True) -> tuple[bool | None, tuple[Fraction, ...] | None, str]:
    r"""Decide :math:`M-\mu I\succ0` (``strict``) or :math:`\succeq0`, and say how.

    Order: the rigorously rounded float Cholesky (:func:`is_pd_rounded`, above 12 rows; a proof
    of :math:`\succ0`, hence of :math:`\succeq0`), then a float eigenvector re-checked exactly as a
    witness :math:`v^\top(M-\mu I)v<0` (:func:`float_witness`), and only when both are
    inconclusive the exact :math:`LDL^\top` (:func:`ldl_inertia`, up to :data:`LDL_MAX_DIM`
    rows) or the exact characteristic polynomial (:func:`inertia_charpoly`, up to
    :data:`CHARPOLY_MAX_DIM`). Each answer is exact.

    Returns
    -------
    holds, witness, method
        As :func:`is_pd_exact` / :func:`is_psd_exact`, except that ``holds`` is None when
        undecided (a near-singular matrix beyond :data:`CHARPOLY_MAX_DIM` rows) and the
        witness may be None when the characteristic polynomial decided; and the deciding method.
    """
    Q = _shifted(M, margin)
    n = square_symmetric(Q)
    if n > FAST_PATH_MIN_DIM and is_pd_rounded(Q):
        return True, None, "rigorously rounded float Cholesky (exact rounding bound)"
    if n > FAST_PATH_MIN_DIM:
        w = float_witness(Q)
        if w is not None:
            return False, w, "float eigenvector, exact witness v^T M v < 0"
    if n > LDL_MAX_DIM:
        got, how = (inertia_low_rank(Q, inertia, CHARPOLY_MAX_DIM),
                    "exact low-rank principal block, zero Schur complement (Haynsworth)")
        if got is None:
            got, how = inertia_charpoly(Q), "exact characteristic polynomial, Descartes' rule of signs"
        if got is None:
            return None, None, (f"undecided: near-singular beyond the exact size limit ({CHARPOLY_MAX_DIM} rows) "
                                "and not of exactly low rank")
        n_pos, n_neg, n_zero = got
        holds = n_pos == n if strict else n_neg == 0
        return holds, None, how
    res = ldl_inertia(Q)
    if strict:
        if res.status == "pd":
            return True, None, r"exact rational $LDL^\top$"
        return False, (res.witness if res.witness is not None else res.kernel_vector), r"exact rational $LDL^\top$"
    if res.n_neg == 0:
        return True, None, r"exact rational $LDL^\top$"
    return False, res.witness, r"exact rational $LDL^\top$"


LDL_MAX_DIM = 64  # exact LDL^T in Python-level flint arithmetic; beyond it the characteristic polynomial
CHARPOLY_MAX_DIM = 160  # flint charpoly: about 3 s at 128 rows, 40 s at 256


def inertia_charpoly(Q: RationalMatrix) -> tuple[int, int, int] | None:
    r"""Exact inertia from the characteristic polynomial (Descartes' rule of signs); None beyond
    :data:`CHARPOLY_MAX_DIM` rows.

    :math:`p(x)=\det(xI-DQ)`, :math:`D` the common denominator (positive, so the inertia is
    that of :math:`Q`), computed over :math:`\mathbb Z` by python-flint. A symmetric matrix has
    real eigenvalues only, so with :math:`p(x)=x^kq(x)`, :math:`q(0)\ne0`, the numbers of
    positive and negative eigenvalues are exactly the sign changes of the coefficients of
    :math:`q(x)` and of :math:`q(-x)`, and :math:`n_0=k`.
    """
    n = len(Q)
    if flint is None or n > CHARPOLY_MAX_DIM:
        return None
    den = 1
    for r in Q:
        for x in r:
            den = den * x.denominator // math.gcd(den, x.denominator)
    Z = flint.fmpz_mat(n, n, [int(x * den) for r in Q for x in r])
    coeffs = [int(c) for c in Z.charpoly().coeffs()]  # lowest degree first
    k = next(i for i, c in enumerate(coeffs) if c != 0)
    q = coeffs[k:]

    def changes(cs: list[int]) -> int:
        signs = [c > 0 for c in cs if c != 0]
        return sum(a != b for a, b in zip(signs, signs[1:]))

    n_pos = changes(q)
    n_neg = changes([c if i % 2 == 0 else -c for i, c in enumerate(q)])
    if n_pos + n_neg + k != n:  # pragma: no cover - impossible for a symmetric matrix
        return None
    return n_pos, n_neg, k


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
        True iff :math:`M - \mu I` is positive definite (beyond :data:`CHARPOLY_MAX_DIM` rows a
        near-singular case that no fast test decides answers False: "not proved").
    witness : tuple of Fraction or None
        ``None`` when ``holds``; otherwise an integer-valued :math:`v \ne 0` with
        :math:`v^\top (M - \mu I) v < 0` if :math:`M - \mu I` has a negative eigenvalue, or
        with :math:`(M - \mu I) v = 0` if it is singular and positive semidefinite.

    Raises
    ------
    ValueError
        As :func:`ldl_inertia`.
    """
    holds, w, _ = decide_definite(M, margin, strict=True)
    return holds is True, w


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
        True iff :math:`M - \mu I` is positive semidefinite (beyond :data:`CHARPOLY_MAX_DIM` rows
        a near-singular case that no fast test decides answers False: "not proved").
    witness : tuple of Fraction or None
        ``None`` when ``holds``; otherwise an integer-valued :math:`v` with
        :math:`v^\top (M - \mu I) v < 0`.

    Raises
    ------
    ValueError
        As :func:`ldl_inertia`.
    """
    holds, w, _ = decide_definite(M, margin, strict=False)
    return holds is True, w


def _abs_row_sums_off(C: Any, n: int) -> tuple[list[Any], list[Any]]:
    e = C.entries()
    diag = [e[i * n + i] for i in range(n)]
    rad = []
    for i in range(n):
        row = e[i * n:(i + 1) * n]
        rad.append(sum((abs(x) for j, x in enumerate(row) if j != i), fmpq(0)))
    return diag, rad


def inertia_congruence(Q: RationalMatrix) -> tuple[int, int, int] | None:
    r"""Inertia of a nonsingular symmetric :math:`Q` by an exact congruence; None if undecided.

    :math:`U` is the float eigenbasis of the nearest float matrix, taken as the exact dyadic
    matrix it is; :math:`C=U^\top QU` is formed exactly (python-flint). If every Gershgorin
    disc :math:`[c_{ii}-r_i,c_{ii}+r_i]`, :math:`r_i=\sum_{j\ne i}|c_{ij}|`, excludes 0, the discs
    with positive centres lie in :math:`(0,\infty)` and the others in :math:`(-\infty,0)`, so
    (Gershgorin, counting per connected union) :math:`C` has as many positive eigenvalues as
    positive centres and no zero eigenvalue. Then :math:`\det U\ne0` and, by Sylvester's law of
    inertia, :math:`Q` has the inertia of :math:`C`. Cost: one ``eigh`` and two exact products.
    """
    if flint is None:
        return None
    n = len(Q)
    F = float_matrix(Q)
    if F is None:
        return None
    _, U = np.linalg.eigh(F)
    Uq = flint.fmpq_mat(n, n, [fmpq(*float(x).as_integer_ratio()) for x in U.ravel()])
    Qm = flint.fmpq_mat(n, n, [fmpq(x.numerator, x.denominator) for r in Q for x in r])
    C = Uq.transpose() * Qm * Uq
    diag, rad = _abs_row_sums_off(C, n)
    if any(not (abs(c) > r) for c, r in zip(diag, rad)):
        return None
    n_pos = sum(1 for c in diag if c > 0)
    return n_pos, n - n_pos, 0


def inertia(M: Any) -> tuple[int, int, int] | None:
    r"""The inertia :math:`(n_+,n_-,n_0)` of a symmetric rational matrix, exactly; None if undecided.

    Positive definite matrices (above 12 rows) by :func:`is_pd_rounded`, nonsingular ones by
    :func:`inertia_congruence`; otherwise (singular or too ill-conditioned) the exact
    :math:`LDL^\top` of :func:`ldl_inertia` up to :data:`LDL_MAX_DIM` rows, then a low-rank
    principal block (:func:`flowcert.certificates.pivot.inertia_low_rank`), the characteristic polynomial up to
    :data:`CHARPOLY_MAX_DIM`, and None beyond.
    """
    Q = to_rational(M)
    n = square_symmetric(Q)
    if n > FAST_PATH_MIN_DIM:
        if is_pd_rounded(Q):
            return n, 0, 0
        got = inertia_congruence(Q)
        if got is not None:
            return got
    if n > LDL_MAX_DIM:
        return inertia_low_rank(Q, inertia, CHARPOLY_MAX_DIM) or inertia_charpoly(Q)
    res = ldl_inertia(Q)
    return res.n_pos, res.n_neg, res.n_zero
