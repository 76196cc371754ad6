r"""The gaussian paper's catalogue entries, with their hypotheses and subjects (mean-field transformer
with Gaussian input; the ``gaussian`` system).

Moment equations (7) of Prop. 2.1 and the stationary covariance equation (18):

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top,\qquad
    0=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

Each entry is declared once here; the decision code lives in :mod:`flowcert.gaussian.catalogue` and
:mod:`flowcert.gaussian.asymptotics`, and builds its record with ``ENTRY.result(...)``. The
document-level rules of Table 1 (:func:`check_regime`) and of Lemma 4.4's inverse design live here
too, so that ``flowcert recheck`` needs nothing heavier than this module.
"""

from __future__ import annotations

from fractions import Fraction
from collections.abc import Mapping
from typing import Any

from .. import bindings as bd
from ..bindings import FAILS, HOLDS, Entry, HypothesisBinding, ProofRoute
from ..records import Document

# ---------------------------------------------------------------------------------------------
# Hypotheses, each with its subject
# ---------------------------------------------------------------------------------------------


def _constant(resolve: Any) -> bool:
    """The document's coefficients are numbers (no expression in t): then continuity is a certified predicate."""
    def numbers(x: Any) -> bool:
        return all(numbers(y) for y in x) if isinstance(x, list) else isinstance(x, (int, float)) and not isinstance(x, bool)

    try:
        return all(numbers(resolve(f"params.{k}")) for k in ("A", "B", "V", "b"))
    except KeyError:
        return True


ACTIVATION = bd.predicate("activation_identity", "equals", {"x": "params.activation"}, literal="identity")
SIGMA0_PSD = bd.semidefinite("Sigma0 >= 0", "params.Sigma0")
CONTINUOUS = HypothesisBinding("coefficients_continuous", bd.predicate(
    "", "numeric", {k: f"params.{k}" for k in ("A", "B", "V", "b")}).proofs, certifiable_holds=_constant)
CLOSURE = HypothesisBinding("moment_closure_proved", (ProofRoute("symbolic_identity", {}, HOLDS,
                                                     {"identity": "gaussian:moment_closure"}),))
LEMMA23 = HypothesisBinding("8 ||B||_2 lambda_max(Sigma0) < 1", (ProofRoute(
    "lemma23_condition", {"B": "params.B", "Sigma0": "params.Sigma0"}, bd.by_value),))

NEG_V = bd.definite("-V > 0", "-params.V")
V_PD = bd.definite("V > 0", "params.V")
B_PD = bd.definite("B > 0", "params.B")
SIGMA0_PD = bd.definite("Sigma0 > 0", "params.Sigma0")
NEG_SYM_A = bd.semidefinite("-(A + A^T) >= 0", "-(params.A + params.A^T)")
SYM_A = bd.semidefinite("A + A^T >= 0", "params.A + params.A^T")
RE_POS = bd.hurwitz("Re spec(A) > 0", "-params.A")
HURWITZ_A = bd.hurwitz("Re spec(A) < 0", "params.A")
_ABV = {"A": "params.A", "B": "params.B", "V": "params.V"}
PD_EQ = HypothesisBinding("pd_equilibrium_exists", (
    ProofRoute("eta_pd_equilibrium", {"A": "params.A", "B": "params.B", "eta": "params.V[0,0]"},
          lambda d: HOLDS if d["exists"] is True else FAILS if d["exists"] is False else None),
    ProofRoute("trace_monotone", _ABV, FAILS),
    ProofRoute("pd_equilibrium", _ABV, HOLDS),
    ProofRoute("d2_equilibria", _ABV, lambda d: HOLDS if int(d["pd_count"]) > 0 else FAILS)))
# computed at a simulated equilibrium: no subject over the parameters alone (these stay unbound)
PAPER_LMI = HypothesisBinding("-(P V + V P) > 0 at Sigma_inf", (ProofRoute("pd", {}, HOLDS),))
# at the Thm 4.1 limit: exactly A + V when the limit is 0 (no unstable mode, V = eta I), else at the
# numerical Riccati limit (unbound: its certificate speaks of the rounded matrix it carries)
MEAN_HURWITZ = HypothesisBinding("A + eta Sigma_inf B + eta I Hurwitz", tuple(
    ProofRoute(p.kind, s, p.proves, key=k) for k, s in (("zero_limit", {"J": "params.A + params.V"}), ("numerical", {}))
    for p in bd.hurwitz("", "").proofs))
TRACE = HypothesisBinding("tr Sigma0 > -alpha / beta", (
    ProofRoute("thm48_trace_condition", {"A": "params.A", "V": "params.V", "B": "params.B", "Sigma0": "params.Sigma0"},
          bd.by_value),
    ProofRoute("not_symmetric", {"M": "params.V"}, FAILS, key="V"),
    ProofRoute("not_symmetric", {"M": "params.B"}, FAILS, key="B"),
    bd.asymmetric_factors("params.V", key="V"), bd.asymmetric_factors("params.B", key="B")))
#: a factored V (``{"factors": [L, R]}``) is refuted as eta I by an asymmetric entry pair
V_ETA = bd.predicate("V = eta I", "scalar_identity", {"M": "params.V"}, bd.asymmetric_factors("params.V"))
ETA_NEG = bd.predicate("eta < 0", "scalar_identity_sign", {"M": "params.V"}, bd.asymmetric_factors("params.V"), sign=-1)
ETA_POS = bd.predicate("eta > 0", "scalar_identity_sign", {"M": "params.V"}, bd.asymmetric_factors("params.V"), sign=1)
#: Q = -eta (B + B^T) of the Riccati form (V = eta I)
Q_SUBJECT = "-params.V[0,0]*(params.B + params.B^T)"
DETECT = HypothesisBinding("eta(B + B^T) <= 0 and (H, A) detectable", (
    ProofRoute("pd", {"M": Q_SUBJECT}, HOLDS),
    ProofRoute("detectability", {"A": "params.A", "Q": Q_SUBJECT},
          lambda d: HOLDS if d["detectable"] is True else FAILS if d["detectable"] is False else None),
    ProofRoute("not_psd", {"M": Q_SUBJECT}, FAILS),
    ProofRoute("not_symmetric", {"M": Q_SUBJECT}, FAILS)))
COUNT = HypothesisBinding("unstable count k of A certified", (ProofRoute("unstable_count", {"J": "params.A"}, HOLDS),
                                                       ProofRoute("spectrum_inertia", {"J": "params.A"}, HOLDS)))
A_UNSTABLE = HypothesisBinding("A has an eigenvalue with Re > 0", (
    ProofRoute("unstable_count", {"J": "params.A"}, lambda d: HOLDS if int(d["count"]) >= 1 else FAILS),
    ProofRoute("spectrum_inertia", {"J": "params.A"}, lambda d: HOLDS if int(d["inertia"][0]) >= 1 else FAILS),
    ProofRoute("predicate", {"M": "params.A"}, lambda d: FAILS if d["value"] is True else None, {"predicate": "zero"})))
_ETA_TAIL = frozenset({SIGMA0_PD.name, DETECT.name, COUNT.name})  # reported only once V = eta I holds

# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------

PROP_2_1 = Entry(
    "gaussian:prop-2.1", "Proposition 2.1",
    r"\rho_0=\mathcal N(\mu_0,\Sigma_0),\ \sigma=\mathrm{id}\ \Rightarrow\ \rho_t=\mathcal N(\mu(t),\Sigma(t)),\ "
    r"\dot\mu=(A+V+V\Sigma B)\mu+b,\ \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top",
    (ACTIVATION, SIGMA0_PSD, CONTINUOUS, CLOSURE))
LEMMA_2_3 = Entry(
    "gaussian:lemma-2.3", "Lemma 2.3",
    r"4\|B\|\le\kappa_0<\tfrac1{2\lambda_{\max}(\Sigma_0)}\ \Rightarrow\ \exists T^*>0:\ E_t\le2E_0\ \text{on}\ [0,T^*]",
    (LEMMA23,))
PROP_2_4 = Entry(
    "gaussian:prop-2.4", "Proposition 2.4",
    r"W_2(\rho_t,\nu_t)\le t\,\|\max(0,-(Ax+b))\|_{L^2(\rho_0)}+\mathcal O(t^2)",
    (SIGMA0_PSD, LEMMA23))
LEMMA_3_1 = Entry(
    "gaussian:lemma-3.1", "Lemma 3.1",
    r"\operatorname{rank}\Sigma(t)=\operatorname{rank}\Sigma_0\ \text{for } t<T_{\max},\ \Sigma(t)=\Psi\Sigma_0\Psi^\top,\ "
    r"\dot\Psi=(A+V\Sigma B)\Psi",
    (SIGMA0_PSD, CONTINUOUS))
THM_3_3 = Entry(
    "gaussian:thm-3.3", "Theorem 3.3",
    r"\forall T>0,\ \hat\Sigma\succeq0,\ \operatorname{rank}\hat\Sigma=\operatorname{rank}\Sigma_0:\ "
    r"\exists\,A,B,V,b\in C([0,T])\ \text{with}\ (\mu(T),\Sigma(T))=(\hat\mu,\hat\Sigma)",
    (SIGMA0_PSD,))
THM_4_1 = Entry(
    "gaussian:thm-4.1", "Theorem 4.1",
    r"V=\eta I,\ \eta(B+B^\top)\prec0\ \Rightarrow\ \Sigma(t)\to U\begin{pmatrix}\Sigma^a_\infty&0\\0&0\end{pmatrix}U^\top,"
    r"\ A_a^\top P+PA_a=-B_{11},\ \Sigma^a_\infty=P^{-1}",
    (V_ETA, SIGMA0_PD, DETECT, COUNT), optional=_ETA_TAIL,
    correction="The printed hypothesis (12), eta(B + B^T) <= 0, is not enough (B skew, A = I diverges); "
               "flowcert requires (12) together with detectability of (H, A), -H^T H = eta(B + B^T) (implied by "
               "eta(B + B^T) < 0), decided exactly by the PBH test; imaginary-axis modes then decay "
               "algebraically (like 1/t).")
LEMMA_4_4 = Entry(
    "gaussian:lemma-4.4", "Lemma 4.4",
    r"\Sigma_\infty\succ0\ \text{solves (18)}\ \Rightarrow\ \operatorname{spec}(A+V\Sigma_\infty B)\subset i\mathbb R",
    (PD_EQ,))
THM_4_7_1 = Entry(
    "gaussian:thm-4.7.1", "Theorem 4.7 (1)",
    r"\text{(1')}\ \Sigma_\infty\succ0\ \text{solves (18)},\ \Sigma_\infty^{-1}V+V\Sigma_\infty^{-1}\prec0"
    r"\ \Rightarrow\ \Sigma_\infty\ \text{locally exponentially stable}",
    (NEG_V, B_PD, SIGMA0_PD, RE_POS, PD_EQ, PAPER_LMI), optional=frozenset({PD_EQ.name, PAPER_LMI.name}),
    correction="As printed, (1) claims a PD equilibrium exists whenever V<0, B>0, Re spec A>0; this is false "
               "(note 000, erratum 1: A=[[1,4],[0,1]], B=I/2, V=-diag(1/2,1/10) has none). flowcert checks the "
               "corrected local statement (1') and reports existence only with a certificate.")
THM_4_7_2 = Entry(
    "gaussian:thm-4.7.2", "Theorem 4.7 (2)",
    r"V\prec0,\ B\succ0,\ \lambda_{\max}(A+A^\top)\le0\ \Rightarrow\ \Sigma(t)\to0",
    (NEG_V, B_PD, NEG_SYM_A),
    correction="The hypothesis Re spec(A) <= 0 is implied by lambda_max(A + A^T) <= 0 (note 000, erratum 7).")
THM_4_7_3 = Entry(
    "gaussian:thm-4.7.3", "Theorem 4.7 (3)",
    r"V\prec0,\ B\succ0,\ \operatorname{Re}\operatorname{spec}A<0\ \Rightarrow\ 0\ \text{locally stable},\ "
    r"\operatorname{tr}\Sigma\le\max(\operatorname{tr}\Sigma_0,y^*)",
    (NEG_V, B_PD, HURWITZ_A),
    correction="The trace bound uses lambda_max(V) lambda_min(B) (inequality (36) of the paper has lambda_max(B)).")
_BLOWUP = r"\ \Rightarrow\ T_f\le\tfrac1\alpha\log\!\big(1+\tfrac{\alpha}{\beta\operatorname{tr}\Sigma_0}\big)"
THM_4_8 = {
    1: Entry("gaussian:thm-4.8.1", "Theorem 4.8 (1)", r"V\succ0,\ B\succ0,\ \alpha\ge0" + _BLOWUP,
             (V_PD, B_PD, SIGMA0_PD, SYM_A)),
    2: Entry("gaussian:thm-4.8.2", "Theorem 4.8 (2)", r"V\succ0,\ B\succ0,\ \operatorname{tr}\Sigma_0>-\alpha/\beta" + _BLOWUP,
             (V_PD, B_PD, SIGMA0_PD, TRACE),
             correction="The paper's constant C is made explicit: tr Sigma0 > d|alpha| / (2 lambda_min(V) lambda_min(B))."),
}
THM_4_11 = {
    1: Entry("gaussian:thm-4.11.1", "Theorem 4.11 (1)",
             r"\eta<0\ \Rightarrow\ \mu(t)\to-(A+\eta\Sigma_\infty B+\eta I)^{-1}b",
             (V_ETA, SIGMA0_PD, DETECT, COUNT, ETA_NEG, MEAN_HURWITZ), optional=_ETA_TAIL | {MEAN_HURWITZ.name},
             correction="Sigma_inf is the Theorem 4.1 limit (eq. (18) alone has several solutions)."),
    2: Entry("gaussian:thm-4.11.2", "Theorem 4.11 (2)",
             r"\eta>0,\ A_a\ne\emptyset\ \Rightarrow\ \|\mu(t)\|\to\infty\ \text{(generic }\mu_0)",
             (V_ETA, SIGMA0_PD, DETECT, COUNT, ETA_POS, A_UNSTABLE), optional=_ETA_TAIL,
             correction="As printed, B + B^T > 0 with eta > 0 contradicts (12) (that case blows up, Thm 4.8); flowcert "
                        "uses eta(B + B^T) < 0. Divergence holds for generic mu0, not on the stable manifold (mu0 = 0, "
                        "b = 0 stays 0)."),
}

#: Table 1 of the paper, in the order the regime analysis reports it
TABLE_1 = (THM_4_1, LEMMA_4_4, THM_4_7_1, THM_4_7_2, THM_4_7_3, THM_4_8[1], THM_4_8[2], THM_4_11[1], THM_4_11[2])
ENTRIES = (PROP_2_1, LEMMA_2_3, PROP_2_4, LEMMA_3_1, THM_3_3, *TABLE_1)

# ---------------------------------------------------------------------------------------------
# Document-level rules: the regime of Table 1, and Lemma 4.4's inverse design
# ---------------------------------------------------------------------------------------------

#: what the design certificate speaks of: the spec given (``params``) and the A the document states
DESIGN_SUBJECT = {"A": "A_exact", "B": "params.B", "V": "params.V", "Sigma": "params.Sigma_inf"}


def _design(doc: Document) -> list[tuple[str, str]]:
    c = doc.get("certificate") or {}
    if c.get("kind") != "lemma44_design" or c.get("subject") != DESIGN_SUBJECT or \
            (c.get("data") or {}).get("residual_is_zero") is not doc.get("residual_is_zero"):
        return [("$.residual_is_zero", "residual_is_zero needs the lemma44_design certificate of this spec and A")]
    try:
        nearest = [[float(Fraction(x)) for x in row] for row in doc.get("A_exact") or []]
    except (TypeError, ValueError, ZeroDivisionError):
        nearest = None
    return [] if nearest == doc.get("A") else [("$.A", "A is not the nearest floats of A_exact")]


def check_regime(doc: Document) -> list[tuple[str, str]]:
    """Refusals ``(JSON path, reason)`` of a saved document's ``regime``, re-derived from its theorem
    records (whose statuses and ``applies`` the recheck has bound to certificates): a certified claim
    needs the theorem that proves it, with the same numbers, and no claim may contradict one.

    A ``basis: simulation`` regime is an observation: it is checked not to contradict a certified
    theorem, not re-derived. A design document (Lemma 4.4 read backwards) needs its certificate.
    """
    if doc.get("lemma") == "gaussian:lemma-4.4":
        return _design(doc)
    reg = doc.get("regime")
    if not isinstance(reg, dict):
        return []
    th = {t.get("id"): t for t in doc.get("theorems", []) if isinstance(t, dict)}
    out: list[tuple[str, str]] = []

    def applies(i: str) -> bool:
        return th.get(i, {}).get("applies") is True

    def hold(i: str, names: tuple[str, ...]) -> bool:
        hs = {h.get("name"): h.get("status") for h in th.get(i, {}).get("hypotheses", []) if isinstance(h, dict)}
        return all(hs.get(n) == "holds" for n in names)

    kind, basis = reg.get("Sigma"), reg.get("basis")
    blowup = [i for i in ("1", "2") if applies(f"gaussian:thm-4.8.{i}")]
    if blowup and kind not in ("blows_up", "unknown"):
        out.append(("$.regime.Sigma", f"Theorem 4.8 ({blowup[0]}) applies, so the regime is blows_up, not {kind!r}"))
    if kind == "blows_up":
        if basis != "certified" or not blowup:
            out.append(("$.regime.Sigma", "blows_up needs a proof: no Theorem 4.8 entry applies in this document"))
        elif reg.get("argument") not in [f"Theorem 4.8 ({i})" for i in blowup]:
            out.append(("$.regime.argument", f"argument {reg.get('argument')!r} is not an applying Theorem 4.8"))
        else:
            i = reg["argument"][-2]
            want = th[f"gaussian:thm-4.8.{i}"].get("prediction", {}).get("blowup_time_upper_bound")
            if reg.get("blowup_time_upper_bound") != want:
                out.append(("$.regime.blowup_time_upper_bound",
                            f"{reg.get('blowup_time_upper_bound')!r} is not Theorem 4.8 ({i})'s bound {want!r}"))
    elif basis == "certified":
        out += _certified_limit(reg, th, kind, applies, hold)
    if applies("gaussian:thm-4.7.2") and kind not in ("converges_zero", "unknown"):
        out.append(("$.regime.Sigma", f"Theorem 4.7 (2) applies (Sigma -> 0) but the regime says {kind!r}"))
    if reg.get("trace_bound") is not None:
        t473 = th.get("gaussian:thm-4.7.3", {})
        if not hold("gaussian:thm-4.7.3", ("-V > 0", "B > 0")) or reg["trace_bound"] != t473.get("prediction", {}).get("trace_bound"):
            out.append(("$.regime.trace_bound", "the trace bound is not Theorem 4.7's for these parameters"))
    return out


def _certified_limit(reg: Mapping[str, Any], th: Mapping[str, Any], kind: Any, applies: Any, hold: Any) -> list[tuple[str, str]]:
    """A certified regime other than blow-up: a limit (Thm 4.1, Thm 4.7 (2)), unbounded growth (a bound
    detectability certificate) or boundedness (Thm 4.7's trace bound)."""
    t41 = th.get("gaussian:thm-4.1", {}).get("prediction", {})
    if isinstance(kind, str) and kind.startswith("converges_"):
        by41 = applies("gaussian:thm-4.1") and t41.get("Sigma_inf") is not None and reg.get("Sigma_inf") == t41["Sigma_inf"]
        if by41:
            k, d = t41.get("rank"), len(t41["Sigma_inf"])
            by41 = kind == ("converges_zero" if k == 0 else "converges_pd" if k == d else "converges_singular")
        zero = reg.get("Sigma_inf") is not None and not any(x for row in reg["Sigma_inf"] for x in row)
        by472 = applies("gaussian:thm-4.7.2") and kind == "converges_zero" and zero
        if not (by41 or by472):
            return [("$.regime.Sigma", f"certified {kind} with this Sigma_inf follows from no applying theorem "
                                       "(Theorem 4.1 with its limit, Theorem 4.7 (2))")]
        return []
    if kind == "unbounded":
        c = (reg.get("growth_rate") or {}).get("certificate") or {}
        data = c.get("data") or {}
        if (c.get("kind") != "detectability" or data.get("detectable") is not False
                or not (data.get("inertia") or [0])[0] > 0 or c.get("subject") != {"A": "params.A", "Q": Q_SUBJECT}):
            return [("$.regime.growth_rate.certificate", "certified unbounded needs a detectability certificate of "
                                                         "(params.A, Q) with an unobservable unstable mode")]
        return []
    if kind == "bounded":
        from ..gaussian.regime import RICCATI_BOUNDED

        # the Riccati comparison's argument is re-derived with the whole regime (flowcert.rederive)
        if not hold("gaussian:thm-4.7.3", ("-V > 0", "B > 0")) and reg.get("argument") != RICCATI_BOUNDED:
            return [("$.regime.Sigma", "certified bounded needs the trace bound of Theorem 4.7 (-V > 0, B > 0 hold) "
                                       "or the Riccati comparison (unobservable modes on the imaginary axis)")]
        return []
    return [("$.regime.basis", f"basis certified with Sigma {kind!r}: nothing certified to re-derive")]


bd.register("gaussian", *ENTRIES)
bd.EXTRA_CHECKS["gaussian"] = check_regime
