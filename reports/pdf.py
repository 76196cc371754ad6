"""``report.pdf``: the report page printed as a document a reader can navigate.

Headless Chromium prints the page in print mode (every ``<details>`` open, formulas as MathML).
What makes the print navigable:

- **page numbers and running headers** — CSS Paged Media margin boxes: every page's foot reads
  ":math:`n` / :math:`N`"; its head names the report and the section the page belongs to (each
  section is one *named page*, ``page: sec-k``, whose ``@page sec-k`` header carries its title, so a
  section starts on a fresh page);
- **an outline** (PDF bookmarks) — Chromium's document outline, written from the headings;
- **a table of contents with page numbers** — the section list of the front page, with each
  section's subsections, gets its numbers from a first printing: every heading carries an
  absolutely positioned marker (absolute positioning changes no layout), ``pdftotext`` finds the page
  of each marker, and the second printing, identical but for the numbers in their reserved column and
  without the markers, shows them. Where ``pdftotext`` (poppler) is missing, the contents have no
  numbers (the outline still navigates);
- **no heading left at a page's foot, no theorem box split** when it fits on one page —
  ``break-after: avoid`` on headings (and on the bold run-in headings of the errata) and
  ``break-inside: avoid`` on each theorem block.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..outputs import write_bytes

PAGE_MARGINS = "17mm 15mm 17mm 15mm"

_MARGIN_TEXT = "font-family: Georgia, serif; font-size: 8pt; color: #666;"

PRINT_CSS = f"""\
@page {{ size: A4; margin: {PAGE_MARGINS};
        @top-left {{ content: "flowcert report"; {_MARGIN_TEXT} }}
        @bottom-center {{ content: counter(page) " / " counter(pages); {_MARGIN_TEXT} }} }}
h1, h2, h3, h4, h5, h6 {{ break-after: avoid; break-inside: avoid; }}
p:has(> strong:only-child) {{ break-after: avoid; }}
div.theorem {{ break-inside: avoid; }}
nav.toc ol {{ list-style: none; padding-left: 0; margin: 0.4em 0; }}
nav.toc ol ol {{ padding-left: 1.6em; margin: 0; font-size: 0.95em; }}
nav.toc li {{ margin: 0.12em 0; }}
nav.toc > ol > li > .entry {{ font-weight: 600; margin-top: 0.35em; }}
nav.toc .entry {{ display: flex; align-items: baseline; gap: 0.3em; break-inside: avoid; }}
nav.toc .entry a {{ color: inherit; text-decoration: none; }}
nav.toc .leader {{ flex: 1; border-bottom: 1px dotted #999; margin: 0 0.2em; min-width: 1em; }}
nav.toc .page {{ width: 2.5em; text-align: right; font-variant-numeric: tabular-nums; }}
.toc-mark {{ position: absolute; font-size: 5px; color: #fff; }}
"""

_H2 = re.compile(r"<h2\b[^>]*>.*?</h2>", re.S)
_HEADING = re.compile(r'<(h[23]) id="([^"]+)">(.*?)</\1>', re.S)
_SECTION_ANCHOR = re.compile(r'<span id="(sec-[^"]+)">')
_MARK = "FLOWCERTTOCMARK"


@dataclass(frozen=True)
class TocEntry:
    """One line of the contents: a heading of the page, its level (2 or 3), and its page (0: unknown)."""

    anchor: str
    level: int
    title_html: str
    page: int = 0


def _plain(fragment: str) -> str:
    """The visible words of an HTML fragment (tags dropped, whitespace collapsed)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _sections(body: str) -> tuple[str, list[str]]:
    """Split a page body into its front (before the first paper section) and its sections.

    A section begins at an ``<h2>`` that carries a ``sec-…`` anchor; the front keeps the title, the
    section list and the theorem summary.
    """
    starts = [m.start() for m in _H2.finditer(body) if _SECTION_ANCHOR.search(m.group(0))]
    if not starts:
        return body, []
    bounds = [*starts, len(body)]
    return body[:starts[0]], [body[a:b] for a, b in zip(bounds, bounds[1:])]


def contents(body: str) -> list[TocEntry]:
    """The headings the contents list: every section (``<h2>`` with a ``sec-`` anchor) and its ``<h3>``."""
    _, sections = _sections(body)
    entries = []
    for sec in sections:
        for m in _HEADING.finditer(sec):
            entries.append(TocEntry(m.group(2), int(m.group(1)[1]), re.sub(r'<span id="[^"]*">|</span>', "", m.group(3))))
    return entries


def _toc_html(entries: list[TocEntry]) -> str:
    def line(e: TocEntry) -> str:
        page = str(e.page) if e.page else ""
        return (f'<span class="entry"><a href="#{e.anchor}">{e.title_html}</a><span class="leader"></span>'
                f'<span class="page">{page}</span></span>')

    out, open_sub = ['<nav class="toc">', "<ol>"], False
    for e in entries:
        if e.level == 2:
            if open_sub:
                out.append("</ol></li>")
            elif len(out) > 2:
                out.append("</li>")
            out.append(f"<li>{line(e)}")
            open_sub = False
        else:
            if not open_sub:
                out.append("<ol>")
                open_sub = True
            out.append(f"<li>{line(e)}</li>")
    out.append("</ol></li>" if open_sub else "</li>")
    out += ["</ol>", "</nav>"]
    return "\n".join(out)


def book(page: str, entries: list[TocEntry], markers: bool) -> str:
    """The print-mode page laid out as a book.

    Each section becomes a named page whose running header is its title; the front page's section
    list is replaced by the contents (``entries``, with their pages where known); with ``markers``,
    each listed heading carries an absolutely positioned marker ``FLOWCERTTOCMARK<k>`` for
    :func:`marker_pages` to find.
    """
    head, rest = page.split("<main>\n", 1)
    body, tail = rest.rsplit("</main>", 1)
    front, sections = _sections(body)
    css = [PRINT_CSS]
    named = []
    for k, sec in enumerate(sections):
        title = _plain(_H2.search(sec).group(0)).replace("\\", "").replace('"', "'")
        css.append(f'@page sec-{k} {{ @top-right {{ content: "{title[:90]}"; {_MARGIN_TEXT} }} }}')
        named.append(f'<section style="page: sec-{k}">\n{sec}</section>\n')
    body = front + "".join(named)
    index = {e.anchor: k for k, e in enumerate(entries)}
    if markers:
        body = _HEADING.sub(lambda m: (m.group(0) if m.group(2) not in index else
                                       f'<{m.group(1)} id="{m.group(2)}"><span class="toc-mark">{_MARK}{index[m.group(2)]}'
                                       f'</span>{m.group(3)}</{m.group(1)}>'), body)
    sections_list = re.compile(r'(<h2 id="sections">.*?</h2>\s*)<ul>.*?</ul>', re.S)
    body = sections_list.sub(lambda m: m.group(1) + _toc_html(entries), body, count=1)
    return head.replace("</style>", "</style>\n<style>\n" + "\n".join(css) + "\n</style>", 1) + "<main>\n" + body + "</main>" + tail


def page_texts(pdf: Path) -> list[str] | None:
    """The text of each page (poppler's ``pdftotext``), or None where poppler is missing."""
    tool = shutil.which("pdftotext")
    if tool is None:
        return None
    try:
        out = subprocess.run([tool, "-layout", str(pdf), "-"], check=True, capture_output=True, text=True, timeout=120).stdout
    except subprocess.SubprocessError:
        return None
    return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")


def marker_pages(texts: list[str], n: int) -> list[int]:
    """The 1-based page of each marker ``FLOWCERTTOCMARK<k>``, ``k < n`` (0 where none was found)."""
    pages = [0] * n
    for number, text in enumerate(texts, start=1):
        for k in map(int, re.findall(_MARK + r"(\d+)", text)):
            if k < n and not pages[k]:
                pages[k] = number
    return pages


def chromium_binary() -> str | None:
    """Path of a Chromium (or Chrome) on PATH, or None."""
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def print_pdf(html_path: Path, pdf_path: Path, chromium: str, timeout: float = 300.0) -> Path:
    """Print a page to PDF with headless Chromium (the page as the browser shows it, MathML rendered,
    with the document outline written from its headings).

    Raises
    ------
    OSError
        Chromium failed, timed out or wrote no PDF.
    """
    with tempfile.TemporaryDirectory(prefix="flowcert-pdf-") as profile:
        printed = Path(profile) / "page.pdf"  # Chromium writes into our private folder; the one writer copies it
        try:
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                            f"--user-data-dir={profile}", "--no-pdf-header-footer", "--generate-pdf-document-outline",
                            f"--print-to-pdf={printed}", html_path.resolve().as_uri()],
                           check=True, capture_output=True, timeout=timeout)
        except subprocess.SubprocessError as exc:
            raise OSError(f"chromium: {type(exc).__name__}") from exc
        data = printed.read_bytes() if printed.is_file() else b""
    if data[:5] != b"%PDF-":
        raise OSError("chromium wrote no PDF")
    return write_bytes("--out", pdf_path, data)


def print_book(page: str, pdf_path: Path, chromium: str) -> Path:
    """Print a print-mode page as a book (:func:`book`): two printings where poppler can read the
    first one's pages, so that the contents carry page numbers.

    Raises
    ------
    OSError
        Chromium failed, or the numbered printing does not have the first printing's pages.
    """
    entries = contents(page.split("<main>\n", 1)[-1])
    with tempfile.TemporaryDirectory(prefix="flowcert-print-") as tmp:
        html_path, first = Path(tmp) / "report.print.html", Path(tmp) / "first.pdf"
        html_path.write_text(book(page, entries, markers=True), encoding="utf-8")
        print_pdf(html_path, first, chromium)
        texts = page_texts(first)
        if texts is None:
            html_path.write_text(book(page, entries, markers=False), encoding="utf-8")
            return print_pdf(html_path, pdf_path, chromium)
        pages = marker_pages(texts, len(entries))
        numbered = [TocEntry(e.anchor, e.level, e.title_html, p) for e, p in zip(entries, pages)]
        html_path.write_text(book(page, numbered, markers=False), encoding="utf-8")
        second = print_pdf(html_path, Path(tmp) / "second.pdf", chromium)
        again = page_texts(second)
        if again is not None and len(again) != len(texts):
            raise OSError(f"the numbered printing has {len(again)} pages, the first {len(texts)}")
        return write_bytes("--out", pdf_path, second.read_bytes())
