r"""Certified equilibria of the self-attention flow (1) found numerically (note 001: clustering
and polygonal points), with a certified verdict on their stability.

**Chart.** Near a numerically located :math:`x^*\in(\mathbb S^{d-1})^n` take, for each token,
:math:`m_i=\operatorname{argmax}_j|x^*_{ij}|` and the :math:`d-1` columns :math:`u_{ij}=e_j-\frac{x^*_{ij}}{|x^*_i|^2}x^*_i`
(:math:`j\ne m_i`): exactly orthogonal to :math:`x^*_i` and linearly independent. The chart is
:math:`x_i(z)=\frac{x^*_i+U_iz_i}{|x^*_i+U_iz_i|}` and the square system
:math:`g_i(z)=U_i^\top f_i(x(z))\in\mathbb R^{d-1}`, :math:`f_i=P_{x_i}\,c\,V\sum_jA_{ij}x_j`. Since
:math:`f_i\perp x_i` and :math:`\ker U_i^\top=\operatorname{span}x^*_i` with :math:`x^*_i\cdot x_i>0`,
:math:`g(z)=0\iff f(x(z))=0`.

**Existence (Krawczyk).** With :math:`Z=[-r,r]^{m}`, :math:`m=n(d-1)`, :math:`C\approx Dg(0)^{-1}`
(any matrix) and :math:`Dg(Z)` an interval enclosure of the Jacobian over :math:`Z` (forward-mode
derivatives in ``arb`` ball arithmetic, which is inclusion-monotone),

.. math::

    K(Z)=-Cg(0)+(I-C\,Dg(Z))\,Z\subset\operatorname{int}Z\ \Rightarrow\ g\ \text{has exactly one zero } z_0\in Z .

**Stability.** The pulled-back field :math:`h(z)=(U^\top Dx(z))^{-1}g(z)` has
:math:`Dh(z_0)=(U^\top Dx(z_0))^{-1}Dg(z_0)=Dx^{-1}\,L\,Dx`, similar to the tangent linearisation
:math:`L` of (1) at :math:`x(z_0)`; the ball matrix :math:`H=(U^\top Dx(Z))^{-1}Dg(Z)` contains it.
For a rational symmetric :math:`P` (from the Lyapunov equation at the midpoint) with
:math:`-(H^\top P+PH)\succ0` for every member of :math:`H` (checked as
:math:`Q_{\rm mid}-\|Q_{\rm rad}\|_F I\succ0` in exact rational :math:`LDL^\top`), no eigenvalue of
:math:`L` is imaginary and the number with positive real part equals the number of negative
eigenvalues of :math:`P` (Ostrowski–Schneider inertia theorem): ``stable`` iff :math:`P\succ0`,
else ``unstable``. Exact inertia of :math:`P` decides which.

Certificate kind ``attention_krawczyk_equilibrium``: the data (``V``, ``M``, row sum, ``X*``,
``r``, ``C``, ``P``) are re-checked from scratch by :func:`check`.

Public API: :func:`certify_equilibrium`, :func:`check`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .. import core
from ..claims import claim as canonical_claim
from ..records import JSONObject

__all__ = ["KIND", "certify_equilibrium", "check"]

KIND = "attention_krawczyk_equilibrium"
PREC = 120
#: largest chart dimension n(d-1) attempted
MAX_UNKNOWNS = 60
#: largest box half-width tried (a point farther from an equilibrium is not a Newton point)
MAX_RADIUS = 1e-4


class _Dual:
    """``arb`` value with an ``arb_mat`` (1 x m) gradient: forward-mode derivatives in ball arithmetic."""

    __slots__ = ("v", "g")

    def __init__(self, v: Any, g: Any) -> None:
        self.v, self.g = v, g

    def __add__(self, o: Any) -> "_Dual":
        if isinstance(o, _Dual):
            return _Dual(self.v + o.v, self.g + o.g)
        return _Dual(self.v + o, self.g)

    __radd__ = __add__

    def __sub__(self, o: Any) -> "_Dual":
        if isinstance(o, _Dual):
            return _Dual(self.v - o.v, self.g - o.g)
        return _Dual(self.v - o, self.g)

    def __mul__(self, o: Any) -> "_Dual":
        if isinstance(o, _Dual):
            return _Dual(self.v * o.v, self.g * o.v + o.g * self.v)
        return _Dual(self.v * o, self.g * o)

    __rmul__ = __mul__

    def __truediv__(self, o: "_Dual") -> "_Dual":
        q = self.v / o.v
        return _Dual(q, (self.g - o.g * q) * (1 / o.v))

    def exp(self) -> "_Dual":
        e = self.v.exp()
        return _Dual(e, self.g * e)

    def sqrt(self) -> "_Dual":
        s = self.v.sqrt()
        return _Dual(s, self.g * (1 / (2 * s)))


def _arb_q(q: Fraction) -> Any:
    from flint import arb, fmpq

    return arb(fmpq(q.numerator, q.denominator))


def _system(Xs: list[list[Fraction]], V: list[list[Fraction]], M: list[list[Fraction]], c: Any, r: Fraction | None
            ) -> tuple[Any, Any, Any]:
    """``(g, Dg, U^T Dx)`` as ball vector / matrices over the box ``[-r, r]^m`` (the point z = 0 if ``r`` is None)."""
    from flint import arb, arb_mat

    n, d = len(Xs), len(Xs[0])
    m = n * (d - 1)
    zero = arb_mat(1, m)
    z = []
    for k in range(m):
        e = arb_mat(1, m)
        e[0, k] = 1
        z.append(_Dual(arb(0) if r is None else arb(0, _arb_q(r).upper()), e))
    Ucols: list[list[list[Any]]] = []
    X: list[list[_Dual]] = []
    for i in range(n):
        xs = Xs[i]
        nn = sum(a * a for a in xs)
        mi = max(range(d), key=lambda j: abs(xs[j]))
        cols = [[_arb_q((Fraction(int(a == j)) - xs[j] * xs[a] / nn)) for a in range(d)] for j in range(d) if j != mi]
        Ucols.append(cols)
        raw = []
        for a in range(d):
            acc = _Dual(_arb_q(xs[a]), zero)
            for q, col in enumerate(cols):
                acc = acc + z[i * (d - 1) + q] * col[a]
            raw.append(acc)
        norm = raw[0] * raw[0]
        for a in range(1, d):
            norm = norm + raw[a] * raw[a]
        norm = norm.sqrt()
        X.append([ra / norm for ra in raw])
    Va = [[_arb_q(e) for e in row] for row in V]
    Ma = [[_arb_q(e) for e in row] for row in M]
    MX = [[sum((X[j][b] * Ma[a][b] for b in range(d)), _Dual(arb(0), zero)) for a in range(d)] for j in range(n)]  # M x_j
    g_rows: list[_Dual] = []
    ux_rows: list[Any] = []
    for i in range(n):
        E = []
        for j in range(n):
            s = X[i][0] * MX[j][0]
            for a in range(1, d):
                s = s + X[i][a] * MX[j][a]
            E.append(s.exp())
        Zs = E[0]
        for j in range(1, n):
            Zs = Zs + E[j]
        mvec = []
        for a in range(d):
            acc = E[0] * X[0][a]
            for j in range(1, n):
                acc = acc + E[j] * X[j][a]
            mvec.append(acc / Zs)
        y = [sum((mvec[b] * Va[a][b] for b in range(d)), _Dual(arb(0), zero)) * c for a in range(d)]
        gam = X[i][0] * y[0]
        for a in range(1, d):
            gam = gam + X[i][a] * y[a]
        f = [y[a] - gam * X[i][a] for a in range(d)]
        for col in Ucols[i]:
            gi = f[0] * col[0]
            xi = X[i][0] * col[0]
            for a in range(1, d):
                gi = gi + f[a] * col[a]
                xi = xi + X[i][a] * col[a]
            g_rows.append(gi)
            ux_rows.append(xi.g)
    gv = arb_mat(m, 1, [gr.v for gr in g_rows])
    J = arb_mat(m, m, [gr.g[0, k] for gr in g_rows for k in range(m)])
    B = arb_mat(m, m, [row[0, k] for row in ux_rows for k in range(m)])
    return gv, J, B


def _mid_float(A: Any) -> np.ndarray:
    return np.array([[float(A[i, j].mid()) for j in range(A.ncols())] for i in range(A.nrows())])


def _frac_mat(A: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.atleast_2d(A)]


def _mat_arb(A: list[list[Fraction]]) -> Any:
    from flint import arb_mat

    return arb_mat(len(A), len(A[0]), [_arb_q(x) for row in A for x in row])


def _upper_frac(x: Any) -> Fraction | None:
    """An exact rational upper bound of the ball ``x`` (None if it is not finite)."""
    u = x.upper()
    if not u.is_finite():
        return None
    m, e = u.mid().man_exp()
    return Fraction(int(m)) * Fraction(2) ** int(e)


def _mid_frac(x: Any) -> Fraction:
    m, e = x.mid().man_exp()
    return Fraction(int(m)) * Fraction(2) ** int(e)


def _verify(Xs, V, M, c_sqrt_d: int | None, r: Fraction, C: list[list[Fraction]], P: list[list[Fraction]]
            ) -> tuple[str, str]:
    """Run every check; ``(verdict, reason)`` with verdict ``stable``/``unstable``/``unknown``."""
    from flint import arb, arb_mat, ctx

    old = ctx.prec
    try:
        ctx.prec = PREC
        c = arb(1) if c_sqrt_d is None else 1 / arb(c_sqrt_d).sqrt()
        g0, _, _ = _system(Xs, V, M, c, None)
        _, J, B = _system(Xs, V, M, c, r)
        m = J.nrows()
        Ca = _mat_arb(C)
        Zb = arb_mat(m, 1, [arb(0, _arb_q(r).upper()) for _ in range(m)])
        I = arb_mat(m, m, [arb(int(i == j)) for i in range(m) for j in range(m)])
        K = -(Ca * g0) + (I - Ca * J) * Zb
        bounds = [_upper_frac(abs(K[k, 0])) for k in range(m)]
        if any(b is None or not b < r for b in bounds):
            worst = "inf" if any(b is None for b in bounds) else f"{float(max(bounds)):.3e}"
            return "unknown", f"Krawczyk operator not inside the box (max |K| = {worst} >= r = {float(r):.3e})"
        try:
            H = B.solve(J)
        except (ZeroDivisionError, ValueError):
            return "unknown", "the chart's U^T Dx could not be inverted in ball arithmetic"
        Pa = _mat_arb(P)
        Qm = -(H.transpose() * Pa + Pa * H)
        Qmid = [[(_mid_frac(Qm[i, j]) + _mid_frac(Qm[j, i])) / 2 for j in range(m)] for i in range(m)]  # Q is symmetric
        rads = [_upper_frac(Qm[i, j].rad()) for i in range(m) for j in range(m)]
        if any(x is None for x in rads):
            return "unknown", "the ball Lyapunov form is not finite"
        rho = _sqrt_up(sum(x * x for x in rads))
        shifted = [[Qmid[i][j] - (rho if i == j else 0) for j in range(m)] for i in range(m)]
        if not core.is_pd(shifted):
            return "unknown", ("unique equilibrium in the box (Krawczyk), but -(H^T P + P H) is not certified positive "
                               "definite over the ball Jacobian (near-imaginary tangent eigenvalues?)")
        npos, nneg, nzero = core.inertia_certificate(P, "P").data["inertia"]
        if nzero:
            return "unknown", "P is singular"
        if nneg == 0:
            return "stable", (f"unique equilibrium within r = {float(r):.1e} of X* (Krawczyk, chart coordinates); P > 0 and "
                              "-(H^T P + P H) > 0 over the ball Jacobian: tangent spectrum in Re < 0")
        return "unstable", (f"unique equilibrium within r = {float(r):.1e} of X* (Krawczyk); -(H^T P + P H) > 0 and P has "
                            f"{nneg} negative eigenvalue(s): as many tangent eigenvalues with Re > 0 (Ostrowski-Schneider)")
    finally:
        ctx.prec = old


def _sqrt_up(q: Fraction) -> Fraction:
    from .multistability import sqrt_up

    return sqrt_up(q)


def _encode(M: list[list[Fraction]]) -> list[list[str]]:
    return [[str(x) for x in row] for row in M]


def _decode(M: list[list[str]]) -> list[list[Fraction]]:
    return [[Fraction(x) for x in row] for row in M]


def certify_equilibrium(X: np.ndarray, V: Any, M: Any, sqrt_d: int | None = None
                        ) -> tuple[str, str, core.Certificate | None]:
    r"""Certified verdict at a numerically located equilibrium ``X`` (n, d) of (1) with one
    constant head, full attention, unit sphere, rows summing to 1 (``sqrt_d`` None) or
    :math:`1/\sqrt{\text{sqrt\_d}}`. ``V``, ``M`` (:math:`\beta Q^\top K`) exact (rational data).
    Returns ``(verdict, reason, certificate)``; the certificate is None unless re-checked."""
    from scipy.linalg import solve_continuous_lyapunov

    X = np.asarray(X, float)
    n, d = X.shape
    if n * (d - 1) > MAX_UNKNOWNS:
        return "unknown", f"chart dimension n(d-1) = {n * (d - 1)} > {MAX_UNKNOWNS}: not attempted", None
    Xs = _frac_mat(X)
    Vq, Mq = core.fractions(V), core.fractions(M)
    from flint import arb, ctx

    old = ctx.prec
    try:
        ctx.prec = PREC
        c = arb(1) if sqrt_d is None else 1 / arb(sqrt_d).sqrt()
        g0, J0, B0 = _system(Xs, Vq, Mq, c, None)
        Jm, Bm = _mid_float(J0), _mid_float(B0)
        g = np.array([float(g0[k, 0].mid()) for k in range(g0.nrows())])
    finally:
        ctx.prec = old
    try:
        Cf = np.linalg.inv(Jm)
        Hm = np.linalg.solve(Bm, Jm)
        Pf = solve_continuous_lyapunov(Hm.T, -np.eye(len(Hm)))
    except (np.linalg.LinAlgError, ValueError) as exc:
        return "unknown", f"singular Jacobian at the located point ({exc}): not isolated or not hyperbolic", None
    if not np.all(np.isfinite(Pf)):
        return "unknown", "no Lyapunov solution at the midpoint (eigenvalues summing to 0)", None
    Pf = (Pf + Pf.T) / 2
    C = _frac_mat(Cf)
    P = [[Fraction(float(Pf[i, j])) for j in range(len(Pf))] for i in range(len(Pf))]
    P = [[(P[i][j] + P[j][i]) / 2 for j in range(len(P))] for i in range(len(P))]
    step = float(np.abs(Cf @ g).max())
    last = ("unknown", "no radius tried", None)
    if not step <= MAX_RADIUS:
        return "unknown", f"the Newton step from the located point is {step:.2e}: not near an equilibrium", None
    for r in sorted({min(max(step * f, 1e-13), MAX_RADIUS) for f in (4.0, 64.0, 1024.0)}):
        rq = Fraction(r).limit_denominator(2**60) or Fraction(1, 10**13)
        verdict, why = _verify(Xs, Vq, Mq, sqrt_d, rq, C, P)
        if verdict == "unknown" and why.startswith("Krawczyk"):
            last = (verdict, why, None)
            continue
        if verdict == "unknown":
            return verdict, why, None
        data = {"X": _encode(Xs), "V": _encode(Vq), "M": _encode(Mq), "sqrt_d": sqrt_d, "r": str(rq),
                "C": _encode(C), "P": _encode(P), "claim": verdict}
        cert = core.Certificate("attention_krawczyk_equilibrium", canonical_claim("attention_krawczyk_equilibrium", data) or "",
                                data, "Krawczyk operator + ball Lyapunov inertia test (python-flint arb, exact LDL^T)")
        return verdict, why, cert
    return last


def check(data: JSONObject) -> bool:
    """Re-check of a ``attention_krawczyk_equilibrium`` certificate from its data alone."""
    verdict, _ = _verify(_decode(data["X"]), _decode(data["V"]), _decode(data["M"]), data.get("sqrt_d"),
                         Fraction(data["r"]), _decode(data["C"]), _decode(data["P"]))
    return verdict == data["claim"] and verdict in ("stable", "unstable")

