r"""The multistability paper (Altafini, *Multistability of Self-Attention Dynamics in
Transformers*; note 001) on given matrices: catalogue entries, equilibria, basins.

Model: :math:`\dot x_i=(I-x_ix_i^\top)V\sum_jA_{ij}x_j`, :math:`A_{ij}=c\operatorname{softmax}_j(\beta x_i^\top Q^\top Kx_j)`
(eq. (1); Oja (2): :math:`A=I`; multiagent Oja (5): :math:`A=\frac1n\mathbb 1\mathbb 1^\top`).
Assumption 1: :math:`V=V^\top`, :math:`\lambda_1>\lambda_2\ge\dots` with :math:`\lambda_1>0` simple.

Verdicts on consensus/bipartite points come from
:mod:`flowcert.certificates.attention.multistability` (exact eigen-enclosures of the rational
:math:`V` and interval arithmetic on the invariant blocks of the tangent linearisation, with the
Lyapunov matrix :math:`\operatorname{diag}(Z)\otimes I` of note D4); a solver status never
decides. Equilibria found by Newton from simulation limits (clustering, polygonal) get their
class and a floating tangent spectrum, and ``stable: null`` (no certificate at a numerically
located point).

``equilibria`` document: ``classes`` holds one record per (k, n1, n2) (n1 >= n2; antipodal
patterns share it) with ``verdict``, ``reason``, closed-form spectra and the full certificate
(kind ``attention_bipartite_spectrum``, re-checkable with :func:`flowcert.certificates.core.recheck`);
each listed equilibrium's ``certificate`` is ``{"kind", "claim", "class": i}`` pointing at
``classes[i]`` (the same proof serves every permutation of the signs).

Public API: :func:`theorems` (catalogue), :func:`equilibria`, :func:`basins`,
:func:`classify_run`, :func:`class_result`, :func:`wilson`, :data:`THEOREM_IDS`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from .. import bindings as bd
from ..catalogue import CrossCheck, TheoremResult
from ..certificates import core
from ..certificates.identities import identity_certificate, proved
from ..certificates.predicates import predicate_certificate
from ..certificates.attention import multistability as cm
from ..engine import asked, chosen, not_requested, wants
from ..numeric.attention import multistability as nm
from .enumeration import (  # noqa: F401 - equilibria, basins, wilson … re-exported (the public API names them here)
    DEFAULT_CAP,
    Data,
    MAX_D,
    MAX_N,
    applicable_structure,
    assumption_1,
    class_results,
    data_of,
    all_hold,
    sign_patterns,
    a_sign,
    basins,
    decidable,
    class_result,
    classify_run,
    equilibria,
    wilson,
)
from ..papers.multistability import (LEMMA_1, LEMMA_2, LEMMA_4, LEMMA_5, LEMMA_6, LEMMA_7, LEMMA_9, LEMMA_10, LEMMA_11,
                                     MAO_IDENTITY, N_EVEN, OBS_D2, OBS_D3, OJA_IDENTITY, PROP_2, THM_1, THM_2, VARIANT)
from .isolation import guarded
from .params import AttentionParams

THEOREM_IDS = ("multistability:lemma-1", "multistability:lemma-2", "multistability:lemma-4", "multistability:lemma-5",
               "multistability:thm-1", "multistability:lemma-6", "multistability:lemma-7", "multistability:thm-2",
               "multistability:lemma-9", "multistability:lemma-10", "multistability:lemma-11", "multistability:prop-2",
               "multistability:obs-D2", "multistability:obs-D3")


FILE = "001_206237fe670cef43.txt"
NOT_REQUESTED = "not requested (--simulate)"


def _identity(h: bd.HypothesisBinding, method: str) -> core.HypothesisResult:
    """A SymPy identity of the catalogue: ``holds`` with its ``symbolic_identity`` certificate, else ``unknown``."""
    which = h.proofs[0].fixed["identity"]
    if not proved(which):
        return core.HypothesisResult(h.name, "unknown", 0.0, method, None, "a residual did not reduce to 0")
    return h.result("holds", identity_certificate(which), 0.0, method)


def _equals_variant(p: AttentionParams) -> core.HypothesisResult:
    ok = p.variant == "self_attention"
    c = predicate_certificate("equals", ok, dict(VARIANT.proofs[0].subject), x=p.variant, literal="self_attention")
    return VARIANT.result("holds" if ok else "fails", c, None, "parameters")


def _n_even(p: AttentionParams) -> core.HypothesisResult:
    c = predicate_certificate("even", p.n % 2 == 0, dict(N_EVEN.proofs[0].subject), x=p.n)
    return N_EVEN.result("holds" if p.n % 2 == 0 else "fails", c, None, "parameters")


def _th(entry: bd.Entry, hyps: list[core.HypothesisResult], prediction: dict[str, Any],
        cross: CrossCheck | None = None) -> TheoremResult:
    return entry.result(hyps, prediction, cross or CrossCheck("skipped", {"reason": NOT_REQUESTED}))


def _summ(classes: list[dict[str, Any]]) -> dict[str, Any]:
    stable = [(c["k"], c["n1"], c["n2"]) for c in classes if c["verdict"] == "stable"]
    unknown = [(c["k"], c["n1"], c["n2"]) for c in classes if c["verdict"] == "unknown"]
    return {"stable_classes": [{"k": k, "n1": a, "n2": b} for k, a, b in stable],
            "unknown_classes": [{"k": k, "n1": a, "n2": b} for k, a, b in unknown],
            "n_classes": len(classes)}


def _oja_trajectory_check(D: Data, seed: int) -> CrossCheck:
    """Lemma 1 along a trajectory: x(T) -> +-v_1, W non-increasing, Wdot = -|(I-xx^T)Vx|^2."""
    from ..numeric.attention.integrate import integrate

    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=(1, D.p.d))
    x0 /= np.linalg.norm(x0)
    V = D.V
    T = 40.0 / max(float(D.lam[0] - D.lam[1]), 1e-3)
    f = lambda t, X: X @ V.T - np.sum(X * (X @ V.T), 1, keepdims=True) * X  # noqa: E731
    tr = integrate(f, x0, min(T, 2000.0), rtol=1e-11, atol=1e-13)
    Wv = 0.5 * (D.lam[0] - np.einsum("tij,jk,tik->t", tr.X, V, tr.X))
    rise = float(np.max(np.diff(Wv))) if len(Wv) > 1 else 0.0
    Xs = tr.X[:, 0]
    Fs = Xs @ V.T - np.sum(Xs * (Xs @ V.T), 1, keepdims=True) * Xs
    Wdot = -np.sum(Xs @ V.T * Fs, 1)  # -x^T V xdot
    ident = float(np.abs(Wdot + np.sum(Fs * Fs, 1)).max())
    align = float(abs(Xs[-1] @ D.U[:, 0]))
    ok = tr.ok and rise <= 1e-10 * (1 + abs(D.lam).max()) and ident <= 1e-12 * (1 + np.abs(V).max()) ** 2 and align > 1 - 1e-8
    return CrossCheck("agrees" if ok else "disagrees",
                      {"t_end": float(tr.t[-1]), "integrator": "DOP853 rtol 1e-11 on the sphere", "seed": seed,
                       "drift": tr.drift, "max_W_increase": rise, "max_Wdot_identity_residual": ident,
                       "final_alignment_|x^T v1|": align})


def _multiagent_lyapunov_check(D: Data, seed: int) -> CrossCheck:
    """Lemma 5 along a multiagent Oja trajectory: W = (lambda_1 - xbar^T V xbar)/2 non-increasing,
    Wdot = -(1/n) sum |xdot_i|^2 on the sphere."""
    from ..numeric.attention.integrate import integrate

    n = D.p.n
    rng = np.random.default_rng(seed)
    X0 = rng.normal(size=(n, D.p.d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    V = D.V

    def f(t: float, X: np.ndarray) -> np.ndarray:
        y = V @ X.mean(0)
        return y[None, :] - (X @ y)[:, None] * X

    tr = integrate(f, X0, 50.0, rtol=1e-11, atol=1e-13)
    xb = tr.X.mean(1)
    Wv = 0.5 * (D.lam[0] - np.einsum("ti,ij,tj->t", xb, V, xb))
    rise = float(np.max(np.diff(Wv)))
    res = 0.0
    for X in tr.X:
        F = f(0, X)
        res = max(res, abs(-(V @ X.mean(0)) @ F.mean(0) + np.sum(F * F) / n))
    ok = tr.ok and rise <= 1e-10 * (1 + abs(D.lam).max()) and res <= 1e-12 * (1 + np.abs(V).max()) ** 2
    return CrossCheck("agrees" if ok else "disagrees", {"t_end": 50.0, "seed": seed, "drift": tr.drift,
                                                         "max_W_increase": rise, "max_Wdot_identity_residual": res})


def _basin_check(p: AttentionParams, seed: int, samples: int, classes: list[dict[str, Any]]) -> CrossCheck:
    b = basins(p, samples, seed=seed, t_max=300.0)
    out = b["basins"]
    return CrossCheck("agrees" if b["agrees"] else "disagrees",
                      {"samples": samples, "seed": seed, "protocol": b["integrator"], "outcomes": out["outcomes"],
                       "reached_certified_unstable": out["reached_certified_unstable"],
                       "max_drift": b["max_drift"]})


class _Context:
    """What the entries share, each part computed once on first use (so a failure in one part
    fails only the entries that need it)."""

    def __init__(self, p: AttentionParams, simulate: bool, seed: int) -> None:
        self.p, self.simulate, self.seed = p, simulate, seed

    @cached_property
    def structure(self) -> core.HypothesisResult:
        return applicable_structure(self.p)

    @cached_property
    def D(self) -> Data:
        return data_of(self.p)

    @cached_property
    def A1(self) -> list[core.HypothesisResult]:
        return assumption_1(self.D)

    def unpack(self) -> tuple[Any, ...]:
        """``(p, D, simulate, seed, structure, A1, A1s, sa_ok, can)``: A1s is Assumption 1 without
        lambda_1 > 0 (Lemma 1 does not need it); ``can``: classes decidable (only lambda_1 simple)."""
        ok = all_hold([self.structure])
        A1s = self.A1[:2] if len(self.A1) > 1 else self.A1
        return (self.p, self.D, self.simulate, self.seed, self.structure, self.A1, A1s,
                ok and self.p.variant == "self_attention", ok and decidable(self.D))

    @property
    def can(self) -> bool:
        return self.unpack()[-1]

    @property
    def sa_ok(self) -> bool:
        return self.unpack()[-2]

    @cached_property
    def mao(self) -> list[dict[str, Any]]:
        return class_results(self.D, "multiagent_oja") if self.can else []

    @cached_property
    def mao_p(self) -> AttentionParams | None:
        from dataclasses import replace

        p = self.p
        return replace(p, variant="multiagent_oja", heads=(replace(p.heads[0], Q=None, K=None),)) if all_hold([self.structure]) else None

    @cached_property
    def sac(self) -> list[dict[str, Any]]:
        return class_results(self.D) if self.can and self.sa_ok else []

    @cached_property
    def hyp_sa(self) -> list[core.HypothesisResult]:
        p = self.p
        return [*self.unpack()[6], self.structure, _equals_variant(p)]

    @cached_property
    def res6(self) -> float | None:
        p, D = self.p, self.D
        if not (self.can and self.sa_ok):
            return None
        return max(float(np.abs(nm.field_one_head(nm.bipartite_point(D.U[:, k], s), D.Mb, D.V, D.c)).max())
                   for k in range(p.d) for s in sign_patterns(p.n, 16)[0])

    @cached_property
    def rank_info(self) -> list[dict[str, Any]] | None:
        p, D = self.p, self.D
        if not (self.can and self.sa_ok):
            return None
        rank_info = []
        for k in range(p.d):
            sgn = a_sign(D, k)  # exact: M + M^T = 0, a certified interval, or Q(lambda_k) arithmetic
            s = np.ones(p.n)
            s[p.n // 2:] = -1
            A = nm.attention_weights(nm.bipartite_point(D.U[:, k], s), D.Mb, D.c)
            a = D.a(k)
            n1, n2 = int((s > 0).sum()), int((s < 0).sum())
            al1, al2 = nm.scaled_weights(a)  # eq. (8) is homogeneous of degree 0 in (e^a, e^-a)
            b1, b2 = n1 * al1 + n2 * al2, n1 * al2 + n2 * al1
            pred8 = D.c * np.block([[np.full((n1, n1), al1 / b1), np.full((n1, n2), al2 / b1)],
                                    [np.full((n2, n1), al2 / b2), np.full((n2, n2), al1 / b2)]])
            rank_info.append({"k": k + 1, "a_k": a, "a_k_nonzero_certified": sgn is not None and sgn != 0,
                              "a_k_zero_exact": sgn == 0,
                              "bipartite_rank_prediction": {None: "2 iff a_k != 0 (undecided)", 0: 1}.get(sgn, 2),
                              "eq8_residual": float(np.abs(A - pred8).max())})
        return rank_info


#: The simulation cross-checks of the entries that have one (names of ``checks=``).
SIMULATION_CHECKS = {"multistability:lemma-1": "oja", "multistability:lemma-5": "basins",
                     "multistability:thm-1": "basins", "multistability:thm-2": "basins"}


def theorems(p: AttentionParams, *, simulate: bool = False, seed: int = 0,
             checks: frozenset[str] | None = None) -> list[TheoremResult]:
    """Every multistability catalogue entry on ``p`` (see :data:`THEOREM_IDS`), one function per
    entry (:data:`ENTRIES`); an entry whose evaluation raises is reported alone as ``unknown``
    with the error named (:mod:`flowcert.attention.isolation`). With ``simulate``, ``checks`` names
    the simulation cross-checks that run (:data:`SIMULATION_CHECKS`; None: all)."""
    ctx = _Context(p, simulate, seed)
    with asked(chosen(simulate, checks, set(SIMULATION_CHECKS.values()))):
        return _theorems(ctx)


def _theorems(ctx: _Context) -> list[TheoremResult]:
    """The entries on ``ctx``, with the cross-checks asked for in the current evaluation (:func:`flowcert.engine.wants`)."""
    out = [guarded(id_, id_.split(":")[1], fn, ctx) for id_, fn in ENTRIES]
    if ctx.simulate:  # --simulate was given: an entry without a cross-check has none to give, it was not left out
        for th in out:
            if th.cross_check.status == "skipped" and th.cross_check.details.get("reason") == NOT_REQUESTED:
                check = SIMULATION_CHECKS.get(th.id)
                th.cross_check = (not_requested(check) if check is not None and not wants(check) else
                                  CrossCheck("skipped", {"reason": "no simulation tests this result on these parameters"}))
    return out


def _lemma_1(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    h_sym = _identity(OJA_IDENTITY, r"sympy.expand (polynomial identity in $x\in\mathbb R^3$, symmetric $V$: $d\le3$ by substitution)")
    pred: dict[str, Any] = {"equilibria": r"$\pm v_k$", "stable": r"$\pm v_1$ only",
                            "tangent_spectrum_at_v_k": r"$\lambda_j-\lambda_k$ ($j\ne k$); ambient adds $-2\lambda_k$"}
    if can:
        pred["oja_verdicts"] = [{"k": k + 1, "verdict": cm.verdict_from_data(D.Vq, D.Mq, D.enc, k, 1, 0, "oja", D.encoded)[0]}
                                for k in range(p.d)]
    return (_th(LEMMA_1, [*A1s, h_sym, structure], pred,
                   _oja_trajectory_check(D, seed) if wants("oja") and can else None))

def _lemma_2(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()

    res2 = None
    if can:
        res2 = max(float(np.abs(nm.field_one_head(nm.bipartite_point(D.U[:, k], s), D.Mb, D.V, D.c, variant="multiagent_oja")).max())
                   for k in range(p.d) for s in sign_patterns(p.n, 16)[0])
    return (_th(LEMMA_2, [*A1s, structure], {"consensus_bipartite_points": rf"${p.d}\times2^{{{p.n}}}$ sign patterns",
                                       "max_field_residual_at_points": res2},
                   CrossCheck("agrees" if res2 is not None and res2 <= 1e-12 * (1 + np.abs(D.V).max()) else "skipped",
                              {"checked": "field of (5) at listed points", "max_residual": res2}) if res2 is not None else None))

def _lemma_4(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()

    mao = ctx.mao
    pred4 = {"consensus_v1": "stable", "consensus_vk_k>=2": "unstable", "bipartite": "unstable", **(_summ(mao) if mao else {})}
    if mao:
        pred4["agrees_with_lemma"] = [(c["k"], c["n2"]) for c in mao if c["verdict"] == "stable"] == [(1, 0)]
    cross4 = None
    if can:
        errs = []
        for k in range(p.d):
            X = nm.bipartite_point(D.U[:, k], np.ones(p.n))
            got = np.sort(nm.spectra(nm.ambient_jacobian(X, D.Mb, D.V, variant="multiagent_oja"), X).tangent.real)
            want = np.sort([D.lam[h] - D.lam[k] for h in range(p.d) if h != k] + [-D.lam[k]] * ((p.n - 1) * (p.d - 1)))
            errs.append(float(np.abs(got - want).max()))
        cross4 = CrossCheck("agrees" if max(errs) <= 1e-9 * (1 + np.abs(D.V).max()) else "disagrees",
                            {"check": "tangent spectrum of the Lemma 3 Jacobian at consensus $v_k$ vs "
                                      r"$\{\lambda_h-\lambda_k\}\cup\{-\lambda_k\}^{(n-1)(d-1)}$", "max_difference": max(errs)})
    return (_th(LEMMA_4, [*A1, structure], pred4, cross4))

def _lemma_5(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    h5 = _identity(MAO_IDENTITY, "sympy.expand (polynomial identity, n = 3, d = 2)")
    return (_th(LEMMA_5, [*A1s, h5, structure], {"W_nonincreasing": True},
                   _multiagent_lyapunov_check(D, seed) if wants("basins") and can else None))

def _thm_1(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    mao, mao_p = ctx.mao, ctx.mao_p
    return (_th(THM_1, [*A1, structure], {"limit": "consensus v1 for almost every initial condition", **(_summ(mao) if mao else {})},
                   _basin_check(mao_p, seed, 32, mao) if wants("basins") and can and mao_p is not None else None))

def _lemma_6(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()

    res6, hyp_sa = ctx.res6, ctx.hyp_sa
    return (_th(LEMMA_6, hyp_sa, {"max_field_residual_at_points": res6},
                   CrossCheck("agrees" if res6 is not None and res6 <= 1e-12 * (1 + np.abs(D.V).max()) * p.n else "disagrees",
                              {"max_residual": res6}) if res6 is not None else None))

def _lemma_7(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    rank_info, hyp_sa = ctx.rank_info, ctx.hyp_sa
    return (_th(LEMMA_7, hyp_sa, {"per_eigenvector": rank_info},
                   CrossCheck("agrees" if rank_info and max(r["eq8_residual"] for r in rank_info) <= 1e-12 else "disagrees",
                              {"max_eq8_residual": max(r["eq8_residual"] for r in rank_info)}) if rank_info else None))

def _thm_2(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()

    sac, hyp_sa = ctx.sac, ctx.hyp_sa
    pred2: dict[str, Any] = {"consensus_v1": "stable (any Q, K)", "consensus_vk_k>=2": "unstable"}
    if sac:
        pred2.update(_summ(sac))
        c1 = next(c for c in sac if c["k"] == 1 and c["n2"] == 0)
        pred2["consensus_v1_certified"] = c1["verdict"]
        pred2["consensus_vk_unstable_certified"] = all(c["verdict"] == "unstable" for c in sac if c["k"] > 1 and c["n2"] == 0)
        pred2["corrected_vs_printed_9"] = _printed9_disagreements(D, sac)
    return (_th(THM_2, [*hyp_sa[:-2], *A1[2:], structure, hyp_sa[-1]], pred2,
                   _basin_check(p, seed, 32, sac) if wants("basins") and sac else None))

def _lemma_9(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    hyp_sa = ctx.hyp_sa
    lemma9 = None
    if can and sa_ok:
        errs = []
        for k in range(p.d):
            v = D.U[:, k]
            X = nm.bipartite_point(v, np.ones(p.n))
            F = nm.ambient_jacobian(X, D.Mb, D.V, D.c)
            P = np.eye(p.d) - np.outer(v, v)
            L = D.lam[k] * (np.eye(p.d) + np.outer(v, v))
            F7 = D.c * (np.kron(np.full((p.n, p.n), 1 / p.n), P @ D.V) - np.kron(np.eye(p.n), L))
            errs.append(float(np.abs(F - F7).max()))
        lemma9 = max(errs)
    return (_th(LEMMA_9, hyp_sa, {"independent_of_QK": True, "max_|F_lemma8 - F_eq7|": lemma9},
                   CrossCheck("agrees" if lemma9 is not None and lemma9 <= 1e-12 * (1 + np.abs(D.V).max()) else "disagrees",
                              {"max_difference": lemma9}) if lemma9 is not None else None))

def _lemma_10(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    hyp_sa = ctx.hyp_sa
    l10 = None
    if can and sa_ok:
        rng = np.random.default_rng(seed)
        errs = []
        for _ in range(4):
            k = int(rng.integers(p.d))
            s = rng.choice([-1.0, 1.0], size=p.n)
            n1, n2 = int((s > 0).sum()), int((s < 0).sum())
            X = nm.bipartite_point(D.U[:, k], s)
            spn = nm.spectra(nm.ambient_jacobian(X, D.Mb, D.V, D.c), X)
            tang, _ = nm.bipartite_spectra(D.lam, D.a(k), k, n1, n2, D.c)
            errs.append(float(np.abs(np.sort(spn.tangent.real) - np.sort(tang.real)).max()))
        l10 = max(errs)
    return (_th(LEMMA_10, hyp_sa, {"max_|closed form - numeric tangent spectrum|": l10},
                   CrossCheck("agrees" if l10 is not None and l10 <= 1e-9 * (1 + np.abs(D.V).max()) else "disagrees",
                              {"max_difference": l10, "random patterns": 4, "seed": seed}) if l10 is not None else None))

def _lemma_11(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    sac, hyp_sa = ctx.sac, ctx.hyp_sa
    return (_th(LEMMA_11, hyp_sa, {"polygonal": "not asymptotically stable (heuristic proof in the paper; may be non-hyperbolic)"},
                   _lemma11_check(D, sac) if sac else None))

def _prop_2(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    hyp_sa = ctx.hyp_sa
    prop2 = None
    if all_hold([structure]) and p.variant == "self_attention":
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(p.n, p.d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        M0 = D.Mb / p.beta if p.beta else D.Mb
        f0 = nm.field_one_head(X, M0, D.V, D.c, variant="multiagent_oja")
        ratios = [float(np.abs(nm.field_one_head(X, b * M0, D.V, D.c) - f0).max() / b) for b in (1e-2, 1e-3, 1e-4)]
        prop2 = ratios
    return (_th(PROP_2, [structure, hyp_sa[-1]], {"|f_beta - f_0|/beta at beta = 1e-2, 1e-3, 1e-4": prop2},
                   CrossCheck("agrees" if prop2 and prop2[-1] > 0 and abs(prop2[1] / prop2[2] - 1) < 0.05 else
                              ("agrees" if prop2 is not None and max(prop2) < 1e-12 else "disagrees"),
                              {"ratios": prop2, "seed": seed}) if prop2 is not None else None))

def _obs_d2(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    sac, hyp_sa = ctx.sac, ctx.hyp_sa

    d2 = None
    if sac and p.n % 2 == 0:
        d2 = []
        for k in sorted({c["k"] - 1 for c in sac}):
            t = math.tanh(D.a(k))
            cl = next(c for c in sac if c["k"] == k + 1 and c["n1"] == p.n // 2)
            pred_vals = sorted([-t * D.lam[k] * D.c] * ((p.n - 2) * (p.d - 1))
                               + [D.c * (D.lam[j] - t * D.lam[k]) for j in range(p.d) if j != k]
                               + [D.c * t * (D.lam[j] - D.lam[k]) for j in range(p.d) if j != k])
            got = sorted(z[0] for z in cl["tangent_spectrum"])
            pred_stable = (k == 0 and t > 0 and D.lam[1] < t * D.lam[0]) or \
                          (k == p.d - 1 and t < 0 and D.lam[-1] < 0 and D.lam[0] < t * D.lam[-1])
            d2.append({"k": k + 1, "tanh_a": t, "spectrum_error": float(np.abs(np.array(pred_vals) - np.array(got)).max()),
                       "closed_form_stable": bool(pred_stable), "certified": cl["verdict"]})
    return (_th(OBS_D2, [*hyp_sa, _n_even(p)],
                   {"per_eigenvector": d2},
                   CrossCheck("agrees" if d2 and all(r["spectrum_error"] <= 1e-9 and
                              (r["certified"] == "unknown" or (r["certified"] == "stable") == r["closed_form_stable"]) for r in d2)
                              else "disagrees", {"rows": d2}) if d2 else None))

def _obs_d3(ctx: _Context) -> TheoremResult:
    p, D, simulate, seed, structure, A1, A1s, sa_ok, can = ctx.unpack()
    sac, hyp_sa = ctx.sac, ctx.hyp_sa
    d3 = None
    if sac:
        bad = [c for c in sac if c["verdict"] == "stable" and c["n2"] >= 1 and 1 < c["k"] < p.d]
        bad_d = [c for c in sac if c["verdict"] == "stable" and c["n2"] >= 2 and c["k"] == p.d and not abs(D.lam[-1]) > D.lam[0]]
        d3 = {"stable_bipartite_at_interior_k": len(bad), "stable_at_v_d_without_|lambda_d|>lambda_1": len(bad_d)}
    return (_th(OBS_D3, hyp_sa, {"counts": d3},
                   CrossCheck("agrees" if d3 is not None and d3["stable_at_v_d_without_|lambda_d|>lambda_1"] == 0 and
                              all(c["n1"] < 2 or c["n2"] < 2 for c in sac if c["verdict"] == "stable" and 1 < c["k"] < p.d)
                              else "disagrees", {"counts": d3}) if d3 is not None else None))


#: the catalogue, in order: (id, entry function)
ENTRIES = (("multistability:lemma-1", _lemma_1), ("multistability:lemma-2", _lemma_2), ("multistability:lemma-4", _lemma_4),
           ("multistability:lemma-5", _lemma_5), ("multistability:thm-1", _thm_1), ("multistability:lemma-6", _lemma_6),
           ("multistability:lemma-7", _lemma_7), ("multistability:thm-2", _thm_2), ("multistability:lemma-9", _lemma_9),
           ("multistability:lemma-10", _lemma_10), ("multistability:lemma-11", _lemma_11), ("multistability:prop-2", _prop_2),
           ("multistability:obs-D2", _obs_d2), ("multistability:obs-D3", _obs_d3))


def _lemma11_check(D: Data, classes: list[dict[str, Any]]) -> CrossCheck:
    """Lemma 11 on the polygonal points the exact enumeration knows: bipartite/consensus points
    labelled polygonal exactly (:func:`flowcert.attention.enumeration.eigen_labels`: a_k = 0 with an
    equal split, or lambda_k = 0). None of their certified verdicts may be ``stable``."""
    from .enumeration import eigen_labels

    poly = [c for c in classes if "polygonal" in eigen_labels(D, c["k"] - 1, c["n1"], c["n2"])]
    if not poly:
        return CrossCheck("skipped", {"reason": "no polygonal point among the exactly enumerated classes "
                                                r"(needs $a_k=0$ with an equal split, or $\lambda_k=0$)"})
    bad = [(c["k"], c["n1"], c["n2"]) for c in poly if c["verdict"] == "stable"]
    return CrossCheck("disagrees" if bad else "agrees",
                      {"polygonal_classes": [{"k": c["k"], "n1": c["n1"], "n2": c["n2"], "verdict": c["verdict"]} for c in poly],
                       "certified_stable_polygonal": bad,
                       "criterion": "no exactly polygonal class has a certified 'stable' verdict"})


def _printed9_disagreements(D: Data, classes: list[dict[str, Any]]) -> dict[str, int]:
    """How often the printed (9) and the corrected (9) disagree with the certified verdicts on the
    2x2 blocks of the classes with both groups >= 2."""
    wrong_printed = wrong_corrected = total = 0
    for c in classes:
        n1, n2, k = c["n1"], c["n2"], c["k"] - 1
        if n1 < 2 or n2 < 2 or c["verdict"] == "unknown":
            continue
        a = D.a(k)
        al1, al2 = nm.scaled_weights(a)  # every quantity below is homogeneous of degree 0 in (al1, al2)
        b1, b2 = n1 * al1 + n2 * al2, n1 * al2 + n2 * al1
        d1, d2 = (n1 * al1 - n2 * al2) / b1, (n2 * al1 - n1 * al2) / b2
        lk = D.lam[k]
        group_ok = d1 * lk > 0 and d2 * lk > 0
        corr, prin = group_ok, group_ok
        for j in range(len(D.lam)):
            if j == k:
                continue
            lj = D.lam[j]
            tr_c = (1 + al2 * (n1**2 + n2**2) / (2 * al1 * n1 * n2)) * lj - (1 - al2**2 / al1**2) * lk
            det_c = d1 * d2 * lk**2 - (d2 * n1 * al1 / b1 + d1 * n2 * al1 / b2) * lj * lk + n1 * n2 / (b1 * b2) * (al1**2 - al2**2) * lj**2
            tr_p = (1 - al2 * (n1**2 + n2**2) / (2 * al1 * n1 * n2)) * lj - (1 - al2**2 / al1**2) * lk
            det_p = d1 * d2 * lk**2 + (d2 * n1 * al1 / b1 + d1 * n2 * al1 / b2) * lj * lk + n1 * n2 / (b1 * b2) * (al2**2 - al1**2) * lj**2
            corr = corr and tr_c < 0 and det_c > 0
            prin = prin and tr_p < 0 and det_p < 0
        total += 1
        wrong_corrected += corr != (c["verdict"] == "stable")
        wrong_printed += prin != (c["verdict"] == "stable")
    return {"classes_checked": total, "printed_wrong": wrong_printed, "corrected_wrong": wrong_corrected}
