r"""Kernels from matrix expressions: a small IR with separate printers (numpy, torch, exact).

A set of outputs :math:`E_k=\sum_j c_{kj}\,X_{kj,1}\cdots X_{kj,m}` (normal forms from
:mod:`flowcert.symbolic.matrix`) is lowered to straight-line code over batched arrays of shape
``(..., r, c)``. Common subexpressions are eliminated at the level of matrix products:

* every chain is evaluated left to right and each prefix product is computed once;
* a chain whose transpose was already computed costs one transpose,
  using :math:`(XY)^\top=Y^\top X^\top` and :math:`S^\top=S` for symmetric symbols;
* a product ending in a vector is applied right to left after its longest matrix prefix,
  so that matrix-vector work stays :math:`O(d^2)`.

Vectors (``d x 1`` symbols) take shape ``(..., d)`` at the kernel boundary. The printers only
emit ``@``, ``+``, scalar products and a batch-safe transpose, so numpy kernels broadcast over a
leading batch axis and torch kernels keep autograd and run on any device.
"""

from __future__ import annotations

import hashlib
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy as sp

from .matrix import Chain, Poly, Relations, normal_form, transpose_chain


@dataclass(frozen=True)
class Op:
    """One assignment ``target = op(args)``; ``op`` in {matmul, transpose, linear}."""

    target: str
    op: str
    args: tuple[str, ...]
    coeffs: tuple[sp.Expr, ...] = ()


@dataclass
class Program:
    """Straight-line program: inputs, assignments, outputs (in the order given)."""

    name: str
    inputs: tuple[sp.MatrixSymbol, ...]
    ops: list[Op] = field(default_factory=list)
    outputs: tuple[str, ...] = ()
    output_names: tuple[str, ...] = ()
    output_is_vector: tuple[bool, ...] = ()
    doc: str = ""

    @property
    def vector_inputs(self) -> set[str]:
        return {s.name for s in self.inputs if s.shape[1] == 1}

    def digest(self) -> str:
        """Hash of the program, for on-disk caches."""
        text = repr((self.name, [s.name for s in self.inputs], self.ops, self.outputs))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Lowering:
    def __init__(self, program: Program, rel: Relations) -> None:
        self.p = program
        self.rel = rel
        self.memo: dict[Chain, str] = {}
        self.counter = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"x{self.counter - 1}"

    def emit(self, op: str, args: tuple[str, ...], coeffs: tuple[sp.Expr, ...] = ()) -> str:
        target = self.fresh()
        self.p.ops.append(Op(target, op, args, coeffs))
        return target

    def atom(self, a: sp.MatrixExpr) -> str:
        key = (a,)
        if key in self.memo:
            return self.memo[key]
        if isinstance(a, sp.Transpose):
            name = self.emit("transpose", (self.atom(a.arg),))
        else:
            name = a.name
        self.memo[key] = name
        return name

    def lookup(self, chain: Chain) -> str | None:
        if chain in self.memo:
            return self.memo[chain]
        tr = transpose_chain(chain, self.rel)
        if tr in self.memo and len(chain) > 1:
            name = self.emit("transpose", (self.memo[tr],))
            self.memo[chain] = name
            return name
        return None

    def matrix_chain(self, chain: Chain) -> str:
        """Left-associated product with every prefix memoised."""
        if len(chain) == 1:
            return self.atom(chain[0])
        hit = self.lookup(chain)
        if hit is not None:
            return hit
        name = self.emit("matmul", (self.matrix_chain(chain[:-1]), self.atom(chain[-1])))
        self.memo[chain] = name
        return name

    def chain(self, chain: Chain) -> str:
        if chain[-1].shape[1] != 1:
            return self.matrix_chain(chain)
        hit = self.lookup(chain)
        if hit is not None:
            return hit
        # longest memoised matrix prefix, then right-to-left matrix-vector products
        split = max((k for k in range(1, len(chain)) if chain[:k] in self.memo), default=0)
        acc = self.atom(chain[-1])
        for k in range(len(chain) - 2, split - 1, -1):
            acc = self.emit("matmul", (self.atom(chain[k]), acc))
        if split:
            acc = self.emit("matmul", (self.memo[chain[:split]], acc))
        self.memo[chain] = acc
        return acc

    def output(self, poly: Poly) -> str:
        # matrix-only chains first, longest first, so their prefixes serve the vector chains
        order = sorted(poly, key=lambda c: (c[-1].shape[1] == 1, -len(c), str(c)))
        names = [self.chain(c) for c in order]
        return self.emit("linear", tuple(names), tuple(poly[c] for c in order))


def lower(
    name: str,
    outputs: Sequence[tuple[str, sp.MatrixExpr]],
    inputs: Sequence[sp.MatrixSymbol],
    rel: Relations = Relations(),
    doc: str = "",
) -> Program:
    """Lower named matrix expressions to a :class:`Program`.

    Parameters
    ----------
    name : str
        Function name of the generated kernel.
    outputs : sequence of (str, MatrixExpr)
        Output names and expressions, polynomial in ``inputs``.
    inputs : sequence of MatrixSymbol
        Kernel arguments, in order. ``d x 1`` symbols are vectors of shape ``(..., d)``.
    rel : Relations
        Symmetric inputs (their transposes are free) and inverse pairs.
    """
    program = Program(name, tuple(inputs), doc=doc)
    low = _Lowering(program, rel)
    results = []
    for out_name, expr in outputs:
        poly = normal_form(expr, rel)
        if () in poly:
            raise ValueError("identity terms are not supported in kernels")
        if not poly:
            raise ValueError(f"output {out_name!r} is identically zero; nothing to compute")
        results.append(low.output(poly))
    program.outputs = tuple(results)
    program.output_names = tuple(n for n, _ in outputs)
    program.output_is_vector = tuple(e.shape[1] == 1 for _, e in outputs)
    return program


# ---------------------------------------------------------------------------------------
# Printers
# ---------------------------------------------------------------------------------------


def _number(c: sp.Expr) -> str:
    c = sp.nsimplify(c)
    if not c.is_number:
        raise ValueError(f"coefficient {c} is not a number")
    return repr(float(c)) if not c.is_Integer else str(int(c))


class PythonArrayPrinter:
    """Prints a :class:`Program` as a Python function over numpy-like arrays."""

    module = "numpy"
    header = "import numpy as np"

    def transpose(self, x: str) -> str:
        return f"np.swapaxes({x}, -1, -2)"

    def unsqueeze(self, x: str) -> str:
        return f"{x}[..., None]"

    def squeeze(self, x: str) -> str:
        return f"{x}[..., 0]"

    def linear(self, args: tuple[str, ...], coeffs: tuple[sp.Expr, ...]) -> str:
        parts = []
        for a, c in zip(args, coeffs):
            num = _number(c)
            term = a if num == "1" else (f"-{a}" if num == "-1" else f"{num} * {a}")
            parts.append(term)
        return " + ".join(parts).replace("+ -", "- ")

    def print(self, program: Program) -> str:
        args = ", ".join(s.name for s in program.inputs)
        lines = [f"def {program.name}({args}):"]
        doc = program.doc or f"Generated by flowcert from SymPy expressions ({program.digest()})."
        lines.append(textwrap.indent(f'"""{doc}"""', "    "))
        for v in sorted(program.vector_inputs):
            lines.append(f"    {v} = {self.unsqueeze(v)}")
        for op in program.ops:
            if op.op == "matmul":
                rhs = f"{op.args[0]} @ {op.args[1]}"
            elif op.op == "transpose":
                rhs = self.transpose(op.args[0])
            else:
                rhs = self.linear(op.args, op.coeffs)
            lines.append(f"    {op.target} = {rhs}")
        outs = [
            self.squeeze(o) if vec else o for o, vec in zip(program.outputs, program.output_is_vector)
        ]
        lines.append(f"    return {', '.join(outs)}{',' if len(outs) == 1 else ''}")
        return "\n".join(lines) + "\n"

    def source(self, program: Program) -> str:
        """A self-contained module: import line plus the function."""
        return f"{self.header}\n\n\n{self.print(program)}"

    def compile(self, program: Program) -> Callable[..., Any]:
        """Execute the generated source and return the function."""
        namespace: dict[str, Any] = {}
        exec(compile(self.source(program), f"<flowcert:{program.name}:{self.module}>", "exec"), namespace)
        return namespace[program.name]


class NumpyPrinter(PythonArrayPrinter):
    """numpy backend: ``@`` is ``np.matmul`` (batch-safe, unlike SymPy's ``.dot``)."""


class TorchPrinter(PythonArrayPrinter):
    """torch backend: differentiable, device-agnostic (``.mT`` is the batched transpose)."""

    module = "torch"
    header = "import torch"

    def transpose(self, x: str) -> str:
        return f"{x}.mT"


def evaluate(program: Program, values: dict[str, Any], ops: "MatrixOps") -> tuple[Any, ...]:
    """Interpret a program with an arbitrary exact or interval matrix arithmetic ``ops``."""
    env = dict(values)
    for op in program.ops:
        if op.op == "matmul":
            env[op.target] = ops.matmul(env[op.args[0]], env[op.args[1]])
        elif op.op == "transpose":
            env[op.target] = ops.transpose(env[op.args[0]])
        else:
            env[op.target] = ops.linear([env[a] for a in op.args], list(op.coeffs))
    return tuple(env[o] for o in program.outputs)


class MatrixOps:
    """Exact arithmetic on ``sympy.Matrix`` (rational entries) for :func:`evaluate`."""

    @staticmethod
    def matmul(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
        return a * b

    @staticmethod
    def transpose(a: sp.Matrix) -> sp.Matrix:
        return a.T

    @staticmethod
    def linear(args: list[sp.Matrix], coeffs: list[sp.Expr]) -> sp.Matrix:
        out = sp.nsimplify(coeffs[0]) * args[0]
        for a, c in zip(args[1:], coeffs[1:]):
            out = out + sp.nsimplify(c) * a
        return out


class CPrinter:
    """C99 backend: one loop over the batch, naive ``d x d`` products, every temporary in one
    scratch buffer. Arguments are ``(batch, d, in_0, stride_0, ..., out_0, ...)``; a stride of
    0 broadcasts an input over the batch. Vectors are ``d x 1`` matrices."""

    def _shape(self, program: Program) -> dict[str, bool]:
        """Name -> is_vector for inputs and temporaries."""
        vec = {s.name: s.shape[1] == 1 for s in program.inputs}
        for op in program.ops:
            if op.op == "matmul":
                vec[op.target] = vec[op.args[1]]
            elif op.op == "transpose":
                vec[op.target] = False
            else:
                vec[op.target] = vec[op.args[0]]
        return vec

    def print(self, program: Program) -> str:
        vec = self._shape(program)
        ins = [s.name for s in program.inputs]
        params = ["long batch", "long d"] + [f"const double *{n}_in, long {n}_stride" for n in ins]
        params += [f"double *{n}_out" for n in program.output_names]
        temps = [op.target for op in program.ops]
        size = lambda n: "d" if vec[n] else "d * d"  # noqa: E731
        lines = [f"/* {program.doc or 'Generated by flowcert'} ({program.digest()}) */",
                 "#include <stdlib.h>", "#include <string.h>", "",
                 f"int {program.name}({', '.join(params)})", "{"]
        offsets, total = [], "0"
        for t in temps:
            offsets.append(f"    double *{t};")
        lines += offsets
        lines.append(f"    double *scratch = malloc(sizeof(double) * ({' + '.join(size(t) for t in temps) or '1'}));")
        lines.append("    if (!scratch) return 1;")
        cursor = "scratch"
        for t in temps:
            lines.append(f"    {t} = {cursor};")
            cursor = f"{t} + {size(t)}"
        lines.append("    for (long s = 0; s < batch; ++s) {")
        for n in ins:
            lines.append(f"        const double *{n} = {n}_in + s * {n}_stride;")
        for op in program.ops:
            lines += ["        " + ln for ln in self._op(op, vec)]
        for name, out in zip(program.output_names, program.outputs):
            lines.append(f"        memcpy({name}_out + s * {size(out)}, {out}, sizeof(double) * {size(out)});")
        lines += ["    }", "    free(scratch);", "    return 0;", "}"]
        return "\n".join(lines) + "\n"

    def _op(self, op: Op, vec: dict[str, bool]) -> list[str]:
        t = op.target
        if op.op == "matmul":
            a, b = op.args
            cols = "1" if vec[b] else "d"
            return [f"for (long i = 0; i < d; ++i) for (long j = 0; j < {cols}; ++j) {{",
                    "    double acc = 0.0;",
                    f"    for (long k = 0; k < d; ++k) acc += {a}[i * d + k] * {b}[k * {cols} + j];",
                    f"    {t}[i * {cols} + j] = acc;", "}"]
        if op.op == "transpose":
            (a,) = op.args
            return [f"for (long i = 0; i < d; ++i) for (long j = 0; j < d; ++j) {t}[i * d + j] = {a}[j * d + i];"]
        n = "d" if vec[op.args[0]] else "d * d"
        expr = " + ".join(f"({float(sp.nsimplify(c))!r}) * {a}[i]" for a, c in zip(op.args, op.coeffs))
        return [f"for (long i = 0; i < {n}; ++i) {t}[i] = {expr};"]
