r"""Self-attention on the sphere in torch: the field printed from the same SymPy program as the
numpy kernel (:func:`flowcert.symbolic.attention.attention_program`), batched, float64 by
default, differentiable and on any device, and a batched RK4 simulation.

.. math::

    \dot x_i = (I - x_ix_i^\top)\, V\sum_j A_{ij}(X)\,x_j,\qquad
    A_{ij} = \operatorname{softmax}_j\big(\beta\,x_i^\top Q^\top K x_j\big)
    \quad\big(\times\,1/\sqrt d \text{ for } \texttt{normalization="sqrt"}\big)

(multistability paper, eq. (1); consensus paper, eq. (7) with one head and :math:`W=I`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from ..symbolic import codegen
from ..symbolic.attention import attention_program
from . import integrators


@lru_cache(maxsize=None)
def field_kernel(normalization: str = "unit") -> Callable[..., tuple[torch.Tensor]]:
    """torch kernel ``(X, Q, K, V) -> (F,)``, batched over leading axes and differentiable."""
    return codegen.TorchPrinter().compile(attention_program(normalization))


def _temperature(Q: torch.Tensor, beta: float | torch.Tensor) -> torch.Tensor:
    """:math:`\\beta Q` (the scores are linear in Q); ``beta`` a number or a tensor of shape (...)."""
    if not isinstance(beta, torch.Tensor):
        return Q if beta == 1 else beta * Q
    return beta.to(dtype=Q.dtype, device=Q.device)[..., None, None] * Q


def attention_field(X: torch.Tensor, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                    beta: float | torch.Tensor = 1.0, normalization: str = "unit") -> torch.Tensor:
    """Self-attention field; shapes and meaning as :func:`flowcert.numeric.attention.attention_field`."""
    return field_kernel(normalization)(X, _temperature(Q, beta), K, V)[0]


@dataclass
class AttentionTrajectory:
    """Final tokens and, per RK4 step and sample, the manifold drift
    :math:`\\max_i\\,\\big||x_i|-1\\big|` measured after the step (before any renormalisation)."""

    X: torch.Tensor
    drift: torch.Tensor

    @property
    def max_drift(self) -> float:
        return float(self.drift.max()) if self.drift.numel() else 0.0


def simulate_attention(
    X0: torch.Tensor,
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    t_end: float,
    steps: int,
    *,
    beta: float | torch.Tensor = 1.0,
    normalization: str = "unit",
    renormalize: bool = True,
) -> AttentionTrajectory:
    """Integrate a batch of token configurations with ``steps`` classical RK4 steps.

    Parameters
    ----------
    X0 : Tensor, shape (batch, n, d)
        Initial tokens (rows), normally on the unit sphere.
    Q, K, V : Tensor, shape (d, d) or (batch, d, d)
    renormalize : bool
        Project every row back onto the sphere after each step. The drift is recorded either way.

    Returns
    -------
    AttentionTrajectory
        ``X`` of shape (batch, n, d) and ``drift`` of shape (steps, batch). Differentiable with
        respect to every input.
    """
    kernel = field_kernel(normalization)
    Qb = _temperature(Q, beta)

    def field(t: torch.Tensor, y: integrators.State) -> integrators.State:
        return kernel(y[0], Qb, K, V)

    X, h, drift = X0, t_end / steps, []
    for _ in range(steps):
        (X,) = integrators.rk4(field, (X,), h, 1)
        norms = torch.linalg.vector_norm(X, dim=-1)
        drift.append((norms - 1).abs().amax(dim=-1).detach())
        if renormalize:
            X = X / norms[..., None]
    empty = torch.zeros(0, X0.shape[0], dtype=X0.dtype, device=X0.device)
    return AttentionTrajectory(X, torch.stack(drift) if drift else empty)
