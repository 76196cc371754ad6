"""The theorem catalogue: one record per checkable result of the source papers.

A record is ``id`` (``<paper>:<kind>-<number>[.<item>]``), ``source``, ``statement`` (LaTeX, as
corrected where the notes found errata), checked ``hypotheses``, a ``prediction`` and a
``cross_check`` by simulation (``agrees`` / ``disagrees`` / ``skipped``), and ``rests_on``: the
chain of results and assumptions the proof uses, erratum links marked (:mod:`flowcert.graph`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .certificates.core import Hypothesis, HypothesisResult
from .certificates.verdicts import Applies, CheckStatus, Itself, Status, ordered, split
from .graph import rests_on
from .papers import PAPERS as _PAPERS
from .papers import Paper
from .records import CrossCheckRecord, HypothesisRecord, TheoremRecord

#: paper key -> the file of its text (read from :data:`flowcert.papers.PAPERS`, the one table; kept
#: under this name for older imports)
PAPERS = MappingProxyType({key: paper.file for key, paper in _PAPERS.items()})


def whole_data(h: HypothesisResult) -> bool:
    """Whether the record of ``h`` keeps its certificate's data whole: a certificate about a computed
    subject (Jacobians, the linear cell's A: :data:`flowcert.bindings.COMPUTED`) carries the values it
    was checked on, where a bound certificate names an exact subject instead of copying it
    (``flowcert recheck`` ties the copy to the value it re-derives)."""
    from .bindings import COMPUTED

    c = h.certificate
    return c is not None and any(e in COMPUTED for e in (c.subject or {}).values())


def hypothesis_record(h: HypothesisResult) -> HypothesisRecord:
    """The JSON record of one hypothesis (:meth:`HypothesisResult.to_json`, with the data of a
    certificate about a computed subject kept whole: :func:`whole_data`)."""
    out = h.to_json()
    if whole_data(h):
        out["certificate"]["data"] = h.certificate.data
    return out


@dataclass
class CrossCheck(Itself):
    """A theorem's prediction tested by simulation.

    Attributes
    ----------
    status : CheckStatus
        ``agrees``, ``disagrees`` or ``skipped`` (a plain word given here is made one).
    details : Any
        What was compared, the numbers, or the reason it was skipped.
    """

    status: CheckStatus
    details: Any = field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, CheckStatus(value) if name == "status" else value)

    def to_json(self) -> CrossCheckRecord:
        """The cross-check record of the document."""
        return {"status": self.status.value, "details": self.details}

    @classmethod
    def from_json(cls, rec: CrossCheckRecord | None) -> CrossCheck:
        """From a cross-check record of a saved document.

        Parameters
        ----------
        rec : Mapping or None
            The record (``status``, ``details``); None: skipped, no details.

        Returns
        -------
        CrossCheck
        """
        rec = rec or {}
        return cls(rec.get("status", "skipped"), rec.get("details"))


_THEOREM_KEYS = ("id", "source", "statement", "correction", "applies", "hypotheses", "prediction", "cross_check",
                 "rests_on")


@dataclass
class Theorem(Itself):
    """One catalogue theorem decided on the parameters: the engine's record and the public result are
    this one object (:func:`flowcert.verify` returns them; JSON is written only at the edge, by
    :meth:`to_json`).

    Attributes
    ----------
    id : str
        ``<paper>:<kind>-<number>[.<item>]`` (``gaussian:thm-4.7.1``).
    label : str
        The paper's own label (``Theorem 4.7 (1)``).
    statement : str
        The statement checked, in LaTeX, as corrected where the paper is wrong.
    hypotheses : list of Hypothesis
    prediction : Any
        What the theorem says happens for these parameters, in its own terms.
    cross_check : CrossCheck
        The prediction tested by simulation.
    correction : str or None
        What was corrected in the printed statement, or None (the docs' errata page lists them).
    applies : Applies
        ``applies`` / ``inapplicable`` / ``undecided``, from the hypotheses (a saved record: as it says).
    paper : Paper or None
        The source paper (title, authors, arXiv id).
    rests_on : list
        The results and assumptions the proof uses (:mod:`flowcert.graph`), erratum links marked.
    """

    id: str
    label: str
    statement: str
    hypotheses: list[Hypothesis]
    prediction: Any = None
    cross_check: CrossCheck = field(default_factory=lambda: CrossCheck("skipped", {"reason": "not requested"}))
    correction: str | None = None
    #: keys of a saved record the type does not know, written back as they came
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _order: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    _saved: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # applies/rests_on/source read

    @property
    def applies(self) -> Applies:
        """Applies when every hypothesis holds (or is ``assumed``: stated by the user, so the theorem
        applies under that assumption), inapplicable when one fails, else undecided; a theorem read
        from a saved record says what the record says (``flowcert recheck`` re-derives it)."""
        if "applies" in self._saved:
            return Applies.from_json(self._saved["applies"])
        return Applies.of({h.status.value for h in self.hypotheses})

    @property
    def paper(self) -> Paper | None:
        """The source paper (:data:`flowcert.papers.PAPERS`), or None for an id of no paper."""
        return _PAPERS.get(self.id.split(":")[0])

    @property
    def source(self) -> Any:
        """The document's ``source``, what a reader looks the result up by: ``file`` (the paper's PDF on
        arXiv), ``label`` (the result's label in the paper), ``paper`` (title), ``authors``, ``arxiv``
        (identifier), ``url`` (abstract page) and ``citation`` (all in one line)."""
        if "source" in self._saved:
            return self._saved["source"]
        p = self.paper
        if p is None:
            return {"file": "", "label": self.label}
        return {"file": p.pdf, "label": self.label, "paper": p.title, "authors": p.authors, "arxiv": p.arxiv,
                "url": p.url, "citation": p.cite(self.label)}

    @property
    def rests_on(self) -> Any:
        """The chain of results and assumptions the proof uses (:func:`flowcert.graph.rests_on`)."""
        return self._saved["rests_on"] if "rests_on" in self._saved else rests_on(self.id)

    @property
    def cross_check_status(self) -> CheckStatus:
        """``agrees``, ``disagrees`` or ``skipped`` (:attr:`cross_check` ``.status``)."""
        return self.cross_check.status

    @property
    def deciding(self) -> Hypothesis | None:
        """The hypothesis that decides a theorem that does not apply: the first that fails, else the
        first that is unknown; None when it applies."""
        for wanted in (Status.FAILS, Status.UNKNOWN):
            for h in self.hypotheses:
                if h.status is wanted:
                    return h
        return None

    @property
    def assumptions(self) -> tuple[Hypothesis, ...]:
        """The hypotheses stated by the user rather than checked (``assumed``)."""
        return tuple(h for h in self.hypotheses if h.status is Status.ASSUMED)

    @property
    def record(self) -> TheoremRecord:
        """The theorem record of the document (:meth:`to_json`)."""
        return self.to_json()

    def _repr_html_(self) -> str:
        """The notebook view (:func:`flowcert.display.theorem_html`): the statement in MathML, the verdict
        (an ``applies`` under an assumption marked), hypotheses, prediction and cross-check."""
        from .display import theorem_html

        return theorem_html(self)

    def summary(self) -> str:
        """One line: id, verdict, cross-check, and the deciding hypothesis of a theorem that does not apply."""
        line = f"{self.id:<22} {self.applies.value:<12} cross-check {self.cross_check.status.value:<9}"
        h = self.deciding
        if h is not None:
            line += f" {h.status.value}: {h.name}"
        elif self.assumptions:
            line += " assuming " + ", ".join(a.name for a in self.assumptions)
        return line.rstrip()

    def to_json(self) -> TheoremRecord:
        """The theorem record of a document: the one writer of theorem records (the CLI, the sweep,
        :meth:`flowcert.result.Result.to_json` and the report all encode through it)."""
        return ordered({
            "id": self.id,
            "source": self.source,
            "statement": self.statement,
            "correction": self.correction,
            "applies": self.applies.json,
            "hypotheses": [hypothesis_record(h) for h in self.hypotheses],
            "prediction": self.prediction,
            "cross_check": self.cross_check.to_json(),
            "rests_on": self.rests_on,
        }, self._order, self.extra)

    @classmethod
    def from_json(cls, rec: TheoremRecord) -> Theorem:
        """From a theorem record of a saved document (its key order, unknown keys, ``applies``,
        ``source`` and ``rests_on`` kept as they came).

        Parameters
        ----------
        rec : Mapping
            The record, as ``verify --json`` writes it; ``id`` is required.

        Returns
        -------
        Theorem
        """
        extra, order = split(rec, _THEOREM_KEYS)
        source = rec.get("source")
        label = source.get("label", "") if isinstance(source, Mapping) else ""
        saved = {k: rec.get(k) for k in ("applies", "source", "rests_on")}
        return cls(rec["id"], label, rec.get("statement", ""),
                   [Hypothesis.from_json(h) for h in rec.get("hypotheses", ())], rec.get("prediction"),
                   CrossCheck.from_json(rec.get("cross_check")), rec.get("correction"), extra, order, saved)


#: The engine's former name of :class:`Theorem`.
TheoremResult = Theorem
