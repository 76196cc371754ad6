r"""Exact inertia of a singular symmetric matrix of low rank by a principal pivot block.

.. math::

    Q=\begin{pmatrix}Q_{SS}&Q_{ST}\\Q_{TS}&Q_{TT}\end{pmatrix}
     =L^\top\begin{pmatrix}Q_{SS}&0\\0&Q/Q_{SS}\end{pmatrix}L,\qquad
    L=\begin{pmatrix}I&Q_{SS}^{-1}Q_{ST}\\0&I\end{pmatrix},\qquad
    \operatorname{In}(Q)=\operatorname{In}(Q_{SS})+\operatorname{In}(Q/Q_{SS})

(Haynsworth's inertia additivity; Sylvester's law). Used by :func:`flowcert.certificates.exact.inertia`
and :func:`~flowcert.certificates.exact.decide_definite` above the exact :math:`LDL^\top` size, where a
pretrained head gives exactly low-rank data (:math:`A+A^\top=0`, products of factors).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .rationals import RationalMatrix, flint, float_matrix, fmpq


def inertia_low_rank(Q: RationalMatrix, inertia: Callable[[RationalMatrix], tuple[int, int, int] | None],
                     max_rank: int) -> tuple[int, int, int] | None:
    r"""Inertia of a singular symmetric :math:`Q` of low rank by a principal pivot block; None if undecided.

    A float pivoted QR proposes :math:`r` indices :math:`S` (the numerical rank, at most ``max_rank``),
    :math:`T` the others; ``inertia`` decides the :math:`r\times r` block (the caller's exact inertia, so
    this module imports nothing from :mod:`.exact`). If :math:`Q_{SS}` is nonsingular, the
    congruence :math:`Q=L^\top\operatorname{diag}(Q_{SS},\,Q/Q_{SS})L` with
    :math:`L=\begin{pmatrix}I&Q_{SS}^{-1}Q_{ST}\\0&I\end{pmatrix}` (Haynsworth) gives
    :math:`\operatorname{In}(Q)=\operatorname{In}(Q_{SS})+\operatorname{In}(Q/Q_{SS})`. When the
    Schur complement :math:`Q/Q_{SS}=Q_{TT}-Q_{TS}Q_{SS}^{-1}Q_{ST}` is exactly 0 (python-flint),
    :math:`\operatorname{In}(Q)=\operatorname{In}(Q_{SS})+(0,0,n-r)`; :math:`r=0` is the exact zero
    matrix. Cost: one float QR and :math:`O(n^2r)` exact operations (a rank-32 head in
    :math:`d=384`: well under a second), against the :math:`O(n^3)` characteristic polynomial.
    """
    import scipy.linalg

    n = len(Q)
    if all(x == 0 for row in Q for x in row):
        return 0, 0, n
    F = float_matrix(Q)
    if flint is None or F is None:
        return None
    _, R, piv = scipy.linalg.qr(F, pivoting=True, mode="economic")
    d = np.abs(np.diag(R))
    r = int(np.sum(d > d[0] * n * 1e-12)) if d[0] > 0 else 0
    if not 0 < r <= max_rank or r >= n:
        return None
    S, T = sorted(int(i) for i in piv[:r]), sorted(int(i) for i in piv[r:])

    def block(rows: list[int], cols: list[int]) -> Any:
        return flint.fmpq_mat(len(rows), len(cols), [fmpq(Q[i][j].numerator, Q[i][j].denominator)
                                                      for i in rows for j in cols])

    Qss = block(S, S)
    try:
        inv = Qss.inv()
    except ZeroDivisionError:
        return None
    Qst = block(S, T)
    schur = block(T, T) - Qst.transpose() * inv * Qst
    if schur != flint.fmpq_mat(len(T), len(T)):
        return None
    top = inertia([[Fraction(int(Qss[i, j].p), int(Qss[i, j].q)) for j in range(r)] for i in range(r)])
    if top is None or top[2]:
        return None
    return top[0], top[1], n - r
