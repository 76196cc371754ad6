r"""Report section: the theorem graph (:mod:`flowcert.graph`), one figure per paper.

An edge :math:`u\to v` means that the proof of :math:`v` uses :math:`u`; red nodes are statements
false as printed (the catalogue checks a corrected form), orange ones rest on a red one through
some chain, dashed red edges are proof steps that are wrong as printed. Everything in the text
(counts, chains, the list of false statements) is computed from the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import graph

TITLE = "The theorem graph: what rests on what"


def _chain(theorem_id: str) -> str:
    """The shortest chain from a false statement to ``theorem_id``, as text."""
    for a in graph.rests_on(theorem_id):
        if a["false_as_printed"]:
            return " → ".join(f"`{x}`" for x in a["path"])
    return ""


def section(out: Path, *, quick: bool) -> dict[str, Any]:
    """The report section (contract of ``reports/<paper>.py``); ``quick`` changes nothing (cheap)."""
    out = Path(out)
    figures: list[str] = []
    lines = [
        "Each paper's results as a directed graph: an arrow $u\\to v$ says that the proof of $v$ uses $u$ "
        "(a result or a standing assumption of the paper), as the technical notes read the proofs. "
        "Red: false as printed (flowcert checks the corrected statement). Orange: rests on a red node through "
        "some chain. Dashed red arrows: a step of the proof that is wrong as printed. "
        "`flowcert verify` reports the same chains under `rests_on` in each theorem record, and "
        "`flowcert graph --paper KEY --out FILE.svg` draws one of these figures.",
        "",
    ]
    for paper in graph.PAPER_KEYS:
        G = graph.to_networkx(paper)
        status = graph.downstream_of_false(paper)
        name = f"graph-{paper}.png"
        graph.draw(paper, out / name)
        figures.append(name)
        n_res = sum(1 for v in G if G.nodes[v]["kind"] == "result")
        n_ass = G.number_of_nodes() - n_res
        n_err = sum(1 for e in G.edges if G.edges[e]["erratum"])
        lines += [f"### {paper}", "",
                  f"{n_res} results, {n_ass} assumption{'s' if n_ass != 1 else ''}, {G.number_of_edges()} "
                  f"proof dependencies ({n_err} erratum link{'s' if n_err != 1 else ''}).", ""]
        false = [v for v, s in status.items() if s == "false"]
        down = [v for v, s in status.items() if s == "downstream"]
        if false:
            lines += ["| false as printed | why |", "|---|---|"]
            lines += [f"| `{v}` | {G.nodes[v]['erratum']} |" for v in sorted(false)]
            lines.append("")
        if down:
            lines += ["| rests on a false statement | chain |", "|---|---|"]
            lines += [f"| `{v}` | {_chain(v)} |" for v in sorted(down)]
            lines.append("")
        if not false and not down:
            lines += ["No statement of this paper is false as printed.", ""]
        lines += [f"![Theorem graph of the {paper} paper. Protocol: nodes are the catalogue ids of flowcert.graph "
                  f"(plus the paper's standing assumptions), edges the proof dependencies read from the notes; "
                  f"layout by longest path from a source; red false as printed, orange downstream, "
                  f"dashed red erratum links. Claims: {n_res} results, {G.number_of_edges()} dependencies, "
                  f"{len(false)} false as printed, {len(down)} resting on a false statement.]({name})", ""]
    return {"title": TITLE, "markdown": "\n".join(lines), "theorems": [], "figures": figures}
