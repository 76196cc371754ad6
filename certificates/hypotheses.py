"""Hypothesis checks shared by every system: exact definiteness and certified eigenvalue bounds.

:math:`M\\succ0`, :math:`M\\succeq0` are decided by exact rational LDL^T of the given float data
(no rounding: every float is a dyadic rational), and :math:`\\lambda_{\\min}(M)\\ge\\ell` by the
exact check :math:`M-\\ell I\\succeq0`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import flint
import numpy as np

from . import core, exact
from .diagonal import Diagonal


def definite_verdict(name: str, D: Diagonal, what: str, strict: bool) -> core.HypothesisResult:
    r"""Exact verdict on :math:`D\succ0` (``strict``) or :math:`D\succeq0` for a diagonal D: a ``pd``/``psd``
    certificate of its diagonal form, or a ``not_pd``/``not_psd`` witness :math:`e_i` at an entry
    :math:`a_i\le0` (:math:`<0`)."""
    from .claims import claim

    bad = [i for i, a in enumerate(D.entries) if (a <= 0 if strict else a < 0)]
    method, margin = "signs of the diagonal entries (exact)", (min(D.floats()) if D.n else 0.0)
    if not bad:
        data = {"M": D.to_json(), **({"margin": "0"} if strict else {})}
        cert = (core.Certificate("pd", claim("pd", data, {"M": what}) or "", data) if strict
                else core.Certificate("psd", claim("psd", data, {"M": what}) or "", data))
        return core.certified(name, "holds", cert, margin, method)
    data = {"M": D.to_json(), "v": ["1" if k == bad[0] else "0" for k in range(D.n)]}
    cert = (core.Certificate("not_pd", claim("not_pd", data, {"M": what}) or "", data) if strict
            else core.Certificate("not_psd", claim("not_psd", data, {"M": what}) or "", data))
    out = core.certified(name, "fails", cert, margin, method, f"{what} has the entry {D.entries[bad[0]]} at ({bad[0]},{bad[0]})")
    return out if out.status == "fails" else core.HypothesisResult(name, "fails", margin, method, None, "")


def holds_by(name: str, method: str, detail: str = "") -> core.HypothesisResult:
    """A hypothesis true by construction (the model or the parameter type), with its reason."""
    return core.HypothesisResult(name, "holds", None, method, None, detail)


def as_float(Mq: Any) -> np.ndarray:
    """Nearest float64 matrix of a rational one (for margins and eigenvalue estimates only)."""
    F = core.rounded_floats(core.qmat(Mq))
    if F is None:
        raise OverflowError("matrix entries beyond the float64 range")
    return F


def sym_part(A: np.ndarray | Diagonal) -> Any:
    """:math:`A+A^\\top` formed exactly in rationals (a float sum would round); a ``flint.fmpq_mat`` (a
    :class:`~.diagonal.Diagonal` for a diagonal A)."""
    if isinstance(A, Diagonal):
        return A.scaled(flint.fmpq(2))
    Aq = core.qmat(A)
    return Aq + Aq.transpose()


def gram(B: np.ndarray) -> Any:
    """:math:`B^\\top B` formed exactly in rationals; a ``flint.fmpq_mat``."""
    Bq = core.qmat(B)
    return Bq.transpose() * Bq


@core.memoised
def lower_eigenvalue_bound(M: Any) -> Fraction | None:
    """A rational :math:`\\ell` with :math:`M-\\ell I\\succeq0` proved exactly (M symmetric)."""
    Mq = core.qmat(M)
    if not core.is_symmetric(Mq):
        return None
    F = as_float(Mq)
    lam = float(np.linalg.eigvalsh(F).min())
    slacks = (1e-12, 1e-9, 1e-6, 1e-3)
    n = Mq.nrows()
    if n > exact.FAST_PATH_MIN_DIM:
        # the rounded Cholesky proves M - ell I > 0 once lambda_min(M - ell I) exceeds about
        # 2 (n + 1) u tr(M - ell I): try that slack first, with the fast test alone
        floor = 8 * (n + 1) * 2.0**-53 * max(float(np.trace(F)) - n * lam, 0.0) / max(1.0, abs(lam))
        for slack in sorted({floor, *slacks}):
            ell = Fraction(lam - slack * max(1.0, abs(lam)))
            if core.is_pd_fast(core.shift(Mq, ell)):
                return ell
        if n > exact.LDL_MAX_DIM:
            return None
    for slack in slacks:
        ell = Fraction(lam - slack * max(1.0, abs(lam)))
        if core.is_psd(core.shift(Mq, ell)):
            return ell
    return None


@core.memoised
def definite(M: Any, name: str, sign: int) -> core.HypothesisResult:
    r"""Exact verdict on :math:`\mathrm{sign}\cdot M\succ0` (M must be symmetric); a ``fails`` carries a
    witness certificate (``not_symmetric`` or ``not_pd``, :mod:`.predicates`) when one is found."""
    from .predicates import definiteness_witness

    what = f"{'' if sign > 0 else '-'}{name}"
    if isinstance(M, Diagonal):  # read off its entries, O(d)
        return definite_verdict(f"{what} > 0", M.scaled(flint.fmpq(sign)), what, True)
    Mq = core.qmat(M) * sign
    src = core.float_source(M, sign)  # sign * M as floats, when it is (its exact forms are memoised)
    given = Mq if src is None else src
    if not core.is_symmetric(Mq):
        w = definiteness_witness(given, strict=True)
        return _refuted(f"{what} > 0", w, None, "exact symmetry", f"{name} is not symmetric")
    margin = float(np.linalg.eigvalsh(as_float(Mq) if src is None else src).min())
    ok, witness, method = core.definiteness(Mq, strict=True)
    if ok:
        c = core.Certificate("pd", f"{what} is positive definite", {"M": core.encode(given), "margin": "0"})
        return core.certified(f"{what} > 0", "holds", c, margin, method)
    if ok is None:
        return core.HypothesisResult(f"{what} > 0", "unknown", margin, "size", None, method)
    return _refuted(f"{what} > 0", definiteness_witness(given, strict=True, witness=witness), margin, method,
                    f"smallest eigenvalue of {what} is {margin:.3e}")


def _refuted(name: str, cert: core.Certificate | None, margin: float | None, method: str, detail: str) -> core.HypothesisResult:
    """A ``fails`` backed by a witness certificate when there is one (re-checked), else uncertified."""
    if cert is None:
        return core.HypothesisResult(name, "fails", margin, method, None, detail)
    out = core.certified(name, "fails", cert, margin, f"{method}; exact witness", detail)
    return out if out.status == "fails" else core.HypothesisResult(name, "fails", margin, method, None, detail)


@core.memoised
def semidefinite(M: Any, name: str) -> core.HypothesisResult:
    """Exact verdict on :math:`M\\succeq0`."""
    return psd_hypothesis(f"{name} >= 0", M, name)


@core.memoised
def min_eigenvalue_upper_bound(M: Any) -> Fraction | None:
    r"""A rational :math:`u\ge\lambda_{\min}(M)`: the exact Rayleigh quotient :math:`v^\top Mv/v^\top v`
    of a float eigenvector rounded to integers (M symmetric; any nonzero v bounds from above)."""
    Mq = core.qmat(M)
    if not core.is_symmetric(Mq):
        return None
    U = np.linalg.eigh(as_float(Mq))[1]
    u = U[:, 0] / np.abs(U[:, 0]).max()
    v = [int(x) for x in np.round(u * 2**30)]
    if not any(v):
        return None
    vq = flint.fmpq_mat(len(v), 1, v)
    q = (vq.transpose() * Mq * vq)[0, 0] / (vq.transpose() * vq)[0, 0]
    return Fraction(int(q.p), int(q.q))


def upper_eigenvalue_bound(M: Any) -> Fraction | None:
    """A rational :math:`u` with :math:`uI-M\\succeq0` proved exactly (M symmetric)."""
    low = lower_eigenvalue_bound(-core.qmat(M))
    return None if low is None else -low


def _scientific(q: Fraction) -> str:
    """``q`` in ``%.3e`` notation, also beyond the float range (a witness of huge entries)."""
    try:
        return f"{float(q):.3e}"
    except OverflowError:
        e = len(str(abs(q.numerator))) - len(str(q.denominator))
        return f"{float(q / Fraction(10) ** e):.3f}e{e:+d}"


def psd_hypothesis(name: str, M: Any, what: str) -> core.HypothesisResult:
    r"""Exact verdict on :math:`M\succeq0` for given float data (exact rationals, no rounding); a ``fails``
    carries a ``not_symmetric`` / ``not_psd`` witness certificate when one is found."""
    from .predicates import definiteness_witness

    if isinstance(M, Diagonal):  # read off its entries, O(d)
        return definite_verdict(name, M, what, False)
    Mq = core.qmat(M)
    src = core.float_source(M)  # M as floats, when it is (its exact forms are memoised)
    given = Mq if src is None else src
    if not core.is_symmetric(Mq):
        w = definiteness_witness(given, strict=False)
        res = core.HypothesisResult(name, "fails", None, "exact symmetry", None, f"{what} is not symmetric")
        return res if w is None else _with_witness(res, w)
    F = core.rounded_floats(Mq) if src is None else src
    if F is None:
        F = np.array([float(Fraction(int(e.p), int(e.q))) for e in Mq.entries()], dtype=float).reshape(Mq.nrows(), Mq.ncols())
    margin = float(np.linalg.eigvalsh(F).min())
    ok, w, method = core.definiteness(Mq, strict=False)
    if ok:
        cert = core.Certificate("psd", f"{what} is positive semidefinite", {"M": core.encode(given)})
        return core.certified(name, "holds", cert, margin, method)
    if ok is None:
        return core.HypothesisResult(name, "unknown", margin, "size", None, method)
    if w is None:
        res = core.HypothesisResult(name, "fails", margin, method, None, f"{what} has a negative eigenvalue")
        cert = definiteness_witness(given, strict=False)
        return res if cert is None else _with_witness(res, cert)
    wq = core.qmat([[x] for x in w])
    value = (wq.transpose() * Mq * wq)[0, 0]
    shown = [str(e) for e in w]
    res = core.HypothesisResult(
        name, "fails", margin, method, None,
        f"witness $v$ = {shown[:16]}{' ...' if len(shown) > 16 else ''} gives $v^\\top Mv$ = "
        f"{_scientific(Fraction(int(value.p), int(value.q)))} < 0",
    )
    cert = definiteness_witness(given, strict=False, witness=w)
    return res if cert is None else _with_witness(res, cert)


def _with_witness(res: core.HypothesisResult, cert: core.Certificate) -> core.HypothesisResult:
    """``res`` (a ``fails``) with its witness certificate, once the certificate re-checks."""
    out = core.certified(res.name, "fails", cert, res.margin, res.method, res.detail)
    return out if out.status == "fails" else res
