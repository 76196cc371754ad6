r"""Numerics of the Gaussian Transformer (gaussian paper, eqs. (2) and (7)).

Moment ODE, integrated with an adaptive Runge–Kutta method and a terminal blow-up event:

.. math::

    \dot\mu = (A+V+V\Sigma B)\mu + b,\qquad
    \dot\Sigma = A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

Its kernel and the Fréchet derivative
:math:`DF_\Sigma[\Delta]=M\Delta+\Delta M^\top+V\Delta B\Sigma+\Sigma B^\top\Delta V^\top`
are generated from :mod:`flowcert.symbolic.gaussian`. Equilibria solve
:math:`F(\Sigma)=0` by Newton's method in :math:`\mathrm{vech}` coordinates.

Particle system, eq. (2), with empirical attention:

.. math::

    \dot x_i = \sigma(Ax_i+b) + \sum_j \frac{e^{x_j^\top Bx_i}}{\sum_\ell e^{x_\ell^\top Bx_i}} V x_j .
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from scipy.integrate import solve_ivp

from ..symbolic import codegen
from ..symbolic.gaussian import linearisation_program, moment_program

Array = np.ndarray
Coefficients = Callable[[float], tuple[Array, Array, Array, Array]]


@lru_cache(maxsize=None)
def moment_kernel() -> Callable[..., tuple[Array, Array]]:
    """numpy kernel ``(A, B, V, b, mu, Sigma) -> (mu_dot, Sigma_dot)`` generated from SymPy."""
    return codegen.NumpyPrinter().compile(moment_program())


@lru_cache(maxsize=None)
def _linearisation_kernel() -> Callable[..., tuple[Array]]:
    return codegen.NumpyPrinter().compile(linearisation_program())


def constant(A: Array, B: Array, V: Array, b: Array) -> Coefficients:
    """Coefficients that do not depend on time."""
    return lambda t: (A, B, V, b)


# ---------------------------------------------------------------------------------------
# vech coordinates on symmetric matrices
# ---------------------------------------------------------------------------------------


def vech_indices(d: int) -> tuple[Array, Array]:
    """Row and column indices of the upper triangle, the order of :math:`\\mathrm{vech}`."""
    return np.triu_indices(d)


def symmetric_basis(d: int) -> Array:
    r"""Basis :math:`E^{(ij)}=e_ie_j^\top+e_je_i^\top` (:math:`i<j`), :math:`E^{(ii)}=e_ie_i^\top`.

    A symmetric :math:`S` equals :math:`\sum_k \mathrm{vech}(S)_k E^{(k)}`.
    """
    rows, cols = vech_indices(d)
    basis = np.zeros((rows.size, d, d))
    k = np.arange(rows.size)
    basis[k, rows, cols] = 1.0
    basis[k, cols, rows] = 1.0
    return basis


def covariance_field(A: Array, B: Array, V: Array, Sigma: Array) -> Array:
    """:math:`F(\\Sigma)`, through the generated kernel (mean part discarded)."""
    d = A.shape[-1]
    return moment_kernel()(A, B, V, np.zeros(d), np.zeros(Sigma.shape[:-1]), Sigma)[1]


def jacobian_vech(A: Array, B: Array, V: Array, Sigma: Array) -> Array:
    """Matrix of :math:`DF_\\Sigma` on symmetric matrices in :math:`\\mathrm{vech}` coordinates."""
    d = A.shape[-1]
    rows, cols = vech_indices(d)
    images = _linearisation_kernel()(A, B, V, Sigma, symmetric_basis(d))[0]
    return images[:, rows, cols].T


# ---------------------------------------------------------------------------------------
# Moment ODE
# ---------------------------------------------------------------------------------------


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
    """

    def __init__(self, window: int = 600, stages: int = 12, limit: float = 2.0, patience: int = 3) -> None:
        self.window, self.stages, self.limit, self.patience = window, stages, limit, patience
        self.count, self.hits, self.rho = 0, 0, 0.0
        self.flagged = False  # some window reached h rho >= limit: a step at the stability boundary
        self.t_start: float | None = None
        self.last: tuple[Array, Array] | None = None

    def observe(self, t: float, y: Array, f: Array) -> None:
        if self.t_start is None:
            self.t_start = t
        if self.last is not None:
            dy = float(np.linalg.norm(y - self.last[0]))
            if dy > 0:
                self.rho = max(self.rho, float(np.linalg.norm(f - self.last[1])) / dy)
        self.last = (y.copy(), f.copy())
        self.count += 1
        if self.count < self.window:
            return
        h = (t - self.t_start) * self.stages / self.count
        at_boundary = h * self.rho >= self.limit
        self.hits = self.hits + 1 if at_boundary else 0
        self.flagged = self.flagged or at_boundary
        if self.hits >= self.patience:
            raise _Stiff(f"stiff near t = {t:.6g} (h rho = {h * self.rho:.3g})")
        self.count, self.rho, self.t_start = 0, 0.0, t


def moment_jacobian(A: Array, B: Array, V: Array, mu: Array, Sigma: Array) -> Array:
    r"""Jacobian of eq. (7) in the coordinates :math:`y=(\mu,\operatorname{vec}_{\rm row}\Sigma)`.

    The :math:`\Sigma` block applies the generated Fréchet derivative to every
    :math:`e_ke_l^\top`; :math:`\partial\dot\mu/\partial\mu=A+V+V\Sigma B` and
    :math:`\partial\dot\mu/\partial\Sigma_{kl}=V_{:k}(B\mu)_l`.
    """
    d = A.shape[-1]
    n = d + d * d
    J = np.zeros((n, n))
    units = np.eye(d * d).reshape(d * d, d, d)
    J[d:, d:] = _linearisation_kernel()(A, B, V, Sigma, units)[0].reshape(d * d, d * d).T
    J[:d, :d] = A + V + V @ Sigma @ B
    J[:d, d:] = np.einsum("ik,l->ikl", V, B @ mu).reshape(d, d * d)
    return J


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
    """``solve_ivp`` with an evaluation budget and a switch to ``Radau`` when the explicit method
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


def manifold_drift(Sigma: Array) -> dict[str, float]:
    r"""Largest departures of a covariance trajectory from :math:`\mathrm{Sym}^+(d)`.

    ``asymmetry`` is :math:`\max_t\|\Sigma-\Sigma^\top\|_F/\|\Sigma\|_F` and
    ``negative_eigenvalue`` is :math:`\max_t\max(0,-\lambda_{\min}(\tfrac12(\Sigma+\Sigma^\top)))/\|\Sigma\|_2`
    (Lemma 3.1 keeps :math:`\Sigma(t)` symmetric positive semidefinite).
    """
    if Sigma.size == 0:
        return {"asymmetry": 0.0, "negative_eigenvalue": 0.0}
    with np.errstate(all="ignore"):
        norms = np.maximum(np.linalg.norm(Sigma, axis=(-2, -1)), 1e-300)
        asym = np.linalg.norm(Sigma - np.swapaxes(Sigma, -1, -2), axis=(-2, -1)) / norms
        sym = 0.5 * (Sigma + np.swapaxes(Sigma, -1, -2))
        finite = np.all(np.isfinite(sym), axis=(-2, -1))
        w = np.linalg.eigvalsh(np.where(finite[:, None, None], sym, 0.0))
        neg = np.maximum(0.0, -w[:, 0]) / np.maximum(np.abs(w).max(axis=-1), 1e-300) + 0.0
    return {"asymmetry": float(np.nanmax(asym)), "negative_eigenvalue": float(np.nanmax(neg))}


@dataclass
class MomentSolution:
    """Trajectory of eq. (7). ``status`` is ``ok``, ``blowup`` or ``failed``."""

    t: Array
    mu: Array
    Sigma: Array
    status: str
    blowup_time: float | None
    message: str
    method: str = ""
    drift: dict[str, float] | None = None
    mean_escape_time: float | None = None


def _pack(mu: Array, Sigma: Array) -> Array:
    return np.concatenate([mu, Sigma.ravel()])


def _unpack(y: Array, d: int) -> tuple[Array, Array]:
    return y[:d], y[d:].reshape(d, d)


def _states(sol: Any, d: int) -> Array:
    """Rows ``(mu, vec Sigma)`` of a ``solve_ivp`` result (no rows when no ``t_eval`` point was reached)."""
    return np.asarray(sol.y, dtype=float).reshape(d + d * d, -1).T


def _log2_size(M: Array) -> float:
    r""":math:`\log_2\max|M_{ij}|` without overflow (``-inf`` for zero)."""
    m = float(np.abs(M).max()) if M.size else 0.0
    return math.log2(m) if m > 0 else -math.inf


def time_unit(coeffs: Coefficients, Sigma0: Array, *, limit_log2: int = 160) -> float:
    r"""A power of two :math:`c` such that the field in time :math:`\tau=t/c` is of moderate size.

    Eq. (7) is linear in :math:`(A,V,b)` jointly, so :math:`\tfrac{d}{d\tau}=c\,\tfrac{d}{dt}` is
    the same field with :math:`(cA,B,cV,cb)`. Rescaling is exact (a power of two) and used only when the
    rate :math:`\max(|A|,|V|,d|V||B||\Sigma_0|)` exceeds :math:`2^{160}`: scipy's step control
    squares error estimates and fails on time scales below about 1e-150. Entries far below the
    rate (by more than the float64 range) may underflow in the rescaled field: this is a simulation,
    never a certificate.
    """
    A, B, V, _ = coeffs(0.0)
    d = A.shape[-1]
    rate = max(_log2_size(A), _log2_size(V), _log2_size(V) + _log2_size(B) + _log2_size(Sigma0) + math.log2(d))
    if not math.isfinite(rate) or rate <= limit_log2:
        return 1.0
    return math.ldexp(1.0, -min(math.ceil(rate), 1022))  # a normal number: tau_end = t_end / c stays finite


MEAN_ESCAPE = 1e100  # |mu| beyond MEAN_ESCAPE (1 + |mu0| + |b(0)|): the mean has escaped; Sigma goes on alone


def _rescaled(coeffs: Coefficients, c: float) -> Coefficients:
    if c == 1.0:
        return coeffs

    def scaled(tau: float) -> tuple[Array, Array, Array, Array]:
        A, B, V, b = coeffs(c * tau)
        return c * A, B, c * V, c * b

    return scaled


def integrate_moments(
    coeffs: Coefficients,
    mu0: Array,
    Sigma0: Array,
    t_end: float,
    *,
    t_eval: Array | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    blowup_factor: float = 1e8,
    method: str = "DOP853",
    max_evaluations: int = 2_000_000,
    implicit_rtol: float | None = 1e-8,
) -> MomentSolution:
    """Integrate eq. (7) on ``[0, t_end]`` with a terminal blow-up event.

    The event fires when :math:`\\|\\Sigma\\|_F` exceeds ``blowup_factor`` times
    :math:`1+\\|\\Sigma_0\\|_F`; its time is returned as ``blowup_time`` (a lower bound on the
    true blow-up time of the exact solution, up to the integration error). If the explicit
    method is stability-limited (:class:`StiffnessMonitor`) or stalls, the run is repeated with
    the implicit ``Radau`` method and the Jacobian :func:`moment_jacobian`, at ``rtol`` no tighter
    than ``implicit_rtol`` (``None``: ``rtol``). ``method`` names the method that produced the
    answer and ``drift`` is :func:`manifold_drift` of the trajectory.
    """
    d = mu0.shape[0]
    with np.errstate(all="ignore"):
        threshold = blowup_factor * (1.0 + np.linalg.norm(Sigma0))
        escape = min(MEAN_ESCAPE * (1.0 + np.linalg.norm(mu0) + np.linalg.norm(coeffs(0.0)[3])), np.finfo(float).max)
    kernel = moment_kernel()
    c = time_unit(coeffs, Sigma0)
    coeffs = _rescaled(coeffs, c)
    tau_end = min(t_end / c, np.finfo(float).max)
    tau_eval = None if t_eval is None else np.asarray(t_eval) / c
    frozen = [False]  # after the mean escapes, only Sigma is integrated (its equation does not involve mu)

    def rhs(t: float, y: Array) -> Array:
        A, B, V, b = coeffs(t)
        mu, S = _unpack(y, d)
        dmu, dS = kernel(A, B, V, b, mu, S)
        return _pack(np.zeros(d) if frozen[0] else dmu, dS)  # a frozen mean: no 0 * inf = nan

    def jac(t: float, y: Array) -> Array:
        A, B, V, _ = coeffs(t)
        mu, S = _unpack(y, d)
        J = moment_jacobian(A, B, V, mu, S)
        if frozen[0]:
            J[:d] = 0.0
        return J

    def blowup(t: float, y: Array) -> float:
        return threshold - np.linalg.norm(y[d:])

    def mean_escape(t: float, y: Array) -> float:
        return escape - np.linalg.norm(y[:d])

    for event in (blowup, mean_escape):
        event.terminal = True  # type: ignore[attr-defined]
        event.direction = -1  # type: ignore[attr-defined]

    y0 = _pack(mu0, Sigma0)
    with np.errstate(all="ignore"):
        start = rhs(0.0, y0)
    if not np.all(np.isfinite(start)):
        return MomentSolution(np.array([0.0]), mu0[None], Sigma0[None], "failed", None,
                              "the field overflows float64 at t = 0")
    options = dict(jac=jac if d <= 32 else None, max_evaluations=max_evaluations, rtol=rtol, atol=atol,
                   implicit_rtol=implicit_rtol)
    try:
        sol, meth, note = solve_switching(rhs, (0.0, tau_end), y0, method=method, t_eval=tau_eval,
                                          events=[blowup, mean_escape], **options)
    except IntegrationFailed as exc:
        return MomentSolution(np.array([0.0]), mu0[None], Sigma0[None], "failed", None, str(exc), exc.method)
    t, ys = np.asarray(sol.t, dtype=float), _states(sol, d)
    escape_time = None
    if sol.status == 1 and sol.t_events[1].size and not sol.t_events[0].size:
        tau1, y1 = float(sol.t_events[1][0]), sol.y_events[1][0]
        escape_time, frozen[0] = c * tau1, True
        rest = None if tau_eval is None else tau_eval[tau_eval > tau1]
        try:
            sol, meth2, note2 = solve_switching(rhs, (tau1, tau_end), y1, method=method, t_eval=rest,
                                                events=[blowup], **options)
        except IntegrationFailed as exc:
            return MomentSolution(c * t, ys[:, :d], ys[:, d:].reshape(-1, d, d), "failed", None, str(exc), exc.method,
                                  None, escape_time)
        skip = 1 if tau_eval is None else 0  # the dense output repeats tau1
        t, ys = np.concatenate([t, np.asarray(sol.t, dtype=float)[skip:]]), np.vstack([ys, _states(sol, d)[skip:]])
        note += note2 + (f"the mean passed {MEAN_ESCAPE:.0e} (1 + |mu0| + |b|) at t = {escape_time:.6g} and is "
                         "reported as +-inf after; Sigma was integrated on alone; ")
        meth = meth if meth == meth2 else f"{meth}, then {meth2}"
    t = c * t if t_eval is None else np.asarray(t_eval, dtype=float)[: t.size]  # no t_eval point may be reached
    tb = None
    if sol.status == 1 and sol.t_events[0].size:
        tb = c * float(sol.t_events[0][0])
        t, ys = np.append(t, tb), np.vstack([ys, sol.y_events[0][0]])
    mu, S = ys[:, :d].copy(), ys[:, d:].reshape(-1, d, d)
    if escape_time is not None:
        after = t > escape_time
        mu[after] = np.where(mu[after] == 0.0, 0.0, np.copysign(np.inf, mu[after]))
    status = "blowup" if tb is not None else ("ok" if sol.status == 0 else "failed")
    return MomentSolution(t, mu, S, status, tb, note + sol.message, meth, manifold_drift(S), escape_time)


# ---------------------------------------------------------------------------------------
# Equilibria of the covariance equation
# ---------------------------------------------------------------------------------------


def newton_equilibrium(
    A: Array, B: Array, V: Array, Sigma: Array, *, tol: float = 1e-13, max_iter: int = 50
) -> Array | None:
    """Newton's method for :math:`F(\\Sigma)=0` on symmetric matrices; None if it fails."""
    d = A.shape[0]
    rows, cols = vech_indices(d)
    S = 0.5 * (Sigma + Sigma.T)
    scale = 1.0 + np.abs(S).max()
    for _ in range(max_iter):
        F = covariance_field(A, B, V, S)
        if np.abs(F).max() <= tol * scale * scale:
            return S
        J = jacobian_vech(A, B, V, S)
        try:
            step = np.linalg.solve(J, F[rows, cols])
        except np.linalg.LinAlgError:
            return None
        S = S - (np.einsum("k,kij->ij", step, symmetric_basis(d)))
        if not np.all(np.isfinite(S)):
            return None
        scale = 1.0 + np.abs(S).max()
    F = covariance_field(A, B, V, S)
    return S if np.abs(F).max() <= 1e3 * tol * scale * scale else None


# ---------------------------------------------------------------------------------------
# Particles
# ---------------------------------------------------------------------------------------


def relu(z: Array) -> Array:
    """:math:`\\sigma(z)=\\max(0,z)` componentwise."""
    return np.maximum(z, 0.0)


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {"identity": lambda z: z, "relu": relu}


def particle_field(X: Array, A: Array, B: Array, V: Array, b: Array, activation: str = "identity") -> Array:
    """Velocity of eq. (2) for tokens ``X`` of shape ``(n, d)`` (rows are tokens)."""
    logits = X @ B.T @ X.T  # logits[i, j] = x_j^T B x_i
    logits -= logits.max(axis=1, keepdims=True)
    W = np.exp(logits)
    W /= W.sum(axis=1, keepdims=True)
    return ACTIVATIONS[activation](X @ A.T + b) + W @ X @ V.T


def sample_gaussian(mu: Array, Sigma: Array, n: int, rng: np.random.Generator) -> Array:
    """``n`` samples of :math:`\\mathcal N(\\mu,\\Sigma)` for PSD (possibly singular) Σ."""
    w, U = np.linalg.eigh(Sigma)
    w = np.where(w > Sigma.shape[0] * np.finfo(float).eps * max(float(np.abs(w).max()), 0.0), w, 0.0)  # rounding noise
    root = U * np.sqrt(w)
    return mu + rng.standard_normal((n, mu.size)) @ root.T


def simulate_particles(
    coeffs: Coefficients,
    X0: Array,
    t_eval: Array,
    *,
    activation: str = "identity",
    rtol: float = 1e-8,
    atol: float = 1e-10,
    max_evaluations: int = 20_000,
    evaluations: list[int] | None = None,
) -> Array:
    """Integrate eq. (2) from ``X0``; returns the tokens at ``t_eval``, shape ``(k, n, d)``.

    Raises ``FloatingPointError`` when the integration fails or needs more than
    ``max_evaluations`` evaluations of the :math:`O(n^2)` field (a stiff mean field). The number
    of evaluations is appended to ``evaluations`` when given.
    """
    n, d = X0.shape
    count = [0]

    def rhs(t: float, y: Array) -> Array:
        count[0] += 1
        if count[0] > max_evaluations:
            raise _Stalled(f"more than {max_evaluations} evaluations of the particle field (stiff?)")
        A, B, V, b = coeffs(t)
        return particle_field(y.reshape(n, d), A, B, V, b, activation).ravel()

    try:
        sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), X0.ravel(), t_eval=t_eval, rtol=rtol, atol=atol)
    except _Stalled as exc:
        raise FloatingPointError(f"particle integration failed: {exc}") from exc
    if sol.status != 0:
        raise FloatingPointError(f"particle integration failed: {sol.message}")
    if evaluations is not None:
        evaluations.append(count[0])
    return sol.y.T.reshape(-1, n, d)


@dataclass
class ParticleStudy:
    """Empirical moments of N particles against eq. (7), for several N.

    ``errors[k]`` is the mean over seeds of
    :math:`\\|\\hat\\mu_N(t)-\\mu(t)\\|+\\|\\hat\\Sigma_N(t)-\\Sigma(t)\\|_F` at ``t_check``, where
    the moment ODE starts from the sample's own moments (so the error measures the dynamics,
    not the initial sampling). ``rate`` is the least-squares slope of log error vs log N.
    """

    Ns: list[int]
    errors: list[float]
    rate: float
    t_check: float


def particle_study(
    coeffs: Coefficients,
    mu0: Array,
    Sigma0: Array,
    t_check: float,
    Ns: tuple[int, ...] = (100, 200, 400, 800, 1600),
    seeds: int = 3,
    seed: int = 0,
    max_work: float = 5e9,
) -> ParticleStudy:
    """Cross-validate Prop. 2.1: empirical moments of the particle system vs eq. (7).

    The work, field evaluations times :math:`N^2`, is estimated after the smallest ``N``
    (the number of steps is set by the mean field, not by ``N``); a ``FloatingPointError``
    says so when the estimate exceeds ``max_work``.
    """
    rng = np.random.default_rng(seed)
    errors = []
    evaluations: list[int] = []
    for N in Ns:
        if N != Ns[0]:
            work = float(np.mean(evaluations)) * seeds * sum(float(m) ** 2 for m in Ns)
            if work > max_work:
                raise FloatingPointError(
                    f"the particle study would take about {work:.1e} particle-pair evaluations "
                    f"({np.mean(evaluations):.0f} field evaluations per run at N = {Ns[0]}: a stiff mean field); "
                    f"the budget is {max_work:.0e}")
        errs = []
        for _ in range(seeds):
            X0 = sample_gaussian(mu0, Sigma0, N, rng)
            XT = simulate_particles(coeffs, X0, np.array([0.0, t_check]), evaluations=evaluations)[-1]
            m0, S0 = X0.mean(0), np.cov(X0.T, bias=True).reshape(mu0.size, mu0.size)
            sol = integrate_moments(coeffs, m0, S0, t_check, t_eval=np.array([t_check]))
            mu_ode, S_ode = sol.mu[-1], sol.Sigma[-1]
            SN = np.cov(XT.T, bias=True).reshape(mu0.size, mu0.size)
            errs.append(np.linalg.norm(XT.mean(0) - mu_ode) + np.linalg.norm(SN - S_ode))
        errors.append(float(np.mean(errs)))
    rate = float(np.polyfit(np.log(Ns), np.log(errors), 1)[0])
    return ParticleStudy(list(Ns), errors, rate, t_check)


@dataclass
class TransportCheck:
    r"""Lemma 3.1 numerically: :math:`\Sigma(t)=\Psi\Sigma_0\Psi^\top` with :math:`\dot\Psi=M\Psi`.

    ``residual`` is :math:`\max_t\|\Sigma-\Psi\Sigma_0\Psi^\top\|_F/(\|\Psi\|_2^2\|\Sigma_0\|_F)`,
    ``liouville`` is :math:`\max_t|\log\det\Psi-\int_0^t\operatorname{tr}M|`; both should sit at the
    integration tolerance. ``ranks`` are numerical ranks of :math:`\Sigma(t)` (singular values
    above ``1e-8`` times the largest), informative only while :math:`\Psi` is well conditioned.
    """

    t: Array
    residual: float
    liouville: float
    ranks: list[int]
    cond_psi: float


def transport_check(
    coeffs: Coefficients, Sigma0: Array, t_end: float, n_eval: int = 50, *, max_evaluations: int = 200_000
) -> TransportCheck:
    """Integrate :math:`(\\Sigma,\\Psi,\\int\\operatorname{tr}M)` together and compare.

    The horizon is at most :math:`10^6` time units of :func:`time_unit` (the identity holds on every
    sub-interval; ``t`` reports the horizon used).
    """
    d = Sigma0.shape[0]
    kernel = moment_kernel()
    c = time_unit(coeffs, Sigma0)  # integrate in tau = t / c; Psi and the trace integral are invariant
    coeffs = _rescaled(coeffs, c)
    tau_end = t_end if c == 1.0 else min(t_end / c, 1e6)

    def rhs(t: float, y: Array) -> Array:
        A, B, V, b = coeffs(t)
        S, Psi = y[: d * d].reshape(d, d), y[d * d : 2 * d * d].reshape(d, d)
        M = A + V @ S @ B
        dS = kernel(A, B, V, np.zeros(d), np.zeros(d), S)[1]
        return np.concatenate([dS.ravel(), (M @ Psi).ravel(), [np.trace(M)]])

    def blowup(t: float, y: Array) -> float:
        return 1e8 * (1 + np.linalg.norm(Sigma0)) - np.linalg.norm(y[: d * d])

    blowup.terminal = True  # type: ignore[attr-defined]
    y0 = np.concatenate([Sigma0.ravel(), np.eye(d).ravel(), [0.0]])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if not np.all(np.isfinite(rhs(0.0, y0))):
            raise FloatingPointError("the field overflows float64 at t = 0")
    sol, _, _ = solve_switching(rhs, (0.0, tau_end), y0, max_evaluations=max_evaluations, rtol=1e-11, atol=1e-13,
                                t_eval=np.linspace(0.0, tau_end, n_eval), events=blowup)
    res, liou, ranks, cond = 0.0, 0.0, [], 1.0
    for y in sol.y.T:
        S, Psi, tr = y[: d * d].reshape(d, d), y[d * d : 2 * d * d].reshape(d, d), y[-1]
        norm_psi = np.linalg.norm(Psi, 2)
        # floor 1e-6 ||Sigma0||: a decayed trajectory is resolved only to an absolute accuracy
        scale0 = max(np.linalg.norm(Sigma0), 1e-300)
        res = max(res, np.linalg.norm(S - Psi @ Sigma0 @ Psi.T) / (norm_psi**2 * scale0 + 1e-6 * scale0))
        liou = max(liou, abs(np.linalg.slogdet(Psi)[1] - tr) / (1 + abs(tr)))
        s = np.linalg.svd(S, compute_uv=False)
        ranks.append(int((s > 1e-8 * max(s[0], 1e-300)).sum()))
        cond = max(cond, float(np.linalg.cond(Psi)))
    return TransportCheck(c * sol.t, float(res), float(liou), ranks, cond)
