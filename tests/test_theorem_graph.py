"""The theorem graph: a DAG whose ids are exactly the catalogue's, chains in ``verify``, drawing, CLI.

The catalogue's ids are collected from each system's catalogue modules: the ids ``verify gaussian``
reports on a small constant parameter set, and for the attention / rnn systems the modules'
``THEOREM_IDS`` (or, failing that, the id-shaped string constants in their source). Systems whose
catalogue is not on this branch are left out of the two-way check (and say so).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from flowcert import graph

ROOT = Path(__file__).resolve().parents[1]
ID = re.compile(r"^(gaussian|multistability|consensus|kpflow):(prop|lemma|thm|cor|obs)-[A-Za-z0-9.]+$")
SMALL = {"A": [[-1.0]], "B": [[1.0]], "V": [[-1.0]], "b": [0.0], "mu0": [0.0], "Sigma0": [[1.0]], "t_end": 1.0}

# paper -> catalogue modules (source folder, module names)
MODULES = {
    "multistability": ["flowcert.attention.multistability"],
    "consensus": ["flowcert.attention.consensus"],
    "kpflow": ["flowcert.rnn.analyze"],
}


@pytest.fixture(scope="module")
def gaussian_doc():
    from flowcert.gaussian.catalogue import verify
    from flowcert.gaussian.params import parse_gaussian

    return verify(parse_gaussian(SMALL))


def _static_ids(module_name: str) -> set[str]:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module_name)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:  # a THEOREM_IDS tuple of literals is the module's own list
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "THEOREM_IDS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and ID.match(n.value)}


def catalogue_ids(gaussian_doc) -> tuple[dict[str, set[str]], list[str]]:
    found = {"gaussian": {t["id"] for t in gaussian_doc["theorems"]}}
    absent = []
    for paper, names in MODULES.items():
        ids: set[str] = set()
        for name in names:
            try:
                ids |= _static_ids(name)
            except ModuleNotFoundError:
                absent.append(name)
        if ids:
            found[paper] = ids
    return found, absent


def test_graph_is_a_dag_with_known_endpoints():
    G = graph.to_networkx()
    assert nx.is_directed_acyclic_graph(G)
    ids = {n.id for n in graph.NODES}
    assert len(ids) == len(graph.NODES), "duplicate node ids"
    for e in graph.EDGES:
        assert e.premise in ids and e.result in ids, e
        assert graph.paper_of(e.premise) == graph.paper_of(e.result), "proofs use results of their own paper"
    for n in graph.NODES:
        assert n.kind in ("result", "assumption")
        assert not n.false or n.erratum, f"{n.id}: a false statement says why"
        if n.kind == "result":
            assert ID.match(n.id), n.id
        else:
            assert re.match(r"^[a-z]+:assumption-[A-Za-z0-9.]+$", n.id), n.id


def test_graph_ids_are_the_catalogue_ids(gaussian_doc):
    found, absent = catalogue_ids(gaussian_doc)
    results = {n.id for n in graph.NODES if n.kind == "result"}
    for paper, ids in found.items():
        mine = {i for i in results if graph.paper_of(i) == paper}
        assert mine - ids == set(), f"{paper}: graph names ids the catalogue lacks"
        assert ids - mine == set(), f"{paper}: catalogue ids missing from the graph"
    # papers whose catalogue is on this branch are all checked; the others are listed, not silently passed
    assert "gaussian" in found
    assert set(found) | {p for p in MODULES if any(m in absent for m in MODULES[p])} == set(graph.PAPER_KEYS)


def test_rests_on_is_the_set_of_ancestors():
    G = graph.to_networkx()
    for n in graph.NODES:
        chain = graph.rests_on(n.id)
        assert {a["id"] for a in chain} == nx.ancestors(G, n.id)
        for a in chain:
            path = a["path"]
            assert path[0] == a["id"] and path[-1] == n.id and nx.is_path(G, path)
            assert len(path) - 1 == nx.shortest_path_length(G, a["id"], n.id)
            links = [[u, v, G.edges[u, v]["erratum"]] for u, v in zip(path, path[1:]) if G.edges[u, v]["erratum"]]
            assert a["erratum_links"] == links
    assert graph.rests_on("gaussian:not-an-id") == []


def test_downstream_colouring():
    G = graph.to_networkx()
    false = {n.id for n in graph.NODES if n.false}
    expected_down = set().union(*(nx.descendants(G, f) for f in false)) - false
    status = graph.downstream_of_false()
    assert {k for k, v in status.items() if v == "false"} == false
    assert {k for k, v in status.items() if v == "downstream"} == expected_down
    # the gaussian paper: Thm 4.11(1) rests on the false Thm 4.1 (erratum 3 of note 000)
    assert status["gaussian:thm-4.11.1"] == "downstream"


def test_verify_records_carry_rests_on(gaussian_doc):
    for t in gaussian_doc["theorems"]:
        assert t["rests_on"] == graph.rests_on(t["id"])
        assert {"id", "source", "applies", "hypotheses", "prediction", "cross_check"} <= t.keys()
    by_id = {t["id"]: t for t in gaussian_doc["theorems"]}
    chain = {a["id"]: a for a in by_id["gaussian:thm-4.11.2"]["rests_on"]}
    assert chain["gaussian:thm-4.1"]["false_as_printed"] and chain["gaussian:thm-4.1"]["erratum_links"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowcert", *args], capture_output=True, text=True, cwd=cwd,
                          env={"MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}, timeout=300)


def test_cli_graph_writes_svg(tmp_path):
    r = _cli("graph", "--paper", "gaussian", "--out", str(tmp_path / "g.svg"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "g.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


@pytest.mark.parametrize("args, key", [(["--paper", "nope"], "--paper"), (["--out", "g.txt"], "--out"),
                                       (["--out", "missing/g.svg"], "--out"), (["--bogus"], "unrecognized")])
def test_cli_graph_bad_args_exit_2(args, key, tmp_path, monkeypatch, capsys):
    from flowcert.cli import main

    monkeypatch.chdir(tmp_path)
    try:
        code = main(["graph", *args])
    except SystemExit as exc:  # argparse errors exit from inside the parser
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and key in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_report_section_contract(tmp_path):
    from flowcert.reports import graph as section
    from flowcert.reports.build import _check_contract

    res = section.section(tmp_path, quick=True)
    title, md, theorems, figures = _check_contract("graph", res, tmp_path)
    assert len(figures) == len(graph.PAPER_KEYS)
    for f in figures:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for n in graph.NODES:
        if n.false:
            assert f"`{n.id}`" in md
