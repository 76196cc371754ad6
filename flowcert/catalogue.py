"""The theorem catalogue: one record per checkable result of the source papers.

A record is ``id`` (``<paper>:<kind>-<number>[.<item>]``), ``source``, ``statement`` (LaTeX, as
corrected where the notes found errata), checked ``hypotheses``, a ``prediction`` and a
``cross_check`` by simulation (``agrees`` / ``disagrees`` / ``skipped``), and ``rests_on``: the
chain of results and assumptions the proof uses, erratum links marked (:mod:`flowcert.graph`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .certificates.core import HypothesisResult
from .graph import rests_on
from .papers import PAPERS as _PAPERS

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


def hypothesis_record(h: HypothesisResult) -> dict[str, Any]:
    """The JSON record of one hypothesis (:meth:`HypothesisResult.to_json`, with the data of a
    certificate about a computed subject kept whole: :func:`whole_data`)."""
    out = h.to_json()
    if whole_data(h):
        out["certificate"]["data"] = h.certificate.data
    return out


@dataclass
class CrossCheck:
    """Outcome of testing a prediction by simulation."""

    status: str  # "agrees" | "disagrees" | "skipped"
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "details": self.details}


@dataclass
class TheoremResult:
    """A catalogue record evaluated on given parameters."""

    id: str
    label: str
    statement: str
    hypotheses: list[HypothesisResult]
    prediction: dict[str, Any]
    cross_check: CrossCheck = field(default_factory=lambda: CrossCheck("skipped", {"reason": "not requested"}))
    correction: str | None = None

    @property
    def applies(self) -> bool | None:
        """True if every hypothesis holds (or is ``assumed``: stated by the user, so the theorem applies
        under that assumption), False if one fails, None if undecided."""
        statuses = {h.status for h in self.hypotheses}
        if "fails" in statuses:
            return False
        return True if statuses <= {"holds", "assumed"} else None

    def to_json(self) -> dict[str, Any]:
        """The theorem record of a document (the one writer of theorem records: the CLI, the sweep,
        :meth:`flowcert.result.Result.to_json` and the report all encode through it)."""
        paper = self.id.split(":")[0]
        return {
            "id": self.id,
            "source": {"file": _PAPERS[paper].file, "label": self.label},
            "statement": self.statement,
            "correction": self.correction,
            "applies": self.applies,
            "hypotheses": [hypothesis_record(h) for h in self.hypotheses],
            "prediction": self.prediction,
            "cross_check": self.cross_check.to_json(),
            "rests_on": rests_on(self.id),
        }
