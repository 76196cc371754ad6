r"""Sphinx extension of flowcert's documentation: offline MathML and the generated pages.

* ``mathml`` math renderer: every ``:math:`` role, ``{math}`` directive and ``$…$`` of the site
  is converted at build time by :func:`flowcert.reports.html.mathml` (latex2mathml, sanitised
  through the report's allow-list), so the pages need no script and no network. A formula that
  cannot be converted faithfully is a Sphinx warning (an error under ``-W``), never an
  ``<merror>`` in the page.
  Letters by meaning (𝒫, ℝ, 𝔼) reach the page as Unicode, as in the report: one converter serves both.
* Generated pages, written into ``docs/_generated/`` (ignored by git) when the builder starts:
  ``catalogue_entries.md`` (every catalogue id with its statement as inline math that wraps, its
  hypotheses as mathematics, its correction linked to its erratum, from ``verify`` runs on the test
  parameter files, and its place in :mod:`flowcert.graph`), ``errata_entries.md`` (the errata of
  :mod:`flowcert.reports.errata`, the entries the report ends with) and ``limits_tables.md``
  (:mod:`flowcert.limits`).
"""

from __future__ import annotations

import html
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

LOG = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------


def _mathml(self: Any, node: nodes.Element, display: bool) -> None:
    from flowcert.reports.html import mathml

    latex = node.astext() if not node.get("latex") else node["latex"]
    try:
        rendered = mathml(latex, display)
    except ValueError as exc:
        LOG.warning("formula not rendered as MathML (%s): %s", exc, latex, location=node, type="flowcert", subtype="math")
        rendered = f'<code class="tex">{html.escape(latex)}</code>'
    if display:
        label = ""
        if node.get("number"):
            label = f'<span class="eqno">({node["number"]})</span>'
        ids = " ".join(node.get("ids", []))
        self.body.append(f'<div class="math-display"{f" id={chr(34)}{ids}{chr(34)}" if ids else ""}>{label}{rendered}</div>')
    else:
        self.body.append(rendered)
    raise nodes.SkipNode


def visit_math(self: Any, node: nodes.Element) -> None:
    _mathml(self, node, display=False)


def visit_math_block(self: Any, node: nodes.Element) -> None:
    _mathml(self, node, display=True)


# ---------------------------------------------------------------------------
# generated pages
# ---------------------------------------------------------------------------

#: Parameter files whose ``verify`` runs list every catalogue id (no simulation: statements only).
CATALOGUE_RUNS = (
    ("gaussian", "tests/data/gaussian_stable_2d.json"),
    ("attention", "tests/data/attention/multistable_d3.json"),
    ("rnn", "tests/data/rnn/rnn_tanh_small.json"),
)


def _verify(job: tuple[str, str]) -> list[dict[str, Any]]:
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from flowcert.cli import verify_document

    doc = verify_document(job[0], str(ROOT / job[1]))
    return [{**{k: t.get(k) for k in ("id", "source", "statement", "correction")},
             "hypotheses": [h["name"] for h in t.get("hypotheses", [])]} for t in doc["theorems"]]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def erratum_ref(e: Any) -> str:
    """A MyST cross-reference to an erratum's entry on the errata page."""
    return f"{{ref}}`erratum {e.label} <{e.anchor}>`"


def catalogue_page() -> str:
    """The theorem catalogue as MyST Markdown: statements as inline math that wraps, hypotheses as
    mathematics (:mod:`flowcert.reports.catalogue_tex`), corrections linked to the errata page."""
    from flowcert import graph
    from flowcert.reports.common import correction_markdown, hypothesis_markdown, statement_markdown

    with ProcessPoolExecutor(max_workers=len(CATALOGUE_RUNS)) as pool:
        runs = list(pool.map(_verify, CATALOGUE_RUNS))
    records = [r for run in runs for r in run]
    seen = {r["id"] for r in records}
    lines = [f"{len(records)} results in {len({r['id'].split(':')[0] for r in records})} papers, from "
             "`verify` runs on " + ", ".join(f"`{f}`" for _, f in CATALOGUE_RUNS) + ".", ""]
    paper = None
    for r in records:
        key = r["id"].split(":")[0]
        if key != paper:
            paper = key
            lines += [f"## Paper `{key}`", "", f"Source file `papers/{r['source']['file']}`.", ""]
        node = graph.node(r["id"])
        lines += [f"(cat-{r['id'].replace(':', '-').replace('.', '-')})=", f"### `{r['id']}` — {r['source']['label']}", ""]
        if r["statement"]:
            lines += [f"**Statement.** {statement_markdown(r['statement'])}", ""]
        if r["hypotheses"]:
            lines += ["**Hypotheses decided on the test file:** " + "; ".join(hypothesis_markdown(h) for h in r["hypotheses"])
                      + ".", ""]
        if r["correction"]:
            lines += [f"**Correction.** {correction_markdown(r['id'], r['correction'], erratum_ref)}", ""]
        if node is not None and node.false:
            lines += [f"**False as printed.** {node.erratum}", ""]
        premises = [e for e in graph.EDGES if e.result == r["id"]]
        if premises:
            lines.append("**Rests on:** " + "; ".join(
                f"`{e.premise}`" + (f" (erratum: {e.erratum})" if e.erratum else "") for e in premises))
            lines.append("")
    missing = sorted(n.id for n in graph.NODES if n.kind == "result" and n.id not in seen)
    if missing:
        raise RuntimeError(f"catalogue page: graph results not reported by verify: {missing}")
    lines += ["## Standing assumptions", "",
              "Nodes of the theorem graph that are assumptions, not results:", ""]
    for n in graph.NODES:
        if n.kind == "assumption":
            lines.append(f"- `{n.id}` — {n.label}" + (f". **False as printed:** {n.erratum}" if n.false else ""))
    return "\n".join(lines) + "\n"


def limits_page() -> str:
    """The size limits (:mod:`flowcert.limits`) as MyST Markdown."""
    from flowcert import limits

    lines = [f"Stage budget: about {limits.STAGE_SECONDS:g} CPU seconds at the limit (`STAGE_SECONDS`).", "",
             "## Stages (`STAGE_MAX_D`)", "", "| stage | largest $d$ | above it |", "|---|---|---|"]
    for stage, d in limits.STAGE_MAX_D.items():
        lines.append(f"| `{stage}` | {d} | {_md_cell(limits.stage_skip_reason(stage, d + 1) or '')} |")
    low = getattr(limits, "LOW_RANK_STAGE_MAX_D", {})
    if low:
        lines += ["", "## Stages for low-rank parameters (`LOW_RANK_STAGE_MAX_D`)", "",
                  "$A=0$ and $V,B$ of rank at most $d/4$ (an exported attention head): the moment run integrates the "
                  "factored transport, Newton works on the active block and the exact hypotheses read the structure "
                  "of the data.", "", "| stage | largest $d$ | above it |", "|---|---|---|"]
        for stage, d in low.items():
            lines.append(f"| `{stage}` | {d} | {_md_cell(limits.stage_skip_reason(stage, d + 1, low_rank=True) or '')} |")
    lines += ["", "## Commands (`COMMAND_MAX_D`)", "", "| command | largest $d$ | above it (exit 2) |", "|---|---|---|"]
    for cmd, d in limits.COMMAND_MAX_D.items():
        lines.append(f"| `flowcert {cmd}` | {d} | {_md_cell(limits.command_problem(cmd, d + 1) or '')} |")
    table = getattr(limits, "LIMITS", None)  # input limits checked before any work (exit 2 above them)
    if table:
        lines += ["", "## Input limits (`LIMITS`)", "", "Checked before any work; above a limit the command exits 2 "
                  "with one line naming the key.", "", "| limit | value |", "|---|---|"]
        lines += [f"| `{name}` | {value:,} |" if isinstance(value, int) else f"| `{name}` | {value:g} |"
                  for name, value in table.items()]
    return "\n".join(lines) + "\n"


def errata_page() -> str:
    """The errata of :mod:`flowcert.reports.errata` as MyST Markdown, each entry anchored ``erratum-<key>``."""
    from flowcert.reports.errata import errata_markdown

    return "\n".join(errata_markdown("##", target=lambda e: f"({e.anchor})=")) + "\n"


def write_generated(app: Sphinx) -> None:
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    pages = {"limits_tables.md": limits_page, "catalogue_entries.md": catalogue_page, "errata_entries.md": errata_page}
    for name, build in pages.items():
        text = build()
        path = out / name
        if not path.is_file() or path.read_text() != text:  # unchanged pages are not re-read
            path.write_text(text)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("builder-inited", write_generated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
