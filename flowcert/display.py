"""How a :class:`~flowcert.result.Result` shows itself in Jupyter: a compact styled table.

One row per theorem: its id (with the paper's label and title), the verdict (``applies`` /
``inapplicable`` / ``undecided``), the cross-check (``agrees`` / ``disagrees`` / ``skipped``) and the
hypotheses folded in a ``<details>`` element whose summary counts them and names the one that decides
a theorem that does not apply. Long texts are cut (:data:`TEXT_CAP` characters) and certificates are
not shown (they are in :meth:`~flowcert.result.Result.to_json`), so the page stays small whatever
the size of the matrices: a few kilobytes per theorem at most. The markup is well-formed XML; every
text is escaped.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["TEXT_CAP", "result_html", "result_markdown", "table_html"]

#: Longest method / detail text shown in the table (characters); the full text is in the JSON.
TEXT_CAP = 100
#: Size the page aims to stay under (bytes); past it, the per-hypothesis notes are left out.
PAGE_BUDGET = 19_000

_STYLE = (
    ".flowcert-result{font:13px/1.35 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:78em}"
    ".flowcert-result table{border-collapse:collapse;width:100%;margin:4px 0}"
    ".flowcert-result th,.flowcert-result td{border-bottom:1px solid #d8d8d8;padding:3px 8px;text-align:left;"
    "vertical-align:top}"
    ".flowcert-result th{background:#f4f4f4;font-weight:600}"
    ".flowcert-result b{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600;"
    "white-space:nowrap}"
    ".flowcert-result .applies,.flowcert-result .holds,.flowcert-result .agrees,.flowcert-result .decided"
    "{background:#d9f2d9;color:#145214}"
    ".flowcert-result .inapplicable,.flowcert-result .fails,.flowcert-result .disagrees"
    "{background:#f9d6d6;color:#7d1212}"
    ".flowcert-result .undecided,.flowcert-result .unknown{background:#fcefc4;color:#634b00}"
    ".flowcert-result .skipped{background:#ececec;color:#555}"
    ".flowcert-result .assumed{background:#dfe6fb;color:#1d3480}"
    ".flowcert-result small{color:#666;font-size:12px}"
    ".flowcert-result summary{cursor:pointer}"
    ".flowcert-result ul{margin:2px 0;padding-left:1.1em}"
)


def _cut(text: Any, cap: int = TEXT_CAP) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= cap else s[: cap - 1] + "…"


def _word(word: Any) -> str:
    w = html.escape(str(word))
    return f'<b class="{w}">{w}</b>'


def _margin(m: Any) -> str:
    if isinstance(m, (int, float)) and not isinstance(m, bool):
        return f"margin {m:.3g}"
    return ""


def _hypotheses(t: Any, notes_on: bool = True) -> str:
    e = html.escape
    counts: dict[str, int] = {}
    for h in t.hypotheses:
        counts[h.status.value] = counts.get(h.status.value, 0) + 1
    summary = ", ".join(f"{n} {w}" for w, n in counts.items()) or "none"
    deciding = t.deciding
    if deciding is not None:
        summary += f" · deciding: {_cut(deciding.name, 60)}"
    items = []
    for h in t.hypotheses:
        notes = [x for x in (_margin(h.margin), _cut(h.method, 48) if h.method else "") if x] if notes_on else []
        if notes_on and h.status.value != "holds" and h.detail:
            notes.append(_cut(h.detail))
        if notes_on and h.certificate is not None:
            notes.append(f"certificate: {_cut(h.certificate.kind, 30)}")
        items.append(f"<li>{_word(h.status.value)} {e(_cut(h.name, 80))}"
                     + (f" <small>{e(' · '.join(notes))}</small>" if notes else "") + "</li>")
    return f"<details><summary>{e(summary)}</summary><ul>{''.join(items)}</ul></details>"


def _theorem_row(t: Any, notes_on: bool = True) -> str:
    e = html.escape
    label = f"<br/><small>{e(t.label)}</small>" if t.label else ""
    return (f"<tr><td>{e(t.id)}{label}</td><td>{_word(t.applies.value)}</td>"
            f"<td>{_word(t.cross_check.status.value)}</td><td>{_hypotheses(t, notes_on)}</td></tr>")


def table_html(theorems: Any, notes_on: bool = True) -> str:
    """The ``<table>`` of verdicts, one row per theorem (hypotheses folded; ``notes_on``: with each
    hypothesis' margin, method and reason).

    Parameters
    ----------
    theorems : iterable of Theorem
        The theorems to show, in order (``result.theorems.values()``).
    notes_on : bool, default True
        Whether each hypothesis carries its notes (margin, method, the reason of one that does not
        hold, the certificate's kind); off, only its status and name are shown.

    Returns
    -------
    str
        One ``<table>`` element (well-formed XML, every text escaped), one row per theorem: id and
        label, verdict, cross-check, and the hypotheses in a ``<details>`` element.
    """
    head = "".join(f"<th>{c}</th>" for c in ("theorem", "verdict", "cross-check", "hypotheses"))
    body = "".join(_theorem_row(t, notes_on) for t in theorems)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def extras(result: Any) -> list[str]:
    """One line each for the regime and the simulation, where the result has them.

    Parameters
    ----------
    result : Result
        The result shown (a :class:`~flowcert.result.Result`); its ``regime`` and ``simulation`` are read.

    Returns
    -------
    list of str
        Plain-text lines (not escaped): ``regime: ...`` (Sigma, mu, basis and reason) when there is a
        regime, ``simulation: ...`` (end time, blow-up time, agreement, or why it was skipped) when
        there is a simulation; empty when there is neither.
    """
    from .systems import REGISTRY, get_system

    parts = {k: v for k, v in (("regime", result.regime),
                               ("simulation", None if result.simulation is None else result.simulation.record))
             if v is not None}
    return get_system(result.system).summary_lines(parts, detail=True) if result.system in REGISTRY else []


def result_html(result: Any) -> str:
    """The Jupyter rendering of a :class:`~flowcert.result.Result` (well-formed XML).

    Parameters
    ----------
    result : Result
        The result to render.

    Returns
    -------
    str
        A ``<div class="flowcert-result">`` with its style, a header line (system, status, the counts
        of verdicts and cross-checks), the table of :func:`table_html` and a list of the
        :func:`extras` and of the papers cited. Past :data:`PAGE_BUDGET` bytes the table is rebuilt
        without the per-hypothesis notes, and a line says where to find them.
    """
    e = html.escape
    c = result.counts()
    head = (f"<p><strong>flowcert verify {e(result.system)}</strong> {_word(result.status.value)} "
            f"<small>{len(result.theorems)} theorems: {c['applies']} apply, {c['inapplicable']} "
            f"inapplicable, {c['undecided']} undecided · cross-checks: {c['agrees']} agree, "
            f"{c['disagrees']} disagree, {c['skipped']} skipped</small></p>")
    papers = {t.paper.key: t.paper for t in result.theorems.values() if t.paper is not None}
    notes = [*extras(result), *(f"{p.key}: {p.title}, {p.authors} (arXiv {p.arxiv})" for p in papers.values())]
    table = table_html(result.theorems.values())
    if len(table) > PAGE_BUDGET:
        table = table_html(result.theorems.values(), notes_on=False)
        notes.append("margins, methods and reasons of the hypotheses: result.theorems[id].hypotheses or result.to_json()")
    lines = "".join(f"<li>{e(_cut(x, 300))}</li>" for x in notes)
    return (f'<div class="flowcert-result"><style>{_STYLE}</style>{head}{table}'
            + (f"<ul>{lines}</ul>" if lines else "") + "</div>")


def result_markdown(result: Any) -> str:
    """A Markdown rendering: one row per theorem, the hypotheses counted and the deciding one named.

    Parameters
    ----------
    result : Result
        The result to render (a :class:`~flowcert.result.Result`).

    Returns
    -------
    str
        A bold header line (system and status), a table with columns theorem, verdict, cross-check
        and hypotheses (``|`` escaped, whitespace collapsed), then the :func:`extras` as a bullet
        list; ends with a newline.
    """

    def md(text: Any) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = [f"**flowcert verify {md(result.system)}**: {result.status.value}", "",
             "| theorem | verdict | cross-check | hypotheses |", "|---|---|---|---|"]
    for t in result.theorems.values():
        counts: dict[str, int] = {}
        for h in t.hypotheses:
            counts[h.status.value] = counts.get(h.status.value, 0) + 1
        hyps = ", ".join(f"{n} {w}" for w, n in counts.items())
        if t.deciding is not None:
            hyps += f"; {t.deciding.status.value}: {t.deciding.name}"
        lines.append(f"| {md(t.id)} | {t.applies.value} | {t.cross_check.status.value} | {md(hyps)} |")
    lines += ["", *(f"- {md(x)}" for x in extras(result))]
    return "\n".join(lines) + "\n"
