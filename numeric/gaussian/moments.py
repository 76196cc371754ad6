r"""Moment ODE of the Gaussian Transformer (gaussian paper, eq. (7), Prop. 2.1): field, Jacobian, flow, equilibria.

.. math::

    \dot\mu = (A+V+V\Sigma B)\mu + b,\qquad
    \dot\Sigma = A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

Its kernel and the Fréchet derivative
:math:`DF_\Sigma[\Delta]=M\Delta+\Delta M^\top+V\Delta B\Sigma+\Sigma B^\top\Delta V^\top`
are generated from :mod:`flowcert.symbolic.gaussian`; the flow is integrated with an adaptive
Runge–Kutta method, a terminal blow-up event and the controls of :mod:`flowcert.numeric.integration`.
Equilibria solve :math:`F(\Sigma)=0` by Newton's method: for small :math:`d` with the dense
:math:`\mathrm{vech}` Jacobian; above :data:`NEWTON_DENSE_MAX_D` matrix-free, the step
:math:`DF_\Sigma[\Delta]=F(\Sigma)` solved by GMRES with the generated Fréchet derivative as the
operator and a Lyapunov part :math:`\Delta\mapsto N\Delta+\Delta N^\top` inverted by
Bartels–Stewart (one real Schur form per step, LAPACK ``trsyl``) as the preconditioner,
:math:`O(d^3)` per iteration. With :math:`M=A+V\Sigma B` and :math:`\bar v=\operatorname{tr}V/d`,
:math:`N=M+\bar v\,\Sigma B^\top`: then :math:`DF_\Sigma[\Delta]-(N\Delta+\Delta N^\top)
=(V-\bar vI)\Delta B\Sigma+\Sigma B^\top\Delta(V-\bar vI)^\top`, which vanishes for
:math:`V=\eta I` (GMRES then converges in one iteration) and is small when :math:`V` is close to
a multiple of the identity; the bare :math:`M\Delta+\Delta M^\top` is the case :math:`\bar v=0`.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass
import inspect
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ...symbolic import codegen
from ...symbolic.gaussian import linearisation_program, moment_program
from ..integration import IntegrationFailed, solve_switching


Array = np.ndarray
Coefficients = Callable[[float], tuple[Array, Array, Array, Array]]


@lru_cache(maxsize=None)
def moment_kernel() -> Callable[..., tuple[Array, Array]]:
    """numpy kernel ``(A, B, V, b, mu, Sigma) -> (mu_dot, Sigma_dot)`` generated from SymPy."""
    return codegen.NumpyPrinter().compile(moment_program())


@lru_cache(maxsize=None)
def _linearisation_kernel() -> Callable[..., tuple[Array]]:
    return codegen.NumpyPrinter().compile(linearisation_program())


class ConstantCoefficients:
    """Coefficients that do not depend on time; ``key`` is a digest of their exact data."""

    def __init__(self, A: Array, B: Array, V: Array, b: Array) -> None:
        self.values = (A, B, V, b)

    def __call__(self, t: float) -> tuple[Array, Array, Array, Array]:
        return self.values

    def key(self) -> str:
        return _digest(*self.values)


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=float))
        h.update(f"{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def constant(A: Array, B: Array, V: Array, b: Array) -> Coefficients:
    """Coefficients that do not depend on time (runs with them are memoised, see :func:`integrate_moments`)."""
    return ConstantCoefficients(A, B, V, b)


# ---------------------------------------------------------------------------------------
# vech coordinates on symmetric matrices
# ---------------------------------------------------------------------------------------


def symmetric_part(S: Array) -> Array:
    r"""The symmetric part :math:`	frac12(S+S^	op)` (removes rounding asymmetry)."""
    S = np.asarray(S)
    return 0.5 * (S + S.T)


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
    reason: str = ""  # "budget" when a budget (evaluations, seconds, state count) stopped the run
    reduced_dimension: int | None = None  # states integrated after a reduction (None: the full d + d^2)


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


def rate_log2(coeffs: Coefficients, Sigma0: Array) -> float:
    r""":math:`\log_2` of the field's rate :math:`\max(|A|,|V|,d|V||B||\Sigma_0|)` at :math:`t=0`
    (entries' largest magnitudes; ``-inf`` when all vanish): one over its fastest time scale."""
    A, B, V, _ = coeffs(0.0)
    d = A.shape[-1]
    return max(_log2_size(A), _log2_size(V), _log2_size(V) + _log2_size(B) + _log2_size(Sigma0) + math.log2(d))


#: Longest run of eq. (7), in time constants of the field (:func:`rate_log2`): :math:`2^{52}`. Past
#: it the clock cannot resolve the fastest time scale any more (:math:`t+1/\rho=t` in float64 once
#: :math:`t\rho>2^{52}`), and an implicit method that has settled stalls with steps near
#: :math:`1/(\varepsilon\rho)` (measured: Radau at :math:`A=-10^{150}I` advanced
#: :math:`4\cdot10^{16}` time constants a step, 120 s for :math:`10^{-131}` of the horizon). A longer run
#: is integrated to that horizon and, unless an event (blow-up) ended it, reported ``failed`` with
#: reason ``horizon``: no evidence either way.
HORIZON_LOG2 = 52


def time_unit(coeffs: Coefficients, Sigma0: Array, *, limit_log2: int = 160) -> float:
    r"""A power of two :math:`c` such that the field in time :math:`\tau=t/c` is of moderate size.

    Eq. (7) is linear in :math:`(A,V,b)` jointly, so :math:`\tfrac{d}{d\tau}=c\,\tfrac{d}{dt}` is
    the same field with :math:`(cA,B,cV,cb)`. Rescaling is exact (a power of two) and used only when the
    rate :math:`\max(|A|,|V|,d|V||B||\Sigma_0|)` exceeds :math:`2^{160}`: scipy's step control
    squares error estimates and fails on time scales below about 1e-150. Entries far below the
    rate (by more than the float64 range) may underflow in the rescaled field: this is a simulation,
    never a certificate.
    """
    rate = rate_log2(coeffs, Sigma0)
    if not math.isfinite(rate) or rate <= limit_log2:
        return 1.0
    return math.ldexp(1.0, -min(math.ceil(rate), 1022))  # a normal number: tau_end = t_end / c stays finite


MEAN_ESCAPE = 1e100  # |mu| beyond MEAN_ESCAPE (1 + |mu0| + |b(0)|): the mean has escaped; Sigma goes on alone


def rescaled(coeffs: Coefficients, c: float) -> Coefficients:
    r"""The coefficients in the time :math:`\tau=t/c` (:math:`A,V,b` times :math:`c`, :math:`B` as it is)."""
    if c == 1.0:
        return coeffs

    def scaled(tau: float) -> tuple[Array, Array, Array, Array]:
        A, B, V, b = coeffs(c * tau)
        return c * A, B, c * V, c * b

    return scaled


_RUNS: "OrderedDict[tuple[Any, ...], MomentSolution]" = OrderedDict()
_RUNS_MAX = 3


def integrate_moments(coeffs: Coefficients, mu0: Array, Sigma0: Array, t_end: float, **options: Any) -> MomentSolution:
    """Integrate eq. (7) on ``[0, t_end]`` (see :func:`_integrate_moments` for the options).

    Runs with constant coefficients and no ``t_eval`` are memoised by a digest of their exact
    data and options (the last three), so that theorems that cross-check against the same run
    (Thm 4.1, 4.11 (1) and (2)) integrate it once; the result is shared and must not be modified.
    """
    if not isinstance(coeffs, ConstantCoefficients) or options.get("t_eval") is not None:
        return _integrate_moments(coeffs, mu0, Sigma0, t_end, **options)
    key = (coeffs.key(), _digest(mu0, Sigma0), float(t_end), tuple(sorted(options.items())))
    if key in _RUNS:
        _RUNS.move_to_end(key)
        return _RUNS[key]
    sol = _integrate_moments(coeffs, mu0, Sigma0, t_end, **options)
    _RUNS[key] = sol
    while len(_RUNS) > _RUNS_MAX:
        _RUNS.popitem(last=False)
    return sol


#: CPU-time budget of one integration of eq. (7) (seconds); a run it stops fails with reason "budget".
MOMENT_SECONDS = 120.0
#: Auto-reduce (:mod:`.reduction`) from this dimension on, when the active subspace is at most half of it.
REDUCE_MIN_D = 16
#: Bytes of full d x d covariances a run keeps (older steps are thinned; the last one always stays).
TRAJECTORY_BYTES = 256 * 2**20


def reduction_proved() -> bool:
    """Both reductions (invariant block, factored transport) are used only when their matrix-level
    proofs (:func:`flowcert.symbolic.gaussian.reduction_proofs`, computed once per process) hold."""
    from ...symbolic.gaussian import reduction_proofs

    return all(p.proved for p in reduction_proofs())


def _integrate_moments(
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
    max_seconds: float | None = MOMENT_SECONDS,
    reduce: bool | str | None = None,
    levels: tuple[float, float] | None = None,
) -> MomentSolution:
    """Integrate eq. (7) on ``[0, t_end]`` with a terminal blow-up event.

    The event fires when :math:`\\|\\Sigma\\|_F` exceeds ``blowup_factor`` times
    :math:`1+\\|\\Sigma_0\\|_F`; its time is returned as ``blowup_time`` (a lower bound on the
    true blow-up time of the exact solution, up to the integration error). If the explicit
    method is stability-limited (:class:`StiffnessMonitor`) or stalls, the run is repeated with
    the implicit ``Radau`` method and the Jacobian :func:`moment_jacobian`, at ``rtol`` no tighter
    than ``implicit_rtol`` (``None``: ``rtol``), provided the system has at most
    :data:`flowcert.numeric.integration.IMPLICIT_MAX_STATES` states. ``method`` names the method
    that produced the answer and ``drift`` is :func:`manifold_drift` of the trajectory.

    ``max_seconds`` bounds the CPU time (status ``failed``, ``reason`` ``"budget"``, the
    message says the time reached). For constant coefficients whose :math:`A,B,V` live on a
    subspace of dimension :math:`k` (:mod:`.reduction`), only eq. (7) on that subspace is
    integrated: ``reduce`` None does so from :data:`REDUCE_MIN_D` on when :math:`k\\le d/2`, True
    whenever :math:`k<d`, False never. With :math:`A=0` and :math:`V,B` of rank at most :math:`d/4`
    the factored transport (:class:`.reduction.FactoredTransport`, :math:`r_Vr_B+r_V` unknowns) is
    tried first; ``reduce="subspace"`` or ``"factored"`` forces one of the two. ``levels`` overrides the absolute blow-up and mean-escape
    levels of the events (used by the reduction, which passes the full system's). Large runs keep
    at most :data:`TRAJECTORY_BYTES` of covariances (the steps are thinned, the last one kept).
    """
    d = mu0.shape[0]
    if (reduce is not False and t_eval is None and isinstance(coeffs, ConstantCoefficients) and (reduce or d >= REDUCE_MIN_D)
            and reduction_proved()):
        from .lifted import integrate_factored, integrate_reduced
        from .reduction import active_subspace, factored_svd

        A, B, V, b = coeffs.values
        ranks = factored_svd(A, B, V) if reduce in (None, True, "factored") else None
        within = t_end > 0 and math.log2(t_end) + rate_log2(coeffs, Sigma0) <= HORIZON_LOG2  # else: the full path's horizon
        if ranks is not None and time_unit(coeffs, Sigma0) == 1.0 and within:
            fact = integrate_factored(ranks, coeffs, mu0, Sigma0, t_end, rtol=rtol, atol=atol,
                                       blowup_factor=blowup_factor, method=method,
                                       max_evaluations=max_evaluations, implicit_rtol=implicit_rtol,
                                       max_seconds=max_seconds)
            if fact is not None:
                return fact
        red = active_subspace(A, B, V, Sigma0, max_fraction=0.5 if reduce is None else 1.0)
        if red is not None and red.k < d:
            return integrate_reduced(red, coeffs, mu0, Sigma0, t_end, rtol=rtol, atol=atol,
                                      blowup_factor=blowup_factor, method=method, max_evaluations=max_evaluations,
                                      implicit_rtol=implicit_rtol, max_seconds=max_seconds)
    with np.errstate(all="ignore"):
        threshold = blowup_factor * (1.0 + np.linalg.norm(Sigma0))
        escape = min(MEAN_ESCAPE * (1.0 + np.linalg.norm(mu0) + np.linalg.norm(coeffs(0.0)[3])), np.finfo(float).max)
    if levels is not None:
        threshold, escape = levels
    kernel = moment_kernel()
    c = time_unit(coeffs, Sigma0)
    span_log2 = math.log2(t_end) + rate_log2(coeffs, Sigma0) if t_end > 0 else -math.inf
    coeffs = rescaled(coeffs, c)
    tau_end = min(t_end / c, np.finfo(float).max)
    tau_stop = tau_end  # the horizon actually integrated (HORIZON_LOG2 time constants at most)
    if math.isfinite(span_log2) and span_log2 > HORIZON_LOG2:
        tau_stop = tau_end * 2.0 ** (HORIZON_LOG2 - span_log2)
    tau_eval = None if t_eval is None else np.asarray(t_eval) / c
    if tau_eval is not None and tau_stop < tau_end:
        tau_eval = tau_eval[tau_eval <= tau_stop]
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
                   implicit_rtol=implicit_rtol, max_seconds=max_seconds)
    if tau_eval is None and (d + d * d) * 8 * 64 > TRAJECTORY_BYTES:
        # every step of a wide run would be kept: sample the trajectory on a grid instead (the end included)
        keep = max(2, min(257, TRAJECTORY_BYTES // ((d + d * d) * 8)))
        tau_eval = np.linspace(0.0, tau_stop, keep)
    try:
        sol, meth, note = solve_switching(rhs, (0.0, tau_stop), y0, method=method, t_eval=tau_eval,
                                          events=[blowup, mean_escape], **options)
    except IntegrationFailed as exc:
        return MomentSolution(np.array([0.0]), mu0[None], Sigma0[None], "failed", None, str(exc), exc.method,
                              reason=exc.reason)
    t, ys = np.asarray(sol.t, dtype=float), _states(sol, d)
    escape_time = None
    if sol.status == 1 and sol.t_events[1].size and not sol.t_events[0].size:
        tau1, y1 = float(sol.t_events[1][0]), sol.y_events[1][0]
        escape_time, frozen[0] = c * tau1, True
        rest = None if tau_eval is None else tau_eval[tau_eval > tau1]
        try:
            sol, meth2, note2 = solve_switching(rhs, (tau1, tau_stop), y1, method=method, t_eval=rest,
                                                events=[blowup], **options)
        except IntegrationFailed as exc:
            return MomentSolution(c * t, ys[:, :d], ys[:, d:].reshape(-1, d, d), "failed", None, str(exc), exc.method,
                                  None, escape_time, exc.reason)
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
    if status == "ok" and tau_stop < tau_end:
        return MomentSolution(t, mu, S, "failed", None,
                              f"{note}stopped at t = {c * tau_stop:.6g} of {t_end:.6g}: the run spans 2^{span_log2:.0f} "
                              f"time constants of the field, more than 2^{HORIZON_LOG2}, where float64 time no longer "
                              "resolves its fastest scale (flowcert.numeric.gaussian.moments.HORIZON_LOG2); a failed "
                              "run, not evidence", meth, manifold_drift(S), escape_time, "horizon")
    drift = manifold_drift(S)
    if drift["negative_eigenvalue"] > CONE_TOL and t_eval is None and escape_time is None and tau_stop == tau_end:
        # the direct form left Sym+(d): integrate the transport form, PSD by construction
        alt = integrate_transport(coeffs, mu0, Sigma0, tau_stop, rtol=rtol, atol=atol, threshold=threshold,
                                  max_evaluations=min(max_evaluations, TRANSPORT_EVALUATIONS))
        if alt is not None and alt.drift is not None and alt.drift["negative_eigenvalue"] <= CONE_TOL:
            alt.t = c * alt.t
            alt.blowup_time = None if alt.blowup_time is None else c * alt.blowup_time
            alt.message = (f"the direct form left the PSD cone (relative eigenvalue "
                           f"-{drift['negative_eigenvalue']:.2e}); transport form Sigma = Psi Sigma0 Psi^T used; "
                           + alt.message)
            return alt
        return MomentSolution(t, mu, S, "failed", None,
                              f"the run left the PSD cone (relative eigenvalue -{drift['negative_eigenvalue']:.2e}) and "
                              "the transport form did not repair it: a failed run, not evidence; " + note + sol.message,
                              meth, drift, escape_time)
    return MomentSolution(t, mu, S, status, tb, note + sol.message, meth, drift, escape_time)


# the public entry point takes the private one's keyword options: show them to help() and inspect
integrate_moments.__signature__ = inspect.signature(_integrate_moments)  # type: ignore[attr-defined]


TRANSPORT_EVALUATIONS = 100_000  # budget of the transport-form fallback (a repair, not a second full run)
CONE_TOL = 1e-9  # relative negative eigenvalue beyond which a covariance run has left Sym+(d)


def integrate_transport(
    coeffs: Coefficients,
    mu0: Array,
    Sigma0: Array,
    t_end: float,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    threshold: float = math.inf,
    max_evaluations: int = 2_000_000,
) -> MomentSolution | None:
    r"""Eq. (7) in the transport form of Lemma 3.1, PSD by construction.

    .. math::

        \dot\Psi=(A+V\Sigma B)\Psi,\quad \Psi(0)=I,\qquad \Sigma=\Psi\Sigma_0\Psi^\top,\qquad
        \dot\mu=(A+V+V\Sigma B)\mu+b .

    :math:`\Sigma(t)` is a congruence of :math:`\Sigma_0\succeq0`, so it stays PSD up to the
    rounding of one product. Terminal event when :math:`\|\Sigma\|_F` passes ``threshold``
    (an observation, never a proof of blow-up). Returns None when the integrator fails.
    """
    d = mu0.shape[0]
    S0 = 0.5 * (Sigma0 + Sigma0.T)

    def unpack(y: Array) -> tuple[Array, Array, Array]:
        Psi = y[d:].reshape(d, d)
        S = Psi @ S0 @ Psi.T
        return y[:d], Psi, 0.5 * (S + S.T)

    def rhs(t: float, y: Array) -> Array:
        A, B, V, b = coeffs(t)
        mu, Psi, S = unpack(y)
        M = A + V @ S @ B
        return np.concatenate([(M + V) @ mu + b, (M @ Psi).ravel()])

    def blowup(t: float, y: Array) -> float:
        return threshold - np.linalg.norm(unpack(y)[2])

    blowup.terminal = True  # type: ignore[attr-defined]
    blowup.direction = -1  # type: ignore[attr-defined]
    from scipy.integrate import solve_ivp

    y0 = np.concatenate([mu0, np.eye(d).ravel()])
    count = [0]

    class _Budget(Exception):
        pass

    def counted(t: float, y: Array) -> Array:
        count[0] += 1
        if count[0] > max_evaluations:
            raise _Budget
        return rhs(t, y)

    try:  # explicit only, with a budget: a repair of the direct run, not a second full run
        with np.errstate(all="ignore"):
            sol = solve_ivp(counted, (0.0, t_end), y0, method="DOP853", events=[blowup], rtol=rtol, atol=atol)
    except (_Budget, ValueError, FloatingPointError):
        return None
    meth, note = "DOP853", ""
    if not np.all(np.isfinite(sol.y)):
        return None
    ys = np.asarray(sol.y, dtype=float).T
    t = np.asarray(sol.t, dtype=float)
    tb = None
    if sol.status == 1 and sol.t_events[0].size:
        tb = float(sol.t_events[0][0])
        t, ys = np.append(t, tb), np.vstack([ys, sol.y_events[0][0]])
    mus = ys[:, :d].copy()
    Ss = np.stack([unpack(y)[2] for y in ys])
    status = "blowup" if tb is not None else ("ok" if sol.status == 0 else "failed")
    return MomentSolution(t, mus, Ss, status, tb, note + sol.message, f"transport ({meth})", manifold_drift(Ss))


# ---------------------------------------------------------------------------------------
# Equilibria of the covariance equation
# ---------------------------------------------------------------------------------------


NEWTON_DENSE_MAX_D = 12  # vech dimension 78: the dense Jacobian is cheaper than Krylov iterations
KRYLOV_RESTARTS = 4  # GMRES(50) cycles per Newton step: a good preconditioner needs one or two
NEWTON_STALL = 4  # Krylov Newton gives up after this many steps without halving the residual


def lyapunov_solver(M: Array) -> Callable[[Array], Array]:
    r"""``R -> X`` solving :math:`MX+XM^\top=R` (Bartels–Stewart; the Schur form is computed once)."""
    from scipy.linalg import schur
    from scipy.linalg.lapack import dtrsyl

    T, Q = schur(M, output="real")

    def solve(R: Array) -> Array:
        C = Q.T @ R @ Q
        Y, scale, info = dtrsyl(T, T, C, trana="N", tranb="T")
        if info < 0 or not scale:
            raise np.linalg.LinAlgError(f"trsyl failed (info {info})")
        X = Q @ (Y / scale) @ Q.T
        return 0.5 * (X + X.T)

    return solve


def newton_step_krylov(A: Array, B: Array, V: Array, S: Array, F: Array, *, rtol: float = 1e-12) -> Array | None:
    r"""The Newton step :math:`\Delta` with :math:`DF_S[\Delta]=F`, matrix-free (GMRES).

    Operator: the generated Fréchet derivative applied to a :math:`d\times d` matrix;
    preconditioner: :math:`(N\cdot+\cdot N^\top)^{-1}` with :math:`N=A+VSB+(\operatorname{tr}V/d)SB^\top`
    (:func:`lyapunov_solver`; exact for :math:`V=\eta I`). Returns None when GMRES does not reach ``rtol``.
    """
    from scipy.sparse.linalg import LinearOperator, gmres

    d = A.shape[0]
    kernel = _linearisation_kernel()
    n = d * d

    def apply(x: Array) -> Array:
        X = x.reshape(d, d)
        return kernel(A, B, V, S, 0.5 * (X + X.T))[0].ravel()

    op = LinearOperator((n, n), matvec=apply, dtype=float)
    prec = None
    try:
        solve = lyapunov_solver(A + V @ S @ B + (np.trace(V) / d) * (S @ B.T))
        prec = LinearOperator((n, n), matvec=lambda x: solve(x.reshape(d, d)).ravel(), dtype=float)
    except (np.linalg.LinAlgError, ValueError):
        prec = None
    rhs = F.ravel()
    try:
        x, info = gmres(op, rhs, M=prec, rtol=rtol, atol=0.0, restart=50, maxiter=KRYLOV_RESTARTS)
    except TypeError:  # scipy < 1.12 spells rtol as tol
        x, info = gmres(op, rhs, M=prec, tol=rtol, atol=0.0, restart=50, maxiter=KRYLOV_RESTARTS)
    if not np.all(np.isfinite(x)):
        return None
    step = x.reshape(d, d)
    step = 0.5 * (step + step.T)
    res = np.linalg.norm(apply(step.ravel()) - rhs)
    return step if res <= max(1e3 * rtol, 1e-8) * max(np.linalg.norm(rhs), 1e-300) else None


def newton_equilibrium(
    A: Array, B: Array, V: Array, Sigma: Array, *, tol: float = 1e-13, max_iter: int = 50
) -> Array | None:
    """Newton's method for :math:`F(\\Sigma)=0` on symmetric matrices; None if it fails.

    From :data:`REDUCE_MIN_D` on, when :math:`A,B,V` live on a subspace invariant under
    :math:`\\Sigma` (:mod:`.reduction`), Newton runs on that block only (the full Jacobian is singular
    on the complement) and the result is checked on the full field. Dense :math:`\\mathrm{vech}`
    Jacobian up to :data:`NEWTON_DENSE_MAX_D`, matrix-free GMRES
    (:func:`newton_step_krylov`, at most :data:`KRYLOV_RESTARTS` cycles) beyond, where the
    iteration also stops (None) after :data:`NEWTON_STALL` steps that do not halve the residual.
    """
    d = A.shape[0]
    if d >= REDUCE_MIN_D and reduction_proved():
        from .reduction import active_subspace

        red = active_subspace(A, B, V, 0.5 * (Sigma + Sigma.T))
        if red is not None and 0 < red.k < d:
            # A, B, V vanish off S and Sigma leaves S invariant: F(Sigma) has only the S-block F_11(S_11), the
            # field of eq. (18) for (A_11, B_11, V_11); Newton there, the complement kept (module .reduction)
            S11 = red.block(Sigma)
            got = newton_equilibrium(red.block(A), red.block(B), red.block(V), S11, tol=tol, max_iter=max_iter)
            if got is None:
                return None
            S = Sigma + red.Q1 @ (got - S11) @ red.Q1.T
            S = 0.5 * (S + S.T)
            F = covariance_field(A, B, V, S)
            scale = 1.0 + np.abs(S).max()
            return S if np.all(np.isfinite(S)) and np.abs(F).max() <= 1e3 * tol * scale * scale else None
    rows, cols = vech_indices(d)
    S = 0.5 * (Sigma + Sigma.T)
    scale = 1.0 + np.abs(S).max()
    best, stalled = math.inf, 0
    for _ in range(max_iter):
        F = covariance_field(A, B, V, S)
        if np.abs(F).max() <= tol * scale * scale:
            return S
        if d <= NEWTON_DENSE_MAX_D:
            J = jacobian_vech(A, B, V, S)
            try:
                step = np.linalg.solve(J, F[rows, cols])
            except np.linalg.LinAlgError:
                return None
            S = S - (np.einsum("k,kij->ij", step, symmetric_basis(d)))
        else:
            res = float(np.abs(F).max())
            if res < 0.5 * best:
                best, stalled = res, 0
            else:
                stalled += 1
                if stalled >= NEWTON_STALL:
                    return None  # not converging from here: no equilibrium claimed
            delta = newton_step_krylov(A, B, V, S, 0.5 * (F + F.T))
            if delta is None:
                return None
            S = S - delta
        S = 0.5 * (S + S.T)
        if not np.all(np.isfinite(S)):
            return None
        scale = 1.0 + np.abs(S).max()
    F = covariance_field(A, B, V, S)
    return S if np.abs(F).max() <= 1e3 * tol * scale * scale else None


# ---------------------------------------------------------------------------------------
# Particles
# ---------------------------------------------------------------------------------------
