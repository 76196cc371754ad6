r"""Helpers every report section may use: theorem tables, verdict words, protocols from defaults.

A theorem block carries the record's verdict :math:`\mathrm{applies}\in\{\mathrm{true},
\mathrm{false},\mathrm{null}\}` written as ``applies`` / ``inapplicable`` / ``undecided`` and
its cross-check status; the block's anchor is :func:`theorem_anchor` of its id, so the front
page links to it.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Iterable, Mapping, TypedDict

from ..records import TheoremRecord
from .catalogue_tex import hypothesis_tex
from .html import slugify
from .values import claim_markdown, plain, quantity_table, value_markdown


class _SectionParts(TypedDict):
    title: str
    markdown: str
    theorems: list[TheoremRecord]
    figures: list[str]


class Section(_SectionParts, total=False):
    """What a report section returns (the contract of :mod:`flowcert.reports.build`): its ``title``, its
    ``markdown`` body, its ``theorems`` (records on the default parameters), the ``figures`` it wrote and
    referenced, and optionally other ``files`` written for the reader to download (paths relative to
    the section's folder)."""

    files: list[str]


def verdict_word(applies: bool | None) -> str:
    """``applies`` (True), ``inapplicable`` (False) or ``undecided`` (None)."""
    return {True: "applies", False: "inapplicable", None: "undecided"}[applies]


def theorem_anchor(theorem_id: str) -> str:
    """Anchor of a theorem's block: ``thm-`` and the id with ``:`` and ``.`` turned into ``-``."""
    return "thm-" + re.sub(r"[^A-Za-z0-9-]", "-", theorem_id)


def section_anchor(key: str) -> str:
    """Anchor of a section's heading."""
    return "sec-" + slugify(key)


def cell(text: Any) -> str:
    """Plain text for a Markdown table cell: pipes escaped, line breaks folded."""
    return re.sub(r"\s+", " ", str(text)).replace("|", "\\|").strip()


_BREAK_AFTER = (r"\quad", r"\qquad", r"\ ")
_BREAK_BEFORE = (r"\Rightarrow", r"\Leftrightarrow", r"\implies", r"\iff")


def split_formula(latex: str) -> list[str]:
    r"""Split a formula at top-level separators (``,`` ``;`` ``\quad`` ``\ `` and before ``\Rightarrow``).

    Only outside braces, ``\left…\right`` pairs and environments, so every piece is a formula
    of its own; a table cell can then wrap between the pieces (MathML does not break lines).
    """
    pieces, start, depth, i = [], 0, 0, 0
    while i < len(latex):
        ch = latex[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", latex[i:])
            word = m.group(0) if m else ch
            if word in (r"\left", r"\begin", r"\langle"):
                depth += 1
            elif word in (r"\right", r"\end", r"\rangle"):
                depth -= 1
            elif depth == 0 and word in _BREAK_BEFORE and latex[start:i].strip():
                pieces.append(latex[start:i])
                start = i
            elif depth == 0 and word in _BREAK_AFTER:
                pieces.append(latex[start:i])  # a spacing command ends the piece and is dropped
                start = i + len(word)
            i += len(word)
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif depth == 0 and ch in ",;":
            pieces.append(latex[start:i + 1])
            start = i + 1
        i += 1
    pieces.append(latex[start:])
    return [p.strip() for p in pieces if p.strip()]


_RELATIONS = ("=", "<", ">", r"\le", r"\ge", r"\leq", r"\geq", r"\preceq", r"\succeq", r"\prec", r"\succ")


def _split_relations(piece: str, longer_than: int = 60) -> list[str]:
    r"""A long piece cut before each top-level relation (``=``, ``\le``, …): MathML does not wrap."""
    if len(piece) <= longer_than:
        return [piece]
    cuts, depth, i = [], 0, 0
    while i < len(piece):
        m = re.match(r"\\([A-Za-z]+|.)", piece[i:])
        word = m.group(0) if m else piece[i]
        if word in (r"\left", r"\begin") or word in "{([":
            depth += 1
        elif word in (r"\right", r"\end") or word in "})]":
            depth -= 1
        elif depth == 0 and i > 0 and word in _RELATIONS and not piece[i + len(word):i + len(word) + 1].isalpha():
            cuts.append(i)
        i += len(word)
    bounds = [0, *cuts, len(piece)]
    return [piece[a:b].strip() for a, b in zip(bounds, bounds[1:]) if piece[a:b].strip()]


def cell_math(latex: str) -> str:
    r"""Inline math for a table cell, split into pieces that can wrap (:func:`split_formula`, and long
    pieces before their relations); ``\|`` and ``|`` become ``\Vert``, ``\vert`` (GitHub tables split on pipes)."""
    latex = re.sub(r"\s+", " ", latex).replace(r"\|", r"\Vert ").replace("|", r"\vert ").strip()
    return " ".join(f"${q}$" for p in split_formula(latex) for q in _split_relations(p))


def _top_level_text(latex: str) -> list[tuple[str, str]]:
    r"""Split a formula into ``("math", …)`` and ``("text", …)`` runs at top-level ``\text{…}``."""
    runs: list[tuple[str, str]] = []
    start, depth, i = 0, 0, 0
    while i < len(latex):
        if depth == 0 and latex.startswith(r"\text{", i):
            j, level = i + len(r"\text{"), 1
            while j < len(latex) and level:
                level += {"{": 1, "}": -1}.get(latex[j], 0)
                j += 1
            runs += [("math", latex[start:i]), ("text", latex[i + len(r"\text{"):j - 1])]
            start = i = j
            continue
        ch = latex[i]
        if ch == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        i += 1
    runs.append(("math", latex[start:]))
    return [(k, v) for k, v in runs if v.strip()]


_EDGE_SPACE = re.compile(r"^(?:\\[ ,;:!]|\\q?quad|\s)+|(?:\\[ ,;:!]|\\q?quad|\s)+$")


def statement_markdown(statement: str) -> str:
    r"""A catalogue statement as text with inline math (never prose inside one formula).

    A statement that already contains ``$`` is Markdown text with inline math and is returned
    as it is. A bare LaTeX formula is cut at its top-level ``\text{…}`` runs, which become prose,
    and at its top-level separators (:func:`split_formula`), each piece its own inline formula
    (so the line can wrap between them).

    Examples
    --------
    >>> statement_markdown(r"x>0\ \Rightarrow\ \dot V\le0\ \text{on}\ [0,T]")
    '$x>0$ $\\Rightarrow$ $\\dot V\\le0$ on $[0,T]$'
    """
    statement = re.sub(r"\s+", " ", statement).strip()
    if "$" in statement:
        return statement
    items: list[str] = []
    for kind, run in _top_level_text(statement):
        if kind == "text":
            items.append(plain(run))
        else:
            for piece in split_formula(_EDGE_SPACE.sub("", run)):
                piece = _EDGE_SPACE.sub("", piece)
                if re.fullmatch(r"[,;:.]", piece):
                    items.append(piece)  # a separator left alone is punctuation of the sentence
                elif piece:
                    items.append(f"${piece}$")
    out = ""
    for item in items:
        glue = "" if not out or out.endswith("(") or re.match(r"\\?[-,.;:)]", item) else " "
        out += glue + item
    return out


def hypothesis_markdown(name: str) -> str:
    """A hypothesis name as Markdown: its TeX (:mod:`flowcert.reports.catalogue_tex`), else the plain text."""
    tex = hypothesis_tex(name)
    return tex if tex is not None else plain(name)


def correction_markdown(theorem_id: str, raw: str, link: Callable[[Any], str] | None = None) -> str:
    """What a record corrects, as Markdown: the corrected mathematics and why
    (:data:`flowcert.reports.errata.CORRECTIONS`) and a link to its erratum (``link`` maps the
    :class:`~flowcert.reports.errata.Erratum` to a Markdown link; default the report's own
    ``#erratum-…`` anchor); the record's plain text when the table has no entry."""
    from .errata import CORRECTIONS, erratum

    entry = CORRECTIONS.get(theorem_id)
    if entry is None:
        return plain(raw)
    e = erratum(entry.erratum)
    return f"{entry.text} See {link(e) if link is not None else f'[erratum {e.label}](#{e.anchor})'}."


def _hypothesis(h: Mapping[str, Any]) -> list[str]:
    """One list item: badge, name, how it was decided, and the detail folded in ``<details>``."""
    line = (f"- `{h['status']}` **{hypothesis_markdown(h['name'])}**, decided by "
            f"{plain(h.get('method') or 'unspecified')}")
    detail: list[str] = []
    if h.get("margin") is not None:
        detail.append(f"margin: {value_markdown(h['margin'])}")
    cert = h.get("certificate")
    if isinstance(cert, Mapping):
        detail.append(f"certificate `{cert.get('kind')}`: {claim_markdown(cert.get('claim', ''))} "
                      f"(re-checked by {plain(cert.get('checker', 'unspecified'))})")
    if h.get("detail"):
        detail.append(plain(h["detail"]))
    if not detail:
        return [line]
    return [line, "  ::: details detail", *(f"  {d}\n" for d in detail), "  :::"]


def theorem_block(r: TheoremRecord, link: Callable[[Any], str] | None = None) -> list[str]:
    """One readable block for a theorem record: statement, hypotheses list, prediction, cross-check.

    The block's heading carries the anchor :func:`theorem_anchor` of the id, so the front page links
    to it; hypotheses are a list (status badge, name, method) with details folded in ``<details>``;
    the prediction and the cross-check's measurements are tables (:func:`~flowcert.reports.values.quantity_table`);
    a correction links to its erratum (``link``: see :func:`correction_markdown`).
    """
    label = (r.get("source") or {}).get("label", "") if isinstance(r.get("source"), Mapping) else ""
    cc = r.get("cross_check") or {}
    status = cc.get("status", "skipped")
    citation = (r.get("source") or {}).get("citation") if isinstance(r.get("source"), Mapping) else None
    lines = [":::: theorem", f"#### [{r['id']}]{{#{theorem_anchor(r['id'])}}}" + (f" — {plain(label)}" if label else ""), "",
             *([f"*Source:* {plain(citation)}.", ""] if citation else []),
             f"Verdict `{verdict_word(r.get('applies'))}`, cross-check `{status}`.", ""]
    statement = statement_markdown(r.get("statement") or "")
    lines += [f"**Statement.** {statement}" if statement else "**Statement.** (not recorded)", ""]
    if r.get("correction"):
        lines += [f"*Corrected.* {correction_markdown(r['id'], r['correction'], link)}", ""]
    hyps = r.get("hypotheses") or []
    lines += ["**Hypotheses**" + ("" if hyps else ": none."), ""]
    for h in hyps:
        lines += _hypothesis(h)
    lines += [""]
    pred = r.get("prediction") or {}
    if pred:
        lines += ["**Prediction**", "", *(quantity_table(pred) if isinstance(pred, Mapping) else [value_markdown(pred)]), ""]
    details = cc.get("details") if isinstance(cc.get("details"), Mapping) else {}
    reason = details.get("reason")
    lines += [f"**Cross-check** `{status}`" + (f": {plain(reason)}" if reason else "."), ""]
    rest = {k: v for k, v in details.items() if k != "reason"}
    if rest:
        lines += ["::: details measured", "", *quantity_table(rest), "", ":::", ""]
    return lines + ["::::", ""]


def theorem_blocks(records: Iterable[TheoremRecord], link: Callable[[Any], str] | None = None) -> list[str]:
    """Markdown blocks of theorem records (:func:`theorem_block`), one after another."""
    return [line for r in records for line in theorem_block(r, link)]


def defaults(func: Callable[..., Any], *names: str) -> dict[str, object]:
    """Default values of keyword parameters of ``func`` (a protocol quoted from the code, not typed)."""
    params = inspect.signature(func).parameters
    return {n: params[n].default for n in names if n in params and params[n].default is not inspect.Parameter.empty}
