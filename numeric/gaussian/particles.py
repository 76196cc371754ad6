r"""Particle system of the Gaussian Transformer (gaussian paper, eq. (2)) and the Lemma 3.1 transport check.

.. math::

    \dot x_i = \sigma(Ax_i+b) + \sum_j \frac{e^{x_j^\top Bx_i}}{\sum_\ell e^{x_\ell^\top Bx_i}} V x_j ,

with empirical attention; as :math:`N\to\infty` the empirical mean and covariance follow the
moment ODE (7) (:mod:`flowcert.numeric.gaussian.moments`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..integration import _Stalled, solve_switching
from .moments import Array, Coefficients, _rescaled, integrate_moments, moment_kernel, time_unit



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
    from scipy.integrate import solve_ivp  # here, not at import: a re-check integrates nothing

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
    on_run: Callable[[int], None] | None = None,
) -> ParticleStudy:
    """Cross-validate Prop. 2.1: empirical moments of the particle system vs eq. (7).

    The work, field evaluations times :math:`N^2`, is estimated after the smallest ``N``
    (the number of steps is set by the mean field, not by ``N``); a ``FloatingPointError``
    says so when the estimate exceeds ``max_work``. ``on_run(N)`` is called after each particle
    run (``len(Ns) * seeds`` of them: a caller's progress bar).
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
            if on_run is not None:
                on_run(N)
        errors.append(float(np.mean(errs)))
    rate = float(np.polyfit(np.log(Ns), np.log(errors), 1)[0])
    return ParticleStudy(list(Ns), errors, rate, t_check)


TRANSPORT_MAX_COND = 1e12  # beyond, Sigma = Psi Sigma0 Psi^T is compared to fewer than 4 significant digits


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
    truncated: str = ""  # why the comparison stopped before the integration did (Psi ill conditioned)


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
    res, liou, ranks, cond, used, truncated = 0.0, 0.0, [], 1.0, 0, ""
    for k, y in enumerate(sol.y.T):
        S, Psi, tr = y[: d * d].reshape(d, d), y[d * d : 2 * d * d].reshape(d, d), y[-1]
        cond_k = float(np.linalg.cond(Psi)) if np.all(np.isfinite(y)) else math.inf
        if not cond_k <= TRANSPORT_MAX_COND:
            truncated = (f"compared up to t = {c * sol.t[k - 1]:.6g}: beyond, Psi is singular to working precision "
                         f"(cond {cond_k:.2e} > {TRANSPORT_MAX_COND:.0e}) and log det Psi, Psi Sigma0 Psi^T lose every digit")
            break
        used = k + 1
        norm_psi = np.linalg.norm(Psi, 2)
        # floor 1e-6 ||Sigma0||: a decayed trajectory is resolved only to an absolute accuracy
        scale0 = max(np.linalg.norm(Sigma0), 1e-300)
        res = max(res, np.linalg.norm(S - Psi @ Sigma0 @ Psi.T) / (norm_psi**2 * scale0 + 1e-6 * scale0))
        liou = max(liou, abs(np.linalg.slogdet(Psi)[1] - tr) / (1 + abs(tr)))
        s = np.linalg.svd(S, compute_uv=False)
        ranks.append(int((s > 1e-8 * max(s[0], 1e-300)).sum()))
        cond = max(cond, cond_k)
    return TransportCheck(c * sol.t[:used], float(res), float(liou), ranks, cond, truncated)
