r"""The theorem graph: which results of the four papers rest on which.

A directed acyclic graph whose nodes are the catalogue ids (``gaussian:thm-4.7.1`` …) plus the
papers' standing assumptions (``multistability:assumption-1``, the gaussian paper's eq. (12)),
with an edge :math:`u\to v` when the proof of :math:`v` uses :math:`u` (as the technical notes on the
papers read the proofs). A node is *false as printed* when the notes found the printed
statement false (the catalogue checks a corrected form); an edge is an *erratum link* when the
step of the proof that uses :math:`u` is wrong as printed (a wrong constant, an invalid argument,
an inconsistent hypothesis). For every result, :func:`rests_on` lists the chain of results and
assumptions it depends on and marks the erratum links on the way; ``verify`` adds it to each
theorem record under ``rests_on``. :func:`to_networkx` gives the graph to networkx; the drawing
(``flowcert graph``, the report's figures) is :func:`flowcert.reports.graph.draw`.

The data are plain Python (no networkx import), so ``verify`` does not pay for the drawing stack.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, TypedDict

PAPER_KEYS = ("gaussian", "multistability", "consensus", "kpflow")


@dataclass(frozen=True)
class Node:
    """One result or assumption: ``false`` when the printed statement is false (``erratum`` says why)."""

    id: str
    kind: str  # "result" | "assumption"
    label: str
    false: bool = False
    erratum: str | None = None


@dataclass(frozen=True)
class Edge:
    """``premise -> result``: the proof of ``result`` uses ``premise``; ``erratum`` if that step is wrong as printed."""

    premise: str
    result: str
    erratum: str | None = None


def _r(id: str, label: str, false: bool = False, erratum: str | None = None) -> Node:
    return Node(id, "result", label, false, erratum)


def _a(id: str, label: str, false: bool = False, erratum: str | None = None) -> Node:
    return Node(id, "assumption", label, false, erratum)


NODES: tuple[Node, ...] = (
    # gaussian
    _r("gaussian:prop-2.1", "Prop 2.1 Gaussian ODE (7)"),
    _r("gaussian:lemma-2.3", "Lemma 2.3 sub-Gaussianity"),
    _r("gaussian:prop-2.4", "Prop 2.4 ReLU W2 bound"),
    _r("gaussian:lemma-3.1", "Lemma 3.1 rank preservation"),
    _r("gaussian:thm-3.3", "Thm 3.3 reachability"),
    _a("gaussian:assumption-12", "eq. (12) eta(B+B^T) <= 0", True,
       r"insufficient for Thm 4.1: with $\eta(B+B^\top)=0$ ($B$ skew, $A=I$) $\Sigma$ diverges; needs "
       r"$\eta(B+B^\top)\prec0$ or detectability"),
    _r("gaussian:thm-4.1", "Thm 4.1 covariance limit (V = eta I)", True,
       "false under the printed hypothesis (12) alone"),
    _r("gaussian:lemma-4.4", "Lemma 4.4 imaginary spectrum"),
    _r("gaussian:thm-4.7.1", "Thm 4.7(1) PD equilibrium", True,
       r"existence of a positive definite equilibrium is false: $A=\begin{pmatrix}1&4\\0&1\end{pmatrix}$, $B=I/2$, "
       r"$V=-\operatorname{diag}(1/2,1/10)$"),
    _r("gaussian:thm-4.7.2", "Thm 4.7(2) Sigma -> 0"),
    _r("gaussian:thm-4.7.3", "Thm 4.7(3) 0 locally stable"),
    _r("gaussian:thm-4.8.1", "Thm 4.8(1) blow-up, alpha >= 0"),
    _r("gaussian:thm-4.8.2", "Thm 4.8(2) blow-up, large Sigma0"),
    _r("gaussian:thm-4.11.1", "Thm 4.11(1) mean limit, eta < 0"),
    _r("gaussian:thm-4.11.2", "Thm 4.11(2) mean diverges, eta > 0", True,
       r"hypotheses inconsistent: $B+B^\top\succ0$ with $\eta>0$ contradicts (12) and blows up"),
    # multistability
    _a("multistability:assumption-1", "Assumption 1: V = V^T, lambda_1 > 0 simple"),
    _r("multistability:lemma-1", "Lemma 1 Oja flow"),
    _r("multistability:lemma-2", "Lemma 2 equilibria of (5)"),
    _r("multistability:lemma-4", "Lemma 4 stability for (5)", False,
       r"bipartite argument uses normal eigenvalues; polygonal argument fails with tokens at $\pm v_1$ (conclusion true)"),
    _r("multistability:lemma-5", "Lemma 5 Lyapunov function for (5)", False, "normalisation of $W$ inconsistent (corrected)"),
    _r("multistability:thm-1", "Thm 1 multiagent Oja"),
    _r("multistability:lemma-6", "Lemma 6 equilibria of (1)"),
    _r("multistability:lemma-7", "Lemma 7 attention at equilibria"),
    _r("multistability:thm-2", "Thm 2 SA stability", True,
       r"inequality (9) printed with sign errors; $\delta\lambda_k>0$ not necessary for singleton groups"),
    _r("multistability:lemma-9", "Lemma 9 SA consensus"),
    _r("multistability:lemma-10", "Lemma 10 SA bipartite spectrum"),
    _r("multistability:lemma-11", "Lemma 11 SA polygonal unstable", False, r"heuristic proof (stray $1/n$, uncontrolled $\Xi$ term)"),
    _r("multistability:prop-2", "Prop 2 beta -> 0"),
    _r("multistability:obs-D2", "D2 equal-split bipartite spectrum"),
    _r("multistability:obs-D3", "D3 alignment of stable bipartite points"),
    # consensus
    _r("consensus:lemma-3.1", "Lemma 3.1 projection onto T(E_P)"),
    _r("consensus:thm-3.1", "Thm 3.1 gradient structure"),
    _r("consensus:thm-3.2", "Thm 3.2 convergence to an equilibrium"),
    _r("consensus:lemma-4.1", "Lemma 4.1 attention bounded below"),
    _r("consensus:lemma-4.2", "Lemma 4.2 uniform continuity"),
    _r("consensus:thm-4.1", "Thm 4.1 hemisphere consensus"),
    _r("consensus:lemma-5.1", "Lemma 5.1 causal ISS"),
    _r("consensus:thm-5.1", "Thm 5.1 causal consensus (U = I)", True,
       r"domain of attraction claimed too large for $\ell\ge3$: counterexample on $\mathbb S^1$"),
    _r("consensus:lemma-6.1", "Lemma 6.1 causal ISS (symmetric U)"),
    _r("consensus:thm-6.1", "Thm 6.1 causal consensus (symmetric U)"),
    # kpflow
    _r("kpflow:prop-1", "Prop 1 KP decomposition"),
    _r("kpflow:cor-1", "Cor 1 output GD flow", False, "minus sign and constants inconsistent (eq. 17 vs 56)"),
    _r("kpflow:thm-1", "Thm 1 structure of K", True,
       r"part (3) false for non-constant outer Jacobian (GRU, torch RNN); $\mathcal K$ only positive semidefinite"),
    _r("kpflow:thm-2", "Thm 2 P = U V U^-1", True,
       r"needs invertible Jacobians; eq. 74 off by one; $\sigma_j(U)=e^{\lambda_jt}$ only for normal constant $J$"),
)

EDGES: tuple[Edge, ...] = (
    Edge("gaussian:prop-2.1", "gaussian:prop-2.4"),
    Edge("gaussian:lemma-2.3", "gaussian:prop-2.4"),
    Edge("gaussian:prop-2.1", "gaussian:lemma-3.1"),
    Edge("gaussian:prop-2.1", "gaussian:thm-3.3"),
    Edge("gaussian:lemma-3.1", "gaussian:thm-3.3"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.1"),
    Edge("gaussian:assumption-12", "gaussian:thm-4.1", r"(12) alone does not give the limit; $\eta(B+B^\top)\prec0$ is used"),
    Edge("gaussian:prop-2.1", "gaussian:lemma-4.4"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.7.1", r"trace inequality (36) has $\lambda_{\max}(B)$ for $\lambda_{\min}(B)$"),
    Edge("gaussian:lemma-4.4", "gaussian:thm-4.7.1"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.7.2"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.7.3", "boundedness uses (36) with the wrong constant"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.8.1"),
    Edge("gaussian:prop-2.1", "gaussian:thm-4.8.2"),
    Edge("gaussian:thm-4.1", "gaussian:thm-4.11.1"),
    Edge("gaussian:lemma-4.4", "gaussian:thm-4.11.1", "block formula of Proof 4.12 wrong by a factor"),
    Edge("gaussian:thm-4.1", "gaussian:thm-4.11.2", r"used under $B+B^\top\succ0$, $\eta>0$, which violates (12)"),
    Edge("gaussian:lemma-4.4", "gaussian:thm-4.11.2"),
    Edge("multistability:assumption-1", "multistability:lemma-1"),
    Edge("multistability:lemma-2", "multistability:lemma-4"),
    Edge("multistability:assumption-1", "multistability:thm-1"),
    Edge("multistability:lemma-2", "multistability:thm-1"),
    Edge("multistability:lemma-4", "multistability:thm-1", "bipartite instability argued from normal eigenvalues"),
    Edge("multistability:lemma-5", "multistability:thm-1", "Lyapunov function with inconsistent normalisation"),
    Edge("multistability:lemma-2", "multistability:lemma-6"),
    Edge("multistability:lemma-6", "multistability:lemma-7"),
    Edge("multistability:lemma-7", "multistability:lemma-9"),
    Edge("multistability:lemma-4", "multistability:lemma-9"),
    Edge("multistability:lemma-7", "multistability:lemma-10"),
    Edge("multistability:lemma-4", "multistability:lemma-11", r"same $\lvert\zeta_1\rvert<1$ gap as Lemma 4"),
    Edge("multistability:assumption-1", "multistability:thm-2"),
    Edge("multistability:lemma-9", "multistability:thm-2"),
    Edge("multistability:lemma-10", "multistability:thm-2", "trace/determinant conditions turned into (9) with sign errors"),
    Edge("multistability:lemma-11", "multistability:thm-2", "heuristic instability argument"),
    Edge("multistability:lemma-10", "multistability:obs-D2"),
    Edge("multistability:lemma-10", "multistability:obs-D3"),
    Edge("consensus:lemma-3.1", "consensus:thm-3.1"),
    Edge("consensus:thm-3.1", "consensus:thm-3.2"),
    Edge("consensus:lemma-4.1", "consensus:thm-4.1"),
    Edge("consensus:lemma-4.2", "consensus:thm-4.1"),
    Edge("consensus:lemma-5.1", "consensus:thm-5.1"),
    Edge("consensus:lemma-6.1", "consensus:thm-6.1"),
    Edge("kpflow:prop-1", "kpflow:cor-1"),
)

_BY_ID = {n.id: n for n in NODES}
_PREMISES: dict[str, list[Edge]] = {n.id: [] for n in NODES}
for _e in EDGES:
    _PREMISES[_e.result].append(_e)


def node(theorem_id: str) -> Node | None:
    """The node of an id, or ``None`` if the graph does not know it."""
    return _BY_ID.get(theorem_id)


def paper_of(theorem_id: str) -> str:
    return theorem_id.split(":", 1)[0]


class PremiseRecord(TypedDict):
    """One entry of a theorem record's ``rests_on``: a result or assumption the proof uses (:func:`rests_on`)."""

    id: str
    #: ``"result"`` or ``"assumption"``
    kind: str
    false_as_printed: bool
    erratum: str | None
    #: the shortest chain ``[ancestor, …, theorem]``
    path: list[str]
    #: the links of :attr:`path` whose step is wrong as printed: ``[premise, result, why]`` each
    erratum_links: list[list[str]]


def rests_on(theorem_id: str) -> list[PremiseRecord]:
    """The chain a result rests on: every result or assumption its proof uses, directly or not.

    Returns one entry per ancestor, nearest first: ``{"id", "kind", "false_as_printed",
    "erratum", "path"}`` where ``path`` is the shortest chain ``[ancestor, …, theorem_id]`` and
    ``erratum_links`` lists the links on that chain whose step is wrong as printed
    (``[premise, result, why]``). An id the graph does not know gets ``[]``.
    """
    if theorem_id not in _BY_ID:
        return []
    parent: dict[str, Edge | None] = {theorem_id: None}
    order: list[str] = []
    queue = deque([theorem_id])
    while queue:
        v = queue.popleft()
        for e in _PREMISES[v]:
            if e.premise not in parent:
                parent[e.premise] = e
                order.append(e.premise)
                queue.append(e.premise)
    out: list[PremiseRecord] = []
    for u in order:
        path, links, w = [u], [], u
        while (e := parent[w]) is not None:
            path.append(e.result)
            if e.erratum:
                links.append([e.premise, e.result, e.erratum])
            w = e.result
        n = _BY_ID[u]
        out.append({"id": u, "kind": n.kind, "false_as_printed": n.false, "erratum": n.erratum, "path": path,
                    "erratum_links": links})
    return out


def downstream_of_false(paper: str | None = None) -> dict[str, str]:
    """``id -> "false" | "downstream"``: false statements and every result that rests on one."""
    status: dict[str, str] = {}
    for n in NODES:
        if paper and paper_of(n.id) != paper:
            continue
        if n.false:
            status[n.id] = "false"
        elif any(a["false_as_printed"] for a in rests_on(n.id)):
            status[n.id] = "downstream"
    return status


def to_networkx(paper: str | None = None) -> Any:
    """The graph (or one paper's part) as a ``networkx.DiGraph`` with node/edge attributes."""
    import networkx as nx

    G = nx.DiGraph()
    for n in NODES:
        if paper is None or paper_of(n.id) == paper:
            G.add_node(n.id, kind=n.kind, label=n.label, false=n.false, erratum=n.erratum or "")
    for e in EDGES:
        if e.premise in G and e.result in G:
            G.add_edge(e.premise, e.result, erratum=e.erratum or "")
    return G


__all__ = ["EDGES", "Edge", "NODES", "Node", "PAPER_KEYS", "PremiseRecord", "downstream_of_false", "node", "paper_of", "rests_on",
           "to_networkx"]
