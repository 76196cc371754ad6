"""Headless matplotlib figures (Agg backend; nothing needs a display), in one style.

Every report figure takes its size, resolution and fonts from :data:`STYLE`: it is created by
:func:`subplots` or :func:`new_figure` (size from the number of panels) and written by
:func:`save_figure` (tight layout, :data:`STYLE` dpi, figure closed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from ..outputs import save_figure as _write_figure  # noqa: E402

#: The one style of the report's figures: matplotlib settings, saved resolution, panel sizes (inches).
STYLE: dict[str, Any] = {
    "rc": {"font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
           "legend.fontsize": 7, "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.titlesize": 10,
           "lines.linewidth": 1.3, "lines.markersize": 5},
    "dpi": 110,
    "panel_width": 5.2,        # one panel
    "extra_panel_width": 3.4,  # each further panel in a row
    "max_width": 12.0,
    "height": 3.4,             # one row of panels
    "square": 4.4,             # a 3-D view or an equal-aspect plot
}
plt.rcParams.update(STYLE["rc"])


def figure_size(ncols: int = 1, nrows: int = 1, *, square: bool = False) -> tuple[float, float]:
    """Figure size in inches for ``nrows`` x ``ncols`` panels (or one square panel), from :data:`STYLE`."""
    if square:
        return STYLE["square"], STYLE["square"]
    width = min(STYLE["max_width"], STYLE["panel_width"] + STYLE["extra_panel_width"] * (ncols - 1))
    return width, STYLE["height"] * nrows


def subplots(nrows: int = 1, ncols: int = 1, *, square: bool = False, **kw: Any) -> tuple[Any, Any]:
    """:func:`matplotlib.pyplot.subplots` at the :data:`STYLE` size for this many panels."""
    return plt.subplots(nrows, ncols, figsize=figure_size(ncols, nrows, square=square), **kw)


def new_figure(ncols: int = 1, nrows: int = 1, *, square: bool = False) -> Any:
    """An empty figure at the :data:`STYLE` size (for grids or 3-D axes added by the caller)."""
    return plt.figure(figsize=figure_size(ncols, nrows, square=square))


def save_figure(fig: Any, path: Path | str) -> Path:
    """Write a report figure: tight layout, :data:`STYLE` dpi, PNG; the figure is closed."""
    fig.tight_layout()
    try:
        return _write_figure(fig, path, dpi=STYLE["dpi"])  # temp file + rename: never through a link
    finally:
        plt.close(fig)


def plot_moments(sol: Any, path: Path, title: str = "Gaussian Transformer moments, eq. (7)") -> Path:
    """Mean components and covariance eigenvalues against time."""
    fig, (ax1, ax2) = subplots(1, 2)
    ax1.plot(sol.t, sol.mu)
    ax1.set_xlabel("t")
    ax1.set_title(r"$\mu(t)$")
    eig = np.linalg.eigvalsh(sol.Sigma)
    ax2.semilogy(sol.t, np.clip(eig, 1e-300, None))
    ax2.set_xlabel("t")
    ax2.set_title(r"eigenvalues of $\Sigma(t)$")
    if sol.blowup_time is not None:
        for ax in (ax1, ax2):
            ax.axvline(sol.blowup_time, color="k", ls=":", lw=1)
    fig.suptitle(title)
    save_figure(fig, path)
    return path


def plot_convergence(fit: Any, path: Path) -> Path:
    """Particle moment error against N (log-log): every run, the geometric mean per N, the fitted
    slope with its confidence interval (a :class:`~flowcert.reports.gaussian.RateFit`) and N^{-1/2}."""
    fig, ax = subplots()
    Ns_a, E = np.asarray(fit.Ns, float), np.asarray(fit.errors, float)
    for row in E:
        ax.loglog(Ns_a, row, ".", color="0.6", ms=3)
    gm = np.exp(np.log(E).mean(0))
    ax.loglog(Ns_a, gm, "o", color="C0", label=f"geometric mean of {E.shape[0]} runs")
    fitted = np.exp(fit.intercept) * Ns_a ** fit.slope
    ax.loglog(Ns_a, fitted, "-", color="C0",
              label=f"fit: slope {fit.slope:.2f} [{fit.lo:.2f}, {fit.hi:.2f}] ({fit.level:.0%} CI)")
    ax.loglog(Ns_a, fitted[0] * (Ns_a / Ns_a[0]) ** -0.5, "k--", lw=1, label=r"theory $N^{-1/2}$ (through the fit at the smallest N)")
    ax.set_xlabel("N particles")
    ax.set_ylabel("moment error at t")
    ax.legend()
    return save_figure(fig, path)


def _ellipse(ax: Any, mu: np.ndarray, S: np.ndarray, **kw: Any) -> None:
    """One-standard-deviation ellipse of N(mu, S) (a segment when S is singular)."""
    w, U = np.linalg.eigh(S)
    th = np.linspace(0, 2 * np.pi, 100)
    pts = mu[:, None] + U @ (np.sqrt(np.clip(w, 0, None))[:, None] * np.vstack([np.cos(th), np.sin(th)]))
    ax.plot(pts[0], pts[1], **kw)


def plot_mean_matching(runs: Sequence[tuple[str, Any]], target: np.ndarray, path: Path) -> Path:
    """Section 5.1 / Figure 1: mean trajectories reach the target; covariance ellipses over time."""
    fig, axes = subplots(1, len(runs))
    for ax, (label, sol) in zip(np.atleast_1d(axes), runs):
        ax.plot(sol.mu[:, 0], sol.mu[:, 1], "k-", lw=1)
        for t_mark, color in zip((0, 1, 5, 10, 100), ("C0", "C1", "C2", "C3", "C4")):
            k = int(np.argmin(np.abs(sol.t - t_mark)))
            _ellipse(ax, sol.mu[k], sol.Sigma[k], color=color, lw=1.2, label=f"t={sol.t[k]:.0f}")
        ax.plot(*target, "r*", ms=12, label="target")
        ax.set_title(label, fontsize=9)
        ax.set_aspect("equal", "datalim")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    save_figure(fig, path)
    return path


Panel = tuple[str, Sequence[tuple[str, np.ndarray, np.ndarray]], Sequence[tuple[str, float]]]


def plot_regimes(panels: Sequence[Panel], path: Path) -> Path:
    """Panels of tr Sigma(t) on a log scale, each with vertical marks (e.g. certified bounds)."""
    fig, axes = subplots(1, len(panels))
    for ax, (title, curves, marks) in zip(np.atleast_1d(axes), panels):
        for label, t, tr in curves:
            ax.semilogy(t, np.clip(tr, 1e-14, None), label=label)
        for label, x in marks:
            ax.axvline(x, ls="--", lw=1, color="k")
            ax.annotate(label, (x, 0.5), xycoords=("data", "axes fraction"), rotation=90, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t")
        ax.set_ylabel(r"tr $\Sigma(t)$ (clipped at 1e-14)")
        ax.legend(fontsize=7)
    save_figure(fig, path)
    return path


def plot_relu_w2(study: Any, path: Path) -> Path:
    """Prop 2.4: distances between the ReLU cloud and the Gaussian evolution against t·slope."""
    fig, ax = subplots()
    ax.plot(study.t, study.coupling_l2, "o-", label=r"synchronous coupling $\|X_t-Y_t\|_{L^2}$")
    ax.plot(study.t, study.w2_empirical, "s--", label="two-sample $W_2$ (exact assignment)")
    ax.plot(study.t, study.w2_gaussian, "^-", label=r"$W_2$(moment-matched ReLU cloud, $\nu_t$)")
    ax.plot(study.t, study.first_order_bound, "k:", label=r"$t\,\|\max(0,-(Ax+b))\|_{L^2(\rho_0)}$")
    ax.set_xlabel("t")
    ax.legend(fontsize=7)
    save_figure(fig, path)
    return path
