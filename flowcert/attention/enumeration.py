r"""Equilibria of the self-attention flow on the sphere (multistability paper, note 001): the
consensus and bipartite classes at each eigenvector of :math:`V`, their certified verdicts, points
found by Newton from simulation limits, and Monte Carlo basins with Wilson intervals.

Consensus/bipartite points :math:`x_i=\pm v_k` are equilibria of
:math:`\dot x_i=(I-x_ix_i^\top)V\sum_jA_{ij}x_j`; their tangent linearisation splits into
invariant blocks whose spectra are in closed form (note D2–D4), decided in interval arithmetic by
:mod:`flowcert.certificates.attention.multistability`. A run is classified only once it has
settled (the field's norm below a tolerance), by Newton on the equilibrium equations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from .. import bindings as bd
from ..certificates import core
from ..certificates.attention import multistability as cm
from ..certificates.hypotheses import psd_hypothesis
from ..certificates.predicates import definiteness_witness, predicate_certificate
from ..errors import InputError
from ..numeric.attention import multistability as nm
from ..papers.multistability import (LAMBDA_POSITIVE, LAMBDA_SIMPLE, STABLE, STRUCTURE, V_FORMS, V_SYMMETRIC,
                                     class_subject as _class_subject)
from .params import AttentionParams
from .records import ClassRecord, EquilibriaBody, EquilibriumRecord, RunClassification, SimulationRecord
from ..records import Document

DEFAULT_CAP = 64
MAX_D, MAX_N = 64, 5000


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k / n`` (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def v_key(p: AttentionParams) -> str:
    """Which of :data:`V_FORMS` is the document's V."""
    return "heads" if p.variant == "self_attention" else "oja"


def class_subject(p: AttentionParams) -> dict[str, str]:
    """The subject of an ``attention_bipartite_spectrum`` certificate of ``p`` (and, without ``variant``, of a
    Krawczyk certificate): V, the scores beta Q^T K of head 0 and the variant."""
    return _class_subject(p.variant, bool(p.heads[0].from_P))


# ---------------------------------------------------------------------------------------
# the data of a parameter set, once
# ---------------------------------------------------------------------------------------


@dataclass
class Data:
    """Float and rational data of one constant head (V, beta M), the certified enclosures."""

    p: AttentionParams
    V: np.ndarray
    Mb: np.ndarray  # beta Q^T K (zero for the Oja variants)
    c: float
    symmetric: bool
    enc: cm.Enclosure | None
    lam: np.ndarray
    U: np.ndarray
    Mq: sp.Matrix | None
    Vq: sp.Matrix | None

    @property
    def encoded(self) -> cm.SpectralData:
        """Rational V, U, beta M as certificate strings (computed once)."""
        if not hasattr(self, "_encoded"):
            self._encoded = cm.encode_data(self.Vq, self.Mq, self.enc)
        return self._encoded

    @property
    def variant(self) -> str:
        return self.p.variant

    def a(self, k: int) -> float:
        return float(self.U[:, k] @ self.Mb @ self.U[:, k])


def data_of(p: AttentionParams) -> Data:
    """The float and exact data of ``p``'s head 0 (:class:`Data`), enclosures included."""
    q, k, V = p.head_matrices(0.0)[0]
    V = np.asarray(V, float)
    Mb = np.zeros_like(V) if q is None else p.beta * (np.asarray(q).T @ np.asarray(k))
    small = p.d <= MAX_D  # exact rational work (enclosures, Q^T K) only up to MAX_D
    if q is not None and small:  # exact beta Q^T K
        Mq = sp.Rational(Fraction(p.beta)) * core.rational_matrix(q).T * core.rational_matrix(k)
    else:
        Mq = sp.zeros(*V.shape) if small else None
    c = 1.0 if p.normalization == "unit" else 1.0 / math.sqrt(p.d)
    Vq = core.rational_matrix(V) if small else None
    symmetric = bool(Vq == Vq.T) if small else bool(np.array_equal(V, V.T))
    enc = cm.spectral_enclosure(Vq) if symmetric and small else None  # exact charpoly when KW intervals overlap
    lam, U = nm.eigen_desc((V + V.T) / 2)
    return Data(p, V, Mb, c, symmetric, enc, lam, U, Mq, Vq)


def applicable_structure(p: AttentionParams) -> core.HypothesisResult:
    """Whether ``p`` is model (1)/(2)/(5): one constant head, full attention, the unit sphere (a certified predicate)."""
    bad = []
    if len(p.heads) != 1:
        bad.append(f"{len(p.heads)} heads (the paper has one)")
    if p.time_varying:
        bad.append("time-varying head")
    if p.causal:
        bad.append("causal attention")
    if p.W is not None:
        bad.append("ellipsoid W != I")
    W = None if p.W is None else np.asarray(p.W).tolist()
    key = v_key(p)
    args = {"heads": p.to_json()["heads"], "causal": bool(p.causal), "W": W} if key == "heads" else \
        {"V": p.to_json()["V"], "W": W}
    which = "attention_model_1" if key == "heads" else "oja_model"
    c = predicate_certificate(which, not bad, dict(STRUCTURE.proof("predicate", key).subject), **args)
    return STRUCTURE.result("fails" if bad else "holds", c, None, "parameter structure", "; ".join(bad), key=key)


def assumption_1(D: Data, need_positive: bool = True) -> list[core.HypothesisResult]:
    """Assumption 1 on ``D``: V symmetric, :math:`\\lambda_1` simple and (``need_positive``) positive, each certified."""
    bound = _V_bound(D)
    out = []
    if not D.symmetric:
        asym = float(np.abs(D.V - D.V.T).max())
        out.append(bound(V_SYMMETRIC, "fails", _symmetric_cert(D, False), asym, "exact rational comparison",
                         f"max |V - V^T| = {asym:.3e}"))
        return out
    out.append(bound(V_SYMMETRIC, "holds", _symmetric_cert(D, True), 0.0, "exact rational comparison"))
    enc = D.enc
    if enc is None:
        reason = f"d = {D.p.d} > {MAX_D}: exact eigen-enclosures not attempted"
        out.append(core.HypothesisResult("Assumption 1: lambda_1 simple", "unknown", float(D.lam[0] - D.lam[1]),
                                         "exact eigen-enclosures", None, reason))
        if need_positive:
            out.append(core.HypothesisResult("Assumption 1: lambda_1 > 0", "unknown", float(D.lam[0]),
                                             "exact eigen-enclosure", None, reason))
        return out
    if enc.mult(0) > 1:
        out.append(bound(LAMBDA_SIMPLE, "fails", _repeated_top_cert(D), 0.0,
                         "exact characteristic polynomial (python-flint) and Arb root isolation",
                         f"lambda_1 in [{float(enc.lo[0]):.17g}, {float(enc.hi[0]):.17g}] has multiplicity {enc.mult(0)}"))
    elif enc.separated and enc.multiplicity is None:
        cert = cm.enclosure_certificate(core.rational_matrix(D.V), enc)
        gap = float(enc.lo[0] - enc.hi[1]) if len(enc.mu) > 1 else float("inf")
        out.append(bound(LAMBDA_SIMPLE, "holds", cert, gap, "exact eigen-enclosures (Krylov-Weinstein residual bounds)"))
    else:
        out.append(_top_simple_by_inertia(D) or _top_multiplicity(D))
    if need_positive:
        lo, hi = enc.lo[0], enc.hi[0]
        if lo > 0:
            out.append(bound(LAMBDA_POSITIVE, "holds", _positive_top_cert(D), float(lo), "exact eigen-enclosure",
                             rf"$\lambda_1\ge{float(lo):.6g}$"))
        elif hi <= 0:
            psd = psd_hypothesis("-V >= 0", -core.qmat(D.Vq), "-V")
            out.append(bound(LAMBDA_POSITIVE, "fails", psd.certificate if psd.status == "holds" else None, float(hi),
                             "exact eigen-enclosure", rf"$\lambda_1\le{float(hi):.6g}$"))
        else:
            out.append(core.HypothesisResult("Assumption 1: lambda_1 > 0", "unknown", float(D.lam[0]),
                                             "exact eigen-enclosure", None, r"the enclosure of $\lambda_1$ contains 0"))
    return out


def _V_bound(D: Data) -> Any:
    """``(hypothesis, status, certificate, margin, method, detail) -> result``, bound to V's subject. A
    time-varying V is decided at t = 0: its certificate is left off (a ``holds`` then rests on no bound
    certificate); a constant V's ``holds`` whose certificate could not be built is ``unknown``."""
    constant = not isinstance(D.p.heads[0].V, sp.MatrixBase)

    def bound(h: bd.HypothesisBinding, status: str, cert: Any, margin: Any, method: str, detail: str = "") -> core.HypothesisResult:
        if cert is None or not constant:
            if status == "holds" and constant:
                return core.HypothesisResult(h.name, "unknown", margin, method, None, f"{detail}; no certificate".lstrip("; "))
            return core.HypothesisResult(h.name, status, margin, method, None, detail)
        return h.result(status, cert, margin, method, detail, key=v_key(D.p))

    return bound


def _symmetric_cert(D: Data, symmetric: bool) -> core.Certificate | None:
    """The exact ``symmetric`` predicate of V (either answer)."""
    return predicate_certificate("symmetric", symmetric, {"M": V_FORMS[v_key(D.p)]}, M=D.V.tolist())


def _positive_top_cert(D: Data) -> core.Certificate | None:
    """lambda_1 > 0 by a witness u with u^T (-V) u < 0 (the top approximate eigenvector, else numpy's)."""
    u = [str(row[0]) for row in D.enc.U] if D.enc is not None else None
    w = definiteness_witness(-core.qmat(D.Vq), strict=False, witness=u)
    return w if w is not None and w.kind == "not_psd" else None


def _repeated_top_cert(D: Data) -> core.Certificate | None:
    """``repeated_top_eigenvalue`` when lambda_1 is a rational of multiplicity >= 2 (re-checked), else None."""
    for r in (sp.nsimplify(D.lam[0], rational=True, tolerance=1e-12), Fraction(D.lam[0]).limit_denominator(2**40)):
        c = core.Certificate("repeated_top_eigenvalue", "", {"U": core.encode(D.Vq), "lambda": str(r)})
        if core.recheck(c):
            return c
    return None


def _top_simple_by_inertia(D: Data) -> core.HypothesisResult | None:
    """lambda_1 > t > lambda_2 for a rational t, from the exact inertia (1, d-1, 0) of V - tI."""
    from ..certificates.attention.eigenvectors import simple_top_certificate

    enc = D.enc
    if enc is None or len(enc.mu) < 2:
        return None
    t = (enc.lo[0] + max(enc.hi[1:])) / 2
    if not t < enc.lo[0]:
        return None
    cert = simple_top_certificate(D.Vq, t)
    if not core.recheck(cert):
        return None
    return _V_bound(D)(LAMBDA_SIMPLE, "holds", cert, float(enc.lo[0] - t),
                       "exact inertia of V - tI: one eigenvalue above t", f"t = {float(t):.6g}")


def _top_multiplicity(D: Data) -> core.HypothesisResult:
    """Exact test of a repeated top eigenvalue at a rational candidate; else unknown."""
    Vq = core.rational_matrix(D.V)
    r = sp.nsimplify(D.lam[0], rational=True, tolerance=1e-12)
    rank = (Vq - r * sp.eye(Vq.rows)).rank()
    if Vq.rows - rank >= 2:
        # r is an eigenvalue of multiplicity >= 2; it is the top one if V - r I <= 0
        if core.is_psd(r * sp.eye(Vq.rows) - Vq):
            return _V_bound(D)(LAMBDA_SIMPLE, "fails", _repeated_top_cert(D), 0.0, r"exact rank and $LDL^\top$",
                               rf"$\lambda_1={sp.latex(r)}$ has multiplicity {Vq.rows - rank} (exact)")
    return core.HypothesisResult("Assumption 1: lambda_1 simple", "unknown", float(D.lam[0] - D.lam[1]),
                                 "exact eigen-enclosures", None, r"$\lambda_1$ and $\lambda_2$ could not be separated")


def all_hold(hyps: list[core.HypothesisResult]) -> bool:
    """Whether every hypothesis of ``hyps`` holds."""
    return all(h.status == "holds" for h in hyps)


def decidable(D: Data) -> bool:
    """Classes can be decided: V symmetric with enclosures, lambda_1 simple and isolated
    (Assumption 1 as stated: lower eigenvalues may repeat, their classes are subspace classes)."""
    return D.symmetric and D.enc is not None and D.enc.mult(0) == 1 and D.enc.isolated(0) and \
        (len(D.enc.mu) == 1 or D.enc.lo[0] > max(D.enc.hi[1:]))


def class_indices(D: Data) -> list[int]:
    """One 0-based index per distinct eigenvalue (the first of a repeated one's cluster)."""
    assert D.enc is not None
    return [k for k in range(D.p.d) if D.enc.cluster(k)[0] == k]


#: largest d for exact algebraic-number decisions (a_k = 0)
EXACT_A_MAX_D = 24


def a_sign(D: Data, k: int) -> int | None:
    r"""Exact sign of :math:`a_k=v_k^\top\beta Q^\top Kv_k` (0-based ``k``), or None if undecided:
    0 for every k when :math:`M+M^\top=0` exactly (every score :math:`x^\top Mx` vanishes); the
    certified interval when it excludes 0; else exact arithmetic in :math:`\mathbb Q(\lambda_k)`
    (:mod:`flowcert.certificates.attention.algebraic`) for a simple :math:`\lambda_k`."""
    if D.Mq is None or D.Vq is None:
        return None
    if D.Mq + D.Mq.T == sp.zeros(*D.Mq.shape):
        return 0
    if D.enc is None or D.enc.mult(k) > 1:
        return None
    ab = cm.a_enclosure(D.Mq, D.enc, k)
    if ab is not None and (ab[0] > 0 or ab[1] < 0):
        return 1 if ab[0] > 0 else -1
    if D.p.d > EXACT_A_MAX_D:
        return None
    from ..certificates.attention.algebraic import AlgebraicEigenvector

    try:
        return AlgebraicEigenvector(core.fractions(D.Vq), k).quadratic_sign(core.fractions(D.Mq))
    except (ValueError, ArithmeticError):
        return None


def lambda_is_zero(D: Data, k: int) -> bool:
    r""":math:`\lambda_k=0` exactly: :math:`\det V=0` and the k-th (isolating) enclosure contains 0."""
    if D.Vq is None or D.enc is None or not (D.enc.lo[k] <= 0 <= D.enc.hi[k]):
        return False
    if not (D.enc.isolated(k) or D.enc.mult(k) > 1):
        return False
    return core.qmat(D.Vq).det() == 0


def eigen_labels(D: Data, k: int, n1: int, n2: int) -> list[str]:
    r"""Every class the point :math:`x_i=\pm v_k` (``n1`` plus, ``n2`` minus) belongs to, decided
    exactly: consensus or bipartite; also polygonal (:math:`V\sum_jA_{ij}x_j=0` for all i) when
    :math:`\lambda_k=0`, or for an equal split when :math:`A=\tfrac cn\mathbb 1\mathbb 1^\top`
    (multiagent Oja, or :math:`a_k=0` exactly, note 001 §2)."""
    labels = ["consensus"] if min(n1, n2) == 0 else ["bipartite"]
    if lambda_is_zero(D, k):
        labels.append("polygonal")
    elif n1 == n2 and (D.variant == "multiagent_oja" or (D.variant == "self_attention" and a_sign(D, k) == 0)):
        labels.append("polygonal")
    return labels


def equilibrium_labels(doc: Document) -> Any:
    """``(k, n1, n2) -> exact labels`` (0-based k, :func:`eigen_labels`) of an equilibria document's
    eigenvector classes, memoised; a string (the reason) when its parameters do not read back. What the
    document checker (:func:`flowcert.papers.multistability.check_equilibria`) compares a record's
    ``class`` with; it takes it by name (:func:`flowcert.bindings.derived_by`), so the paper's
    declarations do not import this module."""
    from ..certificates.subjects import SubjectError
    from .consensus_hypotheses import params_of

    try:
        p = params_of(doc)
    except (KeyError, SubjectError) as exc:
        return f"the parameters do not read back ({exc})"
    D = data_of(p)
    memo: dict[tuple[int, int, int], list[str]] = {}

    def of(k: int, n1: int, n2: int) -> list[str] | None:
        if D.enc is None or not 0 <= k < p.d:
            return None
        if (k, n1, n2) not in memo:
            memo[(k, n1, n2)] = eigen_labels(D, k, n1, n2)
        return memo[(k, n1, n2)]

    return of



# ---------------------------------------------------------------------------------------
# verdicts on classes (k, n1, n2)
# ---------------------------------------------------------------------------------------


def class_result(D: Data, k: int, n1: int, n2: int, variant: str | None = None, certify: bool = True) -> ClassRecord:
    """Certified verdict, certificate and closed-form spectra at the class (k, n1, n2) (0-based k).
    With ``certify=False`` the (equally rigorous) verdict is returned without the certificate object."""
    variant = variant or D.variant
    assert D.enc is not None
    Vq = D.Vq
    status, reason = cm.verdict_from_data(Vq, D.Mq, D.enc, k, n1, n2, variant, D.encoded)
    cert = None
    if certify and status in STABLE:
        cert = cm.verdict_certificate(Vq, D.Mq, D.enc, k, n1, n2, variant, status, D.encoded)
        if not core.recheck(cert):
            status, reason, cert = "unknown", "certificate re-check failed", None
    tang, normal = nm.bipartite_spectra(D.lam, D.a(k) if variant == "self_attention" else 0.0, k, n1, n2, D.c, variant)
    out: ClassRecord = {"k": k + 1, "n1": n1, "n2": n2, "stable": STABLE.get(status),
           "verdict": status, "reason": reason, "certificate": cert.to_json() if cert else None,
           "tangent_spectrum": [[float(z.real), float(z.imag)] for z in tang],
           "ambient_spectrum": [[float(z.real), float(z.imag)] for z in np.concatenate([tang, normal])]}
    if D.enc.mult(k) > 1:
        cl = D.enc.cluster(k)
        out["subspace"] = {"dimension": len(cl), "eigvec_indices": [j + 1 for j in cl],
                           "spectra_at": "the float eigenvector u_k, one point of the continuum x_i = s_i w, w in the eigenspace"}
    return out


def class_results(D: Data, variant: str | None = None) -> list[ClassRecord]:
    """The verdict of every class (k, n1, n2) of ``D`` (:func:`class_result`), n1 from n down to n/2."""
    n = D.p.n
    return [class_result(D, k, n1, n - n1, variant) for k in class_indices(D) for n1 in range(n, (n - 1) // 2, -1)]


# ---------------------------------------------------------------------------------------
# equilibria attention
# ---------------------------------------------------------------------------------------


def _require_enumerable(p: AttentionParams) -> Data:
    h = applicable_structure(p)
    if h.status != "holds":
        raise InputError(f"equilibria attention: {h.detail} is not covered (the enumeration is for model (1)/(2)/(5))")
    if p.d > MAX_D or p.n > MAX_N:
        raise InputError(f"equilibria attention: n = {p.n}, d = {p.d} is too large for the exact enumeration "
                         f"(limits n <= {MAX_N}, d <= {MAX_D}: exact eigen-enclosures and one class per (k, n1))")
    D = data_of(p)
    if not D.symmetric:
        raise InputError("params: key 'V': equilibria attention needs a symmetric V (Assumption 1); "
                         f"max |V - V^T| = {float(np.abs(D.V - D.V.T).max()):.3e}")
    if D.enc is None:
        raise InputError("params: key 'V': the eigenvalues of V could not be enclosed (exact characteristic polynomial)")
    return D


def sign_patterns(n: int, cap: int) -> tuple[list[np.ndarray], int]:
    """Sign patterns with s_1 = +1 (one per antipodal pair), ordered by number of minus signs."""
    from itertools import combinations

    total = 2 ** (n - 1)
    out: list[np.ndarray] = []
    for m in range(0, n):
        for minus in combinations(range(1, n), m):
            if len(out) >= cap:
                return out, total
            s = np.ones(n)
            s[list(minus)] = -1
            out.append(s)
    return out, total


def equilibria(p: AttentionParams, cap: int | None = None, samples: int = 16, seed: int | None = None) -> EquilibriaBody:
    """The ``equilibria attention`` document body: ``classes`` (one certified verdict per
    (k, n1, n2), which by permutation symmetry covers every sign pattern), ``equilibria`` (listed
    patterns, up to ``cap`` per eigenvector, plus Newton-refined simulation limits that are not
    consensus/bipartite) and ``skipped``. Several heads, causal masks or an ellipsoid: the end
    states of runs to rest, classified and uncertified (:func:`flowcert.attention.search.search`)."""
    cap = DEFAULT_CAP if cap is None else cap
    if cap < 1:
        raise InputError(f"--cap: must be a positive integer, got {cap}")
    if p.time_varying:
        raise InputError("equilibria attention: time-varying heads have no equilibria to enumerate "
                         "(the field depends on t); use verify attention --simulate")
    if applicable_structure(p).status != "holds":  # several heads, causal, ellipsoid: runs to rest, classified
        from .search import search

        return search(p, samples, p.seed if seed is None else seed)
    D = _require_enumerable(p)
    n, d = p.n, p.d
    classes = class_results(D)
    for c in classes:  # in the document: bound to its V and beta Q^T K
        if c["certificate"] is not None:
            c["certificate"] = bd.stamp(core.Certificate.from_json(c["certificate"]), class_subject(p)).to_json()
    index = {(c["k"], c["n1"], c["n2"]): i for i, c in enumerate(classes)}
    pats, total = sign_patterns(n, cap)
    eqs: list[EquilibriumRecord] = []
    for k in class_indices(D):
        for s in pats:
            n1, n2 = int((s > 0).sum()), int((s < 0).sum())
            key = (k + 1, n1, n2) if (k + 1, n1, n2) in index else (k + 1, n2, n1)
            cl = classes[index[key]]
            labels = eigen_labels(D, k, n1, n2)
            eqs.append({"class": labels, "eigvec_index": k + 1, "signs": s.astype(int).tolist(), "n1": n1, "n2": n2,
                        "X": nm.bipartite_point(D.U[:, k], s).tolist(),
                        "tangent_spectrum": cl["tangent_spectrum"], "ambient_spectrum": cl["ambient_spectrum"],
                        "stable": cl["stable"], "certificate": None if cl["certificate"] is None else
                        {"kind": cl["certificate"]["kind"], "claim": cl["certificate"]["claim"], "class": index[key]},
                        **({"subspace": cl["subspace"]} if "subspace" in cl else {})})
    found = _newton_limits(D, samples, p.seed if seed is None else seed)
    eqs += found
    skipped = {"patterns_per_eigenvector": total, "listed_per_eigenvector": len(pats),
               "skipped_patterns": d * (total - len(pats)),
               "reason": (f"sign patterns beyond the cap of {cap} per eigenvector are not listed; each has the "
                          "verdict of its (k, n1, n2) class in 'classes' (tokens are exchangeable). Patterns are "
                          "listed up to the global sign x -> -x (Remark 6: same stability)."),
               "clustering_search": f"{samples} simulations to rest + Newton; equilibria not reached from these "
                                    "initial conditions are not found"}
    return {"classes": classes, "equilibria": eqs, "skipped": skipped,
            "eigenvalues": D.lam.tolist(),
            "eigenvalue_enclosures": [[float(a), float(b)] for a, b in zip(D.enc.lo, D.enc.hi)]}


def _newton_limits(D: Data, samples: int, seed: int) -> list[EquilibriumRecord]:
    """Non-eigenvector equilibria (clustering, polygonal) from simulation limits + Newton."""
    from .classify import limit_of

    if samples <= 0 or D.variant != "self_attention":
        return []
    from .search import run_to_rest

    rest = run_to_rest(D.p, samples, seed, t_max=D.p.t_end if "t_end" in D.p.given else 400.0)
    out: list[EquilibriumRecord] = []
    seen: list[np.ndarray] = []
    for X, settled in zip(rest["X"], rest["settled"]):
        if not settled:
            continue
        nr = nm.newton(X, D.Mb, D.V, D.c)
        if not nr.converged:
            continue
        cl = nm.classify(nr.X, D.V, D.Mb, D.c)
        lc = limit_of(D.p, nr.X, speed=0.0)  # the shared classifier (consensus/bipartite/polygonal/clustering k)
        if cl.k is not None or {"consensus", "bipartite"} & set(lc.labels):
            continue  # +-w with V w || w: a point of an (enumerated, possibly subspace) eigenvector class
        key = np.array(sorted(map(tuple, np.round(nr.X, 6))))
        if any(key.shape == s.shape and np.abs(key - s).max() < 1e-5 for s in seen):
            continue
        seen.append(key)
        F = nm.ambient_jacobian(nr.X, D.Mb, D.V, D.c)
        sp_ = nm.spectra(F, nr.X)
        verdict, why, cert = certify_newton_point(D, nr.X)
        out.append({"class": lc.labels, "eigvec_index": None, "X": nr.X.tolist(), "clusters": lc.clusters,
                    "tangent_spectrum": [[float(z.real), float(z.imag)] for z in sp_.tangent],
                    "ambient_spectrum": [[float(z.real), float(z.imag)] for z in sp_.ambient],
                    "stable": STABLE.get(verdict) if cert is not None else None,
                    # V and beta Q^T K bound to the document; X is the certificate's own point
                    "certificate": None if cert is None else bd.stamp(cert, {
                        k: e for k, e in class_subject(D.p).items() if k != "variant"}).to_json(),
                    "reason": ("located by Newton (residual %.1e); %s; floating max Re(tangent) = %.3e"
                               % (nr.residual, why, float(sp_.tangent.real.max())))})
    return out


def certify_newton_point(D: Data, X: np.ndarray) -> tuple[str, str, Any]:
    """Krawczyk existence + ball-Lyapunov inertia verdict at a Newton-located point of (1)
    (:mod:`flowcert.certificates.attention.krawczyk`); the certificate only after a re-check."""
    from ..certificates.attention import krawczyk

    if D.variant != "self_attention" or D.Vq is None or D.Mq is None:
        return "unknown", "no exact data for the Krawczyk certificate", None
    sqrt_d = None if D.p.normalization == "unit" else D.p.d
    try:
        verdict, why, cert = krawczyk.certify_equilibrium(X, D.Vq, D.Mq, sqrt_d)
    except (ValueError, ArithmeticError, ZeroDivisionError) as exc:
        return "unknown", f"Krawczyk certificate failed ({type(exc).__name__}: {exc})", None
    if cert is not None and not core.recheck(cert):
        return "unknown", "Krawczyk certificate re-check failed", None
    return verdict, why, cert


# ---------------------------------------------------------------------------------------
# simulation: runs to rest, classification, basins
# ---------------------------------------------------------------------------------------


def _label(D: Data, X: np.ndarray) -> tuple[str, dict[str, Any]]:
    """Name the equilibrium a settled state converged to: if it lies within 1e-6 of an exact
    consensus/bipartite point :math:`x_i=s_iv_k` (closed form, an exact zero of the field) that
    point is the limit; otherwise Newton refines the state to a zero of the field, which is then
    classified."""
    proj = X @ D.U
    k = int(np.argmax(np.abs(proj).min(0)))
    s = np.sign(proj[:, k])
    if np.all(s != 0) and np.abs(X - nm.bipartite_point(D.U[:, k], s)).max() <= 1e-6:
        n1, n2 = int((s > 0).sum()), int((s < 0).sum())
        lo, hi = max(n1, n2), min(n1, n2)
        name = f"consensus v{k + 1}" if hi == 0 else f"bipartite v{k + 1} ({lo}:{hi})"
        return name, {"k": k, "n1": lo, "n2": hi, "labels": eigen_labels(D, k, lo, hi) if D.enc is not None else
                      ["consensus" if hi == 0 else "bipartite"]}
    nr = nm.newton(X, D.Mb, D.V, D.c, variant=D.variant)
    if not nr.converged:
        return "newton_failed", {"residual": nr.residual}
    cl = nm.classify(nr.X, D.V, D.Mb, D.c, variant=D.variant)
    if cl.k is not None:
        n1, n2 = int((cl.signs > 0).sum()), int((cl.signs < 0).sum())
        lo, hi = max(n1, n2), min(n1, n2)
        name = f"consensus v{cl.k + 1}" if hi == 0 else f"bipartite v{cl.k + 1} ({lo}:{hi})"
        return name, {"k": cl.k, "n1": lo, "n2": hi, "labels": cl.labels}
    return f"{'/'.join(cl.labels)} (m={cl.clusters})", {"labels": cl.labels, "clusters": cl.clusters, "X": nr.X}


def classify_run(p: AttentionParams, X: np.ndarray, settle_tol: float = 1e-7, t: float | None = None) -> RunClassification:
    r"""``limit_class`` of one simulated final state (at time ``t``, default ``p.t_end``), for every
    structure, from the one classifier (:func:`flowcert.attention.classify.limit_of`): the labels
    once the run has settled (speed :math:`\max_i|f_i|<` ``settle_tol``), else None with the final
    speed and time (``limit``). For model (1)/(2)/(5) the limit is also identified in closed form or
    by Newton (``limit_label``) and its certified class verdict is ``limit_verdict``."""
    from .classify import class_keys, limit_of, limit_record

    lc = limit_of(p, X, t=t, settle_tol=settle_tol)
    out: RunClassification = {**limit_record(lc)}
    if not lc.settled or applicable_structure(p).status != "holds":
        return out
    D = data_of(p)
    name, info = _label(D, X)
    if name == "newton_failed":
        out["limit_label_reason"] = f"Newton did not converge ({info['residual']:.2e}); classes from the end state"
        return out
    out["limit_label"] = name
    for lab in info["labels"]:  # exact labels (e.g. polygonal at a_k = 0) join the geometric ones
        if lab not in out["limit_classes"] and lab != "clustering":
            out.update(class_keys([*[x for x in out["limit_classes"] if x != "clustering"], lab]))
    if "k" in info and decidable(D):
        out["limit_verdict"] = class_result(D, info["k"], info["n1"], info["n2"], certify=False)["verdict"]
    elif "X" in info:  # a clustering/polygonal limit: Krawczyk + ball Lyapunov verdict at the Newton point
        verdict, why, cert = certify_newton_point(D, info["X"])
        out["limit_verdict"] = verdict if cert is not None else "unknown"
        out["limit_verdict_reason"] = why
    return out


def basins(p: AttentionParams, samples: int, seed: int = 0, device: Any = "cpu", dt: float = 0.05,
           t_max: float = 400.0) -> SimulationRecord:
    """``samples`` random initial conditions to rest (batched torch RK4), each limit refined by
    Newton and classified; fractions with 95% Wilson intervals and the certified verdict of each
    outcome. ``agrees`` is False if any sample reached a certified-unstable point."""
    from .search import run_to_rest

    rest = run_to_rest(p, samples, seed, t_max=t_max, dt=dt, device=device)
    applicable = applicable_structure(p).status == "holds"
    D = data_of(p) if applicable else None
    verdicts: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for X, settled, drift in zip(rest["X"], rest["settled"], rest["drift"]):
        if drift > 1e-6:
            name, info = "failed (left the manifold)", {}
        elif not settled:
            name, info = "not converged", {}
        elif D is None:
            name, info = "unclassified", {}
        else:
            name, info = _label(D, X)
            if name == "newton_failed":
                name = "not converged (Newton did not converge)"
            if "k" in info and decidable(D) and name not in verdicts:
                verdicts[name] = class_result(D, info["k"], info["n1"], info["n2"], certify=False)["verdict"]
        counts[name] = counts.get(name, 0) + 1
    outcomes = [{"label": name, "count": c, "fraction": c / samples, "wilson": list(wilson(c, samples)),
                 "verdict": verdicts.get(name, "unknown" if name[:9] in ("consensus", "bipartite") else None)}
                for name, c in sorted(counts.items(), key=lambda kv: -kv[1])]
    bad = [o["label"] for o in outcomes if o["verdict"] == "unstable"]
    X_final = rest["X"][0]
    return {"t_end": t_max, "blowup_time": None, "samples": samples, "seed": seed, "integrator": f"RK4 dt={dt} + retraction (torch), "
            "to speed < 1e-7 or t_max; limits refined by Newton", "device": str(device),
            "max_drift": float(rest["drift"].max()), "X_final": X_final.tolist(),
            "limit_class": None, "limit_classes": None, "basins": {"outcomes": outcomes, "reached_certified_unstable": bad},
            "agrees": (not bad) if applicable else None}


# ---------------------------------------------------------------------------------------
# catalogue
# ---------------------------------------------------------------------------------------
