r"""Certificates for the multistability paper (Altafini; note 001): rigorous spectra of a
rational symmetric :math:`V`, and stability verdicts for consensus and bipartite equilibria.

**Eigen-enclosures** (kind ``symmetric_eigen_enclosure``). For rational symmetric :math:`V` and
rational approximate eigenvectors :math:`u_k`, the Rayleigh quotient
:math:`\mu_k=u_k^\top Vu_k/u_k^\top u_k` and residual :math:`r_k=\|Vu_k-\mu_ku_k\|/\|u_k\|` are
exact rationals (square roots bounded from above), and each interval :math:`[\mu_k-r_k,\mu_k+r_k]`
contains an eigenvalue (Krylov–Weinstein). If the :math:`d` intervals are pairwise disjoint they
contain one eigenvalue each: every eigenvalue is simple and the order
:math:`\lambda_1>\dots>\lambda_d` is proved. Davis–Kahan then bounds the angle to the true
eigenvector, :math:`\sin\theta_k\le r_k/\delta_k` with :math:`\delta_k` the distance from
:math:`\mu_k` to the other intervals, hence
:math:`|\hat u_k^\top M\hat u_k - v_k^\top Mv_k|\le 2\sqrt2\,\|M\|_F\sin\theta_k`.

**Equilibrium verdicts** (kind ``attention_bipartite_spectrum``). At :math:`x_i=s_iv_k`
(:math:`n_1` signs :math:`+`, :math:`n_2` signs :math:`-`; consensus when one group is empty) the
tangent linearisation of (1) decouples along the eigenbasis (note 001, §1.5 and D4): for each
:math:`j\ne k` the :math:`n\times n` block :math:`J_j=c\,(\lambda_jA-\operatorname{diag}(g))`,
:math:`g_i=\lambda_ks_i(As)_i`, and with :math:`P=\operatorname{diag}(Z_i)` (row sums of
:math:`E_{ij}=e^{a_ks_is_j}`, :math:`a_k=\beta v_k^\top Q^\top Kv_k`)

.. math::

    S_j := PJ_j/c = \lambda_j E - \lambda_k\operatorname{diag}(\sigma_i),\qquad
    \sigma_i = s_i(Es)_i\in\{\sigma_1,\sigma_2\},\quad
    \sigma_1 = n_1e^{a}-n_2e^{-a},\ \sigma_2 = n_2e^{a}-n_1e^{-a},

is symmetric, so :math:`P` is a Lyapunov matrix for :math:`J_j` iff :math:`S_j\prec0`, and
:math:`J_j` has a positive eigenvalue iff :math:`S_j` has one (Sylvester). :math:`S_j` leaves
invariant the vectors that sum to zero within a group (eigenvalue :math:`-\lambda_k\sigma_\ell`,
multiplicity :math:`n_\ell-1`) and the span of the two group indicators, where (orthonormal basis)

.. math::

    \begin{bmatrix}\lambda_jn_1e^{a}-\lambda_k\sigma_1 & \lambda_j\sqrt{n_1n_2}\,e^{-a}\\
    \lambda_j\sqrt{n_1n_2}\,e^{-a} & \lambda_jn_2e^{a}-\lambda_k\sigma_2\end{bmatrix}.

Negative definiteness is decided by trace and determinant in outward-rounded interval
arithmetic (mpmath ``iv``) from the certified enclosures of :math:`\lambda` and :math:`a_k`. The
multiagent Oja flow is the case :math:`E=\mathbb 1\mathbb 1^\top` (:math:`a=0`); the Oja flow has
:math:`S_j=(\lambda_j-\lambda_k)I`. The verdict does not depend on the row sum :math:`c>0`.

Public API: :func:`rational_eigenvectors`, :func:`eigen_enclosure`, :class:`Enclosure`,
:func:`enclosure_certificate`, :func:`a_enclosure`, :func:`class_verdict`, :func:`encode_data`,
:func:`verdict_from_data`, :func:`verdict_from_strings`, :func:`verdict_certificate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from fractions import Fraction
from typing import Any, TypedDict

import numpy as np
import sympy as sp
from mpmath import iv

from .. import core
from ..claims import claim as canonical_claim

SQRT2_UP = Fraction(14142136, 10**7)


def _fr(x: Any) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, sp.Rational):
        return Fraction(int(x.p), int(x.q))
    if isinstance(x, str):
        return Fraction(x)
    return Fraction(x)


def sqrt_up(q: Fraction) -> Fraction:
    """A rational :math:`s\\ge\\sqrt q` (exact check :math:`s^2\\ge q`)."""
    if q <= 0:
        return Fraction(0)
    s = Fraction(math.sqrt(float(q))) if float(q) > 0 else Fraction(1, 10**150)
    s = s * Fraction(2**50 + 1, 2**50) if s else Fraction(1, 10**150)
    while s * s < q:
        s *= 2
    return s


def _mat(M: Any) -> list[list[Fraction]]:
    if isinstance(M, sp.MatrixBase):
        return [[_fr(e) for e in M.row(i)] for i in range(M.rows)]
    if isinstance(M, list) and M and isinstance(M[0], list) and M[0] and isinstance(M[0][0], str):
        return [[Fraction(e) for e in row] for row in M]
    return [[_fr(e) for e in row] for row in core._to_fractions(core.rational_matrix(M))]


def _enc(M: list[list[Fraction]]) -> list[list[str]]:
    return [[str(e) for e in row] for row in M]


def rational_eigenvectors(V: np.ndarray) -> list[list[Fraction]]:
    """Float eigenvectors of symmetric ``V`` (descending eigenvalues) as exact rationals, columns."""
    w, U = np.linalg.eigh(np.asarray(V, float))
    U = U[:, ::-1]
    return [[Fraction(float(x)) for x in row] for row in U]


@dataclass
class Enclosure:
    """Rigorous eigen-enclosures: ``lo[k] <= lambda_k <= hi[k]`` (descending), ``mu`` the Rayleigh
    quotients, ``sin_theta[k]`` bounds the angle between ``u_k`` and ``v_k`` (None if the interval
    is not isolated), ``separated`` whether all intervals are disjoint (all eigenvalues simple)."""

    mu: list[Fraction]
    radius: list[Fraction]
    sin_theta: list[Fraction | None]
    separated: bool
    U: list[list[Fraction]]
    #: multiplicity of the eigenvalue of index k (1 unless :func:`exact_enclosure` proved it repeated)
    multiplicity: list[int] | None = None

    def mult(self, k: int) -> int:
        return 1 if self.multiplicity is None else self.multiplicity[k]

    def cluster(self, k: int) -> list[int]:
        """Indices sharing the eigenvalue of index ``k`` (``[k]`` when simple)."""
        return [j for j in range(len(self.mu)) if self.mu[j] == self.mu[k] and self.radius[j] == self.radius[k]] \
            if self.mult(k) > 1 else [k]

    @property
    def lo(self) -> list[Fraction]:
        return [m - r for m, r in zip(self.mu, self.radius)]

    @property
    def hi(self) -> list[Fraction]:
        return [m + r for m, r in zip(self.mu, self.radius)]

    def isolated(self, k: int) -> bool:
        """All intervals are pairwise disjoint (so each holds exactly one eigenvalue and the
        eigenvector bound of interval k is valid)."""
        return self.sin_theta[k] is not None

    def interval(self, k: int) -> Any:
        return iv.mpf([_iv_lo(self.lo[k]), _iv_hi(self.hi[k])])


def _iv_lo(q: Fraction) -> Any:
    return (iv.mpf(q.numerator) / iv.mpf(q.denominator)).a


def _iv_hi(q: Fraction) -> Any:
    return (iv.mpf(q.numerator) / iv.mpf(q.denominator)).b


def eigen_enclosure(V: Any, U: list[list[Fraction]] | None = None) -> Enclosure:
    """Enclosures of the eigenvalues of rational symmetric ``V`` from approximate eigenvectors
    ``U`` (columns; default: numpy's, rationalised), exact arithmetic."""
    Vq = _mat(V)
    d = len(Vq)
    if U is None:
        U = rational_eigenvectors(np.array([[float(e) for e in row] for row in Vq]))
    mus, rads = [], []
    for k in range(d):
        u = [U[i][k] for i in range(d)]
        uu = sum(x * x for x in u)
        Vu = [sum(Vq[i][j] * u[j] for j in range(d)) for i in range(d)]
        mu = sum(a * b for a, b in zip(u, Vu)) / uu
        res = [a - mu * b for a, b in zip(Vu, u)]
        mus.append(mu)
        rads.append(sqrt_up(sum(x * x for x in res) / uu))
    lo = [m - r for m, r in zip(mus, rads)]
    hi = [m + r for m, r in zip(mus, rads)]
    # Each interval holds at least one eigenvalue; only if all d are pairwise disjoint does each
    # hold exactly one, and only then is the distance to the other intervals a spectral gap.
    disjoint = all(hi[j] < lo[k] or lo[j] > hi[k] for k in range(d) for j in range(k + 1, d))
    sins: list[Fraction | None] = []
    for k in range(d):
        if not disjoint:
            sins.append(None)
            continue
        gaps = [lo[j] - mus[k] if lo[j] > mus[k] else mus[k] - hi[j] for j in range(d) if j != k]
        delta = min(gaps) if gaps else None
        sins.append(Fraction(0) if delta is None else min(Fraction(1), rads[k] / delta))
    ordered = all(lo[k] > hi[k + 1] for k in range(d - 1))
    return Enclosure(mus, rads, sins, ordered and all(s is not None for s in sins), U)


def _arb_fractions(x: Any) -> tuple[Fraction, Fraction]:
    """Exact rational endpoints of an ``arb`` ball (midpoint and radius are dyadic)."""
    m, e = x.mid().man_exp()
    rm, re_ = x.rad().man_exp()
    mid = Fraction(int(m)) * Fraction(2) ** int(e)
    rad = Fraction(int(rm)) * Fraction(2) ** int(re_)
    return mid - rad, mid + rad


def _charpoly(Vq: list[list[Fraction]]) -> Any:
    from flint import fmpq, fmpq_mat

    return fmpq_mat([[fmpq(e.numerator, e.denominator) for e in row] for row in Vq]).charpoly()


def exact_eigenvalues(V: Any) -> list[tuple[Fraction, Fraction, int]] | None:
    r"""Distinct eigenvalues of rational symmetric ``V`` with their multiplicities, exactly:
    :math:`\chi_V` over :math:`\mathbb Q` (python-flint), its roots isolated in rigorous ``arb``
    balls with their multiplicities (Arb's squarefree factorisation and root isolation), refined
    until the balls are pairwise disjoint. Descending ``(lo, hi, multiplicity)``; None if a root
    is not real or the balls cannot be separated."""
    from flint import ctx

    Vq = _mat(V)
    poly = _charpoly(Vq).numer()
    old = ctx.prec
    try:
        for prec in (64, 128, 256, 1024, 4096):
            ctx.prec = prec
            roots = poly.complex_roots()
            if any(not r.imag.contains(0) for r, _ in roots):
                return None
            bounds = sorted(((*_arb_fractions(r.real), int(m)) for r, m in roots), key=lambda t: -t[0])
            if all(bounds[i][0] > bounds[i + 1][1] for i in range(len(bounds) - 1)):
                return bounds
        return None
    finally:
        ctx.prec = old


def exact_enclosure(V: Any, U: list[list[Fraction]] | None = None) -> Enclosure | None:
    r"""Eigen-enclosures from :func:`exact_eigenvalues` when the Krylov–Weinstein intervals overlap
    (a repeated or nearly repeated eigenvalue). Index :math:`k` (descending, with multiplicity)
    gets the ball of its distinct eigenvalue; a simple eigenvalue also gets the Davis–Kahan bound
    :math:`\sin\theta_k\le r_k/\delta_k`, :math:`\delta_k` the distance from the Rayleigh quotient
    of :math:`u_k` to the other eigenvalues' balls (valid for any :math:`\mu`: the part of
    :math:`u_k` orthogonal to :math:`v_k` has :math:`\|(V-\mu)w\|\ge\delta_k\|w\|`); a repeated one
    gets ``None``. ``separated`` is True iff every eigenvalue is simple and isolated."""
    Vq = _mat(V)
    d = len(Vq)
    vals = exact_eigenvalues(Vq)
    if vals is None or sum(m for _, _, m in vals) != d:
        return None
    kw = eigen_enclosure(Vq, U)
    U = kw.U
    lo: list[Fraction] = []
    hi: list[Fraction] = []
    mult: list[int] = []
    which: list[int] = []
    for i, (a, b, m) in enumerate(vals):
        lo += [a] * m
        hi += [b] * m
        mult += [m] * m
        which += [i] * m
    sins: list[Fraction | None] = []
    for k in range(d):
        if mult[k] > 1:
            sins.append(None)
            continue
        mu, r = kw.mu[k], kw.radius[k]
        gaps = [max(a - mu, mu - b) for i, (a, b, _) in enumerate(vals) if i != which[k]]
        delta = min(gaps) if gaps else None
        if delta is not None and delta <= 0:
            sins.append(None)
            continue
        sins.append(Fraction(0) if delta is None else min(Fraction(1), r / delta))
    mid = [(a + b) / 2 for a, b in zip(lo, hi)]
    rad = [(b - a) / 2 for a, b in zip(lo, hi)]
    return Enclosure(mid, rad, sins, all(m == 1 for m in mult) and all(x is not None for x in sins), U, mult)


def enclosure_certificate(V: Any, enc: Enclosure) -> core.Certificate:
    """Certificate that every eigenvalue of ``V`` is simple, with the stated enclosures."""
    Vq = _mat(V)
    data = {"V": _enc(Vq), "U": _enc(enc.U),
            "lo": [str(x) for x in enc.lo], "hi": [str(x) for x in enc.hi]}
    return core.Certificate("symmetric_eigen_enclosure", canonical_claim("symmetric_eigen_enclosure", data) or "",
                            data, "exact rational residuals (Krylov-Weinstein)")


def _check_enclosure(data: dict[str, Any]) -> bool:
    Vq = [[Fraction(e) for e in row] for row in data["V"]]
    if any(Vq[i][j] != Vq[j][i] for i in range(len(Vq)) for j in range(len(Vq))):
        return False
    enc = eigen_enclosure(Vq, [[Fraction(e) for e in row] for row in data["U"]])
    lo = [Fraction(x) for x in data["lo"]]
    hi = [Fraction(x) for x in data["hi"]]
    return enc.separated and all(a <= b for a, b in zip(lo, enc.lo)) and all(a >= b for a, b in zip(hi, enc.hi))


def a_enclosure(M: Any, enc: Enclosure, k: int) -> tuple[Fraction, Fraction] | None:
    """Rational bounds on :math:`v_k^\\top Mv_k` (``M`` already includes the temperature), or None
    if :math:`\\lambda_k` is not isolated."""
    s = enc.sin_theta[k]
    if s is None:
        return None
    Mq = _mat(M)
    d = len(Mq)
    u = [enc.U[i][k] for i in range(d)]
    uu = sum(x * x for x in u)
    val = sum(u[i] * Mq[i][j] * u[j] for i in range(d) for j in range(d)) / uu
    fro = sqrt_up(sum(e * e for row in Mq for e in row))
    eps = 2 * SQRT2_UP * fro * s
    return val - eps, val + eps


def class_verdict(lam: list[Any], a: Any, k: int, n1: int, n2: int, variant: str = "self_attention") -> tuple[str, str]:
    """Rigorous verdict ``("stable" | "unstable" | "unknown", reason)`` at the consensus/bipartite
    class :math:`(k, n_1, n_2)` from interval eigenvalues ``lam`` (descending) and interval
    :math:`a_k` (see the module docstring)."""
    lk = lam[k]
    if variant == "oja":
        vals = [lam[j] - lk for j in range(len(lam)) if j != k]
        if all(v.b < 0 for v in vals):
            return "stable", "S_j = (lambda_j - lambda_k) I < 0 for all j != k"
        if any(v.a > 0 for v in vals):
            return "unstable", "lambda_j > lambda_k for some j"
        return "unknown", "an eigenvalue gap lambda_j - lambda_k is not separated from 0"
    e1, e2 = (iv.exp(a), iv.exp(-a)) if variant == "self_attention" else (iv.mpf(1), iv.mpf(1))
    s1 = n1 * e1 - n2 * e2
    s2 = n2 * e1 - n1 * e2
    unknown = []
    unstable = []
    for n_l, s_l, name in ((n1, s1, "1"), (n2, s2, "2")):
        if n_l >= 2:
            v = -lk * s_l
            if v.a > 0:
                unstable.append(f"within-group mode of group {name}: -lambda_k sigma_{name} > 0")
            elif not v.b < 0:
                unknown.append(f"within-group mode of group {name} not separated from 0")
    for j in range(len(lam)):
        if j == k:
            continue
        lj = lam[j]
        if n1 and n2:
            p = lj * n1 * e1 - lk * s1
            q = lj * n2 * e1 - lk * s2
            tr = p + q
            det = p * q - lj * lj * (n1 * n2) * e2 * e2
            if det.b < 0 or tr.a > 0:
                unstable.append(f"j={j + 1}: quotient block has a positive eigenvalue (trace {float(tr.mid):.3g}, det {float(det.mid):.3g})")
            elif not (tr.b < 0 and det.a > 0):
                unknown.append(f"j={j + 1}: quotient block trace/det not separated from 0")
        else:
            nl, sl = (n1, s1) if n1 else (n2, s2)
            v = lj * nl * e1 - lk * sl
            if v.a > 0:
                unstable.append(f"j={j + 1}: lambda_j > lambda_k (consensus)")
            elif not v.b < 0:
                unknown.append(f"j={j + 1}: consensus mode not separated from 0")
    if unstable:
        return "unstable", unstable[0]
    if unknown:
        return "unknown", unknown[0]
    return "stable", "P = diag(Z) (x) I is a Lyapunov matrix: every invariant block of S_j is negative definite"


class SpectralData(TypedDict):
    r"""The rational data shared by the certificates of one parameter set: :math:`V`, its eigenbasis :math:`U`, :math:`M_\beta`."""

    V: list[list[str]]
    U: list[list[str]]
    M: list[list[str]]


def encode_data(V: Any, Mbeta: Any, enc: Enclosure) -> SpectralData:
    """``{"V", "U", "M"}`` as rational strings (shared by the certificates of one parameter set)."""
    return {"V": _enc(_mat(V)), "U": _enc(enc.U), "M": _enc(_mat(Mbeta))}


def verdict_certificate(V: Any, Mbeta: Any, enc: Enclosure, k: int, n1: int, n2: int, variant: str,
                        claim: str, encoded: SpectralData | None = None) -> core.Certificate:
    """Certificate of a class verdict; :func:`core.recheck` recomputes the enclosures, the
    interval of :math:`a_k` and the interval trace/determinant tests from the data."""
    data = {**(encoded or encode_data(V, Mbeta, enc)), "k": k, "n1": n1, "n2": n2, "variant": variant, "claim": claim}
    return core.Certificate("attention_bipartite_spectrum", canonical_claim("attention_bipartite_spectrum", data) or "",
                            data, "exact eigen-enclosures + interval arithmetic (mpmath iv)")


Strings = tuple[tuple[str, ...], ...]


def _strings(M: list[list[str]]) -> Strings:
    return tuple(tuple(row) for row in M)


@lru_cache(maxsize=64)
def _intervals(V: Strings, U: Strings, M: Strings) -> tuple[list[Any], list[Any]] | None:
    """Interval eigenvalues and interval :math:`a_k` (all k) from certificate strings, or None if
    V, U and M are not all square of one size, V is not symmetric or the enclosures are not pairwise disjoint. Memoised on the strings: equal
    data give equal results, so a re-check of the same data reuses the computation."""
    d = len(V)
    if any(len(rows) != d or any(len(row) != d for row in rows) for rows in (V, U, M)):
        return None  # V, U (eigenvectors) and M are all d x d: a row more or less is not this certificate's data
    Vq = [[Fraction(e) for e in row] for row in V]
    if any(Vq[i][j] != Vq[j][i] for i in range(d) for j in range(d)):
        return None
    Uq = [[Fraction(e) for e in row] for row in U]
    enc = spectral_enclosure(Vq, Uq)
    if enc is None:
        return None
    Mq = [[Fraction(e) for e in row] for row in M]
    lam = [enc.interval(j) for j in range(d)]
    avals: list[Any] = []
    for k in range(d):
        ab = a_enclosure(Mq, enc, k)
        avals.append(None if ab is None else iv.mpf([_iv_lo(ab[0]), _iv_hi(ab[1])]))
    return lam, avals, [enc.mult(k) for k in range(d)]


def spectral_enclosure(V: Any, U: list[list[Fraction]] | None = None) -> Enclosure | None:
    """Krylov–Weinstein enclosures when they separate every eigenvalue, else
    :func:`exact_enclosure` (exact characteristic polynomial), else None."""
    enc = eigen_enclosure(V, U)
    if all(enc.isolated(j) for j in range(len(enc.mu))):
        return enc
    return exact_enclosure(V, enc.U)


def verdict_from_strings(V: Strings, U: Strings, M: Strings, k: int, n1: int, n2: int, variant: str) -> tuple[str, str]:
    """The verdict from rational data given as strings (also the re-check)."""
    got = _intervals(V, U, M)
    if got is None:
        return "unknown", "V is not symmetric or its eigenvalues could not be enclosed"
    lam, avals, mult = got
    if mult[k] > 1:
        return subspace_verdict(lam, M, k, n1, n2, mult[k], variant)
    a = avals[k] if variant == "self_attention" else iv.mpf(0)
    if a is None:
        return "unknown", f"v_{k + 1}^T M v_{k + 1} could not be enclosed (eigenvalue gap too small for Davis-Kahan)"
    return class_verdict(lam, a, k, n1, n2, variant)


#: subintervals of a in ``[-|M|_F, |M|_F]`` for the subspace classes' interval test (dependency of e^a).
SUBSPACE_PIECES = 64


def subspace_verdict(lam: list[Any], M: Strings, k: int, n1: int, n2: int, mult: int, variant: str) -> tuple[str, str]:
    r"""Verdict on the subspace class :math:`x_i=s_iw`, :math:`w` any unit vector of the eigenspace
    :math:`E_k` of a repeated eigenvalue (dimension ``mult`` :math:`\ge2`). Every such point is an
    equilibrium (:math:`Vw=\lambda_kw`), so they form a continuum and none is asymptotically
    stable: ``not_asymptotically_stable``. It is ``unstable`` (every point of the continuum) when
    the interval test of :func:`class_verdict` finds a positive eigenvalue for every
    :math:`a=w^\top Mw\in[-\|M\|_F,\|M\|_F]` (the decoupling holds at any eigenvector :math:`w`)."""
    if variant != "self_attention" or n1 == 0 or n2 == 0:
        pieces = [iv.mpf(0)]  # consensus: every block is e^a times an a-free expression, the signs do not depend on a
    else:
        F = sqrt_up(sum(Fraction(e) ** 2 for row in M for e in row))
        cuts = [-F + 2 * F * Fraction(i, SUBSPACE_PIECES) for i in range(SUBSPACE_PIECES + 1)]
        pieces = [iv.mpf([_iv_lo(lo), _iv_hi(hi)]) for lo, hi in zip(cuts, cuts[1:])]
    verdicts = [class_verdict(lam, a, k, n1, n2, variant) for a in pieces]
    status, why = ("", "")
    if all(v == "unstable" for v, _ in verdicts):
        status = "unstable"
        why = verdicts[0][1] if len(pieces) == 1 else \
            f"on each of {len(pieces)} subintervals of a = w^T M w in [-|M|_F, |M|_F] a block has a positive eigenvalue (first: {verdicts[0][1]})"
    if status == "unstable":
        return "unstable", f"every point of the {mult}-dimensional eigenspace class is unstable: {why}"
    return ("not_asymptotically_stable",
            f"lambda_{k + 1} has multiplicity {mult} (exact characteristic polynomial): x_i = s_i w is an equilibrium for "
            f"every unit w of its eigenspace, a continuum, so no point of it is asymptotically stable")


def verdict_from_data(V: Any, Mbeta: Any, enc: Enclosure, k: int, n1: int, n2: int, variant: str,
                      encoded: SpectralData | None = None) -> tuple[str, str]:
    """The verdict from rational data (``encoded`` = :func:`encode_data`, computed if absent)."""
    e = encoded or encode_data(V, Mbeta, enc)
    return verdict_from_strings(_strings(e["V"]), _strings(e["U"]), _strings(e["M"]), k, n1, n2, variant)


def _check_verdict(data: dict[str, Any]) -> bool:
    got, _ = verdict_from_strings(_strings(data["V"]), _strings(data["U"]), _strings(data["M"]), int(data["k"]),
                                  int(data["n1"]), int(data["n2"]), data["variant"])
    return got == data["claim"] and data["claim"] in ("stable", "unstable", "not_asymptotically_stable")


