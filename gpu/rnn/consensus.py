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
(:math:`\operatorname{tr}_S(A)=\sum_sM_{e_s}`). :func:`consensus` takes it whenever its :math:`|S|\,|K|`
applications of :math:`C^\top` are predicted (:func:`~.work.consensus_plan`, a measured cost model) to take
at most :data:`~.work.EXACT_SECONDS` CPU seconds, however few probes were asked for, and otherwise under
the old relative rule (:math:`|S|\le m` and at most :data:`EXACT_FACTOR` times the probes' applications,
:func:`default_exact`, also the rule of :func:`partial_trace` on a bare operator); the document says which
(``path``, ``path_reason``) with the predicted and the measured CPU seconds.

**Block sum** (the public ``kpflow`` package's ``partial_trace``): the all-ones probe :math:`z=\mathbf 1`
gives :math:`\sum_{s,s'}A_{(k,s),(k',s')}`, which is biased by every off-diagonal term
:math:`s\neq s'`; it equals the partial trace only when A is block-diagonal over S.

**Consensus spectrum.** Eigenvalues :math:`\lambda_j` of :math:`\operatorname{tr}_S(A)/|S|` (the mean over
the traced indices), estimated by :math:`\hat\lambda_j=\lambda_j(\bar M)` (``eigenvalues``, with
:math:`\bar M` and :math:`M_i` divided by :math:`|S|` from here on).

*Bias.* :math:`\lambda_1` is convex in the matrix, so by Jensen
:math:`\mathbb E\hat\lambda_1\ge\lambda_1(\mathbb E\bar M)=\lambda_1`, and to second order
(:math:`E=\bar M-\mathbb E\bar M`, eigenpairs :math:`(\lambda_k,u_k)` of the truth)

.. math:: \mathbb E\hat\lambda_j-\lambda_j\approx\sum_{k\ne j}\frac{\mathbb E(u_j^\top Eu_k)^2}{\lambda_j-\lambda_k}
          =O(1/m),

positive for the top eigenvalue and of the order of the standard error itself when m is small or
:math:`|K|` large (the few-probe estimate spreads its spectrum, like a sample covariance). The first-order
*delta method*, :math:`\hat\lambda_j\approx v_j^\top\bar Mv_j` with the standard error of the
per-probe :math:`v_j^\top M_iv_j` (``stderr_delta``, the error bars before issue 46), is blind to it.

*Jackknife* (delete-a-group over g groups of probes, :func:`jackknife_eigenvalues`; the groups are the
probes themselves when :math:`m\le` :data:`~.work.JACKKNIFE_GROUPS`): with :math:`\hat\lambda_{(-i)j}` the
eigenvalues of the mean of the probes outside group i and :math:`\bar\lambda_{(\cdot)j}` their mean,

.. math:: \hat\lambda^J_j=g\hat\lambda_j-(g-1)\bar\lambda_{(\cdot)j},\qquad
          \mathrm{se}^J_j=\Big(\frac{g-1}{g}\sum_{i=1}^g(\hat\lambda_{(-i)j}-\bar\lambda_{(\cdot)j})^2\Big)^{1/2} :

:math:`\hat\lambda^J_j` (``eigenvalues_jackknife``) removes the :math:`O(1/m)` term of the bias
(``bias`` :math:`=\hat\lambda_j-\hat\lambda^J_j`), and :math:`\mathrm{se}^J_j` (``stderr_jackknife``)
sees the curvature the delta method misses.

*Interval.* ``stderr`` :math:`s_j=\max(\mathrm{se}^J_j,\mathrm{se}^\delta_j)` (two estimates of one standard
error; the larger), and

.. math:: [\,\max(0,\min(\hat\lambda_j,\hat\lambda^J_j)-t_{g-1}s_j),\ \max(\hat\lambda_j,\hat\lambda^J_j)+t_{g-1}s_j\,]

(``lower``, ``upper``): the hull of the plain and the bias-corrected estimate, so neither the
correction nor its absence is taken on trust, widened by the two-sided 97.5 % Student-t quantile with
:math:`g-1` degrees of freedom (:func:`t_quantile`: 3.18 at m = 4; the standard error is itself
estimated from g values), and cut at 0 (A is PSD). Measured by ``benchmarks/kpflow_consensus_coverage.py``
on 60 random cells, operators and kept axes: the truth of the top five eigenvalues lies in it in 96-98 %
of cases at m = 4 to 64 (:math:`\lambda_1`: 93-100 %), where the delta-method bars
:math:`\hat\lambda_j\pm2\,\mathrm{se}^\delta_j` cover 85-89 % (:math:`\lambda_1`: 75-82 %) and do not
improve with m (the bias does not shrink relative to them); the price is width: at m = 4 the interval's
median width is 1.8 :math:`\lambda_1` (1.1 for the old bars). ``trusted`` is
false (with ``trust_reason``) below :data:`~.work.TRUST_MIN_PROBES` probes, or when the top eigenvalue's
jackknife bias exceeds its standard error (first-order theory stretched; more probes, or the exact path).

Globally, by Weyl, :math:`|\hat\lambda_j-\lambda_j|\le\|E\|_2\le\|E\|_F` with
:math:`\mathbb E\|E\|_F^2=\sum_{kk'}\mathrm{se}_{kk'}^2` (reported as ``stderr_frobenius``, an estimate of
the RMS of :math:`\|E\|_F`, not a bound).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypedDict

import numpy as np
import torch

from .operators import Operator
from .work import (BUDGET_BYTES, COPIES, EXACT_FACTOR, EXACT_SECONDS, KEEP_PER_PROBE,  # noqa: F401
                   TRUST_MIN_PROBES, consensus_plan, default_exact, factor_batching, jackknife_groups, traced_batching)

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


class _SpectrumBars(TypedDict):
    """Eigenvalues of a partial trace with their error bars, intervals and trust verdict: what a spectrum and the
    ``consensus`` entry both carry."""

    eigenvalues: list[float]
    stderr_frobenius: float
    stderr: list[float] | None
    stderr_delta: list[float] | None
    stderr_jackknife: list[float] | None
    eigenvalues_jackknife: list[float] | None
    bias: list[float] | None
    lower: list[float | None]
    upper: list[float | None]
    t_quantile: float | None
    trusted: bool
    trust_reason: str


class ConsensusSpectrum(_SpectrumBars):
    """The spectrum of a partial trace with its error bars (:meth:`PartialTrace.spectrum`); None where not kept."""

    eigenvectors: Tensor


class ConsensusEntry(_SpectrumBars):
    """The ``consensus`` entry of ``kpflow analyze`` (:func:`consensus`): the spectrum, its path and its cost."""

    keep: str
    traced: str
    operator: str
    normalisation: str
    interval: str
    jackknife_groups: int
    probes: int
    method: str
    exact: bool
    path: str
    path_reason: str
    predicted_cpu_s: float
    cpu_s: float
    block_sum_relative_difference: float
    block_sum_eigenvalues: list[float]


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
        The :math:`M_i` ``[m, |K|, |K|]`` (kept for eigenvalue error bars when small enough); with
        ``groups`` g < m, the means of the g jackknife groups ``[g, |K|, |K|]`` (probe i in group i mod g).
    probes : int
    method : str
    groups : int
        Rows of ``per_probe`` (0 when it is None).
    """

    keep: tuple[str, ...]
    traced: tuple[str, ...]
    traced_size: int
    matrix: Tensor
    stderr: Tensor
    per_probe: Tensor | None
    probes: int
    method: str
    groups: int = 0

    @property
    def exact(self) -> bool:
        return self.method.startswith("exact")

    def spectrum(self, top: int | None = None) -> ConsensusSpectrum:
        r"""Consensus spectrum of :math:`\operatorname{tr}_S(A)/|S|` (see module docstring), descending.

        Returns ``eigenvalues`` (of the estimate :math:`\bar M/|S|`), ``stderr`` (per eigenvalue: the
        larger of the jackknife and delta-method standard errors; None where the per-probe matrices were
        not kept), ``stderr_delta``, ``stderr_jackknife``, ``eigenvalues_jackknife`` (bias-corrected),
        ``bias`` (jackknife estimate of the estimate's bias), ``lower``/``upper`` (the interval),
        ``t_quantile``, ``trusted``, ``trust_reason``, ``stderr_frobenius``, ``eigenvectors`` (Tensor, columns).
        """
        n = self.traced_size
        lam, V = top_eigen(self.matrix / n, top)
        k = lam.numel()
        out: dict[str, Any] = {"eigenvalues": lam.tolist(), "stderr_frobenius": float(self.stderr.norm() / n),
                               "eigenvectors": V}
        if self.exact:
            zero = [0.0] * k
            return {**out, "stderr": zero, "stderr_delta": zero, "stderr_jackknife": zero,
                    "eigenvalues_jackknife": lam.tolist(), "bias": zero, "lower": lam.tolist(), "upper": lam.tolist(),
                    "t_quantile": None, "trusted": True, "trust_reason": "exact partial trace (no sampling error)"}
        if self.per_probe is None or self.per_probe.shape[0] < 2:
            none = [None] * k
            return {**out, "stderr": None, "stderr_delta": None, "stderr_jackknife": None,
                    "eigenvalues_jackknife": None, "bias": None, "lower": none, "upper": none, "t_quantile": None,
                    "trusted": False, "trust_reason": (f"no eigenvalue error bars: the per-probe matrices "
                                                       f"({self.probes} x {lam.numel()}^2 or more entries) were not kept")}
        G = self.per_probe / n
        sizes = group_sizes(self.probes, G.shape[0])
        se_d = delta_stderr(G, V)
        lam_j, se_j = jackknife_eigenvalues(G, sizes, k)
        se = torch.maximum(se_d, se_j)
        q = t_quantile(G.shape[0] - 1)
        lo = (torch.minimum(lam, lam_j) - q * se).clamp_min(0.0)  # A is PSD: every eigenvalue is >= 0
        hi = torch.maximum(lam, lam_j) + q * se
        trusted, why = trust(self.probes, lam, lam_j, se)
        return {**out, "stderr": se.tolist(), "stderr_delta": se_d.tolist(), "stderr_jackknife": se_j.tolist(),
                "eigenvalues_jackknife": lam_j.tolist(), "bias": (lam - lam_j).tolist(),
                "lower": lo.tolist(), "upper": hi.tolist(), "t_quantile": q, "trusted": trusted, "trust_reason": why}


def top_eigen(M: Tensor, top: int | None = None) -> tuple[Tensor, Tensor]:
    r"""The ``top`` largest eigenvalues of the symmetric part of M, descending, and their eigenvectors (columns)."""
    lam, V = torch.linalg.eigh((M + M.T) / 2)
    lam, V = lam.flip(0), V.flip(1)
    k = lam.numel() if top is None else min(top, lam.numel())
    return lam[:k], V[:, :k]


def group_sizes(m: int, g: int) -> Tensor:
    """Probes in each of the g jackknife groups (probe i in group i mod g)."""
    return torch.tensor([len(range(j, m, g)) for j in range(g)], dtype=torch.float64)


def delta_stderr(G: Tensor, V: Tensor) -> Tensor:
    r"""Delta method: the standard error of :math:`v_j^\top\bar Mv_j` over the g group means,
    :math:`\mathrm{sd}_i(v_j^\top M_iv_j)/\sqrt g` (first order, blind to the bias)."""
    vals = torch.einsum("kj,ikl,lj->ij", V, G, V)  # [g, k]
    return vals.std(0, unbiased=True) / math.sqrt(G.shape[0])


def jackknife_eigenvalues(G: Tensor, sizes: Tensor, top: int) -> tuple[Tensor, Tensor]:
    r"""Delete-a-group jackknife of the ``top`` eigenvalues of :math:`\bar M` (module docstring):
    :math:`\hat\lambda^{J}_j=g\hat\lambda_j-(g-1)\bar\lambda_{(\cdot)j}` and
    :math:`\mathrm{se}^J_j=\big(\tfrac{g-1}g\sum_i(\hat\lambda_{(-i)j}-\bar\lambda_{(\cdot)j})^2\big)^{1/2}`,
    :math:`\hat\lambda_{(-i)}` the eigenvalues of the mean of the probes outside group i."""
    g = G.shape[0]
    w = sizes.to(G)[:, None, None]
    S = (G * w).sum(0)
    m = float(sizes.sum())
    lam = top_eigen(S / m, top)[0]
    loo = torch.stack([top_eigen((S - G[i] * w[i]) / (m - float(sizes[i])), top)[0] for i in range(g)])
    mean = loo.mean(0)
    return g * lam - (g - 1) * mean, ((g - 1) / g * (loo - mean).pow(2).sum(0)).sqrt()


def student_t_central(t: float, dof: int) -> float:
    r""":math:`A(t\mid\nu)=P(|T_\nu|\le t)` for an integer :math:`\nu\ge1` (Abramowitz--Stegun 26.7.3--4):
    with :math:`\theta=\arctan(t/\sqrt\nu)`, for odd :math:`\nu`
    :math:`\tfrac2\pi\big(\theta+\sin\theta\,(\cos\theta+\tfrac23\cos^3\theta+\dots
    +\tfrac{2\cdot4\cdots(\nu-3)}{1\cdot3\cdots(\nu-2)}\cos^{\nu-2}\theta)\big)`, for even :math:`\nu`
    :math:`\sin\theta\,\big(1+\tfrac12\cos^2\theta+\dots+\tfrac{1\cdot3\cdots(\nu-3)}{2\cdot4\cdots(\nu-2)}
    \cos^{\nu-2}\theta\big)`."""
    th = math.atan(t / math.sqrt(dof))
    c, sn = math.cos(th), math.sin(th)
    if dof % 2:
        term, acc = c, c if dof > 1 else 0.0
        for k in range(3, dof - 1, 2):  # cos^k with coefficient 2.4...(k-1) / 1.3...k
            term *= c * c * (k - 1) / k
            acc += term
        return 2 / math.pi * (th + sn * acc)
    term, acc = 1.0, 1.0
    for k in range(2, dof - 1, 2):  # cos^k with coefficient 1.3...(k-1) / 2.4...k
        term *= c * c * (k - 1) / k
        acc += term
    return sn * acc


def t_quantile(dof: int, level: float = 0.95) -> float:
    r"""Two-sided Student-t quantile: the t with :math:`P(|T_\nu|\le t)=` ``level`` (3.18 at
    :math:`\nu=3`, 2.36 at 7, 1.998 at 63), by bisection on :func:`student_t_central`."""
    lo, hi = 0.0, 1.0
    while student_t_central(hi, dof) < level:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if student_t_central(mid, dof) < level else (lo, mid)
    return (lo + hi) / 2


def trust(m: int, lam: Tensor, lam_j: Tensor, se: Tensor) -> tuple[bool, str]:
    r"""Whether the estimate's intervals are trusted: at least :data:`TRUST_MIN_PROBES` probes, and the
    jackknife bias of the top eigenvalue within its standard error (else the first-order theory behind
    the correction is stretched: too few probes for the :math:`|K|` kept indices)."""
    if m < TRUST_MIN_PROBES:
        return False, (f"m = {m} < {TRUST_MIN_PROBES} probes: the standard errors have {m - 1} degrees of freedom "
                       f"(intervals use t = {t_quantile(m - 1):.2f}) and the top eigenvalue of a few-probe estimate "
                       f"is biased upward; ask for more probes, or the exact path")
    b, s = float(lam[0] - lam_j[0]), float(se[0])
    if abs(b) > s:
        return False, (f"the top eigenvalue's jackknife bias {b:.3g} exceeds its standard error {s:.3g}: "
                       f"too few probes for the kept indices; ask for more probes")
    return True, f"m = {m} probes; the top eigenvalue's jackknife bias {b:.3g} is within its standard error {s:.3g}"


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
    """Running sums of the per-probe matrices (mean, elementwise variance), and the sums of the g
    jackknife groups if kept (probe i in group i mod g)."""

    def __init__(self, m: int, nk: int, groups: int, dev: torch.device) -> None:
        self.S1 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
        self.S2 = torch.zeros(nk, nk, dtype=torch.float64, device=dev)
        self.g = groups
        self.per = torch.zeros(groups, nk, nk, dtype=torch.float64, device=dev) if groups else None
        self.m = m
        self.n = 0

    def add(self, Mg: Tensor) -> None:
        Mg = Mg.to(torch.float64)
        self.S1 += Mg.sum(0)
        self.S2 += (Mg * Mg).sum(0)
        if self.per is not None:
            idx = torch.arange(self.n, self.n + Mg.shape[0], device=Mg.device) % self.g
            self.per.index_add_(0, idx, Mg)
        self.n += Mg.shape[0]

    def group_means(self) -> Tensor | None:
        if self.per is None:
            return None
        counts = torch.tensor([len(range(j, self.n, self.g)) for j in range(self.g)], dtype=torch.float64,
                              device=self.per.device)
        return self.per / counts[:, None, None]


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
        Keep the per-probe matrices (for eigenvalue error bars), or the means of g groups of them, in at most
        this many entries: :func:`~.work.jackknife_groups` (up to :data:`~.work.JACKKNIFE_GROUPS` groups).
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
    groups = 0 if exact else jackknife_groups(probes, nk, keep_per_probe)
    if not exact and factor is not None:
        if factor_dim is None:
            raise ValueError("factor_dim is required with factor")
        mom = _factor_probes(factor, int(factor_dim), shape, ki, si, nk, ns, probes, seed, dt, dev, budget_bytes,
                             groups)
        how = (f"Rademacher probes in the factor's domain ({probes} probes omega in {{-1,1}}^{factor_dim}; "
               f"per probe v = C omega and tr_S(v v^T), batched), unbiased")
    else:
        if exact:
            Z = torch.eye(ns, dtype=dt, device=dev)
        else:
            gen = torch.Generator().manual_seed(int(seed))
            Z = (torch.randint(0, 2, (probes, ns), generator=gen) * 2 - 1).to(dtype=dt, device=dev)
        mom = _traced_probes(op, Z, shape, ki, si, nk, ns, factor_adjoint, budget_bytes, groups)
        how = (f"Rademacher probes on the traced axes ({probes} probes x {nk} kept indices; "
               f"{'Gram factor C^T' if factor_adjoint is not None else 'operator'} applied in batches), unbiased")
    if exact:
        return PartialTrace(keep_t, traced, ns, mom.S1, torch.zeros_like(mom.S1), None, ns,
                            f"exact: basis of the traced axes ({ns} vectors e_s, {nk * ns} applications)")
    m = mom.n
    mean = mom.S1 / m
    var = (mom.S2 - m * mean**2).clamp_min(0) / (m - 1)
    return PartialTrace(keep_t, traced, ns, mean, (var / m).sqrt(), mom.group_means(), m, how, groups)


def _traced_probes(op: Operator, Z: Tensor, shape: Sequence[int], ki: list[int], si: list[int], nk: int, ns: int,
                   factor_adjoint: Callable[[Tensor], Tensor] | None, budget_bytes: int, groups: int) -> _Moments:
    """Per-probe matrices from the vectors e_k (x) z, z the rows of Z (probes or the basis of S)."""
    m = Z.shape[0]
    item = torch.finfo(op.dtype).bits // 8
    gram = factor_adjoint is not None
    # probes per batch (all kept indices at once) or kept indices per batch (one probe at a time)
    chunk, group = traced_batching(op.size, nk, item, budget_bytes)
    mom = _Moments(m, nk, groups, op.device)
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
                   groups: int) -> _Moments:
    r"""Per-probe matrices :math:`\operatorname{tr}_S(vv^\top)`, :math:`v=C\omega`, for m Rademacher :math:`\omega`."""
    item = torch.finfo(dt).bits // 8
    n = int(np.prod(shape))
    group = factor_batching(dim, n, nk, m, item, budget_bytes)  # omega, C omega and its transients, M
    gen = torch.Generator().manual_seed(int(seed))
    mom = _Moments(m, nk, groups, dev)
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
    chunk = traced_batching(op.size, nk, torch.finfo(op.dtype).bits // 8, budget_bytes)[0]
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
              estimator: str = "factor") -> ConsensusEntry:
    r"""Consensus spectrum of one KPFlow operator (``which`` in ``"K"``, ``"PP"``, ``"PKP"``).

    Uses the Gram factors of :func:`gram_factors` (so every per-probe matrix is PSD): the exact path
    applies :math:`C^\top` to the basis of the traced axes, the estimate applies C to Rademacher
    probes of its domain (``estimator="factor"``, module docstring) or, with ``estimator="traced"``,
    :math:`C^\top` to Rademacher probes of the traced axes (one application per kept index and probe);
    returns the JSON-ready ``consensus`` entry of ``kpflow analyze`` with the block sum's distance.

    ``exact=None`` chooses the path by :func:`~.work.consensus_plan` (the exact one whenever it is
    predicted to take at most :data:`~.work.EXACT_SECONDS` CPU seconds, whatever ``probes``); the entry
    records the choice (``path``, ``path_reason``), the predicted and the measured CPU seconds of the stage
    (``predicted_cpu_s``, ``cpu_s``: ``time.process_time``, all threads), the eigenvalue intervals
    (``lower``, ``upper``) and whether they are ``trusted`` (``trust_reason``).
    """
    if estimator not in ("factor", "traced"):
        raise ValueError(f"estimator must be 'factor' or 'traced', got {estimator!r}")
    c0 = time.process_time()
    keep_t = parse_keep(keep)
    op, fa, f, dim = gram_factors(kp, which)
    B, T, H = op.shape
    tr = kp.tr
    plan = consensus_plan(B, T, H, int(tr.x.shape[-1]), str(getattr(tr.cell, "kind", "module")), "".join(keep_t),
                          probes, op=which, mode=getattr(kp.P, "mode", "stored"), estimator=estimator, exact=exact,
                          top=top, dim=None if which == "PP" else dim)
    pt = partial_trace(op, keep_t, probes=probes, seed=seed, factor_adjoint=fa,
                       factor=f if estimator == "factor" else None, factor_dim=dim, exact=plan["exact"],
                       budget_bytes=budget_bytes)
    sp = pt.spectrum(top)
    bs = block_sum(op, keep_t, fa, budget_bytes)
    diff = float((bs - pt.matrix).norm() / pt.matrix.norm().clamp_min(1e-300))
    bs_eig = torch.linalg.eigvalsh((bs + bs.T) / (2 * pt.traced_size)).flip(0)[:top].tolist()
    cpu = time.process_time() - c0
    interval = ("exact: no sampling error" if pt.exact else
                f"[min(eigenvalue, eigenvalue_jackknife) - t stderr, max(...) + t stderr], t = Student-t "
                f"{0.975:g} quantile with g - 1 = {pt.groups - 1} degrees of freedom (nominal 95 %)")
    return {"keep": "".join(pt.keep), "traced": "".join(pt.traced), "operator": op.name,
            "normalisation": f"eigenvalues of tr_S(A)/|S|, S = {''.join(pt.traced)} ({pt.traced_size} indices)",
            "eigenvalues": sp["eigenvalues"], "stderr": sp["stderr"], "stderr_frobenius": sp["stderr_frobenius"],
            "stderr_delta": sp["stderr_delta"], "stderr_jackknife": sp["stderr_jackknife"],
            "eigenvalues_jackknife": sp["eigenvalues_jackknife"], "bias": sp["bias"],
            "lower": sp["lower"], "upper": sp["upper"], "interval": interval, "t_quantile": sp["t_quantile"],
            "jackknife_groups": pt.groups, "trusted": sp["trusted"], "trust_reason": sp["trust_reason"],
            "probes": pt.probes, "method": pt.method, "exact": pt.exact,
            "path": "exact" if pt.exact else "estimator", "path_reason": plan["reason"],
            "predicted_cpu_s": plan["predicted_cpu_s"], "cpu_s": cpu,
            "block_sum_relative_difference": diff, "block_sum_eigenvalues": bs_eig}
