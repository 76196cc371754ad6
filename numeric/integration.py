r"""Integrator controls shared by every system: evaluation budgets, stiffness switching, failure.

An explicit Runge–Kutta step of size :math:`h` on :math:`\dot y=f(y)` is stable while
:math:`h\rho\lesssim c_{\rm stab}`, :math:`\rho` the spectral radius of :math:`\partial f/\partial y`,
estimated on the fly by :math:`\rho\approx\|f(y_{k+1})-f(y_k)\|/\|y_{k+1}-y_k\|`. When a window of
steps sits at that boundary (:class:`StiffnessMonitor`), :func:`solve_switching` restarts with
the implicit ``Radau`` method; every run has a budget of field evaluations, and a run that
neither method finishes raises :class:`IntegrationFailed`. (Used for the moment ODE, gaussian
paper eq. (7), and for any system integrated with ``scipy.integrate.solve_ivp``.)
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp


Array = np.ndarray


class _Stalled(RuntimeError):
    """The integrator exceeded its budget of field evaluations."""


class _Stiff(RuntimeError):
    """The explicit method's steps are limited by stability, not accuracy."""


class StiffnessMonitor:
    r"""Detect stability-limited explicit steps from the field evaluations alone.

    Over windows of ``window`` evaluations, :math:`\bar h` is the time advanced per step
    (``stages`` evaluations a step) and :math:`\rho` the largest quotient
    :math:`\|f(y_i)-f(y_{i-1})\|/\|y_i-y_{i-1}\|` of consecutive stage evaluations, a
    lower estimate of the dominant :math:`|\lambda(J)|` once it dominates the stages (Hairer &
    Wanner, *Solving ODEs II*, IV.2). :math:`\bar h\rho\ge` ``limit`` in ``patience``
    consecutive windows means the step sits at the stability boundary (DOP853: about 6 on the
    negative real axis; accuracy at rtol 1e-10 needs :math:`h\rho\approx0.06`), so the problem
    is stiff and :meth:`observe` raises :class:`_Stiff`.

    A window whose largest quotient belongs to a *growth* direction is not counted: with
    :math:`\delta y=y_i-y_{i-1}`, :math:`\delta f=f(y_i)-f(y_{i-1})`, a Rayleigh quotient
    :math:`q=\delta f^\top\delta y/\|\delta y\|^2\ge\rho/2` says the dominant mode expands
    (near a finite-time blow-up :math:`\rho\sim\|\Sigma\|` grows within the window, so the
    window's mean step times its final :math:`\rho` overstates :math:`h\rho`). Such steps are
    limited by accuracy, and an implicit method only makes them dearer.
    """

    def __init__(self, window: int = 600, stages: int = 12, limit: float = 2.0, patience: int = 3) -> None:
        self.window, self.stages, self.limit, self.patience = window, stages, limit, patience
        self.count, self.hits, self.rho, self.q = 0, 0, 0.0, 0.0
        self.flagged = False  # some window reached h rho >= limit: a step at the stability boundary
        self.t_start: float | None = None
        self.last: tuple[Array, Array] | None = None

    def observe(self, t: float, y: Array, f: Array) -> None:
        if self.t_start is None:
            self.t_start = t
        if self.last is not None:
            dy = float(np.linalg.norm(y - self.last[0]))
            if dy > 0:
                df = f - self.last[1]
                rho = float(np.linalg.norm(df)) / dy
                if rho > self.rho:
                    self.rho, self.q = rho, float(np.dot(df, y - self.last[0])) / dy**2
        self.last = (y.copy(), f.copy())
        self.count += 1
        if self.count < self.window:
            return
        h = (t - self.t_start) * self.stages / self.count
        at_boundary = h * self.rho >= self.limit and not self.q >= 0.5 * self.rho
        self.hits = self.hits + 1 if at_boundary else 0
        self.flagged = self.flagged or at_boundary
        if self.hits >= self.patience:
            raise _Stiff(f"stiff near t = {t:.6g} (h rho = {h * self.rho:.3g})")
        self.count, self.rho, self.q, self.t_start = 0, 0.0, 0.0, t


class IntegrationFailed(RuntimeError):
    """Neither the explicit nor the implicit method finished (budget, overflow, singular Newton)."""

    def __init__(self, message: str, method: str) -> None:
        super().__init__(message)
        self.method = method  # the last method tried


def solve_switching(
    f: Callable[[float, Array], Array],
    span: tuple[float, float],
    y0: Array,
    *,
    method: str = "DOP853",
    jac: Callable[[float, Array], Array] | None = None,
    max_evaluations: int = 2_000_000,
    implicit_rtol: float | None = None,
    **options: object,
) -> tuple[object, str, str]:
    r"""``solve_ivp`` with an evaluation budget and a switch to ``Radau`` when the explicit method
    is stability-limited (:class:`StiffnessMonitor`), stalls or fails. A budget spent with every
    window accuracy-limited (:math:`h\rho` below the stiffness limit) is not retried.
    ``implicit_rtol`` loosens ``rtol`` for ``Radau`` (order 5: at rtol 1e-10 it takes about ten
    times the steps it needs at 1e-8); the note says so.

    Returns ``(solution, method used, note)``; the note says why a switch happened. Raises
    :class:`IntegrationFailed` when the implicit method fails too.
    """
    note = ""
    for meth in (method, "Radau"):
        implicit = meth in ("Radau", "BDF", "LSODA")
        monitor = None if implicit else StiffnessMonitor()
        count = [0]

        def counted(t: float, y: Array, monitor: StiffnessMonitor | None = monitor) -> Array:
            count[0] += 1
            if count[0] > max_evaluations:
                raise _Stalled(f"more than {max_evaluations} field evaluations")
            fy = f(t, y)
            if monitor is not None:
                monitor.observe(t, y, fy)
            return fy

        extra = {"jac": jac} if implicit and jac is not None else {}
        if implicit and implicit_rtol is not None and float(options.get("rtol", 1e-3)) < implicit_rtol:  # type: ignore[arg-type]
            extra["rtol"] = implicit_rtol
            note += f"Radau at rtol {implicit_rtol:g}; "
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                sol = solve_ivp(counted, span, y0, method=meth, **{**options, **extra})
        except (_Stalled, _Stiff, ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
            if implicit:
                raise IntegrationFailed(f"{note}{meth}: {exc}", meth) from exc
            if isinstance(exc, _Stalled) and monitor is not None and not monitor.flagged:
                # the budget went on accuracy, not stability: an implicit method would cost more, not less
                raise IntegrationFailed(f"{meth}: {exc}; not stiff (h rho < {monitor.limit:g} "
                                        "throughout), so no implicit retry", meth) from exc
            note = f"{meth} -> Radau ({exc}); "
            continue
        if sol.status != -1 or implicit:
            return sol, meth, note
        note = f"{meth} -> Radau ({sol.message}); "
    raise AssertionError("unreachable")
