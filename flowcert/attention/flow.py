r"""The attention field as a function and its integration on the manifold: :func:`field` (the generated
kernel at the parameters), :func:`reduced` (the heads restricted to an invariant subspace of their
value maps) and :func:`integrate` (scipy DOP853, in that subspace when there is one).

They sit below the catalogue modules and the classifier, which take them from here; the package
(:mod:`flowcert.attention`) re-exports them as its public ``field``, ``reduced`` and ``integrate``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .params import AttentionParams

__all__ = ["field", "integrate", "reduced"]


def field(p: AttentionParams, backend: str = "numpy") -> Callable[[float, Any], Any]:
    """``f(t, X) -> F`` from the generated kernel; ``X`` of shape (n, d) or (batch, n, d) (numpy
    arrays for ``numpy``, tensors for ``torch``)."""
    from ..numeric.attention.field import structure_kernel

    kernel = structure_kernel(p.structure, backend)
    square = backend == "c"  # numpy and torch take an m x d query/key pair as it is (rank m)
    cache: dict[int, list[np.ndarray]] = {}

    def args_at(t: float, n: int) -> list[np.ndarray]:
        if p.time_varying:
            return p.kernel_args(t, n, square=square)
        if n not in cache:  # constant heads: the arguments are built once per token count
            cache[n] = p.kernel_args(0.0, n, square=square)
        return cache[n]

    if backend == "torch":
        import torch

        def f_torch(t: float, X: Any) -> Any:
            args = [torch.as_tensor(np.array(a), dtype=X.dtype, device=X.device) for a in args_at(t, X.shape[-2])]
            return kernel(X, *args)[0]

        return f_torch

    def f(t: float, X: np.ndarray) -> np.ndarray:
        out = kernel(X, *args_at(t, X.shape[-2]))[0]
        return out[0] if backend == "c" and X.ndim == 2 else out

    return f


def reduced(p: AttentionParams, X0: np.ndarray) -> tuple[AttentionParams, Any] | None:
    r"""``p`` restricted to the invariant subspace :math:`S\ni X_0` of its value maps, and the
    :class:`~flowcert.numeric.attention.reduction.Subspace` (basis ``B``): heads
    :math:`(QB, KB, B^\top VB)` in :math:`\mathbb R^k` (times :math:`\sqrt{k/d}` with rows summing
    to :math:`1/\sqrt d`, which the kernels read from the tokens' width), tokens :math:`X_0B`. None unless the heads
    are constant self-attention heads on the sphere and :math:`k\le d/2` (see
    :mod:`flowcert.numeric.attention.reduction`: the lifted solution is the full one)."""
    if p.variant != "self_attention" or p.time_varying or p.W is not None:
        return None
    from dataclasses import replace

    from ..numeric.attention.reduction import invariant_subspace

    mats = p.head_matrices(0.0)
    sub = invariant_subspace([v for _, _, v in mats], X0)
    if sub is None:
        return None

    def frozen(A: np.ndarray) -> np.ndarray:
        A = np.ascontiguousarray(A, dtype=np.float64)
        A.setflags(write=False)
        return A

    B = sub.B
    # rows summing to 1/sqrt(d): the kernels read d from the tokens' width, k after the reduction
    c = float(np.sqrt(sub.dim / p.d)) if p.normalization == "sqrt" else 1.0
    heads = tuple(replace(h, Q=frozen(q @ B), K=frozen(k @ B), V=frozen(c * (B.T @ v @ B)), from_P=False)
                  for h, (q, k, v) in zip(p.heads, mats))
    return replace(p, heads=heads, d=sub.dim, X0=frozen(sub.reduce(X0))), sub


def integrate(p: AttentionParams, t_end: float | None = None, X0: np.ndarray | None = None, *, reduce: bool = True,
              **kw: Any):
    r"""scipy integration on the manifold (:func:`flowcert.numeric.attention.integrate.integrate`),
    in the invariant subspace of the heads when :func:`reduced` finds one (``reduce``; the
    trajectory is lifted back to :math:`\mathbb R^d` and its ``reduction`` says so)."""
    from ..numeric.attention.integrate import integrate as _integrate

    X0 = p.initial_tokens() if X0 is None else X0
    t_end = p.t_end if t_end is None else t_end
    red = reduced(p, X0) if reduce else None
    if red is None:
        return _integrate(field(p), X0, t_end, W=p.W, **kw)
    q, sub = red
    tr = _integrate(field(q), q.X0, t_end, W=None, **kw)
    tr.X, tr.reduction = sub.lift(tr.X), sub.record()
    return tr
