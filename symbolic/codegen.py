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

Beyond polynomials, :func:`lower_expressions` also lowers row-wise softmax, row-wise dot
products, row scaling :math:`\operatorname{diag}(v)A` and elementwise scalar maps given as SymPy
expressions (``Max``, ``Min``, ``Piecewise``, ``exp``, ``tanh`` ...), each map printed after a scalar
CSE; matrices may then have any symbolic shapes (``n x d`` tokens, ``n x n`` scores), and
:class:`ShapedCPrinter` is the C backend for such programs.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy as sp
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

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
        for dim, (arg, axis) in _map_dimensions(program).items():
            lines.append(f"    {dim} = {arg}.shape[{axis - 2}]")
        for op in program.ops:
            if op.op in NONPOLYNOMIAL_OPS:
                lines += [f"    {line}" for line in getattr(self, op.op)(op)]
                continue
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

    # elementwise ops (see "Beyond polynomials" below); each returns source lines

    def scalar_code(self, arrays: set[sp.Symbol], ref: str) -> "ScalarCode":
        return NumpyScalarCode(arrays, ref)

    def map(self, op: Op) -> list[str]:
        return _print_map(op, self.scalar_code, lambda ref, value: f"np.full_like({ref}, {value})")

    def softmax_rows(self, op: Op) -> list[str]:
        (a,), t = op.args, op.target
        # fmax.reduce: the same row maximum for softmax purposes (a NaN row stays NaN either
        # way), and numpy vectorises it where maximum.reduce over a short last axis is slow
        return [f"{t} = {a} - np.fmax.reduce({a}, axis=-1, keepdims=True)",
                f"np.exp({t}, out={t})",
                f"{t} /= np.sum({t}, axis=-1, keepdims=True)"]

    def rowdot(self, op: Op) -> list[str]:
        a, b = op.args
        return [f"{op.target} = np.einsum('...ij,...ij->...i', {a}, {b})[..., None]"]

    def scale_rows(self, op: Op) -> list[str]:
        v, a = op.args
        return [f"{op.target} = {v} * {a}"]


class NumpyPrinter(PythonArrayPrinter):
    """numpy backend: ``@`` is ``np.matmul`` (batch-safe, unlike SymPy's ``.dot``)."""


class TorchPrinter(PythonArrayPrinter):
    """torch backend: differentiable, device-agnostic (``.mT`` is the batched transpose)."""

    module = "torch"
    header = "import torch"

    def transpose(self, x: str) -> str:
        return f"{x}.mT"

    def scalar_code(self, arrays: set[sp.Symbol], ref: str) -> "ScalarCode":
        return TorchScalarCode(arrays, ref)

    def map(self, op: Op) -> list[str]:
        return _print_map(op, self.scalar_code, lambda ref, value: f"torch.full_like({ref}, {value})")

    def softmax_rows(self, op: Op) -> list[str]:
        # torch's softmax subtracts the row maximum internally and has a fused backward
        return [f"{op.target} = torch.softmax({op.args[0]}, dim=-1)"]

    def rowdot(self, op: Op) -> list[str]:
        a, b = op.args
        return [f"{op.target} = torch.sum({a} * {b}, dim=-1, keepdim=True)"]


def evaluate(program: Program, values: dict[str, Any], ops: "MatrixOps") -> tuple[Any, ...]:
    """Interpret a program with an arbitrary exact or interval matrix arithmetic ``ops``."""
    env = dict(values)
    for op in program.ops:
        if op.op == "matmul":
            env[op.target] = ops.matmul(env[op.args[0]], env[op.args[1]])
        elif op.op == "transpose":
            env[op.target] = ops.transpose(env[op.args[0]])
        elif op.op in NONPOLYNOMIAL_OPS:
            env[op.target] = _evaluate_elementwise(program, op, env, values, ops)
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

    @staticmethod
    def map(function: sp.Lambda, *args: sp.Matrix) -> sp.Matrix:
        rows, cols = args[0].shape
        return sp.Matrix(rows, cols, lambda i, j: function(*(a[i, j] for a in args)))

    @staticmethod
    def softmax_rows(a: sp.Matrix) -> sp.Matrix:
        rows, cols = a.shape
        return sp.Matrix(rows, cols, lambda i, j: sp.exp(a[i, j]) / sum(sp.exp(a[i, k]) for k in range(cols)))

    @staticmethod
    def rowdot(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
        return sp.Matrix(a.rows, 1, lambda i, _: sum(a[i, k] * b[i, k] for k in range(a.cols)))

    @staticmethod
    def scale_rows(v: sp.Matrix, a: sp.Matrix) -> sp.Matrix:
        return sp.Matrix(a.rows, a.cols, lambda i, j: v[i, 0] * a[i, j])


# ---------------------------------------------------------------------------------------
# Beyond polynomials: elementwise maps, row-wise softmax, row-wise dot products
# ---------------------------------------------------------------------------------------
#
# Four more ops, each acting on whole arrays:
#
#   map           target = f(a, b, ...) entry by entry, f a sympy.Lambda (coeffs == (f,)); its
#                 free symbols may only be dimensions of the inputs (bound from their shapes)
#   softmax_rows  target_ij = exp(a_ij - max_l a_il) / sum_k exp(a_ik - max_l a_il)
#   rowdot        target_i = sum_k a_ik b_ik                      (a column, shape (..., r, 1))
#   scale_rows    target_ij = v_i a_ij, i.e. diag(v) a            (v a column)
#
# They are reached from matrix expressions built with the nodes below, SymPy's
# ``DiagMatrix(v) * A`` (row scaling), ``HadamardProduct`` and ``A.applyfunc(Lambda)``.

NONPOLYNOMIAL_OPS = ("map", "softmax_rows", "rowdot", "scale_rows")


class SoftmaxRows(sp.MatrixExpr):
    r"""Row-wise softmax, :math:`\operatorname{softmax}(S)_{ij}=e^{S_{ij}}/\sum_l e^{S_{il}}`
    (every row sums to 1)."""

    def __new__(cls, arg: sp.MatrixExpr) -> "SoftmaxRows":
        return super().__new__(cls, sp.sympify(arg))

    @property
    def arg(self) -> sp.MatrixExpr:
        return self.args[0]

    @property
    def shape(self) -> tuple[sp.Expr, sp.Expr]:
        return self.arg.shape

    def _entry(self, i: Any, j: Any, **kwargs: Any) -> sp.Expr:
        row = [self.arg[i, k] for k in range(self.shape[1])]
        return sp.exp(self.arg[i, j]) / sp.Add(*map(sp.exp, row))

    def _latex(self, printer: Any) -> str:
        return rf"\operatorname{{softmax}}_{{\mathrm{{rows}}}}\left({printer._print(self.arg)}\right)"


class RowDot(sp.MatrixExpr):
    r"""Row-wise dot products as a column, :math:`\operatorname{rowdot}(A,B)_i=\sum_k A_{ik}B_{ik}`."""

    def __new__(cls, a: sp.MatrixExpr, b: sp.MatrixExpr) -> "RowDot":
        a, b = sp.sympify(a), sp.sympify(b)
        if a.shape != b.shape:
            raise ValueError(f"rowdot of shapes {a.shape} and {b.shape}")
        return super().__new__(cls, a, b)

    @property
    def shape(self) -> tuple[sp.Expr, sp.Expr]:
        return (self.args[0].shape[0], sp.Integer(1))

    def _entry(self, i: Any, j: Any, **kwargs: Any) -> sp.Expr:
        a, b = self.args
        return sp.Add(*(a[i, k] * b[i, k] for k in range(a.shape[1])))

    def _latex(self, printer: Any) -> str:
        a, b = (printer._print(x) for x in self.args)
        return rf"\operatorname{{rowdot}}\left({a}, {b}\right)"


class ElementwiseMap(sp.MatrixExpr):
    r"""A scalar function applied entry by entry: :math:`f(A,B,\dots)_{ij}=f(A_{ij},B_{ij},\dots)`."""

    def __new__(cls, function: sp.Lambda, *args: sp.MatrixExpr) -> "ElementwiseMap":
        args = tuple(sp.sympify(a) for a in args)
        if not args or len(function.variables) != len(args):
            raise ValueError(f"{function} takes {len(function.variables)} arguments, got {len(args)}")
        if any(a.shape != args[0].shape for a in args):
            raise ValueError("elementwise arguments must share one shape")
        return super().__new__(cls, function, *args)

    @property
    def function(self) -> sp.Lambda:
        return self.args[0]

    @property
    def shape(self) -> tuple[sp.Expr, sp.Expr]:
        return self.args[1].shape

    def _entry(self, i: Any, j: Any, **kwargs: Any) -> sp.Expr:
        return self.function(*(a[i, j] for a in self.args[1:]))


class _GraphLowering(_Lowering):
    """Lowering of expressions that mix polynomial parts with the nodes above.

    Non-polynomial nodes are lowered innermost first and replaced by a ``MatrixSymbol`` named
    after their target, so what remains is polynomial and goes through the chain memo of
    :class:`_Lowering`; identical nodes (and identical scaled chains) are computed once.
    """

    def __init__(self, program: Program, rel: Relations) -> None:
        super().__init__(program, rel)
        self.nodes: dict[sp.Basic, sp.MatrixSymbol] = {}
        self.scaled: dict[tuple[Chain, sp.Expr], str] = {}

    def temporary(self, op: str, args: tuple[str, ...], coeffs: tuple[sp.Expr, ...], shape: Any) -> sp.MatrixSymbol:
        return sp.MatrixSymbol(self.emit(op, args, coeffs), *shape)

    def flatten(self, e: sp.Basic) -> sp.Basic:
        """``e`` with every non-polynomial node replaced by a temporary."""
        if not e.args or isinstance(e, sp.MatrixSymbol):
            return e
        if e in self.nodes:
            return self.nodes[e]
        if isinstance(e, SoftmaxRows):
            t = self.temporary("softmax_rows", (self.value(e.arg),), (), e.shape)
        elif isinstance(e, RowDot):
            t = self.temporary("rowdot", tuple(self.value(a) for a in e.args), (), e.shape)
        elif isinstance(e, ElementwiseMap):
            t = self.temporary("map", tuple(self.value(a) for a in e.args[1:]), (e.function,), e.shape)
        elif isinstance(e, ElementwiseApplyFunction):
            f = e.function if isinstance(e.function, sp.Lambda) else sp.Lambda((u := sp.Dummy("u"),), e.function(u))
            t = self.temporary("map", (self.value(e.expr),), (f,), e.shape)
        elif isinstance(e, sp.HadamardProduct):
            us = sp.symbols(f"u:{len(e.args)}", cls=sp.Dummy)
            t = self.temporary("map", tuple(self.value(a) for a in e.args), (sp.Lambda(us, sp.Mul(*us)),), e.shape)
        elif isinstance(e, sp.DiagMatrix):
            raise ValueError("diag(v) is supported only as a left factor, diag(v) * A (row scaling)")
        elif isinstance(e, sp.MatMul) and any(isinstance(f, sp.DiagMatrix) for f in e.args):
            coeff, factors = e.as_coeff_matrices()
            k = next(i for i, f in enumerate(factors) if isinstance(f, sp.DiagMatrix))
            rest = factors[k + 1:]
            if not rest:
                raise ValueError("diag(v) is supported only as a left factor, diag(v) * A (row scaling)")
            right = rest[0] if len(rest) == 1 else sp.MatMul(*rest)
            key = sp.MatMul(factors[k], right)
            if key not in self.nodes:
                args = (self.value(factors[k].args[0]), self.value(right))
                self.nodes[key] = self.temporary("scale_rows", args, (), right.shape)
            return self.flatten(coeff * sp.MatMul(*factors[:k], self.nodes[key])) if k else coeff * self.nodes[key]
        else:
            return e.func(*(self.flatten(a) for a in e.args))
        self.nodes[e] = t
        return t

    def scaled_chain(self, chain: Chain, c: sp.Expr) -> str:
        """``c * chain`` for a coefficient that is not a number (a function of dimensions)."""
        if (chain, c) not in self.scaled:
            u = sp.Dummy("u")
            self.scaled[(chain, c)] = self.emit("map", (self.chain(chain),), (sp.Lambda((u,), c * u),))
        return self.scaled[(chain, c)]

    def value(self, e: sp.MatrixExpr) -> str:
        """Name of an array holding ``e``; emits what is not computed yet."""
        flat = self.flatten(e)
        if isinstance(flat, sp.MatrixSymbol):
            return flat.name
        poly = normal_form(flat, self.rel)
        if () in poly:
            raise ValueError("identity terms are not supported in kernels")
        if not poly:
            raise ValueError(f"{e} is identically zero; nothing to compute")
        order = sorted(poly, key=lambda c: (c[-1].shape[1] == 1, -len(c), str(c)))
        names = [self.chain(c) if poly[c].is_number else self.scaled_chain(c, poly[c]) for c in order]
        coeffs = tuple(poly[c] if poly[c].is_number else sp.Integer(1) for c in order)
        if coeffs == (1,):
            return names[0]
        return self.emit("linear", tuple(names), coeffs)


def lower_expressions(
    name: str,
    outputs: Sequence[tuple[str, sp.MatrixExpr]],
    inputs: Sequence[sp.MatrixSymbol],
    rel: Relations = Relations(),
    doc: str = "",
) -> Program:
    """Lower named matrix expressions that may contain :class:`SoftmaxRows`, :class:`RowDot`,
    :class:`ElementwiseMap` (or ``applyfunc``/``HadamardProduct``) and row scalings
    ``DiagMatrix(v) * A``. Matrices may have any symbolic shapes (for example ``n x d`` tokens and
    ``n x n`` scores); coefficients may be functions of those dimensions.

    Same parameters as :func:`lower`. Polynomial outputs lower to the same ops as with :func:`lower`,
    except that an output equal to a single chain with coefficient 1 gets no final copy.
    """
    names = {s.name for s in inputs}
    dims = {x for s in inputs for x in sp.Tuple(*s.shape).free_symbols}
    clash = [s for s in names if _TEMPORARY.fullmatch(s)] + [str(x) for x in dims if str(x) in names]
    if clash:
        raise ValueError(f"input names {clash} clash with temporaries or dimensions")
    program = Program(name, tuple(inputs), doc=doc)
    low = _GraphLowering(program, rel)
    program.outputs = tuple(low.value(expr) for _, expr in outputs)
    program.output_names = tuple(n for n, _ in outputs)
    program.output_is_vector = tuple(e.shape[1] == 1 for _, e in outputs)
    for op in program.ops:
        if op.op == "map" and not op.coeffs[0].free_symbols <= dims:
            raise ValueError(f"map {op.coeffs[0]} has free symbols that are not dimensions of the inputs; "
                             "fold scalar parameters into a matrix input")
    return program


_TEMPORARY = re.compile(r"x\d+")


def shapes(program: Program) -> dict[str, tuple[sp.Expr, sp.Expr]]:
    """Symbolic shape of every input and temporary of a program."""
    shape = {s.name: tuple(s.shape) for s in program.inputs}
    for op in program.ops:
        a = shape[op.args[0]]
        if op.op == "matmul":
            shape[op.target] = (a[0], shape[op.args[1]][1])
        elif op.op == "transpose":
            shape[op.target] = (a[1], a[0])
        elif op.op == "rowdot":
            shape[op.target] = (a[0], sp.Integer(1))
        elif op.op == "scale_rows":
            shape[op.target] = shape[op.args[1]]
        else:
            shape[op.target] = a
    return shape


def _dimension_sources(program: Program) -> dict[sp.Symbol, tuple[str, int]]:
    """Each dimension symbol -> (an input of that size along an axis, the axis)."""
    out: dict[sp.Symbol, tuple[str, int]] = {}
    for s in program.inputs:
        for axis, size in enumerate(s.shape):
            if isinstance(size, sp.Symbol):
                out.setdefault(size, (s.name, axis))
    return out


def _map_dimensions(program: Program) -> dict[sp.Symbol, tuple[str, int]]:
    """The dimensions that elementwise maps use, with where to read them."""
    used = set().union(*(op.coeffs[0].free_symbols for op in program.ops if op.op == "map"))
    return {x: src for x, src in sorted(_dimension_sources(program).items(), key=str) if x in used}


def _evaluate_elementwise(program: Program, op: Op, env: dict[str, Any], values: dict[str, Any], ops: Any) -> Any:
    args = [env[a] for a in op.args]
    if op.op != "map":
        return getattr(ops, op.op)(*args)
    dims = {x: values[name].shape[axis] for x, (name, axis) in _map_dimensions(program).items()}
    f = op.coeffs[0]
    return ops.map(sp.Lambda(f.variables, f.expr.subs(dims)), *args)


# ---------------------------------------------------------------------------------------
# Scalar expressions inside a map: one printer per backend
# ---------------------------------------------------------------------------------------


def _scalar_map(op: Op) -> tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Expr, set[sp.Symbol]]:
    """Body of a map in the names of its arguments, after scalar CSE (``sympy.cse``)."""
    f = op.coeffs[0]
    args = [sp.Symbol(a) for a in op.args]
    body = f.expr.xreplace(dict(zip(f.variables, args)))
    temps, (body,) = sp.cse([body], symbols=sp.numbered_symbols(f"{op.target}_"))
    return temps, body, set(args)


def _print_map(op: Op, code_for: Callable[[set[sp.Symbol], str], "ScalarCode"], full_like: Callable[[str, str], str]) -> list[str]:
    temps, body, arrays = _scalar_map(op)
    code = code_for(arrays, op.args[0])
    lines = []
    for sym, expr in temps:
        if code.is_array(expr):
            arrays.add(sym)
        lines.append(f"{sym} = {code(expr)}")
    value = code(body)
    lines.append(f"{op.target} = {value if code.is_array(body) else full_like(op.args[0], value)}")
    return lines


class ScalarCode:
    """A scalar SymPy expression as source text of one backend, fully parenthesised.

    ``arrays`` are the symbols that hold arrays (the others, such as dimensions, are plain
    numbers); ``ref`` names an array argument, for backends that must build constants like it.
    """

    functions: dict[str, str] = {}
    logic = {"And": " & ", "Or": " | "}

    def __init__(self, arrays: set[sp.Symbol], ref: str = "") -> None:
        self.arrays = arrays
        self.ref = ref

    def is_array(self, e: sp.Basic) -> bool:
        return bool(e.free_symbols & self.arrays)

    def __call__(self, e: sp.Basic) -> str:
        if e.is_Symbol:
            return self.symbol(e)
        if e is sp.true or e is sp.false:
            return self.boolean(bool(e))
        if e is sp.nan:
            return self.nan()
        if e.is_Number:
            return self.number(e)
        if e.is_NumberSymbol:  # pi, E, ...
            return self.number(sp.Float(e, 17))
        if e.is_Add:
            text = self(e.args[0])
            for term in e.args[1:]:
                text += f" - {self(-term)}" if term.could_extract_minus_sign() else f" + {self(term)}"
            return f"({text})"
        if e.is_Mul:
            return self.product(e)
        if e.is_Pow:
            return self.power(e.base, e.exp)
        if isinstance(e, (sp.Max, sp.Min)):
            return self.extremum(e)
        if isinstance(e, sp.Piecewise):
            return self.piecewise(list(e.args))
        if isinstance(e, sp.core.relational.Relational):
            return f"({self(e.lhs)} {e.rel_op} {self(e.rhs)})"
        if isinstance(e, (sp.And, sp.Or)):
            return "(" + self.logic[type(e).__name__].join(self(a) for a in e.args) + ")"
        if isinstance(e, sp.Not):
            return self.negation(e.args[0])
        name = type(e).__name__
        if name in self.functions:
            return f"{self.functions[name]}({', '.join(self(a) for a in e.args)})"
        raise NotImplementedError(f"no {type(self).__name__} rule for {name} in {e}")

    def symbol(self, e: sp.Symbol) -> str:
        return e.name

    def number(self, e: sp.Number) -> str:
        """A float literal (integers too, so that constant branches keep a float dtype)."""
        text = self.infinity() if e.is_infinite else repr(float(abs(e)))
        return f"(-{text})" if e < 0 else text

    def infinity(self) -> str:
        return "float('inf')"

    def product(self, e: sp.Mul) -> str:
        coeff, factors = e.as_coeff_mul()
        den = [f.base ** -f.exp for f in factors if f.is_Pow and f.exp.is_number and f.exp < 0]
        num = [self(f) for f in factors if not (f.is_Pow and f.exp.is_number and f.exp < 0)]
        if abs(coeff) != 1 or not num:
            num.insert(0, self(abs(coeff)))
        text = num[0] if len(num) == 1 else "(" + " * ".join(num) + ")"
        if den:
            text = f"({text} / {self(den[0]) if len(den) == 1 else '(' + ' * '.join(map(self, den)) + ')'})"
        return f"(-{text})" if coeff < 0 else text

    def power(self, base: sp.Expr, exp: sp.Expr) -> str:
        if exp.is_number and exp < 0:
            return f"({self(sp.Integer(1))} / {self(base ** -exp)})"
        if exp == sp.Rational(1, 2):
            return self.sqrt(base)
        return self.pow(base, exp)

    def sqrt(self, base: sp.Expr) -> str:
        return f"({self(base)} ** 0.5)"

    def pow(self, base: sp.Expr, exp: sp.Expr) -> str:
        return f"({self(base)} ** {int(exp) if exp.is_Integer else self(exp)})"

    def extremum(self, e: sp.Expr) -> str:
        raise NotImplementedError

    def piecewise(self, arms: list[tuple[sp.Expr, sp.Expr]]) -> str:
        """First arm whose condition holds; NaN where none does (SymPy's meaning)."""
        if arms[-1][1] is not sp.true:
            arms = arms + [(sp.nan, sp.true)]
        (value, cond), rest = arms[0], arms[1:]
        otherwise = rest[0][0] if len(rest) == 1 else sp.Piecewise(*rest, evaluate=False)
        return self.where(cond, value, otherwise)

    def where(self, cond: sp.Expr, a: sp.Expr, b: sp.Expr) -> str:
        raise NotImplementedError

    def boolean(self, value: bool) -> str:
        return str(value)

    def nan(self) -> str:
        return "float('nan')"

    def negation(self, e: sp.Expr) -> str:
        return f"(~{self(e)})" if self.is_array(e) else f"(not {self(e)})"


_ELEMENTARY = ("exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "floor")


class NumpyScalarCode(ScalarCode):
    """numpy: ``np.maximum``/``np.minimum`` for Max/Min, ``np.where`` for Piecewise."""

    functions = {**{f: f"np.{f}" for f in _ELEMENTARY}, "Abs": "np.abs", "sign": "np.sign", "ceiling": "np.ceil"}

    def sqrt(self, base: sp.Expr) -> str:
        return f"np.sqrt({self(base)})"

    def extremum(self, e: sp.Expr) -> str:
        fn = "np.maximum" if isinstance(e, sp.Max) else "np.minimum"
        text = self(e.args[0])
        for a in e.args[1:]:
            text = f"{fn}({text}, {self(a)})"
        return text

    def where(self, cond: sp.Expr, a: sp.Expr, b: sp.Expr) -> str:
        if not self.is_array(cond):
            return f"({self(a)} if {self(cond)} else {self(b)})"
        return f"np.where({self(cond)}, {self(a)}, {self(b)})"

    def nan(self) -> str:
        return "np.nan"


class TorchScalarCode(ScalarCode):
    """torch: ``torch.maximum`` between tensors, ``torch.clamp`` against numbers (``torch.maximum``
    takes tensors only), ``torch.where`` with constants made as 0-d tensors of the argument's
    dtype and device. Functions of dimensions alone are not supported."""

    functions = {**{f: f"torch.{f}" for f in _ELEMENTARY}, "Abs": "torch.abs", "sign": "torch.sign",
                 "ceiling": "torch.ceil", "erf": "torch.erf"}

    def __call__(self, e: sp.Basic) -> str:
        if type(e).__name__ in self.functions and not self.is_array(e):
            raise NotImplementedError(f"torch kernels compute functions of arrays only, not {e}")
        return super().__call__(e)

    def sqrt(self, base: sp.Expr) -> str:
        return f"torch.sqrt({self(base)})" if self.is_array(base) else f"({self(base)} ** 0.5)"

    def extremum(self, e: sp.Expr) -> str:
        is_max = isinstance(e, sp.Max)
        tensors = [self(a) for a in e.args if self.is_array(a)]
        numbers = [self(a) for a in e.args if not self.is_array(a)]
        if not tensors:
            return f"{'max' if is_max else 'min'}({', '.join(numbers)})"
        text = tensors[0]
        for a in tensors[1:]:
            text = f"torch.{'maximum' if is_max else 'minimum'}({text}, {a})"
        if numbers:
            bound = numbers[0] if len(numbers) == 1 else f"{'max' if is_max else 'min'}({', '.join(numbers)})"
            text = f"torch.clamp({text}, {'min' if is_max else 'max'}={bound})"
        return text

    def where(self, cond: sp.Expr, a: sp.Expr, b: sp.Expr) -> str:
        if not self.is_array(cond):
            return f"({self(a)} if {self(cond)} else {self(b)})"
        ta, tb = (self(x) if self.is_array(x) else f"{self.ref}.new_tensor({self(x)})" for x in (a, b))
        return f"torch.where({self(cond)}, {ta}, {tb})"


class CScalarCode(ScalarCode):
    """C99 (``math.h``): ``fmax``/``fmin``, the ternary operator, double literals throughout;
    an array argument ``a`` is read as ``a[i]``."""

    functions = {**{f: f for f in _ELEMENTARY}, "Abs": "fabs", "ceiling": "ceil", "erf": "erf"}
    logic = {"And": " && ", "Or": " || "}

    def symbol(self, e: sp.Symbol) -> str:
        return f"{e.name}[i]" if e in self.arrays else e.name

    def infinity(self) -> str:
        return "INFINITY"

    def sqrt(self, base: sp.Expr) -> str:
        return f"sqrt({self(base)})"

    def pow(self, base: sp.Expr, exp: sp.Expr) -> str:
        return f"pow({self(base)}, {self(exp)})"

    def extremum(self, e: sp.Expr) -> str:
        fn = "fmax" if isinstance(e, sp.Max) else "fmin"
        text = self(e.args[0])
        for a in e.args[1:]:
            text = f"{fn}({text}, {self(a)})"
        return text

    def where(self, cond: sp.Expr, a: sp.Expr, b: sp.Expr) -> str:
        return f"({self(cond)} ? {self(a)} : {self(b)})"

    def boolean(self, value: bool) -> str:
        return "1" if value else "0"

    def nan(self) -> str:
        return "NAN"

    def negation(self, e: sp.Expr) -> str:
        return f"(!{self(e)})"

    def __call__(self, e: sp.Basic) -> str:
        if isinstance(e, sp.sign):
            x = self(e.args[0])
            return f"(double)(({x} > 0.0) - ({x} < 0.0))"
        return super().__call__(e)


_C_HELPERS = {
    "matmul": """\
/* t (r x c) = a (r x m) b (m x c) */
static void matmul(long r, long m, long c, const double *restrict a, const double *restrict b, double *restrict t)
{
    if (c < 8) {  /* narrow result: dot products accumulated in a register */
        for (long i = 0; i < r; ++i) for (long j = 0; j < c; ++j) {
            double acc = 0.0;
            for (long k = 0; k < m; ++k) acc += a[i * m + k] * b[k * c + j];
            t[i * c + j] = acc;
        }
        return;
    }
    for (long i = 0; i < r; ++i) {  /* i-k-j: the inner loop runs along rows and vectorises */
        double *restrict row = t + i * c;
        for (long j = 0; j < c; ++j) row[j] = 0.0;
        for (long k = 0; k < m; ++k) {
            const double aik = a[i * m + k];
            for (long j = 0; j < c; ++j) row[j] += aik * b[k * c + j];
        }
    }
}""",
    "transpose": """\
/* t (c x r) = a (r x c) transposed */
static void transpose(long r, long c, const double *restrict a, double *restrict t)
{
    for (long i = 0; i < r; ++i) for (long j = 0; j < c; ++j) t[j * r + i] = a[i * c + j];
}""",
    "softmax_rows": """\
/* t_ij = exp(a_ij - max_l a_il) / sum_k exp(a_ik - max_l a_il) */
static void softmax_rows(long r, long c, const double *restrict a, double *restrict t)
{
    for (long i = 0; i < r; ++i) {
        const double *restrict z = a + i * c;
        double *restrict row = t + i * c;
        double m = z[0], acc = 0.0;
        for (long j = 1; j < c; ++j) m = z[j] > m ? z[j] : m;
        for (long j = 0; j < c; ++j) row[j] = exp(z[j] - m);
        for (long j = 0; j < c; ++j) acc += row[j];
        for (long j = 0; j < c; ++j) row[j] /= acc;
    }
}""",
    "rowdot": """\
/* t_i = sum_k a_ik b_ik */
static void rowdot(long r, long c, const double *restrict a, const double *restrict b, double *restrict t)
{
    for (long i = 0; i < r; ++i) {
        double acc = 0.0;
        for (long k = 0; k < c; ++k) acc += a[i * c + k] * b[i * c + k];
        t[i] = acc;
    }
}""",
    "scale_rows": """\
/* t_ij = v_i a_ij */
static void scale_rows(long r, long c, const double *restrict v, const double *restrict a, double *restrict t)
{
    for (long i = 0; i < r; ++i) for (long j = 0; j < c; ++j) t[i * c + j] = v[i] * a[i * c + j];
}""",
}


class ShapedCPrinter:
    """C99 backend for programs whose matrices have any symbolic shapes (``n x d`` tokens,
    ``n x n`` scores, ``d x 1`` vectors ...), with all the ops of :func:`lower_expressions`.

    Arguments are ``(batch, <dimensions, sorted by name>, in_0, stride_0, ..., out_0, ...)``; a
    stride of 0 broadcasts an input over the batch. One loop over the batch; every temporary
    lives in one scratch buffer; array ops call small static helpers printed once per file
    (products switch between register dot products and vectorising ``i-k-j`` loops); linear
    combinations and elementwise maps are inline loops.
    """

    reserved = {"i", "j", "s", "batch", "scratch", *_C_HELPERS}
    library = {*CScalarCode.functions.values(), "fmax", "fmin", "pow", "sqrt", "nan", "malloc", "free", "memcpy", "main"}

    def dimensions(self, program: Program) -> list[sp.Symbol]:
        return sorted(_dimension_sources(program), key=str)

    def print(self, program: Program) -> str:
        dims = self.dimensions(program)
        names = {s.name for s in program.inputs} | {str(x) for x in dims}
        if names & self.reserved:
            raise ValueError(f"names {sorted(names & self.reserved)} are reserved in generated C")
        if program.name in self.library | self.reserved:
            raise ValueError(f"kernel name {program.name!r} clashes with the C library or the helpers")
        self.shape = shapes(program)
        size = self._size
        ins = [s.name for s in program.inputs]
        params = ["long batch"] + [f"long {x}" for x in dims] + [f"const double *{n}_in, long {n}_stride" for n in ins]
        params += [f"double *{n}_out" for n in program.output_names]
        temps = [op.target for op in program.ops]
        lines = [f"/* {program.doc or 'Generated by flowcert'} ({program.digest()}) */",
                 "#include <math.h>", "#include <stdlib.h>", "#include <string.h>", ""]
        for helper in dict.fromkeys(op.op for op in program.ops if op.op in _C_HELPERS):
            lines += [_C_HELPERS[helper], ""]
        lines += [f"int {program.name}({', '.join(params)})", "{"]
        total = " + ".join(f"({size(t)})" for t in temps) or "1"
        lines.append(f"    double *scratch = malloc(sizeof(double) * ({total}));")
        lines.append("    if (!scratch) return 1;")
        cursor = "scratch"
        for t in temps:
            lines.append(f"    double *const {t} = {cursor};")
            cursor = f"{t} + {size(t)}"
        lines.append("    for (long s = 0; s < batch; ++s) {")
        for n in ins:
            lines.append(f"        const double *const {n} = {n}_in + s * {n}_stride;")
        for op in program.ops:
            lines += ["        " + ln for ln in self._op(op)]
        for name, out in zip(program.output_names, program.outputs):
            lines.append(f"        memcpy({name}_out + s * ({size(out)}), {out}, sizeof(double) * ({size(out)}));")
        lines += ["    }", "    free(scratch);", "    return 0;", "}"]
        return "\n".join(lines) + "\n"

    def _dims(self, name: str) -> tuple[str, str]:
        return tuple(str(x) for x in self.shape[name])  # type: ignore[return-value]

    def _size(self, name: str) -> str:
        """Number of entries, as an integer C expression (shapes are symbols or integers)."""
        return " * ".join(x for x in self._dims(name) if x != "1") or "1"

    def _op(self, op: Op) -> list[str]:
        args, t = op.args, op.target
        if op.op == "matmul":
            (rows, inner), cols = self._dims(args[0]), self._dims(args[1])[1]
            return [f"matmul({rows}, {inner}, {cols}, {args[0]}, {args[1]}, {t});"]
        if op.op in ("transpose", "softmax_rows", "rowdot", "scale_rows"):
            rows, cols = self._dims(args[-1])
            return [f"{op.op}({rows}, {cols}, {', '.join(args)}, {t});"]
        n = self._size(t)
        if op.op == "linear":
            expr = " + ".join(f"({float(sp.nsimplify(c))!r}) * {a}[i]" for a, c in zip(args, op.coeffs))
            return [f"for (long i = 0; i < {n}; ++i) {t}[i] = {expr};"]
        temps, body, arrays = _scalar_map(op)  # map
        code = CScalarCode(arrays)  # the arguments; CSE temporaries are local doubles
        lines = [f"for (long i = 0; i < {n}; ++i) {{"]
        lines += [f"    const double {sym} = {code(expr)};" for sym, expr in temps]
        return lines + [f"    {t}[i] = {code(body)};", "}"]


CPrinter = ShapedCPrinter  # the C backend; the earlier square-only printer (naive i-j-k products) is gone
