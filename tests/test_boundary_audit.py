"""Audit of the exact symmetric-inertia decisions at their boundary (issue 33, item 1).

Every exact routine that counts signs of a symmetric matrix is run on matrices whose inertia is known
by construction: :math:`M=S^\\top DS` with :math:`S` an integer matrix of non-zero determinant and
:math:`D` diagonal, so by Sylvester's law of inertia :math:`\\operatorname{In}(M)` is the signs of
:math:`D`. The diagonals are drawn with repeated zeros (the boundary where a zero pivot, a vanishing
Schur complement, a repeated root at 0 of the characteristic polynomial or a rank drop must be counted
with its multiplicity). No routine may give a wrong inertia; ``None`` (undecided) is allowed where the
routine documents it.

Audited: :func:`flowcert.certificates.exact.ldl_inertia` (zero pivots, 2x2 pivots),
:func:`~flowcert.certificates.exact.inertia_charpoly` (Descartes on the characteristic polynomial,
zero roots), :func:`~flowcert.certificates.exact.inertia_congruence`, :func:`~flowcert.certificates.exact.inertia`,
:func:`flowcert.certificates.second_opinion.symmetric_inertia` (the checkers' second opinion) and
:func:`flowcert.certificates.pivot.inertia_low_rank` (a Haynsworth block with an exactly zero Schur
complement). The non-symmetric inertia (``exact_inertia``, Cauchy indices) is audited in
``tests/test_inertia.py``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core, exact
from flowcert.certificates.pivot import inertia_low_rank
from flowcert.certificates.second_opinion import symmetric_inertia


@st.composite
def congruent(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, int, int]]:
    """``(S^T D S, In(D))``: integer entries, D with many zeros, S = U L with U, L unit triangular
    integer matrices (det S = 1)."""
    n = draw(st.integers(1, 7))
    diag = draw(st.lists(st.sampled_from([-3, -1, 0, 0, 0, 1, 2]), min_size=n, max_size=n))
    entries = st.lists(st.integers(-2, 2), min_size=n * n, max_size=n * n)
    U = np.triu(np.array(draw(entries), dtype=np.int64).reshape(n, n), 1) + np.eye(n, dtype=np.int64)
    L = np.tril(np.array(draw(entries), dtype=np.int64).reshape(n, n), -1) + np.eye(n, dtype=np.int64)
    S = U @ L
    M = S.T @ np.diag(diag) @ S
    want = (sum(x > 0 for x in diag), sum(x < 0 for x in diag), sum(x == 0 for x in diag))
    return M.astype(float), want


def _agree(got: tuple[int, int, int] | None, want: tuple[int, int, int], who: str) -> None:
    assert got is None or tuple(got) == want, f"{who}: {got} != {want}"


@settings(max_examples=150, deadline=None)
@given(congruent())
def test_every_symmetric_inertia_routine_agrees_with_sylvester(case: tuple[np.ndarray, tuple[int, int, int]]) -> None:
    M, want = case
    r = exact.ldl_inertia(M)
    assert (r.n_pos, r.n_neg, r.n_zero) == want, f"ldl_inertia: {(r.n_pos, r.n_neg, r.n_zero)} != {want}"
    Q = exact.to_rational(M)
    _agree(exact.inertia_charpoly(Q), want, "inertia_charpoly")
    _agree(exact.inertia_congruence(Q), want, "inertia_congruence")
    _agree(exact.inertia(M), want, "inertia")
    _agree(symmetric_inertia(core.qmat(M)), want, "second_opinion.symmetric_inertia")
    _agree(inertia_low_rank(Q, exact.inertia, M.shape[0]), want, "pivot.inertia_low_rank")


def test_the_zero_matrix_and_rank_one_blocks() -> None:
    """The smallest boundary cases, by hand: 0_n, and u u^T - v v^T with u, v independent."""
    for n in range(1, 7):
        Z = np.zeros((n, n))
        assert (lambda r: (r.n_pos, r.n_neg, r.n_zero))(exact.ldl_inertia(Z)) == (0, 0, n)
        assert symmetric_inertia(core.qmat(Z)) in (None, (0, 0, n))
        _agree(exact.inertia(Z), (0, 0, n), "inertia")
    u, v = np.array([1.0, 2, 0, 1]), np.array([0.0, 1, 1, -1])
    M = np.outer(u, u) - np.outer(v, v)
    r = exact.ldl_inertia(M)
    assert (r.n_pos, r.n_neg, r.n_zero) == (1, 1, 2)
    _agree(symmetric_inertia(core.qmat(M)), (1, 1, 2), "second_opinion.symmetric_inertia")
    _agree(inertia_low_rank(exact.to_rational(M), exact.inertia, 4), (1, 1, 2), "pivot.inertia_low_rank")
