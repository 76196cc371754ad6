"""Symbolic cells (SymPy) against the torch cells and torch.func Jacobians, and the HH erratum."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from flowcert.gpu.rnn import cells
from flowcert.symbolic import rnn as srnn

torch.set_num_threads(1)


@pytest.mark.parametrize("kind,H,I", [("rnn_tanh", 3, 2), ("torch_rnn", 3, 2), ("gru", 2, 2),
                                      ("hodgkin_huxley", 4, 1), ("linear", 3, 2)])
def test_symbolic_jacobians_match_torch_func(kind, H, I):
    cell, th = cells.init_params(kind, H, I, g=1.3, seed=5, dt=0.1)
    sc = srnn.build(kind, H, I, dt=sp.Rational(1, 10), A=None if cell.A is None else cell.A.numpy())
    gen = torch.Generator().manual_seed(9)
    z = cells.initial_state(cell, 1)[0] + torch.randn(H, generator=gen, dtype=torch.float64) * (
        torch.tensor([7.0] + [0.05] * (H - 1), dtype=torch.float64) if kind == "hodgkin_huxley" else 0.5)
    x = torch.randn(I, generator=gen, dtype=torch.float64)
    names = srnn.param_names(kind)
    thf = torch.cat([th[k].reshape(-1) for k in names]).numpy()
    Jz = torch.func.jacrev(lambda zz: cell.step(th, zz[None], x[None])[0])(z).numpy()
    Jt = torch.func.jacrev(lambda t: cell.step(t, z[None], x[None])[0])(th)
    Jt = torch.cat([Jt[k].reshape(H, -1) for k in names], 1).numpy()
    F = cell.step(th, z[None], x[None])[0].numpy()
    args = (z.numpy(), x.numpy(), thf)
    scale = max(1.0, np.abs(F).max())
    assert np.allclose(sc.numeric("F")(*args).ravel(), F, atol=1e-13 * scale)
    assert np.allclose(sc.numeric("J_z")(*args), Jz, atol=1e-12 * max(1.0, np.abs(Jz).max()))
    assert np.allclose(sc.numeric("J_theta")(*args), Jt, atol=1e-12 * max(1.0, np.abs(Jt).max()))


def test_hh_gating_derivative_erratum():
    r = srnn.hh_gating_erratum()
    assert r["correct_minus_derived"] == 0
    assert r["paper_minus_derived"] != 0  # eq. 85 differs by -alpha'(V)


def test_hh_jacobian_block_structure():
    """D_V f_k = diag(alpha_k'(1-k) - beta_k' k) in the symbolic HH Jacobian (N = 1)."""
    c = srnn.build("hodgkin_huxley", 4, 1, dt=1)
    J = c.J_z()
    V, m = c.z[0], c.z[1]
    a, b = srnn.hh_rates(V)["m"]
    expected = sp.diff(a, V) * (1 - m) - sp.diff(b, V) * m
    assert sp.simplify(J[1, 0] - expected) == 0
    assert J[1, 2] == 0 and J[1, 3] == 0  # gating rows are diagonal apart from the V column


def test_kernel_factorisation_eq8():
    assert srnn.kernel_factorisation(2, 1) == sp.zeros(2, 2)


def test_torch_rnn_kernel_is_not_scalar():
    """For the torch-style cell J_theta J_theta'^T is not a scalar times I (Theorem 1's factorisation fails)."""
    c = srnn.build("torch_rnn", 2, 1)
    J = c.J_theta()
    K = (J * J.T)
    rng = np.random.default_rng(0)
    vals = {s: float(rng.standard_normal()) for s in c.theta}
    vals.update({c.z[0]: 0.5, c.z[1]: -0.2, c.x[0]: 1.0})
    Kn = np.array(K.subs(vals).evalf().tolist(), dtype=float)
    assert abs(Kn[0, 0] - Kn[1, 1]) > 1e-3
