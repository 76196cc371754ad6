r"""Table 1 of the gaussian paper as one answer (``regime``), and the consistency pass over ``verify``.

Every qualitative claim on :math:`\Sigma(t)` below is either proved (``basis: certified``, with the
argument named in ``argument``) or read off a settled run at a certified equilibrium
(``basis: simulation``); a threshold crossing of the simulation is reported as
``observed_blowup_time`` and never decides the regime.

Arguments used (constant :math:`A,B,V`):

* **Blow-up** only from Thm 4.8 (:math:`V\succ0,B\succ0`, certified bound (20)).
* **Riccati form.** If :math:`V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top=-\Sigma Q\Sigma` with
  :math:`Q\succeq0` (:math:`V=\eta I`, :math:`Q=-\eta(B+B^\top)`; or :math:`B=0`, :math:`Q=0`), eq. (7) is
  :math:`\dot\Sigma=A\Sigma+\Sigma A^\top-\Sigma Q\Sigma`, and for :math:`\Sigma_0\succ0`,
  :math:`P=\Sigma^{-1}` solves the linear equation :math:`\dot P=-A^\top P-PA+Q`:

  .. math::

      P(t)=e^{-A^\top t}\Sigma_0^{-1}e^{-At}+\int_0^te^{-A^\top(t-s)}Qe^{-A(t-s)}ds\succ0 ,

  so the solution exists for all :math:`t\ge0` (and :math:`\Sigma(t)\preceq e^{At}\Sigma_0e^{A^\top t}`,
  the comparison that also covers :math:`\Sigma_0\succeq0`).
  *Detectable* :math:`(H,A)`, :math:`H^\top H=Q` (exact PBH certificate): Thm 4.1's limit.
  *Not detectable*: an eigenvector :math:`x` with :math:`Ax=\lambda x`, :math:`Qx=0`,
  :math:`\operatorname{Re}\lambda>0` gives :math:`x^*P(t)x=e^{-2\operatorname{Re}\lambda t}x^*\Sigma_0^{-1}x\to0`,
  so :math:`\lambda_{\max}(\Sigma(t))\ge\|x\|^2/x^*P(t)x` grows at least like
  :math:`e^{2\operatorname{Re}\lambda t}`: ``unbounded`` with that certified rate and global
  existence (no blow-up).
* **Trace bound** (Thm 4.7, :math:`V\prec0,B\succ0`, corrected (36)):
  :math:`\operatorname{tr}\Sigma(t)\le\max(\operatorname{tr}\Sigma_0,y^*)`,
  :math:`y^*=-d\lambda_{\max}(A+A^\top)/(2\lambda_{\max}(V)\lambda_{\min}(B))`: global existence and
  ``bounded``.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np
import sympy as sp

from ..bindings import stamp, stamp_result
from ..papers.gaussian import DESIGN_SUBJECT, Q_SUBJECT
from ..certificates import core, spectrum
from ..certificates import gaussian as cert
from ..certificates.conditions import lemma44_design_certificate
from ..catalogue import TheoremResult
from ..numeric import gaussian as ng
from ..numeric.gaussian import riccati
from ..numeric.gaussian.moments import CONE_TOL
from ..records import CertificateRecord, Document, RegimeRecord
from .params import GaussianParams

#: the argument of a regime certified ``bounded`` by the Riccati comparison (unobservable modes on the imaginary axis)
RICCATI_BOUNDED = (r"unobservable modes on the imaginary axis and $A+A^\top\preceq0$ (exact): "
                   r"$\Sigma(t)\preceq e^{At}\Sigma_0e^{A^\top t}$ and $\lVert e^{At}\rVert\le1$")
SIGMA_ORDER = ("blows_up", "unbounded", "bounded", "converges_zero", "converges_pd", "converges_singular")


def riccati_pair(p: GaussianParams) -> tuple[sp.Matrix, sp.Matrix, str] | None:
    r"""``(A, Q, why)`` exact when the quadratic term of eq. (7) is :math:`-\Sigma Q\Sigma` with Q
    symmetric (V = eta I, or B = 0), else None. Q need not be PSD.

    Both forms are recognised on the floats: a float is one dyadic rational (``0.0`` and ``-0.0``
    both 0), so float equality is rational equality and ``B = 0``, ``V = V_{11} I`` are decided
    exactly in :math:`O(d^2)` comparisons; the rational matrices are built only when a form applies
    (a pretrained head has neither, and its three :math:`384\\times384` conversions cost seconds)."""
    if p.factored:  # the floats of a product are no exact data: no Riccati form is claimed
        return None
    if not p.B.any():
        return core.rational_matrix(p.A), sp.zeros(p.d, p.d), "B = 0: the field is linear"
    if np.array_equal(p.V, p.V[0, 0] * np.eye(p.d)):
        Aq, Bq, Vq = (core.rational_matrix(M) for M in (p.A, p.B, p.V))
        eta = Vq[0, 0]
        return Aq, -eta * (Bq + Bq.T), "V = eta I: Q = -eta (B + B^T)"
    return None


def _trace_bound(p: GaussianParams, by_id: dict[str, TheoremResult]) -> dict[str, Any] | None:
    t = by_id.get("gaussian:thm-4.7.3")
    if t is None:
        return None
    first_two = t.hypotheses[:2]  # V < 0, B > 0 (exact)
    if not all(h.status == "holds" for h in first_two):
        return None
    return {"value": t.prediction.get("trace_bound"), "y_star": t.prediction.get("y_star"),
            "argument": "Thm 4.7 trace bound with the corrected constant (36): tr Sigma(t) <= max(tr Sigma0, y*)"}


class UnboundedFact(TypedDict):
    r"""The Riccati form's proof that :math:`\Sigma(t)` is unbounded (not detectable, an unstable unobservable mode)."""

    growth_rate_lower_bound: float
    argument: str
    certificate: CertificateRecord


class RiccatiFacts(TypedDict, total=False):
    """What the Riccati form proves (:func:`riccati_facts`); a key is absent when its argument does not apply."""

    #: which form: ``B = 0`` or ``V = eta I``
    form: str
    Q_psd: bool
    #: the argument for existence for all t
    global_existence: str
    #: the exact PBH certificate of (H, A) (a :class:`~flowcert.certificates.core.Certificate`)
    detectability: core.Certificate
    unbounded: UnboundedFact
    #: the argument for a bounded solution
    bounded: str


class LimitSpectra(TypedDict, total=False):
    r"""Whole spectra at a limit :math:`\Sigma_\infty` as ``[re, im]`` pairs (:func:`spectra`)."""

    M_inf: list[list[float]]
    J_s: list[list[float]] | None
    J_s_abscissa: float | None
    #: why :math:`J_s` was not computed (size)
    J_s_skipped: str
    #: eigenvalues of :math:`PV+VP`, :math:`P=\Sigma_\infty^{-1}` (only where :math:`\Sigma_\infty\succ0`)
    PV_plus_VP: list[float]


class ConsistencyRecord(TypedDict):
    """The ``consistency`` block of a ``verify gaussian`` document (:func:`consistency`)."""

    checked: list[str]
    conflicts: list[str]


class DesignRecord(TypedDict):
    """Lemma 4.4 read backwards (:func:`lemma_4_4_design`): the keys a ``design gaussian`` document adds."""

    A: list[list[float]]
    #: ``"p/q"`` strings
    A_exact: list[list[str]]
    residual_is_zero: bool
    M_spectrum: list[list[float]]
    lemma: str
    formula: str
    certificate: CertificateRecord


class DesignDocument(DesignRecord):
    """The ``design gaussian`` document: the specification as understood (``params``: ``Sigma_inf, K, V, B``)
    and the designed :math:`A` with its certificate (:class:`DesignRecord`)."""

    flowcert: str
    system: str
    params: dict[str, list[list[float]]]


def riccati_facts(p: GaussianParams) -> RiccatiFacts:
    """What the Riccati form proves for these parameters (empty when it does not apply)."""
    pair = riccati_pair(p)
    if pair is None:
        return {}
    Aq, Q, why = pair
    out: RiccatiFacts = {"form": why}
    if Q != Q.T or not core.is_psd(Q):
        out["Q_psd"] = False
        return out
    out["Q_psd"] = True
    out["global_existence"] = (r"Riccati form with $Q=-\eta(B+B^\top)\succeq0$ (exact): "
                               r"$\Sigma(t)\preceq e^{At}\Sigma_0e^{A^\top t}$ (zero-noise Kalman-Bucy comparison), "
                               "no finite-time blow-up")
    Sq = core.rational_matrix(p.Sigma0)
    if not core.is_pd(Sq):
        return out
    det = spectrum.detectability_certificate(Aq, Q)
    if det is None or not core.recheck(det):
        return out
    out["detectability"] = det
    p_, n_, z_ = det.data["inertia"]
    if not det.data["detectable"] and p_ > 0:
        N = spectrum.unobservable_subspace(Aq, Q)
        AN = np.array(((N.T * N).inv() * N.T * Aq * N).tolist(), dtype=float)
        rate = 2.0 * float(np.linalg.eigvals(AN).real.max())
        out["unbounded"] = {
            "growth_rate_lower_bound": rate,
            "argument": (f"$(H,A)$ is not detectable ({det.claim}); an unobservable eigenvector $x$ with "
                         r"$\operatorname{Re}\lambda>0$ has $x^*\Sigma(t)^{-1}x=e^{-2\operatorname{Re}\lambda t}"
                         r"x^*\Sigma_0^{-1}x\to0$, so $\lVert\Sigma(t)\rVert$ grows at least like "
                         r"$e^{2\operatorname{Re}\lambda t}$; $P=\Sigma^{-1}$ stays positive definite, so no blow-up"),
            "certificate": stamp(det, {"A": "params.A", "Q": Q_SUBJECT}).to_json()}
    elif not det.data["detectable"] and p_ == 0 and z_ > 0:
        if core.is_psd(-(Aq + Aq.T)):
            out["bounded"] = RICCATI_BOUNDED
    return out


def regime(p: GaussianParams, sol: ng.MomentSolution, eq: Any, by_id: dict[str, TheoremResult]) -> RegimeRecord:
    """Table 1 as an answer for constant parameters: proved where a theorem or the Riccati form
    decides, read off a settled run at a certified equilibrium otherwise, else ``unknown``."""
    out: dict[str, Any] = {"Sigma": "unknown", "mu": "unknown", "Sigma_inf": None, "mu_inf": None,
                           "blowup_time_upper_bound": None, "basis": "simulation", "equilibrium": None,
                           "argument": None, "observed_blowup_time": sol.blowup_time, "global_existence": None,
                           "growth_rate": None}
    if p.time_varying:
        out["reason"] = "time-varying parameters: Table 1 covers constant ones"
        return out
    if sol.blowup_time is not None:
        out["observed_note"] = ("observed_blowup_time is when ||Sigma|| passed 1e8 (1 + ||Sigma0||) in the run: an "
                                "observation, not a proof of finite-time blow-up")
    for item in ("1", "2"):
        th = by_id[f"gaussian:thm-4.8.{item}"]
        if th.applies:
            out.update(Sigma="blows_up", basis="certified", argument=f"Theorem 4.8 ({item})",
                       blowup_time_upper_bound=th.prediction.get("blowup_time_upper_bound"))
            return out
    facts = riccati_facts(p)
    tb = _trace_bound(p, by_id)
    existence = [a for a in (facts.get("global_existence"), tb and tb["argument"]) if a]
    if existence:
        out["global_existence"] = {"proved": True, "arguments": existence}
    if tb is not None:
        out["trace_bound"] = tb["value"]
    if facts.get("Q_psd") is False and p.B.any() and np.all(np.linalg.eigvalsh(p.Sigma0) > 0):
        out["riccati"] = _riccati_numeric(p)

    t41 = by_id["gaussian:thm-4.1"]
    if t41.applies and "Sigma_inf" in t41.prediction:
        S_inf = np.array(t41.prediction["Sigma_inf"])
        k = t41.prediction["rank"]
        out.update(Sigma="converges_zero" if k == 0 else ("converges_pd" if k == p.d else "converges_singular"),
                   Sigma_inf=S_inf.tolist(), basis="certified",
                   argument="Theorem 4.1 (corrected: eta(B + B^T) <= 0 with (H, A) detectable, exact PBH)")
        out = _mean_limit(p, sol, S_inf, out)
        t411 = by_id["gaussian:thm-4.11.2"]
        if t411.applies and t411.cross_check.details.get("given_mu0_grew"):  # generic mu0 only: the given one must grow
            out["mu"] = "diverges"
        return out
    if "unbounded" in facts:
        u = facts["unbounded"]
        out.update(Sigma="unbounded", basis="certified", argument=u["argument"],
                   growth_rate={"lower_bound": u["growth_rate_lower_bound"], "certificate": u["certificate"]})
        return out
    if by_id["gaussian:thm-4.7.2"].applies:
        out.update(Sigma="converges_zero", Sigma_inf=np.zeros((p.d, p.d)).tolist(), basis="certified",
                   argument="Theorem 4.7 (2)")
        return _mean_limit(p, sol, np.zeros((p.d, p.d)), out)
    proved_bounded = facts.get("bounded") or (tb and tb["argument"])
    if sol.status == "ok":
        eq.settle()
    if sol.status == "skipped":
        out["reason"] = (f"no theorem decides the regime of these parameters, and no simulation was run ({sol.message}): "
                         "ask for one with simulate=True")
    elif sol.status == "failed":
        out["reason"] = f"the run failed ({sol.message})"
    elif sol.status == "blowup":
        out["reason"] = ("the run passed the size threshold; without a proof this is neither blows_up nor "
                         "unbounded")
    elif eq.S is None:
        out["reason"] = (f"the run did not settle at an equilibrium by t = {eq.horizon:.6g} "
                         f"(horizon extended within a budget of {eq.BUDGET:g} x t_end, at most {eq.MAX_T:g})")
    elif p.factored:
        out["reason"] = (f"the run ends near an equilibrium (t = {eq.horizon:.6g}); B or V is given factored and its "
                         "stability certificate needs dense exact data")
    else:
        stab = cert.stability(p.A, p.B, p.V, eq.S)
        out["equilibrium"] = stamp_result(stab, {"A": "params.A", "B": "params.B", "V": "params.V"}).to_json()
        if stab.status == "holds":
            out.update(Sigma=f"converges_{eq.kind}", Sigma_inf=eq.S.tolist(), argument=(
                f"observed: the run settled by t = {eq.horizon:.6g} and Newton from its end found an equilibrium whose "
                "linearisation on Sym(d) is certified exponentially stable (stable_equilibrium certificate); that the "
                "solution converges to it, and its class (relative to the run's scale), are read off the run, not proved"))
            out = _mean_limit(p, sol, eq.S, out)
            if proved_bounded:
                out["bounded_by"] = proved_bounded
            return out
        out["reason"] = f"the run ends near an equilibrium whose stability is {stab.status}"
    if proved_bounded:
        out.update(Sigma="bounded", basis="certified", argument=proved_bounded)
    return out


def _riccati_numeric(p: GaussianParams) -> dict[str, Any]:
    """The numerical blow-up search of the linear-fractional form (V = eta I, Sigma0 > 0): reported,
    not certified, so it never sets ``blows_up``."""
    eta = float(p.V[0, 0])
    try:
        ba = riccati.blowup_analysis(p.A, p.B, eta, p.Sigma0, t_max=max(p.t_end, 100.0))
    except (np.linalg.LinAlgError, ValueError, ArithmeticError) as exc:
        return {"status": "failed", "reason": str(exc)}
    return {"status": ba.status, "time": ba.time, "horizon": ba.horizon if math.isfinite(ba.horizon) else None,
            "certified": False,
            "note": "first zero of det P(t), P = Sigma^-1 of the linear-fractional form, on a grid (float64)"}


#: Largest d for the whole spectrum of J_s (a dense eigenproblem of size d(d+1)/2 = 528 at d = 32).
JS_SPECTRUM_MAX_D = 32


def spectra(p: GaussianParams, S: np.ndarray) -> LimitSpectra:
    r"""Whole spectra at a limit :math:`\Sigma_\infty` (float64, ``[re, im]`` pairs): :math:`J_s` (the
    linearisation of (7) on Sym(d)), :math:`M_\infty=A+V\Sigma_\infty B` (Lemma 4.4) and, where
    :math:`\Sigma_\infty\succ0`, :math:`PV+VP` with :math:`P=\Sigma_\infty^{-1}` (Thm 4.7 (1'))."""
    def pairs(z: np.ndarray) -> list[list[float]]:
        z = z[np.lexsort((z.imag, z.real))]
        return [[float(x.real), float(x.imag)] for x in z]

    out: LimitSpectra = {"M_inf": pairs(np.linalg.eigvals(p.A + p.V @ S @ p.B))}
    n = p.d * (p.d + 1) // 2
    if p.d <= JS_SPECTRUM_MAX_D:
        out["J_s"] = pairs(np.linalg.eigvals(ng.jacobian_vech(p.A, p.B, p.V, S)))
        out["J_s_abscissa"] = max(z[0] for z in out["J_s"])
    else:  # a dense n x n eigenproblem: 30 s at d = 96, minutes at d = 128
        out["J_s"] = out["J_s_abscissa"] = None
        out["J_s_skipped"] = (f"size: J_s acts on Sym(d) of dimension d(d+1)/2 = {n}; its whole spectrum is computed "
                              f"for d <= {JS_SPECTRUM_MAX_D} only")
    w = np.linalg.eigvalsh(S)
    if w.min() > 1e-12 * max(1.0, float(w.max())):
        P = np.linalg.inv(S)
        out["PV_plus_VP"] = [float(x) for x in np.linalg.eigvalsh(0.5 * ((P @ p.V + p.V @ P) + (P @ p.V + p.V @ P).T))]
    return out


def _mean_limit(p: GaussianParams, sol: ng.MomentSolution, S_inf: np.ndarray, out: dict[str, Any]) -> dict[str, Any]:
    """Mean limit :math:`-(A+V+V\\Sigma_\\infty B)^{-1}b` when that matrix is Hurwitz; also the
    whole :func:`spectra` at the limit (``spectra``)."""
    try:
        out["spectra"] = spectra(p, S_inf)
    except (np.linalg.LinAlgError, ValueError):
        out["spectra"] = None
    M_mu = p.A + p.V + p.V @ S_inf @ p.B
    verdict = spectrum.hurwitz("A + V + V Sigma_inf B Hurwitz", M_mu, exact_data=False)  # rounded: margin needed
    out["mu_certificate"] = verdict.to_json()
    if verdict.status == "holds":
        out.update(mu="converges", mu_inf=(-np.linalg.solve(M_mu, p.b)).tolist())
    elif verdict.status == "fails":
        big = np.linalg.norm(sol.mu[-1]) > 1e3 * (1 + np.linalg.norm(p.mu0) + np.linalg.norm(p.b))
        out["mu"] = "diverges" if big else "unknown"
    return out


# ---------------------------------------------------------------------------------------
# consistency of one verify document
# ---------------------------------------------------------------------------------------


def consistency(doc: Document) -> ConsistencyRecord:
    """Cross-check the claims of one ``verify gaussian`` document and downgrade conflicts.

    Pairs checked: the regime against the certified blow-up bounds (Thm 4.8), the global-existence
    and trace-bound arguments, the Thm 4.1 limit and Thm 4.7 (2); the simulation's ``agrees``
    against a failed or cone-leaving run. The weaker claim of a conflicting pair becomes
    ``unknown`` (a simulation-based regime is weaker than a certified one; two certified claims
    that conflict both lose, since one certificate must be wrong). Modifies ``doc`` in place and
    returns the ``consistency`` block (``checked``, ``conflicts``). The theorems are typed
    (:class:`~flowcert.catalogue.TheoremResult`) or records.
    """
    reg = doc.get("regime") or {}
    th = {t["id"]: t for t in doc.get("theorems", []) if isinstance(t, dict)}
    th.update((t.id, {"applies": t.applies.json, "prediction": t.prediction})
              for t in doc.get("theorems", []) if not isinstance(t, dict))
    conflicts: list[str] = []
    checked: list[str] = []
    kind = reg.get("Sigma")

    def downgrade(why: str) -> None:
        conflicts.append(why)
        reg.update(Sigma="unknown", Sigma_inf=None, basis="simulation")
        reg["reason"] = f"consistency pass: {why}"

    blowup_th = [i for i in ("gaussian:thm-4.8.1", "gaussian:thm-4.8.2") if th.get(i, {}).get("applies")]
    ge = (reg.get("global_existence") or {}).get("proved")
    checked.append("regime vs Thm 4.8 (certified blow-up)")
    if blowup_th and kind != "blows_up" and kind != "unknown":
        downgrade(f"{blowup_th[0]} proves blow-up but the regime says {kind}")
    checked.append("blow-up vs global existence")
    if kind == "blows_up" and ge:
        downgrade("blows_up contradicts the proved global existence: "
                  + "; ".join((reg.get("global_existence") or {}).get("arguments", [])))
    t41 = th.get("gaussian:thm-4.1", {})
    checked.append("regime vs Thm 4.1 limit")
    if t41.get("applies") and t41.get("prediction", {}).get("Sigma_inf") is not None and reg.get("Sigma") != "unknown":
        S41 = np.array(t41["prediction"]["Sigma_inf"], dtype=float)
        Sr = reg.get("Sigma_inf")
        if Sr is None or np.abs(np.array(Sr, dtype=float) - S41).max() > 1e-6 * (1 + np.abs(S41).max()):
            downgrade(f"Theorem 4.1 gives the limit {S41.tolist()} but the regime says {reg.get('Sigma')} "
                      f"with Sigma_inf {Sr}")
    checked.append("regime vs Thm 4.7 (2)")
    if th.get("gaussian:thm-4.7.2", {}).get("applies") and reg.get("Sigma") not in ("converges_zero", "unknown"):
        downgrade(f"Theorem 4.7 (2) proves Sigma -> 0 but the regime says {reg.get('Sigma')}")
    checked.append("unbounded vs trace bound")
    if reg.get("Sigma") == "unbounded" and reg.get("trace_bound") is not None:
        downgrade(f"unbounded contradicts the certified trace bound {reg['trace_bound']}")
    sim = doc.get("simulation")
    if sim is not None:
        checked.append("simulation.agrees vs run status")
        drift = (sim.get("manifold_drift") or {}).get("negative_eigenvalue") or 0.0
        if sim.get("agrees") and drift > CONE_TOL:
            conflicts.append(f"simulation.agrees on a run that left the PSD cone (relative eigenvalue -{drift:.2e})")
            sim["agrees"] = None
    block: ConsistencyRecord = {"checked": checked, "conflicts": conflicts}
    doc["consistency"] = block
    return block


# ---------------------------------------------------------------------------------------
# Lemma 4.4, inverse design
# ---------------------------------------------------------------------------------------


def lemma_4_4_design(Sigma_inf: Any, K: Any, V: Any, B: Any) -> DesignRecord:
    r"""Lemma 4.4 read backwards: the A for which a prescribed :math:`\Sigma_\infty\succ0` solves (18).

    :math:`\Sigma_\infty` solves (18) iff :math:`M=A+V\Sigma_\infty B` satisfies
    :math:`M\Sigma_\infty+\Sigma_\infty M^\top=0`, iff :math:`M=K\Sigma_\infty^{-1}` with
    :math:`K^\top=-K`; hence

    .. math::

        A=K\Sigma_\infty^{-1}-V\Sigma_\infty B,\qquad
        \operatorname{spec}(A+V\Sigma_\infty B)=\operatorname{spec}(K\Sigma_\infty^{-1})\subset i\mathbb R .

    Computed in exact rationals from the given floats; the residual of (18) is checked exactly.

    Returns
    -------
    DesignRecord
        ``A`` (floats, nearest), ``A_exact`` (``"p/q"`` strings), ``residual_is_zero`` (exact),
        ``M_spectrum`` (eigenvalues of :math:`K\Sigma_\infty^{-1}`, ``[re, im]`` pairs).

    Raises
    ------
    ValueError
        ``Sigma_inf`` not symmetric positive definite, ``K`` not skew, or shapes differ.
    """
    S, Kq, Vq, Bq = (core.rational_matrix(np.asarray(M, dtype=float)) for M in (Sigma_inf, K, V, B))
    d = S.rows
    if any(M.shape != (d, d) for M in (Kq, Vq, Bq)):
        raise ValueError("Sigma_inf, K, V, B must all be d x d")
    if S != S.T or not core.is_pd(S):
        raise ValueError("Sigma_inf must be symmetric positive definite")
    if Kq.T != -Kq:
        raise ValueError("K must be skew-symmetric (K^T = -K)")
    A = Kq * S.inv() - Vq * S * Bq
    F = A * S + S * A.T + Vq * S * Bq * S + S * Bq.T * S * Vq.T
    eig = np.linalg.eigvals(np.array((Kq * S.inv()).tolist(), dtype=float))
    zero = bool(F.is_zero_matrix)
    cert = stamp(lemma44_design_certificate(A, Bq, Vq, S, zero), DESIGN_SUBJECT)
    if not core.recheck(cert):
        raise ArithmeticError("the designed A does not re-check (Sigma_inf not PD, or the residual differs)")
    return {"A": np.array(A.tolist(), dtype=float).tolist(), "A_exact": core.encode(A),
            "residual_is_zero": zero, "M_spectrum": [[float(z.real), float(z.imag)] for z in eig],
            "lemma": "gaussian:lemma-4.4", "formula": "A = K Sigma_inf^-1 - V Sigma_inf B, K skew",
            "certificate": cert.to_json()}
