r"""Particle system of the Gaussian Transformer (gaussian paper, eq. (2)) and the Lemma 3.1 transport check.

.. math::

    \dot x_i = \sigma(Ax_i+b) + \sum_j \frac{e^{x_j^\top Bx_i}}{\sum_\ell e^{x_\ell^\top Bx_i}} V x_j ,

with empirical attention; as :math:`N\to\infty` the empirical mean and covariance follow the
moment ODE (7) (:mod:`flowcert.numeric.gaussian.moments`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..integration import Stalled, solve_switching
from . import moments
from .moments import Array, Coefficients, rescaled, moment_kernel, time_unit



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
            raise Stalled(f"more than {max_evaluations} evaluations of the particle field (stiff?)")
        A, B, V, b = coeffs(t)
        return particle_field(y.reshape(n, d), A, B, V, b, activation).ravel()

    try:
        sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), X0.ravel(), t_eval=t_eval, rtol=rtol, atol=atol)
    except Stalled as exc:
        raise FloatingPointError(f"particle integration failed: {exc}") from exc
    if sol.status != 0:
        raise FloatingPointError(f"particle integration failed: {sol.message}")
    if evaluations is not None:
        evaluations.append(count[0])
    return sol.y.T.reshape(-1, n, d)


#: Largest number of softmax weights held at once by :func:`rk4_particles` (8 MiB of float64).
CHUNK_PAIRS = 2**20
#: Logit size below which the softmax needs no shift: ``exp(300)`` and ``exp(-300)`` are finite and nonzero.
SHIFT_FREE_LOGIT = 300.0


def particle_field_batch(X: Array, A: Array, B: Array, V: Array, b: Array, activation: str = "identity") -> Array:
    """:func:`particle_field` on a batch of independent systems ``X`` of shape ``(S, n, d)``.

    The weights :math:`e^{x_j^\\top Bx_i}` are formed block by block (:func:`_block_edges`: blocks
    of 32 or 64 tokens stay in cache), and for a symmetric ``B``, whose weight matrix is symmetric,
    only the blocks on and above the diagonal (each used twice). Sums and weighted sums of the
    weights come from one product with ``[X, 1]``. The softmax is shifted by each row's maximum only
    when a logit could exceed :data:`SHIFT_FREE_LOGIT` in size (the bound
    :math:`\\max_i\\|Bx_i\\|\\max_j\\|x_j\\|`); below it :math:`e^{\\pm300}` is finite and the shift is
    an exact no-op.
    """
    Y = X @ B.T  # rows B x_i: logits[..., i, j] = (B x_i) . x_j = x_j^T B x_i
    Xt = np.swapaxes(X, -1, -2)
    Xa = np.concatenate([X, np.ones(X.shape[:-1] + (1,))], axis=-1)
    if float(np.linalg.norm(Y, axis=-1).max()) * float(np.linalg.norm(X, axis=-1).max()) > SHIFT_FREE_LOGIT:
        L = np.matmul(Y, Xt)
        L -= L.max(axis=-1, keepdims=True)
        P = np.matmul(np.exp(L, out=L), Xa)
    else:
        P = np.zeros_like(Xa)
        edges = _block_edges(X.shape[-2])
        symmetric = bool(np.array_equal(B, B.T))
        for a in range(len(edges) - 1):
            rows = slice(edges[a], edges[a + 1])
            for c in range(a if symmetric else 0, len(edges) - 1):
                cols = slice(edges[c], edges[c + 1])
                E = np.matmul(Y[..., rows, :], Xt[..., :, cols])
                np.exp(E, out=E)
                P[..., rows, :] += E @ Xa[..., cols, :]
                if symmetric and c != a:  # block (c, a) of a symmetric weight matrix is the transpose
                    P[..., cols, :] += np.swapaxes(E, -1, -2) @ Xa[..., rows, :]
    return ACTIVATIONS[activation](X @ A.T + b) + (P[..., :-1] / P[..., -1:]) @ V.T


def _block_edges(n: int) -> list[int]:
    """Edges of the token blocks of :func:`particle_field_batch`: 64 tokens from n = 256 on, else 32."""
    size = 64 if n >= 256 else 32
    return [int(e) for e in np.linspace(0, n, max(1, round(n / size)) + 1)]


def rk4_particles(coeffs: Coefficients, X0: Array, t_end: float, steps: int, *, activation: str = "identity",
                  chunk: int = CHUNK_PAIRS) -> Array:
    """Classical Runge-Kutta (order 4, ``steps`` equal steps) for eq. (2) on a batch ``X0`` of shape
    ``(S, n, d)`` of independent particle systems; returns the tokens at ``t_end``, same shape.

    Batches are integrated ``chunk // n**2`` systems at a time (at least one), which bounds the
    memory of the weights by about ``8 * chunk`` bytes.
    """
    S, n, _ = X0.shape
    per = max(1, chunk // (n * n))
    h = float(t_end) / steps
    out = np.empty_like(X0, dtype=float)
    for lo in range(0, S, per):
        X = np.array(X0[lo:lo + per], dtype=float)
        for k in range(steps):
            t = k * h
            c0, ch, c1 = coeffs(t), coeffs(t + h / 2), coeffs(t + h)
            k1 = particle_field_batch(X, *c0, activation)
            k2 = particle_field_batch(X + (h / 2) * k1, *ch, activation)
            k3 = particle_field_batch(X + (h / 2) * k2, *ch, activation)
            k4 = particle_field_batch(X + h * k3, *c1, activation)
            X = X + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
        out[lo:lo + per] = X
    if not np.all(np.isfinite(out)):
        raise FloatingPointError("particle integration failed: non-finite tokens (the field overflows)")
    return out


def empirical_moments(X: Array) -> tuple[Array, Array]:
    """Mean ``(..., d)`` and covariance ``(..., d, d)`` (divided by n) of tokens ``X`` of shape ``(..., n, d)``."""
    m = X.mean(axis=-2)
    D = X - m[..., None, :]
    return m, np.einsum("...ni,...nj->...ij", D, D) / X.shape[-2]


def moment_batch(coeffs: Coefficients, mu0: Array, Sigma0: Array, t_end: float, *,
                 rtol: float = 1e-10, atol: float = 1e-12) -> tuple[Array, Array]:
    """Eq. (7) from a batch of initial moments ``mu0`` ``(M, d)``, ``Sigma0`` ``(M, d, d)`` to ``t_end``:
    one DOP853 run of the generated kernel (:func:`moments.moment_kernel`, batched over its leading
    axis) on the stacked states. Raises ``FloatingPointError`` when the run fails."""
    from scipy.integrate import solve_ivp  # here, not at import: a re-check integrates nothing

    kernel = moments.moment_kernel()
    M, d = mu0.shape

    def rhs(t: float, y: Array) -> Array:
        A, B, V, b = coeffs(t)
        mu_dot, S_dot = kernel(A, B, V, b, y[: M * d].reshape(M, d), y[M * d:].reshape(M, d, d))
        return np.concatenate([np.ravel(mu_dot), np.ravel(S_dot)])

    y0 = np.concatenate([mu0.ravel(), Sigma0.ravel()])
    sol = solve_ivp(rhs, (0.0, float(t_end)), y0, method="DOP853", rtol=rtol, atol=atol)
    if sol.status != 0 or not np.all(np.isfinite(sol.y[:, -1])):
        raise FloatingPointError(f"the moment equation could not be integrated for the samples: {sol.message}")
    y = sol.y[:, -1]
    return y[: M * d].reshape(M, d), y[M * d:].reshape(M, d, d)


#: Sizes and seeds of the Prop. 2.1 study (see :func:`particle_study` for how they follow from the
#: statistics): 24 independent samples at each of 5 sizes, 32 to 512 particles.
STUDY_NS = (32, 64, 128, 256, 512)
STUDY_SEEDS = 24
#: Share of the predicted Monte-Carlo error at the largest N that the time discretisation may add.
DISCRETISATION_SHARE = 0.05
#: Relative floor of the step-size search (moments resolved to 1e-9 of the state's size).
DISCRETISATION_FLOOR = 1e-9
#: Particle-pair evaluations a study may take (about 13 ns each in numpy on one core at d = 2).
STUDY_MAX_WORK = 3e8


@dataclass
class ParticleStudy:
    r"""Empirical moments of N particles against eq. (7), for several N.

    ``errors[k]`` is the mean over seeds of
    :math:`\|\hat\mu_N(t)-\mu(t)\|+\|\hat\Sigma_N(t)-\Sigma(t)\|_F` at ``t_check``, where
    the moment ODE starts from the sample's own moments (so the error measures the dynamics,
    not the initial sampling); ``seed_errors[k]`` are the per-seed values. ``rate`` is the
    least-squares slope of log mean error vs log N and ``rate_stderr`` its standard error from the
    spread over seeds (delta method; None with one seed). ``steps`` RK4 steps integrate each run;
    ``discretisation_error`` is their Richardson estimate at the smallest N (the largest over seeds
    of the same error functional between ``steps`` and ``2 * steps``).
    """

    Ns: list[int]
    errors: list[float]
    rate: float
    t_check: float
    seed_errors: list[list[float]] = field(default_factory=list)
    rate_stderr: float | None = None
    steps: int = 0
    discretisation_error: float = 0.0
    seeds: int = 1


def _moment_error(X: Array, mu: Array, Sigma: Array) -> Array:
    r"""Per system of the batch: :math:`\|\hat\mu-\mu\|+\|\hat\Sigma-\Sigma\|_F` of tokens ``X`` ``(S, n, d)``."""
    m, S = empirical_moments(X)
    return np.linalg.norm(m - mu, axis=-1) + np.linalg.norm(S - Sigma, axis=(-2, -1))


def particle_study(
    coeffs: Coefficients,
    mu0: Array,
    Sigma0: Array,
    t_check: float,
    Ns: tuple[int, ...] = STUDY_NS,
    seeds: int = STUDY_SEEDS,
    seed: int = 0,
    max_work: float = STUDY_MAX_WORK,
    on_run: Callable[[int], None] | None = None,
    *,
    min_steps: int = 2,
    max_steps: int = 1024,
) -> ParticleStudy:
    r"""Cross-validate Prop. 2.1: empirical moments of the particle system vs eq. (7).

    All ``seeds`` samples of one size are integrated together (:func:`rk4_particles`, batched
    float64 numpy), and eq. (7) from every sample's own moments in one run (:func:`moment_batch`).

    Statistics. The error :math:`e_N` of one sample is a Monte-Carlo error: the empirical softmax
    of N particles differs from the Gaussian one, eq. (6), by :math:`O_P(N^{-1/2})` when the
    weights have finite variance, so :math:`\mathbb E e_N\approx cN^{-1/2}`; its spread over
    seeds is broad (coefficient of variation about 0.6, standard deviation of :math:`\log e_N`
    about 0.55 on the README example), so the mean over S seeds has relative error about
    :math:`0.6/\sqrt S`, and the slope over sizes :math:`N_k` has standard error
    :math:`0.6/\sqrt{S\sum_k(\log N_k-\overline{\log N})^2}`: 0.05 for the defaults (5 sizes a
    factor 2 apart, S = 24). The time discretisation adds a bias: RK4 with ``steps`` equal steps,
    grown by half from ``min_steps`` until the Richardson estimate (against ``2 * steps``) at the smallest N is at most
    :data:`DISCRETISATION_SHARE` of the error predicted at the largest N,
    :math:`\bar e_{N_0}\sqrt{N_0/N_{\max}}` (or :data:`DISCRETISATION_FLOOR` of the state's size),
    so it moves the slope by less than about 0.015. The work, :math:`4\,\mathrm{steps}\,S\sum_kN_k^2`
    particle-pair evaluations, must stay within ``max_work`` (else ``FloatingPointError``, also when
    the step search would pass it or ``max_steps``). ``on_run(N)`` is called once per particle run
    (``len(Ns) * seeds`` of them: a caller's progress bar), after each size's batch.
    """
    rng = np.random.default_rng(seed)
    d = mu0.size
    samples = [sample_gaussian(mu0, Sigma0, seeds * N, rng).reshape(seeds, N, d) for N in Ns]
    m0, S0 = zip(*(empirical_moments(X) for X in samples))
    mu_ref, S_ref = moment_batch(coeffs, np.concatenate(m0), np.concatenate(S0), t_check)
    refs = [(mu_ref[k * seeds:(k + 1) * seeds], S_ref[k * seeds:(k + 1) * seeds]) for k in range(len(Ns))]
    pairs = seeds * sum(float(N) ** 2 for N in Ns)

    def refuse(steps: int, why: str) -> FloatingPointError:
        return FloatingPointError(
            f"the particle study would take about {4 * steps * pairs:.1e} particle-pair evaluations "
            f"({steps} RK4 steps to t = {t_check:.3g}: {why}); the budget is {max_work:.0e}")

    scale = 1.0 + float(np.linalg.norm(mu0)) + float(np.linalg.norm(Sigma0))
    steps = max(1, min_steps)
    if 4 * steps * pairs > max_work:
        raise refuse(steps, "the fewest steps")
    coarse = rk4_particles(coeffs, samples[0], t_check, steps)
    while True:
        if 4 * 2 * steps * pairs > max_work or 2 * steps > max_steps:
            raise refuse(2 * steps, "a stiff mean field: the step search did not settle")
        fine = rk4_particles(coeffs, samples[0], t_check, 2 * steps)
        m_c, S_c = empirical_moments(coarse)
        m_f, S_f = empirical_moments(fine)
        disc = float((np.linalg.norm(m_c - m_f, axis=-1) + np.linalg.norm(S_c - S_f, axis=(-2, -1))).max())
        predicted = float(_moment_error(fine, *refs[0]).mean()) * math.sqrt(Ns[0] / max(Ns))
        if disc <= max(DISCRETISATION_SHARE * predicted, DISCRETISATION_FLOOR * scale):
            break
        steps += max(1, steps // 2)  # 2, 3, 4, 6, 9, ...: the error falls like steps^-4
        coarse = rk4_particles(coeffs, samples[0], t_check, steps)
    per_seed = []
    for k, N in enumerate(Ns):
        XT = coarse if k == 0 else rk4_particles(coeffs, samples[k], t_check, steps)
        per_seed.append(_moment_error(XT, *refs[k]))
        if on_run is not None:
            for _ in range(seeds):
                on_run(N)
    E = np.array(per_seed)  # (sizes, seeds)
    errors = E.mean(axis=1)
    x = np.log(np.asarray(Ns, dtype=float))
    logs = np.log(np.maximum(errors, np.finfo(float).tiny))
    rate = float(np.polyfit(x, logs, 1)[0])
    stderr = None
    if seeds > 1:
        weights = (x - x.mean()) / float(((x - x.mean()) ** 2).sum())
        var_log = E.var(axis=1, ddof=1) / seeds / np.maximum(errors, np.finfo(float).tiny) ** 2
        stderr = float(np.sqrt((weights ** 2 * var_log).sum()))
    return ParticleStudy(list(Ns), [float(e) for e in errors], rate, t_check, E.tolist(),
                         stderr, steps, disc, seeds)


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
    coeffs = rescaled(coeffs, c)
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
