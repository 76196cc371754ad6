r"""Tasks: the Memory-Pro family (KPFlow paper §3, App. E.1–E.2; durations and encoding from note §3.2/§4.4)
and the common tasks of the ``kpflow`` package (flip-flop, line attractor, low-rank forecasting),
each as ``inputs [B, T, I], targets [B, T, O]`` (own definitions, stated here):

* flip-flop (n = I bits): input pulses :math:`x_{t,i}\in\{-1,0,+1\}`, nonzero with probability p;
  target :math:`y_{t,i}` = the sign of the last pulse of channel i up to t (0 before the first).
* line attractor (integrator): :math:`x_t\sim\mathcal N(0,\sigma^2)` i.i.d., :math:`y_t=\sum_{s\le t}x_s`.
* low-rank forecasting: :math:`u_{t+1}=Mu_t`, :math:`M=Q\,\mathrm{diag}(R_{\omega_1},\dots)\,Q^\top` a rotation
  of rank r (r/2 planes rotated by random angles in an orthonormal basis Q, zero elsewhere) plus
  :math:`\rho I` on the span; input :math:`x_t=u_t`, target :math:`y_t=u_{t+1}` (next-step forecast).

Inputs :math:`[\text{fix},\cos\vartheta,\sin\vartheta]` (plus 4 one-hot context channels in the
multi-task mix), three periods stimulus / memory / response of ``steps`` each. Target
:math:`[\text{fix},\pm\cos\vartheta,\pm\sin\vartheta]` with the sign − for the Anti tasks and the
stimulus on throughout for the Delay tasks. Angles are :math:`2\pi k/n` (clean trials, identical
across tasks so cross-task cosines are index-aligned).
"""

from __future__ import annotations

import math

import torch

KINDS = ("random", "memory_pro", "flip_flop", "line_attractor", "low_rank_forecast")

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


def flip_flop(B: int, T: int, bits: int, p: float = 0.1, seed: int = 0,
              dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Flip-flop memory (see module docstring): inputs and targets [B, T, bits]."""
    gen = torch.Generator().manual_seed(int(seed))
    on = torch.rand(B, T, bits, generator=gen) < p
    sign = torch.randint(0, 2, (B, T, bits), generator=gen) * 2 - 1
    x = (on * sign).to(dtype)
    y = torch.zeros_like(x)
    state = torch.zeros(B, bits, dtype=dtype)
    for t in range(T):
        state = torch.where(on[:, t], x[:, t], state)
        y[:, t] = state
    return x, y


def line_attractor(B: int, T: int, I: int = 1, sigma: float = 0.3, seed: int = 0,
                   dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Integrator: y_t = running sum of the inputs (see module docstring), [B, T, I] each."""
    gen = torch.Generator().manual_seed(int(seed))
    x = sigma * torch.randn(B, T, I, generator=gen, dtype=dtype)
    return x, torch.cumsum(x, 1)


def low_rank_forecast(B: int, T: int, I: int, rank: int = 2, rho: float = 0.98, seed: int = 0,
                      dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-step forecast of a rank-``rank`` linear rotation (see module docstring), [B, T, I] each."""
    gen = torch.Generator().manual_seed(int(seed))
    r = max(1, min(rank, I))
    Q, _ = torch.linalg.qr(torch.randn(I, I, generator=gen, dtype=dtype))
    D = torch.zeros(I, I, dtype=dtype)
    k = 0
    while k + 1 < r:
        w = float(torch.rand((), generator=gen)) * math.pi / 4 + 0.05
        D[k:k + 2, k:k + 2] = torch.tensor([[math.cos(w), -math.sin(w)], [math.sin(w), math.cos(w)]], dtype=dtype)
        k += 2
    if k < r:
        D[k, k] = 1.0
    M = rho * Q @ D @ Q.T
    u = torch.randn(B, I, generator=gen, dtype=dtype)
    seq = []
    for _ in range(T + 1):
        seq.append(u)
        u = u @ M.T
    U = torch.stack(seq, 1)
    return U[:, :-1].contiguous(), U[:, 1:].contiguous()


def make_task(kind: str, B: int, T: int, I: int, seed: int = 0,
              dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of a task named in a parameter file (``random``: Gaussian inputs, 3 targets)."""
    if kind == "memory_pro":
        return memory_task("MP", B, steps=T // 3, dtype=dtype)
    if kind == "flip_flop":
        return flip_flop(B, T, I, seed=seed, dtype=dtype)
    if kind == "line_attractor":
        return line_attractor(B, T, I, seed=seed, dtype=dtype)
    if kind == "low_rank_forecast":
        return low_rank_forecast(B, T, I, seed=seed, dtype=dtype)
    if kind != "random":
        raise ValueError(f"unknown task {kind!r}")
    gen = torch.Generator().manual_seed(int(seed))
    return (torch.randn(B, T, I, generator=gen, dtype=dtype), torch.randn(B, T, 3, generator=gen, dtype=dtype))
