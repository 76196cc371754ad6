"""Hypothesis properties of the attention model in the consensus paper's setting (eq. (7)): attention
rows sum to the normalisation, the flow stays on the ellipsoid, causal token 1 never moves, the
two-token closed form, and the max-type Lyapunov function of Thm 4.1 never increases in a hemisphere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("flowcert.attention.params", reason="the attention model core (branch attn) is not merged here")

from flowcert import attention as A  # noqa: E402
from flowcert.numeric.attention import consensus as nc  # noqa: E402
from flowcert.symbolic import codegen  # noqa: E402
from flowcert.symbolic.attention import field as sf  # noqa: E402

SEEDS = st.integers(0, 2**31 - 1)


def _random_params(rng, n, d, h, causal, norm, ellipsoid, scale=1.0, U=None):
    heads = [{"P": (scale * rng.uniform(-1, 1, (d, d))).tolist(), "V": (np.eye(d) if U is None else U).tolist()} for _ in range(h)]
    raw = {"heads": heads, "causal": causal, "normalization": norm, "n": n, "seed": int(rng.integers(1 << 30))}
    if ellipsoid:
        B = rng.uniform(-1, 1, (d, d))
        raw["W"] = (B @ B.T + 0.5 * np.eye(d)).tolist()
    return A.parse(raw)


def _attention_kernel(norm, causal):
    expr = sf.attention_matrix(norm, sf.Q, sf.K, causal)
    inputs = [sf.X, sf.Q, sf.K] + ([sf.C] if causal else [])
    return codegen.NumpyPrinter().compile(codegen.lower_expressions("attention_matrix", [("A", expr)], inputs))


@settings(max_examples=15, deadline=None)
@given(SEEDS, st.integers(1, 7), st.integers(1, 5), st.booleans(), st.sampled_from(["unit", "sqrt"]))
def test_rows_sum_to_normalisation(seed, n, d, causal, norm):
    from flowcert.numeric.attention.field import causal_mask

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Q, K = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    args = [X, Q, K] + ([causal_mask(n)] if causal else [])
    Am = _attention_kernel(norm, causal)(*args)[0]
    c = 1.0 if norm == "unit" else 1.0 / np.sqrt(d)
    assert np.allclose(Am.sum(axis=1), c, rtol=1e-13, atol=0)
    assert np.all(Am >= 0)
    if causal:
        assert np.all(Am[np.triu_indices(n, 1)] == 0)
    # and the weights agree with an independent transcription (Lemma 4.1's quantity)
    assert np.allclose(Am, nc.attention_weights(X, Q.T @ K, causal=causal, row_sum=c), rtol=1e-12, atol=1e-300)


@settings(max_examples=10, deadline=None)
@given(SEEDS, st.integers(2, 6), st.integers(2, 4), st.integers(1, 3), st.booleans())
def test_flow_stays_on_ellipsoid(seed, n, d, h, causal):
    rng = np.random.default_rng(seed)
    p = _random_params(rng, n, d, h, causal, "sqrt", ellipsoid=True)
    X = p.initial_tokens()
    F = A.field(p)(0.0, X)
    # the field is tangent: y_i^T W f_i = 0 on the ellipsoid (scale-aware round-off)
    tang = np.einsum("id,de,ie->i", X, p.W, F)
    assert np.abs(tang).max() <= 1e-12 * (1 + np.abs(F).max()) * np.abs(p.W).max()
    tr = A.integrate(p, 2.0, X)
    assert tr.ok and tr.drift <= 1e-6
    assert np.allclose(np.einsum("tid,de,tie->ti", tr.X, p.W, tr.X), 1.0, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(SEEDS, st.integers(2, 6), st.integers(2, 4), st.integers(1, 3), st.sampled_from(["unit", "sqrt"]))
def test_causal_token_one_never_moves(seed, n, d, h, norm):
    rng = np.random.default_rng(seed)
    p = _random_params(rng, n, d, h, True, norm, ellipsoid=False, scale=3.0)
    X = p.initial_tokens()
    F = A.field(p)(0.0, X)
    assert np.abs(F[0]).max() <= 1e-14
    tr = A.integrate(p, 3.0, X)
    assert tr.ok
    assert np.abs(tr.X[:, 0] - X[0]).max() <= 1e-14


@settings(max_examples=10, deadline=None)
@given(SEEDS, st.integers(2, 5), st.integers(1, 3), st.booleans(), st.floats(-0.95, 0.95))
def test_two_token_closed_form(seed, d, h, causal, a0):
    rng = np.random.default_rng(seed)
    y1 = rng.normal(size=d)
    y1 /= np.linalg.norm(y1)
    w = rng.normal(size=d)
    w -= (w @ y1) * y1
    w /= np.linalg.norm(w)
    X0 = np.array([y1, a0 * y1 + np.sqrt(1 - a0**2) * w])
    raw = {"heads": [{"P": np.zeros((d, d)).tolist(), "V": np.eye(d).tolist()} for _ in range(h)],
           "causal": causal, "normalization": "sqrt", "X0": X0.tolist()}
    p = A.parse(raw)
    ts = np.linspace(0.0, 3.0, 31)
    tr = A.integrate(p, 3.0, X0, t_eval=ts)
    a = np.einsum("td,td->t", tr.X[:, 0], tr.X[:, 1])
    k = h / (np.sqrt(d) * (2 if causal else 1))
    assert np.allclose(a, nc.two_token_inner_product(a0, k, ts), atol=1e-7)


@settings(max_examples=10, deadline=None)
@given(SEEDS, st.integers(2, 8), st.integers(2, 4), st.integers(1, 3), st.booleans())
def test_max_lyapunov_never_increases_in_hemisphere(seed, n, d, h, ellipsoid):
    rng = np.random.default_rng(seed)
    p0 = _random_params(rng, n, d, h, False, "sqrt", ellipsoid=ellipsoid, scale=2.0)
    v = rng.normal(size=d)
    X = p0.initial_tokens()
    X = X * np.where(X @ v < 0, -1.0, 1.0)[:, None]  # flip into the hemisphere v^T y > 0
    f = A.field(p0)
    # pointwise: the Dini derivative is <= 0 (Thm 4.1's per-term inequality)
    assert nc.dini_max(X, f(0.0, X), v) <= 1e-14 * (1 + np.abs(f(0.0, X)).max())
    tr = A.integrate(p0, 5.0, X, t_eval=np.linspace(0, 5, 201))
    assert tr.ok
    Vs = nc.V_max(tr.X, v)
    assert nc.largest_increase(Vs) <= 1e-8
    assert nc.hemisphere_min(tr.X, v).min() > 0
