r"""Certified hypotheses of the consensus paper (Rodríguez Abella, Silvestre, Tabuada,
*The asymptotic behavior of attention in transformers*, ``003_951a97dfacf88740.txt``).

Each predicate returns a :class:`~flowcert.certificates.core.HypothesisResult`; ``holds`` and
``fails`` only after the certificate has been re-checked in exact rational arithmetic.

* **Symmetric positive definite** :math:`P=P^\top\succ0` (Thm 3.2): exact symmetry and exact
  :math:`LDL^\top` of the given float data.
* **Open hemisphere** (Thms 4.1, 6.1): the SOCP

  .. math:: \max_{v,s}\ s\quad\text{s.t.}\quad y_i^\top v\ge s\ (i=1..\ell),\ \ \|v\|_2\le1,

  whose witness :math:`v` is rounded to rationals and re-checked, :math:`y_i^\top v>0` for all
  :math:`i`, in exact arithmetic. Refutation (Gordan): rationals :math:`\lambda\ge0`,
  :math:`\sum\lambda_i=1`, :math:`\sum_i\lambda_iy_i=0` exactly, i.e. :math:`0\in\operatorname{conv}\{y_i\}`.
* **Simple positive top eigenvalue** of a symmetric :math:`U` (Thm 6.1): a rational
  :math:`c\ge0` with :math:`\operatorname{In}(U-cI)=(1,d-1,0)` (Sylvester), so that
  :math:`\lambda_1>c\ge0` and :math:`\lambda_2<c`: a certified eigenvalue gap.
* **Bounded, uniformly continuous** :math:`P(t)` on :math:`t\ge0` (Lemma 4.1, Thms 4.1, 5.1, 6.1):
  interval evaluation over :math:`t\in[0,\infty)` (:mod:`flowcert.certificates.attention.bounds`).
* **Local stability** of an equilibrium from a linearisation: a Lyapunov certificate for the
  transverse matrix (:mod:`flowcert.certificates.spectrum`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from ..hypotheses import as_float, definite
from .. import core, exact, spectrum
from ..claims import claim as canonical_claim

# ---------------------------------------------------------------------------------------------
# P symmetric positive definite
# ---------------------------------------------------------------------------------------------


def symmetric_positive_definite(P: np.ndarray, name: str = "P") -> core.HypothesisResult:
    r"""Exact verdict on :math:`P=P^\top\succ0` (symmetry and :math:`LDL^\top` in rationals)."""
    return definite(np.asarray(P, dtype=float), name, +1)


# ---------------------------------------------------------------------------------------------
# open hemisphere
# ---------------------------------------------------------------------------------------------


def _frac_rows(Y: Any) -> list[list[Fraction]]:
    return exact.to_rational(np.asarray(Y, dtype=float))


def _token_rows(data: dict[str, Any]) -> Any:
    """The tokens ``Y`` of a certificate as an exact ``flint.fmpq_mat`` (rows; at least one, none empty)."""
    rows = data["Y"]
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows):
        raise ValueError("Y must be a non-empty list of non-empty rows")
    return core.qmat(rows)


def _column(values: Any) -> Any:
    if not isinstance(values, list) or not values:
        raise ValueError("expected a non-empty list")
    return core.qmat([[x] for x in values])


def _check_hemisphere(data: dict[str, Any]) -> bool:
    """:math:`Yv>0` entrywise, in exact rationals (one ``fmpq_mat`` product)."""
    Y, v = _token_rows(data), _column(data["v"])
    return Y.ncols() == v.nrows() and all(x > 0 for x in (Y * v).entries())


def _check_no_hemisphere(data: dict[str, Any]) -> bool:
    r""":math:`\lambda\ge0`, :math:`\sum\lambda=1`, :math:`Y^\top\lambda=0`, in exact rationals."""
    Y, lam = _token_rows(data), _column(data["lambda"])
    if lam.nrows() != Y.nrows() or any(x < 0 for x in lam.entries()) or sum(lam.entries()) != 1:
        return False
    return all(x == 0 for x in (lam.transpose() * Y).entries())


def hemisphere_socp(Y: np.ndarray) -> tuple[float, np.ndarray | None, str]:
    r"""Solve :math:`\max s` s.t. :math:`Yv\ge s`, :math:`\|v\|\le1` (cvxpy, CLARABEL).

    Returns
    -------
    s, v, status
        The optimal margin, the witness (None unless the status is optimal) and the status.
    """
    import cvxpy as cp  # lazy

    Y = np.asarray(Y, dtype=float)
    scale = np.linalg.norm(Y, axis=1)
    Yn = Y / np.where(scale > 0, scale, 1.0)[:, None]
    v, s = cp.Variable(Y.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Maximize(s), [Yn @ v >= s, cp.norm(v, 2) <= 1])
    try:
        prob.solve(solver="CLARABEL")
    except cp.SolverError as exc:
        return float("nan"), None, f"solver_error: {exc}"
    if prob.status != cp.OPTIMAL or v.value is None:
        return float("nan"), None, str(prob.status)
    return float(s.value), np.asarray(v.value, dtype=float), prob.status


def _rational_vector(v: np.ndarray, bits: int) -> list[Fraction]:
    scale = float(np.abs(v).max()) or 1.0
    return [Fraction(round(x / scale * 2**bits), 2**bits) for x in v]


def _gordan_witness(Y: list[list[Fraction]], Yf: np.ndarray) -> list[Fraction] | None:
    """Exact :math:`\\lambda\\ge0`, :math:`\\sum\\lambda=1`, :math:`Y^\\top\\lambda=0`, from the support of an LP."""
    from scipy.optimize import linprog

    ell, d = Yf.shape
    norms = np.linalg.norm(Yf, axis=1)
    # min sum|Y^T lam| via slack; lam >= 0, sum lam = 1
    c = np.concatenate([np.zeros(ell), np.ones(d)])
    A_ub = np.block([[Yf.T / norms.max(), -np.eye(d)], [-Yf.T / norms.max(), -np.eye(d)]])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * d), A_eq=np.concatenate([np.ones(ell), np.zeros(d)])[None],
                  b_eq=[1.0], bounds=[(0, None)] * (ell + d), method="highs")
    if res.status != 0:
        return None
    lam = res.x[:ell]
    for tol in (1e-9, 1e-7, 1e-5):
        support = [i for i in range(ell) if lam[i] > tol]
        if not support:
            continue
        # exact null space of [Y_S^T; 1^T] lam_S = [0; 1]
        A = sp.Matrix([[sp.Rational(Y[i][k].numerator, Y[i][k].denominator) for i in support] for k in range(d)]
                      + [[1] * len(support)])
        rhs = sp.Matrix([0] * d + [1])
        try:
            sol, params = A.gauss_jordan_solve(rhs)
        except ValueError:
            continue
        if params.shape[0]:
            guess = {p: sp.Rational(0) for p in params}
            sol = sol.subs(guess)
        full = [Fraction(0)] * ell
        for i, x in zip(support, sol):
            full[i] = Fraction(int(sp.Rational(x).p), int(sp.Rational(x).q))
        if all(x >= 0 for x in full):
            return full
    return None


def open_hemisphere(Y: np.ndarray, name: str = "open_hemisphere") -> tuple[core.HypothesisResult, np.ndarray | None]:
    r"""Certified verdict on :math:`\exists v:\ v^\top y_i>0\ \forall i` (Euclidean, also on ellipsoids).

    Parameters
    ----------
    Y : array, shape (ell, d)
        Tokens as rows.

    Returns
    -------
    result, v
        The verdict and, when it holds, the re-checked witness :math:`v` (floats, unit norm; the
        exact rational witness is in the certificate). The margin is the SOCP optimum on the
        normalised tokens, :math:`\min_i v^\top y_i/|y_i|` for the rational witness.
    """
    Yf = np.asarray(Y, dtype=float)
    Yenc = core.encode(Yf)  # exact "p/q" strings of the float tokens
    s, v, status = hemisphere_socp(Yf)
    method = (rf"SOCP $\max s$ subject to $Yv\ge s$, $\lVert v\rVert\le1$ (cvxpy CLARABEL, {status}); "
              "exact rational re-check")
    if v is not None and s > 0:
        for bits in (30, 45, 52):
            vq = _rational_vector(v, bits)
            data = {"Y": Yenc, "v": [str(x) for x in vq]}
            cert = core.Certificate("open_hemisphere", canonical_claim("open_hemisphere", data) or "", data, "exact-rational")
            vf = np.array([float(x) for x in vq])
            vf = vf / np.linalg.norm(vf)
            margin = float(np.min(Yf @ vf / np.linalg.norm(Yf, axis=1)))
            res = core.certified(name, "holds", cert, margin, method, f"SOCP margin $s^*$ = {s:.6g}")
            if res.status == "holds":
                return res, vf
    if v is not None and s <= 1e-6:
        lam = _gordan_witness(_frac_rows(Yf), Yf)
        if lam is not None:
            data = {"Y": Yenc, "lambda": [str(x) for x in lam]}
            cert = core.Certificate("no_open_hemisphere", canonical_claim("no_open_hemisphere", data) or "", data,
                                    "exact-rational")
            return core.certified(name, "fails", cert, s, "LP support + exact rational null vector (Gordan)",
                                  f"SOCP margin $s^*$ = {s:.3g}"), None
    return core.HypothesisResult(name, "unknown", None if s != s else s, method, None,
                                 f"no certificate passed its exact re-check (SOCP status {status}, $s^*$ = {s:.3g})"), None


# ---------------------------------------------------------------------------------------------
# simple positive top eigenvalue
# ---------------------------------------------------------------------------------------------


def _inertia(M: sp.Matrix) -> tuple[int, int, int]:
    r = exact.ldl_inertia([[Fraction(int(e.p), int(e.q)) for e in M.row(i)] for i in range(M.rows)])
    return r.n_pos, r.n_neg, r.n_zero


# the checkers decide inertia with certificates/second_opinion.py, not the producer's LDL^T (_inertia)


def _check_simple_top(data: dict[str, Any]) -> bool:
    from ..second_opinion import symmetric_inertia

    U = core.qmat(data["U"])
    c = core.to_fmpq(data["c"])
    return c >= 0 and symmetric_inertia(core.shift(U, c)) == (1, U.nrows() - 1, 0)


def _check_repeated_top(data: dict[str, Any]) -> bool:
    from ..second_opinion import symmetric_inertia

    got = symmetric_inertia(core.shift(core.qmat(data["U"]), data["lambda"]))
    return got is not None and got[0] == 0 and got[2] >= 2


def _check_nonpositive_top(data: dict[str, Any]) -> bool:
    from ..second_opinion import symmetric_inertia

    got = symmetric_inertia(core.qmat(data["U"]))
    return got is not None and got[0] == 0


@dataclass
class TopEigen:
    """Numerical top eigenpair of a symmetric matrix and the certified separator ``c``."""

    lam: float
    v: np.ndarray
    gap: float
    c: Fraction | None


def top_eigen(U: np.ndarray) -> TopEigen:
    """Top eigenvalue, unit eigenvector (sign: first nonzero entry positive) and gap of symmetric U."""
    w, Q = np.linalg.eigh(np.asarray(U, float))
    v = Q[:, -1]
    k = int(np.argmax(np.abs(v) > 1e-12))
    v = v if v[k] > 0 else -v
    gap = float(w[-1] - w[-2]) if len(w) > 1 else float("inf")
    return TopEigen(float(w[-1]), v, gap, None)


def simple_positive_top_eigenvalue(U: np.ndarray, name: str = "top_eigenvalue_simple_positive") -> tuple[core.HypothesisResult, TopEigen | None]:
    r"""Certified verdict on ":math:`U=U^\top`, :math:`\lambda_1(U)>0` and simple".

    The certificate is a rational :math:`c\ge0` with :math:`\operatorname{In}(U-cI)=(1,d-1,0)`;
    the margin is :math:`\min(\lambda_1-c,\,c-\lambda_2)` (numerical, for information).
    """
    Uf = np.asarray(U, float)
    # float -> rational is exact (each entry p/2^k), so U == U^T in rationals iff it holds entrywise
    # in float64 (finite entries): asymmetry is decided on the floats, before the d x d rational matrix
    if np.isfinite(Uf).all() and not np.array_equal(Uf, Uf.T):
        return core.HypothesisResult(name, "fails", None, "exact symmetry", None, "U is not symmetric"), None
    Uq = core.rational_matrix(Uf)
    te = top_eigen(as_float(Uq))
    w = np.linalg.eigvalsh(as_float(Uq))
    lam2 = float(w[-2]) if len(w) > 1 else -math.inf
    method = r"exact inertia of $U-cI$ (Sylvester, rational $LDL^\top$)"
    if te.lam > 0 and te.gap > 0:
        mid = 0.5 * (te.lam + lam2) if math.isfinite(lam2) else 0.5 * te.lam
        for cand in (max(mid, 0.0), max(te.lam - 0.25 * te.gap, 0.0), 0.0):
            c = Fraction(cand).limit_denominator(2**40) if cand > 0 else Fraction(0)
            data = {"U": core.encode(Uq), "c": str(c)}
            cert = core.Certificate("simple_positive_top_eigenvalue", canonical_claim("simple_positive_top_eigenvalue", data) or "",
                                    data, "exact-ldl")
            res = core.certified(name, "holds", cert, min(te.lam - float(c), float(c) - lam2), method,
                                 f"$\\lambda_1$ = {te.lam:.6g}, $\\lambda_2$ = {lam2:.6g}, separator $c$ = {float(c):.6g}")
            if res.status == "holds":
                te.c = c
                return res, te
    if te.lam <= 0:
        data = {"U": core.encode(Uq)}
        cert = core.Certificate("nonpositive_top_eigenvalue", canonical_claim("nonpositive_top_eigenvalue", data) or "", data)
        res = core.certified(name, "fails", cert, te.lam, method, f"$\\lambda_1$ = {te.lam:.6g} ≤ 0")
        if res.status == "fails":
            return res, None
    else:
        lam = Fraction(te.lam).limit_denominator(2**40)
        data = {"U": core.encode(Uq), "lambda": str(lam)}
        cert = core.Certificate("repeated_top_eigenvalue", canonical_claim("repeated_top_eigenvalue", data) or "", data)
        res = core.certified(name, "fails", cert, te.gap, method, f"$\\lambda_1$ = {te.lam:.6g} is repeated")
        if res.status == "fails":
            return res, None
    return core.HypothesisResult(name, "unknown", te.gap, method, None,
                                 f"$\\lambda_1$ = {te.lam:.6g}, gap {te.gap:.3g}: no certificate passed its exact re-check"), None


from .bounds import (  # noqa: F401  (re-exported: the consensus certificates' public names)
    INF,
    Interval,
    ScaledProduct,
    SupBounds,
    Unbounded,
    bounded,
    frobenius_sup_bound,
    interval,
    sqrt_upper,
    square_sum,
    sup_bounds,
    uniformly_continuous,
)

@dataclass(frozen=True)
class Lemma41Constants:
    r"""Lemma 4.1's constants in log space: :math:`\log c_1=-\tfrac12\log d-\log\ell-2K^2b`,
    :math:`\log c_2=2K^2b`, :math:`K^2=1/\lambda_{\min}(W)`.

    ``c1``/``c2`` are the numbers when a float64 represents them (``c1`` a normal positive float,
    ``c2`` finite), else ``None`` with the reason in ``c1_reason``/``c2_reason``: the logs are
    always finite, so no exponent ever overflows.
    """

    log_c1: float
    log_c2: float

    @staticmethod
    def _number(log_value: float) -> tuple[float | None, str | None]:
        if log_value > LOG_FLOAT_MAX:
            return None, f"exp({log_value:.6g}) exceeds the largest float64 (log {LOG_FLOAT_MAX:.6g})"
        if log_value < LOG_FLOAT_TINY:
            return None, f"exp({log_value:.6g}) is below the smallest normal float64 (log {LOG_FLOAT_TINY:.6g})"
        return math.exp(log_value), None

    @property
    def c1(self) -> float | None:
        return self._number(self.log_c1)[0]

    @property
    def c1_reason(self) -> str | None:
        return self._number(self.log_c1)[1]

    @property
    def c2(self) -> float | None:
        return self._number(self.log_c2)[0]

    @property
    def c2_reason(self) -> str | None:
        return self._number(self.log_c2)[1]


#: log of the largest finite float64 and of the smallest normal one.
LOG_FLOAT_MAX = math.log(sys.float_info.max)
LOG_FLOAT_TINY = math.log(sys.float_info.min)


def lemma_4_1_constants(b: float, W_min_eig: float, ell: int, d: int) -> Lemma41Constants:
    r"""Lemma 4.1: :math:`c_1=1/(\sqrt{d}\,\ell\,e^{2K^2b})`, :math:`c_2=e^{2K^2b}`, :math:`K=\lambda_{\min}(W)^{-1/2}`,
    computed in log space (:class:`Lemma41Constants`; never overflows)."""
    if not W_min_eig > 0:
        raise ValueError(f"lambda_min(W) = {W_min_eig} is not positive")
    x = 2.0 * float(b) / W_min_eig  # 2 K^2 b, finite for finite b and lambda_min(W) >= the smallest float
    return Lemma41Constants(-(0.5 * math.log(d) + math.log(ell) + x), x)


# ---------------------------------------------------------------------------------------------
# local stability from a linearisation
# ---------------------------------------------------------------------------------------------


def hurwitz(name: str, A: np.ndarray, exact_A: sp.Matrix | None = None) -> core.HypothesisResult:
    r"""Lyapunov certificate (exactly re-checked) that every eigenvalue of ``A`` has negative real part.

    ``exact_A`` is the exact matrix when it is known in rationals (e.g. the consensus
    linearisations up to their positive factor :math:`h/\sqrt{n+1}`); otherwise the float data
    are certified as given.
    """
    A = np.asarray(A, float)
    return spectrum.spectrum_verdict(name, A, exact_A if exact_A is not None else core.rational_matrix(A))


def full_transverse_matrix(ell: int) -> sp.Matrix:
    r"""Full attention, :math:`U=I`: in the differences :math:`d_i=\delta_i-\delta_\ell` the linearisation
    :math:`\dot\delta_i=\frac{h}{\ell\sqrt d}\sum_j(\delta_j-\delta_i)` reads :math:`\dot d=\frac{h}{\sqrt d}A\,d` with
    :math:`A=-I_{\ell-1}` (per tangent coordinate)."""
    return -sp.eye(ell - 1)


def causal_transverse_matrix(ell: int) -> sp.Matrix:
    r"""Causal, :math:`U=I`: with :math:`e_i=\delta_i-\delta_1` (:math:`i\ge2`; token 1 is fixed),
    :math:`\dot e_i=\frac{h}{i\sqrt d}\big(\sum_{j=2}^{i}e_j-ie_i\big)`; returns the rational matrix
    :math:`A` with :math:`\dot e=\frac h{\sqrt d}Ae` (lower triangular, diagonal :math:`-(i-1)/i`)."""
    A = sp.zeros(ell - 1, ell - 1)
    for r, i in enumerate(range(2, ell + 1)):
        for c, j in enumerate(range(2, i + 1)):
            A[r, c] = sp.Rational(1, i) if j < i else sp.Rational(1 - i, i)
    return A


def consensus_stability(causal: bool, ell: int, h: int, d: int, name: str = "consensus_locally_stable") -> core.HypothesisResult:
    r"""Lyapunov certificate (exact) for the transverse linearisation at consensus (:math:`U=I`).

    The linearisation is :math:`(h/\sqrt d)\,A\otimes I_{d-1}` with :math:`A` rational
    (:func:`full_transverse_matrix`, :func:`causal_transverse_matrix`); a positive factor and the
    Kronecker product with the identity do not change Hurwitz stability, so :math:`A` is certified.
    """
    if ell < 2:
        return core.HypothesisResult(name, "holds", None, "one token: consensus trivially", None)
    A = causal_transverse_matrix(ell) if causal else full_transverse_matrix(ell)
    res = spectrum.spectrum_verdict(name, as_float(A), A, stable_claim="transverse linearisation at consensus is Hurwitz")
    rate = [float(-sp.Integer(h) * (i - 1) / (i * sp.sqrt(d))) for i in range(2, ell + 1)] if causal else [-h / math.sqrt(d)]
    res.detail = f"{res.detail}; transverse eigenvalues {sorted(set(round(r, 12) for r in rate))} (closed form)"
    return res


def theorem_6_1_stability(top: core.HypothesisResult, name: str = "consensus_locally_stable") -> core.HypothesisResult:
    r"""Local exponential stability of :math:`(v,\dots,v)` (Thm 6.1) from the certified separator.

    The linearisation :math:`\dot\delta_i=\frac1{i\sqrt d}(U\sum_{j<i}\delta_j+(U-i\lambda)\delta_i)` on
    :math:`v^\perp` is block lower triangular; its diagonal blocks :math:`(U-i\lambda I)|_{v^\perp}` are
    symmetric with eigenvalues :math:`\mu_k-i\lambda\le\lambda_2-\lambda_1<0`, which the certificate
    :math:`\operatorname{In}(U-cI)=(1,d-1,0)` proves (:math:`\lambda_2<c<\lambda_1`, :math:`\lambda_1>0`)."""
    if top.status != "holds":
        return core.HypothesisResult(name, "unknown" if top.status == "unknown" else "fails", None,
                                     "needs a simple positive top eigenvalue", None, top.detail)
    return core.certified(name, "holds", top.certificate, top.margin,
                          "block-triangular linearisation; diagonal blocks negative definite by the certified separator",
                          r"eigenvalues $(\mu_k-i\lambda)/(i\sqrt d)<0$")


def tetrahedron_stability(beta: Fraction | float, name: str = "tetrahedron_locally_stable") -> core.HypothesisResult:
    r"""Exact verdict on the local stability (modulo rotations) of the regular tetrahedron for
    :math:`P=-\beta I`, from the closed-form tangent spectrum of
    :func:`flowcert.symbolic.attention.consensus.tetrahedron_spectrum`: :math:`\lambda_E<0\iff\beta>0`,
    :math:`\lambda_T<0\iff\beta>3/2` (the factor :math:`p>0`). ``holds``: the rotation orbit is a normally
    hyperbolic attracting manifold of equilibria; ``fails``: an eigenvalue is positive."""
    from ...symbolic.attention import consensus as sym

    b = sp.Rational(Fraction(beta))
    spec = {k: float(v) for k, v in sym.tetrahedron_spectrum(b).items()}
    data = {"beta": str(b), "stable": bool(b > sym.TETRAHEDRON_THRESHOLD)}
    cert = core.Certificate("tetrahedron_spectrum_sign", canonical_claim("tetrahedron_spectrum_sign", data) or "", data,
                            "exact-rational")
    detail = f"$\\lambda_E$ = {spec['E']:.6g} (×2), $\\lambda_T$ = {spec['T']:.6g} (×3), 0 (×3, rotations)"
    if b > sym.TETRAHEDRON_THRESHOLD:
        return core.certified(name, "holds", cert, min(-spec["E"], -spec["T"]), "closed-form tangent spectrum, exact sign", detail)
    if b < sym.TETRAHEDRON_THRESHOLD:
        return core.certified(name, "fails", cert, max(spec["E"], spec["T"]), "closed-form tangent spectrum, exact sign", detail)
    return core.HypothesisResult(name, "unknown", 0.0, "closed-form tangent spectrum", None, f"$\\beta=3/2$ is marginal; {detail}")


def _check_tetra(data: dict[str, Any]) -> bool:
    # closed form: lambda_E = -8 beta p / (3 sqrt 3), lambda_T = 8 (3 - 2 beta) p / (9 sqrt 3), p > 0
    b = sp.Rational(data["beta"])
    stable = b > 0 and 3 - 2 * b < 0
    unstable = b < 0 or 3 - 2 * b > 0
    return bool(data["stable"]) == stable and (stable or unstable)
