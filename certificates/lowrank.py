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

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import core
from .records import JSONObject

__all__ = ["hexvec", "asymmetry_claim", "minors_claim", "asymmetry_certificate", "minor_certificate", "find_asymmetric_entry", "find_minors",
           "exact_gram", "full_column_rank", "symmetric_part_inertia", "LowRank", "is_factored",
           "find_low_rank_asymmetry", "low_rank_asymmetry_certificate", "dyadic_integers", "integer_matrix"]


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


def dyadic_integers(F: np.ndarray) -> tuple[list[int], int]:
    r"""``(ints, e)``: the entries of :math:`2^eF` as Python integers, row-major, with the least such :math:`e`
    (every float64 is a dyadic rational)."""
    ratios = [float(x).as_integer_ratio() for x in np.asarray(F, dtype=np.float64).ravel()]
    e = max(den.bit_length() - 1 for _, den in ratios)
    return [num << (e - (den.bit_length() - 1)) for num, den in ratios], e


def integer_matrix(F: np.ndarray) -> tuple[Any, int]:
    r"""``(Z, e)`` with :math:`Z=2^eF` an exact ``flint.fmpz_mat`` (:func:`dyadic_integers`)."""
    import flint

    ints, e = dyadic_integers(F)
    return flint.fmpz_mat(F.shape[0], F.shape[1], ints), e


def exact_gram(F: np.ndarray) -> list[list[int]]:
    r""":math:`2^{2e}F^\top F` exactly, as Python integers (:math:`2^eF` is an integer matrix)."""
    ints, _ = dyadic_integers(F)
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


# ---------------------------------------------------------------------------------------------
# A matrix given by its factors: the exact value N = sqrt(q) L R (issue 45)
# ---------------------------------------------------------------------------------------------


def is_factored(value: Any) -> bool:
    """Whether a JSON value is the factored form ``{"factors": [L, R], ...}`` of a matrix."""
    return isinstance(value, dict) and "factors" in value


def _scale_squared(raw: Any) -> Fraction:
    """A positive rational ``scale_squared`` from a number or a ``"p/q"`` text (ValueError otherwise)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"scale_squared must be a positive rational number or a \"p/q\" text, got {raw!r}")
    try:
        q = Fraction(raw) if not isinstance(raw, float) else Fraction(*raw.as_integer_ratio())
    except (ValueError, ZeroDivisionError, OverflowError):
        raise ValueError(f"scale_squared must be a positive rational number or a \"p/q\" text, got {raw!r}") from None
    if q <= 0:
        raise ValueError(f"scale_squared must be > 0, got {raw!r}")
    return q


class FactoredForm(dict):  # type: ignore[type-arg]
    """The JSON form of a :class:`LowRank` made by :meth:`LowRank.to_json` in this process: a plain ``dict``
    that remembers its matrix, so that reading it back (a certificate re-checked where it was made) does
    not parse :math:`2dk` numbers again. A form read from a file is a plain ``dict`` and is parsed."""

    low: "LowRank"


def _factor(raw: Any, which: str) -> np.ndarray:
    from .forms import float_rows

    F = float_rows(raw) if isinstance(raw, list) else None  # Python floats only: one numpy call
    if F is None and isinstance(raw, np.ndarray):
        F = np.asarray(raw, dtype=np.float64)
    elif F is None:
        if not (isinstance(raw, list) and raw and all(isinstance(r, list) and r for r in raw)):
            raise ValueError(f"factor {which} must be a non-empty matrix (a list of rows)")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for r in raw for x in r):
            raise ValueError(f"factor {which} must hold numbers only")
        if len({len(r) for r in raw}) != 1:
            raise ValueError(f"factor {which} has rows of different lengths")
        try:
            F = np.array(raw, dtype=np.float64)
        except (OverflowError, ValueError, TypeError):
            raise ValueError(f"factor {which} has an entry that is not a finite float64 number") from None
    if F.ndim != 2 or 0 in F.shape:
        raise ValueError(f"factor {which} must be a non-empty matrix, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError(f"factor {which} has a non-finite entry")
    return F


@dataclass(frozen=True, eq=False)
class LowRank:
    r"""The exact matrix :math:`N=\sqrt q\,LR` of float64 factors :math:`L\in\mathbb R^{m\times k}`,
    :math:`R\in\mathbb R^{k\times n}` (exact dyadic rationals) and a rational :math:`q>0`.

    A pretrained head's :math:`B=K^\top Q/\sqrt{d_h}` is ``LowRank(K.T, Q, 1/d_h)`` and :math:`V=W_OW_V` is
    ``LowRank(W_O, W_V)``: the subject of the verdicts is this exact product, not its rounding. Its JSON
    form is ``{"factors": [L, R], "scale_squared": "p/q"}`` (``scale_squared`` omitted when 1).
    """

    L: np.ndarray
    R: np.ndarray
    scale_squared: Fraction = Fraction(1)

    @classmethod
    def from_json(cls, value: Any) -> "LowRank":
        """The matrix of a factored JSON value; ValueError naming what is wrong."""
        if type(value) is FactoredForm:
            return value.low
        if not is_factored(value):
            raise ValueError("a factored matrix is an object {\"factors\": [L, R], \"scale_squared\": q}")
        extra = sorted(set(value) - {"factors", "scale_squared"})
        if extra:
            raise ValueError(f"unknown key {extra[0]!r} in a factored matrix (allowed: factors, scale_squared)")
        fs = value["factors"]
        if not isinstance(fs, (list, tuple)) or len(fs) != 2:
            raise ValueError("factors must be a list of two matrices [L, R]")
        L, R = _factor(fs[0], "L"), _factor(fs[1], "R")
        if L.shape[1] != R.shape[0]:
            raise ValueError(f"factors do not fit: L is {L.shape[0]} x {L.shape[1]}, R is {R.shape[0]} x {R.shape[1]}")
        return cls(L, R, _scale_squared(value.get("scale_squared", 1)))

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.L.shape[0]), int(self.R.shape[1]))

    @property
    def inner(self) -> int:
        """The inner dimension k: the rank is at most k."""
        return int(self.L.shape[1])

    def to_json(self) -> JSONObject:
        """The JSON form (factors as nested lists of floats, ``scale_squared`` as ``"p/q"`` when not 1); made once
        per matrix and shared by its certificates (never edited: a changed copy is read back as a plain dict)."""
        cached = self.__dict__.get("_json")
        if cached is not None:
            return cached
        out = FactoredForm(factors=[self.L.tolist(), self.R.tolist()])
        if self.scale_squared != 1:
            out["scale_squared"] = str(self.scale_squared)
        out.low = self
        object.__setattr__(self, "_json", out)
        return out

    def transpose(self) -> "LowRank":
        """:math:`N^\\top=\\sqrt q\\,R^\\top L^\\top`."""
        return LowRank(self.R.T.copy(), self.L.T.copy(), self.scale_squared)

    def negated(self) -> "LowRank":
        """:math:`-N` (the sign goes into L, exactly; made once per matrix, and its negation is this one)."""
        cached = self.__dict__.get("_negated")
        if cached is None:
            cached = LowRank(-self.L, self.R, self.scale_squared)
            object.__setattr__(self, "_negated", cached)
            object.__setattr__(cached, "_negated", self)
        return cached

    def same(self, other: Any) -> bool:
        """The same factors and scale (hence the same exact matrix), compared exactly."""
        return (isinstance(other, LowRank) and self.scale_squared == other.scale_squared
                and self.L.shape == other.L.shape and self.R.shape == other.R.shape
                and bool(np.array_equal(self.L, other.L)) and bool(np.array_equal(self.R, other.R)))

    def floats(self) -> np.ndarray:
        """A float64 image of N (for the numerical runs only; never evidence)."""
        return float(np.sqrt(float(self.scale_squared))) * (self.L @ self.R)

    def unscaled_entry(self, i: int, j: int) -> Fraction:
        """:math:`(LR)_{ij}` exactly."""
        return sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(self.L[i], self.R[:, j])), Fraction(0))

    def norm2_float(self) -> float:
        r"""A float estimate of :math:`\|N\|_2` from the :math:`k\times k` Gram matrices."""
        G = (self.L.T @ self.L) @ (self.R @ self.R.T)
        lam = float(np.max(np.abs(np.linalg.eigvals(G)))) if G.size else 0.0
        return float(np.sqrt(float(self.scale_squared) * max(lam, 0.0)))


def find_low_rank_asymmetry(N: LowRank) -> tuple[int, int] | None:
    """Indices of the float-largest :math:`|N_{ij}-N_{ji}|` of a square factored matrix (None when 0):
    a candidate only, proved by :func:`low_rank_asymmetry_certificate`. Searched once per matrix; :math:`-N`
    (:meth:`LowRank.negated`) has the same pair and shares the search."""
    if N.shape[0] != N.shape[1]:
        return None
    if "_pair" not in N.__dict__:
        pair = find_asymmetric_entry(N.L @ N.R)
        for M in (N, N.__dict__.get("_negated")):
            if M is not None:
                object.__setattr__(M, "_pair", pair)
    return N.__dict__["_pair"]


def low_rank_asymmetry_certificate(N: LowRank, ij: tuple[int, int], what: str) -> core.Certificate:
    r"""Certificate that :math:`N_{ij}\ne N_{ji}` for the factored :math:`N=\sqrt q LR` (its data: N's
    factored form and the pair; only the two dot products are computed, :math:`O(k)` exact terms)."""
    from .claims import claim

    data = {"N": N.to_json(), "i": int(ij[0]), "j": int(ij[1])}
    return core.Certificate("low_rank_asymmetry", claim("low_rank_asymmetry", data, {"N": what}) or "", data, "exact-rational")


def _check_low_rank_asymmetry(data: dict[str, Any]) -> bool:
    N = LowRank.from_json(data["N"])
    i, j = data["i"], data["j"]
    if type(i) is not int or type(j) is not int or i == j or N.shape[0] != N.shape[1]:
        return False
    if not (0 <= i < N.shape[0] and 0 <= j < N.shape[0]):
        return False
    return N.unscaled_entry(i, j) != N.unscaled_entry(j, i)  # sqrt(q) > 0 scales both alike
