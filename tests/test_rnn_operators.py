"""KPFlow operators of the rnn system: identities checked against independent constructions.

* P, P^T, P^-1 against a dense P built from explicit Jacobian products (torch.func.jacrev per step),
  and against the direct perturbation form z_t = F(z_{t-1}) + q_t (exact through jvp);
* K against explicit J_theta J_theta^T / B (jacrev of the cell), the hidden NTK against
  explicit dZ/dtheta (jacrev through the rollout);
* Prop. 1: O(eta) finite-difference residual for nonlinear cells (observed order ~ 1), rounding
  floor for the linear cell (trajectory affine in theta);
* partial trace: tr_C(B (x) C) = tr(C) B on every axis split; Theorem 2 and Volterra closed forms;
* Theorem 1's bound: equality for constant outer Jacobians, violated for the torch RNN and GRU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.gpu.rnn import cells, spectra
from flowcert.gpu.rnn.identities import operator_identities, prop1
from flowcert.gpu.rnn.operators import (KPFlow, Operator, Trajectory, hidden_ntk, interference_matrix,
                                        parameter_operator, readout_error, rollout, task_blocks)

torch.set_num_threads(1)
F64 = torch.float64
KINDS = ["rnn_tanh", "torch_rnn", "gru", "hodgkin_huxley", "linear"]


def make(kind: str, B: int = 2, T: int = 5, H: int = 4, I: int = 2, g: float = 1.2, seed: int = 0):
    if kind == "hodgkin_huxley":
        H, T = 8, min(T, 3)
    dt = 0.01 if kind == "hodgkin_huxley" else 0.2
    cell, th = cells.init_params(kind, H, I, g=g, seed=seed, dt=dt)
    gen = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(B, T, I, generator=gen, dtype=F64)
    return Trajectory.run(cell, th, x, cells.initial_state(cell, B))


def dense_P_reference(tr: Trajectory) -> torch.Tensor:
    """Dense P from explicit products A_t ... A_{s+1}, each A_t by jacrev of one sample."""
    B, T, H = tr.shape
    A = torch.zeros(B, T, H, H, dtype=F64)
    for b in range(B):
        for t in range(T):
            A[b, t] = torch.func.jacrev(lambda z: tr.cell.step(tr.theta, z[None], tr.x[b, t][None])[0])(tr.Zprev[b, t])
    P = torch.zeros(B, T, H, B, T, H, dtype=F64)
    for b in range(B):
        for s in range(T):
            M = torch.eye(H, dtype=F64)
            for t in range(s, T):
                if t > s:
                    M = A[b, t] @ M
                P[b, t, :, b, s, :] = M
    return P.reshape(B * T * H, B * T * H)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["stored", "recompute"])
def test_P_matches_explicit_products(kind, mode):
    tr = make(kind)
    kp = KPFlow.build(tr, mode)
    ref = dense_P_reference(tr)
    P = kp.P.dense()
    scale = ref.abs().max()
    assert torch.allclose(P, ref, atol=1e-13 * scale, rtol=0)
    assert torch.allclose(kp.P.T.dense(), ref.T, atol=1e-13 * scale, rtol=0)
    Pinv = kp.P.inverse().dense()
    assert torch.allclose(Pinv @ ref, torch.eye(ref.shape[0], dtype=F64), atol=1e-12 * scale)
    assert torch.allclose(kp.P.inverse().T.dense(), Pinv.T, atol=1e-14 * scale)


@pytest.mark.parametrize("kind", ["rnn_tanh", "gru"])
def test_P_is_derivative_of_direct_form(kind):
    """P q = d/d eps rollout(q = eps q) at eps = 0 (direct form, perturbation added after the step)."""
    tr = make(kind)
    q = torch.randn(tr.shape, dtype=F64, generator=torch.Generator().manual_seed(3))
    d = torch.func.jvp(lambda e: rollout(tr.cell, tr.theta, tr.x, tr.h0, e * q), (torch.zeros((), dtype=F64),),
                       (torch.ones((), dtype=F64),))[1]
    Pq = KPFlow.build(tr).P(q)
    assert torch.allclose(Pq, d, atol=1e-13 * d.abs().max(), rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_K_and_ntk_against_explicit_jacobians(kind):
    tr = make(kind)
    B, T, H = tr.shape
    zp, xf = tr._flat()
    J = torch.func.jacrev(lambda th: tr.cell.step(th, zp, xf))(tr.theta)
    G = torch.cat([J[k].reshape(B * T * H, -1) for k in tr.theta], 1)
    K_ref = G @ G.T / B
    K = parameter_operator(tr).dense()
    assert torch.allclose(K, K_ref, atol=1e-13 * K_ref.abs().max(), rtol=0)
    JZ = torch.func.jacrev(lambda th: rollout(tr.cell, th, tr.x, tr.h0))(tr.theta)
    JZ = torch.cat([JZ[k].reshape(B * T * H, -1) for k in tr.theta], 1)
    ntk_ref = JZ @ JZ.T / B
    kp = KPFlow.build(tr)
    sc = ntk_ref.abs().max()
    assert torch.allclose(hidden_ntk(tr).dense(), ntk_ref, atol=1e-12 * sc, rtol=0)
    assert torch.allclose(kp.PKP.dense(), ntk_ref, atol=1e-12 * sc, rtol=0)


def test_gru_cell_is_torch_grucell():
    cell, th = cells.init_params("gru", 5, 3, seed=2)
    ref = torch.nn.GRUCell(3, 5).double()
    with torch.no_grad():
        for k in th:
            getattr(ref, k).copy_(th[k])
    z, x = torch.randn(4, 5, dtype=F64), torch.randn(4, 3, dtype=F64)
    assert torch.allclose(cell.step(th, z, x), ref(x, z), atol=1e-15)
    assert torch.allclose(cells.gru_reference(cell, th, z, x), ref(x, z), atol=1e-14)


def test_torch_rnn_cell_is_torch_rnncell():
    cell, th = cells.init_params("torch_rnn", 5, 3, seed=2)
    ref = torch.nn.RNNCell(3, 5).double()
    with torch.no_grad():
        ref.weight_ih.copy_(th["W_ih"]); ref.weight_hh.copy_(th["W_hh"])
        ref.bias_ih.copy_(th["b_ih"]); ref.bias_hh.copy_(th["b_hh"])
    z, x = torch.randn(4, 5, dtype=F64), torch.randn(4, 3, dtype=F64)
    assert torch.allclose(cell.step(th, z, x), ref(x, z), atol=1e-15)


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["rnn_tanh", "torch_rnn", "gru", "linear"]), seed=st.integers(0, 10**6),
       g=st.floats(0.1, 3.0), B=st.integers(1, 3), T=st.integers(1, 6))
def test_identities_property(kind, seed, g, B, T):
    """Adjoint, inverse and NTK identities at float64 round-off (scale-aware), any cell and size."""
    tr = make(kind, B=B, T=T, g=g, seed=seed)
    kp = KPFlow.build(tr, "stored" if seed % 2 else "recompute")
    r = operator_identities(kp, seed=seed)
    assert r["adjoint"]["P"] < 1e-13 and r["adjoint"]["K"] < 1e-13 and r["adjoint"]["P_inv"] < 1e-13
    # P^-1 P = I: relative error bounded by ~ eps * cond(P); P is unit lower-triangular
    bound = 1e-13 * max(1.0, float(torch.linalg.matrix_norm(kp.P.dense(), 2)) ** 2)
    assert r["inverse"]["residual"] < bound
    assert r["ntk"]["residual"] < 1e-11


def _readout(tr, seed=0):
    gen = torch.Generator().manual_seed(seed)
    B, T, H = tr.shape
    W = torch.randn(2, H, generator=gen, dtype=F64) / math.sqrt(H)
    if tr.cell.kind == "hodgkin_huxley":
        W[:, H // 4:] = 0
        W /= 30
    return W, torch.zeros(2, dtype=F64), torch.randn(B, T, 2, generator=gen, dtype=F64)


@pytest.mark.parametrize("kind", ["rnn_tanh", "torch_rnn", "gru"])
def test_prop1_first_order(kind):
    tr = make(kind, T=6)
    kp = KPFlow.build(tr)
    res = prop1(kp, *_readout(tr))
    assert res["prop1_jvp"] < 1e-12 and res["gradient"] < 1e-12
    rows = res["fd"]
    r = [row["residual"] for row in rows]
    # O(eta): each decade of eta removes a decade of residual while above the rounding floor
    for a, b in zip(rows, rows[1:]):
        if b["residual"] > 10 * b["roundoff_floor"]:
            assert 0.8 < math.log(a["residual"] / b["residual"]) / math.log(a["eta"] / b["eta"]) < 1.2
    assert r[-1] < 1e-2 * r[0]


def test_prop1_linear_cell_exact():
    """The linear cell's trajectory is affine in theta: the FD residual is rounding only."""
    tr = make("linear", T=6, g=0.9)
    res = prop1(KPFlow.build(tr), *_readout(tr))
    for row in res["fd"]:
        assert row["residual"] < 2 * row["roundoff_floor"] + 1e-14


def test_partial_trace_kron():
    """tr_C(B (x) C) = tr(C) B for every split of (B, T, H), matrix-free and dense."""
    gen = torch.Generator().manual_seed(0)
    dims = (2, 3, 4)
    for traced in (["H"], ["T", "H"], ["B", "T", "H"]):
        keep = [d for a, d in zip(spectra.AXES, dims) if a not in traced]
        dro = [d for a, d in zip(spectra.AXES, dims) if a in traced]
        nk, nd = int(np.prod(keep)) if keep else 1, int(np.prod(dro))
        Bm, C = torch.randn(nk, nk, generator=gen, dtype=F64), torch.randn(nd, nd, generator=gen, dtype=F64)
        M = torch.kron(Bm, C)
        op = Operator(dims, lambda q, M=M: (M @ q.reshape(-1)).reshape(dims), lambda r, M=M: (M.T @ r.reshape(-1)).reshape(dims))
        ref = torch.trace(C) * Bm
        assert torch.allclose(spectra.partial_trace(op, traced), ref, atol=1e-12)
        assert torch.allclose(spectra.partial_trace_dense(M, dims, traced), ref, atol=1e-12)
    # leading axes traced: permute so the traced factor comes first, M = C (x) B
    Bm, C = torch.randn(12, 12, generator=gen, dtype=F64), torch.randn(2, 2, generator=gen, dtype=F64)
    M = torch.kron(C, Bm)
    op = Operator(dims, lambda q: (M @ q.reshape(-1)).reshape(dims), lambda r: (M.T @ r.reshape(-1)).reshape(dims))
    assert torch.allclose(spectra.partial_trace(op, ["B"]), torch.trace(C) * Bm, atol=1e-12)


def test_partial_trace_is_not_block_sum():
    """A partial trace keeps only diagonal blocks: off-diagonal blocks of the traced axis do not count."""
    dims = (1, 2, 2)
    M = torch.zeros(4, 4, dtype=F64)
    M[0, 3] = 1.0  # (t=0,h=0) -> (t=1,h=1): off-diagonal in both T and H
    out = spectra.partial_trace_dense(M, dims, ["H"])
    assert float(out.abs().sum()) == 0.0


def test_effective_rank_definition():
    v = np.array([9.0, 4.0, 1.0, 0.25])  # sigma = [3, 2, 1, .5]: sigma^2 weights
    assert spectra.effrank_from(v) == 3
    assert spectra.effrank_from(np.array([1.0, 0, 0])) == 1
    tr = make("rnn_tanh", B=2, T=6, H=4)
    kp = KPFlow.build(tr)
    e = spectra.effective_rank(kp.K)
    s2 = torch.linalg.eigvalsh(kp.K.dense()).numpy() ** 2
    assert e["value"] == spectra.effrank_from(s2)
    approx = spectra.effective_rank(kp.K, exact_max=10, k=40)
    assert approx["value"] == e["value"] and not approx["lower_bound"]


def test_hutchpp_exact_on_low_rank():
    rng = np.random.default_rng(0)
    G = rng.standard_normal((100, 5))
    M = G @ G.T
    assert abs(spectra.hutchpp(lambda v: M @ v, 100, m=30) - np.trace(M)) < 1e-9 * np.trace(M)


def test_theorem2_uvu_and_volterra():
    tr = make("rnn_tanh", B=2, T=7, H=4, g=0.8)
    kp = KPFlow.build(tr)
    uvu = spectra.uvu_operator(kp.P)
    P = kp.P.dense()
    assert torch.allclose(uvu.dense(), P, atol=1e-10 * P.abs().max())
    for N, dt in ((5, 1.0), (40, 0.1)):
        disc, cont = spectra.volterra_singular_values(N, dt)
        s = torch.linalg.svdvals(dt * torch.tril(torch.ones(N, N, dtype=F64))).numpy()
        assert np.allclose(s, disc, rtol=1e-12)
    disc, cont = spectra.volterra_singular_values(4000, 1e-3)  # continuous limit on [0, 4]
    assert np.allclose(disc[:5], cont[:5], rtol=1e-3)


def test_lyapunov_qr_and_kaplan_yorke():
    lam = np.array([0.2, -0.1, -0.5])
    A = torch.tensor(np.diag(np.exp(lam)), dtype=F64)
    Q, _ = torch.linalg.qr(torch.randn(3, 3, dtype=F64, generator=torch.Generator().manual_seed(1)))
    assert np.allclose(spectra.lyapunov_qr(A.expand(50, 3, 3)), lam, atol=1e-14)  # diagonal: exact
    Js = (Q @ A @ Q.T).expand(2000, 3, 3)  # normal, constant: exponents log|eig| up to O(1/T)
    assert np.allclose(spectra.lyapunov_qr(Js), lam, atol=5e-3)
    assert spectra.kaplan_yorke(lam) == pytest.approx(2 + 0.1 / 0.5)
    assert spectra.kaplan_yorke(np.array([-0.1, -0.2])) == 0.0


@pytest.mark.parametrize("kind,bound_holds", [("rnn_tanh", True), ("hodgkin_huxley", True), ("linear", True),
                                              ("torch_rnn", False), ("gru", False)])
def test_theorem1_bound(kind, bound_holds):
    """rank tr_H K_j vs rank F_j: equal for constant outer Jacobian; exceeds it for torch RNN / GRU."""
    tr = make(kind, B=3, T=5, H=4, I=2)
    B, T, H = tr.shape
    feats = tr.cell.features(tr.theta, tr.Zprev.reshape(B * T, H), tr.x.reshape(B * T, -1))
    name = {"rnn_tanh": "W_in", "hodgkin_huxley": "W_in", "linear": "W_in", "torch_rnn": "W_ih", "gru": "weight_ih"}[kind]
    Kj = parameter_operator(tr, only=[name]).dense()
    rF = spectra.numerical_rank(feats[name].numpy())[0]
    rC = spectra.numerical_rank(spectra.partial_trace_dense(Kj, (B, T, H), ["H"]).numpy())[0]
    assert rF == 2
    if bound_holds:
        assert rC == rF
    else:
        assert rC > rF
    rK = spectra.numerical_rank(Kj.numpy())[0]
    assert rK <= Kj.shape[0] and rK <= (3 * H if kind == "gru" else H) * rF  # the true general bound


def test_task_blocks_sum_to_flow():
    from flowcert.gpu.rnn.tasks import multitask

    x, y, idx = multitask(2, steps=2, context=2)
    cell, th = cells.init_params("gru", 5, x.shape[-1], seed=0)
    tr = Trajectory.run(cell, th, x, cells.initial_state(cell, x.shape[0]))
    W = torch.randn(3, 5, dtype=F64, generator=torch.Generator().manual_seed(0))
    err = readout_error(tr.Z, W, torch.zeros(3, dtype=F64), y)
    kp = KPFlow.build(tr)
    blocks = task_blocks(kp, err, idx)
    flow = kp.gd_flow(err)
    for i, ii in enumerate(idx):
        tot = sum(blocks[i][j] for j in range(len(idx)))
        assert torch.allclose(tot, flow[ii], atol=1e-13 * flow.abs().max())
    M = interference_matrix(blocks)
    assert torch.allclose(torch.diagonal(M), torch.ones(4, dtype=F64))
    assert float(M.abs().max()) <= 1 + 1e-12


def test_scipy_export():
    from scipy.sparse.linalg import aslinearoperator

    tr = make("gru")
    kp = KPFlow.build(tr)
    L = kp.P.to_scipy()
    P = kp.P.dense().numpy()
    v = np.random.default_rng(0).standard_normal(L.shape[0])
    assert np.allclose(L.matvec(v), P @ v, atol=1e-13) and np.allclose(L.rmatvec(v), P.T @ v, atol=1e-13)
    assert aslinearoperator(L).shape == P.shape


@pytest.mark.parametrize("kind", ["rnn_tanh", "hodgkin_huxley"])
def test_K_closed_form_eq10(kind):
    """eq. 8 / HH: K = dt^2 (X X^T + S S^T)/B on the (V-)hidden block, S = sigma(features), zero elsewhere."""
    tr = make(kind, B=2, T=3, H=4, I=2)
    B, T, H = tr.shape
    feats = tr.cell.features(tr.theta, tr.Zprev.reshape(B * T, H), tr.x.reshape(B * T, -1))
    Ks = tr.cell.dt**2 * sum(F @ F.T for F in feats.values()) / B  # [BT, BT]
    N = tr.cell.neurons
    block = torch.zeros(H, H, dtype=F64)
    block[:N, :N] = torch.eye(N, dtype=F64)
    ref = torch.kron(Ks, block)
    K = parameter_operator(tr).dense()
    assert torch.allclose(K, ref, atol=1e-14 * ref.abs().max(), rtol=0)


def test_hh_jacobian_sparsity():
    """Only the V-row of the HH Jacobian is non-diagonal; gating rows couple to V and themselves."""
    tr = make("hodgkin_huxley", B=1, T=2)
    A = KPFlow.build(tr).P.J[0, 1]
    N = 2
    mask = torch.zeros(8, 8, dtype=torch.bool)
    mask[:N, :] = True  # V row: full
    for k in range(1, 4):
        for i in range(N):
            mask[k * N + i, i] = True  # D_V f_k diagonal
            mask[k * N + i, k * N + i] = True  # D_k f_k diagonal
    assert float(A[~mask].abs().max()) == 0.0


@pytest.mark.parametrize("kind", ["rnn_tanh", "gru"])
def test_factor_spectra_match_dense(kind):
    """Exact spectra through the factors (m x m Grams, per-trial blocks) = dense SVD of K, P, PKP*."""
    tr = make(kind, B=3, T=5, H=4)
    kp = KPFlow.build(tr)
    fs = spectra.factor_spectra(kp.P)
    for name, op in (("K", kp.K), ("P", kp.P), ("PKP", kp.PKP)):
        dense = np.sort(spectra.singular_values_squared(op))[::-1]
        fac = np.sort(fs[name])[::-1]
        n = min(len(dense), len(fac))
        assert np.allclose(fac[:n], dense[:n], atol=1e-12 * dense[0])
        assert np.all(dense[n:] <= 1e-12 * dense[0]) and np.all(fac[n:] <= 1e-12 * dense[0])
        assert spectra.effrank_from(fac) == spectra.effrank_from(dense)
    Kd = kp.K.dense()
    trH = spectra.partial_trace_dense(Kd, tr.shape, ["H"])
    assert np.allclose(np.sort(fs["K_trH"]), np.sort(torch.linalg.eigvalsh(trH).numpy() ** 2), atol=1e-12 * float(trH.abs().max()) ** 2)
