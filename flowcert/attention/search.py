r"""Equilibria of attention flows outside model (1) (several heads, causal masks, ellipsoids): found
by runs to rest, classified, never certified.

.. math::

    \dot x_i=(I-x_ix_i^\top W)\sum_\eta V_\eta\sum_jA^\eta_{ij}(X)\,x_j
    \qquad\text{(consensus paper, eq. (7); multistability paper, eqs. (1), (2), (5))}

The exact enumeration of :mod:`flowcert.attention.enumeration` (one class per eigenvector of a
symmetric :math:`V` and sign split) and its Krawczyk certificates hold for one constant head with
full attention on the sphere. For any other constant structure an equilibrium is a zero of the
field on :math:`(\mathcal E_W)^n`; runs from seeded random tokens are integrated until
:math:`\max_i|\dot x_i|` falls below :math:`10^{-7}`, the end states are de-duplicated (up to token
order), classified by the shared classifier (:func:`flowcert.attention.classify.limit_of`) and
reported with ``stable: null``: a settled run is evidence, not a proof, of stability, and no
interval certificate is available for these structures.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from .params import AttentionParams
from .records import EquilibriaBody, EquilibriumRecord


class RestRuns(TypedDict):
    """Runs to rest (:func:`run_to_rest`), one row per run: initial and final tokens, whether each settled,
    its final speed, settling time and largest drift off the manifold."""

    X0: np.ndarray
    X: np.ndarray
    settled: np.ndarray
    speed: np.ndarray
    t_settled: np.ndarray
    drift: np.ndarray


def search(p: AttentionParams, samples: int, seed: int) -> EquilibriaBody:
    """The ``equilibria attention`` body for a constant structure outside model (1)."""
    from .classify import limit_of

    rest = run_to_rest(p, samples, seed, t_max=p.t_end if "t_end" in p.given else 400.0)
    found: list[EquilibriumRecord] = []
    seen: list[np.ndarray] = []
    for X, settled, speed in zip(rest["X"], rest["settled"], rest["speed"]):
        if not settled:
            continue
        key = np.array(sorted(map(tuple, np.round(X, 5))))
        if any(np.abs(key - s).max() < 1e-4 for s in seen):
            continue
        seen.append(key)
        lc = limit_of(p, X, speed=float(speed))
        found.append({"class": lc.labels, "eigvec_index": None, "X": X.tolist(), "clusters": lc.clusters,
                      "tangent_spectrum": None, "ambient_spectrum": None, "stable": None, "certificate": None,
                      "reason": (f"end state of a run to rest (max |xdot| = {float(speed):.1e}); no certified "
                                 "verdict for this structure (the Krawczyk certificate covers one constant head, "
                                 "full attention, unit sphere)")})
    unsettled = int((~rest["settled"].astype(bool)).sum())
    return {"classes": [], "equilibria": found, "eigenvalues": None, "eigenvalue_enclosures": None,
            "skipped": {"reason": "no exact enumeration for this structure (several heads, a causal mask or an "
                                  "ellipsoid): equilibria are the distinct end states of runs to rest; equilibria "
                                  "not reached from these initial conditions, and unstable ones, are not found",
                        "runs": samples, "not_settled": unsettled}}


def run_to_rest(p: AttentionParams, samples: int, seed: int, t_max: float = 400.0, dt: float = 0.05,
                 device: Any = "cpu") -> RestRuns:
    """``samples`` runs of ``p`` from seeded random tokens to rest (batched torch RK4 with the retraction,
    :func:`flowcert.gpu.attention.simulate_to_rest`): initial and final states, which settled, their
    final speeds, settling times and drift off the manifold."""
    import torch

    from ..gpu import attention as ga

    rng = np.random.default_rng(seed)
    X0 = p.initial_tokens(samples, rng)
    dev = torch.device(device)
    args = [torch.as_tensor(np.array(a), dtype=torch.float64, device=dev) for a in p.kernel_args(0.0)]
    W = None if p.W is None else torch.as_tensor(np.array(p.W), device=dev)
    r = ga.simulate_to_rest(p.structure, torch.as_tensor(X0, device=dev), args, dt=dt, t_max=t_max, tol=1e-7, W=W)
    return {"X0": X0, "X": r.X.cpu().numpy(), "settled": r.settled.cpu().numpy(), "speed": r.speed.cpu().numpy(),
            "t_settled": r.t_settled.cpu().numpy(), "drift": r.max_drift.cpu().numpy()}
