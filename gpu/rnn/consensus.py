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

**Estimator in the factor's domain** (what :func:`consensus` uses). For a Gram operator
:math:`A=CC^\top`, :math:`C:\mathbb R^d\to\mathbb R^{B\times T\times H}`, and Rademacher
:math:`\omega\in\{\pm1\}^d` (:math:`\mathbb E[\omega\omega^\top]=I_d`), :math:`v=C\omega` gives

.. math:: \mathbb E\big[\operatorname{tr}_S(vv^\top)\big]=\operatorname{tr}_S(C\,\mathbb E[\omega\omega^\top]C^\top)=\operatorname{tr}_S(A),
          \qquad \operatorname{tr}_S(vv^\top)_{k,k'}=\sum_sv_{(k,s)}v_{(k',s)} :

unbiased, every per-probe matrix PSD, and one application of C per probe, however many kept indices
(the traced-axes probes above need one application of :math:`C^\top` per kept index and probe). Its
per-probe variance is of the same order (the Hutchinson variance of a diagonal entry is
:math:`2(\|C_kC_k^\top\|_F^2-\sum\mathrm{diag}^2)` on either side, :math:`C_k` the rows of kept index k);
measured on the GRU of ``benchmarks/kpflow_ops.py``: per-probe standard deviation of
:math:`\lambda_1` 1.10 here against 1.58 on the traced axes (B=8, T=50, H=64), at a cost per probe
about :math:`|K|=T` times lower. Standard errors as above.

**Exact path.** The same sum with the basis :math:`z=e_s` of the traced axes in place of the probes
(:math:`\operatorname{tr}_S(A)=\sum_sM_{e_s}`): used when :math:`|S|` does not exceed the number of
probes asked for and its :math:`|S|\,|K|` applications of :math:`C^\top` are at most
:data:`EXACT_FACTOR` times the probes' (:func:`default_exact`).

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
from .work import BUDGET_BYTES, COPIES, EXACT_FACTOR, KEEP_PER_PROBE, default_exact  # noqa: F401

Tensor = torch.Tensor
AXES = ("B", "T", "H")



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


class _Moments:
    """Running sums of the per-probe matrices (mean, elementwise variance), and the matrices themselves if kept."""

    def __init__(self, m: int, nk: int, store: bool, dev: torch.device) -> None:
        self.S1 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
        self.S2 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
        self.per = torch.empty(m, nk, nk, dtype=torch.float64, device=dev) if store else None
        self.n = 0

    def add(self, Mg: Tensor) -> None:
        Mg = Mg.to(torch.float64)
        self.S1 += Mg.sum(0)
        self.S2 += (Mg * Mg).sum(0)
        if self.per is not None:
            self.per[self.n:self.n + Mg.shape[0]] = Mg
        self.n += Mg.shape[0]


def partial_trace(op: Operator, keep: str | Sequence[str], *, probes: int = 64, seed: int = 0,
                  factor_adjoint: Callable[[Tensor], Tensor] | None = None,
                  factor: Callable[[Tensor], Tensor] | None = None, factor_dim: int | None = None,
                  exact: bool | None = None, budget_bytes: int = BUDGET_BYTES,
                  keep_per_probe: int = KEEP_PER_PROBE) -> PartialTrace:
    r"""Partial trace of ``op`` over the axes not in ``keep``: exact, or unbiased with standard errors.

    Parameters
    ----------
    op : Operator
        A (its ``apply_batch`` is used). Only its shape, dtype and device matter when a factor is given.
    keep : str or sequence of str
        Kept axes, e.g. ``"T"`` (time consensus: trace over trials and hidden units).
    probes : int
        Number m of Rademacher probes (at least 2).
    seed : int
    factor_adjoint : callable, optional
        For a Gram operator :math:`A=CC^\top`: :math:`V\mapsto C^\top V`, [n, B, T, H] -> [n, d]
        (the exact path and the traced-axes probes then form :math:`YY^\top`, PSD).
    factor, factor_dim : callable and int, optional
        The same C forward, :math:`\Omega\mapsto C\Omega`, [n, d] -> [n, B, T, H], with d = ``factor_dim``:
        the estimate then uses probes :math:`\omega\in\{\pm1\}^d` in the factor's domain (module docstring).
    exact : bool, optional
        Force (True) or forbid (False) the exact path; default :func:`default_exact`.
    budget_bytes : int
        Memory for one batch of probe vectors (and as much for their images).
    keep_per_probe : int
        Keep the per-probe matrices (for eigenvalue error bars) when ``m·|K|²`` is at most this.
    """
    keep_t = parse_keep(keep)
    shape = op.shape
    ki, si, kd, sd = _split(shape, keep_t)
    nk, ns = int(np.prod(kd)), int(np.prod(sd))
    if exact is None:
        exact = default_exact(nk, ns, probes)
    if not exact and probes < 2:
        raise ValueError("probes must be at least 2 for a standard error")
    dt, dev = op.dtype, op.device
    traced = tuple(AXES[i] for i in si)
    if not exact and factor is not None:
        if factor_dim is None:
            raise ValueError("factor_dim is required with factor")
        mom = _factor_probes(factor, int(factor_dim), shape, ki, si, nk, ns, probes, seed, dt, dev, budget_bytes,
                             probes * nk * nk <= keep_per_probe)
        how = (f"Rademacher probes in the factor's domain ({probes} probes omega in {{-1,1}}^{factor_dim}; "
               f"per probe v = C omega and tr_S(v v^T), batched), unbiased")
    else:
        if exact:
            Z = torch.eye(ns, dtype=dt, device=dev)
        else:
            gen = torch.Generator().manual_seed(int(seed))
            Z = (torch.randint(0, 2, (probes, ns), generator=gen) * 2 - 1).to(dtype=dt, device=dev)
        mom = _traced_probes(op, Z, shape, ki, si, nk, ns, factor_adjoint, budget_bytes,
                             not exact and probes * nk * nk <= keep_per_probe)
        how = (f"Rademacher probes on the traced axes ({probes} probes x {nk} kept indices; "
               f"{'Gram factor C^T' if factor_adjoint is not None else 'operator'} applied in batches), unbiased")
    if exact:
        return PartialTrace(keep_t, traced, ns, mom.S1, torch.zeros_like(mom.S1), None, ns,
                            f"exact: basis of the traced axes ({ns} vectors e_s, {nk * ns} applications)")
    m = mom.n
    mean = mom.S1 / m
    var = (mom.S2 - m * mean**2).clamp_min(0) / (m - 1)
    return PartialTrace(keep_t, traced, ns, mean, (var / m).sqrt(), mom.per, m, how)


def _traced_probes(op: Operator, Z: Tensor, shape: Sequence[int], ki: list[int], si: list[int], nk: int, ns: int,
                   factor_adjoint: Callable[[Tensor], Tensor] | None, budget_bytes: int, store: bool) -> _Moments:
    """Per-probe matrices from the vectors e_k (x) z, z the rows of Z (probes or the basis of S)."""
    m = Z.shape[0]
    item = torch.finfo(op.dtype).bits // 8
    vec_bytes = op.size * item
    gram = factor_adjoint is not None
    # probes per batch (all kept indices at once) or kept indices per batch (one probe at a time)
    chunk = max(1, min(nk, budget_bytes // (COPIES * vec_bytes)))
    group = max(1, budget_bytes // (COPIES * vec_bytes * nk)) if chunk == nk else 1
    mom = _Moments(m, nk, store, op.device)
    allk = torch.arange(nk)
    for g0 in range(0, m, group):
        Zg = Z[g0:g0 + group]
        p = Zg.shape[0]
        Mg = torch.zeros(p, nk, nk, dtype=torch.float64, device=op.device)
        Ys = []
        for c0 in range(0, nk, chunk):
            ks = allk[c0:c0 + chunk]
            V = _vectors(shape, ki, si, ks, Zg, nk)
            if gram:
                assert factor_adjoint is not None
                Ys.append(factor_adjoint(V).reshape(p, len(ks), -1).to(torch.float64))
            else:
                out = _kept_by_traced(op.apply_batch(V), ki, si, nk, ns).reshape(p, len(ks), nk, ns)
                # M[k, k'] = sum_s z_s (A (e_k' x z))_{(k, s)}: column k' from the image of e_k' x z
                Mg[:, :, c0:c0 + len(ks)] = torch.einsum("pcks,ps->pkc", out, Zg).to(torch.float64)
            del V
        if gram:
            Y = torch.cat(Ys, 1) if len(Ys) > 1 else Ys[0]
            Mg = torch.bmm(Y, Y.transpose(1, 2))
        mom.add(Mg)
    return mom


def _factor_probes(factor: Callable[[Tensor], Tensor], dim: int, shape: Sequence[int], ki: list[int], si: list[int],
                   nk: int, ns: int, m: int, seed: int, dt: torch.dtype, dev: torch.device, budget_bytes: int,
                   store: bool) -> _Moments:
    r"""Per-probe matrices :math:`\operatorname{tr}_S(vv^\top)`, :math:`v=C\omega`, for m Rademacher :math:`\omega`."""
    item = torch.finfo(dt).bits // 8
    n = int(np.prod(shape))
    per_probe = item * (dim + 6 * n) + 8 * nk * nk  # omega, C omega and its transients, M
    group = max(1, min(m, budget_bytes // per_probe))
    gen = torch.Generator().manual_seed(int(seed))
    mom = _Moments(m, nk, store, dev)
    for g0 in range(0, m, group):
        p = min(group, m - g0)
        W = (torch.randint(0, 2, (p, dim), generator=gen) * 2 - 1).to(dtype=dt, device=dev)
        v = _kept_by_traced(factor(W).reshape(p, *shape), ki, si, nk, ns)  # [p, |K|, |S|]
        mom.add(torch.bmm(v, v.transpose(1, 2)))
        del v, W
    return mom


def block_sum(op: Operator, keep: str | Sequence[str],
              factor_adjoint: Callable[[Tensor], Tensor] | None = None, budget_bytes: int = BUDGET_BYTES) -> Tensor:
    r"""kpflow's ``partial_trace``: :math:`\sum_{s,s'}A_{(k,s),(k',s')}` (the all-ones probe; biased).

    With ``factor_adjoint`` (:math:`A=CC^\top`, as in :func:`partial_trace`) it is :math:`YY^\top`,
    :math:`Y_k=C^\top(e_k\otimes\mathbf 1)`. The :math:`|K|` vectors are applied in batches of ``budget_bytes``.
    """
    keep_t = parse_keep(keep)
    ki, si, kd, sd = _split(op.shape, keep_t)
    nk, ns = int(np.prod(kd)), int(np.prod(sd))
    Z = torch.ones(1, ns, dtype=op.dtype, device=op.device)
    # the vectors, their time-major copy, P*'s output and the parameter Jacobian's transients: ~4 copies
    chunk = max(1, min(nk, budget_bytes // (COPIES * op.size * (torch.finfo(op.dtype).bits // 8))))
    parts = []
    for c0 in range(0, nk, chunk):
        V = _vectors(op.shape, ki, si, torch.arange(c0, min(nk, c0 + chunk)), Z, nk)
        if factor_adjoint is not None:
            parts.append(factor_adjoint(V).reshape(V.shape[0], -1).to(torch.float64))
        else:
            out = _kept_by_traced(op.apply_batch(V), ki, si, nk, ns)
            parts.append(torch.einsum("cks,s->kc", out, Z[0]).to(torch.float64))
        del V
    if factor_adjoint is not None:
        Y = torch.cat(parts, 0)
        return Y @ Y.T
    return torch.cat(parts, 1)


def gram_factors(kp: Any, which: str) -> tuple[Operator, Callable[[Tensor], Tensor], Callable[[Tensor], Tensor], int]:
    r"""The operator ``which`` (``"K"``, ``"PP"``, ``"PKP"``) of a :class:`~.operators.KPFlow` with a Gram factor
    :math:`A=CC^\top`: :math:`C=\mathcal P` (PP*), :math:`G/\sqrt B` (K), :math:`\mathcal PG/\sqrt B` (PKP*).

    Returns ``(A, C^T, C, d)``: :math:`C^\top` maps [n, B, T, H] -> [n, d], C maps [n, d] -> [n, B, T, H]
    (batched; :class:`~.operators.ParameterJacobian` flat parameter vectors for K and PKP*).
    """
    from .operators import ParameterJacobian

    ops = {"K": kp.K, "PP": kp.PP, "PKP": kp.PKP}
    if which not in ops:
        raise ValueError(f"operator must be one of K, PP, PKP; got {which!r}")
    op = ops[which]
    shape = op.shape
    P = kp.P
    if which == "PP":
        return (op, lambda V: P.adjoint_batch(V).reshape(V.shape[0], -1),
                lambda W: P.apply_batch(W.reshape(W.shape[0], *shape)), op.size)
    G = getattr(kp.K, "G", None) or ParameterJacobian(kp.tr)
    s = 1.0 / math.sqrt(shape[0])
    rows = lambda V: V.permute(2, 1, 0, 3)  # noqa: E731  [n, B, T, H] <-> [T, B, n, H] (a view)
    if which == "K":
        return op, lambda V: G.adjoint_rows(rows(V)).mul_(s), lambda W: rows(G.apply_rows(W).mul_(s)), G.dim
    return (op, lambda V: G.adjoint_rows(P.propagate(rows(V).contiguous(), True)).mul_(s),
            lambda W: rows(P.propagate(G.apply_rows(W).mul_(s))), G.dim)


def consensus(kp: Any, which: str, keep: str | Sequence[str], *, probes: int = 64, seed: int = 0,
              top: int = 20, exact: bool | None = None, budget_bytes: int = BUDGET_BYTES,
              estimator: str = "factor") -> dict[str, Any]:
    r"""Consensus spectrum of one KPFlow operator (``which`` in ``"K"``, ``"PP"``, ``"PKP"``).

    Uses the Gram factors of :func:`gram_factors` (so every per-probe matrix is PSD): the exact path
    applies :math:`C^\top` to the basis of the traced axes, the estimate applies C to Rademacher
    probes of its domain (``estimator="factor"``, module docstring) or, with ``estimator="traced"``,
    :math:`C^\top` to Rademacher probes of the traced axes (one application per kept index and probe);
    returns the JSON-ready ``consensus`` entry of ``kpflow analyze`` with the block sum's distance.
    """
    if estimator not in ("factor", "traced"):
        raise ValueError(f"estimator must be 'factor' or 'traced', got {estimator!r}")
    op, fa, f, dim = gram_factors(kp, which)
    pt = partial_trace(op, keep, probes=probes, seed=seed, factor_adjoint=fa, factor=f if estimator == "factor" else None,
                       factor_dim=dim, exact=exact, budget_bytes=budget_bytes)
    sp = pt.spectrum(top)
    bs = block_sum(op, keep, fa, budget_bytes)
    diff = float((bs - pt.matrix).norm() / pt.matrix.norm().clamp_min(1e-300))
    return {"keep": "".join(pt.keep), "traced": "".join(pt.traced), "operator": op.name,
            "normalisation": f"eigenvalues of tr_S(A)/|S|, S = {''.join(pt.traced)} ({pt.traced_size} indices)",
            "eigenvalues": sp["eigenvalues"], "stderr": sp["stderr"], "stderr_frobenius": sp["stderr_frobenius"],
            "probes": pt.probes, "method": pt.method, "exact": pt.exact,
            "block_sum_relative_difference": diff,
            "block_sum_eigenvalues": torch.linalg.eigvalsh((bs + bs.T) / (2 * pt.traced_size)).flip(0)[:top].tolist()}
