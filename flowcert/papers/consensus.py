r"""The consensus paper's catalogue entries, with their hypotheses and subjects (Rodríguez Abella,
Silvestre, Tabuada, *The asymptotic behavior of attention in transformers*, ``003_951a97dfacf88740.txt``;
the ``attention`` system).

Model (7), rows of each head's attention matrix summing to :math:`c`:

.. math::

    \dot y_i=\sum_{\eta=1}^h\sum_j\alpha^\eta_{ij}(t,y)\big(U_\eta y_j-(y_i^\top WU_\eta y_j)\,y_i\big),\qquad
    \alpha^\eta_{ij}=c\,\frac{e^{y_i^\top P_\eta y_j}}{\sum_ke^{y_i^\top P_\eta y_k}},\quad P_\eta=\beta Q_\eta^\top K_\eta .

Each entry is declared once here; the decision code lives in :mod:`flowcert.attention.consensus` and
:mod:`flowcert.attention.consensus_hypotheses` and builds its record with ``ENTRY.result(...)``. The
subjects: :math:`P=\beta Q^\top K` of head 0 exactly (:data:`P_FORMS`), :math:`U` = ``params.heads[0].V``,
the heads (``params.heads``), :math:`W` (``params.W``), and inputs the document fixes without storing them
(:data:`flowcert.bindings.DERIVED`): the initial tokens (``params.X0``, or drawn from the document's
``seed``), every head's score matrix as the loader reads it, and the causal transverse matrix fixed by
:math:`n`. The rules of a ``verify`` document beyond its hypotheses (:func:`check`) live here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from .. import bindings as bd
from ..bindings import FAILS, HOLDS, Entry, HypothesisBinding, ProofRoute
from .multistability import check_equilibria
from ..records import Document

# ---------------------------------------------------------------------------------------------
# Subjects and hypotheses
# ---------------------------------------------------------------------------------------------

#: P = beta Q^T K of head 0 as an exact subject, for a head given by P or by Q and K
P_FORMS = {"P": "params.beta*params.heads[0].P", "QK": "params.beta*params.heads[0].Q^T*params.heads[0].K"}
U0 = "params.heads[0].V"
HEADS = {"heads": "params.heads"}
#: the initial tokens: ``params.X0``, or the ones drawn from the document's ``seed``
TOKENS = "derived.initial_tokens"
#: every head's score matrix as the loader reads it (:func:`flowcert.certificates.attention.head_bounds.head_data`)
SCORES = "derived.score_matrices"
#: the transverse linearisation at consensus of the causal model, fixed by n
CAUSAL_TRANSVERSE = "derived.causal_transverse"


def _on_P(kind: str, proves: Any, field: str = "M", fixed: dict[str, Any] | None = None,
          extra: dict[str, str] | None = None) -> tuple[ProofRoute, ...]:
    """One proof of ``kind`` per form of head 0 (``key`` ``P`` / ``QK``): its ``field`` is :math:`P`."""
    return tuple(ProofRoute(kind, {field: e, **(extra or {})}, proves, fixed or {}, key=k) for k, e in P_FORMS.items())


def _fails_if_false(d: Any) -> str | None:
    return FAILS if d.get("value") is False else None


def _holds_if_true(d: Any) -> str | None:
    return HOLDS if d.get("value") is True else None


#: a time-varying score matrix refutes "P constant", and with it every hypothesis about a constant P
P_VARIES = ProofRoute("predicate", HEADS, _fails_if_false, {"predicate": "constant_scores"})
P_PD = HypothesisBinding("P > 0", _on_P("pd", HOLDS) + _on_P("not_pd", FAILS) + _on_P("not_psd", FAILS) + _on_P("not_symmetric", FAILS))
P_PD_VARYING = HypothesisBinding("P = P^T > 0", (P_VARIES,))
P_CONSTANT = bd.predicate("P constant", "constant_scores", HEADS)
SINGLE = bd.predicate("h = 1", "single_head", HEADS)
U_IDENTITY = bd.predicate("U_eta = I", "identity_values", HEADS)
U_CONSTANT = bd.predicate("U constant", "constant_values", HEADS)
FULL = bd.predicate("full attention", "equals", {"x": "params.causal"}, literal=False)
CAUSAL = bd.predicate("causal attention", "equals", {"x": "params.causal"}, literal=True)
SPHERE = bd.predicate("tokens on the unit sphere (W = I)", "unit_sphere", {"x": "params.W"})
ELLIPSOID = HypothesisBinding("W = W^T > 0", (
    ProofRoute("predicate", {"x": "params.W"}, _holds_if_true, {"predicate": "unit_sphere"}),
    ProofRoute("pd", {"M": "params.W"}, HOLDS), ProofRoute("not_pd", {"M": "params.W"}, FAILS),
    ProofRoute("not_symmetric", {"M": "params.W"}, FAILS)))
W_IS_P = HypothesisBinding("tokens on E_P (W = P; erratum)",
                    _on_P("predicate", bd.by_value, "P", {"predicate": "ellipsoid_is_P"}, {"W": "params.W"}) + (P_VARIES,))
BOUNDED = HypothesisBinding("sup_t |P_eta(t)| <= b", (ProofRoute("sup_norm_bound", {"heads": SCORES}, HOLDS, {"derivative": False}),))
UNIFORMLY_CONTINUOUS = HypothesisBinding("P_eta uniformly continuous on t >= 0", (
    ProofRoute("sup_norm_bound", {"heads": SCORES}, HOLDS, {"derivative": True}),))
HEMISPHERE = HypothesisBinding("open hemisphere containing y_i(0) (SOCP witness v)", (
    ProofRoute("open_hemisphere", {"Y": TOKENS}, HOLDS), ProofRoute("no_open_hemisphere", {"Y": TOKENS}, FAILS)))
TOP = HypothesisBinding("U symmetric, lambda_max(U) > 0 simple", (
    ProofRoute("simple_positive_top_eigenvalue", {"U": U0}, HOLDS),
    ProofRoute("repeated_top_eigenvalue", {"U": U0}, FAILS),
    ProofRoute("nonpositive_top_eigenvalue", {"U": U0}, FAILS),
    ProofRoute("not_symmetric", {"M": U0}, FAILS),
    ProofRoute("predicate", HEADS, _fails_if_false, {"predicate": "constant_values"})))
ANTIPODE_FREE = bd.predicate("y_j(0) != -y_1(0) (j >= 2)", "no_antipode_of_first", {"Y": TOKENS})
SIDE = HypothesisBinding("v^T y_i(0) of one strict sign for all i", (ProofRoute(
    "eigenvector_side", {"U": U0, "Y": TOKENS},
    lambda d: HOLDS if d["side"] == "one" else FAILS if d["side"] == "both" else None),))
CAUSAL_STABLE = HypothesisBinding("consensus_locally_stable", (ProofRoute("lyapunov", {"J": CAUSAL_TRANSVERSE}, HOLDS),),
                           certifiable_holds=lambda resolve: resolve("params.n") >= 2)  # one token: trivially
THM61_STABLE = HypothesisBinding("consensus_locally_stable", (ProofRoute("simple_positive_top_eigenvalue", {"U": U0}, HOLDS),))


def _identity(name: str, identity: str) -> HypothesisBinding:
    return HypothesisBinding(name, (ProofRoute("symbolic_identity", {}, HOLDS, {"identity": identity}),))


GRADIENT_IDENTITY = _identity("gradient identity dV/dy_k = -Z_k P X_k proved", "consensus:theorem_3_2")
VDOT_IDENTITY = _identity("Vdot_P = -sum_k Z_k |ydot_k|_P^2 on E_P proved", "consensus:theorem_3_2")
DINI_IDENTITY = _identity("Dini derivative of max_i(1 - v^T y_i) <= 0 (per-term decomposition proved)",
                          "consensus:theorem_4_1")
LEMMA_5_1_IDENTITY = _identity("adot = alpha (1 - a^2), V = (a-1)^2(a+2)/3, Vdot = -alpha (1-a^2)^2 proved",
                               "consensus:lemma_5_1")
CASCADE_IDENTITY = _identity("cascade identity (19) and input gain |y0 - a y|^2 = 1 - a^2 proved", "consensus:lemma_5_1")
LEMMA_6_1_IDENTITY = _identity("bdot = alpha (lambda - y^T U y) b and the sum of squares proved", "consensus:lemma_6_1")
IDENTITY_23 = _identity("identity (23) proved", "consensus:lemma_6_1")
#: the SymPy derivations by name, each a registered parameter-free identity (flowcert.certificates.identities)
IDENTITIES = {h.name: h for h in (GRADIENT_IDENTITY, VDOT_IDENTITY, DINI_IDENTITY, LEMMA_5_1_IDENTITY,
                                  CASCADE_IDENTITY, LEMMA_6_1_IDENTITY, IDENTITY_23)}
#: exactly one of them is reported: ``P > 0`` for a constant P, ``P = P^T > 0`` (fails) for a time-varying one
_P_EITHER = frozenset({P_PD.name, P_PD_VARYING.name})

# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------

LEMMA_3_1 = Entry(
    "consensus:lemma-3.1", 'Lemma 3.1',
    r"\text{The }g\text{-orthogonal projection onto }T(\mathcal E_P^n)^\ell\text{ is }X_i\mapsto(I-y_iy_i^\top P)X_i=T_{y_i}\pi_P X_i,\quad\langle X,Y\rangle_{g}=\sum_iZ_iX_i^\top PY_i",
    (P_PD, P_PD_VARYING, P_CONSTANT),
    optional=_P_EITHER)
THM_3_1 = Entry(
    "consensus:thm-3.1", 'Theorem 3.1',
    r"\operatorname{grad}_{g_P}V_P=-Y_P,\quad V_P=-\tfrac12\sum_{i,j}e^{y_i^\top Py_j}\ \text{on}\ (\mathcal E_P^n)^\ell",
    (P_PD, P_PD_VARYING, P_CONSTANT, SINGLE, U_IDENTITY, FULL, GRADIENT_IDENTITY),
    optional=_P_EITHER)
THM_3_2 = Entry(
    "consensus:thm-3.2", 'Theorem 3.2',
    r"P=P^\top\succ0,\ y_i\in\mathcal E_P^n,\ U=I,\ h=1:\ \dot V_P=-\sum_kZ_k|\dot y_k|_P^2\le0\ \text{and every trajectory converges to an equilibrium}",
    (P_PD, P_PD_VARYING, W_IS_P, P_CONSTANT, SINGLE, U_IDENTITY, FULL, VDOT_IDENTITY),
    optional=_P_EITHER,
    correction='tokens must lie on the ellipsoid E_P of P itself (W = P); with W != P, V_P is not monotone. The conclusion is convergence to an equilibrium, not consensus; the Lojasiewicz inequality is misstated in the paper.')
LEMMA_4_1 = Entry(
    "consensus:lemma-4.1", 'Lemma 4.1',
    r"\sup_t\|P_\eta(t)\|\le b\Rightarrow c_1\le\alpha^\eta_{ij}\le c_2,\ c_1=\frac1{\sqrt{n+1}\,\ell\,e^{2K^2b}},\ K=\lambda_{\min}(W)^{-1/2};\ \alpha^\eta_{ij}\le\tfrac1{\sqrt{n+1}}",
    (BOUNDED, ELLIPSOID),
    correction="K = lambda_min(W)^(-1/2); the paper's c2 = exp(2K^2 b) is valid but loose: alpha <= 1/sqrt(n+1) always")
LEMMA_4_2 = Entry(
    "consensus:lemma-4.2", 'Lemma 4.2',
    r"P_\eta\ \text{bounded, uniformly continuous}\Rightarrow f_i(t)=\sum_\eta\sum_j\alpha^\eta_{ij}\big(v^\top y_j-y_i^\top Wy_j\,v^\top y_i\big)\ \text{bounded and uniformly continuous}",
    (BOUNDED, UNIFORMLY_CONTINUOUS, U_IDENTITY, FULL))
THM_4_1 = Entry(
    "consensus:thm-4.1", 'Theorem 4.1',
    r"U_\eta=I,\ \sup_t\|P_\eta\|\le b,\ P_\eta\ \text{uniformly continuous},\ v^\top y_i(0)>0\ \forall i\ \Rightarrow\ \mathcal C^+_\ell(v)\ \text{is attractive; } V=\max_i(1-v^\top y_i),\ D^+V\le0",
    (U_IDENTITY, FULL, ELLIPSOID, BOUNDED, UNIFORMLY_CONTINUOUS, HEMISPHERE, DINI_IDENTITY),
    correction='attractivity only (no stability, no rate, no particular point); the hemisphere is Euclidean v^T y > 0 even on ellipsoids')
LEMMA_5_1 = Entry(
    "consensus:lemma-5.1", 'Lemma 5.1',
    r"\dot y=\tilde\alpha(t)(y^0-y^\top y^0\,y),\ \tilde\alpha\ge c>0:\ y^0\ \text{asymptotically stable with domain}\ \mathbb S^n\setminus\{-y^0\};\ V(a)=\tfrac23-a+\tfrac{a^3}3",
    (CAUSAL, U_IDENTITY, SPHERE, BOUNDED, LEMMA_5_1_IDENTITY))
THM_5_1 = Entry(
    "consensus:thm-5.1", 'Theorem 5.1',
    r"\text{causal},\ U_\eta=I,\ W=I,\ \sup_t\|P_\eta\|<b:\ \mathcal C_\ell\ \text{asymptotically stable};\ y_i(t)\to y_1(0)\ (\ell=2:\ \text{from all } y_2\ne-y_1)",
    (CAUSAL, U_IDENTITY, SPHERE, BOUNDED, ANTIPODE_FREE, CAUSAL_STABLE, CASCADE_IDENTITY),
    correction='for l >= 3 the domain of attraction does not contain {y_j != -y_1, j >= 2}: the ISS estimate fails near a_i = -1 (explicit S^1 counterexample in note 003); the limit is y_1(0), which never moves')
LEMMA_6_1 = Entry(
    "consensus:lemma-6.1", 'Lemma 6.1',
    r"\dot y=\tilde\alpha(t)(Uy-y^\top Uy\,y),\ U=U^\top,\ \dim L_\lambda=1:\ \pm v\ \text{asymptotically stable with domains}\ \{\pm v^\top y>0\}",
    (SINGLE, SPHERE, U_CONSTANT, TOP, LEMMA_6_1_IDENTITY),
    correction='trajectories on the great sphere v^T y = 0 are invariant (the paper calls b* = 0 unstable with empty domain)')
THM_6_1 = Entry(
    "consensus:thm-6.1", 'Theorem 6.1',
    r"\text{causal},\ h=1,\ W=I,\ U=U^\top,\ \lambda_{\max}(U)>0\ \text{simple},\ \sup_t\|P\|<b:\ (v,\dots,v)\ \text{asymptotically stable, domain}\ \supseteq\{v^\top y_i>0\ \forall i\}",
    (CAUSAL, SINGLE, SPHERE, U_CONSTANT, TOP, BOUNDED, SIDE, THM61_STABLE, IDENTITY_23),
    correction='the limit is +-v (fixed by U), not y_1(0); the domain of b_i is (0, 1], not (0, 1)')

ENTRIES = (LEMMA_3_1, THM_3_1, THM_3_2, LEMMA_4_1, LEMMA_4_2, THM_4_1, LEMMA_5_1, THM_5_1, LEMMA_6_1, THM_6_1)
bd.register("attention", *ENTRIES)


def _derived(name: str) -> Callable[[Any], Any]:
    return bd.derived_by("flowcert.attention.consensus_hypotheses", name)


bd.DERIVED.setdefault("attention", {}).update({TOKENS: _derived("initial_tokens_of"), SCORES: _derived("score_matrices_of"),
                                               CAUSAL_TRANSVERSE: _derived("causal_transverse_of")})

# ---------------------------------------------------------------------------------------------
# Document-level rules of a ``verify attention`` document (and, by import, of ``equilibria``)
# ---------------------------------------------------------------------------------------------

_P_ENTRIES = ("consensus:lemma-3.1", "consensus:thm-3.1", "consensus:thm-3.2")


def check(doc: Document) -> list[tuple[str, str]]:
    r"""Refusals ``(JSON path, reason)`` of an attention document beyond its hypotheses: the equilibria
    records (:func:`flowcert.papers.multistability.check_equilibria`); in a ``verify`` document, exactly one
    of ``P > 0`` / ``P = P^T > 0`` per entry that needs P, and a tetrahedron prediction whose stability
    status is its ``tetrahedron_spectrum_sign`` certificate's, bound to :math:`\beta` of head 0. A
    simulation's ``limit_class`` stays an observation."""
    out = check_equilibria(doc)
    theorems = doc.get("theorems") if isinstance(doc.get("theorems"), list) else []
    heads = (doc.get("params") or {}).get("heads") if isinstance(doc.get("params"), dict) else None
    form = "P" if isinstance(heads, list) and heads and isinstance(heads[0], dict) and "P" in heads[0] else "QK"
    for i, t in enumerate(theorems):
        if not isinstance(t, dict) or not isinstance(t.get("hypotheses"), list):
            continue
        names = [h.get("name") for h in t["hypotheses"] if isinstance(h, dict)]
        if t.get("id") in _P_ENTRIES and not set(names) <= bd.ENGINE_HYPOTHESES and sum(n in _P_EITHER for n in names) != 1:
            out.append((f"$.theorems[{i}].hypotheses", f"{t['id']} reports exactly one of {sorted(_P_EITHER)}"))
        prediction = t.get("prediction") if isinstance(t.get("prediction"), dict) else {}
        eq = prediction.get("equilibrium")
        stab = eq.get("stability") if isinstance(eq, dict) else None
        if isinstance(stab, dict):
            out += _tetrahedron(f"$.theorems[{i}].prediction.equilibrium.stability", stab, form)
    return out


def _tetrahedron(where: str, stab: Mapping[str, Any], form: str) -> list[tuple[str, str]]:
    c = stab.get("certificate")
    want = {"beta": f"-({P_FORMS[form]})[0,0]"}
    if c is None:
        return [] if stab.get("status") == "unknown" else [(where, f"status {stab.get('status')!r} without its certificate")]
    if not isinstance(c, dict) or c.get("kind") != "tetrahedron_spectrum_sign" or c.get("subject") != want:
        return [(f"{where}.certificate", f"the tetrahedron's certificate is a tetrahedron_spectrum_sign bound to {want}")]
    if stab.get("status") != ("holds" if (c.get("data") or {}).get("stable") is True else "fails"):
        return [(f"{where}.status", "the status is not the one its certificate proves")]
    return []


bd.EXTRA_CHECKS["attention"] = check
