r"""The C99 backend (``math.h``) for programs of any symbolic shapes.

One loop over the batch, every temporary in one scratch buffer, small static helpers for
:math:`t=ab` (``matmul``), :math:`t=a^\top`, row softmax
:math:`t_{ij}=e^{a_{ij}-\max_l a_{il}}/\sum_k e^{a_{ik}-\max_l a_{il}}`, row dots and
:math:`\operatorname{diag}(v)\,a`. Compiling and loading is :mod:`flowcert.numeric.native`.
"""

from __future__ import annotations


import sympy as sp

from .ir import Op, Program, dimension_sources, scalar_map, shapes
from .scalar import ScalarCode, ELEMENTARY



class CScalarCode(ScalarCode):
    """C99 (``math.h``): ``fmax``/``fmin``, the ternary operator, double literals throughout;
    an array argument ``a`` is read as ``a[i]``."""

    functions = {**{f: f for f in ELEMENTARY}, "Abs": "fabs", "ceiling": "ceil", "erf": "erf"}
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
        return sorted(dimension_sources(program), key=str)

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
        temps, body, arrays = scalar_map(op)  # map
        code = CScalarCode(arrays)  # the arguments; CSE temporaries are local doubles
        lines = [f"for (long i = 0; i < {n}; ++i) {{"]
        lines += [f"    const double {sym} = {code(expr)};" for sym, expr in temps]
        return lines + [f"    {t}[i] = {code(body)};", "}"]


CPrinter = ShapedCPrinter  # the C backend; the earlier square-only printer (naive i-j-k products) is gone
