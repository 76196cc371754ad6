r"""Report section for the consensus paper (Rodríguez Abella, Silvestre, Tabuada, *The asymptotic
behavior of attention in transformers*): SymPy derivations of the Lyapunov functions, consensus
linearisations, the §7.1–7.4 reproductions with the printed matrices, the stable non-consensus
tetrahedron, and the catalogue verdicts.

Model (7): :math:`\dot y_i=\sum_\eta\sum_j\alpha^\eta_{ij}(U_\eta y_j-(y_i^\top WU_\eta y_j)y_i)`, attention
rows summing to :math:`1/\sqrt{n+1}`.

``section(out, quick=...)`` follows the report contract; ``full=True`` (``python -m
flowcert.reports.consensus OUT --full``) runs §7.4 at the paper's size (50 tokens in
:math:`\mathbb R^{500}`, two heads, causal).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp

from ..outputs import make_folder
from ..attention import consensus as cat
from ..attention import parse
from ..numeric.attention import consensus as num
from ..symbolic.attention import consensus as sym
from .common import Section, cell_math, plain
from .figures import new_figure, save_figure, subplots

TITLE = "The asymptotic behaviour of attention: consensus (Rodríguez Abella, Silvestre, Tabuada)"
INTEGRATOR = "scipy DOP853 (rtol 1e-9, atol 1e-11) on the manifold with retraction $\\pi_W$ at every output"


def _fmt(x: float, digits: int = 4) -> str:
    if x is None or not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.{digits - 1}e}"


def _decay_rate(t: np.ndarray, y: np.ndarray, lo: float = 1e-8, hi: float = 1e-2) -> float | None:
    """Slope of -log y over the window lo < y < hi before y first drops below lo (the integration
    floor), by least squares; None if the window has fewer than 5 samples."""
    below = np.flatnonzero(y <= lo)
    end = below[0] if below.size else y.size
    m = (y > lo) & (y < hi) & (np.arange(y.size) < end)
    if m.sum() < 5:
        return None
    return float(-np.polyfit(t[m], np.log(y[m]), 1)[0])


def _proofs_section(quick: bool) -> list[str]:
    t0 = time.perf_counter()
    proofs = sym.all_proofs(slow=not quick)
    secs = time.perf_counter() - t0
    lines = ["### Derivations (SymPy)", "",
             "Each identity is reduced to 0 by SymPy (on-sphere identities modulo $|y|^2-1$ with a Gröbner basis); "
             "the sign arguments are the factorisations shown.", "",
             "| identity | residual |", "|---|---|"]
    for p in proofs:
        lines.append(f"| {cell_math(p.latex)} | {'0 (proved)' if p.proved else 'NONZERO'} |")
    lines += ["", f"{len(proofs)} identities in {secs:.1f} s"
              + ("" if not quick else " (the tetrahedron power sums run in the full report)") + ".", "",
              "Signs: on $\\mathcal E_P$, $\\dot V_P=-\\sum_kZ_k|\\dot y_k|_P^2\\le0$ ($Z_k>0$, $P\\succ0$); "
              "$V(a)=\\tfrac13(a-1)^2(a+2)\\ge0$ on $[-1,1]$ with $\\dot V=-\\tilde\\alpha(1-a^2)^2$; "
              "$\\lambda-y^\\top Uy=\\sum_k(\\lambda-\\mu_k)(q_k^\\top y)^2\\ge0$; for an active $i$ in the hemisphere, "
              "$v^\\top y_j-(y_i^\\top Wy_j)v^\\top y_i=(v^\\top y_j-v^\\top y_i)+v^\\top y_i(1-y_i^\\top Wy_j)\\ge0$.", ""]
    return lines


def _linearisation_section() -> list[str]:
    lines = ["### Linearisations at consensus", "",
             "Tangent Jacobians of the scalarised field (7) at a consensus point, with symbolic $P$ (entries free "
             "symbols), computed by SymPy, against the closed forms:", "",
             "| setting | SymPy eigenvalues | closed form |", "|---|---|---|"]
    cases = [("full", 3, 2, 1, "full, $\\ell=3$, $d=2$, $h=1$"), ("full", 2, 3, 2, "full, $\\ell=2$, $d=3$, $h=2$"),
             ("causal", 4, 2, 1, "causal, $\\ell=4$, $d=2$, $h=1$"), ("thm6.1", 3, 2, 1, "Thm 6.1, $\\ell=3$, $d=2$")]
    for kind, ell, dim, h, label in cases:
        _, ev = sym.consensus_linearisation(kind, ell, dim, h)
        got = ", ".join(f"${sp.latex(k)}$" + (f" (×{m})" if m > 1 else "") for k, m in ev.items())
        if kind == "full":
            want = f"$0$, ${sp.latex(sym.full_consensus_eigenvalue(h, dim))}$"
        elif kind == "causal":
            want = ", ".join(f"${sp.latex(sym.causal_consensus_eigenvalue(h, dim, i))}$" for i in range(1, ell + 1))
        else:
            mu, lam = sp.Symbol("mu_2"), sp.Symbol("lambda")
            want = ", ".join(f"${sp.latex(sym.theorem_6_1_eigenvalue(mu, lam, dim, i))}$" for i in range(1, ell + 1))
        lines.append(f"| {label} | {got} | {want} |")
    lines += ["", "So consensus is locally exponentially stable with transverse rate $h/\\sqrt{n+1}$ (full), "
              "$h(i-1)/(i\\sqrt{n+1})$ (causal, token $i$) and $(\\mu_k-i\\lambda)/(i\\sqrt{n+1})$ at $(v,\\dots,v)$ (Thm 6.1), "
              "independent of $P$. "
              "The catalogue certifies the rational transverse matrices exactly (Lyapunov certificate, exact $LDL^\\top$ re-check).", ""]
    return lines


def _sphere_axes(ax: Any, W: np.ndarray | None) -> None:
    """Wireframe of the manifold {y^T W y = 1} (the unit sphere for W = None)."""
    u, v = np.mgrid[0:2 * np.pi:30j, 0:np.pi:15j]
    S = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], axis=-1)
    if W is not None:
        w, Q = np.linalg.eigh(W)
        S = S @ (Q @ np.diag(w ** -0.5) @ Q.T)
    ax.plot_wireframe(S[..., 0], S[..., 1], S[..., 2], color="0.85", lw=0.4)
    ax.set_box_aspect((1, 1, 1))
    ax.set_axis_off()


def _figure(name: str, out: Path, run: Any, lyap: np.ndarray | None, lyap_label: str, title: str,
            W: np.ndarray | None = None) -> str:
    fig = new_figure(ncols=3)
    X = run.X
    if X.shape[2] == 3:
        ax = fig.add_subplot(1, 3, 1, projection="3d")
        _sphere_axes(ax, W)
        for i in range(X.shape[1]):
            ax.plot(X[:, i, 0], X[:, i, 1], X[:, i, 2], lw=1, label="tokens $y_i(t)$" if i == 0 else "_nolegend_")
            ax.scatter(*X[0, i], s=8, color="k", label="$y_i(0)$" if i == 0 else "_nolegend_")
        ax.scatter(*X[-1, 0], s=40, color="r", marker="*", label="end of token 1")
        ax.legend(loc="upper left", borderaxespad=0.0)
        ax.set_title("trajectories")
    else:
        ax = fig.add_subplot(1, 3, 1)
        lines = ax.semilogy(run.t, np.maximum(np.linalg.norm(X - X[:, :1], axis=2)[:, 1:], 1e-16), lw=0.8)
        for i, ln in enumerate(lines):
            ln.set_label(f"$i = 2, …, {X.shape[1]}$" if i == 0 else "_nolegend_")
        ax.legend()
        ax.set_xlabel("t")
        ax.set_ylabel(r"$|y_i(t)-y_1(t)|$")
        ax.set_title("distance to token 1")
    ax2 = fig.add_subplot(1, 3, 2)
    if lyap is not None:
        ax2.plot(run.t, lyap, lw=1)
        ax2.set_xlabel("t")
        ax2.set_ylabel(lyap_label)
        ax2.set_title("Lyapunov function")
    ax3 = fig.add_subplot(1, 3, 3)
    floor = 1e-16
    ax3.semilogy(run.t, np.maximum(num.paper_measure(X), floor), label="E (paper, eq. 25)")
    ax3.semilogy(run.t, np.maximum(num.signed_measure(X), floor), "--", label=r"$E_\pm$ (signed)")
    ax3.semilogy(run.t, np.maximum(num.spread(X), floor), ":", label="spread")
    ax3.set_xlabel("t")
    ax3.set_ylabel("measure (floor $10^{-16}$)")
    ax3.legend()
    ax3.set_title("consensus measures")
    fig.suptitle(title)
    save_figure(fig, out / name)
    return name


def _example(key: str, out: Path, fig_name: str, label: str, lyap_kind: str) -> tuple[list[str], list[dict], str]:
    raw = cat.paper_examples()[key]
    p = parse(raw)
    results, run = cat.theorems_with_run(p, simulate=True, seed=p.seed)
    s = cat.setting(p)
    rec = {r.id: r for r in results}
    lines: list[str] = []
    if lyap_kind == "V_P":
        ly = num.V_P(run.X, np.asarray(s.P[0], float))
        lab = r"$V_P(t)$"
        extra = f"$V_P$: {_fmt(float(ly[0]), 6)} → {_fmt(float(ly[-1]), 8)} (global minimum $-\\ell^2e/2$ = {_fmt(num.V_P_minimum(s.ell), 8)})"
        predicted = 1.0 / math.sqrt(s.d) * s.h
    elif lyap_kind == "V_max":
        v = np.array(rec["consensus:thm-4.1"].prediction["hemisphere_witness"])
        ly = num.V_max(run.X, v)
        lab = r"$\max_i(1-v^\top y_i)$"
        extra = f"hemisphere witness $v$ = ({', '.join(_fmt(x, 5) for x in v)}), re-checked exactly"
        predicted = s.h / math.sqrt(s.d)
    elif lyap_kind == "V_plus":
        lim = np.array(rec["consensus:thm-6.1"].prediction["limit_point"])
        ly = num.V_plus(run.X, lim)[:, :2]
        lab = r"$V_+=1-v^\top y_i$, tokens 1 and 2"
        extra = (f"limit $v$ = ({', '.join(_fmt(x, 5) for x in lim)}), the top eigenvector of $U$; "
                 f"largest increase of $V_+$ for token 1: {_fmt(num.largest_increase(ly[:, 0]), 3)}, "
                 f"for token 2: {_fmt(num.largest_increase(ly[:, 1]), 3)} (token 2 may increase transiently)")
        w = np.linalg.eigvalsh(np.asarray(s.U[0], float))
        predicted = (w[-1] - w[-2]) / math.sqrt(s.d)
    else:  # causal U = I
        ly = num.V_causal(run.X, run.X[0, 0])[:, 1:]
        lab = r"$V(a_i)$, $a_i=y_1^\top y_i$"
        extra = f"token 1 moved {_fmt(float(np.abs(run.X[:, 0] - run.X[0, 0]).max()), 2)}"
        predicted = s.h / (2 * math.sqrt(s.d))
    rate = _decay_rate(run.t, num.spread(run.X))
    name = _figure(fig_name, out, run, ly, lab, label, p.W)
    inc = num.largest_increase(ly if ly.ndim == 1 else ly[:, 0])
    caption = (f"{label}. Protocol: parameter file `tests/data/attention/consensus_{key}.json` "
               f"(ℓ = {s.ell}, d = {s.d}, h = {s.h}, {'causal' if p.causal else 'full'}, rows sum to $1/\\sqrt{{{s.d}}}$, seed {p.seed}), "
               f"horizon {_fmt(float(run.t[-1]))}, {INTEGRATOR}, {run.t.size} samples; manifold drift {_fmt(run.drift, 2)}. "
               f"Claims: the Lyapunov function never increases by more than {_fmt(inc, 3)} (scale {_fmt(num.scale_of(ly), 3)}); "
               f"final spread {_fmt(float(num.spread(run.X[-1])), 3)}.")
    lines += [f"![{caption}]({name})", "",
              f"- Largest step increase of the Lyapunov function: {_fmt(inc, 3)} (scale {_fmt(num.scale_of(ly), 3)}). {extra}.",
              f"- Final spread {_fmt(float(num.spread(run.X[-1])), 3)}, paper's $E$ {_fmt(float(num.paper_measure(run.X[-1])), 3)}, "
              f"signed $E_\\pm$ {_fmt(float(num.signed_measure(run.X[-1])), 3)}; measured decay rate of the spread "
              f"{_fmt(rate) if rate else 'n/a'} against the slowest transverse rate {_fmt(predicted)} of the linearisation.", ""]
    return lines, [r.to_json() for r in results], name


def _fig5_full(out: Path, quick: bool, full: bool) -> tuple[list[str], list[str]]:
    """§7.4 at full size (50 tokens in R^500, h = 2, causal, T = 300) or reduced: several draws
    integrated together by the batched torch RK4 with retraction (:func:`flowcert.gpu.attention.simulate`)."""
    import torch

    from ..gpu import attention as ga
    from ..numeric.attention.field import causal_mask
    from ..symbolic.attention import Structure

    torch.set_num_threads(1)
    n, d, T, seeds = (50, 500, 300.0, 3) if full else ((8, 6, 150.0, 3) if quick else (12, 20, 300.0, 5))
    dt = 0.2
    steps = int(round(T / dt))
    draws = [cat.fig5_parameters(n, d, 2, seed=100 + k) for k in range(seeds)]
    eye = torch.eye(d, dtype=torch.float64).expand(seeds, d, d)
    mask = torch.as_tensor(causal_mask(n))
    Pp = [torch.as_tensor(np.stack([f.Pp[e] for f in draws])) for e in range(2)]
    w = [torch.as_tensor(np.stack([f.w[e] for f in draws])) for e in range(2)]
    phi = [torch.as_tensor(np.stack([f.phi[e] for f in draws])) for e in range(2)]

    def args(t: float) -> list:
        out = []
        for e in range(2):
            D = torch.abs(2 * torch.sin(w[e] * t + phi[e]))  # (seeds, d): (D_eta)_jj
            out += [eye, D[..., None] * Pp[e], eye]
        return out + [mask]

    X0 = torch.as_tensor(np.stack([f.X0 for f in draws]))
    every = max(1, steps // 300)
    tr = ga.simulate(Structure(heads=2, normalization="sqrt", causal=True), X0, args, T, steps, record_every=every)
    path = tr.path.numpy()  # (m, seeds, n, d)
    ts = np.asarray(tr.times)
    drift = tr.max_drift
    Es = [num.paper_measure(path[:, k]) for k in range(seeds)]
    Ss = [num.signed_measure(path[:, k]) for k in range(seeds)]
    moved = float(np.abs(path[:, :, 0] - path[:1, :, 0]).max())
    fig, ax = subplots()
    for E, S in zip(Es, Ss):
        ax.semilogy(ts, np.maximum(E, 1e-16), lw=1, color="C0")
        ax.semilogy(ts, np.maximum(S, 1e-16), "--", lw=1, color="C1")
    ax.plot([], [], color="C0", label="E (paper)")
    ax.plot([], [], "--", color="C1", label=r"$E_\pm$")
    ax.legend()
    ax.set_xlabel("t")
    ax.set_ylabel(r"$E$ and $E_\pm$ (one run per seed)")
    name = "consensus_fig5.png"
    size = "full size" if full else "reduced size"
    cap = (f"Figure 5 ({size}): causal, two heads, ℓ = {n}, d = {d}, $P_\\eta(t)=D_\\eta(t)P'_\\eta$ with "
           f"$(D_\\eta)_{{jj}}=|2\\sin(w_jt+\\phi_j)|$, $P'\\sim U(-1/2,1/2)$, $w\\sim U(0,1)$, $\\phi\\sim U(0,2\\pi)$ per entry, "
           f"initial tokens uniform on the cube of side 1 projected to the sphere, seeds 100–{99 + seeds}, horizon {T:g}, "
           f"batched torch RK4 (dt = {dt}) with retraction after every step (max drift {_fmt(drift, 2)}), generated kernel.")
    fig.suptitle(f"§7.4 ({size})")
    save_figure(fig, out / name)
    finals = [float(E[-1]) for E in Es]
    cap = cap[:-1] + (f". Claims: final E {', '.join(_fmt(x, 3) for x in finals)}; token 1 moved at most {_fmt(moved, 2)} "
                      "(Thm 5.1: it never moves).")
    k30 = int(np.argmin(np.abs(ts - min(30.0, T))))
    lines = [f"![{cap}]({name})", "",
             f"- {seeds} of {seeds} runs completed on the sphere; $E$ at t = {ts[k30]:g}: {', '.join(_fmt(float(E[k30]), 3) for E in Es)}; "
             f"final $E$: {', '.join(_fmt(x, 3) for x in finals)}; token 1 moved at most {_fmt(moved, 2)} (Thm 5.1: it never moves).",
             f"- Slowest transverse rate at consensus $h/(2\\sqrt d)$ = {_fmt(2 / (2 * math.sqrt(d)))}; $E$ is quadratic in the "
             "deviation, so it decays at twice that rate; measured late decay rate of $E$: "
             f"{', '.join(_fmt(r) if r else 'n/a' for r in (_decay_rate(ts, E, 1e-12, 1e-4) for E in Es))}." + ("" if full else
             " The paper's size (50 tokens in $\\mathbb R^{500}$, T = 300) runs with `python -m flowcert.reports.consensus OUT --full`."), ""]
    return lines, [name]


def _tetrahedron_section(out: Path) -> tuple[list[str], str]:
    raw = cat.paper_examples()["tetrahedron"]
    p = parse(raw)
    res = {r.id: r for r in cat.theorems(p, simulate=True, seed=0)}
    th = res["consensus:thm-4.1"]
    hemi = next(h for h in th.hypotheses if h.name.startswith("open hemisphere"))
    eq = th.prediction.get("equilibrium", {})
    betas = np.linspace(-1, 4, 201)
    spec = [{k: float(v) for k, v in sym.tetrahedron_spectrum(sp.Float(b)).items()} for b in betas]
    fig, ax = subplots()
    ax.plot(betas, [s["E"] for s in spec], label=r"$\lambda_E$ (×2)")
    ax.plot(betas, [s["T"] for s in spec], label=r"$\lambda_T$ (×3)")
    ax.axhline(0, color="k", lw=0.5)
    ax.axvline(float(sym.TETRAHEDRON_THRESHOLD), color="k", ls=":", lw=1)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel("tangent eigenvalue")
    ax.legend()
    name = "consensus_tetrahedron.png"
    save_figure(fig, out / name)
    bip = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    cc = th.cross_check.details
    lines = ["### A stable non-consensus: the regular tetrahedron", "",
             "Full attention, $h=1$, $U=I$, sphere, $P=-\\beta I$ with $\\beta=2$, four tokens at the vertices of a regular tetrahedron "
             "(`tests/data/attention/consensus_tetrahedron.json`). The tangent spectrum, derived by SymPy (power sums of the 8×8 "
             "tangent Jacobian and Schur's lemma for the tetrahedral group), is", "",
             f"$$\\{{0^3,\\lambda_E^2,\\lambda_T^3\\}},\\quad \\lambda_E={sp.latex(sym.tetrahedron_spectrum()['E'])},\\quad "
             f"\\lambda_T={sp.latex(sym.tetrahedron_spectrum()['T'])},$$", "",
             f"so the configuration is stable (modulo rotations) iff $\\beta>{sp.latex(sym.TETRAHEDRON_THRESHOLD)}$.", "",
             f"![Tangent eigenvalues at the tetrahedron against β (closed form; the dotted line is β = 3/2). Protocol: "
             f"formula of `tetrahedron_spectrum`, checked against central differences of the field at β ∈ {{-1, 1, 1.4, 1.6, 3}}. "
             f"Claims: the tetrahedron is stable modulo rotations iff β > {sym.TETRAHEDRON_THRESHOLD} (the dotted line).]({name})", "",
             f"- Hemisphere hypothesis: **{hemi.status}** ({hemi.method}; Gordan certificate $\\lambda$ = "
             f"{hemi.certificate.data['lambda'] if hemi.certificate else 'n/a'}); $P\\succ0$: "
             f"**{next(h.status for h in res['consensus:thm-3.2'].hypotheses if h.name.startswith('P'))}**. "
             "No theorem of the paper applies.",
             f"- Local stability: **{eq.get('stability', {}).get('status')}** ({plain(eq.get('stability', {}).get('detail', ''))}); "
             f"prediction: {th.prediction.get('prediction')}.",
             f"- Simulation from a $10^{{-6}}$ perturbation: limit class **{cc.get('limit_class')}**, final spread "
             f"{_fmt(cc.get('spread_final', float('nan')))}, Gram-matrix distance to the tetrahedron {_fmt(cc.get('gram_distance_final', float('nan')), 2)}; "
             f"cross-check **{th.cross_check.status}**.",
             f"- The paper's $E$ is blind to sign: for the bipolar pair $y_2=-y_1$, $E$ = {_fmt(float(num.paper_measure(bip)))} "
             f"while $E_\\pm$ = {_fmt(float(num.signed_measure(bip)))}; on the tetrahedron $E$ = {_fmt(float(num.paper_measure(num.regular_tetrahedron())))}.", ""]
    return lines, name


def _thm51_section(out: Path) -> tuple[list[str], str]:
    """Note 003's S^1 counterexample to Thm 5.1's domain: a separatrix initial angle and its neighbours."""
    from ..attention import integrate

    raw = cat.paper_examples()["thm51_counterexample"]
    p = parse(raw)
    res = {r.id: r for r in cat.theorems(p, simulate=True, seed=0)}["consensus:thm-5.1"]
    ts = np.linspace(0.0, p.t_end, 301)
    fig, ax = subplots()
    gaps = {}
    for eps in (0.0, 1e-3, -1e-3):
        ang = list(cat.THM51_ANGLES)
        ang[2] += eps
        X0 = np.array([[math.cos(a), math.sin(a)] for a in ang])
        tr = integrate(p, p.t_end, X0, t_eval=ts)
        th = np.unwrap(np.arctan2(tr.X[:, 2, 1], tr.X[:, 2, 0]))
        gaps[eps] = abs(th[-1] - math.pi)
        ax.plot(ts, th, label=f"$\\theta_3(0)=\\theta_3^*{'+' if eps > 0 else ('-' if eps < 0 else '')}{abs(eps) if eps else ''}$")
    ax.axhline(math.pi, color="k", ls=":", lw=1)
    ax.set_xlabel("t")
    ax.set_ylabel(r"$\theta_3$")
    ax.legend()
    name = "consensus_thm51_domain.png"
    save_figure(fig, out / name)
    cap = (f"Token 3's angle on the circle, causal attention, h = 1, P = I, U = I, rows sum to $1/\\sqrt2$, "
           f"$\\theta=(0,-0.3,\\theta_3)$ with $\\theta_3^*={cat.THM51_ANGLES[2]!r}$ and $\\theta_3^*\\pm10^{{-3}}$; horizon {p.t_end:g}, {INTEGRATOR}.")
    lines = ["### Theorem 5.1's domain of attraction (correction)", "",
             "The initial tokens lie in $\\{y_j\\ne-y_1\\}$ and every hypothesis of Thm 5.1 holds "
             f"(applies: **{res.applies.json}**), yet token 3 approaches $-y_1$: $|\\theta_3(30)-\\pi|$ = {_fmt(gaps[0.0], 3)} "
             f"(neighbours: {_fmt(gaps[1e-3], 3)}, {_fmt(gaps[-1e-3], 3)}, leaving towards consensus on either side). "
             f"The catalogue's cross-check on this input is **{res.cross_check.status}** "
             f"({res.cross_check.details.get('reason', res.cross_check.details.get('criterion', ''))[:90]}…).", "",
             f"![{cap} Claims: " + f"|θ3(30) - π| = {_fmt(gaps[0.0], 3)} from θ3*, {_fmt(gaps[1e-3], 3)} and "
             f"{_fmt(gaps[-1e-3], 3)} from its neighbours.]({name})", ""]
    return lines, name


def _errata() -> list[str]:
    return ["### Errata implemented", "",
            "- Attention rows sum to $1/\\sqrt{n+1}$ (eq. (6), not (4)/(5)); all rates carry this factor.",
            "- Thm 3.2 needs tokens on $\\mathcal E_P$ ($W=P$) and concludes convergence to *an* equilibrium; the catalogue "
            "checks $W=P$ exactly.",
            "- Thm 4.1 gives attractivity only; its hemisphere is Euclidean ($v^\\top y>0$) even on ellipsoids.",
            "- Thm 5.1's domain $\\{y_j\\ne-y_1\\}$ is too strong for $\\ell\\ge3$ (the ISS estimate fails near $a_i=-1$).",
            "- Lemma 4.1: $K=\\lambda_{\\min}(W)^{-1/2}$, and $\\alpha\\le1/\\sqrt{n+1}$ (the paper's $c_2$ is loose).",
            "- Lemma 6.1: the great sphere $v^\\top y=0$ is invariant.",
            f"- Remark 4.2 (Wendel) is off by one: $\\ell$ points on $\\mathbb S^n$ lie in a hemisphere with probability "
            f"$2^{{-(\\ell-1)}}\\sum_{{k=0}}^{{n}}\\binom{{\\ell-1}}{{k}}$ (e.g. 4 points on $\\mathbb S^2$: {num.wendel_probability(4, 3)}, "
            f"10 points on $\\mathbb S^2$: {_fmt(num.wendel_probability(10, 3))}); that is why the Figure 1 tokens are not in a hemisphere.",
            "- The consensus measure $E$ of eq. (25) (index from 1) is blind to bipolar configurations; $E_\\pm$ and the spread are reported beside it.",
            ""]


def _theorem_table(records: list[dict]) -> list[str]:
    lines = ["### Catalogue verdicts on the paper's examples", "",
             "| id | example | applies | cross-check | hypotheses not holding |", "|---|---|---|---|---|"]
    for rec, key in records:
        bad = "; ".join(f"{h['name']}: {h['status']}" for h in rec["hypotheses"] if h["status"] != "holds") or "—"
        lines.append(f"| `{rec['id']}` | {key} | {rec['applies']} | {rec['cross_check']['status']} | {bad} |")
    return lines + [""]


#: the example on which each entry applies (the section's default parameters)
HOME = {"consensus:lemma-3.1": "fig1", "consensus:thm-3.1": "fig1", "consensus:thm-3.2": "fig1",
        "consensus:lemma-4.1": "fig3", "consensus:lemma-4.2": "fig3", "consensus:thm-4.1": "fig3",
        "consensus:lemma-5.1": "fig5_reduced", "consensus:thm-5.1": "fig5_reduced",
        "consensus:lemma-6.1": "fig4", "consensus:thm-6.1": "fig4"}


def section(out: Path, *, quick: bool, full: bool = False) -> Section:
    """The consensus paper's report section (see the report contract in the module docstring)."""
    out = Path(out)
    make_folder("--out", out)  # through no link (flowcert.outputs)
    md = ["The consensus paper studies eq. (7) with attention rows summing to $1/\\sqrt{n+1}$:", "",
          "$$\\dot y_i=\\sum_{\\eta=1}^h\\sum_{j}\\alpha^\\eta_{ij}\\big(U_\\eta y_j-(y_i^\\top WU_\\eta y_j)\\,y_i\\big),\\qquad "
          "\\alpha^\\eta_{ij}=\\frac{e^{y_i^\\top P_\\eta y_j}}{\\sqrt{n+1}\\sum_ke^{y_i^\\top P_\\eta y_k}}$$", "",
          "(sums over $j,k\\le i$ under causal attention), tokens on $\\mathcal E_W=\\{y^\\top Wy=1\\}$.", ""]
    md += _proofs_section(quick) + _linearisation_section()
    figures: list[str] = []
    by_key: dict[str, list[dict]] = {}
    md += ["### Reproductions of §7.1–7.4", ""]
    for key, fname, label, kind in (("fig1", "consensus_fig1.png", "§7.1, Figure 1 (Thm 3.2, tokens on $\\mathcal{E}_P$)", "V_P"),
                                    ("fig3", "consensus_fig3.png", "§7.2, Figure 3 (Thm 4.1, two heads, $P_\\eta(t)=D_\\eta(t)P'_\\eta$)", "V_max"),
                                    ("fig4", "consensus_fig4.png", "§7.3, Figure 4 (Thm 6.1, causal, symmetric $U$)", "V_plus"),
                                    ("fig5_reduced", "consensus_fig5_reduced.png", "§7.4 reduced (Thm 5.1, causal, two heads)", "V_causal")):
        lines, recs, name = _example(key, out, fname, label, kind)
        md += [f"#### {label}", ""] + lines
        by_key[key] = recs
        figures.append(name)
    lines, names = _fig5_full(out, quick, full)
    md += ["#### §7.4, Figure 5: the consensus measure over several draws", ""] + lines
    figures += names
    lines, name = _tetrahedron_section(out)
    md += lines
    figures.append(name)
    lines, name = _thm51_section(out)
    md += lines
    figures.append(name)
    theorems = [next(r for r in by_key[key] if r["id"] == tid) for tid, key in HOME.items()]
    md += _theorem_table([(r, HOME[r["id"]]) for r in theorems]) + _errata()
    return {"title": TITLE, "markdown": "\n".join(md), "theorems": theorems, "figures": figures}


def main(argv: list[str] | None = None) -> None:
    import argparse

    from .html import write_report

    ap = argparse.ArgumentParser(prog="python -m flowcert.reports.consensus")
    ap.add_argument("out", type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--full", action="store_true", help="§7.4 at the paper's size (50 tokens in R^500)")
    a = ap.parse_args(argv)
    sec = section(a.out, quick=a.quick, full=a.full)
    write_report(f"# {sec['title']}\n\n{sec['markdown']}", a.out, title=sec["title"])


if __name__ == "__main__":
    main()

