r"""The derivations report: ``flowcert report`` writes ``report.md``, ``report.html`` (one
self-contained offline page: MathML, inline CSS, figures as ``data:`` URIs), ``report.json``
and the figures, and ``report.pdf`` (the same page printed by headless Chromium where one is on PATH,
else pandoc with a LaTeX engine, else a note saying why not).

Layout: a front page with the summary table of every theorem id, its verdict on the default
parameters (:math:`\mathrm{applies}`) and its cross-check, each linked to its row; then one
section per paper, each built by ``flowcert.reports.<paper>.section(out, quick=...)`` into
``out/<paper>/``, followed by one block per theorem generated from its records
(:func:`flowcert.reports.common.theorem_blocks`, anchored for the front page's links).

The section contract: ``section(out: Path, *, quick: bool) -> Section``
(:class:`flowcert.reports.common.Section`) returns ``title`` (str),
``markdown`` (the body: GitHub Markdown, ``$$…$$`` display and ``$…$`` inline math, headings
from ``###``, images ``![caption stating the protocol](file.png)`` relative to ``out``),
``theorems`` (``TheoremResult.to_json()`` records on the default parameters) and ``figures``
(the files written into ``out``), and optionally ``files`` (other files written into ``out`` for
the reader to download, such as a CSV of per-item detail). A section that raises, or lists a
figure that does not exist or is not referenced, or references an image that does not exist, is
an error: the report is not written.

After the sections, the errata of the papers (:mod:`flowcert.reports.errata`), which every
correction in a theorem block links to. A section without theorem records has no "Theorems and
verdicts" heading. The PDF is the page printed with every ``<details>`` open (a print-mode
rendering, :func:`flowcert.reports.html.render_page`), so it carries the margins, certificates
and measurements.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..records import TheoremRecord
from .common import cell, plain, section_anchor, theorem_anchor, theorem_blocks, verdict_word
from ..outputs import make_folder, write_bytes, write_text
from .html import narrow_variant, parse_markdown, write_report
from .pdf import chromium_binary, print_book

#: The paper sections, in report order. The lead appends "multistability", "consensus", "kpflow"
#: (and optionally "pretrained") when their modules land: each is ``flowcert.reports.<key>``.
SECTIONS: tuple[str, ...] = ("gaussian", "multistability", "consensus", "kpflow", "pretrained", "graph")  # graph: the theorem graph (flowcert.graph), kept last


class SectionError(RuntimeError):
    """A section module failed or broke the section contract (an internal error, exit code 1)."""


@dataclass
class BuiltSection:
    """One section as it enters the report."""

    key: str
    title: str
    markdown: str
    theorems: list[TheoremRecord]
    figures: list[Path]
    cpu_s: float
    wall_s: float
    files: list[Path] = field(default_factory=list)


@dataclass
class Report:
    """What :func:`build_report` wrote."""

    out: Path
    sections: list[BuiltSection]
    files: list[Path] = field(default_factory=list)
    pdf: str = ""


def _written(key: str, out: Path, f: Any, what: str) -> Path:
    """A file a section says it wrote into ``out`` (resolved), or a :class:`SectionError`."""
    path = Path(f) if Path(f).is_absolute() else out / f
    if not path.resolve().is_relative_to(out.resolve()) or not path.is_file():
        raise SectionError(f"section '{key}': {what} {f} was not written into {out}")
    return path


def section_files(key: str, res: Any, out: Path) -> list[Path]:
    """The downloadable files a section lists under ``files`` (each written into ``out``)."""
    return [_written(key, out, f, "file") for f in res.get("files", [])]


def _check_contract(key: str, res: Any, out: Path) -> tuple[str, str, list[TheoremRecord], list[Path]]:
    """Validate a section's return value; figures are resolved against ``out`` and must be referenced."""
    if not isinstance(res, dict) or not {"title", "markdown", "theorems", "figures"} <= set(res):
        raise SectionError(f"section '{key}' must return a dict with title, markdown, theorems, figures")
    title, md, theorems, figures = res["title"], res["markdown"], res["theorems"], res["figures"]
    if not isinstance(title, str) or not isinstance(md, str) or not isinstance(theorems, list):
        raise SectionError(f"section '{key}': title and markdown must be str, theorems a list")
    for t in theorems:
        if not isinstance(t, dict) or not {"id", "applies", "cross_check"} <= set(t):
            raise SectionError(f"section '{key}': theorem records need id, applies, cross_check (TheoremResult.to_json())")
    referenced = set(image_sources(md))
    paths = []
    for f in figures:
        path = _written(key, out, f, "figure")
        rel = path.resolve().relative_to(out.resolve()).as_posix()
        if rel not in referenced:
            raise SectionError(f"section '{key}': figure {rel} is not referenced in its markdown")
        paths.append(path)
    missing = [s for s in referenced if ":" not in s and not (out / s).is_file()]
    if missing:
        raise SectionError(f"section '{key}': markdown references missing images {missing}")
    return title, md, theorems, paths


def _token_attrs(md: str, token_type: str, attr: str) -> list[str]:
    """The attribute ``attr`` of every token of ``token_type`` in a Markdown text (parsed, not pattern-matched)."""
    found: list[str] = []

    def walk(tokens: Sequence[Any]) -> None:
        for tok in tokens:
            if tok.type == token_type:
                found.append(str(tok.attrs.get(attr, "")))
            if tok.children:
                walk(tok.children)
    walk(parse_markdown(md))
    return found


def image_sources(md: str) -> list[str]:
    """Sources of every image in a Markdown text."""
    return _token_attrs(md, "image", "src")


def link_targets(md: str) -> list[str]:
    """Targets of every link in a Markdown text."""
    return _token_attrs(md, "link_open", "href")


def _rebase_images(md: str, prefix: str, files: Sequence[Path] = ()) -> str:
    """Prefix relative image paths, and links to the section's downloadable ``files``, with the section's folder."""
    names = {f.name for f in files}
    for src in sorted(set(image_sources(md)) | {s for s in link_targets(md) if s in names}, key=len, reverse=True):
        if ":" in src or src.startswith(("/", "#")):
            continue
        md = re.sub(r"\]\(\s*<?" + re.escape(src) + r"(?=[\s>)])", lambda m: m.group(0).replace(src, f"{prefix}/{src}"), md)
    return md


def run_section(key: str, out: Path, quick: bool) -> BuiltSection:
    """Build one paper's section into ``out/<key>``; any failure is a :class:`SectionError`."""
    sub = out / key
    make_folder("--out", sub)  # through no link (flowcert.outputs)
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        module = importlib.import_module(f"flowcert.reports.{key}")
        res = module.section(sub, quick=quick)
    except Exception as exc:
        raise SectionError(f"section '{key}' failed: {type(exc).__name__}: {exc}") from exc
    title, md, theorems, figures = _check_contract(key, res, sub)
    files = section_files(key, res, sub)
    return BuiltSection(key, title, _rebase_images(md, key, files), theorems, figures,
                        time.process_time() - c0, time.perf_counter() - w0, files)


def _user_section(path: str, system: str, out: Path, quick: bool) -> BuiltSection:
    from .user import section

    sub = out / "user"
    c0, w0 = time.process_time(), time.perf_counter()
    res = section(path, system, sub, quick=quick)
    title, md, theorems, figures = _check_contract("user", res, sub)
    return BuiltSection("user", title, _rebase_images(md, "user"), theorems, figures,
                        time.process_time() - c0, time.perf_counter() - w0)


def _print_report(md: str, out: Path, chromium: str) -> Path:
    """``report.pdf``: the page in print mode (every ``<details>`` open), printed by Chromium as a book
    (page numbers, running headers, outline, contents with pages: :mod:`flowcert.reports.pdf`)."""
    from .html import render_page

    page = render_page(md, "flowcert report", out, captions=True, print_mode=True).page
    return print_book(page, out / "report.pdf", chromium)


def _pdf_toolchain() -> tuple[str, str] | None:
    pandoc = shutil.which("pandoc")
    engine = next((e for e in ("xelatex", "lualatex", "pdflatex") if shutil.which(e)), None)
    return (pandoc, engine) if pandoc and engine else None


ERRATA_ANCHOR = "sec-errata"


def _front_page(sections: list[BuiltSection], quick: bool, pdf_note: str, params: str | None) -> list[str]:
    n = sum(len(s.theorems) for s in sections)
    counts = {w: sum(verdict_word(t["applies"]) == w for s in sections for t in s.theorems)
              for w in ("applies", "inapplicable", "undecided")}
    what = (f"the parameters in `{cell(params)}`" if params else "each paper's default parameters")
    lines = ["# flowcert report", "",
             "Derivations, theorem verdicts, cross-checks and reproduced figures, generated by flowcert "
             f"from the objects that produce its kernels and certificates. Verdicts are on {what}; "
             f"{'quick build (`--quick`: fewer samples, shorter studies)' if quick else 'full build'}.", "",
             "## Sections", ""]
    lines += [f"- [{s.title}](#{section_anchor(s.key)}): {len(s.theorems)} theorems, {len(s.figures)} figures, "
              f"{s.cpu_s:.1f} s CPU" for s in sections]
    lines.append(f"- [Errata of the papers](#{ERRATA_ANCHOR}): what the papers print, what is true instead, "
                 "and how flowcert checks it")
    lines += ["", f"Formats: this page (`report.html`, self-contained), `report.md` (Markdown with `$$` math), "
              f"`report.json` (the theorem records). {pdf_note}", "",
              "## Theorem summary", "",
              f"{n} theorems: " + ", ".join(f"{v} `{k}`" for k, v in counts.items()) + ". "
              "`applies`: every hypothesis certified; `inapplicable`: a hypothesis fails; `undecided`: a hypothesis "
              "is `unknown`. The cross-check is the simulation that tests the prediction.", "",
              "| theorem | in the paper | verdict | cross-check | section |", "|---|---|---|---|---|"]
    for s in sections:
        for t in s.theorems:
            status = t["cross_check"].get("status", "skipped")
            label = plain((t.get("source") or {}).get("label") or "")
            lines.append(f"| [{t['id']}](#{theorem_anchor(t['id'])}) | {label} | `{verdict_word(t['applies'])}` | "
                         f"`{status}` | [{s.key}](#{section_anchor(s.key)}) |")
    return lines + [""]


def _assemble(sections: list[BuiltSection], quick: bool, pdf_note: str, params: str | None) -> str:
    from .errata import errata_markdown

    md = _front_page(sections, quick, pdf_note, params)
    for s in sections:
        md += [f"## [{s.title}]{{#{section_anchor(s.key)}}}", "", s.markdown.rstrip(), ""]
        if s.theorems:  # a section without records (the graph, the per-head verdicts) has no such heading
            md += ["### Theorems and verdicts", "",
                   f"One block per theorem: the catalogue record on {'these' if s.key == 'user' else 'the default'} "
                   "parameters (`TheoremResult.to_json()`), its statement, every hypothesis with how it was decided "
                   "(click *detail* for margins and certificates), the prediction and the cross-check.", "",
                   *theorem_blocks(s.theorems), ""]
    md += [f"## [Errata of the papers]{{#{ERRATA_ANCHOR}}}", "",
           "What the papers print, what is true instead, and how flowcert checks it. Every correction in a theorem "
           "block links to its entry here; the errata page of the documentation (`docs/errata.md`, built by "
           "`make docs`) carries the same entries.", "", *errata_markdown("###"), ""]
    return "\n".join(md)


def prepare_out(out: Path) -> None:
    """Create the output folder; a path onto a file, a link or an unwritable place is bad input."""
    make_folder("--out", out)


def build_report(out: Path, quick: bool = False, only: str | None = None, params: str | None = None,
                 system: str = "gaussian") -> Report:
    """Write the report into ``out``.

    Parameters
    ----------
    out : Path
        Output folder (created; an existing file is bad input).
    quick : bool
        Each section's quick mode (the whole report in under a minute).
    only : str, optional
        Build only this paper's section (one of :data:`SECTIONS`).
    params : str, optional
        A parameter file: the report is then the verdict and cross-check section for it.
    system : str
        The system the parameter file describes (any registered system serving ``report``:
        ``gaussian``, ``attention``, ``rnn``; :mod:`flowcert.systems`).

    Returns
    -------
    Report
        The sections and the files written.

    Raises
    ------
    flowcert.errors.InputError
        Bad options (unknown ``only``, ``out`` onto a file); exit code 2.
    SectionError
        A section failed; nothing is written.
    """
    from ..errors import InputError

    if only is not None and only not in SECTIONS:
        raise InputError(f"--only: unknown paper '{only}' (available: {', '.join(SECTIONS)})")
    if params is not None and only is not None:
        raise InputError("--only and --params exclude each other (--params builds the section for your file)")
    prepare_out(out)
    if params is not None:
        sections = [_user_section(params, system, out, quick)]
    else:
        sections = [run_section(key, out, quick) for key in (SECTIONS if only is None else (only,))]
    chromium = chromium_binary()
    chain = None if chromium else _pdf_toolchain()
    if chromium:
        pdf_note = ("PDF: `report.pdf`, this page printed by headless Chromium (formulas as MathML, as here; "
                    "every folded detail open).")
    elif chain:
        pdf_note = "PDF: `report.pdf`, built with pandoc and {1}.".format(*chain)
    else:
        pdf_note = ("PDF: not produced — needs Chromium (headless print-to-PDF of this page) or `pandoc` with one of "
                    "xelatex, lualatex, pdflatex on PATH.")
    md = _assemble(sections, quick, pdf_note, params)
    report = Report(out, sections)
    if chain:
        write_text("--out", out / "report.md", md)
        try:
            with tempfile.TemporaryDirectory(prefix="flowcert-pandoc-") as private:  # pandoc writes here; the one writer copies
                subprocess.run([chain[0], "report.md", "-o", str(Path(private) / "report.pdf"), f"--pdf-engine={chain[1]}"],
                               cwd=out, check=True, capture_output=True, timeout=600)
                report.files.append(write_bytes("--out", out / "report.pdf", (Path(private) / "report.pdf").read_bytes()))
        except (subprocess.SubprocessError, OSError) as exc:
            failed = f"PDF: not produced — pandoc/{chain[1]} failed ({type(exc).__name__})."
            md, pdf_note = md.replace(pdf_note, failed), failed
    md_path, html_path = write_report(md, out, stem="report", title="flowcert report", captions=True)
    if chromium:
        try:
            report.files.append(_print_report(md, out, chromium))
        except OSError as exc:
            failed = f"PDF: not produced — headless Chromium failed ({exc})."
            md, pdf_note = md.replace(pdf_note, failed), failed
            md_path, html_path = write_report(md, out, stem="report", title="flowcert report", captions=True)
    report.pdf = pdf_note
    json_path = out / "report.json"
    write_text("--out", json_path, json.dumps({"quick": quick, "params": params, "sections": [
        {"key": s.key, "title": s.title, "theorems": s.theorems,
         "figures": [p.relative_to(out).as_posix() for p in s.figures], "cpu_s": s.cpu_s, "wall_s": s.wall_s,
         "files": [p.relative_to(out).as_posix() for p in s.files]}
        for s in sections]}, indent=1, default=str))
    narrow = [v for s in sections for p in s.figures if (v := narrow_variant(p)).is_file()]
    report.files = [md_path, html_path, json_path, *report.files, *(p for s in sections for p in s.figures), *narrow,
                    *(p for s in sections for p in s.files)]
    return report
