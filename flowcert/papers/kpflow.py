r"""The KPFlow paper's catalogue entries, with their hypotheses and subjects (Hazelden, Driscoll,
Shlizerman, Shea-Brown, *KPFlow: an operator perspective on dynamic collapse under gradient descent
training of recurrent networks*, ``002_920a650c5f3b6f50.txt``; the ``rnn`` system, note 002).

The gradient-descent flow of a recurrent model :math:`z_t=F(z_{t-1},x_t;\theta)` and its operators
(Prop. 1, eq. 5; Thm 1, eq. 64; Thm 2, eqs. 70–74, as corrected in note 002 §5):

.. math::

    \partial_sz=-\mathcal P\mathcal K\mathcal P^*\,\mathrm{Err},\qquad
    \mathcal K=\tfrac1BGG^\top\succeq0,\qquad
    \mathcal P=\mathcal U\mathcal V\mathcal U^{-1},\ (\mathcal Uq)_t=A_t\cdots A_1q_t .

Each entry is declared once here; the decision code lives in :mod:`flowcert.rnn.analyze` and builds
its records with ``ENTRY.result(...)`` / ``HYPOTHESIS.result(...)``. Subjects:

* the cell kind (``params.cell``): smoothness, single use of each :math:`W_j`, a constant outer
  Jacobian are exact ``predicate``\ s (``one_of``) of it; the ReLU cell's smoothness along the run is
  ``nonzero_entries`` of its states :math:`z_{b,t-1}`, :math:`t\ge2` (``derived.relu_states``);
* the analysis protocol the document records (``protocol``: plain GD steps, a frozen linear readout
  with :math:`\ell=\frac12\|W_{\mathrm{out}}z+b_{\mathrm{out}}-y^*\|^2`), ``equals`` predicates;
* :math:`\mathcal K\succeq0` is the SymPy identity ``kpflow:gram_psd``;
* computed subjects (:data:`flowcert.bindings.DERIVED`, :data:`flowcert.bindings.COMPUTED`): the state
  Jacobians :math:`A_{b,t}` along the trajectory (``derived.jacobians``) and the linear cell's state
  matrix (``derived.state_matrix``), re-derived from ``params`` by :mod:`flowcert.rnn.subjects`; the
  certificates about them (``invertible_all``, ``contraction``, ``bounded_real``) are checked on the
  re-derived values; above the exact budget (:data:`MAX_STEPS`, :data:`MAX_H`) the same Jacobians are one
  float64 stack named by its digest (``derived.jacobian_stack``), and ``invertible_float`` /
  ``contraction_float`` decide them with rigorous floating-point bounds
  (:mod:`flowcert.certificates.rnn_float`).

The document's top-level ``certificates`` list (the contraction and bounded-real records) and the
Thm 2 predictions computed from them are checked by :func:`check`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections.abc import Mapping
from typing import Any, Callable

from .. import bindings as bd
from ..bindings import HOLDS, Entry, HypothesisBinding, ProofRoute
from ..records import Document

#: every built-in cell kind (:data:`flowcert.rnn.params.CELL_KINDS`)
CELLS = ("rnn_tanh", "relu_rnn", "torch_rnn", "gru", "hodgkin_huxley", "linear")
#: cells whose F is smooth in (z, theta) by definition (ReLU is decided on the trajectory)
SMOOTH_CELLS = ("rnn_tanh", "torch_rnn", "gru", "hodgkin_huxley", "linear")
#: cells with a constant outer Jacobian (f = f^outer(W_j f_j^inner), f^outer affine)
CONSTANT_OUTER = ("rnn_tanh", "relu_rnn", "hodgkin_huxley", "linear")
#: the analysis protocol of ``kpflow analyze`` (the document's ``protocol``)
PROTOCOL = {"descent": "plain_gd", "readout": "linear_frozen_half_squared"}

#: Jacobian certificates are made only up to these sizes (B T trials-steps, H): exact checks stay cheap
MAX_STEPS, MAX_H = 64, 8

JACOBIANS = "derived.jacobians"
#: the same Jacobians above the exact budget, as one float64 stack [B*T, H, H] named by a digest reference
#: (certificates ``invertible_float`` / ``contraction_float``: rigorous float bounds, flowcert.certificates.rnn_float)
JACOBIAN_STACK = "derived.jacobian_stack"
#: the ReLU cell's states met by a Jacobian after the first step, z_{b,t-1} for t >= 2 (rows b (T-1) + t - 2)
RELU_STATES = "derived.relu_states"
STATE_MATRIX = "derived.state_matrix"
CELL = {"x": "params.cell"}


def _smooth_needs_certificate(resolve: Callable[[str], Any]) -> bool:
    """A ``holds`` of smoothness needs its certificate for a smooth cell, and for the ReLU cell at the sizes
    its states are certified (a user's module is decided by a torch.fx trace or assumed: no certificate)."""
    try:
        cell = resolve("params.cell")
        if cell == "relu_rnn":
            return resolve("params.B") * resolve("params.T") <= MAX_STEPS and resolve("params.H") <= MAX_H
        return cell in SMOOTH_CELLS
    except (KeyError, TypeError):
        return True


# ---------------------------------------------------------------------------------------------
# Hypotheses, each with its subject
# ---------------------------------------------------------------------------------------------

#: smooth by the cell's definition, or (ReLU) no state met by a Jacobian after the first step is 0, exactly;
#: a user's module (torch.fx trace, or assumed) is decided without a bound certificate, and says so
SMOOTH = HypothesisBinding("F differentiable in (z, theta)", (
    ProofRoute("predicate", CELL, HOLDS, {"predicate": "one_of", "literal": list(SMOOTH_CELLS), "value": True}, key="cell"),
    ProofRoute("predicate", {"M": RELU_STATES}, bd.by_value, {"predicate": "nonzero_entries"}, key="states")),
    certifiable_holds=_smooth_needs_certificate)
bd.ASSUMPTIONS["smooth"] = SMOOTH.name  # assume=["smooth"] (flowcert.rnn.smooth)
PLAIN_GD = bd.predicate("plain gradient descent, first order in eta", "equals", {"x": "protocol.descent"},
                        literal=PROTOCOL["descent"])
READOUT = bd.predicate("linear readout, W_out frozen, l = 1/2 ||W_out z + b_out - y*||^2", "equals",
                       {"x": "protocol.readout"}, literal=PROTOCOL["readout"])
ONCE = bd.predicate("each W_j used once per evaluation of f", "one_of", CELL, literal=list(CELLS))
GRAM_PSD = HypothesisBinding("K = (1/B) G G^T is positive semidefinite", (
    ProofRoute("symbolic_identity", {}, HOLDS, {"identity": "kpflow:gram_psd"}),))
OUTER_CONSTANT = bd.predicate("outer Jacobian D f^outer constant", "one_of", CELL, literal=list(CONSTANT_OUTER))
#: a user's module: its inner features read from torch's cells or its torch.fx graph (flowcert.rnn.structure), a
#: structural reading without a bound certificate, or unknown with the reason
STRUCTURE = HypothesisBinding("f = f^outer(W_j f_j^inner): structure of the cell known", certifiable_holds=False)
INVERTIBLE = HypothesisBinding("every A_t invertible", (
    ProofRoute("predicate", {"jacobians": JACOBIANS}, bd.by_value, {"predicate": "invertible_all"}),
    ProofRoute("invertible_float", {"jacobians": JACOBIAN_STACK}, HOLDS, {"value": True})))
#: records of the document's top-level ``certificates`` list (not hypotheses of an entry)
CONTRACTION = HypothesisBinding("common quadratic Lyapunov contraction", (ProofRoute("contraction", {"jacobians": JACOBIANS}, HOLDS),
                                                                  ProofRoute("contraction_float", {"jacobians": JACOBIAN_STACK},
                                                                        HOLDS)))
BOUNDED_REAL = HypothesisBinding("||P|| <= gamma (bounded-real lemma)", (ProofRoute("bounded_real", {"A": STATE_MATRIX}, HOLDS),))
RECORDS = {h.name: h for h in (CONTRACTION, BOUNDED_REAL)}

# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------

PROP_1 = Entry(
    "kpflow:prop-1", "Proposition 1 (eq. 5)",
    r"\partial_s z = -(\mathcal P\circ\mathcal K\circ\mathcal P^*)\,\mathrm{Err}",
    (SMOOTH, PLAIN_GD),
    correction="eq. 4 lacks d/dt; eq. 12 should read theta_{s+1} = theta_s - eta grad L; eq. 33 Phi(t, t0)")
COR_1 = Entry(
    "kpflow:cor-1", "Corollary 1 (eq. 6)",
    r"\partial_s y = -W_{\mathrm{out}}\,\mathcal P\mathcal K\mathcal P^*\,W_{\mathrm{out}}^\top (y-y^*)",
    (SMOOTH, PLAIN_GD, READOUT),
    correction="the proof (eq. 57) drops the minus sign; eq. 56 vs eq. 17 constants: l = 1/2||.||^2 used")
THM_1 = Entry(
    "kpflow:thm-1", "Theorem 1 (eq. 64)",
    r"\mathcal K=\sum_j\mathcal K_j\succeq0,\ \operatorname{rank}\mathcal K_j\le n_j\operatorname{rank}F_j;\ "
    r"\operatorname{rank}\operatorname{tr}_H\mathcal K_j=\operatorname{rank}F_j\text{ if }Df^{outer}\text{ is constant}",
    (ONCE, GRAM_PSD, OUTER_CONSTANT, STRUCTURE),
    optional=frozenset({ONCE.name, GRAM_PSD.name, OUTER_CONSTANT.name, STRUCTURE.name}),  # one of two forms: check()
    correction="'positive definite' -> semidefinite; part (3) holds only for a constant outer Jacobian "
               "(false for the torch RNN and GRU cells); the true general bound is rank K_j <= n_j rank F_j")
THM_2 = Entry(
    "kpflow:thm-2", "Theorem 2 (eqs. 70-74)",
    r"\mathcal P=\mathcal U\mathcal V\mathcal U^{-1},\ (\mathcal Uq)_t=U_tq_t,\ U_t=A_t\cdots A_1,\ "
    r"\sigma_j(\mathcal V)=\tfrac{2T}{(2j-1)\pi}",
    (INVERTIBLE,),
    correction="U is the multiplication operator by Phi(t,0) (not Phi(t,0)q(0)); eq. 74 includes J(0) (off by one); "
               "sigma_j(U) = exp(lambda_j t) only for normal constant Jacobians")

ENTRIES = (PROP_1, COR_1, THM_1, THM_2)
bd.register("rnn", *ENTRIES)


def _derived(name: str) -> Callable[[Any], Any]:
    return bd.derived_by("flowcert.rnn.subjects", name)


bd.DERIVED.setdefault("rnn", {}).update({JACOBIANS: _derived("jacobians_of"), STATE_MATRIX: _derived("state_matrix_of"),
                                         RELU_STATES: _derived("relu_states_of"),
                                         JACOBIAN_STACK: _derived("jacobian_stack_of")})
bd.COMPUTED.update({JACOBIANS, STATE_MATRIX, RELU_STATES, JACOBIAN_STACK})

# ---------------------------------------------------------------------------------------------
# Document-level rules of a ``kpflow analyze`` / ``verify rnn`` document
# ---------------------------------------------------------------------------------------------

_THM1_FORMS = ([ONCE.name, GRAM_PSD.name, OUTER_CONSTANT.name], [STRUCTURE.name],
               [GRAM_PSD.name, OUTER_CONSTANT.name, STRUCTURE.name])


def check(doc: Document) -> list[tuple[str, str]]:
    r"""Refusals ``(JSON path, reason)`` of an rnn document beyond its theorems' hypotheses: the four
    entries, in order, each once; the analysis ``protocol`` is flowcert's; Thm 1 reports one of its two forms (a built-in cell's three hypotheses, or a
    module's unknown structure); every record of the top-level ``certificates`` list is a declared one
    (:data:`RECORDS`), at most once, the contraction always, its certificate with the catalogue's subject
    (the generic re-check then re-derives it) and a ``holds`` exactly when it has one; and the Thm 2
    predictions ``certified_*`` are the values these certificates give:

    .. math:: \lambda_{\max}\le\log\rho,\quad \|\mathcal P_T\|_2\le\sqrt\kappa\textstyle\sum_{k<T}\rho^k,\quad
              \|\mathcal P_T\|_2\le\gamma .
    """
    out: list[tuple[str, str]] = []
    if "protocol" in doc and doc["protocol"] != PROTOCOL:
        out.append(("$.protocol", f"the analysis protocol of kpflow analyze is {PROTOCOL}"))
    theorems = doc.get("theorems") if isinstance(doc.get("theorems"), list) else []
    ids = [t.get("id") if isinstance(t, dict) else None for t in theorems]
    if theorems and ids != [e.id for e in ENTRIES]:
        out.append(("$.theorems", f"an rnn document reports {[e.id for e in ENTRIES]}, in this order, each once"))
    for i, t in enumerate(theorems):
        if isinstance(t, dict) and t.get("id") == THM_1.id and isinstance(t.get("hypotheses"), list):
            names = [h.get("name") for h in t["hypotheses"] if isinstance(h, dict)]
            if names not in _THM1_FORMS and not set(names) <= bd.ENGINE_HYPOTHESES:
                out.append((f"$.theorems[{i}].hypotheses", f"{THM_1.id} reports {_THM1_FORMS[0]} (a built-in cell), "
                                                           f"{_THM1_FORMS[2]} (a module whose structure is read) "
                                                           f"or {_THM1_FORMS[1]} (a module whose structure is unknown)"))
    records = doc.get("certificates")
    if records is None and not theorems:
        return out
    if not isinstance(records, list):
        return out + [("$.certificates", "a list of the contraction (and bounded-real) records")]
    found: dict[str, dict[str, Any]] = {}
    for j, r in enumerate(records):
        where = f"$.certificates[{j}]"
        spec = RECORDS.get(r.get("name")) if isinstance(r, dict) else None
        if spec is None or spec.name in found:
            out.append((f"{where}.name", f"not one of {sorted(RECORDS)} (each at most once)"))
            continue
        found[spec.name] = r
        cert = r.get("certificate")
        if r.get("status") not in ("holds", "unknown") or (r.get("status") == "holds") != (cert is not None):
            out.append((f"{where}.status", "holds exactly with its certificate, else unknown"))
        elif cert is not None:
            proof = spec.proof(cert.get("kind")) if isinstance(cert, dict) else None
            params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
            module = params.get("cell") == "module"  # no weights: unbound, said so
            if proof is None or (cert.get("subject") != dict(proof.subject) and not (module and "subject" not in cert)):
                out.append((f"{where}.certificate", f"{spec.name!r} is proved by a "
                                                    f"{'/'.join(p.kind for p in spec.proofs)} certificate with subject "
                                                    f"{dict(spec.proofs[0].subject)}"))
    if CONTRACTION.name not in found and theorems:
        out.append(("$.certificates", f"the {CONTRACTION.name!r} record is missing"))
    out += _predictions(doc, theorems, found)
    return out


def _predictions(doc: Document, theorems: list[Any], found: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The Thm 2 predictions certified by the contraction / bounded-real certificates, re-derived from them."""
    from ..certificates.rnn import propagation_bound

    want: dict[str, float] = {}
    try:
        c = (found.get(CONTRACTION.name) or {}).get("certificate")
        if isinstance(c, dict):
            rho = math.sqrt(float(Fraction(c["data"]["rho2"])))
            want["certified_lyapunov_upper"] = math.log(rho)
            want["certified_P_norm_bound"] = propagation_bound(rho, float(Fraction(c["data"]["kappa_upper"])),
                                                               int(doc["params"]["T"]))
        b = (found.get(BOUNDED_REAL.name) or {}).get("certificate")
        if isinstance(b, dict):
            want["certified_P_norm_bound_all_T"] = math.sqrt(float(Fraction(b["data"]["gamma2"])))
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return [("$.certificates", "certificate data from which the Thm 2 bounds cannot be computed")]
    out = []
    for i, t in enumerate(theorems):
        if not (isinstance(t, dict) and t.get("id") == THM_2.id and isinstance(t.get("prediction"), dict)):
            continue
        pred = t["prediction"]
        for key in ("certified_lyapunov_upper", "certified_P_norm_bound", "certified_P_norm_bound_all_T"):
            if pred.get(key) != want.get(key):
                out.append((f"$.theorems[{i}].prediction.{key}",
                            f"{pred.get(key)!r} is not the bound its certificate gives ({want.get(key)!r})"))
    return out


bd.EXTRA_CHECKS["rnn"] = check
