r"""Spectral inertia of a rational matrix by Cauchy indices (Routh–Hurwitz in Sturm form), exact over :math:`\mathbb Q`.

This is the *checker's* algorithm for the ``spectrum_inertia`` and ``detectability`` certificates; the
producer (:func:`flowcert.certificates.spectrum.exact_inertia`) isolates the roots instead, so the two
share no step beyond exact polynomial arithmetic.

Let :math:`p=\det(xI-J)\in\mathbb Q[x]` (flint's characteristic polynomial) and
:math:`(n_+,n_-,n_0)` its numbers of roots with :math:`\operatorname{Re}>0`, :math:`<0`, :math:`=0`.

1. :math:`d=\gcd(p(x),p(-x))` collects every root :math:`\lambda` whose mirror :math:`-\lambda` is a
   root too (with multiplicity :math:`\min(m_\lambda,m_{-\lambda})` for each), so it holds every
   imaginary-axis root with its full multiplicity (:math:`m_{-iy}=m_{\overline{iy}}=m_{iy}`), and
   :math:`r=p/d` has no imaginary-axis root and no mirrored pair.
2. :math:`d(-x)=\pm d(x)`, so :math:`d(x)=x^kD(x^2)` with :math:`D(0)\ne0`. A root :math:`z` of
   :math:`D` gives the pair :math:`\pm\sqrt z`: on the imaginary axis iff :math:`z<0` is real,
   otherwise one root on each side. Hence
   :math:`n_0=k+2N_{<0}(D)`, with :math:`N_{<0}(D)` the negative real roots of :math:`D` counted with
   multiplicity (:math:`\sum_j\#\{z<0: D_j(z)=0\}` over :math:`D_1=D`, :math:`D_{j+1}=\gcd(D_j,D_j')`,
   each a Sturm count), and :math:`d` adds :math:`(\deg d-n_0)/2` roots to each open half-plane.
3. For :math:`r` of degree :math:`m` write :math:`r(iy)=U(y)+iV(y)` (real :math:`U,V`). With no root on
   the axis, :math:`\Delta_{y=-\infty}^{\infty}\arg r(iy)=\pi(m_--m_+)`, and the argument principle in
   Cauchy-index form gives

   .. math::

       m_+-m_-=\operatorname{Ind}_{-\infty}^{\infty}\frac VU\ (m\ \text{even}),\qquad
       m_--m_+=\operatorname{Ind}_{-\infty}^{\infty}\frac UV\ (m\ \text{odd}),

   the index read off the sign variations of the Euclidean (Sturm) sequence
   :math:`f_0,f_1,f_{i+1}=-\operatorname{rem}(f_{i-1},f_i)`:
   :math:`\operatorname{Ind}(f_1/f_0)=\operatorname{Var}(-\infty)-\operatorname{Var}(+\infty)`.

A Jordan-invariant check closes it: the algebraic multiplicity of the eigenvalue 0,
:math:`n-\operatorname{rank}J^n` (flint's exact rank), must equal :math:`k`.
"""

from __future__ import annotations

from typing import Any

import flint

__all__ = ["inertia_by_cauchy_index", "cauchy_index", "negative_real_roots"]


def _sign_at(q: Any, where: str) -> int:
    """Sign of ``q`` at ``+inf``, ``-inf`` or ``0`` (0 for the zero polynomial or a root at 0)."""
    if q.is_zero():
        return 0
    if where == "0":
        c = q[0]
        return (c > 0) - (c < 0)
    lead = q.leading_coefficient()
    s = (lead > 0) - (lead < 0)
    return s if where == "+inf" or q.degree() % 2 == 0 else -s


def _variations(seq: list[Any], where: str) -> int:
    signs = [s for s in (_sign_at(q, where) for q in seq) if s]
    return sum(a != b for a, b in zip(signs, signs[1:]))


def _sturm_sequence(f0: Any, f1: Any) -> list[Any]:
    seq = [f0, f1]
    while not seq[-1].is_zero():
        seq.append(-(seq[-2] % seq[-1]))
    return seq[:-1]


def cauchy_index(num: Any, den: Any) -> int:
    r""":math:`\operatorname{Ind}_{-\infty}^{+\infty}(\mathtt{num}/\mathtt{den})` (``fmpq_poly``; ``den`` nonzero):
    the jumps from :math:`-\infty` to :math:`+\infty` minus those from :math:`+\infty` to :math:`-\infty`."""
    if num.is_zero():
        return 0
    seq = _sturm_sequence(den, num)
    return _variations(seq, "-inf") - _variations(seq, "+inf")


def negative_real_roots(D: Any) -> int:
    """Real roots of ``D`` in :math:`(-\\infty, 0)`, counted with multiplicity (requires :math:`D(0)\\ne0`)."""
    total, Dj = 0, D
    while Dj.degree() > 0:
        seq = _sturm_sequence(Dj, Dj.derivative())
        total += _variations(seq, "-inf") - _variations(seq, "0")
        Dj = Dj.gcd(Dj.derivative())
    return total


def _axis_parts(r: Any) -> tuple[Any, Any]:
    """``U, V`` with :math:`r(iy)=U(y)+iV(y)`."""
    c = [r[k] for k in range(r.degree() + 1)]
    U = [c[k] * (-1) ** (k // 2) if k % 2 == 0 else 0 for k in range(len(c))]
    V = [c[k] * (-1) ** (k // 2) if k % 2 == 1 else 0 for k in range(len(c))]
    return flint.fmpq_poly(U), flint.fmpq_poly(V)


def _zero_multiplicity(J: Any) -> int:
    """Algebraic multiplicity of the eigenvalue 0: :math:`n-\\operatorname{rank}J^n`."""
    n = J.nrows()
    return n - (J ** n).rank() if n else 0


def inertia_by_cauchy_index(J: Any) -> tuple[int, int, int]:
    r"""Exact :math:`(n_+,n_-,n_0)` of a square rational matrix (any form
    :func:`flowcert.certificates.core.qmat` takes), by the algorithm of the module docstring.

    Raises
    ------
    ArithmeticError
        An internal identity failed (the even/odd structure of :math:`d`, an inexact division, or the
        Jordan check of the zero eigenvalue); never expected, and a checker treats it as a refusal.
    """
    from .core import qmat

    Jq = qmat(J)
    n = Jq.nrows()
    if Jq.ncols() != n:
        raise ArithmeticError("not a square matrix")
    if n == 0:
        return 0, 0, 0
    p = Jq.charpoly()
    mirrored = flint.fmpq_poly([p[k] * (-1) ** k for k in range(p.degree() + 1)])
    d = p.gcd(mirrored)
    r, rem = divmod(p, d)
    if not rem.is_zero():
        raise ArithmeticError("gcd does not divide the characteristic polynomial")
    cd = [d[j] for j in range(d.degree() + 1)]
    k = next(j for j, c in enumerate(cd) if c != 0)
    if any(c != 0 for j, c in enumerate(cd) if (j - k) % 2):
        raise ArithmeticError("gcd(p(x), p(-x)) is neither even nor odd")
    D = flint.fmpq_poly(cd[k::2])
    if k != _zero_multiplicity(Jq):
        raise ArithmeticError("the multiplicity of 0 disagrees with n - rank(J^n)")
    n0 = k + 2 * negative_real_roots(D)
    off = d.degree() - n0
    if off < 0 or off % 2:
        raise ArithmeticError("mirrored roots do not pair up")
    m = r.degree()
    U, V = _axis_parts(r)
    if m % 2 == 0:
        diff = cauchy_index(V, U)          # m_+ - m_-
    else:
        diff = -cauchy_index(U, V)         # m_+ - m_- = -(m_- - m_+)
    if (m + diff) % 2 or abs(diff) > m:
        raise ArithmeticError("Cauchy index out of range")
    m_pos = (m + diff) // 2
    return m_pos + off // 2, (m - m_pos) + off // 2, n0
