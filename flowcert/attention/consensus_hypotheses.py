r"""Hypotheses of the consensus paper's catalogue (note 003), on the ``attention`` system: the
:class:`Setting` of one parameter set (heads :math:`P_\eta=\beta Q_\eta^\top K_\eta`, values
:math:`U_\eta`, the ellipsoid :math:`\{y^\top Wy=1\}`, full or causal attention) and the certified
predicates that :mod:`flowcert.attention.consensus` combines into theorem records:
:math:`U=I`, :math:`W=P`, :math:`P=P^\top\succ0`, :math:`\sup_t\Vert P(t)\Vert<\infty`, uniform
continuity of :math:`P(t)`, constant :math:`U`. Each returns a
:class:`~flowcert.certificates.core.HypothesisResult` whose ``holds``/``fails`` rests on an exact
or re-checked certificate (:mod:`flowcert.certificates.attention.consensus`), bound to the subject
declared in :mod:`flowcert.papers.consensus`. The inputs a document fixes without storing them
(:data:`flowcert.bindings.DERIVED`: :func:`initial_tokens_of`, :func:`score_matrices_of`,
:func:`causal_transverse_of`) are computed here from the document's own parameters (:func:`params_of`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any

import flint
import numpy as np
import sympy as sp

from .. import bindings as bd
from ..certificates import core
from ..certificates.attention import consensus as cert
from ..certificates.forms import LARGE
from ..certificates.hypotheses import definite
from ..certificates.predicates import predicate_certificate, predicate_value
from ..papers.consensus import (ANTIPODE_FREE, BOUNDED, CAUSAL, CAUSAL_STABLE, ELLIPSOID, FULL, HEADS, HEMISPHERE,
                               IDENTITIES, P_CONSTANT, P_FORMS, P_PD, P_VARIES, SIDE, SINGLE, SPHERE, THM61_STABLE,
                               TOKENS, TOP, U_CONSTANT, U_IDENTITY, UNIFORMLY_CONTINUOUS, W_IS_P)
from .params import AttentionParams, HeadJSON

if TYPE_CHECKING:
    from ..certificates.attention.head_bounds import HeadEntry


# the setting as the consensus paper writes it


@dataclass
class Setting:
    """Heads :math:`(P_\\eta, U_\\eta)`, manifold and initial tokens read from :class:`AttentionParams`."""

    p: AttentionParams
    X0: np.ndarray

    @property
    def h(self) -> int:
        return len(self.p.heads)

    @property
    def ell(self) -> int:
        return int(self.X0.shape[0])

    @property
    def d(self) -> int:
        return self.p.d

    @property
    def row_sum(self) -> float:
        return 1.0 / math.sqrt(self.d) if self.p.normalization == "sqrt" else 1.0

    @cached_property
    def P(self) -> list[Any]:
        """:math:`P_\\eta=\\beta Q_\\eta^\\top K_\\eta` (numpy, or a SymPy matrix in t)."""
        out = []
        for hd in self.p.heads:
            if isinstance(hd.Q, sp.MatrixBase) or isinstance(hd.K, sp.MatrixBase):
                Q = sp.Matrix(hd.Q) if not isinstance(hd.Q, sp.MatrixBase) else hd.Q
                K = sp.Matrix(hd.K) if not isinstance(hd.K, sp.MatrixBase) else hd.K
                M = K if hd.from_P else Q.T * K
                out.append(M if self.p.beta == 1 else sp.Float(self.p.beta) * M)
            else:
                M = np.asarray(hd.K, float) if hd.from_P else np.asarray(hd.Q, float).T @ np.asarray(hd.K, float)
                out.append(M if self.p.beta == 1 else self.p.beta * M)
        return out

    @cached_property
    def P_data(self) -> list[Any]:
        """Each head's :math:`P_\\eta` as given: a :class:`~flowcert.certificates.attention.consensus.ScaledProduct`
        of its float data (constant), or the SymPy matrix in t of :attr:`P`."""
        out: list[Any] = []
        for hd, P in zip(self.p.heads, self.P):
            if isinstance(P, sp.MatrixBase):
                out.append(P)
            else:
                K = np.asarray(hd.K, float)
                out.append(cert.ScaledProduct(float(self.p.beta), K, None if hd.from_P else np.asarray(hd.Q, float)))
        return out

    @property
    def U(self) -> list[Any]:
        return [hd.V for hd in self.p.heads]

    @cached_property
    def heads_json(self) -> list[HeadJSON]:
        """The heads as the document's ``params.heads`` writes them (the subject of the head predicates)."""
        return self.p.to_json()["heads"]

    def P_exact(self, eta: int = 0) -> Any:
        r""":math:`P_\eta=\beta Q_\eta^\top K_\eta` of a constant head in exact rationals (``fmpq_mat``): the
        subject ``params.beta*params.heads[eta].Q^T*params.heads[eta].K`` (or ``...*P``)."""
        cache = self.__dict__.setdefault("_P_exact", {})
        if eta not in cache:  # one exact product per head and document (a d = 384 head: 1 s)
            hd = self.p.heads[eta]
            M = core.qmat(np.asarray(hd.K, float))
            if not hd.from_P:
                M = core.qmat(np.asarray(hd.Q, float)).transpose() * M
            cache[eta] = M * core.to_fmpq(self.p.beta)
        return flint.fmpq_mat(cache[eta])  # a copy: no caller shares it

    @property
    def P_constant(self) -> bool:
        return not any(isinstance(P, sp.MatrixBase) for P in self.P)

    def P_at(self, eta: int, t: float) -> np.ndarray:
        return self.p.M(eta, t)

    def score_operator(self, eta: int, t: float) -> Any:
        r""":math:`P_\eta(t)` for :func:`flowcert.numeric.attention.consensus.scores`: the factor pair
        :math:`(\beta Q_\eta, K_\eta)` of a constant head given by Q and K, else :meth:`P_at`."""
        hd = self.p.heads[eta]
        if hd.from_P or isinstance(self.P[eta], sp.MatrixBase):
            return self.P_at(eta, t)
        return self.p.beta * np.asarray(hd.Q, float), np.asarray(hd.K, float)

    @property
    def W(self) -> np.ndarray:
        return np.eye(self.d) if self.p.W is None else self.p.W


def setting(p: AttentionParams, seed: int | None = None) -> Setting:
    """The consensus setting of ``p``; random initial tokens from ``seed`` when ``X0`` is absent."""
    X0 = p.initial_tokens() if p.X0 is not None else p.initial_tokens(None, np.random.default_rng(p.seed if seed is None else seed))
    return Setting(p, X0)


def _params_text(doc: Any) -> str:
    import json

    raw = doc.get("params") if isinstance(doc, dict) else None
    if not isinstance(raw, dict):
        raise KeyError("params")
    return json.dumps(raw, sort_keys=True)


def params_of(doc: Any) -> AttentionParams:
    """The document's parameters, re-read by the loader (a subject error if they do not read back)."""
    return _parsed(_params_text(doc))


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> AttentionParams:
    import json

    from ..certificates.subjects import SubjectError
    from .params import parse_attention

    raw = json.loads(text)
    try:
        p = parse_attention({k: v for k, v in raw.items() if k != "d" and v is not None})
    except Exception as exc:  # noqa: BLE001 - parameters that do not read back bind nothing
        raise SubjectError(f"params do not read back ({exc})") from None
    if p.to_json() != raw:
        raise SubjectError("params do not read back to themselves")
    return p


def initial_tokens_of(doc: Any) -> Any:
    """``params.X0``, or the tokens drawn from the document's ``seed`` when the file gave none."""
    p = params_of(doc)
    if p.X0 is not None:
        return p.X0
    seed = doc.get("seed", p.seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise KeyError("seed")
    return _drawn(_params_text(doc), seed)


@functools.lru_cache(maxsize=8)
def _drawn(text: str, seed: int) -> Any:
    return setting(_parsed(text), seed).X0


def score_matrices_of(doc: Any) -> list[HeadEntry]:
    """Each head's score matrix :math:`P_\\eta` of the document's parameters, as a certificate's ``heads`` carry it."""
    return _scores(_params_text(doc))


@functools.lru_cache(maxsize=8)
def _scores(text: str) -> list[HeadEntry]:
    from ..certificates.attention.head_bounds import head_data

    p = _parsed(text)
    if p.variant != "self_attention":
        raise KeyError("heads")
    return [head_data(P) for P in Setting(p, np.zeros((0, p.d))).P_data]


def causal_transverse_of(doc: Any) -> Any:
    n = params_of(doc).n
    if n < 2:
        raise KeyError("params.n")
    return core.qmat(cert.causal_transverse_matrix(n))


# structural hypotheses (decided exactly on the given data)


def exactly_equal(A: Any, B: Any) -> bool:
    """Whether two matrices (numpy, or SymPy in t) are equal exactly (SymPy: their difference simplifies to 0)."""
    if isinstance(A, sp.MatrixBase) or isinstance(B, sp.MatrixBase):
        return sp.simplify(sp.Matrix(A) - sp.Matrix(B)) == sp.zeros(*sp.Matrix(A).shape)
    return bool(np.array_equal(np.asarray(A, float), np.asarray(B, float)))


def _heads_predicate(h: bd.HypothesisBinding, s: Setting, method: str, why_not: str, why: str = "") -> core.HypothesisResult:
    """``h`` decided by its exact predicate of ``params.heads`` (the certificate proves either answer)."""
    which = h.proofs[0].fixed["predicate"]
    try:
        ok = predicate_value(which, heads=s.heads_json)
    except (ValueError, TypeError, KeyError, ZeroDivisionError):
        ok = False  # then the certificate of False re-checks, or the result is unknown (as certified says)
    c = predicate_certificate(which, ok, dict(h.proofs[0].subject), heads=s.heads_json)
    return h.result("holds" if ok else "fails", c, None, method, why if ok else why_not)


def value_identity(s: Setting) -> core.HypothesisResult:
    bad = [k + 1 for k, U in enumerate(s.U) if not exactly_equal(U, np.eye(s.d))]
    return _heads_predicate(U_IDENTITY, s, "exact comparison", f"value matrix of head(s) {bad} is not the identity",
                            "every head's value matrix is the identity")


def _equals(h: bd.HypothesisBinding, x: Any, method: str, detail: str) -> core.HypothesisResult:
    literal = h.proofs[0].fixed["literal"]
    c = predicate_certificate("equals", x == literal, dict(h.proofs[0].subject), x=x, literal=literal)
    return h.result("holds" if x == literal else "fails", c, None, method, "" if x == literal else detail)


def full_attention(s: Setting) -> core.HypothesisResult:
    return _equals(FULL, bool(s.p.causal), "parameter", "causal = true")


def causal_attention(s: Setting) -> core.HypothesisResult:
    return _equals(CAUSAL, bool(s.p.causal), "parameter", "causal = false")


def single_head(s: Setting) -> core.HypothesisResult:
    return _heads_predicate(SINGLE, s, "parameter", f"h = {s.h}")


def _W_json(s: Setting) -> Any:
    return None if s.p.W is None else s.p.W.tolist()


def sphere(s: Setting) -> core.HypothesisResult:
    on = s.p.W is None or exactly_equal(s.p.W, np.eye(s.d))
    c = predicate_certificate("unit_sphere", on, dict(SPHERE.proofs[0].subject), x=_W_json(s))
    return SPHERE.result("holds" if on else "fails", c, None, "parameter" if on else "exact comparison",
                         "" if on else "W is not the identity")


def ellipsoid(s: Setting) -> core.HypothesisResult:
    if s.p.W is None:
        c = predicate_certificate("unit_sphere", True, {"x": "params.W"}, x=None)
        return ELLIPSOID.result("holds", c, None, "parameter", "W = I (the unit sphere)")
    res = definite(np.asarray(s.p.W, float), "W", +1)
    return ELLIPSOID.result(res.status, res.certificate, res.margin,
                            r"validated by the loader; exact rational $LDL^\top$", res.detail) \
        if res.certificate is not None else dataclasses.replace(res, name=ELLIPSOID.name)


def constant_P(s: Setting) -> core.HypothesisResult:
    return _heads_predicate(P_CONSTANT, s, "parameter", "P(t) depends on t")


def _P_key(s: Setting) -> str:
    return "P" if s.p.heads[0].from_P else "QK"


def _P_varies(name: str, s: Setting) -> core.HypothesisResult:
    """``fails``: a score matrix depends on t (its ``constant_scores`` predicate, false, is the witness)."""
    c = predicate_certificate("constant_scores", False, dict(HEADS), heads=s.heads_json)
    return bd.HypothesisBinding(name, (P_VARIES,)).result("fails", c, None, "parameter", "P depends on t")


def W_equals_P(s: Setting) -> core.HypothesisResult:
    name = "tokens on E_P (W = P; erratum)"
    if not s.P_constant:
        return _P_varies(name, s)
    P = s.P_exact(0)
    ok = (s.p.W is None and P == core.qmat(np.eye(s.d))) or (s.p.W is not None and core.qmat(np.asarray(s.p.W, float)) == P)
    c = predicate_certificate("ellipsoid_is_P", ok, {"W": "params.W", "P": P_FORMS[_P_key(s)]}, W=_W_json(s),
                              P=core.encode(P))
    detail = ("P = I and tokens on the sphere" if s.p.W is None else "") if ok else \
        "the ellipsoid matrix W differs from P (Thm 3.2 needs tokens on E_P)"
    return W_IS_P.result("holds" if ok else "fails", c, None, "exact comparison", detail, key=_P_key(s))


def P_spd(s: Setting) -> core.HypothesisResult:
    if not s.P_constant:
        return _P_varies("P = P^T > 0", s)
    if "_P_spd" not in s.__dict__:  # three theorems ask; one exact decision per document
        res = definite(s.P_exact(0), "P", +1)  # exact beta Q^T K, no float product
        s.__dict__["_P_spd"] = res if res.certificate is None else P_PD.bind(res, key=_P_key(s))
    return s.__dict__["_P_spd"]


def _with_heads(res: core.HypothesisResult, s: Setting, h: bd.HypothesisBinding) -> core.HypothesisResult:
    """A ``sup_norm_bound`` result with every head's score matrix in its data (``heads``), bound to them. The
    head the bound was found on, a copy of one of them that nothing binds, stays beside them only while
    small (:math:`d^2<` :data:`~flowcert.certificates.forms.LARGE`; the example documents keep it): a
    MiniLM head's ``Q``, ``K`` are 0.5 MB per certificate."""
    from ..certificates.attention.head_bounds import head_data

    if res.certificate is None:
        return dataclasses.replace(res, name=h.name)
    c = res.certificate
    data = dict(c.data)
    if s.d * s.d >= LARGE:  # the largest head is one of the heads: no second copy of a large one
        data = {k: v for k, v in data.items() if k not in ("constant", "M", "t")}
    c = dataclasses.replace(c, data={**data, "heads": [head_data(P) for P in s.P_data]})
    return h.result(res.status, c, res.margin, res.method, res.detail)


def P_bounded(s: Setting) -> tuple[core.HypothesisResult, Fraction | None]:
    res, b = cert.bounded(s.P_data, BOUNDED.name)
    out = _with_heads(res, s, BOUNDED)
    return out, (b if out.status == "holds" else None)


def P_uniformly_continuous(s: Setting) -> core.HypothesisResult:
    return _with_heads(cert.uniformly_continuous(s.P_data, UNIFORMLY_CONTINUOUS.name), s, UNIFORMLY_CONTINUOUS)


def U_constant(s: Setting) -> core.HypothesisResult:
    return _heads_predicate(U_CONSTANT, s, "parameter", "U depends on t")


def proofs_hypothesis(name: str) -> core.HypothesisResult:
    """The SymPy derivation ``name``: ``holds`` with its ``symbolic_identity`` certificate when every residual
    of its registered identity (run once per process) is zero, else ``unknown``."""
    from ..certificates.identities import identity_certificate, results

    h = IDENTITIES[name]
    which = h.proofs[0].fixed["identity"]
    proofs = results(which)
    ok = all(q.proved for q in proofs)
    detail = ", ".join(f"{q.name}: {'0' if q.proved else 'nonzero'}" for q in proofs)
    if not ok:
        return core.HypothesisResult(name, "unknown", None, "SymPy identities (residual 0)", None, detail)
    return h.result("holds", identity_certificate(which), None, "SymPy identities (residual 0)", detail)


# hypotheses decided in flowcert.attention.consensus, bound here


def antipode_free(s: Setting) -> core.HypothesisResult:
    """:math:`y_j(0)\\ne-y_1(0)` for :math:`j\\ge2`, exactly (the predicate proves either answer)."""
    # float -> rational is exact and so is negation: y_j = -y_1 in rationals iff entrywise in float64
    Y = np.asarray(s.X0, float)
    bad = [j + 1 for j in range(1, s.ell) if np.array_equal(Y[j], -Y[0])]
    c = predicate_certificate("no_antipode_of_first", not bad, {"Y": TOKENS}, Y=core.encode(Y))
    return ANTIPODE_FREE.result("fails" if bad else "holds", c, None, "exact comparison",
                                f"tokens {bad} are antipodal to token 1" if bad else "")


def hemisphere(s: Setting, name: str) -> tuple[core.HypothesisResult, np.ndarray | None]:
    """The open-hemisphere hypothesis of Thm 4.1 with its certificate bound to the initial tokens."""
    res, v = cert.open_hemisphere(s.X0, name)
    return (HEMISPHERE.bind(res) if res.certificate is not None else res), v


def top_eigenvalue(s: Setting, name: str) -> tuple[core.HypothesisResult, cert.TopEigen | None]:
    """Thm 6.1 / Lemma 6.1: :math:`U=U^\\top`, :math:`\\lambda_{\\max}(U)>0` simple, bound to ``params.heads[0].V``;
    a time-varying U fails by its ``constant_values`` predicate."""
    if any(isinstance(U, sp.MatrixBase) for U in s.U):
        c = predicate_certificate("constant_values", False, dict(HEADS), heads=s.heads_json)
        return TOP.result("fails", c, None, "parameter", "U depends on t"), None
    res, te = cert.simple_positive_top_eigenvalue(np.asarray(s.U[0], float), name)
    if res.status == "fails" and res.certificate is None:  # not symmetric: the asymmetric pair is the witness
        from ..certificates.predicates import definiteness_witness

        w = definiteness_witness(np.asarray(s.U[0], float), strict=True)
        if w is not None and w.kind == "not_symmetric":
            return TOP.result("fails", w, None, res.method, res.detail), te
    return (TOP.bind(res) if res.certificate is not None else res), te


def causal_consensus_stable(s: Setting) -> core.HypothesisResult:
    """Thm 5.1: the transverse linearisation at consensus of the causal model (:math:`U=I`) is Hurwitz,
    its Lyapunov certificate bound to the matrix fixed by ``params.n``."""
    res = cert.consensus_stability(True, s.ell, s.h, s.d)
    return CAUSAL_STABLE.bind(res) if res.certificate is not None else res


def thm61_stable(top: core.HypothesisResult) -> core.HypothesisResult:
    """Thm 6.1: local stability of :math:`(v,\\dots,v)` from the certified separator of U (bound as ``top``)."""
    res = cert.theorem_6_1_stability(top)
    return THM61_STABLE.bind(res) if res.certificate is not None else res


def side_of_v(s: Setting, te: cert.TopEigen | None, res: core.HypothesisResult) -> core.HypothesisResult:
    """Thm 6.1's side condition with an ``eigenvector_side`` certificate (Davis–Kahan from the numerical
    eigenvector and the certified separator); a ``holds`` the certificate cannot confirm becomes ``unknown``."""
    from ..certificates.attention.eigenvectors import side_certificate

    if res.status not in ("holds", "fails") or te is None or te.c is None or isinstance(s.U[0], sp.MatrixBase):
        return res if res.status != "holds" else dataclasses.replace(res, status="unknown")
    c = side_certificate(np.asarray(s.U[0], float), np.asarray(s.X0, float), [Fraction(float(x)) for x in te.v], te.c)
    want = {"holds": "one", "fails": "both"}[res.status]
    if c is None or c.data["side"] != want:
        if res.status == "fails":
            return res  # e.g. a token exactly on v^perp: the exact decision stands, uncertified
        return dataclasses.replace(res, status="unknown",
                                   detail=f"{res.detail}; the Davis-Kahan side certificate does not decide it")
    return SIDE.result(res.status, c, res.margin, f"{res.method}; Davis-Kahan side certificate", res.detail)


def tetrahedron(s: Setting) -> core.HypothesisResult | None:
    """The tetrahedron's stability for :math:`P=-\\beta I` with :math:`\\beta` read exactly from head 0, its
    certificate stamped with that subject; None unless :math:`P=-\\beta I` exactly."""
    P = s.P_exact(0)
    b = -P[0, 0]
    if P != core.qmat(np.eye(s.d)) * (-b) or not b > 0:
        return None
    res = cert.tetrahedron_stability(Fraction(int(b.p), int(b.q)))
    return bd.stamp_result(res, {"beta": f"-({P_FORMS[_P_key(s)]})[0,0]"})
