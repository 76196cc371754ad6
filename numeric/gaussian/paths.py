r"""Matrix paths of the Theorem 3.3 construction (gaussian paper, Proof 3.4, steps 2–4).

Spectral decompositions in :math:`SO(d)`, :math:`\Sigma=U\Lambda U^\top` with :math:`\det U=1`
(:func:`spectral_so`); the congruence :math:`\hat\Sigma=M\Sigma_0M^\top` with
:math:`M=U_1\Lambda_1^{1/2}\Lambda_0^{-1/2}U_0^\top` on the range (:func:`congruence`);
a smooth path in :math:`GL^+(d)` from :math:`I` to :math:`M`,
:math:`\Psi(t)=Q(s)\,e^{s\log P}` with :math:`M=QP` (polar), :math:`Q(s)=e^{s\log Q}` through
plane rotations (:func:`rotation_log`) and ramp :math:`s=s(t/T)` (:func:`ramp`, :func:`gl_path`);
:math:`V=-\dot\Psi\Psi^{-1}` then solves (11).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import logm, schur



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


def checked_covariance(S: Array, name: str, tol: float) -> Array:
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
    S0 = checked_covariance(Sigma0, "Sigma0", tol)
    S1 = checked_covariance(Sigma_hat, "Sigma_hat", tol)
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
