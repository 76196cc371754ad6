r"""ReLU feed-forward versus the Gaussian evolution (gaussian paper, Section 2.2).

With :math:`\sigma=\mathrm{ReLU}` in eq. (2)/(4) Gaussianity is lost. The paper proves only a
short-time estimate; this module provides the quantities in it, in closed form where one
exists, and a particle study that tests it.

**Residual of the activation.** :math:`\eta(z):=\sigma(z)-z=\max(0,-z)` componentwise (the
letter :math:`\eta` is also the scalar of :math:`V=\eta I`; here it is the ReLU residual).

**Lemma 2.3 (short-time sub-Gaussianity).** Constant :math:`A,b,B,V`,
:math:`\rho_0=\mathcal N(\mu_0,\Sigma_0)`, and :math:`\kappa_0` with

.. math::

    4\|B\|_2 \le \kappa_0 < \frac{1}{2\lambda_{\max}(\Sigma_0)} ,

an interval that is non-empty iff :math:`8\|B\|_2\lambda_{\max}(\Sigma_0)<1`
(:func:`lemma23_kappa_interval`; the paper does not say which matrix norm, the operator
2-norm is used). Then :math:`E_t:=\int e^{\kappa_0|x|^2}\,d\rho_t\le 2E_0` on some
:math:`[0,T^*]`. The initial value has the closed form (standard Gaussian integral, not in the
paper; :func:`E0`)

.. math::

    E_0=\det(I-2\kappa_0\Sigma_0)^{-1/2}
        \exp\!\big(\kappa_0\,\mu_0^\top(I-2\kappa_0\Sigma_0)^{-1}\mu_0\big),
    \qquad 2\kappa_0\lambda_{\max}(\Sigma_0)<1 .

**Proposition 2.4 (ReLU vs Gaussian, W2 bound).** Under the hypothesis of Lemma 2.3, with
:math:`\rho_t` the ReLU mean-field solution of eq. (3) and :math:`\nu_t=\mathcal N(\mu(t),\Sigma(t))`
the Gaussian evolution of eq. (7) from :math:`\nu_0=\rho_0`,

.. math::

    W_2(\rho_t,\nu_t)\le t\,\big\|\max(0,-(Ax+b))\big\|_{L^2(\rho_0)}+\mathcal O(t^2),
    \qquad t\in[0,T^*].

The proof (Appendix A.2) bounds :math:`W_2` by the synchronous coupling
:math:`\|X_t-Y_t\|_{L^2}` of the ReLU and identity flows started from the same :math:`X_0`.
Per component :math:`z_i=-(Ax+b)_i\sim\mathcal N(m_i,s_i^2)` with :math:`m=-(A\mu_0+b)` and
:math:`s_i^2=(A\Sigma_0A^\top)_{ii}`, so the slope has the closed form (:func:`relu_slope`)

.. math::

    \big\|\max(0,-(Ax+b))\big\|^2_{L^2(\rho_0)}
      =\sum_i (m_i^2+s_i^2)\,\Phi(m_i/s_i)+m_is_i\,\varphi(m_i/s_i),

with the term :math:`\max(0,m_i)^2` where :math:`s_i=0`.

**Wasserstein distances.** Between Gaussians (:func:`gaussian_w2`)

.. math::

    W_2^2\big(\mathcal N(\mu_1,S_1),\mathcal N(\mu_2,S_2)\big)
      =\|\mu_1-\mu_2\|^2+\operatorname{tr}\!\big(S_1+S_2-2(S_1^{1/2}S_2S_1^{1/2})^{1/2}\big),

which is also Gelbrich's lower bound on :math:`W_2` between *any* two laws with these means and
covariances. Between equal-size point clouds (:func:`empirical_w2`) the optimal coupling is a
permutation (Birkhoff), found exactly by the assignment problem.

:func:`relu_study` runs the check (c) of the note: the short-time slope of the synchronous
coupling against the closed form, and the :math:`W_2` curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import erfcx, ndtr

from .moments import constant, integrate_moments, symmetric_part
from .particles import sample_gaussian, simulate_particles

Array = np.ndarray
_sym = symmetric_part

__all__ = [
    "lemma23_kappa_interval",
    "E0",
    "relu_slope",
    "empirical_relu_slope",
    "psd_sqrt",
    "gaussian_w2",
    "empirical_w2",
    "moments",
    "ReluStudy",
    "relu_study",
]

_SQRT_2PI = np.sqrt(2.0 * np.pi)


# ---------------------------------------------------------------------------------------
# Lemma 2.3
# ---------------------------------------------------------------------------------------


def _diagonal(M: np.ndarray) -> np.ndarray | None:
    """The diagonal of a square matrix that is diagonal (an O(d^2) scan), else None."""
    D = np.diagonal(M)
    return D.copy() if np.count_nonzero(M) == np.count_nonzero(D) else None


def lemma23_kappa_interval(B: Array, Sigma0: Array, norm_B: float | None = None) -> tuple[float, float, bool]:
    r"""Admissible range of :math:`\kappa_0` in Lemma 2.3.

    Parameters
    ----------
    B : ndarray, shape (d, d)
        Attention matrix.
    Sigma0 : ndarray, shape (d, d)
        Initial covariance (symmetric PSD; a diagonal one is read off its diagonal).
    norm_B : float, optional
        :math:`\|B\|_2` when already known (a factored B's, from its :math:`k\times k` Gram matrices).

    Returns
    -------
    lo : float
        :math:`4\|B\|_2`.
    hi : float
        :math:`1/(2\lambda_{\max}(\Sigma_0))`; ``inf`` when :math:`\lambda_{\max}(\Sigma_0)\le 0`.
    nonempty : bool
        Whether :math:`[lo, hi)` is non-empty, i.e. :math:`8\|B\|_2\lambda_{\max}(\Sigma_0)<1`.
    """
    lo = 4.0 * (float(np.linalg.norm(np.asarray(B, dtype=float), 2)) if norm_B is None else norm_B)
    S = _sym(Sigma0)
    diag = _diagonal(S)
    lmax = float(diag.max() if diag is not None else np.linalg.eigvalsh(S)[-1])
    hi = np.inf if lmax <= 0.0 else 1.0 / (2.0 * lmax)
    return lo, float(hi), bool(lo < hi)


def E0(kappa: float, mu0: Array, Sigma0: Array) -> float:
    r""":math:`E_0=\int e^{\kappa|x|^2}\,d\mathcal N(\mu_0,\Sigma_0)` in closed form.

    .. math::

        E_0=\det(I-2\kappa\Sigma_0)^{-1/2}\exp\!\big(\kappa\,\mu_0^\top(I-2\kappa\Sigma_0)^{-1}\mu_0\big).

    Parameters
    ----------
    kappa : float
        Exponent :math:`\kappa\ge 0` (any real :math:`\kappa` with :math:`I-2\kappa\Sigma_0\succ0`).
    mu0 : ndarray, shape (d,)
        Mean.
    Sigma0 : ndarray, shape (d, d)
        Covariance (symmetric PSD, singular allowed).

    Returns
    -------
    float
        :math:`E_0`; ``inf`` when :math:`I-2\kappa\Sigma_0` is not positive definite (the
        integral diverges).
    """
    mu0 = np.asarray(mu0, dtype=float)
    S = _sym(Sigma0)
    diag = _diagonal(S)
    if diag is not None:  # diagonal Sigma0: the determinant and the solve are entrywise, O(d)
        m = 1.0 - 2.0 * kappa * diag
        if m.min() <= 0.0:
            return float("inf")
        return float(np.exp(-0.5 * np.log(m).sum() + kappa * float(np.sum(mu0 * mu0 / m))))
    M = np.eye(mu0.size) - 2.0 * kappa * S
    if np.linalg.eigvalsh(M)[0] <= 0.0:
        return float("inf")
    _, logdet = np.linalg.slogdet(M)
    quad = float(mu0 @ np.linalg.solve(M, mu0))
    return float(np.exp(-0.5 * logdet + kappa * quad))


# ---------------------------------------------------------------------------------------
# Proposition 2.4: the slope
# ---------------------------------------------------------------------------------------


def _relu_second_moment(m: Array, s: Array) -> Array:
    r""":math:`\mathbb E[\max(0,z)^2]` for :math:`z\sim\mathcal N(m,s^2)`, componentwise.

    :math:`s^2 g(r)` with :math:`r=m/s`, :math:`g(r)=(r^2+1)\Phi(r)+r\varphi(r)`. For
    :math:`r<0` the two terms cancel, so there :math:`\Phi(r)=\varphi(r)\,R(-r)` is written
    with the scaled complementary error function (Mills ratio
    :math:`R(x)=\sqrt{\pi/2}\,\mathrm{erfcx}(x/\sqrt2)`). :math:`s=0` gives :math:`\max(0,m)^2`.
    """
    m = np.asarray(m, dtype=float)
    s = np.asarray(s, dtype=float)
    out = np.where(m > 0.0, m * m, 0.0)  # the s = 0 value
    pos = s > 0.0
    if np.any(pos):
        mp, sp = m[pos], s[pos]
        r = mp / sp
        phi = np.exp(-0.5 * r * r) / _SQRT_2PI
        with np.errstate(over="ignore", invalid="ignore"):
            mills = np.sqrt(np.pi / 2.0) * erfcx(-r / np.sqrt(2.0))  # Phi(r) / phi(r)
            g_neg = phi * ((r * r + 1.0) * mills + r)
        g_pos = (r * r + 1.0) * ndtr(r) + r * phi
        g = np.where(r < 0.0, np.where(np.isfinite(g_neg), g_neg, 0.0), g_pos)
        out = out.copy()
        out[pos] = np.clip(sp * sp * g, 0.0, None)
    return out


def relu_slope(A: Array, b: Array, mu0: Array, Sigma0: Array) -> float:
    r"""First-order slope of Prop. 2.4, :math:`\|\max(0,-(Ax+b))\|_{L^2(\mathcal N(\mu_0,\Sigma_0))}`.

    Closed form (note, Prop. 2.4 verification (a)): with :math:`m=-(A\mu_0+b)` and
    :math:`s_i^2=(A\Sigma_0A^\top)_{ii}`,

    .. math::

        \sum_i (m_i^2+s_i^2)\Phi(m_i/s_i)+m_is_i\varphi(m_i/s_i),

    and :math:`\max(0,m_i)^2` for a component with :math:`s_i=0` (degenerate :math:`\Sigma_0`).

    Parameters
    ----------
    A : ndarray, shape (d, d)
        Feed-forward weight.
    b : ndarray, shape (d,)
        Feed-forward bias.
    mu0 : ndarray, shape (d,)
        Initial mean.
    Sigma0 : ndarray, shape (d, d)
        Initial covariance (symmetric PSD, singular allowed).

    Returns
    -------
    float
        The :math:`L^2` norm (not its square).
    """
    A = np.asarray(A, dtype=float)
    m = -(A @ np.asarray(mu0, dtype=float) + np.asarray(b, dtype=float))
    S = _sym(Sigma0)
    a, diag = _diagonal(A), _diagonal(S)
    # (A Sigma0 A^T)_ii: entrywise for diagonal A and Sigma0, else one BLAS product (not an unoptimised einsum)
    var = a * a * diag if a is not None and diag is not None else np.sum((A @ S) * A, axis=1)
    s = np.sqrt(np.clip(var, 0.0, None))
    return float(np.sqrt(_relu_second_moment(m, s).sum()))


def empirical_relu_slope(A: Array, b: Array, X: Array) -> float:
    r"""Empirical counterpart of :func:`relu_slope` on a sample ``X`` of shape ``(n, d)``.

    .. math::

        \Big(\frac1n\sum_k\big|\max(0,-(Ax_k+b))\big|^2\Big)^{1/2},

    the exact :math:`t\to0` limit of :math:`\|X_t-Y_t\|_{L^2}/t` for particles started at ``X``.
    """
    Z = np.maximum(0.0, -(np.asarray(X, dtype=float) @ np.asarray(A, dtype=float).T + b))
    return float(np.sqrt(np.mean(np.sum(Z * Z, axis=1))))


# ---------------------------------------------------------------------------------------
# Wasserstein distances
# ---------------------------------------------------------------------------------------


def psd_sqrt(S: Array) -> Array:
    r"""Symmetric PSD square root :math:`S^{1/2}` (eigenvalues clipped at 0 after symmetrising)."""
    w, U = np.linalg.eigh(_sym(S))
    return (U * np.sqrt(np.clip(w, 0.0, None))) @ U.T


def gaussian_w2(mu1: Array, S1: Array, mu2: Array, S2: Array) -> float:
    r"""Exact :math:`W_2` between :math:`\mathcal N(\mu_1,S_1)` and :math:`\mathcal N(\mu_2,S_2)`.

    .. math::

        W_2^2=\|\mu_1-\mu_2\|^2+\operatorname{tr}\!\big(S_1+S_2-2(S_1^{1/2}S_2S_1^{1/2})^{1/2}\big).

    The trace term (squared Bures distance) is evaluated as
    :math:`\min_{U\in O(d)}\|S_1^{1/2}-S_2^{1/2}U\|_F^2`, attained at the orthogonal polar factor
    :math:`U=WZ^\top` of :math:`S_2^{1/2}S_1^{1/2}=W\,\mathrm{diag}(\varsigma)\,Z^\top`: since
    :math:`\sum\varsigma=\operatorname{tr}(S_1^{1/2}S_2S_1^{1/2})^{1/2}`, this equals the trace
    formula, but as a norm of a difference it is non-negative by construction and has no
    :math:`\sqrt{\varepsilon}` cancellation (identical inputs give :math:`\approx 10^{-16}`, not
    :math:`10^{-8}`). Square roots are taken by ``eigh`` with PSD clipping, so singular
    covariances are allowed. Agrees with the ``scipy.linalg.sqrtm`` trace formula (tested).

    Parameters
    ----------
    mu1, mu2 : ndarray, shape (d,)
        Means.
    S1, S2 : ndarray, shape (d, d)
        Covariances (symmetric PSD).

    Returns
    -------
    float
        :math:`W_2` (not squared).
    """
    R1, R2 = psd_sqrt(S1), psd_sqrt(S2)
    W, _, Zt = np.linalg.svd(R2 @ R1)
    bures2 = float(np.sum((R1 - R2 @ (W @ Zt)) ** 2))
    dmu = np.asarray(mu1, dtype=float) - np.asarray(mu2, dtype=float)
    return float(np.sqrt(float(dmu @ dmu) + bures2))


def empirical_w2(X: Array, Y: Array) -> float:
    r"""Exact :math:`W_2` between the uniform empirical measures of two equal-size clouds.

    .. math::

        W_2^2=\min_{\pi\in S_n}\frac1n\sum_k |x_k-y_{\pi(k)}|^2 ,

    solved by :func:`scipy.optimize.linear_sum_assignment` on squared distances.

    Parameters
    ----------
    X, Y : ndarray, shape (n, d)
        Point clouds, rows are points.

    Returns
    -------
    float
        :math:`W_2` (not squared).
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.shape != Y.shape:
        raise ValueError(f"point clouds must have equal shapes, got {X.shape} and {Y.shape}")
    C = cdist(X, Y, "sqeuclidean")
    rows, cols = linear_sum_assignment(C)
    return float(np.sqrt(C[rows, cols].sum() / X.shape[0]))


def moments(X: Array) -> tuple[Array, Array]:
    r"""Mean and (biased, :math:`1/n`) covariance of a cloud ``X`` of shape ``(n, d)``.

    The :math:`1/n` normalisation makes :func:`gaussian_w2` of two clouds' moments exactly
    Gelbrich's lower bound on their :func:`empirical_w2`.
    """
    X = np.asarray(X, dtype=float)
    mu = X.mean(axis=0)
    D = X - mu
    return mu, _sym(D.T @ D / X.shape[0])


# ---------------------------------------------------------------------------------------
# Particle study of Prop. 2.4
# ---------------------------------------------------------------------------------------


@dataclass
class ReluStudy:
    r"""Result of :func:`relu_study`; arrays are indexed like ``t``.

    Attributes
    ----------
    t : ndarray, shape (k,)
        Times.
    coupling_l2 : ndarray
        Synchronous coupling :math:`\|X_t-Y_t\|_{L^2}=(\frac1N\sum_k|x_k(t)-y_k(t)|^2)^{1/2}`,
        ReLU cloud :math:`X` vs identity cloud :math:`Y`, same :math:`X_0`.
    w2_empirical : ndarray
        :func:`empirical_w2` between the two clouds (:math:`\le` ``coupling_l2``).
    w2_gelbrich : ndarray
        :func:`gaussian_w2` between the moment-matched Gaussians of the two clouds
        (:math:`\le` ``w2_empirical``, Gelbrich's bound).
    w2_gaussian : ndarray
        :func:`gaussian_w2` between the moment-matched Gaussian of the ReLU cloud and
        :math:`\nu_t` of eq. (7) (``nan`` after a blow-up of eq. (7)).
    first_order_bound : ndarray
        :math:`t\cdot` ``slope_closed_form``, the leading term of Prop. 2.4.
    slope_closed_form : float
        :func:`relu_slope` (``0`` for the identity activation).
    slope_sample : float
        :func:`empirical_relu_slope` of the sample :math:`X_0`: the exact
        :math:`t\to0` limit of ``coupling_l2 / t`` for this sample.
    slope_fit : float
        Estimate of :math:`\lim_{t\to0}\|X_t-Y_t\|_{L^2}/t`: least-squares fit of
        :math:`D(t)=st+ct^2` on the ``n_fit`` smallest positive times (:math:`D/t` for one time).
    mu_relu, Sigma_relu : ndarray, shapes (k, d), (k, d, d)
        Empirical moments of the ReLU cloud.
    mu_nu, Sigma_nu : ndarray, shapes (k, d), (k, d, d)
        :math:`\nu_t` from eq. (7).
    nu_start : str
        ``"sample"`` (eq. (7) started at the moments of :math:`X_0`) or ``"population"``
        (at :math:`(\mu_0,\Sigma_0)`).
    lemma23 : tuple of (float, float, bool)
        :func:`lemma23_kappa_interval`; Prop. 2.4 is stated only when it is non-empty.
    activation : str
        Activation of the first cloud.
    N, seed : int
        Sample size and seed.
    X0 : ndarray, shape (N, d)
        The common initial sample.
    """

    t: Array
    coupling_l2: Array
    w2_empirical: Array
    w2_gelbrich: Array
    w2_gaussian: Array
    first_order_bound: Array
    slope_closed_form: float
    slope_sample: float
    slope_fit: float
    mu_relu: Array
    Sigma_relu: Array
    mu_nu: Array
    Sigma_nu: Array
    nu_start: str
    lemma23: tuple[float, float, bool]
    activation: str
    N: int
    seed: int
    X0: Array


def _fit_slope(t: Array, D: Array, n_fit: int) -> float:
    mask = t > 0.0
    t, D = t[mask], D[mask]
    if t.size == 0:
        return float("nan")
    order = np.argsort(t)[: max(1, n_fit)]
    t, D = t[order], D[order]
    if t.size == 1:
        return float(D[0] / t[0])
    design = np.stack([t, t * t], axis=1)
    coef, *_ = np.linalg.lstsq(design, D, rcond=None)
    return float(coef[0])


def relu_study(
    A: Array,
    B: Array,
    V: Array,
    b: Array,
    mu0: Array,
    Sigma0: Array,
    times: Array,
    N: int,
    seed: int,
    *,
    activation: str = "relu",
    nu_start: Literal["sample", "population"] = "sample",
    n_fit: int = 3,
    rtol: float = 1e-8,
    atol: float = 1e-10,
) -> ReluStudy:
    r"""Prop. 2.4 numerically: ReLU particles vs identity particles vs eq. (7).

    Draws :math:`X_0\sim\mathcal N(\mu_0,\Sigma_0)^{\otimes N}` (``seed``), integrates eq. (2)
    with empirical attention twice from the same :math:`X_0` — once with ``activation``
    (``"relu"``), once with the identity — and at each time reports the synchronous-coupling
    distance, the exact empirical :math:`W_2` between the clouds, Gelbrich's moment bound,
    and the Gaussian :math:`W_2` between the moment-matched ReLU cloud and :math:`\nu_t`.

    Parameters
    ----------
    A, B, V : ndarray, shape (d, d)
        Constant parameters of eq. (2).
    b : ndarray, shape (d,)
        Constant bias.
    mu0 : ndarray, shape (d,)
        Initial mean.
    Sigma0 : ndarray, shape (d, d)
        Initial covariance (PSD, singular allowed).
    times : array_like, shape (k,)
        Non-negative, strictly increasing times.
    N : int
        Number of particles.
    seed : int
        Seed of :func:`numpy.random.default_rng` for :math:`X_0`.
    activation : {"relu", "identity"}
        Activation of the first cloud; ``"identity"`` makes both clouds identical.
    nu_start : {"sample", "population"}
        Initial moments of eq. (7): those of the sample (default; then ``w2_gaussian`` at
        :math:`t=0` is 0 and its growth is the ReLU effect, not sampling noise) or
        :math:`(\mu_0,\Sigma_0)` (the paper's :math:`\nu_0=\rho_0`).
    n_fit : int
        Number of smallest positive times used by ``slope_fit``.
    rtol, atol : float
        Tolerances of the particle integrations.

    Returns
    -------
    ReluStudy
    """
    A, B, V = (np.asarray(M, dtype=float) for M in (A, B, V))
    b = np.asarray(b, dtype=float)
    mu0 = np.asarray(mu0, dtype=float)
    Sigma0 = _sym(Sigma0)
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or t.size == 0 or np.any(t < 0.0) or np.any(np.diff(t) <= 0.0):
        raise ValueError("times must be a non-empty, non-negative, strictly increasing 1-D array")
    if activation not in ("relu", "identity"):
        raise ValueError(f"activation must be 'relu' or 'identity', got {activation!r}")
    d = mu0.size
    coeffs = constant(A, B, V, b)

    X0 = sample_gaussian(mu0, Sigma0, N, np.random.default_rng(seed))
    if t[-1] == 0.0:
        Xs = Ys = X0[None].copy()
    else:
        Xs = simulate_particles(coeffs, X0, t, activation=activation, rtol=rtol, atol=atol)
        Ys = simulate_particles(coeffs, X0, t, activation="identity", rtol=rtol, atol=atol)

    k = t.size
    coupling = np.sqrt(np.mean(np.sum((Xs - Ys) ** 2, axis=2), axis=1))
    w2_emp = np.array([empirical_w2(Xs[i], Ys[i]) for i in range(k)])
    mom_x = [moments(Xs[i]) for i in range(k)]
    mom_y = [moments(Ys[i]) for i in range(k)]
    w2_gel = np.array([gaussian_w2(*mom_x[i], *mom_y[i]) for i in range(k)])

    m_start, S_start = moments(X0) if nu_start == "sample" else (mu0, Sigma0)
    mu_nu = np.full((k, d), np.nan)
    S_nu = np.full((k, d, d), np.nan)
    if t[-1] == 0.0:
        mu_nu[:], S_nu[:] = m_start, S_start
    else:
        sol = integrate_moments(coeffs, m_start, S_start, float(t[-1]), t_eval=t)
        n_ok = min(k, sol.t.size - (1 if sol.status == "blowup" else 0))
        mu_nu[:n_ok], S_nu[:n_ok] = sol.mu[:n_ok], sol.Sigma[:n_ok]
    w2_gauss = np.array([
        gaussian_w2(*mom_x[i], mu_nu[i], S_nu[i]) if np.all(np.isfinite(S_nu[i])) else np.nan
        for i in range(k)
    ])

    slope_cf = relu_slope(A, b, mu0, Sigma0) if activation == "relu" else 0.0
    slope_sample = empirical_relu_slope(A, b, X0) if activation == "relu" else 0.0
    return ReluStudy(
        t=t,
        coupling_l2=coupling,
        w2_empirical=w2_emp,
        w2_gelbrich=w2_gel,
        w2_gaussian=w2_gauss,
        first_order_bound=t * slope_cf,
        slope_closed_form=slope_cf,
        slope_sample=slope_sample,
        slope_fit=_fit_slope(t, coupling, n_fit),
        mu_relu=np.array([m for m, _ in mom_x]),
        Sigma_relu=np.array([S for _, S in mom_x]),
        mu_nu=mu_nu,
        Sigma_nu=S_nu,
        nu_start=nu_start,
        lemma23=lemma23_kappa_interval(B, Sigma0),
        activation=activation,
        N=int(N),
        seed=int(seed),
        X0=X0,
    )
