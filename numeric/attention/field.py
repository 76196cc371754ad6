r"""Self-attention field on the sphere in numpy (multistability paper, eq. (1); consensus paper,
eq. (7) with one head and :math:`W=I`).

.. math::

    F = Y - \operatorname{diag}\big(\operatorname{rowdot}(X, Y)\big)\, X,\qquad
    Y = \operatorname{softmax}_{\mathrm{rows}}\big(\beta\, X Q^\top K X^\top\big)\, X V^\top
    \quad\big(\times\, 1/\sqrt d \text{ for } \texttt{normalization="sqrt"}\big),

row :math:`i` being :math:`(I-x_ix_i^\top)\,V\sum_j A_{ij}x_j`. The kernel is printed from the
matrix expression of :mod:`flowcert.symbolic.attention`; the C kernel of the same program is
:func:`c_field_kernel`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from ...symbolic import codegen
from ...symbolic.attention import attention_program

Array = np.ndarray


@lru_cache(maxsize=None)
def field_kernel(normalization: str = "unit") -> Callable[..., tuple[Array]]:
    """numpy kernel ``(X, Q, K, V) -> (F,)`` generated from SymPy, batched over leading axes."""
    return codegen.NumpyPrinter().compile(attention_program(normalization))


@lru_cache(maxsize=None)
def c_field_kernel(normalization: str = "unit") -> Callable[..., tuple[Array]]:
    """C kernel of the same program (raises :class:`~flowcert.symbolic.cbuild.CompilerUnavailable`
    without a compiler); outputs always carry a leading batch axis."""
    from .. import native as cbuild

    return cbuild.compile_c_shaped(attention_program(normalization))


def attention_field(X: Array, Q: Array, K: Array, V: Array, beta: float | Array = 1.0,
                    normalization: str = "unit") -> Array:
    r"""Self-attention field :math:`F(X)` on :math:`(\mathbb S^{d-1})^n`.

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
