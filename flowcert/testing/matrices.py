r"""Matrix strategies whose promises hold *exactly* for the float64 arrays they return.

Symmetric matrices are built as :math:`M = Q\,\mathrm{diag}(k)\,Q^\top h` with an integer
:math:`Q`, :math:`Q^\top Q = cI` (a product of signed permutations and integer plane rotations
:math:`\begin{pmatrix}a&-b\\b&a\end{pmatrix}`, :math:`a^2+b^2=c\in\{1,25\}`), integers
:math:`k_i` and a dyadic step :math:`h`; so :math:`Q/\sqrt c` is orthogonal and

.. math::

    \operatorname{spec}(M)=\{c\,k_i\,h\},

every product is an integer multiple of :math:`h` below :math:`2^{53}h`, and the float matrix
*is* the rational one: inertia (Sylvester) and eigenvalues are those chosen, with no rounding.

General (non-normal) matrices are :math:`A = S\,T\,S^{-1}` with :math:`T` block upper
triangular (diagonal blocks :math:`r` or :math:`\begin{pmatrix}r&w\\-w&r\end{pmatrix}`, so
:math:`\operatorname{spec}T=\{r\}\cup\{r\pm iw\}`) and :math:`S` a product of signed
permutations and blocks :math:`\begin{pmatrix}1&-1\\1&1\end{pmatrix}` whose inverse is dyadic;
:math:`A` is similar to :math:`T`, so its spectral abscissa is exactly :math:`\max r`.

All strategies are bounded (dimension at most :data:`MAX_DIM`, entries bounded by the stated
``bound`` times a small constant) and shrink towards diagonal matrices with small integer
multiples of the step.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np
from hypothesis import strategies as st

MAX_DIM = 6
"""Largest dimension any strategy of :mod:`flowcert.testing` draws (keeps an example to milliseconds)."""

_ROTATIONS = {1: [(1, 0), (0, 1), (-1, 0), (0, -1)], 25: [(5, 0), (3, 4), (4, 3), (0, 5), (-3, 4), (4, -3)]}
_GRID_BITS = 16  # eigenvalues are multiples of a step <= margin / 2**4, at most 2**(_GRID_BITS + 4) steps


def check_dim(d: int) -> int:
    """``d`` when it is an integer in [1, :data:`MAX_DIM`], else ``ValueError``."""
    if not (isinstance(d, int) and 1 <= d <= MAX_DIM):
        raise ValueError(f"d: must be an integer in [1, {MAX_DIM}], got {d!r}")
    return d


def _check_scales(margin: float, bound: float) -> None:
    if not (0 < margin <= bound < math.inf):
        raise ValueError(f"margin, bound: need 0 < margin <= bound < inf, got {margin!r}, {bound!r}")
    if bound / margin > 2.0**_GRID_BITS:
        raise ValueError(f"bound / margin = {bound / margin:.3g} exceeds 2**{_GRID_BITS}: the construction would not be exact")


@st.composite
def scaled_orthogonal(draw: st.DrawFn, d: int) -> tuple[np.ndarray, int]:
    """An integer matrix :math:`Q` and :math:`c` with :math:`Q^\\top Q = cI` exactly.

    Returns ``(Q, c)`` with ``Q`` an ``object`` array of Python ints. Shrinks to the identity.
    """
    check_dim(d)
    Q = np.eye(d, dtype=object)
    c_total = 1
    for _ in range(0 if d == 1 else 3):
        c = draw(st.sampled_from((1, 25)))
        perm = draw(st.permutations(range(d)))
        layer = np.zeros((d, d), dtype=object)
        for i in range(0, d - 1, 2):
            a, b = draw(st.sampled_from(_ROTATIONS[c]))
            p, q = perm[i], perm[i + 1]
            layer[p, p], layer[p, q], layer[q, p], layer[q, q] = a, -b, b, a
        if d % 2:
            layer[perm[-1], perm[-1]] = draw(st.sampled_from((1, -1))) * (1 if c == 1 else 5)
        Q = Q.dot(layer)
        c_total *= c
    return Q, c_total


def exact_float(M_int: np.ndarray, denominator: int) -> np.ndarray:
    """``M_int / denominator`` as float64, asserting that no entry rounds."""
    out = np.empty(M_int.shape)
    for idx, v in np.ndenumerate(M_int):
        f = Fraction(int(v), denominator)
        out[idx] = float(f)
        if Fraction(out[idx]) != f:  # pragma: no cover - excluded by the bit budget
            raise AssertionError("flowcert.testing: construction is not exact in float64")
    return out


def grid_exponent(margin: float, scale: int) -> int:
    """Exponent ``e`` with step ``scale * 2**-e <= margin / 16``."""
    return max(0, math.ceil(math.log2(16 * scale / margin)))


@st.composite
def symmetric(
    draw: st.DrawFn,
    d: int | None = None,
    inertia: tuple[int, int, int] | None = None,
    margin: float = 0.1,
    bound: float = 10.0,
) -> np.ndarray:
    r"""Symmetric :math:`d\times d` float64 matrix with a prescribed inertia and margin.

    Parameters
    ----------
    d : int, optional
        Dimension (drawn in ``[1, MAX_DIM]`` if omitted; must match ``inertia``).
    inertia : (p, n, z), optional
        Numbers of positive, negative and zero eigenvalues (drawn if omitted).
    margin, bound : float
        Every non-zero eigenvalue satisfies :math:`\mathrm{margin}\le|\lambda|\le\mathrm{bound}`
        exactly; ``bound / margin`` is at most :math:`2^{16}`.

    Notes
    -----
    The promise holds for the returned float array itself (no rounding, see the module
    docstring); it is checked in the tests with the exact LDL^T inertia of
    :func:`flowcert.certificates.core.inertia_certificate` on :math:`M`, :math:`M\mp
    \mathrm{margin}\,I`.
    """
    _check_scales(margin, bound)
    if inertia is None:
        dd = draw(st.integers(1, MAX_DIM)) if d is None else check_dim(d)
        p = draw(st.integers(0, dd))
        n = draw(st.integers(0, dd - p))
        inertia = (p, n, dd - p - n)
    p, n, z = inertia
    if min(inertia) < 0 or (d is not None and p + n + z != d):
        raise ValueError(f"inertia: must be three non-negative integers summing to d, got {inertia!r}")
    d = check_dim(p + n + z)
    Q, c = draw(scaled_orthogonal(d))
    e = grid_exponent(margin, c)
    lo, hi = math.ceil(margin * 2**e / c), math.floor(bound * 2**e / c)
    mags = draw(st.lists(st.integers(lo, hi), min_size=p + n, max_size=p + n))
    k = [m for m in mags[:p]] + [-m for m in mags[p:]] + [0] * z
    M_int = Q.dot(np.diag(np.array(k, dtype=object))).dot(Q.T)
    return exact_float(M_int, 2**e)


def positive_definite(d: int | None = None, margin: float = 0.1, bound: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """:math:`M\\succeq \\mathrm{margin}\\,I`, :math:`\\|M\\|_2\\le\\mathrm{bound}` (see :func:`symmetric`)."""
    return _fixed_sign(d, +1, margin, bound)


def negative_definite(d: int | None = None, margin: float = 0.1, bound: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """:math:`M\\preceq -\\mathrm{margin}\\,I`, :math:`\\|M\\|_2\\le\\mathrm{bound}` (see :func:`symmetric`)."""
    return _fixed_sign(d, -1, margin, bound)


def indefinite(d: int | None = None, margin: float = 0.1, bound: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """Non-singular, at least one eigenvalue of each sign, :math:`|\\lambda|\\ge\\mathrm{margin}` (``d >= 2``)."""
    dims = st.integers(2, MAX_DIM) if d is None else st.just(check_dim(d))
    return dims.flatmap(lambda dd: st.integers(1, dd - 1).flatmap(
        lambda p: symmetric(dd, (p, dd - p, 0), margin, bound)))


def _fixed_sign(d: int | None, sign: int, margin: float, bound: float) -> st.SearchStrategy[np.ndarray]:
    dims = st.integers(1, MAX_DIM) if d is None else st.just(check_dim(d))
    return dims.flatmap(lambda dd: symmetric(dd, (dd, 0, 0) if sign > 0 else (0, dd, 0), margin, bound))


@st.composite
def _dyadic_similarity(draw: st.DrawFn, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer ``S`` and integer ``R`` with :math:`S^{-1}=R/2^{m}`; returns (S, R, m) packed as arrays."""
    S = np.eye(d, dtype=object)
    R = np.eye(d, dtype=object)
    m = 0
    for _ in range(0 if d == 1 else 3):
        perm = draw(st.permutations(range(d)))
        layer, inv = np.zeros((d, d), dtype=object), np.zeros((d, d), dtype=object)
        mixed = False
        for i in range(0, d - 1, 2):
            p, q = perm[i], perm[i + 1]
            if draw(st.booleans()):  # [[1,-1],[1,1]], inverse [[1,1],[-1,1]] / 2
                layer[p, p], layer[p, q], layer[q, p], layer[q, q] = 1, -1, 1, 1
                inv[p, p], inv[p, q], inv[q, p], inv[q, q] = 1, 1, -1, 1
                mixed = True
            else:
                layer[p, p] = layer[q, q] = 1
                inv[p, p] = inv[q, q] = 2
        if d % 2:
            layer[perm[-1], perm[-1]], inv[perm[-1], perm[-1]] = 1, 2
        if not mixed:  # the inverse of this layer is exact without the factor 2
            inv = inv // 2
        else:
            m += 1
        S, R = S.dot(layer), inv.dot(R)
    return S, R, m  # type: ignore[return-value]


@st.composite
def with_spectrum(
    draw: st.DrawFn,
    d: int | None = None,
    n_unstable: int | None = None,
    margin: float = 0.1,
    bound: float = 4.0,
    abscissa: float | None = None,
    nonnormality: float = 1.0,
) -> np.ndarray:
    r"""Real :math:`d\times d` matrix with exactly ``n_unstable`` eigenvalues in the open right half-plane.

    Parameters
    ----------
    d : int, optional
        Dimension (drawn in ``[1, MAX_DIM]`` if omitted).
    n_unstable : int, optional
        Number of eigenvalues (with multiplicity) with :math:`\operatorname{Re}\lambda>0`;
        ``0`` gives a Hurwitz matrix, ``d`` an anti-Hurwitz one; drawn if omitted.
    margin, bound : float
        Every eigenvalue has :math:`\mathrm{margin}\le|\operatorname{Re}\lambda|\le\mathrm{bound}`
        and :math:`|\operatorname{Im}\lambda|\le\mathrm{bound}`.
    abscissa : float, optional
        If given, one eigenvalue has real part exactly this dyadic rounding of it (rounded away
        from zero) and it is the largest real part (``n_unstable`` is then 0 if negative, else
        at least 1): a matrix at a chosen distance from the stability boundary.
    nonnormality : float
        Bound on the strictly upper entries of the triangular factor :math:`T`.

    Notes
    -----
    :math:`A=STS^{-1}` exactly (module docstring), so the spectrum is that of :math:`T`.
    """
    d = draw(st.integers(1, MAX_DIM)) if d is None else check_dim(d)
    if n_unstable is None:
        n_unstable = draw(st.integers(0, d))
    if not 0 <= n_unstable <= d:
        raise ValueError(f"n_unstable: must be in [0, {d}], got {n_unstable!r}")
    _check_scales(margin, bound)
    e = grid_exponent(margin, 1) if abscissa is None else max(grid_exponent(margin, 1), math.ceil(math.log2(2.0**_GRID_BITS / abs(abscissa))))
    lo, hi = math.ceil(margin * 2**e), math.floor(bound * 2**e)
    # real parts (in steps), with pairs of complex eigenvalues sharing one
    blocks: list[tuple[int, int]] = []  # (size, index into real parts)
    reals: list[int] = []
    signs = [1] * n_unstable + [-1] * (d - n_unstable)
    i = 0
    while i < d:
        if i + 1 < d and signs[i] == signs[i + 1] and draw(st.booleans()):
            blocks.append((2, len(reals)))
            i += 2
        else:
            blocks.append((1, len(reals)))
            i += 1
        reals.append(signs[i - 1] * draw(st.integers(lo, hi)))
    if abscissa is not None:
        if not bound * 2.0**-24 <= abs(abscissa) <= bound:
            raise ValueError(f"abscissa: need bound * 2**-24 <= |abscissa| <= bound (exact construction), got {abscissa!r}")
        target = int(math.ceil(abs(abscissa) * 2**e)) * (1 if abscissa > 0 else -1)
        if (abscissa > 0 and n_unstable == 0) or (abscissa < 0 and n_unstable > 0):
            raise ValueError("abscissa: its sign contradicts n_unstable")
        reals = [min(r, target) for r in reals]
        j = draw(st.integers(0, len(reals) - 1).filter(lambda j: (reals[j] > 0) == (target > 0)))
        reals[j] = target
    T = np.zeros((d, d), dtype=object)
    pos = 0
    wmax = math.floor(bound * 2**e)
    for size, idx in blocks:
        r = reals[idx]
        T[pos, pos] = r
        if size == 2:
            w = draw(st.integers(1, max(1, wmax)))
            T[pos + 1, pos + 1] = r
            T[pos, pos + 1], T[pos + 1, pos] = w, -w
        pos += size
    nmax = math.floor(nonnormality * 2**e)
    block_start = []
    pos = 0
    for size, _ in blocks:
        block_start += [pos] * size
        pos += size
    for a in range(d):
        for b in range(d):
            if b > a and block_start[b] != block_start[a]:
                T[a, b] = draw(st.integers(-nmax, nmax))
    S, R, m = draw(_dyadic_similarity(d))
    return exact_float(S.dot(T).dot(R), 2 ** (e + m))


def hurwitz(d: int | None = None, margin: float = 0.1, bound: float = 4.0) -> st.SearchStrategy[np.ndarray]:
    """:math:`\\max\\operatorname{Re}\\lambda\\le-\\mathrm{margin}` (see :func:`with_spectrum`)."""
    return with_spectrum(d, 0, margin, bound)


def anti_hurwitz(d: int | None = None, margin: float = 0.1, bound: float = 4.0) -> st.SearchStrategy[np.ndarray]:
    """:math:`\\min\\operatorname{Re}\\lambda\\ge\\mathrm{margin}` (see :func:`with_spectrum`)."""
    dims = st.integers(1, MAX_DIM) if d is None else st.just(check_dim(d))
    return dims.flatmap(lambda dd: with_spectrum(dd, dd, margin, bound))


def mixed_spectrum(d: int | None = None, margin: float = 0.1, bound: float = 4.0) -> st.SearchStrategy[np.ndarray]:
    """Eigenvalues on both sides of the imaginary axis, none within ``margin`` of it (``d >= 2``)."""
    dims = st.integers(2, MAX_DIM) if d is None else st.just(check_dim(d))
    return dims.flatmap(lambda dd: st.integers(1, dd - 1).flatmap(lambda k: with_spectrum(dd, k, margin, bound)))


def near_marginal(d: int | None = None, distance: float = 1e-3, side: str = "stable",
                  bound: float = 4.0) -> st.SearchStrategy[np.ndarray]:
    r"""Spectral abscissa :math:`\mp\mathrm{distance}` (up to a relative :math:`2^{-16}`, away from 0).

    ``side="stable"``: Hurwitz with abscissa :math:`-\mathrm{distance}`; ``"unstable"``: one
    eigenvalue at real part :math:`+\mathrm{distance}`, all others stable.
    """
    if side not in ("stable", "unstable"):
        raise ValueError(f"side: must be 'stable' or 'unstable', got {side!r}")
    if not bound * 2.0**-24 <= distance <= bound / 4:
        raise ValueError(f"distance: must be in [bound * 2**-24, bound/4] (exact construction), got {distance!r}")
    dims = st.integers(1, MAX_DIM) if d is None else st.just(check_dim(d))
    margin = max(distance, bound * 2.0**-_GRID_BITS)
    if side == "stable":
        return dims.flatmap(lambda dd: with_spectrum(dd, 0, margin, bound, abscissa=-distance))
    return dims.flatmap(lambda dd: with_spectrum(dd, 1, margin, bound, abscissa=distance))


def spectral_abscissa(A: np.ndarray) -> float:
    """Largest real part of the eigenvalues (float; for reporting and shrinking diagnostics)."""
    return float(np.linalg.eigvals(np.asarray(A, float)).real.max())


def orthonormal_frame(d: int) -> st.SearchStrategy[np.ndarray]:
    """A float orthonormal matrix (QR of a bounded Gaussian-like draw; orthonormal to ~1e-15)."""
    return st.lists(st.floats(-1, 1, allow_nan=False, width=64), min_size=d * d, max_size=d * d).map(
        lambda xs: _qr(np.array(xs).reshape(d, d) + 2 * np.eye(d)))


def _qr(G: np.ndarray) -> np.ndarray:
    Q, R = np.linalg.qr(G)
    return Q * np.sign(np.where(np.diag(R) == 0, 1.0, np.diag(R)))


def integer_vector(d: int, bound: int = 4) -> st.SearchStrategy[np.ndarray]:
    """Small integer vector (as floats), shrinking to zero."""
    return st.lists(st.integers(-bound, bound), min_size=d, max_size=d).map(lambda v: np.array(v, float))


__all__: Sequence[str] = [
    "MAX_DIM", "anti_hurwitz", "hurwitz", "indefinite", "integer_vector", "mixed_spectrum", "near_marginal",
    "negative_definite", "orthonormal_frame", "positive_definite", "scaled_orthogonal", "spectral_abscissa",
    "symmetric", "with_spectrum",
]
