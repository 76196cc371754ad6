"""The shortcuts taken on real heads' large matrices decide exactly as the general exact routines do:
the zero matrix's definiteness, a diagonal matrix's inertia and scalar test, and the one-step checks
that a certificate's matrix holds numbers only."""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core, exact, forms, predicates, second_opinion


@pytest.mark.parametrize("n", [65, 100])
@pytest.mark.parametrize("strict", [True, False])
def test_zero_matrix_definiteness_is_decide_definite(n: int, strict: bool) -> None:
    Z = flint.fmpq_mat(n, n)
    assert core.definiteness(Z, strict=strict) == exact.decide_definite(core.fractions(Z), strict=strict)


_entries = st.fractions(min_value=-3, max_value=3, max_denominator=7) | st.just(Fraction(0))


@settings(max_examples=40, deadline=None)
@given(st.lists(_entries, min_size=1, max_size=20))
def test_diagonal_inertia_certificate_is_the_exact_inertia(diag: list[Fraction]) -> None:
    n = len(diag)
    Q = flint.fmpq_mat(n, n, [flint.fmpq(d.numerator, d.denominator) if i == j else 0
                              for i, d in enumerate(diag) for j in range(n)])
    cert = core.inertia_certificate(Q, "D")
    want = (sum(d > 0 for d in diag), sum(d < 0 for d in diag), sum(d == 0 for d in diag))
    assert tuple(cert.data["inertia"]) == want == exact.inertia(core.fractions(Q))
    assert second_opinion.symmetric_inertia(Q) == want


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), _entries, st.integers(0, 35), _entries)
def test_scalar_identity_is_eta_times_identity(n: int, eta: Fraction, where: int, bump: Fraction) -> None:
    i, j = divmod(where % (n * n), n)
    rows = [[eta if r == c else Fraction(0) for c in range(n)] for r in range(n)]
    rows[i][j] += bump
    Q = core.qmat(rows)
    scalar = all(rows[r][c] == (rows[0][0] if r == c else 0) for r in range(n) for c in range(n))
    want = rows[0][0] if scalar else None
    got = predicates._scalar(Q)
    assert (got is None and want is None) or (got is not None and Fraction(int(got.p), int(got.q)) == want)


@pytest.mark.parametrize("value,numbers", [
    ([["1/2", "-3"], ["4", "5"]], True),
    ([[1.0, 2.5], [3.0, -4.0]], True),
    ([["1/2", "--3"]], True),  # the general rule's lstrip("-") accepts it; the one-step match defers to it
    ([["1-2"]], False),
    ([["1/2/3"]], False),
    ([["a", "1"]], False),
    ([["1", None]], False),
    ([[1.0, "t"]], False),
])
def test_numbers_fast_path_agrees_with_the_rule(value, numbers: bool) -> None:
    assert predicates._numbers(value) is numbers
    rule = all(predicates._numbers(x) for r in value for x in r)
    assert rule is numbers


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-60, 60), st.integers(0, 4899), st.integers(1, 200))
def test_float_image_is_the_floats_exactly_or_none(seed: int, scale: int, where: int, bits: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    F = np.ldexp(rng.normal(size=(70, 70)), scale)
    Q = core.qmat(F)
    assert np.array_equal(forms.float_image(Q), F)
    # a perturbation no float holds (finer than every float of that size) leaves no float image
    i, j = divmod(where, 70)
    R = flint.fmpq_mat(Q)
    R[i, j] = R[i, j] + flint.fmpq(1, 3 * 2**bits)
    assert forms.float_image(R) is None
    # a perturbation by a float-sized step is a float image again, of the perturbed floats
    S = flint.fmpq_mat(Q)
    S[i, j] = S[i, j] + flint.fmpq(1, 2)
    G = forms.float_image(S)
    if G is not None:
        assert all(core.qmat(G)[r, c] == S[r, c] for r in range(70) for c in range(70))


@settings(max_examples=30, deadline=None)
@given(st.lists(_entries, min_size=4, max_size=4), st.integers(0, 3))
def test_is_diagonal_is_zero_off_the_diagonal(entries: list[Fraction], which: int) -> None:
    Q = core.qmat([entries[:2], entries[2:]])
    assert forms.is_diagonal(Q) is (entries[1] == 0 and entries[2] == 0)
    assert not forms.is_diagonal(core.qmat([entries[:3]]))  # not square


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9), st.lists(st.tuples(st.integers(0, 80), st.floats(-2, 2)), max_size=3))
def test_asymmetric_pair_of_floats_is_the_exact_first_pair(seed: int, n: int, bumps) -> None:
    import numpy as np

    F = np.random.default_rng(seed).normal(size=(n, n))
    F = F + F.T
    for where, by in bumps:
        F[divmod(where % (n * n), n)] += by
    Q = core.qmat(F)
    if Q == Q.transpose():
        return
    assert predicates._asymmetric_float_pair(F) == predicates._asymmetric_pair(Q)
    # the certificate made from the floats re-checks as the one made from the exact matrix
    cert_f, cert_q = predicates.definiteness_witness(F, strict=True), predicates.definiteness_witness(Q, strict=True)
    assert cert_f.data == cert_q.data and core.recheck(cert_f)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.data())
def test_lemma23_refutation_rayleigh_without_the_gram_matrix(n: int, data) -> None:
    """The lemma23 checker's ``||Bx||^2 / ||x||^2`` is the Rayleigh quotient of ``B^T B`` exactly."""
    from flowcert.certificates import conditions

    B = core.qmat(np.array(data.draw(st.lists(st.lists(st.floats(-1e3, 1e3), min_size=n, max_size=n),
                                              min_size=n, max_size=n)), dtype=float).reshape(n, n))
    x = [str(v) for v in data.draw(st.lists(st.integers(-2**30, 2**30), min_size=n, max_size=n).filter(any))]
    assert conditions._gram_rayleigh(B, x) == conditions._rayleigh(B.transpose() * B, x)
