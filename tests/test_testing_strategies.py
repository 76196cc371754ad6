"""Every strategy of flowcert.testing keeps its promise, confirmed by the certificates flowcert uses.

Symmetric promises: exact LDL^T inertia (``core.inertia_certificate`` re-checked by
``core.recheck``) of M, M - margin I and M + margin I. Spectra: the Lyapunov / inertia
certificates of ``certificates.spectrum`` (exact re-checks). Tokens: exact rational dot products
(hemisphere), an exact antipodal pair (Gordan), manifold residuals at the parameter files'
tolerance. Sizes: every draw stays within MAX_DIM / MAX_TOKENS and its stated entry bounds (which is
what keeps one example to milliseconds; no test asserts on time).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flowcert.certificates import core, spectrum
from flowcert.testing import (
    MAX_DIM,
    MAX_TOKENS,
    anti_hurwitz,
    ellipsoid_tokens,
    for_theorem,
    gaussian_state,
    hemisphere_tokens,
    hurwitz,
    in_open_hemisphere_certificate,
    indefinite,
    mixed_spectrum,
    near_marginal,
    negative_definite,
    no_hemisphere_tokens,
    not_in_hemisphere_certificate,
    positive_definite,
    simple_top_with_vector,
    sphere_tokens,
    symmetric,
    with_spectrum,
)
from flowcert.testing.matrices import scaled_orthogonal

FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def inertia(M) -> tuple[int, int, int]:
    cert = core.inertia_certificate(M, "M")
    assert core.recheck(cert)
    return tuple(cert.data["inertia"])


def shifted(M: np.ndarray, s: float) -> sp.Matrix:
    return core.rational_matrix(M) + sp.Rational(s) * sp.eye(M.shape[0])


def assert_capped(M: np.ndarray, bound: float) -> None:
    assert M.dtype == np.float64 and M.ndim == 2 and M.shape[0] == M.shape[1] <= MAX_DIM
    assert np.isfinite(M).all() and np.abs(M).max(initial=0) <= MAX_DIM * bound


@FAST
@given(st.data())
def test_scaled_orthogonal_is_exact(data):
    d = data.draw(st.integers(1, MAX_DIM))
    Q, c = data.draw(scaled_orthogonal(d))
    assert (Q.T.dot(Q) == c * np.eye(d, dtype=object)).all()


@FAST
@given(st.data())
def test_symmetric_inertia_and_margin(data):
    d = data.draw(st.integers(1, MAX_DIM))
    p = data.draw(st.integers(0, d))
    n = data.draw(st.integers(0, d - p))
    margin = data.draw(st.sampled_from([0.5, 0.1, 1e-3]))
    M = data.draw(symmetric(d, (p, n, d - p - n), margin=margin, bound=5.0))
    assert_capped(M, 5.0)
    assert (M == M.T).all()
    assert inertia(M) == (p, n, d - p - n)
    # every positive eigenvalue >= margin and every negative one <= -margin, exactly:
    assert inertia(shifted(M, -margin))[0] + inertia(shifted(M, -margin))[2] >= p
    assert inertia(shifted(M, -margin))[1] == n + (d - p - n)
    assert inertia(shifted(M, margin))[0] == p + (d - p - n)
    # and |lambda| <= bound
    assert inertia(shifted(M, -5.0))[0] == 0 and inertia(shifted(M, 5.0))[1] == 0


@FAST
@given(positive_definite(margin=0.2, bound=3.0), negative_definite(margin=0.2, bound=3.0), indefinite(margin=0.2))
def test_definite_and_indefinite(P, N, M):
    assert core.is_pd(shifted(P, -0.2)) or core.is_psd(shifted(P, -0.2))
    assert core.is_psd(-shifted(N, 0.2))
    i = inertia(M)
    assert i[0] >= 1 and i[1] >= 1 and i[2] == 0


@settings(max_examples=1, deadline=None)
@given(st.data())
def test_symmetric_rejects_bad_arguments(data):
    with pytest.raises(ValueError, match="inertia"):
        data.draw(symmetric(3, (1, 1, 0)))
    with pytest.raises(ValueError, match="margin"):
        data.draw(symmetric(3, margin=0.0))
    with pytest.raises(ValueError, match="d:"):
        data.draw(positive_definite(MAX_DIM + 1))


@FAST
@given(hurwitz(margin=0.1, bound=2.0))
def test_hurwitz_is_certified(A):
    assert_capped(A, 40.0)
    assert spectrum.hurwitz("A", A).status == "holds"
    # margin: A + 0.1 I is still not unstable (all real parts <= -0.1), checked by the exact count
    count, cert = spectrum.unstable_count(A + 0.05 * np.eye(A.shape[0]))
    assert count == 0 and core.recheck(cert)


@FAST
@given(anti_hurwitz(margin=0.1, bound=2.0))
def test_anti_hurwitz_is_certified(A):
    assert spectrum.hurwitz("-A", -A).status == "holds"


def certified_unstable_count(A: np.ndarray, margin: float) -> int | None:
    """``spectrum.unstable_count`` of A, or of A - s I for a shift s < margin (same count, since every
    |Re lambda| >= margin), which avoids the singular Lyapunov equation of spectra symmetric about iR."""
    for s in (0.0, margin / 2, margin / 3, margin / 5):
        count, cert = spectrum.unstable_count(A - s * np.eye(A.shape[0]))
        if count is not None:
            assert core.recheck(cert)
            return count
    return None


# found by this test: eigenvalues +-a make the Lyapunov equation A^T P + P A = -I singular
SYMMETRIC_PAIR = np.array([[0.1015625, 0.00390625], [0.0, -0.1015625]])


@FAST
@given(st.data())
def test_with_spectrum_counts_unstable_eigenvalues(data):
    d = data.draw(st.integers(1, MAX_DIM))
    k = data.draw(st.integers(0, d))
    A = data.draw(with_spectrum(d, k, margin=0.1, bound=2.0))
    assert certified_unstable_count(A, 0.1) == k


def test_symmetric_pair_counted_with_a_shift():
    assert certified_unstable_count(SYMMETRIC_PAIR, 0.1) == 1


def test_unstable_count_symmetric_pair_regression():
    """Eigenvalues lambda, -lambda make the Lyapunov equation singular; the exact fallback still counts."""
    count, _ = spectrum.unstable_count(SYMMETRIC_PAIR)
    assert count == 1


@FAST
@given(mixed_spectrum(margin=0.1))
@example(SYMMETRIC_PAIR)
def test_mixed_spectrum(A):
    count = certified_unstable_count(A, 0.1)
    assert count is not None and 1 <= count <= A.shape[0] - 1


@FAST
@given(st.data())
def test_near_marginal_distance(data):
    delta = data.draw(st.sampled_from([1e-2, 1e-3]))
    side = data.draw(st.sampled_from(["stable", "unstable"]))
    A = data.draw(near_marginal(d=data.draw(st.integers(1, 4)), distance=delta, side=side))
    n = A.shape[0]
    if side == "stable":
        assert spectrum.hurwitz("A", A).status == "holds"
        # abscissa in [-delta(1+2^-16), -delta]: A + 2 delta I has an eigenvalue with Re > 0
        count = certified_unstable_count(A + 2 * delta * np.eye(n), delta / 2)
        assert count is not None and count >= 1
    else:
        assert certified_unstable_count(A, delta) == 1
        assert spectrum.hurwitz("A - 2 delta I", A - 2 * delta * np.eye(n)).status == "holds"
    top = np.linalg.eigvals(A).real.max()
    assert abs(abs(top) - delta) <= 2.0**-15 * delta + 1e-12


@FAST
@given(st.data())
def test_gaussian_state_rank(data):
    d = data.draw(st.integers(1, MAX_DIM))
    r = data.draw(st.integers(0, d))
    mu, S = data.draw(gaussian_state(d, r))
    assert mu.shape == (d,) and np.abs(mu).max() <= 2.0
    assert inertia(S) == (r, 0, d - r)


@FAST
@given(st.data())
def test_tokens(data):
    n = data.draw(st.integers(2, MAX_TOKENS))
    d = data.draw(st.integers(2, MAX_DIM))
    X = data.draw(sphere_tokens(n, d))
    assert X.shape == (n, d) and np.abs(np.linalg.norm(X, axis=1) - 1).max() <= 1e-12
    Y, W = data.draw(ellipsoid_tokens(n, d))
    assert core.is_pd(core.rational_matrix(W))
    assert np.abs(np.einsum("ij,jk,ik->i", Y, W, Y) - 1).max() <= 1e-12
    margin = data.draw(st.sampled_from([0.05, 0.3, 0.9]))
    H, v = data.draw(hemisphere_tokens(n, d, margin))
    assert in_open_hemisphere_certificate(H, v)
    assert in_open_hemisphere_certificate(H, v) and (H @ v).min() >= margin - 1e-12
    Z, pair = data.draw(no_hemisphere_tokens(n, d))
    assert not_in_hemisphere_certificate(Z, pair)
    # Gordan: no v can separate an exact antipodal pair, whatever v the hemisphere strategy proposes
    assert not in_open_hemisphere_certificate(Z, v)


@FAST
@given(st.data())
def test_simple_top_eigenvector(data):
    d = data.draw(st.integers(2, MAX_DIM))
    V, v = data.draw(simple_top_with_vector(d, gap=0.25))
    lam = np.linalg.eigvalsh(V)
    assert lam[-1] > 0 and lam[-1] - lam[-2] >= 0.25 - 1e-12
    assert np.linalg.norm(V @ v - lam[-1] * v) <= 1e-12 * (1 + lam[-1])
    # the gap, exactly: V - (lambda_2 + gap/2) I has exactly one positive eigenvalue
    assert inertia(shifted(V, -(float(lam[-2]) + 0.125)))[0] == 1


def test_for_theorem_unknown_and_impossible_sides():
    with pytest.raises(KeyError):
        for_theorem("gaussian:thm-9.9")
    with pytest.raises(ValueError, match="Sigma0 >= 0"):
        for_theorem("gaussian:thm-3.3", satisfied=False)


CAPPED = {
    "symmetric": (symmetric(), 10.0),
    "positive_definite": (positive_definite(), 10.0),
    "indefinite": (indefinite(), 10.0),
    "hurwitz": (hurwitz(), 4.0 * 2**6),  # S T S^-1 with three mixing layers: entries grow by at most 2^6
    "anti_hurwitz": (anti_hurwitz(), 4.0 * 2**6),
    "mixed_spectrum": (mixed_spectrum(), 4.0 * 2**6),
    "near_marginal": (near_marginal(), 4.0 * 2**6),
}


@pytest.mark.parametrize("name", sorted(CAPPED))
def test_matrix_strategies_are_capped(name):
    strategy, bound = CAPPED[name]

    @settings(max_examples=10, deadline=None)
    @given(strategy)
    def run(M):
        assert_capped(M, bound)

    run()


@FAST
@given(st.data())
def test_state_and_parameter_strategies_are_capped(data):
    from flowcert.testing import attention_params

    mu, S = data.draw(gaussian_state())
    assert mu.shape[0] == S.shape[0] <= MAX_DIM and np.abs(S).max(initial=0) <= MAX_DIM * 4.0
    doc = data.draw(attention_params(heads=data.draw(st.integers(1, 3))))
    X = np.array(doc["X0"])
    assert X.shape[0] == doc["n"] <= MAX_TOKENS and X.shape[1] <= MAX_DIM and len(doc["heads"]) <= 3
    for h in doc["heads"]:
        for key in ("Q", "K", "V"):
            M = np.array(h[key])
            assert M.shape == (X.shape[1],) * 2 and np.isfinite(M).all() and np.abs(M).max() <= 4.0 * MAX_DIM
