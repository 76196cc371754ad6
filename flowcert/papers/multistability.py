r"""The multistability paper's catalogue entries, with their hypotheses and subjects (Altafini,
*Multistability of Self-Attention Dynamics in Transformers*, note 001; the ``attention`` system).

Model (1): :math:`\dot x_i=(I-x_ix_i^\top)V\sum_jA_{ij}x_j`,
:math:`A_{ij}=c\operatorname{softmax}_j(\beta x_i^\top Q^\top Kx_j)`; Oja (2): :math:`A=I`; multiagent Oja (5):
:math:`A=\tfrac1n\mathbb 1\mathbb 1^\top`. Assumption 1: :math:`V=V^\top`, :math:`\lambda_1>0` simple.

Each entry is declared once here; the decision code lives in :mod:`flowcert.attention.multistability`
and :mod:`flowcert.attention.enumeration` and builds its record with ``ENTRY.result(...)``. The
subjects: :math:`V` is ``params.heads[0].V`` (self-attention) or ``params.V`` (the Oja variants), the
scores :math:`\beta Q^\top K` of head 0 exactly (:data:`M_FORMS`; :math:`c=1/\sqrt d` is a positive time
scale that no verdict depends on, so it is not part of any subject). The rules of an ``equilibria``
document (:func:`check_equilibria`) live here too, so that ``flowcert recheck`` needs nothing heavier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import bindings as bd
from ..bindings import FAILS, HOLDS, Entry, HypothesisBinding, ProofRoute
from ..records import Document

# ---------------------------------------------------------------------------------------------
# Subjects and hypotheses
# ---------------------------------------------------------------------------------------------

#: V as an exact subject: head 0's value matrix (self-attention) or the Oja variants' V
V_FORMS = {"heads": "params.heads[0].V", "oja": "params.V"}
#: beta Q^T K of head 0 (zero for the Oja variants), the scores of the class and Krawczyk certificates
M_FORMS = {"P": "params.beta*params.heads[0].P", "QK": "params.beta*params.heads[0].Q^T*params.heads[0].K",
           "oja": "0*params.V"}
#: a class verdict -> the record's ``stable``
STABLE = {"stable": True, "unstable": False, "not_asymptotically_stable": False}


def _on_V(kind: str, proves: Any, field: str = "M", sign: str = "", fixed: dict[str, Any] | None = None) -> tuple[ProofRoute, ...]:
    return tuple(ProofRoute(kind, {field: sign + e}, proves, fixed or {}, key=k) for k, e in V_FORMS.items())


def _V_constant(resolve: Any) -> bool:
    """V is numbers (a time-varying V is decided at t = 0: those verdicts rest on no bound certificate)."""
    def numbers(x: Any) -> bool:
        return all(numbers(y) for y in x) if isinstance(x, list) else isinstance(x, (int, float)) and not isinstance(x, bool)

    for e in V_FORMS.values():
        try:
            return numbers(resolve(e))
        except KeyError:
            continue
    return True


def class_subject(variant: str, from_P: bool) -> dict[str, str]:
    """The subject of an ``attention_bipartite_spectrum`` certificate (without ``variant``: of an
    ``attention_krawczyk_equilibrium``): V, the scores beta Q^T K of head 0 and the variant."""
    key = "heads" if variant == "self_attention" else "oja"
    m = "oja" if variant != "self_attention" else ("P" if from_P else "QK")
    return {"V": V_FORMS[key], "M": M_FORMS[m], "variant": "params.variant"}


V_SYMMETRIC = HypothesisBinding("Assumption 1: V symmetric", _on_V("predicate", bd.by_value, fixed={"predicate": "symmetric"})
                         + _on_V("not_symmetric", FAILS), certifiable_holds=_V_constant)
LAMBDA_SIMPLE = HypothesisBinding("Assumption 1: lambda_1 simple", _on_V("symmetric_eigen_enclosure", HOLDS, "V")
                           + _on_V("simple_top_eigenvalue", HOLDS, "V") + _on_V("repeated_top_eigenvalue", FAILS, "U"),
                           certifiable_holds=_V_constant)
#: lambda_1 > 0 iff -V is not PSD: a vector with v^T (-V) v < 0 proves it, an exact psd certificate of -V refutes it
LAMBDA_POSITIVE = HypothesisBinding("Assumption 1: lambda_1 > 0", _on_V("not_psd", HOLDS, sign="-") + _on_V("psd", FAILS, sign="-"),
                             certifiable_holds=_V_constant)
STRUCTURE = HypothesisBinding("model (1): one constant head, full attention, unit sphere", (
    ProofRoute("predicate", {"heads": "params.heads", "causal": "params.causal", "W": "params.W"}, bd.by_value,
          {"predicate": "attention_model_1"}, key="heads"),
    ProofRoute("predicate", {"V": "params.V", "W": "params.W"}, bd.by_value, {"predicate": "oja_model"}, key="oja")))
OJA_IDENTITY = HypothesisBinding("SymPy: Wdot + |(I-xx^T)Vx|^2 = -(x^T V x)^2 (1 - x^T x)", (
    ProofRoute("symbolic_identity", {}, HOLDS, {"identity": "multistability:oja_lyapunov"}),))
MAO_IDENTITY = HypothesisBinding("SymPy: Wdot + (1/n) sum|xdot_i|^2 = -(1/n) sum (x_i^T y)^2 (1 - |x_i|^2)", (
    ProofRoute("symbolic_identity", {}, HOLDS, {"identity": "multistability:multiagent_lyapunov"}),))
VARIANT = bd.predicate("variant self_attention", "equals", {"x": "params.variant"}, literal="self_attention")
N_EVEN = bd.predicate("n even", "even", {"x": "params.n"})

_A1S = (V_SYMMETRIC, LAMBDA_SIMPLE)
_A1 = (*_A1S, LAMBDA_POSITIVE)
_LATER = frozenset({LAMBDA_SIMPLE.name, LAMBDA_POSITIVE.name})  # absent when V is not symmetric
_SA = (*_A1S, STRUCTURE, VARIANT)

# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------

LEMMA_1 = Entry(
    "multistability:lemma-1", 'Lemma 1 (Oja flow (2))',
    r"$\dot x=(I-xx^\top)Vx$: equilibria $\pm v_k$; $W=\tfrac12(\lambda_1-x^\top Vx)$ has $\dot W=-\|(I-xx^\top)Vx\|^2\le0$; $\pm v_1$ asymptotically stable, the others unstable.",
    (*_A1S, OJA_IDENTITY, STRUCTURE),
    optional=_LATER)
LEMMA_2 = Entry(
    "multistability:lemma-2", 'Lemma 2 (equilibria of (5))',
    r"Equilibria of (5): $x_i=s_iv_k$ with $\sum_is_i\ne0$, $\lambda_k\ne0$ (consensus, bipartite), and the polygonal set $\{V\sum_jx_j=0\}$.",
    (*_A1S, STRUCTURE),
    optional=_LATER,
    correction='Precise form (note 001 §2): if y != 0 every x_i = +-y/|y| and V xbar || xbar forces an eigenvector; equal splits are polygonal for (5).')
LEMMA_4 = Entry(
    "multistability:lemma-4", 'Lemma 4 (local stability for (5))',
    r"For (5): consensus at $v_1$ is asymptotically stable, consensus at $v_k$ ($k\ge2$), bipartite and polygonal equilibria are unstable. Tangent spectrum at consensus $v_k$: $\{\lambda_h-\lambda_k\}_{h\ne k}\cup\{-\lambda_k\}^{(n-1)(d-1)}$.",
    (*_A1, STRUCTURE),
    optional=_LATER,
    correction="The paper's bipartite argument uses normal (ambient) eigenvalues; the verdict is re-derived on the tangent space (note 001 Lemma 4 [C]); eigenvector class 3 is {z^i _|_ v_k, sum z^i = 0}.")
LEMMA_5 = Entry(
    "multistability:lemma-5", 'Lemma 5 (Lyapunov function for (5))',
    r"$W=\tfrac12(\lambda_1-\bar x^\top V\bar x)\ge0$, $\dot W=-\frac1n\sum_i\|\dot x_i\|^2\le0$ on $(\mathbb S^{d-1})^n$; $\dot W=0$ iff equilibrium.",
    (*_A1S, MAO_IDENTITY, STRUCTURE),
    optional=_LATER,
    correction='Normalisation corrected to W = (lambda_1 - xbar^T V xbar)/2 (the printed scalings are inconsistent; note 001 Lemma 5 [C]).')
THM_1 = Entry(
    "multistability:thm-1", 'Theorem 1 (multiagent Oja)',
    r"Under Assumption 1, consensus at $\pm v_1$ is the only asymptotically stable equilibrium of (5) and attracts almost every initial condition.",
    (*_A1, STRUCTURE),
    optional=_LATER)
LEMMA_6 = Entry(
    "multistability:lemma-6", 'Lemma 6 (equilibria of (1))',
    r"Consensus and bipartite points $x_i=\pm v_k$ are equilibria of (1) for every $Q,K$; the other equilibria are polygonal ($V\sum_jA_{ij}x_j=0$) or clustering.",
    _SA,
    optional=_LATER,
    correction='Class 4 as printed contains all equilibria; a 1-clustering (all tokens equal, not an eigenvector) is never an equilibrium (note 001 Remark 4 [C]).')
LEMMA_7 = Entry(
    "multistability:lemma-7", 'Lemma 7 (attention at equilibria)',
    r"Consensus: $A=\frac1n\mathbb 1\mathbb 1^\top$; bipartite: eq. (8), rank 2 iff $a_k\ne0$; $m$-clustering: rank $\le m$ (generically $m$).",
    _SA,
    optional=_LATER,
    correction='rank 2 holds iff a_k != 0 (if a_k = 0, A = 11^T/n); rank m only generically.')
THM_2 = Entry(
    "multistability:thm-2", 'Theorem 2 (stability of (1))',
    r"Under Assumption 1 and any $Q,K$: consensus at $v_1$ is asymptotically stable, at $v_k$ ($k\ge2$) unstable; a bipartite point at $v_k$ with split $(n_1,n_2)$ is asymptotically stable iff $\delta_\ell\lambda_k>0$ for each group with $n_\ell\ge2$ and, for all $j\ne k$, $\big(1+\tfrac{\alpha_2(n_1^2+n_2^2)}{2\alpha_1n_1n_2}\big)\lambda_j-\big(1-\tfrac{\alpha_2^2}{\alpha_1^2}\big)\lambda_k<0$ and $\delta_1\delta_2\lambda_k^2-\big(\delta_2\tfrac{n_1\alpha_1}{\beta_1}+\delta_1\tfrac{n_2\alpha_1}{\beta_2}\big)\lambda_j\lambda_k+\tfrac{n_1n_2}{\beta_1\beta_2}(\alpha_1^2-\alpha_2^2)\lambda_j^2>0$.",
    (*_A1, STRUCTURE, VARIANT),
    optional=_LATER,
    correction=(r"Inequality (9) corrected: the sign of the $\alpha_2(n_1^2+n_2^2)$ term, of the $\lambda_j\lambda_k$ term "
                r"and of the whole determinant condition were wrong; $\delta_l\lambda_k>0$ is needed only for groups of "
                r"$\ge2$ tokens (the paper uses ambient normal eigenvalues)."))
LEMMA_9 = Entry(
    "multistability:lemma-9", 'Lemma 9 (Jacobian at consensus of (1))',
    r"$F(v_k)=\tfrac1n\mathbb 1\mathbb 1^\top\otimes(I-v_kv_k^\top)V-I_n\otimes\lambda_k(I+v_kv_k^\top)$ for every $Q,K$ (eq. (7), identical to (5)).",
    _SA,
    optional=_LATER)
LEMMA_10 = Entry(
    "multistability:lemma-10", 'Lemma 10 (bipartite Jacobian and spectrum)',
    r"$F=A(\mathbf x^*)\otimes PV-D_\delta\otimes L$; tangent eigenvalues $-\delta_\ell\lambda_k$ (multiplicity $(n_\ell-1)(d-1)$) and $\gamma_{j,\pm}$ of $\begin{bmatrix}a_j&b_j\\c_j&d_j\end{bmatrix}$; normal eigenvalues $-2\delta_\ell\lambda_k$.",
    _SA,
    optional=_LATER,
    correction="The paper's eigenvalue list is ambient; the n normal eigenvalues -2 delta_l lambda_k do not decide stability on the manifold.")
LEMMA_11 = Entry(
    "multistability:lemma-11", 'Lemma 11 (polygonal equilibria of (1))',
    r"Polygonal equilibria ($V\sum_jA_{ij}x_j=0\ \forall i$) are not asymptotically stable.",
    _SA,
    optional=_LATER,
    correction="Proof not rigorous (stray 1/n, uncontrolled Xi zeta_1 term); the claim is kept as 'not asymptotically stable', not 'has a positive eigenvalue'.")
PROP_2 = Entry(
    "multistability:prop-2", r'Proposition 2 ($\beta\to0$)',
    r"As $\beta\to0$, (1) with $A_{ij}=\operatorname{softmax}_j(\beta x_i^\top Q^\top Kx_j)$ tends to (5); $\|f^\beta_{SA}-f_{MAOja}\|=O(\beta)$.",
    (STRUCTURE, VARIANT),
    optional=_LATER)
OBS_D2 = Entry(
    "multistability:obs-D2", "flowcert's observation D2 (equal split)",
    r"At an equal-split bipartite point ($n_1=n_2$) the tangent spectrum is $\{-\tanh(a_k)\lambda_k\}^{(n-2)(d-1)}\cup\{\lambda_j-\tanh(a_k)\lambda_k,\ \tanh(a_k)(\lambda_j-\lambda_k)\}_{j\ne k}$.",
    (*_SA, N_EVEN),
    optional=_LATER)
OBS_D3 = Entry(
    "multistability:obs-D3", "flowcert's observation D3 (alignment)",
    r"A stable bipartite point with both groups of size $\ge2$ lies at $v_1$ or $v_d$; at $v_d$ it requires $\lvert\lambda_d\rvert>\lambda_1$.",
    _SA,
    optional=_LATER)

ENTRIES = (LEMMA_1, LEMMA_2, LEMMA_4, LEMMA_5, THM_1, LEMMA_6, LEMMA_7, THM_2, LEMMA_9, LEMMA_10, LEMMA_11, PROP_2,
           OBS_D2, OBS_D3)
bd.register("attention", *ENTRIES)

# ---------------------------------------------------------------------------------------------
# Document-level rules of an ``equilibria attention`` document
# ---------------------------------------------------------------------------------------------


def check_equilibria(doc: Document) -> list[tuple[str, str]]:
    r"""Refusals ``(JSON path, reason)`` of an ``equilibria`` document beyond its certificates: each class
    record's verdict and ``stable`` are its certificate's (an ``attention_bipartite_spectrum`` bound to the
    document's :math:`V` and :math:`\beta Q^\top K`, for the class :math:`(k,n_1,n_2)` the record names); each
    listed equilibrium's ``signs``, ``eigvec_index``, ``stable``, certificate pointer and ``class`` (re-derived
    exactly: consensus / bipartite, polygonal when :math:`\lambda_k=0` or an equal split has :math:`a_k=0`)
    agree with its class; a Newton point's ``stable`` is its Krawczyk certificate's. A point's ``X`` and the
    float spectra are the certificates' own objects and observations."""
    if "classes" not in doc and "equilibria" not in doc:
        return []
    params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
    heads = params.get("heads") if isinstance(params.get("heads"), list) and params.get("heads") else [{}]
    subject = class_subject(str(params.get("variant", "self_attention")), isinstance(heads[0], dict) and "P" in heads[0])
    classes = doc.get("classes") if isinstance(doc.get("classes"), list) else []
    out: list[tuple[str, str]] = []
    for i, c in enumerate(classes):
        out += _class(f"$.classes[{i}]", c, subject)
    records = doc.get("equilibria") if isinstance(doc.get("equilibria"), list) else []
    labels = _labels(doc) if any(isinstance(e, dict) and e.get("eigvec_index") is not None for e in records) else None
    if isinstance(labels, str):
        return [*out, ("$.params", labels)]
    for j, e in enumerate(records):
        if isinstance(e, dict):
            out += _record(f"$.equilibria[{j}]", e, classes, params, labels, subject)
    return out


def _int(x: Any) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else -10**9


def _class(where: str, c: Any, subject: dict[str, str]) -> list[tuple[str, str]]:
    if not isinstance(c, dict):
        return [(where, "a class record is not an object")]
    cert, verdict = c.get("certificate"), c.get("verdict")
    if cert is None:
        ok = verdict == "unknown" and c.get("stable") is None
        return [] if ok else [(where, f"verdict {verdict!r} / stable {c.get('stable')!r} without its certificate")]
    data = cert.get("data") if isinstance(cert, dict) else None
    if not isinstance(data, dict) or cert.get("kind") != "attention_bipartite_spectrum" or cert.get("subject") != subject:
        return [(f"{where}.certificate", f"a class certificate is an attention_bipartite_spectrum bound to {subject}")]
    out = []
    if [data.get("k"), data.get("n1"), data.get("n2")] != [_int(c.get("k")) - 1, c.get("n1"), c.get("n2")]:
        out.append((f"{where}.certificate", "the certificate is for another class than (k, n1, n2)"))
    if data.get("claim") != verdict or verdict not in STABLE:
        out.append((f"{where}.verdict", f"verdict {verdict!r} is not the certificate's {data.get('claim')!r}"))
    elif c.get("stable") is not STABLE[verdict]:
        out.append((f"{where}.stable", f"stable is {c.get('stable')!r}, the verdict gives {STABLE[verdict]!r}"))
    return out


def _labels(doc: Document) -> Any:
    """``(k, n1, n2) -> exact labels`` (0-based k) of the document's eigenvector classes, memoised; a
    string (the reason) when its parameters do not read back
    (:func:`flowcert.attention.enumeration.equilibrium_labels`, taken by name: the decision code is above
    these declarations)."""
    return bd.derived_by("flowcert.attention.enumeration", "equilibrium_labels")(doc)


def _record(where: str, e: Mapping[str, Any], classes: list[Any], params: Mapping[str, Any], labels: Any,
            subject: dict[str, str]) -> list[tuple[str, str]]:
    ptr, k = e.get("certificate"), e.get("eigvec_index")
    if k is None:  # a Newton point: its stability is its Krawczyk certificate's
        want = {key: v for key, v in subject.items() if key != "variant"}
        if ptr is None:
            return [] if e.get("stable") is None else [(f"{where}.stable", "stable without a certificate")]
        data = ptr.get("data") if isinstance(ptr, dict) else None
        if not isinstance(data, dict) or ptr.get("kind") != "attention_krawczyk_equilibrium" or ptr.get("subject") != want:
            return [(f"{where}.certificate", f"a Newton point's certificate is an attention_krawczyk_equilibrium bound to {want}")]
        if data.get("sqrt_d") != (params.get("d") if params.get("normalization") == "sqrt" else None):
            return [(f"{where}.certificate", "sqrt_d is not the document's normalisation")]
        if e.get("stable") is not STABLE.get(data.get("claim")):
            return [(f"{where}.stable", f"stable is {e.get('stable')!r}, the certificate proves {data.get('claim')!r}")]
        return []
    signs, n1, n2 = e.get("signs"), e.get("n1"), e.get("n2")
    if not isinstance(signs, list) or [signs.count(1), signs.count(-1)] != [n1, n2] or len(signs) != params.get("n"):
        return [(f"{where}.signs", "signs do not give (n1, n2) over n tokens")]
    ref = [i for i, c in enumerate(classes) if isinstance(c, dict) and c.get("k") == k and
           sorted([c.get("n1"), c.get("n2")]) == sorted([n1, n2])]
    if not ref:
        return [(f"{where}.eigvec_index", f"no class (k, n1, n2) = ({k}, {n1}, {n2}) in classes")]
    cl = classes[ref[0]]
    out = []
    if ptr is None:
        if cl.get("certificate") is not None:
            out.append((f"{where}.certificate", f"the record of a certified class has no certificate (classes[{ref[0]}])"))
    elif not isinstance(ptr, dict) or ptr.get("class") != ref[0] or not isinstance(cl.get("certificate"), dict) or \
            [ptr.get("kind"), ptr.get("claim")] != [cl["certificate"].get("kind"), cl["certificate"].get("claim")]:
        out.append((f"{where}.certificate", f"the pointer is not to classes[{ref[0]}] and its certificate"))
    if e.get("stable") is not cl.get("stable"):
        out.append((f"{where}.stable", f"stable is {e.get('stable')!r}, classes[{ref[0]}] says {cl.get('stable')!r}"))
    want_labels = labels(_int(k) - 1, n1, n2) if labels is not None else None
    if want_labels is not None and e.get("class") != want_labels:
        out.append((f"{where}.class", f"class is {e.get('class')!r}, exactly {want_labels!r}"))
    return out
