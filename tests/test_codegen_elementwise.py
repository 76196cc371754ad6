"""Elementwise maps in generated kernels: Max/Min/Piecewise and elementary functions printed for
numpy, torch and C, checked entry by entry against plain-Python references (including values on
both sides of every kink and at 0), exact evaluation on rationals, and common-subexpression
elimination in the printed source."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from flowcert.numeric import gaussian as ng
from flowcert.numeric import native as cbuild
from flowcert.symbolic import codegen
from flowcert.symbolic.codegen import ElementwiseMap, lower_expressions

torch.set_num_threads(1)

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

r, c = sp.symbols("r c", integer=True, positive=True)
A, B = sp.MatrixSymbol("A", r, c), sp.MatrixSymbol("B", r, c)
x, y = sp.symbols("x y", real=True)

KINKS = [0.0, -0.0, 1e-300, -1e-300, 1e-12, -1e-12, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0]


def _relu(a):
    return a if a > 0 else 0.0


def _hardtanh(a):
    return -1.0 if a < -1 else (1.0 if a > 1 else a)


def _arms(a, b):
    if a < -0.5:
        return a * a
    if a < 1 and b > 0:
        return b * math.sin(a)
    return 1.0


# name -> (SymPy map, plain-Python reference on floats)
MAPS = {
    "relu": (sp.Lambda(x, sp.Max(x, 0)), _relu),
    "relu_piecewise": (sp.Lambda(x, sp.Piecewise((x, x > 0), (0, True))), _relu),
    "step": (sp.Lambda(x, sp.Piecewise((1, x >= 0), (0, True))), lambda a: 1.0 if a >= 0 else 0.0),
    "leaky": (sp.Lambda(x, sp.Max(x, x / 10)), lambda a: a if a > a / 10 else a / 10),
    "hardtanh": (sp.Lambda(x, sp.Min(sp.Max(x, -1), 1)), _hardtanh),
    "min2": (sp.Lambda((x, y), sp.Min(x, y)), lambda a, b: a if a < b else b),
    "max3": (sp.Lambda((x, y), sp.Max(x, y, 0)), lambda a, b: max(a, b, 0.0)),
    "arms": (sp.Lambda((x, y), sp.Piecewise((x**2, x < sp.Rational(-1, 2)),
                                            (y * sp.sin(x), sp.And(x < 1, y > 0)), (1, True))), _arms),
    "smooth": (sp.Lambda((x, y), sp.exp(-x**2) * sp.tanh(y) + sp.Abs(x) - sp.cosh(x * y) / 3),
               lambda a, b: math.exp(-a * a) * math.tanh(b) + abs(a) - math.cosh(a * b) / 3),
}


@pytest.fixture(scope="module")
def c_available(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FLOWCERT_CACHE", str(tmp_path_factory.mktemp("cache")))
    try:
        cbuild.compile_c_shaped(_program("probe", *MAPS["relu"][:1]))
        yield True
    except cbuild.CompilerUnavailable:
        yield False
    finally:
        mp.undo()


def _program(name, f):
    args = (A, B)[: len(f.variables)]
    return lower_expressions(name, [("Y", ElementwiseMap(f, *args))], list(args))


@pytest.fixture(scope="module")
def kernels(c_available):
    out = {}
    for name, (f, _) in MAPS.items():
        p = _program(name, f)
        out[name] = {
            "numpy": codegen.NumpyPrinter().compile(p),
            "torch": codegen.TorchPrinter().compile(p),
            "c": cbuild.compile_c_shaped(p) if c_available else None,
        }
    return out


def _reference(name, *arrays):
    ref = MAPS[name][1]
    return np.vectorize(ref, otypes=[np.float64])(*arrays)


def _run(kernel, backend, *arrays):
    if backend == "torch":
        out = kernel(*(torch.from_numpy(a) for a in arrays))[0]
        assert out.dtype == torch.float64
        return out.numpy()
    out = kernel(*arrays)[0]
    assert out.dtype == np.float64
    return out


BACKENDS = ["numpy", "torch", "c"]


@st.composite
def map_inputs(draw):
    """Two arrays of one random shape (batch 1..4, r 1..8, c 1..5), rich in kink values."""
    shape = (draw(st.integers(1, 4)), draw(st.integers(1, 8)), draw(st.integers(1, 5)))
    elems = st.one_of(st.floats(-3, 3, allow_nan=False, width=64), st.sampled_from(KINKS))
    return tuple(draw(hnp.arrays(np.float64, shape, elements=elems)) for _ in range(2))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(MAPS))
@SETTINGS
@given(data=map_inputs())
def test_generated_map_matches_python_reference(kernels, backend, name, data):
    kernel = kernels[name][backend]
    if kernel is None:
        pytest.skip("no C compiler")
    arrays = data[: len(MAPS[name][0].variables)]
    got = _run(kernel, backend, *arrays)
    want = _reference(name, *arrays)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-12 * (1 + np.abs(want)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_kinks_both_sides_and_zero_exactly(kernels, backend):
    """Selections (Max, Min, Piecewise) must be exact on either side of the kink and at 0."""
    if kernels["relu"][backend] is None:
        pytest.skip("no C compiler")
    a = np.array([[[-1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0]]])
    b = np.array([[[1.0, 1e-300, 0.0, -0.0, -1e-300, -1.0]]])
    expect = {
        "relu": [0.0, 0.0, 0.0, 0.0, 1e-300, 1.0],
        "relu_piecewise": [0.0, 0.0, 0.0, 0.0, 1e-300, 1.0],
        "step": [0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
        "min2": [-1.0, -1e-300, 0.0, 0.0, -1e-300, -1.0],
        "max3": [1.0, 1e-300, 0.0, 0.0, 1e-300, 1.0],
    }
    for name, want in expect.items():
        got = _run(kernels[name][backend], backend, *(a, b)[: len(MAPS[name][0].variables)])
        assert got.ravel().tolist() == want, name
    h = _run(kernels["hardtanh"][backend], backend, np.array([[[-1.5, -1.0, -0.999, 0.0, 0.999, 1.0, 1.5]]]))
    assert h.ravel().tolist() == [-1.0, -1.0, -0.999, 0.0, 0.999, 1.0, 1.0]


def test_torch_map_gradients_on_either_side_of_the_kink(kernels):
    a = torch.tensor([[[-2.0, -0.5, 0.5, 2.0]]], dtype=torch.float64, requires_grad=True)
    for name in ("relu", "relu_piecewise", "leaky"):
        (out,) = kernels[name]["torch"](a)
        (g,) = torch.autograd.grad(out.sum(), a)
        slope = 0.1 if name == "leaky" else 0.0
        assert g.ravel().tolist() == [slope, slope, 1.0, 1.0]


@pytest.mark.parametrize("name", sorted(MAPS))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_exact_evaluation_on_rationals(name, data):
    f = MAPS[name][0]
    if name in ("smooth", "arms"):  # transcendental values: compare in floating point below
        vals = st.sampled_from([Fraction(k, 4) for k in range(-8, 9)])
    else:
        vals = st.sampled_from([Fraction(k, 4) for k in range(-8, 9)] + [Fraction(1, 10**9), Fraction(-1, 10**9)])
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    mats = [sp.Matrix(*shape, lambda i, j: sp.Rational(data.draw(vals))) for _ in f.variables]
    (got,) = codegen.evaluate(_program(name, f), {m.name: v for m, v in zip((A, B), mats)}, codegen.MatrixOps)
    want = _reference(name, *(np.array(m.tolist(), dtype=float) for m in mats))
    exact = np.array(got.evalf(30).tolist(), dtype=float)
    assert np.all(np.abs(exact - want) <= 1e-14 * (1 + np.abs(want)))


def test_piecewise_without_default_is_nan_where_no_arm_holds(c_available, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWCERT_CACHE", str(tmp_path))
    p = _program("partial", sp.Lambda(x, sp.Piecewise((x, x > 0))))
    a = np.array([[[-1.0, 0.0, 2.0]]])
    for out in (codegen.NumpyPrinter().compile(p)(a)[0], codegen.TorchPrinter().compile(p)(torch.from_numpy(a))[0].numpy(),
                cbuild.compile_c_shaped(p)(a)[0] if c_available else np.array([[[np.nan, np.nan, 2.0]]])):
        assert np.isnan(out[0, 0, :2]).all() and out[0, 0, 2] == 2.0


# ---------------------------------------------------------------------------------------------
# common subexpressions
# ---------------------------------------------------------------------------------------------


def _body(source):
    """Source without the docstring/comment line that carries the digest."""
    return "\n".join(ln for ln in source.splitlines() if '"""' not in ln and not ln.startswith("/*"))


def test_repeated_subexpression_is_printed_once(c_available):
    u = sp.exp(x * y)
    p = _program("cse_demo", sp.Lambda((x, y), sp.sin(u) + sp.cos(u) * u + sp.tanh(u)))
    sources = [codegen.NumpyPrinter().print(p), codegen.TorchPrinter().print(p), codegen.ShapedCPrinter().print(p)]
    for src in sources:
        body = _body(src)
        assert body.count("exp(") == 1, src
        assert len(re.findall(r"A(\[i\])? \* B(\[i\])?", body)) == 1, src
    a, b = np.random.default_rng(0).uniform(-1, 1, (2, 2, 3, 4))
    e = np.exp(a * b)
    want = np.sin(e) + np.cos(e) * e + np.tanh(e)
    assert np.allclose(codegen.NumpyPrinter().compile(p)(a, b)[0], want, rtol=1e-14, atol=0)


def test_identical_maps_across_outputs_are_computed_once():
    relu = ElementwiseMap(sp.Lambda(x, sp.Max(x, 0)), A)
    p = lower_expressions("two", [("Y", relu + B), ("Z", relu - B)], [A, B])
    assert [op.op for op in p.ops].count("map") == 1
    a, b = np.random.default_rng(1).normal(size=(2, 3, 2, 2))
    Y, Z = codegen.NumpyPrinter().compile(p)(a, b)
    assert np.array_equal(Y, np.maximum(a, 0) + b) and np.array_equal(Z, np.maximum(a, 0) - b)


def test_sympy_applyfunc_and_hadamard_lower_to_maps():
    e = sp.HadamardProduct(A.applyfunc(sp.Lambda(x, sp.tanh(x))), B)
    p = lower_expressions("had", [("Y", e)], [A, B])
    a, b = np.random.default_rng(2).normal(size=(2, 4, 3, 2))
    assert np.allclose(codegen.NumpyPrinter().compile(p)(a, b)[0], np.tanh(a) * b, rtol=1e-15, atol=0)


def test_dimension_dependent_coefficients_are_bound_from_shapes(c_available):
    p = lower_expressions("scaled", [("Y", ElementwiseMap(sp.Lambda(x, x / sp.sqrt(c) + r), A))], [A])
    a = np.random.default_rng(3).normal(size=(2, 3, 5))
    want = a / np.sqrt(5) + 3
    assert np.allclose(codegen.NumpyPrinter().compile(p)(a)[0], want, rtol=1e-15)
    assert np.allclose(codegen.TorchPrinter().compile(p)(torch.from_numpy(a))[0].numpy(), want, rtol=1e-15)
    if c_available:
        assert np.allclose(cbuild.compile_c_shaped(p)(a)[0], want, rtol=1e-15)


def test_lowering_rejects_free_parameters_and_clashing_names():
    beta = sp.Symbol("beta")
    with pytest.raises(ValueError, match="not dimensions"):
        lower_expressions("bad", [("Y", ElementwiseMap(sp.Lambda(x, beta * x), A))], [A])
    x0 = sp.MatrixSymbol("x0", r, c)
    with pytest.raises(ValueError, match="clash"):
        lower_expressions("bad", [("Y", ElementwiseMap(sp.Lambda(x, x), x0))], [x0])


def test_shaped_c_printer_runs_the_polynomial_gaussian_program(c_available):
    """The shape-aware C backend also covers the square-matrix programs of :func:`lower`."""
    if not c_available:
        pytest.skip("no C compiler")
    rng = np.random.default_rng(4)
    d = 3
    Am, Bm, Vm = rng.normal(size=(3, d, d))
    b, mu = rng.normal(size=(2, 5, d))
    S = rng.normal(size=(5, d, d))
    S = S + np.swapaxes(S, -1, -2)
    want = ng.moment_kernel()(Am, Bm, Vm, b, mu, S)
    got = cbuild.compile_c_shaped(ng.moment_program())(Am, Bm, Vm, b, mu, S)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.allclose(g, w, rtol=1e-13, atol=1e-13)
