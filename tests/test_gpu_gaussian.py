"""Batched torch integrators against SciPy and closed forms (CPU here; CUDA when present)."""

import math

import numpy as np
import pytest
import torch

from flowcert.gpu import gaussian as gg
from flowcert.gpu import integrators
from flowcert.numeric import gaussian as ng

torch.set_num_threads(1)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _case(seed: int, d: int = 3, n: int = 8):
    rng = np.random.default_rng(seed)
    A = 0.5 * rng.normal(size=(d, d)) - np.eye(d)
    B = 0.3 * rng.normal(size=(d, d))
    V = -0.5 * np.eye(d)
    b = rng.normal(size=d)
    mu0 = rng.normal(size=(n, d))
    L = 0.5 * rng.normal(size=(n, d, d))
    return A, B, V, b, mu0, L @ L.transpose(0, 2, 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["dopri5", "rk4"])
def test_batched_moments_match_scipy(device, method):
    A, B, V, b, mu0, S0 = _case(1)
    T = lambda x: torch.tensor(x, dtype=torch.float64, device=device)  # noqa: E731
    res = gg.simulate_moments(T(A), T(B), T(V), T(b), T(mu0), T(S0), 1.5, method=method, steps=300)
    assert res.y[1].dtype == torch.float64
    for i in range(S0.shape[0]):
        ref = ng.integrate_moments(ng.constant(A, B, V, b), mu0[i], S0[i], 1.5)
        scale = 1 + np.abs(ref.Sigma[-1]).max()
        assert np.abs(res.y[1][i].cpu().numpy() - ref.Sigma[-1]).max() < 1e-7 * scale
        assert np.abs(res.y[0][i].cpu().numpy() - ref.mu[-1]).max() < 1e-7 * (1 + np.abs(ref.mu[-1]).max())


def test_rk4_fourth_order():
    """Halving the step divides the error of dy/dt = -y by about 2^4."""
    f = lambda t, y: (-y[0],)  # noqa: E731
    y0 = (torch.ones(1, 1, dtype=torch.float64),)
    errs = [abs(integrators.rk4(f, y0, 1.0, n)[0].item() - math.exp(-1.0)) for n in (10, 20)]
    assert 14 < errs[0] / errs[1] < 18


def test_dopri5_blowup_time_scalar_riccati():
    """Isotropic d=2: Sigma = s I with s' = 2 s + 2 s^2 blows up at (1/2) log(1 + 1/s0)."""
    I = torch.eye(2, dtype=torch.float64)
    s0 = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    res = gg.simulate_moments(I, I, I, torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64),
                              s0[:, None, None] * I, 5.0)
    exact = 0.5 * torch.log1p(1 / s0)
    assert torch.all(res.blowup_time <= exact)
    assert torch.all(res.blowup_time >= exact * (1 - 1e-6))


def test_rk4_is_differentiable():
    """d Sigma(T)/d Sigma0 through RK4 matches a central finite difference."""
    A, B, V, b, mu0, S0 = _case(2, d=2, n=1)
    T = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    S = T(S0).requires_grad_(True)
    out = gg.simulate_moments(T(A), T(B), T(V), T(b), T(mu0), S, 0.5, method="rk4", steps=50).y[1].sum()
    (g,) = torch.autograd.grad(out, S)
    E = np.zeros_like(S0)
    E[0, 0, 1] = E[0, 1, 0] = 1.0
    h = 1e-6
    fd = [gg.simulate_moments(T(A), T(B), T(V), T(b), T(mu0), T(S0 + s * h * E), 0.5, method="rk4", steps=50).y[1].sum().item()
          for s in (1, -1)]
    assert abs((fd[0] - fd[1]) / (2 * h) - float((g * T(E)).sum())) < 1e-6
