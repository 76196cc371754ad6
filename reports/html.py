r"""Standalone HTML from flowcert's Markdown reports: markdown-it-py, dollarmath, MathML.

Markdown (CommonMark + GitHub tables) is parsed by :mod:`markdown_it` with the ``dollarmath``,
``anchors`` and ``attrs`` plugins of :mod:`mdit_py_plugins`; formulas (``$…$`` inline, ``$$…$$``
display) are converted to MathML by :mod:`latex2mathml` when the page is rendered, so the page
needs no script and no network: the stylesheet is inline and images are embedded as
``data:`` URIs (:func:`write_report` with ``embed=True``).

Safety (no markup from text): raw HTML in the Markdown is disabled, so it is shown as text;
links and images go through markdown-it's URL validation (no ``javascript:``, ``vbscript:``,
``file:`` or non-image ``data:``); attributes set with the ``{…}`` syntax are limited to
``id`` and ``class``; and the MathML of each formula is parsed as XML and re-serialised
through an allow-list of MathML elements and attributes. A formula that latex2mathml cannot
convert, or whose output leaves an unknown control sequence (``\label``), is shown as
``<code class="tex">`` with the escaped source and counted as a *fallback* (:func:`render`).

Examples
--------
>>> page, fallbacks = render("Energy $E = mc^2$.", "demo")
>>> "<math" in page and fallbacks == 0
True
"""

from __future__ import annotations

import base64
import html
import mimetypes
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Sequence

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.attrs import attrs_plugin
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.dollarmath.index import math_inline_dollar

from ..mathml import mathml  # the converter sits in the flowcert layer: the notebook views use it too
from ..outputs import make_folder, write_text
from .css import PAGE_CSS as _CSS

__all__ = ["VERDICTS", "TexLeakError", "check_visible_text", "render", "markdown_to_html", "write_report", "slugify",
           "parse_markdown"]

_DEFAULT_TITLE = "flowcert report"

#: Inline code spans whose whole text is one of these words are drawn as verdict badges.
VERDICTS: tuple[str, ...] = ("holds", "fails", "unknown", "agrees", "disagrees", "skipped",
                             "applies", "inapplicable", "undecided")

# ---------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------

def _math_html(latex: str, display: bool, env: EnvType, in_text: bool) -> str:
    tag = "span" if in_text else "div"
    try:
        rendered = mathml(latex, display)
        cls = "math-display"
    except ValueError:
        env["fallbacks"] = env.get("fallbacks", 0) + 1
        rendered = f'<code class="tex">{html.escape(latex.strip(), quote=False)}</code>'
        cls = "math-display math-fallback"
    return f'<{tag} class="{cls}">{rendered}</{tag}>' if display else rendered


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

_ALLOWED_ATTRS = {"id", "class"}


def slugify(text: str) -> str:
    """GitHub-style anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return re.sub(r"\s", "-", text)


def _restrict_attrs(state: StateCore) -> None:
    """Core rule: attributes from the ``{…}`` syntax are limited to ``id`` and ``class``."""
    def walk(tokens: Sequence[Token]) -> None:
        for tok in tokens:
            if tok.meta.get("insert_attrs") or tok.attrs:
                keep = {"href", "src", "alt", "title", "style", "start", "id", "class"}
                if tok.type in ("link_open", "image"):
                    keep = {"href", "src", "alt", "title"} | _ALLOWED_ATTRS
                elif tok.type in ("th_open", "td_open"):
                    keep = {"style"} if tok.attrs.get("style", "").startswith("text-align:") else set()
                elif tok.type == "ordered_list_open":
                    keep = {"start"}
                else:
                    keep = set(_ALLOWED_ATTRS)
                for key in list(tok.attrs):
                    value = str(tok.attrs[key])
                    if key not in keep or (key in _ALLOWED_ATTRS and not re.fullmatch(r"[\w.:-]+( [\w.:-]+)*", value)):
                        del tok.attrs[key]
            if tok.children:
                walk(tok.children)
    walk(state.tokens)


_DOLLAR = math_inline_dollar(allow_space=False, allow_digits=True, allow_double=True)


def _math_inline_rule(state: StateInline, silent: bool) -> bool:
    """``$…$`` inline, not touching a digit on either side (``$5`` and ``5$`` stay text).

    mdit-py-plugins' own digit check reads the character before an opening ``$`` at the start of
    a text as the text's *last* character, so ``$a$ = 4`` would stay TeX; the check is done here."""
    start = state.pos
    if start > 0 and state.src[start - 1].isdigit():
        return False
    if not _DOLLAR(state, True):
        return False
    end, state.pos = state.pos, start
    if end < len(state.src) and state.src[end].isdigit():
        return False
    return _DOLLAR(state, silent)


#: A table cell whose text is made of numbers: signed decimals with exponents, joined by spaces,
#: punctuation, intervals (``[a, b]``, ``a to b``, ``a–b``) and the units ``×``/``x``/``%``.
_NUMBER = r"[-+−]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+−]?\d+)?"
_NUMERIC_CELL = re.compile(rf"(?:{_NUMBER}|\bto\b|∞|[\s,;:()\[\]/±→≈~×x%–—-])*\d(?:{_NUMBER}|\bto\b|∞|[\s,;:()\[\]/±→≈~×x%–—-])*")


#: A number that a browser could break (a sign, an exponent's sign, a slash), standing alone in the text.
_BREAKABLE_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d.,]*(?:[eE][-+−]?\d+)?(?![\w])")


def _unbroken_numbers(state: StateCore) -> None:
    """Core rule: a number in running text that holds a sign (``-16.38``, ``8.8e-17``) becomes a
    ``num`` token, drawn as ``<span class="num">`` (never broken across lines; Chromium breaks after
    a hyphen-minus)."""
    for i, tok in enumerate(state.tokens):
        if tok.type != "inline" or not tok.children:
            continue
        if i and state.tokens[i - 1].attrGet("class") == "num":
            continue  # a cell of numbers never wraps at all
        children: list[Token] = []
        for child in tok.children:
            if child.type != "text" or not any(c in child.content for c in "-+−"):
                children.append(child)
                continue
            pos = 0
            for m in _BREAKABLE_NUMBER.finditer(child.content):
                if not any(c in m.group(0) for c in "-+−"):
                    continue
                if m.start() > pos:
                    children.append(Token("text", "", 0, content=child.content[pos:m.start()]))
                children.append(Token("num", "span", 0, content=m.group(0)))
                pos = m.end()
            if pos < len(child.content):
                children.append(Token("text", "", 0, content=child.content[pos:]))
        tok.children = children


def _numeric_cells(state: StateCore) -> None:
    """Core rule: a table cell that holds only numbers gets ``class="num"`` (never wrapped)."""
    tokens = state.tokens
    for i, tok in enumerate(tokens[:-1]):
        if tok.type not in ("td_open", "th_open") or tokens[i + 1].type != "inline":
            continue
        children = tokens[i + 1].children or []
        if any(c.type not in ("text", "code_inline") for c in children):
            continue
        text = "".join(c.content for c in children).strip()
        if text and len(text) <= 48 and _NUMERIC_CELL.fullmatch(text):
            tok.attrSet("class", "num")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    md.use(dollarmath_plugin, allow_labels=False, allow_space=False, allow_digits=False, double_inline=True)
    md.inline.ruler.at("math_inline", _math_inline_rule)
    md.use(anchors_plugin, min_level=1, max_level=6, slug_func=slugify)
    md.use(attrs_plugin, spans=True, after=("span_close",))
    md.core.ruler.push("restrict_attrs", _restrict_attrs)

    def details(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        tok = tokens[idx]
        if tok.nesting != 1:
            return "</details>\n"
        summary = tok.info.strip()[len("details"):].strip() or "details"
        opened = " open" if env.get("print") else ""  # the printed page shows every detail
        return f"<details{opened}><summary>{html.escape(summary, quote=False)}</summary>\n"

    # ":::: theorem" is one theorem's block (<div class="theorem">); "::: details S" folds its body
    # under the summary S (<details>), the only way to get that element while raw HTML is off
    container_plugin(md, "theorem")
    container_plugin(md, "details", render=details)

    def math_inline(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _math_html(tokens[idx].content, False, env, True)

    def math_inline_double(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _math_html(tokens[idx].content, True, env, True)

    def math_block(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return _math_html(tokens[idx].content, True, env, False) + "\n"

    def code_inline(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        content = tokens[idx].content
        if content in VERDICTS:
            return f'<code class="verdict verdict-{content}">{content}</code>'
        if " " in content.strip():  # a command: it breaks at its spaces only, never inside a word
            words = (f'<span class="w">{html.escape(w, quote=False)}</span>' if w else "" for w in content.split(" "))
            return f'<code class="words">{" ".join(words)}</code>'
        return f"<code>{html.escape(content, quote=False)}</code>"

    def image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        tok = tokens[idx]
        src = str(tok.attrs.get("src", ""))
        alt = "".join(f"${c.content}$" if c.type.startswith("math") else c.content for c in tok.children or [])
        embedded = _embed(src, env)
        env.setdefault("images", []).append(src)
        img = f'<img src="{html.escape(embedded, quote=True)}" alt="{html.escape(alt, quote=True)}">'
        narrow = _narrow_source(src, env)
        if narrow is not None:  # a multi-panel figure: its panels in two rows on a narrow page
            img = (f'<picture><source media="(max-width: {NARROW_BELOW_PX}px)" srcset="{html.escape(narrow, quote=True)}">'
                   f"{img}</picture>")
        if not env.get("captions"):
            return img
        # the alt text is also shown under the figure: a caption states the figure's protocol
        return f'{img}<span class="caption">{self.renderInline(tok.children or [], options, env)}</span>'

    md.add_render_rule("math_inline", math_inline)
    md.add_render_rule("math_inline_double", math_inline_double)
    md.add_render_rule("math_block", math_block)
    md.add_render_rule("math_block_label", math_block)
    md.add_render_rule("code_inline", code_inline)
    md.add_render_rule("image", image)

    def table_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return '<div class="table-wrap">\n' + self.renderToken(tokens, idx, options, env)

    def table_close(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        return self.renderToken(tokens, idx, options, env) + "</div>\n"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    md.core.ruler.push("numeric_cells", _numeric_cells)
    md.core.ruler.push("unbroken_numbers", _unbroken_numbers)
    md.add_render_rule("num", lambda self, tokens, idx, options, env:
                       f'<span class="num">{html.escape(tokens[idx].content, quote=False)}</span>')
    return md


_MD = _parser()


def parse_markdown(md: str) -> list[Token]:
    """The tokens of a Markdown text, parsed exactly as the report renders it (same parser and plugins)."""
    return _MD.parse(md)


#: Below this viewport width a multi-panel figure is shown in its two-row form (``<stem>.narrow.png``).
NARROW_BELOW_PX = 1000


def narrow_variant(path: Path) -> Path:
    """Where the two-row form of a multi-panel figure lives (:func:`flowcert.reports.figures.save_figure`)."""
    return path.with_name(f"{path.stem}.narrow{path.suffix}")


def _narrow_source(src: str, env: EnvType) -> str | None:
    """The source of an image's two-row form, when one was written beside it (else None)."""
    base = env.get("base")
    if base is None or ":" in src or src.startswith(("/", "#")):
        return None
    narrow = narrow_variant(Path(src))
    if not (Path(base) / narrow).is_file():
        return None
    return _embed(narrow.as_posix(), env)


def _embed(src: str, env: EnvType) -> str:
    """``data:`` URI of a local image below ``env["base"]``; other sources are returned unchanged."""
    base = env.get("base")
    if base is None or ":" in src or src.startswith(("/", "#")):
        return src
    path = (Path(base) / src).resolve()
    if not path.is_relative_to(Path(base).resolve()) or not path.is_file():
        env.setdefault("missing_images", []).append(src)
        return src
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if not mime.startswith("image/"):
        return src
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


# ---------------------------------------------------------------------------
# the visible-text check: no TeX outside math
# ---------------------------------------------------------------------------

_HIDDEN = frozenset({"code", "pre", "math", "style", "title", "script"})
_LEAK = re.compile(r"\$|\\[A-Za-z]+")
#: A Markdown escape that reached the page (``\|`` in ``stable_at_v_d_without_\|lambda_d\|``).
_ESCAPE = re.compile(r"\\[|_*`\[\]{}#<>!]")
#: A ``mathvariant`` attribute and its element: a browser keeps only ``normal`` on ``<mi>``.
_MATHVARIANT = re.compile(r'<(m[a-z]+)\b[^>]*\bmathvariant="([^"]*)"')


class TexLeakError(ValueError):
    """A page would show TeX source (``$`` or ``\\name``) outside code, pre and math, or an ``<merror>``."""


class _VisibleText(HTMLParser):
    """Text a reader sees (outside code, pre, math), with the section and heading it sits under."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.heading: str | None = None
        self.where = {"h2": "(front page)", "h3": "", "h4": ""}
        self.text = ""
        self.leaks: list[tuple[str, str, str]] = []  # (section, heading, text node)
        self.in_code = 0
        self.escapes: list[tuple[str, str, str]] = []  # Markdown escapes a reader would see, code included

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "code":
            self.in_code += 1
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in self.where:
            self.heading, self.text = tag, ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self.in_code = max(0, self.in_code - 1)
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag == self.heading:
            self.where[tag] = " ".join(self.text.split())
            for lower in ("h3", "h4")[("h2", "h3", "h4").index(tag):]:
                if lower != tag:
                    self.where[lower] = ""
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.heading:
            self.text += data
        under = " / ".join(w for w in (self.where["h3"], self.where["h4"]) if w)
        if not self.hidden and _LEAK.search(data):
            self.leaks.append((self.where["h2"], under, data))
        if self.hidden == self.in_code and _ESCAPE.search(data):  # visible text, or inline code
            self.escapes.append((self.where["h2"], under, data))


def _source_line(md: str, text: str, token: str) -> str:
    """The Markdown line a leaked text node came from (its longest run of words that is found)."""
    lines = md.splitlines()
    for probe in (text.strip(), text.strip()[:40], text.strip()[-40:]):
        hit = next((ln for ln in lines if probe and probe in ln), None)
        if hit:
            return hit.strip()
    hit = next((ln for ln in lines if token in ln), None)
    return hit.strip() if hit else "(not found verbatim)"


def check_visible_text(body: str, md: str = "") -> None:
    """Refuse HTML whose visible text shows TeX: ``$`` or a control word outside code/pre/math.

    Parameters
    ----------
    body : str
        Rendered HTML.
    md : str
        The Markdown source, to quote the line each leak came from.

    Raises
    ------
    TexLeakError
        Naming the section and heading of the first leaks, the snippet a reader would see and
        its Markdown source line; also when latex2mathml left an ``<merror>`` element.
    """
    if "<merror" in body:
        bad = body[body.index("<merror"):][:200]
        raise TexLeakError(f"a formula rendered as <merror> (invalid TeX): {bad!r}")
    dropped = [(tag, v) for tag, v in _MATHVARIANT.findall(body) if not (tag == "mi" and v == "normal")]
    if dropped:
        raise TexLeakError(f"{len(dropped)} mathvariant attribute(s) the browser would drop (it keeps only "
                           f"'normal' on <mi>): {dropped[:5]}; the letters must be Unicode (flowcert.reports.letters)")
    parser = _VisibleText()
    parser.feed(body)
    parser.close()
    if parser.escapes:
        section, under, text = parser.escapes[0]
        m = _ESCAPE.search(text)
        assert m is not None
        raise TexLeakError(f"{len(parser.escapes)} Markdown escape(s) shown to the reader, first in section "
                           f"'{section}'{f' ({under})' if under else ''}: {m.group(0)!r} in "
                           f"{' '.join(text.split())[:120]!r}; Markdown source: {_source_line(md, text, m.group(0))[:300]!r}")
    if not parser.leaks:
        return
    report = []
    for section, under, text in parser.leaks[:5]:
        m = _LEAK.search(text)
        assert m is not None
        snippet = " ".join(text[max(0, m.start() - 40):m.end() + 40].split())
        report.append(f"section '{section}'{f' ({under})' if under else ''}: {m.group(0)!r} in visible text "
                      f"{snippet!r}; Markdown source: {_source_line(md, text, m.group(0))[:300]!r}")
    raise TexLeakError(f"{len(parser.leaks)} place(s) show TeX outside math; every formula needs its own $…$ "
                       "and prose stays outside it:\n  " + "\n  ".join(report))


@dataclass
class Rendered:
    """A rendered page and what the renderer noticed."""

    page: str
    fallbacks: int
    images: list[str]
    missing_images: list[str]


def render_page(md: str, title: str = _DEFAULT_TITLE, base: Path | None = None, captions: bool = False,
                strict: bool = False, print_mode: bool = False) -> Rendered:
    """Render Markdown to a standalone page.

    Parameters
    ----------
    md : str
        The Markdown source.
    title : str
        The page ``<title>`` (escaped).
    base : Path, optional
        Folder that relative image paths are resolved against; those images are embedded as
        ``data:`` URIs. Without it, image paths stay as written.
    captions : bool
        Show each image's text (its alt text, math rendered) as a caption below it.
    strict : bool
        Refuse a page that shows TeX outside math (:func:`check_visible_text`, raises
        :class:`TexLeakError`) or has a formula that fell back to source.
    print_mode : bool
        The page to print: every ``<details>`` open, so a PDF carries the margins, certificates
        and measurements a reader would otherwise unfold.
    """
    env: dict[str, Any] = {"fallbacks": 0, "base": base, "captions": captions, "print": print_mode}
    body = _MD.render(md, env)
    if strict:
        check_visible_text(body, md)
        if env["fallbacks"]:
            raise TexLeakError(f"{env['fallbacks']} formula(s) could not be converted to MathML and would show as source")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n"  # no favicon request: the page loads nothing at all
        f"<title>{html.escape(title, quote=True)}</title>\n<style>\n{_CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{body}</main>\n</body>\n</html>\n"
    )
    return Rendered(page, env["fallbacks"], list(env.get("images", [])), list(env.get("missing_images", [])))


def render(md: str, title: str = _DEFAULT_TITLE) -> tuple[str, int]:
    """Render Markdown to a standalone page; returns ``(page, number of math fallbacks)``."""
    r = render_page(md, title)
    return r.page, r.fallbacks


def markdown_to_html(md: str, title: str = _DEFAULT_TITLE) -> str:
    """Render Markdown to a standalone HTML page (see :func:`render`)."""
    return render_page(md, title).page


def _title_from_markdown(md: str) -> str | None:
    tokens = parse_markdown(md)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1":
            inline = tokens[i + 1]
            return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline", "math_inline"))
    return None


def write_report(md: str, out: Path, *, stem: str = "report", title: str | None = None,
                 embed: bool = True, captions: bool = False, strict: bool = True) -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.html`` into ``out`` (created).

    Parameters
    ----------
    md : str
        Markdown source.
    out : Path
        Output folder; relative image paths are resolved against it.
    stem : str
        File name without suffix.
    title : str, optional
        Page title; default the first level-1 heading, else "flowcert report".
    embed : bool
        Embed local images as ``data:`` URIs (the page is then one self-contained file).
    captions : bool
        Show each image's text as a visible caption.
    strict : bool
        Refuse to write a page that shows TeX outside math (:func:`render_page`); the
        Markdown is written first, so the offending source can be read.

    Returns
    -------
    tuple of Path
        The Markdown and the HTML file.
    """
    make_folder("--out", out)  # through no link (flowcert.outputs)
    md_path, html_path = out / f"{stem}.md", out / f"{stem}.html"
    write_text("--out", md_path, md)
    page = render_page(md, title or _title_from_markdown(md) or _DEFAULT_TITLE, out if embed else None,
                       captions=captions, strict=strict).page
    write_text("--out", html_path, page)
    return md_path, html_path
