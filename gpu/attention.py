r"""The ``attention`` system in torch: the field printed from the same SymPy program as the numpy
and C kernels (:func:`flowcert.symbolic.attention.structure_program`), batched over token
configurations, float64 by default, differentiable, on any device; batched RK4 on the manifold
with retraction.

.. math::

    \dot x_i = (I - x_ix_i^\top W)\sum_\eta V_\eta\sum_j A^\eta_{ij}(X)\,x_j,\qquad
    A^\eta_{ij} = c\,\operatorname{softmax}_{j\in\mathcal N_i}\big(\beta\,x_i^\top Q_\eta^\top K_\eta x_j\big)

(multistability paper, eqs. (1), (2), (5); consensus paper, eq. (7)). Each RK4 step is followed
by the retraction :math:`x_i\leftarrow x_i/|x_i|_W`; the drift :math:`\max_i\big||x_i|_W-1\big|`
before the retraction is recorded for every step and sample.

Public API: :func:`attention_field` (one head, sphere), :func:`structure_field` (any structure),
:func:`simulate` (any structure, constant or time-varying arguments), :func:`simulate_attention`
(one head, sphere), :func:`simulate_adaptive` (Dormand–Prince 5(4) with the retraction after each
step), :func:`simulate_to_rest` (batched runs until the speed falls below a tolerance, for basin
statistics), :class:`AttentionTrajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence, Union

import numpy as np
import torch

from ..symbolic import codegen
from ..symbolic.attention import Structure, attention_program, structure_program
from . import integrators

Args = Union[Sequence[torch.Tensor], Callable[[float], Sequence[torch.Tensor]]]
GridArgs = Callable[[np.ndarray], Sequence[torch.Tensor]]


@lru_cache(maxsize=None)
def field_kernel(normalization: str = "unit") -> Callable[..., tuple[torch.Tensor]]:
    """torch kernel ``(X, Q, K, V) -> (F,)``, batched over leading axes and differentiable."""
    return codegen.TorchPrinter().compile(attention_program(normalization))


@lru_cache(maxsize=None)
def structure_field(structure: Structure) -> Callable[..., tuple[torch.Tensor]]:
    """torch kernel of any :class:`~flowcert.symbolic.attention.Structure`; arguments as
    :func:`flowcert.symbolic.attention.program_inputs` (``Q`` pre-scaled by :math:`\\beta`)."""
    return codegen.TorchPrinter().compile(structure_program(structure))


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
    :math:`\\max_i\\,\\big||x_i|_W-1\\big|` measured after the step (before any renormalisation)."""

    X: torch.Tensor
    drift: torch.Tensor

    @property
    def max_drift(self) -> float:
        return float(self.drift.max()) if self.drift.numel() else 0.0


def w_norms(X: torch.Tensor, W: torch.Tensor | None = None) -> torch.Tensor:
    """:math:`|x_i|_W` per row."""
    if W is None:
        return torch.linalg.vector_norm(X, dim=-1)
    return torch.sqrt(((X @ W) * X).sum(-1))


def _args_at(args: Args) -> Callable[[float], Sequence[torch.Tensor]]:
    if callable(args):
        return args
    fixed = tuple(args)
    return lambda time: fixed


def simulate(structure: Structure, X0: torch.Tensor, args: Args, t_end: float, steps: int, *,
             W: torch.Tensor | None = None, renormalize: bool = True, t0: float = 0.0,
             record_every: int = 0, args_grid: GridArgs | None = None, chunk_steps: int = 512) -> AttentionTrajectory:
    """Integrate a batch of configurations with ``steps`` RK4 steps on :math:`\\mathcal E_W^n`.

    Parameters
    ----------
    structure : Structure
    X0 : Tensor (batch, n, d)
    args : sequence of Tensors, or callable ``t -> sequence``
        Kernel arguments after ``X`` (see :meth:`flowcert.attention.params.AttentionParams.kernel_args`);
        a callable is evaluated at every RK4 stage time (time-varying heads). ``W`` (if the
        structure has an ellipsoid) is the last argument.
    W : Tensor (d, d), optional
        Ellipsoid of the retraction and the drift (must equal the kernel's ``W``).
    record_every : int
        If positive, ``trajectory`` holds the state every ``record_every`` steps (attribute
        ``path`` of shape (m, batch, n, d) with times ``times``).
    args_grid : callable ``times -> sequence of Tensors``, optional
        Vectorised time-varying arguments (each with a leading axis ``len(times)``, see
        :meth:`~flowcert.attention.params.AttentionParams.kernel_args_many`); replaces ``args``.
        The RK4 stage times of ``chunk_steps`` steps lie on the half-step grid
        :math:`t_0+kh/2`, which is evaluated in one call per chunk.
    """
    kernel = structure_field(structure)
    at = _args_at(args)
    varying = callable(args)
    h = t_end / steps
    X, drift, path, times = X0, [], [X0], [t0]
    grid: Sequence[torch.Tensor] = ()
    for s in range(steps):
        start = t0 + s * h
        if args_grid is not None and s % chunk_steps == 0:
            m = min(chunk_steps, steps - s)
            grid = args_grid(t0 + (2 * s + np.arange(2 * m + 1)) * (h / 2))
        if args_grid is not None:
            base = 2 * (s % chunk_steps)

            def field(tt: torch.Tensor, y: integrators.State, base: int = base) -> integrators.State:
                k = base + int(round(float(tt.reshape(-1)[0]) / (h / 2)))  # stage offset 0, h/2 or h
                return kernel(y[0], *(a[k] for a in grid))
        else:
            def field(tt: torch.Tensor, y: integrators.State, start: float = start) -> integrators.State:
                return kernel(y[0], *at(start + float(tt.reshape(-1)[0]) if varying else start))

        (X,) = integrators.rk4(field, (X,), h, 1)
        norms = w_norms(X, W)
        drift.append((norms - 1).abs().amax(dim=-1).detach())
        if renormalize:
            X = X / norms[..., None]
        if record_every and (s + 1) % record_every == 0:
            path.append(X)
            times.append(start + h)
    empty = torch.zeros(0, X0.shape[0], dtype=X0.dtype, device=X0.device)
    out = AttentionTrajectory(X, torch.stack(drift) if drift else empty)
    if record_every:
        out.path = torch.stack(path)  # type: ignore[attr-defined]
        out.times = times  # type: ignore[attr-defined]
    return out


@dataclass
class AdaptiveTrajectory:
    """An adaptive run on the manifold: final tokens, the time reached per sample, accepted and
    rejected steps, and the largest drift before a retraction (over all steps and samples)."""

    X: torch.Tensor
    t: torch.Tensor
    steps: torch.Tensor
    rejected: torch.Tensor
    max_drift: float


def simulate_adaptive(structure: Structure, X0: torch.Tensor, args: Args, t_end: float, *,
                      W: torch.Tensor | None = None, rtol: float = 1e-9, atol: float = 1e-11,
                      max_steps: int = 200_000, t0: float = 0.0) -> AdaptiveTrajectory:
    r"""Integrate a batch of configurations with Dormand–Prince 5(4) and the retraction
    :math:`x_i\leftarrow x_i/|x_i|_W` after every step (:func:`flowcert.gpu.integrators.dopri5`).

    Steps follow the local error (``rtol``/``atol``), so a run that settles takes long steps
    where fixed-step RK4 would take ``t_end / dt``. With time-varying ``args`` (a callable of
    the time) the batch shares one step size and one time. ``max_steps`` bounds the attempts; a
    sample that has not reached ``t_end`` then reports the time it reached.
    """
    kernel = structure_field(structure)
    at = _args_at(args)
    varying = callable(args)
    drift = [0.0]

    def field(tt: torch.Tensor, y: integrators.State) -> integrators.State:
        return kernel(y[0], *at(t0 + float(tt.reshape(-1)[0]) if varying else t0))

    def retract(y: integrators.State) -> integrators.State:
        norms = w_norms(y[0], W)
        drift[0] = max(drift[0], float((norms - 1).abs().nan_to_num(nan=0.0).amax()))
        return (y[0] / norms[..., None],)

    span = max(t_end, 1e-300)
    res = integrators.dopri5(field, (X0,), t_end, rtol=rtol, atol=atol, h0=min(1e-2, span), max_steps=max_steps,
                             project=retract, shared_step=varying)
    return AdaptiveTrajectory(res.y[0], t0 + res.t, res.steps, res.rejected, drift[0])


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
    """One head, full attention, unit sphere: ``steps`` classical RK4 steps.

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
    return simulate(Structure(normalization=normalization), X0, (_temperature(Q, beta), K, V), t_end, steps,
                    renormalize=renormalize)


@dataclass
class RestResult:
    """Batched runs to rest: final tokens, per-sample final speed :math:`\\max_i|\\dot x_i|`,
    whether it fell below the tolerance, the time it did, and the largest drift."""

    X: torch.Tensor
    speed: torch.Tensor
    settled: torch.Tensor
    t_settled: torch.Tensor
    max_drift: torch.Tensor


@torch.no_grad()
def simulate_to_rest(structure: Structure, X0: torch.Tensor, args: Sequence[torch.Tensor], *, dt: float = 0.05,
                     t_max: float = 400.0, tol: float = 1e-7, chunk: float = 10.0,
                     W: torch.Tensor | None = None) -> RestResult:
    """Run RK4 (step ``dt``) in chunks of ``chunk`` time units until every sample's speed
    :math:`\\max_i|F_i|` is below ``tol`` or ``t_max`` is reached (constant arguments). The speed
    test only decides when to stop integrating; limits are classified afterwards by Newton and
    certificates (:mod:`flowcert.numeric.attention.multistability`)."""
    kernel = structure_field(structure)
    X = X0
    batch = X0.shape[0]
    t_set = torch.full((batch,), float("nan"), dtype=X0.dtype, device=X0.device)
    drift = torch.zeros(batch, dtype=X0.dtype, device=X0.device)
    steps = max(1, int(round(chunk / dt)))
    t = 0.0
    while True:
        speed = torch.linalg.vector_norm(kernel(X, *args)[0], dim=-1).amax(-1)
        settled = speed < tol
        t_set = torch.where(settled & torch.isnan(t_set), torch.full_like(t_set, t), t_set)
        if bool(settled.all()) or t >= t_max:
            return RestResult(X, speed, settled, t_set, drift)
        active = ~settled
        traj = simulate(structure, X[active], args, steps * dt, steps, W=W)
        X = X.clone()
        X[active] = traj.X
        drift[active] = torch.maximum(drift[active], traj.drift.amax(0))
        t += steps * dt
