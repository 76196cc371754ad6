"""Headless matplotlib figures (Agg backend; nothing needs a display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from ..outputs import save_figure  # noqa: E402


def plot_moments(sol: Any, path: Path, title: str = "Gaussian Transformer moments, eq. (7)") -> Path:
    """Mean components and covariance eigenvalues against time."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
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
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def plot_convergence(Ns: Sequence[int], errors: Sequence[float], rate: float, path: Path) -> Path:
    """Particle moment error against N on log-log axes, with the fitted slope and N^{-1/2}."""
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    Ns_a, err = np.asarray(Ns, float), np.asarray(errors, float)
    ax.loglog(Ns_a, err, "o-", label=f"particles (slope {rate:.2f})")
    ax.loglog(Ns_a, err[0] * (Ns_a / Ns_a[0]) ** -0.5, "k--", lw=1, label=r"$N^{-1/2}$")
    ax.set_xlabel("N particles")
    ax.set_ylabel("moment error at t")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _ellipse(ax: Any, mu: np.ndarray, S: np.ndarray, **kw: Any) -> None:
    """One-standard-deviation ellipse of N(mu, S) (a segment when S is singular)."""
    w, U = np.linalg.eigh(S)
    th = np.linspace(0, 2 * np.pi, 100)
    pts = mu[:, None] + U @ (np.sqrt(np.clip(w, 0, None))[:, None] * np.vstack([np.cos(th), np.sin(th)]))
    ax.plot(pts[0], pts[1], **kw)


def plot_mean_matching(runs: Sequence[tuple[str, Any]], target: np.ndarray, path: Path) -> Path:
    """Section 5.1 / Figure 1: mean trajectories reach the target; covariance ellipses over time."""
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 4))
    for ax, (label, sol) in zip(np.atleast_1d(axes), runs):
        ax.plot(sol.mu[:, 0], sol.mu[:, 1], "k-", lw=1)
        for t_mark, color in zip((0, 1, 5, 10, 100), ("C0", "C1", "C2", "C3", "C4")):
            k = int(np.argmin(np.abs(sol.t - t_mark)))
            _ellipse(ax, sol.mu[k], sol.Sigma[k], color=color, lw=1.2, label=f"t={sol.t[k]:.0f}")
        ax.plot(*target, "r*", ms=12, label="target")
        ax.set_title(label, fontsize=9)
        ax.set_aspect("equal", "datalim")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


Panel = tuple[str, Sequence[tuple[str, np.ndarray, np.ndarray]], Sequence[tuple[str, float]]]


def plot_regimes(panels: Sequence[Panel], path: Path) -> Path:
    """Panels of tr Sigma(t) on a log scale, each with vertical marks (e.g. certified bounds)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.6))
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
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def plot_relu_w2(study: Any, path: Path) -> Path:
    """Prop 2.4: distances between the ReLU cloud and the Gaussian evolution against t·slope."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ax.plot(study.t, study.coupling_l2, "o-", label=r"synchronous coupling $\|X_t-Y_t\|_{L^2}$")
    ax.plot(study.t, study.w2_empirical, "s--", label="two-sample $W_2$ (exact assignment)")
    ax.plot(study.t, study.w2_gaussian, "^-", label=r"$W_2$(moment-matched ReLU cloud, $\nu_t$)")
    ax.plot(study.t, study.first_order_bound, "k:", label=r"$t\,\|\max(0,-(Ax+b))\|_{L^2(\rho_0)}$")
    ax.set_xlabel("t")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
