"""The layering of docs/design.md ("Layers"), checked on the source by an AST scan of every import.

symbolic  <-  numeric, gpu  <-  certificates  <-  flowcert (catalogue, API, CLI)  <-  reports

Every import (top level or inside a function, absolute or relative) is resolved to a module of
``flowcert``; an arrow that points the wrong way fails. The scan also keeps the rooms small: no
module over about 700 lines, and no layer with more than two ``<system>_`` files (a system with
more modules gets a subpackage). Compatibility aliases (a module that only replaces itself in
``sys.modules``) and re-export shims are not rooms and are left out of the room checks.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"symbolic": "symbolic", "numeric": "numeric", "gpu": "gpu", "certificates": "certificates",
          "reports": "reports", "flowcert": "public"}
SYSTEMS = ("gaussian", "attention", "multistability", "consensus", "kpflow", "rnn", "pretrained")
MAX_LINES = 750  # "about 700"
# Modules owned by branches that work in parallel with the restructuring, to be split there.
SIZE_EXEMPT: dict[str, str] = {}


def _module_name(path: Path) -> tuple[str, str]:
    """``(dotted module name, layer)`` of a source file."""
    rel = path.relative_to(ROOT)
    top = rel.parts[0]
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if top == "flowcert":
        name = ".".join(parts)
    else:
        name = ".".join(["flowcert", *parts])
    return name, LAYERS[top]


def _sources() -> list[Path]:
    return sorted(p for top in LAYERS for p in (ROOT / top).rglob("*.py"))


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "flowcert":
        return None
    if len(parts) == 1:
        return "public"
    return LAYERS.get(parts[1], "public") if parts[1] != "flowcert" else "public"


def _import_nodes(path: Path) -> Iterator[tuple[int, str, list[str], bool]]:
    """``(line, module, imported names, is 'from .. import x')`` of every import in ``path``, relative ones resolved."""
    name, _ = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, [], False
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield node.lineno, mod, [a.name for a in node.names], node.module is None


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for line, mod, names, bare in _import_nodes(path):
        # from .. import x: x may be a submodule
        out += [(line, f"{mod}.{n}") for n in names] if bare else [(line, mod)]
    return out


FORBIDDEN = {
    "symbolic": {"numeric", "gpu", "certificates", "public", "reports"},
    "gpu": {"numeric", "certificates", "public", "reports"},
    "numeric": {"certificates", "public", "reports"},
    "certificates": {"public", "reports"},
}


def _is_alias(path: Path) -> bool:
    """A compatibility alias: the module replaces itself in ``sys.modules``, or only re-exports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) and ast.unparse(t) == "sys.modules[__name__]"
                                             for t in n.targets) for n in body):
        return True
    return bool(body) and all(isinstance(n, (ast.Import, ast.ImportFrom))
                              or (isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__") for n in body)


def test_resolver_sees_relative_imports():
    """The scan itself: a relative import in a numeric module resolves into symbolic."""
    found = dict((m, n) for n, m in _imports(ROOT / "numeric" / "gaussian" / "moments.py"))
    assert "flowcert.symbolic.gaussian" in found and _layer_of("flowcert.symbolic.gaussian") == "symbolic"
    assert _layer_of("flowcert.params") == "public" and _layer_of("flowcert.numeric.native") == "numeric"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path):
    _, layer = _module_name(path)
    bad = [(line, mod) for line, mod in _imports(path) if _layer_of(mod) in FORBIDDEN.get(layer, set())]
    assert not bad, f"{path.relative_to(ROOT)} ({layer}) imports upward: {bad}"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_rooms_stay_small(path):
    rel = str(path.relative_to(ROOT))
    if rel in SIZE_EXEMPT:
        pytest.skip(f"{rel}: {SIZE_EXEMPT[rel]}")
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{rel} has {lines} lines (> {MAX_LINES}): split it by what it computes"


@pytest.mark.parametrize("top", sorted(LAYERS))
def test_no_system_prefix_sprawl(top):
    """At most two ``<system>_*.py`` files per system in a folder; beyond, a subpackage."""
    for folder in {p.parent for p in (ROOT / top).rglob("*.py")}:
        for system in SYSTEMS:
            rooms = [p.name for p in folder.glob(f"{system}_*.py") if not _is_alias(p)]
            assert len(rooms) <= 2, f"{folder.relative_to(ROOT)}: {rooms}: make a subpackage {system}/"


#: Compatibility aliases kept for users only: each warns on import, and the package never imports one.
ALIASES = {
    "flowcert.params": "flowcert/params.py",
    "flowcert.reach": "flowcert/reach.py",
    "flowcert.gaussian_asymptotics": "flowcert/gaussian_asymptotics.py",
    "flowcert.numeric.gaussian_reach": "numeric/gaussian_reach.py",
    "flowcert.numeric.gaussian_riccati": "numeric/gaussian_riccati.py",
    "flowcert.numeric.gaussian_relu": "numeric/gaussian_relu.py",
}


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every module an import in ``path`` can load (``from a import b`` may load ``a.b``)."""
    return [(line, m) for line, mod, names, _ in _import_nodes(path) for m in [mod] + [f"{mod}.{n}" for n in names]]


def test_alias_table_is_the_alias_files():
    """The table names real alias modules (the scan below would pass vacuously on stale names)."""
    for module, rel in ALIASES.items():
        assert (ROOT / rel).is_file(), rel
        assert _is_alias(ROOT / rel) or "warnings.warn" in (ROOT / rel).read_text(), rel
        assert _module_name(ROOT / rel)[0] == module


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_imports_the_cli_or_an_alias(path):
    """The CLI is a leaf (only ``__main__`` starts it) and the aliases are for users only."""
    rel = str(path.relative_to(ROOT))
    if rel in ALIASES.values():
        return
    mods = _imported(path)
    if rel != "flowcert/__main__.py":
        assert not [(n, m) for n, m in mods if m == "flowcert.cli"], f"{rel} imports flowcert.cli"
    bad = [(n, m) for n, m in mods if m in ALIASES]
    assert not bad, f"{rel} imports the deprecated alias(es) {bad}: use the canonical module"


def test_aliases_warn():
    """Each alias emits a DeprecationWarning when a user imports it (a fresh interpreter per alias)."""
    import subprocess
    import sys

    for module in ALIASES:
        code = (f"import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
                f"try:\n import {module}\nexcept DeprecationWarning as w:\n print('warned', w)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("warned"), (module, out.stdout, out.stderr[-500:])


#: The only module of the ``flowcert`` package that may import ``flowcert.reports`` (rendering sits above
#: the systems): the command line, inside the commands that draw (``report``, ``simulate --plot``, ``graph``).
REPORTS_EDGE = "flowcert/cli.py"


def _top_level_imports(path: Path) -> set[int]:
    """Line numbers of the imports a module runs when it is imported (outside every function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines: set[int] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                lines.add(child.lineno)
            visit(child)
    visit(tree)
    return lines


@pytest.mark.parametrize("path", [p for p in _sources() if _module_name(p)[1] == "public"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_package_does_not_render(path):
    """Nothing in ``flowcert`` imports ``flowcert.reports`` but the CLI edge, and that one only lazily
    (the systems verify and simulate; the report sections and figures are drawn in ``reports/``)."""
    rel = str(path.relative_to(ROOT))
    hits = [(line, m) for line, m in _imported(path) if m == "flowcert.reports" or m.startswith("flowcert.reports.")]
    if rel != REPORTS_EDGE:
        assert not hits, f"{rel} imports the report layer {hits}: rendering lives in reports/"
    else:
        eager = [(line, m) for line, m in hits if line in _top_level_imports(path)]
        assert hits and not eager, f"{rel} imports the report layer at import time {eager}: only inside a command"


def test_the_report_rule_sees_an_upward_import(tmp_path, monkeypatch):
    """The rule above can fail: a system module that draws, or an eager import in the CLI, is caught."""
    import sys

    here = sys.modules[__name__]
    monkeypatch.setattr(here, "ROOT", tmp_path)
    (tmp_path / "flowcert" / "gaussian").mkdir(parents=True)
    drawing = tmp_path / "flowcert" / "gaussian" / "system.py"
    drawing.write_text("def simulate():\n    from ..reports.figures import plot_moments\n")
    with pytest.raises(AssertionError, match="imports the report layer"):
        test_the_package_does_not_render(drawing)
    cli = tmp_path / "flowcert" / "cli.py"
    cli.write_text("from .reports.build import build_report\n")
    with pytest.raises(AssertionError, match="at import time"):
        test_the_package_does_not_render(cli)
    cli.write_text("def cmd_report():\n    from .reports.build import build_report\n")
    test_the_package_does_not_render(cli)
