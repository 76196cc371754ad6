r"""Exact certificates about a product :math:`N = AB` of stored float weight factors.

A pretrained head gives :math:`P = Q^\top K` and :math:`U = W_O W_V`: :math:`d\times d` matrices of
rank :math:`\le d_h`, products of :math:`d_h`-thin factors whose entries are exact dyadic rationals
(the stored weights). One entry :math:`N_{ij} = a_i\cdot b_j` (:math:`a_i` row :math:`i` of
:math:`A`, :math:`b_j` column :math:`j` of :math:`B`) is a :math:`d_h`-term dot product, cheap in
exact rationals, so these certificates carry only the few rows/columns they need:

* ``entry_asymmetry``: :math:`N_{ij}\neq N_{ji}` for some :math:`i\ne j`, hence :math:`N` is not
  symmetric (so not :math:`\eta I`, not :math:`\succ0`, not :math:`\prec0` in the papers'
  symmetric sense);
* ``minor_not_psd``: for index sets :math:`I` (size 1 or 2) and signs :math:`s=\pm1`, the principal
  submatrix :math:`s\,(N+N^\top)_{II}` has a negative diagonal entry or a negative determinant,
  hence :math:`s\,(N+N^\top)\not\succeq0`: with :math:`s=+1` the symmetric part has a negative
  eigenvalue, with :math:`s=-1` a positive one; both together: indefinite.

Numbers are written as ``float.hex`` strings and read back exactly (``Fraction(float.fromhex)``).

The exact inertia of the symmetric part (:func:`symmetric_part_inertia`): with
:math:`F=[A,\ B^\top]\in\mathbb R^{d\times2k}` and :math:`J=\begin{pmatrix}0&I_k\\I_k&0\end{pmatrix}`,

.. math:: N+N^\top = A B + B^\top A^\top = F J F^\top ,

and :math:`J` has inertia :math:`(k,k,0)`. If :math:`F` has full column rank, i.e.
:math:`F^\top F\succ0`, Sylvester's law of inertia (for a congruence by :math:`[F\ F_\perp]`) gives
:math:`\operatorname{In}(N+N^\top)=(k,k,d-2k)`. :math:`F^\top F` is formed exactly (integers, after
scaling the dyadic weights by a common power of two, with ``python-flint``) and its positive
definiteness is proved by :func:`flowcert.certificates.exact.is_pd_rounded` (a rigorous float
Cholesky with a backward-error shift, never a false ``True``) for small factors; for large ones
(:math:`2kd>4096`, e.g. MiniLM's :math:`384\times64`) the Gram matrix is formed in float64 by BLAS and
the rounding is bounded entrywise, for any summation order (Higham, *Accuracy and Stability*, §3.1,
with :math:`\gamma_m=mu/(1-mu)`, :math:`u=2^{-53}`, and :math:`d\,2^{-1074}` for underflow):

.. math:: |\mathrm{fl}(F^\top F)-F^\top F| \le \gamma_d\,|F|^\top|F|
          \le \frac{\gamma_d}{1-\gamma_d}\,\mathrm{fl}(|F|^\top|F|) + d\,2^{-1074},

so :math:`F^\top F\succeq \mathrm{fl}(F^\top F)-\delta I` with :math:`\delta` an upper bound of the
largest row sum of that bound (itself inflated by :math:`1+\gamma_{2k+1}` for its own rounding), and
:func:`flowcert.certificates.exact.is_pd_float_rigorous` proves :math:`\mathrm{fl}(F^\top F)-\delta I\succ0`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import core
from .records import JSONObject

__all__ = ["hexvec", "asymmetry_claim", "minors_claim", "asymmetry_certificate", "minor_certificate", "find_asymmetric_entry", "find_minors",
           "exact_gram", "full_column_rank", "symmetric_part_inertia"]


def hexvec(v: np.ndarray) -> list[str]:
    """Exact float64 vector as ``float.hex`` strings."""
    return [float(x).hex() for x in np.asarray(v, dtype=np.float64).ravel()]


def _vec(s: Sequence[str]) -> list[Fraction]:
    return [Fraction(float.fromhex(x)) for x in s]


def _dot(a: Sequence[str], b: Sequence[str]) -> Fraction:
    va, vb = _vec(a), _vec(b)
    if len(va) != len(vb):
        raise ValueError("length mismatch")
    return sum((x * y for x, y in zip(va, vb)), Fraction(0))


def find_asymmetric_entry(N: np.ndarray) -> tuple[int, int] | None:
    """Indices of the largest float :math:`|N_{ij}-N_{ji}|` (None if it is 0)."""
    D = np.abs(N - N.T)
    i, j = np.unravel_index(int(np.argmax(D)), D.shape)
    return None if D[i, j] == 0 else (int(i), int(j))


def asymmetry_claim(data: JSONObject, what: str) -> str:
    """The claim an ``entry_asymmetry`` certificate of the product called ``what`` proves."""
    i, j = int(data["i"]), int(data["j"])
    return f"{what} is not symmetric: entry ({i},{j}) differs from ({j},{i})"


def minors_claim(data: JSONObject, what: str) -> str:
    """The claim a ``minor_not_psd`` certificate of the product called ``what`` proves."""
    return " and ".join(f"{'' if int(it['sign']) > 0 else '-'}sym({what}) is not PSD" for it in data["minors"])


def asymmetry_certificate(A: np.ndarray, B: np.ndarray, ij: tuple[int, int], what: str) -> core.Certificate:
    r"""Certificate that :math:`(AB)_{ij}\ne(AB)_{ji}` (checked exactly by :func:`recheck`)."""
    i, j = ij
    data = {"i": i, "j": j, "a_i": hexvec(A[i]), "a_j": hexvec(A[j]), "b_i": hexvec(B[:, i]), "b_j": hexvec(B[:, j])}
    return core.Certificate("entry_asymmetry", asymmetry_claim(data, what), data, "exact-rational")


def _check_asymmetry(data: dict[str, Any]) -> bool:
    if data["i"] == data["j"]:
        return False
    return _dot(data["a_i"], data["b_j"]) != _dot(data["a_j"], data["b_i"])


def find_minors(S: np.ndarray, sign: int) -> list[int] | None:
    """Index set (size 1 or 2) where ``sign*S`` looks most clearly not PSD, by float64; None if no
    diagonal entry or 2x2 principal minor is negative (then no small certificate is offered)."""
    T = sign * S
    dg = np.diag(T)
    k = int(np.argmin(dg))
    if dg[k] < 0:
        return [k]
    det = np.outer(dg, dg) - T * T
    np.fill_diagonal(det, np.inf)
    i, j = np.unravel_index(int(np.argmin(det)), det.shape)
    return [int(i), int(j)] if det[i, j] < 0 else None


def minor_certificate(A: np.ndarray, B: np.ndarray, minors: list[tuple[list[int], int]], what: str) -> core.Certificate:
    """Certificate that ``s (AB + (AB)^T)`` is not PSD for each (index set, s) in ``minors``."""
    items = []
    for idx, s in minors:
        items.append({"idx": list(idx), "sign": int(s), "a": [hexvec(A[i]) for i in idx],
                      "b": [hexvec(B[:, i]) for i in idx]})
    data = {"minors": items}
    return core.Certificate("minor_not_psd", minors_claim(data, what), data, "exact-rational")


def _check_minors(data: dict[str, Any]) -> bool:
    items = data["minors"]
    if not items:
        return False
    for it in items:
        s = it["sign"]
        if s not in (1, -1) or len(it["idx"]) not in (1, 2) or len(set(it["idx"])) != len(it["idx"]):
            return False
        a, b = it["a"], it["b"]
        k = len(it["idx"])
        if len(a) != k or len(b) != k:
            return False
        # (N + N^T)_{pq} = a_p.b_q + a_q.b_p on the index set
        S = [[s * (_dot(a[p], b[q]) + _dot(a[q], b[p])) for q in range(k)] for p in range(k)]
        if k == 1:
            if not S[0][0] < 0:
                return False
        elif not (S[0][0] < 0 or S[1][1] < 0 or S[0][0] * S[1][1] - S[0][1] * S[1][0] < 0):
            return False
    return True


def exact_gram(F: np.ndarray) -> list[list[int]]:
    r""":math:`2^{2e}F^\top F` exactly, as Python integers (:math:`2^eF` is an integer matrix)."""
    ratios = [float(x).as_integer_ratio() for x in np.asarray(F, dtype=np.float64).ravel()]
    e = max(den.bit_length() - 1 for _, den in ratios)
    ints = [num << (e - (den.bit_length() - 1)) for num, den in ratios]
    n, m = F.shape
    try:
        import flint

        Fz = flint.fmpz_mat(n, m, ints)
        G = Fz.transpose() * Fz
        return [[int(G[i, j]) for j in range(m)] for i in range(m)]
    except ImportError:  # pragma: no cover - python-flint is a declared dependency
        cols = [[ints[i * m + j] for i in range(n)] for j in range(m)]
        return [[sum(a * b for a, b in zip(cols[i], cols[j])) for j in range(m)] for i in range(m)]


def symmetric_part_inertia(A: np.ndarray, B: np.ndarray) -> tuple[int, int, int] | None:
    r"""Proved inertia of :math:`AB+(AB)^\top` (A: d x k, B: k x d), or None when :math:`F^\top F\succ0`
    is not proved (see the module docstring)."""
    d, k = A.shape
    if 2 * k > d:
        return None
    return (k, k, d - 2 * k) if full_column_rank(np.hstack([A, B.T])) else None


def full_column_rank(F: np.ndarray) -> bool:
    r"""Proof that :math:`F^\top F\succ0` (never a false True; see the module docstring)."""
    from fractions import Fraction

    from .exact import is_pd_float_rigorous, is_pd_rounded

    F = np.asarray(F, dtype=np.float64)
    n, m = F.shape
    if n * m <= 4096:
        return is_pd_rounded(exact_gram(F))
    G = F.T @ F
    G = np.triu(G) + np.triu(G, 1).T  # exactly symmetric; every entry is a computed fl((F^T F)_ij)
    absF = np.abs(F)
    R = (absF.T @ absF).sum(axis=1).max()
    if not (np.isfinite(R) and np.all(np.isfinite(G))):
        return False
    u = Fraction(1, 2**53)
    gam = lambda k: k * u / (1 - k * u)  # noqa: E731
    delta = (gam(n) / (1 - gam(n)) * Fraction(float(R)) * (1 + gam(2 * m + 1)) * (1 + gam(n))
             + m * n * Fraction(1, 2**1074))
    try:
        return is_pd_float_rigorous(G, delta)
    except ValueError:
        return False
