"""Tests for flowcert.symbolic.codegen: generated numpy / torch / exact kernels of the gaussian
system against hand-written batched formulas, autograd adjoints and exact rational arithmetic."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from flowcert.numeric import gaussian as ng
from flowcert.symbolic import codegen
from flowcert.symbolic import gaussian as g
from flowcert.symbolic.matrix import Relations, normal_form

torch.set_num_threads(1)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
U = 2.0**-53  # unit roundoff of float64

ELEM = st.floats(-2, 2, allow_nan=False, allow_infinity=False, width=64)


@pytest.fixture(scope="module")
def kernels():
    mp, lp = ng.moment_program(), ng.linearisation_program()
    return {
        "np_moment": codegen.NumpyPrinter().compile(mp),
        "np_lin": codegen.NumpyPrinter().compile(lp),
        "torch_moment": codegen.TorchPrinter().compile(mp),
        "torch_lin": codegen.TorchPrinter().compile(lp),
    }


# ---------------------------------------------------------------------------------------------
# hand-written batched references (independent of the generated code)
# ---------------------------------------------------------------------------------------------


def _T(X):
    return X.mT if isinstance(X, torch.Tensor) else np.swapaxes(X, -1, -2)


def hand_moments(A, B, V, b, mu, S):
    """dmu = (A+V+V S B) mu + b, dS = A S + S A^T + V S B S + S B^T S V^T (batched)."""
    dmu = ((A + V + V @ S @ B) @ mu[..., None])[..., 0] + b
    dS = A @ S + S @ _T(A) + V @ S @ B @ S + S @ _T(B) @ S @ _T(V)
    return dmu, dS


def hand_lin(A, B, V, S, D):
    M = A + V @ S @ B
    return M @ D + D @ _T(M) + V @ D @ B @ S + S @ _T(B) @ D @ _T(V)


def hand_lin_adjoint(A, B, V, S, W):
    """Frobenius adjoint of D -> DF_S[D]: M^T W + W M + V^T W S B^T + B S W V (S symmetric)."""
    M = A + V @ S @ B
    return M.T @ W + W @ M + V.T @ W @ S @ B.T + B @ S @ W @ V


def sym(X):
    return 0.5 * (X + _T(X))


@st.composite
def moment_inputs(draw):
    """(A, B, V, b, mu, Sigma) with a common batch shape, each input batched or not."""
    d = draw(st.integers(1, 5))
    batch = draw(st.sampled_from([(), (1,), (2,), (3,), (6,), (2, 3)]))
    if batch and len(batch) == 1:
        batch = (draw(st.integers(1, 6)),)
    flags = draw(st.lists(st.booleans(), min_size=6, max_size=6))
    flags[5] = True  # Sigma always carries the batch
    def arr(shape, batched):
        return draw(hnp.arrays(np.float64, (batch if batched else ()) + shape, elements=ELEM))
    A, B, V = (arr((d, d), f) for f in flags[:3])
    b, mu = arr((d,), flags[3]), arr((d,), flags[4])
    S = sym(arr((d, d), True))
    return A, B, V, b, mu, S, batch


def _bound(*abs_results):
    return max(float(np.max(r)) if np.size(r) else 0.0 for r in abs_results)


# ---------------------------------------------------------------------------------------------
# generated kernels == hand formulas
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(inp=moment_inputs())
def test_numpy_moment_kernel_matches_hand(kernels, inp):
    A, B, V, b, mu, S, batch = inp
    dmu, dS = kernels["np_moment"](A, B, V, b, mu, S)
    hmu, hS = hand_moments(A, B, V, b, mu, S)
    assert dmu.dtype == np.float64 and dS.dtype == np.float64
    assert dmu.shape == hmu.shape and dS.shape == hS.shape
    assert dS.shape[:-2] == batch
    mmu, mS = hand_moments(*(np.abs(z) for z in (A, B, V, b, mu, S)))
    assert np.all(np.abs(dmu - hmu) <= 1e-12 * mmu + 1e-300)
    assert np.all(np.abs(dS - hS) <= 1e-12 * mS + 1e-300)


@SETTINGS
@given(inp=moment_inputs())
def test_torch_moment_kernel_matches_hand(kernels, inp):
    A, B, V, b, mu, S, batch = inp
    T = [torch.from_numpy(np.ascontiguousarray(z)) for z in (A, B, V, b, mu, S)]
    dmu, dS = kernels["torch_moment"](*T)
    assert dmu.dtype == torch.float64 and dS.dtype == torch.float64
    hmu, hS = hand_moments(A, B, V, b, mu, S)
    mmu, mS = hand_moments(*(np.abs(z) for z in (A, B, V, b, mu, S)))
    assert tuple(dS.shape) == hS.shape and tuple(dmu.shape) == hmu.shape
    assert np.all(np.abs(dmu.numpy() - hmu) <= 1e-12 * mmu + 1e-300)
    assert np.all(np.abs(dS.numpy() - hS) <= 1e-12 * mS + 1e-300)


@SETTINGS
@given(inp=moment_inputs(), data=st.data())
def test_linearisation_kernels_match_hand(kernels, inp, data):
    A, B, V, _, _, S, batch = inp
    d = S.shape[-1]
    D = sym(data.draw(hnp.arrays(np.float64, batch + (d, d), elements=ELEM)))
    (got,) = kernels["np_lin"](A, B, V, S, D)
    want = hand_lin(A, B, V, S, D)
    mag = hand_lin(*(np.abs(z) for z in (A, B, V, S, D)))
    assert got.dtype == np.float64 and got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-12 * mag + 1e-300)
    (gt,) = kernels["torch_lin"](*(torch.from_numpy(np.ascontiguousarray(z)) for z in (A, B, V, S, D)))
    assert gt.dtype == torch.float64
    assert np.all(np.abs(gt.numpy() - want) <= 1e-12 * mag + 1e-300)


def test_numpy_kernel_float32_stays_float32(kernels):
    rng = np.random.default_rng(0)
    d = 3
    args = [rng.uniform(-1, 1, (d, d)).astype(np.float32) for _ in range(3)]
    b, mu = (rng.uniform(-1, 1, d).astype(np.float32) for _ in range(2))
    S = sym(rng.uniform(-1, 1, (d, d))).astype(np.float32)
    dmu, dS = kernels["np_moment"](*args, b, mu, S)
    assert dmu.dtype == np.float32 and dS.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# derivatives: autograd through the torch kernel, finite differences of the numpy kernel
# ---------------------------------------------------------------------------------------------


def _rand_case(seed, d, batch=()):
    rng = np.random.default_rng(seed)
    A, B, V = (rng.uniform(-2, 2, batch + (d, d)) for _ in range(3))
    b, mu = rng.uniform(-2, 2, batch + (d,)), rng.uniform(-2, 2, batch + (d,))
    S = sym(rng.uniform(-2, 2, batch + (d, d)))
    return A, B, V, b, mu, S, rng


def _sym_basis(d):
    out = []
    for i in range(d):
        for j in range(i, d):
            E = np.zeros((d, d))
            E[i, j] = E[j, i] = 1.0
            out.append(E)
    return np.array(out)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_torch_autograd_is_adjoint_of_linearisation(kernels, seed, d):
    A, B, V, b, mu, S, rng = _rand_case(seed, d)
    W = rng.uniform(-2, 2, (d, d))
    t = lambda z: torch.tensor(z, dtype=torch.float64)  # noqa: E731
    X = t(S).requires_grad_(True)
    Ssym = 0.5 * (X + X.mT)  # stay on symmetric matrices (the kernel assumes Sigma = Sigma^T)
    At = t(A).requires_grad_(True)
    _, dS = kernels["torch_moment"](At, t(B), t(V), t(b), t(mu), Ssym)
    assert dS.requires_grad
    f = (t(W) * dS).sum()
    gX, gA = torch.autograd.grad(f, (X, At))
    mag = hand_lin_adjoint(*(np.abs(z) for z in (A, B, V, S, W)))
    # (1) against the hand adjoint, symmetrised (the gradient w.r.t. X is sym of the S-gradient)
    want = sym(hand_lin_adjoint(A, B, V, S, W))
    assert np.all(np.abs(gX.numpy() - want) <= 1e-12 * mag + 1e-300)
    # (2) against the generated linearisation kernel on a basis of symmetric matrices:
    #     <grad, E_k> = <W, DF_S[E_k]>
    E = _sym_basis(d)
    (images,) = kernels["np_lin"](A, B, V, S, E)
    lhs = np.einsum("kij,ij->k", E, gX.numpy())
    rhs = np.einsum("kij,ij->k", images, W)
    assert np.allclose(lhs, rhs, rtol=1e-11, atol=1e-11 * (1 + mag.max()))
    # (3) d/dA <W, A S + S A^T> = (W + W^T) S
    assert np.allclose(gA.numpy(), (W + W.T) @ S, rtol=1e-12, atol=1e-12 * (1 + np.abs(W).max() * np.abs(S).sum()))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5), batch=st.integers(1, 6))
def test_numpy_kernel_central_difference(kernels, seed, d, batch):
    A, B, V, b, mu, S, rng = _rand_case(seed, d, (batch,))
    D = sym(rng.uniform(-2, 2, (batch, d, d)))
    (lin,) = kernels["np_lin"](A, B, V, S, D)
    mag = hand_lin(*(np.abs(z) for z in (A, B, V, S, D)))
    K = lambda S_: kernels["np_moment"](A, B, V, b, mu, S_)[1]  # noqa: E731
    # F is quadratic: the central difference is exact for every step (h = 1 included)
    for h in (1.0, 1e-3):
        fd = (K(S + h * D) - K(S - h * D)) / (2 * h)
        mF = hand_moments(*(np.abs(z) for z in (A, B, V, b, mu, S + h * np.abs(D))))[1]
        assert np.all(np.abs(fd - lin) <= 1e-12 * mag + 1e-13 * mF / h)
    # the mean output is linear in mu: its central difference along mu is the matrix
    e = rng.uniform(-2, 2, (batch, d))
    dm = (kernels["np_moment"](A, B, V, b, mu + e, S)[0] - kernels["np_moment"](A, B, V, b, mu - e, S)[0]) / 2
    want = ((A + V + V @ S @ B) @ e[..., None])[..., 0]
    assert np.allclose(dm, want, rtol=1e-11, atol=1e-11 * (1 + np.abs(want).max()))


# ---------------------------------------------------------------------------------------------
# exact evaluation
# ---------------------------------------------------------------------------------------------


def _dyadic_mat(draw, r, c):
    vals = draw(st.lists(st.integers(-16, 16), min_size=r * c, max_size=r * c))
    return sp.Matrix(r, c, [sp.Rational(v, 8) for v in vals])


@SETTINGS
@given(data=st.data(), d=st.integers(1, 4))
def test_exact_evaluate_equals_numpy_kernel_on_dyadic_data(kernels, data, d):
    """Entries k/8 with |k| <= 16: every float operation of the kernel is exact, so the numpy
    kernel must agree with exact rational evaluation bit for bit."""
    A, B, V = (_dyadic_mat(data.draw, d, d) for _ in range(3))
    S0 = _dyadic_mat(data.draw, d, d)
    S = S0 + S0.T
    b, mu = _dyadic_mat(data.draw, d, 1), _dyadic_mat(data.draw, d, 1)
    vals = {"A": A, "B": B, "V": V, "b": b, "mu": mu, "Sigma": S}
    emu, eS = codegen.evaluate(ng.moment_program(), vals, codegen.MatrixOps())
    # exact result equals the formula in exact arithmetic
    assert emu == (A + V + V * S * B) * mu + b
    assert eS == A * S + S * A.T + V * S * B * S + S * B.T * S * V.T
    f = lambda M: np.array(M.tolist(), dtype=float)  # noqa: E731
    nmu, nS = kernels["np_moment"](f(A), f(B), f(V), f(b)[:, 0], f(mu)[:, 0], f(S))
    assert np.array_equal(nmu, f(emu)[:, 0])
    assert np.array_equal(nS, f(eS))


@settings(max_examples=15, deadline=None)
@given(data=st.data(), d=st.integers(1, 3))
def test_exact_evaluate_linearisation_arbitrary_rationals(data, d):
    def rat(r, c):
        ps = data.draw(st.lists(st.integers(-9, 9), min_size=r * c, max_size=r * c))
        qs = data.draw(st.lists(st.integers(1, 7), min_size=r * c, max_size=r * c))
        return sp.Matrix(r, c, [sp.Rational(p, q) for p, q in zip(ps, qs)])
    A, B, V = rat(d, d), rat(d, d), rat(d, d)
    S, D = rat(d, d), rat(d, d)
    S, D = S + S.T, D + D.T
    (got,) = codegen.evaluate(ng.linearisation_program(), {"A": A, "B": B, "V": V, "Sigma": S, "Delta": D},
                              codegen.MatrixOps())
    M = A + V * S * B
    assert got == M * D + D * M.T + V * D * B * S + S * B.T * D * V.T


class FractionOps:
    """Exact arithmetic on lists of lists of Fraction (independent of sympy)."""

    @staticmethod
    def matmul(a, b):
        return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
                for i in range(len(a))]

    @staticmethod
    def transpose(a):
        return [list(r) for r in zip(*a)]

    @staticmethod
    def linear(args, coeffs):
        cs = [Fraction(int(sp.Rational(c).p), int(sp.Rational(c).q)) for c in coeffs]
        r, c = len(args[0]), len(args[0][0])
        return [[sum((k * a[i][j] for k, a in zip(cs, args)), Fraction(0)) for j in range(c)] for i in range(r)]


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 5))
def test_fraction_path_and_float_path_agree(kernels, seed, d):
    """Exact evaluation of the same program on the exact values of float inputs; the float
    kernel must lie within a rigorous rounding-error bound gamma * (|A||S|+...)."""
    A, B, V, b, mu, S, _ = _rand_case(seed, d)
    fr = lambda M: [[Fraction(float(v)) for v in row] for row in np.atleast_2d(M)]  # noqa: E731
    col = lambda v: [[Fraction(float(t))] for t in v]  # noqa: E731
    vals = {"A": fr(A), "B": fr(B), "V": fr(V), "b": col(b), "mu": col(mu), "Sigma": fr(S)}
    emu, eS = codegen.evaluate(ng.moment_program(), vals, FractionOps())
    nmu, nS = kernels["np_moment"](A, B, V, b, mu, S)
    mmu, mS = hand_moments(*(np.abs(z) for z in (A, B, V, b, mu, S)))
    gamma = (8 * d + 16) * U
    for i in range(d):
        assert abs(Fraction(float(nmu[i])) - emu[i][0]) <= Fraction(gamma * mmu[i]) + Fraction(1e-300)
        for j in range(d):
            assert abs(Fraction(float(nS[i, j])) - eS[i][j]) <= Fraction(gamma * mS[i, j]) + Fraction(1e-300)


# ---------------------------------------------------------------------------------------------
# generated source and lowering
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("printer", [codegen.NumpyPrinter(), codegen.TorchPrinter()])
@pytest.mark.parametrize("prog", ["moment", "lin"])
def test_generated_source_is_batch_safe(printer, prog):
    program = ng.moment_program() if prog == "moment" else ng.linearisation_program()
    src = printer.source(program)
    assert ".dot(" not in src
    assert not re.search(r"\.T\b", src)  # .T reverses batch axes in numpy
    assert "@" in src
    # every transpose (A^T, B^T, V^T occur in both programs) swaps exactly the last two axes
    if isinstance(printer, codegen.TorchPrinter):
        assert "import torch" in src and "np." not in src
        assert ".mT" in src and "swapaxes" not in src and ".transpose(" not in src
    else:
        axes = re.findall(r"np\.swapaxes\([^,()]+, (-?\d+), (-?\d+)\)", src)
        assert axes and set(axes) == {("-1", "-2")}
        assert src.count("swapaxes") == len(axes) and ".transpose(" not in src
    compile(src, "<test>", "exec")


def test_lowering_has_no_duplicate_work():
    for program in (ng.moment_program(), ng.linearisation_program()):
        keys = [(op.op, op.args) for op in program.ops if op.op != "linear"]
        assert len(keys) == len(set(keys)), keys
        targets = [op.target for op in program.ops]
        assert len(targets) == len(set(targets))
    # the covariance field needs at most: A S, S B^T, (S B^T) S, (...) V^T and transposes
    n_mat = sum(op.op == "matmul" for op in ng.moment_program().ops)
    assert n_mat <= 4 + 5  # 4 for Sigma_dot, 5 matrix-vector products for mu_dot


def test_digest_is_deterministic_and_distinguishes_programs():
    p1 = codegen.lower("moment_field", [("mu_dot", g.mean_field()), ("Sigma_dot", g.covariance_field())],
                       [g.A, g.B, g.V, g.b, g.mu, g.Sigma], g.SYMMETRIC)
    p2 = codegen.lower("moment_field", [("mu_dot", g.mean_field()), ("Sigma_dot", g.covariance_field())],
                       [g.A, g.B, g.V, g.b, g.mu, g.Sigma], g.SYMMETRIC)
    assert p1.digest() == p2.digest()
    assert p1.digest() != ng.linearisation_program().digest()


def test_lower_rejects_identity_terms_and_symbolic_coefficients():
    with pytest.raises(ValueError):
        codegen.lower("f", [("o", g.A + sp.Identity(g.d))], [g.A])
    prog = codegen.lower("f", [("o", g.eps * g.A)], [g.A])
    with pytest.raises(ValueError):
        codegen.NumpyPrinter().source(prog)


# random words: the lowering (prefix memo, transposes, vector chains) against direct evaluation
_WORD = st.lists(st.sampled_from(["A", "B", "S", "At", "Bt"]), min_size=1, max_size=4).filter(
    lambda w: all(p != q for p, q in zip(w, w[1:]))  # avoid repeated factors (MatPow, see report)
)


@SETTINGS
@given(
    mat_words=st.lists(st.tuples(st.integers(-3, 3).filter(bool), _WORD), min_size=1, max_size=4),
    vec_words=st.lists(st.tuples(st.integers(-3, 3).filter(bool), _WORD), min_size=1, max_size=3),
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 4),
    batch=st.integers(1, 4),
)
def test_lowering_random_words(mat_words, vec_words, seed, d, batch):
    dd = sp.Symbol("d", integer=True, positive=True)
    Am, Bm, Sm = (sp.MatrixSymbol(n, dd, dd) for n in ("A", "B", "S"))
    xv = sp.MatrixSymbol("x", dd, 1)
    symb = {"A": Am, "B": Bm, "S": Sm, "At": Am.T, "Bt": Bm.T}
    rng = np.random.default_rng(seed)
    Anum, Bnum = rng.uniform(-2, 2, (batch, d, d)), rng.uniform(-2, 2, (batch, d, d))
    Snum = sym(rng.uniform(-2, 2, (batch, d, d)))
    xnum = rng.uniform(-2, 2, (batch, d))
    num = {"A": Anum, "B": Bnum, "S": Snum, "At": _T(Anum), "Bt": _T(Bnum)}
    absn = {k: np.abs(v) for k, v in num.items()}

    def build(words, vector):
        expr, val, mag = None, 0.0, 0.0
        for k, w in words:
            term = sp.MatMul(*[symb[s] for s in w], *([xv] if vector else []))
            expr = k * term if expr is None else expr + k * term
            v, m = num[w[0]], absn[w[0]]
            for s in w[1:]:
                v, m = v @ num[s], m @ absn[s]
            if vector:
                v, m = (v @ xnum[..., None])[..., 0], (m @ np.abs(xnum)[..., None])[..., 0]
            val, mag = val + k * v, mag + abs(k) * m
        return expr, val, mag

    em, vm, mm = build(mat_words, False)
    ev, vv, mv = build(vec_words, True)
    rel = Relations(symmetric=(Sm,))
    # outputs that cancel to zero are refused by lower() (tested below)
    assume(normal_form(em, rel) and normal_form(ev, rel))
    prog = codegen.lower("f", [("M", em), ("v", ev)], [Am, Bm, Sm, xv], rel)
    for printer, conv in ((codegen.NumpyPrinter(), np.asarray), (codegen.TorchPrinter(), torch.from_numpy)):
        fn = printer.compile(prog)
        outM, outv = fn(*(conv(z) for z in (Anum, Bnum, Snum, xnum)))
        outM, outv = np.asarray(outM), np.asarray(outv)
        assert np.all(np.abs(outM - vm) <= 1e-12 * (1 + mm))
        assert np.all(np.abs(outv - vv) <= 1e-12 * (1 + mv))


def test_output_that_cancels_to_zero():
    x = g.x
    zero = 2 * g.A * x + (-2) * (g.A * x)
    try:
        prog = codegen.lower("f", [("v", zero), ("M", g.A * g.Sigma)], [g.A, g.Sigma, x], g.SYMMETRIC)
    except ValueError:
        return  # refusing clearly at lowering time is acceptable
    fn = codegen.NumpyPrinter().compile(prog)
    A = np.ones((2, 2))
    v, M = fn(A, np.eye(2), np.ones(2))
    assert np.array_equal(v, np.zeros(2)) and np.array_equal(M, A)
