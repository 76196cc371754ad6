"""The self-attention field kernels (numpy, torch, C) printed from the matrix expression of
flowcert.symbolic.attention, against a hand-written batched reference; torch autograd against
central differences of the numpy kernel; tangency on the sphere; the scalarised SymPy field and
exact evaluation; equilibria from the multistability note; the batched RK4 simulation."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from flowcert.gpu import attention as ga
from flowcert.numeric import attention as na
from flowcert.symbolic import attention as sa
from flowcert.numeric import native as cbuild
from flowcert.symbolic import codegen

torch.set_num_threads(1)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ELEM = st.floats(-1.5, 1.5, allow_nan=False, width=64)
NORMS = ["unit", "sqrt"]


# ---------------------------------------------------------------------------------------------
# hand-written reference (independent of the generated code)
# ---------------------------------------------------------------------------------------------


def hand_field(X, Q, K, V, beta=1.0, normalization="unit"):
    """x_i' = (I - x_i x_i^T) V sum_j A_ij x_j, A = softmax_j(beta x_i^T Q^T K x_j), batched."""
    T = lambda M: np.swapaxes(M, -1, -2)  # noqa: E731
    q, k, v = X @ T(Q), X @ T(K), X @ T(V)
    S = np.asarray(beta)[..., None, None] * (q @ T(k))
    E = np.exp(S - S.max(-1, keepdims=True))
    A = E / E.sum(-1, keepdims=True)
    if normalization == "sqrt":
        A = A / np.sqrt(X.shape[-1])
    Y = A @ v
    return Y - (X * Y).sum(-1, keepdims=True) * X


def on_sphere(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


@st.composite
def attention_inputs(draw, sphere=False):
    """X (batch, n, d) and Q, K, V each (d, d) or (batch, d, d); n in 1..8, d in 1..5, batch 1..4."""
    n, d, batch = draw(st.integers(1, 8)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    X = draw(hnp.arrays(np.float64, (batch, n, d), elements=ELEM))
    if sphere:
        X = X + (np.abs(X).sum(-1, keepdims=True) < 1e-3)  # keep rows away from 0
        X = on_sphere(X)
    mats = [draw(hnp.arrays(np.float64, ((batch,) if draw(st.booleans()) else ()) + (d, d), elements=ELEM))
            for _ in range(3)]
    beta = draw(st.floats(0, 2, width=64))
    return X, *mats, beta


def _close(got, want, tol=1e-12):
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= tol * (1 + np.abs(want))), np.max(np.abs(got - want))


@pytest.fixture(scope="module")
def c_kernels(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FLOWCERT_CACHE", str(tmp_path_factory.mktemp("cache")))
    try:
        yield {norm: cbuild.compile_c_shaped(sa.attention_program(norm)) for norm in NORMS}
    except cbuild.CompilerUnavailable:
        yield None
    finally:
        mp.undo()


def _t(*arrays):
    return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]


# ---------------------------------------------------------------------------------------------
# generated == hand-written
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@SETTINGS
@given(inp=attention_inputs())
def test_numpy_kernel_matches_hand(norm, inp):
    X, Q, K, V, beta = inp
    got = na.attention_field(X, Q, K, V, beta=beta, normalization=norm)
    assert got.dtype == np.float64
    _close(got, hand_field(X, Q, K, V, beta, norm))


@pytest.mark.parametrize("norm", NORMS)
@SETTINGS
@given(inp=attention_inputs())
def test_torch_kernel_matches_hand(norm, inp):
    X, Q, K, V, beta = inp
    got = ga.attention_field(*_t(X, Q, K, V), beta=beta, normalization=norm)
    assert got.dtype == torch.float64
    _close(got.numpy(), hand_field(X, Q, K, V, beta, norm))


@pytest.mark.parametrize("norm", NORMS)
@SETTINGS
@given(inp=attention_inputs())
def test_c_kernel_matches_hand(c_kernels, norm, inp):
    if c_kernels is None:
        pytest.skip("no C compiler")
    X, Q, K, V, beta = inp
    (got,) = c_kernels[norm](X, beta * Q, K, V)
    _close(got, hand_field(X, Q, K, V, beta, norm))


def test_unbatched_inputs_and_per_sample_temperatures():
    rng = np.random.default_rng(0)
    X = on_sphere(rng.normal(size=(5, 3)))
    Q, K, V = rng.normal(size=(3, 3, 3))
    _close(na.attention_field(X, Q, K, V), hand_field(X, Q, K, V))
    Xb = np.stack([X, X, X])
    betas = np.array([0.0, 0.5, 3.0])
    got = na.attention_field(Xb, Q, K, V, beta=betas)
    for i, b in enumerate(betas):
        _close(got[i], hand_field(X, Q, K, V, b))
    gt = ga.attention_field(*_t(Xb, Q, K, V), beta=torch.from_numpy(betas))
    _close(gt.numpy(), got)


def test_sqrt_normalization_is_unit_over_sqrt_d():
    rng = np.random.default_rng(1)
    X = on_sphere(rng.normal(size=(2, 6, 4)))
    Q, K, V = rng.normal(size=(3, 4, 4))
    _close(na.attention_field(X, Q, K, V, normalization="sqrt"), na.attention_field(X, Q, K, V) / 2.0, 1e-14)


# ---------------------------------------------------------------------------------------------
# tangency and equilibria
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@SETTINGS
@given(inp=attention_inputs(sphere=True))
def test_field_is_tangent_to_the_sphere(c_kernels, norm, inp):
    X, Q, K, V, beta = inp
    fields = [na.attention_field(X, Q, K, V, beta=beta, normalization=norm),
              ga.attention_field(*_t(X, Q, K, V), beta=beta, normalization=norm).numpy()]
    if c_kernels is not None:
        fields.append(c_kernels[norm](X, beta * Q, K, V)[0])
    scale = 1 + np.abs(V).max() * X.shape[-1]
    for F in fields:
        assert np.max(np.abs((X * F).sum(-1))) <= 1e-12 * scale


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), d=st.integers(2, 5), data=st.data())
def test_consensus_and_bipartite_points_are_equilibria(seed, n, d, data):
    """Multistability note: x_i = +-v_k (V symmetric) is an equilibrium for every Q, K."""
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(d, d))
    V = V + V.T
    vk = np.linalg.eigh(V)[1][:, data.draw(st.integers(0, d - 1))]
    signs = np.array(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    X = signs[:, None] * vk[None, :]
    Q, K = rng.normal(size=(2, d, d))
    for norm in NORMS:
        assert np.max(np.abs(na.attention_field(X, Q, K, V, normalization=norm))) <= 1e-12 * (1 + np.abs(V).max())
        F = ga.attention_field(*_t(X, Q, K, V), normalization=norm)
        assert float(F.abs().max()) <= 1e-12 * (1 + np.abs(V).max())


# ---------------------------------------------------------------------------------------------
# derivatives: torch autograd vs central differences of the numpy kernel
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=attention_inputs(sphere=True), seed=st.integers(0, 2**32 - 1))
def test_torch_autograd_matches_central_difference_of_numpy_kernel(norm, inp, seed):
    X, Q, K, V, beta = inp
    rng = np.random.default_rng(seed)
    W = rng.normal(size=X.shape)  # loss L = <W, F>
    dirs = [rng.normal(size=a.shape) for a in (X, Q, K, V)]
    dbeta = rng.normal()
    tensors = [t.requires_grad_() for t in _t(X, Q, K, V)]
    tb = torch.tensor(beta, dtype=torch.float64, requires_grad=True)
    F = ga.attention_field(*tensors, beta=tb, normalization=norm)
    grads = torch.autograd.grad((F * torch.from_numpy(W)).sum(), [*tensors, tb])
    ad = sum(float((g.numpy() * e).sum()) for g, e in zip(grads[:4], dirs)) + float(grads[4]) * dbeta

    def loss(h):
        args = [a + h * e for a, e in zip((X, Q, K, V), dirs)]
        return float((W * na.attention_field(*args, beta=beta + h * dbeta, normalization=norm)).sum())

    h = 1e-5
    fd = (loss(h) - loss(-h)) / (2 * h)
    scale = 1 + sum(float(np.abs(g.numpy()).sum()) for g in grads[:4]) + abs(float(grads[4]))
    assert abs(ad - fd) <= 1e-7 * scale


# ---------------------------------------------------------------------------------------------
# symbolic cross-checks: scalarised SymPy field, matrix-level entries, exact evaluation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,d", [(1, 1), (2, 2), (3, 2), (2, 3)])
def test_scalarised_sympy_field_matches_numpy_kernel(norm, n, d):
    beta = sp.Symbol("beta")
    Xs, Qs, Ks, Vs, F = sa.scalarised_field(n, d, norm, beta=beta)
    syms = [beta, *Xs, *Qs, *Ks, *Vs]
    f = sp.lambdify(syms, F, modules="numpy", cse=True)
    rng = np.random.default_rng(n * 10 + d)
    X = on_sphere(rng.normal(size=(n, d)))
    Q, K, V = rng.normal(size=(3, d, d))
    want = np.array(f(0.7, *X.ravel(), *Q.ravel(), *K.ravel(), *V.ravel()), dtype=float)
    _close(na.attention_field(X, Q, K, V, beta=0.7, normalization=norm), want)


@pytest.mark.parametrize("norm", NORMS)
def test_matrix_expression_entries_equal_the_scalarised_field(norm):
    """The SoftmaxRows/RowDot/DiagMatrix expression, made explicit for n = 2, d = 2, is the
    scalarised field of eq. (1) (checked at random rational points to 40 digits)."""
    n, d = 2, 2
    Xs, Qs, Ks, Vs, F = sa.scalarised_field(n, d, norm)
    expr = sa.attention_field(norm).subs({sa.n: n, sa.d: d})
    sized = {sp.MatrixSymbol(M.name, *M.shape).subs({sa.n: n, sa.d: d}): E
             for M, E in [(sa.X, Xs), (sa.Q, Qs), (sa.K, Ks), (sa.V, Vs)]}
    expr = expr.xreplace(sized)
    G = expr.as_explicit()
    rng = np.random.default_rng(7)
    for _ in range(3):
        point = {s: sp.Rational(int(rng.integers(-9, 10)), 7) for s in [*Xs, *Qs, *Ks, *Vs]}
        diff = (G - F).subs(point).evalf(40)
        assert max(abs(v) for v in diff) < 1e-35


@pytest.mark.parametrize("norm", NORMS)
def test_exact_evaluation_of_the_program_on_rationals(norm):
    n, d = 3, 2
    rng = np.random.default_rng(11)
    vals = {name: sp.Matrix(*shape, lambda i, j: sp.Rational(int(rng.integers(-6, 7)), 4))
            for name, shape in [("X", (n, d)), ("Q", (d, d)), ("K", (d, d)), ("V", (d, d))]}
    (exact,) = codegen.evaluate(sa.attention_program(norm), vals, codegen.MatrixOps)
    Xs, Qs, Ks, Vs, F = sa.scalarised_field(n, d, norm)
    subs = {s: v for M, name in [(Xs, "X"), (Qs, "Q"), (Ks, "K"), (Vs, "V")] for s, v in zip(M, vals[name])}
    assert max(abs(v) for v in (exact - F.subs(subs)).evalf(40)) < 1e-35
    arrays = [np.array(vals[k].tolist(), dtype=float) for k in "XQKV"]
    _close(na.attention_field(*arrays, normalization=norm), np.array(exact.evalf(30).tolist(), dtype=float))


def test_program_shares_work_and_uses_the_new_ops():
    p = sa.attention_program()
    kinds = [op.op for op in p.ops]
    assert kinds.count("softmax_rows") == 1 and kinds.count("rowdot") == 1 and kinds.count("scale_rows") == 1
    assert kinds.count("matmul") == 5  # X Q^T, (.)K, (.)X^T, A X, (.)V^T
    src = codegen.NumpyPrinter().print(p)
    assert ".dot(" not in src and "np.swapaxes" in src
    tsrc = codegen.TorchPrinter().print(p)
    assert ".mT" in tsrc and "torch.transpose" not in tsrc


# ---------------------------------------------------------------------------------------------
# simulation
# ---------------------------------------------------------------------------------------------


def _hand_rk4(X, Q, K, V, t_end, steps, beta):
    h = t_end / steps
    f = lambda Z: hand_field(Z, Q, K, V, beta)  # noqa: E731
    for _ in range(steps):
        k1 = f(X)
        k2 = f(X + h / 2 * k1)
        k3 = f(X + h / 2 * k2)
        k4 = f(X + h * k3)
        X = X + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        X = on_sphere(X)
    return X


def test_simulation_matches_hand_rk4_and_stays_on_the_sphere():
    rng = np.random.default_rng(3)
    X0 = on_sphere(rng.normal(size=(3, 5, 3)))
    Q, K, V = rng.normal(size=(3, 3, 3))
    out = ga.simulate_attention(*_t(X0, Q, K, V), 2.0, 40, beta=0.8)
    _close(out.X.numpy(), _hand_rk4(X0, Q, K, V, 2.0, 40, 0.8))
    assert out.drift.shape == (40, 3)
    assert 0 < out.max_drift < 1e-5
    assert np.allclose(np.linalg.norm(out.X.numpy(), axis=-1), 1, atol=1e-14)
    free = ga.simulate_attention(*_t(X0, Q, K, V), 2.0, 40, beta=0.8, renormalize=False)
    drift_end = np.abs(np.linalg.norm(free.X.numpy(), axis=-1) - 1).max(-1)
    assert np.allclose(free.drift[-1].numpy(), drift_end, rtol=0, atol=1e-15)


def test_simulation_reaches_consensus_and_is_differentiable():
    """Q = K = 0, V = I (uniform attention): tokens in a hemisphere contract to consensus."""
    rng = np.random.default_rng(4)
    X0 = np.abs(rng.normal(size=(2, 4, 3))) + 0.1
    X0 = torch.from_numpy(on_sphere(X0)).requires_grad_()
    Z, I3 = torch.zeros(3, 3, dtype=torch.float64), torch.eye(3, dtype=torch.float64)
    out = ga.simulate_attention(X0, Z, Z, I3, 20.0, 200)
    spread = (out.X - out.X.mean(1, keepdim=True)).norm(dim=-1).max()
    assert float(spread.detach()) < 1e-6
    (g,) = torch.autograd.grad(out.X[..., 0].sum(), X0)
    assert torch.isfinite(g).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_kernel_matches_cpu():
    rng = np.random.default_rng(5)
    X = on_sphere(rng.normal(size=(4, 7, 3)))
    Q, K, V = rng.normal(size=(3, 3, 3))
    cpu = ga.attention_field(*_t(X, Q, K, V), beta=1.3)
    gpu = ga.attention_field(*(t.cuda() for t in _t(X, Q, K, V)), beta=1.3)
    assert gpu.device.type == "cuda" and gpu.dtype == torch.float64
    _close(gpu.cpu().numpy(), cpu.numpy())
    sim = ga.simulate_attention(*(t.cuda() for t in _t(X, Q, K, V)), 1.0, 10)
    assert sim.X.device.type == "cuda" and sim.max_drift < 1e-6


@pytest.mark.parametrize("varying", [False, True])
def test_adaptive_run_matches_the_oja_closed_form(varying):
    """Oja flow xdot = (I - x x^T) g(t) V x on the sphere: x(t) = e^{G(t) V} x0 / |e^{G(t) V} x0|, G = int_0^t g.

    Constant g = 1, or g(t) = 1 + sin(3t)/2 (time-varying: the batch shares one step), through
    Dormand-Prince 5(4) with the retraction; the error is that of the tolerance, far below RK4's
    at the step the fixed-step runs used."""
    import scipy.linalg
    import torch

    from flowcert.gpu import attention as ga
    from flowcert.symbolic.attention import Structure

    rng = np.random.default_rng(11)
    Vs = rng.normal(size=(3, 3))
    V = (Vs + Vs.T) / 2
    X0 = rng.normal(size=(4, 5, 3))  # batch 4, n = 5 tokens (independent under Oja)
    X0 /= np.linalg.norm(X0, axis=-1, keepdims=True)
    T = 6.0
    if varying:
        args = lambda t: (torch.as_tensor((1 + np.sin(3 * t) / 2) * V),)  # noqa: E731
        G = T + (1 - np.cos(3 * T)) / 6
    else:
        args, G = (torch.as_tensor(V),), T
    run = ga.simulate_adaptive(Structure(variant="oja"), torch.as_tensor(X0), args, T, rtol=1e-10, atol=1e-12)
    E = scipy.linalg.expm(G * V)
    want = X0 @ E.T
    want /= np.linalg.norm(want, axis=-1, keepdims=True)
    assert np.allclose(run.t.numpy(), T)
    assert np.abs(run.X.numpy() - want).max() < 1e-8
    assert run.max_drift < 1e-8 and int(run.steps.max()) < 2000
    if varying:
        assert len(set(run.steps.tolist())) == 1  # one shared step sequence


def test_adaptive_run_stops_at_its_step_budget():
    import torch

    from flowcert.gpu import attention as ga
    from flowcert.symbolic.attention import Structure

    V = torch.as_tensor(np.diag([1.0, -1.0, 0.5]))
    X0 = torch.as_tensor(np.tile(np.array([0.6, 0.8, 0.0]), (1, 2, 1)))
    run = ga.simulate_adaptive(Structure(variant="oja"), X0, (V,), 50.0, max_steps=7)
    assert int(run.steps[0]) + int(run.rejected[0]) <= 7 and float(run.t[0]) < 50.0
