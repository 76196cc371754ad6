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
  :mod:`flowcert.reports.errata`, the entries the report ends with), ``limits_tables.md``
  (:mod:`flowcert.limits`) and ``decisions_tables.md`` (per system, what each decision needs, where it
  stops and what happens beyond, read from the constants that enforce each limit).
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


def _n(value: float) -> str:
    """A number inside ``$…$``: thousands grouped, large floats as powers of ten."""
    if isinstance(value, float) and value >= 1e5:
        mant, exp = f"{value:.0e}".split("e")
        return f"{mant}\\cdot10^{{{int(exp)}}}" if mant != "1" else f"10^{{{int(exp)}}}"
    return f"{value:,}".replace(",", "{,}") if isinstance(value, int) else f"{value:g}"


def _row(*cells: str) -> str:
    return "| " + " | ".join(c.replace("\n", " ") for c in cells) + " |"


def decisions_page() -> str:
    """Per system, what each decision needs, where it stops and what happens beyond, as MyST Markdown.

    Every number is read from the module that enforces it, so the page follows the code."""
    from flowcert import limits
    from flowcert.attention.consensus import EXACT_SIDE_MAX_D
    from flowcert.attention.enumeration import EXACT_A_MAX_D
    from flowcert.certificates import exact, lmi, spectrum
    from flowcert.certificates import gaussian as gcert
    from flowcert.certificates.attention import krawczyk
    from flowcert.gaussian.regime import JS_SPECTRUM_MAX_D
    from flowcert.papers.kpflow import MAX_H, MAX_STEPS
    from flowcert.rnn.analyze import EXACT_MAX, FLOAT_STACK_BYTES

    L = limits.LIMITS
    sym_d = max(d for d in range(1, 200) if d * (d + 1) // 2 <= gcert.EXACT_MAX_VECH)
    head = ["| decision | what it needs | where it stops | beyond |", "|---|---|---|---|"]
    stages = ", ".join(f"`{k.split(':')[1]}` {v}" for k, v in limits.STAGE_MAX_D.items())
    low = ", ".join(f"`{k.split(':')[1]}` {v}" for k, v in limits.LOW_RANK_STAGE_MAX_D.items())
    gaussian = head + [
        _row("the input", "a $d\\times d$ parameter set",
             f"$d\\le{limits.COMMAND_MAX_D['verify']}$ (`COMMAND_MAX_D['verify']`)",
             "refused: exit 2 / `InputError`, one line naming the limit"),
        _row("definiteness and inertia of a $d\\times d$ matrix ($V\\prec0$, $B+B^\\top$, $\\Sigma_0\\succ0$ …)",
             "a rigorously rounded float Cholesky, else a witness re-checked exactly, else exact $LDL^\\top$, "
             "else the exact characteristic polynomial with Descartes' rule",
             f"$LDL^\\top$ up to {exact.LDL_MAX_DIM} rows (`LDL_MAX_DIM`), the characteristic polynomial up to "
             f"{exact.CHARPOLY_MAX_DIM} (`CHARPOLY_MAX_DIM`); the float and witness routes at any $d$",
             "`unknown`, method `size`"),
        _row("objects on $\\mathrm{Sym}(d)$: the Kantorovich ball of a positive definite equilibrium, the "
             "Lyapunov LMI of its stability",
             "an exact rational re-check in $d(d+1)/2$ unknowns",
             f"$d(d+1)/2\\le{gcert.EXACT_MAX_VECH}$, i.e. $d\\le{sym_d}$ (`EXACT_MAX_VECH`)",
             "`unknown`, method `size`"),
        _row("exact spectral inertia (a singular $\\eta(B+B^\\top)$, spectra on the imaginary axis)",
             "the exact characteristic polynomial and certified root balls",
             f"$d\\le{spectrum.EXACT_INERTIA_MAX}$ (`EXACT_INERTIA_MAX`)", "`unknown`, with the reason"),
        _row("cross-checks and costly stages (moment run, transport, Thm 3.3 construction, Table 1, particles)",
             "float64 runs, flint certificates, Newton",
             f"`STAGE_MAX_D`: {stages}; for low-rank parameters ($A=0$, rank $V,B\\le d/4$) "
             f"`LOW_RANK_STAGE_MAX_D`: {low}",
             "the stage is skipped, with its reason in the JSON; the hypotheses are still decided"),
        _row("the whole document", "one CPU-time budget shared by every stage",
             f"{limits.VERIFY_SECONDS:g} CPU s (`VERIFY_SECONDS`)",
             "a stage that would start after it is `unknown`, method `budget`; nothing is decided on a partial run"),
        _row("the spectrum of $J_s$ (information, not a verdict)", "a dense float64 eigenproblem of size $d(d+1)/2$",
             f"$d\\le{JS_SPECTRUM_MAX_D}$ (`JS_SPECTRUM_MAX_D`)", "not computed"),
    ]
    attention = head + [
        _row("the input", "$n$ tokens in $d$ dimensions, $h$ heads",
             f"$d\\le{L['attention:d']}$, $n\\le{L['attention:n']}$, $nd\\le{_n(L['attention:n*d'])}$, "
             f"$h\\le{L['attention:heads']}$; a fixed-step run: at most {L['attention:steps']:,} steps and "
             f"steps $\\cdot n^2dh\\le{_n(L['attention:step_work'])}$ (`LIMITS`)",
             "refused: exit 2 / `InputError`, one line naming the limit"),
        _row("the sign of $a_k=v_k^\\top\\beta Q^\\top Kv_k$ (classes of equilibria, multistability Thm 2)",
             "a certified float enclosure, else exact arithmetic in $\\mathbb Q(\\lambda_k)$ (rational data, "
             "$\\lambda_k$ simple)",
             f"the enclosure at any $d$; exact arithmetic for $d\\le{EXACT_A_MAX_D}$ (`EXACT_A_MAX_D`)",
             "undecided: the class is reported `unknown`"),
        _row("the side of $v$ of every token (consensus Thm 6.1)",
             "exact algebraic signs of $v^\\top y_i(0)$, else a float eigenvector with a Davis–Kahan error bound",
             f"exact for $d\\le{EXACT_SIDE_MAX_D}$ (`EXACT_SIDE_MAX_D`); the bounded float route at any $d$",
             "`unknown` when the bound does not separate the signs"),
        _row("existence of an equilibrium near a computed one", "a Krawczyk test in $n(d-1)$ chart unknowns",
             f"$n(d-1)\\le{krawczyk.MAX_UNKNOWNS}$ (`MAX_UNKNOWNS`)", "`unknown`: not attempted"),
        _row("stability of an equilibrium (the spectrum of its Jacobian)",
             "a Lyapunov matrix from the Lyapunov equation or an SDP, re-checked in exact arithmetic; on exact "
             "data, else the exact spectral inertia",
             f"the SDP up to {lmi.SDP_MAX_DIM} rows (`SDP_MAX_DIM`); exact inertia up to "
             f"{spectrum.EXACT_INERTIA_MAX} (`EXACT_INERTIA_MAX`)", "`unknown`, with the spectral abscissa"),
        _row("equilibria listing (`flowcert equilibria attention`)", "sign patterns per eigenvector",
             f"$n\\le{L['equilibria:n']}$, `--cap` $\\le{_n(L['equilibria:cap'])}$, cap $\\cdot nd\\le"
             f"{_n(L['equilibria:cap*n*d'])}$", "refused: exit 2"),
    ]
    rnn = head + [
        _row("the input", "a cell, inputs $[B,T,I]$, state size $H$",
             f"$H\\le{L['rnn:H']}$, $I\\le{_n(L['rnn:I'])}$, $BTH\\le{_n(L['rnn:B*T*H'])}$; the predicted cost "
             f"$\\times{limits.RNN_COST_MARGIN:g}$ within {L['rnn:cpu_seconds']:g} CPU s and "
             f"{L['rnn:bytes'] // 2**30} GiB (`LIMITS`, `kpflow_cost`)",
             "refused before any work: exit 2, one line naming the limit (and whether the other `--mode` fits)"),
        _row("Prop. 1, Cor. 1", "finite differences of the rollout and one exact jvp in float64; a smooth cell "
             "(flowcert's cells, a module's `torch.fx` trace, or `assume=[\"smooth\"]`)",
             "the rounding tolerance at most $10^{-3}$", "undecided, with the reason"),
        _row("Thm 1: the structure $f=f^{outer}(W_jf_j^{inner})$", "flowcert's cells, torch's "
             "`RNNCell`/`GRUCell`/`LSTMCell`, or a `torch.fx` graph whose trainable parameters are each the weight "
             "or bias of one linear map", "any other cell", "undecided, the reason naming the parameter"),
        _row("Thm 1: dense rank cross-checks ($\\mathcal K_j$, its trace over $H$, the features $F_j$)",
             "dense matrices and partial traces", f"$BTH\\le{_n(EXACT_MAX)}$ (`EXACT_MAX`)",
             "skipped, with the reason; the theorem is still decided"),
        _row("Thm 2: every $A_t$ invertible", "exact rational determinants, every $A_t$ in the certificate",
             f"$BT\\le{MAX_STEPS}$ and $H\\le{MAX_H}$ (`MAX_STEPS`, `MAX_H`)",
             f"a verified float inverse, $\\|I-RA_t\\|<1$ with rigorous rounding bounds, while the float64 stack "
             f"$8BTH^2$ bytes fits {FLOAT_STACK_BYTES // 2**30} GiB (`FLOAT_STACK_BYTES`); above that `unknown`"),
        _row("contraction (a common quadratic Lyapunov function)", "an exact CQLF LMI",
             f"$BT\\le{MAX_STEPS}$ and $H\\le{MAX_H}$",
             "$X=I$ or the mean Jacobian's Lyapunov solution, checked by a shifted Cholesky with rounding "
             "bounds; `unknown` when neither proves a rate"),
        _row("consensus spectrum (`--consensus`)", "the exact partial trace when predicted cheap",
             "predicted at most 1.5 CPU s", "Rademacher probes with jackknife intervals (`trusted: false` "
             "below 8 probes)"),
    ]
    pretrained = head + [
        _row("the architecture", "a single bilinear score $\\beta x_i^\\top Q^\\top Kx_j$ per head (BERT, GPT-2, OPT)",
             "rotary position embeddings, relative positions, a non-standard score scale",
             "refused from `config.json` alone: exit 2, one line"),
        _row("the checkpoint", "sizes and weights",
             f"hidden size $\\le{_n(L['pretrained:hidden_size'])}$, layers $\\le{L['pretrained:layers']}$, heads "
             f"$\\le{L['pretrained:heads']}$, largest weight $\\le{_n(L['pretrained:weight'])}$, one tensor "
             f"$\\le{L['pretrained:tensor_bytes'] // 2**30}$ GiB (`LIMITS`)", "refused: exit 2"),
        _row("a head as `gaussian`", "$B=M^\\top$, $V=W_OW_V$ of rank $d_h$, $A=0$",
             f"$d\\le{limits.COMMAND_MAX_D['verify']}$; the costly stages up to `LOW_RANK_STAGE_MAX_D` (low rank)",
             "as `gaussian` above"),
        _row("a head as `attention`", "the prompt's $n$ tokens carried to layer $\\ell$",
             f"$nd\\le{_n(L['attention:n*d'])}$ (`attention:n*d`)", "refused: exit 2, one line naming the limit"),
    ]
    out = ["Each table is generated from the constants that enforce it when the site is built.", ""]
    for title, rows in (("`gaussian`", gaussian), ("`attention`", attention), ("`rnn` (KPFlow)", rnn),
                        ("pretrained checkpoints", pretrained)):
        out += [f"### {title}", "", *rows, ""]
    out += ["A cell whose state is a tuple (`nn.LSTMCell`'s $(h,c)$, or your own cell taking and returning a "
            "tuple) runs on $z=[h;c]$: every `rnn` limit above applies with $H$ the total state size.", ""]
    return "\n".join(out)


def errata_page() -> str:
    """The errata of :mod:`flowcert.reports.errata` as MyST Markdown, each entry anchored ``erratum-<key>``."""
    from flowcert.reports.errata import errata_markdown

    return "\n".join(errata_markdown("##", target=lambda e: f"({e.anchor})=")) + "\n"


def write_generated(app: Sphinx) -> None:
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    pages = {"limits_tables.md": limits_page, "decisions_tables.md": decisions_page, "catalogue_entries.md": catalogue_page, "errata_entries.md": errata_page}
    for name, build in pages.items():
        text = build()
        path = out / name
        if not path.is_file() or path.read_text() != text:  # unchanged pages are not re-read
            path.write_text(text)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("builder-inited", write_generated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
