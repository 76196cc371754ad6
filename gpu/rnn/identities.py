r"""Residuals of the KPFlow identities on one trajectory (Proposition 1, Corollary 1, adjoint,
inverse, hidden NTK), each a relative error.

* ``prop1``: :math:`r(\eta)=\|\frac{z(\theta-\eta\nabla L)-z(\theta)}{\eta}+\mathcal P\mathcal K\mathcal P^*\mathrm{Err}\|/\|\mathcal P\mathcal K\mathcal P^*\mathrm{Err}\|`.
  For a trajectory affine in θ (the ``linear`` cell) :math:`r(\eta)` is at the rounding floor
  :math:`\approx\|Z(\theta(1+4\epsilon r))-Z(\theta)\|/(\eta\|\partial_sz\|)` (r random signs, ε the unit
  of the dtype in use, measured); otherwise :math:`r(\eta)=c\,\eta+O(\eta^2)`, and
  the observed order :math:`\log(r_i/r_{i+1})/\log(\eta_i/\eta_{i+1})` is reported. The exact
  directional derivative (one jvp through the whole rollout) is compared too (``prop1_jvp``).
* ``gradient``: :math:`\frac1BG^\top\mathcal P^*\mathrm{Err}=\nabla_\theta L` (autograd).
* ``cor1``: :math:`\partial_sy=-W_{out}\mathcal P\mathcal K\mathcal P^*W_{out}^\top(y-y^*)` against the
  finite difference of the outputs (W_out frozen).
* ``adjoint``: :math:`|\langle\mathcal Pq,r\rangle-\langle q,\mathcal P^*r\rangle|/(\|\mathcal Pq\|\|r\|+\|q\|\|\mathcal P^*r\|)`, also for K and P^{-1}.
* ``inverse``: :math:`\max(\|\mathcal P^{-1}\mathcal Pq-q\|,\|\mathcal P\mathcal P^{-1}q-q\|)/\|q\|`.
* ``ntk``: :math:`\|\tfrac1BJ_ZJ_Z^\top q-\mathcal P\mathcal K\mathcal P^\top q\|/\|\tfrac1BJ_ZJ_Z^\top q\|`.

**Rounding floor and tolerance** (:func:`rounding`), from the dtype actually used: with ε its machine
epsilon (``torch.finfo(dtype).eps``: 2.2e-16 in float64, 1.2e-7 in float32), a path of the
recurrence accumulates :math:`n=T(H+I+1)` rounded terms (T steps, each a length-(H+I+1) inner
product), so the relative rounding error of an identity between two evaluations is modelled as
:math:`\epsilon\sqrt n` (independent roundings), amplified by the trajectory's own sensitivity
:math:`s=\|Z(\theta(1+4\epsilon r))-Z(\theta)\|/(4\|Z\|)` (measured: about ε for a
well-conditioned run, much larger for a chaotic one):

.. math:: \text{floor}=\epsilon\,\max(\sqrt n,\ s/\epsilon),\qquad \tau=C\,\text{floor},\quad C=16 .

An exact identity (``prop1_jvp``, ``gradient``) holds when its relative residual is at most τ. Measured
(tests/test_rnn_dtypes.py): residuals of holding identities are 1–25 ε in both dtypes, so τ has a
margin of at least 10; a perturbed operator (relative error δ) gives a residual ≈ δ and disagrees
for every δ > τ (float64 at T = 100, H = 64: τ ≈ 3e-13; float32: τ ≈ 1.6e-4).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch
from .operators import KPFlow, Trajectory, hidden_ntk, jvp, loss, readout_error, rollout

EPS = float(torch.finfo(torch.float64).eps)
TOLERANCE_FACTOR = 16.0  # C in the module docstring


def eps_of(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating dtype."""
    return float(torch.finfo(dtype).eps)


def rounding(tr: Trajectory, sensitivity: float) -> dict[str, Any]:
    """The rounding floor and the tolerance of an exact identity for this trajectory (module docstring)."""
    B, T, H = tr.shape
    eps = eps_of(tr.dtype)
    n = T * (H + tr.x.shape[-1] + 1)
    floor = eps * max(math.sqrt(n), sensitivity / eps)
    return {"dtype": str(tr.dtype).replace("torch.", ""), "eps": eps, "terms": n, "sensitivity": sensitivity,
            "floor": floor, "tolerance": TOLERANCE_FACTOR * floor,
            "definition": "floor = eps * max(sqrt(T (H + I + 1)), s / eps), s = ||Z(theta (1 + 4 eps r)) - Z|| / (4 ||Z||); "
                          f"tolerance = {TOLERANCE_FACTOR:g} * floor"}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def gradient(tr: Trajectory, W_out: torch.Tensor, b_out: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """:math:`\\nabla_\\theta L` by autograd through the rollout."""
    th = {k: v.detach().clone().requires_grad_(True) for k, v in tr.theta.items()}
    L = loss(rollout(tr.cell, th, tr.x, tr.h0), W_out, b_out, y)
    grads = torch.autograd.grad(L, list(th.values()))
    return {k: g.detach() for k, g in zip(th, grads)}


def prop1(kp: KPFlow, W_out: torch.Tensor, b_out: torch.Tensor, y: torch.Tensor,
          rel_steps: Sequence[float] = (1e-1, 1e-2, 1e-3, 1e-4)) -> dict[str, Any]:
    r"""Proposition 1 and Corollary 1 against finite-difference gradient steps (see module docstring).

    The learning rates are scale-aware: :math:`\eta=s\,\|\theta\|/\|\nabla L\|` for each relative
    parameter step s in ``rel_steps``.
    """
    tr = kp.tr
    err = readout_error(tr.Z, W_out, b_out, y)
    flow = kp.gd_flow(err)
    g = gradient(tr, W_out, b_out, y)
    from .operators import ParameterJacobian

    G = getattr(kp.K, "G", None) or ParameterJacobian(tr)
    B = tr.shape[0]
    g_op = {k: v / B for k, v in G.adjoint(kp.P.adjoint(err)).items()}
    g_num = torch.cat([g_op[k].reshape(-1) for k in g])
    g_ref = torch.cat([g[k].reshape(-1) for k in g])
    f = lambda th: rollout(tr.cell, th, tr.x, tr.h0)  # noqa: E731
    d_exact = jvp(f, (tr.theta,), ({k: -v for k, v in g.items()},))[1]
    gn = float(g_ref.norm())
    tn = float(torch.cat([v.reshape(-1) for v in tr.theta.values()]).norm())
    etas = [s * tn / max(gn, 1e-300) for s in rel_steps]
    rows = []
    fn = float(flow.norm())
    # rounding noise of one rollout: perturb every parameter by ~4 ulp of the dtype in use (what rounding
    # theta - eta g does)
    eps = eps_of(tr.dtype)
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():
        th_ulp = {k: v * (1 + 4 * eps * torch.sign(torch.randn(v.shape, generator=gen, dtype=torch.float64)).to(v))
                  for k, v in tr.theta.items()}
        dZ = float((rollout(tr.cell, th_ulp, tr.x, tr.h0) - tr.Z).norm())
        zn = float(tr.Z.norm())
        noise = dZ + eps * zn
    yflow = flow @ W_out.T
    for eta in etas:
        with torch.no_grad():
            Z2 = rollout(tr.cell, {k: tr.theta[k] - eta * g[k] for k in g}, tr.x, tr.h0)
        fd = (Z2 - tr.Z) / eta
        rows.append({"eta": eta, "residual": _rel(fd, flow), "cor1_residual": _rel(fd @ W_out.T, yflow),
                     "roundoff_floor": noise / (eta * max(fn, 1e-300))})
    for a, b in zip(rows, rows[1:]):
        ra, rb = a["residual"], b["residual"]
        b["observed_order"] = (math.log(ra / rb) / math.log(a["eta"] / b["eta"])) if ra > 0 and rb > 0 else None
    return {"name": "prop1", "statement": "(z(theta - eta grad L) - z(theta))/eta = -P K P* Err + O(eta)",
            "fd": rows, "prop1_jvp": _rel(d_exact, flow), "gradient": _rel(g_num, g_ref),
            "flow_norm": fn, "rounding": rounding(tr, dZ / (4 * zn) if zn > 0 else 0.0)}


def operator_identities(kp: KPFlow, seed: int = 0) -> dict[str, Any]:
    """Adjoint, inverse and hidden-NTK residuals on random probes (float64)."""
    gen = torch.Generator().manual_seed(seed)
    shp = kp.tr.shape
    dt, dev = kp.tr.dtype, kp.tr.device
    q = torch.randn(shp, generator=gen, dtype=torch.float64).to(dtype=dt, device=dev)
    r = torch.randn(shp, generator=gen, dtype=torch.float64).to(dtype=dt, device=dev)

    def adj(op: Any) -> float:
        a, b = op(q), op.adjoint(r)
        num = abs(float((a * r).sum() - (q * b).sum()))
        return num / (float(a.norm() * r.norm() + q.norm() * b.norm()) + 1e-300)

    Pinv = kp.P.inverse()
    inv = max(_rel(Pinv(kp.P(q)), q), _rel(kp.P(Pinv(q)), q))
    ntk_q = hidden_ntk(kp.tr)(q)
    return {
        "adjoint": {"name": "adjoint", "P": adj(kp.P), "K": adj(kp.K), "P_inv": adj(Pinv)},
        "inverse": {"name": "inverse", "residual": inv},
        "ntk": {"name": "ntk", "residual": _rel(kp.PKP(q), ntk_q)},
    }
