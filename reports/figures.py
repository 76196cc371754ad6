"""Headless matplotlib figures (Agg backend; nothing needs a display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


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
    fig.savefig(path, dpi=110)
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
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
