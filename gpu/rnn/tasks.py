r"""Memory-Pro task family (KPFlow paper §3, App. E.1–E.2; durations and encoding from note §3.2/§4.4).

Inputs :math:`[\text{fix},\cos\vartheta,\sin\vartheta]` (plus 4 one-hot context channels in the
multi-task mix), three periods stimulus / memory / response of ``steps`` each. Target
:math:`[\text{fix},\pm\cos\vartheta,\pm\sin\vartheta]` with the sign − for the Anti tasks and the
stimulus on throughout for the Delay tasks. Angles are :math:`2\pi k/n` (clean trials, identical
across tasks so cross-task cosines are index-aligned).
"""

from __future__ import annotations

import math

import torch

TASKS = ("MP", "MA", "DP", "DA")  # memory-pro, memory-anti, delay-pro, delay-anti


def memory_task(name: str, n_angles: int, steps: int = 10, context: int = 0, noise: float = 0.0,
                seed: int = 0, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs [n, T, I] and targets [n, T, 3] of one task; I = 3 (+4 with ``context`` > 0)."""
    ang = torch.arange(n_angles, dtype=dtype) * 2 * math.pi / n_angles
    c, s = torch.cos(ang), torch.sin(ang)
    T = context + 3 * steps
    I = 3 + (4 if context else 0)
    x = torch.zeros(n_angles, T, I, dtype=dtype)
    y = torch.zeros(n_angles, T, 3, dtype=dtype)
    resp = context + 2 * steps
    x[:, :resp, 0] = 1.0
    y[:, :resp, 0] = 1.0
    stim_end = T if name[0] == "D" else context + steps
    x[:, context:stim_end, 1] = c[:, None]
    x[:, context:stim_end, 2] = s[:, None]
    sign = -1.0 if name[1] == "A" else 1.0
    y[:, resp:, 1] = sign * c[:, None]
    y[:, resp:, 2] = sign * s[:, None]
    if context:
        x[:, :context, 3 + TASKS.index(name)] = 1.0
    if noise:
        gen = torch.Generator().manual_seed(seed)
        x = x + noise * torch.randn(x.shape, generator=gen, dtype=dtype)
    return x, y


def multitask(n_angles: int, steps: int = 10, context: int = 10, tasks: tuple[str, ...] = TASKS
              ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """Concatenated batch of the tasks with index lists of each task's trials."""
    xs, ys, idx = [], [], []
    for i, name in enumerate(tasks):
        x, y = memory_task(name, n_angles, steps, context)
        xs.append(x)
        ys.append(y)
        idx.append(torch.arange(i * n_angles, (i + 1) * n_angles))
    return torch.cat(xs), torch.cat(ys), idx
