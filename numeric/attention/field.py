r"""The ``attention`` field in numpy (multistability paper, eqs. (1), (2), (5); consensus paper,
eq. (7)): kernels printed from the matrix expressions of :mod:`flowcert.symbolic.attention`,
batched over configurations, for every :class:`~flowcert.symbolic.attention.Structure`.

.. math::

    F = Y - \operatorname{diag}\big(\operatorname{rowdot}(XW, Y)\big)\, X,\qquad
    Y = \sum_\eta c\,\operatorname{softmax}_{\mathrm{rows}}\big(\beta\, X Q_\eta^\top K_\eta X^\top + C\big)\, X V_\eta^\top ,

row :math:`i` being :math:`(I-x_ix_i^\top W)\,V\sum_j A_{ij}x_j`; :math:`c=1` (``"unit"``) or
:math:`1/\sqrt d` (``"sqrt"``); :math:`C` the additive causal mask. :func:`attention_field` is the
one-head, full-attention field on the sphere; :func:`structure_kernel` returns the numpy, torch
or C kernel of any structure (arguments as :func:`flowcert.symbolic.attention.program_inputs`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from ...symbolic import codegen
from ...symbolic.attention import Structure, attention_program, structure_program

Array = np.ndarray


@lru_cache(maxsize=None)
def field_kernel(normalization: str = "unit") -> Callable[..., tuple[Array]]:
    """numpy kernel ``(X, Q, K, V) -> (F,)`` generated from SymPy, batched over leading axes."""
    return codegen.NumpyPrinter().compile(attention_program(normalization))


@lru_cache(maxsize=None)
def c_field_kernel(normalization: str = "unit") -> Callable[..., tuple[Array]]:
    """C kernel of the same program (raises :class:`~flowcert.symbolic.cbuild.CompilerUnavailable`
    without a compiler); outputs always carry a leading batch axis."""
    from ...symbolic import cbuild

    return cbuild.compile_c_shaped(attention_program(normalization))


@lru_cache(maxsize=None)
def structure_kernel(structure: Structure, backend: str = "numpy") -> Callable[..., tuple]:
    """Kernel ``(*program_inputs(structure)) -> (F,)`` for ``backend`` in ``numpy``, ``torch``, ``c``
    (C raises :class:`~flowcert.symbolic.cbuild.CompilerUnavailable` without a compiler)."""
    program = structure_program(structure)
    if backend == "numpy":
        return codegen.NumpyPrinter().compile(program)
    if backend == "torch":
        return codegen.TorchPrinter().compile(program)
    if backend == "c":
        from ...symbolic import cbuild

        return cbuild.compile_c_shaped(program)
    raise ValueError(f"backend must be numpy, torch or c, not {backend!r}")


def causal_mask(n: int) -> Array:
    """Additive causal mask: 0 on and below the diagonal, ``-inf`` above (row i sees keys j <= i)."""
    return np.triu(np.full((n, n), -np.inf), 1)


def attention_field(X: Array, Q: Array, K: Array, V: Array, beta: float | Array = 1.0,
                    normalization: str = "unit") -> Array:
    r"""Self-attention field :math:`F(X)` on :math:`(\mathbb S^{d-1})^n` (one head, full attention).

    Parameters
    ----------
    X : array, shape (..., n, d)
        Tokens as rows.
    Q, K, V : array, shape (..., d, d)
        Query, key and value matrices; scores are :math:`s_{ij}=\beta\,x_i^\top Q^\top K x_j`.
    beta : float or array of shape (...)
        Temperature; applied as :math:`Q\to\beta Q` (the scores are linear in :math:`Q`).
    normalization : {"unit", "sqrt"}
        Attention rows sum to 1 (multistability paper) or to :math:`1/\sqrt d` (consensus paper).

    Returns
    -------
    array, shape (..., n, d)
        Row :math:`i` is :math:`(I - x_ix_i^\top)\, y_i`, tangent to the sphere where :math:`|x_i|=1`.
    """
    Q = np.asarray(beta, dtype=np.result_type(Q, float))[..., None, None] * Q
    return field_kernel(normalization)(X, Q, K, V)[0]


def w_norms(X: Array, W: Array | None = None) -> Array:
    r""":math:`|x_i|_W=\sqrt{x_i^\top Wx_i}` per row (Euclidean norms when ``W`` is None)."""
    if W is None:
        return np.linalg.norm(X, axis=-1)
    return np.sqrt(np.einsum("...ij,jk,...ik->...i", X, W, X))


def project(X: Array, W: Array | None = None) -> Array:
    r"""Retraction :math:`\pi_W(x)=x/|x|_W` row by row (consensus paper, eq. (2))."""
    return X / w_norms(X, W)[..., None]


def manifold_drift(X: Array, W: Array | None = None) -> Array:
    r""":math:`\max_i\,\big||x_i|_W-1\big|` over the last two axes."""
    return np.abs(w_norms(X, W) - 1.0).max(axis=-1)


def tangent_projection(X: Array, Z: Array, W: Array | None = None) -> Array:
    r"""Rows :math:`(I-x_ix_i^\top W)z_i` (the tangent map of :math:`\pi_W` at :math:`x_i\in\mathcal E_W`)."""
    XW = X if W is None else X @ W
    return Z - np.sum(XW * Z, axis=-1, keepdims=True) * X
