r"""The checkers' own decision of the inertia of a symmetric rational matrix (a second opinion).

Certificates of definiteness and inertia (``psd``, ``pd``, ``inertia``, ``lyapunov``, ``unstable``,
``unstable_count``) are *produced* with :func:`flowcert.certificates.exact.decide_definite` and
:func:`~flowcert.certificates.exact.inertia` (exact :math:`LDL^\top` with pivoting, the rigorously
rounded float Cholesky, low-rank pivot blocks). A checker that called the same functions would
re-run their bugs. The checkers call this module, which decides by other algorithms:

* :math:`n\le` :data:`DESCARTES_MAX`: the exact characteristic polynomial
  :math:`p(x)=\det(xI-M)=x^kq(x)`, :math:`q(0)\ne0` (flint, over :math:`\mathbb Q`). A symmetric
  matrix has real eigenvalues only, so Descartes' rule of signs is exact:
  :math:`n_+=\operatorname{Var}(q(x))`, :math:`n_-=\operatorname{Var}(q(-x))`, :math:`n_0=k`.
* larger, nonsingular: a congruence :math:`C=U^\top MU` with :math:`U` a float eigenbasis taken as the
  exact dyadic matrix it is, formed exactly over :math:`\mathbb Z` (one power-of-two denominator),
  and Gershgorin discs of :math:`C` that exclude 0: then :math:`\det U\ne0` and
  :math:`\operatorname{In}(M)=\operatorname{In}(C)` (Sylvester).
* a diagonal matrix (any size): the signs of its diagonal;
* larger, singular: a principal block :math:`M_{SS}` (indices from a float
  pivoted QR) whose Schur complement is exactly 0, with :math:`M_{SS}` decided by Descartes
  (Haynsworth: :math:`\operatorname{In}(M)=\operatorname{In}(M_{SS})+(0,0,n-r)`).

None when undecided (the checker then refuses). No :math:`LDL^\top` and no Cholesky anywhere.
"""

from __future__ import annotations

from typing import Any

import flint
import numpy as np

__all__ = ["DESCARTES_MAX", "symmetric_inertia", "is_pd", "is_psd"]

#: Largest n decided by the characteristic polynomial (flint: 0.04 s at 64 rows, 0.7 s at 128).
DESCARTES_MAX = 128


def _descartes(Q: Any) -> tuple[int, int, int]:
    p = Q.charpoly()
    c = [p[i] for i in range(p.degree() + 1)]
    k = next(i for i, x in enumerate(c) if x != 0)
    q = c[k:]

    def var(cs: list[Any]) -> int:
        s = [x > 0 for x in cs if x != 0]
        return sum(a != b for a, b in zip(s, s[1:]))

    return var(q), var([x if i % 2 == 0 else -x for i, x in enumerate(q)]), k


def _congruence(Q: Any, F: np.ndarray) -> tuple[int, int, int] | None:
    n = Q.nrows()
    _, U = np.linalg.eigh(F)
    Ui, _ = flint.fmpq_mat(n, n, [flint.fmpq(*float(x).as_integer_ratio()) for x in U.ravel()]).numer_denom()
    Z, _ = Q.numer_denom()  # Q = Z / den and U = Ui / den': positive scales keep the inertia
    C = Ui.transpose() * Z * Ui
    n_pos = 0
    for i in range(n):
        row = [C[i, j] for j in range(n)]
        c = row[i]
        r = sum((abs(x) for j, x in enumerate(row) if j != i), flint.fmpz(0))
        if not abs(c) > r:
            return None
        n_pos += c > 0
    return n_pos, n - n_pos, 0


def _low_rank(Q: Any, F: np.ndarray) -> tuple[int, int, int] | None:
    import scipy.linalg

    n = Q.nrows()
    _, R, piv = scipy.linalg.qr(F, pivoting=True, mode="economic")
    d = np.abs(np.diag(R))
    r = int(np.sum(d > d[0] * n * 1e-12)) if d.size and d[0] > 0 else 0
    if not 0 < r <= DESCARTES_MAX or r >= n:
        return None
    S, T = sorted(int(i) for i in piv[:r]), sorted(int(i) for i in piv[r:])

    def block(rows: list[int], cols: list[int]) -> Any:
        return flint.fmpq_mat([[Q[i, j] for j in cols] for i in rows])

    Qss = block(S, S)
    if Qss.det() == 0:
        return None
    Qst = block(S, T)
    if block(T, T) != Qst.transpose() * Qss.solve(Qst):
        return None
    top = _descartes(Qss)
    return (top[0], top[1], n - r) if top[2] == 0 else None


def symmetric_inertia(M: Any) -> tuple[int, int, int] | None:
    r""":math:`(n_+,n_-,n_0)` of a symmetric rational matrix (any form :func:`~flowcert.certificates.core.qmat`
    takes) by the algorithms of the module docstring; None when undecided, empty or not symmetric."""
    import flint

    from .core import rounded_floats, qmat

    Q = qmat(M)
    n = Q.nrows()
    if Q.ncols() != n or Q != Q.transpose():
        return None
    if n == 0:
        return None  # an empty matrix proves nothing about anything
    d = [Q[i, i] for i in range(n)]
    diagonal = [0] * (n * n)
    diagonal[::n + 1] = d
    # diagonal: the signs are the inertia. Compared with the matrix of its own diagonal, entry by entry
    # in flint, not by the producers' test (flowcert.certificates.forms.is_diagonal, flint's numerators)
    if Q == flint.fmpq_mat(n, n, diagonal):
        return sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d)
    if n <= DESCARTES_MAX:
        return _descartes(Q)
    F = rounded_floats(Q)
    if F is None:
        return None
    return _congruence(Q, F) or _low_rank(Q, F)


def is_pd(M: Any) -> bool:
    """:math:`M\\succ0`, decided by :func:`symmetric_inertia` (False when undecided)."""
    got = symmetric_inertia(M)
    return got is not None and got[1] == got[2] == 0


def is_psd(M: Any) -> bool:
    """:math:`M\\succeq0`, decided by :func:`symmetric_inertia` (False when undecided)."""
    got = symmetric_inertia(M)
    return got is not None and got[1] == 0
