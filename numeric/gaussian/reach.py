r"""Exact finite-time reachability of the Gaussian Transformer (gaussian paper, Thm 3.3, Proof 3.4).

Statement (Theorem 3.3). Let :math:`\Sigma_0\succeq0`, :math:`T>0`, :math:`\hat\mu\in\mathbb R^d` and
:math:`\hat\Sigma\succeq0` with :math:`\operatorname{rank}\hat\Sigma=\operatorname{rank}\Sigma_0=r`.
There are continuous (here: smooth) :math:`A,B,V:[0,T]\to\mathbb R^{d\times d}` and
:math:`b:[0,T]\to\mathbb R^d` such that the solution of eq. (7),

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top ,

started at :math:`(\mu_0,\Sigma_0)` satisfies :math:`\mu(T)=\hat\mu`, :math:`\Sigma(T)=\hat\Sigma`.
With Lemma 3.1 (the rank of :math:`\Sigma(t)` is invariant) the reachable set is exactly
:math:`\{(\hat\mu,\hat\Sigma):\hat\Sigma\succeq0,\ \operatorname{rank}\hat\Sigma=r\}`.

Construction (Proof 3.4), as implemented here:

1. **Feedback.** :math:`B(t)=\Sigma(t)^\dagger` and :math:`A(t)=-V(t)-V(t)\Sigma(t)B(t)`. Since
   :math:`\Sigma\Sigma^\dagger\Sigma=\Sigma`, eq. (7) becomes eq. (10):

   .. math::

       \dot\mu=b,\qquad \dot\Sigma=-V\Sigma-\Sigma V^\top,

   hence :math:`\Sigma(t)=\Psi_V(t)\Sigma_0\Psi_V(t)^\top` with (11)
   :math:`\dot\Psi_V=-V\Psi_V`, :math:`\Psi_V(0)=I`.

2. **Spectral decompositions in SO(d)** (:func:`spectral_so`):
   :math:`\Sigma_0=U_0\Lambda_0U_0^\top`, :math:`\hat\Sigma=U_1\Lambda_1U_1^\top`, eigenvalues in
   descending order (so the :math:`r` positive ones come first), one column negated when
   :math:`\det U=-1`. Numerical rank: an eigenvalue counts as positive iff it exceeds
   :data:`RANK_RTOL` :math:`\times\lambda_{\max}`; the others are treated as zero.

3. **Scaling.** :math:`D=\operatorname{diag}(\sqrt{\lambda_{1,i}/\lambda_{0,i}})` for :math:`i\le r`,
   :math:`D_{ii}=1` for :math:`i>r`.

4. **Congruence** (:func:`congruence`). :math:`M=U_1DU_0^\top`, :math:`\det M=\det D>0` and
   :math:`M\Sigma_0M^\top=\hat\Sigma`.

5. **Path in** :math:`GL^+(d)` (:func:`gl_path`). Polar decomposition :math:`M=QS`
   (:math:`Q\in SO(d)` because :math:`\det M>0`, :math:`S\succ0`), :math:`K=\log Q` (real, skew,
   from the real Schur form of :math:`Q`; eigenvalue pairs :math:`-1,-1` are rotations by
   :math:`\pi`), :math:`L=\log S` (real symmetric), and a smooth ramp :math:`s` with
   :math:`s(0)=0`, :math:`s(T)=1`:

   .. math::

       \Phi(t)=e^{s(t)K}e^{s(t)L},\qquad
       \dot\Phi(t)=\dot s(t)\,\big(K\Phi(t)+e^{s(t)K}Le^{s(t)L}\big),

   .. math::

       V(t)=-\dot\Phi\Phi^{-1}=-\dot s(t)\big(K+e^{s(t)K}Le^{-s(t)K}\big),

   so :math:`\Psi_V=\Phi`, :math:`\Phi(0)=I`, :math:`\Phi(T)=QS=M`. The default ramp is the
   smoothstep :math:`s=3u^2-2u^3`, :math:`u=t/T` (then :math:`V(0)=V(T)=0`); ``"linear"``
   (:math:`s=u`) is the choice of the notes.

6. **Mean.** :math:`b(t)\equiv(\hat\mu-\mu_0)/T`.

The controls are made explicit in :math:`t` (open loop): :math:`\Sigma(t)` in the feedback is the
planned :math:`\Phi(t)\Sigma_0\Phi(t)^\top`, never a simulated one. For :math:`B` the rank-:math:`r`
factor :math:`F_0=U_{0,:r}\Lambda_{0,:r}^{1/2}` (:math:`\Sigma_0=F_0F_0^\top` up to the eigenvalues
below the rank tolerance) is transported, :math:`F(t)=\Phi(t)F_0=Q_FR_F` (thin QR), and

.. math::

    \Sigma(t)^\dagger=F(F^\top F)^{-2}F^\top=Q_FR_F^{-\top}R_F^{-1}Q_F^\top ,

which is smooth in :math:`t` because :math:`F(t)` keeps full column rank :math:`r`.

Open-loop stability. Write :math:`\Sigma=\Sigma_{\rm plan}+\delta`. With :math:`P=\Sigma B` the
projector onto the range, eq. (7) gives :math:`\dot\delta=-V\delta(I-P)-(I-P)\delta V^\top+
V\delta B\delta+\delta B\delta V^\top`: for full rank the deviation is frozen to first order, so
integration errors are carried to :math:`T` but not amplified.

Conditioning. Along the planned trajectory the mean drift is
:math:`A+V+V\Sigma B=V(\Sigma-\Sigma_{\rm plan})\Sigma_{\rm plan}^\dagger`, so a covariance error
:math:`\epsilon` (integration, rounding) moves the mean by about
:math:`\kappa(\Sigma)\,\epsilon\,\|V\|T\,\|\mu\|`, :math:`\kappa=\lambda_1/\lambda_r` on the range
(reported as :attr:`ReachResult.condition`). This is a property of the paper's feedback
:math:`B=\Sigma^\dagger`, not of the path: a smoother ramp or tighter tolerances do not remove it.
Measured: terminal relative errors :math:`\le5\cdot10^{-10}` for :math:`\kappa\le10^5`
(:math:`d\le5`), about :math:`10^{-7}` in the mean at :math:`\kappa=10^6`, where rounding in
:math:`\Sigma B\Sigma` also makes the step-size control take many small steps. (:math:`B\equiv0`,
:math:`A=-V` would give eq. (10) too, without this sensitivity; we keep the paper's feedback.)

Verification (:func:`reach`): eq. (7) is integrated with these :math:`A,B,V,b` by
:func:`flowcert.numeric.gaussian.integrate_moments` (DOP853, ``rtol=1e-12``,
``atol=1e-14`` times the covariance scale) and the terminal errors are reported.

Controls file (written and read by :mod:`flowcert.gaussian.reach`, the public face:
:func:`~flowcert.gaussian.reach.save_controls`, :func:`~flowcert.gaussian.reach.controls_json`; format ``flowcert-reach-controls/1``).
flowcert parameter files take strings in ``t`` only for elementary functions, so the controls are
stored as knots. An ``.npz`` archive (or a JSON object with the same keys, nested lists), with
``k = n_knots`` equispaced times on :math:`[0,T]`:

==============  ===========  =====================================================
key             shape        value
==============  ===========  =====================================================
``format``      ()           ``"flowcert-reach-controls/1"``
``t``           (k,)         knot times, ``t[0] = 0``, ``t[-1] = T``
``A``           (k, d, d)    :math:`A(t_j)`
``B``           (k, d, d)    :math:`B(t_j)=\Sigma(t_j)^\dagger`
``V``           (k, d, d)    :math:`V(t_j)`
``b``           (k, d)       :math:`b(t_j)` (constant rows)
``mu0``         (d,)         initial mean
``Sigma0``      (d, d)       initial covariance
``mu_hat``      (d,)         target mean
``Sigma_hat``   (d, d)       target covariance
``T``           ()           final time
``M``           (d, d)       the congruence, :math:`\Phi(T)`
``ramp``        ()           ``"smoothstep"`` or ``"linear"``
``rank``        ()           :math:`r`
``rank_rtol``   ()           the relative rank tolerance used
``Phi``         (k, d, d)    :math:`\Phi(t_j)`
``Sigma_plan``  (k, d, d)    :math:`\Phi(t_j)\Sigma_0\Phi(t_j)^\top`
``mu_plan``     (k, d)       :math:`\mu_0+t_j b`
==============  ===========  =====================================================

Interpolating the knots does **not** reproduce the controls exactly; :func:`~flowcert.gaussian.reach.controls_from_file`
rebuilds the exact (analytic) controls from ``mu0, Sigma0, mu_hat, M, T, ramp, rank_rtol``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .moments import MomentSolution, integrate_moments
from .paths import (  # noqa: F401  (re-exported: the public names of this room)
    FORMAT, RAMPS, RANK_RTOL, Array, GLPath, Plane, RankMismatchError, Spectral, checked_covariance, congruence,
    gl_path, numerical_rank, pinv_from_factor, ramp, rotation_log, spectral_so,
)

__all__ = [
    "RANK_RTOL",
    "RAMPS",
    "FORMAT",
    "RankMismatchError",
    "Spectral",
    "spectral_so",
    "numerical_rank",
    "congruence",
    "ramp",
    "rotation_log",
    "GLPath",
    "gl_path",
    "pinv_from_factor",
    "ReachControls",
    "build_controls",
    "ReachResult",
    "reach",
]


@dataclass(frozen=True)
class ReachControls:
    r"""The controls of Proof 3.4, explicit in :math:`t\in[0,T]` (``t`` is clipped to it).

    Attributes
    ----------
    mu0, Sigma0, mu_hat, Sigma_hat : numpy.ndarray
        Start and target (covariances symmetrised).
    T : float
    rank : int
        :math:`r=\operatorname{rank}\Sigma_0=\operatorname{rank}\hat\Sigma`.
    rank_rtol : float
    M : numpy.ndarray
        Congruence, :math:`M\Sigma_0M^\top=\hat\Sigma`.
    path : GLPath
        :math:`\Phi` from :math:`I` to :math:`M`.
    F0 : numpy.ndarray
        (d, r), :math:`\Sigma_0=F_0F_0^\top` up to the eigenvalues below the tolerance.
    """

    mu0: Array
    Sigma0: Array
    mu_hat: Array
    Sigma_hat: Array
    T: float
    rank: int
    rank_rtol: float
    M: Array
    path: GLPath = field(repr=False)
    F0: Array = field(repr=False)

    @property
    def d(self) -> int:
        return int(self.mu0.shape[0])

    @property
    def b(self) -> Array:
        """:math:`b=(\\hat\\mu-\\mu_0)/T`."""
        return (self.mu_hat - self.mu0) / self.T

    def _clip(self, t: float) -> float:
        return min(max(float(t), 0.0), self.T)

    def Phi(self, t: float) -> Array:
        """:math:`\\Phi(t)=\\Psi_V(t)`."""
        return self.path.phi(self._clip(t))

    def Sigma(self, t: float) -> Array:
        """Planned covariance :math:`\\Phi(t)\\Sigma_0\\Phi(t)^\\top` (symmetrised)."""
        P = self.Phi(t)
        S = P @ self.Sigma0 @ P.T
        return 0.5 * (S + S.T)

    def mu(self, t: float) -> Array:
        """Planned mean :math:`\\mu_0+t\\,b`."""
        return self.mu0 + self._clip(t) * self.b

    def coefficients(self, t: float) -> tuple[Array, Array, Array, Array]:
        r"""``(A, B, V, b)`` at time ``t``: :math:`V=-\dot\Phi\Phi^{-1}`, :math:`B=\Sigma^\dagger`,
        :math:`A=-V-V\Sigma B`, :math:`b=(\hat\mu-\mu_0)/T`, with the planned :math:`\Sigma(t)`."""
        path = self.path
        s, ds = path.s(self._clip(t))
        EK = path.exp_K(s)
        P = EK @ path.exp_L(s)  # Phi(t)
        V = -ds * (path.K + EK @ path.L @ EK.T)  # = path.velocity(t), EK computed once
        S = P @ self.Sigma0 @ P.T
        S = 0.5 * (S + S.T)
        B = pinv_from_factor(P @ self.F0)
        A = -V - V @ S @ B
        return A, B, V, self.b.copy()

    def tabulate(self, n_knots: int = 101) -> dict[str, Array]:
        """Controls and planned trajectory at ``n_knots`` equispaced times (the file format)."""
        if n_knots < 2:
            raise ValueError(f"n_knots must be at least 2, got {n_knots}")
        ts = np.linspace(0.0, self.T, n_knots)
        ts[-1] = self.T
        coeffs = [self.coefficients(t) for t in ts]
        return {
            "format": np.array(FORMAT),
            "t": ts,
            "A": np.stack([c[0] for c in coeffs]),
            "B": np.stack([c[1] for c in coeffs]),
            "V": np.stack([c[2] for c in coeffs]),
            "b": np.stack([c[3] for c in coeffs]),
            "mu0": self.mu0.copy(),
            "Sigma0": self.Sigma0.copy(),
            "mu_hat": self.mu_hat.copy(),
            "Sigma_hat": self.Sigma_hat.copy(),
            "T": np.array(self.T),
            "M": self.M.copy(),
            "ramp": np.array(self.path.ramp),
            "rank": np.array(self.rank),
            "rank_rtol": np.array(self.rank_rtol),
            "Phi": np.stack([self.Phi(t) for t in ts]),
            "Sigma_plan": np.stack([self.Sigma(t) for t in ts]),
            "mu_plan": np.stack([self.mu(t) for t in ts]),
        }


def _vector(x: Array, name: str, d: int | None = None) -> Array:
    v = np.array(x, dtype=np.float64)
    if v.ndim != 1 or (d is not None and v.shape[0] != d):
        want = f"({d},)" if d is not None else "a vector"
        raise ValueError(f"{name}: expected shape {want}, got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: entries must be finite")
    return v


def _factor(Sigma0: Array, tol: float) -> tuple[int, Array]:
    sp0 = spectral_so(Sigma0, tol)
    r = sp0.rank
    return r, sp0.U[:, :r] * np.sqrt(sp0.lam[:r])


def build_controls(
    mu0: Array,
    Sigma0: Array,
    mu_hat: Array,
    Sigma_hat: Array,
    T: float,
    *,
    ramp: str = "smoothstep",
    tol: float = RANK_RTOL,
    M: Array | None = None,
) -> ReachControls:
    """The controls of Proof 3.4 (no integration; see :func:`reach`).

    Parameters
    ----------
    mu0, mu_hat : numpy.ndarray
        (d,) start and target means.
    Sigma0, Sigma_hat : numpy.ndarray
        (d, d) PSD start and target covariances of equal numerical rank.
    T : float
        Final time, > 0.
    ramp : str
        ``"smoothstep"`` (default) or ``"linear"``.
    tol : float
        Relative rank tolerance.
    M : numpy.ndarray, optional
        A congruence to use instead of :func:`congruence` (``det M > 0``; used when rebuilding
        from a file).

    Raises
    ------
    RankMismatchError
        Ranks differ.
    ValueError
        ``T <= 0``, bad shapes or values.
    """
    T = float(T)
    if not (math.isfinite(T) and T > 0):
        raise ValueError(f"T must be a positive finite number, got {T!r}")
    S0 = checked_covariance(Sigma0, "Sigma0", tol)
    S1 = checked_covariance(Sigma_hat, "Sigma_hat", tol)
    d = S0.shape[0]
    m0 = _vector(mu0, "mu0", d)
    m1 = _vector(mu_hat, "mu_hat", d)
    if M is None:
        M = congruence(S0, S1, tol)
    else:
        M = np.array(M, dtype=np.float64)
        r1 = numerical_rank(S1, tol)
        r0 = numerical_rank(S0, tol)
        if r0 != r1:
            raise RankMismatchError(r0, r1, tol)
        if M.shape != S0.shape or not np.all(np.isfinite(M)):
            raise ValueError(f"M: expected a finite {S0.shape} matrix")
        gap = np.linalg.norm(M @ S0 @ M.T - S1)
        if gap > 1e-8 * max(np.linalg.norm(S1), np.linalg.norm(S0) * np.linalg.norm(M, 2) ** 2):
            raise ValueError(f"M does not map Sigma0 to Sigma_hat (||M Sigma0 M^T - Sigma_hat||_F = {gap:.1e})")
    r, F0 = _factor(S0, tol)
    path = gl_path(M, T, ramp)
    return ReachControls(m0, S0, m1, S1, T, r, float(tol), M, path, F0)


# ---------------------------------------------------------------------------------------
# reach: controls + verification by integration
# ---------------------------------------------------------------------------------------


@dataclass
class ReachResult:
    r"""Controls of Theorem 3.3 and the terminal error of eq. (7) integrated with them.

    Attributes
    ----------
    controls : ReachControls
    solution : MomentSolution
        Eq. (7) integrated open-loop on :math:`[0,T]`.
    mu_error : float
        :math:`\|\mu(T)-\hat\mu\|_2`.
    mu_relative : float
        ``mu_error`` over :math:`\max(\|\mu_0\|,\|\hat\mu\|,\|\Sigma_0\|_2^{1/2},\|\hat\Sigma\|_2^{1/2})`
        (the mean compared with its own size or the standard deviation; the absolute error
        when all vanish).
    Sigma_error : float
        :math:`\|\Sigma(T)-\hat\Sigma\|_F`.
    Sigma_relative : float
        ``Sigma_error`` :math:`/\|\hat\Sigma\|_F` (the absolute error when :math:`\hat\Sigma=0`).
    rtol, atol : float
        Integration tolerances actually used (``atol`` already scaled).
    n_knots : int
        Knots used by :meth:`tabulate` and by the controls files of :mod:`flowcert.gaussian.reach` by default.
    condition : float
        :math:`\max(\kappa(\Sigma_0),\kappa(\hat\Sigma))`, :math:`\kappa=\lambda_1/\lambda_r` on the
        range (1 for rank 0). The feedback :math:`B=\Sigma^\dagger` makes the mean error grow
        like :math:`\kappa` times the covariance error: :math:`\dot\mu-b=V(\Sigma-\Sigma_{\rm plan})
        \Sigma_{\rm plan}^\dagger\mu`.
    """

    controls: ReachControls
    solution: MomentSolution
    mu_error: float
    mu_relative: float
    Sigma_error: float
    Sigma_relative: float
    rtol: float
    atol: float
    n_knots: int
    condition: float = 1.0

    @property
    def status(self) -> str:
        """``"ok"`` or the integrator's status (``"failed"``, ``"blowup"``)."""
        return self.solution.status

    @property
    def rank(self) -> int:
        return self.controls.rank

    def coefficients(self, t: float) -> tuple[Array, Array, Array, Array]:
        """``(A, B, V, b)`` at time ``t`` (see :meth:`ReachControls.coefficients`)."""
        return self.controls.coefficients(t)

    def tabulate(self, n_knots: int | None = None) -> dict[str, Array]:
        return self.controls.tabulate(n_knots or self.n_knots)

    def terminal_error(self) -> dict[str, float]:
        return {
            "mu": self.mu_error,
            "mu_relative": self.mu_relative,
            "Sigma": self.Sigma_error,
            "Sigma_relative": self.Sigma_relative,
        }


def reach(
    mu0: Array,
    Sigma0: Array,
    mu_hat: Array,
    Sigma_hat: Array,
    T: float,
    n_knots: int = 101,
    *,
    ramp: str = "smoothstep",
    tol: float = RANK_RTOL,
    rtol: float = 1e-12,
    atol: float = 1e-14,
    max_evaluations: int = 2_000_000,
) -> ReachResult:
    r"""Controls steering :math:`(\mu_0,\Sigma_0)` to :math:`(\hat\mu,\hat\Sigma)` at time ``T``, verified.

    Builds the controls of Proof 3.4 (:func:`build_controls`) and integrates eq. (7) with them
    (:func:`~flowcert.numeric.gaussian.integrate_moments`, DOP853, Radau fallback).

    Parameters
    ----------
    mu0, mu_hat : numpy.ndarray
        (d,).
    Sigma0, Sigma_hat : numpy.ndarray
        (d, d) PSD, equal numerical rank.
    T : float
        Final time, > 0.
    n_knots : int
        Default number of knots for saving the controls.
    ramp : str
        ``"smoothstep"`` (default) or ``"linear"``.
    tol : float
        Relative rank tolerance.
    rtol : float
        Relative integration tolerance.
    atol : float
        Absolute integration tolerance at unit covariance scale; multiplied by the smaller
        nonzero of :math:`\|\Sigma_0\|_2`, :math:`\|\hat\Sigma\|_2`.
    max_evaluations : int
        Field-evaluation budget per method (the solution's status is ``failed`` beyond it).

    Returns
    -------
    ReachResult

    Raises
    ------
    RankMismatchError
        The numerical ranks differ (Lemma 3.1).
    ValueError
        ``T <= 0``, bad shapes or values.
    """
    ctl = build_controls(mu0, Sigma0, mu_hat, Sigma_hat, T, ramp=ramp, tol=tol)
    n0 = float(np.linalg.norm(ctl.Sigma0, 2))
    n1 = float(np.linalg.norm(ctl.Sigma_hat, 2))
    scales = [x for x in (n0, n1) if x > 0]
    atol_eff = atol * (min(scales) if scales else 1.0)
    # ||Sigma(t)||_F <= ||Sigma0||_F max(1, sigma_max(M))^2 along the polar path
    growth = max(1.0, float(ctl.path.sigma.max())) ** 2
    sol = integrate_moments(
        ctl.coefficients, ctl.mu0, ctl.Sigma0, ctl.T,
        t_eval=np.array([0.0, ctl.T]), rtol=rtol, atol=atol_eff,
        blowup_factor=1e8 * growth, method="DOP853", max_evaluations=max_evaluations,
        implicit_rtol=None,  # the terminal errors are checked at 1e-8: Radau keeps rtol
    )
    muT, ST = sol.mu[-1], sol.Sigma[-1]
    if sol.status != "ok":
        mu_err = s_err = math.inf
    else:
        mu_err = float(np.linalg.norm(muT - ctl.mu_hat))
        s_err = float(np.linalg.norm(ST - ctl.Sigma_hat))
    mu_scale = max(
        float(np.linalg.norm(ctl.mu0)), float(np.linalg.norm(ctl.mu_hat)), math.sqrt(n0), math.sqrt(n1)
    )
    s_scale = float(np.linalg.norm(ctl.Sigma_hat))
    return ReachResult(
        controls=ctl,
        solution=sol,
        mu_error=mu_err,
        mu_relative=mu_err / mu_scale if mu_scale > 0 else mu_err,
        Sigma_error=s_err,
        Sigma_relative=s_err / s_scale if s_scale > 0 else s_err,
        rtol=rtol,
        atol=atol_eff,
        n_knots=int(n_knots),
        condition=max(_condition(ctl.Sigma0, tol), _condition(ctl.Sigma_hat, tol)),
    )


def _condition(S: Array, tol: float) -> float:
    sp_ = spectral_so(S, tol)
    return float(sp_.lam[0] / sp_.lam[sp_.rank - 1]) if sp_.rank else 1.0
