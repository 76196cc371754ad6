r"""Scalar expressions inside an elementwise ``map``: the shared part of every backend.

A map :math:`t_{ij}=f(a_{ij},b_{ij},\dots)` is printed after a scalar common-subexpression
elimination (``sympy.cse``) of :math:`f`; :class:`ScalarCode` prints the scalar expression
fully parenthesised, each backend overriding functions, extrema and ``Piecewise``.
"""

from __future__ import annotations

from typing import Callable

import sympy as sp

from .ir import Op, scalar_map



def number_literal(c: sp.Expr) -> str:
    """The Python literal of a numeric coefficient (an integer, else its float ``repr``)."""
    c = sp.nsimplify(c)
    if not c.is_number:
        raise ValueError(f"coefficient {c} is not a number")
    return repr(float(c)) if not c.is_Integer else str(int(c))


def print_map(op: Op, code_for: Callable[[set[sp.Symbol], str], "ScalarCode"], full_like: Callable[[str, str], str]) -> list[str]:
    """The lines of an elementwise map ``op`` (:func:`flowcert.symbolic.codegen.ir.scalar_map`): its CSE temporaries
    and body in a backend\'s scalar code (``code_for``), into an output made by ``full_like``."""
    temps, body, arrays = scalar_map(op)
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


ELEMENTARY = ("exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "floor")
