r"""Mutation testing of chosen functions against targeted, fast test selections (not run in CI).

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python scripts/mutation.py [--max N] [--only NAME] [--json OUT]

Each target names a module, the functions to mutate, and the pytest selection that should kill
its mutants. One mutant at a time: an AST operator is changed in the function (comparison
``<``/``<=``/``>``/``>=``/``==``/``!=`` flipped, ``+``/``-`` and ``*``/``/`` swapped, ``and``/``or``
swapped, ``not`` dropped, an integer or float constant changed, a ``return`` value replaced by
``None``), the module file is rewritten, the selection runs with ``-x`` and a time limit, and the
file is restored (also on Ctrl-C). A mutant is *killed* when the selection fails or times out.
The score is killed / total; survivors are printed with their line for review.

Why not ``mutmut``: the package is installed editable with a ``package-dir`` mapping
(``flowcert.certificates`` -> ``certificates/``), which ``mutmut`` 3's copied ``mutants/`` tree
is not imported through; this script mutates in place and always restores.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")

#: name -> (module file, functions (empty: every function), pytest arguments)
TARGETS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "continuity": ("certificates/continuity.py", (), ("tests/test_hostile.py", "-k",
                   "continu or domains or sqrt or pole or polynomials or cbrt or enclosed")),
    "inverse_bounds": ("certificates/gaussian.py", ("_inverse_bounds",),
                       ("tests/test_certificates_rigour.py", "-k", "inverse")),
    "relu_slope": ("numeric/gaussian/relu.py", ("relu_slope", "_relu_second_moment"), ("tests/test_relu.py",)),
    "particle_study": ("numeric/gaussian/particles.py", ("particle_study",),
                       ("tests/test_mutation_kills.py", "tests/test_integrator_robustness.py", "-k", "particle")),
    "codegen_python": ("symbolic/codegen/python_printer.py", (), ("tests/test_codegen.py",)),
    "regime_blowup": ("flowcert/gaussian/asymptotics.py", ("blowup_bound", "_beta_alpha", "_round_up", "_float"),
                      ("tests/test_certificates_rigour.py", "-k", "blowup")),
    "expressions": ("flowcert/expressions.py", ("_build", "_parse", "_literal", "_bounded"),
                    ("tests/test_hostile.py", "tests/test_params.py")),
}

_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


@dataclass
class Mutant:
    line: int
    what: str
    path: tuple[int, ...]  # index of the node in ast.walk order


def _functions(tree: ast.Module, names: tuple[str, ...]) -> list[ast.AST]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not names or node.name in names):
            out.append(node)
    return out


def _mutations(node: ast.AST) -> list[tuple[str, callable]]:
    muts = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        new = _CMP[type(node.ops[0])]
        muts.append((f"{type(node.ops[0]).__name__} -> {new.__name__}",
                     lambda n, new=new: setattr(n, "ops", [new()])))
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        new = _BIN[type(node.op)]
        muts.append((f"{type(node.op).__name__} -> {new.__name__}", lambda n, new=new: setattr(n, "op", new())))
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        muts.append((f"{type(node.op).__name__} -> {new.__name__}", lambda n, new=new: setattr(n, "op", new())))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        muts.append(("drop not", lambda n: (setattr(n, "op", ast.UAdd()))))
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and not isinstance(node.value, bool):
        v = node.value
        muts.append((f"{v!r} -> {v + 1!r}", lambda n, v=v: setattr(n, "value", v + 1)))
    if isinstance(node, ast.Return) and node.value is not None and not (
            isinstance(node.value, ast.Constant) and node.value.value is None):
        muts.append(("return None", lambda n: setattr(n, "value", ast.Constant(None))))
    return muts


def enumerate_mutants(source: str, functions: tuple[str, ...]) -> list[tuple[Mutant, str]]:
    tree = ast.parse(source)
    inside = set()
    for fn in _functions(tree, functions):
        body = fn.body[1:] if (fn.body and isinstance(fn.body[0], ast.Expr)
                               and isinstance(fn.body[0].value, ast.Constant)) else fn.body  # skip docstrings
        for stmt in body:
            inside.update(id(n) for n in ast.walk(stmt))
    nodes = list(ast.walk(tree))
    out = []
    for k, node in enumerate(nodes):
        if id(node) not in inside:
            continue
        for what, apply in _mutations(node):
            mutated = copy.deepcopy(tree)
            target = list(ast.walk(mutated))[k]
            apply(target)
            ast.fix_missing_locations(mutated)
            out.append((Mutant(getattr(node, "lineno", 0), what, (k,)), ast.unparse(mutated)))
    return out


def _tests_before(tests: tuple[str, ...], commit: str) -> tuple[tuple[str, ...], list[Path]]:
    """The selection with each test file replaced by its version at ``commit`` (written beside it)."""
    out, written = [], []
    for arg in tests:
        if arg.startswith("tests/") and arg.endswith(".py"):
            old = subprocess.run(["git", "show", f"{commit}:{arg}"], cwd=ROOT, capture_output=True, text=True)
            if old.returncode != 0:
                continue  # the file did not exist: no test from it
            copy_path = ROOT / "tests" / f"_before_{Path(arg).name}"
            copy_path.write_text(old.stdout)
            written.append(copy_path)
            out.append(str(copy_path.relative_to(ROOT)))
        else:
            out.append(arg)
    return tuple(out), written


def run_target(name: str, max_mutants: int, seed: int, timeout: float, before: str | None = None) -> dict:
    rel, functions, tests = TARGETS[name]
    written: list[Path] = []
    if before is not None:
        tests, written = _tests_before(tests, before)
        if not any(a.startswith("tests/") for a in tests):
            for w in written:
                w.unlink()
            return {"target": name, "module": rel, "tests_at": before, "mutants": None,
                    "note": "no test file of this selection existed then: every mutant survives"}
    try:
        res = _run(name, rel, functions, tests, max_mutants, seed, timeout)
    finally:
        for w in written:
            w.unlink(missing_ok=True)
    if before is not None:
        res["tests_at"] = before
    return res


def _run(name: str, rel: str, functions: tuple[str, ...], tests: tuple[str, ...], max_mutants: int, seed: int,
         timeout: float) -> dict:
    path = ROOT / rel
    original = path.read_text()
    mutants = enumerate_mutants(original, functions)
    random.Random(seed).shuffle(mutants)
    mutants = mutants[:max_mutants]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    baseline = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout * 3)
    if baseline.returncode != 0:
        return {"target": name, "error": "the test selection fails on the unmutated code",
                "tail": baseline.stdout[-800:]}
    killed, survivors = 0, []
    start = time.monotonic()
    try:
        for m, text in mutants:
            path.write_text(text)
            try:
                r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
                dead = r.returncode != 0
            except subprocess.TimeoutExpired:
                dead = True
            if dead:
                killed += 1
            else:
                line = original.splitlines()[m.line - 1].strip() if m.line else ""
                survivors.append(f"{rel}:{m.line}: {m.what}   [{line[:90]}]")
    finally:
        path.write_text(original)
    n = len(mutants)
    return {"target": name, "module": rel, "mutants": n, "killed": killed, "score": killed / n if n else None,
            "survivors": survivors, "seconds": round(time.monotonic() - start, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=25, help="mutants per target (random sample, fixed seed)")
    ap.add_argument("--only", action="append", choices=sorted(TARGETS), help="targets to run (default all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test run (a timeout kills)")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--before", default=None, metavar="COMMIT",
                    help="run each selection with its test files as they were at COMMIT (mutation score before)")
    args = ap.parse_args()
    results = []
    for name in args.only or sorted(TARGETS):
        res = run_target(name, args.max, args.seed, args.timeout, args.before)
        results.append(res)
        print(json.dumps(res, indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
