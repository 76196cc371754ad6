"""The extended ``attention`` model (one model, both papers): every structure's generated kernels
(numpy, torch, C) against the entry-by-entry SymPy field; row sums of the attention; tangency to
the ellipsoid; causal token 1 at rest under U = I; manifold integrators and their drift; the
parameter file; the CLI wiring."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcert import cli
from flowcert.attention import params as ap
from flowcert.numeric.attention import field as nf
from flowcert.numeric.attention.integrate import integrate
from flowcert.errors import ParamError
from flowcert.symbolic import attention as sa
from flowcert.numeric import native as cbuild
from flowcert.symbolic import codegen

torch.set_num_threads(1)

STRUCTURES = [
    sa.Structure(),
    sa.Structure(heads=2, causal=True, normalization="sqrt"),
    sa.Structure(heads=2, ellipsoid=True),
    sa.Structure(causal=True, ellipsoid=True, normalization="sqrt"),
    sa.Structure(variant="oja"),
    sa.Structure(variant="multiagent_oja", ellipsoid=True),
]


def _spd(rng, d):
    G = rng.normal(size=(d, d))
    return G @ G.T + d * np.eye(d)


def _case(structure, rng, n, d, batch=None):
    """Random kernel arguments and explicit per-head data for ``structure``."""
    lead = () if batch is None else (batch,)
    W = _spd(rng, d) / d if structure.ellipsoid else None
    X = nf.project(rng.normal(size=lead + (n, d)), W)
    heads = [(rng.normal(size=(d, d)), rng.normal(size=(d, d)), rng.normal(size=(d, d)))
             for _ in range(structure.heads)]
    if structure.variant == "self_attention":
        args = [m for h in heads for m in h]
    elif structure.variant == "multiagent_oja":
        args = [np.ones(n), heads[0][2]]
    else:
        args = [heads[0][2]]
    if structure.causal:
        args.append(nf.causal_mask(n))
    if structure.ellipsoid:
        args.append(W)
    return X, args, heads, W


def _explicit(structure, X, heads, W):
    """Sum over heads of the entry-by-entry field (SymPy, evaluated in floats)."""
    out = np.zeros_like(X)
    for q, k, v in heads:
        F = sa.explicit_field(sp.Matrix(X), sp.Matrix(q.T @ k), sp.Matrix(v), structure.normalization,
                              causal=structure.causal, Ws=None if W is None else sp.Matrix(W),
                              variant=structure.variant)
        out += np.array(F.evalf(), dtype=float)
    return out


@pytest.mark.parametrize("structure", STRUCTURES, ids=str)
def test_kernels_match_the_explicit_sympy_field(structure):
    rng = np.random.default_rng(hash(structure) % 2**32)
    n, d = 4, 3
    X, args, heads, W = _case(structure, rng, n, d)
    want = _explicit(structure, X, heads, W)
    scale = 1 + np.abs(want).max()
    got_np = nf.structure_kernel(structure, "numpy")(X, *args)[0]
    got_t = nf.structure_kernel(structure, "torch")(*[torch.from_numpy(np.array(a)) for a in (X, *args)])[0].numpy()
    assert np.abs(got_np - want).max() <= 1e-12 * scale
    assert np.abs(got_t - want).max() <= 1e-12 * scale
    try:
        got_c = nf.structure_kernel(structure, "c")(X, *args)[0][0]
    except cbuild.CompilerUnavailable:
        return
    assert np.abs(got_c - want).max() <= 1e-12 * scale


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), d=st.integers(1, 4), k=st.integers(0, len(STRUCTURES) - 1))
def test_field_is_tangent_to_the_ellipsoid_and_batched(seed, n, d, k):
    structure = STRUCTURES[k]
    rng = np.random.default_rng(seed)
    X, args, _, W = _case(structure, rng, n, d, batch=3)
    F = nf.structure_kernel(structure)(X, *args)[0]
    XW = X if W is None else X @ W
    scale = 1 + sum(np.abs(a[np.isfinite(a)]).max() for a in args if a.ndim == 2) * n
    assert np.abs((XW * F).sum(-1)).max() <= 1e-12 * scale
    for b in range(3):  # batching = per-configuration evaluation
        assert np.allclose(nf.structure_kernel(structure)(X[b], *args)[0], F[b], rtol=0, atol=1e-13 * scale)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7), causal=st.booleans(), norm=st.sampled_from(["unit", "sqrt"]))
def test_attention_rows_sum_to_the_normalisation(seed, n, causal, norm):
    """The generated attention matrix: rows sum to 1 or 1/sqrt(d); causal rows see keys j <= i only."""
    rng = np.random.default_rng(seed)
    d = 3
    X = nf.project(rng.normal(size=(n, d)))
    q, k = rng.normal(size=(2, d, d))
    inputs = [sa.X, sa.Q, sa.K] + ([sa.C] if causal else [])
    program = codegen.lower_expressions("A", [("A", sa.attention_matrix(norm, causal=causal))], inputs)
    A = codegen.NumpyPrinter().compile(program)(X, q, k, *([nf.causal_mask(n)] if causal else []))[0]
    c = 1.0 if norm == "unit" else 1 / np.sqrt(d)
    assert np.allclose(A.sum(1), c, atol=1e-13)
    if causal:
        assert np.all(A[np.triu_indices(n, 1)] == 0)


def test_causal_first_token_never_moves_and_integrators_stay_on_the_manifold():
    rng = np.random.default_rng(5)
    p = ap.parse_attention({"heads": [{"P": rng.normal(size=(3, 3)).tolist(), "V": np.eye(3).tolist()},
                                      {"P": [["cos(t)", 0, 0], [0, 1, 0], [0, 0, "sin(2*t)"]], "V": np.eye(3).tolist()}],
                            "causal": True, "normalization": "sqrt", "n": 5, "W": np.diag([1.0, 2.0, 0.5]).tolist()})
    from flowcert import attention

    X0 = p.initial_tokens()
    traj = integrate(attention.field(p), X0, 3.0, W=p.W)
    assert traj.ok and traj.drift < 1e-8
    assert np.abs(traj.X[:, 0] - X0[0]).max() == 0.0
    sim = attention.simulate(p, t_end=1.0)
    assert np.array(sim["X_final"])[0] == pytest.approx(X0[0], abs=0)
    assert sim["max_drift"] < 1e-8
    assert np.abs(np.array(sim["X_final"]) - integrate(attention.field(p), X0, 1.0, W=p.W).X_final).max() < 1e-9


def test_oja_flow_converges_to_top_eigenvector_and_time_varying_heads_are_evaluated():
    p = ap.parse_attention({"variant": "oja", "V": [[3, 1, 0], [1, 2, 0], [0, 0, -1]], "n": 4, "t_end": 30})
    from flowcert import attention

    traj = attention.integrate(p)
    v1 = np.linalg.eigh(np.array([[3, 1, 0], [1, 2, 0], [0, 0, -1.0]]))[1][:, -1]
    assert np.abs(np.abs(traj.X_final @ v1) - 1).max() < 1e-8
    q = ap.parse_attention({"P": [["2*cos(t)", 0], [0, "exp(-t)"]], "V": [[1, 0], [0, 1]], "n": 2})
    assert np.allclose(q.M(0, 1.0), np.diag([2 * np.cos(1.0), np.exp(-1.0)]), rtol=1e-15, atol=0)


@pytest.mark.parametrize("raw,key", [
    ({"V": [[1, 2], [3]], "Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]]}, "V"),
    ({"V": [[1, 0], [0, 1]], "Q": [[1, 0], [0, 1]]}, "K"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "X0": [[0.6, 0.8], [1, 1]]}, "X0"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "W": [[1, 0.5], [0.4, 1]]}, "W"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "W": [[1, 0], [0, -1]]}, "W"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "beta": float("nan")}, "beta"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "causal": 1}, "causal"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "heads": []}, "V"),
    ({"variant": "oja", "V": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]]}, "K"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "n": 0}, "n"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "n": 3, "X0": [[1, 0], [0, 1]]}, "X0"),
    ({"V": [[1, 0], [0, 1]], "P": [[1, 0], [0, 1]], "normalisation": "unit"}, "normalisation"),
    ({"heads": [{"P": [[1, 0], [0, 1]], "V": [[1, 0], [0, 1]]}, {"P": [[1]], "V": [[1]]}]}, "heads[1].V"),
])
def test_bad_parameters_name_the_key(raw, key):
    with pytest.raises(ParamError) as err:
        ap.parse_attention(raw)
    assert err.value.key == key and "\n" not in str(err.value)


def test_cli_codegen_simulate_and_bad_input(tmp_path, capsys):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"V": [[2, 0], [0, 1]], "P": [[1, 0], [0, 1]], "n": 3, "t_end": 1.0}))
    for backend in ("numpy", "torch", "c"):
        assert cli.main(["codegen", "attention", "--backend", backend, "--params", str(f)]) == 0
        assert "attention_field" in capsys.readouterr().out
    assert cli.main(["simulate", "attention", "--params", str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["system"] == "attention" and np.array(doc["simulation"]["X_final"]).shape == (3, 2)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"V": [[2, 0], [0, 1]], "P": [[1, 0], [0, 1]], "X0": [[2, 0]]}))
    proc = subprocess.run([sys.executable, "-m", "flowcert", "simulate", "attention", "--params", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "X0" in proc.stderr
