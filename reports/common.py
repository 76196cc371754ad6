r"""Helpers every report section may use: theorem tables, verdict words, protocols from defaults.

A theorem row carries the record's verdict :math:`\mathrm{applies}\in\{\mathrm{true},
\mathrm{false},\mathrm{null}\}` written as ``applies`` / ``inapplicable`` / ``undecided`` and
its cross-check status; the row's anchor is :func:`theorem_anchor` of its id, so the front
page links to it.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Iterable, Mapping

from .html import slugify


def verdict_word(applies: bool | None) -> str:
    """``applies`` (True), ``inapplicable`` (False) or ``undecided`` (None)."""
    return {True: "applies", False: "inapplicable", None: "undecided"}[applies]


def theorem_anchor(theorem_id: str) -> str:
    """Anchor of a theorem's row: ``thm-`` and the id with ``:`` and ``.`` turned into ``-``."""
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
            if word in (r"\left", r"\begin"):
                depth += 1
            elif word in (r"\right", r"\end"):
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


def cell_math(latex: str) -> str:
    r"""Inline math for a table cell, split into pieces that can wrap (:func:`split_formula`);
    ``\|`` and ``|`` become ``\Vert``, ``\vert`` (GitHub tables split on pipes)."""
    latex = re.sub(r"\s+", " ", latex).replace(r"\|", r"\Vert ").replace("|", r"\vert ").strip()
    return " ".join(f"${p}$" for p in split_formula(latex))


def code(text: Any) -> str:
    """Inline code span for any text (backticks in the text get a longer fence)."""
    s = re.sub(r"\s+", " ", str(text)).replace("|", "\\|")
    fence = "``" if "`" in s else "`"
    return f"{fence} {s} {fence}" if fence == "``" else f"`{s}`"


def hypotheses_text(record: Mapping[str, Any]) -> str:
    """``status name (method)`` for every hypothesis of a theorem record, ``;``-separated."""
    parts = [f"`{h['status']}` {code(h['name'])} ({cell(h['method'])})" for h in record.get("hypotheses", [])]
    return "; ".join(parts) or "none"


def cross_check_text(record: Mapping[str, Any]) -> str:
    """The cross-check status as a badge, with the reason when it was skipped."""
    cc = record.get("cross_check", {})
    status = cc.get("status", "skipped")
    reason = cc.get("details", {}).get("reason") if isinstance(cc.get("details"), dict) else None
    return f"`{status}`" + (f" ({cell(reason)})" if reason and status == "skipped" else "")


def theorem_table(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Markdown table of theorem records, each row anchored at :func:`theorem_anchor`."""
    lines = ["| theorem | statement | hypotheses | verdict | cross-check |", "|---|---|---|---|---|"]
    for r in records:
        statement = cell_math(r.get("statement") or "")
        if r.get("correction"):
            statement += f" (corrected: {cell(r['correction'])})"
        lines.append(f"| [{r['id']}]{{#{theorem_anchor(r['id'])}}} | {statement} | {hypotheses_text(r)} | "
                     f"`{verdict_word(r.get('applies'))}` | {cross_check_text(r)} |")
    return lines


def defaults(func: Callable[..., Any], *names: str) -> dict[str, Any]:
    """Default values of keyword parameters of ``func`` (a protocol quoted from the code, not typed)."""
    params = inspect.signature(func).parameters
    return {n: params[n].default for n in names if n in params and params[n].default is not inspect.Parameter.empty}
