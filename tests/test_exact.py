"""Tests for flowcert.certificates.exact: exact inertia, witnesses, rigorous float PD test."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flowcert.certificates import exact as E
from flowcert.certificates.exact import (
    is_pd_exact,
    is_pd_float_rigorous,
    is_psd_exact,
    ldl_inertia,
    round_rational,
    to_rational,
)

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    # the `backend` fixture only swaps the arithmetic backend; sharing it across examples is fine
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# ---------------------------------------------------------------------------------------------
# helpers (independent of the module under test)
# ---------------------------------------------------------------------------------------------


def frac_matrix(M) -> list[list[Fraction]]:
    return [[Fraction(x) for x in row] for row in M]


def matmul(A, B):
    return [
        [sum((A[i][k] * B[k][j] for k in range(len(B))), Fraction(0)) for j in range(len(B[0]))]
        for i in range(len(A))
    ]


def transpose(A):
    return [list(r) for r in zip(*A)]


def quad(M, v) -> Fraction:
    n = len(v)
    terms = (Fraction(v[i]) * M[i][j] * Fraction(v[j]) for i in range(n) for j in range(n))
    return sum(terms, Fraction(0))


def sympy_inertia(M) -> tuple[int, int, int]:
    """Inertia from the characteristic polynomial (all roots real -> Descartes is exact)."""
    x = sp.Symbol("x")
    coeffs = [sp.Rational(c) for c in sp.Matrix(M).charpoly(x).all_coeffs()]  # leading first
    deg = len(coeffs) - 1
    n_zero = 0
    while n_zero < deg and coeffs[deg - n_zero] == 0:
        n_zero += 1

    def sign_changes(cs):
        signs = [c > 0 for c in cs if c != 0]
        return sum(1 for a, b in zip(signs, signs[1:]) if a != b)

    n_pos = sign_changes(coeffs)
    n_neg = sign_changes([c * (-1) ** (deg - k) for k, c in enumerate(coeffs)])
    return n_pos, n_neg, n_zero


def int_matrix(n_min=1, n_max=5, lo=-3, hi=3):
    return st.integers(n_min, n_max).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(lo, hi), min_size=n, max_size=n), min_size=n, max_size=n
        )
    )


def unimodular(n: int, data) -> list[list[Fraction]]:
    """Integer matrix with determinant +-1: product of unit upper and unit lower factors."""
    def entry(i: int, j: int, upper: bool) -> Fraction:
        if i == j:
            return Fraction(1)
        return Fraction(data.draw(st.integers(-2, 2))) if (j > i) == upper else Fraction(0)

    U = [[entry(i, j, True) for j in range(n)] for i in range(n)]
    Lo = [[entry(i, j, False) for j in range(n)] for i in range(n)]
    return matmul(U, Lo)


@pytest.fixture(params=["flint", "fraction"])
def backend(request, monkeypatch):
    """Run a test with python-flint (if installed) and with the pure-Fraction fallback."""
    if request.param == "flint":
        if not E.HAVE_FLINT:
            pytest.skip("python-flint not installed")
    else:
        monkeypatch.setattr(E, "fmpq", None)
    return request.param


# ---------------------------------------------------------------------------------------------
# conversion
# ---------------------------------------------------------------------------------------------


def test_to_rational_is_exact():
    Q = to_rational(np.array([[0.1, 2.0], [-3.5, 1e-300]]))
    assert Q[0][0] == Fraction(0.1) != Fraction(1, 10)
    assert Q[0][0] == Fraction(3602879701896397, 36028797018963968)
    assert Q[1][0] == Fraction(-7, 2)
    assert Q[1][1] == Fraction(1e-300)
    assert to_rational([[1, Fraction(1, 3)], [np.int64(4), np.float32(0.1)]]) == [
        [Fraction(1), Fraction(1, 3)],
        [Fraction(4), Fraction(float(np.float32(0.1)))],
    ]
    assert to_rational(np.array([[1, 2]], dtype=np.int64)) == [[Fraction(1), Fraction(2)]]
    assert to_rational([[sp.Rational(2, 7)]]) == [[Fraction(2, 7)]]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_to_rational_rejects_nonfinite(bad):
    with pytest.raises(ValueError):
        to_rational([[1.0, bad], [0.0, 1.0]])
    with pytest.raises(ValueError):
        to_rational(np.array([[bad]]))


def test_to_rational_rejects_bad_shapes_and_types():
    with pytest.raises(ValueError):
        to_rational(np.zeros(3))
    with pytest.raises(ValueError):
        to_rational([[1, 2], [3]])
    with pytest.raises(TypeError):
        to_rational([[1j]])
    with pytest.raises(TypeError):
        to_rational([["1"]])


@SETTINGS
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=9),
    st.integers(0, 60),
)
def test_round_rational_is_dyadic_and_close(xs, bits):
    R = round_rational([xs], bits)[0]
    for x, r in zip(xs, R):
        assert (1 << bits) % r.denominator == 0
        assert abs(r - Fraction(x)) <= Fraction(1, 2 ** (bits + 1))


def test_round_rational_symmetrize_and_errors():
    M = np.array([[1.0, 0.1 + 1e-12], [0.1, 2.0]])
    R = round_rational(M, 20, symmetrize=True)
    assert R[0][1] == R[1][0]
    with pytest.raises(ValueError):
        round_rational([[math.nan]])
    with pytest.raises(ValueError):
        round_rational([[1.0]], bits=-1)


# ---------------------------------------------------------------------------------------------
# exact LDL^T / inertia
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_llt_plus_identity_is_pd_with_correct_pivots(backend, data):
    n = data.draw(st.integers(1, 6))
    L = [
        [Fraction(data.draw(st.integers(-3, 3))) if j <= i else Fraction(0) for j in range(n)]
        for i in range(n)
    ]
    M = matmul(L, transpose(L))
    for i in range(n):
        M[i][i] += 1
    res = ldl_inertia(M)
    assert res.status == "pd" and res.is_pd and res.is_psd
    assert (res.n_pos, res.n_neg, res.n_zero) == (n, 0, 0)
    assert res.witness is None and res.kernel_vector is None
    assert res.order == tuple(range(n))
    assert res.pivots is not None and all(p > 0 for p in res.pivots)
    # pivots are ratios of leading principal minors: their product is det(M)
    assert math.prod(res.pivots) == Fraction(str(sp.Matrix(M).det()))
    assert is_pd_exact(M) == (True, None)
    assert is_psd_exact(M) == (True, None)


@SETTINGS
@given(st.data())
def test_rank_deficient_gram_is_psd_not_pd(backend, data):
    n = data.draw(st.integers(2, 6))
    r = data.draw(st.integers(1, n - 1))
    V = [[Fraction(data.draw(st.integers(-3, 3))) for _ in range(r)] for _ in range(n)]
    assume(any(x != 0 for row in V for x in row))
    M = matmul(V, transpose(V))  # v v^T summed over r columns: rank <= r < n
    rank = sp.Matrix(M).rank()
    res = ldl_inertia(M)
    assert res.status == "psd"
    assert (res.n_pos, res.n_neg, res.n_zero) == (rank, 0, n - rank)
    assert res.witness is None
    k = res.kernel_vector
    assert k is not None and any(k)
    assert all(x.denominator == 1 for x in k)
    assert all(sum(M[i][j] * k[j] for j in range(n)) == 0 for i in range(n))
    holds, w = is_pd_exact(M)
    assert not holds and w is not None and any(w) and quad(M, w) <= 0
    assert is_psd_exact(M) == (True, None)


def test_rank_one_integer_example():
    v = [1, -2, 3]
    M = [[a * b for b in v] for a in v]
    res = ldl_inertia(M)
    assert res.status == "psd" and (res.n_pos, res.n_neg, res.n_zero) == (1, 0, 2)
    assert res.pivots == (Fraction(1),)


@SETTINGS
@given(st.data())
def test_congruent_diagonal_has_sylvester_inertia_and_exact_witness(backend, data):
    n = data.draw(st.integers(2, 6))
    d = data.draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n))
    if not any(x < 0 for x in d):
        d[data.draw(st.integers(0, n - 1))] = -1
    T = unimodular(n, data)
    D = [[Fraction(d[i]) if i == j else Fraction(0) for j in range(n)] for i in range(n)]
    M = matmul(matmul(transpose(T), D), T)
    res = ldl_inertia(M)
    expected = (sum(x > 0 for x in d), sum(x < 0 for x in d), sum(x == 0 for x in d))
    assert (res.n_pos, res.n_neg, res.n_zero) == expected
    if expected[0] == expected[2] == 0:
        assert res.status == "nd"
    elif expected[0] == 0:
        assert res.status == "nsd"
    else:
        assert res.status == "indefinite"
    w = res.witness
    assert w is not None and quad(M, w) < 0 and quad(M, w) == res.witness_value
    holds, w2 = is_psd_exact(M)
    assert not holds and quad(M, w2) < 0
    holds, w3 = is_pd_exact(M)
    assert not holds and quad(M, w3) < 0


def test_rotated_diag_one_minus_one():
    T = [[2, 1], [1, 1]]  # det 1
    D = [[1, 0], [0, -1]]
    M = matmul(matmul(transpose(frac_matrix(T)), frac_matrix(D)), frac_matrix(T))
    assert M == [[3, 1], [1, 0]]
    res = ldl_inertia(M)
    assert res.status == "indefinite" and (res.n_pos, res.n_neg, res.n_zero) == (1, 1, 0)
    assert quad(M, res.witness) < 0


@pytest.mark.parametrize(
    "M, inertia, status",
    [
        ([[0, 1], [1, 0]], (1, 1, 0), "indefinite"),
        ([[0, 0], [0, 0]], (0, 0, 2), "zero"),
        ([[0, 1, 0], [1, 0, 0], [0, 0, 0]], (1, 1, 1), "indefinite"),
        ([[0, 0, 2], [0, 0, 3], [2, 3, 0]], (1, 1, 1), "indefinite"),
        ([[1, 0, 0], [0, 0, 5], [0, 5, 0]], (2, 1, 0), "indefinite"),
        ([[-1, 0], [0, 0]], (0, 1, 1), "nsd"),
        ([[-2, 1], [1, -2]], (0, 2, 0), "nd"),
        ([[Fraction(1, 3)]], (1, 0, 0), "pd"),
        ([[0]], (0, 0, 1), "zero"),
    ],
)
def test_small_cases_including_zero_diagonals(backend, M, inertia, status):
    res = ldl_inertia(M)
    assert (res.n_pos, res.n_neg, res.n_zero) == inertia
    assert res.status == status
    Q = to_rational(M)
    if inertia[1]:
        assert quad(Q, res.witness) < 0
    else:
        assert res.witness is None
    if inertia[2]:
        k = res.kernel_vector
        m = len(k)
        assert any(k) and all(sum(Q[i][j] * k[j] for j in range(m)) == 0 for i in range(m))


@SETTINGS
@given(int_matrix(1, 5))
def test_inertia_matches_sympy_charpoly(backend, A):
    n = len(A)
    M = [[A[i][j] + A[j][i] for j in range(n)] for i in range(n)]  # symmetric integer matrix
    res = ldl_inertia(M)
    assert (res.n_pos, res.n_neg, res.n_zero) == sympy_inertia(M)
    if res.n_neg:
        assert quad(to_rational(M), res.witness) < 0


def test_margin(backend):
    M = np.eye(3) * 2
    assert is_pd_exact(M, margin=1) == (True, None)
    holds, w = is_pd_exact(M, margin=2)  # M - 2I = 0: singular
    assert not holds and any(w)
    assert is_psd_exact(M, margin=2) == (True, None)
    holds, w = is_pd_exact(M, margin=Fraction(5, 2))
    S = to_rational(M - 2.5 * np.eye(3))
    assert not holds and quad(S, w) < 0
    holds, w = is_psd_exact(M, margin=2.5)
    assert not holds and quad(S, w) < 0
    # the margin is exact: 0.1 as a float is slightly above 1/10
    M = [[Fraction(1, 10)]]
    assert not is_pd_exact(M, margin=0.1)[0]
    assert is_pd_exact(M, margin=Fraction(1, 11))[0]


def test_float_input_is_used_exactly():
    # [[1, x], [x, 1]] with x = 1 - 2^-53 is PD (det = 2^-52 - 2^-106 > 0); x = 1 is singular
    x = 1 - 2.0**-53
    assert ldl_inertia(np.array([[1.0, x], [x, 1.0]])).status == "pd"
    assert ldl_inertia(np.array([[1.0, 1.0], [1.0, 1.0]])).status == "psd"


@pytest.mark.parametrize(
    "M",
    [
        [[1, 2], [3, 4]],
        np.array([[1.0, 0.1], [0.1 + 2.0**-55, 1.0]]),
        [[1, Fraction(1, 3)], [Fraction(1, 3) + Fraction(1, 10**30), 1]],
    ],
)
def test_non_symmetric_raises(M):
    with pytest.raises(ValueError, match="symmetric"):
        ldl_inertia(M)
    with pytest.raises(ValueError):
        is_pd_exact(M)
    with pytest.raises(ValueError):
        is_psd_exact(M)


def test_non_square_empty_and_nan_raise():
    with pytest.raises(ValueError):
        ldl_inertia([[1, 2, 3], [2, 1, 3]])
    with pytest.raises(ValueError):
        ldl_inertia([])
    with pytest.raises(ValueError):
        ldl_inertia(np.array([[1.0, math.nan], [math.nan, 1.0]]))
    with pytest.raises(ValueError):
        is_pd_exact([[math.nan]])


def test_dyadic_30x30_runs(backend):
    rng = np.random.default_rng(7)
    n = 30
    X = rng.standard_normal((n, n))
    P = round_rational(X @ X.T + 0.5 * np.eye(n), 30, symmetrize=True)
    res = ldl_inertia(P)
    assert res.status == "pd" and len(res.pivots) == n
    P[n - 1][n - 1] -= 1000  # now indefinite: witness must be exact
    res = ldl_inertia(P)
    assert res.n_neg == 1 and quad(P, res.witness) < 0


# ---------------------------------------------------------------------------------------------
# floating-point rigorous PD test
# ---------------------------------------------------------------------------------------------


def test_float_clear_cases():
    assert is_pd_float_rigorous(np.eye(4))
    assert is_pd_float_rigorous(np.diag([1.0, 1e-300]))  # exact power-of-two scaling
    assert is_pd_float_rigorous(np.diag([1e300, 1e-300]))
    assert not is_pd_float_rigorous(np.diag([1.0, -1e-300]))
    assert not is_pd_float_rigorous(np.diag([1.0, 0.0]))
    assert not is_pd_float_rigorous(np.diag([1.0, -5e-324]))
    assert not is_pd_float_rigorous(np.ones((3, 3)))  # singular
    x = 1 - 2.0**-53  # exactly PD but lambda_min = 2^-53: not provable, must not crash
    assert not is_pd_float_rigorous(np.array([[1.0, 1.0], [1.0, 1.0]]))
    is_pd_float_rigorous(np.array([[1.0, x], [x, 1.0]]))  # either answer is sound; it must not crash
    y = 1 + 2.0**-52  # indefinite by 2^-52, one ulp from the boundary: never claimed PD
    assert not is_pd_float_rigorous(np.array([[1.0, y], [y, 1.0]]))
    z = 1 - 2.0**-20  # lambda_min = 2^-20, far above the rounding bound (~4 u): must be proved
    assert is_pd_float_rigorous(np.array([[1.0, z], [z, 1.0]]))
    assert is_pd_float_rigorous(np.array([[1.0, 0.5], [0.5, 1.0]]))
    assert not is_pd_float_rigorous(np.array([[1.0, 2.0], [2.0, 1.0]]))


def test_float_margin():
    M = 2 * np.eye(3)
    assert is_pd_float_rigorous(M, margin=1.0)
    assert is_pd_float_rigorous(M, margin=1.999)
    assert not is_pd_float_rigorous(M, margin=2.0)
    assert not is_pd_float_rigorous(M, margin=2.5)
    assert is_pd_float_rigorous(M, margin=-1.0)


def test_float_rejects_bad_input():
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.array([[1.0, math.nan], [math.nan, 1.0]]))
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.array([[1.0, math.inf], [math.inf, 1.0]]))
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.array([[2.0, 1.0], [1.0 + 2.0**-52, 2.0]]))
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.ones((2, 3)))
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.zeros((0, 0)))
    with pytest.raises(ValueError):
        is_pd_float_rigorous(np.array([[2**60 + 1]], dtype=np.int64))
    with pytest.raises(TypeError):
        is_pd_float_rigorous(np.array([[Fraction(1)]], dtype=object))


def _largest_float_not_above(q: Fraction) -> float:
    c = float(q)
    while Fraction(c) > q:
        c = float(np.nextafter(c, -np.inf))
    while Fraction(float(np.nextafter(c, np.inf))) <= q:
        c = float(np.nextafter(c, np.inf))
    return c


@SETTINGS
@given(st.data())
def test_float_false_on_exactly_non_pd_boundary_matrices(data):
    """Last diagonal entry = largest float with a Schur complement <= 0: exactly not PD.

    Plain floating-point Cholesky accepts a sizeable fraction of these matrices.
    """
    n = data.draw(st.integers(2, 5))
    fl = st.floats(-4, 4, allow_nan=False, allow_infinity=False)
    X = np.array([[data.draw(fl) for _ in range(n)] for _ in range(n - 1)])
    A = X[:, : n - 1] @ X[:, : n - 1].T + np.eye(n - 1)
    A = (A + A.T) / 2
    m = np.array([data.draw(fl) for _ in range(n - 1)])
    Aq = sp.Matrix(to_rational(A))
    mq = sp.Matrix([Fraction(x) for x in m])
    t = Fraction(str((mq.T * Aq.LUsolve(mq))[0, 0]))  # exact m^T A^{-1} m
    c = _largest_float_not_above(t)
    M = np.zeros((n, n))
    M[: n - 1, : n - 1] = A
    M[: n - 1, n - 1] = m
    M[n - 1, : n - 1] = m
    M[n - 1, n - 1] = c
    assert ldl_inertia(M).status != "pd"  # the construction is right
    assert not is_pd_float_rigorous(M)


@SETTINGS
@given(st.data())
def test_float_never_claims_pd_wrongly_and_is_not_too_conservative(data):
    n = data.draw(st.integers(1, 6))
    fl = st.floats(-4, 4, allow_nan=False, allow_infinity=False)
    X = np.array([[data.draw(fl) for _ in range(n)] for _ in range(n)])
    S = X @ X.T
    S = (S + S.T) / 2
    scale = max(1.0, float(np.abs(S).max()))
    lam = float(np.linalg.eigvalsh(S)[0])
    t = data.draw(st.sampled_from([-1e-3, -1e-9, -1e-13, 0.0, 1e-15, 1e-13, 1e-11, 1e-6, 1e-3]))
    M = S - (lam + t * scale) * np.eye(n)
    exp = data.draw(st.sampled_from([0, -1000, 900]))  # also exercise underflow/overflow ranges
    M = np.ldexp(M, exp)
    M = (M + M.T) / 2
    truth = ldl_inertia(M).status
    got = is_pd_float_rigorous(M)
    if got:
        assert truth == "pd"
    if -t * scale > 1e-6 * scale and exp == 0:
        # lambda_min(M) is at least ~1e-6 * scale (up to rounding of lam): must be certified
        assert got


@SETTINGS
@given(
    st.integers(1, 7),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0, -1060, -1040, -1000, 400]),
)
def test_float_cholesky_obeys_the_backward_error_model(n, seed, exp):
    """Exact check of the componentwise bound the shift c is built on (also in underflow)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n))
    A = np.ldexp(X @ X.T + n * np.eye(n), exp)
    A = (A + A.T) / 2
    R = E.float_cholesky(A)
    assume(R is not None)
    g = (n + 1) * E.UNIT_ROUNDOFF / (1 - (n + 1) * E.UNIT_ROUNDOFF)
    rmax = max(Fraction(float(x)) for x in np.diag(R))
    Rq = to_rational(R)
    Aq = to_rational(A)
    for i in range(n):
        for j in range(i, n):
            exact = sum((Rq[k][i] * Rq[k][j] for k in range(n)), Fraction(0))
            absprod = sum((abs(Rq[k][i] * Rq[k][j]) for k in range(n)), Fraction(0))
            bound = g * absprod + (1 + g) * E.MIN_SUBNORMAL * (2 * n + rmax)
            assert abs(exact - Aq[i][j]) <= bound
    c = E.float_shift_bound(np.diag(A).tolist())
    assert c > 0


def test_float_shift_bound_dominates_rump_constant():
    d = [1.0, 2.0, 3.0]
    c = E.float_shift_bound(d)
    u = Fraction(1, 2**53)
    assert c >= sum((i + 3) * u * Fraction(x) for i, x in enumerate(d))
    assert c >= 2 * 4 * u * 6  # ~ 2 gamma_{n+1} tr(A)


def test_fp_environment_probe_passes_here():
    assert E.fp_environment_ok()


@settings(max_examples=15, deadline=None)
@given(st.integers(70, 140), st.integers(0, 12), st.integers(0, 12), st.integers(0, 2**31 - 1))
def test_low_rank_inertia_is_sylvesters(n, pos, neg, seed):
    """Q = C^T D C with C = [I_r | G] (rank r by construction): In(Q) = (pos, neg, n - r) by Sylvester's law."""
    from flowcert.certificates import exact

    r = pos + neg
    rng = np.random.default_rng(seed)
    C = np.hstack([np.eye(r), rng.integers(-4, 5, size=(r, n - r))]) if r else np.zeros((0, n))
    D = np.diag([1.0] * pos + [-1.0] * neg) * 0.375
    Q = C.T @ D @ C  # small integers times 3/8: float64 is exact
    assert np.array_equal(Q, Q.T)
    assert exact.inertia(exact.to_rational(Q)) == (pos, neg, n - r)
    holds, _, _ = exact.decide_definite(Q, strict=False)
    assert holds == (neg == 0)
    if r:  # one entry moved by 2^-30 (symmetrically): no longer exactly of rank r, the low-rank path must not answer
        Q2 = Q.copy()
        Q2[0, n - 1] += 2.0**-30
        Q2[n - 1, 0] += 2.0**-30
        from flowcert.certificates.pivot import inertia_low_rank

        got = inertia_low_rank(exact.to_rational(Q2), exact.inertia, exact.CHARPOLY_MAX_DIM)
        assert got is None or got[2] < n - r


def test_zero_column_decides_hurwitz_at_any_size():
    from flowcert.certificates import core, spectrum

    n = 120  # beyond the exact spectral inertia (8 rows)
    A = np.triu(np.random.default_rng(3).normal(size=(n, n)), 1) - np.diag(np.arange(1.0, n + 1))
    A[:, 17] = 0.0  # triangular: spec = {-k} and 0; A e_18 = 0, so A is not Hurwitz (abscissa exactly 0)
    res = spectrum.hurwitz("Hurwitz", A)
    assert res.status == "fails" and res.certificate.kind == "zero_eigenvalue"
    assert core.recheck(res.certificate)
    cert = spectrum.hurwitz("Hurwitz", A).certificate
    moved = {**cert.data, "v": ["0"] * n}
    assert not core.recheck(core.Certificate(cert.kind, cert.claim, moved))
    other = [x for x in cert.data["v"]]
    other[0], other[17] = "1", "0"
    assert not core.recheck(core.Certificate(cert.kind, cert.claim, {**cert.data, "v": other}))
