r"""Integrator controls shared by every system: evaluation budgets, stiffness switching, failure.

An explicit Runge–Kutta step of size :math:`h` on :math:`\dot y=f(y)` is stable while
:math:`h\rho\lesssim c_{\rm stab}`, :math:`\rho` the spectral radius of :math:`\partial f/\partial y`,
estimated on the fly by :math:`\rho\approx\|f(y_{k+1})-f(y_k)\|/\|y_{k+1}-y_k\|`. When a window of
steps sits at that boundary (:class:`StiffnessMonitor`), :func:`solve_switching` restarts with
the implicit ``Radau`` method; every run has a budget of field evaluations (and, optionally, of
CPU seconds), and a run that neither method finishes raises :class:`IntegrationFailed`.
(Used for the moment ODE, gaussian paper eq. (7), and for any system integrated with
``scipy.integrate.solve_ivp``.)

Radau forms a dense :math:`N\times N` Jacobian of the :math:`N` states (and factors a complex one
of the same size): for the moment system :math:`N=d+d^2`, about :math:`2\cdot10^{10}` entries at
:math:`d=384`. The switch is therefore taken only up to :data:`IMPLICIT_MAX_STATES` states; above
it the explicit method goes on within its budget and a run it cannot finish fails with the reason
``budget`` and the time reached. :func:`stage_budget` bounds any stage of a job in CPU time
(:class:`BudgetExceeded`).
"""

from __future__ import annotations

import signal
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np


Array = np.ndarray

#: Largest state count for which the stiffness switch may hand the run to ``Radau`` (its dense
#: Jacobian and complex LU then take at most about 3 * 8 * N^2 bytes = 0.2 GB).
IMPLICIT_MAX_STATES = 3000


class BudgetExceeded(BaseException):
    """A stage ran past its CPU-time budget (raised by :func:`stage_budget`).

    A ``BaseException``, so that the ``except Exception`` of the stage's own code does not turn
    the interruption into a verdict: only the guard that set the budget catches it.
    """

    def __init__(self, what: str, seconds: float, spent: str | None = None) -> None:
        super().__init__(spent or f"budget: {what} stopped after {seconds:g} s of CPU time")
        self.what, self.seconds = what, seconds


#: ``[process CPU time at which the enclosing command budget ends, its description]`` (None: no budget).
_COMMAND: list = [None, ""]


@contextmanager
def command_budget(seconds: float | None, what: str) -> Iterator[None]:
    """A CPU-time deadline that every :func:`stage_budget` and :func:`solve_switching` inside respects.

    A stage gets at most what is left of the deadline; a stage that starts after the deadline is
    refused at once (:class:`BudgetExceeded`, its reason naming ``what``), so the stages of one
    command together end within ``seconds`` plus the unbudgeted glue between them. Deadlines nest
    (the earlier one governs); the previous one is restored on exit. Thread-local use only.
    """
    previous = list(_COMMAND)
    if seconds is not None:
        end = time.process_time() + seconds
        if previous[0] is None or end < previous[0]:
            _COMMAND[:] = [end, f"{what} ({seconds:g} s of CPU time)"]
    try:
        yield
    finally:
        _COMMAND[:] = previous


def budget_left(seconds: float | None) -> float | None:
    """``seconds`` capped by what is left of the enclosing :func:`command_budget` (None: unbounded)."""
    if _COMMAND[0] is None:
        return seconds
    left = _COMMAND[0] - time.process_time()
    return left if seconds is None else min(seconds, left)


@contextmanager
def stage_budget(seconds: float | None, what: str) -> Iterator[None]:
    """Raise :class:`BudgetExceeded` in the block once it has used ``seconds`` of CPU time.

    CPU time of the process (``ITIMER_PROF``, all threads), not wall-clock time: a verdict must not
    depend on how loaded a shared machine is (on an idle machine with one BLAS thread the two agree).
    Acts in the main thread of a POSIX process only (elsewhere the block runs unbounded), and
    leaves ``SIGALRM`` timers (a caller's wall-clock limit) alone. Budgets nest: an inner budget
    never outlives the outer one, and the outer timer is restored (less the time spent) on exit.
    ``seconds`` is capped by the enclosing :func:`command_budget`; once that is spent the stage is
    refused before it starts. The exception is raised between Python bytecodes, so a single long
    LAPACK call finishes first.
    """
    capped = budget_left(seconds)
    if capped is not None and capped <= 0:
        raise BudgetExceeded(what, 0.0, f"budget: {what} not started, {_COMMAND[1]} is spent")
    seconds = capped
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    assert seconds is not None
    outer_left, _ = signal.getitimer(signal.ITIMER_PROF)
    if outer_left and outer_left <= seconds:
        yield  # the enclosing budget ends first: it governs
        return

    def _alarm(signum: int, frame: object) -> None:
        raise BudgetExceeded(what, seconds)

    start = time.process_time()
    previous = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0.0)
        signal.signal(signal.SIGPROF, previous)
        if outer_left:
            signal.setitimer(signal.ITIMER_PROF, max(outer_left - (time.process_time() - start), 1e-3))


class Stalled(RuntimeError):
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

    def __init__(self, message: str, method: str, reason: str = "failed", t_reached: float | None = None) -> None:
        super().__init__(message)
        self.method = method  # the last method tried
        self.reason = reason  # "budget" when an evaluation, time or size budget stopped it
        self.t_reached = t_reached  # the last time at which the field was evaluated


def solve_switching(
    f: Callable[[float, Array], Array],
    span: tuple[float, float],
    y0: Array,
    *,
    method: str = "DOP853",
    jac: Callable[[float, Array], Array] | None = None,
    max_evaluations: int = 2_000_000,
    implicit_rtol: float | None = None,
    max_seconds: float | None = None,
    implicit_max_states: int | None = None,
    **options: object,
) -> tuple[object, str, str]:
    r"""``solve_ivp`` with an evaluation budget and a switch to ``Radau`` when the explicit method
    is stability-limited (:class:`StiffnessMonitor`), stalls or fails. A budget spent with every
    window accuracy-limited (:math:`h\rho` below the stiffness limit) is not retried.
    ``implicit_rtol`` loosens ``rtol`` for ``Radau`` (order 5: at rtol 1e-10 it takes about ten
    times the steps it needs at 1e-8); the note says so.

    ``max_seconds`` bounds the CPU time (``time.process_time``) of the whole call (both methods). Above
    ``implicit_max_states`` states (default :data:`IMPLICIT_MAX_STATES`) there is no switch: the
    explicit method runs on within its budgets, since ``Radau`` would form a dense Jacobian of
    the states.

    Returns ``(solution, method used, note)``; the note says why a switch happened. Raises
    :class:`IntegrationFailed` when the implicit method fails too, or when a budget stops the
    run (``reason`` ``"budget"``, ``t_reached`` the last time evaluated).
    """
    from scipy.integrate import solve_ivp  # here, not at import: a re-check integrates nothing

    note = ""
    size_cap = IMPLICIT_MAX_STATES if implicit_max_states is None else implicit_max_states
    may_switch = int(np.size(y0)) <= size_cap
    max_seconds = budget_left(max_seconds)  # within the enclosing command budget
    max_seconds = None if max_seconds is None else max(max_seconds, 0.0)
    deadline = None if max_seconds is None else time.process_time() + max_seconds
    reached = [float(span[0])]
    for meth in (method, "Radau") if may_switch else (method,):
        implicit = meth in ("Radau", "BDF", "LSODA")
        monitor = None if implicit or not may_switch else StiffnessMonitor()
        count = [0]

        def counted(t: float, y: Array, monitor: StiffnessMonitor | None = monitor) -> Array:
            count[0] += 1
            if count[0] > max_evaluations:
                raise Stalled(f"more than {max_evaluations} field evaluations")
            if deadline is not None and time.process_time() > deadline:
                raise Stalled(f"more than {max_seconds:g} s of CPU time")
            reached[0] = max(reached[0], float(t))
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
        except (Stalled, _Stiff, ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
            budget = "budget" if isinstance(exc, Stalled) else "failed"
            where = f" (reached t = {reached[0]:.6g} of {span[1]:.6g})" if budget == "budget" else ""
            if implicit:
                raise IntegrationFailed(f"{note}{meth}: {exc}{where}", meth, budget, reached[0]) from exc
            if deadline is not None and time.process_time() > deadline:
                raise IntegrationFailed(f"{note}{meth}: {exc}{where}", meth, "budget", reached[0]) from exc
            if not may_switch:
                why = ("explicit only" if size_cap == 0 else f"{np.size(y0)} states exceed {size_cap}, the largest "
                       "system the implicit method is given (its dense Jacobian)")
                raise IntegrationFailed(f"{meth}: {exc}{where}; {why}, so no implicit retry", meth, budget,
                                        reached[0]) from exc
            if isinstance(exc, Stalled) and monitor is not None and not monitor.flagged:
                # the budget went on accuracy, not stability: an implicit method would cost more, not less
                raise IntegrationFailed(f"{meth}: {exc}{where}; not stiff (h rho < {monitor.limit:g} "
                                        "throughout), so no implicit retry", meth, "budget", reached[0]) from exc
            note = f"{meth} -> Radau ({exc}); "
            continue
        if sol.status != -1 or implicit or not may_switch:
            return sol, meth, note
        note = f"{meth} -> Radau ({sol.message}); "
    raise AssertionError("unreachable")
