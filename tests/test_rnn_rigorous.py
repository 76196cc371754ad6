"""Thm 2's hypothesis "every A_t invertible" and the CQLF contraction decided at real size with rigorous
floating-point bounds (issue 46, item 2; flowcert.certificates.rnn_float).

* On small stacks where the exact rational path also runs, the two agree, and every float-verified
  contraction certificate (X, rho^2, kappa) is accepted by the *exact* rational checker as well.
* A singular or non-contracting set is never certified: a rank-deficient A_t leaves "invertible"
  unknown and a forged "value: true" is refused; a Jacobian with spectral radius > 1 never gets a
  rate below it, and forged rates / X are refused.
* A tampered certificate (rate, X, kappa, digest, the stack behind a digest) is refused.
* A moderate real-size GRU (H = 64, B*T = 800) is decided and its document re-checks bound; the
  peer's benchmark (nn.GRUCell(3, 128), inputs [32, 100, 3]) is under ``slow``.

The expectations come from the construction (a rank-deficient matrix, a spectral radius, an exact
re-check), never from the code under test.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
import torch

from flowcert.certificates import core
from flowcert.certificates import rnn as crnn
from flowcert.certificates import rnn_float as rf
from flowcert.certificates.predicates import PREDICATES

torch.set_num_threads(1)

INV, CQLF = "every A_t invertible", "common quadratic Lyapunov contraction"


def _exact(A: np.ndarray) -> list[list[str]]:
    return [[str(Fraction(float(v))) for v in row] for row in A]


def _stack(seed: int, N: int, n: int, scale: float, nonnormal: float = 0.0) -> np.ndarray:
    """N matrices near a common one: Schur stable, with ||A||_2 > 1 when ``nonnormal`` is large (so X = I fails)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    base = scale * Q + nonnormal * np.triu(np.ones((n, n)), 1)
    return np.stack([base + 0.02 * rng.standard_normal((n, n)) for _ in range(N)])


def _fresh(cert: dict) -> tuple[bool, str]:
    core.clear_memo()
    return core.explain(cert)


def _spectral_radius(A: np.ndarray) -> float:
    return float(max(np.abs(np.linalg.eigvals(M)).max() for M in A))


# ---------------------------------------------------------------------------------------------
# agreement with the exact rational path where both run
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,N,n,scale,nonnormal", [(0, 12, 3, 0.7, 0.0), (1, 30, 5, 0.5, 0.6), (2, 20, 8, 0.8, 0.0),
                                                      (3, 16, 4, 0.6, 0.9)])
def test_agrees_with_exact_path(seed, N, n, scale, nonnormal):
    A = _stack(seed, N, n, scale, nonnormal)
    exact_inv = PREDICATES["invertible_all"][0]({"jacobians": [_exact(M) for M in A]})
    inv = rf.invertible_float(A)
    assert exact_inv and inv.status == "holds"
    assert 0 < inv.margin <= float(np.linalg.svd(A, compute_uv=False)[:, -1].min())
    ex, ex_info = crnn.contraction_rate(list(A))
    fl, fl_info = rf.contraction_rate_float(A)
    assert ex.status == "holds" and fl.status == "holds"
    rad = _spectral_radius(A)
    assert fl_info["rho"] >= rad and ex_info["rho"] >= rad * (1 - 1e-9)
    # the float-verified claim, rationalised exactly, passes the exact rational checker too
    d = fl.certificate.data
    exact = {"X": _exact(np.array(d["X"])), "rho2": d["rho2"], "kappa_upper": d["kappa_upper"],
             "jacobians": [_exact(M) for M in A]}
    assert crnn._check_contraction(exact)


def test_gru_small_both_paths_agree():
    """The Jacobians of a small built-in GRU run: exact path (as kpflow analyze decides it) and float path."""
    from flowcert.gpu.rnn.operators import state_jacobians
    from flowcert.rnn.analyze import build_model
    from flowcert.rnn.params import parse_rnn

    m = build_model(parse_rnn({"cell": "gru", "B": 2, "T": 10, "H": 4, "I": 2, "seed": 5}))
    A = state_jacobians(m["tr"]).reshape(-1, 4, 4).numpy()
    assert PREDICATES["invertible_all"][0]({"jacobians": [_exact(M) for M in A]})
    assert rf.invertible_float(A).status == "holds"
    ex, ex_info = crnn.contraction_rate(list(A))
    fl, fl_info = rf.contraction_rate_float(A)
    assert ex.status == fl.status == "holds"
    assert fl_info["rho"] >= _spectral_radius(A) and (fl_info["rho"] < 1) == (ex_info["rho"] < 1)


# ---------------------------------------------------------------------------------------------
# singular / non-contracting sets are never certified
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tiny", [0.0, 1e-300, 1e-17])
def test_singular_never_certified(tiny):
    A = _stack(4, 10, 6, 0.7)
    B = A[3].copy()
    B[:, 5] = 2.0 * B[:, 0]  # rank 5 exactly (doubling is exact)
    B[2, 5] += tiny
    A[3] = B
    exact_inv = PREDICATES["invertible_all"][0]({"jacobians": [_exact(M) for M in A]})
    if tiny == 0.0:
        assert not exact_inv  # the construction is exactly singular
    res = rf.invertible_float(A)
    assert res.status == "unknown" and res.certificate is None
    ref = rf.register_stack(A)
    forged = core.Certificate("invertible_float", "forged", {"jacobians": ref, "value": True}).to_json()
    ok, _ = _fresh(forged)
    assert not ok


def test_non_contracting_never_gets_a_rate_below_its_spectral_radius():
    A = _stack(5, 12, 4, 0.6)
    A[7] = np.diag([1.25, 0.5, 0.3, -0.2]) + np.triu(np.full((4, 4), 0.7), 1)  # spectral radius 1.25, ||A|| > 1.25
    res, info = rf.contraction_rate_float(A)
    assert res.status == "unknown" or info["rho"] >= 1.25
    ref = rf.register_stack(A)
    n = A.shape[1]
    for X in (np.eye(n), np.diag([1.0, 4.0, 9.0, 16.0]), _lyap_of(A[0])):
        for r2 in (0.81, 0.9999, 1.5):  # rho < 1.25: false for every X (A_7 has an eigenvector with |lambda| = 1.25)
            data = {"X": X.tolist(), "rho2": str(Fraction(r2)), "kappa_upper": str(Fraction(float(np.abs(X).sum(1).max()) * 2)),
                    "jacobians": ref, "shift": 1e-9}
            ok, _ = _fresh(core.Certificate("contraction_float", "forged", data).to_json())
            assert not ok


def _lyap_of(A0: np.ndarray) -> np.ndarray:
    from scipy.linalg import solve_discrete_lyapunov

    X = solve_discrete_lyapunov(A0.T, np.eye(A0.shape[0]))
    X = 0.5 * (X + X.T)
    return 0.5 * (X + X.T) * (1.01 / np.linalg.eigvalsh(X)[0])


def test_one_norm_big_but_schur_stable_needs_x():
    """||A_t||_2 > 1 for every t (X = I cannot certify contraction) but a CQLF exists: a rate < 1 with X != I."""
    A = _stack(6, 20, 4, 0.3, nonnormal=0.9)
    assert np.linalg.norm(A, 2, axis=(1, 2)).min() > 1
    res, info = rf.contraction_rate_float(A)
    assert res.status == "holds" and info["x_choice"] != "identity" and info["rho"] < 1


# ---------------------------------------------------------------------------------------------
# tampering
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certified():
    A = _stack(7, 40, 6, 0.7, nonnormal=0.3)
    res, info = rf.contraction_rate_float(A)
    assert res.status == "holds"
    return A, res.certificate.to_json()


def _claim_false(A: np.ndarray, X: np.ndarray, r2: float) -> bool:
    """rho^2 X - A_t^T X A_t has an eigenvalue clearly below 0 for some t (float, with a wide margin)."""
    if np.linalg.eigvalsh(X)[0] < 1 - 1e-6:
        return True
    return min(np.linalg.eigvalsh(r2 * X - M.T @ X @ M)[0] for M in A) < -1e-8 * np.abs(X).max()


def test_valid_certificate_accepted(certified):
    A, cert = certified
    assert _fresh(cert)[0]


@pytest.mark.parametrize("factor", [Fraction(99, 100), Fraction(9, 10), Fraction(1, 2)])
def test_changed_rate_refused(certified, factor):
    A, cert = certified
    bad = copy.deepcopy(cert)
    r2 = Fraction(bad["data"]["rho2"]) * factor
    bad["data"]["rho2"] = str(r2)
    assert _claim_false(A, np.array(bad["data"]["X"]), float(r2))
    assert not _fresh(bad)[0]


@pytest.mark.parametrize("how", ["diag", "offdiag", "asymmetric", "below_identity"])
def test_changed_x_refused(certified, how):
    A, cert = certified
    bad = copy.deepcopy(cert)
    X = np.array(bad["data"]["X"])
    if how == "diag":
        X[0, 0] *= 3.0
    elif how == "offdiag":
        X[0, 1] += 0.5 * X[0, 0]
        X[1, 0] = X[0, 1]
    elif how == "asymmetric":
        X[0, 1] += 1e-3
    else:
        X = X * 0.5
    bad["data"]["X"] = X.tolist()
    assert how == "asymmetric" or _claim_false(A, X, float(Fraction(bad["data"]["rho2"])))
    assert not _fresh(bad)[0]


def test_changed_kappa_refused(certified):
    A, cert = certified
    bad = copy.deepcopy(cert)
    bad["data"]["kappa_upper"] = str(Fraction(1))  # lambda_max(X) > 1 (X is not I here)
    assert np.linalg.eigvalsh(np.array(bad["data"]["X"]))[-1] > 1
    assert not _fresh(bad)[0]


def test_changed_stack_refused(certified):
    A, cert = certified
    bad = copy.deepcopy(cert)
    bad["data"]["jacobians"]["sha256"] = "0" * 64
    assert not _fresh(bad)[0]  # no stack has that digest
    # a different stack put in the store under the certificate's digest is re-hashed and refused
    sha = cert["data"]["jacobians"]["sha256"]
    saved = rf._STORE.get(sha)
    try:
        rf._STORE[sha] = A * 1.5
        assert not _fresh(cert)[0]
    finally:
        if saved is not None:
            rf._STORE[sha] = saved


def test_ties_tolerate_rounding_not_changes():
    A = _stack(8, 10, 5, 0.7)
    ref = rf.register_stack(A)
    assert rf.ties(rf.register_stack(A * (1 + 2.0**-50)), ref)
    assert not rf.ties(rf.register_stack(A * (1 + 1e-6)), ref)
    assert not rf.ties(rf.register_stack(A[:-1]), ref)


# ---------------------------------------------------------------------------------------------
# real size through kpflow analyze and recheck
# ---------------------------------------------------------------------------------------------


def _thm2(doc: dict) -> dict:
    return next(t for t in doc["theorems"] if t["id"] == "kpflow:thm-2")


@pytest.fixture(scope="module")
def gru64():
    from flowcert.rnn.analyze import analyze
    from flowcert.rnn.params import parse_rnn

    doc = analyze(parse_rnn({"cell": "gru", "B": 16, "T": 50, "H": 64, "I": 3, "seed": 0}))
    return json.loads(json.dumps(doc))


def test_moderate_real_size_decided(gru64):
    th = _thm2(gru64)
    inv = th["hypotheses"][0]
    assert inv["name"] == INV and inv["status"] == "holds" and inv["certificate"]["kind"] == "invertible_float"
    assert inv["certificate"]["subject"] == {"jacobians": "derived.jacobian_stack"}
    assert th["cross_check"]["details"]["jacobian_checks"]["path"] == "rigorous_float"
    rec = gru64["certificates"][0]
    assert rec["name"] == CQLF and rec["status"] == "holds" and rec["certificate"]["kind"] == "contraction_float"
    rho = float(Fraction(rec["certificate"]["data"]["rho2"])) ** 0.5
    assert th["prediction"]["certified_lyapunov_upper"] == pytest.approx(np.log(rho), rel=1e-12)
    assert max(th["prediction"]["lyapunov_exponents_per_step"]) <= np.log(rho) + 1e-9


def test_moderate_real_size_rechecks_bound(gru64):
    from flowcert.recheck import recheck_document

    rf._STORE.clear()  # recheck re-derives the stack from params
    core.clear_memo()
    out = recheck_document(copy.deepcopy(gru64))
    assert not out.refused and not out.holds_unbound and out.bound >= 2


def test_moderate_real_size_forged_rate_refused(gru64):
    from flowcert.recheck import recheck_document

    bad = copy.deepcopy(gru64)
    data = bad["certificates"][0]["certificate"]["data"]
    data["rho2"] = str(Fraction(data["rho2"]) * Fraction(8, 10))
    core.clear_memo()
    out = recheck_document(bad)
    paths = [r[0] for r in out.refused]
    assert any(p.startswith("$.certificates[0]") for p in paths)


def test_moderate_real_size_changed_params_refused(gru64):
    from flowcert.recheck import recheck_document

    bad = copy.deepcopy(gru64)
    bad["params"]["seed"] = 1  # other weights: other Jacobians, the certificates' fingerprints do not tie
    core.clear_memo()
    out = recheck_document(bad)
    paths = [r[0] for r in out.refused]
    assert any("theorems[3].hypotheses[0]" in p for p in paths) and any(p.startswith("$.certificates[0]") for p in paths)


@pytest.mark.slow
def test_peer_size_gru_cell():
    """The peer's benchmark: torch nn.GRUCell(3, 128), inputs [32, 100, 3] (H = 128, B*T = 3,200)."""
    from flowcert.recheck import recheck_document
    from flowcert.rnn import analyze_cell

    torch.manual_seed(0)
    cell = torch.nn.GRUCell(3, 128)
    x = torch.randn(32, 100, 3, dtype=torch.float64)
    doc = json.loads(json.dumps(analyze_cell(cell, x).to_json()))
    th = _thm2(doc)
    assert th["hypotheses"][0]["status"] == "holds"
    assert th["cross_check"]["details"]["jacobian_checks"] == {**th["cross_check"]["details"]["jacobian_checks"],
                                                               "path": "rigorous_float", "jacobians": 3200, "H": 128}
    rec = doc["certificates"][0]
    assert rec["status"] == "holds" and rec["certificate"]["kind"] == "contraction_float"
    core.clear_memo()  # the stack is in memory (a user's module: no params to re-derive it from)
    out = recheck_document(doc)
    assert not out.refused
