r"""Scalar conditions of the gaussian theorems on certified eigenvalue bounds (gaussian paper).

Two sided bounds of an extreme eigenvalue of a symmetric rational :math:`M`, each with its witness:

* :math:`\lambda_{\min}(M)\ge\ell` because :math:`M-\ell I\succeq0` (decided by the checkers' own
  inertia, :mod:`.second_opinion`); :math:`\lambda_{\min}(M)\le v^\top Mv/v^\top v` for any rational
  :math:`v\ne0` (Rayleigh). :math:`\lambda_{\max}(M)=-\lambda_{\min}(-M)`.

Kind ``lemma23_condition`` (Lemma 2.3 / Prop. 2.4): :math:`8\|B\|_2\lambda_{\max}(\Sigma_0)<1`.
*holds*: :math:`uI-B^\top B\succeq0`, :math:`wI-\Sigma_0\succeq0`, :math:`w\ge0`, :math:`64uw^2<1`
(so :math:`64\|B\|^2\lambda_{\max}^2<1`). *fails*: Rayleigh vectors :math:`x,y` with
:math:`\ell_B=|Bx|^2/|x|^2\le\|B\|^2`, :math:`\ell_S=y^\top\Sigma_0y/|y|^2\le\lambda_{\max}(\Sigma_0)`,
:math:`\ell_S\ge0` and :math:`64\ell_B\ell_S^2>1`.

Kind ``lemma44_design`` (Lemma 4.4 read backwards, ``flowcert design``): :math:`\Sigma\succ0` and
:math:`M\Sigma+\Sigma M^\top=0` exactly for :math:`M=A+V\Sigma B`, i.e. :math:`\Sigma` solves (18) with this
:math:`A`; then :math:`\Sigma^{-1/2}M\Sigma^{1/2}` is skew and :math:`\operatorname{spec}M\subset i\mathbb R`.
The checker multiplies out the given :math:`A`; it does not rebuild it from the design formula.

Kind ``thm48_trace_condition`` (Thm 4.8 (2), eq. (20)): with
:math:`\alpha=\lambda_{\min}(A+A^\top)`, :math:`\beta=2\lambda_{\min}(V)\lambda_{\min}(B)/d`,
the condition :math:`\beta>0` and :math:`\beta\operatorname{tr}\Sigma_0+\alpha>0`. Each smallest
eigenvalue is enclosed by a certified lower bound and a Rayleigh upper bound; interval arithmetic
then proves the condition (``value`` true) or its negation (``value`` false: the upper bounds give
:math:`\beta\le0` or :math:`\beta\operatorname{tr}\Sigma_0+\alpha\le0`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from . import core
from .diagonal import Diagonal, diagonal_form
from .lowrank import LowRank, integer_matrix, is_factored

__all__ = ["lemma23_certificate", "factored_norm_bound", "thm48_trace_certificate", "lemma44_design_certificate"]


def _q(x: Any) -> Any:
    return core.to_fmpq(x)


def _rayleigh(M: Any, v: list[str]) -> Any:
    x = core.qmat([[s] for s in v])
    den = (x.transpose() * x)[0, 0]
    if den == 0:
        raise ValueError("zero Rayleigh vector")
    return (x.transpose() * M * x)[0, 0] / den


def _gram_rayleigh(B: Any, v: list[str]) -> Any:
    r""":math:`x^\top B^\top Bx/x^\top x=\|Bx\|^2/\|x\|^2`, exactly, without forming :math:`B^\top B`
    (:math:`O(d^2)` instead of :math:`O(d^3)`: the same number as :func:`_rayleigh` of :math:`B^\top B`)."""
    x = core.qmat([[s] for s in v])
    den = (x.transpose() * x)[0, 0]
    if den == 0:
        raise ValueError("zero Rayleigh vector")
    y = B * x
    return (y.transpose() * y)[0, 0] / den


def _lower_holds(M: Any, ell: Any) -> bool:
    from .second_opinion import is_psd

    return is_psd(core.shift(M, ell))


def _float_vector(M: np.ndarray, top: bool) -> list[str]:
    w, U = np.linalg.eigh(0.5 * (M + M.T))
    u = U[:, -1 if top else 0]
    u = u / max(float(np.abs(u).max()), 1e-300)
    return [str(int(x)) for x in np.round(u * 2**30)]


def _rows(M: Any) -> list[list[Any]]:
    """The rows of an ``fmpq_mat`` as lists of ``fmpq`` (what :func:`~.rounding.is_pd_rounded` reads)."""
    return [[M[i, j] for j in range(M.ncols())] for i in range(M.nrows())]


#: largest inner dimension k whose k x k Gram conditions are also tried by exact inertia when the rigorous float
#: Cholesky (:func:`~flowcert.certificates.rounding.is_pd_rounded`, never a false True) does not prove them
EXACT_GRAM_MAX = 48


def factored_norm_bound(N: LowRank, u: Any) -> bool:
    r"""Proof of :math:`\|N\|_2^2\le u` for :math:`N=\sqrt q\,LR` on :math:`k\times k` Gram matrices: with
    :math:`G=L^\top L\succ0` and :math:`H=RR^\top`, :math:`\|N\|^2=q\,\lambda_{\max}(G^{1/2}HG^{1/2})`, and
    :math:`uG-qGHG\succeq0` is :math:`G^{1/2}(uI-qG^{1/2}HG^{1/2})G^{1/2}\succeq0`, a congruence by the
    invertible :math:`G^{1/2}`. Tried with the roles of :math:`L` and :math:`R^\top` exchanged too
    (:math:`\|N\|=\|N^\top\|`). Exact integers (scaled by powers of two); positive definiteness proved by a
    rigorous float Cholesky of the exact matrices, and by exact inertia up to :data:`EXACT_GRAM_MAX`."""
    import flint

    from .rounding import is_pd_rounded
    from .second_opinion import is_psd

    u, q = _q(u), _q(str(N.scale_squared))
    if u < 0:
        return False
    for left, right in ((N.L, N.R), (N.R.T, N.L.T)):
        Zl, el = integer_matrix(left)
        Zr, er = integer_matrix(right)
        G, H = Zl.transpose() * Zl, Zr * Zr.transpose()  # 2^(2 el) L^T L, 2^(2 er) R R^T
        Gq = flint.fmpq_mat(G)
        if not (is_pd_rounded(_rows(Gq)) or (Gq.nrows() <= EXACT_GRAM_MAX and core.is_pd(Gq))):
            continue
        # (u G - q G H G) scaled by 2^(4 el + 2 er) > 0
        M = Gq * (u * flint.fmpz(2) ** (2 * el + 2 * er)) - flint.fmpq_mat(G * H * G) * q
        if is_pd_rounded(_rows(M)) or (M.nrows() <= EXACT_GRAM_MAX and is_psd(M)):
            return True
    return False


def _factored_rayleigh(N: LowRank, v: list[str]) -> Any:
    r""":math:`\|Nx\|^2/\|x\|^2=q\|L(Rx)\|^2/\|x\|^2` exactly, in :math:`O(dk)`."""
    import flint

    x = flint.fmpz_mat(len(v), 1, [int(s) for s in v])
    den = (x.transpose() * x)[0, 0]
    if den == 0 or len(v) != N.shape[1]:
        raise ValueError("zero Rayleigh vector, or of the wrong length")
    Zl, el = integer_matrix(N.L)
    Zr, er = integer_matrix(N.R)
    y = Zl * (Zr * x)  # 2^(el + er) L R x
    return _q(str(N.scale_squared)) * flint.fmpq((y.transpose() * y)[0, 0], den * flint.fmpz(2) ** (2 * (el + er)))


def _factored_top_vector(N: LowRank) -> list[str]:
    """A float top right singular vector of the factored N, as integers (a Rayleigh vector)."""
    Qr, Tr = np.linalg.qr(N.R.T)  # N = sqrt(q) L Tr^T Qr^T
    w = np.linalg.svd(N.L @ Tr.T, full_matrices=False)[2][0]
    u = Qr @ w
    u = u / max(float(np.abs(u).max()), 1e-300)
    return [str(int(x)) for x in np.round(u * 2**30)]


def _sigma0(data: dict[str, Any]) -> tuple[int, Any, Any] | None:
    r"""``(d, below, rayleigh)`` of a symmetric :math:`\Sigma_0`: ``below(w)`` proves :math:`\lambda_{\max}\le w`,
    ``rayleigh(y)`` is :math:`y^\top\Sigma_0y/y^\top y`; a diagonal form is read off its entries. None: not symmetric."""
    D = diagonal_form(data["Sigma0"])
    if D is not None:
        return D.n, lambda w: D.inertia(w)[0] == 0, D.rayleigh
    S = core.qmat(data["Sigma0"])
    if S != S.transpose():
        return None
    return S.nrows(), lambda w: _lower_holds(-S, -w), lambda y: _rayleigh(S, y)


def _check_lemma23(data: dict[str, Any]) -> bool:
    sigma = _sigma0(data)
    if sigma is None:
        return False
    d, below, rayleigh = sigma
    if is_factored(data["B"]):
        N = LowRank.from_json(data["B"])
        norm_below, gram_rayleigh = (lambda u: factored_norm_bound(N, u)), (lambda x: _factored_rayleigh(N, x))
        shape = N.shape
    else:
        B = core.qmat(data["B"])
        norm_below, gram_rayleigh = (lambda u: _lower_holds(-(B.transpose() * B), -u)), (lambda x: _gram_rayleigh(B, x))
        shape = (B.nrows(), B.ncols())
    if shape != (d, d):
        return False
    if data["value"] is True:
        u, w = _q(data["u"]), _q(data["w"])
        return w >= 0 and 64 * u * w * w < 1 and below(w) and norm_below(u)
    if data["value"] is False:
        lb, ls = gram_rayleigh(data["x"]), rayleigh(data["y"])
        return ls >= 0 and 64 * lb * ls * ls > 1
    return False


def lemma23_certificate(B: np.ndarray | LowRank, Sigma0: np.ndarray | Diagonal, u: Fraction | None,
                        w: Fraction | None) -> core.Certificate | None:
    r"""The ``lemma23_condition`` certificate: with rational bounds ``u >= ||B||^2``, ``w >= lambda_max``
    it proves the condition; without, Rayleigh vectors of float eigenvectors try to refute it. A factored B
    (:class:`~flowcert.certificates.lowrank.LowRank`) is carried and checked factored, a diagonal
    :math:`\Sigma_0` (:class:`~flowcert.certificates.diagonal.Diagonal`) as its diagonal."""
    low, diag = isinstance(B, LowRank), isinstance(Sigma0, Diagonal)
    data: dict[str, Any] = {"B": B.to_json() if low else core.encode(B),
                            "Sigma0": Sigma0.to_json() if diag else core.encode(Sigma0)}
    if u is not None and w is not None:
        data.update(value=True, u=str(_q(u)), w=str(_q(w)))
    else:
        x = _factored_top_vector(B) if low else _float_vector(B.T @ B, top=True)
        if diag:
            top = max(range(Sigma0.n), key=lambda i: Sigma0.entries[i])
            y = ["1" if i == top else "0" for i in range(Sigma0.n)]
        else:
            y = _float_vector(Sigma0, top=True)
        data.update(value=False, x=x, y=y)
    from .claims import claim

    return core.Certificate("lemma23_condition", claim("lemma23_condition", data) or "", data,
                            checker="exact-eigenvalue-bounds")


def _enclosure(M: Any, lo: str, v: list[str]) -> tuple[Any, Any] | None:
    """``(lo, up)`` around lambda_min(M) once both witnesses check, else None."""
    ell, up = _q(lo), _rayleigh(M, v)
    return (ell, up) if ell <= up and _lower_holds(M, ell) else None


def _mul(x: tuple[Any, Any], y: tuple[Any, Any]) -> tuple[Any, Any]:
    p = [a * b for a in x for b in y]
    return min(p), max(p)


def _check_thm48(data: dict[str, Any]) -> bool:
    A, V, B, S = (core.qmat(data[k]) for k in ("A", "V", "B", "Sigma0"))
    d = A.nrows()
    if any(M != M.transpose() for M in (V, B, S)) or d == 0:
        return False
    encl = [_enclosure(M, data[f"{k}_lo"], data[f"{k}_v"])
            for k, M in (("alpha", A + A.transpose()), ("lam_v", V), ("lam_b", B))]
    if any(e is None for e in encl):
        return False
    alpha, lv, lb = encl  # type: ignore[misc]
    beta = _mul((_q(2) / d, _q(2) / d), _mul(lv, lb))
    tr = sum((S[i, i] for i in range(d)), _q(0))
    low, high = beta[0] * tr + alpha[0], beta[1] * tr + alpha[1]
    if data["value"] is True:
        return beta[0] > 0 and low > 0
    if data["value"] is False:
        return beta[1] <= 0 or high <= 0
    return False


def thm48_trace_certificate(A: np.ndarray, V: np.ndarray, B: np.ndarray, Sigma0: np.ndarray,
                            lows: tuple[Fraction, Fraction, Fraction], value: bool) -> core.Certificate:
    """The ``thm48_trace_condition`` certificate from certified lower bounds of lambda_min of
    A + A^T, V, B (in that order) and float eigenvectors for the Rayleigh upper bounds."""
    from .claims import claim

    data: dict[str, Any] = {k: core.encode(M) for k, M in (("A", A), ("V", V), ("B", B), ("Sigma0", Sigma0))}
    for k, M, lo in (("alpha", A + A.T, lows[0]), ("lam_v", V, lows[1]), ("lam_b", B, lows[2])):
        data[f"{k}_lo"] = str(_q(lo))
        data[f"{k}_v"] = _float_vector(np.asarray(M, float), top=False)
    data["value"] = bool(value)
    return core.Certificate("thm48_trace_condition", claim("thm48_trace_condition", data) or "", data,
                            checker="exact-eigenvalue-bounds")


def _check_lemma44(data: dict[str, Any]) -> bool:
    from .second_opinion import is_pd

    A, B, V, S = (core.qmat(data[k]) for k in ("A", "B", "V", "Sigma"))
    if S != S.transpose() or not is_pd(S):
        return False
    M = A + V * S * B
    return bool(data["residual_is_zero"]) is (M * S + S * M.transpose() == core.qmat([[0] * S.nrows()] * S.nrows()))


def lemma44_design_certificate(A: Any, B: Any, V: Any, Sigma: Any, residual_is_zero: bool) -> core.Certificate:
    """The ``lemma44_design`` certificate of a designed A (exact data)."""
    from .claims import claim

    data = {"A": core.encode(A), "B": core.encode(B), "V": core.encode(V), "Sigma": core.encode(Sigma),
            "residual_is_zero": bool(residual_is_zero)}
    return core.Certificate("lemma44_design", claim("lemma44_design", data) or "", data, checker="exact-products")
