r"""Exact (or interval) interpretation of a :class:`~flowcert.symbolic.codegen.ir.Program`.

:func:`evaluate` runs the program with a user-supplied matrix arithmetic; :class:`MatrixOps`
is exact arithmetic on ``sympy.Matrix``: :math:`(AB)_{ij}=\sum_k A_{ik}B_{kj}` over
:math:`\mathbb{Q}`, so a kernel's output can be compared with the SymPy expression it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from .ir import NONPOLYNOMIAL_OPS, Op, Program, map_dimensions



def evaluate(program: Program, values: Mapping[str, object], ops: "MatrixOps") -> tuple[Any, ...]:
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


def _evaluate_elementwise(program: Program, op: Op, env: dict[str, Any], values: dict[str, Any], ops: Any) -> Any:
    args = [env[a] for a in op.args]
    if op.op != "map":
        return getattr(ops, op.op)(*args)
    dims = {x: values[name].shape[axis] for x, (name, axis) in map_dimensions(program).items()}
    f = op.coeffs[0]
    return ops.map(sp.Lambda(f.variables, f.expr.subs(dims)), *args)
