"""Partial traces over (B, T, H) axes: exact path = dense einsum; Rademacher estimator unbiased with
honest standard errors (many seeds, pooled); the block sum (kpflow's partial_trace) biased where the
operator is not block-diagonal over the traced axes; GRU's K has diagonal H x H blocks (erratum to
note §1.6)."""

from __future__ import annotations

import math

import pytest
import torch

from flowcert.gpu.rnn import cells, spectra
from flowcert.gpu.rnn import consensus as C
from flowcert.gpu.rnn.operators import KPFlow, Operator, Trajectory, parameter_operator

torch.set_num_threads(1)
F64 = torch.float64


def make(kind="gru", B=3, T=4, H=3, I=2, seed=0, g=1.5):
    cell, th = cells.init_params(kind, H, I, g=g, seed=seed)
    x = torch.randn(B, T, I, dtype=F64, generator=torch.Generator().manual_seed(seed + 1))
    return Trajectory.run(cell, th, x, cells.initial_state(cell, B))


def exact_dense(op, keep):
    return spectra.partial_trace_dense(op.dense(), op.shape, [a for a in "BTH" if a not in keep])


@pytest.mark.parametrize("keep", ["T", "H", "B", "TH", "BT", "BH"])
def test_exact_path_matches_dense(keep):
    kp = KPFlow.build(make())
    for name in ("K", "PP", "PKP"):
        op = {"K": kp.K, "PP": kp.PP, "PKP": kp.PKP}[name]
        ref = exact_dense(op, keep)
        got = C.partial_trace(op, keep, exact=True).matrix
        assert torch.allclose(got, ref, atol=1e-13 * float(ref.abs().max()), rtol=0)
        doc = C.consensus(kp, name, keep, exact=True, top=50)
        lam = torch.linalg.eigvalsh(ref / (op.size // ref.shape[0])).flip(0)
        assert torch.allclose(torch.tensor(doc["eigenvalues"], dtype=F64), lam, atol=1e-13 * float(lam.abs().max()))
        assert doc["exact"] and all(s == 0 for s in doc["stderr"])


@pytest.mark.parametrize("name,keep", [("PKP", "T"), ("PP", "H"), ("K", "B")])
def test_estimator_unbiased_with_honest_stderr(name, keep):
    """Over 150 seeds: (i) the pooled mean is within 5 pooled standard errors of the exact trace in
    every entry (unbiased); (ii) sum over seeds of ||error||_F^2 / sum over seeds of sum(se^2) is near
    1: both are unbiased for sum(var)/m, so the reported standard errors are the size of the error,
    neither much smaller nor much larger. (A per-seed ratio is heavy-tailed with m = 12.)"""
    kp = KPFlow.build(make())
    op = {"K": kp.K, "PP": kp.PP, "PKP": kp.PKP}[name]
    ref = exact_dense(op, keep)
    n, m = 150, 12
    ests, err2, se2 = [], 0.0, 0.0
    fa = None
    if name == "PP":
        fa = lambda V: kp.P.adjoint_batch(V).reshape(V.shape[0], -1)  # noqa: E731
    for seed in range(n):
        r = C.partial_trace(op, keep, probes=m, seed=seed, exact=False, factor_adjoint=fa)
        ests.append(r.matrix)
        err2 += float((r.matrix - ref).pow(2).sum())
        se2 += float(r.stderr.pow(2).sum())
    E = torch.stack(ests)
    pooled_se = E.std(0) / math.sqrt(n)
    dev = (E.mean(0) - ref).abs()
    assert bool((dev <= 5 * pooled_se + 1e-12 * float(ref.abs().max())).all())
    assert 0.7 < err2 / se2 < 1.4


def test_consensus_eigenvalues_within_error_bars():
    kp = KPFlow.build(make(B=4, T=6, H=4))
    ref = exact_dense(kp.PKP, "T")
    lam = torch.linalg.eigvalsh(ref / (4 * 4)).flip(0)
    zs = []
    for seed in range(40):
        doc = C.consensus(kp, "PKP", "T", probes=30, seed=seed, exact=False)
        zs.append((doc["eigenvalues"][0] - float(lam[0])) / doc["stderr"][0])
        # Weyl: every eigenvalue error is at most ||E||_2 <= ||E||_F, whose RMS is stderr_frobenius
        err = (torch.tensor(doc["eigenvalues"], dtype=F64) - lam[: len(doc["eigenvalues"])]).abs().max()
        assert float(err) <= 6 * doc["stderr_frobenius"]
    zs = torch.tensor(zs)
    assert abs(float(zs.mean())) < 0.6 and 0.3 < float((zs**2).mean()) < 2.5


def test_block_sum_is_biased_where_not_block_diagonal():
    """Kronecker A = M (x) C: block sum = (1^T C 1) M, partial trace = tr(C) M; and on the GRU's
    P P^T keep-T the block sum is off by far more than the estimator's error."""
    gen = torch.Generator().manual_seed(5)
    dims = (2, 3, 4)
    Mk = torch.randn(2, 2, dtype=F64, generator=gen)
    Cs = torch.randn(12, 12, dtype=F64, generator=gen)
    A = torch.kron(Mk, Cs)
    op = Operator(dims, lambda q: (A @ q.reshape(-1)).reshape(dims), lambda r: (A.T @ r.reshape(-1)).reshape(dims))
    assert torch.allclose(C.partial_trace(op, "B", exact=True).matrix, torch.trace(Cs) * Mk, atol=1e-12)
    assert torch.allclose(C.block_sum(op, "B"), Cs.sum() * Mk, atol=1e-12)
    kp = KPFlow.build(make(B=3, T=5, H=4))
    ref = exact_dense(kp.PP, "T")
    doc = C.consensus(kp, "PP", "T", probes=200, seed=0, exact=False)
    r = C.partial_trace(kp.PP, "T", probes=400, seed=0, exact=False)
    bs = C.block_sum(kp.PP, "T")
    assert float((bs - ref).norm()) > 6 * float(r.stderr.norm())  # measured: about 13x
    assert float((r.matrix - ref).norm()) < 4 * float(r.stderr.norm())
    assert doc["block_sum_relative_difference"] > 0.02
    # P is block-diagonal over trials: tracing B alone, the block sum is exact
    assert torch.allclose(C.block_sum(kp.PP, "TH"), exact_dense(kp.PP, "TH"), atol=1e-12 * float(ref.abs().max()))


@pytest.mark.parametrize("kind", ["gru", "torch_rnn", "rnn_tanh"])
def test_K_has_diagonal_hidden_blocks(kind):
    """Erratum (note §1.6 says the GRU's blocks are dense): unit i of a GRU depends only on rows
    i, H+i, 2H+i of every weight and bias (of the torch RNN, on row i), so
    K_{(b,t),(b',s)} = G_{bt} G_{b's}^T / B is diagonal in the hidden index, exactly (disjoint
    parameter supports). Hence the block sum over H equals the true partial trace over H."""
    tr = make(kind, B=2, T=3, H=4)
    Kop = parameter_operator(tr)
    K = Kop.dense().reshape(2, 3, 4, 2, 3, 4)
    off = ~torch.eye(4, dtype=torch.bool)
    assert float(K.permute(0, 1, 3, 4, 2, 5)[..., off].abs().max()) == 0.0
    assert float(K.abs().max()) > 0
    assert torch.allclose(C.block_sum(Kop, "BT"), exact_dense(Kop, "BT"), atol=1e-13 * float(K.abs().max()))


def test_parse_keep():
    assert C.parse_keep("HT") == ("T", "H")
    for bad in ("", "BTH", "X"):
        with pytest.raises(ValueError):
            C.parse_keep(bad)


def test_block_sum_through_gram_factor():
    kp = KPFlow.build(make())
    fa = lambda V: kp.P.adjoint_batch(V).reshape(V.shape[0], -1)  # noqa: E731
    for keep in ("T", "H", "BT"):
        a, b = C.block_sum(kp.PP, keep), C.block_sum(kp.PP, keep, fa)
        assert torch.allclose(a, b, atol=1e-13 * float(a.abs().max()))
