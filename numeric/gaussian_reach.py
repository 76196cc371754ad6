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

Controls file (:func:`save_controls`, :func:`controls_json`; format ``flowcert-reach-controls/1``).
flowcert parameter files take strings in ``t`` only for elementary functions, so the controls are
stored as knots. An ``.npz`` archive (or a JSON object with the same keys, nested lists), with
``k = n_knots`` equispaced times on :math:`[0,T]`:

=============  ===========  =====================================================
key            shape        value
=============  ===========  =====================================================
``format``     ()           ``"flowcert-reach-controls/1"``
``t``          (k,)         knot times, ``t[0] = 0``, ``t[-1] = T``
``A``          (k, d, d)    :math:`A(t_j)`
``B``          (k, d, d)    :math:`B(t_j)=\Sigma(t_j)^\dagger`
``V``          (k, d, d)    :math:`V(t_j)`
``b``          (k, d)       :math:`b(t_j)` (constant rows)
``mu0``        (d,)         initial mean
``Sigma0``     (d, d)       initial covariance
``mu_hat``     (d,)         target mean
``Sigma_hat``  (d, d)       target covariance
``T``          ()           final time
``M``          (d, d)       the congruence, :math:`\Phi(T)`
``ramp``       ()           ``"smoothstep"`` or ``"linear"``
``rank``       ()           :math:`r`
``rank_rtol``  ()           the relative rank tolerance used
``Phi``        (k, d, d)    :math:`\Phi(t_j)`
``Sigma_plan`` (k, d, d)    :math:`\Phi(t_j)\Sigma_0\Phi(t_j)^\top`
``mu_plan``    (k, d)       :math:`\mu_0+t_j b`
=============  ===========  =====================================================

Interpolating the knots does **not** reproduce the controls exactly; :func:`controls_from_file`
rebuilds the exact (analytic) controls from ``mu0, Sigma0, mu_hat, M, T, ramp, rank_rtol``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.linalg import logm, schur

from .gaussian import MomentSolution, integrate_moments

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
    "controls_json",
    "save_controls",
    "load_controls",
    "controls_from_file",
]

Array = np.ndarray

#: Relative rank tolerance: an eigenvalue counts as positive iff it is > RANK_RTOL * lambda_max.
RANK_RTOL = 1e-10

#: Ramps s(t) with s(0) = 0, s(T) = 1.
RAMPS = ("smoothstep", "linear")

#: Format tag of controls files.
FORMAT = "flowcert-reach-controls/1"


class RankMismatchError(ValueError):
    """The target covariance has a different rank from the initial one (Lemma 3.1).

    Attributes
    ----------
    rank0, rank_hat : int
        Numerical ranks of :math:`\\Sigma_0` and :math:`\\hat\\Sigma`.
    tol : float
        The relative tolerance used to decide them.
    """

    def __init__(self, rank0: int, rank_hat: int, tol: float) -> None:
        self.rank0 = rank0
        self.rank_hat = rank_hat
        self.tol = tol
        super().__init__(
            f"rank mismatch: rank(Sigma0) = {rank0}, rank(Sigma_hat) = {rank_hat} "
            f"(eigenvalues > {tol:g} x the largest count as positive); the rank of Sigma(t) "
            "is invariant along eq. (7) for any controls (Lemma 3.1), so the target is "
            "not reachable"
        )


# ---------------------------------------------------------------------------------------
# steps 2-4: spectral decompositions in SO(d) and the congruence
# ---------------------------------------------------------------------------------------


def _covariance(S: Array, name: str, tol: float) -> Array:
    """Float64 copy of a covariance, symmetrised; rejects bad shapes, NaN, clear indefiniteness."""
    S = np.array(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"{name}: expected a square d x d matrix, got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise ValueError(f"{name}: entries must be finite")
    S = 0.5 * (S + S.T)
    w = np.linalg.eigvalsh(S)
    if w[0] < -tol * max(abs(w[-1]), abs(w[0])):
        raise ValueError(f"{name}: not positive semidefinite (smallest eigenvalue {w[0]:.3e})")
    return S


@dataclass(frozen=True)
class Spectral:
    r"""Spectral decomposition :math:`S\approx U\Lambda U^\top` with :math:`U\in SO(d)`.

    Attributes
    ----------
    U : numpy.ndarray
        (d, d) orthogonal, :math:`\det U=+1`; column i is the eigenvector of ``lam[i]``.
    lam : numpy.ndarray
        (d,) eigenvalues in descending order; those not above ``tol * lam_max`` set to 0.
    rank : int
        Number of positive entries of ``lam`` (they come first).
    """

    U: Array
    lam: Array
    rank: int


def spectral_so(S: Array, tol: float = RANK_RTOL) -> Spectral:
    """Eigen-decomposition of a PSD matrix in SO(d), positive eigenvalues first (step 2).

    Parameters
    ----------
    S : numpy.ndarray
        (d, d) symmetric positive semidefinite (symmetrised as :math:`(S+S^\\top)/2`).
    tol : float
        Relative rank tolerance: ``lam > tol * lam_max`` counts as positive.

    Returns
    -------
    Spectral
    """
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    lam = w[::-1].copy()
    U = U[:, ::-1].copy()
    top = lam[0] if lam.size else 0.0
    rank = int(np.count_nonzero(lam > tol * top)) if top > 0 else 0
    lam[rank:] = 0.0
    if np.linalg.det(U) < 0:
        U[:, -1] = -U[:, -1]
    return Spectral(U, lam, rank)


def numerical_rank(S: Array, tol: float = RANK_RTOL) -> int:
    """Rank of a PSD matrix: eigenvalues above ``tol`` times the largest one."""
    return spectral_so(np.asarray(S, dtype=np.float64), tol).rank


def congruence(Sigma0: Array, Sigma_hat: Array, tol: float = RANK_RTOL) -> Array:
    r"""The congruence of Proof 3.4: :math:`M=U_1DU_0^\top`, :math:`\det M>0`, :math:`M\Sigma_0M^\top=\hat\Sigma`.

    Parameters
    ----------
    Sigma0, Sigma_hat : numpy.ndarray
        (d, d) symmetric positive semidefinite.
    tol : float
        Relative rank tolerance (see :func:`spectral_so`).

    Returns
    -------
    numpy.ndarray
        (d, d) with positive determinant. :math:`M\Sigma_0M^\top=\hat\Sigma` holds up to rounding
        and up to the eigenvalues below the rank tolerance (treated as zero).

    Raises
    ------
    RankMismatchError
        (a ``ValueError``, message ``"rank mismatch: ..."`` with both ranks) if the numerical
        ranks differ.
    ValueError
        Bad shapes, non-finite entries, clearly indefinite input.
    """
    S0 = _covariance(Sigma0, "Sigma0", tol)
    S1 = _covariance(Sigma_hat, "Sigma_hat", tol)
    if S0.shape != S1.shape:
        raise ValueError(f"Sigma0 has shape {S0.shape} but Sigma_hat has shape {S1.shape}")
    sp0, sp1 = spectral_so(S0, tol), spectral_so(S1, tol)
    if sp0.rank != sp1.rank:
        raise RankMismatchError(sp0.rank, sp1.rank, tol)
    r = sp0.rank
    D = np.ones(S0.shape[0])
    D[:r] = np.sqrt(sp1.lam[:r] / sp0.lam[:r])
    return (sp1.U * D) @ sp0.U.T


# ---------------------------------------------------------------------------------------
# step 5: a smooth path in GL+(d)
# ---------------------------------------------------------------------------------------


def ramp(u: float, kind: str = "smoothstep") -> tuple[float, float]:
    """The ramp :math:`s(u)` on :math:`[0,1]` and :math:`ds/du`; ``u`` is clipped to [0, 1].

    ``"smoothstep"``: :math:`s=3u^2-2u^3`, :math:`s'=6u(1-u)`. ``"linear"``: :math:`s=u`.
    """
    u = min(max(float(u), 0.0), 1.0)
    if kind == "smoothstep":
        return u * u * (3.0 - 2.0 * u), 6.0 * u * (1.0 - u)
    if kind == "linear":
        return u, 1.0
    raise ValueError(f"unknown ramp {kind!r} (allowed: {', '.join(RAMPS)})")


Plane = tuple[int, int, float]


def _rotation(d: int, planes: tuple[Plane, ...], s: float) -> Array:
    """Block rotation: angle ``s * theta`` in each plane ``(i, j)``, identity elsewhere."""
    R = np.eye(d)
    for i, j, theta in planes:
        c, sn = math.cos(s * theta), math.sin(s * theta)
        R[i, i] = c
        R[j, j] = c
        R[j, i] = sn
        R[i, j] = -sn
    return R


def _generator(d: int, planes: tuple[Plane, ...]) -> Array:
    G = np.zeros((d, d))
    for i, j, theta in planes:
        G[j, i] = theta
        G[i, j] = -theta
    return G


def _planes_from_schur_of_rotation(Q: Array) -> tuple[Array, tuple[Plane, ...]] | None:
    T_, Z = schur(Q, output="real")
    d = Q.shape[0]
    planes: list[Plane] = []
    minus: list[int] = []
    i = 0
    while i < d:
        if i + 1 < d and T_[i + 1, i] != 0.0:  # standardised 2x2 block [[c, -s], [s, c]]
            c = 0.5 * (T_[i, i] + T_[i + 1, i + 1])
            sn = 0.5 * (T_[i + 1, i] - T_[i, i + 1])
            planes.append((i, i + 1, math.atan2(sn, c)))
            i += 2
        else:
            if T_[i, i] < 0.0:
                minus.append(i)
            i += 1
    if len(minus) % 2:
        return None
    # eigenvalue -1 occurs an even number of times in SO(d): pair them, rotation by pi
    planes.extend((a, b, math.pi) for a, b in zip(minus[::2], minus[1::2]))
    return Z, tuple(planes)


def _planes_from_logm(Q: Array) -> tuple[Array, tuple[Plane, ...]] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        K = np.real(logm(Q))
    K = 0.5 * (K - K.T)
    if not np.all(np.isfinite(K)):
        return None
    T_, Z = schur(K, output="real")
    d = Q.shape[0]
    planes: list[Plane] = []
    i = 0
    while i < d:
        if i + 1 < d and T_[i + 1, i] != 0.0:
            planes.append((i, i + 1, 0.5 * (T_[i + 1, i] - T_[i, i + 1])))
            i += 2
        else:
            i += 1
    return Z, tuple(planes)


def rotation_log(Q: Array, *, check_tol: float = 1e-12) -> tuple[Array, tuple[Plane, ...]]:
    r"""Real logarithm of :math:`Q\in SO(d)` as :math:`K=Z\,G\,Z^\top` with rotation planes.

    Primary method: the real Schur form :math:`Q=ZTZ^\top` (block diagonal because :math:`Q` is
    normal); a 2x2 block :math:`\begin{pmatrix}c&-s\\s&c\end{pmatrix}` gives the angle
    :math:`\operatorname{atan2}(s,c)\in(-\pi,\pi]`, and the 1x1 blocks equal to :math:`-1` (an even
    number of them, since :math:`\det Q=1`) are paired into rotations by :math:`\pi` — this is
    where ``scipy.linalg.logm`` may return complex output. Fallback (used only if the Schur
    reconstruction misses ``Q`` by more than ``check_tol * sqrt(d)`` in Frobenius norm):
    ``Re logm(Q)``, re-skew-symmetrised, and its real Schur form.

    Returns
    -------
    Z : numpy.ndarray
        (d, d) orthogonal.
    planes : tuple of (i, j, theta)
        :math:`e^{sK}=Z R(s) Z^\top` with :math:`R(s)` the rotation by :math:`s\theta` in the plane
        of Schur coordinates ``(i, j)``.

    Raises
    ------
    FloatingPointError
        If neither method reproduces ``Q`` (``Q`` not orthogonal with det +1).
    """
    d = Q.shape[0]
    limit = check_tol * math.sqrt(d) * max(1.0, float(np.linalg.norm(Q, 2)))
    for method in (_planes_from_schur_of_rotation, _planes_from_logm):
        got = method(Q)
        if got is None:
            continue
        Z, planes = got
        if np.linalg.norm(Z @ _rotation(d, planes, 1.0) @ Z.T - Q) <= limit:
            return Z, planes
    raise FloatingPointError("no real logarithm found: Q is not (numerically) in SO(d)")


@dataclass(frozen=True)
class GLPath:
    r"""Smooth path :math:`\Phi(t)=e^{s(t)K}e^{s(t)L}` in :math:`GL^+(d)` from :math:`I` to :math:`M`.

    Attributes
    ----------
    M : numpy.ndarray
        The end point, :math:`\det M>0`.
    T : float
        Final time.
    ramp : str
        One of :data:`RAMPS`.
    Z, planes
        :math:`K=\log Q` (see :func:`rotation_log`), :math:`e^{sK}=ZR(s)Z^\top`.
    Y, sigma
        :math:`S=Y\operatorname{diag}(\sigma)Y^\top`, so :math:`e^{sL}=Y\operatorname{diag}(\sigma^s)Y^\top`.
    K, L : numpy.ndarray
        :math:`\log Q` (skew) and :math:`\log S` (symmetric).
    """

    M: Array
    T: float
    ramp: str
    Z: Array
    planes: tuple[Plane, ...]
    Y: Array
    sigma: Array
    K: Array = field(repr=False)
    L: Array = field(repr=False)

    @property
    def d(self) -> int:
        return int(self.M.shape[0])

    def s(self, t: float) -> tuple[float, float]:
        """:math:`s(t)` and :math:`\\dot s(t)`; ``t`` is clipped to :math:`[0,T]`."""
        s, ds = ramp(float(t) / self.T, self.ramp)
        return s, ds / self.T

    def exp_K(self, s: float) -> Array:
        """:math:`e^{sK}` (orthogonal)."""
        return self.Z @ _rotation(self.d, self.planes, s) @ self.Z.T

    def exp_L(self, s: float) -> Array:
        """:math:`e^{sL}` (symmetric positive definite)."""
        return (self.Y * self.sigma**s) @ self.Y.T

    def phi(self, t: float) -> Array:
        """:math:`\\Phi(t)`."""
        s, _ = self.s(t)
        return self.exp_K(s) @ self.exp_L(s)

    def phi_dot(self, t: float) -> Array:
        """:math:`\\dot\\Phi(t)=\\dot s\\,(Ke^{sK}+e^{sK}L)e^{sL}` (analytic)."""
        s, ds = self.s(t)
        EK = self.exp_K(s)
        return ds * (self.K @ EK + EK @ self.L) @ self.exp_L(s)

    def phi_inv(self, t: float) -> Array:
        """:math:`\\Phi(t)^{-1}=e^{-sL}e^{-sK}`."""
        s, _ = self.s(t)
        return self.exp_L(-s) @ self.exp_K(s).T

    def velocity(self, t: float) -> Array:
        """:math:`V(t)=-\\dot\\Phi\\Phi^{-1}=-\\dot s\\,(K+e^{sK}Le^{-sK})`."""
        s, ds = self.s(t)
        EK = self.exp_K(s)
        return -ds * (self.K + EK @ self.L @ EK.T)


def gl_path(M: Array, T: float, ramp: str = "smoothstep") -> GLPath:
    """The path of step 5 from the polar decomposition :math:`M=QS` (via the SVD).

    Parameters
    ----------
    M : numpy.ndarray
        (d, d) with :math:`\\det M>0`.
    T : float
        Final time, > 0.
    ramp : str
        ``"smoothstep"`` (default) or ``"linear"``.

    Returns
    -------
    GLPath
        :math:`\\Phi(0)=I`, :math:`\\Phi(T)=M` up to rounding.

    Raises
    ------
    ValueError
        ``det M <= 0``, ``T <= 0``, unknown ramp.
    """
    M = np.array(M, dtype=np.float64)
    if not (math.isfinite(T) and T > 0):
        raise ValueError(f"T must be a positive finite number, got {T!r}")
    if ramp not in RAMPS:
        raise ValueError(f"unknown ramp {ramp!r} (allowed: {', '.join(RAMPS)})")
    sign, _ = np.linalg.slogdet(M)
    if sign <= 0:
        raise ValueError("M must have a positive determinant")
    W, sv, Yt = np.linalg.svd(M)
    Q = W @ Yt  # det Q = det W det Y = sign(det M) = +1
    Y = Yt.T
    Z, planes = rotation_log(Q)
    d = M.shape[0]
    K = Z @ _generator(d, planes) @ Z.T
    K = 0.5 * (K - K.T)
    L = (Y * np.log(sv)) @ Y.T
    L = 0.5 * (L + L.T)
    return GLPath(M, float(T), ramp, Z, planes, Y, sv, K, L)


# ---------------------------------------------------------------------------------------
# step 1 and 6: the controls
# ---------------------------------------------------------------------------------------


def pinv_from_factor(F: Array) -> Array:
    r""":math:`(FF^\top)^\dagger=Q_FR_F^{-\top}R_F^{-1}Q_F^\top` for ``F`` (d, r) of full column rank."""
    d, r = F.shape
    if r == 0:
        return np.zeros((d, d))
    Qf, Rf = np.linalg.qr(F)  # thin QR
    X = np.linalg.solve(Rf, Qf.T)  # R^{-1} Q^T, (r, d); numpy: far cheaper than scipy at tiny sizes
    B = X.T @ X
    return 0.5 * (B + B.T)


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
    S0 = _covariance(Sigma0, "Sigma0", tol)
    S1 = _covariance(Sigma_hat, "Sigma_hat", tol)
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
        Knots used by :meth:`tabulate`, :meth:`save` and :func:`controls_json` by default.
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

    def save(self, path: str | os.PathLike[str], n_knots: int | None = None) -> Path:
        """Write the controls file (``.npz`` or ``.json``); see :func:`save_controls`."""
        return save_controls(self, path, n_knots)

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


# ---------------------------------------------------------------------------------------
# controls files
# ---------------------------------------------------------------------------------------


def _controls_of(obj: ReachResult | ReachControls) -> tuple[ReachControls, int]:
    if isinstance(obj, ReachResult):
        return obj.controls, obj.n_knots
    return obj, 101


def controls_json(obj: ReachResult | ReachControls, n_knots: int | None = None) -> dict[str, Any]:
    """The controls file as a JSON-serialisable dict (same keys as the ``.npz``, nested lists).

    Parameters
    ----------
    obj : ReachResult or ReachControls
    n_knots : int, optional
        Default: the result's ``n_knots`` (101 for bare controls).
    """
    ctl, default = _controls_of(obj)
    table = ctl.tabulate(n_knots or default)
    out: dict[str, Any] = {}
    for key, value in table.items():
        out[key] = value.item() if value.ndim == 0 else value.tolist()
    return out


def save_controls(
    obj: ReachResult | ReachControls, path: str | os.PathLike[str], n_knots: int | None = None
) -> Path:
    """Write the controls file: ``.npz`` (``numpy.savez``) or ``.json`` (:func:`controls_json`).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ValueError
        If the suffix is neither ``.npz`` nor ``.json``.
    """
    p = Path(os.fspath(path))
    suffix = p.suffix.lower()
    ctl, default = _controls_of(obj)
    if suffix == ".npz":
        table = ctl.tabulate(n_knots or default)
        with open(p, "wb") as fh:
            np.savez(fh, **table)
    elif suffix == ".json":
        p.write_text(json.dumps(controls_json(ctl, n_knots or default)) + "\n", encoding="utf-8")
    else:
        raise ValueError(f"controls file must end in .npz or .json, got {p.name!r}")
    return p


_SHAPES: dict[str, Callable[[int, int], tuple[int, ...]]] = {
    "t": lambda k, d: (k,),
    "A": lambda k, d: (k, d, d),
    "B": lambda k, d: (k, d, d),
    "V": lambda k, d: (k, d, d),
    "b": lambda k, d: (k, d),
    "mu0": lambda k, d: (d,),
    "Sigma0": lambda k, d: (d, d),
    "mu_hat": lambda k, d: (d,),
    "Sigma_hat": lambda k, d: (d, d),
    "T": lambda k, d: (),
    "M": lambda k, d: (d, d),
    "rank": lambda k, d: (),
    "rank_rtol": lambda k, d: (),
    "Phi": lambda k, d: (k, d, d),
    "Sigma_plan": lambda k, d: (k, d, d),
    "mu_plan": lambda k, d: (k, d),
}


def load_controls(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a controls file (``.npz`` or ``.json``) and check its keys and shapes.

    Returns
    -------
    dict
        Arrays as float64 numpy arrays (``T``, ``rank_rtol`` as float, ``rank`` as int,
        ``format``, ``ramp`` as str).

    Raises
    ------
    ValueError
        Wrong format tag, missing keys or shapes.
    """
    p = Path(os.fspath(path))
    if p.suffix.lower() == ".npz":
        with np.load(p, allow_pickle=False) as z:
            raw: dict[str, Any] = {k: z[k] for k in z.files}
    elif p.suffix.lower() == ".json":
        raw = json.loads(p.read_text(encoding="utf-8"))
    else:
        raise ValueError(f"controls file must end in .npz or .json, got {p.name!r}")
    fmt = str(np.asarray(raw.get("format", "")).item()) if "format" in raw else ""
    if fmt != FORMAT:
        raise ValueError(f"{p.name}: not a controls file (format {fmt!r}, expected {FORMAT!r})")
    missing = [k for k in (*_SHAPES, "ramp") if k not in raw]
    if missing:
        raise ValueError(f"{p.name}: missing keys {missing}")
    out: dict[str, Any] = {"format": fmt, "ramp": str(np.asarray(raw["ramp"]).item())}
    k = int(np.asarray(raw["t"]).shape[0])
    d = int(np.asarray(raw["mu0"]).shape[0])
    for key, shape in _SHAPES.items():
        arr = np.asarray(raw[key], dtype=np.float64)
        if arr.shape != shape(k, d):
            raise ValueError(f"{p.name}: key {key!r} has shape {arr.shape}, expected {shape(k, d)}")
        out[key] = arr
    out["T"] = float(out["T"])
    out["rank_rtol"] = float(out["rank_rtol"])
    out["rank"] = int(out["rank"])
    return out


def controls_from_file(path: str | os.PathLike[str]) -> ReachControls:
    """Rebuild the exact (analytic) controls saved in a controls file."""
    data = load_controls(path)
    return build_controls(
        data["mu0"], data["Sigma0"], data["mu_hat"], data["Sigma_hat"], data["T"],
        ramp=data["ramp"], tol=data["rank_rtol"], M=data["M"],
    )
