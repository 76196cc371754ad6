r"""Self-attention on the unit sphere as matrix expressions (multistability paper, eq. (1);
consensus paper, eq. (7)).

Tokens are the rows :math:`x_i^\top` of :math:`X\in\mathbb R^{n\times d}`. The self-attention
dynamics of the multistability paper, eq. (1), is

.. math::

    \dot x_i = (I - x_i x_i^\top)\, V \sum_{j=1}^n A_{ij}(X)\, x_j, \qquad
    A_{ij} = \frac{e^{\beta\, x_i^\top M x_j}}{\sum_{\ell=1}^n e^{\beta\, x_i^\top M x_\ell}},
    \qquad M = Q^\top K ,

with query :math:`i` and key :math:`j`, the softmax taken over :math:`j`, and the temperature
:math:`\beta` of eq. (13) (:math:`\beta=1` in the main model; it is the same as :math:`M\to\beta M`).
The consensus paper's model (7), with one head, :math:`W=I` and value matrix :math:`U=V`, is the
same field with attention rows that sum to :math:`1/\sqrt d` instead of 1:

.. math::

    \dot y_i = \sum_{j=1}^{\ell} \alpha_{ij}\big(U y_j - (y_i^\top U y_j)\, y_i\big), \qquad
    \alpha_{ij} = \frac{e^{y_i^\top P y_j}}{\sqrt{d}\,\sum_{k} e^{y_i^\top P y_k}}, \qquad P = Q^\top K .

In matrix form (``normalization="unit"`` or ``"sqrt"``):

.. math::

    S = X M X^\top, \qquad
    A = \operatorname{softmax}_{\mathrm{rows}}(S) \;\; \big(\text{or } \tfrac{1}{\sqrt d}\operatorname{softmax}_{\mathrm{rows}}(S)\big), \qquad
    Y = A X V^\top, \qquad
    F = Y - \operatorname{diag}\big(\operatorname{rowdot}(X, Y)\big)\, X ,

where :math:`\operatorname{rowdot}(X,Y)_i = x_i^\top y_i`. Row :math:`i` of :math:`F` is
:math:`P^\perp_{x_i} y_i` with :math:`P^\perp_x = I - x x^\top`, the projection onto the tangent
space of the sphere at :math:`x_i`, so :math:`\operatorname{rowdot}(X, F)_i = x_i^\top y_i\,(1 - |x_i|^2)`
vanishes on the sphere.

:func:`attention_program` lowers :math:`F` to the kernel IR of :mod:`flowcert.symbolic.codegen`
(numpy, torch and C printers). The temperature is not a kernel argument: since :math:`S` is linear
in :math:`Q`, callers pass :math:`\beta Q` for :math:`Q`. :func:`scalarised_field` writes the same
field entry by entry for tiny :math:`n, d`, for cross-checks only (its size grows like
:math:`n^3 d^3`).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from ..codegen import Program, RowDot, SoftmaxRows, lower_expressions

n, d = sp.symbols("n d", integer=True, positive=True)
X = sp.MatrixSymbol("X", n, d)
Q, K, V = (sp.MatrixSymbol(name, d, d) for name in ("Q", "K", "V"))

NORMALIZATIONS = ("unit", "sqrt")


def _check(normalization: str) -> None:
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, not {normalization!r}")


def scores() -> sp.MatrixExpr:
    r""":math:`S = X Q^\top K X^\top`, so :math:`S_{ij} = x_i^\top M x_j` with :math:`M=Q^\top K`."""
    return X * Q.T * K * X.T


def attention_matrix(normalization: str = "unit") -> sp.MatrixExpr:
    r""":math:`A=\operatorname{softmax}_{\mathrm{rows}}(S)`, rows summing to 1 (``"unit"``) or
    to :math:`1/\sqrt d` (``"sqrt"``, the consensus paper's convention)."""
    _check(normalization)
    A = SoftmaxRows(scores())
    return A if normalization == "unit" else A / sp.sqrt(d)


def influence(normalization: str = "unit") -> sp.MatrixExpr:
    r""":math:`Y = A X V^\top`: row :math:`i` is :math:`y_i = V \sum_j A_{ij} x_j`."""
    return attention_matrix(normalization) * X * V.T


def attention_field(normalization: str = "unit") -> sp.MatrixExpr:
    r""":math:`F = Y - \operatorname{diag}(\operatorname{rowdot}(X, Y))\,X`: row :math:`i` is
    :math:`(I - x_i x_i^\top)\, y_i`."""
    Y = influence(normalization)
    return Y - sp.DiagMatrix(RowDot(X, Y)) * X


@lru_cache(maxsize=None)
def attention_program(normalization: str = "unit") -> Program:
    """Kernel IR of :func:`attention_field`: ``attention_field(X, Q, K, V) -> (F,)``, batched over
    a leading axis; ``X`` is ``(..., n, d)``, ``Q, K, V`` are ``(..., d, d)``."""
    _check(normalization)
    rows = "1" if normalization == "unit" else "1/sqrt(d)"
    return lower_expressions(
        "attention_field",
        [("F", attention_field(normalization))],
        [X, Q, K, V],
        doc=(f"Self-attention field on the sphere (attention rows sum to {rows}): "
             "F = Y - diag(rowdot(X, Y)) X, Y = softmax_rows(X Q^T K X^T) X V^T; batched over leading axes."),
    )


def scalarised_field(
    n_tokens: int, dim: int, normalization: str = "unit", beta: sp.Expr = sp.Integer(1)
) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix]:
    r"""The field entry by entry for tiny sizes: ``(X, Q, K, V, F)`` as explicit matrices of symbols
    ``x_i_k, q_k_l, ...``, with :math:`F_{ik}` written from the sums of eq. (1) directly (no
    max-subtraction, no matrix-level nodes). For cross-checks only.
    """
    _check(normalization)
    Xs = sp.Matrix(n_tokens, dim, lambda i, k: sp.Symbol(f"x_{i}_{k}"))
    Qs, Ks, Vs = (sp.Matrix(dim, dim, lambda k, l, c=c: sp.Symbol(f"{c}_{k}_{l}")) for c in "qkv")
    M = Qs.T * Ks
    rows = [Xs[i, :].T for i in range(n_tokens)]
    scale = 1 if normalization == "unit" else 1 / sp.sqrt(dim)
    F = sp.zeros(n_tokens, dim)
    for i, xi in enumerate(rows):
        e = [sp.exp(beta * (xi.T * M * xj)[0, 0]) for xj in rows]
        total = sp.Add(*e)
        y = scale * Vs * sum((e[j] / total * xj for j, xj in enumerate(rows)), sp.zeros(dim, 1))
        f = y - xi * (xi.T * y)[0, 0]
        F[i, :] = f.T
    return Xs, Qs, Ks, Vs, F
