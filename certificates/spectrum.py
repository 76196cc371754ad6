r"""Certified location of a spectrum relative to the imaginary axis (system-agnostic).

*Hurwitz*: a rational :math:`P` with :math:`P\succeq\epsilon I` and
:math:`J^\top P+PJ\preceq-\epsilon I`, :math:`\epsilon>0`, proves
:math:`\max\operatorname{Re}\lambda(J)<0` (Lyapunov). Candidates for :math:`P` come from the
Lyapunov equation :math:`J^\top P+PJ=-I` and, only if that one fails its check, from the cvxpy
LMI :math:`P\succeq I,\ J^\top P+PJ\preceq-I`; each is rounded to dyadic rationals and
re-checked in exact arithmetic with half its observed margin.

*Unstable*: :math:`J^\top P+PJ\prec0` and :math:`v^\top Pv<0` prove an eigenvalue with
:math:`\operatorname{Re}\lambda>0` (inertia theorem of Ostrowski and Schneider).

*Exact spectral inertia* (fallback on exact data, size :math:`\le` :data:`EXACT_INERTIA_MAX`):
the numbers :math:`(n_+,n_-,n_0)` of eigenvalues with :math:`\operatorname{Re}\lambda>0`, :math:`<0`,
:math:`=0` (multiplicities counted) of a rational :math:`J`, from its exact characteristic
polynomial :math:`p=c\prod_i f_i^{m_i}` (SymPy's Berkowitz polynomial and square-free
factorisation). For each square-free :math:`f_i`, write :math:`f_i(iy)=R(y)+iI(y)`; its roots on the
imaginary axis are the :math:`iy` with :math:`y` a *real* root of :math:`g=\gcd(R,I)` (a Sturm count,
SymPy), each simple. The other roots are enclosed in certified, pairwise disjoint complex balls
(flint/Arb, :math:`\texttt{arb\_fmpz\_poly\_complex\_roots}`), refined until exactly as many balls
meet the imaginary axis as :math:`g` has real roots: then those balls are the axis roots, and each
other ball lies strictly on one side. So

.. math::

    n_\pm=\sum_i m_i\,\#\{\text{balls of }f_i\text{ with }\pm\operatorname{Re}>0\},\qquad
    n_0=\sum_i m_i\,\#\{y\in\mathbb R: g_i(y)=0\}.

It decides what the Lyapunov route cannot: eigenvalues summing to zero (singular Lyapunov
operator), spectra exactly on the imaginary axis (rotations, :math:`\pm i`, nilpotent blocks), and
matrices whose Lyapunov margin is below float resolution. Certificate kind ``spectrum_inertia``; its
checker re-derives the counts by another algorithm (Cauchy indices of :math:`p(iy)` after splitting
off :math:`\gcd(p(x),p(-x))`, with flint's characteristic polynomial and a Jordan rank check of the
zero eigenvalue: :mod:`flowcert.certificates.cauchy_index`).

(An earlier version counted roots in two closed half-plane rectangles and took
:math:`n_0=N_{\rm right}+N_{\rm left}-\deg p`; SymPy's rectangle count does not count a multiple root on
the shared edge with its multiplicity in both, which gave :math:`(1,1,1)` for the :math:`3\times3` zero
matrix. The checker called the same function, so the error re-checked clean.)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterator

import flint
import numpy as np
import sympy as sp

from . import core, lmi
from .cauchy_index import inertia_by_cauchy_index
from .records import JSONObject


def dyadic(P: np.ndarray, bits: int = 30) -> Any:
    """Symmetric rational rounding of ``P`` to ``bits`` bits relative to its largest entry (``fmpq_mat``)."""
    scale = 2.0 ** math.floor(math.log2(max(float(np.abs(P).max()), 1e-300)))
    Q = np.round(P / scale * 2**bits)
    Q = Q + Q.T  # exact: integers below 2**53; halved in the unit below
    unit = Fraction(scale) / 2 ** (bits + 1)
    return core.qmat(Q) * flint.fmpq(unit.numerator, unit.denominator)


def lyapunov_candidates(J: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    r"""Lyapunov matrices for a (numerically) Hurwitz ``J``, lazily: the equation, then the SDP.

    The equation :math:`J^\top P+PJ=-I` (SciPy, Bartels–Stewart) suffices whenever its solution
    survives the re-check; the LMI (more robust near the margin) is solved only if it does not.
    """
    P_eq = lmi.lyapunov_equation(J)
    if P_eq is not None and np.linalg.eigvalsh(P_eq).min() > 0:
        yield P_eq / np.linalg.eigvalsh(P_eq).min(), "Lyapunov equation (SciPy)"
    sol = lmi.solve_lyapunov_lmi(J)
    if sol.P is not None:
        yield sol.P, f"cvxpy LMI ({sol.solver}, status {sol.status}, {sol.seconds:.3f}s)"


def half_margin(J: np.ndarray, P: np.ndarray) -> sp.Rational:
    """Half the observed margin :math:`\\min(1,\\lambda_{\\min}(-(J^\\top P+PJ)))`, as a rational."""
    lam = float(np.linalg.eigvalsh(-(J.T @ P + P @ J)).min())
    if not lam > 0:
        return sp.Integer(0)
    return sp.Rational(1, 2) * min(sp.Integer(1), sp.Rational(Fraction(lam).limit_denominator(2**20)))


def spectrum_verdict(
    name: str,
    J: np.ndarray,
    J_exact: Any,
    *,
    stable_kind: str = "lyapunov",
    stable_claim: str = "every eigenvalue of J has negative real part",
    unstable_kind: str = "unstable",
    extra: JSONObject | None = None,
    exact_fallback: bool = False,
) -> core.HypothesisResult:
    """``holds`` if J is certified Hurwitz, ``fails`` if certified unstable, else ``unknown``.

    ``stable_kind``/``extra`` let a system wrap the Lyapunov data in a stronger claim (for
    example a robust one over an existence ball); the data always carry ``P`` and ``margin``.
    ``exact_fallback``: ``J_exact`` is the matrix in question itself (the user's exact data, not a
    rounded derived quantity), so when no Lyapunov certificate passes, the exact spectral inertia
    (:func:`exact_verdict`) decides, up to :data:`EXACT_INERTIA_MAX`.
    """
    eig = np.linalg.eigvals(J)
    k = int(np.argmax(eig.real))
    abscissa = float(eig.real[k])
    detail = f"spectral abscissa {abscissa:.6g} (eigenvalue {complex(eig[k]):.6g})"
    if abscissa < 0:
        for P, method in lyapunov_candidates(J):
            margin = half_margin(J, P)
            if margin <= 0:
                continue
            data = dict(extra) if extra else {"J": core.encode(J_exact)}
            data.update(P=core.encode(dyadic(P)), margin=str(margin))
            res = core.certified(name, "holds", core.Certificate(stable_kind, stable_claim, data), -abscissa,
                                 f"{method}; exact re-check", detail)
            if res.status == "holds":
                return res
    elif abscissa > 0:
        candidates = [(lmi.lyapunov_equation(J), "Lyapunov equation (SciPy)")]
        if candidates[0][0] is None or np.linalg.eigvalsh(-(J.T @ candidates[0][0] + candidates[0][0] @ J)).min() <= 0:
            sol = lmi.solve_inertia_lmi(J)
            candidates.append((sol.P, f"cvxpy inertia LMI ({sol.solver}, status {sol.status})"))
        for P, method in candidates:
            if P is None:
                continue
            w, U = np.linalg.eigh(P)
            v = [str(sp.Rational(Fraction(float(x)).limit_denominator(2**30))) for x in U[:, 0] / np.abs(U[:, 0]).max()]
            data = dict(extra) if extra else {}
            data.update(J=core.encode(J_exact), P=core.encode(dyadic(P)), v=v)
            cert = core.Certificate(unstable_kind, "J has an eigenvalue with positive real part", data)
            res = core.certified(name, "fails", cert, -abscissa, f"inertia theorem, {method}; exact re-check", detail)
            if res.status == "fails":
                return res
    if exact_fallback and extra is None:  # J_exact is the matrix itself: decide exactly
        for verdict in (kernel_verdict, exact_verdict):
            res = verdict(name, J, J_exact, detail)
            if res is not None and res.status != "unknown":
                return res
    return core.HypothesisResult(name, "unknown", -abscissa, "no certificate passed its exact re-check", None,
                                 f"{detail}; near-marginal or ill-conditioned")


EXACT_INERTIA_MAX = 8  # exact characteristic polynomial + root counting: ~0.2 s at d = 8


def _axis_count(f: sp.Poly) -> int:
    """Distinct roots of the square-free real ``f`` on the imaginary axis: real roots of gcd(Re f(iy), Im f(iy))."""
    y = sp.Dummy("y", real=True)
    a = list(reversed(f.all_coeffs()))  # a[k]: coefficient of x^k; i^k = (-1)^(k // 2) i^(k % 2)
    R = sp.Poly(sum((a[k] * (-1) ** (k // 2) * y**k for k in range(0, len(a), 2)), sp.Integer(0)), y, domain="QQ")
    I = sp.Poly(sum((a[k] * (-1) ** (k // 2) * y**k for k in range(1, len(a), 2)), sp.Integer(0)), y, domain="QQ")
    g = sp.gcd(R, I)
    return int(g.count_roots()) if g.degree() > 0 else 0


def _side_counts(f: sp.Poly, on_axis: int) -> tuple[int, int]:
    """Roots of the square-free ``f`` with Re > 0 and Re < 0, from certified Arb balls refined until
    exactly ``on_axis`` of them meet the imaginary axis."""
    fq = flint.fmpq_poly([flint.fmpq(int(c.p), int(c.q)) for c in reversed(f.all_coeffs())])
    saved = flint.ctx.prec
    try:
        for prec in (64, 128, 256, 512, 1024, 2048, 4096, 8192):
            flint.ctx.prec = prec
            balls = [r for r, m in fq.complex_roots() for _ in range(m)]
            if len(balls) != f.degree():
                raise ArithmeticError("root enclosure lost a root")
            pos = sum(bool(r.real > 0) for r in balls)
            neg = sum(bool(r.real < 0) for r in balls)
            if len(balls) - pos - neg == on_axis:
                return pos, neg
    finally:
        flint.ctx.prec = saved
    raise ArithmeticError("root enclosures did not separate from the imaginary axis at 8192 bits")


def exact_inertia(J: sp.Matrix) -> tuple[int, int, int]:
    r"""Exact :math:`(n_+,n_-,n_0)` of a rational square matrix: eigenvalues with real part
    :math:`>0`, :math:`<0`, :math:`=0`, counted with multiplicity (see the module docstring).

    Raises
    ------
    ArithmeticError
        The root enclosures did not separate (never seen; callers then report ``unknown``).
    """
    n = J.rows
    if n == 0:
        return 0, 0, 0
    x = sp.Dummy("x")
    p = sp.Poly([sp.Rational(c) for c in J.charpoly().all_coeffs()], x, domain="QQ")
    n_pos = n_neg = n_zero = 0
    for f, m in sp.sqf_list(p)[1]:
        if f.degree() == 0:
            continue
        axis = _axis_count(f)
        pos, neg = _side_counts(f, axis)
        n_pos, n_neg, n_zero = n_pos + m * pos, n_neg + m * neg, n_zero + m * axis
    if n_pos + n_neg + n_zero != n:
        raise ArithmeticError("root counts do not add up to the degree")
    return n_pos, n_neg, n_zero


def inertia_certificate(J_exact: Any, what: str = "J") -> core.Certificate | None:
    """``spectrum_inertia`` certificate of a rational matrix, or None beyond :data:`EXACT_INERTIA_MAX`."""
    if core.qmat(J_exact).nrows() > EXACT_INERTIA_MAX:
        return None
    J_exact = core.rational_matrix(J_exact)
    p, n, z = exact_inertia(J_exact)
    return core.Certificate(
        "spectrum_inertia",
        f"{what} has {p} eigenvalues with Re > 0, {n} with Re < 0 and {z} on the imaginary axis",
        {"J": core.encode(J_exact), "inertia": [p, n, z]}, checker="exact-cauchy-index")


def _check_spectrum_inertia(data: dict[str, Any]) -> bool:
    """Re-derives the counts by Cauchy indices (:mod:`.cauchy_index`), not by root isolation (a diagonal J:
    the signs of its entries, its eigenvalues)."""
    from .diagonal import diagonal_form

    if (D := diagonal_form(data["J"])) is not None:
        return list(D.inertia()) == [int(x) for x in data["inertia"]]
    J = core.qmat(data["J"])
    return (J.nrows() == J.ncols() <= EXACT_INERTIA_MAX
            and list(inertia_by_cauchy_index(J)) == [int(x) for x in data["inertia"]])


def exact_verdict(name: str, J: np.ndarray, J_exact: Any, detail: str) -> core.HypothesisResult | None:
    """Hurwitz verdict from the exact spectral inertia (``holds``/``fails``), None beyond the size cap."""
    cert = inertia_certificate(J_exact)
    if cert is None:
        return None
    p, n, z = cert.data["inertia"]
    eig = np.linalg.eigvals(J)
    margin = -float(eig.real.max()) if eig.size else None
    if z:
        margin = 0.0  # exactly on the imaginary axis
    status = "holds" if p == 0 and z == 0 else "fails"
    return core.certified(name, status, cert, margin, "exact characteristic polynomial, Sturm root counting",
                          f"{detail}; exact inertia (n+, n-, n0) = ({p}, {n}, {z})")


def kernel_verdict(name: str, J: np.ndarray, J_exact: Any, detail: str) -> core.HypothesisResult | None:
    r"""``fails`` when :math:`J` is exactly singular with a zero column :math:`j` (:math:`Je_j=0`, so
    :math:`0\in\operatorname{spec}J` and :math:`J` is not Hurwitz), at any size; None otherwise.

    This decides the common exact case beyond the exact-inertia size (:math:`A=0` in a pretrained
    head of width 384) in :math:`O(n^2)`."""
    Jq = core.qmat(J_exact)
    zero = np.flatnonzero(~np.any(np.asarray(J, float) != 0, axis=0))
    for j in zero[:1]:
        v = [0] * Jq.ncols()
        v[int(j)] = 1
        cert = core.Certificate("zero_eigenvalue", "J v = 0 for a rational v != 0: 0 is an eigenvalue of J",
                                {"J": core.encode(Jq), "v": [str(x) for x in v]})
        return core.certified(name, "fails", cert, 0.0, "exact kernel vector (a zero column), 0 in spec(J)",
                              f"{detail}; J e_{int(j) + 1} = 0 exactly")
    return None


def _check_zero_eigenvalue(data: dict[str, Any]) -> bool:
    from .diagonal import diagonal_form

    if (D := diagonal_form(data["J"])) is not None:
        return D.kills(data["v"])
    J, v = core.qmat(data["J"]), core.qmat([[x] for x in data["v"]])
    if J.nrows() != J.ncols() or v.nrows() != J.ncols() or v == core.qmat([[0]] * v.nrows()):
        return False
    return J * v == core.qmat([[0]] * v.nrows())


def _diagonal_hurwitz(name: str, J: Any) -> core.HypothesisResult:
    r"""Exact verdict on :math:`\max\operatorname{Re}\lambda(J)<0` for a diagonal J (its eigenvalues are its
    entries): a ``spectrum_inertia`` certificate of its diagonal form either way."""
    p, n, z = J.inertia()
    data = {"J": J.to_json(), "inertia": [p, n, z]}
    cert = core.Certificate("spectrum_inertia", f"J has {p} eigenvalues with Re > 0, {n} with Re < 0 and {z} on the "
                            "imaginary axis", data)
    status = "holds" if p == 0 and z == 0 else "fails"
    return core.certified(name, status, cert, -max(J.floats()) if J.n else None, "eigenvalues of a diagonal matrix (exact)")


@core.memoised
def hurwitz(name: str, J: np.ndarray, *, exact_data: bool = True) -> core.HypothesisResult:
    """Certified verdict on :math:`\\max\\operatorname{Re}\\lambda(J)<0` for float data J (exact).

    ``exact_data=False`` for a matrix computed in floating point from other data (then only a
    Lyapunov certificate with a margin decides, never the exact spectrum of the rounded matrix). A
    :class:`~.diagonal.Diagonal` J is decided by its entries (``spectrum_inertia`` of its diagonal form).
    """
    from .diagonal import Diagonal

    if isinstance(J, Diagonal):
        return _diagonal_hurwitz(name, J)
    return spectrum_verdict(name, np.asarray(J, float), core.qmat(np.asarray(J, float)), exact_fallback=exact_data)


@core.memoised
def unstable_count(A: np.ndarray) -> tuple[int | None, core.Certificate | None]:
    r"""Certified number of eigenvalues of A with :math:`\operatorname{Re}\lambda>0`.

    If :math:`A^\top P+PA\prec0` (checked exactly), A has no imaginary-axis eigenvalue and the
    count equals the number of negative eigenvalues of P (Ostrowski–Schneider), read off an
    exact LDL^T. When no such P passes (eigenvalues summing to zero make the Lyapunov operator
    singular; imaginary-axis eigenvalues admit none), the exact spectral inertia decides
    (``spectrum_inertia`` certificate, :func:`exact_inertia`), up to :data:`EXACT_INERTIA_MAX`;
    imaginary-axis eigenvalues are then allowed and counted in the certificate's ``inertia``.
    Returns (None, None) only beyond that size.
    """
    from . import exact

    Af = core.qmat(np.asarray(A, float))  # exact data, flint (cheap at any size)

    def fallback() -> tuple[int | None, core.Certificate | None]:
        if Af.nrows() > EXACT_INERTIA_MAX:
            return None, None
        cert = inertia_certificate(core.rational_matrix(Af), "A")
        if cert is None or not core.recheck(cert):
            return None, None
        return int(cert.data["inertia"][0]), cert

    def candidates() -> Iterator[np.ndarray]:
        P_eq = lmi.lyapunov_equation(A)
        if P_eq is not None and np.all(np.isfinite(P_eq)):
            yield P_eq
        if Af.nrows() > EXACT_INERTIA_MAX:  # small sizes go to the exact count, which needs no margin
            sol = lmi.solve_inertia_lmi(A)  # tried when the equation's P does not pass (singular operator)
            if sol.P is not None:
                yield sol.P

    for P in candidates():
        Pq = dyadic(P)
        if not core.is_pd(core.lyapunov_form(Af, Pq)):
            continue
        got = exact.inertia(core.fractions(Pq))
        if got is None or got[2]:
            continue
        n_neg = got[1]
        cert = core.Certificate("unstable_count", f"A has exactly {n_neg} eigenvalues with positive real part",
                                {"J": core.encode(Af), "P": core.encode(Pq), "count": n_neg})
        if core.recheck(cert):
            return n_neg, cert
    return fallback()


def _check_unstable_count(data: dict[str, Any]) -> bool:
    """Ostrowski-Schneider with the checkers' own inertia (:mod:`.second_opinion`), not the producer's LDL^T."""
    from . import second_opinion

    J, P = core.qmat(data["J"]), core.qmat(data["P"])
    if not second_opinion.is_pd(core.lyapunov_form(J, P)):
        return False
    got = second_opinion.symmetric_inertia(P)
    return got is not None and got[2] == 0 and got[1] == int(data["count"])


# ---------------------------------------------------------------------------------------
# Detectability of (Q, A), Q >= 0 (PBH in subspace form), exact
# ---------------------------------------------------------------------------------------


def unobservable_subspace(A: sp.Matrix, Q: sp.Matrix) -> sp.Matrix:
    r"""Exact basis (columns) of :math:`\mathcal N=\bigcap_{k<d}\ker(QA^k)`, the unobservable
    subspace of :math:`(H,A)` for any :math:`H` with :math:`H^\top H=Q` (:math:`\ker H=\ker Q`)."""
    d = A.rows
    blocks, X = [], Q
    for _ in range(d):
        blocks.append(X)
        X = X * A
    null = sp.Matrix.vstack(*blocks).nullspace()
    return sp.Matrix.hstack(*null) if null else sp.zeros(d, 0)


def restricted_inertia(A: sp.Matrix, N: sp.Matrix) -> tuple[int, int, int]:
    r"""Exact spectral inertia of :math:`A|_{\mathcal N}` (``N``: a basis of an A-invariant subspace),
    :math:`A|_{\mathcal N}=(N^\top N)^{-1}N^\top AN`."""
    if N.cols == 0:
        return 0, 0, 0
    return exact_inertia((N.T * N).inv() * N.T * A * N)


def detectability_certificate(A: sp.Matrix, Q: sp.Matrix) -> core.Certificate | None:
    r"""Exact verdict on detectability of :math:`(H,A)`, :math:`H^\top H=Q\succeq0` (PBH test).

    :math:`(H,A)` is detectable iff no eigenvector :math:`x` of :math:`A` with
    :math:`\operatorname{Re}\lambda\ge0` has :math:`Hx=0`, i.e. iff :math:`A` restricted to its
    largest invariant subspace inside :math:`\ker Q` (the unobservable subspace) is Hurwitz.
    The certificate (kind ``detectability``) carries ``A``, ``Q``, the verdict and the exact
    inertia of the restriction; the checker recomputes all of them. None beyond
    :data:`EXACT_INERTIA_MAX` or when Q is not PSD (then H does not exist).
    """
    if A.rows > EXACT_INERTIA_MAX or Q != Q.T or not core.is_psd(Q):
        return None
    N = unobservable_subspace(A, Q)
    p, n, z = restricted_inertia(A, N)
    ok = p == 0 and z == 0
    return core.Certificate(
        "detectability",
        ("(H, A) is detectable" if ok else "(H, A) is not detectable")
        + f": the unobservable subspace has dimension {N.cols}, A on it has inertia ({p}, {n}, {z})",
        {"A": core.encode(A), "Q": core.encode(Q), "detectable": ok, "dimension": N.cols, "inertia": [p, n, z]},
        checker="exact-flint-kernel-cauchy-index")


def _flint_kernel(O: Any) -> Any:
    """Exact basis (columns, ``fmpq_mat``) of ker O from flint's reduced row echelon form."""
    R, rank = O.rref()
    d = O.ncols()
    pivots = []
    for i in range(rank):
        pivots.append(next(j for j in range(d) if R[i, j] != 0))
    free = [j for j in range(d) if j not in pivots]
    N = flint.fmpq_mat(d, len(free))
    for c, j in enumerate(free):
        N[j, c] = 1
        for i, pj in enumerate(pivots):
            N[pj, c] = -R[i, j]
    return N


def _check_detectability(data: dict[str, Any]) -> bool:
    """Re-derives the unobservable subspace with flint (rref of the stacked Q A^k, not SymPy's
    nullspace), checks it is A-invariant exactly, and the inertia of A on it by Cauchy indices."""
    A, Q = core.qmat(data["A"]), core.qmat(data["Q"])
    d = A.nrows()
    if A.ncols() != d or Q.nrows() != d or Q.ncols() != d or d > EXACT_INERTIA_MAX:
        return False
    from . import second_opinion

    if not second_opinion.is_psd(Q):
        return False
    rows, X = [], Q
    for _ in range(d):
        rows.extend(X.tolist())
        X = X * A
    N = _flint_kernel(flint.fmpq_mat(rows))
    m = N.ncols()
    if m:
        Nt = N.transpose()
        M = (Nt * N).solve(Nt * A * N)
        if A * N != N * M:  # the kernel must be A-invariant; else the restriction is meaningless
            return False
        p, n, z = inertia_by_cauchy_index(M)
    else:
        p, n, z = 0, 0, 0
    return (m == int(data["dimension"]) and [p, n, z] == [int(x) for x in data["inertia"]]
            and bool(data["detectable"]) == (p == 0 and z == 0))
