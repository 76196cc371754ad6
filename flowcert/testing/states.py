r"""Strategies for states: Gaussian moments :math:`(\mu,\Sigma)` and token configurations.

* Gaussian state: :math:`\Sigma=Q\,\mathrm{diag}(k)\,Q^\top h\succeq0` of an exact rank
  (:func:`flowcert.testing.matrices.symmetric` with inertia :math:`(r,0,d-r)`), :math:`\mu` bounded.
* Tokens on :math:`S^{d-1}` or on the ellipsoid :math:`\{y^\top Wy=1\}`: rows scaled by
  :math:`(y^\top Wy)^{-1/2}` (on the manifold to a few ulps, within the parameter files'
  tolerance :math:`10^{-9}`).
* Open hemisphere with margin :math:`m`: :math:`x_i=c_i v+\sqrt{1-c_i^2}\,u_i`, :math:`u_i\perp v`,
  :math:`c_i\ge m+10^{-3}`, so :math:`v^\top x_i\ge m` holds in exact arithmetic on the floats.
* In no open hemisphere: the configuration holds an exactly antipodal pair :math:`x,-x`, so
  :math:`0=\tfrac12x+\tfrac12(-x)` lies in the convex hull (Gordan's alternative).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .matrices import MAX_DIM, check_dim, positive_definite, symmetric

MAX_TOKENS = 8
"""Largest number of tokens a token strategy draws."""

_unit = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False, width=64)


def _check_n(n: int) -> int:
    if not (isinstance(n, int) and 1 <= n <= MAX_TOKENS):
        raise ValueError(f"n: must be an integer in [1, {MAX_TOKENS}], got {n!r}")
    return n


@st.composite
def gaussian_state(draw: st.DrawFn, d: int | None = None, rank: int | None = None, margin: float = 0.1,
                   bound: float = 4.0, mean_bound: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    r"""A Gaussian state :math:`(\mu,\Sigma)`: :math:`\Sigma\succeq0` of exact rank ``rank``.

    Parameters
    ----------
    d, rank : int, optional
        Dimension and rank of :math:`\Sigma` (drawn if omitted; ``rank = d`` gives
        :math:`\Sigma\succ0`).
    margin, bound : float
        Non-zero eigenvalues of :math:`\Sigma` lie in ``[margin, bound]`` exactly.
    mean_bound : float
        :math:`\|\mu\|_\infty\le` ``mean_bound``.
    """
    d = draw(st.integers(1, MAX_DIM)) if d is None else check_dim(d)
    r = draw(st.integers(0, d)) if rank is None else rank
    if not 0 <= r <= d:
        raise ValueError(f"rank: must be in [0, {d}], got {rank!r}")
    Sigma = draw(symmetric(d, (r, 0, d - r), margin, bound))
    mu = np.array(draw(st.lists(st.floats(-mean_bound, mean_bound, allow_nan=False, width=64), min_size=d, max_size=d)))
    return mu, Sigma


@st.composite
def _directions(draw: st.DrawFn, n: int, d: int) -> np.ndarray:
    rows = []
    for _ in range(n):
        y = np.array(draw(st.lists(_unit, min_size=d, max_size=d)))
        if np.linalg.norm(y) < 0.25:  # shrinks towards e_1 rather than towards an ill-defined 0
            y = y + np.eye(d)[0]
        rows.append(y)
    return np.array(rows)


def _on(W: np.ndarray, Y: np.ndarray) -> np.ndarray:
    return Y / np.sqrt(np.einsum("ij,jk,ik->i", Y, W, Y))[:, None]


def sphere_tokens(n: int, d: int) -> st.SearchStrategy[np.ndarray]:
    """``n x d`` tokens on the unit sphere (``|x_i| = 1`` to a few ulps)."""
    _check_n(n), check_dim(d)
    return _directions(n, d).map(lambda Y: _on(np.eye(d), Y))


@st.composite
def ellipsoid_tokens(draw: st.DrawFn, n: int, d: int, W: np.ndarray | None = None,
                     margin: float = 0.25, bound: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    r"""``(X, W)``: ``W`` exactly symmetric PD (drawn if omitted), tokens with :math:`x_i^\top Wx_i=1`."""
    _check_n(n), check_dim(d)
    if W is None:
        W = draw(positive_definite(d, margin, bound))
    return _on(np.asarray(W, float), draw(_directions(n, d))), np.asarray(W, float)


@st.composite
def hemisphere_tokens(draw: st.DrawFn, n: int, d: int, margin: float = 0.1,
                      v: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""``(X, v)``: unit tokens and a unit ``v`` with :math:`v^\top x_i\ge` ``margin`` for every i.

    ``d >= 2``; ``0 < margin < 1``; ``v`` is drawn unless given (it is normalised). The
    inequality holds for the exact rationals the floats denote.
    """
    _check_n(n), check_dim(d)
    if d < 2 or not 0 < margin < 1 - 1e-3:
        raise ValueError(f"hemisphere_tokens: need d >= 2 and 0 < margin < 0.999, got d={d}, margin={margin!r}")
    v = _on(np.eye(d), draw(_directions(1, d)) if v is None else np.asarray(v, float)[None, :])[0]
    rows = []
    for u in draw(_directions(n, d)):
        u = u - (u @ v) * v
        if np.linalg.norm(u) < 1e-3:
            u = np.roll(v, 1) - (np.roll(v, 1) @ v) * v
            if np.linalg.norm(u) < 1e-3:
                u = np.eye(d)[0] - v[0] * v
        u = u / np.linalg.norm(u)
        c = draw(st.floats(min(1.0, margin + 1e-3), 1.0, allow_nan=False))  # exact dot >= margin + 1e-3 - O(eps)
        x = c * v + np.sqrt(max(0.0, 1 - c * c)) * u
        rows.append(x / np.linalg.norm(x))
    return np.array(rows), v


@st.composite
def no_hemisphere_tokens(draw: st.DrawFn, n: int, d: int) -> tuple[np.ndarray, tuple[int, int]]:
    """``(X, (i, j))``: unit tokens with :math:`x_j=-x_i` exactly, hence in no open hemisphere (``n >= 2``)."""
    _check_n(n), check_dim(d)
    if n < 2:
        raise ValueError("no_hemisphere_tokens: n must be >= 2")
    X = draw(sphere_tokens(n, d))
    i, j = draw(st.permutations(range(n)))[:2]
    X[j] = -X[i]
    return X, (i, j)


def in_open_hemisphere_certificate(X: np.ndarray, v: np.ndarray) -> bool:
    """Exact check that :math:`v^\\top x_i>0` for every row (rational arithmetic on the floats)."""
    from fractions import Fraction

    return all(sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(v, x)) > 0 for x in X)


def not_in_hemisphere_certificate(X: np.ndarray, pair: tuple[int, int]) -> bool:
    """Exact check of Gordan's witness: the two rows are exact negatives, so 0 is in the hull."""
    i, j = pair
    return i != j and bool(np.all(X[i] == -X[j])) and bool(np.any(X[i] != 0))


__all__ = ["MAX_TOKENS", "ellipsoid_tokens", "gaussian_state", "hemisphere_tokens", "in_open_hemisphere_certificate",
           "no_hemisphere_tokens", "not_in_hemisphere_certificate", "sphere_tokens"]
