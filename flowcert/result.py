r"""Typed results of :func:`flowcert.verify`: one object per parameter set, rendering in Jupyter.

A :class:`Result` wraps the ``verify`` document of DESIGN.md ("Command line"):
:meth:`Result.to_json` is exactly the dict ``flowcert verify SYSTEM --params FILE --json`` prints,
:attr:`Result.theorems` maps each catalogue id (``gaussian:thm-4.7.1``) to a :class:`Theorem`,
and ``regime`` / ``simulation`` are there where the system has them. ``_repr_html_`` and
``_repr_markdown_`` render the verdict table (every hypothesis ``holds`` / ``fails`` /
``unknown``, every cross-check ``agrees`` / ``disagrees`` / ``skipped``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Hypothesis", "Result", "Theorem"]


@dataclass(frozen=True)
class Hypothesis:
    """One named check of a theorem: ``status`` is ``holds``, ``fails`` or ``unknown``."""

    name: str
    status: str
    margin: Any
    method: str
    certificate: Any = None

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> Hypothesis:
        """From a hypothesis record of the document."""
        return cls(rec.get("name", ""), rec.get("status", "unknown"), rec.get("margin"), rec.get("method", ""),
                   rec.get("certificate"))


@dataclass(frozen=True)
class Theorem:
    """One catalogue result on the given parameters (a view of its JSON record, kept in ``record``)."""

    id: str
    source: str
    applies: Any
    hypotheses: tuple[Hypothesis, ...]
    prediction: Any
    cross_check: Mapping[str, Any]
    record: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> Theorem:
        """From a theorem record of the document."""
        return cls(rec["id"], rec.get("source", ""), rec.get("applies"),
                   tuple(Hypothesis.from_json(h) for h in rec.get("hypotheses", ())), rec.get("prediction"),
                   rec.get("cross_check") or {}, rec)

    @property
    def cross_check_status(self) -> str:
        """``agrees``, ``disagrees`` or ``skipped``."""
        return str(self.cross_check.get("status", "skipped"))


class Result:
    """The outcome of :func:`flowcert.verify` on one parameter set.

    Parameters
    ----------
    system : str
        The system name.
    document : dict
        The ``verify`` document as the system built it.
    params : object
        The validated parameter object.
    run : object, optional
        The run behind ``simulation`` (gaussian: the
        :class:`~flowcert.numeric.gaussian.moments.MomentSolution` of eq. (7)), for plotting.
    """

    def __init__(self, system: str, document: dict[str, Any], params: Any, run: Any = None) -> None:
        self.system = system
        self.document = document
        self.params = params
        self.run = run
        self.theorems: dict[str, Theorem] = {t["id"]: Theorem.from_json(t) for t in document.get("theorems", [])}

    @property
    def regime(self) -> dict[str, Any] | None:
        """Table 1's regime (gaussian), else None."""
        return self.document.get("regime")

    @property
    def simulation(self) -> dict[str, Any] | None:
        """The cross-checking simulation (with ``simulate=True``), else None."""
        return self.document.get("simulation")

    def to_json(self) -> dict[str, Any]:
        """Exactly the document ``flowcert verify SYSTEM --params FILE --json`` prints (a plain dict)."""
        from .documents import plain

        return plain(self.document)

    def __repr__(self) -> str:
        applies = sum(t.applies is True for t in self.theorems.values())
        return f"<flowcert.Result {self.system}: {len(self.theorems)} theorems, {applies} apply>"

    def _rows(self) -> list[tuple[str, str, str, str]]:
        rows = []
        for t in self.theorems.values():
            hyps = "; ".join(f"{h.status} {h.name}" for h in t.hypotheses)
            rows.append((t.id, _verdict(t.applies), t.cross_check_status, hyps))
        return rows

    def _extra(self) -> list[str]:
        out = []
        if self.regime is not None:
            r = self.regime
            out.append(f"regime: Sigma {r.get('Sigma')}, mu {r.get('mu')} (basis: {r.get('basis')})")
        sim = self.simulation
        if sim is not None:
            out.append(f"simulation: {sim['skipped']}" if sim.get("skipped") else
                       f"simulation: t_end {sim.get('t_end')}, blow-up {sim.get('blowup_time')}, agrees {sim.get('agrees')}")
        return out

    def _repr_markdown_(self) -> str:
        def md(text: str) -> str:
            return " ".join(str(text).split()).replace("|", "\\|")

        lines = [f"**flowcert verify {md(self.system)}**", "", "| theorem | applies | cross-check | hypotheses |",
                 "|---|---|---|---|"]
        lines += [f"| {' | '.join(md(c) for c in row)} |" for row in self._rows()]
        lines += ["", *(f"- {md(x)}" for x in self._extra())]
        return "\n".join(lines) + "\n"

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{c}</th>" for c in ("theorem", "applies", "cross-check", "hypotheses"))
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in self._rows())
        extra = "".join(f"<li>{e(x)}</li>" for x in self._extra())
        return (f"<div class=\"flowcert-result\"><p><strong>flowcert verify {e(self.system)}</strong></p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                + (f"<ul>{extra}</ul>" if extra else "") + "</div>")


def _verdict(applies: Any) -> str:
    """``applies`` (True), ``inapplicable`` (False) or ``undecided`` (None), as in the report."""
    return "applies" if applies is True else "inapplicable" if applies is False else "undecided"
