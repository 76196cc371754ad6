r"""Batched Gaussian Transformer moments in torch (gaussian paper, eq. (7)), any device.

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top ,

with the kernel printed from the same SymPy program as the numpy one
(:func:`flowcert.symbolic.gaussian.moment_program`), float64 by default and differentiable.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import torch

from ..symbolic.gaussian import moment_program
from ..symbolic import codegen
from . import integrators


@lru_cache(maxsize=None)
def moment_kernel() -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """torch kernel ``(A, B, V, b, mu, Sigma) -> (mu_dot, Sigma_dot)``, batched and differentiable."""
    return codegen.TorchPrinter().compile(moment_program())


def simulate_moments(
    A: torch.Tensor,
    B: torch.Tensor,
    V: torch.Tensor,
    b: torch.Tensor,
    mu0: torch.Tensor,
    Sigma0: torch.Tensor,
    t_end: float,
    *,
    method: str = "dopri5",
    steps: int = 1000,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    blowup_factor: float = 1e8,
) -> integrators.AdaptiveResult:
    """Integrate a batch of moment ODEs; parameters broadcast against the batch axis.

    Parameters
    ----------
    A, B, V : Tensor, shape (d, d) or (batch, d, d)
    b, mu0 : Tensor, shape (d,) or (batch, d)
    Sigma0 : Tensor, shape (batch, d, d)
    method : {"dopri5", "rk4"}
        Adaptive Dormand–Prince with per-sample steps, or fixed-step RK4 (``steps`` steps).
    """
    kernel = moment_kernel()
    batch = Sigma0.shape[0]
    mu0 = mu0.expand(batch, -1)

    def field(t: torch.Tensor, y: integrators.State) -> integrators.State:
        return kernel(A, B, V, b, y[0], y[1])

    if method == "rk4":
        y = integrators.rk4(field, (mu0, Sigma0), t_end, steps)
        full = torch.full((batch,), t_end, dtype=Sigma0.dtype, device=Sigma0.device)
        return integrators.AdaptiveResult(y, full, torch.full_like(full, float("nan")),
                                          torch.full((batch,), steps, device=Sigma0.device),
                                          torch.zeros(batch, dtype=torch.long, device=Sigma0.device))
    threshold = blowup_factor * (1 + torch.linalg.matrix_norm(Sigma0))

    def blowup(y: integrators.State) -> torch.Tensor:
        return torch.linalg.matrix_norm(y[1]) > threshold

    return integrators.dopri5(field, (mu0, Sigma0), t_end, rtol=rtol, atol=atol, blowup=blowup)
