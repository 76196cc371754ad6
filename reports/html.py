"""Standalone HTML rendering of flowcert Markdown reports, with offline math.

flowcert writes its reports as Markdown with LaTeX formulas.  This module
turns that Markdown into one self-contained HTML page: the formulas are
converted to MathML with :mod:`latex2mathml` at render time, the stylesheet
is inlined, and the page contains no ``<script>`` element and no reference
to a CDN or any other network resource (images keep the relative paths they
were given in the Markdown).

Only the Markdown subset flowcert emits is supported:

* ATX headings (``#`` to ``######``), paragraphs, horizontal rules,
  block quotes (``>``);
* unordered (``-``, ``*``, ``+``) and ordered (``1.``) lists, nested by
  indentation;
* fenced code blocks (three or more backticks or tildes);
* simple pipe tables (header row, separator row, body rows);
* display math ``$$ ... $$`` (may span lines) and inline math ``$...$``;
* inline code, ``**bold**``, ``*italic*``, links ``[text](url)``, images
  ``![alt](file.png)`` and backslash escapes.

All text outside math is HTML-escaped; the MathML produced by latex2mathml
is re-serialised through an allow-list of MathML elements, so no markup can
leak out of a formula either.  A formula latex2mathml cannot convert (it
raises, or leaves an unknown control sequence such as ``\\label`` in the
output) is shown as ``<code class="tex">`` with the escaped LaTeX source and
counted as a *fallback*; :func:`render` returns that count.

Examples
--------
>>> page, fallbacks = render("Energy $E = mc^2$.", "demo")
>>> "<math" in page and fallbacks == 0
True
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from latex2mathml.converter import convert as _latex_to_mathml

__all__ = [
    "VERDICTS",
    "markdown_to_html",
    "render",
    "write_report",
]

#: Words that, alone inside inline code, are styled as verdict badges.
VERDICTS: frozenset[str] = frozenset({"holds", "fails", "unknown", "agrees", "disagrees"})

_DEFAULT_TITLE = "flowcert report"
_MAX_DEPTH = 16  # nesting limit for block quotes / lists / inline recursion
_MAX_LINK_SCAN = 2048  # longest link label / destination searched for

_CSS = """\
:root { color-scheme: light; }
body { font-family: "Iowan Old Style", "Palatino Linotype", Palatino, Georgia,
       "Times New Roman", serif; font-size: 1.05rem; line-height: 1.55;
       color: #1d1d1f; background: #fdfdfb; max-width: 52rem; margin: 2rem auto;
       padding: 0 1.25rem; }
h1, h2, h3, h4, h5, h6 { line-height: 1.25; margin: 1.6em 0 0.5em; }
h1 { font-size: 1.9rem; border-bottom: 2px solid #ddd; padding-bottom: 0.25em; }
h2 { font-size: 1.45rem; border-bottom: 1px solid #e4e4e4; padding-bottom: 0.2em; }
h3 { font-size: 1.2rem; }
h4 { font-size: 1.05rem; }
p, ul, ol, table, pre, blockquote { margin: 0.7em 0; }
a { color: #1a5fb4; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace;
            font-size: 0.88em; }
code { background: #f1f1ee; padding: 0.05em 0.3em; border-radius: 3px; }
pre { background: #f4f4f1; border: 1px solid #e2e2dc; padding: 0.75em 1em;
      overflow-x: auto; border-radius: 4px; }
pre code { background: none; padding: 0; }
code.tex { color: #8a3b00; background: #fff4e5; }
blockquote { border-left: 4px solid #d6d6d0; margin-left: 0; padding: 0.1em 1em;
             color: #4a4a4a; }
hr { border: none; border-top: 1px solid #ccc; margin: 1.5em 0; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid #bdbdb6; padding: 0.3em 0.65em; vertical-align: top; }
th { background: #eeeeea; }
tr:nth-child(even) td { background: #f8f8f5; }
img { max-width: 100%; height: auto; }
.math-display { display: block; margin: 0.9em 0; overflow-x: auto; text-align: center; }
math { font-size: 1.08em; }
math[display="block"] { display: block; margin: 0.4em auto; }
code.verdict { font-weight: bold; padding: 0.08em 0.45em; border-radius: 0.7em;
               border: 1px solid transparent; }
code.verdict-holds, code.verdict-agrees { color: #0f5b1e; background: #dcf3e0;
                                          border-color: #9fd4aa; }
code.verdict-fails, code.verdict-disagrees { color: #8b1014; background: #fbe0e0;
                                             border-color: #e6a3a5; }
code.verdict-unknown { color: #6b5200; background: #fbf1cf; border-color: #e3cf86; }
"""


# ---------------------------------------------------------------------------
# rendering state
# ---------------------------------------------------------------------------


@dataclass
class _State:
    """Mutable per-render bookkeeping."""

    fallbacks: int = 0
    slugs: dict[str, int] = field(default_factory=dict)


def _esc(text: str) -> str:
    """Escape ``text`` for HTML element content or a double-quoted attribute."""
    return html.escape(text, quote=True)


# ---------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------

_MATHML_ELEMENTS: frozenset[str] = frozenset(
    {
        "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub",
        "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover",
        "mtable", "mtr", "mtd", "mlabeledtr", "mstyle", "mpadded", "mphantom",
        "menclose", "merror", "mfenced", "mmultiscripts", "mprescripts", "none",
        "semantics", "annotation", "maligngroup", "malignmark",
    }
)
_MATHML_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "display", "mathvariant", "mathcolor", "mathbackground", "mathsize",
        "stretchy", "fence", "separator", "accent", "accentunder", "lspace",
        "rspace", "minsize", "maxsize", "movablelimits", "largeop", "symmetric",
        "form", "width", "height", "depth", "linethickness", "columnalign",
        "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines",
        "frame", "framespacing", "displaystyle", "scriptlevel", "notation",
        "align", "open", "close", "separators", "columnspan", "rowspan",
        "bevelled", "numalign", "denomalign", "encoding",
    }
)
_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)((?:\s+[^\s=<>\"'/]+\s*=\s*\"[^\"<>]*\")*)\s*(/?)>")
_ATTR_RE = re.compile(r"([^\s=<>\"'/]+)\s*=\s*\"([^\"<>]*)\"")
_UNKNOWN_COMMAND_RE = re.compile(r"\\[A-Za-z]+")
_SAFE_ATTR_VALUE_RE = re.compile(r"^[#%.,\w\s:-]*$")


class _MathConversionError(ValueError):
    """latex2mathml produced output we do not trust as a faithful rendering."""


def _sanitize_mathml(raw: str) -> str:
    """Re-serialise latex2mathml output through a MathML allow-list.

    Tags outside the allow-list (``\\text{<b>}`` is copied verbatim by
    latex2mathml) are kept as escaped text, attributes outside the allow-list -- ``xmlns``, ``href``,
    event handlers, ``style`` -- are dropped, and every text node is
    unescaped and escaped again, so the result cannot contain markup other
    than MathML.

    Parameters
    ----------
    raw : str
        MathML as returned by :func:`latex2mathml.converter.convert`.

    Returns
    -------
    str
        Sanitised MathML.

    Raises
    ------
    _MathConversionError
        If a control sequence such as ``\\label`` survived the conversion
        outside ``<mtext>`` (latex2mathml passes unknown commands through).
    """
    out: list[str] = []
    stack: list[str] = []
    pos = 0

    def text(chunk: str) -> None:
        if not chunk:
            return
        plain = html.unescape(chunk)
        if "mtext" not in stack and _UNKNOWN_COMMAND_RE.search(plain):
            raise _MathConversionError(f"unsupported control sequence in {plain!r}")
        out.append(html.escape(plain, quote=False))

    for match in _TAG_RE.finditer(raw):
        text(raw[pos : match.start()])
        pos = match.end()
        closing, name, attrs, selfclose = match.groups()
        name = name.lower()
        if name not in _MATHML_ELEMENTS:
            # latex2mathml copies \text{...} verbatim: show such markup as text
            text(match.group(0))
            continue
        if closing:
            if name in stack:
                while stack:
                    top = stack.pop()
                    out.append(f"</{top}>")
                    if top == name:
                        break
            continue
        kept = []
        for attr, value in _ATTR_RE.findall(attrs):
            attr = attr.lower()
            value = html.unescape(value)
            if attr in _MATHML_ATTRIBUTES and _SAFE_ATTR_VALUE_RE.match(value):
                kept.append(f' {attr}="{_esc(value)}"')
        if selfclose:
            out.append(f"<{name}{''.join(kept)}/>")
        else:
            out.append(f"<{name}{''.join(kept)}>")
            stack.append(name)
    text(raw[pos:])
    while stack:
        out.append(f"</{stack.pop()}>")
    return "".join(out)


def _math(latex: str, display: bool, state: _State, *, in_text: bool = False) -> str:
    """Convert one formula to MathML, or to an escaped fallback.

    Parameters
    ----------
    latex : str
        LaTeX source without delimiters.
    display : bool
        Block (display) formula if True, inline formula otherwise.
    state : _State
        Render state; its fallback counter is incremented on failure.
    in_text : bool, optional
        The formula sits inside running text (a ``$$...$$`` within a
        paragraph): wrap a display formula in a ``<span>``, not a ``<div>``,
        so the paragraph stays valid HTML.

    Returns
    -------
    str
        HTML for the formula.
    """
    source = latex.strip()
    mode = "block" if display else "inline"
    try:
        if not source:
            raise _MathConversionError("empty formula")
        rendered = _sanitize_mathml(_latex_to_mathml(source, display=mode))
        if "<math" not in rendered:
            raise _MathConversionError("no <math> element produced")
    except Exception:  # latex2mathml raises many exception types; never crash
        state.fallbacks += 1
        rendered = f'<code class="tex">{_esc(source)}</code>'
        if display:
            tag = "span" if in_text else "div"
            return f'<{tag} class="math-display math-fallback">{rendered}</{tag}>'
        return rendered
    if display:
        tag = "span" if in_text else "div"
        return f'<{tag} class="math-display">{rendered}</{tag}>'
    return rendered


# ---------------------------------------------------------------------------
# inline markup
# ---------------------------------------------------------------------------

_ESCAPABLE = set("\\`*_{}[]()#+-.!|$<>~\"'")
_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]*):")


def _safe_url(url: str, image: bool = False) -> str:
    """Return ``url`` if it is relative or uses a harmless scheme, else ``#``."""
    url = url.strip()
    if url.startswith("<") and url.endswith(">"):
        url = url[1:-1].strip()
    m = _SCHEME_RE.match(url)
    if m is None:
        return url
    scheme = m.group(1).lower()
    if scheme in _SAFE_SCHEMES:
        return url
    if image and url.lower().startswith(("data:image/png", "data:image/jpeg", "data:image/gif")):
        return url
    if len(scheme) == 1:  # a Windows drive letter, e.g. C:/plots/x.png
        return url
    return "#"


def _code_span_end(text: str, i: int) -> tuple[int, int] | None:
    """Locate the code span opening at ``text[i]`` (a backtick).

    Returns
    -------
    tuple of int, or None
        ``(content_start, end)`` where ``end`` is the index after the closing
        backtick run, or None if the run is never closed.
    """
    n = 1
    while i + n < len(text) and text[i + n] == "`":
        n += 1
    run = "`" * n
    j = i + n
    while True:
        k = text.find(run, j)
        if k < 0:
            return None
        m = k + n
        if m < len(text) and text[m] == "`":  # longer run: not ours
            while m < len(text) and text[m] == "`":
                m += 1
            j = m
            continue
        return i + n, k


def _inline_math_end(text: str, i: int) -> int | None:
    """Index of the ``$`` closing an inline formula opened at ``text[i]``.

    Follows the pandoc rule: the opening ``$`` must be followed by a
    non-space, the closing one preceded by a non-space and not followed by a
    digit (so ``$5 and $6`` stays text).
    """
    if i + 1 >= len(text) or text[i + 1].isspace() or text[i + 1] == "$":
        return None
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "$":
            if text[j - 1].isspace():
                return None
            if j + 1 < len(text) and text[j + 1].isdigit():
                j += 1
                continue
            return j
        j += 1
    return None


def _display_math_end(text: str, i: int) -> int | None:
    """Index of the ``$$`` closing a display formula opened at ``text[i]``."""
    j = i + 2
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text.startswith("$$", j):
            return j if j > i + 2 else None
        j += 1
    return None


def _skip_atom(text: str, i: int) -> int:
    """Index after the atomic construct (escape, code span, math) at ``i``.

    Used when searching for a closing delimiter so that ``*`` or ``]`` inside
    code or math does not end an emphasis or a link.
    """
    c = text[i]
    if c == "\\":
        return i + 2
    if c == "`":
        span = _code_span_end(text, i)
        if span is not None:
            return span[1] + (span[0] - i)
        n = 1
        while i + n < len(text) and text[i + n] == "`":
            n += 1
        return i + n
    if c == "$":
        if text.startswith("$$", i):
            end = _display_math_end(text, i)
            return end + 2 if end is not None else i + 2
        end = _inline_math_end(text, i)
        return end + 1 if end is not None else i + 1
    return i + 1


def _find_closing(text: str, start: int, delim: str) -> int | None:
    """Find ``delim`` at or after ``start``, skipping code spans and math."""
    j = start
    while j < len(text):
        if text.startswith(delim, j):
            return j
        j = _skip_atom(text, j)
    return None


def _find_bracket_close(text: str, start: int) -> int | None:
    """Find the ``]`` matching a ``[`` just before ``start`` (nesting aware)."""
    depth = 0
    j = start
    stop = min(len(text), start + _MAX_LINK_SCAN)
    while j < stop:
        c = text[j]
        if c == "[":
            depth += 1
        elif c == "]":
            if depth == 0:
                return j
            depth -= 1
        j = _skip_atom(text, j)
    return None


def _find_paren_close(text: str, start: int) -> int | None:
    """Find the ``)`` closing a link destination beginning at ``start``."""
    depth = 0
    for j in range(start, min(len(text), start + _MAX_LINK_SCAN)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return j
            depth -= 1
        elif c == "\n":
            return None
    return None


def _link_target(raw: str) -> tuple[str, str | None]:
    """Split ``url "title"`` into the URL and an optional title."""
    m = re.match(r'^\s*(\S+)\s+"([^"]*)"\s*$', raw)
    if m:
        return m.group(1), m.group(2)
    return raw.strip(), None


def _plain(text: str) -> str:
    """Crude plain-text version of inline Markdown (for alt text, slugs)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*$\\]", "", text).strip()


def _inline(text: str, state: _State, depth: int = 0) -> str:
    """Render inline Markdown to HTML.

    Parameters
    ----------
    text : str
        Inline Markdown (may contain newlines from paragraph continuation).
    state : _State
        Render state (fallback counter).
    depth : int
        Recursion depth; beyond ``_MAX_DEPTH`` the text is only escaped.

    Returns
    -------
    str
        HTML fragment.
    """
    if depth > _MAX_DEPTH:
        return _esc(text)
    out: list[str] = []
    buf: list[str] = []  # pending plain text
    last_link = text.rfind("](")  # no link or image can start after this
    unclosed: dict[str, int] = {}  # delimiter -> a start known to find no closer

    def closing(start: int, delim: str) -> int | None:
        # Memoised _find_closing: once a search from `start` failed, later
        # searches fail too, which keeps unmatched '*' runs linear.
        if start >= unclosed.get(delim, len(text) + 1):
            return None
        found = _find_closing(text, start, delim)
        if found is None:
            unclosed[delim] = min(start, unclosed.get(delim, start))
        return found

    def flush() -> None:
        if buf:
            out.append(_esc("".join(buf)))
            buf.clear()

    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in _ESCAPABLE:
            buf.append(text[i + 1])
            i += 2
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":  # hard line break
            flush()
            out.append("<br>\n")
            i += 2
            continue
        if c == "`":
            span = _code_span_end(text, i)
            if span is None:
                k = i
                while k < n and text[k] == "`":
                    k += 1
                buf.append(text[i:k])
                i = k
                continue
            start, end = span
            content = text[start:end].replace("\n", " ")
            if len(content) > 2 and content[0] == content[-1] == " " and content.strip():
                content = content[1:-1]
            flush()
            word = content.strip().lower()
            if word in VERDICTS:
                out.append(f'<code class="verdict verdict-{word}">{_esc(content)}</code>')
            else:
                out.append(f"<code>{_esc(content)}</code>")
            i = end + (start - i)
            continue
        if c == "$":
            if text.startswith("$$", i):
                end = _display_math_end(text, i)
                if end is not None:
                    flush()
                    out.append(_math(text[i + 2 : end], True, state, in_text=True))
                    i = end + 2
                    continue
                buf.append("$$")
                i += 2
                continue
            end = _inline_math_end(text, i)
            if end is not None:
                flush()
                out.append(_math(text[i + 1 : end], False, state))
                i = end + 1
                continue
            buf.append(c)
            i += 1
            continue
        if c == "!" and i < last_link and text.startswith("![", i):
            close = _find_bracket_close(text, i + 2)
            if close is not None and text.startswith("(", close + 1):
                paren = _find_paren_close(text, close + 2)
                if paren is not None:
                    flush()
                    url, title = _link_target(text[close + 2 : paren])
                    alt = _plain(text[i + 2 : close])
                    title_attr = f' title="{_esc(title)}"' if title else ""
                    out.append(
                        f'<img src="{_esc(_safe_url(url, image=True))}" alt="{_esc(alt)}"{title_attr}>'
                    )
                    i = paren + 1
                    continue
        if c == "[" and i < last_link:
            close = _find_bracket_close(text, i + 1)
            if close is not None and text.startswith("(", close + 1):
                paren = _find_paren_close(text, close + 2)
                if paren is not None:
                    flush()
                    url, title = _link_target(text[close + 2 : paren])
                    label = _inline(text[i + 1 : close], state, depth + 1)
                    title_attr = f' title="{_esc(title)}"' if title else ""
                    out.append(f'<a href="{_esc(_safe_url(url))}"{title_attr}>{label}</a>')
                    i = paren + 1
                    continue
        if c == "*":
            if text.startswith("**", i) and i + 2 < n and not text[i + 2].isspace():
                close = closing(i + 2, "**")
                if close is not None and close > i + 2 and not text[close - 1].isspace():
                    flush()
                    out.append(f"<strong>{_inline(text[i + 2 : close], state, depth + 1)}</strong>")
                    i = close + 2
                    continue
            if (
                not text.startswith("**", i)
                and i + 1 < n
                and not text[i + 1].isspace()
            ):
                close = closing(i + 1, "*")
                # skip over '**' inside the italic span
                while close is not None and text.startswith("**", close):
                    inner = closing(close + 2, "**")
                    close = None if inner is None else closing(inner + 2, "*")
                if close is not None and close > i + 1 and not text[close - 1].isspace():
                    flush()
                    out.append(f"<em>{_inline(text[i + 1 : close], state, depth + 1)}</em>")
                    i = close + 1
                    continue
            k = i
            while k < n and text[k] == "*":
                k += 1
            buf.append(text[i:k])
            i = k
            continue
        if c == " " and text.startswith("  \n", i):  # two-space hard break
            flush()
            out.append("<br>\n")
            i += 3
            continue
        buf.append(c)
        i += 1
    flush()
    return "".join(out)


# ---------------------------------------------------------------------------
# block structure
# ---------------------------------------------------------------------------

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_HR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_UL_RE = re.compile(r"^( *)([-*+])(?:[ \t]+(.*)|$)")
_OL_RE = re.compile(r"^( *)(\d{1,9})([.)])(?:[ \t]+(.*)|$)")
_QUOTE_RE = re.compile(r"^ {0,3}> ?(.*)$")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _split_row(line: str) -> list[str]:
    """Split a pipe-table row into cells (``|`` in code, math or escaped kept)."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    cells: list[str] = []
    cur_start = 0
    j = 0
    while j < len(s):
        if s[j] == "|":
            cells.append(s[cur_start:j])
            cur_start = j + 1
            j += 1
            continue
        j = _skip_atom(s, j)
    tail = s[cur_start:]
    if tail.strip() or not s.endswith("|"):
        cells.append(tail)
    return [cell.strip().replace("\\|", "|") for cell in cells]


def _alignments(sep: str) -> list[str | None]:
    """Column alignments from a table separator row."""
    aligns: list[str | None] = []
    for cell in _split_row(sep):
        left, right = cell.startswith(":"), cell.endswith(":")
        aligns.append("center" if left and right else "right" if right else "left" if left else None)
    return aligns


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and "|" in lines[i]
        and "|" in lines[i + 1]
        and _TABLE_SEP_RE.match(lines[i + 1]) is not None
        and "-" in lines[i + 1]
    )


def _list_match(line: str) -> tuple[int, bool, str, int] | None:
    """Parse a list-item line.

    Returns
    -------
    tuple or None
        ``(indent, ordered, content, start_number)`` or None.
    """
    m = _UL_RE.match(line)
    if m and not _HR_RE.match(line):
        return len(m.group(1)), False, m.group(3) or "", 1
    m = _OL_RE.match(line)
    if m:
        return len(m.group(1)), True, m.group(4) or "", int(m.group(2))
    return None


def _starts_block(lines: list[str], i: int) -> bool:
    """Whether ``lines[i]`` interrupts a paragraph."""
    line = lines[i]
    return bool(
        not line.strip()
        or _HEADING_RE.match(line)
        or _FENCE_RE.match(line)
        or _HR_RE.match(line)
        or _QUOTE_RE.match(line)
        or line.lstrip().startswith("$$")
        or _list_match(line)
        or _is_table_start(lines, i)
    )


def _slug(text: str, state: _State) -> str:
    base = re.sub(r"[^\w\- ]", "", _plain(text).lower()).strip().replace(" ", "-") or "section"
    count = state.slugs.get(base, 0)
    state.slugs[base] = count + 1
    return base if count == 0 else f"{base}-{count}"


def _blocks(lines: list[str], state: _State, depth: int = 0) -> list[str]:
    """Render a sequence of Markdown lines as HTML block elements.

    Parameters
    ----------
    lines : list of str
        Source lines (no trailing newlines).
    state : _State
        Render state.
    depth : int
        Nesting depth of block quotes and lists.

    Returns
    -------
    list of str
        One HTML string per block.
    """
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue

        fence = _FENCE_RE.match(line)
        if fence:
            indent, marker, info = fence.groups()
            if not (marker[0] == "`" and "`" in info):
                close_re = re.compile(r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$")
                body: list[str] = []
                i += 1
                while i < n and not close_re.match(lines[i]):
                    body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
                    i += 1
                i += 1  # closing fence (or end of input)
                lang = info.strip().split()[0] if info.strip() else ""
                cls = f' class="language-{_esc(re.sub(r"[^A-Za-z0-9_+-]", "", lang))}"' if lang else ""
                code = "\n".join(body)
                out.append(f"<pre><code{cls}>{_esc(code)}{chr(10) if body else ''}</code></pre>")
                continue

        stripped = line.strip()
        if stripped.startswith("$$"):
            rest = stripped[2:]
            close = rest.find("$$")
            if close >= 0 and not rest[close + 2 :].strip():
                out.append(_math(rest[:close], True, state))
                i += 1
                continue
            if close < 0:
                body = [rest]
                j = i + 1
                end_found = False
                while j < n:
                    k = lines[j].find("$$")
                    if k >= 0:
                        body.append(lines[j][:k])
                        end_found = not lines[j][k + 2 :].strip()
                        break
                    if not lines[j].strip():  # blank line: formula never closed
                        break
                    body.append(lines[j])
                    j += 1
                if j < n and end_found:
                    out.append(_math("\n".join(body), True, state))
                    i = j + 1
                    continue
            # otherwise: not a clean display block; treat as paragraph text

        heading = _HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            content = heading.group(2) or ""
            out.append(f'<h{level} id="{_esc(_slug(content, state))}">{_inline(content, state)}</h{level}>')
            i += 1
            continue

        if _HR_RE.match(line):
            out.append("<hr>")
            i += 1
            continue

        if depth < _MAX_DEPTH and _QUOTE_RE.match(line):
            quoted: list[str] = []
            while i < n and lines[i].strip():
                m = _QUOTE_RE.match(lines[i])
                quoted.append(m.group(1) if m else lines[i])
                i += 1
            inner = "\n".join(_blocks(quoted, state, depth + 1))
            out.append(f"<blockquote>\n{inner}\n</blockquote>")
            continue

        if _is_table_start(lines, i):
            header = _split_row(lines[i])
            aligns = _alignments(lines[i + 1])
            i += 2
            rows: list[list[str]] = []
            while i < n and lines[i].strip() and "|" in lines[i]:
                rows.append(_split_row(lines[i]))
                i += 1
            out.append(_table(header, aligns, rows, state))
            continue

        item = _list_match(line)
        if item is not None and depth < _MAX_DEPTH:
            html_list, i = _list(lines, i, state, depth)
            out.append(html_list)
            continue

        para = [line.lstrip()]
        i += 1
        while i < n and not _starts_block(lines, i):
            para.append(lines[i].lstrip())
            i += 1
        out.append(f"<p>{_inline(chr(10).join(para).rstrip(), state)}</p>")
    return out


def _table(header: list[str], aligns: list[str | None], rows: list[list[str]], state: _State) -> str:
    """Render a pipe table."""
    width = len(header)

    def cell(tag: str, text: str, col: int) -> str:
        align = aligns[col] if col < len(aligns) else None
        style = f' style="text-align: {align}"' if align else ""
        return f"<{tag}{style}>{_inline(text, state)}</{tag}>"

    head = "".join(cell("th", h, c) for c, h in enumerate(header))
    parts = ["<table>", "<thead>", f"<tr>{head}</tr>", "</thead>"]
    if rows:
        parts.append("<tbody>")
        for row in rows:
            row = (row + [""] * width)[:width]
            parts.append("<tr>" + "".join(cell("td", t, c) for c, t in enumerate(row)) + "</tr>")
        parts.append("</tbody>")
    parts.append("</table>")
    return "\n".join(parts)


def _list(lines: list[str], i: int, state: _State, depth: int) -> tuple[str, int]:
    """Render the list starting at ``lines[i]``.

    Items belong to this list while they have the same indentation and kind
    (ordered/unordered); more-indented lines belong to the current item and
    are rendered recursively (nested lists, continuation text, code).

    Returns
    -------
    tuple of (str, int)
        The HTML and the index of the first line after the list.
    """
    first = _list_match(lines[i])
    assert first is not None
    base_indent, ordered, _, start = first
    n = len(lines)
    items: list[list[str]] = []
    loose = False
    while i < n:
        m = _list_match(lines[i])
        if m is None or m[0] != base_indent or m[1] != ordered:
            break
        content = m[2]
        marker_width = len(lines[i]) - len(content) if content else len(lines[i].rstrip()) + 1
        body = [content]
        i += 1
        blank_run = False
        while i < n:
            ln = lines[i]
            if not ln.strip():
                blank_run = True
                body.append("")
                i += 1
                continue
            ind = len(ln) - len(ln.lstrip())
            sub = _list_match(ln)
            if sub is not None and sub[0] <= base_indent:
                break
            if ind > base_indent:
                body.append(ln[min(ind, marker_width):] if ind >= marker_width else ln.lstrip())
                blank_run = False
                i += 1
                continue
            if blank_run:
                break
            if _starts_block(lines, i) and sub is None:
                break
            body.append(ln.strip())  # lazy continuation
            i += 1
        if body and not body[-1].strip():
            nxt = _list_match(lines[i]) if i < n else None
            if nxt is not None and nxt[0] == base_indent and nxt[1] == ordered:
                loose = True  # blank line between two items of this list
        while body and not body[-1].strip():
            body.pop()
        items.append(body)

    rendered_items: list[str] = []
    for body in items:
        blocks = _blocks(body, state, depth + 1)
        if not loose and blocks and blocks[0].startswith("<p>"):
            blocks[0] = blocks[0][3:-4]
        rendered_items.append("<li>" + "\n".join(blocks) + "</li>")
    tag = "ol" if ordered else "ul"
    start_attr = f' start="{start}"' if ordered and start != 1 else ""
    return f"<{tag}{start_attr}>\n" + "\n".join(rendered_items) + f"\n</{tag}>", i


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def render(md: str, title: str = _DEFAULT_TITLE) -> tuple[str, int]:
    """Render flowcert Markdown to a standalone HTML page.

    Parameters
    ----------
    md : str
        Markdown source (the subset described in the module docstring).
    title : str, optional
        Text of the page's ``<title>`` element (escaped).

    Returns
    -------
    html : str
        A complete HTML5 document with inline CSS, MathML formulas, no
        scripts and no network references beyond links and images present in
        ``md``.
    fallbacks : int
        Number of formulas latex2mathml could not convert; each is shown as
        ``<code class="tex">`` with its escaped LaTeX source instead.

    Examples
    --------
    >>> page, bad = render("$$\\\\frac{$$", "t")
    >>> bad, 'class="tex"' in page
    (1, True)
    """
    state = _State()
    text = md.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    body = "\n".join(_blocks(text.split("\n"), state))
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="flowcert">\n'
        f"<title>{_esc(title)}</title>\n"
        f"<style>\n{_CSS}</style>\n"
        "</head>\n"
        "<body>\n"
        '<main class="flowcert-report">\n'
        f"{body}\n"
        "</main>\n"
        "</body>\n"
        "</html>\n"
    )
    return page, state.fallbacks


def markdown_to_html(md: str, title: str = _DEFAULT_TITLE) -> str:
    """Render flowcert Markdown to a standalone HTML page.

    Same as :func:`render` but returns only the page; use :func:`render`
    to learn how many formulas fell back to escaped LaTeX.

    Parameters
    ----------
    md : str
        Markdown source.
    title : str, optional
        Page title.

    Returns
    -------
    str
        The HTML document.
    """
    return render(md, title)[0]


def _title_from_markdown(md: str) -> str | None:
    """Plain text of the first ATX heading of ``md``, if any."""
    in_fence = False
    for line in md.splitlines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else _HEADING_RE.match(line)
        if m and (m.group(2) or "").strip():
            return _plain(m.group(2))
    return None


def write_report(
    md: str,
    out_dir: Path | str,
    stem: str = "report",
    title: str | None = None,
) -> tuple[Path, Path]:
    """Write a report as ``<stem>.md`` and a standalone ``<stem>.html``.

    Parameters
    ----------
    md : str
        Markdown source of the report.
    out_dir : pathlib.Path or str
        Output directory; created if missing.  Images referenced by relative
        path in ``md`` are expected to live relative to it.
    stem : str, optional
        Base file name, without extension.
    title : str or None, optional
        Page title; by default the text of the first heading in ``md``,
        else ``"flowcert report"``.

    Returns
    -------
    tuple of pathlib.Path
        Paths of the Markdown and the HTML file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if title is None:
        title = _title_from_markdown(md) or _DEFAULT_TITLE
    md_path = out / f"{stem}.md"
    html_path = out / f"{stem}.html"
    md_path.write_text(md, encoding="utf-8")
    html_path.write_text(markdown_to_html(md, title), encoding="utf-8")
    return md_path, html_path
