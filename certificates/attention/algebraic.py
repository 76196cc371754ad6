r"""Exact signs of quantities built from an eigenvector of a rational symmetric matrix.

For rational symmetric :math:`U\in\mathbb Q^{d\times d}` with a *simple* eigenvalue :math:`\lambda`
(characteristic polynomial :math:`\chi=(x-\lambda)h`, :math:`h(\lambda)=\chi'(\lambda)\ne0`),

.. math::

    h(U)=\sum_i h(\lambda_i)\,v_iv_i^\top=\chi'(\lambda)\,vv^\top ,

so :math:`w=h(U)e_j=\chi'(\lambda)v_j\,v` is a real multiple of the unit eigenvector :math:`v`
whose coordinates are polynomials in :math:`\lambda` with rational coefficients: synthetic
division gives :math:`h(x)=\sum_mh_m(\lambda)x^m`, hence :math:`w=\sum_mh_m(\lambda)\,U^me_j`.
Any polynomial expression :math:`r(\lambda)` (an inner product :math:`w^\top y`, a quadratic form
:math:`w^\top Mw`) is an element of :math:`\mathbb Q(\lambda)`: it is *exactly* zero iff its
remainder modulo the minimal polynomial :math:`f` of :math:`\lambda` (the irreducible factor of
:math:`\chi` that vanishes at :math:`\lambda`) is zero; otherwise its sign is decided by evaluating
the remainder in ``arb`` ball arithmetic at ever narrower balls around :math:`\lambda` (a
nonzero algebraic number is eventually separated from 0). A column :math:`j` with
:math:`w\not\equiv0` exists because :math:`v\ne0`.

Signs of :math:`w^\top y` are those of :math:`v^\top y` up to one global sign
(:math:`\operatorname{sign}(\chi'(\lambda)v_j)`), and :math:`w^\top Mw=(\chi'(\lambda)v_j)^2\,v^\top Mv`
has the sign of :math:`v^\top Mv`.

Public API: :class:`AlgebraicEigenvector` (``exact_zero``, ``sign``, ``inner_signs``,
``quadratic_sign``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

__all__ = ["AlgebraicEigenvector"]


def _q(x: Any) -> Any:
    from flint import fmpq

    x = Fraction(x) if not isinstance(x, Fraction) else x
    return fmpq(x.numerator, x.denominator)


class AlgebraicEigenvector:
    r"""The eigenvector of the ``k``-th largest eigenvalue (0-based, with multiplicity) of rational
    symmetric ``U``, exactly, as coordinates in :math:`\mathbb Q(\lambda_k)`.

    Raises ``ValueError`` if that eigenvalue is not simple or a root is not real.
    """

    PRECISIONS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)

    def __init__(self, U: Sequence[Sequence[Any]], k: int) -> None:
        from flint import fmpq_mat, fmpq_poly

        self.U = [[Fraction(e) for e in row] for row in U]
        d = len(self.U)
        self.d = d
        chi = fmpq_mat([[_q(e) for e in row] for row in self.U]).charpoly()
        roots = self._real_roots(chi)
        if roots is None:
            raise ValueError("a root of the characteristic polynomial is not real")
        flat = [r for r, m in roots for _ in range(m)]
        if not 0 <= k < len(flat):
            raise ValueError(f"index {k} out of range")
        target = flat[k]
        if sum(m for r, m in roots if r is target) != 1:
            raise ValueError(f"eigenvalue {k + 1} is not simple")
        self.k = k
        # the minimal polynomial: the irreducible factor of chi vanishing in the target's ball
        _, factors = chi.factor()
        self.f = None
        for fac, _m in factors:
            if fac.degree() == 0:
                continue
            if any(self._balls_meet(r, target) for r in self._roots_of(fac)):
                if self.f is not None:
                    raise ValueError("the eigenvalue's ball meets two irreducible factors")
                self.f = fac
        if self.f is None:
            raise ValueError("no factor of chi vanishes at the eigenvalue")
        # h(x) = chi(x) / (x - lambda): h_{d-1} = 1, h_{m-1} = c_m + lambda h_m (coefficients in Q[lambda])
        c = [chi.coeffs()[m] if m < len(chi.coeffs()) else 0 for m in range(d + 1)]
        lam = fmpq_poly([0, 1])
        h = [fmpq_poly([0])] * d
        h[d - 1] = fmpq_poly([1])
        for m in range(d - 1, 0, -1):
            h[m - 1] = (fmpq_poly([c[m]]) + lam * h[m]) % self.f
        self.w: list[Any] | None = None
        for j in range(d):
            krylov = [[Fraction(int(i == j)) for i in range(d)]]
            for _ in range(d - 1):
                prev = krylov[-1]
                krylov.append([sum(self.U[a][b] * prev[b] for b in range(d)) for a in range(d)])
            w = [sum((h[m] * fmpq_poly([_q(krylov[m][a])]) for m in range(d)), fmpq_poly([0])) % self.f for a in range(d)]
            if any(not x.is_zero() for x in w):
                self.w = w
                break
        if self.w is None:  # pragma: no cover - v != 0 guarantees a column
            raise ValueError("every column of h(U) vanishes")

    # root isolation ---------------------------------------------------------------------

    @staticmethod
    def _roots_of(poly: Any, prec: int = 128) -> list[Any]:
        from flint import ctx

        old = ctx.prec
        try:
            ctx.prec = prec
            return [r.real for r, _ in poly.numer().complex_roots()]
        finally:
            ctx.prec = old

    @staticmethod
    def _balls_meet(a: Any, b: Any) -> bool:
        return bool(a.overlaps(b))

    @classmethod
    def _real_roots(cls, chi: Any) -> list[tuple[Any, int]] | None:
        from flint import ctx

        old = ctx.prec
        try:
            for prec in cls.PRECISIONS[:5]:
                ctx.prec = prec
                roots = chi.numer().complex_roots()
                if any(not r.imag.contains(0) for r, _ in roots):
                    return None
                rr = sorted(((r.real, int(m)) for r, m in roots), key=lambda t: -float(t[0].mid()))
                if all(not rr[i][0].overlaps(rr[i + 1][0]) for i in range(len(rr) - 1)):
                    return rr
            return None
        finally:
            ctx.prec = old

    def _lambda_ball(self, prec: int) -> Any:
        """The root of ``f`` that is the k-th eigenvalue, at working precision ``prec``."""
        from flint import ctx

        old = ctx.prec
        try:
            ctx.prec = prec
            chi_roots = self._real_roots_at(prec)
            return chi_roots[self.k]
        finally:
            ctx.prec = old

    def _real_roots_at(self, prec: int) -> list[Any]:
        from flint import ctx, fmpq_mat

        ctx.prec = prec
        chi = fmpq_mat([[_q(e) for e in row] for row in self.U]).charpoly()
        roots = chi.numer().complex_roots()
        rr = sorted(((r.real, int(m)) for r, m in roots), key=lambda t: -float(t[0].mid()))
        return [r for r, m in rr for _ in range(m)]

    # exact decisions --------------------------------------------------------------------

    def exact_zero(self, r: Any) -> bool:
        """``r`` (an ``fmpq_poly`` in lambda) vanishes at lambda exactly."""
        return (r % self.f).is_zero()

    def sign(self, r: Any) -> int:
        """Exact sign of ``r(lambda)`` (0 iff ``r`` is divisible by the minimal polynomial)."""
        from flint import arb, ctx

        r = r % self.f
        if r.is_zero():
            return 0
        coeffs = r.coeffs()
        old = ctx.prec
        try:
            for prec in self.PRECISIONS:
                ctx.prec = prec
                lam = self._lambda_ball(prec)
                ctx.prec = prec
                acc = arb(0)
                for cf in reversed(coeffs):
                    acc = acc * lam + arb(cf)
                if acc > 0:
                    return 1
                if acc < 0:
                    return -1
        finally:
            ctx.prec = old
        raise ArithmeticError("the sign of a nonzero algebraic number was not separated at 8192 bits")

    def inner(self, y: Sequence[Any]) -> Any:
        """:math:`w^\\top y` as an element of :math:`\\mathbb Q[\\lambda]/(f)`."""
        from flint import fmpq_poly

        return sum((wa * fmpq_poly([_q(ya)]) for wa, ya in zip(self.w, y)), fmpq_poly([0])) % self.f

    def inner_signs(self, Y: Sequence[Sequence[Any]]) -> list[int]:
        """Signs of :math:`v^\\top y_i` for the rows of ``Y``, up to one common global sign."""
        return [self.sign(self.inner(y)) for y in Y]

    def quadratic_sign(self, M: Sequence[Sequence[Any]]) -> int:
        """Exact sign of :math:`v^\\top Mv` (0 iff it vanishes)."""
        from flint import fmpq_poly

        d = self.d
        Mw = [sum((fmpq_poly([_q(M[a][b])]) * self.w[b] for b in range(d)), fmpq_poly([0])) % self.f for a in range(d)]
        return self.sign(sum((wa * mwa for wa, mwa in zip(self.w, Mw)), fmpq_poly([0])) % self.f)
