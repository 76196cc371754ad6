r"""The :math:`V=\eta I` case of the Gaussian Transformer as a Riccati equation (gaussian paper, §4.1).

Setting
-------
With :math:`V=\eta I_d` the covariance line of eq. (7) reads
:math:`\dot\Sigma=A\Sigma+\Sigma A^\top+\Sigma\,\eta(B+B^\top)\,\Sigma`. Under eq. (12),

.. math::

    \eta(B+B^\top)\preceq0, \qquad -H^\top H := \eta(B+B^\top),\ H\in\mathbb R^{m\times d},
    \tag{12}

it is the Kalman–Bucy filter Riccati equation with zero process noise,

.. math::

    \dot\Sigma = A\Sigma+\Sigma A^\top-\Sigma H^\top H\Sigma . \tag{13}

Exact linearisation
-------------------
For :math:`\Sigma_0\succ0`, :math:`P=\Sigma^{-1}` solves the *linear* Lyapunov differential
equation :math:`\dot P=-A^\top P-PA-\eta(B+B^\top)`, so, with :math:`Q:=-\eta(B+B^\top)`,

.. math::

    P(t)=e^{-A^\top t}\Sigma_0^{-1}e^{-At}+\int_0^t e^{-A^\top s}\,Q\,e^{-As}\,ds,
    \qquad \Sigma(t)=P(t)^{-1}.

The integral is evaluated exactly (no quadrature) by Van Loan's block exponential

.. math::

    \exp\!\Big(h\begin{pmatrix}A^\top & Q\\ 0 & -A\end{pmatrix}\Big)
    =\begin{pmatrix}F_{11}&F_{12}\\0&F_{22}\end{pmatrix},\qquad
    F_{22}=e^{-Ah},\quad \int_0^h e^{-A^\top s}Qe^{-As}ds=F_{22}^\top F_{12},

and the semigroup identity :math:`P(t+h)=e^{-A^\top h}P(t)e^{-Ah}+P_{\Sigma_0^{-1}=0}(h)`, which
never forms the growing factor :math:`e^{A^\top t}` (a single exponential over a long horizon loses
accuracy when :math:`A` has eigenvalues of both signs). Since
:math:`P(t)=e^{-A^\top t}G(t)e^{-At}` with
:math:`G(t)=\Sigma_0^{-1}+\int_0^te^{A^\top s}Qe^{As}ds`, the solution exists exactly as long as
:math:`G(t)\succ0`; the blow-up time (Thm 4.8 regime, :math:`\eta(B+B^\top)\not\preceq0`) is the
first zero of :math:`\det P(t)`, equivalently of :math:`\lambda_{\min}(G(t))`. When
:math:`Q\preceq0` the map :math:`t\mapsto G(t)` is non-increasing in the Loewner order, so the first
sign change of :math:`\lambda_{\min}` is the only one.

Theorem 4.1 (limit of the covariance), as corrected
---------------------------------------------------
Order the real Schur form so that the eigenvalues with positive real part come first,

.. math::

    A=U\begin{pmatrix}A_a&A_{12}\\0&A_n\end{pmatrix}U^\top,\quad
    \operatorname{Re}\operatorname{spec}A_a>0,\ \operatorname{Re}\operatorname{spec}A_n\le0,
    \qquad U^\top\eta(B+B^\top)U=\begin{pmatrix}B_{11}&B_{12}\\B_{21}&B_{22}\end{pmatrix}. \tag{14}

The limit predicted by the paper is

.. math::

    \Sigma(t)\to U\begin{pmatrix}\Sigma^a_\infty&0\\0&0\end{pmatrix}U^\top,\qquad
    \Sigma^a_\infty=P_{11}^{-1},\quad A_a^\top P_{11}+P_{11}A_a=-B_{11}, \tag{15}

:math:`\Sigma^a_\infty` being the positive definite solution of
:math:`0=A_a\Sigma+\Sigma A_a^\top+\Sigma B_{11}\Sigma`. The proof tracks the blocks of
:math:`U^\top PU` with the growth rates (16)
:math:`\lambda_{12}=\max\operatorname{Re}\operatorname{spec}(-A_a^\top)+\max\operatorname{Re}\operatorname{spec}(-A_n)`
and (17) :math:`\lambda_{22}=2\max\operatorname{Re}\operatorname{spec}(-A_n)`.

**Correction (note 000, §6 item 3).** Eq. (12) alone does not give the limit: with
:math:`\eta(B+B^\top)=0` (e.g. :math:`B` skew) :math:`\Sigma=e^{At}\Sigma_0e^{A^\top t}`, which diverges
for :math:`A=I`; and :math:`P_{11}` is singular when :math:`B_{11}` is. The limit is guaranteed when
:math:`\eta(B+B^\top)\prec0`, or more generally when :math:`(H,A)` is *detectable*: every
eigenvector :math:`x` of :math:`A` with :math:`\operatorname{Re}\lambda\ge0` has :math:`Hx\ne0`
(PBH test, :func:`detectable`). Detectability makes :math:`(HU_1,A_a)` observable, so
:math:`P_{11}`, an observability Gramian, is positive definite. With eigenvalues of :math:`A` on
the imaginary axis the convergence is only algebraic (e.g. :math:`1/t`).

Theorem 4.11 (mean), as corrected
---------------------------------
The mean solves :math:`\dot\mu=(A+\eta\Sigma B+\eta I)\mu+b`. If :math:`\Sigma(t)\to\Sigma_\infty`
(the Theorem 4.1 limit; the printed hypothesis :math:`B+B^\top\succ0` contradicts (12) for
:math:`\eta>0`, note §6 item 4) and :math:`A+\eta\Sigma_\infty B+\eta I` is Hurwitz, then

.. math::

    \mu(t)\to\mu_\infty=-(A+\eta\Sigma_\infty B+\eta I)^{-1}b,
    \qquad\text{so } b=-(A+\eta\Sigma_\infty B+\eta I)\,\hat\mu
    \text{ gives } \mu_\infty=\hat\mu. \tag{Thm 4.11}

For :math:`\eta<0` the matrix is Hurwitz: :math:`M_\infty=A+\eta\Sigma_\infty B` has
:math:`\operatorname{Re}\operatorname{spec}\le0`, because in the Schur basis it is block upper
triangular with diagonal blocks :math:`A_a+\eta\Sigma^a_\infty(U^\top BU)_{11}` (similar to a skew
matrix, Lemma 4.4) and :math:`A_n`. Proof 4.12 prints the blocks as
:math:`A_a+\Sigma^a_\infty B_{11}` and :math:`A_{12}`; the correct off-diagonal block is
:math:`A_{12}+\eta\Sigma^a_\infty(U^\top BU)_{12}` (note §6 item 5).

All functions are numerical (float64); tolerances are documented per function. They decide
nothing rigorously: certificates are built on top of them in :mod:`flowcert.certificates`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.linalg import expm, schur, solve_continuous_lyapunov
from scipy.optimize import brentq

from .moments import symmetric_part

Array = np.ndarray
_sym = symmetric_part

__all__ = [
    "OrderedSchur",
    "Thm41Limit",
    "BlowupAnalysis",
    "ordered_real_schur",
    "riccati_weight",
    "detectable",
    "thm41_limit",
    "inverse_covariance",
    "inverse_covariance_solution",
    "blowup_analysis",
    "blowup_time_eta",
    "closed_loop_mean_matrix",
    "mean_limit",
    "bias_for_target_mean",
]


def riccati_weight(B: Array, eta: float) -> Array:
    r"""The symmetric matrix :math:`\eta(B+B^\top)` of eq. (12) (equal to :math:`-H^\top H` under (12)).

    Parameters
    ----------
    B : ndarray, shape (d, d)
        Attention matrix.
    eta : float
        Scalar of :math:`V=\eta I`.

    Returns
    -------
    ndarray, shape (d, d)
        :math:`\eta(B+B^\top)`, exactly symmetric.
    """
    B = np.asarray(B, dtype=float)
    return eta * (B + B.T)


# ---------------------------------------------------------------------------------------
# Ordered real Schur form, eq. (14)
# ---------------------------------------------------------------------------------------


class OrderedSchur(NamedTuple):
    r"""Real Schur form :math:`A=UTU^\top` with the ``k`` eigenvalues of real part > tol first.

    Unpacks as ``U, T, k``; the blocks of eq. (14) are the properties :attr:`A_a`,
    :attr:`A_12`, :attr:`A_n`.
    """

    U: Array
    T: Array
    k: int

    @property
    def A_a(self) -> Array:
        """Leading ``k x k`` block (eigenvalues with real part > tol)."""
        return self.T[: self.k, : self.k]

    @property
    def A_12(self) -> Array:
        """Off-diagonal ``k x (d-k)`` block."""
        return self.T[: self.k, self.k :]

    @property
    def A_n(self) -> Array:
        """Trailing block (eigenvalues with real part <= tol)."""
        return self.T[self.k :, self.k :]


def _block_eigs(T: Array) -> Array:
    if T.size == 0:
        return np.zeros(0, dtype=complex)
    return np.linalg.eigvals(T)


def ordered_real_schur(A: Array, tol: float = 1e-9) -> OrderedSchur:
    r"""Real Schur form of eq. (14), eigenvalues with :math:`\operatorname{Re}\lambda>\mathrm{tol}` first.

    Parameters
    ----------
    A : ndarray, shape (d, d)
        Real matrix.
    tol : float, optional
        Absolute threshold on the real part. scipy's ``sort='rhp'`` means
        :math:`\operatorname{Re}\lambda\ge0` and would put eigenvalues computed as
        :math:`\pm10^{-16}` on either side; a positive ``tol`` keeps them in :math:`A_n`.

    Returns
    -------
    OrderedSchur
        ``(U, T, k)`` with ``U`` orthogonal, ``T`` quasi upper triangular, :math:`A=UTU^\top`,
        and the blocks ``A_a``, ``A_12``, ``A_n`` as properties.

    Raises
    ------
    RuntimeError
        If, after reordering, rounding moved an eigenvalue across the threshold (only for
        eigenvalues within rounding of ``tol``; pick another ``tol``).
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError("A must be square")
    T, U, sdim = schur(A, output="real", sort=lambda re, im: re > tol)
    k = int(sdim)
    ea, en = _block_eigs(T[:k, :k]), _block_eigs(T[k:, k:])
    if np.any(ea.real <= tol) or np.any(en.real > tol):
        raise RuntimeError("ordered Schur form: an eigenvalue crossed the threshold after reordering")
    return OrderedSchur(U, T, k)


# ---------------------------------------------------------------------------------------
# Detectability (corrected hypothesis of Thm 4.1)
# ---------------------------------------------------------------------------------------


def detectable(
    A: Array, B: Array, eta: float, tol: float = 1e-9, rank_tol: float = 1e-8
) -> bool | None:
    r"""PBH test of detectability of :math:`(H,A)`, :math:`-H^\top H=\eta(B+B^\top)`.

    For every eigenvalue :math:`\lambda` of :math:`A` with :math:`\operatorname{Re}\lambda\ge-\mathrm{tol}`
    the stacked matrix :math:`\binom{A-\lambda I}{H}` must have full column rank, i.e. no eigenvector
    :math:`x` of :math:`\lambda` has :math:`Hx=0` (the rank form of the eigenvector test; it also
    covers eigenvalues of geometric multiplicity > 1). :math:`H=\operatorname{diag}(\sqrt w)Q^\top`
    from :math:`-\eta(B+B^\top)=Q\operatorname{diag}(w)Q^\top`.

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    tol : float, optional
        Eigenvalues with :math:`\operatorname{Re}\lambda>\mathrm{tol}` must be observable;
        those with :math:`|\operatorname{Re}\lambda|\le\mathrm{tol}` (numerically on the imaginary
        axis) too, but an unobservable one there makes the answer ambiguous.
    rank_tol : float, optional
        Relative rank threshold: smallest singular value below ``rank_tol * scale`` means rank
        deficient, above ``100 * rank_tol * scale`` full rank, in between ambiguous, with
        ``scale = 1 + ||A||_2 + ||H||_2``.

    Returns
    -------
    bool or None
        True (detectable), False (an eigenvalue with real part > tol is unobservable), or None
        when ambiguous: a rank decision inside the band, an unobservable eigenvalue on the
        imaginary axis within ``tol``, or eq. (12) itself failing
        (:math:`\eta(B+B^\top)` has an eigenvalue above ``rank_tol * scale``, so :math:`H`
        does not exist).
    """
    A = np.asarray(A, dtype=float)
    d = A.shape[0]
    w, Qv = np.linalg.eigh(-riccati_weight(B, eta))
    scale_w = 1.0 + float(np.abs(w).max(initial=0.0))
    if w.min(initial=0.0) < -rank_tol * scale_w:
        return None  # eq. (12) fails: no real H with -H^T H = eta (B + B^T)
    H = np.sqrt(np.clip(w, 0.0, None))[:, None] * Qv.T
    scale = 1.0 + np.linalg.norm(A, 2) + np.linalg.norm(H, 2)
    verdict: bool | None = True
    for lam in np.linalg.eigvals(A):
        if lam.real < -tol:
            continue
        stacked = np.vstack([A - lam * np.eye(d), H.astype(complex)])
        smin = np.linalg.svd(stacked, compute_uv=False)[-1]
        if smin > 100.0 * rank_tol * scale:
            continue
        if smin < rank_tol * scale and lam.real > tol:
            return False
        verdict = None
    return verdict


# ---------------------------------------------------------------------------------------
# Theorem 4.1 limit
# ---------------------------------------------------------------------------------------


@dataclass
class Thm41Limit:
    r"""The Theorem 4.1 limit and the flags that say whether it is guaranteed.

    Attributes
    ----------
    Sigma_inf : ndarray or None
        :math:`U\operatorname{diag}(P_{11}^{-1},0)U^\top`; None when :math:`P_{11}` is not
        positive definite (then eq. (15) has no PD solution and the paper's formula is void).
    P11 : ndarray, shape (k, k)
        Solution of :math:`A_a^\top P+PA_a=-B_{11}`.
    p11_pd : bool
        :math:`\lambda_{\min}(P_{11})>\mathrm{tol}\cdot\max(1,\|P_{11}\|_2)` (True when k = 0).
    p11_min_eig : float
        :math:`\lambda_{\min}(P_{11})` (``inf`` when k = 0).
    schur : OrderedSchur
        The ordered Schur form used.
    B11 : ndarray, shape (k, k)
        Leading block of :math:`U^\top\eta(B+B^\top)U`.
    weight_nsd : bool
        Eq. (12), :math:`\eta(B+B^\top)\preceq0` (numerically, eigenvalues <= tol * scale).
    weight_nd : bool
        :math:`\eta(B+B^\top)\prec0` (eigenvalues < -tol * scale): sufficient for the limit.
    detectable : bool or None
        :func:`detectable` of :math:`(H,A)`.
    guaranteed : bool
        ``weight_nd or (weight_nsd and detectable is True)``: the corrected hypothesis holds
        (numerically) and :math:`\Sigma(t)\to` ``Sigma_inf`` for every :math:`\Sigma_0\succ0`.
    """

    Sigma_inf: Array | None
    P11: Array
    p11_pd: bool
    p11_min_eig: float
    schur: OrderedSchur
    B11: Array
    weight_nsd: bool
    weight_nd: bool
    detectable: bool | None
    guaranteed: bool


def thm41_limit(A: Array, B: Array, eta: float, tol: float = 1e-9) -> Thm41Limit:
    r"""Limit of :math:`\Sigma(t)` predicted by Theorem 4.1, eq. (15), with the corrected hypothesis.

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
        :math:`V=\eta I`.
    tol : float, optional
        Schur threshold (see :func:`ordered_real_schur`) and relative tolerance of the
        definiteness flags.

    Returns
    -------
    Thm41Limit
        ``Sigma_inf`` is computed whenever :math:`P_{11}\succ0`, whether or not the hypothesis
        holds; read ``guaranteed`` before relying on it.
    """
    A = np.asarray(A, dtype=float)
    d = A.shape[0]
    sch = ordered_real_schur(A, tol)
    U, k = sch.U, sch.k
    W = riccati_weight(B, eta)
    Bt = _sym(U.T @ W @ U)
    B11 = Bt[:k, :k]
    wW = np.linalg.eigvalsh(W)
    scale = max(1.0, float(np.abs(wW).max(initial=0.0)))
    weight_nsd = bool(wW.max() <= tol * scale)
    weight_nd = bool(wW.max() < -tol * scale)
    det = detectable(A, B, eta, tol=tol)
    if k == 0:
        P11 = np.zeros((0, 0))
        p11_pd, pmin = True, math.inf
        Sigma_inf: Array | None = np.zeros((d, d))
    else:
        # solve_continuous_lyapunov(a, q) solves a X + X a^T = q
        P11 = _sym(solve_continuous_lyapunov(sch.A_a.T, -B11))
        wP = np.linalg.eigvalsh(P11)
        pmin = float(wP[0])
        p11_pd = bool(pmin > tol * max(1.0, float(np.abs(wP).max())))
        if p11_pd:
            Sa = _sym(np.linalg.solve(P11, np.eye(k)))
            Z = np.zeros((d, d))
            Z[:k, :k] = Sa
            Sigma_inf = _sym(U @ Z @ U.T)
        else:
            Sigma_inf = None
    guaranteed = bool(weight_nd or (weight_nsd and det is True))
    return Thm41Limit(Sigma_inf, P11, p11_pd, pmin, sch, B11, weight_nsd, weight_nd, det, guaranteed)


# ---------------------------------------------------------------------------------------
# Exact linearisation P = Sigma^{-1}
# ---------------------------------------------------------------------------------------


def _van_loan(Mdiag: Array, Q: Array, h: float) -> tuple[Array, Array]:
    r"""``(E, W)`` with :math:`E=e^{Mh}`, :math:`W=\int_0^h e^{M^\top s}Qe^{Ms}ds` (Van Loan)."""
    d = Mdiag.shape[0]
    C = np.zeros((2 * d, 2 * d))
    C[:d, :d] = -Mdiag.T
    C[:d, d:] = Q
    C[d:, d:] = Mdiag
    F = expm(C * h)
    E = F[d:, d:]
    return E, _sym(E.T @ F[:d, d:])


def _step_count(A: Array, dt: float, theta: float = 1.0) -> int:
    return max(1, int(math.ceil(abs(dt) * np.linalg.norm(A, 1) / theta)))


def _inv_pd_input(Sigma0: Array) -> Array:
    S0 = _sym(np.asarray(Sigma0, dtype=float))
    try:
        L = np.linalg.cholesky(S0)
    except np.linalg.LinAlgError as exc:
        raise ValueError("Sigma0 must be positive definite") from exc
    Li = np.linalg.solve(L, np.eye(S0.shape[0]))
    return _sym(Li.T @ Li)


def inverse_covariance(A: Array, B: Array, eta: float, Sigma0: Array, t: float | Array) -> Array:
    r""":math:`P(t)=\Sigma(t)^{-1}` from the exact linearisation (no ODE solver, no quadrature).

    :math:`P(t)=e^{-A^\top t}\Sigma_0^{-1}e^{-At}+\int_0^te^{-A^\top s}(-\eta(B+B^\top))e^{-As}ds`,
    advanced between the requested times by the semigroup identity with Van Loan steps
    :math:`h` such that :math:`h\|A\|_1\le1`.

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma0 : ndarray, shape (d, d)
        Positive definite initial covariance.
    t : float or array_like of float
        Non-negative times (any order).

    Returns
    -------
    ndarray
        Shape (d, d) for scalar ``t``, else (len(t), d, d). The formula is valid for all t, but
        it is the inverse covariance only before the blow-up time (see :func:`blowup_time_eta`).
    """
    A = np.asarray(A, dtype=float)
    Q = -riccati_weight(B, eta)
    P0 = _inv_pd_input(Sigma0)
    ts = np.atleast_1d(np.asarray(t, dtype=float))
    if np.any(ts < 0) or not np.all(np.isfinite(ts)):
        raise ValueError("t must be finite and non-negative")
    order = np.argsort(ts)
    out = np.empty((ts.size,) + A.shape)
    P, tc = P0, 0.0
    for i in order:
        dt = ts[i] - tc
        if dt > 0:
            n = _step_count(A, dt)
            E, Wh = _van_loan(-A, Q, dt / n)
            for _ in range(n):
                P = _sym(E.T @ P @ E + Wh)
            tc = float(ts[i])
        out[i] = P
    return out[0] if np.ndim(t) == 0 else out


def inverse_covariance_solution(
    A: Array,
    B: Array,
    eta: float,
    Sigma0: Array,
    t: float | Array,
    *,
    check_blowup: bool = True,
) -> Array:
    r""":math:`\Sigma(t)=P(t)^{-1}`, the exact solution of eq. (13) for :math:`V=\eta I`.

    The same semigroup identity as :func:`inverse_covariance`,
    :math:`P(t+h)=e^{-A^\top h}\big(P(t)+K_h\big)e^{-Ah}` with
    :math:`K_h=\int_0^he^{A^\top s}Qe^{As}ds` (Van Loan), is applied in inverse form,

    .. math::

        \Sigma(t+h)=e^{Ah}\,(I+\Sigma(t)K_h)^{-1}\Sigma(t)\,e^{A^\top h},

    so that no ill-conditioned :math:`P(t)` is ever inverted (:math:`P` grows like
    :math:`e^{2|\operatorname{Re}\lambda|t}` along the stable eigenvalues of :math:`A`, and its
    direct inverse loses all accuracy on long horizons).

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma0 : ndarray, shape (d, d)
        Positive definite.
    t : float or array_like of float
        Non-negative times (any order).
    check_blowup : bool, optional
        When :math:`\eta(B+B^\top)\not\preceq0`, compute the blow-up time
        (:func:`blowup_analysis`, horizon ``max(t)``) and return NaN at and after it. Without
        the check, the recursion is continued blindly past a blow-up.

    Returns
    -------
    ndarray
        Shape (d, d) for scalar ``t``, else (len(t), d, d).
    """
    A = np.asarray(A, dtype=float)
    d = A.shape[0]
    Q = -riccati_weight(B, eta)
    _inv_pd_input(Sigma0)  # validates Sigma0 > 0
    S = _sym(np.asarray(Sigma0, dtype=float))
    ts = np.atleast_1d(np.asarray(t, dtype=float))
    if np.any(ts < 0) or not np.all(np.isfinite(ts)):
        raise ValueError("t must be finite and non-negative")
    tb = None
    if check_blowup and ts.size:
        tb = blowup_time_eta(A, B, eta, Sigma0, t_max=float(ts.max()))
    out = np.full((ts.size, d, d), np.nan)
    tc = 0.0
    eye = np.eye(d)
    for i in np.argsort(ts):
        if tb is not None and ts[i] >= tb:
            break
        dt = ts[i] - tc
        if dt > 0:
            n = _step_count(A, dt)
            E, K = _van_loan(A, Q, dt / n)
            for _ in range(n):
                S = _sym(E @ np.linalg.solve(eye + S @ K, S) @ E.T)
            tc = float(ts[i])
        out[i] = S
    return out[0] if np.ndim(t) == 0 else out


# ---------------------------------------------------------------------------------------
# Blow-up time: first zero of det P(t)
# ---------------------------------------------------------------------------------------


@dataclass
class BlowupAnalysis:
    r"""Outcome of the search for the first zero of :math:`\det P(t)`.

    Attributes
    ----------
    time : float or None
        The blow-up time when found.
    status : str
        ``"blows_up"`` (time found); ``"global"`` (no blow-up for any t: eq. (12) holds, or
        :math:`-\eta(B+B^\top)\preceq0`, :math:`A` Hurwitz and
        :math:`\Sigma_0^{-1}+\int_0^\infty e^{A^\top s}Qe^{As}ds\succ0`); ``"none_found"``
        (no sign change of :math:`\lambda_{\min}(G)` on the grid up to ``horizon``).
    horizon : float
        Time up to which the search looked (``inf`` for ``"global"``).
    monotone : bool
        :math:`Q=-\eta(B+B^\top)\preceq0`, so :math:`\lambda_{\min}(G(t))` is non-increasing and
        no crossing can be missed between grid points.
    """

    time: float | None
    status: str
    horizon: float
    monotone: bool


def blowup_analysis(
    A: Array,
    B: Array,
    eta: float,
    Sigma0: Array,
    *,
    t_max: float | None = None,
    max_steps: int = 200_000,
    tol: float = 1e-12,
) -> BlowupAnalysis:
    r"""First zero of :math:`\det P(t)` (equivalently of :math:`\lambda_{\min}(G(t))`), if any.

    :math:`G(t)=\Sigma_0^{-1}+\int_0^te^{A^\top s}Qe^{As}ds`, :math:`Q=-\eta(B+B^\top)`, is tabulated
    on a uniform grid by :math:`G(t+h)=G(t)+e^{A^\top t}W_he^{At}` (Van Loan :math:`W_h`); the
    first grid interval where :math:`\lambda_{\min}(G)` changes sign is refined with ``brentq``
    (:math:`G` is recomputed exactly inside the interval).

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma0 : ndarray, shape (d, d)
        Positive definite.
    t_max : float, optional
        Search horizon (default 1000). The grid step is
        :math:`h=\min(0.05/(\|A\|_2+\|Q\|_2\|\Sigma_0\|_2),\ t_{\max}/64)`, enlarged if more than
        ``max_steps`` steps would be needed. For indefinite :math:`Q` a dip of
        :math:`\lambda_{\min}` below 0 shorter than h could be missed.
    max_steps : int, optional
    tol : float, optional
        Relative tolerance of the definiteness tests on :math:`Q` and :math:`G(\infty)`.

    Returns
    -------
    BlowupAnalysis
    """
    A = np.asarray(A, dtype=float)
    d = A.shape[0]
    Q = -riccati_weight(B, eta)
    G0 = _inv_pd_input(Sigma0)
    wQ = np.linalg.eigvalsh(Q)
    qscale = max(1.0, float(np.abs(wQ).max(initial=0.0)))
    if wQ.min() >= -tol * qscale:
        return BlowupAnalysis(None, "global", math.inf, bool(wQ.max() <= tol * qscale))
    monotone = bool(wQ.max() <= tol * qscale)
    if monotone and np.linalg.eigvals(A).real.max() < 0:
        with np.errstate(all="ignore"):
            X = solve_continuous_lyapunov(A.T, -Q)  # A^T X + X A = -Q, X = int e^{A^T s} Q e^{As}
        Ginf = _sym(G0 + X)
        wG = np.linalg.eigvalsh(Ginf)
        if np.all(np.isfinite(wG)) and wG[0] > tol * max(1.0, float(np.abs(wG).max())):
            return BlowupAnalysis(None, "global", math.inf, monotone)
    horizon = 1000.0 if t_max is None else float(t_max)
    if horizon <= 0:
        return BlowupAnalysis(None, "none_found", 0.0, monotone)
    rate = np.linalg.norm(A, 2) + np.linalg.norm(Q, 2) * np.linalg.norm(np.linalg.inv(G0), 2)
    h = min(0.05 / max(rate, 1e-300), horizon / 64.0)
    h = max(h, horizon / max_steps)
    n = int(math.ceil(horizon / h - 1e-9))
    h = horizon / n
    Eh, Wh = _van_loan(A, Q, h)

    def lam(G: Array) -> float:
        return float(np.linalg.eigvalsh(_sym(G))[0])

    G, E, tk = G0, np.eye(d), 0.0
    for k in range(n):
        Gn = _sym(G + E.T @ Wh @ E)
        if not np.all(np.isfinite(Gn)):
            return BlowupAnalysis(None, "none_found", tk, monotone)
        if lam(Gn) < 0.0:
            Gk, Ek = G, E

            def f(tau: float) -> float:
                if tau <= 0.0:
                    return lam(Gk)
                _, Wt = _van_loan(A, Q, tau)
                return lam(Gk + Ek.T @ Wt @ Ek)

            lo, hi = 0.0, h
            if f(hi) >= 0.0:  # rounding disagreement between the two formulas: move right
                return BlowupAnalysis(tk + h, "blows_up", horizon, monotone)
            tau = brentq(f, lo, hi, xtol=1e-15 * max(1.0, tk), rtol=4 * np.finfo(float).eps, maxiter=200)
            return BlowupAnalysis(tk + float(tau), "blows_up", horizon, monotone)
        G, E, tk = Gn, E @ Eh, (k + 1) * h
    return BlowupAnalysis(None, "none_found", horizon, monotone)


def blowup_time_eta(
    A: Array, B: Array, eta: float, Sigma0: Array, *, t_max: float | None = None
) -> float | None:
    r"""Blow-up time of eq. (13): the first :math:`t` with :math:`\det P(t)=0`, or None.

    None means either no blow-up at all or none found up to ``t_max``; use
    :func:`blowup_analysis` to tell the two apart.

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma0 : ndarray, shape (d, d)
        Positive definite.
    t_max : float, optional
        Search horizon (default 1000).

    Returns
    -------
    float or None
    """
    return blowup_analysis(A, B, eta, Sigma0, t_max=t_max).time


# ---------------------------------------------------------------------------------------
# Theorem 4.11: mean limit and mean matching
# ---------------------------------------------------------------------------------------


def closed_loop_mean_matrix(A: Array, B: Array, eta: float, Sigma_inf: Array) -> Array:
    r""":math:`M^\eta_\infty+\eta I=A+\eta\Sigma_\infty B+\eta I`, the matrix of eq. (23) at the limit."""
    A = np.asarray(A, dtype=float)
    return A + eta * np.asarray(Sigma_inf, dtype=float) @ np.asarray(B, dtype=float) + eta * np.eye(A.shape[0])


def mean_limit(
    A: Array, B: Array, eta: float, Sigma_inf: Array, b: Array, tol: float = 1e-9
) -> Array | None:
    r"""Theorem 4.11(1): :math:`\mu_\infty=-(A+\eta\Sigma_\infty B+\eta I)^{-1}b`.

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma_inf : ndarray, shape (d, d)
        The Theorem 4.1 limit (:func:`thm41_limit`).
    b : ndarray, shape (d,)
    tol : float, optional
        The matrix counts as Hurwitz when its spectral abscissa is below ``-tol``.

    Returns
    -------
    ndarray or None
        None when :math:`A+\eta\Sigma_\infty B+\eta I` is not (numerically) Hurwitz.
    """
    M = closed_loop_mean_matrix(A, B, eta, Sigma_inf)
    if np.linalg.eigvals(M).real.max() >= -tol:
        return None
    return -np.linalg.solve(M, np.asarray(b, dtype=float))


def bias_for_target_mean(A: Array, B: Array, eta: float, Sigma_inf: Array, mu_target: Array) -> Array:
    r"""Mean matching (Thm 4.11, §5.1): :math:`b=-(A+\eta\Sigma_\infty B+\eta I)\hat\mu`.

    The mean then converges to :math:`\hat\mu` whenever :math:`\Sigma(t)\to\Sigma_\infty` and the
    matrix is Hurwitz (always the case for :math:`\eta<0` and the Theorem 4.1 limit).

    Parameters
    ----------
    A, B : ndarray, shape (d, d)
    eta : float
    Sigma_inf : ndarray, shape (d, d)
    mu_target : ndarray, shape (d,)

    Returns
    -------
    ndarray, shape (d,)
    """
    return -closed_loop_mean_matrix(A, B, eta, Sigma_inf) @ np.asarray(mu_target, dtype=float)
