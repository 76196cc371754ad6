r"""What each hypothesis of the catalogue is about: its subject, and the certificates that decide it.

A hypothesis is declared once, next to the code that decides it, as a :class:`HypothesisBinding`: its name
(as it appears in documents) and, for each certificate kind that can decide it, a :class:`ProofRoute`:

* ``subject``: each data field of the certificate as an exact expression over the document's inputs
  (``{"M": "params.Sigma0"}``, ``{"J": "-params.A"}``; :mod:`flowcert.certificates.subjects`);
* ``proves``: the status the certificate establishes, ``"holds"`` or ``"fails"``, or a function of its
  data that says which (an exact inertia proves "Re spec A < 0" or refutes it).

The decision code passes its result through :meth:`HypothesisBinding.bind`, which stamps the subject and the
claim derived from the data (:mod:`flowcert.certificates.claims`) on the certificate. A catalogue entry
lists its hypotheses in an :class:`Entry`; :func:`register` files it under its system, where
``flowcert recheck`` finds it to re-derive, for a saved document, every subject from the document's
own parameters, every status from its certificate, every claim text and ``applies``
(:mod:`flowcert.recheck`). A document's parameters are trusted as *its* subject; the theorem that a
verified hypothesis set implies the conclusion is the paper's (and this catalogue's) responsibility.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .certificates.core import Certificate, HypothesisResult
from .records import Document

if TYPE_CHECKING:
    from .catalogue import Theorem

__all__ = ["HOLDS", "FAILS", "ProofRoute", "HypothesisBinding", "Entry", "register", "entry", "entries_of", "EXTRA_CHECKS", "DERIVED", "DOCUMENT_CHECKERS", "COMPUTED",
           "definite", "semidefinite", "hurwitz", "predicate", "by_value"]

HOLDS, FAILS = "holds", "fails"

#: The hypotheses the engine itself reports for an entry it could not evaluate (always ``unknown``:
#: :mod:`flowcert.engine`); ``flowcert recheck`` accepts them alone, in any entry.
ENGINE_HYPOTHESES = frozenset({"size_within_limit", "stage_within_budget", "entry_evaluated", "evaluation"})


@dataclass(frozen=True)
class ProofRoute:
    """One way a certificate kind decides a hypothesis: its subject and the status it proves."""

    kind: str
    subject: Mapping[str, str]
    proves: str | Callable[[Mapping[str, Any]], str | None]
    #: data entries that must have exactly these values (which predicate, which literal, which identity)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    #: tells apart two proofs of one kind with different subjects (``HypothesisBinding.bind(res, key=...)``)
    key: str = ""

    def direction(self, data: Mapping[str, Any]) -> str | None:
        """``holds`` / ``fails`` as the (accepted) certificate's data establish, None if neither (also when
        a ``fixed`` entry differs: the certificate then speaks of something else)."""
        if any(data.get(k) != v for k, v in self.fixed.items()):
            return None
        if isinstance(self.proves, str):
            return self.proves
        try:
            return self.proves(data)
        except (KeyError, TypeError, ValueError, IndexError):
            return None


@dataclass(frozen=True)
class HypothesisBinding:
    """A named hypothesis of the catalogue and the certificates that can decide it."""

    name: str
    proofs: tuple[ProofRoute, ...] = ()
    #: False when a ``holds`` may stand without a certificate on some path (then reported as resting on
    #: no bound certificate, never refused), or a function of the document's ``resolve`` saying whether
    #: it must have one there: continuity of coefficients needs one when they are constant
    certifiable_holds: bool | Callable[[Callable[[str], Any]], bool] = True

    def needs_certificate(self, resolve: Callable[[str], Any]) -> bool:
        """Whether a ``holds`` of this hypothesis must carry a certificate in this document."""
        c = self.certifiable_holds
        return c(resolve) if callable(c) else bool(c)

    def proof(self, kind: str, key: str | None = None) -> ProofRoute | None:
        """The (first) declared proof of certificate kind ``kind`` (with ``key`` if given), or None."""
        return next((p for p in self.proofs if p.kind == kind and (key is None or p.key == key)), None)

    def proofs_of(self, kind: str) -> list[ProofRoute]:
        """Every declared proof of certificate kind ``kind``."""
        return [p for p in self.proofs if p.kind == kind]

    def bind(self, res: HypothesisResult, key: str | None = None) -> HypothesisResult:
        """``res`` with its certificate bound: the declared subject and the claim derived from its data.

        Raises
        ------
        ValueError
            ``res`` is for another hypothesis, carries a certificate of an undeclared kind, or a
            certificate that proves another status than ``res`` says (a programming error: the
            declaration and the decision code disagree).
        """
        if res.name != self.name:
            raise ValueError(f"binding '{self.name}' to a result named '{res.name}'")
        cert = res.certificate
        if cert is None:
            return res
        proof = self.proof(cert.kind, key)
        if proof is None:
            raise ValueError(f"'{self.name}' declares no {cert.kind} certificate" + (f" with key {key!r}" if key else ""))
        if proof.direction(cert.data) != res.status:
            raise ValueError(f"'{self.name}': a {cert.kind} certificate proves {proof.direction(cert.data)}, "
                             f"the result says {res.status}")
        return dataclasses.replace(res, certificate=stamp(cert, proof.subject))

    def result(self, status: str, cert: Certificate | None, margin: float | None, method: str,
               detail: str = "", key: str | None = None) -> HypothesisResult:
        """A result of this hypothesis; with a certificate, ``status`` stands only if it re-checks
        (else ``unknown``); without one, a ``fails`` is reported uncertified and nothing else is allowed."""
        from .certificates.core import certified

        if cert is None:
            if status == HOLDS and self.certifiable_holds is True:
                raise ValueError(f"'{self.name}' holds only with a certificate")
            return HypothesisResult(self.name, status, margin, method, None, detail)
        return self.bind(certified(self.name, status, cert, margin, method, detail), key)


@dataclass(frozen=True)
class Entry:
    """One catalogue entry, declared once: id, the paper's label, the statement (TeX, as corrected where
    the paper is wrong, with ``correction`` saying what and why) and the hypotheses it may report, in
    order; ``optional`` ones appear only on some paths (a later hypothesis once an earlier one holds,
    a check that needs a simulated equilibrium)."""

    id: str
    label: str
    statement: str
    hypotheses: tuple[HypothesisBinding, ...]
    optional: frozenset[str] = field(default_factory=frozenset)
    correction: str | None = None

    def by_name(self, name: str) -> HypothesisBinding | None:
        """The declared hypothesis called ``name``, or None."""
        return next((h for h in self.hypotheses if h.name == name), None)

    def result(self, hypotheses: list[HypothesisResult], prediction: Mapping[str, object],
               cross_check: Any = None) -> Theorem:
        """The record of this entry on given parameters (:class:`flowcert.catalogue.TheoremResult`), predicting
        ``prediction`` (what the theorem says happens, numpy values kept until the document is written)."""
        from .catalogue import TheoremResult

        out = TheoremResult(self.id, self.label, self.statement, hypotheses, prediction, correction=self.correction)
        if cross_check is not None:
            out.cross_check = cross_check
        return out


_REGISTRY: dict[str, dict[str, Entry]] = {}

#: system -> ``check(doc) -> [(JSON path, reason)]``: document-level checks beyond the theorems
#: (the gaussian regime), run by ``flowcert recheck`` after the theorems.
EXTRA_CHECKS: dict[str, Callable[[Document], list[tuple[str, str]]]] = {}

#: system -> name -> ``fn(doc)``: inputs a subject may name that the document does not store but fixes
#: (a reproducible computation: tokens drawn from a recorded seed, a matrix fixed by a size), recomputed
#: by ``flowcert recheck`` from the document itself; ``KeyError`` when the document cannot give one.
DERIVED: dict[str, dict[str, Callable[[Document], Any]]] = {}


def derived_by(module: str, name: str) -> Callable[[Document], Any]:
    """A :data:`DERIVED` function ``module.name(doc)``, imported on first use (a catalogue declares its
    derived inputs without importing the system that computes them)."""
    def fn(doc: Document) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(doc)

    return fn

#: system -> ``"module:function"`` of a checker of its whole documents, ``fn(doc, prefix, checkpoint) ->
#: DocumentCheck``, used by ``flowcert recheck`` instead of the theorem catalogue (``pretrained``: head
#: records bound to their checkpoint, :mod:`flowcert.pretrained.binding`).
DOCUMENT_CHECKERS: dict[str, str] = {"pretrained": "flowcert.pretrained.binding:recheck_heads"}
#: assumptions a user may state (``params.assume``), each the name of the one hypothesis it stands for (declared by
#: the catalogues): ``assumed`` is accepted for exactly these hypotheses (issue 44, item 4)
ASSUMPTIONS: dict[str, str] = {}

#: names of :data:`DERIVED` inputs that are floating-point computations (the state Jacobians along an rnn
#: trajectory), not reproducible bit for bit across BLAS builds: a certificate carries its copy, which
#: ``flowcert recheck`` requires to be the re-derived value up to rounding noise
#: (:func:`flowcert.certificates.subjects.near`), and then checks the certificate on the re-derived value
#: itself (its own slack must absorb any platform difference; else it is refused, never accepted)
COMPUTED: set[str] = set()

#: system -> modules whose import registers its entries (imported by :func:`entries_of` on first use)
MODULES: dict[str, tuple[str, ...]] = {
    "gaussian": ("flowcert.papers.gaussian",),
    "attention": ("flowcert.papers.multistability", "flowcert.papers.consensus"),
    "rnn": ("flowcert.papers.kpflow",),
}


def register(system: str, *entries: Entry) -> None:
    """File catalogue entries under ``system`` (an id registered twice must be the same entry)."""
    table = _REGISTRY.setdefault(system, {})
    for e in entries:
        if e.id in table and table[e.id] != e:
            raise ValueError(f"entry {e.id} registered twice with different hypotheses")
        table[e.id] = e


def entries_of(system: str) -> dict[str, Entry]:
    """Every registered entry of ``system`` by id (imports the system's catalogue modules once)."""
    import importlib

    for module in MODULES.get(system, ()):
        importlib.import_module(module)
    return _REGISTRY.get(system, {})


def entry(system: str, theorem_id: str) -> Entry | None:
    """The registered entry ``theorem_id`` of ``system``, or None."""
    return entries_of(system).get(theorem_id)


def stamp(cert: Certificate, subject: Mapping[str, str]) -> Certificate:
    """A copy of ``cert`` naming its subject, with the claim its data prove (for certificates outside a
    hypothesis: a prediction's rank, the regime's evidence)."""
    from .certificates.claims import claim
    from .certificates.subjects import subject_digest

    digest = subject_digest({k: cert.data[k] for k in subject}) if subject else None
    return dataclasses.replace(cert, subject=dict(subject), digest=digest,
                               claim=claim(cert.kind, cert.data, dict(subject)) or cert.claim)


def stamp_result(res: HypothesisResult, subject: Mapping[str, str]) -> HypothesisResult:
    """``res`` with its certificate (if any) stamped by :func:`stamp`."""
    return res if res.certificate is None else dataclasses.replace(res, certificate=stamp(res.certificate, subject))


# ---------------------------------------------------------------------------------------------
# The common shapes of a hypothesis
# ---------------------------------------------------------------------------------------------


def by_value(data: Mapping[str, Any]) -> str | None:
    """``holds`` / ``fails`` as a certificate's boolean ``value`` says (predicates, scalar conditions)."""
    v = data.get("value")
    return HOLDS if v is True else FAILS if v is False else None


def _hurwitz_inertia(data: Mapping[str, Any]) -> str:
    p, _, z = (int(x) for x in data["inertia"])
    return HOLDS if p == 0 and z == 0 else FAILS


def definite(name: str, expr: str) -> HypothesisBinding:
    """``expr > 0``: a ``pd`` certificate proves it, ``not_pd`` / ``not_psd`` / ``not_symmetric`` refute it."""
    s = {"M": expr}
    return HypothesisBinding(name, (ProofRoute("pd", s, HOLDS), ProofRoute("not_pd", s, FAILS), ProofRoute("not_psd", s, FAILS),
                             ProofRoute("not_symmetric", s, FAILS), asymmetric_factors(expr)))


def semidefinite(name: str, expr: str) -> HypothesisBinding:
    """``expr >= 0``: ``psd`` proves it, ``not_psd`` / ``not_symmetric`` refute it."""
    s = {"M": expr}
    return HypothesisBinding(name, (ProofRoute("psd", s, HOLDS), ProofRoute("not_psd", s, FAILS), ProofRoute("not_symmetric", s, FAILS),
                             asymmetric_factors(expr)))


def asymmetric_factors(expr: str, key: str = "") -> ProofRoute:
    """``expr`` is not symmetric, by an exact entry pair of its factors (``low_rank_asymmetry``): what refutes a
    definiteness, a semidefiniteness or ``= eta I`` of a matrix given as ``{"factors": [L, R]}``."""
    return ProofRoute("low_rank_asymmetry", {"N": expr}, FAILS, key=key)


def hurwitz(name: str, expr: str) -> HypothesisBinding:
    """``Re spec(expr) < 0``: ``lyapunov`` proves it, ``unstable`` / ``zero_eigenvalue`` refute it, an exact
    ``spectrum_inertia`` decides it either way."""
    s = {"J": expr}
    return HypothesisBinding(name, (ProofRoute("lyapunov", s, HOLDS), ProofRoute("unstable", s, FAILS), ProofRoute("zero_eigenvalue", s, FAILS),
                             ProofRoute("spectrum_inertia", s, _hurwitz_inertia)))


def predicate(name: str, which: str, subject: Mapping[str, str], *refuted_by: ProofRoute, **fixed: Any) -> HypothesisBinding:
    """A hypothesis decided by the exact predicate ``which`` (:mod:`flowcert.certificates.predicates`) of
    its subject; ``refuted_by``: further routes that refute it; ``fixed``: further data entries pinned (a
    literal, a sign)."""
    return HypothesisBinding(name, (ProofRoute("predicate", dict(subject), by_value, {"predicate": which, **fixed}),
                                    *refuted_by))
