r"""Kernels from matrix expressions: a small IR with one module per printer and an exact evaluator.

A set of outputs :math:`E_k=\sum_j c_{kj}\,X_{kj,1}\cdots X_{kj,m}` (normal forms from
:mod:`flowcert.symbolic.matrix`) is lowered to straight-line code over batched arrays of shape
``(..., r, c)`` (:mod:`.ir`), then printed for numpy or torch (:mod:`.python_printer`) or C
(:mod:`.c_printer`), or interpreted exactly (:mod:`.exact`). Compiling and loading C kernels is
:mod:`flowcert.numeric.native`, outside this layer.
"""

from .c_printer import CPrinter, CScalarCode, ShapedCPrinter
from .exact import MatrixOps, evaluate
from .ir import (
    NONPOLYNOMIAL_OPS,
    ElementwiseMap,
    Op,
    Program,
    RowDot,
    SoftmaxRows,
    lower,
    lower_expressions,
    shapes,
)
from .python_printer import NumpyPrinter, NumpyScalarCode, PythonArrayPrinter, TorchPrinter, TorchScalarCode
from .scalar import ScalarCode

__all__ = [
    "CPrinter", "CScalarCode", "ElementwiseMap", "MatrixOps", "NONPOLYNOMIAL_OPS", "NumpyPrinter",
    "NumpyScalarCode", "Op", "Program", "PythonArrayPrinter", "RowDot", "ScalarCode", "ShapedCPrinter",
    "SoftmaxRows", "TorchPrinter", "TorchScalarCode", "evaluate", "lower", "lower_expressions", "shapes",
]
