r"""The kernel IR: straight-line programs over batched matrices, lowered from normal forms.

A set of outputs :math:`E_k=\sum_j c_{kj}\,X_{kj,1}\cdots X_{kj,m}` (normal forms from
:mod:`flowcert.symbolic.matrix`) is lowered to a :class:`Program`, a list of assignments
``target = op(args)`` with ``op`` among ``matmul``, ``transpose``, ``linear`` and the
non-polynomial ops ``map`` (:math:`t_{ij}=f(a_{ij},\dots)`), ``softmax_rows``
(:math:`t_{ij}=e^{a_{ij}}/\sum_k e^{a_{ik}}`), ``rowdot`` (:math:`t_i=\sum_k a_{ik}b_{ik}`) and
``scale_rows`` (:math:`t=\operatorname{diag}(v)\,a`). Prefix products are shared, transposes reuse
:math:`(XY)^\top=Y^\top X^\top` and :math:`S^\top=S`, and products ending in a vector are applied
right to left. (Shared by every system; the attention field of the multistability paper, eq. (1.1),
uses the non-polynomial ops.)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import sympy as sp
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

from ..matrix import Chain, Poly, Relations, normal_form, transpose_chain


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


def dimension_sources(program: Program) -> dict[sp.Symbol, tuple[str, int]]:
    """Each dimension symbol -> (an input of that size along an axis, the axis)."""
    out: dict[sp.Symbol, tuple[str, int]] = {}
    for s in program.inputs:
        for axis, size in enumerate(s.shape):
            if isinstance(size, sp.Symbol):
                out.setdefault(size, (s.name, axis))
    return out


def map_dimensions(program: Program) -> dict[sp.Symbol, tuple[str, int]]:
    """The dimensions that elementwise maps use, with where to read them."""
    used = set().union(*(op.coeffs[0].free_symbols for op in program.ops if op.op == "map"))
    return {x: src for x, src in sorted(dimension_sources(program).items(), key=str) if x in used}


def scalar_map(op: Op) -> tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Expr, set[sp.Symbol]]:
    """Body of a map in the names of its arguments, after scalar CSE (``sympy.cse``)."""
    f = op.coeffs[0]
    args = [sp.Symbol(a) for a in op.args]
    body = f.expr.xreplace(dict(zip(f.variables, args)))
    temps, (body,) = sp.cse([body], symbols=sp.numbered_symbols(f"{op.target}_"))
    return temps, body, set(args)
