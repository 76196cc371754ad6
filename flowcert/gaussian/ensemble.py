r"""``flowcert simulate gaussian --samples N``: an ensemble of perturbed initial states on cpu or cuda.

Each sample :math:`k` starts from :math:`\mu_0^{(k)}=\mu_0+\varepsilon\,s\,z_k` and
:math:`\Sigma_0^{(k)}=\Sigma_0+\varepsilon\,s\,G_kG_k^\top/d` (:math:`z_k`, :math:`G_k` standard
normal, :math:`s=1+\|\Sigma_0\|_2^{1/2}+\|\mu_0\|`, so :math:`\Sigma_0^{(k)}\succeq0`) and follows the
moment ODE of the gaussian paper, eq. (7),

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top ,

through the batched torch integrator of :mod:`flowcert.gpu` (Dormand–Prince 5(4) with a step size
per sample, the kernel printed from :func:`flowcert.symbolic.gaussian.moment_program`). A sample
*blows up* (numerically) when :math:`\|\Sigma\|_F` crosses :math:`10^8(1+\|\Sigma_0\|_F)`; the blow-up times are
threshold crossings (upper estimates of the blow-up time, not a proof of blow-up, which stays with
Thm 4.8 and the Riccati form in ``verify``). Reported: the spread of blow-up times and of the final
states of the samples that reached ``t_end``.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from .params import GaussianParams

#: Relative size :math:`\varepsilon` of the perturbation of the initial state.
PERTURBATION = 1e-2
#: Escape threshold factor: :math:`\|\Sigma\|_F > 10^8\,(1+\|\Sigma_0\|_F)`.
ESCAPE_FACTOR = 1e8
MAX_SAMPLES = 100_000


class Spread(TypedDict):
    """Minimum, maximum, mean and sample standard deviation of a set of numbers."""

    min: float
    max: float
    mean: float
    std: float


class FinalStates(TypedDict, total=False):
    """The states of the samples that reached ``t_end``: how many, their means and largest deviations from them."""

    samples: int
    mu_mean: list[float]
    Sigma_mean: list[list[float]]
    mu_max_deviation: float
    Sigma_max_deviation: float


class EnsembleRecord(TypedDict):
    """The ``ensemble`` record of ``simulate gaussian --samples N`` (:func:`ensemble`)."""

    samples: int
    device: str
    seed: int
    t_end: float
    #: how the initial states were perturbed (``relative``, ``scale`` and the two formulas)
    perturbation: dict[str, float | str]
    integrator: str
    blowup_criterion: str
    blowups: int
    blowup_fraction: float
    #: the spread of the escape times of the samples that escaped (None: none did)
    blowup_time: Spread | None
    stopped: int
    final_states: FinalStates


def _spread(x: np.ndarray) -> Spread | None:
    if x.size == 0:
        return None
    return {"min": float(x.min()), "max": float(x.max()), "mean": float(x.mean()),
            "std": float(x.std(ddof=1)) if x.size > 1 else 0.0}


def ensemble(p: GaussianParams, samples: int, t_end: float, *, device: str = "cpu", seed: int = 0) -> EnsembleRecord:
    r"""Integrate ``samples`` perturbed initial states of eq. (7) in one batch.

    Parameters
    ----------
    p : GaussianParams
        Constant parameters (time-varying ones are refused by the caller).
    samples : int
        Batch size :math:`N\ge1`.
    t_end : float
        Horizon.
    device : {"cpu", "cuda"}
    seed : int
        Seed of the perturbations (``numpy.random.default_rng``).

    Returns
    -------
    EnsembleRecord
        The ``ensemble`` record: protocol, escape-time spread, final-state spread.
    """
    import torch

    from ..gpu import gaussian as tg

    d = p.Sigma0.shape[0]
    rng = np.random.default_rng(seed)
    s = 1.0 + math.sqrt(float(np.linalg.norm(p.Sigma0, 2))) + float(np.linalg.norm(p.mu0))
    eps = PERTURBATION * s
    G = rng.standard_normal((samples, d, d))
    Sigma0 = p.Sigma0[None] + eps * np.einsum("kij,klj->kil", G, G) / d
    Sigma0 = 0.5 * (Sigma0 + np.swapaxes(Sigma0, 1, 2))
    mu0 = p.mu0[None] + eps * rng.standard_normal((samples, d))

    def tensor(x: np.ndarray) -> torch.Tensor:
        return torch.tensor(np.asarray(x, dtype=np.float64), dtype=torch.float64, device=device)

    A, B, V = (tensor(M) for M in (p.A, p.B, p.V))
    res = tg.simulate_moments(A, B, V, tensor(p.b), tensor(mu0), tensor(Sigma0), t_end,
                              method="dopri5", blowup_factor=ESCAPE_FACTOR)
    t_final = res.t.cpu().numpy()
    escape = res.blowup_time.cpu().numpy()
    mu_T, Sigma_T = (c.detach().cpu().numpy() for c in res.y)
    escaped = np.isfinite(escape)
    reached = ~escaped & (t_final >= t_end * (1 - 1e-12))
    finals: FinalStates = {"samples": int(reached.sum())}
    if reached.any():
        mu_mean, Sigma_mean = mu_T[reached].mean(0), Sigma_T[reached].mean(0)
        finals.update({
            "mu_mean": mu_mean.tolist(),
            "Sigma_mean": Sigma_mean.tolist(),
            "mu_max_deviation": float(np.linalg.norm(mu_T[reached] - mu_mean, axis=1).max()),
            "Sigma_max_deviation": float(np.linalg.norm(Sigma_T[reached] - Sigma_mean, axis=(1, 2)).max()),
        })
    return {
        "samples": samples,
        "device": device,
        "seed": seed,
        "t_end": t_end,
        "perturbation": {"relative": PERTURBATION, "scale": eps,
                         "mu0": "mu0 + scale z, z ~ N(0, I)",
                         "Sigma0": "Sigma0 + scale G G^T / d, G with N(0, 1) entries (stays PSD)"},
        "integrator": "flowcert.gpu Dormand-Prince 5(4), per-sample steps, rtol 1e-8, atol 1e-10, float64",
        "blowup_criterion": f"||Sigma||_F > {ESCAPE_FACTOR:g} (1 + ||Sigma0||_F) (a threshold crossing: "
                            "an upper estimate of the blow-up time, not a proof)",
        "blowups": int(escaped.sum()),
        "blowup_fraction": float(escaped.mean()),
        "blowup_time": _spread(escape[escaped]),
        "stopped": int((~escaped & ~reached).sum()),
        "final_states": finals,
    }
