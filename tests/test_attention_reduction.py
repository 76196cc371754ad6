"""Real-head structure in the attention system: the invariant-subspace reduction of the runs, the
factored scores, and the exact decisions taken on float data.

* :mod:`flowcert.numeric.attention.reduction`: :math:`F(ZB^\\top)=F'(Z)B^\\top` (property test), the
  reduced and full runs agree at d = 64 (scipy and torch), and nothing is reduced without the
  structure (full-rank V, time-varying heads, an ellipsoid, a gap-free spectrum).
* :func:`flowcert.numeric.attention.consensus.scores` with a factor pair equals the dense product.
* Asymmetry of U decided on floats gives the verdict the rational matrices give, down to one ulp; :func:`~flowcert.certificates.attention.bounds.square_sum` equals an independent Fraction
  loop; the hemisphere checkers refuse malformed and tampered data.
"""

from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from flowcert import attention
from flowcert.certificates import core
from flowcert.certificates.attention import bounds, consensus as cc
from flowcert.numeric.attention import consensus as nc
from flowcert.numeric.attention.reduction import UNIT_ROUNDOFF, invariant_subspace, value_range

D, RANK, N = 64, 8, 5


def _sphere(rng, n, d):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _low_rank_value(rng, d, r):
    """V = O W with small integers over powers of two: the float product is exact, so rank V = r exactly."""
    O = rng.integers(-8, 9, size=(d, r)) / 16.0
    Wv = rng.integers(-8, 9, size=(r, d)) / 16.0
    return O @ Wv


def _head_params(rng, *, d=D, r=RANK, n=N, heads=1, causal=False, beta=0.5, m=4, norm="unit"):
    hs = [{"Q": rng.normal(size=(m, d)).tolist(), "K": rng.normal(size=(m, d)).tolist(),
           "V": _low_rank_value(rng, d, r).tolist()} for _ in range(heads)]
    return attention.parse({"heads": hs, "beta": beta, "causal": causal, "X0": _sphere(rng, n, d).tolist(), "n": n,
                            "normalization": norm})


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), heads=st.integers(1, 2), causal=st.booleans(),
       norm=st.sampled_from(["unit", "sqrt"]))
def test_field_commutes_with_the_lift(seed, heads, causal, norm):
    """F(Z B^T) = F'(Z) B^T for tokens Z of the reduced system (any Z on its sphere, not only the run's),
    rows summing to 1 or to 1/sqrt(d) (the ambient d, not the reduced width)."""
    rng = np.random.default_rng(seed)
    p = _head_params(rng, heads=heads, causal=causal, norm=norm)
    q, sub = attention.reduced(p, p.X0)
    assert sub.dim <= heads * RANK + N and q.d == sub.dim
    np.testing.assert_allclose(sub.B.T @ sub.B, np.eye(sub.dim), atol=1e-13)
    np.testing.assert_allclose(sub.lift(q.X0), p.X0, atol=1e-14)  # X0 lies in S
    Z = _sphere(rng, N, sub.dim)
    full = attention.field(p)(0.0, sub.lift(Z))
    red = sub.lift(attention.field(q)(0.0, Z))
    np.testing.assert_allclose(red, full, rtol=0, atol=1e-12 * max(1.0, np.abs(full).max()))


def test_reduced_and_full_runs_agree_at_d64():
    rng = np.random.default_rng(4)
    p = _head_params(rng)
    full = attention.integrate(p, 3.0, reduce=False)
    red = attention.integrate(p, 3.0)
    assert full.reduction is None and red.reduction["dim"] <= RANK + N and red.reduction["neglected"] <= D * UNIT_ROUNDOFF
    assert full.ok and red.ok and red.X.shape == full.X.shape
    assert np.abs(red.X - full.X).max() < 1e-8
    sim = attention.simulate(p, t_end=3.0)  # the torch run: reduced, lifted
    assert sim["reduction"]["dim"] == red.reduction["dim"] and sim["reduction"]["d"] == D
    assert np.abs(np.array(sim["X_final"]) - full.X[-1]).max() < 1e-7
    assert np.abs(np.linalg.norm(np.array(sim["X_final"]), axis=1) - 1).max() < 1e-12


def test_no_reduction_without_the_structure():
    rng = np.random.default_rng(5)
    p = attention.parse({"Q": rng.normal(size=(D, D)).tolist(), "K": rng.normal(size=(D, D)).tolist(),
                         "V": rng.normal(size=(D, D)).tolist(), "X0": _sphere(rng, N, D).tolist(), "n": N})
    assert attention.reduced(p, p.X0) is None  # full-rank V: k = d + n > d / 2
    assert attention.simulate(p, t_end=0.5)["reduction"] is None
    V = _low_rank_value(rng, D, RANK)
    W = np.eye(D) * 2.0
    X0 = _sphere(rng, N, D) / np.sqrt(2.0)
    pw = attention.parse({"Q": np.eye(D).tolist(), "K": np.eye(D).tolist(), "V": V.tolist(), "W": W.tolist(),
                          "X0": X0.tolist(), "n": N})
    assert attention.reduced(pw, pw.X0) is None  # ellipsoid: left full
    pt = attention.parse({"heads": [{"Q": np.eye(4).tolist(), "K": np.eye(4).tolist(),
                                     "V": [["sin(t)", 0, 0, 0], [0] * 4, [0] * 4, [0] * 4]}], "n": 2, "t_end": 1.0})
    assert attention.reduced(pt, pt.initial_tokens()) is None  # time-varying


def test_rounding_level_singular_values_are_dropped_and_larger_ones_kept():
    rng = np.random.default_rng(6)
    V = _low_rank_value(rng, D, RANK)
    U, s, Wt = np.linalg.svd(V)
    for tiny, kept in ((1e-17, RANK), (1e-9, RANK + 1)):
        s2 = s.copy()
        s2[RANK] = tiny * s[0]
        basis, dropped = value_range((U * s2) @ Wt)
        assert basis.shape[1] == kept
        assert dropped <= D * UNIT_ROUNDOFF
    assert invariant_subspace([np.zeros((D, D))], _sphere(rng, N, D)).dim == N


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 6), causal=st.booleans())
def test_factored_scores_equal_dense(seed, m, causal):
    rng = np.random.default_rng(seed)
    X = _sphere(rng, 7, 12)[None].repeat(3, axis=0)
    A, B = rng.normal(size=(m, 12)), rng.normal(size=(m, 12))
    dense = np.einsum("...id,de,...je->...ij", X, A.T @ B, X)
    np.testing.assert_allclose(nc.scores(X, (A, B)), dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nc.log_attention_weights(X, (A, B), causal=causal),
                               nc.log_attention_weights(X, A.T @ B, causal=causal), rtol=1e-12, atol=1e-12)


def test_float_asymmetry_gives_the_rational_verdict():
    """One ulp off symmetric: 'fails' (exact symmetry), as the rational comparison says; symmetric: decided as before."""
    rng = np.random.default_rng(7)
    S = rng.normal(size=(6, 6))
    S = S + S.T + 12 * np.eye(6)
    T = S.copy()
    T[1, 4] = np.nextafter(T[1, 4], np.inf)
    assert core.rational_matrix(T) != core.rational_matrix(T).T
    res, te = cc.simple_positive_top_eigenvalue(T)
    assert res.status == "fails" and res.method == "exact symmetry" and te is None
    assert cc.simple_positive_top_eigenvalue(S)[0].status == "holds"
    bad = T.copy()
    bad[0, 0] = np.nan  # not decided on floats: the rational path refuses non-finite data
    with pytest.raises(ValueError):
        cc.simple_positive_top_eigenvalue(bad)


def _fraction_square_sum(A):
    return sum((Fraction(float(x)) ** 2 for x in np.ravel(A)), Fraction(0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=-1e100, max_value=1e100), max_size=40),
       st.sampled_from([1.0, 1e-300, 2.0**-1070, 1e150]))
def test_square_sum_is_exact(values, scale):
    A = np.array(values, dtype=np.float64) * scale
    assert bounds.square_sum(A) == _fraction_square_sum(A)


def test_square_sum_large_and_refuses_non_finite():
    rng = np.random.default_rng(8)
    A = rng.normal(size=(96, 80)) * 10.0 ** rng.integers(-200, 200, size=(96, 80))
    assert bounds.square_sum(A) == _fraction_square_sum(A)
    with pytest.raises(ValueError):
        bounds.square_sum(np.array([1.0, np.inf]))


def test_hemisphere_checkers_refuse_malformed_and_tampered_data():
    Y = _sphere(np.random.default_rng(9), 4, 3)
    Y[:, 0] = np.abs(Y[:, 0]) + 0.1  # all in the half-space x_0 > 0
    res, _ = cc.open_hemisphere(Y)
    assert res.status == "holds" and core.recheck(res.certificate)
    def minus_v(d):  # token 2 := -v, so that v^T y_2 = -|v|^2 < 0
        d["Y"][1] = [x[1:] if x.startswith("-") else "-" + x for x in d["v"]]

    for change in (lambda d: d["Y"][0].pop(), lambda d: d["v"].pop(), lambda d: d.__setitem__("Y", []), minus_v):
        c = copy.deepcopy(res.certificate)
        change(c.data)
        assert not core.recheck(c)
    res, _ = cc.open_hemisphere(nc.regular_tetrahedron())
    assert res.status == "fails" and core.recheck(res.certificate)
    c = copy.deepcopy(res.certificate)
    c.data["lambda"][0] = str(Fraction(c.data["lambda"][0]) + Fraction(1, 10**6))  # sum != 1
    assert not core.recheck(c)
