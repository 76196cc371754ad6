r"""Residuals of the KPFlow identities on one trajectory (Proposition 1, Corollary 1, adjoint,
inverse, hidden NTK), each a relative error.

* ``prop1``: :math:`r(\eta)=\|\frac{z(\theta-\eta\nabla L)-z(\theta)}{\eta}+\mathcal P\mathcal K\mathcal P^*\mathrm{Err}\|/\|\mathcal P\mathcal K\mathcal P^*\mathrm{Err}\|`.
  For a trajectory affine in θ (the ``linear`` cell) :math:`r(\eta)` is at the floor below (measured);
  otherwise :math:`r(\eta)=c\,\eta+O(\eta^2)`, and
  the observed order :math:`\log(r_i/r_{i+1})/\log(\eta_i/\eta_{i+1})` is reported. The exact
  directional derivative (one jvp through the whole rollout) is compared too (``prop1_jvp``).
* ``gradient``: :math:`\frac1BG^\top\mathcal P^*\mathrm{Err}=\nabla_\theta L` (autograd).
* ``cor1``: :math:`\partial_sy=-W_{out}\mathcal P\mathcal K\mathcal P^*W_{out}^\top(y-y^*)` against the
  finite difference of the outputs (W_out frozen).
* ``adjoint``: :math:`|\langle\mathcal Pq,r\rangle-\langle q,\mathcal P^*r\rangle|/(\|\mathcal Pq\|\|r\|+\|q\|\|\mathcal P^*r\|)`, also for K and P^{-1}.
* ``inverse``: :math:`\max(\|\mathcal P^{-1}\mathcal Pq-q\|,\|\mathcal P\mathcal P^{-1}q-q\|)/\|q\|`.
* ``ntk``: :math:`\|\tfrac1BJ_ZJ_Z^\top q-\mathcal P\mathcal K\mathcal P^\top q\|/\|\tfrac1BJ_ZJ_Z^\top q\|`.

**The function is evaluated in float64** (:func:`float64_reference`). The operators (the flow
:math:`-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}`, the operator gradient) run in the dtype in use;
the function they are compared with — the rollout, its autograd gradient, its exact directional
derivative (one jvp) and its finite differences — is evaluated in float64 on the same weights, inputs
and initial state. For a float32 model that is exact (every float32 number is a float64 number): the
same mathematical function with 2^29 times less rounding. So the verdicts are statements about the
function, not about one BLAS or ATen kernel: no float32 rounding noise enters the finite differences,
and the float32 operators' own error is *measured*, as the distance
:math:`e=\|\partial_sz^{\rm exact}-\text{flow}\|/\|\text{flow}\|` to the exact float64 directional derivative
(``prop1_jvp``; ``cor1_jvp`` for the outputs).

**Floor of a finite-difference row** (measured): :math:`\text{floor}(\eta)=\nu/(\eta\|\text{flow}\|)+e`, with
:math:`\nu=\|Z(\theta(1+4\epsilon_{64}r))-Z(\theta)\|+\epsilon_{64}\|Z\|` the rounding noise of one float64
rollout (r random signs) and e the operators' measured error above (Cor. 1: the same with
:math:`W_{out}` applied). A row whose residual exceeds 8 floors is dominated by the :math:`O(\eta)` term.

**Tolerance of the exact identities** (:func:`rounding`), from the dtype in use: with ε its machine
epsilon (2.2e-16 in float64, 1.2e-7 in float32), a path of the recurrence accumulates
:math:`n=T(H+I+1)` rounded terms (T steps, each a length-(H+I+1) inner product), so the relative
rounding error of the operators is modelled as :math:`\epsilon\sqrt n` (independent roundings),
amplified by the trajectory's own sensitivity
:math:`s=\|Z(\theta(1+4\epsilon r))-Z(\theta)\|/(4\|Z\|)`, measured on the float64 function (about ε for a
well-conditioned run, much larger for a chaotic one):

.. math:: \text{floor}=\epsilon\,\max(\sqrt n,\ s/\epsilon),\qquad \tau=C\,\text{floor},\quad C=16 .

An exact identity (``prop1_jvp``, ``gradient``) holds when its relative residual is at most τ. Measured
(tests/test_rnn_dtypes.py): residuals of holding identities are 1–25 ε in both dtypes, so τ has a
margin of at least 10, also under a float32 kernel 40 times noisier than correct rounding; a perturbed
operator (relative error δ) gives a residual ≈ δ and disagrees for every δ > τ (float64 at T = 100,
H = 64: τ ≈ 3e-13; float32: τ ≈ 1.6e-4).
"""

from __future__ import annotations

import math
from typing import Any, Sequence, TypedDict

import torch
from .operators import KPFlow, Trajectory, hidden_ntk, jvp, loss, readout_error, rollout

EPS = float(torch.finfo(torch.float64).eps)
TOLERANCE_FACTOR = 16.0  # C in the module docstring


def eps_of(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating dtype."""
    return float(torch.finfo(dtype).eps)


class RoundingFloor(TypedDict):
    """The rounding floor and tolerance of an exact identity (:func:`rounding`), with what they were made of."""

    dtype: str
    eps: float
    terms: int
    sensitivity: float
    floor: float
    tolerance: float
    definition: str


class StepRow(TypedDict, total=False):
    """One finite-difference step of :func:`prop1`: residuals, their rounding floors, the observed order (after the first)."""

    eta: float
    residual: float
    cor1_residual: float
    roundoff_floor: float
    cor1_roundoff_floor: float
    observed_order: float | None


class Prop1Check(TypedDict):
    """Proposition 1 and Corollary 1 against finite differences (:func:`prop1`)."""

    name: str
    statement: str
    fd: list[StepRow]
    prop1_jvp: float
    cor1_jvp: float
    gradient: float
    flow_norm: float
    reference: str
    rounding: RoundingFloor


class AdjointResiduals(TypedDict):
    r"""Relative residuals of :math:`\langle Aq,r\rangle=\langle q,A^*r\rangle` for P, K and :math:`P^{-1}`."""

    name: str
    P: float
    K: float
    P_inv: float


class IdentityResidual(TypedDict):
    """The relative residual of one operator identity."""

    name: str
    residual: float


class OperatorIdentities(TypedDict):
    """The adjoint, inverse and hidden-NTK identities (:func:`operator_identities`)."""

    adjoint: AdjointResiduals
    inverse: IdentityResidual
    ntk: IdentityResidual


def rounding(tr: Trajectory, sensitivity: float) -> RoundingFloor:
    """The rounding floor and the tolerance of an exact identity for this trajectory (module docstring)."""
    B, T, H = tr.shape
    eps = eps_of(tr.dtype)
    n = T * (H + tr.x.shape[-1] + 1)
    floor = eps * max(math.sqrt(n), sensitivity / eps)
    return {"dtype": str(tr.dtype).replace("torch.", ""), "eps": eps, "terms": n, "sensitivity": sensitivity,
            "floor": floor, "tolerance": TOLERANCE_FACTOR * floor,
            "definition": r"floor $=\varepsilon\max\bigl(\sqrt{T(H+I+1)},\,s/\varepsilon\bigr)$ with "
                          r"$s=\lVert Z(\theta(1+4\varepsilon r))-Z\rVert/(4\lVert Z\rVert)$; "
                          rf"tolerance $={TOLERANCE_FACTOR:g}\times{{}}$floor"}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def gradient(tr: Trajectory, W_out: torch.Tensor, b_out: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """:math:`\\nabla_\\theta L` by autograd through the rollout."""
    th = {k: v.detach().clone().requires_grad_(True) for k, v in tr.theta.items()}
    L = loss(rollout(tr.cell, th, tr.x, tr.h0), W_out, b_out, y)
    grads = torch.autograd.grad(L, list(th.values()))
    return {k: g.detach() for k, g in zip(th, grads)}


def float64_reference(tr: Trajectory) -> tuple[Trajectory, str]:
    """The model as an exact float64 function: ``tr`` itself in float64, else the same cell, weights, inputs
    and initial state upcast to float64 (exact: every float32 number is a float64 number), re-run.

    Returns the trajectory and what it is (``"float64"``, ``"float64 upcast of float32"``, or, when the cell
    cannot run in float64, the dtype in use with the reason)."""
    if tr.dtype == torch.float64:
        return tr, "float64"
    name = str(tr.dtype).replace("torch.", "")
    try:
        ref = tr.to(dtype=torch.float64)
    except (RuntimeError, TypeError) as exc:  # a cell that cannot run in float64
        return tr, f"{name} (no float64 evaluation: {str(exc).splitlines()[0][:120]})"
    if ref.Z.dtype != torch.float64 or not bool(torch.isfinite(ref.Z).all()):
        return tr, f"{name} (the float64 evaluation of the cell is not a finite float64 trajectory)"
    return ref, f"float64 upcast of {name}"


def _perturbed(tr: Trajectory, rel: float, seed: int = 11) -> torch.Tensor:
    r""":math:`Z(\theta(1+\text{rel}\,r))` with r random signs (a fixed seed)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        th = {k: v * (1 + rel * torch.sign(torch.randn(v.shape, generator=gen, dtype=torch.float64)).to(v))
              for k, v in tr.theta.items()}
        return rollout(tr.cell, th, tr.x, tr.h0)


def prop1(kp: KPFlow, W_out: torch.Tensor, b_out: torch.Tensor, y: torch.Tensor,
          rel_steps: Sequence[float] = (1e-1, 1e-2, 1e-3, 1e-4)) -> Prop1Check:
    r"""Proposition 1 and Corollary 1 against finite-difference gradient steps (see module docstring).

    The operators' flow :math:`-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}` is computed in the dtype in
    use; the function it is compared with (the rollout, its gradient, its exact directional derivative and
    its finite differences) is evaluated in float64 on the same weights (:func:`float64_reference`), so the
    finite differences carry float64 rounding only and every noise level below is measured, not modelled.
    The learning rates are scale-aware: :math:`\eta=s\,\|\theta\|/\|\nabla L\|` for each relative
    parameter step s in ``rel_steps``.
    """
    from .operators import ParameterJacobian

    tr = kp.tr
    err = readout_error(tr.Z, W_out, b_out, y)
    flow = kp.gd_flow(err)
    ref, reference = float64_reference(tr)
    up = lambda t: t.to(dtype=ref.dtype)  # noqa: E731
    Wo, bo, yy = up(W_out), up(b_out), up(y)
    g = gradient(ref, Wo, bo, yy)
    G = getattr(kp.K, "G", None) or ParameterJacobian(tr)
    B = tr.shape[0]
    g_op = {k: v / B for k, v in G.adjoint(kp.P.adjoint(err)).items()}
    g_num = torch.cat([up(g_op[k]).reshape(-1) for k in g])
    g_ref = torch.cat([g[k].reshape(-1) for k in g])
    f = lambda th: rollout(ref.cell, th, ref.x, ref.h0)  # noqa: E731
    d_exact = up(jvp(f, (ref.theta,), ({k: -v for k, v in g.items()},))[1])
    flow = up(flow)
    yflow, y_exact = flow @ Wo.T, d_exact @ Wo.T
    fn, yn = float(flow.norm()), float(yflow.norm())
    e_z, e_y = _rel(d_exact, flow), _rel(y_exact, yflow)
    gn = float(g_ref.norm())
    tn = float(torch.cat([v.reshape(-1) for v in ref.theta.values()]).norm())
    etas = [s * tn / max(gn, 1e-300) for s in rel_steps]
    # measured rounding noise of one reference rollout: every parameter moved by ~4 ulp of the reference dtype
    # (what rounding theta - eta g does); the sensitivity of the trajectory to a relative change of 4 ulp of
    # the dtype in use (for the tolerance of the exact identities) is measured on the same reference
    eps_ref = eps_of(ref.dtype)
    dZ = _perturbed(ref, 4 * eps_ref) - ref.Z
    zn = float(ref.Z.norm())
    noise_z = float(dZ.norm()) + eps_ref * zn
    noise_y = float((dZ @ Wo.T).norm()) + eps_ref * float((ref.Z @ Wo.T).norm())
    dZ_s = dZ if ref.dtype == tr.dtype else _perturbed(ref, 4 * eps_of(tr.dtype)) - ref.Z
    rows: list[StepRow] = []
    for eta in etas:
        with torch.no_grad():
            Z2 = rollout(ref.cell, {k: ref.theta[k] - eta * g[k] for k in g}, ref.x, ref.h0)
        fd = (Z2 - ref.Z) / eta
        rows.append({"eta": eta, "residual": _rel(fd, flow), "cor1_residual": _rel(fd @ Wo.T, yflow),
                     "roundoff_floor": noise_z / (eta * max(fn, 1e-300)) + e_z,
                     "cor1_roundoff_floor": noise_y / (eta * max(yn, 1e-300)) + e_y})
    for a, b in zip(rows, rows[1:]):
        ra, rb = a["residual"], b["residual"]
        b["observed_order"] = (math.log(ra / rb) / math.log(a["eta"] / b["eta"])) if ra > 0 and rb > 0 else None
    return {"name": "prop1", "statement": "(z(theta - eta grad L) - z(theta))/eta = -P K P* Err + O(eta)",
            "fd": rows, "prop1_jvp": e_z, "cor1_jvp": e_y, "gradient": _rel(g_num, g_ref),
            "flow_norm": fn, "reference": reference,
            "rounding": rounding(tr, float(dZ_s.norm()) / (4 * zn) if zn > 0 else 0.0)}


def operator_identities(kp: KPFlow, seed: int = 0) -> OperatorIdentities:
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
