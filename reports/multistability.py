r"""Report section for the multistability paper (Altafini; note 001): certified verdicts on
consensus and bipartite equilibria, basins of attraction, the §6 reproductions, and the errata.

Model: :math:`\dot x_i=(I-x_ix_i^\top)V\sum_jA_{ij}x_j`,
:math:`A_{ij}=\operatorname{softmax}_j(x_i^\top Q^\top Kx_j)` (eq. (1)).

Public API: :func:`section` (the report contract), :func:`plot_simulation` (``flowcert simulate
attention --plot``), :func:`example3a`, :func:`example3b`, :func:`example2`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Iterator, TypedDict

import numpy as np

from ..outputs import make_folder
from ..attention import multistability as fm  # noqa: E402
from ..attention.params import parse_attention  # noqa: E402
from ..certificates import core  # noqa: E402
from ..numeric.attention import multistability as nm  # noqa: E402
from ..records import JSONObject
from .common import Section
from .figures import new_figure, save_figure, subplots  # noqa: E402

#: Default parameters of the section: a multistable d = 3 instance (consensus v1 and the 2:2
#: bipartite point at v1 are both certified stable).
DEFAULT = {"V": [[1, 0.2, 0], [0.2, 0.1, 0], [0, 0, -0.5]], "Q": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
           "K": [[3, 0.5, 0], [0, 0.5, 0], [0.3, 0, -1]], "n": 6, "seed": 1}


class StableCounts(TypedDict):
    """One instance of Example 3(a): the certified stable points at each :math:`v_k` (``per_k``), their
    ``total``, the points left ``unknown``, and the eigenvalues of :math:`V` (``lam``, ascending)."""

    per_k: list[int]
    total: int
    unknown: int
    lam: list[float]


#: Example 3(a) (:func:`example3a`): the instances' counts and their summary; the key ``vd_needs_…``
#: says whether every instance with a stable point at :math:`v_d` has :math:`\lvert\lambda_d\rvert>\lambda_1`.
Example3a = TypedDict("Example3a", {
    "rows": list[StableCounts], "instances": int, "min": int, "median": float, "max": int, "only_pm_v1": int,
    "with_interior_k": int, "with_vd": int, "vd_needs_|lambda_d|>lambda_1": bool, "unknown": int,
    "seed": int, "d": int, "n": int})


class Example3b(TypedDict):
    """Example 3(b) (:func:`example3b`): per instance the certified stable count at each :math:`v_k`
    (``rows``), the totals' range, mean and zeros, and per k the instances with a stable point there."""

    rows: list[list[int]]
    min: int
    max: int
    mean: float
    none: int
    instances_with_stable_at_k: list[int]
    seed: int
    d: int
    n: int
    per_k: int


class BasinsRow(TypedDict):
    """One instance of Example 2: the limits reached (``outcomes`` of the basin study), whether they agree
    with the certified verdicts, and the certified-unstable limits reached."""

    outcomes: list[JSONObject]
    agrees: bool | None
    unstable_reached: list[str]


class Example2(TypedDict):
    """Example 2, scaled (:func:`example2`): the instances' basin studies and their summary."""

    rows: list[BasinsRow]
    instances: int
    samples: int
    d: int
    n: int
    seed: int
    t_max: float
    multistable_instances: int
    all_agree: bool


def _random_instance(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Note 001 §4.2 protocol: Q, K, G i.i.d. N(0,1), V = (G + G^T)/2, redrawn until lambda_1 > 0."""
    while True:
        Q, K, G = rng.normal(size=(3, d, d))
        V = (G + G.T) / 2
        if np.linalg.eigvalsh(V)[-1] > 0:
            return Q, K, V


def _separated_instances(rng: np.random.Generator, instances: int, d: int, n: int) -> Iterator[fm.Data]:
    """The prepared data of ``instances`` random draws (:func:`_random_instance`), keeping those whose
    encoder separates the points; lazy, so the caller's own draws from ``rng`` interleave as before."""
    for _ in range(instances):
        Q, K, V = _random_instance(rng, d)
        D = fm.data_of(parse_attention({"V": V.tolist(), "Q": Q.tolist(), "K": K.tolist(), "n": n}))
        if D.enc.separated:
            yield D


def _counts(D: fm.Data) -> StableCounts:
    """Certified stable count among the d 2^n consensus+bipartite points, by (k, n1) class."""
    n, d = D.p.n, D.p.d
    per_k = [0] * d
    unknown = 0
    for k in range(d):
        for n1 in range(n + 1):
            a, b = max(n1, n - n1), min(n1, n - n1)
            v = fm.class_result(D, k, a, b, certify=False)["verdict"]
            if v == "stable":
                per_k[k] += math.comb(n, n1)
            elif v == "unknown":
                unknown += math.comb(n, n1)
    return {"per_k": per_k, "total": sum(per_k), "unknown": unknown, "lam": D.lam.tolist()}


def example3a(instances: int, seed: int = 2025, d: int = 4, n: int = 10) -> Example3a:
    """Example 3(a): certified count of stable points among d 2^n, per instance."""
    rng = np.random.default_rng(seed)
    rows = [_counts(D) for D in _separated_instances(rng, instances, d, n)]
    interior = sum(any(r["per_k"][k] for k in range(1, d - 1)) for r in rows)
    vd = [r for r in rows if r["per_k"][-1]]
    vd_ok = all(abs(r["lam"][-1]) > r["lam"][0] for r in vd)
    totals = [r["total"] for r in rows]
    return {"rows": rows, "instances": len(rows), "min": min(totals), "median": float(np.median(totals)),
            "max": max(totals), "only_pm_v1": sum(t == 2 for t in totals), "with_interior_k": interior,
            "with_vd": len(vd), "vd_needs_|lambda_d|>lambda_1": vd_ok, "unknown": sum(r["unknown"] for r in rows),
            "seed": seed, "d": d, "n": n}


def example3b(instances: int, seed: int = 7, d: int = 10, n: int = 100, per_k: int = 100) -> Example3b:
    """Example 3(b): ``per_k`` uniformly random sign patterns at each v_k; certified stable count."""
    rng = np.random.default_rng(seed)
    rows = []
    for D in _separated_instances(rng, instances, d, n):
        cache: dict[tuple[int, int], str] = {}
        stable = [0] * d
        for k in range(d):
            for _ in range(per_k):
                n1 = int((rng.random(n) < 0.5).sum())
                key = (k, max(n1, n - n1))
                if key not in cache:
                    cache[key] = fm.class_result(D, k, key[1], n - key[1], certify=False)["verdict"]
                stable[k] += cache[key] == "stable"
        rows.append(stable)
    tot = [sum(r) for r in rows]
    by_k = [sum(1 for r in rows if r[k]) for k in range(d)]
    return {"rows": rows, "min": min(tot), "max": max(tot), "mean": float(np.mean(tot)), "none": sum(t == 0 for t in tot),
            "instances_with_stable_at_k": by_k, "seed": seed, "d": d, "n": n, "per_k": per_k}


def example2(instances: int, samples: int, d: int, n: int, seed: int = 100, t_max: float = 400.0) -> Example2:
    """Example 2, scaled: random instances, ``samples`` runs to rest each, limits classified."""
    rng = np.random.default_rng(seed)
    rows: list[BasinsRow] = []
    for i in range(instances):
        Q, K, V = _random_instance(rng, d)
        p = parse_attention({"V": V.tolist(), "Q": Q.tolist(), "K": K.tolist(), "n": n, "seed": seed + i})
        b = fm.basins(p, samples, seed=seed + i, t_max=t_max)
        rows.append({"outcomes": b["basins"]["outcomes"], "agrees": b["agrees"],
                     "unstable_reached": b["basins"]["reached_certified_unstable"]})
    multi = sum(sum(1 for o in r["outcomes"] if o["verdict"] == "stable") > 1 or
                any(o["label"].startswith(("bipartite", "clustering")) for o in r["outcomes"]) for r in rows)
    return {"rows": rows, "instances": instances, "samples": samples, "d": d, "n": n, "seed": seed, "t_max": t_max,
            "multistable_instances": multi, "all_agree": all(r["agrees"] for r in rows)}


def _printed9_study(blocks: int = 300, seed: int = 3) -> dict[str, int]:
    """Random 2x2 bipartite blocks: printed (9), corrected (9) and direct eigenvalues."""
    from ..symbolic.attention import multistability as sm
    import sympy as sp

    c = sm.theorem2_conditions()
    f = {k: sp.lambdify(c["symbols"], c[k]) for k in ("trace_condition", "det_condition", "printed_trace", "printed_det")}
    rng = np.random.default_rng(seed)
    wc = wp = 0
    for _ in range(blocks):
        a, n1, n2 = rng.normal() * 2, int(rng.integers(1, 8)), int(rng.integers(1, 8))
        lj, lk = rng.normal(size=2)
        tang, _ = nm.bipartite_spectra(np.array([lk, lj]), a, 0, n1, n2)
        h = np.real(tang[-2:]).max() < 0
        args = (math.exp(a), n1, n2, lj, lk)
        wc += h != (f["trace_condition"](*args) < 0 and f["det_condition"](*args) > 0)
        wp += h != (f["printed_trace"](*args) < 0 and f["printed_det"](*args) < 0)
    return {"blocks": blocks, "printed_wrong": wp, "corrected_wrong": wc, "seed": seed}


# ---------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------


def plot_simulation(sim: JSONObject, path: Path, narrow: bool = True) -> Path:
    """``simulate attention --plot``: basin fractions with Wilson intervals, or the final tokens (``sim``: the
    ``simulation`` record of an attention document)."""
    fig, ax = subplots()
    if "basins" in sim:
        outs = sim["basins"]["outcomes"]
        fr = np.array([o["fraction"] for o in outs])
        lo = fr - np.array([o["wilson"][0] for o in outs])
        hi = np.array([o["wilson"][1] for o in outs]) - fr
        ax.bar(range(len(outs)), fr, yerr=[lo, hi], capsize=3,
               color=["tab:green" if o["verdict"] == "stable" else "tab:gray" for o in outs])
        ax.set_xticks(range(len(outs)), [o["label"] for o in outs], rotation=30, ha="right")
        ax.set_xlabel("limit reached (green: certified stable)")
        ax.set_ylabel("fraction of samples")
        ax.set_title(f"{sim['samples']} samples, seed {sim['seed']}, Wilson 95% intervals")
    else:
        X = np.array(sim["X_final"])
        ax.plot(X[:, 0], X[:, 1] if X.shape[1] > 1 else 0 * X[:, 0], "o")
        ax.set_xlabel("first coordinate $x_{i,1}$")
        ax.set_ylabel("second coordinate $x_{i,2}$" if X.shape[1] > 1 else "(one coordinate)")
        ax.set_title(f"final tokens at t = {sim['t_end']:.4g}")
    save_figure(fig, path, narrow=narrow)
    return path


def _fig_sphere(p: Any, out: Path, seed: int) -> tuple[str, dict[str, Any]]:
    import torch

    from ..gpu import attention as ga

    X0 = p.initial_tokens(1, np.random.default_rng(seed))
    args = [torch.as_tensor(np.array(a)) for a in p.kernel_args(0.0)]
    T, steps = 60.0, 1200
    tr = ga.simulate(p.structure, torch.as_tensor(X0), args, T, steps, record_every=10)
    path = tr.path[:, 0].numpy()
    fig = new_figure(square=True)
    ax = fig.add_subplot(projection="3d")
    u, v = np.mgrid[0:2 * np.pi:30j, 0:np.pi:15j]
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
    for i in range(path.shape[1]):
        ax.plot(*path[:, i].T, lw=1, label="token trajectories (one colour each)" if i == 0 else "_nolegend_")
        ax.scatter(*path[-1, i], s=18, color="k", label=f"positions at t = {T:g}" if i == 0 else "_nolegend_")
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_zlabel("$x_3$")
    ax.legend(loc="upper left")
    save_figure(fig, out / "multistability_sphere.png")
    label = fm.classify_run(p, path[-1])
    return "multistability_sphere.png", {"T": T, "steps": steps, "drift": tr.max_drift, **label}


def _fig_ex3a(ex: dict[str, Any], out: Path) -> str:
    fig, (ax1, ax2) = subplots(1, 2)
    totals = [r["total"] for r in ex["rows"]]
    ax1.hist(totals, bins=30, color="tab:blue")
    ax1.set_xlabel(f"certified stable points among {ex['d']}·2^{ex['n']}")
    ax1.set_ylabel("instances")
    per_k = np.array([r["per_k"] for r in ex["rows"]])
    ax2.bar(range(1, ex["d"] + 1), (per_k > 0).sum(0))
    ax2.set_xlabel("eigenvector index k")
    ax2.set_ylabel("instances with a stable point at v_k")
    save_figure(fig, out / "multistability_ex3a.png")
    return "multistability_ex3a.png"


def _fig_spectra(out: Path) -> tuple[str, dict[str, Any]]:
    """Singleton-group bipartite point: positive normal (ambient) eigenvalue, Hurwitz tangent part."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        d, n = 3, int(rng.integers(3, 7))
        G = rng.normal(size=(d, d))
        V = np.round((G + G.T) / 2, 3)
        if np.linalg.eigvalsh(V)[-1] <= 0:
            continue
        M = np.round(rng.normal(size=(d, d)) * 3, 3)
        D = fm.data_of(parse_attention({"V": V.tolist(), "P": M.tolist(), "n": n}))
        if not D.enc.separated:
            continue
        for k in (0, d - 1):
            r = fm.class_result(D, k, n - 1, 1)
            amb = np.array(r["ambient_spectrum"])
            if r["verdict"] == "stable" and amb[:, 0].max() > 0:
                X = nm.bipartite_point(D.U[:, k], np.r_[np.ones(n - 1), -1.0])
                sp_ = nm.spectra(nm.ambient_jacobian(X, D.Mb, D.V), X)
                fig, ax = subplots()
                ax.plot(sp_.ambient.real, sp_.ambient.imag, "o", mfc="none", ms=9, label="ambient (paper's lists)")
                ax.plot(sp_.tangent.real, sp_.tangent.imag, "x", color="tab:red", label="tangent (decides stability)")
                ax.axvline(0, color="k", lw=0.6)
                ax.legend()
                ax.set_xlabel(r"Re $\lambda$")
                ax.set_ylabel(r"Im $\lambda$")
                save_figure(fig, out / "multistability_spectra.png")
                return "multistability_spectra.png", {"V": V.tolist(), "M": M.tolist(), "n": n, "k": k + 1,
                                                      "max_ambient": float(amb[:, 0].max()),
                                                      "max_tangent": float(sp_.tangent.real.max()),
                                                      "certificate_rechecked": core.recheck(r["certificate"])}
    return "", {}


def section(out: Path, *, quick: bool) -> Section:
    """The multistability section (report contract of HELPER_RULES.md)."""
    out = Path(out)
    make_folder("--out", out)  # through no link (flowcert.outputs)
    t0 = time.perf_counter()
    p = parse_attention(DEFAULT)
    ths = fm.theorems(p, simulate=True, seed=1)
    theorems = [t.to_json() for t in ths]
    D = fm.data_of(p)
    stable = [c for c in fm.class_results(D) if c["verdict"] == "stable"]
    figures: list[str] = []

    eqs = fm.equilibria(p, cap=8, samples=0)
    b = fm.basins(p, 48 if quick else 256, seed=1, t_max=300.0)
    plot_simulation(b, out / "multistability_basins.png")
    figures.append("multistability_basins.png")
    sphere_p = parse_attention({**DEFAULT, "n": 10})
    sph, sph_info = _fig_sphere(sphere_p, out, seed=3)
    figures.append(sph)
    ex3a = example3a(12 if quick else 100)
    figures.append(_fig_ex3a(ex3a, out))
    ex3b = example3b(3 if quick else 100, per_k=20 if quick else 100)
    ex2 = example2(1 if quick else 12, 8 if quick else 20, 6 if quick else 20, 12 if quick else 100,
                   t_max=200.0 if quick else 400.0)
    spec_fig, spec = _fig_spectra(out)
    if spec_fig:
        figures.append(spec_fig)
    p9 = _printed9_study()

    lam = ", ".join(f"{x:.4g}" for x in D.lam)
    a_vals = ", ".join(f"{D.a(k):.4g}" for k in range(p.d))
    stab = "; ".join(f"$v_{c['k']}$ split {c['n1']}:{c['n2']}" for c in stable)
    outc = "; ".join(f"{o['label']}: {o['count']}/{b['samples']} ({o['wilson'][0]:.2f}–{o['wilson'][1]:.2f}, {o['verdict']})"
                     for o in b["basins"]["outcomes"])
    md = [
        "Model (1): $\\dot x_i=(I-x_ix_i^\\top)V\\sum_jA_{ij}x_j$, $A_{ij}=\\operatorname{softmax}_j(x_i^\\top Q^\\top Kx_j)$; "
        "the Oja flow (2) ($A=I$) and the multiagent Oja flow (5) ($A=\\frac1n\\mathbb 1\\mathbb 1^\\top$) are variants of the same "
        "generated kernels. Stability is decided on the tangent space of $(\\mathbb S^{d-1})^n$.",
        "",
        "**How verdicts are certified.** The eigenvalues of the rational symmetric $V$ are enclosed exactly "
        "(Rayleigh quotients and residuals in rational arithmetic; disjoint intervals prove simplicity), the angle to each "
        "eigenvector is bounded by Davis–Kahan, and $a_k=v_k^\\top Q^\\top Kv_k$ is enclosed. At $x_i=s_iv_k$ the tangent "
        "linearisation splits into blocks $J_j=c(\\lambda_jA-\\operatorname{diag}(g))$, and $P=\\operatorname{diag}(Z)$ makes "
        "$PJ_j$ symmetric:",
        "",
        "$$PJ_j/c=\\lambda_jE-\\lambda_k\\operatorname{diag}(\\sigma),\\qquad E_{ij}=e^{a_ks_is_j}.$$",
        "",
        "Its invariant blocks (within-group zero-sum vectors, and the two group indicators) are decided in outward-rounded "
        "interval arithmetic; every certificate is re-checked from its rational data.",
        "",
        f"**Default instance** ($d={p.d}$, $n={p.n}$): $\\lambda=({lam})$, $a_k=({a_vals})$. Certified stable classes: {stab}. "
        f"Basins ({b['samples']} uniform initial conditions, seed 1, RK4 $dt=0.05$ with retraction to speed $<10^{{-7}}$ or "
        f"$t=300$; max drift {b['max_drift']:.1e}): {outc}. Certified-unstable points reached: "
        f"{len(b['basins']['reached_certified_unstable'])}.",
        "",
        f"![Basin fractions with 95% Wilson intervals; green = certified stable. Protocol: {b['samples']} samples, seed 1, "
        "RK4 dt 0.05 + retraction, run to speed < 1e-7 or t = 300, limits identified by closed form or Newton. "
        f"Claims: {outc}; certified-unstable points reached: {len(b['basins']['reached_certified_unstable'])}.]"
        "(multistability_basins.png)",
        "",
        f"![Trajectories of {sphere_p.n} tokens on the sphere (default V, Q, K; seed 3; RK4 {sph_info['steps']} steps to "
        f"t = {sph_info['T']:g}; drift {sph_info['drift']:.1e}); limit: {sph_info.get('limit_label', sph_info.get('limit_class'))}.]"
        "(multistability_sphere.png)",
        "",
        f"**Example 3(a)** (protocol: $Q,K,G\\sim\\mathcal N(0,1)$, $V=(G+G^\\top)/2$, seed {ex3a['seed']}, "
        f"{ex3a['instances']} instances, $d={ex3a['d']}$, $n={ex3a['n']}$, all {ex3a['d'] * 2 ** ex3a['n']} points by certified "
        f"class verdicts): stable count min {ex3a['min']}, median {ex3a['median']:g}, max {ex3a['max']}; only the $\\pm v_1$ pair "
        f"in {ex3a['only_pm_v1']}; instances with a stable point at an interior $v_k$: {ex3a['with_interior_k']}; with a stable "
        f"point at $v_d$: {ex3a['with_vd']}, each with $\\lvert\\lambda_d\\rvert>\\lambda_1$: {ex3a['vd_needs_|lambda_d|>lambda_1']}; "
        f"undecided points: {ex3a['unknown']}.",
        "",
        f"![Example 3(a): histogram of certified stable counts and instances with a stable point at each $v_k$ "
        f"(seed {ex3a['seed']}, {ex3a['instances']} instances). Claims: stable count min {ex3a['min']}, median "
        f"{ex3a['median']:g}, max {ex3a['max']}; a stable point at an interior $v_k$ in {ex3a['with_interior_k']} "
        f"instances.](multistability_ex3a.png)",
        "",
        f"**Example 3(b)** (d={ex3b['d']}, n={ex3b['n']}, {ex3b['per_k']} random sign patterns per $v_k$, seed {ex3b['seed']}, "
        f"{len(ex3b['rows'])} instances): stable among {ex3b['d'] * ex3b['per_k']}: min {ex3b['min']}, max {ex3b['max']}, mean "
        f"{ex3b['mean']:.1f}; instances with a stable point at each $v_k$: {ex3b['instances_with_stable_at_k']}.",
        "",
        f"**Example 2, scaled** ({ex2['instances']} instance(s), $d={ex2['d']}$, $n={ex2['n']}$, {ex2['samples']} runs each, "
        f"seed {ex2['seed']}, $t\\le{ex2['t_max']:g}$): multistable instances {ex2['multistable_instances']}; simulation agrees "
        f"with the certified verdicts in all instances: {ex2['all_agree']}. The full size ($d=20$, $n=100$) runs with `--full`.",
        "",
        "**Corrections to the paper** (each checked by the code):",
        "",
        f"* Inequality (9) of Theorem 2 has sign errors: on {p9['blocks']} random $2\\times2$ blocks (seed {p9['seed']}) the "
        f"printed form gives the wrong verdict {p9['printed_wrong']} times, the corrected form {p9['corrected_wrong']} times "
        "(SymPy proves the corrected lines equal trace and determinant).",
        "* The paper's eigenvalue lists are ambient; its $n$ normal eigenvalues $-2\\delta_\\ell\\lambda_k$ do not decide "
        "stability. "
        + (f"Example: a singleton-group bipartite point at $v_{spec['k']}$ with positive ambient eigenvalue "
           f"{spec['max_ambient']:.3g} is certified stable (max tangent real part {spec['max_tangent']:.3g}; certificate re-checked: "
           f"{spec['certificate_rechecked']})." if spec else ""),
        "* Lemma 8: $x_k\\to x_h$ in the off-diagonal block; the ambient Jacobian is checked against SymPy, central "
        "differences and `torch.func.jacfwd` of the generated kernel.",
        "* Lemma 5: $W=\\tfrac12(\\lambda_1-\\bar x^\\top V\\bar x)$; SymPy proves "
        "$\\dot W+\\frac1n\\sum_i\\|\\dot x_i\\|^2=-\\frac1n\\sum_i(x_i^\\top y)^2(1-\\|x_i\\|^2)$, and Lemma 1's "
        "$\\dot W=-\\|(I-xx^\\top)Vx\\|^2$ on the sphere.",
        "* A 1-clustering is never an equilibrium; Lemma 7's rank 2 needs $a_k\\ne0$; Lemma 11's proof is heuristic.",
    ]
    if spec_fig:
        md += ["", f"![Ambient (circles) and tangent (crosses) spectra at a singleton-group bipartite point ($d=3$, $n={spec['n']}$, "
                   f"$k={spec['k']}$; first hit of a seeded search (seed 0) over $V=(G+G^\\top)/2$ rounded to 3 digits, "
                   f"$M\\sim3\\,\\mathcal N(0,1)$; ambient and tangent spectra of the Lemma 8 Jacobian). Claims: the largest ambient real "
                   f"part {spec['max_ambient']:.3g} is positive, the largest tangent real part {spec['max_tangent']:.3g} is "
                   "negative: the point is stable although the paper's ambient list says otherwise.](multistability_spectra.png)"]
    md += ["", f"Section computed in {time.perf_counter() - t0:.1f} s ({'quick' if quick else 'full'})."]
    return {"title": "Multistability of self-attention (Altafini)", "markdown": "\n".join(md), "theorems": theorems,
            "figures": figures, "equilibria_listed": len(eqs["equilibria"])}
