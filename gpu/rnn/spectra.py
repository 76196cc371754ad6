r"""Spectral tools for the KPFlow operators: partial trace, effective rank, Hutch++, Theorem 2.

**Partial trace.** For :math:`M` acting on :math:`\mathbb R^{B}\otimes\mathbb R^{T}\otimes\mathbb R^{H}`
and a set S of axes, :math:`\operatorname{tr}_S(M)_{k,k'}=\sum_{s}M_{(k,s),(k',s)}` (kept index k,
traced index s). In particular :math:`\operatorname{tr}_C(B\otimes C)=\operatorname{tr}(C)\,B`.
(The public ``kpflow`` package's ``partial_trace`` is a block sum, not this.)

**Effective rank** (one definition, used for K, P and PKP* alike):

.. math:: \operatorname{effrank}_{0.95}(A)=\min\Big\{k:\ \sum_{i\le k}\sigma_i^2\ \ge\ 0.95\sum_i\sigma_i^2\Big\},

:math:`\sigma_i` the singular values of A on the whole space :math:`\mathbb R^{BTH}` (Euclidean
inner product), i.e. the eigenvalues of the Gram :math:`A^\top A`. Exact (dense SVD) at small
sizes; at large sizes (:func:`sketch_spectrum`) the top singular values come from a batched range
sketch (:math:`Q=\operatorname{orth}(A\Omega)`, singular values of :math:`Q^\top A`, lower bounds of the
true ones) and the total :math:`\|A\|_F^2=\|Q^\top A\|_F^2+\|(I-QQ^\top)A\|_F^2` from the sketch plus a
Hutchinson estimate of the remainder (unbiased; Hutch++'s split, Meyer et al. 2021); every application
is a batch of vectors (the operators' batched forms), not one vector at a time.

**Matrix-free estimators** for any :class:`~.operators.Operator` (batched mat-vecs): Hutch++
:math:`\operatorname{tr}A\approx\operatorname{tr}(Q^\top AQ)+\tfrac1k\operatorname{tr}(G^\top(I-QQ^\top)A(I-QQ^\top)G)`,
Q an orthonormal basis of :math:`AS` (S, G Rademacher, k columns each), unbiased for every square A
since :math:`\operatorname{tr}A=\operatorname{tr}(QQ^\top A)+\operatorname{tr}((I-QQ^\top)A(I-QQ^\top))`;
:math:`\|A\|_F^2=\operatorname{tr}(A^\top A)`; alignment
:math:`\operatorname{tr}(A^\top B)/(\|A\|_F\|B\|_F)` (kpflow's ``op_alignment``); participation ratio
:math:`(\sum\sigma_i^2)^2/\sum\sigma_i^4=\operatorname{tr}(A^\top A)^2/\operatorname{tr}((A^\top A)^2)`.
Exact (basis vectors) when :math:`BTH\le m`.

**Theorem 2** (corrected, note §2.4): :math:`\mathcal P=\mathcal U\mathcal V\mathcal U^{-1}` with
:math:`(\mathcal Uq)_t=U_tq_t`, :math:`U_t=A_t\cdots A_1`, and :math:`\mathcal V` the cumulative
sum over time. The Volterra operator :math:`(Vq)(t)=\int_0^tq` on :math:`L^2[0,T]` has
:math:`\sigma_j=2T/((2j-1)\pi)`; its discretisation :math:`\Delta t\,\mathrm{tril}(1_N)` has
:math:`\sigma_j=\Delta t/(2\sin((2j-1)\pi/(2(2N+1))))`. Lyapunov exponents by QR,
:math:`\lambda_i=\frac1T\sum_t\log|R_t[i,i]|`, and the Kaplan–Yorke dimension
:math:`D=k+\sum_{i\le k}\lambda_i/|\lambda_{k+1}|`, k the largest index with
:math:`\sum_{i\le k}\lambda_i\ge0`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, TypedDict

import numpy as np
import torch

from .operators import Operator, Propagation
from .work import CHUNK_BYTES, sketch_rank, sketch_sizes  # noqa: F401

AXES = ("B", "T", "H")
DEFINITION = (r"effrank95: the smallest $k$ with $\sum_{i\le k}\sigma_i^2\ge0.95\sum_i\sigma_i^2$, $\sigma_i$ the "
              r"singular values of the operator on $\mathbb R^{BTH}$ (Euclidean inner product), i.e. eigenvalues of its Gram")


def _axes(trace: Sequence[str | int]) -> list[int]:
    out = []
    for a in trace:
        i = AXES.index(a) if isinstance(a, str) else int(a)
        if i not in (0, 1, 2):
            raise ValueError(f"axis {a!r} is not one of B, T, H")
        out.append(i)
    return sorted(set(out))


def partial_trace_dense(M: torch.Tensor, dims: Sequence[int], trace: Sequence[str | int]) -> torch.Tensor:
    """True partial trace of a dense matrix over the listed axes of ``dims`` (any number of axes)."""
    dims = [int(d) for d in dims]
    n = len(dims)
    tr = _axes(trace) if n == 3 else sorted(set(int(a) for a in trace))
    X = M.reshape(dims + dims)
    letters = "abcdefghijklmnop"
    rows = [letters[i] for i in range(n)]
    cols = [letters[n + i] if i not in tr else letters[i] for i in range(n)]
    keep = [i for i in range(n) if i not in tr]
    out = "".join(rows[i] for i in keep) + "".join(cols[i] for i in keep)
    R = torch.einsum("".join(rows) + "".join(cols) + "->" + out, X)
    k = int(np.prod([dims[i] for i in keep])) if keep else 1
    return R.reshape(k, k)


def partial_trace(op: Operator, trace: Sequence[str | int]) -> torch.Tensor:
    r"""True partial trace of a matrix-free operator on [B, T, H] over the listed axes.

    Applies ``op`` to every basis vector :math:`e_{k}\otimes e_s` (B·T·H applications) and keeps
    the entries :math:`(k', s)`; returns the kept×kept matrix (axes in B, T, H order).
    """
    dims = list(op.shape)
    tr = _axes(trace)
    keep = [i for i in range(3) if i not in tr]
    kdims = [dims[i] for i in keep]
    sdims = [dims[i] for i in tr]
    nk, ns = int(np.prod(kdims)) if keep else 1, int(np.prod(sdims)) if tr else 1
    out = torch.zeros(nk, nk, dtype=torch.float64)
    perm = keep + tr
    inv = list(np.argsort(perm))
    for k in range(nk):
        for s in range(ns):
            e = torch.zeros(nk, ns, dtype=torch.float64)
            e[k, s] = 1.0
            full = e.reshape(kdims + sdims).permute(*inv).contiguous()
            y = op(full).permute(*perm).reshape(nk, ns)
            out[:, k] += y[:, s]
    return out


def effrank_from(values: np.ndarray, frac: float = 0.95) -> int:
    """Smallest k with the top-k of the (nonnegative) ``values`` carrying ``frac`` of their sum."""
    v = np.sort(np.clip(np.asarray(values, dtype=float), 0.0, None))[::-1]
    total = v.sum()
    if total <= 0:
        return 0
    return int(np.searchsorted(np.cumsum(v), frac * total * (1 - 1e-12)) + 1)


def hutchpp(matvec: Callable[[np.ndarray], np.ndarray], n: int, m: int = 60, seed: int = 0) -> float:
    r"""Hutch++ estimate of :math:`\operatorname{tr}(M)` for PSD M with m mat-vecs (m/3 each stage)."""
    rng = np.random.default_rng(seed)
    k = max(1, m // 3)
    S = rng.choice([-1.0, 1.0], size=(n, k))
    G = rng.choice([-1.0, 1.0], size=(n, k))
    MS = np.column_stack([matvec(S[:, i]) for i in range(k)])
    Q, _ = np.linalg.qr(MS)
    MQ = np.column_stack([matvec(Q[:, i]) for i in range(Q.shape[1])])
    G2 = G - Q @ (Q.T @ G)
    MG = np.column_stack([matvec(G2[:, i]) for i in range(k)])
    return float(np.trace(Q.T @ MQ) + np.trace(G2.T @ MG) / k)


def trace(op: Operator, m: int = 60, seed: int = 0) -> float:
    r"""Hutch++ estimate of :math:`\operatorname{tr}A` with about m mat-vecs (exact when BTH <= m)."""
    n = op.size
    if n <= m:
        E = torch.eye(n, dtype=op.dtype, device=op.device).reshape(n, *op.shape)
        return float((op.apply_batch(E).reshape(n, n) * E.reshape(n, n)).sum())
    k = max(1, m // 3)
    gen = torch.Generator().manual_seed(int(seed))
    rad = lambda: (torch.randint(0, 2, (k, n), generator=gen) * 2 - 1).to(dtype=op.dtype, device=op.device)  # noqa: E731
    S, G = rad(), rad()
    AS = op.apply_batch(S.reshape(k, *op.shape)).reshape(k, n)
    Q = torch.linalg.qr(AS.T.to(torch.float64))[0].T.to(op.dtype)  # [k, n], orthonormal rows
    AQ = op.apply_batch(Q.reshape(k, *op.shape)).reshape(k, n)
    G2 = G - (G @ Q.T) @ Q
    AG = op.apply_batch(G2.reshape(k, *op.shape)).reshape(k, n)
    AG = AG - (AG @ Q.T) @ Q
    return float((Q * AQ).sum(dtype=torch.float64) + (G2 * AG).sum(dtype=torch.float64) / k)


def frobenius_norm(op: Operator, m: int = 60, seed: int = 0) -> float:
    r""":math:`\|A\|_F=\sqrt{\operatorname{tr}(A^\top A)}` (Hutch++ on the Gram)."""
    return math.sqrt(max(trace(op.T @ op, m, seed), 0.0))


def alignment(A: Operator, B: Operator, m: int = 60, seed: int = 0) -> float:
    r"""Frobenius cosine :math:`\operatorname{tr}(A^\top B)/(\|A\|_F\|B\|_F)` (kpflow's ``op_alignment``)."""
    return trace(A.T @ B, m, seed) / max(frobenius_norm(A, m, seed) * frobenius_norm(B, m, seed), 1e-300)


def participation_ratio(op: Operator, m: int = 60, seed: int = 0) -> float:
    r""":math:`(\sum\sigma_i^2)^2/\sum\sigma_i^4`, matrix-free (Hutch++ for both traces)."""
    G = op.T @ op
    return trace(G, m, seed) ** 2 / max(trace(G @ G, m, seed), 1e-300)


def singular_values_squared(op: Operator) -> np.ndarray:
    """All :math:`\\sigma_i^2` of ``op`` by dense SVD (small sizes)."""
    s = torch.linalg.svdvals(op.dense(torch.float64))
    return (s**2).cpu().numpy()


def _rademacher(k: int, n: int, gen: torch.Generator, op: Operator) -> torch.Tensor:
    return (torch.randint(0, 2, (k, n), generator=gen) * 2 - 1).to(dtype=op.dtype, device=op.device)


def _orth(Y: torch.Tensor) -> torch.Tensor:
    """Orthonormal rows spanning the rows of Y [l, n] (QR in float64)."""
    return torch.linalg.qr(Y.T.to(torch.float64))[0].T.to(Y.dtype)


def _chunked(f: Callable[[torch.Tensor], torch.Tensor], V: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """f on the rows of V [k, n] in chunks of :data:`CHUNK_BYTES`, into one [k, n] output."""
    k, n = V.shape
    step = max(1, CHUNK_BYTES // max(1, n * V.element_size()))
    out = torch.empty_like(V)
    for c0 in range(0, k, step):
        c = V[c0:c0 + step]
        out[c0:c0 + c.shape[0]] = f(c.reshape(c.shape[0], *shape)).reshape(c.shape[0], n)
    return out


class SketchSpectrum(TypedDict):
    r"""What :func:`sketch_spectrum` returns: :math:`\sigma_i^2` of the compression (descending), :math:`\|A\|_F^2`,
    :math:`\sum\sigma^4` and the number of applications of A or :math:`A^\top`."""

    sigma2: np.ndarray
    total: float
    fourth: float
    applications: int


class EffectiveRank(TypedDict, total=False):
    """An operator's effective rank (:func:`effective_rank`); ``participation_ratio_method`` only when sketched."""

    value: int
    method: str
    exact: bool
    lower_bound: bool
    participation_ratio: float
    participation_ratio_method: str
    size: int


def sketch_spectrum(op: Operator, l: int, r: int, seed: int = 0) -> SketchSpectrum:
    r"""Top singular values, :math:`\|A\|_F^2` and :math:`\sum\sigma^4` of ``op`` from batched sketches.

    Q: orthonormal basis of :math:`A\Omega` (:math:`\Omega` l Rademacher vectors); Z: the compression
    :math:`Q^\top A` (for self-adjoint A, :math:`AQ`). The singular values of Z are lower bounds of the
    top l of A (:math:`\sigma_i(Q^\top A)\le\sigma_i(A)`). The total splits
    exactly, :math:`\|A\|_F^2=\|Z\|_F^2+\|(I-QQ^\top)A\|_F^2` (resp. :math:`\|A(I-QQ^\top)\|_F^2`), the second
    term by Hutchinson with r fresh probes; :math:`\sum\sigma^4=\operatorname{tr}((A^\top A)^2)=\mathbb E\|A^\top Ag\|^2`
    with r more. 2l + 3r applications of A or :math:`A^\top`, in chunks of :data:`CHUNK_BYTES`.
    """
    n = op.size
    gen = torch.Generator().manual_seed(int(seed))
    sym = op.self_adjoint
    fwd = lambda V: _chunked(op.apply_batch, V, op.shape)  # noqa: E731
    adj = fwd if sym else (lambda V: _chunked(op.adjoint_batch, V, op.shape))
    Q = _orth(fwd(_rademacher(l, n, gen, op)))
    Z = (fwd if sym else adj)(Q)  # rows: (A Q)^T = Q^T A for symmetric A, else (A^T Q)^T
    s2 = torch.linalg.eigvalsh((Z.to(torch.float64) @ Z.T.to(torch.float64))).flip(0).clamp_min(0)
    del Z
    g = _rademacher(r, n, gen, op)
    if sym:
        Ag = fwd(g - (g @ Q.T) @ Q)  # A (I - QQ^T) g
    else:
        Ag = fwd(g)
        Ag = Ag - (Ag @ Q.T) @ Q  # (I - QQ^T) A g
    rest = float(Ag.to(torch.float64).pow(2).sum()) / r
    del Ag, Q
    A2g = adj(fwd(_rademacher(r, n, gen, op)))
    total = float(s2.sum()) + rest
    fourth = float(A2g.to(torch.float64).pow(2).sum()) / r
    return {"sigma2": s2.cpu().numpy(), "total": total, "fourth": fourth, "applications": 2 * l + 3 * r}


def effective_rank(op: Operator, *, exact_max: int = 2000, k: int | None = None, frac: float = 0.95,
                   seed: int = 0) -> EffectiveRank:
    r"""Effective rank of ``op`` (see module docstring), exact, or from batched randomized sketches.

    Above ``exact_max`` the top ``k`` singular values come from :func:`sketch_spectrum` (k + 10
    sketch vectors; lower bounds of the true ones) and the total :math:`\|A\|_F^2` from the same
    sketch plus a Hutchinson remainder (unbiased). Default k: :func:`~.work.sketch_rank`.

    Returns
    -------
    EffectiveRank
        ``value`` (int), ``method``, ``exact`` (bool), ``lower_bound`` (True if the top-k
        singular values did not reach ``frac`` of the estimated total, so the rank is > k),
        ``participation_ratio`` :math:`(\sum\sigma^2)^2/\sum\sigma^4`.
    """
    n = op.size
    if n <= exact_max:
        v = singular_values_squared(op)
        pr = float(v.sum() ** 2 / max((v**2).sum(), 1e-300))
        return {"value": effrank_from(v, frac), "method": "dense SVD", "exact": True, "lower_bound": False,
                "participation_ratio": pr, "size": n}
    k, l, r = sketch_sizes(n, k)
    sk = sketch_spectrum(op, l, r, seed)
    v = sk["sigma2"][:k]
    total = max(sk["total"], float(v.sum()))
    c = np.cumsum(v)
    hit = np.nonzero(c >= frac * total * (1 - 1e-12))[0]
    value = int(hit[0] + 1) if hit.size else int(v.size)
    how = (f"randomized sketch: top-{v.size} singular values from a {l}-vector range sketch "
           f"({'A Q' if op.self_adjoint else 'Q^T A'}, lower bounds), total ||A||_F^2 = sketch part + Hutchinson "
           f"remainder ({r} probes); {sk['applications']} batched applications")
    return {"value": value, "method": how, "exact": False, "lower_bound": not bool(hit.size),
            "participation_ratio": total**2 / max(sk["fourth"], 1e-300),
            "participation_ratio_method": f"(sum sigma^2)^2 / sum sigma^4, sum sigma^4 = E||A^T A g||^2 ({r} probes)",
            "size": n}


def numerical_rank(M: np.ndarray | torch.Tensor) -> tuple[int, float]:
    r"""Rank with tolerance :math:`\max(m,n)\,\epsilon\,\sigma_1`, ε the machine epsilon of M's dtype (float32
    data carry float32 rounding, whatever precision the SVD runs in), and the gap ratio σ_r/σ_{r+1}."""
    if isinstance(M, torch.Tensor):
        eps = float(torch.finfo(M.dtype).eps) if M.is_floating_point() else float(np.finfo(float).eps)
        M = M.detach().cpu().numpy()
    else:
        M = np.asarray(M)
        eps = float(np.finfo(M.dtype).eps) if np.issubdtype(M.dtype, np.floating) else float(np.finfo(float).eps)
    s = np.linalg.svd(np.asarray(M, dtype=float), compute_uv=False)
    if s.size == 0 or s[0] == 0:
        return 0, math.inf
    tol = max(np.shape(M)) * eps * s[0]
    r = int((s > tol).sum())
    gap = float(s[r - 1] / s[r]) if 0 < r < s.size and s[r] > 0 else math.inf
    return r, gap


# ------------------------------------------------------------------------------- Theorem 2


def fundamental(P: Propagation | torch.Tensor) -> torch.Tensor:
    """:math:`U_t=A_t\\cdots A_1` for every trial and t, shape [B, T, H, H], from a Propagation (stored
    Jacobians, or recomputed once) or from the Jacobians J [B, T, H, H] themselves."""
    if isinstance(P, torch.Tensor):
        J = P
    else:
        J = P.J if P.J is not None else Propagation(P.tr, "stored").J
    assert J is not None
    U = torch.empty_like(J)
    U[:, 0] = J[:, 0]
    for t in range(1, J.shape[1]):
        torch.bmm(J[:, t], U[:, t - 1], out=U[:, t])
    return U


def uvu_apply(U: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r""":math:`(\mathcal U\mathcal V\mathcal U^{-1}q)_t=U_t\sum_{s\le t}U_s^{-1}q_s` for U [B, T, H, H], q [B, T, H]."""
    w = torch.linalg.solve(U, q[..., None])[..., 0]
    return torch.einsum("btij,btj->bti", U, torch.cumsum(w, 1))


def uvu_rounding_bound(J: torch.Tensor, U: torch.Tensor, q: torch.Tensor, c: float = 16.0) -> float:
    r"""A first-order bound on the rounding error of :func:`uvu_apply` in U's dtype (ε its machine epsilon),
    from the computed :math:`w_s=U_s^{-1}q_s`:

    .. math:: e_t=c\,\epsilon\Big(\sum_{s\le t}\|\Phi(t,s)\|\,\|U_s\|\,\|w_s\|+H\,\|U_t\|\sum_{s\le t}\|w_s\|\Big),
              \qquad \|\Phi(t,s)\|\le\prod_{s<r\le t}\|A_r\|,\qquad \Big(\sum_{b,t}e_t^2\Big)^{1/2} :

    the first term is the backward-stable solve (:math:`(U_s+\delta U_s)w_s=q_s`, :math:`\|\delta U_s\|\le c\epsilon\|U_s\|`)
    carried to t by :math:`U_tU_s^{-1}=\Phi(t,s)=A_t\cdots A_{s+1}`, the second the cumulative sum and the
    product by :math:`U_t` (H terms per entry). Frobenius norms (upper bounds of the spectral ones);
    infinite when a :math:`U_s` is singular in this dtype. J, U: [B, T, H, H]; q: [B, T, H].
    """
    eps = float(torch.finfo(U.dtype).eps)
    w = torch.linalg.solve(U, q[..., None])[..., 0].to(torch.float64)
    if not bool(torch.isfinite(w).all()):
        return math.inf
    wn = w.norm(dim=-1)
    Un = torch.linalg.matrix_norm(U.to(torch.float64))
    L = torch.cumsum(torch.log(torch.linalg.matrix_norm(J.to(torch.float64)).clamp_min(1e-300)), 1)  # log prod ||A_r||, r <= t
    with torch.no_grad():
        e1 = torch.exp(L + torch.logcumsumexp(-L + torch.log((Un * wn).clamp_min(1e-300)), 1))
        e2 = U.shape[-1] * Un * torch.cumsum(wn, 1)
    e = c * eps * (e1 + e2)
    return float(e.norm()) if bool(torch.isfinite(e).all()) else math.inf


def uvu_operator(P: Propagation) -> Operator:
    r""":math:`\mathcal U\mathcal V\mathcal U^{-1}` (Theorem 2), for comparison with :math:`\mathcal P`."""
    U = fundamental(P)

    def mv(q: torch.Tensor) -> torch.Tensor:
        return uvu_apply(U, q)

    def rmv(r: torch.Tensor) -> torch.Tensor:
        w = torch.einsum("btji,btj->bti", U, r)
        w = torch.flip(torch.cumsum(torch.flip(w, [1]), 1), [1])
        return torch.linalg.solve(U.transpose(-1, -2), w[..., None])[..., 0]

    return Operator(P.shape, mv, rmv, "UVU^-1", dtype=P.dtype, device=P.device)


def volterra_singular_values(N: int, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms: discrete :math:`\\Delta t\\,\\mathrm{tril}(1_N)` and continuous on [0, NΔt]."""
    j = np.arange(1, N + 1)
    disc = dt / (2 * np.sin((2 * j - 1) * np.pi / (2 * (2 * N + 1))))
    cont = 2 * (N * dt) / ((2 * j - 1) * np.pi)
    return disc, cont


def lyapunov_qr(J: torch.Tensor) -> np.ndarray:
    r"""Lyapunov exponents per step of a Jacobian sequence [T, H, H] by QR, descending; with leading
    dimensions ([..., T, H, H]: one sequence per trial, batched QR) one descending row per sequence."""
    H = J.shape[-1]
    lead = J.shape[:-3]
    Q = torch.eye(H, dtype=J.dtype, device=J.device).expand(*lead, H, H)
    acc = torch.zeros(*lead, H, dtype=torch.float64, device=J.device)
    for t in range(J.shape[-3]):
        Q, R = torch.linalg.qr(J[..., t, :, :] @ Q)
        d = torch.diagonal(R, dim1=-2, dim2=-1)
        sign = torch.sign(d)
        sign[sign == 0] = 1.0
        Q, d = Q * sign[..., None, :], d * sign
        acc += torch.log(d.abs().to(torch.float64).clamp_min(1e-300))
    return np.sort((acc / J.shape[-3]).cpu().numpy(), axis=-1)[..., ::-1].copy()


def kaplan_yorke(lams: np.ndarray) -> float:
    """Kaplan–Yorke dimension of a descending Lyapunov spectrum."""
    lams = np.sort(np.asarray(lams, dtype=float))[::-1]
    c = np.cumsum(lams)
    if c[0] < 0:
        return 0.0
    k = int(np.nonzero(c >= 0)[0][-1]) + 1
    if k >= lams.size:
        return float(lams.size)
    return float(k + c[k - 1] / abs(lams[k]))


# ------------------------------------------------------------------ exact spectra via factors


def parameter_jacobian_dense(tr: Any) -> torch.Tensor:
    r"""Explicit :math:`G=\partial F/\partial\theta` at every (b, t), shape [B, T, H, m] (small m only)."""
    B, T, H = tr.shape
    zp, xf = tr._flat()
    one = lambda th, z, x: tr.cell.step(th, z[None], x[None])[0]  # noqa: E731
    J = torch.func.vmap(torch.func.jacrev(one), in_dims=(None, 0, 0))(tr.theta, zp, xf)  # per sample [H, ...]
    return torch.cat([J[k].reshape(B, T, H, -1) for k in tr.theta], -1)


def factor_spectra(P: Propagation) -> dict[str, np.ndarray]:
    r"""Exact :math:`\sigma^2` of K, P and PKP* on the whole space, through their factors.

    :math:`\mathcal K=\frac1BGG^\top` and :math:`\mathcal P\mathcal K\mathcal P^\top=\frac1B(\mathcal PG)(\mathcal PG)^\top`
    share their nonzero eigenvalues with the m×m Grams :math:`\frac1BG^\top G`,
    :math:`\frac1B(\mathcal PG)^\top\mathcal PG`; P is block-diagonal over trials, so its singular
    values are those of the B dense (TH)×(TH) blocks. Cost: m + TH applications of the recurrence.
    ``K_trH`` is the spectrum of the true partial trace :math:`\operatorname{tr}_H\mathcal K` (BT×BT).
    """
    tr = P.tr
    B, T, H = tr.shape
    G = parameter_jacobian_dense(tr)
    m = G.shape[-1]
    PG = P.apply_many(G)
    lam_K = torch.linalg.eigvalsh(torch.einsum("btha,bthc->ac", G, G) / B).clamp_min(0)
    lam_PKP = torch.linalg.eigvalsh(torch.einsum("btha,bthc->ac", PG, PG) / B).clamp_min(0)
    E = torch.eye(T * H, dtype=G.dtype).reshape(T, H, T * H).expand(B, T, H, T * H)
    Pb = P.apply_many(E.contiguous())  # [B, T, H, TH]: the dense block of every trial
    sP = torch.linalg.svdvals(Pb.reshape(B, T * H, T * H)).reshape(-1)
    Gf = G.reshape(B * T, H, m)
    K_hc = torch.einsum("iha,jha->ij", Gf, Gf) / B  # tr_H K, the hidden-consensus kernel (BT x BT)
    lam_hc = torch.linalg.eigvalsh(K_hc).clamp_min(0)
    return {"K": (lam_K**2).numpy(), "P": (sP**2).numpy(), "PKP": (lam_PKP**2).numpy(),
            "K_trH": (lam_hc**2).numpy(), "m": np.array([m])}
