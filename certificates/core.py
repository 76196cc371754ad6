r"""Certificates: serialisable evidence for a claim, re-checked without trusting any solver.

Claims and the exact checks that decide them (all data rational, pivots exact):

* ``psd``: :math:`M\succeq0`; ``pd``: :math:`M-\epsilon I\succ0`; ``inertia``: the exact inertia
  (hence rank) of a symmetric :math:`M` (Sylvester's law, read off :math:`LDL^\top`).
* ``lyapunov``: :math:`P-\epsilon I\succeq0` and :math:`-(J^\top P+PJ)-\epsilon I\succeq0` with
  :math:`\epsilon>0`, hence every eigenvalue of :math:`J` has :math:`\operatorname{Re}\lambda<0`.
* ``unstable``: :math:`-(J^\top P+PJ)\succ0` and :math:`v^\top Pv<0`; by the inertia theorem of
  Ostrowski and Schneider, :math:`J` then has an eigenvalue with :math:`\operatorname{Re}\lambda>0`.
* ``kantorovich``: a zero of a quadratic map exists within radius :math:`r` of a rational point
  (see :mod:`flowcert.certificates.gaussian`).

A :class:`HypothesisResult` carries the verdict ``holds`` / ``fails`` / ``unknown``; ``holds`` and
``fails`` are only ever produced after :func:`recheck` has accepted the certificate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import sympy as sp

from . import exact

Status = str  # "holds" | "fails" | "unknown"


def rational_matrix(M: Any) -> sp.Matrix:
    """Exact rational ``sympy.Matrix`` of float, int or Fraction data (no rounding); a rational
    ``sympy.Matrix`` is returned as it is."""
    if isinstance(M, sp.MatrixBase):
        if not all(e.is_Rational for e in M):
            raise ValueError("matrix entries must be rational")
        return sp.Matrix(M)
    rows = exact.to_rational(M)
    return sp.Matrix([[sp.Rational(q.numerator, q.denominator) for q in row] for row in rows])


def _to_fractions(M: sp.Matrix) -> list[list[Fraction]]:
    return [[Fraction(int(e.p), int(e.q)) for e in M.row(i)] for i in range(M.rows)]


def encode(M: sp.Matrix) -> list[list[str]]:
    """Rational matrix as nested lists of ``"p/q"`` strings (exact, JSON-safe)."""
    return [[str(sp.Rational(e)) for e in M.row(i)] for i in range(M.rows)]


def decode(rows: list[list[str]]) -> sp.Matrix:
    """Inverse of :func:`encode`."""
    return sp.Matrix([[sp.Rational(e) for e in row] for row in rows])


def is_psd(M: sp.Matrix) -> bool:
    """Exact :math:`M\\succeq0` for a symmetric rational matrix."""
    return exact.is_psd_exact(_to_fractions(M))[0]


def is_pd(M: sp.Matrix) -> bool:
    """Exact :math:`M\\succ0` for a symmetric rational matrix."""
    return exact.is_pd_exact(_to_fractions(M))[0]


def negative_witness(M: sp.Matrix) -> sp.Matrix | None:
    """A rational ``v`` with :math:`v^\\top Mv<0`, or None when :math:`M\\succeq0`."""
    ok, w = exact.is_psd_exact(_to_fractions(M))
    return None if ok else sp.Matrix([sp.Rational(q.numerator, q.denominator) for q in w])


@dataclass
class Certificate:
    """Data plus the claim it supports; :func:`recheck` decides it from the data alone."""

    kind: str
    claim: str
    data: dict[str, Any]
    checker: str = "exact-ldl"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "claim": self.claim, "checker": self.checker, "data": self.data}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Certificate":
        return cls(obj["kind"], obj["claim"], obj["data"], obj.get("checker", "exact-ldl"))


def _check_psd(data: dict[str, Any]) -> bool:
    return is_psd(decode(data["M"]))


def _check_pd(data: dict[str, Any]) -> bool:
    M = decode(data["M"])
    margin = sp.Rational(data.get("margin", "0"))
    return margin >= 0 and is_pd(M - margin * sp.eye(M.rows))


def _check_lyapunov(data: dict[str, Any]) -> bool:
    J, P = decode(data["J"]), decode(data["P"])
    e = sp.Rational(data["margin"])
    eye = sp.eye(J.rows)
    return e > 0 and P == P.T and is_psd(P - e * eye) and is_psd(-(J.T * P + P * J) - e * eye)


def _check_unstable(data: dict[str, Any]) -> bool:
    J, P = decode(data["J"]), decode(data["P"])
    v = sp.Matrix([sp.Rational(e) for e in data["v"]])
    return P == P.T and is_pd(-(J.T * P + P * J)) and (v.T * P * v)[0, 0] < 0


def inertia_certificate(M: Any, what: str) -> Certificate:
    """Exact inertia :math:`(n_+, n_-, n_0)` of a symmetric matrix (rank :math:`n_++n_-`), by LDL^T."""
    Mq = rational_matrix(M)
    res = exact.ldl_inertia(_to_fractions(Mq))
    return Certificate("inertia", f"{what} has inertia ({res.n_pos}, {res.n_neg}, {res.n_zero})",
                       {"M": encode(Mq), "inertia": [res.n_pos, res.n_neg, res.n_zero]})


def _check_inertia(data: dict[str, Any]) -> bool:
    M = decode(data["M"])
    res = exact.ldl_inertia(_to_fractions(M))
    return M == M.T and [res.n_pos, res.n_neg, res.n_zero] == list(data["inertia"])


CHECKERS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "inertia": _check_inertia,
    "psd": _check_psd,
    "pd": _check_pd,
    "lyapunov": _check_lyapunov,
    "unstable": _check_unstable,
}


def register(kind: str, checker: Callable[[dict[str, Any]], bool]) -> None:
    """Add a checker for a new kind of claim (used by the system modules)."""
    CHECKERS[kind] = checker


def recheck(obj: Certificate | dict[str, Any]) -> bool:
    """Re-verify a certificate (object or its JSON) from its data alone.

    Returns
    -------
    bool
        True only if the exact check passes. Unknown kinds and malformed data give False.
    """
    try:
        cert = obj if isinstance(obj, Certificate) else Certificate.from_json(obj)
        checker = CHECKERS.get(cert.kind) if isinstance(cert.kind, str) else None
        if checker is None or not isinstance(cert.data, dict):
            return False
        return bool(checker(cert.data))
    except Exception:  # noqa: BLE001 - a checker that cannot finish has not verified anything
        return False


@dataclass
class HypothesisResult:
    """Verdict on one hypothesis: ``holds``, ``fails`` or ``unknown``, with its evidence."""

    name: str
    status: Status
    margin: float | None
    method: str
    certificate: Certificate | None = None
    detail: str = ""
    seconds: float = field(default=0.0, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "margin": self.margin,
            "method": self.method,
            "certificate": self.certificate.to_json() if self.certificate else None,
            "detail": self.detail,
        }


def certified(
    name: str, status: Status, cert: Certificate, margin: float | None, method: str, detail: str = ""
) -> HypothesisResult:
    """A verdict backed by ``cert``: ``unknown`` unless :func:`recheck` accepts it."""
    t0 = time.perf_counter()
    ok = recheck(cert)
    secs = time.perf_counter() - t0
    if not ok:
        return HypothesisResult(
            name, "unknown", margin, method, None, f"re-check of the {cert.kind} certificate failed; {detail}", secs
        )
    return HypothesisResult(name, status, margin, method, cert, detail, secs)


def psd_hypothesis(name: str, M: Any, what: str) -> HypothesisResult:
    """Exact verdict on :math:`M\\succeq0` for given float data (exact rationals, no rounding)."""
    Mq = rational_matrix(M)
    if Mq != Mq.T:
        return HypothesisResult(name, "fails", None, "exact symmetry", None, f"{what} is not symmetric")
    import numpy as np

    margin = float(np.linalg.eigvalsh(np.array(Mq.tolist(), dtype=float)).min())
    w = negative_witness(Mq)
    if w is None:
        cert = Certificate("psd", f"{what} is positive semidefinite", {"M": encode(Mq)})
        return certified(name, "holds", cert, margin, "exact rational LDL^T")
    value = (w.T * Mq * w)[0, 0]
    return HypothesisResult(
        name, "fails", margin, "exact rational LDL^T", None,
        f"witness v = {[str(e) for e in w]} gives v^T M v = {float(value):.3e} < 0",
    )
