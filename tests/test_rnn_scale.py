"""KPFlow at scale (issue 36, item 3): the batched parameter Jacobian against explicit Jacobians, P in its
row layout (stored and recomputed, single and batched), the estimator in the factor's domain (unbiased,
honest standard errors, keep-T lambda_1 against a dense reference), the randomized effective rank, the
work counts against an instrumented run, the cost-model limits (refused before anything is built) and
``device=`` on every operator."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from flowcert import limits
from flowcert.gpu.rnn import cells, spectra, work
from flowcert.gpu.rnn import consensus as C
from flowcert.gpu.rnn.operators import (KPFlow, Operator, ParameterJacobian, Propagation, Trajectory, hidden_ntk,
                                        parameter_operator)

torch.set_num_threads(1)
F64 = torch.float64


def make(kind="gru", B=3, T=4, H=3, I=2, seed=0, g=1.3, **kw):
    cell, th = cells.init_params(kind, H, I, g=g, seed=seed, **kw)
    x = torch.randn(B, T, I + (H if cell.noisy else 0), dtype=F64, generator=torch.Generator().manual_seed(seed + 1))
    return Trajectory.run(cell, th, x, cells.initial_state(cell, B))


@pytest.mark.parametrize("kind,kw", [("gru", {}), ("torch_rnn", {}), ("rnn_tanh", {"bias": True}), ("relu_rnn", {}),
                                     ("linear", {}), ("hodgkin_huxley", {})])
def test_batched_parameter_jacobian_is_the_explicit_one(kind, kw):
    """G W and G^T Q for a batch of vectors (closed forms: one GEMM per weight for the batch; the others
    through autograd, one call per vector) equal the explicit dG/dtheta of every (b, t) (jacrev)."""
    tr = make(kind, H=4 if kind == "hodgkin_huxley" else 3, **kw)
    Gx = spectra.parameter_jacobian_dense(tr)  # [B, T, H, dim], parameters in theta order, row-major
    G = ParameterJacobian(tr)
    assert G.dim == Gx.shape[-1] and G.names == list(tr.theta)
    gen = torch.Generator().manual_seed(3)
    W = torch.randn(5, G.dim, generator=gen, dtype=F64)
    Q = torch.randn(5, *tr.shape, generator=gen, dtype=F64)
    ref_fwd = torch.einsum("bthd,nd->nbth", Gx, W)
    ref_adj = torch.einsum("bthd,nbth->nd", Gx, Q)
    scale = float(Gx.abs().max()) * 10
    assert torch.allclose(G.apply_batch(W), ref_fwd, atol=1e-13 * scale, rtol=0)
    assert torch.allclose(G.adjoint_batch(Q), ref_adj, atol=1e-13 * scale * Q.shape[1] * Q.shape[2], rtol=0)
    one = torch.cat([v.reshape(-1) for v in G.adjoint(Q[0]).values()])
    assert torch.allclose(one, ref_adj[0], atol=1e-13 * scale * 20, rtol=0)
    assert torch.allclose(G(G.unflatten(W[0])), ref_fwd[0], atol=1e-13 * scale, rtol=0)


@pytest.mark.parametrize("mode", ["stored", "recompute"])
def test_rows_layout_single_and_batched_agree_with_dense(mode):
    tr = make("gru", B=2, T=5, H=3)
    P = Propagation(tr, mode)
    D = Propagation(tr, "stored").dense()
    V = torch.randn(4, *tr.shape, dtype=F64, generator=torch.Generator().manual_seed(0))
    n = D.shape[0]
    for got, ref in ((P.apply_batch(V), V.reshape(4, n) @ D.T), (P.adjoint_batch(V), V.reshape(4, n) @ D),
                     (torch.stack([P(v) for v in V]), V.reshape(4, n) @ D.T),
                     (torch.stack([P.adjoint(v) for v in V]), V.reshape(4, n) @ D)):
        assert torch.allclose(got.reshape(4, n), ref, atol=1e-13 * float(D.abs().max()) * n, rtol=0)


def _factor_estimates(kp, name, keep, m, seeds):
    op, fa, f, dim = C.gram_factors(kp, name)
    return [C.partial_trace(op, keep, probes=m, seed=s, factor=f, factor_dim=dim, factor_adjoint=fa, exact=False)
            for s in range(seeds)]


@pytest.mark.parametrize("name,keep", [("PKP", "T"), ("PP", "H"), ("K", "B")])
def test_factor_domain_estimator_unbiased_with_honest_stderr(name, keep):
    """Probes omega in the factor's domain: over 150 seeds the pooled mean is within 5 pooled standard
    errors of the exact partial trace (dense) in every entry, and the reported standard errors are the
    size of the error (sum ||err||^2 / sum se^2 near 1), every per-probe matrix being PSD."""
    kp = KPFlow.build(make())
    op = {"K": kp.K, "PP": kp.PP, "PKP": kp.PKP}[name]
    ref = spectra.partial_trace_dense(op.dense(), op.shape, [a for a in "BTH" if a not in keep])
    rs = _factor_estimates(kp, name, keep, 12, 150)
    E = torch.stack([r.matrix for r in rs])
    pooled = E.std(0) / math.sqrt(len(rs))
    assert bool(((E.mean(0) - ref).abs() <= 5 * pooled + 1e-12 * float(ref.abs().max())).all())
    err2 = sum(float((r.matrix - ref).pow(2).sum()) for r in rs)
    se2 = sum(float(r.stderr.pow(2).sum()) for r in rs)
    assert 0.7 < err2 / se2 < 1.4
    assert all(float(torch.linalg.eigvalsh((M + M.T) / 2).min()) >= -1e-12 * float(M.abs().max()) for M in rs[0].per_probe)


def test_keep_T_lambda1_against_a_dense_reference():
    """The consensus spectrum of PKP* keep T (as kpflow analyze reports it) against the eigenvalues of the
    dense operator's true partial trace over (B, H), at a size where the operator is a 192 x 192 matrix:
    z-scores of lambda_1 over 30 seeds are standard (mean near 0, mean square near 1)."""
    kp = KPFlow.build(make(B=4, T=6, H=8, g=1.0))
    ref = spectra.partial_trace_dense(kp.PKP.dense(), kp.PKP.shape, ["B", "H"]) / 32
    lam1 = float(torch.linalg.eigvalsh(ref)[-1])
    z = []
    for seed in range(30):
        doc = C.consensus(kp, "PKP", "T", probes=48, seed=seed, exact=False)
        assert "factor's domain" in doc["method"] and doc["probes"] == 48
        z.append((doc["eigenvalues"][0] - lam1) / doc["stderr"][0])
    z = np.array(z)
    assert abs(z.mean()) < 0.7 and 0.3 < (z**2).mean() < 2.5


def _matrix_operator(M: torch.Tensor, shape, sym: bool) -> Operator:
    op = Operator(shape, lambda q: (M @ q.reshape(-1)).reshape(shape), lambda r: (M.T @ r.reshape(-1)).reshape(shape),
                  batch=lambda V: (V.reshape(V.shape[0], -1) @ M.T).reshape(V.shape),
                  rbatch=lambda V: (V.reshape(V.shape[0], -1) @ M).reshape(V.shape))
    op.self_adjoint = sym
    return op


@pytest.mark.parametrize("sym", [True, False])
def test_sketched_effective_rank(sym):
    """Rank-12 operators on R^{4 x 10 x 8} (n = 320): with 22 sketch vectors the top singular values are
    exact and the effective rank is the dense one; with 6 vectors they are lower bounds, the rank a
    lower bound, and the total unbiased (mean over seeds within 10%)."""
    gen = torch.Generator().manual_seed(0)
    shape = (4, 10, 8)
    n = 320
    U = torch.linalg.qr(torch.randn(n, 12, generator=gen, dtype=F64))[0]
    Vt = torch.linalg.qr(torch.randn(n, 12, generator=gen, dtype=F64))[0]
    s = 2.0 ** -torch.arange(12, dtype=F64) * 3
    M = U @ torch.diag(s) @ (U if sym else Vt).T
    op = _matrix_operator(M, shape, sym)
    dense = spectra.effective_rank(op)
    got = spectra.effective_rank(op, exact_max=10, k=12)
    assert got["value"] == dense["value"] and not got["exact"] and not got["lower_bound"]
    sk = spectra.sketch_spectrum(op, 22, 6, seed=1)
    assert np.allclose(sk["sigma2"][:12], (s**2).numpy(), rtol=1e-9)
    low = spectra.effective_rank(op, exact_max=10, k=2)
    assert low["lower_bound"] and low["value"] == 2
    small = [spectra.sketch_spectrum(op, 6, 6, seed=t) for t in range(40)]
    assert all(np.all(x["sigma2"][:6] <= (s**2).numpy()[:6] * (1 + 1e-9)) for x in small)
    assert np.mean([x["total"] for x in small]) == pytest.approx(float((s**2).sum()), rel=0.1)


def test_work_counts_match_an_instrumented_run(monkeypatch):
    """The applications of P, P* and G, G^T counted by flowcert.gpu.rnn.work equal (within 15%) the vectors
    an actual analysis pushes through them (sketch path and consensus)."""
    from flowcert.rnn.analyze import analyze
    from flowcert.rnn.params import parse_rnn

    seen = {"P": 0, "G": 0}
    prop, adj, app = Propagation.propagate, ParameterJacobian.adjoint_rows, ParameterJacobian.apply_rows

    def counted(key, f, n_of):
        def g(self, X, *a, **k):
            seen[key] += n_of(X)
            return f(self, X, *a, **k)
        return g

    monkeypatch.setattr(Propagation, "propagate", counted("P", prop, lambda R: R.shape[2]))
    monkeypatch.setattr(ParameterJacobian, "adjoint_rows", counted("G", adj, lambda R: R.shape[2]))
    monkeypatch.setattr(ParameterJacobian, "apply_rows", counted("G", app, lambda W: W.shape[0]))
    p = parse_rnn({"cell": "gru", "B": 3, "T": 10, "H": 50, "I": 3, "seed": 1})
    analyze(p, consensus="T", probes=8)
    w = work.analysis_work(3, 10, 50, 3, "gru", consensus="T", probes=8)["counts"]
    assert seen["P"] == pytest.approx(w["P"] + w["P_single"], rel=0.15)
    assert seen["G"] == pytest.approx(w["G"], rel=0.15)


def test_cost_limits_accept_the_peer_size_and_refuse_before_building(tmp_path, capsys, monkeypatch):
    """B = 32, T = 100, H = 128 with --consensus T (48 probes) and B = 1 are within the predicted budget; a
    request the model prices above it exits 2 with one line naming the limit, and nothing is built."""
    limits.check_kpflow_cost(32, 100, 128, 3, "gru", consensus="T", probes=48)
    limits.check_kpflow_cost(1, 100, 128, 3, "gru", consensus="T", probes=48)
    peer = limits.kpflow_cost(32, 100, 128, 3, "gru", consensus="T", probes=48)
    assert limits.RNN_COST_MARGIN * peer["cpu_seconds"] <= limits.LIMITS["rnn:cpu_seconds"]
    assert limits.RNN_COST_MARGIN * peer["bytes"] <= limits.LIMITS["rnn:bytes"]
    more = limits.kpflow_cost(64, 100, 128, 3, "gru", consensus="T", probes=48)
    assert more["cpu_seconds"] > peer["cpu_seconds"] and more["bytes"] > peer["bytes"]
    from flowcert import cli
    from flowcert.rnn import analyze as A

    def boom(*a, **k):
        raise AssertionError("built a model for a refused request")

    monkeypatch.setattr(A, "build_model", boom)
    f = tmp_path / "p.json"
    for params, extra, name in (({"cell": "gru", "B": 256, "T": 100, "H": 128, "I": 3}, [], "rnn:"),
                                ({"cell": "gru", "B": 32, "T": 100, "H": 128, "I": 3}, ["--consensus", "TH"], "rnn:"),
                                ({"cell": "gru", "B": 1000, "T": 1000, "H": 100, "I": 3}, [], "rnn:B*T*H")):
        f.write_text(json.dumps(params))
        assert cli.main(["kpflow", "analyze", "--params", str(f), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"LIMITS['{name}" in err and "Traceback" not in err


def test_device_argument_on_every_operator():
    """device= (CPU here; CUDA where one is lent) on P, K, G, the hidden NTK and KPFlow.build: the same
    numbers as the trajectory's own device."""
    tr = make("gru", B=2, T=4, H=3)
    ref = KPFlow.build(tr)
    q = torch.randn(tr.shape, dtype=F64, generator=torch.Generator().manual_seed(2))
    devices = ["cpu", torch.device("cpu")] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        kp = KPFlow.build(tr, device=dev)
        for op, r in ((kp.P, ref.P), (kp.K, ref.K), (kp.PKP, ref.PKP), (Propagation(tr, "recompute", device=dev), ref.P),
                      (parameter_operator(tr, device=dev), ref.K), (hidden_ntk(tr, device=dev), hidden_ntk(tr))):
            assert op.device.type == torch.device(dev).type
            assert torch.allclose(op(q.to(op.device)).cpu(), r(q), atol=1e-13)
        G = ParameterJacobian(tr, device=dev)
        assert torch.allclose(G.adjoint_batch(q[None].to(G.tr.device)).cpu(), ParameterJacobian(tr).adjoint_batch(q[None]),
                              atol=1e-13)
