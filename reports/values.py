r"""Values of theorem records as Markdown: numbers to their significance, matrices as matrices.

A record's ``prediction`` and its cross-check ``details`` are mappings of plain keys to JSON
values. :func:`quantity_table` shows one as a two-column table, the key as mathematics where
:mod:`flowcert.reports.catalogue_tex` has its TeX, each value by :func:`value_markdown`: a float
with four significant digits (:func:`number`: ``2.9999999999999925`` is ``3``), a small matrix
as :math:`\begin{pmatrix}\cdot\end{pmatrix}`, a hypothesis or certificate object in words.
Nothing is cut in the middle of a JSON text; a long list states how many values it holds. A text of
a record (a method, a reason, a name) is set by :func:`plain`: its prose as Markdown, its ``$…$``
formulas as maths.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Mapping

from ..mathml import mathml
from .catalogue_tex import hypothesis_tex, quantity_tex

__all__ = ["number", "tex_number", "value_markdown", "quantity_table", "table_safe", "key_markdown", "plain", "code"]

#: Lists longer than this show their first values and their length.
LIST_SHOWN = 12


def number(x: Any, digits: int = 4) -> str:
    """A number to ``digits`` significant digits (integers exactly; ``∞``, ``nan``)."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def code(text: Any) -> str:
    """Inline code span for any text (backticks in the text get a longer fence; in a table cell, pass
    the cell through :func:`flowcert.reports.values.table_safe`)."""
    s = re.sub(r"\s+", " ", str(text))
    fence = "``" if "`" in s else "`"
    return f"{fence} {s} {fence}" if fence == "``" else f"`{s}`"


# Markdown punctuation that could start markup here; an underscore only at a word's edge
# (CommonMark never reads an intraword one as emphasis), so snake_case names stay legible
_MD_SPECIAL = re.compile(r"([\\`*\[\]{}<#|&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


#: One inline formula of a record's text: ``$…$``, no space inside either delimiter, no digit outside
#: (the renderer's own rule, :func:`flowcert.reports.html._math_inline_rule`).
_RECORD_MATH = re.compile(r"(?<![\d$\\])\$(?=[^\s$])([^$]*?[^\s$\\])\$(?![\d$])")


@functools.lru_cache(maxsize=4096)
def _converts(latex: str) -> bool:
    try:
        mathml(latex, False)
    except ValueError:
        return False
    return True


def plain(text: Any) -> str:
    r"""Text from a record (a method, a reason, a name) as Markdown: prose verbatim, formulas as maths.

    A record's text writes its formulas as TeX between ``$`` (``decided by exact rational
    $LDL^\top$``): those stay formulas (MathML on the page) and the prose around them has its
    Markdown punctuation backslash-escaped. Text that would still show ``$`` or a TeX command
    (``\name``) outside a formula, or holds a formula that does not convert, is set as code instead.
    """
    s = re.sub(r"\s+", " ", str(text)).strip()
    pieces = _RECORD_MATH.split(s)  # prose, formula, prose, …
    prose, formulas = pieces[::2], pieces[1::2]
    if any("$" in p or re.search(r"\\[A-Za-z]", p) for p in prose) or not all(map(_converts, formulas)):
        return code(s)
    return "".join(_MD_SPECIAL.sub(r"\\\1", p) if i % 2 == 0 else f"${p}$" for i, p in enumerate(pieces))


def key_markdown(key: str) -> str:
    """A key as Markdown: its TeX (:data:`~flowcert.reports.catalogue_tex.QUANTITY_TEX`), else the key as code."""
    tex = quantity_tex(key)
    return tex if tex is not None else f"`{key}`"


def tex_number(x: Any, digits: int = 4) -> str:
    r"""A number for TeX: :func:`number`, with an exponent written :math:`\times10^{k}`."""
    text = number(x, digits)
    if "e" not in text:
        return text.replace("∞", r"\infty").replace("−", "-")
    mantissa, exponent = text.split("e")
    return rf"{mantissa}\times10^{{{int(exponent)}}}"


def _matrix(rows: list[list[Any]]) -> str:
    body = r" \\ ".join(" & ".join(tex_number(v) for v in row) for row in rows)
    return f"$\\begin{{pmatrix}}{body}\\end{{pmatrix}}$"


def _inline_mapping(d: Mapping[str, Any], depth: int) -> str:
    return "; ".join(f"{key_markdown(k)}: {value_markdown(v, depth + 1)}" for k, v in d.items() if k != "data")


def claim_markdown(claim: Any) -> str:
    """A certificate's claim as Markdown: in code font, verbatim, since it is the exact string ``flowcert recheck``
    re-derives and compares (its terms are JSON paths of the document, ``params.A``, not formulas)."""
    text = " ".join(str(claim).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else "none"


def value_markdown(v: Any, depth: int = 0) -> str:
    """One JSON value of a record as one line of Markdown (see the module docstring)."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if _is_number(v):
        return number(v)
    if isinstance(v, str):
        return plain(v)
    if isinstance(v, Mapping):
        if {"name", "status"} <= set(v):
            margin = f"; margin {number(v['margin'])}" if _is_number(v.get("margin")) else ""
            name = hypothesis_tex(v["name"]) or plain(v["name"])  # the hypothesis as mathematics, not its identifier
            return f"`{v['status']}` {name} (decided by {plain(v.get('method') or 'unspecified')}{margin})"
        if {"kind", "claim"} <= set(v):
            return (f"certificate `{v['kind']}`: {claim_markdown(v['claim'])} (re-checked by "
                    f"{plain(v.get('checker') or 'unspecified')})")
        return "(" + _inline_mapping(v, depth) + ")" if depth else _inline_mapping(v, depth)
    if isinstance(v, (list, tuple)):
        if not v:
            return "none"
        if all(_is_number(x) for x in v):
            shown = ", ".join(number(x) for x in v[:LIST_SHOWN])
            return f"({shown})" if len(v) <= LIST_SHOWN else f"({shown}, …): {len(v)} values"
        if all(isinstance(r, (list, tuple)) and r and all(_is_number(x) for x in r) for r in v):
            if len(v) <= 6 and max(len(r) for r in v) <= 6:
                return _matrix([list(r) for r in v])
            return f"{len(v)}×{max(len(r) for r in v)} array (in the JSON record)"
        items = [value_markdown(x, depth + 1) for x in v[:LIST_SHOWN]]
        return "; ".join(items) + (f"; … ({len(v)} in all)" if len(v) > LIST_SHOWN else "")
    return plain(v)


def table_safe(md: str) -> str:
    r"""A Markdown fragment made safe for one table cell: one line, pipes escaped outside math and
    written ``\vert`` / ``\Vert`` inside it (a table splits its rows at every pipe)."""
    md = re.sub(r"\s+", " ", md).strip()
    out, i = [], 0
    for m in re.finditer(r"\$[^$]+\$", md):
        out.append(re.sub(r"(?<!\\)\|", r"\\|", md[i:m.start()]))
        inner = m.group(0)[1:-1].replace(r"\|", r"\Vert ").replace("|", r"\vert ")
        out.append(f"${inner.strip()}$")  # no space may touch a delimiter
        i = m.end()
    out.append(re.sub(r"(?<!\\)\|", r"\\|", md[i:]))
    return "".join(out)


def quantity_table(d: Mapping[str, Any]) -> list[str]:
    """A mapping of a record as a two-column Markdown table (quantity, value)."""
    rows = ["| quantity | value |", "|---|---|"]
    rows += [f"| {table_safe(key_markdown(k))} | {table_safe(value_markdown(v))} |" for k, v in d.items()]
    return rows
