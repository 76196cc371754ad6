r"""``flowcert kpflow analyze``: the KPFlow catalogue (``kpflow:prop-1``, ``kpflow:cor-1``,
``kpflow:thm-1``, ``kpflow:thm-2``) evaluated on one model, with the identity residuals and the
effective ranks of K, P and PKP*; with ``consensus`` a consensus spectrum (true partial trace,
:mod:`flowcert.gpu.rnn.consensus`). A user's own torch cell (``cell(x_t, h_prev) -> h_t``) goes
through :mod:`flowcert.rnn.cell` to the same :func:`analyze_model`.

Statements (corrected as in note §2, §5):

* Prop. 1 (eq. 5): :math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}` (first order in η,
  plain GD, :math:`L=\frac1B\sum\ell`, :math:`\mathcal K=\frac1BGG^\top`).
* Cor. 1 (eq. 6): :math:`\partial_sy=-W_{out}\mathcal P\mathcal K\mathcal P^*W_{out}^\top(y-y^*)`, W_out frozen,
  :math:`\ell=\frac12\|W_{out}z+b_{out}-y^*\|^2` (the paper's eq. 57 drops the minus sign).
* Thm. 1: :math:`\mathcal K=\sum_j\mathcal K_j\succeq0` (semidefinite, not definite);
  :math:`\operatorname{rank}\mathcal K_j\le n_j\operatorname{rank}F_j` always; the hidden-consensus rank
  :math:`\operatorname{rank}\operatorname{tr}_H\mathcal K_j` equals :math:`\operatorname{rank}F_j` when the
  outer Jacobian is constant (eq. 8, HH, linear) and may exceed it otherwise (torch RNN, GRU):
  the paper's bound (3) is false there.
* Thm. 2: :math:`\mathcal P=\mathcal U\mathcal V\mathcal U^{-1}` with U the multiplication operator by
  :math:`U_t=A_t\cdots A_1` (needs invertible :math:`A_t`), :math:`\sigma_j(\mathcal V)` in closed form,
  Lyapunov exponents by QR.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..documents import header
from ..catalogue import CrossCheck, TheoremResult, hypothesis_record
from ..certificates import core
from ..gpu.rnn.work import THM2_BYTES  # trials of the Theorem 2 checks (torch-free module)
from ..limits import check_kpflow_cost
from ..papers import kpflow as cat
from ..records import Document, HypothesisRecord, JSONObject
from .params import RNNParams

if TYPE_CHECKING:
    import torch

    from ..gpu.rnn.identities import Prop1Check, StepRow

#: the catalogue entries this module evaluates (declared in :mod:`flowcert.papers.kpflow`)
THEOREM_IDS = ("kpflow:prop-1", "kpflow:cor-1", "kpflow:thm-1", "kpflow:thm-2")
EXACT_MAX = 1200  # dense references (SVD, partial traces) up to B*T*H = EXACT_MAX


class Model(TypedDict):
    """A built model (:func:`build_model`, or a user's cell in :func:`flowcert.rnn.cell.verify_cell`): the
    cell, its parameters θ, inputs ``x`` [B, T, I], targets ``y`` [B, T, O], the readout ``W_out``,
    ``b_out`` and the trajectory ``tr`` (:class:`flowcert.gpu.rnn.operators.Trajectory`)."""

    cell: Any
    theta: dict[str, torch.Tensor]
    x: torch.Tensor
    y: torch.Tensor
    W_out: torch.Tensor
    b_out: torch.Tensor
    tr: Any


class KPFlowDocument(Document, total=False):
    """The ``kpflow analyze`` document (:func:`analyze`): the header and ``params``, then the identities'
    residuals, the effective ranks of K, P and PKP*, the contraction records, the theorems, the operator
    mode, the analysis protocol and, where asked, the consensus spectrum."""

    identities: JSONObject
    effective_rank: JSONObject
    certificates: list[HypothesisRecord]
    operator_mode: str
    protocol: dict[str, str]
    consensus: JSONObject


def build_model(p: RNNParams) -> Model:
    """Cell, θ, inputs, targets, readout and trajectory of a parameter set (all float64)."""
    import torch

    from ..gpu.rnn import cells, tasks
    from ..gpu.rnn.operators import Trajectory

    cell, theta = cells.init_params(p.cell, p.H, p.I, g=p.g, seed=p.seed, dt=p.dt, bias=p.bias, noisy=p.noise > 0)
    if p.weights:
        theta.update({k: torch.tensor(np.asarray(v), dtype=torch.float64) for k, v in p.weights.items()})
    if p.A is not None:
        cell = cells.Cell(cell.kind, cell.H, cell.I, cell.dt, torch.tensor(np.asarray(p.A), dtype=torch.float64),
                          bias=cell.bias, noisy=cell.noisy)
    gen = torch.Generator().manual_seed(p.seed + 1)
    if p.task != "random":
        x, y = tasks.make_task(p.task, p.B, p.T, p.I, seed=p.seed + 1)
    else:
        x = torch.randn(p.B, p.T, p.I, generator=gen, dtype=torch.float64)
        y = torch.randn(p.B, p.T, 3, generator=gen, dtype=torch.float64)
    O = y.shape[-1]
    W_out = torch.randn(O, p.H, generator=gen, dtype=torch.float64) / math.sqrt(p.H)
    if p.cell == "hodgkin_huxley":
        W_out[:, p.H // 4:] = 0.0
        W_out = W_out / 30.0  # voltages are O(10-100) mV
    b_out = torch.zeros(O, dtype=torch.float64)
    if cell.noisy:
        x = cells.with_noise(x, p.H, p.noise, seed=p.seed + 2)
    tr = Trajectory.run(cell, theta, x, cells.initial_state(cell, p.B))
    return {"cell": cell, "theta": theta, "x": x, "y": y, "W_out": W_out, "b_out": b_out, "tr": tr}


#: A finite-difference row is above the rounding floor when its residual exceeds this many floors
#: (then rounding changes it by at most 1/ABOVE_FLOOR, and an observed order by at most about 0.05).
ABOVE_FLOOR = 8.0
#: Above this tolerance (relative) rounding alone could hide a broken identity: the check is not decided.
UNDECIDABLE_TOLERANCE = 1e-3


def _fd_agrees(rows: list[StepRow]) -> tuple[bool, str]:
    """First order where measurable, rounding elsewhere.

    A row is above the rounding floor when its residual exceeds :data:`ABOVE_FLOOR` times the
    measured floor (the floor of the dtype in use, :mod:`flowcert.gpu.rnn.identities`). The check
    agrees if no row is above it (trajectory affine in θ: the identity is exact), or if at least
    one pair of consecutive rows above it exists and the pair with the smallest η (the asymptotic
    one; larger steps may be pre-asymptotic) has observed order in [0.8, 1.2].
    """
    above = [r["residual"] > ABOVE_FLOOR * r["roundoff_floor"] for r in rows]
    if not any(above):
        return True, "residual at the rounding floor for every eta (first-order term exact)"
    orders = [math.log(a["residual"] / b["residual"]) / math.log(a["eta"] / b["eta"])
              for a, b, ua, ub in zip(rows, rows[1:], above, above[1:]) if ua and ub]
    if orders and 0.8 <= orders[-1] <= 1.2:
        return True, f"residual O(eta): observed orders {[round(o, 3) for o in orders]} above the rounding floor"
    return False, f"observed orders above the rounding floor: {[round(o, 3) for o in orders]}"


def _exact_tolerance(ident: Prop1Check) -> float:
    """Tolerance of the exact identities (jvp, gradient): from the dtype and size (identities.rounding);
    1e-9 for a document without it."""
    return float(ident.get("rounding", {}).get("tolerance", 1e-9))


def _predicate(hyp: Any, which: str, value: bool, subject: dict[str, str] | None, method: str, detail: str = "",
               margin: float | None = None, key: str | None = None, **arguments: Any) -> core.HypothesisResult:
    """``hyp`` decided by the exact predicate ``which`` of its subject, with its bound certificate (``subject``
    None: an unbound certificate about the data it carries)."""
    from ..certificates.predicates import predicate_certificate

    cert = predicate_certificate(which, value, subject, **arguments)
    if subject is None:
        return core.certified(hyp.name, "holds" if value else "fails", cert, margin, method, detail)
    return hyp.result("holds" if value else "fails", cert, margin, method, detail, key=key)


def _cell_predicate(hyp: Any, kind: str, kinds: tuple[str, ...], method: str, detail: str = "") -> core.HypothesisResult:
    """``hyp``: "the cell kind is one of ``kinds``" (exact ``one_of`` predicate of ``params.cell``)."""
    key = "cell" if hyp is cat.SMOOTH else None  # smoothness has a second predicate proof (the ReLU states)
    return _predicate(hyp, "one_of", kind in kinds, cat.CELL, method, detail, key=key, x=kind, literal=list(kinds))


def _protocol(hyp: Any, key: str, method: str) -> core.HypothesisResult:
    """``hyp``: the document's ``protocol.<key>`` is flowcert's (an ``equals`` predicate)."""
    value = cat.PROTOCOL[key]
    return _predicate(hyp, "equals", True, {"x": f"protocol.{key}"}, method, x=value, literal=value)


def smoothness(m: Model) -> core.HypothesisResult:
    """'F differentiable in (z, theta) along the trajectory': by construction for the smooth cells;
    for the ReLU cell, no state met by a Jacobian after the first step sits on a kink (exact zero test);
    for a user's module, not inspected (``unknown``)."""
    import torch

    name = cat.SMOOTH.name
    kind = getattr(m["cell"], "kind", "module")
    if kind == "module":
        return core.HypothesisResult(name, "unknown", None, "user module: smoothness not inspected", None,
                                     "the finite-difference order of Prop. 1 tests it empirically")
    if kind == "relu_rnn":
        zs = m["tr"].Z[:, :-1]
        kinks = int((zs == 0).sum())
        B, T, H = m["tr"].shape
        status, margin = "holds" if kinks == 0 else "fails", float(zs.abs().min()) if zs.numel() else None
        method = "exact test z_{t-1} != 0 for t >= 2 (ReLU is smooth off 0; z_0 is not perturbed)"
        if B * T <= cat.MAX_STEPS and H <= cat.MAX_H:  # certified: the states are a computed subject
            rows = _exact_rows(zs.reshape(-1, H).to(torch.float64).cpu().numpy()) if zs.numel() else []
            return _predicate(cat.SMOOTH, "nonzero_entries", kinks == 0, {"M": cat.RELU_STATES}, method,
                              f"{kinks} states on a kink", margin, key="states", M=rows)
        return core.HypothesisResult(name, status, margin, method, None, f"{kinks} states on a kink")
    return _cell_predicate(cat.SMOOTH, kind, cat.SMOOTH_CELLS, "cell definition (smooth activations)")


def prop_1(ident: Prop1Check, which: str = "prop1", smooth: core.HypothesisResult | None = None) -> TheoremResult:
    """Prop. 1 (``which="prop1"``) or Cor. 1 (``"cor1"``) from the finite-difference and exact residuals ``ident``."""
    rows = ident["fd"]
    ok, why = _fd_agrees(rows if which == "prop1" else [
        {**r, "residual": r["cor1_residual"], "roundoff_floor": r.get("cor1_roundoff_floor", r["roundoff_floor"])}
        for r in rows])
    tol = _exact_tolerance(ident)
    exact_ok = ident["prop1_jvp"] <= tol and ident["gradient"] <= tol
    if not exact_ok:
        why += f"; exact jvp/gradient residuals {ident['prop1_jvp']:.2e}, {ident['gradient']:.2e} above the tolerance {tol:.2e}"
    ok = ok and exact_ok
    status = "agrees" if ok else "disagrees"
    if tol > UNDECIDABLE_TOLERANCE:
        status, why = "skipped", (f"rounding tolerance {tol:.2e} of this run (dtype, size, sensitivity) exceeds "
                                  f"{UNDECIDABLE_TOLERANCE:g}: a broken identity could hide in it; " + why)
    hyps = [smooth or core.HypothesisResult(cat.SMOOTH.name, "unknown", None, "not decided by the caller", None),
            _protocol(cat.PLAIN_GD, "descent", r"the check takes plain GD steps $\theta-\eta\nabla L$")]
    if which == "prop1":
        return cat.PROP_1.result(
            hyps, {"dz_ds_norm": ident["flow_norm"], "normalisation": r"$L=\frac1B\sum_{b,t}\ell$, $\mathcal K=\frac1BGG^\top$, $P^*=P^\top$"},
            CrossCheck(status, {"fd": rows, "exact_jvp_residual": ident["prop1_jvp"], "gradient_residual": ident["gradient"],
                                "tolerance": tol, "rounding": ident.get("rounding"), "reference": ident.get("reference"),
                                "why": why}))
    hyps.append(_protocol(cat.READOUT, "readout", "analysis protocol"))
    return cat.COR_1.result(
        hyps, {"operator": r"$\Theta=W_{\mathrm{out}}P\mathcal KP^*W_{\mathrm{out}}^\top\succeq0$"},
        CrossCheck(status, {"fd": [{"eta": r["eta"], "residual": r["cor1_residual"],
                                    **({"roundoff_floor": r["cor1_roundoff_floor"]} if "cor1_roundoff_floor" in r else {})}
                                   for r in rows], "exact_jvp_residual": ident.get("cor1_jvp"), "tolerance": tol,
                            "reference": ident.get("reference"), "why": why}))


def thm_1(m: Model, exact_max: int = EXACT_MAX) -> TheoremResult:
    """Rank of each K_j against the effective dimension of the multiplied features F_j."""
    import torch

    from ..gpu.rnn.operators import parameter_operator
    from ..gpu.rnn.spectra import numerical_rank, partial_trace_dense

    tr = m["tr"]
    cell = m["cell"]
    B, T, H = tr.shape
    from ..certificates.identities import identity_certificate

    gram = cat.GRAM_PSD.result("holds", identity_certificate("kpflow:gram_psd"), None,
                               "Gram form (semidefinite, not definite as printed)")
    if getattr(cell, "kind", "module") == "module":
        from .structure import structure_of

        st = structure_of(cell.module, cell.parts)
        if isinstance(st, str):
            why = f"{st}; Thm 1 is decided once each weight's inner feature is known"
            return cat.THM_1.result([core.HypothesisResult(cat.STRUCTURE.name, "unknown", None,
                                                           "torch.fx graph of the cell (flowcert.rnn.structure)", None, why)],
                                    {}, CrossCheck("skipped", {"reason": f"inner features F_j unknown: {why}"}))
        const = bool(st.constant_outer)
        outer = core.HypothesisResult(cat.OUTER_CONSTANT.name, {True: "holds", False: "fails", None: "unknown"}[st.constant_outer],
                                      None, "structure of the cell (flowcert.rnn.structure)", None, st.outer_why)
        hyps = [gram, outer, core.HypothesisResult(cat.STRUCTURE.name, "holds", None, st.how, None,
                                                   r"$f=f^{\mathrm{outer}}(W_jf_j^{\mathrm{inner}})$, each $W_j$ used once: " + ", ".join(st.rows))]
        features, rows = st.features, st.rows
    else:
        const = cell.constant_outer()
        hyps = [_cell_predicate(cat.ONCE, cell.kind, cat.CELLS, "cell definition"), gram,
                _cell_predicate(cat.OUTER_CONSTANT, cell.kind, cat.CONSTANT_OUTER, "symbolic cell structure",
                                r"$f=f^{\mathrm{outer}}(W_jf_j^{\mathrm{inner}})$ with $f^{\mathrm{outer}}$ affine" if const
                                else r"$f^{\mathrm{outer}}$ contains tanh/sigmoid of $W_jf_j^{\mathrm{inner}}$: its Jacobian "
                                     "depends on the state")]
        from ..symbolic.rnn import param_shapes

        features = lambda z, x: cell.features(tr.theta, z, x)  # noqa: E731
        rows = {k: v[0] for k, v in param_shapes(cell.kind, cell.H, cell.I, cell.bias).items()}
    if tr.Z.numel() > exact_max:
        return cat.THM_1.result(hyps, {}, CrossCheck("skipped", {"reason": f"B*T*H = {tr.Z.numel()} > {exact_max}: dense partial traces too costly"}))
    feats = features(tr.Zprev.reshape(B * T, H), tr.x.reshape(B * T, -1))
    per, all_ok, paper_ok = {}, True, True
    for name, F in feats.items():
        Kj = parameter_operator(tr, only=[name]).dense()
        rF, gapF = numerical_rank(F)
        rK, gapK = numerical_rank(Kj)
        rC, gapC = numerical_rank(partial_trace_dense(Kj, (B, T, H), ["H"]))
        n_j = rows[name]
        full_bound = rK <= n_j * rF
        hidden = rC == rF if const else rC <= rF
        all_ok &= full_bound and (hidden or not const)
        paper_ok &= rC <= rF
        per[name] = {"rank_features": rF, "rank_K_j": rK, "rank_trH_K_j": rC, "rows_n_j": n_j,
                     "bound_rank_K_j_le_n_j_rank_F": full_bound, "paper_bound_trH_le_rank_F": rC <= rF,
                     "rank_gaps": {"F": gapF, "K_j": gapK, "trH_K_j": gapC}}
    return cat.THM_1.result(
        hyps,
        {"paper_bound_holds": paper_ok, "per_weight": per,
         "rank_definition": r"numerical rank, tolerance $\max(m,n)\,\varepsilon\,\sigma_1$ ($\varepsilon$ of the dtype in use); "
                            r"gap $\sigma_r/\sigma_{r+1}$"},
        CrossCheck("agrees" if all_ok else "disagrees",
                   {"constant_outer": const, "paper_bound_trH_K_j_le_rank_F_j": paper_ok,
                    "note": ("bound (3) holds with equality" if const else
                             ("bound (3) FAILS here: the hidden-consensus rank exceeds rank F_j" if not paper_ok
                              else "bound (3) happens to hold on this trajectory, but it is not implied"))}))


def _jacobian_chunks(tr: Any, P: Any, trials: int) -> Any:
    """(b0, J [b, T, H, H]) for consecutive chunks of ``trials`` trials, each formed once (recompute mode:
    the whole J would undo its O(BTH) memory)."""
    from ..gpu.rnn.operators import Trajectory, state_jacobians

    for b0 in range(0, tr.shape[0], trials):
        sl = slice(b0, b0 + trials)
        yield b0, state_jacobians(Trajectory(tr.cell, tr.theta, tr.x[sl], tr.h0[sl], tr.Z[sl]))


def thm_2(m: Model, kp: Any, exact_max: int = EXACT_MAX) -> tuple[TheoremResult, list[HypothesisRecord]]:
    """P = U V U^-1, Volterra spectrum, QR Lyapunov exponents, Kaplan–Yorke, LMI bounds.

    The factorisation is compared with P on the first trials that fit :data:`THM2_BYTES` (P is
    block-diagonal over trials), against the rounding bound of :func:`~flowcert.gpu.rnn.spectra.uvu_rounding_bound`
    in the dtype in use; where that bound is as large as the result (U_t too ill-conditioned, e.g. a
    contracting run whose products U_t lose rank numerically), the comparison is skipped, not failed.

    "every A_t invertible" and the CQLF contraction speak of every A_t of the run. Up to
    ``cat.MAX_STEPS`` / ``cat.MAX_H`` they are decided in exact rationals (each A_t in the certificate);
    above, when the float64 stack fits :data:`FLOAT_STACK_BYTES`, by rigorous binary64 error bounds on
    the stack named by its SHA-256 (:mod:`flowcert.certificates.rnn_float`: verified inverse, X from a
    Lyapunov solve or I with a shifted-Cholesky check); else ``unknown``. The path taken and its limits
    are ``cross_check.details.jacobian_checks``.
    """
    import torch

    from ..certificates import rnn as crnn
    from ..gpu.rnn.spectra import (fundamental, kaplan_yorke, lyapunov_qr, uvu_apply, uvu_rounding_bound,
                                   volterra_singular_values)

    tr, cell = m["tr"], m["cell"]
    B, T, H = tr.shape
    P = kp.P
    item = torch.finfo(tr.dtype).bits // 8
    bc = max(1, min(B, THM2_BYTES // (4 * T * H * H * item)))
    eps = float(torch.finfo(tr.dtype).eps)
    if P.J is not None:  # stored: all trials in one batched QR per step
        lams, Jc = lyapunov_qr(P.J).mean(0), P.J[:bc]
    else:
        lam_rows, Jc = [], None
        for b0, Jb in _jacobian_chunks(tr, P, bc):
            lam_rows.append(lyapunov_qr(Jb))
            if b0 == 0:
                Jc = Jb
        assert Jc is not None
        lams = np.concatenate(lam_rows, 0).mean(0)
    sv = torch.linalg.svdvals(Jc.reshape(-1, H, H).to(torch.float64))
    smin, smax = sv[:, -1], sv[:, 0]
    cond = float(torch.where(smin > 0, smax / smin, torch.inf).max())  # >= 1; inf when singular
    where = "" if bc == B else f" (the {bc} first of {B} trials)"
    exact_size = B * T <= cat.MAX_STEPS and H <= cat.MAX_H and bc == B  # certificates speak of every A_t of the run
    # a user's module: its weights are not in the document, so no certificate names the Jacobians as its
    # subject (recheck could not re-derive them): each proves its claim for the data it carries
    bindable = getattr(cell, "kind", "module") != "module"
    if exact_size:
        from ..certificates.predicates import PREDICATES

        Js = [_exact_rows(A) for A in Jc.reshape(-1, H, H).cpu().numpy()]
        inv = _predicate(cat.INVERTIBLE, "invertible_all", PREDICATES["invertible_all"][0]({"jacobians": Js}),
                         {"jacobians": cat.JACOBIANS} if bindable else None, "exact rational determinant of each $A_t$",
                         f"{len(Js)} Jacobians; max cond {cond:.3g}", float(smin.min()), jacobians=Js)
    stack = None if exact_size else _float_stack(tr, P)  # above the exact budget: rigorous float bounds
    if stack is not None:
        from ..certificates import rnn_float

        ref = rnn_float.register_stack(stack)
        inv = rnn_float.invertible_float(stack, ref)
        inv = cat.INVERTIBLE.bind(inv) if bindable else inv
    elif not exact_size:
        inv = core.HypothesisResult("every A_t invertible", "unknown", float(smin.min()), "float SVD (not rigorous)", None,
                                    f"smallest singular value {float(smin.min()):.3g}, max cond {cond:.3g}{where}; "
                                    rf"exact check only for $BT\le{cat.MAX_STEPS}$, $H\le{cat.MAX_H}$; the Jacobian stack "
                                    f"({B * T * H * H * 8} bytes) exceeds FLOAT_STACK_BYTES = {FLOAT_STACK_BYTES}")
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(tr.shape, generator=gen, dtype=torch.float64).to(dtype=tr.dtype, device=tr.device)
    res_uvu: float | None = None
    uvu_tol: float | None = None
    skip_why = None
    if inv.status == "fails" or not math.isfinite(cond):
        skip_why = "some A_t singular: U^{-1} does not exist (P itself is fine)"
    else:
        U = fundamental(Jc)
        qc = q[:bc]
        Pq = P(q)[:bc]
        bound = uvu_rounding_bound(Jc, U, qc)
        pn = float(Pq.norm())
        if not bound < 0.5 * pn:
            skip_why = (f"rounding bound {bound:.3g} of U V U^-1 q in {str(tr.dtype)[6:]} is not below half of ||P q|| = "
                        f"{pn:.3g}: U_t too ill-conditioned to test the factorisation numerically (P itself is fine)")
        else:
            try:
                res_uvu = float((uvu_apply(U, qc) - Pq).norm()) / pn
                uvu_tol = bound / pn
            except RuntimeError:  # singular U_t in this dtype
                skip_why = "some U_t singular in this dtype: U^{-1} does not exist numerically (P itself is fine)"
        del U
    disc, cont = volterra_singular_values(T, 1.0)
    Vd = torch.tril(torch.ones(T, T, dtype=torch.float64))
    vol_res = float(np.abs(torch.linalg.svdvals(Vd).numpy() - disc).max() / disc[0])
    ky = kaplan_yorke(lams)
    certs: list[HypothesisRecord] = []
    pred: JSONObject = {"lyapunov_exponents_per_step": lams.tolist(), "kaplan_yorke_dimension": ky,
                            "volterra_singular_values_first": disc[:5].tolist(),
                            "volterra_continuous_2T_over_(2j-1)pi": cont[:5].tolist()}
    P_norm = float(torch.linalg.matrix_norm(P.dense(torch.float64), 2)) if tr.Z.numel() <= exact_max else None
    details: JSONObject = {"uvu_relative_residual": res_uvu, "uvu_tolerance": uvu_tol, "uvu_trials": bc,
                               "volterra_max_rel_error": vol_res, "P_norm_2": P_norm}
    ok = (res_uvu is None or uvu_tol is None or res_uvu <= uvu_tol) and vol_res < 1e-12
    if skip_why is not None:
        details["uvu_skipped"] = skip_why
    # tolerances of the float comparisons below, from the dtype in use
    lam_tol = max(1e-12, 64 * H * eps)
    norm_tol = max(1e-9, 64 * T * H * eps)
    details["jacobian_checks"] = _decision_path(exact_size, stack is not None, B * T, H)
    if exact_size or stack is not None:
        if exact_size:
            hyp, info = crnn.contraction_rate(list(Jc.reshape(-1, H, H).cpu().numpy()))
        else:
            hyp, info = rnn_float.contraction_rate_float(stack, ref)
            del stack
        certs.append(hypothesis_record(cat.CONTRACTION.bind(hyp) if bindable else hyp))
        if info is not None:
            bound = crnn.propagation_bound(info["rho"], info["kappa"], T)
            pred["certified_lyapunov_upper"] = info["lyapunov_upper"]
            pred["certified_P_norm_bound"] = bound
            details["qr_exponent_below_certified_bound"] = bool(lams[0] <= info["lyapunov_upper"] + lam_tol)
            ok = ok and details["qr_exponent_below_certified_bound"] and (P_norm is None or P_norm <= bound * (1 + norm_tol))
        if getattr(cell, "kind", None) == "linear" and exact_size:
            hyp2, gamma = crnn.bounded_real_bound(cell.A.cpu().numpy())
            certs.append(hypothesis_record(cat.BOUNDED_REAL.bind(hyp2)))
            if gamma is not None:
                pred["certified_P_norm_bound_all_T"] = gamma
                ok = ok and (P_norm is None or P_norm <= gamma * (1 + norm_tol))
    else:
        certs.append(core.HypothesisResult("common quadratic Lyapunov contraction", "unknown", None, "CQLF LMI", None,
                                           rf"exact re-check budget: $H\le{cat.MAX_H}$ and $BT\le{cat.MAX_STEPS}$; the "
                                           f"float stack exceeds FLOAT_STACK_BYTES = {FLOAT_STACK_BYTES}").to_json())
    th = cat.THM_2.result([inv], pred, CrossCheck("agrees" if ok else "disagrees", details))
    return th, certs


#: above the exact budget, the Jacobians are checked with rigorous float bounds when their float64 stack
#: [B*T, H, H] fits this many bytes (the peer's GRU, B*T = 3,200, H = 128: 419 MB)
FLOAT_STACK_BYTES = 2**30


def _float_stack(tr: Any, P: Any) -> Any:
    """Every A_t of the run as one float64 array [B*T, H, H] (trial-major), or None above
    :data:`FLOAT_STACK_BYTES`; the stored Jacobians when P has them (no copy in float64)."""
    from ..certificates.rnn_float import as_stack
    from ..gpu.rnn.operators import state_jacobians

    B, T, H = tr.shape
    if B * T * H * H * 8 > FLOAT_STACK_BYTES:
        return None
    return as_stack(P.J if P.J is not None else state_jacobians(tr))


def _decision_path(exact: bool, rigorous: bool, steps: int, H: int) -> JSONObject:
    """Which path decided "every A_t invertible" and the contraction (Thm 2 details), and its limits."""
    if exact:
        return {"path": "exact_rational", "jacobians": steps, "H": H,
                "limits": rf"$BT\le{cat.MAX_STEPS}$ and $H\le{cat.MAX_H}$: every $A_t$ as exact rationals in the certificate; "
                          r"determinants and $LDL^\top$ pivots in rational arithmetic"}
    if rigorous:
        return {"path": "rigorous_float", "jacobians": steps, "H": H,
                "limits": "binary64 a-posteriori bounds (flowcert.certificates.rnn_float): gamma_n |A||B| for products, "
                          "verified inverse ||I - R A_t||_inf < 1, shifted Cholesky of rho^2 X - A_t^T X A_t; the subject "
                          "is the float64 Jacobians as computed (their forming error is not bounded; the proved "
                          "sigma_min and robust radius say how far the claims extend); the stack is named by its "
                          "SHA-256, re-derived from params by recheck (built-in cells) or read from memory / a side "
                          "file jacobians-<sha256>.npy (a user's module); X comes from a Lyapunov solve of the mean "
                          "Jacobian or is I: a failed check is unknown, never a weaker holds; IEEE round-to-nearest, "
                          "no fast matrix multiplication assumed"}
    return {"path": "none", "jacobians": steps, "H": H,
            "limits": f"above the exact budget and the float stack exceeds {FLOAT_STACK_BYTES} bytes: not decided"}


def _exact_rows(A: np.ndarray) -> list[list[str]]:
    """A float matrix as the exact ``"p/q"`` rationals its entries are."""
    from fractions import Fraction

    return [[str(Fraction(float(v))) for v in row] for row in A]


def analyze(p: RNNParams, *, mode: str = "stored", exact_max: int = EXACT_MAX, consensus: str | None = None,
            probes: int = 64, consensus_op: str = "PKP", typed: bool = False) -> KPFlowDocument:
    r"""The ``kpflow analyze`` document (see docs/design.md, "The command line and JSON contract"); a
    request whose predicted cost exceeds the limits (:func:`flowcert.limits.check_kpflow_cost`) is
    refused before anything is built. ``typed``: as :func:`analyze_model`.

    Parameters
    ----------
    p : RNNParams
        Validated rnn parameters (:func:`flowcert.rnn.params.load_rnn` / ``parse_rnn``): the cell,
        the sizes B, T, H, I, the task and the seed; the model is built from them (:func:`build_model`).
    mode : {"stored", "recompute"}, default "stored"
        How :math:`\mathcal P` gets its Jacobians: stored along the trajectory, or recomputed by
        jvp / vjp (``--mode``).
    exact_max : int, default EXACT_MAX
        Largest B*T*H with dense references (SVD of the effective ranks, partial traces of Thm 1,
        :math:`\|\mathcal P\|_2`); above it the ranks come from randomized sketches and the dense
        checks are skipped.
    consensus : str, optional
        Kept axes of a consensus spectrum (true partial trace over the others), e.g. ``"T"``,
        ``"H"``, ``"B"``, ``"TH"`` (``--consensus``); None: no consensus spectrum.
    probes : int, default 64
        Rademacher probes of the consensus estimator.
    consensus_op : {"PKP", "PP", "K"}, default "PKP"
        Operator of the consensus spectrum: :math:`\mathcal P\mathcal K\mathcal P^*`,
        :math:`\mathcal P\mathcal P^*` or :math:`\mathcal K`.
    typed : bool, default False
        ``theorems`` holds :class:`~flowcert.catalogue.TheoremResult` objects instead of their JSON
        records.

    Returns
    -------
    KPFlowDocument
        The document: the header (version, ``system: "rnn"``), ``params``, ``identities`` (Prop. 1
        and Cor. 1 finite differences, exact residuals, operator identities), ``effective_rank`` of
        K, P and PKP*, ``certificates``, ``theorems``, ``operator_mode``, ``protocol``, and with
        ``consensus`` the ``consensus`` spectrum.

    Raises
    ------
    flowcert.errors.InputError
        The predicted cost exceeds ``rnn:B*T*H``, ``rnn:cpu_seconds`` or ``rnn:bytes`` of
        :data:`flowcert.limits.LIMITS` (naming ``B`` or ``--consensus``), or the trajectory is not
        finite (diverged: lower g or dt).
    """
    import torch

    torch.set_num_threads(1)
    check_kpflow_cost(p.B, p.T, p.H, p.I, p.cell, mode=mode, consensus=consensus, probes=probes, op=consensus_op,
                      key="--consensus" if consensus is not None else "B")
    m = build_model(p)
    if not bool(torch.isfinite(m["tr"].Z).all()):
        from ..errors import InputError

        raise InputError("the trajectory is not finite (diverged); lower g or dt")
    return analyze_model(m, p.to_json(), mode=mode, exact_max=exact_max, seed=p.seed, consensus=consensus,
                         probes=probes, consensus_op=consensus_op, typed=typed)


def analyze_model(m: Model, params: JSONObject, *, mode: str = "stored", exact_max: int = EXACT_MAX,
                  seed: int = 0, consensus: str | None = None, probes: int = 64, consensus_op: str = "PKP",
                  smooth: core.HypothesisResult | None = None, typed: bool = False) -> KPFlowDocument:
    """The document of :func:`analyze` for a built model ``m`` (keys ``cell, tr, W_out, b_out, y``);
    ``smooth``: the verdict on "F differentiable" when the caller decided it (a user's cell:
    :mod:`flowcert.rnn.smooth`), else :func:`smoothness`. ``typed``: ``theorems`` holds the
    :class:`~flowcert.catalogue.TheoremResult` objects (encoded at the edge by
    :func:`flowcert.documents.plain`), else their JSON records."""
    from ..gpu.rnn.identities import operator_identities, prop1
    from ..gpu.rnn.operators import KPFlow
    from ..gpu.rnn.spectra import DEFINITION, effective_rank

    kp = KPFlow.build(m["tr"], mode)
    ident = prop1(kp, m["W_out"], m["b_out"], m["y"])
    ops = operator_identities(kp, seed=seed)
    ranks = {name: effective_rank(op, exact_max=exact_max) for name, op in (("K", kp.K), ("P", kp.P), ("PKP", kp.PKP))}
    from ..engine import evaluate

    certs: list[HypothesisRecord] = []

    def thm_2_with_records() -> TheoremResult:
        th2, records = thm_2(m, kp, exact_max)
        certs.extend(records)
        return th2

    smooth = smooth if smooth is not None else smoothness(m)
    builds = (lambda: prop_1(ident, smooth=smooth), lambda: prop_1(ident, "cor1", smooth=smooth),
              lambda: thm_1(m, exact_max), thm_2_with_records)
    # each entry through the one evaluator, in isolation (issue 44): an entry that raises is undecided alone
    theorems = [evaluate(e.id, e.label, build, seconds=None) for e, build in zip(cat.ENTRIES, builds)]
    doc: KPFlowDocument = {
        **header("rnn"), "params": params,
        "identities": {
            "prop1": {"name": "prop1", "statement": ident["statement"], "fd": ident["fd"],
                      "exact_jvp_residual": ident["prop1_jvp"], "gradient_residual": ident["gradient"],
                      "rounding": ident["rounding"], "reference": ident["reference"]},
            "cor1": {"name": "cor1", "fd": [{"eta": r["eta"], "residual": r["cor1_residual"]} for r in ident["fd"]]},
            **ops,
        },
        "effective_rank": {**ranks, "definition": DEFINITION},
        "certificates": certs,
        "theorems": theorems if typed else [t.to_json() for t in theorems],
        "operator_mode": mode,
        "protocol": dict(cat.PROTOCOL),
    }
    if consensus is not None:
        from ..gpu.rnn.consensus import consensus as consensus_spectrum

        doc["consensus"] = consensus_spectrum(kp, consensus_op, consensus, probes=probes, seed=seed)
    return doc


def analyze_cell(cell: Any, inputs: Any, **options: Any) -> Any:
    """A user's torch cell: :func:`flowcert.rnn.cell.analyze_cell` (kept here for old imports)."""
    from .cell import analyze_cell as run

    return run(cell, inputs, **options)
