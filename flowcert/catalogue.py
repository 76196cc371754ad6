"""The theorem catalogue: one record per checkable result of the source papers.

A record is ``id`` (``<paper>:<kind>-<number>[.<item>]``), ``source``, ``statement`` (LaTeX, as
corrected where the notes found errata), checked ``hypotheses``, a ``prediction`` and a
``cross_check`` by simulation (``agrees`` / ``disagrees`` / ``skipped``), and ``rests_on``: the
chain of results and assumptions the proof uses, erratum links marked (:mod:`flowcert.graph`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .certificates.core import HypothesisResult
from .graph import rests_on

PAPERS = {
    "gaussian": "000_c5dbab8f62abe14d.txt",
    "multistability": "001_206237fe670cef43.txt",
    "kpflow": "002_920a650c5f3b6f50.txt",
    "consensus": "003_951a97dfacf88740.txt",
}


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
        paper = self.id.split(":")[0]
        return {
            "id": self.id,
            "source": {"file": PAPERS[paper], "label": self.label},
            "statement": self.statement,
            "correction": self.correction,
            "applies": self.applies,
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "prediction": self.prediction,
            "cross_check": self.cross_check.to_json(),
            "rests_on": rests_on(self.id),
        }
