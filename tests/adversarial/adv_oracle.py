"""Independent oracles for the adversarial suite: is a ``holds`` verdict of ``verify gaussian`` true?

Nothing here calls flowcert's own decision procedures (except :func:`recheck`, which the issue asks
us to run on every embedded certificate). Every float of the parameter file is read as the exact
dyadic rational it denotes, and claims are decided as follows:

* symmetric ``M > 0``: exact symmetry, then Sylvester's criterion (all leading principal minors
  > 0), determinants by sympy's fraction-free Bareiss elimination;
* symmetric ``M >= 0``: exact symmetry, then *all* principal minors >= 0 (2^d - 1 of them);
* ``Re spec(J) < 0``: the exact characteristic polynomial (monic, rational) and the Hurwitz
  criterion (all leading Hurwitz determinants > 0);
* number of eigenvalues with ``Re > 0`` and eigenvalues on the imaginary axis: exact. An axis
  root ``iy`` of the characteristic polynomial p is a common real root of ``Re p(iy)`` and
  ``Im p(iy)`` (gcd + Sturm count); otherwise sympy's exact complex root isolation is refined until
  every isolating rectangle lies strictly on one side of the axis;
* scalar eigenvalue inequalities of symmetric matrices (``8 ||B|| lambda_max(Sigma0) < 1``,
  ``beta tr Sigma0 + alpha > 0``): mpmath at 60 digits (symmetric eigenvalues are perfectly
  conditioned, so the error is ~1e-55 relative); a value within 1e-40 of the threshold is
  reported as undecided rather than guessed;
* equilibria: Newton's method in mpmath at 60 digits from the reported candidate;
* blow-up bounds: the comparison ``tr Sigma' <= a y + c y^2`` with ``a = lambda_max(A + A^T)``,
  ``c = 2 ||V||_2 ||B||_2`` (valid because Sigma stays PSD) gives a *lower* bound on the true
  blow-up time; a reported upper bound below it is false. A hand-written moment ODE integrated
  by scipy (DOP853, rtol 1e-12) gives a second, numerical opinion where the scales allow it.

A verdict is ``True`` (claim true), ``False`` (claim false) or ``None`` (this oracle cannot decide;
counted separately, never as a false verdict).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from flowcert.certificates import core

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared exact helpers
from exact_helpers import qmat  # noqa: E402  (test-side, independent of the code under test)

MP_DPS = 60
_s = sp.Symbol("s")
_y = sp.Symbol("y", real=True)


# ---------------------------------------------------------------------------------------------
# exact data
# ---------------------------------------------------------------------------------------------


def mpmat(M: sp.Matrix) -> mpmath.matrix:
    with mpmath.workdps(MP_DPS):
        return mpmath.matrix([[mpmath.mpf(int(e.p)) / int(e.q) for e in M.row(i)] for i in range(M.rows)])


@dataclass
class Exact:
    """The constant parameters of one case, exact."""

    A: sp.Matrix
    B: sp.Matrix
    V: sp.Matrix
    b: sp.Matrix
    mu0: sp.Matrix
    Sigma0: sp.Matrix
    d: int
    activation: str
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> "Exact | None":
        """None for time-varying parameters (entries that are strings)."""
        def has_str(x: Any) -> bool:
            return isinstance(x, str) or (isinstance(x, list) and any(has_str(e) for e in x))

        if any(has_str(raw[k]) for k in ("A", "B", "V", "b")):
            return None
        S = qmat(raw["Sigma0"])
        return cls(qmat(raw["A"]), qmat(raw["B"]), qmat(raw["V"]), qmat(raw["b"]), qmat(raw["mu0"]), S, S.rows,
                   raw.get("activation", "identity"), raw)

    def f(self, key: str) -> np.ndarray:
        return np.asarray(self.raw[key], dtype=float)


# ---------------------------------------------------------------------------------------------
# exact definiteness and spectra
# ---------------------------------------------------------------------------------------------


def _det(M: sp.Matrix) -> sp.Rational:
    return M.det(method="bareiss") if M.rows else sp.Integer(1)


def pd_exact(M: sp.Matrix) -> bool:
    """Symmetric and positive definite (Sylvester)."""
    if M != M.T:
        return False
    return all(_det(M[:k, :k]) > 0 for k in range(1, M.rows + 1))


def psd_exact(M: sp.Matrix) -> bool:
    """Symmetric and positive semidefinite (all principal minors >= 0)."""
    if M != M.T:
        return False
    n = M.rows
    for k in range(1, n + 1):
        for idx in itertools.combinations(range(n), k):
            if _det(M.extract(list(idx), list(idx))) < 0:
                return False
    return True


def _normalise(J: sp.Matrix) -> sp.Matrix:
    """J scaled by a power of two (same signs of real parts, smaller numbers)."""
    m = max((abs(e) for e in J), default=sp.Integer(0))
    if m == 0:
        return J
    e = int(sp.floor(sp.log(m, 2))) if m != 1 else 0
    return J * sp.Integer(2) ** (-e)


def charpoly(J: sp.Matrix) -> sp.Poly:
    return sp.Poly(_normalise(J).charpoly(_s).as_expr(), _s, domain="QQ")


def hurwitz_exact(J: sp.Matrix) -> bool:
    """All eigenvalues of J have negative real part (Routh-Hurwitz determinants of the charpoly)."""
    c = charpoly(J).all_coeffs()  # monic: c[0] = 1, p = sum c[k] s^(n-k)
    n = len(c) - 1
    if n == 0:
        return True
    H = sp.zeros(n, n)
    for i in range(n):
        for j in range(n):
            k = 2 * (j + 1) - (i + 1)  # Hurwitz matrix entry a_{2j-i} (1-based), a_0 = 1
            H[i, j] = c[k] if 0 <= k <= n else 0
    return all(_det(H[:k, :k]) > 0 for k in range(1, n + 1))


def imaginary_axis_root(J: sp.Matrix) -> bool:
    """Some eigenvalue of J has real part exactly 0."""
    p = charpoly(J)
    val = sp.expand(p.as_expr().subs(_s, sp.I * _y))
    re_p, im_p = sp.Poly(sp.re(val), _y), sp.Poly(sp.im(val), _y)
    g = sp.gcd(re_p, im_p)
    if g.degree() <= 0:
        return bool(g.is_zero)
    return g.count_roots() > 0


def rhp_count(J: sp.Matrix) -> int | None:
    """Number of eigenvalues (with multiplicity) with Re > 0; None if one lies on the axis."""
    if imaginary_axis_root(J):
        return None
    # sympy isolates complex roots of square-free polynomials only: count per square-free factor
    return sum(mult * _rhp_count_squarefree(factor) for factor, mult in charpoly(J).sqf_list()[1])


def _rhp_count_squarefree(p: sp.Poly) -> int:
    for k in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192):
        real, cplx = p.intervals(all=True, eps=sp.Rational(1, 2**k))
        count, undecided = 0, False
        for (lo, hi), m in real:
            if lo > 0:
                count += m
            elif hi >= 0:
                undecided = True
        for (a, b), m in cplx:
            lo, hi = sp.re(a), sp.re(b)
            if lo > 0:
                count += m
            elif hi >= 0:
                undecided = True
        if not undecided:
            return count
    raise AssertionError("root isolation did not separate the roots from the imaginary axis")


# ---------------------------------------------------------------------------------------------
# high precision for symmetric spectra
# ---------------------------------------------------------------------------------------------


def eig_sym(M: sp.Matrix) -> list[mpmath.mpf]:
    """Eigenvalues (ascending) of a symmetric rational matrix, 60 digits."""
    with mpmath.workdps(MP_DPS):
        E = mpmath.eigsy(mpmat(M), eigvals_only=True)
        return sorted(E[i] for i in range(M.rows))


def norm2(M: sp.Matrix) -> mpmath.mpf:
    with mpmath.workdps(MP_DPS):
        return mpmath.sqrt(max(eig_sym(M.T * M)[-1], 0))


def compare(value: mpmath.mpf, threshold: Any, strict_greater: bool) -> bool | None:
    """``value > threshold`` (or ``<``), None when too close to call at 60 digits."""
    with mpmath.workdps(MP_DPS):
        t = mpmath.mpf(threshold)
        gap = value - t
        band = mpmath.mpf(10) ** -40 * (1 + abs(t) + abs(value))
        if abs(gap) <= band:
            return None
        return bool(gap > 0) if strict_greater else bool(gap < 0)


# ---------------------------------------------------------------------------------------------
# the moment ODE, written by hand
# ---------------------------------------------------------------------------------------------


def moment_rhs(A: np.ndarray, B: np.ndarray, V: np.ndarray, b: np.ndarray):
    d = A.shape[0]

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        mu, S = y[:d], y[d:].reshape(d, d)
        dmu = (A + V + V @ S @ B) @ mu + b
        dS = A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T
        return np.concatenate([dmu, dS.ravel()])

    return rhs


def simulate(ex: Exact, t_end: float, threshold: float, method: str = "DOP853") -> tuple[str, float, np.ndarray]:
    """``(status, t_reached, Sigma_final)``; status ``ok`` / ``exploded`` / ``failed``."""
    A, B, V, b, mu0, S0 = (ex.f(k) for k in ("A", "B", "V", "b", "mu0", "Sigma0"))
    d = ex.d
    rhs = moment_rhs(A, B, V, b)

    def boom(t: float, y: np.ndarray) -> float:
        return threshold - np.linalg.norm(y[d:])

    boom.terminal = True  # type: ignore[attr-defined]
    y0 = np.concatenate([mu0, S0.ravel()])
    with np.errstate(all="ignore"):
        fast = float(np.abs(np.linalg.eigvals(A)).max()) if np.all(np.isfinite(A)) else 0.0
    if method == "DOP853" and fast * t_end > 1e5:
        method = "Radau"  # stiff: an explicit method would take ~fast * t_end steps
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        sol = solve_ivp(rhs, (0.0, t_end), y0, method=method, rtol=1e-12, atol=1e-14 * (1 + np.abs(S0).max()),
                        events=boom)
    S = sol.y[d:, -1].reshape(d, d)
    if sol.status == 1:
        return "exploded", float(sol.t[-1]), S
    if sol.status == 0 and np.all(np.isfinite(sol.y[:, -1])):
        return "ok", float(sol.t[-1]), S
    # a failed step with a huge state is a blow-up, not an integration problem
    grown = np.all(np.isfinite(S)) and np.linalg.norm(S) > 1e3 * (1 + np.linalg.norm(S0))
    return ("exploded" if grown or not np.all(np.isfinite(S)) else "failed"), float(sol.t[-1]), S


def field_mp(A: mpmath.matrix, B: mpmath.matrix, V: mpmath.matrix, S: mpmath.matrix) -> mpmath.matrix:
    return A * S + S * A.T + V * S * B * S + S * B.T * S * V.T


def _vech_basis(d: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(d) for j in range(i, d)]


def refine_equilibrium(ex: Exact, S_float: np.ndarray) -> mpmath.matrix | None:
    """Newton in mpmath (60 digits) for F(Sigma) = 0 on Sym(d) from a float candidate."""
    d = ex.d
    idx = _vech_basis(d)
    with mpmath.workdps(MP_DPS):
        A, B, V = mpmat(ex.A), mpmat(ex.B), mpmat(ex.V)
        S = mpmath.matrix([[mpmath.mpf(float(x)) for x in row] for row in 0.5 * (S_float + S_float.T)])
        scale = 1 + max(abs(S[i, j]) for i in range(d) for j in range(d))
        for _ in range(60):
            F = field_mp(A, B, V, S)
            res = max(abs(F[i, j]) for i, j in idx)
            size = 1 + mpmath.mnorm(A, 1) + mpmath.mnorm(V, 1) * mpmath.mnorm(B, 1) * scale
            if res <= mpmath.mpf(10) ** -45 * scale**2 * size:
                return S
            J = mpmath.matrix(len(idx), len(idx))
            for c, (k, l) in enumerate(idx):
                E = mpmath.matrix(d, d)
                E[k, l] = E[l, k] = 1
                DF = A * E + E * A.T + V * E * B * S + V * S * B * E + E * B.T * S * V.T + S * B.T * E * V.T
                for r, (i, j) in enumerate(idx):
                    J[r, c] = DF[i, j]
            try:
                step = mpmath.lu_solve(J, mpmath.matrix([F[i, j] for i, j in idx]))
            except ZeroDivisionError:
                return None
            for c, (k, l) in enumerate(idx):
                S[k, l] -= step[c]
                if k != l:
                    S[l, k] -= step[c]
        return None


def jacobian_mp(ex: Exact, S: mpmath.matrix) -> mpmath.matrix:
    d = ex.d
    idx = _vech_basis(d)
    with mpmath.workdps(MP_DPS):
        A, B, V = mpmat(ex.A), mpmat(ex.B), mpmat(ex.V)
        J = mpmath.matrix(len(idx), len(idx))
        for c, (k, l) in enumerate(idx):
            E = mpmath.matrix(d, d)
            E[k, l] = E[l, k] = 1
            DF = A * E + E * A.T + V * E * B * S + V * S * B * E + E * B.T * S * V.T + S * B.T * E * V.T
            for r, (i, j) in enumerate(idx):
                J[r, c] = DF[i, j]
        return J


# ---------------------------------------------------------------------------------------------
# the judge
# ---------------------------------------------------------------------------------------------


@dataclass
class Finding:
    where: str
    name: str
    status: str
    truth: bool | None
    note: str = ""


@dataclass
class Judgement:
    counts: dict[str, int] = field(default_factory=lambda: {"holds": 0, "fails": 0, "unknown": 0})
    findings: list[Finding] = field(default_factory=list)
    false_holds: list[Finding] = field(default_factory=list)
    false_fails: list[Finding] = field(default_factory=list)
    unchecked_holds: list[Finding] = field(default_factory=list)
    bad_certificates: list[str] = field(default_factory=list)
    certificates: int = 0
    regime_errors: list[str] = field(default_factory=list)

    @property
    def false_total(self) -> int:
        return len(self.false_holds) + len(self.regime_errors) + len(self.bad_certificates)

    def describe(self) -> str:
        out = [f"counts {self.counts}"]
        out += [f"FALSE HOLDS {f.where}: {f.name} ({f.note})" for f in self.false_holds]
        out += [f"FALSE FAILS {f.where}: {f.name} ({f.note})" for f in self.false_fails]
        out += [f"FALSE REGIME: {r}" for r in self.regime_errors]
        out += [f"CERTIFICATE REJECTED: {c}" for c in self.bad_certificates]
        return "\n".join(out)


def _eta(ex: Exact) -> sp.Rational | None:
    eta = ex.V[0, 0]
    return eta if ex.V == eta * sp.eye(ex.d) else None


def _float_matrix(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


def claim(ex: Exact, h: dict[str, Any], theorem: dict[str, Any] | None, doc: dict[str, Any],
          meta: dict[str, Any]) -> tuple[bool | None, str]:
    """Truth of the mathematical claim named by hypothesis ``h`` (independently of flowcert)."""
    name = h["name"]
    if name == "activation_identity":
        return ex.activation == "identity", ""
    if name == "coefficients_continuous":
        return True, "constant parameters"
    if name == "moment_closure_proved":
        return None, "symbolic identity (Prop. 2.1), not re-derived here"
    m = re.fullmatch(r"(-?)(V|B|Sigma0) > 0", name)
    if m:
        M = {"V": ex.V, "B": ex.B, "Sigma0": ex.Sigma0}[m.group(2)]
        return pd_exact(-M if m.group(1) else M), "Sylvester"
    if name == "Sigma0 >= 0":
        return psd_exact(ex.Sigma0), "principal minors"
    if name == "A + A^T >= 0":
        return psd_exact(ex.A + ex.A.T), "principal minors"
    if name == "-(A + A^T) >= 0":
        return psd_exact(-(ex.A + ex.A.T)), "principal minors"
    if name == "Re spec(A) < 0":
        return hurwitz_exact(ex.A), "Hurwitz determinants"
    if name == "Re spec(A) > 0":
        return hurwitz_exact(-ex.A), "Hurwitz determinants"
    if name == "V = eta I":
        return _eta(ex) is not None, ""
    if name in ("eta < 0", "eta > 0"):
        eta = _eta(ex)
        if eta is None:
            return False, "V is not eta I"
        return (eta < 0) if name == "eta < 0" else (eta > 0), ""
    if name == "-eta(B + B^T) > 0":
        eta = _eta(ex)
        if eta is None:
            return False, "V is not eta I"
        return pd_exact(-eta * (ex.B + ex.B.T)), "Sylvester"
    if name == "A has no imaginary-axis eigenvalue (k certified)":
        k = rhp_count(ex.A)
        if k is None:
            return False, "A has an eigenvalue on the imaginary axis"
        mk = re.search(r"\bk\s*=\s*(\d+)", h.get("detail") or "")
        if mk and int(mk.group(1)) != k:
            return False, f"certified k = {mk.group(1)} but exact count is {k}"
        return True, f"exact count k = {k}"
    if name == "A has an eigenvalue with Re > 0":
        k = rhp_count(ex.A)
        if k is None:
            k = 0 if hurwitz_exact(ex.A) else None
            if k is None:  # axis roots: count the others by perturbation-free argument below
                return None, "axis eigenvalue present; count not decided"
        return k >= 1, f"exact count {k}"
    if name == "8 ||B||_2 lambda_max(Sigma0) < 1":
        with mpmath.workdps(MP_DPS):
            val = 8 * norm2(ex.B) * eig_sym(ex.Sigma0)[-1]
            return compare(val, 1, strict_greater=False), f"8 ||B|| lambda_max = {mpmath.nstr(val, 12)}"
    if name == "tr Sigma0 > -alpha / beta":
        if ex.V != ex.V.T or ex.B != ex.B.T:
            return False, "V or B not symmetric"
        with mpmath.workdps(MP_DPS):
            alpha = eig_sym(ex.A + ex.A.T)[0]
            beta = 2 * eig_sym(ex.V)[0] * eig_sym(ex.B)[0] / ex.d
            tr = sum(mpmat(ex.Sigma0)[i, i] for i in range(ex.d))
            if beta <= 0:
                return False, "beta <= 0"
            margin = beta * tr + alpha
            return compare(margin, 0, strict_greater=True), f"beta tr + alpha = {mpmath.nstr(margin, 12)}"
    if name in ("A + V + V Sigma_inf B Hurwitz", "A + eta Sigma_inf B + eta I Hurwitz"):
        cert = h.get("certificate")
        if not cert or "J" not in cert.get("data", {}):
            return None, "no certificate to read the matrix from"
        J = core.decode(cert["data"]["J"])
        mismatch = _matrix_mismatch(ex, name, J, doc)
        if mismatch:
            return False, mismatch
        return hurwitz_exact(J), "Hurwitz determinants of the certified matrix"
    if name in ("pd_equilibrium_exists", "linearisation_hurwitz", "-(P V + V P) > 0 at Sigma_inf"):
        cert = h.get("certificate")
        if (not cert or "Sigma" not in cert.get("data", {})) and name == "-(P V + V P) > 0 at Sigma_inf":
            cert = _sibling_candidate(doc, h)
        if not cert or "Sigma" not in cert.get("data", {}):
            eta = _eta(ex)
            if name == "pd_equilibrium_exists" and eta is not None and pd_exact(-eta * (ex.B + ex.B.T)) \
                    and rhp_count(ex.A) == ex.d:
                # P = Sigma^-1 solves A^T P + P A = -eta (B + B^T) > 0 with -A Hurwitz: P > 0 exists
                return True, "V = eta I, eta(B + B^T) < 0, every eigenvalue of A has Re > 0 (exact)"
            return None, "no candidate to refine"
        Sc = np.array(core.decode(cert["data"]["Sigma"]).tolist(), dtype=float)
        S = refine_equilibrium(ex, Sc)
        if S is None:
            return None, "mpmath Newton did not converge from the candidate"
        with mpmath.workdps(MP_DPS):
            Sq = sp.Matrix(ex.d, ex.d, lambda i, j: sp.Rational(str(S[i, j])))
            if name == "pd_equilibrium_exists":
                lam = eig_sym((Sq + Sq.T) / 2)[0]
                return compare(lam, 0, strict_greater=True), f"lambda_min(Sigma*) = {mpmath.nstr(lam, 8)}"
            if name == "linearisation_hurwitz":
                J = jacobian_mp(ex, S)
                # mpmath returns (E, ER, EL) for a 1 x 1 matrix whatever left/right say
                ev = [J[0, 0]] if J.rows == 1 else mpmath.eig(J, left=False, right=False)
                worst = max(mpmath.re(z) for z in ev)
                return compare(worst, 0, strict_greater=False), f"max Re spec DF(Sigma*) = {mpmath.nstr(worst, 8)}"
            P = mpmath.inverse(S)
            Vm = mpmat(ex.V)
            M = -(P * Vm + Vm * P)
            Mq = sp.Matrix(ex.d, ex.d, lambda i, j: sp.Rational(str(M[i, j])))
            lam = eig_sym((Mq + Mq.T) / 2)[0]
            return compare(lam, 0, strict_greater=True), f"lambda_min = {mpmath.nstr(lam, 8)}"
    return None, f"no oracle for {name!r}"


def _matrix_mismatch(ex: Exact, name: str, J: sp.Matrix, doc: dict[str, Any]) -> str:
    """Non-empty when the certified matrix is not the one the hypothesis names (at the reported Sigma_inf)."""
    S_inf = None
    if name.startswith("A + V + V"):
        S_inf = (doc.get("regime") or {}).get("Sigma_inf")
    else:
        for th in doc.get("theorems", []):
            if th.get("id") == "gaussian:thm-4.1":
                S_inf = th.get("prediction", {}).get("Sigma_inf")
    if S_inf is None:
        return ""
    A, B, V, S = ex.f("A"), ex.f("B"), ex.f("V"), np.asarray(S_inf, dtype=float)
    if name.startswith("A + V + V"):
        M = A + V + V @ S @ B
    else:
        eta = float(ex.V[0, 0])
        M = A + eta * S @ B + eta * np.eye(ex.d)
    Jf = np.array(J.tolist(), dtype=float)
    if not np.allclose(Jf, M, rtol=1e-9, atol=1e-9 * (1 + np.abs(M).max())):
        return f"certified matrix differs from the named one by {np.abs(Jf - M).max():.3g}"
    return ""


def _sibling_candidate(doc: dict[str, Any], h: dict[str, Any]) -> dict[str, Any] | None:
    """The certificate with a ``Sigma`` candidate among the hypotheses of h's theorem."""
    for th in doc.get("theorems", []):
        if any(x is h for x in th.get("hypotheses", [])):
            for x in th["hypotheses"]:
                c = x.get("certificate")
                if c and "Sigma" in c.get("data", {}):
                    return c
    return None


def _walk(obj: Any, path: str):
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


def blowup_lower_bound(ex: Exact) -> mpmath.mpf:
    """A lower bound on the true blow-up time (inf if tr Sigma stays bounded by the comparison)."""
    with mpmath.workdps(MP_DPS):
        a = eig_sym(ex.A + ex.A.T)[-1]
        c = 2 * norm2(ex.V) * norm2(ex.B)
        y0 = sum(mpmat(ex.Sigma0)[i, i] for i in range(ex.d))
        if y0 <= 0 or c == 0:
            return mpmath.inf
        if c * y0 + a <= 0:
            return mpmath.inf
        if a == 0:
            return 1 / (c * y0)
        return mpmath.log1p(a / (c * y0)) / a


def judge(raw: dict[str, Any], doc: dict[str, Any], meta: dict[str, Any] | None = None,
          simulate_blowup: bool = True) -> Judgement:
    meta = meta or {}
    jd = Judgement()
    ex = Exact.from_raw(raw)
    # every certificate anywhere in the document, re-checked with the document (its subjects filled in
    # from the document's parameters, its status, claim and the entry's names re-derived)
    from flowcert.recheck import recheck_document

    dc = recheck_document(doc)
    jd.certificates += len(dc.records) + len(dc.unchecked)
    jd.bad_certificates += [f"{path} ({kind}): {why}" for path, kind, why in dc.refused]
    # every hypothesis-shaped verdict anywhere in the document
    for path, node in _walk(doc, "doc"):
        if not ({"name", "status", "method"} <= set(node)) or node.get("status") not in jd.counts:
            continue
        jd.counts[node["status"]] += 1
        if node["status"] == "unknown":
            continue
        if ex is None:
            if node["name"] == "coefficients_continuous" and "continuous" in meta:
                truth, note = meta["continuous"], "case metadata"
            elif node["name"] == "Sigma0 >= 0":
                truth, note = psd_exact(qmat(raw["Sigma0"])), "principal minors"
            elif node["name"] == "activation_identity":
                truth, note = raw.get("activation", "identity") == "identity", ""
            else:
                truth, note = None, "time-varying"
        else:
            truth, note = claim(ex, node, None, doc, meta)
        f = Finding(path, node["name"], node["status"], truth, note)
        jd.findings.append(f)
        if node["status"] == "holds":
            if truth is False:
                jd.false_holds.append(f)
            elif truth is None:
                jd.unchecked_holds.append(f)
        elif node["status"] == "fails" and truth is True:
            jd.false_fails.append(f)
    if ex is not None:
        jd.regime_errors.extend(check_regime(ex, doc.get("regime", {}), simulate_blowup))
    return jd


def check_regime(ex: Exact, reg: dict[str, Any], simulate_blowup: bool = True) -> list[str]:
    """Errors in a certified ``regime`` block (the simulation-based answers are not claims)."""
    errors: list[str] = []
    if reg.get("basis") != "certified":
        return errors
    kind = reg.get("Sigma")
    S0_nonzero = any(e != 0 for e in ex.Sigma0)
    eta = _eta(ex)
    if kind == "blows_up":
        if not (pd_exact(ex.V) and pd_exact(ex.B) and pd_exact(ex.Sigma0)):
            errors.append("blows_up certified but V > 0, B > 0, Sigma0 > 0 do not all hold")
            return errors
        bound = reg.get("blowup_time_upper_bound")
        if bound is not None:
            low = blowup_lower_bound(ex)
            if not (isinstance(bound, (int, float)) and math.isfinite(bound) and bound > 0):
                errors.append(f"blowup_time_upper_bound = {bound!r} is not a positive time")
            elif bound < low * (1 - mpmath.mpf(10) ** -40):
                errors.append(f"blowup_time_upper_bound = {bound!r} is below a proven lower bound "
                              f"{mpmath.nstr(low, 12)} of the true blow-up time")
            elif simulate_blowup and _simulable(ex) and bound < 1e4:
                S0n = float(np.linalg.norm(ex.f("Sigma0")))
                status, t, S = simulate(ex, bound * (1 + 1e-9), 1e12 * (1 + S0n))
                if status == "ok" and np.linalg.norm(S) < 1e4 * (1 + S0n):
                    errors.append(f"simulation reaches the bound {bound!r} with ||Sigma|| = {np.linalg.norm(S):.3g}: "
                                  "no blow-up before it")
        return errors
    if kind == "converges_zero":
        with mpmath.workdps(MP_DPS):
            if S0_nonzero and compare(eig_sym(ex.A + ex.A.T)[0], 0, strict_greater=True):
                errors.append("converges_zero certified but lambda_min(A + A^T) > 0: tr Sigma grows near 0")
        if eta is not None and pd_exact(ex.Sigma0) and psd_exact(-eta * (ex.B + ex.B.T)):
            k = rhp_count(ex.A)
            if k is not None and k > 0:
                errors.append(f"converges_zero certified, but V = eta I, eta(B + B^T) <= 0, Sigma0 > 0 and A has "
                              f"{k} eigenvalue(s) with Re > 0 (exact): v^T Sigma^-1 v stays bounded along a left "
                              "eigenvector, so Sigma cannot tend to 0")
        if _simulable(ex):
            S0n = float(np.linalg.norm(ex.f("Sigma0")))
            # threshold far above any transient growth of a non-normal A: only a real blow-up trips it
            status, t, S = simulate(ex, 200.0, 1e100 * (1 + S0n))
            if status == "exploded" or (status == "ok" and np.linalg.norm(S) > 10 * (1 + S0n)):
                errors.append("converges_zero certified but the simulation grows "
                              f"(||Sigma(t={t:.3g})|| = {np.linalg.norm(S):.3g})")
        return errors
    if kind in ("converges_pd", "converges_singular"):
        if eta is not None and pd_exact(ex.Sigma0) and pd_exact(-eta * (ex.B + ex.B.T)):
            k = rhp_count(ex.A)
            if k is not None:
                want = "converges_zero" if k == 0 else ("converges_pd" if k == ex.d else "converges_singular")
                if want != kind:
                    errors.append(f"Sigma = {kind} certified, but Theorem 4.1 with the exact count k = {k} "
                                  f"gives {want}")
        S_inf = reg.get("Sigma_inf")
        if S_inf is not None and _simulable(ex):
            S = _float_matrix(S_inf)
            A, B, V = ex.f("A"), ex.f("B"), ex.f("V")
            F = A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T
            nS = np.linalg.norm(S)
            scale = np.linalg.norm(A) * nS + np.linalg.norm(V) * np.linalg.norm(B) * nS**2
            if np.linalg.norm(F) > 1e-6 * scale + 1e-300:
                errors.append(f"Sigma_inf is not an equilibrium: ||F(Sigma_inf)|| = {np.linalg.norm(F):.3g} "
                              f"(scale {scale:.3g})")
    if reg.get("mu") == "diverges":
        if all(e == 0 for e in ex.mu0) and all(e == 0 for e in ex.b):
            errors.append("mu = diverges certified, but mu0 = 0 and b = 0, so mu(t) = 0 for all t")
    return errors


def _simulable(ex: Exact) -> bool:
    """Scales a float64 simulation resolves (entries between 1e-100 and 1e100 or zero)."""
    for k in ("A", "B", "V", "b", "mu0", "Sigma0"):
        a = np.abs(ex.f(k))
        nz = a[a > 0]
        if nz.size and (nz.max() > 1e100 or nz.min() < 1e-100):
            return False
    return True
