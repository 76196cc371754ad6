"""Headless matplotlib figures (Agg backend; nothing needs a display), in one style, checked for legibility.

Every report figure takes its size, resolution and fonts from :data:`STYLE`: it is created by
:func:`subplots` or :func:`new_figure` (size from the number of panels) and written by
:func:`save_figure`, which

* lays the figure out (tight layout, :data:`STYLE` dpi) and refuses it (:class:`FigureError`) when
  anything drawn is clipped by the figure's edge, when two labels (titles, axis labels, legend
  entries) overlap, when a text would be under ``STYLE["min_text_px"]`` pixels
  high in the report's column at an 800-px window (``STYLE["column_px"]``), when an axis has no
  label, or when an axes draws several lines and has no legend (:func:`figure_problems`);
* writes, for a figure of two or more panels in one row, a second file ``<stem>.narrow.png`` with
  the same panels in two rows: the page shows it below 1000 px (a ``<picture>`` source,
  :func:`flowcert.reports.html.render_page`), so a panel never shrinks below legibility.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from ..outputs import save_figure as _write_figure  # noqa: E402

#: The one style of the report's figures: matplotlib settings, saved resolution, panel sizes (inches),
#: and the legibility rules :func:`save_figure` enforces.
STYLE: dict[str, Any] = {
    "rc": {"font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
           "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.titlesize": 10,
           "lines.linewidth": 1.3, "lines.markersize": 5, "legend.framealpha": 0.85},
    "dpi": 110,
    "panel_width": 5.2,        # one panel
    "extra_panel_width": 3.4,  # each further panel in a row
    "max_width": 12.0,
    "height": 3.4,             # one row of panels
    "square": 4.4,             # a 3-D view or an equal-aspect plot
    "column_px": 760,          # the report's text column in an 800-px window
    "min_text_px": 9.0,        # no text smaller than this in that column
}
plt.rcParams.update(STYLE["rc"])


class FigureError(ValueError):
    """A report figure breaks a rule of :data:`STYLE` (clipped or too small text, an unlabelled axis, a legend missing)."""


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


def _texts(fig: Any) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.figure is fig]


def _data_lines(ax: Any) -> list[Any]:
    """Lines drawn in data coordinates with data: not reference lines (``axvline``) nor the caps of error bars."""
    from matplotlib.container import ErrorbarContainer

    caps: set[int] = set()
    for c in ax.containers:
        bars = c if isinstance(c, ErrorbarContainer) else getattr(c, "errorbar", None)
        if bars is not None:
            line, caplines, _ = bars.lines
            caps |= {id(x) for x in (line, *caplines) if x is not None}
    return [ln for ln in ax.get_lines() if ln.get_visible() and ln.get_transform() == ax.transData
            and len(ln.get_xdata()) and id(ln) not in caps]


def _major_texts(fig: Any) -> list[Text]:
    """Titles, axis labels (colorbars' too), legend entries and the figure's title: the words a reader reads."""
    out: list[Text] = []
    for ax in [*fig.axes, *(c for a in fig.axes for c in a.child_axes)]:
        if not ax.get_visible():
            continue
        out += [ax.title, *(getattr(ax, f"{n}axis").label for n in ("x", "y", "z") if hasattr(ax, f"{n}axis"))]
        if ax.get_legend() is not None:
            out += ax.get_legend().get_texts()
    out += [t for legend in fig.legends for t in legend.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle)
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def figure_problems(fig: Any, served_width_px: float) -> list[str]:
    """What breaks :data:`STYLE` in a laid-out figure shown ``served_width_px`` wide in its natural size.

    The figure is drawn once: what it draws must lie inside it (its tight bounding box), and each
    visible text's size is scaled to the report's column at an 800-px window (``STYLE["column_px"]``).
    """
    fig.canvas.draw()  # legends find their place, and ticks their labels, when drawn
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, STYLE["column_px"] / served_width_px) * STYLE["dpi"] / 72.0
    problems = []
    # what is drawn (texts, legends, ticks in view) must lie inside the figure: its tight box, in inches
    drawn, (w, h) = fig.get_tightbbox(renderer), fig.get_size_inches()
    over = {"left": -drawn.x0, "bottom": -drawn.y0, "right": drawn.x1 - w, "top": drawn.y1 - h}
    problems += [f"drawn content is clipped {v * STYLE['dpi']:.0f} px at the {side}"
                 for side, v in over.items() if v * STYLE["dpi"] > 1.5]
    for t in _texts(fig):
        label = " ".join(t.get_text().split())[:40]
        px = t.get_fontsize() * scale
        if px < STYLE["min_text_px"] - 1e-9:
            problems.append(f"text {label!r} is {px:.1f} px high at an 800-px window (< {STYLE['min_text_px']:g})")
    labels = _major_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            a, b = boxes[i], boxes[j]
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                problems.append(f"texts {labels[i].get_text()[:30]!r} and {labels[j].get_text()[:30]!r} overlap")
    # panels of one figure may share one legend (on one panel or on the figure)
    has_legend = bool(fig.legends) or any(ax.get_legend() is not None for ax in fig.axes)
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        names = ("x", "y", "z") if hasattr(ax, "get_zlabel") else ("x", "y")
        missing = [n for n in names if not getattr(ax, f"get_{n}label")().strip()]
        if missing and not _is_inset(ax):
            problems.append(f"axes {ax.get_title()!r}: no {'/'.join(missing)} label")
        if len(_data_lines(ax)) >= 2 and not has_legend:
            problems.append(f"axes {ax.get_title()!r}: {len(_data_lines(ax))} lines and no legend in the figure")
    return problems


def _is_inset(ax: Any) -> bool:
    """An axes placed inside another one (an inset or a colorbar made by :func:`colorbar`): it moves with its host."""
    return ax.get_axes_locator() is not None or hasattr(ax, "_colorbar")


def colorbar(fig: Any, mappable: Any, ax: Any, label: str) -> Any:
    """A labelled colorbar in an inset at the right of ``ax`` (it moves with ``ax`` when the panels wrap)."""
    cax = ax.inset_axes((1.04, 0.0, 0.05, 1.0))
    bar = fig.colorbar(mappable, cax=cax)
    bar.set_label(label)
    return bar


def _panel_groups(fig: Any) -> list[list[Any]] | None:
    """The panels of a one-row figure (twins grouped with their host), left to right; None if not one row."""
    specs: dict[tuple[int, int], list[Any]] = {}
    grids = set()
    for ax in fig.axes:
        if _is_inset(ax):
            continue
        ss = ax.get_subplotspec()
        if ss is None:
            return None
        grids.add(id(ss.get_gridspec()))
        specs.setdefault((ss.colspan.start, ss.rowspan.start), []).append(ax)
    if len(grids) != 1 or len(specs) < 2 or any(row for _, row in specs):
        return None
    return [specs[k] for k in sorted(specs)]


def _regrid_two_rows(fig: Any, groups: list[list[Any]]) -> None:
    cols = math.ceil(len(groups) / 2)
    grid = fig.add_gridspec(2, cols)
    for i, group in enumerate(groups):
        for ax in group:
            ax.set_subplotspec(grid[i // cols, i % cols])
    fig.set_size_inches(*figure_size(cols, 2))


def _layout(fig: Any) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 3-D axes are not tight-layout compatible; they keep their box
        fig.tight_layout()


def save_figure(fig: Any, path: Path | str, narrow: bool = True) -> Path:
    """Write a report figure (PNG at :data:`STYLE` dpi) and, for a one-row multi-panel figure, its
    two-row form ``<stem>.narrow.png`` (a report's narrow pages; not with ``narrow=False``, as for a
    file the user named); the figure is closed.

    Raises
    ------
    FigureError
        The figure breaks :data:`STYLE` (:func:`figure_problems`); nothing is written.
    """
    from .html import narrow_variant

    path = Path(path)
    try:
        _layout(fig)
        wide_px = fig.get_size_inches()[0] * STYLE["dpi"]
        groups = _panel_groups(fig)
        # a one-row multi-panel figure is served at its natural width only on wide pages (>= 1000 px)
        problems = figure_problems(fig, wide_px if groups is None else STYLE["column_px"])
        if problems:
            raise FigureError(f"{path.name}: " + "; ".join(problems))
        written = _write_figure(fig, path, dpi=STYLE["dpi"])  # temp file + rename: never through a link
        if groups is not None and narrow:
            _regrid_two_rows(fig, groups)
            _layout(fig)
            problems = figure_problems(fig, fig.get_size_inches()[0] * STYLE["dpi"])
            if problems:
                path.unlink(missing_ok=True)
                raise FigureError(f"{path.name} (two rows): " + "; ".join(problems))
            _write_figure(fig, narrow_variant(path), dpi=STYLE["dpi"])
        return written
    finally:
        plt.close(fig)


def _label_lines(lines: Sequence[Any], names: Sequence[str], most: int = 8) -> None:
    """Legend labels for a family of curves: each by name, or the first one for all when there are many."""
    for i, (ln, name) in enumerate(zip(lines, names)):
        ln.set_label(name if len(names) <= most else (f"{names[0]} … {names[-1]}" if i == 0 else "_nolegend_"))


def plot_moments(sol: Any, path: Path, title: str = "Gaussian Transformer moments, eq. (7)",
                 narrow: bool = True) -> Path:
    """Mean components and covariance eigenvalues against time, every curve in a legend."""
    fig, (ax1, ax2) = subplots(1, 2)
    d = sol.mu.shape[1]
    _label_lines(ax1.plot(sol.t, sol.mu), [f"$\\mu_{{{i + 1}}}(t)$" for i in range(d)])
    ax1.set_xlabel("t")
    ax1.set_ylabel(r"mean $\mu_i(t)$")
    ax1.set_title(r"mean $\mu(t)$")
    eig = np.linalg.eigvalsh(sol.Sigma)
    _label_lines(ax2.semilogy(sol.t, np.clip(eig, 1e-300, None)),
                 [f"$\\lambda_{{{i + 1}}}(\\Sigma(t))$" for i in range(eig.shape[1])])
    ax2.set_xlabel("t")
    ax2.set_ylabel(r"eigenvalues of $\Sigma(t)$")
    ax2.set_title(r"covariance $\Sigma(t)$")
    if sol.blowup_time is not None:
        for ax in (ax1, ax2):
            ax.axvline(sol.blowup_time, color="k", ls=":", lw=1, label="blow-up time")
    for ax in (ax1, ax2):
        ax.legend()
    fig.suptitle(title)
    save_figure(fig, path, narrow=narrow)
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
        ax.set_title(label)
        ax.set_xlabel(r"$\mu_1$")
        ax.set_ylabel(r"$\mu_2$")
        ax.set_aspect("equal", "datalim")
    np.atleast_1d(axes)[0].plot([], [], "k-", lw=1, label=r"mean $\mu(t)$")
    np.atleast_1d(axes)[0].legend()
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
            ax.annotate(label, (x, 0.5), xycoords=("data", "axes fraction"), rotation=90, ha="right")
        ax.set_title(title)
        ax.set_xlabel("t")
        ax.set_ylabel(r"tr $\Sigma(t)$ (clipped at 1e-14)")
        ax.legend()
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
    ax.set_ylabel("distance")
    ax.legend()
    save_figure(fig, path)
    return path
