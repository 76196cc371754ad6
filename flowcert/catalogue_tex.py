r"""TeX for the catalogue's plain-text names: hypotheses and prediction keys, as Markdown with ``$…$``.

The catalogue's JSON keeps plain text (``"8 ||B||_2 lambda_max(Sigma0) < 1"``, ``"Sigma_inf"``);
the report and the documentation show the same names as mathematics,
:math:`8\|B\|_2\,\lambda_{\max}(\Sigma_0)<1`, :math:`\Sigma_\infty`, from the two tables here:
:data:`HYPOTHESIS_TEX` (hypothesis ``name`` → Markdown with inline TeX) and :data:`QUANTITY_TEX`
(a key of a ``prediction`` or of a cross-check's ``details`` → Markdown with inline TeX). A name
without an entry is shown as it is (as code: an identifier); ``tests/test_report.py`` checks that
every name the report and the documented catalogue show has an entry, and that each entry renders
as MathML.

These tables are written next to the catalogue rather than inside it: they are meant to move
into the declarative catalogue entries (one ``tex`` field per hypothesis and per prediction key)
once those exist. They sit in the ``flowcert`` layer (not ``reports``) because the objects' own
notebook views (:mod:`flowcert.display`) show the same names; ``flowcert.reports.catalogue_tex``
re-exports them.
"""

from __future__ import annotations

__all__ = ["HYPOTHESIS_TEX", "QUANTITY_TEX", "hypothesis_tex", "quantity_tex"]

HYPOTHESIS_TEX: dict[str, str] = {
    # gaussian
    "activation_identity": r"activation is the identity, $\sigma(x)=x$",
    "Sigma0 >= 0": r"$\Sigma_0\succeq0$",
    "Sigma0 > 0": r"$\Sigma_0\succ0$",
    "coefficients_continuous": r"coefficients $A(t),B(t),V(t),b(t)$ continuous",
    "moment_closure_proved": r"moment closure of eq. (7) proved symbolically",
    "8 ||B||_2 lambda_max(Sigma0) < 1": r"$8\|B\|_2\,\lambda_{\max}(\Sigma_0)<1$",
    "V = eta I": r"$V=\eta I$",
    "eta(B + B^T) <= 0 and (H, A) detectable": r"$\eta(B+B^\top)\preceq0$ and $(H,A)$ detectable",
    "unstable count k of A certified": r"number $k$ of unstable eigenvalues of $A$ certified",
    "pd_equilibrium_exists": r"an equilibrium $\Sigma_\infty\succ0$ of eq. (18) exists",
    "linearisation_hurwitz": r"the linearisation of eq. (18) at the equilibrium is Hurwitz on $\mathrm{Sym}(d)$",
    "-V > 0": r"$-V\succ0$",
    "B > 0": r"$B\succ0$",
    "V > 0": r"$V\succ0$",
    "Re spec(A) > 0": r"$\operatorname{Re}\operatorname{spec}(A)>0$",
    "Re spec(A) < 0": r"$\operatorname{Re}\operatorname{spec}(A)<0$",
    "-(P V + V P) > 0 at Sigma_inf": r"$-(PV+VP)\succ0$ at $\Sigma_\infty$, $P=\Sigma_\infty^{-1}$",
    "-(A + A^T) >= 0": r"$-(A+A^\top)\succeq0$",
    "A + A^T >= 0": r"$A+A^\top\succeq0$",
    "tr Sigma0 > -alpha / beta": r"$\operatorname{tr}\Sigma_0>-\alpha/\beta$",
    "eta < 0": r"$\eta<0$",
    "eta > 0": r"$\eta>0$",
    "A + eta Sigma_inf B + eta I Hurwitz": r"$A+\eta\Sigma_\infty B+\eta I$ Hurwitz",
    "A has an eigenvalue with Re > 0": r"$A$ has an eigenvalue with $\operatorname{Re}\lambda>0$",
    # multistability
    "Assumption 1: V symmetric": r"Assumption 1: $V=V^\top$",
    "Assumption 1: lambda_1 simple": r"Assumption 1: $\lambda_1$ simple",
    "Assumption 1: lambda_1 > 0": r"Assumption 1: $\lambda_1>0$",
    "SymPy: Wdot + |(I-xx^T)Vx|^2 = -(x^T V x)^2 (1 - x^T x)":
        r"SymPy: $\dot W+\|(I-xx^\top)Vx\|^2=-(x^\top Vx)^2(1-x^\top x)$",
    "model (1): one constant head, full attention, unit sphere":
        r"model (1): one constant head, full attention, tokens on the unit sphere",
    "SymPy: Wdot + (1/n) sum|xdot_i|^2 = -(1/n) sum (x_i^T y)^2 (1 - |x_i|^2)":
        r"SymPy: $\dot W+\frac1n\sum_i\|\dot x_i\|^2=-\frac1n\sum_i(x_i^\top y)^2(1-\|x_i\|^2)$",
    "variant self_attention": r"variant: self-attention",
    "n even": r"$n$ even",
    # consensus
    "P > 0": r"$P\succ0$",
    "P = P^T > 0": r"$P=P^\top\succ0$",
    "P constant": r"$P$ constant",
    "h = 1": r"$h=1$",
    "U_eta = I": r"$U_\eta=I$",
    "full attention": r"full attention (no causal mask)",
    "gradient identity dV/dy_k = -Z_k P X_k proved": r"gradient identity $\partial V_P/\partial y_k=-Z_kPX_k$ proved",
    "tokens on E_P (W = P; erratum)": r"tokens on $\mathcal E_P$ ($W=P$, the corrected hypothesis)",
    "Vdot_P = -sum_k Z_k |ydot_k|_P^2 on E_P proved": r"$\dot V_P=-\sum_kZ_k\|\dot y_k\|_P^2$ on $\mathcal E_P$ proved",
    "sup_t |P_eta(t)| <= b": r"$\sup_t\|P_\eta(t)\|\le b$",
    "W = W^T > 0": r"$W=W^\top\succ0$",
    "P_eta uniformly continuous on t >= 0": r"$P_\eta$ uniformly continuous on $t\ge0$",
    "open hemisphere containing y_i(0) (SOCP witness v)":
        r"an open hemisphere contains every $y_i(0)$ (SOCP witness $v$)",
    "Dini derivative of max_i(1 - v^T y_i) <= 0 (per-term decomposition proved)":
        r"Dini derivative of $\max_i(1-v^\top y_i)$ is $\le0$ (per-term decomposition proved)",
    "causal attention": r"causal attention",
    "tokens on the unit sphere (W = I)": r"tokens on the unit sphere ($W=I$)",
    "adot = alpha (1 - a^2), V = (a-1)^2(a+2)/3, Vdot = -alpha (1-a^2)^2 proved":
        r"$\dot a=\alpha(1-a^2)$, $V=(a-1)^2(a+2)/3$, $\dot V=-\alpha(1-a^2)^2$ proved",
    "y_j(0) != -y_1(0) (j >= 2)": r"$y_j(0)\ne-y_1(0)$ for $j\ge2$",
    "consensus_locally_stable": r"consensus locally stable",
    "cascade identity (19) and input gain |y0 - a y|^2 = 1 - a^2 proved":
        r"cascade identity (19) and input gain $\|y_0-ay\|^2=1-a^2$ proved",
    "U constant": r"$U$ constant",
    "U symmetric, lambda_max(U) > 0 simple": r"$U=U^\top$, $\lambda_{\max}(U)>0$ simple",
    "bdot = alpha (lambda - y^T U y) b and the sum of squares proved":
        r"$\dot b=\alpha(\lambda-y^\top Uy)\,b$ and the sum of squares proved",
    "v^T y_i(0) of one strict sign for all i": r"$v^\top y_i(0)$ of one strict sign for all $i$",
    "identity (23) proved": r"identity (23) proved",
    # kpflow
    "F differentiable in (z, theta)": r"$F$ differentiable in $(z,\theta)$",
    "plain gradient descent, first order in eta": r"plain gradient descent, first order in $\eta$",
    "linear readout, W_out frozen, l = 1/2 ||W_out z + b_out - y*||^2":
        r"linear readout, $W_{\mathrm{out}}$ frozen, $\ell=\frac12\|W_{\mathrm{out}}z+b_{\mathrm{out}}-y^*\|^2$",
    "each W_j used once per evaluation of f": r"each $W_j$ used once per evaluation of $f$",
    "K = (1/B) G G^T is positive semidefinite": r"$\mathcal K=\frac1BGG^\top\succeq0$",
    "outer Jacobian D f^outer constant": r"outer Jacobian $Df^{\mathrm{outer}}$ constant",
    "every A_t invertible": r"every $A_t$ invertible",
}

QUANTITY_TEX: dict[str, str] = {
    # gaussian predictions
    "law": r"law $\rho_t$", "mu_dot": r"$\dot\mu$", "Sigma_dot": r"$\dot\Sigma$",
    "first_order_slope": r"first-order slope", "rank": r"$\operatorname{rank}\Sigma(t)$",
    "rank_basis": r"how $\operatorname{rank}\Sigma_0$ is known",
    "inertia": r"inertia of $\Sigma_0$", "reachable_set": r"reachable set", "construction": r"controls",
    "Sigma_inf": r"$\Sigma_\infty$", "P11_positive_definite": r"$P_{11}\succ0$", "spectrum": r"spectrum",
    "eigenvalues": r"eigenvalues (rows: $\operatorname{Re}$, $\operatorname{Im}$)", "paper": r"as printed",
    "corrected": r"corrected", "local_stability": r"local stability", "spectra": r"spectra",
    "M_inf": r"spectrum of $M_\infty$ (rows: $\operatorname{Re}$, $\operatorname{Im}$)", "J_s": r"spectrum of $J_s$ (rows: $\operatorname{Re}$, $\operatorname{Im}$)", "PV_plus_VP": r"eigenvalues of $PV+VP$",
    "J_s_abscissa": r"spectral abscissa of $J_s$", "Sigma": r"$\Sigma$", "Sigma_zero": r"$\Sigma=0$",
    "trace_bound": r"bound on $\operatorname{tr}\Sigma$", "y_star": r"$y^*$",
    "trace_inequality_36": r"trace inequality (36), corrected", "lambda_max(A + A^T)": r"$\lambda_{\max}(A+A^\top)$",
    "lambda_max(V)": r"$\lambda_{\max}(V)$", "lambda_min(B)": r"$\lambda_{\min}(B)$", "global": r"global claim",
    "mu_inf": r"$\mu_\infty$", "mu": r"$\mu(t)$", "paper_claim": r"as printed",
    "blowup_time_upper_bound": r"blow-up time $\le$",
    # gaussian cross-checks
    "variance_condition": r"$\max_t2\lambda_{\max}(\Sigma B^\top\Sigma B)$", "t": r"$t$", "t_end": r"$t_{\mathrm{end}}$",
    "T": r"$T$", "rank0": r"$\operatorname{rank}\Sigma_0$", "max_cond_Psi": r"$\max\kappa(\Psi)$",
    "liouville_residual": r"Liouville residual", "transport_residual": r"residual of $\Sigma=\Psi\Sigma_0\Psi^\top$",
    "numerical_ranks": r"numerical ranks of $\Sigma(t)$", "max_abs_real_part": r"$\max|\operatorname{Re}\lambda|$",
    "skew_residual_L^-1 M L": r"skew residual of $L^{-1}ML$", "target_rank": r"target rank",
    "mu_relative_error": r"relative error of $\mu(T)$", "Sigma_relative_error": r"relative error of $\Sigma(T)$",
    "Sigma_simulated": r"$\Sigma(t_{\mathrm{end}})$ simulated", "Sigma_predicted": r"$\Sigma_\infty$ predicted",
    "mu_simulated": r"$\mu(t_{\mathrm{end}})$ simulated", "mu_predicted": r"$\mu_\infty$ predicted",
    "max_abs_error": r"max. absolute error", "initial_distance": r"$\|\Sigma(0)-\Sigma_\infty\|$",
    "final_distance": r"$\|\Sigma(t_{\mathrm{end}})-\Sigma_\infty\|$",
    # multistability
    "equilibria": r"equilibria", "stable": r"stable", "tangent_spectrum_at_v_k": r"tangent spectrum at $v_k$",
    "oja_verdicts": r"verdict per eigenvector", "k": r"$k$", "verdict": r"verdict",
    "consensus_bipartite_points": r"consensus and bipartite points",
    "max_field_residual_at_points": r"$\max\|F(X)\|$ at those points", "consensus_v1": r"consensus at $v_1$",
    "consensus_vk_k>=2": r"consensus at $v_k$, $k\ge2$", "bipartite": r"bipartite", "stable_classes": r"stable classes",
    "unknown_classes": r"undecided classes", "n_classes": r"classes", "n1": r"$n_1$", "n2": r"$n_2$",
    "W_nonincreasing": r"$W$ non-increasing", "limit": r"limit", "a_k": r"$a_k$",
    "bipartite_rank_prediction": r"rank of $A$ at bipartite points", "eq8_residual": r"residual of eq. (8)",
    "per_eigenvector": r"per eigenvector", "a_k_zero_exact": r"$a_k=0$ exactly", "a_k_nonzero_certified": r"$a_k\ne0$ certified",
    "consensus_v1_certified": r"consensus at $v_1$, certified", "consensus_vk_unstable_certified": r"consensus at $v_k$ ($k\ge2$) unstable, certified",
    "corrected_vs_printed_9": r"inequality (9): corrected vs printed", "classes_checked": r"classes checked",
    "printed_wrong": r"printed form wrong on", "corrected_wrong": r"corrected form wrong on",
    "independent_of_QK": r"independent of $Q,K$", "max_|F_lemma8 - F_eq7|": r"$\max|F_{\text{Lemma 8}}-F_{\text{eq. 7}}|$",
    "max_|closed form - numeric tangent spectrum|": r"$\max|$closed form $-$ numerical tangent spectrum$|$",
    "polygonal": r"polygonal", "|f_beta - f_0|/beta at beta = 1e-2, 1e-3, 1e-4":
        r"$|f_\beta-f_0|/\beta$ at $\beta=10^{-2},10^{-3},10^{-4}$",
    "counts": r"counts", "stable_bipartite_at_interior_k": r"stable bipartite points at $1<k<d$",
    "stable_at_v_d_without_|lambda_d|>lambda_1": r"stable at $v_d$ without $\lvert\lambda_d\rvert>\lambda_1$",
    "certified": r"certified", "spectrum_error": r"spectrum error", "rows": r"rows", "tanh_a": r"$\tanh a$",
    "closed_form_stable": r"closed form: stable", "final_alignment_|x^T v1|": r"final $|x^\top v_1|$",
    "max_W_increase": r"largest increase of $W$", "max_Wdot_identity_residual": r"residual of the $\dot W$ identity",
    "max_eq8_residual": r"largest residual of eq. (8)", "ratios": r"$|f_\beta-f_0|/\beta$",
    "wilson": r"Wilson 95% interval", "fraction": r"fraction", "reached_certified_unstable": r"reached a certified unstable point",
    # consensus
    "projection": r"projection onto $T\mathcal E_P$", "metric": r"metric", "V_P": r"$V_P$", "gradient": r"gradient",
    "V_P_non_increasing": r"$V_P$ non-increasing", "V_P_lower_bound": r"lower bound of $V_P$",
    "V_P_minimum_iff_consensus": r"$V_P$ minimal iff consensus", "b": r"$b$", "K": r"$K$", "c1": r"$c_1$",
    "c2_paper": r"$c_2$ (paper)", "c2_sharp": r"$c_2$ (sharp)", "log_c1": r"$\log c_1$", "log_c2_paper": r"$\log c_2$ (paper)",
    "statement": r"statement", "f_i_bounded": r"$f_i$ bounded", "f_i_uniformly_continuous": r"$f_i$ uniformly continuous",
    "v": r"$v$", "sup_f_bound": r"bound on $\sup\|f_i\|$", "hemisphere_witness": r"hemisphere witness $v$",
    "hemisphere_invariant": r"hemisphere invariant", "V_max_non_increasing": r"$\max_i(1-v^\top y_i)$ non-increasing",
    "applied_to": r"applied to", "a2_limit": r"$\lim a_2$", "V_token2_non_increasing": r"$V$ of token 2 non-increasing",
    "lambda": r"$\lambda$", "invariant": r"invariant set", "domain": r"domain of attraction",
    "transverse_eigenvalues": r"transverse eigenvalues", "limit_point": r"limit point", "token_1_fixed": r"token 1 fixed",
    "independent_of_P": r"independent of $P$", "min_alpha": r"$\min\alpha_{ij}$", "max_alpha": r"$\max\alpha_{ij}$",
    "log_min_alpha": r"$\log\min\alpha_{ij}$", "log_max_alpha": r"$\log\max\alpha_{ij}$", "sup_f": r"$\sup\|f_i\|$",
    "V_P_initial": r"$V_P$ at $t=0$", "V_P_final": r"$V_P$ at the end", "E_paper_final": r"$E$ (eq. 25) at the end",
    "E_signed_final": r"signed $E$ at the end", "a2_initial": r"$a_2(0)$", "a2_final": r"$a_2$ at the end",
    "b_final": r"$b$ at the end", "min_v_y": r"$\min_i v^\top y_i$", "max_dini_derivative": r"largest Dini derivative",
    "token_1_motion": r"motion of token 1", "max_distance_to_y1_0": r"$\max_i\|y_i-y_1(0)\|$ at the end",
    "max_distance_to_limit": r"largest distance to the limit", "beta": r"$\beta$", "E": r"$E$",
    # kpflow
    "dz_ds_norm": r"$\|\partial_sz\|$", "H": r"$H$", "cor1_roundoff_floor": r"rounding floor of Cor. 1",
    "reference": r"function evaluated in", "jacobian_checks": r"checks of the Jacobians $A_t$",
    "jacobians": r"Jacobians $A_t$", "limits": r"limits", "path": r"decision path", "normalisation": r"normalisation", "operator": r"operator",
    "paper_bound_holds": r"paper's bound holds", "per_weight": r"per weight", "rank_definition": r"rank definition",
    "rank_K_j": r"$\operatorname{rank}\mathcal K_j$", "rank_features": r"$\operatorname{rank}F_j$",
    "rank_trH_K_j": r"$\operatorname{rank}\operatorname{tr}_H\mathcal K_j$", "rows_n_j": r"$n_j$",
    "bound_rank_K_j_le_n_j_rank_F": r"$\operatorname{rank}\mathcal K_j\le n_j\operatorname{rank}F_j$",
    "paper_bound_trH_le_rank_F": r"$\operatorname{rank}\operatorname{tr}_H\mathcal K_j\le\operatorname{rank}F_j$",
    "paper_bound_trH_K_j_le_rank_F_j": r"$\operatorname{rank}\operatorname{tr}_H\mathcal K_j\le\operatorname{rank}F_j$",
    "rank_gaps": r"rank gaps $\sigma_r/\sigma_{r+1}$", "K_j": r"$\mathcal K_j$", "trH_K_j": r"$\operatorname{tr}_H\mathcal K_j$",
    "F": r"$F_j$", "W": r"$W$", "W_in": r"$W_{\mathrm{in}}$",
    "certified_lyapunov_upper": r"certified bound on the top Lyapunov exponent", "kaplan_yorke_dimension": r"Kaplan–Yorke dimension",
    "certified_P_norm_bound": r"certified bound on $\|\mathcal P\|$",
    "lyapunov_exponents_per_step": r"Lyapunov exponents per step",
    "volterra_singular_values_first": r"first singular values of the Volterra operator",
    "volterra_continuous_2T_over_(2j-1)pi": r"continuous limit $2T/((2j-1)\pi)$", "eta": r"$\eta$",
    "residual": r"residual", "cor1_residual": r"residual of Cor. 1", "observed_order": r"observed order in $\eta$",
    "gradient_residual": r"gradient residual", "roundoff_floor": r"rounding floor", "exact_jvp_residual": r"exact JVP residual",
    "fd": r"finite-difference steps", "volterra_max_rel_error": r"largest relative error (Volterra)",
    "uvu_relative_residual": r"relative residual of $\mathcal P=\mathcal U\mathcal V\mathcal U^{-1}$",
    "P_norm_2": r"$\|\mathcal P\|_2$", "qr_exponent_below_certified_bound": r"QR exponent below the certified bound",
    "constant_outer": r"constant outer Jacobian",
    "uvu_tolerance": r"tolerance of $\mathcal P=\mathcal U\mathcal V\mathcal U^{-1}$",
    "uvu_trials": r"trials compared for $\mathcal P=\mathcal U\mathcal V\mathcal U^{-1}$",
    # the rounding floor of a cross-check in the dtype used (issue 33 item 6)
    "rounding": r"rounding", "dtype": r"dtype", "eps": r"machine $\varepsilon$ of the dtype", "floor": r"rounding floor",
    "sensitivity": r"sensitivity", "terms": r"terms", "definition": r"definition",
    # words: protocol and bookkeeping of the cross-checks
    "activation": r"activation", "certificate": r"certificate", "tolerance": r"tolerance", "criterion": r"criterion",
    "integrator": r"integrator", "seed": r"seed", "drift": r"drift off the manifold", "checked": r"checked",
    "max_residual": r"largest residual", "agrees_with_lemma": r"agrees with the lemma", "check": r"check",
    "max_difference": r"largest difference", "samples": r"samples", "protocol": r"protocol", "outcomes": r"outcomes",
    "label": r"limit", "count": r"count", "max_drift": r"largest drift off the manifold", "random patterns": r"random patterns",
    "tangency_residual": r"tangency residual", "g_orthogonality_residual": r"$g$-orthogonality residual", "trials": r"trials",
    "relative_error": r"relative error", "largest_increase": r"largest increase", "scale": r"scale",
    "non_increasing": r"non-increasing", "spread_final": r"spread at the end", "final_speed": r"speed at the end",
    "limit_class": r"limit class", "basis": r"basis", "classes": r"classes", "settled": r"settled", "clusters": r"clusters",
    "cluster_sizes": r"cluster sizes", "t_final": r"$t$ at the end", "manifold_drift": r"drift off the manifold",
    "ok": r"passed", "message": r"integrator message", "bound": r"bound", "max_difference_quotient": r"largest difference quotient",
    "V_max": r"$\max_i(1-v^\top y_i)$", "V_token2": r"$V$ of token 2", "closed_form_error": r"error of the closed form",
    "V_plus_token1": r"$V_+$ of token 1", "V_plus_token2_largest_increase": r"largest increase of $V_+$ of token 2",
    "why": r"why", "note": r"note", "reason": r"reason",
    # the Prop. 2.1 particle study
    "N": r"$N$", "error": r"moment error", "rate": r"fitted rate", "seeds": r"seeds",
    "relative_error_largest_N": r"relative error at the largest $N$", "rate_tolerance": r"rate tolerance",
    "rate_stderr": r"standard error of the rate", "discretisation_error": r"discretisation error",
}


def hypothesis_tex(name: str) -> str | None:
    """Markdown (inline TeX) of a hypothesis name, or None when the table has none."""
    return HYPOTHESIS_TEX.get(name)


def quantity_tex(key: str) -> str | None:
    """Markdown (inline TeX) of a prediction or cross-check key, or None when the table has none."""
    return QUANTITY_TEX.get(key)
