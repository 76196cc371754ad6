r"""Catalogue entries of the consensus paper (Rodríguez Abella, Silvestre, Tabuada, *The asymptotic
behavior of attention in transformers*, ``003_951a97dfacf88740.txt``) on the ``attention`` system:
``consensus:lemma-3.1``, ``thm-3.1``, ``thm-3.2``, ``lemma-4.1``, ``lemma-4.2``, ``thm-4.1``,
``lemma-5.1``, ``thm-5.1``, ``lemma-6.1``, ``thm-6.1``.

Model (7), :math:`d=n+1`, rows of each head's attention matrix summing to :math:`c` (:math:`1/\sqrt d`
for ``normalization="sqrt"``, the paper's convention; 1 for ``"unit"``, a time rescaling):

.. math::

    \dot y_i=\sum_{\eta=1}^h\sum_j\alpha^\eta_{ij}(t,y)\big(U_\eta y_j-(y_i^\top WU_\eta y_j)\,y_i\big),\qquad
    \alpha^\eta_{ij}=c\,\frac{e^{y_i^\top P_\eta y_j}}{\sum_ke^{y_i^\top P_\eta y_k}},\quad P_\eta=\beta Q_\eta^\top K_\eta .

Hypotheses are certified predicates (:mod:`flowcert.certificates.attention.consensus`); derivations
are SymPy identities (:mod:`flowcert.symbolic.attention.consensus`); the cross-checks integrate the
model on its manifold (:func:`flowcert.attention.integrate`) and evaluate each Lyapunov function
along the run (:mod:`flowcert.numeric.attention.consensus`). A run that leaves its manifold is a
failed run (cross-check ``skipped``). Limits are classified once the run has settled, by the
certified transverse linearisation at consensus (a consensus point is then an exponentially
attracting limit), never by a threshold crossing alone.

Corrections (note 003): Thm 3.2 needs tokens on :math:`\mathcal E_P` (:math:`W=P`) and only gives
convergence to *an* equilibrium; Thm 4.1 gives attractivity only; Thm 5.1's domain
:math:`\{y_j\ne-y_1\}` is too strong for :math:`\ell\ge3`; Lemma 4.1's :math:`c_2` is loose
(:math:`\alpha\le c`); Lemma 6.1's great sphere :math:`v^\perp` is invariant; the paper's measure
:math:`E` is blind to bipolar configurations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, TypedDict

import numpy as np
import sympy as sp

from ..catalogue import CrossCheck, TheoremResult
from ..certificates import core
from ..certificates.attention import consensus as cert
from ..engine import asked, chosen, not_requested, wants
from ..numeric.attention import consensus as num
from ..symbolic.attention import consensus as sym
from ..papers.consensus import (LEMMA_3_1, LEMMA_4_1, LEMMA_4_2, LEMMA_5_1, LEMMA_6_1, THM_3_1, THM_3_2, THM_4_1,
                                THM_5_1, THM_6_1)
from .isolation import attempt, guarded
from .examples import THM51_ANGLES, Fig5, fig5_parameters, paper_examples  # noqa: F401 - re-exported
from ..records import JSONObject
from .params import AttentionParams

#: Tolerance on a Lyapunov function's step increase, relative to its size (integration round-off).
LYAPUNOV_RTOL = 1e-8
#: A run has settled when ``max |F|`` at ``t_end`` is below this.
SETTLED_SPEED = 1e-6
#: Consensus is read once the spread is below this and the transverse linearisation is certified.
CONSENSUS_SPREAD = 1e-5
SAMPLES = 1501


from .consensus_hypotheses import (  # noqa: F401 - re-exported: the entries below and callers use them
    Setting,
    setting,
    exactly_equal,
    value_identity,
    full_attention,
    causal_attention,
    single_head,
    sphere,
    ellipsoid,
    constant_P,
    W_equals_P,
    P_spd,
    P_bounded,
    P_uniformly_continuous,
    U_constant,
    proofs_hypothesis,
    antipode_free,
    hemisphere,
    top_eigenvalue,
    causal_consensus_stable,
    thm61_stable,
    side_of_v,
    tetrahedron,
)


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _fails(name: str, method: str, detail: str) -> core.HypothesisResult:
    return core.HypothesisResult(name, "fails", None, method, None, detail)


# simulation shared by the cross-checks


class RunSummary(TypedDict):
    """What a cross-check records of the run it used (:meth:`Run.summary`)."""

    t_end: float
    samples: int
    integrator: str
    manifold_drift: float
    final_speed: float
    ok: bool
    message: str


class ConsensusLimit(TypedDict, total=False):
    """The end of a run classified (:func:`consensus_limit`): ``limit_class`` (``consensus``,
    ``non_consensus``, ``not_settled`` or ``unknown``) with its ``basis``, the final spread and measures,
    and the shared classifier's ``classes`` and ``limit``."""

    spread_final: float
    E_paper_final: float
    E_signed_final: float
    final_speed: float
    limit_class: str
    basis: str
    classes: list[str] | None
    limit: JSONObject


@dataclass
class Run:
    t: np.ndarray
    X: np.ndarray
    ok: bool
    message: str
    drift: float
    speed: float

    def summary(self) -> RunSummary:
        """The run as a cross-check records it (end time, samples, integrator, drift, final speed, success)."""
        return {"t_end": float(self.t[-1]), "samples": int(self.t.size), "integrator": "scipy DOP853 + retraction (rtol 1e-9)",
                "manifold_drift": self.drift, "final_speed": self.speed, "ok": self.ok, "message": self.message}


def run_simulation(s: Setting, X0: np.ndarray | None = None, t_end: float | None = None, samples: int = SAMPLES) -> Run:
    """Integrate (7) from ``X0`` on the manifold of ``s.p`` (:func:`flowcert.attention.integrate`)."""
    from .flow import field, integrate

    t_end = s.p.t_end if t_end is None else t_end
    X0 = s.X0 if X0 is None else X0
    tr = integrate(s.p, t_end, X0, t_eval=np.linspace(0.0, t_end, samples))
    speed = float(np.abs(field(s.p)(float(tr.t[-1]), tr.X[-1])).max()) if tr.X.size else float("nan")
    return Run(tr.t, tr.X, bool(tr.ok), tr.message, float(tr.drift), speed)


def _failed(run: Run) -> CrossCheck | None:
    if not run.ok:
        return CrossCheck("skipped", {"reason": f"failed run: {run.message}", **run.summary()})
    return None


def _cross_checked(r: TheoremResult, simulate_: bool, check: Callable[[], CrossCheck], run: Run | None = None, *,
                   needs_run: bool = True, ready: bool = True, why: str = "hypotheses not certified") -> TheoremResult:
    """``r`` with its cross-check when one was asked for (``simulate_``): skipped with ``why`` when the
    theorem does not apply, the run it needs is missing or the setting is not ``ready`` for it; skipped
    with the failure of a failed run; else ``check()``."""
    if not simulate_:
        return r
    if not r.applies or (needs_run and run is None) or not ready:
        r.cross_check = CrossCheck("skipped", {"reason": why})
    elif needs_run and (f := _failed(run)) is not None:
        r.cross_check = f
    else:
        r.cross_check = check()
    return r


def consensus_limit(s: Setting, run: Run) -> ConsensusLimit:
    """Classify the end of a run: ``consensus`` once settled with spread below
    :data:`CONSENSUS_SPREAD` and the transverse linearisation at consensus certified; otherwise
    ``not_settled`` or ``non_consensus`` (a settled equilibrium with spread away from 0)."""
    X = run.X[-1]
    spread = float(num.spread(X))
    out: ConsensusLimit = {"spread_final": spread, "E_paper_final": float(num.paper_measure(X)), "E_signed_final": float(num.signed_measure(X)),
           "final_speed": run.speed}
    if spread <= CONSENSUS_SPREAD:
        if all(exactly_equal(U, np.eye(s.d)) for U in s.U):
            st = cert.consensus_stability(s.p.causal, s.ell, s.h, s.d).status
        elif s.p.causal and s.h == 1 and not isinstance(s.U[0], sp.MatrixBase):
            # Thm 6.1 setting: consensus points are (+-v, ..., +-v); certified by the separator
            top, te = cert.simple_positive_top_eigenvalue(np.asarray(s.U[0], float))
            near = te is not None and min(np.abs(X - sg * te.v).max() for sg in (1, -1)) <= CONSENSUS_SPREAD
            st = cert.theorem_6_1_stability(top).status if near else "unknown"
        else:
            st = "unknown"
        out["limit_class"] = "consensus" if st == "holds" else "unknown"
        out["basis"] = ("spread below %.0e with a certified exponentially stable transverse linearisation" % CONSENSUS_SPREAD
                        if st == "holds" else "spread below %.0e but no certified linearisation at this consensus point" % CONSENSUS_SPREAD)
    elif run.speed <= SETTLED_SPEED:
        out["limit_class"] = "non_consensus"
        out["basis"] = "settled (max |F| = %.2e) at spread %.3g" % (run.speed, spread)
    else:
        out["limit_class"] = "not_settled"
        out["basis"] = "max |F| = %.2e at t_end" % run.speed
    # the shared classifier (same end state, every structure): consensus / bipartite (bipolar) / clustering k / polygonal
    from .classify import limit_of

    lc = limit_of(s.p, X, t=float(run.t[-1]), speed=run.speed, settle_tol=SETTLED_SPEED)
    out["classes"] = lc.labels
    out["limit"] = lc.to_json()
    return out


def _verdict(checks_ok: bool, limit_ok: bool, settled: bool, details: dict[str, Any]) -> CrossCheck:
    """``disagrees`` when a Lyapunov/invariance check fails or a settled run contradicts the
    prediction; ``skipped`` when the run has not settled by t_end (the limit is undecided)."""
    if not checks_ok:
        return CrossCheck("disagrees", details)
    if limit_ok:
        return CrossCheck("agrees", details)
    if not settled:
        return CrossCheck("skipped", {"reason": "the run has not settled by t_end (Lyapunov and invariance checks passed); "
                                                "increase t_end", **details})
    return CrossCheck("disagrees", details)


def _lyapunov(values: np.ndarray) -> dict[str, Any]:
    inc = num.largest_increase(values)
    scale = num.scale_of(values)
    return {"largest_increase": inc, "scale": scale, "tolerance": LYAPUNOV_RTOL * max(1.0, scale),
            "non_increasing": bool(inc <= LYAPUNOV_RTOL * max(1.0, scale))}


# §3: gradient structure

SOURCE = "003_951a97dfacf88740.txt"


def lemma_3_1(s: Setting, simulate_: bool) -> TheoremResult:
    hyps = [P_spd(s), constant_P(s)]
    r = LEMMA_3_1.result(hyps, {"projection": r"$X_i\mapsto(I-y_iy_i^\top P)X_i$",
                                     "metric": r"$\sum_iZ_iX_i^\top PY_i$, $Z_i=\sqrt{n+1}\sum_j\exp(y_i^\top Py_j)$"})
    return _cross_checked(r, simulate_, lambda: _projection_check(s), needs_run=False,
                          why="P is not certified symmetric positive definite")


def _projection_check(s: Setting) -> CrossCheck:
    P = np.asarray(s.P[0], float)
    rng = np.random.default_rng(0)
    Y = s.X0 / np.sqrt(np.einsum("id,de,ie->i", s.X0, P, s.X0))[:, None]  # pi_P
    Z = np.sqrt(s.d) * np.exp(Y @ P @ Y.T).sum(1)
    worst_t, worst_o = 0.0, 0.0
    for _ in range(20):
        X = rng.normal(size=Y.shape)
        PX = X - np.einsum("id,de,ie->i", Y, P, X)[:, None] * Y
        worst_t = max(worst_t, float(np.abs(np.einsum("id,de,ie->i", Y, P, PX)).max()))
        T = rng.normal(size=Y.shape)
        T = T - np.einsum("id,de,ie->i", Y, P, T)[:, None] * Y  # a tangent vector
        g = float((Z * np.einsum("id,de,ie->i", X - PX, P, T)).sum())
        worst_o = max(worst_o, abs(g) / (np.linalg.norm(X) * np.linalg.norm(T) * Z.max()))
    ok = worst_t < 1e-12 and worst_o < 1e-12
    return CrossCheck("agrees" if ok else "disagrees",
                      {"tangency_residual": worst_t, "g_orthogonality_residual": worst_o, "trials": 20,
                       "criterion": r"$y_i^\top P(\Pi X)_i=0$ and $g(X-\Pi X,T)=0$ for tangent $T$, both below $10^{-12}$ (relative)"})


def thm_3_1(s: Setting, simulate_: bool) -> TheoremResult:
    hyps = [P_spd(s), constant_P(s), single_head(s), value_identity(s), full_attention(s),
            proofs_hypothesis("gradient identity dV/dy_k = -Z_k P X_k proved")]
    r = THM_3_1.result(hyps, {"V_P": r"$-\frac12\sum_{ij}\exp(y_i^\top Py_j)$",
                               "gradient": r"$\nabla V_P=-{}$(right-hand side of (8))"})
    return _cross_checked(r, simulate_, lambda: _gradient_check(s), needs_run=False)


def _gradient_check(s: Setting) -> CrossCheck:
    P = np.asarray(s.P[0], float)
    Y = s.X0 / np.sqrt(np.einsum("id,de,ie->i", s.X0, P, s.X0))[:, None]
    V = lambda X: float(num.V_P(X, P))  # noqa: E731
    grad = np.zeros_like(Y)
    for idx in np.ndindex(*Y.shape):
        E = np.zeros_like(Y)
        E[idx] = 1e-6
        grad[idx] = (V(Y + E) - V(Y - E)) / 2e-6
    Z = np.sqrt(s.d) * np.exp(Y @ P @ Y.T).sum(1)
    Pinv = np.linalg.inv(P)
    R = (grad @ Pinv.T) / Z[:, None]  # g^{-1} dV
    R = R - np.einsum("id,de,ie->i", Y, P, R)[:, None] * Y  # project on T E_P
    A = num.attention_weights(Y, P, row_sum=s.row_sum)
    M = A @ Y
    F = M - np.einsum("id,de,ie->i", Y, P, M)[:, None] * Y  # (8) with W = P
    scale = 1.0 if s.p.normalization == "sqrt" else math.sqrt(s.d)  # "unit" rows: V_P's gradient flow is rescaled
    err = float(np.abs(R * scale + F).max() / max(1.0, np.abs(F).max()))
    return CrossCheck("agrees" if err < 1e-6 else "disagrees",
                      {"relative_error": err, "criterion": "central differences (h = 1e-6) of V_P, Riemannian gradient vs -Y_P below 1e-6"})


def thm_3_2(s: Setting, simulate_: bool, run: Run | None) -> TheoremResult:
    hyps = [P_spd(s), W_equals_P(s), constant_P(s), single_head(s), value_identity(s), full_attention(s),
            proofs_hypothesis("Vdot_P = -sum_k Z_k |ydot_k|_P^2 on E_P proved")]
    pred = {"V_P_non_increasing": True, "limit": "an equilibrium (Lojasiewicz); consensus not guaranteed",
            "V_P_lower_bound": float(sym.V_P_lower_bound(s.ell)),
            "V_P_minimum_iff_consensus": True}
    r = THM_3_2.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _thm_3_2_check(s, run, pred), run)


def _thm_3_2_check(s: Setting, run: Run, pred: dict[str, Any]) -> CrossCheck:
    P = np.asarray(s.P[0], float)
    Vs = num.V_P(run.X, P)
    ly = _lyapunov(Vs)
    lim = consensus_limit(s, run)
    checks = ly["non_increasing"] and Vs.min() >= pred["V_P_lower_bound"] - 1e-9 * abs(pred["V_P_lower_bound"])
    settled = lim["limit_class"] != "not_settled"
    return _verdict(checks, settled, settled,
                    {"V_P": ly, "V_P_initial": float(Vs[0]), "V_P_final": float(Vs[-1]), **lim, **run.summary(),
                     "criterion": r"$V_P$ never increases beyond round-off, stays above $-\ell^2e/2$, and the run settles"})


# §4: hemisphere


def lemma_4_1(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None]) -> TheoremResult:
    hb, b = bound
    hyps = [hb, ellipsoid(s)]
    pred: dict[str, Any] = {}
    if b is not None:
        lam_min = float(np.linalg.eigvalsh(s.W).min())
        consts = cert.lemma_4_1_constants(float(b), lam_min, s.ell, s.d)
        # rows summing to c instead of 1/sqrt(d) scale c1 by c sqrt(d): a shift of its log
        log_c1 = consts.log_c1 + math.log(s.row_sum * math.sqrt(s.d))
        c1 = cert.Lemma41Constants(log_c1, consts.log_c2)
        pred = {"b": float(b), "K": lam_min ** -0.5, "c1": c1.c1, "c2_paper": c1.c2, "c2_sharp": s.row_sum,
                "log_c1": _finite_or_none(log_c1), "log_c2_paper": _finite_or_none(consts.log_c2),
                "statement": r"$c_1\le\alpha_{ij}\le c_2$ along every trajectory ($c_2$ the row sum suffices)"}
        if c1.c1_reason:
            pred["c1_reason"] = f"not representable as a float64: {c1.c1_reason}; log_c1 is exact up to rounding"
        if c1.c2_reason:
            pred["c2_paper_reason"] = f"not representable as a float64: {c1.c2_reason}; see log_c2_paper"
    r = LEMMA_4_1.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _lemma_4_1_check(s, run, pred), run, why="no proven bound on P(t)")


def _lemma_4_1_check(s: Setting, run: Run, pred: dict[str, Any]) -> CrossCheck:
    lo, hi = math.inf, -math.inf
    idx = np.linspace(0, run.t.size - 1, min(run.t.size, 301)).astype(int)
    for eta in range(s.h):
        # a constant head: every sample at once, through its factors (rank d_h)
        ops = [(idx, s.score_operator(eta, 0.0))] if s.P_constant else \
              [(k, s.P_at(eta, float(run.t[k]))) for k in idx]
        for k, P in ops:
            L = num.log_attention_weights(run.X[k], P, causal=s.p.causal, row_sum=s.row_sum)
            vals = L[..., np.tril(np.ones(L.shape[-2:], bool))] if s.p.causal else L
            lo, hi = min(lo, float(vals.min())), max(hi, float(vals.max()))
    # compared in log space: c1 and the smallest alpha may be below the smallest float64
    lc1 = pred["log_c1"]
    ok = (lc1 is None or lo >= lc1 - 1e-12 * max(1.0, abs(lc1))) and hi <= math.log(pred["c2_sharp"]) + 1e-12
    return CrossCheck("agrees" if ok else "disagrees",
                      {"min_alpha": math.exp(lo), "max_alpha": math.exp(hi), "log_min_alpha": lo, "log_max_alpha": hi,
                       "samples": int(idx.size), "c1": pred["c1"], "log_c1": lc1, "c2_sharp": pred["c2_sharp"],
                       "criterion": r"$c_1\le\alpha_{ij}\le{}$ the row sum at every sampled time"})


def lemma_4_2(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None],
              uc: core.HypothesisResult, v: np.ndarray | None) -> TheoremResult:
    hyps = [bound[0], uc, value_identity(s), full_attention(s)]
    v = np.eye(s.d)[0] if v is None else v  # the lemma holds for every fixed v
    K = float(np.linalg.eigvalsh(s.W).min()) ** -0.5
    pred = {"f_i_bounded": True, "f_i_uniformly_continuous": True,
            "v": v.tolist(), "sup_f_bound": 2 * s.h * s.row_sum * K * float(np.linalg.norm(v)) * max(1.0, K)}
    r = LEMMA_4_2.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _lemma_4_2_check(s, run, pred, v), run)


def _lemma_4_2_check(s: Setting, run: Run, pred: dict[str, Any], v: np.ndarray) -> CrossCheck:
    from .flow import field

    F = field(s.p)
    vals = np.array([F(float(tk), Xk) @ v for tk, Xk in zip(run.t, run.X)])
    sup = float(np.abs(vals).max())
    lip = float((np.abs(np.diff(vals, axis=0)) / np.diff(run.t)[:, None]).max())
    ok = sup <= pred["sup_f_bound"] * (1 + 1e-9) and math.isfinite(lip)
    return CrossCheck("agrees" if ok else "disagrees",
                      {"sup_f": sup, "bound": pred["sup_f_bound"], "max_difference_quotient": lip,
                       "criterion": r"$\sup\lvert f_i\rvert$ below $2hcK\lvert v\rvert\max(1,K)$ and finite difference quotients"})


def thm_4_1(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None],
                uc: core.HypothesisResult, hemi: core.HypothesisResult, v: np.ndarray | None) -> TheoremResult:
    hyps = [value_identity(s), full_attention(s), ellipsoid(s), bound[0], uc, hemi,
            proofs_hypothesis("Dini derivative of max_i(1 - v^T y_i) <= 0 (per-term decomposition proved)")]
    pred: dict[str, Any] = {"hemisphere_witness": None if v is None else v.tolist(),
                            "hemisphere_invariant": True, "V_max_non_increasing": True,
                            "limit": "consensus set attractive (spread -> 0); which point is not predicted"}
    r = THM_4_1.result(hyps, pred)
    if not r.applies:
        r.prediction = {**pred, **_non_consensus_prediction(s, hemi)}
    if simulate_:
        if run is None:
            r.cross_check = CrossCheck("skipped", {"reason": "no run"})
        elif (f := _failed(run)) is not None:
            r.cross_check = f
        elif not r.applies:
            r.cross_check = _non_consensus_check(s, run, r.prediction)
        else:
            from .flow import field

            Vs = num.V_max(run.X, v)
            F = field(s.p)
            dini = max(num.dini_max(Xk, F(float(tk), Xk), v) for tk, Xk in zip(run.t, run.X))
            ly = _lyapunov(Vs)
            lim = consensus_limit(s, run)
            inside = float(num.hemisphere_min(run.X, v).min())
            checks = ly["non_increasing"] and inside > 0 and dini <= 1e-10
            r.cross_check = _verdict(checks, lim["limit_class"] == "consensus", lim["limit_class"] != "not_settled",
                                       {"V_max": ly, "max_dini_derivative": dini, "min_v_y": inside, **lim, **run.summary(),
                                        "criterion": r"$V$ never increases beyond round-off, $D^+V\le10^{-10}$, tokens stay in the hemisphere, "
                                                     "limit classified consensus"})
    return r


def _non_consensus_prediction(s: Setting, hemi: core.HypothesisResult) -> JSONObject:
    """Where the hemisphere fails: is X0 an equilibrium, and is it a certified stable non-consensus one?"""
    from .flow import field

    out: JSONObject = {"consensus_predicted": None, "reason": f"hypotheses fail ({hemi.name}: {hemi.status})"}
    if s.p.time_varying:
        return out
    F = field(s.p)(0.0, s.X0)
    speed = float(np.abs(F).max())
    out["X0_speed"] = speed
    tet = _tetrahedron_beta(s)
    res = tetrahedron(s) if tet is not None else None
    if res is not None:
        out["equilibrium"] = {"kind": "regular tetrahedron", "beta": tet, "stability": res.to_json(),
                              "spectrum": {k: float(v) for k, v in sym.tetrahedron_spectrum(sp.Rational(Fraction(tet))).items()}}
        if res.status == "holds":
            out["prediction"] = "stable non-consensus equilibrium (rotation orbit normally attracting)"
            out["consensus_predicted"] = False
        elif res.status == "fails":
            out["prediction"] = "unstable non-consensus equilibrium"
    return out


def _tetrahedron_beta(s: Setting) -> float | None:
    """beta when the setting is the note's example: full, h = 1, U = I, sphere, P = -beta I, X0 a regular tetrahedron."""
    if s.p.causal or s.h != 1 or s.ell != 4 or s.d != 3 or not s.P_constant or s.p.W is not None:
        return None
    P = np.asarray(s.P[0], float)
    if not exactly_equal(s.U[0], np.eye(3)) or not np.array_equal(P, P[0, 0] * np.eye(3)) or P[0, 0] >= 0:
        return None
    G = s.X0 @ s.X0.T
    if np.abs(G - (4 / 3 * np.eye(4) - 1 / 3)).max() > 1e-12:
        return None
    return float(-P[0, 0])


def _non_consensus_check(s: Setting, run: Run, pred: JSONObject) -> CrossCheck:
    """Start 1e-6 away from X0 (seeded) and check the run stays at the non-consensus equilibrium when it is certified stable."""
    if pred.get("consensus_predicted") is not False:
        lim = consensus_limit(s, run)
        return CrossCheck("skipped", {"reason": "no prediction when the hypotheses fail", **lim})
    from ..numeric.attention.field import project

    rng = np.random.default_rng(s.p.seed)
    X1 = project(s.X0 + 1e-6 * rng.normal(size=s.X0.shape), s.p.W)
    pert = run_simulation(s, X1)
    if (f := _failed(pert)) is not None:
        return f
    dist = float(np.abs(pert.X[-1] @ pert.X[-1].T - s.X0 @ s.X0.T).max())
    lim = consensus_limit(s, pert)
    ok = lim["limit_class"] == "non_consensus" and dist < 1e-4
    return CrossCheck("agrees" if ok else "disagrees",
                      {"perturbation": 1e-6, "gram_distance_final": dist, **lim, **pert.summary(),
                       "criterion": "a 1e-6 perturbation settles back onto the rotation orbit of X0 (Gram matrix within 1e-4); not consensus"})


# §5: causal, U = I


def _membership_D1(s: Setting) -> core.HypothesisResult:
    return antipode_free(s)


def lemma_5_1(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None]) -> TheoremResult:
    hyps = [causal_attention(s), value_identity(s), sphere(s), bound[0],
            proofs_hypothesis("adot = alpha (1 - a^2), V = (a-1)^2(a+2)/3, Vdot = -alpha (1-a^2)^2 proved")]
    r = LEMMA_5_1.result(hyps, {"applied_to": "token 2 of the causal model (driven by the fixed token 1)",
                             "a2_limit": 1.0 if s.ell >= 2 else None, "V_token2_non_increasing": True})
    return _cross_checked(r, simulate_, lambda: _lemma_5_1_check(s, run), run, ready=s.ell >= 2,
                          why="hypotheses not certified or fewer than 2 tokens")


def _lemma_5_1_check(s: Setting, run: Run) -> CrossCheck:
    y0 = run.X[0, 0]
    V2 = num.V_causal(run.X[:, 1], y0)
    ly = _lyapunov(V2)
    a_end = float(run.X[-1, 1] @ y0)
    reached = a_end > 1 - 1e-6 or float(run.X[0, 1] @ y0) <= -1 + 1e-12
    return _verdict(ly["non_increasing"], reached, run.speed <= SETTLED_SPEED,
                    {"V_token2": ly, "a2_initial": float(run.X[0, 1] @ y0), "a2_final": a_end,
                     "criterion": r"$V(a_2)$ never increases beyond round-off and $a_2\to1$ (unless $a_2(0)=-1$)"})


def thm_5_1(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None]) -> TheoremResult:
    hyps = [causal_attention(s), value_identity(s), sphere(s), bound[0], _membership_D1(s),
            causal_consensus_stable(s) if s.p.causal else _fails("consensus_locally_stable", "parameter", "not causal"),
            proofs_hypothesis("cascade identity (19) and input gain |y0 - a y|^2 = 1 - a^2 proved")]
    rates = [float(-s.h * (i - 1) / i * s.row_sum) for i in range(2, s.ell + 1)]
    pred = {"limit_point": s.X0[0].tolist(), "token_1_fixed": True, "transverse_eigenvalues": rates,
            "domain": r"all of $\{y_j\ne-y_1\}$" if s.ell <= 2 else "locally asymptotically stable; convergence from almost every "
                      r"initial condition (the paper's domain $\{y_j\ne-y_1\}$ is too strong for $\ell\ge3$)"}
    r = THM_5_1.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _thm_5_1_check(s, run), run)


def _thm_5_1_check(s: Setting, run: Run) -> CrossCheck:
    moved = float(np.abs(run.X[:, 0] - run.X[0, 0]).max())
    err = float(np.linalg.norm(run.X[-1] - run.X[0, 0], axis=1).max())
    lim = consensus_limit(s, run)
    return _verdict(moved <= 1e-12, lim["limit_class"] == "consensus" and err < 1e-4,
                    lim["limit_class"] != "not_settled",
                    {"token_1_motion": moved, "max_distance_to_y1_0": err, **lim, **run.summary(),
                     "criterion": r"token 1 moves at most $10^{-12}$, limit classified consensus at $y_1(0)$"})


# §6: causal, symmetric U


#: largest d for the exact (algebraic-number) side-of-v decision of Thm 6.1
EXACT_SIDE_MAX_D = 24


def _hemisphere_of_v_exact(s: Setting, te: cert.TopEigen) -> tuple[core.HypothesisResult, int] | None:
    """Signs of v^T y_i(0) decided exactly: v has coordinates in Q(lambda) (rational data), so
    v^T y = 0 is a zero test modulo the minimal polynomial of lambda and a nonzero sign is
    separated by ball arithmetic (:mod:`flowcert.certificates.attention.algebraic`). None when
    not applicable (large d, lambda not simple, U not rational symmetric)."""
    from ..certificates.attention.algebraic import AlgebraicEigenvector

    name = "v^T y_i(0) of one strict sign for all i"
    if s.d > EXACT_SIDE_MAX_D or isinstance(s.U[0], sp.MatrixBase):
        return None
    Uq = core.fractions(np.asarray(s.U[0], float))
    if any(Uq[i][j] != Uq[j][i] for i in range(s.d) for j in range(s.d)):
        return None
    try:
        ae = AlgebraicEigenvector(Uq, 0)
        signs = ae.inner_signs(core.fractions(s.X0))
        orient = ae.sign(ae.inner(te.v.tolist()))  # w = orient * |c| v_float-side
    except (ValueError, ArithmeticError):
        return None
    method = (rf"exact: $v\in\mathbb Q(\lambda)$, minimal polynomial of degree {ae.f.degree()}; $v^\top y_i=0$ decided "
              "modulo it, nonzero signs by ball arithmetic")
    b = s.X0 @ te.v
    margin = float(np.abs(b).min())
    on = [i + 1 for i, g in enumerate(signs) if g == 0]
    if on:
        return core.HypothesisResult(name, "fails", 0.0, method, None, f"token(s) {on} lie exactly on $v^\\perp$"), 0
    if len(set(signs)) > 1 or orient == 0:
        return core.HypothesisResult(name, "fails", -margin, method, None, r"tokens on both sides of $v^\perp$ (exact)"), 0
    sign = signs[0] * orient
    return core.HypothesisResult(name, "holds", margin, method, None, f"sign {sign:+d} (exact)"), sign


def _hemisphere_of_v(s: Setting, te: cert.TopEigen | None) -> tuple[core.HypothesisResult, int]:
    """All tokens strictly on one side of v^perp: exactly on rational data
    (:func:`_hemisphere_of_v_exact`), else with the eigenvector error bounded (Davis–Kahan)."""
    name = "v^T y_i(0) of one strict sign for all i"
    if te is None:
        return core.HypothesisResult(name, "unknown", None, "needs the top eigenvector", None), 0
    exact = _hemisphere_of_v_exact(s, te)
    if exact is not None:
        return exact
    U = np.asarray(s.U[0], float)
    v = te.v
    r = U @ v - te.lam * v
    delta = te.lam - float(te.c) if te.c is not None else 0.0
    if delta <= 0:
        return core.HypothesisResult(name, "unknown", None, "Davis-Kahan", None, "no eigenvalue separation"), 0
    eps = 2.0 * (float(np.linalg.norm(r)) + 1e-15 * float(np.abs(U).max())) / delta + 1e-14  # |v - v_exact| bound, padded
    b = s.X0 @ v
    margin = float(np.abs(b).min()) - eps * float(np.linalg.norm(s.X0, axis=1).max())
    sign = 1 if np.all(b > 0) else (-1 if np.all(b < 0) else 0)
    method = "float inner products with a Davis-Kahan bound on the eigenvector error (sin theta <= |r| / (lambda - c))"
    if sign and margin > 0:
        return core.HypothesisResult(name, "holds", margin, method, None, f"sign {sign:+d}, eigenvector error <= {eps:.2e}"), sign
    if not sign and np.abs(b).min() > eps:
        return core.HypothesisResult(name, "fails", margin, method, None, "tokens on both sides of v^perp"), 0
    return core.HypothesisResult(name, "unknown", margin, method, None, "a token is within the eigenvector error of v^perp"), 0


def lemma_6_1(s: Setting, simulate_: bool, run: Run | None, top: tuple[core.HypothesisResult, cert.TopEigen | None]) -> TheoremResult:
    hyps = [single_head(s), sphere(s), U_constant(s), top[0],
            proofs_hypothesis("bdot = alpha (lambda - y^T U y) b and the sum of squares proved")]
    te = top[1]
    pred: dict[str, Any] = {"applied_to": r"token 1 of the causal model ($\alpha_{11}$ the row sum, constant)",
                            "v": None if te is None else te.v.tolist(), "lambda": None if te is None else te.lam,
                            "invariant": r"the great sphere $v^\top y=0$ is invariant (correction)"}
    r = LEMMA_6_1.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _lemma_6_1_check(s, run, te), run, ready=s.p.causal,
                          why="hypotheses not certified or attention not causal (token 1 is not autonomous)")


def _lemma_6_1_check(s: Setting, run: Run, te: cert.TopEigen) -> CrossCheck:
    U = np.asarray(s.U[0], float)
    ref = num.oja_token(run.X[0, 0], U, run.t, s.row_sum)
    err = float(np.abs(ref - run.X[:, 0]).max())
    b = run.X[:, 0] @ te.v
    sgn = 1.0 if b[0] >= 0 else -1.0
    ly = _lyapunov(num.V_plus(run.X[:, 0], sgn * te.v))
    ok = err < 1e-6 and ly["non_increasing"]
    return CrossCheck("agrees" if ok else "disagrees",
                      {"closed_form_error": err, "V_plus_token1": ly, "b_final": float(b[-1]),
                       "criterion": r"token 1 follows $e^{cUt}y_0/\lVert e^{cUt}y_0\rVert$ within $10^{-6}$ and $1-sv^\top y_1$ "
                                     "never increases"})


def thm_6_1(s: Setting, simulate_: bool, run: Run | None, bound: tuple[core.HypothesisResult, Fraction | None],
                top: tuple[core.HypothesisResult, cert.TopEigen | None]) -> TheoremResult:
    side, sign = _hemisphere_of_v(s, top[1])
    side = side_of_v(s, top[1], side)
    sign = sign if side.status == "holds" else 0
    hyps = [causal_attention(s), single_head(s), sphere(s), U_constant(s), top[0], bound[0], side,
            thm61_stable(top[0]),
            proofs_hypothesis("identity (23) proved")]
    te = top[1]
    lam = te.lam if te else None
    mus = np.linalg.eigvalsh(np.asarray(s.U[0], float))[:-1] if te else []
    pred: dict[str, Any] = {"limit_point": None if te is None or not sign else (sign * te.v).tolist(),
                            "independent_of_P": True,
                            "transverse_eigenvalues": None if te is None else
                            sorted({float((m - i * lam) / i * s.row_sum) for i in range(1, s.ell + 1) for m in mus})}
    r = THM_6_1.result(hyps, pred)
    return _cross_checked(r, simulate_, lambda: _thm_6_1_check(s, run, sign * te.v), run)


def _thm_6_1_check(s: Setting, run: Run, target: np.ndarray) -> CrossCheck:
    err = float(np.linalg.norm(run.X[-1] - target, axis=1).max())
    ly1 = _lyapunov(num.V_plus(run.X[:, 0], target))
    return _verdict(ly1["non_increasing"], err < 1e-4 and run.speed <= SETTLED_SPEED, run.speed <= SETTLED_SPEED,
                    {"max_distance_to_limit": err, "V_plus_token1": ly1,
                     "V_plus_token2_largest_increase": num.largest_increase(num.V_plus(run.X[:, 1], target)) if s.ell > 1 else None,
                     "E_signed_final": float(num.signed_measure(run.X[-1])), **run.summary(),
                     "criterion": "settled with every token within 1e-4 of s v (the exponentially stable equilibrium certified above), "
                                  "V_+ of token 1 non-increasing (later tokens may increase transiently)"})


# the catalogue


#: The simulation cross-checks of the consensus entries (names of ``checks=``): every entry not named
#: here tests its prediction on the one run of ``consensus_run``.
SIMULATION_CHECKS = {"consensus:lemma-3.1": "projection", "consensus:thm-3.1": "gradient"}


def theorems(params: AttentionParams, *, simulate: bool = False, seed: int | None = None,
             checks: frozenset[str] | None = None) -> list[TheoremResult]:
    """Every consensus-paper entry on ``params`` (the Oja variants have no attention: no entries)."""
    return theorems_with_run(params, simulate=simulate, seed=seed, checks=checks)[0]


def theorems_with_run(params: AttentionParams, *, simulate: bool = False, seed: int | None = None,
                      checks: frozenset[str] | None = None) -> tuple[list[TheoremResult], Run | None]:
    """:func:`theorems` and the simulation its cross-checks used (None without ``simulate``, or when
    ``checks`` does not name ``consensus_run``). With ``simulate``, ``checks`` names the cross-checks
    that run (:data:`SIMULATION_CHECKS` and ``consensus_run``; None: all)."""
    if params.variant != "self_attention":
        return [], None
    with asked(chosen(simulate, checks, {*SIMULATION_CHECKS.values(), "consensus_run"})):
        return _theorems_with_run(setting(params, seed), simulate)


def _theorems_with_run(s: Setting, simulate: bool) -> tuple[list[TheoremResult], Run | None]:
    """The entries on ``s``, with the cross-checks asked for in the current evaluation (:func:`flowcert.engine.wants`)."""
    def unknown(name: str) -> Callable[[str], Any]:
        return lambda why: core.HypothesisResult(name, "unknown", None, "evaluation", None, f"could not be evaluated ({why})")

    bound = attempt(lambda: P_bounded(s), lambda why: (unknown("sup_t |P_eta(t)| <= b")(why), None))
    uc = attempt(lambda: P_uniformly_continuous(s), unknown("P_eta uniformly continuous on t >= 0"))
    hemi_name = "open hemisphere containing y_i(0) (SOCP witness v)"
    hemi, v = attempt(lambda: hemisphere(s, hemi_name), lambda why: (unknown(hemi_name)(why), None))
    top_name = "U symmetric, lambda_max(U) > 0 simple"
    top = attempt(lambda: top_eigenvalue(s, top_name), lambda why: (unknown(top_name)(why), None))
    sim = wants("consensus_run")
    run = attempt(lambda: run_simulation(s), lambda why: Run(np.zeros(1), s.X0[None], False, f"the integration raised {why}",
                                                             float("nan"), float("nan"))) if sim else None
    entries: list[tuple[str, str, Callable[..., TheoremResult], tuple]] = [
        ("consensus:lemma-3.1", "Lemma 3.1", lemma_3_1, (s, wants("projection"))),
        ("consensus:thm-3.1", "Theorem 3.1", thm_3_1, (s, wants("gradient"))),
        ("consensus:thm-3.2", "Theorem 3.2", thm_3_2, (s, sim, run)),
        ("consensus:lemma-4.1", "Lemma 4.1", lemma_4_1, (s, sim, run, bound)),
        ("consensus:lemma-4.2", "Lemma 4.2", lemma_4_2, (s, sim, run, bound, uc, v)),
        ("consensus:thm-4.1", "Theorem 4.1", thm_4_1, (s, sim, run, bound, uc, hemi, v)),
        ("consensus:lemma-5.1", "Lemma 5.1", lemma_5_1, (s, sim, run, bound)),
        ("consensus:thm-5.1", "Theorem 5.1", thm_5_1, (s, sim, run, bound)),
        ("consensus:lemma-6.1", "Lemma 6.1", lemma_6_1, (s, sim, run, top)),
        ("consensus:thm-6.1", "Theorem 6.1", thm_6_1, (s, sim, run, bound, top)),
    ]
    out = [guarded(id_, label, fn, *args) for id_, label, fn, args in entries]
    if simulate:  # a cross-check left out by checks= says so
        for th in out:
            check = SIMULATION_CHECKS.get(th.id, "consensus_run")
            if not wants(check) and (th.cross_check is None or th.cross_check.status == "skipped"):
                th.cross_check = not_requested(check)
    return out, run


# the paper's examples (§7), as parameter mappings

__all__ = ["ConsensusLimit", "Fig5", "RunSummary", "Setting", "consensus_limit", "fig5_parameters", "paper_examples", "run_simulation", "setting",
           "theorems", "theorems_with_run"]
