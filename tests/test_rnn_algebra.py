"""Operator algebra against dense matrices (sum, scalar, composition, adjoint, identity, projector,
batched application), Hutch++ trace / Frobenius norm / alignment / participation ratio against exact
values, and float32 / device handling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from flowcert.gpu.rnn import cells, spectra
from flowcert.gpu.rnn.operators import KPFlow, Operator, Trajectory, identity, projector

torch.set_num_threads(1)
F64 = torch.float64


def make(kind="gru", B=2, T=4, H=3, I=2, seed=0, dtype=F64):
    cell, th = cells.init_params(kind, H, I, g=1.3, seed=seed)
    x = torch.randn(B, T, I, dtype=F64, generator=torch.Generator().manual_seed(seed + 1))
    tr = Trajectory.run(cell, th, x, cells.initial_state(cell, B))
    return tr if dtype == F64 else tr.to(dtype=dtype, device="cpu")


def matrix_op(M, dims):
    return Operator(dims, lambda q: (M @ q.reshape(-1)).reshape(dims), lambda r: (M.T @ r.reshape(-1)).reshape(dims))


@pytest.mark.parametrize("mode", ["stored", "recompute"])
def test_algebra_matches_dense(mode):
    kp = KPFlow.build(make(), mode)
    P, K = kp.P, kp.K
    Pd, Kd = P.dense(), K.dense()
    n = Pd.shape[0]
    sc = float(Pd.abs().max() * Kd.abs().max())
    y = torch.randn(P.shape, dtype=F64, generator=torch.Generator().manual_seed(4))
    x = torch.randn(P.shape, dtype=F64, generator=torch.Generator().manual_seed(5))
    I = identity(P.shape)
    cases = {
        "sum": (P + K, Pd + Kd), "diff": (P - 2.5 * K, Pd - 2.5 * Kd), "neg": (-P, -Pd),
        "scalar_right": (P * 3.0, 3 * Pd), "compose": (P @ K @ P.T, Pd @ Kd @ Pd.T),
        "adjoint": ((P @ K).T, (Pd @ Kd).T), "gram": (P.gram(), Pd @ Pd.T), "identity": (I @ P - P, 0 * Pd),
        "rank_one": (projector(y, x), torch.outer(y.reshape(-1), x.reshape(-1))),
        "orth_projector": (projector(y), torch.outer(y.reshape(-1), y.reshape(-1)) / float(y.norm()) ** 2),
    }
    for name, (op, ref) in cases.items():
        assert torch.allclose(op.dense(), ref, atol=1e-13 * max(sc, 1.0), rtol=0), name
        assert torch.allclose(op.T.dense(), ref.T, atol=1e-13 * max(sc, 1.0), rtol=0), name
    Pr = projector(y).dense()
    assert torch.allclose(Pr @ Pr, Pr, atol=1e-14) and torch.allclose(identity(P.shape).dense(), torch.eye(n, dtype=F64))
    V = torch.randn(5, *P.shape, dtype=F64, generator=torch.Generator().manual_seed(6))
    for op, ref in ((P, Pd), (P.T, Pd.T), (kp.PKP, kp.PKP.dense())):
        got = op.apply_batch(V).reshape(5, n)
        assert torch.allclose(got, V.reshape(5, n) @ ref.T, atol=1e-13 * float(ref.abs().max()), rtol=0)


def test_P_transpose_rowvector_same_bits():
    """The stored P^T multiplies row vectors (a^T A_t) instead of a transposed view: same numbers."""
    kp = KPFlow.build(make(B=3, T=6, H=5))
    r = torch.randn(kp.P.shape, dtype=F64, generator=torch.Generator().manual_seed(1))
    ref = kp.P.dense().T @ r.reshape(-1)
    assert torch.allclose(kp.P.adjoint(r).reshape(-1), ref, atol=1e-14 * float(ref.abs().max()), rtol=0)


def test_trace_estimators_against_exact():
    kp = KPFlow.build(make(B=3, T=5, H=4))
    ops = {"PKP": kp.PKP, "P": kp.P, "PminusK": kp.P - kp.K}
    for name, op in ops.items():
        D = op.dense()
        exact = float(torch.trace(D))
        vals = [spectra.trace(op, m=30, seed=s) for s in range(60)]
        se = float(np.std(vals, ddof=1)) / math.sqrt(len(vals))
        assert abs(np.mean(vals) - exact) <= 5 * se + 1e-12 * abs(exact), name  # unbiased
        assert spectra.trace(op, m=D.shape[0]) == pytest.approx(exact, rel=1e-12)  # exact path
    D = kp.PKP.dense()
    # rank(PKP*) <= m (number of parameters): Hutch++ with k >= rank is exact up to round-off
    r = int(torch.linalg.matrix_rank(D))
    assert spectra.trace(kp.PKP, m=3 * (r + 2), seed=1) == pytest.approx(float(torch.trace(D)), rel=1e-9)
    fro = [spectra.frobenius_norm(kp.P, m=45, seed=s) for s in range(30)]
    assert np.mean(fro) == pytest.approx(float(torch.linalg.matrix_norm(kp.P.dense())), rel=0.05)


def test_alignment_and_participation_ratio():
    kp = KPFlow.build(make(B=2, T=4, H=3))
    A, B = kp.PKP, kp.PP
    Ad, Bd = A.dense(), B.dense()
    n = Ad.shape[0]
    ref = float(torch.trace(Ad.T @ Bd) / (torch.linalg.matrix_norm(Ad) * torch.linalg.matrix_norm(Bd)))
    assert spectra.alignment(A, B, m=n) == pytest.approx(ref, rel=1e-12)  # exact path
    assert spectra.alignment(A, A, m=n) == pytest.approx(1.0, rel=1e-12)
    s2 = torch.linalg.svdvals(Ad) ** 2
    pr = float(s2.sum() ** 2 / (s2**2).sum())
    assert spectra.participation_ratio(A, m=n) == pytest.approx(pr, rel=1e-10)
    est = np.mean([spectra.participation_ratio(A, m=30, seed=s) for s in range(20)])
    assert est == pytest.approx(pr, rel=0.15)


def test_float32_operators():
    """float32 trajectories give float32 operators: effective_rank, to_scipy and dense work (they raised)."""
    tr32 = make(B=2, T=4, H=3, dtype=torch.float32)
    kp32, kp64 = KPFlow.build(tr32), KPFlow.build(make(B=2, T=4, H=3))
    assert kp32.P.dtype == torch.float32 and kp32.K.dtype == torch.float32 and kp32.P.device.type == "cpu"
    for name in ("P", "K", "PKP"):
        a, b = getattr(kp32, name), getattr(kp64, name)
        assert torch.allclose(a.dense(F64), b.dense(), atol=1e-5 * float(b.dense().abs().max()), rtol=0)
        r32, r64 = spectra.effective_rank(a), spectra.effective_rank(b)
        assert abs(r32["value"] - r64["value"]) <= 1
    L = kp32.P.to_scipy()
    v = np.random.default_rng(0).standard_normal(L.shape[0])
    assert np.allclose(L.matvec(v), kp64.P.dense().numpy() @ v, atol=1e-4)
    big = spectra.effective_rank(kp32.PKP, exact_max=10, k=10)
    assert big["participation_ratio"] is not None and not big["exact"]


@pytest.mark.parametrize("kind", ["rnn_tanh", "relu_rnn", "torch_rnn", "gru", "linear"])
def test_closed_form_state_jacobians_match_autograd(kind):
    cell, th = cells.init_params(kind, 5, 3, g=1.4, seed=3, dt=0.3)
    gen = torch.Generator().manual_seed(9)
    z, x = torch.randn(7, 5, dtype=F64, generator=gen), torch.randn(7, 3, dtype=F64, generator=gen)
    J = cell.state_jacobian(th, z, x)
    ref = torch.func.vmap(torch.func.jacrev(lambda zz, xx: cell.step(th, zz[None], xx[None])[0]))(z, x)
    assert torch.allclose(J, ref, atol=1e-15 * float(ref.abs().max()) * 8, rtol=0)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_device_argument(device):
    """Every operator lives on the trajectory's device (init_params/initial_state/Trajectory.to take
    device=); results agree with the CPU float64 ones."""
    from flowcert.gpu.rnn import consensus as C

    cell, th = cells.init_params("gru", 3, 2, seed=0, device=device)
    x = torch.randn(2, 4, 2, dtype=F64, generator=torch.Generator().manual_seed(1)).to(device)
    tr = Trajectory.run(cell, th, x, cells.initial_state(cell, 2, device=device))
    kp = KPFlow.build(tr)
    ref = KPFlow.build(tr.to(device="cpu"))
    for name in ("P", "K", "PKP", "PP"):
        op = getattr(kp, name)
        assert op.device.type == device
        assert torch.allclose(op.dense().cpu(), getattr(ref, name).dense(), atol=1e-13)
    assert torch.allclose(kp.P.inverse().dense().cpu(), ref.P.inverse().dense(), atol=1e-13)
    c = C.consensus(kp, "PKP", "T", exact=True)
    c0 = C.consensus(ref, "PKP", "T", exact=True)
    assert np.allclose(c["eigenvalues"], c0["eigenvalues"], atol=1e-13)
    assert spectra.trace(kp.PKP, m=5, seed=0) == pytest.approx(spectra.trace(ref.PKP, m=5, seed=0), rel=1e-10)
