r"""Report section: the theorem graph (:mod:`flowcert.graph`), one figure per paper, and its drawing.

An edge :math:`u\to v` means that the proof of :math:`v` uses :math:`u`; red nodes are statements
false as printed (the catalogue checks a corrected form), orange ones rest on a red one through
some chain, dashed red edges are proof steps that are wrong as printed. Everything in the text
(counts, chains, the list of false statements) is computed from the graph.

:func:`draw` lays a paper's graph out in layers with networkx (``multipartite_layout``, one
column per longest-path depth, rows ordered by the barycentre of their premises to cut
crossings), draws every node as a box around its label and the legend below, in the report's
:data:`~flowcert.reports.figures.STYLE`; ``flowcert graph`` draws with it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import graph
from .common import Section, plain
from .values import table_safe

#: Node colours: false as printed, resting on a false statement, a sound result, an assumption.
COLOURS = {"false": "#f4a6a6", "downstream": "#ffd2a8", "ok": "#cfe3f3", "assumption": "#e4e4e4"}
EDGE_COLOURS = {"plain": "#555555", "erratum": "#c62828"}
COLUMN_IN, ROW_IN, MARGIN_IN, LEGEND_IN = 1.45, 0.40, 0.6, 0.55


def _layers(G: Any) -> dict[str, int]:
    """Longest-path depth of each node (sources at 0)."""
    import networkx as nx

    depth: dict[str, int] = {}
    for v in nx.topological_sort(G):
        depth[v] = max((depth[u] + 1 for u in G.predecessors(v)), default=0)
    return depth


def layered(G: Any) -> tuple[Any, dict[tuple[str, str], list[str]]]:
    """The layered graph (Sugiyama): every node with its ``layer`` (longest-path depth), an edge that
    skips layers replaced by a chain through virtual nodes, and each layer ordered by the mean
    position of its neighbours (four alternating barycentre sweeps, to cut crossings).

    Returns the ordered graph (real and virtual nodes, inserted layer by layer in order) and, for
    every edge of ``G``, the chain of nodes it runs through."""
    import networkx as nx

    depth = _layers(G)
    A = nx.DiGraph()
    A.add_nodes_from(G)
    chains: dict[tuple[str, str], list[str]] = {}
    for u, v in G.edges:
        chain = [u] + [f"{u}->{v}#{k}" for k in range(depth[u] + 1, depth[v])] + [v]
        for k, w in enumerate(chain[1:-1], start=depth[u] + 1):
            depth[w] = k
        nx.add_path(A, chain)
        chains[(u, v)] = chain
    columns: dict[int, list[str]] = {}
    for w in sorted(A, key=lambda x: (depth[x], x)):
        columns.setdefault(depth[w], []).append(w)
    order = sorted(columns)
    for sweep in range(4):
        down = sweep % 2 == 0
        row = {w: i for ws in columns.values() for i, w in enumerate(ws)}
        for k in (order[1:] if down else order[-2::-1]):
            def centre(w: str) -> float:
                nbrs = list(A.predecessors(w) if down else A.successors(w))
                return sum(row[x] for x in nbrs) / len(nbrs) if nbrs else row[w]
            columns[k].sort(key=lambda w: (centre(w), row[w]))
            row.update({w: i for i, w in enumerate(columns[k])})
    H = nx.DiGraph()
    for k in order:
        H.add_nodes_from((w, {"layer": k, "virtual": w not in G}) for w in columns[k])
    H.add_edges_from(A.edges)
    return H, chains


def _spread(ys: list[float], gaps: list[float]) -> list[float]:
    """Values as close to ``ys`` as the order allows with ``gaps[i]`` between items ``i`` and ``i+1``
    (a forward and a backward pass, averaged, then pushed apart once more)."""
    fwd, bwd = list(ys), list(ys)
    for i in range(1, len(ys)):
        fwd[i] = max(fwd[i], fwd[i - 1] + gaps[i - 1])
    for i in range(len(ys) - 2, -1, -1):
        bwd[i] = min(bwd[i], bwd[i + 1] - gaps[i])
    out = [(f + b) / 2 for f, b in zip(fwd, bwd)]
    for i in range(1, len(out)):
        out[i] = max(out[i], out[i - 1] + gaps[i - 1])
    return out


def layout(G: Any) -> tuple[dict[str, tuple[float, float]], dict[tuple[str, str], list[str]]]:
    """Positions in inches of the nodes of :func:`layered` and the chains of the edges.

    Columns come from ``networkx.multipartite_layout`` (one per layer, ``COLUMN_IN`` apart, in the
    order of :func:`layered`); rows are then relaxed towards the mean row of each node's neighbours
    (long edges straighten), keeping the order and ``ROW_IN`` between boxes (0.6 of that beside
    a virtual node)."""
    import networkx as nx

    H, chains = layered(G)
    pos = nx.multipartite_layout(H, subset_key="layer", align="vertical")
    xs = sorted({round(float(x), 9) for x, _ in pos.values()})
    column_of = {w: xs.index(round(float(x), 9)) for w, (x, _) in pos.items()}
    columns: dict[int, list[str]] = {}
    for w in H:  # insertion order is the order of each layer
        columns.setdefault(column_of[w], []).append(w)
    y = {w: float(i) * ROW_IN for ws in columns.values() for i, w in enumerate(ws)}
    for sweep in range(24):
        for k in sorted(columns, reverse=sweep % 2 == 1):
            ws = columns[k]
            want = [sum(y[n] for n in nx.all_neighbors(H, w)) / max(1, H.degree(w)) if H.degree(w) else y[w] for w in ws]
            gaps = [ROW_IN if not (H.nodes[a]["virtual"] or H.nodes[b]["virtual"]) else 0.6 * ROW_IN
                    for a, b in zip(ws, ws[1:])]
            y.update(zip(ws, _spread(want, gaps)))
    top = min(y.values())
    height = max(y.values()) - top
    return ({w: (MARGIN_IN + column_of[w] * COLUMN_IN, LEGEND_IN + MARGIN_IN / 2 + height - (y[w] - top)) for w in H},
            chains)


def draw(paper: str, out: Path) -> Path:
    """Draw one paper's graph to ``out`` (``.svg``/``.png``/``.pdf``): false statements red, downstream
    orange, erratum links dashed red; laid out by :func:`layout`, checked by
    :func:`~flowcert.reports.figures.save_figure` (nothing clipped, text legible in an 800-px window)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, PathPatch
    from matplotlib.path import Path as MPath

    from .figures import new_figure, save_figure

    G = graph.to_networkx(paper)
    status = graph.downstream_of_false(paper)
    pos, chains = layout(G)
    width = max(4.8, 2 * MARGIN_IN + max(x for x, _ in pos.values()) - MARGIN_IN)
    height = max(y for _, y in pos.values()) + MARGIN_IN / 2 + ROW_IN / 2
    fig = new_figure()
    fig.set_size_inches(width, height)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    boxes = {}
    for v in G:
        kind = status.get(v, "assumption" if G.nodes[v]["kind"] == "assumption" else "ok")
        boxes[v] = ax.text(*pos[v], v.split(":", 1)[1], ha="center", va="center", zorder=3,
                           bbox={"boxstyle": "round,pad=0.3", "fc": COLOURS[kind], "ec": "#333333", "lw": 0.8})
    fig.canvas.draw()  # the boxes exist once drawn: arrows end at their edges
    for (u, v), chain in chains.items():
        bad = bool(G.edges[u, v]["erratum"])
        style = {"color": EDGE_COLOURS["erratum" if bad else "plain"], "ls": "--" if bad else "-",
                 "lw": 1.4 if bad else 0.9}
        start = pos[u]
        if len(chain) > 2:  # a long edge: a smooth curve through its virtual nodes (Catmull-Rom), under the boxes
            pts = [pos[w] for w in chain]
            verts, codes = [pts[0]], [MPath.MOVETO]
            for i in range(len(pts) - 2):
                a, b = pts[max(i - 1, 0)], pts[i + 2]
                p0, p1 = pts[i], pts[i + 1]
                verts += [(p0[0] + (p1[0] - a[0]) / 6, p0[1] + (p1[1] - a[1]) / 6),
                          (p1[0] - (b[0] - p0[0]) / 6, p1[1] - (b[1] - p0[1]) / 6), p1]
                codes += [MPath.CURVE4] * 3
            ax.add_patch(PathPatch(MPath(verts, codes), fill=False, zorder=1, ec=style["color"], ls=style["ls"],
                                   lw=style["lw"]))
            start = pts[-2]
        ax.annotate("", xy=pos[v], xytext=start, zorder=2,
                    arrowprops={"arrowstyle": "-|>", "mutation_scale": 10, **style, "shrinkA": 2 if len(chain) == 2 else 0,
                                "patchA": boxes[u].get_bbox_patch() if len(chain) == 2 else None,
                                "patchB": boxes[v].get_bbox_patch()})
    handles = [Patch(fc=COLOURS[k], ec="#333333", label=lab) for k, lab in
               (("false", "false as printed"), ("downstream", "rests on a false statement"),
                ("ok", "result"), ("assumption", "assumption"))]
    handles += [Line2D([], [], color=EDGE_COLOURS["plain"], label="proof uses"),
                Line2D([], [], color=EDGE_COLOURS["erratum"], ls="--", label="erratum link")]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.0))
    return save_figure(fig, out)


TITLE = "The theorem graph: what rests on what"


def _chain(theorem_id: str) -> str:
    """The shortest chain from a false statement to ``theorem_id``, as text."""
    for a in graph.rests_on(theorem_id):
        if a["false_as_printed"]:
            return " → ".join(f"`{x}`" for x in a["path"])
    return ""


def section(out: Path, *, quick: bool) -> Section:
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
        draw(paper, out / name)
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
            lines += [f"| `{v}` | {table_safe(plain(G.nodes[v]['erratum']))} |" for v in sorted(false)]
            lines.append("")
        if down:
            lines += ["| rests on a false statement | chain |", "|---|---|"]
            lines += [f"| `{v}` | {_chain(v)} |" for v in sorted(down)]
            lines.append("")
        if not false and not down:
            lines += ["No statement of this paper is false as printed.", ""]
        lines += [f"![Theorem graph of the {paper} paper. Protocol: nodes are the catalogue ids of flowcert.graph "
                  f"(plus the paper's standing assumptions), edges the proof dependencies read from the notes; "
                  f"layered layout (networkx, columns by longest path from a source); red false as printed, orange downstream, "
                  f"dashed red erratum links. Claims: {n_res} results, {G.number_of_edges()} dependencies, "
                  f"{len(false)} false as printed, {len(down)} resting on a false statement.]({name})", ""]
    return {"title": TITLE, "markdown": "\n".join(lines), "theorems": [], "figures": figures}
