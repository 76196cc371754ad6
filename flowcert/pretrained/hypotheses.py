r"""The papers' hypotheses decided on one pretrained head (matrices from :mod:`.heads`).

With :math:`P=Q^\top K` (scaled by :math:`\beta=1/\sqrt{d_h}>0`, which changes no sign, symmetry or
inertia) and :math:`U=W_OW_V`, read as one residual layer = one Euler step of the papers' flows:

* consensus Thm 3.2: :math:`P=P^\top\succ0`, :math:`U=I`; Thm 4.1: :math:`U=I`, :math:`P` bounded;
  Thm 5.1 (causal): :math:`U=I`, :math:`P` bounded; Thm 6.1 (causal): :math:`U=U^\top` with a simple
  positive top eigenvalue, :math:`P` bounded;
* multistability Assumption 1 (Thm 2): :math:`V=U` symmetric with a simple positive top eigenvalue;
* gaussian Thm 4.1: :math:`V=\eta I`; Thm 4.7: :math:`V\prec0`, :math:`B\succ0`; Thm 4.8:
  :math:`V\succ0`, :math:`B\succ0` (:math:`\succ,\prec` denote *symmetric* definite matrices, note 000
  §1.2), with :math:`B=P^\top/\sqrt{d_h}`, :math:`V=U`.

``fails`` verdicts carry exact certificates from :mod:`flowcert.certificates.lowrank`
(an asymmetric entry pair, or a 1x1/2x2 principal minor of the symmetric part of the wrong sign),
re-checked in exact rational arithmetic by :func:`flowcert.certificates.core.certified`. Where no
small certificate exists, the rank bound :math:`\operatorname{rank}\le d_h<d` refutes definiteness
and :math:`U=\eta I` (:math:`\eta\ne0`) structurally. A constant matrix is bounded (holds by type).
No verdict here needs a floating-point eigenvalue: float64 spectra are reported beside the verdicts
as information only.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from ..bindings import FAILS, HOLDS, HypothesisBinding, ProofRoute
from ..catalogue import TheoremResult
from ..certificates import core, lowrank
from ..certificates.hypotheses import holds_by
from ..records import HypothesisRecord, JSONObject, TheoremRecord
from .heads import CheckpointHead

__all__ = ["HEAD_HYPOTHESES", "HEAD_THEOREMS", "BY_TYPE", "head_subject", "head_location", "head_record",
           "head_theorems", "HeadLocation", "ProvedInertia", "SymmetricPart", "FactorSpectrum", "HeadRecord"]


class HeadLocation(TypedDict):
    """Where a head is in its checkpoint (:func:`head_location`): the digest, the slices of the weight
    tensors (``tensors``: Q, K, V, O) and how each factor ``N = A B`` is split (``factors``: P, U)."""

    checkpoint_sha256: str
    layer: int
    head: int
    tensors: dict[str, str]
    factors: dict[str, str]


class ProvedInertia(TypedDict):
    """The inertia of a symmetric part proved from the factors (None where it is not proved), and how."""

    inertia: list[int] | None
    method: str
    detail: str


class SymmetricPart(TypedDict):
    """The symmetric part of a head's product: its extreme float64 eigenvalues and its inertia (float, proved)."""

    lambda_max: float
    lambda_min: float
    inertia_float: list[int]
    inertia_proved: ProvedInertia


class FactorSpectrum(TypedDict):
    """The float64 spectrum of a head's product ``M`` or ``U`` (information, not a verdict)."""

    asymmetry: float
    eigenvalues_nonzero_part: list[list[float]]
    spectral_abscissa: float
    trace: float
    sym_part: SymmetricPart


class HeadRecord(TypedDict, total=False):
    """The JSON record of one head (:func:`head_record`); ``location`` only with the checkpoint's digest."""

    layer: int
    head: int
    d: int
    d_head: int
    location: HeadLocation
    conventions: dict[str, str | float]
    M: FactorSpectrum
    U: FactorSpectrum
    value_map_singular_values: list[float]
    sym_M_indefinite: HypothesisRecord
    sym_U_indefinite: HypothesisRecord
    theorems: list[TheoremRecord]

_STRUCT = "structural: rank <= d_head < d"


class _Evidence:
    """Certificates for one head, computed once and shared by the hypotheses."""

    def __init__(self, h: CheckpointHead) -> None:
        self.h = h
        P, U = h.Q.T @ h.K, h.O @ h.V
        self.lowrank = h.d_head < h.d
        self.asym: dict[str, core.Certificate | None] = {}
        self.minors: dict[str, dict[int, list[int] | None]] = {}
        for name, (A, B, N) in {"P": (h.Q.T, h.K, P), "U": (h.O, h.V, U)}.items():
            ij = lowrank.find_asymmetric_entry(N)
            self.asym[name] = None if ij is None else lowrank.asymmetry_certificate(A, B, ij, name)
            S = N + N.T
            self.minors[name] = {s: lowrank.find_minors(S, s) for s in (1, -1)}
        self.factors = {"P": (h.Q.T, h.K), "U": (h.O, h.V)}

    def not_symmetric(self, name: str, hyp: str) -> core.HypothesisResult:
        cert = self.asym[name]
        if cert is None:
            return core.HypothesisResult(hyp, "unknown", None, "float64 search", None,
                                         f"no asymmetric entry of {name} found in float64; exact symmetry not checked")
        return core.certified(hyp, "fails", cert, None, "exact rational entry pair (entry_asymmetry)")

    def not_definite(self, name: str, hyp: str, sign: int) -> core.HypothesisResult:
        """``sign * name`` succ 0 refuted: first by asymmetry, then a minor, then the rank bound."""
        if self.asym[name] is not None:
            r = self.not_symmetric(name, hyp)
            if r.status == "fails":
                r.detail = f"{name} is not symmetric, so not {'positive' if sign > 0 else 'negative'} definite"
                return r
        idx = self.minors[name][sign]
        if idx is not None:
            A, B = self.factors[name]
            cert = lowrank.minor_certificate(A, B, [(idx, sign)], name)
            return core.certified(hyp, "fails", cert, None, "exact rational principal minor (minor_not_psd)")
        if self.lowrank:
            return core.HypothesisResult(hyp, "fails", None, _STRUCT, None,
                                         f"{name} is d x d of rank <= {self.h.d_head} < {self.h.d}: singular")
        return core.HypothesisResult(hyp, "unknown", None, "none", None, "no small certificate found")

    def indefinite_sym(self, name: str) -> core.HypothesisResult:
        hyp = f"sym({name}) indefinite"
        mins = [(self.minors[name][s], s) for s in (1, -1)]
        if any(m is None for m, _ in mins):
            return core.HypothesisResult(hyp, "unknown", None, "none", None,
                                         "no 1x1/2x2 principal minor of one of the signs")
        A, B = self.factors[name]
        cert = lowrank.minor_certificate(A, B, [(m, s) for m, s in mins], name)  # type: ignore[misc]
        return core.certified(hyp, "holds", cert, None, "exact rational principal minors (minor_not_psd)")

    def no_semidefinite_multiple(self, name: str, hyp: str) -> core.HypothesisResult:
        r""":math:`\eta(N+N^\top)\preceq0` for some :math:`\eta\ne0` refuted by indefiniteness of sym(N)."""
        mins = [(self.minors[name][s], s) for s in (1, -1)]
        if any(m is None for m, _ in mins):
            return core.HypothesisResult(hyp, "unknown", None, "none", None,
                                         f"no principal minor certificate for both signs of sym({name})")
        A, B = self.factors[name]
        cert = lowrank.minor_certificate(A, B, [(m, s) for m, s in mins], name)  # type: ignore[misc]
        return core.certified(hyp, "fails", cert, None, "exact rational principal minors (minor_not_psd)",
                              f"sym({name}) is indefinite, so no nonzero multiple of it is negative semidefinite")

    def identity(self, hyp: str) -> core.HypothesisResult:
        r = self.not_symmetric("U", hyp)
        if r.status == "fails":
            r.detail = "U is not symmetric, hence not eta*I"
            return r
        if self.lowrank:
            return core.HypothesisResult(hyp, "fails", None, _STRUCT, None,
                                         "eta*I with eta != 0 has full rank; eta = 0 is not the identity")
        return r


def _bounded(name: str = "P(t) bounded") -> core.HypothesisResult:
    return holds_by(name, "by type", "a constant matrix (one layer, or a periodic stack) is bounded")


# ---------------------------------------------------------------------------------------------
# Declarations: what each head hypothesis is about, and which certificates decide it (issue 38)
# ---------------------------------------------------------------------------------------------


def _signs(proves: str, want: tuple[int, ...]) -> Any:
    """Direction of a ``minor_not_psd`` certificate: ``proves`` when it refutes ``s sym(N) >= 0`` for each
    ``s`` in ``want``, else None."""
    def direction(data: Any) -> str | None:
        return proves if {int(it["sign"]) for it in data["minors"]} >= set(want) else None
    return direction


def _decl(name: str, factor: str, asym: bool, signs: tuple[int, ...] = (), proves: str = FAILS) -> HypothesisBinding:
    """A head hypothesis about the product ``factor`` (P = Q^T K or U = W_O W_V): refuted by an asymmetric
    entry (``asym``), and/or decided by principal minors refuting ``s sym(factor) >= 0`` for every ``s`` in ``signs``."""
    subject = {"N": factor}
    proofs = [ProofRoute("entry_asymmetry", subject, FAILS)] if asym else []
    if signs:
        proofs.append(ProofRoute("minor_not_psd", subject, _signs(proves, signs)))
    return HypothesisBinding(name, tuple(proofs))


#: Every hypothesis a head record may report, declared once: its product and the certificates deciding it.
#: ``P(t) bounded`` holds by type (a constant matrix) and needs no certificate (:data:`BY_TYPE`).
HEAD_HYPOTHESES: dict[str, HypothesisBinding] = {h.name: h for h in (
    _decl("P symmetric", "P", True),
    _decl("P > 0", "P", True, (1,)),
    _decl("U = I", "U", True),
    _decl("V = W_O W_V symmetric", "U", True),
    _decl("V = eta I", "U", True),
    _decl("eta (B + B^T) <= 0 (eta != 0)", "P", False, (1, -1)),
    _decl("V < 0", "U", True, (-1,)),
    _decl("V > 0", "U", True, (1,)),
    _decl("B > 0", "P", True, (1,)),
    _decl("U symmetric", "U", True),
    _decl("sym(P) indefinite", "P", False, (1, -1), HOLDS),
    _decl("sym(U) indefinite", "U", False, (1, -1), HOLDS),
)}
#: Hypotheses that hold by the type of the parameters (no certificate)
BY_TYPE = frozenset({"P(t) bounded"})

#: The theorem records of a head: (id, label, statement, hypothesis names, prediction, causal models only)
HEAD_THEOREMS: tuple[tuple[str, str, str, tuple[str, ...], JSONObject, bool], ...] = (
    ("consensus:thm-3.2", "Theorem 3.2", r"P=P^\top\succ0,\ U=I,\ W=P\Rightarrow\text{every trajectory converges}",
     ("P symmetric", "P > 0", "U = I"), {"converges_to_equilibrium": True}, False),
    ("consensus:thm-4.1", "Theorem 4.1", r"U_\eta=I,\ P_\eta(t)\ \text{bounded, u.c.}\Rightarrow\text{consensus from a hemisphere}",
     ("U = I", "P(t) bounded"), {"consensus": "tokens converge to consensus"}, False),
    ("multistability:thm-2", "Theorem 2 (Assumption 1)", r"V=V^\top,\ \lambda_1>\lambda_2,\ \lambda_1>0",
     ("V = W_O W_V symmetric",), {"stable": "consensus at the top eigenvector"}, False),
    ("gaussian:thm-4.1", "Theorem 4.1", r"V=\eta I,\ \eta(B+B^\top)\preceq0",
     ("V = eta I", "eta (B + B^T) <= 0 (eta != 0)"), {"Sigma": "Riccati limit"}, False),
    ("gaussian:thm-4.7", "Theorem 4.7", r"V\prec0,\ B\succ0\Rightarrow\Sigma\ \text{bounded}",
     ("V < 0", "B > 0"), {"Sigma": "bounded"}, False),
    ("gaussian:thm-4.8", "Theorem 4.8", r"V\succ0,\ B\succ0\Rightarrow\text{finite-time blow-up}",
     ("V > 0", "B > 0"), {"Sigma": "blows_up"}, False),
    ("consensus:thm-5.1", "Theorem 5.1", r"\text{causal},\ U_\eta=I,\ P_\eta\ \text{bounded}",
     ("U = I", "P(t) bounded"), {"consensus": "tokens converge to consensus"}, True),
    ("consensus:thm-6.1", "Theorem 6.1", r"\text{causal},\ U=U^\top,\ \lambda_{\max}(U)\ \text{simple},>0",
     ("U symmetric", "P(t) bounded"), {"consensus": "tokens converge to consensus"}, True),
)


def _decide(ev: _Evidence, name: str) -> core.HypothesisResult:
    """The decision of head hypothesis ``name`` (declared in :data:`HEAD_HYPOTHESES` or :data:`BY_TYPE`)."""
    if name in BY_TYPE:
        return _bounded(name)
    factor = HEAD_HYPOTHESES[name].proofs[0].subject["N"]
    if name.endswith("indefinite"):
        return ev.indefinite_sym(factor)
    if name.startswith("eta (B"):
        return ev.no_semidefinite_multiple(factor, name)
    if name in ("U = I", "V = eta I"):
        return ev.identity(name)
    if name.endswith(("> 0", "< 0")):
        return ev.not_definite(factor, name, -1 if "<" in name else 1)
    return ev.not_symmetric(factor, name)


def head_subject(sha: str, layer: int, head: int, factor: str) -> str:
    """The subject of a head certificate: product ``factor`` (``P`` = Q^T K, ``U`` = W_O W_V) of head
    ``head`` of block ``layer`` of the checkpoint whose weight files have SHA-256 ``sha``."""
    return f"checkpoint:{sha}/layers/{int(layer)}/heads/{int(head)}/{factor}"


def head_location(sha: str, layer: int, head: int, d_head: int) -> HeadLocation:
    """Where a head is in its checkpoint: the digest, the weight tensors and slices of Q, K, V, O, and
    what the certificates' vectors are (rows of A, columns of B, for N = A B)."""
    lo, hi = head * d_head, (head + 1) * d_head
    return {"checkpoint_sha256": sha, "layer": int(layer), "head": int(head),
            "tensors": {"Q": f"layers[{layer}].Wq[{lo}:{hi}, :]", "K": f"layers[{layer}].Wk[{lo}:{hi}, :]",
                        "V": f"layers[{layer}].Wv[{lo}:{hi}, :]", "O": f"layers[{layer}].Wo[:, {lo}:{hi}]"},
            "factors": {"P": "Q^T K: a_i = Q[:, i], b_j = K[:, j]", "U": "O V: a_i = O[i, :], b_j = V[:, j]"}}


def _bind(res: core.HypothesisResult, subject: str | None) -> core.HypothesisResult:
    """``res`` with its certificate naming the checkpoint head it is about (after checking the declaration)."""
    import dataclasses

    cert = res.certificate
    if cert is None or subject is None:
        return res
    spec = HEAD_HYPOTHESES[res.name]
    proof = spec.proof(cert.kind)
    if proof is None or proof.direction(cert.data) != res.status:
        raise ValueError(f"'{res.name}': a {cert.kind} certificate does not prove {res.status}")
    return dataclasses.replace(res, certificate=dataclasses.replace(cert, subject={"N": f"{subject}{proof.subject['N']}"}))


def head_theorems(h: CheckpointHead, causal: bool, ev: _Evidence | None = None, sha: str | None = None) -> list[TheoremResult]:
    """The theorem records of the consensus, multistability and gaussian papers on one head (:data:`HEAD_THEOREMS`);
    with ``sha`` (the checkpoint's digest) every certificate names its subject (:func:`head_subject`)."""
    ev = ev or _Evidence(h)
    base = None if sha is None else head_subject(sha, h.layer, h.head, "")
    return [TheoremResult(tid, label, stmt, [_bind(_decide(ev, n), base) for n in names], dict(pred))
            for tid, label, stmt, names, pred, causal_only in HEAD_THEOREMS if causal or not causal_only]


def _inertia(A: np.ndarray, B: np.ndarray) -> ProvedInertia:
    inert = lowrank.symmetric_part_inertia(A, B)
    return {"inertia": None if inert is None else list(inert),
            "method": "F = [A, B^T] has full column rank (F^T F > 0: exact integer Gram + is_pd_rounded when "
                      "2kd <= 4096, else float64 Gram with an entrywise rounding bound + is_pd_float_rigorous), "
                      "then Sylvester's law of inertia for F J F^T",
            "detail": "recomputed from the stored weights on every run; the Gram matrix is not serialised"
            if inert is not None else "F^T F > 0 not proved (F may be rank deficient)"}


def _c(z: complex) -> list[float]:
    return [float(z.real), float(z.imag)]


def head_record(h: CheckpointHead, causal: bool, sha: str | None = None) -> HeadRecord:
    """JSON record of one head: float64 spectra (information) and certified theorem verdicts; with ``sha``
    (the checkpoint's digest) its ``location`` and every certificate's subject (:func:`head_subject`)."""
    ev = _Evidence(h)
    M, U = h.M, h.U
    eM, eU, sM, sU = h.eig_M(), h.eig_U(), h.eig_sym("M"), h.eig_sym("U")
    tol = lambda ev_: 1e-12 * max(1.0, float(np.max(np.abs(ev_))))  # noqa: E731
    info: dict[str, FactorSpectrum] = {}
    for name, N, e, s in (("M", M, eM, sM), ("U", U, eU, sU)):
        nrm = float(np.linalg.norm(N))
        info[name] = {
            "asymmetry": float(np.linalg.norm(N - N.T) / nrm) if nrm else 0.0,
            "eigenvalues_nonzero_part": [_c(z) for z in e],
            "spectral_abscissa": float(e.real.max()), "trace": float(np.trace(N)),
            "sym_part": {"lambda_max": float(s[0]), "lambda_min": float(s[-1]),
                         "inertia_float": [int((s > tol(s)).sum()), int((s < -tol(s)).sum()),
                                           int(h.d - (s > tol(s)).sum() - (s < -tol(s)).sum())],
                         "inertia_proved": _inertia(*ev.factors["P" if name == "M" else "U"])},
        }
    theorems = head_theorems(h, causal, ev, sha)
    base = None if sha is None else head_subject(sha, h.layer, h.head, "")
    location = {} if sha is None else {"location": head_location(sha, h.layer, h.head, h.d_head)}
    return {
        "layer": h.layer, "head": h.head, "d": h.d, "d_head": h.d_head, **location,
        "conventions": {"M": "Q^T K / sqrt(d_head), score s_ij = x_i^T M x_j", "B": "M^T (gaussian paper)",
                        "U": "W_O W_V (value-output map; gaussian/multistability V, consensus U)",
                        "value_map": "W_V (d_head x d)", "beta": h.beta},
        "M": info["M"], "U": info["U"],
        "value_map_singular_values": np.linalg.svd(h.V, compute_uv=False).tolist(),
        "sym_M_indefinite": _bind(ev.indefinite_sym("P"), base).to_json(),
        "sym_U_indefinite": _bind(ev.indefinite_sym("U"), base).to_json(),
        "theorems": [t.to_json() for t in theorems],
    }
