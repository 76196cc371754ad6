r"""Partial traces of operators on :math:`\mathbb R^{B\times T\times H}` at real size, and consensus spectra
(KPFlow paper App. B.3; note §2.8).

For an operator :math:`A` on :math:`\mathbb R^{K}\otimes\mathbb R^{S}` (K the kept axes, S the traced
ones, both subsets of (B, T, H)) the **partial trace** is the :math:`|K|\times|K|` matrix

.. math:: \operatorname{tr}_S(A)_{k,k'}=\sum_{s}A_{(k,s),(k',s)} .

**Randomized estimator.** With Rademacher probes :math:`z\in\{\pm1\}^{|S|}`,
:math:`\mathbb E[zz^\top]=I`, so

.. math:: \mathbb E\big[(e_k\otimes z)^\top A\,(e_{k'}\otimes z)\big]=\sum_{s,s'}\mathbb E[z_sz_{s'}]A_{(k,s),(k',s')}
          =\operatorname{tr}_S(A)_{k,k'} :

the mean :math:`\bar M` of the per-probe matrices :math:`M_i` over m independent probes is unbiased,
with elementwise standard error :math:`\mathrm{sd}(M_i)/\sqrt m` (sample standard deviation over the
probes). For a Gram operator :math:`A=CC^\top` the per-probe matrix is :math:`M_i=Y_iY_i^\top`,
:math:`(Y_i)_k=C^\top(e_k\otimes z_i)`: one application of :math:`C^\top` per kept index, and every
:math:`M_i` is PSD. The :math:`m\,|K|` vectors :math:`e_k\otimes z_i` are applied as batches (one batched
mat-vec per group of probes).

**Exact path.** The same sum with the basis :math:`z=e_s` of the traced axes in place of the probes
(:math:`\operatorname{tr}_S(A)=\sum_sM_{e_s}`): used when :math:`|S|` does not exceed the number of
probes asked for (it is then no dearer).

**Block sum** (the public ``kpflow`` package's ``partial_trace``): the all-ones probe :math:`z=\mathbf 1`
gives :math:`\sum_{s,s'}A_{(k,s),(k',s')}`, which is biased by every off-diagonal term
:math:`s\neq s'`; it equals the partial trace only when A is block-diagonal over S.

**Consensus spectrum.** Eigenvalues :math:`\lambda_j` of :math:`\operatorname{tr}_S(A)/|S|` (the mean over
the traced indices). Error bars: first order, :math:`\lambda_j\approx v_j^\top M v_j` so the standard
error of :math:`\lambda_j` is that of the per-probe values :math:`v_j^\top M_iv_j` (delta method, valid
for a simple eigenvalue); and globally, by Weyl, :math:`|\hat\lambda_j-\lambda_j|\le\|E\|_2\le\|E\|_F`
with :math:`E=\bar M-\operatorname{tr}_S(A)` and :math:`\mathbb E\|E\|_F^2=\sum_{kk'}\mathrm{se}_{kk'}^2`
(reported as ``stderr_frobenius``, an estimate of the RMS of :math:`\|E\|_F`, not a bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .operators import Operator

Tensor = torch.Tensor
AXES = ("B", "T", "H")
BUDGET_BYTES = 512 * 2**20  # memory for one batch of probe vectors (and as much for their images)


def parse_keep(keep: str | Sequence[str]) -> tuple[str, ...]:
    """Kept axes, e.g. ``"T"``, ``"TH"``, ``["B", "T"]`` -> canonical (B, T, H) order; a proper, nonempty subset."""
    letters = [c for c in keep] if isinstance(keep, str) else list(keep)
    bad = [c for c in letters if c not in AXES]
    if bad:
        raise ValueError(f"axes must be among B, T, H; got {''.join(map(str, bad))!r}")
    out = tuple(a for a in AXES if a in letters)
    if not out or len(out) == 3:
        raise ValueError("keep must be a nonempty proper subset of B, T, H (something must be traced)")
    return out


@dataclass
class PartialTrace:
    r"""An exact or estimated partial trace :math:`\operatorname{tr}_S(A)` (unnormalised).

    Attributes
    ----------
    keep, traced : tuple of str
    matrix : Tensor
        :math:`|K|\times|K|` estimate (float64).
    stderr : Tensor
        Elementwise standard error (zeros on the exact path).
    per_probe : Tensor or None
        The :math:`M_i` ``[m, |K|, |K|]`` (kept for eigenvalue error bars when small enough).
    probes : int
    method : str
    """

    keep: tuple[str, ...]
    traced: tuple[str, ...]
    traced_size: int
    matrix: Tensor
    stderr: Tensor
    per_probe: Tensor | None
    probes: int
    method: str

    @property
    def exact(self) -> bool:
        return self.method.startswith("exact")

    def spectrum(self, top: int | None = None) -> dict[str, Any]:
        r"""Consensus spectrum of :math:`\operatorname{tr}_S(A)/|S|` (see module docstring), descending.

        Returns ``eigenvalues``, ``stderr`` (per eigenvalue, delta method; None where the per-probe
        matrices were not kept), ``stderr_frobenius``, ``eigenvectors`` (Tensor, columns).
        """
        n = self.traced_size
        M = (self.matrix + self.matrix.T) / (2 * n)
        lam, V = torch.linalg.eigh(M)
        lam, V = lam.flip(0), V.flip(1)
        k = lam.numel() if top is None else min(top, lam.numel())
        lam, V = lam[:k], V[:, :k]
        se: list[float] | None
        if self.exact:
            se = [0.0] * k
        elif self.per_probe is not None:
            vals = torch.einsum("kj,ikl,lj->ij", V, self.per_probe, V) / n  # [m, k]
            se = (vals.std(0, unbiased=True) / math.sqrt(vals.shape[0])).tolist()
        else:
            se = None
        return {"eigenvalues": lam.tolist(), "stderr": se,
                "stderr_frobenius": float(self.stderr.norm() / n), "eigenvectors": V}


def _split(shape: Sequence[int], keep: tuple[str, ...]) -> tuple[list[int], list[int], list[int], list[int]]:
    ki = [AXES.index(a) for a in keep]
    si = [i for i in range(3) if i not in ki]
    return ki, si, [shape[i] for i in ki], [shape[i] for i in si]


def _vectors(shape: Sequence[int], ki: list[int], si: list[int], ks: Tensor, Z: Tensor, nk: int) -> Tensor:
    """The vectors :math:`e_k\\otimes z` for k in ``ks`` and z the rows of ``Z``: [p·c, B, T, H]."""
    kd, sd = [shape[i] for i in ki], [shape[i] for i in si]
    E = torch.zeros(len(ks), nk, dtype=Z.dtype, device=Z.device)
    E[torch.arange(len(ks)), ks] = 1.0
    V = E[None, :, :, None] * Z[:, None, None, :]  # [p, c, nk, ns]
    V = V.reshape([Z.shape[0] * len(ks)] + kd + sd)
    inv = np.argsort(ki + si)
    return V.permute(0, *(int(i) + 1 for i in inv)).contiguous()


def _kept_by_traced(out: Tensor, ki: list[int], si: list[int], nk: int, ns: int) -> Tensor:
    """``[n, B, T, H] -> [n, |K|, |S|]``."""
    return out.permute(0, *(i + 1 for i in ki + si)).reshape(out.shape[0], nk, ns)


def partial_trace(op: Operator, keep: str | Sequence[str], *, probes: int = 64, seed: int = 0,
                  factor_adjoint: Callable[[Tensor], Tensor] | None = None, exact: bool | None = None,
                  budget_bytes: int = BUDGET_BYTES, keep_per_probe: int = 50_000_000) -> PartialTrace:
    r"""Partial trace of ``op`` over the axes not in ``keep``: exact, or unbiased with standard errors.

    Parameters
    ----------
    op : Operator
        A (its ``apply_batch`` is used). Only its shape, dtype and device matter when
        ``factor_adjoint`` is given.
    keep : str or sequence of str
        Kept axes, e.g. ``"T"`` (time consensus: trace over trials and hidden units).
    probes : int
        Number m of Rademacher probes (at least 2).
    seed : int
    factor_adjoint : callable, optional
        For a Gram operator :math:`A=CC^\top`: :math:`V\mapsto C^\top V`, [n, B, T, H] -> [n, d]
        (the per-probe matrices are then :math:`YY^\top`, PSD).
    exact : bool, optional
        Force (True) or forbid (False) the exact path; default: exact when :math:`|S|\le m`.
    budget_bytes : int
        Memory for one batch of probe vectors.
    keep_per_probe : int
        Keep the per-probe matrices (for eigenvalue error bars) when ``m·|K|²`` is at most this.
    """
    keep_t = parse_keep(keep)
    shape = op.shape
    ki, si, kd, sd = _split(shape, keep_t)
    nk, ns = int(np.prod(kd)), int(np.prod(sd))
    if exact is None:
        exact = ns <= probes
    if not exact and probes < 2:
        raise ValueError("probes must be at least 2 for a standard error")
    dt, dev = op.dtype, op.device
    if exact:
        Z = torch.eye(ns, dtype=dt, device=dev)
        m = ns
    else:
        gen = torch.Generator().manual_seed(int(seed))
        Z = (torch.randint(0, 2, (probes, ns), generator=gen) * 2 - 1).to(dtype=dt, device=dev)
        m = probes
    item = torch.finfo(dt).bits // 8
    vec_bytes = op.size * item
    gram = factor_adjoint is not None
    # probes per batch (all kept indices at once) or kept indices per batch (one probe at a time)
    chunk = nk if gram else max(1, min(nk, budget_bytes // vec_bytes))
    group = max(1, budget_bytes // (vec_bytes * nk)) if chunk == nk else 1
    store = m * nk * nk <= keep_per_probe
    S1 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
    S2 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
    per = torch.empty(m, nk, nk, dtype=torch.float64, device=dev) if store and not exact else None
    allk = torch.arange(nk)
    for g0 in range(0, m, group):
        Zg = Z[g0:g0 + group]
        p = Zg.shape[0]
        Mg = torch.empty(p, nk, nk, dtype=torch.float64, device=dev)
        for c0 in range(0, nk, chunk):
            ks = allk[c0:c0 + chunk]
            V = _vectors(shape, ki, si, ks, Zg, nk)
            if gram:
                assert factor_adjoint is not None
                Y = factor_adjoint(V).reshape(p, nk, -1).to(torch.float64)
                Mg = Y @ Y.transpose(1, 2)
            else:
                out = _kept_by_traced(op.apply_batch(V), ki, si, nk, ns).reshape(p, len(ks), nk, ns)
                # M[k, k'] = sum_s z_s (A (e_k' x z))_{(k, s)}: column k' from the image of e_k' x z
                Mg[:, :, c0:c0 + len(ks)] = torch.einsum("pcks,ps->pkc", out, Zg).to(torch.float64)
            del V
        S1 += Mg.sum(0)
        S2 += (Mg**2).sum(0)
        if per is not None:
            per[g0:g0 + p] = Mg
    if exact:
        return PartialTrace(keep_t, tuple(AXES[i] for i in si), ns, S1, torch.zeros_like(S1), None, ns,
                            f"exact: basis of the traced axes ({ns} vectors e_s, {nk * ns} applications)")
    mean = S1 / m
    var = (S2 - m * mean**2).clamp_min(0) / (m - 1)
    return PartialTrace(keep_t, tuple(AXES[i] for i in si), ns, mean, (var / m).sqrt(), per, m,
                        f"Rademacher probes on the traced axes ({m} probes x {nk} kept indices; "
                        f"{'Gram factor C^T' if gram else 'operator'} applied in batches), unbiased")


def block_sum(op: Operator, keep: str | Sequence[str],
              factor_adjoint: Callable[[Tensor], Tensor] | None = None) -> Tensor:
    r"""kpflow's ``partial_trace``: :math:`\sum_{s,s'}A_{(k,s),(k',s')}` (the all-ones probe; biased).

    With ``factor_adjoint`` (:math:`A=CC^\top`, as in :func:`partial_trace`) it is :math:`YY^\top`,
    :math:`Y_k=C^\top(e_k\otimes\mathbf 1)`.
    """
    keep_t = parse_keep(keep)
    ki, si, kd, sd = _split(op.shape, keep_t)
    nk, ns = int(np.prod(kd)), int(np.prod(sd))
    Z = torch.ones(1, ns, dtype=op.dtype, device=op.device)
    V = _vectors(op.shape, ki, si, torch.arange(nk), Z, nk)
    if factor_adjoint is not None:
        Y = factor_adjoint(V).reshape(nk, -1).to(torch.float64)
        return Y @ Y.T
    out = _kept_by_traced(op.apply_batch(V), ki, si, nk, ns)
    return torch.einsum("cks,s->kc", out, Z[0]).to(torch.float64)


def consensus(kp: Any, which: str, keep: str | Sequence[str], *, probes: int = 64, seed: int = 0,
              top: int = 20, exact: bool | None = None, budget_bytes: int = BUDGET_BYTES) -> dict[str, Any]:
    r"""Consensus spectrum of one KPFlow operator (``which`` in ``"K"``, ``"PP"``, ``"PKP"``).

    Uses the Gram factors :math:`\mathcal P\mathcal P^\top=\mathcal P\mathcal P^\top`,
    :math:`\mathcal K=(G/\sqrt B)(G/\sqrt B)^\top`, :math:`\mathcal P\mathcal K\mathcal P^\top=
    (\mathcal PG/\sqrt B)(\cdot)^\top` (so every per-probe matrix is PSD); returns the JSON-ready
    ``consensus`` entry of ``kpflow analyze`` (see module docstring) with the block sum's distance.
    """
    from .operators import ParameterJacobian

    ops = {"K": kp.K, "PP": kp.PP, "PKP": kp.PKP}
    if which not in ops:
        raise ValueError(f"operator must be one of K, PP, PKP; got {which!r}")
    op = ops[which]
    B = op.shape[0]
    fa: Callable[[Tensor], Tensor]
    if which == "PP":
        fa = lambda V: kp.P.adjoint_batch(V).reshape(V.shape[0], -1)  # noqa: E731
    else:
        G = ParameterJacobian(kp.tr)
        s = 1.0 / math.sqrt(B)
        pre = (lambda V: V) if which == "K" else kp.P.adjoint_batch

        def fa(V: Tensor) -> Tensor:
            W = pre(V)
            return torch.stack([torch.cat([g.reshape(-1) for g in G.adjoint(w).values()]) for w in W]) * s
    pt = partial_trace(op, keep, probes=probes, seed=seed, factor_adjoint=fa, exact=exact, budget_bytes=budget_bytes)
    sp = pt.spectrum(top)
    bs = block_sum(op, keep, fa)
    diff = float((bs - pt.matrix).norm() / pt.matrix.norm().clamp_min(1e-300))
    return {"keep": "".join(pt.keep), "traced": "".join(pt.traced), "operator": op.name,
            "normalisation": f"eigenvalues of tr_S(A)/|S|, S = {''.join(pt.traced)} ({pt.traced_size} indices)",
            "eigenvalues": sp["eigenvalues"], "stderr": sp["stderr"], "stderr_frobenius": sp["stderr_frobenius"],
            "probes": pt.probes, "method": pt.method, "exact": pt.exact,
            "block_sum_relative_difference": diff,
            "block_sum_eigenvalues": torch.linalg.eigvalsh((bs + bs.T) / (2 * pt.traced_size)).flip(0)[:top].tolist()}
