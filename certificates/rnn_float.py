r"""Rigorous floating-point certificates for the ``rnn`` Jacobians at real size (issue 46, item 2):
"every :math:`A_t` invertible" (kind ``invertible_float``) and the common quadratic Lyapunov
contraction :math:`A_t^\top XA_t\preceq\rho^2X`, :math:`X\succeq I` (kind ``contraction_float``).

Why floats, and what is proved
------------------------------
The exact path (:mod:`flowcert.certificates.rnn`, ``invertible_all`` predicate) re-checks every
:math:`A_t` in rational arithmetic and carries all of them in the document; that stops at
:math:`BT\le64`, :math:`H\le8` (``MAX_STEPS``, ``MAX_H`` of :mod:`flowcert.papers.kpflow`). A peer's
benchmark (``nn.GRUCell(3, 128)``, inputs [32, 100, 3]) has 3,200 Jacobians of 128 x 128: 52 M
entries, 419 MB as float64. Above the exact budget both claims are decided here with a-posteriori
error bounds of floating-point computations (IEEE binary64, round to nearest, no fast matrix
multiplication; :math:`u=2^{-53}`, :math:`\gamma_k=ku/(1-ku)`):

* **Matrix products** (Higham, *Accuracy and Stability*, §3.5): :math:`|fl(AB)-AB|\le\gamma_n|A||B|`
  for inner dimension n, whatever the summation order (blocked BLAS, FMA). Norms of the bound
  are taken with :math:`\|\,|A||B|\,\|_F\le\|A\|_F\|B\|_F`; every norm, sum and product that
  enters a bound is inflated by :func:`_up` for its own rounding (nonnegative terms only).
* **Invertibility** (verified inverse): the checker computes its own approximate inverses
  :math:`R_t` (a witness it builds; nothing rests on their accuracy) and bounds
  :math:`c=\|I-R_tA_t\|_\infty\le\|fl(I-R_tA_t)\|_\infty(1+u)+\gamma_n\|R_t\|_\infty\|A_t\|_\infty`;
  :math:`c<1` proves :math:`R_tA_t` and so :math:`A_t` nonsingular, and with the same bound in
  the 1-norm :math:`\sigma_{\min}(A_t)\ge\sqrt{(1-c_1)(1-c_\infty)/(\|R_t\|_1\|R_t\|_\infty)}`.
* **Positive (semi)definiteness** (verified Cholesky with a shift, after Rump, BIT 2006): for a
  symmetric float matrix :math:`\tilde S` with :math:`\|S-\tilde S\|_2\le e`, a Cholesky factor
  :math:`\tilde L` of :math:`fl(\tilde S-sI)` that completes gives
  :math:`\tilde L\tilde L^\top=fl(\tilde S-sI)+\Delta`, :math:`\|\Delta\|_2\le\gamma_{n+1}\|\tilde L\|_F^2`
  (Higham Thm 10.3, any standard ordering), so
  :math:`\lambda_{\min}(S)\ge s-\gamma_{n+1}\|\tilde L\|_F^2-u\max_i|\tilde S_{ii}-s|/(1-u)-e`,
  and S is PSD when that is :math:`\ge0`.
* **Contraction**: :math:`S_t=\rho^2X-A_t^\top XA_t` is formed as :math:`fl(fl(\rho^2X)-fl(A_t^\top fl(XA_t)))`
  with :math:`e_t=2\,[\gamma_n(\|A_t\|_F\|\tilde Y_t\|_F+\|A_t\|_F^2\|X\|_F)+\tfrac u{1-u}(\|fl(\rho^2X)\|_F+\|\tilde S_t\|_F)]`
  (the factor 2: the lower triangle is mirrored, so the matrix factored is exactly symmetric);
  :math:`X\succeq I` by the same test on :math:`fl(X-I)`; :math:`\lambda_{\max}(X)\le` the
  Gershgorin bound, rounded up, :math:`\le` ``kappa_upper``. Underflow is covered by an absolute
  :math:`10^{-300}` added to every bound (:math:`n\eta\ll10^{-300}` for every inner dimension here).

**The subject is the float Jacobians themselves.** The claims are about the exact dyadic matrices
:math:`\tilde A_{b,t}` that ``state_jacobians`` returns (float64, or a lower precision widened
exactly) along the computed trajectory — the matrices from which the document's :math:`\mathcal P`,
:math:`\mathcal U` and Lyapunov exponents are built. They are *not* claims about the exact
derivatives :math:`\partial_zF(\tilde z_{t-1})` at the float states: forming :math:`\tilde A_t`
(a GRU's gate products, or an autograd vjp) has its own rounding error, of order
:math:`H u\,\|W\|` per entry, which nothing here bounds. The decision therefore also reports how
far each claim extends to nearby matrices: every :math:`A` with :math:`\|A-\tilde A_t\|_2<`
the proved :math:`\sigma_{\min}` lower bound is invertible, and with :math:`\mu` the proved lower
bound of :math:`\lambda_{\min}(\rho^2X-\tilde A_t^\top X\tilde A_t)` over t, :math:`a\ge\|\tilde A_t\|_F`
and :math:`\kappa\ge\lambda_{\max}(X)`, every :math:`A` with :math:`\|A-\tilde A_t\|_2\le r`,
:math:`r=-a+\sqrt{a^2+\mu/\kappa}` (so :math:`\kappa(2ar+r^2)\le\mu`), still satisfies
:math:`A^\top XA\preceq\rho^2X`; this covers any forming error below those radii. The radii are
reported in the hypothesis' detail (from the checker's own bounds at decision time); they are not
part of the re-checked claim.

**What the certificate carries.** Not the Jacobians (52 M numbers do not belong in a JSON document):
a reference ``{"sha256", "shape", "dtype": "float64", "fingerprint"}`` to the C-order little-endian
float64 bytes of the stack ``[B*T, H, H]`` (trial-major, ``b * T + t``), plus X (H x H JSON numbers, each
exactly a binary64 value; anything else is refused), :math:`\rho^2` and ``kappa_upper`` (exact
rationals), and the Cholesky shift s (a hint: a bad one only makes the check fail). The checker
gets the array from a content-addressed store (:func:`register_stack`, filled by whoever holds the
matrices: the analysis that computed them, or ``flowcert recheck`` re-deriving them from the
document's ``params`` for a built-in cell, :func:`flowcert.rnn.subjects.jacobian_stack_of`; or a
side file ``jacobians-<sha256>.npy`` in a directory of :data:`SEARCH_PATH` / ``$FLOWCERT_STACKS`` or
the working directory, :func:`save_stack`),
re-hashes it and refuses on any mismatch: the certificate proves its claim for exactly the matrices
with that digest. For a built-in cell ``flowcert recheck`` re-derives the stack from ``params``, ties
it to the reference by the per-matrix fingerprint (:func:`ties`: a platform's last-bit BLAS
differences change the digest but not the fingerprint beyond :math:`2^{-30}`), and runs the
checker on the re-derived matrices, as the exact path does with its carried copies. The checker
never runs a solver: X comes from a Lyapunov solve at decision time, and only the bounds above,
re-derived from X, :math:`\rho^2` and the matrices, decide.

Limits: the bounds assume IEEE binary64 with round-to-nearest (the default everywhere numpy runs)
and a BLAS without Strassen-like fast multiplication; a stack that is neither in memory nor in a
side file cannot be re-checked (the certificate is then refused, never accepted).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import OrderedDict
from fractions import Fraction
from typing import Any, Iterator, TypedDict

import numpy as np

U = 2.0**-53
TINY = 1e-300
#: matrices per chunk of the batched checks (keeps the temporaries of H = 128 near 100 MB)
CHUNK = 256
#: directories searched for ``jacobians-<sha256>.npy`` side files (besides ``$FLOWCERT_STACKS``)
SEARCH_PATH: list[str] = []
#: relative tolerance of the fingerprint tie (as :func:`flowcert.certificates.subjects.near`)
TIE = 2.0**-30

_STORE: OrderedDict[str, np.ndarray] = OrderedDict()
_STORE_MAX = 3
#: what the last accepted checks proved beyond their verdict (sigma_min lower bound; min lambda_min of
#: rho^2 X - A^T X A), read back by the decision code for its report (never by a checker)
_PROVED: dict[tuple[str, ...], float | None] = {}


def gamma(k: int) -> float:
    """:math:`\\gamma_k=ku/(1-ku)`, rounded up."""
    return _up(k * U / (1 - k * U), 4)


def _up(x: Any, k: int) -> Any:
    """An upper bound of the exact value of a nonnegative quantity computed as ``x`` with at most ``k``
    roundings of nonnegative operations: ``x (1 + 4 (k + 2) u) + 1e-300`` (itself rounded)."""
    return x * (1.0 + 4.0 * (k + 2) * U) + TINY


# ---------------------------------------------------------------------------------------------
# the stack of Jacobians: reference, digest, store
# ---------------------------------------------------------------------------------------------


def as_stack(J: Any) -> np.ndarray:
    """``J`` ([..., H, H], numpy or torch, any real float dtype) as a C-order float64 array [N, H, H]
    (widening is exact; a float64 input is not copied)."""
    if hasattr(J, "detach"):
        J = J.detach().cpu().numpy()
    A = np.asarray(J)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.dtype.kind != "f" or A.dtype.itemsize > 8:
        raise ValueError("a stack of square real matrices is needed")
    return np.ascontiguousarray(A.reshape(-1, A.shape[-1], A.shape[-1]), dtype=np.float64)


def digest(A: np.ndarray) -> str:
    """SHA-256 of the shape and the little-endian float64 bytes of the stack."""
    h = hashlib.sha256(f"float64{list(A.shape)}".encode())
    h.update(memoryview(np.ascontiguousarray(A, dtype="<f8")).cast("B"))
    return h.hexdigest()


def fingerprint(A: np.ndarray) -> list[list[float]]:
    """Per matrix ``[||A_t||_F, trace A_t]``: what :func:`ties` compares across platforms."""
    fro = np.sqrt(np.einsum("nij,nij->n", A, A))
    tr = np.einsum("nii->n", A)
    return [[float(f), float(t)] for f, t in zip(fro, tr)]


class StackRef(TypedDict):
    """The reference of a Jacobian stack in certificate data: its digest, shape, dtype and fingerprint."""

    sha256: str
    shape: list[int]
    dtype: str
    fingerprint: list[list[float]]


class ContractionRate(TypedDict):
    r"""What :func:`contraction_rate_float` proved: :math:`\rho`, :math:`\kappa(X)`, :math:`\log\rho`, X's origin, the robust radius."""

    rho: float
    kappa: float
    lyapunov_upper: float
    x_choice: str
    robust_radius: float


def register_stack(J: Any) -> StackRef:
    """Put the stack in the store; its reference ``{"sha256", "shape", "dtype", "fingerprint"}``."""
    A = as_stack(J)
    sha = digest(A)
    _STORE[sha] = A
    _STORE.move_to_end(sha)
    while len(_STORE) > _STORE_MAX:
        _STORE.popitem(last=False)
    return {"sha256": sha, "shape": list(A.shape), "dtype": "float64", "fingerprint": fingerprint(A)}


def save_stack(ref: StackRef, directory: str) -> str:
    """Write the stored stack of ``ref`` as the side file ``directory/jacobians-<sha256>.npy``; its path."""
    A = lookup(ref)
    path = os.path.join(directory, f"jacobians-{ref['sha256']}.npy")
    np.save(path, A, allow_pickle=False)
    return path


def lookup(ref: Any) -> np.ndarray:
    """The stack named by ``ref``, re-hashed (``KeyError`` when absent, ``ValueError`` when malformed or
    when no copy found has that digest)."""
    if not isinstance(ref, dict) or not isinstance(ref.get("sha256"), str) or ref.get("dtype") != "float64":
        raise ValueError("a Jacobian stack reference {sha256, shape, dtype: float64} is needed")
    sha = ref["sha256"]
    shape = ref.get("shape")
    cands: list[np.ndarray] = []
    if sha in _STORE:
        cands.append(_STORE[sha])
    dirs = [*SEARCH_PATH, *[d for d in os.environ.get("FLOWCERT_STACKS", "").split(os.pathsep) if d], os.getcwd()]
    for d in dirs:
        p = os.path.join(d, f"jacobians-{sha}.npy")
        if os.path.isfile(p):
            cands.append(np.load(p, allow_pickle=False))
    for A in cands:
        if A.dtype == np.float64 and A.ndim == 3 and list(A.shape) == shape and digest(A) == sha:
            return A
    if not cands:
        from .core import InputNotCarried

        raise InputNotCarried(f"Jacobian stack {sha[:16]}... is neither in memory nor in a side file")
    raise ValueError("no copy of the Jacobian stack has the digest its reference names")


def ties(value: Any, field: Any) -> bool:
    """Whether a carried reference ``field`` names the re-derived stack ``value`` up to rounding noise:
    same shape, and per matrix ``|c - v| <= 2^-30 max(1, |v|)`` on the Frobenius norm and
    ``<= 2^-30 max(1, sqrt(H) ||A_t||_F)`` on the trace (the digests may differ across BLAS builds)."""
    try:
        if value.get("shape") != field.get("shape") or value.get("dtype") != field.get("dtype"):
            return False
        a, b = value["fingerprint"], field["fingerprint"]
        if len(a) != len(b) or len(a) != value["shape"][0]:
            return False
        n = math.sqrt(value["shape"][1])
        for (fv, tv), (fc, tc) in zip(a, b):
            if not (abs(float(fc) - fv) <= TIE * max(1.0, abs(fv)) and abs(float(tc) - tv) <= TIE * max(1.0, n * fv)):
                return False
        return True
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        return False


def _chunks(A: np.ndarray) -> Iterator[np.ndarray]:
    for i in range(0, A.shape[0], CHUNK):
        yield A[i:i + CHUNK]


# ---------------------------------------------------------------------------------------------
# the rigorous tests
# ---------------------------------------------------------------------------------------------


def _fro(M: np.ndarray) -> np.ndarray:
    """Upper bounds of the Frobenius norms of a stack (or one matrix)."""
    n2 = M.shape[-1] * M.shape[-2]
    return _up(np.sqrt(np.einsum("...ij,...ij->...", M, M)), n2 + 4)


def _rowsum(M: np.ndarray, axis: int) -> np.ndarray:
    """Upper bounds of the max absolute row (axis -1) / column (axis -2) sums."""
    return _up(np.abs(M).sum(axis=axis).max(axis=-1), M.shape[-1] + 2)


def inverse_bounds(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Per matrix: ``(verified, sigma_lower)``; ``verified`` True where :math:`\|I-RA\|_\infty<1` is proved
    (A nonsingular), ``sigma_lower`` a rigorous lower bound of :math:`\sigma_{\min}(A)` there (0 elsewhere)."""
    N, n, _ = A.shape
    ok = np.zeros(N, dtype=bool)
    sig = np.zeros(N)
    g = gamma(n)
    eye = np.eye(n)
    for i0 in range(0, N, CHUNK):
        Ab = A[i0:i0 + CHUNK]
        R = np.empty_like(Ab)
        good = np.ones(len(Ab), dtype=bool)
        try:
            R[:] = np.linalg.inv(Ab)
        except np.linalg.LinAlgError:
            for j, M in enumerate(Ab):
                try:
                    R[j] = np.linalg.inv(M)
                except np.linalg.LinAlgError:
                    R[j] = 0.0
                    good[j] = False
        good &= np.isfinite(R).all(axis=(1, 2))
        R[~good] = 0.0
        D = eye - R @ Ab
        cols = []
        for ax in (-1, -2):  # infinity norm (rows), 1-norm (columns)
            c = _up(_rowsum(D, ax) * (1 + U) + g * _rowsum(R, ax) * _rowsum(Ab, ax), 6)
            cols.append((c, _rowsum(R, ax)))
        (ci, ri), (c1, r1) = cols
        v = good & (ci < 1) & (c1 < 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.sqrt((1 - ci) * (1 - c1) / (ri * r1)) * (1 - 16 * U)
        ok[i0:i0 + len(Ab)] = v
        sig[i0:i0 + len(Ab)] = np.where(v & np.isfinite(s), s, 0.0)
    return ok, sig


def psd_lower(S: np.ndarray, e: np.ndarray | float, s: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    r"""Verified :math:`\lambda_{\min}` lower bounds of the symmetric matrices S (exact :math:`S_{true}`
    with :math:`\|S_{true}-S\|_2\le e`, only the lower triangle of S read), by the Cholesky of
    :math:`fl(S-sI)`: per matrix ``(completed, lower_bound)`` (``-inf`` where it did not complete)."""
    N, n, _ = S.shape
    e = np.broadcast_to(np.asarray(e, dtype=float), (N,))
    s = np.broadcast_to(np.asarray(s, dtype=float), (N,))
    L = np.tril(S)
    M = L + np.swapaxes(np.tril(S, -1), 1, 2)  # exactly symmetric: the lower triangle mirrored
    idx = np.arange(n)
    M[:, idx, idx] -= s[:, None]
    shift_err = _up(U / (1 - U) * np.abs(M[:, idx, idx]).max(axis=1), 4)
    done = np.ones(N, dtype=bool)
    fro2 = np.full(N, np.inf)
    try:
        Lc = np.linalg.cholesky(M)
        fro2 = _up(np.einsum("nij,nij->n", Lc, Lc), n * n + 2)
    except np.linalg.LinAlgError:
        for j in range(N):
            try:
                Lj = np.linalg.cholesky(M[j])
                fro2[j] = _up(float(np.einsum("ij,ij->", Lj, Lj)), n * n + 2)
            except np.linalg.LinAlgError:
                done[j] = False
    done &= np.isfinite(fro2)
    err = _up(gamma(n + 1) * fro2 + shift_err + e, 6)
    lb = np.where(done, s - err, -np.inf)
    return done, lb


def contraction_residuals(A: np.ndarray, X: np.ndarray, rho2: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Per matrix: :math:`\tilde S_t=fl(fl(\rho^2X)-fl(A_t^\top fl(XA_t)))` and its error bound :math:`e_t`."""
    n = X.shape[0]
    P = rho2 * X
    g = gamma(n)
    xf, pf = float(_fro(X)), float(_fro(P))
    Y = X @ A  # broadcast: X A_t for each t
    S = P - np.swapaxes(A, 1, 2) @ Y
    af, yf, sf = _fro(A), _fro(Y), _fro(S)
    e = 2.0 * _up(g * (af * yf + af * af * xf) + U / (1 - U) * (pf + sf), 8)
    return S, e


def _float_at_most(q: Fraction) -> float:
    """The largest float64 <= q."""
    f = float(q)
    return f if Fraction(f) <= q else float(np.nextafter(f, -np.inf))


def x_at_least_identity(X: np.ndarray, shift: float = 2.0**-12) -> tuple[bool, float]:
    """Verified :math:`X-I\\succeq0` (X exactly symmetric); ``(ok, lower bound of lambda_min(X) - 1)``."""
    n = X.shape[0]
    D = X - np.eye(n)  # rounded on the diagonal: |fl(x - 1) - (x - 1)| <= u |fl(x - 1)| / (1 - u)
    e = _up(U / (1 - U) * float(np.abs(np.diagonal(D)).max()), 4)
    done, lb = psd_lower(D[None], e, shift)
    return bool(done[0] and lb[0] >= 0), float(lb[0])


def gershgorin_up(X: np.ndarray) -> float:
    """A rigorous upper bound of :math:`\\max_i\\sum_j|X_{ij}|\\ge\\lambda_{\\max}(X)`."""
    return float(_rowsum(X, -1))


def verify_contraction(A: np.ndarray, X: np.ndarray, rho2: float, shift: float) -> tuple[bool, float, int]:
    r"""Whether :math:`\rho^2X-A_t^\top XA_t\succeq0` is proved for every t: ``(ok, min over t of the
    lambda_min lower bounds, first failing index or -1)``. ``shift``: the Cholesky shift s (a hint; a
    bad one only makes the test fail)."""
    worst = math.inf
    for i0 in range(0, A.shape[0], CHUNK):
        S, e = contraction_residuals(A[i0:i0 + CHUNK], X, rho2)
        done, lb = psd_lower(S, e, shift)
        bad = ~(done & (lb >= 0))
        if bad.any():
            return False, float(lb.min()), i0 + int(np.argmax(bad))
        worst = min(worst, float(lb.min()))
    return True, worst, -1


# ---------------------------------------------------------------------------------------------
# checkers (kinds ``invertible_float``, ``contraction_float``)
# ---------------------------------------------------------------------------------------------


def _check_invertible_float(data: dict[str, Any]) -> bool:
    """Every matrix of the referenced stack is nonsingular (verified inverse), and ``sigma_min_lower``
    (if given) is below every proved :math:`\\sigma_{\\min}` lower bound. Only ``value: true`` is decided."""
    if data.get("value") is not True:
        return False
    A = lookup(data["jacobians"])
    ok, sig = inverse_bounds(A)
    _PROVED[("invertible", data["jacobians"]["sha256"])] = float(sig.min()) if ok.all() else None
    if not ok.all():
        return False
    if "sigma_min_lower" in data and not Fraction(str(data["sigma_min_lower"])) <= Fraction(float(sig.min())):
        return False
    return True


def _x_matrix(rows: Any) -> np.ndarray:
    """X from JSON numbers, each exactly a binary64 value (a float, or an int of at most 53 bits): no
    rounding happens between the claimed X and the checked one."""
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows) or not all(
            type(v) is float or (type(v) is int and abs(v) <= 2**53) for r in rows for v in r):
        raise ValueError("X entries must be JSON numbers that are exact binary64 values")
    X = np.array(rows, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != X.shape[1] or not np.isfinite(X).all() or not np.array_equal(X, X.T):
        raise ValueError("X must be a finite, exactly symmetric square matrix")
    return X


def _check_contraction_float(data: dict[str, Any]) -> bool:
    r""":math:`X\succeq I`, :math:`\lambda_{\max}(X)\le` ``kappa_upper`` and :math:`\rho^2X-A_t^\top XA_t\succeq0`
    for every matrix of the referenced stack, all by the rigorous float bounds of this module."""
    X = _x_matrix(data["X"])
    r2 = Fraction(str(data["rho2"]))
    kappa = Fraction(str(data["kappa_upper"]))
    if r2 < 0:
        return False
    A = lookup(data["jacobians"])
    if A.shape[1] != X.shape[0]:
        return False
    ok, _ = x_at_least_identity(X)
    if not ok or kappa < Fraction(gershgorin_up(X)):
        return False
    shift = float(data["shift"])
    if not (math.isfinite(shift) and shift > 0):
        return False
    # r_f = rho2 rounded down to a float: S(rho2) = S(r_f) + (rho2 - r_f) X >= S(r_f), as X >= 0
    ok, mu, _ = verify_contraction(A, X, _float_at_most(r2), shift)
    _PROVED[("contraction", data["jacobians"]["sha256"], str(data["rho2"]), digest(X[None]))] = mu if ok else None
    return ok


# ---------------------------------------------------------------------------------------------
# decision at real size (candidates, then the checkers above through core.certified)
# ---------------------------------------------------------------------------------------------


def _norm2_est(M: np.ndarray, iters: int = 40) -> np.ndarray:
    """Float estimates of :math:`\\|M_t\\|_2` (power iteration on :math:`M^\\top M`, from a fixed start;
    an under-estimate, used only to pick a rate to verify)."""
    v = np.ones((M.shape[0], M.shape[1], 1)) / math.sqrt(M.shape[1])
    Mt = np.swapaxes(M, 1, 2)
    for _ in range(iters):
        w = Mt @ (M @ v)
        nrm = np.linalg.norm(w, axis=1, keepdims=True)
        v = w / np.where(nrm > 0, nrm, 1.0)
    return np.linalg.norm(M @ v, axis=(1, 2))


def rate_in(A: np.ndarray, X: np.ndarray) -> float:
    r"""Float estimate of :math:`\max_t\|X^{1/2}A_tX^{-1/2}\|_2` (via :math:`X=LL^\top`, :math:`L^\top A_tL^{-\top}`)."""
    L = np.linalg.cholesky(X)
    Linv_t = np.linalg.inv(L).T
    best = 0.0
    for Ab in _chunks(A):
        M = np.swapaxes(L, 0, 1) @ Ab @ Linv_t
        best = max(best, float(_norm2_est(M).max()))
    return best


def candidates(A: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """CQLF candidates X (float, symmetric, not yet normalised): I, and the discrete Lyapunov solutions
    :math:`\\bar A^\\top X\\bar A-X=-I` of the mean Jacobian and of the mean of the trial-wise last steps,
    when those are Schur stable."""
    from scipy.linalg import solve_discrete_lyapunov

    n = A.shape[1]
    out: list[tuple[str, np.ndarray]] = [("identity", np.eye(n))]
    for name, Abar in (("Lyapunov of the mean Jacobian", A.mean(0)),):
        if np.max(np.abs(np.linalg.eigvals(Abar))) < 1:
            try:
                Xc = solve_discrete_lyapunov(Abar.T, np.eye(n))
            except (np.linalg.LinAlgError, ValueError):
                continue
            if np.isfinite(Xc).all():
                out.append((name, Xc))
    return out


def normalise(Xc: np.ndarray, floor: float = 1.0 + 2.0**-8) -> np.ndarray | None:
    """``Xc`` symmetrised and scaled so that its smallest eigenvalue is about ``floor`` (exactly symmetric
    floats), None when it is not positive definite."""
    X = 0.5 * (Xc + Xc.T)
    lam = np.linalg.eigvalsh(X)
    if not lam[0] > 0:
        return None
    X = X * (floor / lam[0])
    return 0.5 * (X + X.T)


def _rates2(A: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Float estimates of :math:`\rho_t^2=\lambda_{\max}(L^{-1}A_t^\top XA_tL^{-\top})`, :math:`X=LL^\top`
    (the smallest :math:`\rho^2` with :math:`A_t^\top XA_t\preceq\rho^2X`; a guess, never evidence)."""
    n = X.shape[0]
    identity = np.array_equal(X, np.eye(n) * X[0, 0])
    Li = None if identity else np.linalg.inv(np.linalg.cholesky(X))
    out = []
    for Ab in _chunks(A):
        if identity:
            W = np.swapaxes(Ab, 1, 2) @ Ab
        else:
            W = Li @ (np.swapaxes(Ab, 1, 2) @ (X @ Ab)) @ Li.T
            W = 0.5 * (W + np.swapaxes(W, 1, 2))
        out.append(np.linalg.eigvalsh(W)[:, -1])
    return np.concatenate(out)


def _screen(A: np.ndarray, k: int = 128) -> np.ndarray:
    """Indices of a subsample to compare candidates on: the k largest Frobenius norms and k spread evenly."""
    fro = np.einsum("nij,nij->n", A, A)
    top = np.argsort(fro)[-k:]
    spread = np.linspace(0, A.shape[0] - 1, min(k, A.shape[0])).astype(int)
    return np.unique(np.concatenate([top, spread]))


def invertible_float(A: Any, ref: StackRef | None = None, name: str = "every A_t invertible") -> Any:
    """The hypothesis "every A_t invertible" decided by the ``invertible_float`` checker (``holds`` with its
    certificate, else ``unknown`` with the reason); the margin is the proved lower bound of min sigma_min."""
    from . import core
    from .claims import claim

    A = as_stack(A)
    ref = ref or register_stack(A)
    data = {"jacobians": ref, "value": True,
            "method": "verified inverse: ||I - R A_t||_inf < 1 with Higham's gamma_n bound on fl(R A_t)"}
    cert = core.Certificate("invertible_float", claim("invertible_float", data) or "", data, checker="rigorous-float-inverse")
    method = "verified inverse per A_t, rigorous float bounds (gamma_n |R||A|), no exact rationals at this size"
    res = core.certified(name, "holds", cert, None, method, "")
    sig = _PROVED.get(("invertible", ref["sha256"]))
    if res.status == "holds":
        res.margin = sig
        res.detail = f"{A.shape[0]} Jacobians {A.shape[1]}x{A.shape[2]}" + (
            "" if sig is None else f"; proved sigma_min(A_t) >= {sig:.4g} for every t, so every A with "
                                   "||A - A_t||_2 below it is invertible too")
        return res
    ok, s = inverse_bounds(A)
    return core.HypothesisResult(name, "unknown", None, method, None,
                                 f"{int((~ok).sum())} of {len(ok)} Jacobians not proved invertible (verified inverse "
                                 "failed: singular or too ill-conditioned for binary64); not decided")


def contraction_rate_float(A: Any, ref: StackRef | None = None,
                           name: str = "common quadratic Lyapunov contraction",
                           slacks: tuple[float, ...] = (2.0**-16, 2.0**-10, 2.0**-5)) -> tuple[Any, ContractionRate | None]:
    r"""Certified :math:`\rho` with :math:`A_t^\top XA_t\preceq\rho^2X`, :math:`X\succeq I`, for every matrix of
    the stack, by the rigorous float checker ``contraction_float``. X is the best (on a subsample) of
    :func:`candidates`, normalised to :math:`\lambda_{\min}\approx1+2^{-8}`; :math:`\rho^2` is the float
    estimate of :math:`\max_t\rho_t^2` inflated by ``slack`` (the next one when the check fails).
    Returns ``(result, {"rho", "kappa", "lyapunov_upper", "x_choice", "robust_radius"})`` or ``(unknown, None)``."""
    from . import core
    from .claims import claim

    A = as_stack(A)
    ref = ref or register_stack(A)
    idx = _screen(A)
    best: tuple[float, str, np.ndarray] | None = None
    for cname, Xc in candidates(A):
        X = normalise(Xc)
        if X is None:
            continue
        r2 = float(_rates2(A[idx], X).max())
        if best is None or r2 < best[0]:
            best = (r2, cname, X)
    method = "CQLF X from a Lyapunov solve / identity, rigorous float re-check (gamma_n products, shifted Cholesky)"
    if best is None:
        return core.HypothesisResult(name, "unknown", None, method, None, "no positive definite candidate X"), None
    _, cname, X = best
    r2max = float(_rates2(A, X).max())
    if not (math.isfinite(r2max) and r2max > 0):
        return core.HypothesisResult(name, "unknown", None, method, None, f"rate estimate {r2max} not usable"), None
    kappa = Fraction(gershgorin_up(X))
    afro = float(_fro(A).max())
    why = ""
    for slack in slacks:
        rho2 = float(r2max * (1 + slack))
        shift = 0.5 * (rho2 - r2max)
        data = {"X": X.tolist(), "rho2": str(Fraction(rho2)), "kappa_upper": str(kappa), "jacobians": ref,
                "shift": shift, "x_choice": cname,
                "method": "rigorous binary64 bounds: gamma_n |A||B| products, Cholesky of rho^2 X - A^T X A - s I"}
        cert = core.Certificate("contraction_float", claim("contraction_float", data) or "", data,
                                checker="rigorous-float-cholesky")
        res = core.certified(name, "holds", cert, None, method, "")
        if res.status == "holds":
            rho = math.sqrt(rho2)
            mu = _PROVED.get(("contraction", ref["sha256"], data["rho2"], digest(X[None]))) or 0.0
            k = float(kappa)
            radius = max(0.0, (mu / k) / (afro + math.sqrt(afro * afro + mu / k)) * (1 - 1e-6))  # -a + sqrt(a^2 + mu/k)
            out: ContractionRate = {"rho": rho, "kappa": k, "lyapunov_upper": math.log(rho), "x_choice": cname, "robust_radius": radius}
            res.margin = 1.0 - rho
            verdict = "contracting" if rho < 1 else r"NOT contracting: $\rho\ge1$"
            res.detail = (f"$X$: {cname}; $\\rho$ = {rho:.6g} ({verdict}), "
                          f"$\\kappa(X)$ ≤ {k:.6g}: "
                          r"$\lVert\Phi(t,s)\rVert\le\sqrt{\kappa}\,\rho^{t-s}$, "
                          f"$\\lambda_{{\\max}}\\le\\log\\rho$ = {math.log(rho):.4g}; proved "
                          r"$\lambda_{\min}(\rho^2X-A_t^\top XA_t)$"
                          f" ≥ {mu:.3g}, so the bound also holds for every $A$ with "
                          r"$\lVert A-A_t\rVert_2$"
                          f" ≤ {radius:.3g}")
            return res, out
        why = res.detail
    return core.HypothesisResult(name, "unknown", None, method, None,
                                 f"the rigorous float check failed at every slack {list(slacks)} ({why})"), None
