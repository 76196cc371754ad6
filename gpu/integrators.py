r"""Batched ODE solvers in torch: fixed-step RK4 and adaptive Dormand–Prince 5(4) (with an optional retraction).

For :math:`\dot y=f(t,y)` with a leading batch axis, the Dormand–Prince step uses the
tableau of Dormand and Prince (1980), the error estimate :math:`\|y_5-y_4\|` scaled by
:math:`\text{atol}+\text{rtol}\,\max(|y|,|y'|)` (RMS over each sample), and an integral
controller :math:`h\leftarrow h\min(5,\max(0.2,0.9\,\text{err}^{-1/5}))`. Every sample has
its own time and step size; a sample stops at ``t_end`` or when its blow-up predicate
fires, and the time it fired is recorded.

State is a tuple of tensors sharing the batch axis (for example ``(mu, Sigma)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

State = tuple[torch.Tensor, ...]
Field = Callable[[torch.Tensor, State], State]


def _axpy(y: State, h: torch.Tensor, ks: Sequence[State], coeffs: Sequence[float]) -> State:
    """:math:`y + h\\sum_j c_j k_j` per component; ``h`` has shape (batch,)."""
    out = []
    for i, yi in enumerate(y):
        acc = torch.zeros_like(yi)
        for c, k in zip(coeffs, ks):
            if c:
                acc = acc + c * k[i]
        out.append(yi + h.reshape(-1, *([1] * (yi.dim() - 1))) * acc)
    return tuple(out)


def rk4(f: Field, y0: State, t_end: float, steps: int) -> State:
    """Classical RK4 with ``steps`` equal steps; differentiable through torch autograd."""
    batch = y0[0].shape[0]
    h = torch.full((batch,), t_end / steps, dtype=y0[0].dtype, device=y0[0].device)
    t = torch.zeros_like(h)
    y = y0
    for _ in range(steps):
        k1 = f(t, y)
        k2 = f(t + h / 2, _axpy(y, h, [k1], [0.5]))
        k3 = f(t + h / 2, _axpy(y, h, [k2], [0.5]))
        k4 = f(t + h, _axpy(y, h, [k3], [1.0]))
        y = _axpy(y, h, [k1, k2, k3, k4], [1 / 6, 1 / 3, 1 / 3, 1 / 6])
        t = t + h
    return y


C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
A_TAB = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)


@dataclass
class AdaptiveResult:
    """Final states, per-sample final times, blow-up times (NaN where none) and step counts."""

    y: State
    t: torch.Tensor
    blowup_time: torch.Tensor
    steps: torch.Tensor
    rejected: torch.Tensor


def dopri5(
    f: Field,
    y0: State,
    t_end: float,
    *,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    h0: float = 1e-3,
    max_steps: int = 100000,
    blowup: Callable[[State], torch.Tensor] | None = None,
    project: Callable[[State], State] | None = None,
    shared_step: bool = False,
) -> AdaptiveResult:
    """Adaptive Dormand–Prince 5(4) with a per-sample step size and blow-up predicate.

    ``project`` maps each proposed state back onto a manifold (a retraction) before it is
    accepted; the error estimate is that of the unprojected step. ``shared_step``: one step size
    and one time for the whole batch (the largest error decides), for fields that read the time
    as a scalar (time-varying heads). ``max_steps`` bounds the attempted steps."""
    batch = y0[0].shape[0]
    ref = y0[0]
    t = torch.zeros(batch, dtype=ref.dtype, device=ref.device)
    h = torch.full_like(t, h0)
    tb = torch.full_like(t, float("nan"))
    steps = torch.zeros(batch, dtype=torch.long, device=ref.device)
    rejected = torch.zeros_like(steps)
    active = torch.ones(batch, dtype=torch.bool, device=ref.device)
    y = tuple(c.clone() for c in y0)
    for _ in range(max_steps):
        if not bool(active.any()):
            break
        h_eff = torch.where(active, torch.minimum(h, t_end - t), torch.zeros_like(h))
        ks: list[State] = [f(t, y)]
        for i in range(1, 7):
            ks.append(f(t + C[i] * h_eff, _axpy(y, h_eff, ks, A_TAB[i])))
        y5 = _axpy(y, h_eff, ks, B5)
        y4 = _axpy(y, h_eff, ks, B4)
        sq = torch.zeros_like(t)
        n = 0
        for a, b5, b4 in zip(y, y5, y4):
            scale = atol + rtol * torch.maximum(a.abs(), b5.abs())
            sq = sq + (((b5 - b4) / scale) ** 2).reshape(batch, -1).sum(1)
            n += a[0].numel()
        err = torch.sqrt(sq / n)
        if project is not None:
            y5 = project(y5)
        finite = torch.stack([torch.isfinite(c.reshape(batch, -1)).all(1) for c in y5]).all(0)
        if shared_step:  # the worst sample decides for all: times stay equal
            worst = torch.where(active & finite, err, torch.full_like(err, float("inf"))).amax()
            finite = finite.all().expand(batch)
            err = worst.expand(batch)
        accept = active & finite & (err <= 1.0)
        acc_shape = [accept.reshape(-1, *([1] * (c.dim() - 1))) for c in y]
        y = tuple(torch.where(m, new, old) for m, new, old in zip(acc_shape, y5, y))
        t = torch.where(accept, t + h_eff, t)
        steps = steps + accept.long()
        rejected = rejected + (active & ~accept).long()
        factor = torch.clamp(0.9 * torch.nan_to_num(err, nan=1e10, posinf=1e10).clamp_min(1e-10) ** -0.2, 0.2, 5.0)
        h = torch.where(active, h_eff.clamp_min(1e-300) * torch.where(finite, factor, torch.full_like(factor, 0.2)), h)
        done = t >= t_end * (1 - 1e-14)
        if blowup is not None:
            fired = active & accept & blowup(y)
            tb = torch.where(fired, t, tb)
            done = done | fired
        stalled = h < 1e-14 * max(t_end, 1.0)
        active = active & ~done & ~stalled
    return AdaptiveResult(y, t, tb, steps, rejected)
