"""The fast paths used at transformer scale agree with the exact ones where both run.

* definiteness: rounded float Cholesky / float witness vs exact LDL^T (and the characteristic
  polynomial) on seeded PD, indefinite and exactly singular rational matrices;
* inertia: congruence + Gershgorin vs exact LDL^T;
* Newton: the matrix-free GMRES step solves the same linear equation as the dense vech Jacobian;
* ``verify gaussian`` at d = 14 (fast paths and Krylov Newton on) gives the same verdict on every
  hypothesis as with the fast paths switched off (exact LDL^T everywhere);
* memoisation: a certificate is re-checked once per data digest, and a changed entry is a new key.
"""

from __future__ import annotations

import importlib.util
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from flowcert.certificates import core, exact
from flowcert.gaussian import catalogue
from flowcert.gaussian.params import parse_gaussian
from flowcert.numeric import gaussian as ng
from flowcert.numeric.gaussian import moments

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("verify_scaling", ROOT / "benchmarks" / "verify_scaling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _matrices(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(n, n))
    pd = G @ G.T + 0.1 * np.eye(n)
    ind = 0.5 * (G + G.T)
    low = np.round(4 * rng.normal(size=(n, n - 3)))  # integer factor: exactly rank n - 3
    sing = low @ low.T
    near = pd - (np.linalg.eigvalsh(pd)[0] - 1e-14) * np.eye(n)  # PD by a hair: the float tests are inconclusive
    return [0.5 * (M + M.T) for M in (pd, ind, sing, -pd, near)]


@pytest.mark.parametrize("seed", [0, 1])
def test_fast_definiteness_and_inertia_agree_with_exact_ldl(seed: int) -> None:
    for M in _matrices(20, seed):
        Q = exact.to_rational(M)
        ldl = exact.ldl_inertia(Q)
        for strict in (True, False):
            holds, w, _ = exact.decide_definite(Q, strict=strict)
            assert holds == (ldl.status == "pd" if strict else ldl.n_neg == 0)
            if w is not None and not holds and ldl.n_neg:
                assert exact._quad_form(Q, w) < 0
        assert exact.inertia(Q) == (ldl.n_pos, ldl.n_neg, ldl.n_zero)
        assert exact.inertia_charpoly(Q) == (ldl.n_pos, ldl.n_neg, ldl.n_zero)
        got = exact.inertia_congruence(Q)
        assert got is None or got == (ldl.n_pos, ldl.n_neg, ldl.n_zero)


def test_krylov_newton_step_solves_the_dense_equation() -> None:
    rng = np.random.default_rng(3)
    d = 14
    A, B, V = rng.normal(size=(d, d)) / 4, np.eye(d) + 0.1 * rng.normal(size=(d, d)), -np.eye(d)
    V = V + 0.05 * (lambda G: G + G.T)(rng.normal(size=(d, d)))
    S = (lambda G: G @ G.T / d)(rng.normal(size=(d, d)))
    F = ng.covariance_field(A, B, V, S)
    F = 0.5 * (F + F.T)
    step = moments.newton_step_krylov(A, B, V, S, F)
    assert step is not None
    rows, cols = ng.vech_indices(d)
    dense = np.linalg.solve(ng.jacobian_vech(A, B, V, S), F[rows, cols])
    dense_full = np.einsum("k,kij->ij", dense, ng.symmetric_basis(d))
    assert np.abs(step - dense_full).max() <= 1e-8 * (1 + np.abs(dense_full).max())


def _statuses(doc: dict) -> list[tuple[str, str, str]]:
    return [(t["id"], h["name"], h["status"]) for t in doc["theorems"] for h in t["hypotheses"]]


@pytest.mark.parametrize("regime", ["thm41", "thm47", "thm48"])
def test_verify_fast_paths_agree_with_exact_paths(regime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = parse_gaussian(_bench().case(regime, 14, seed=1))
    core.clear_memo()
    fast = catalogue.verify(p)
    monkeypatch.setattr(exact, "FAST_PATH_MIN_DIM", 10**9)  # exact LDL^T for every definiteness and inertia
    monkeypatch.setattr(moments, "NEWTON_DENSE_MAX_D", 10**9)  # dense vech Newton
    core.clear_memo()
    slow = catalogue.verify(p)
    core.clear_memo()
    a, b = _statuses(fast), _statuses(slow)
    assert [x[:2] for x in a] == [x[:2] for x in b]
    for x, y in zip(a, b):
        # a fast path may only leave undecided what the exact one decides, never contradict it
        assert x[2] == y[2] or x[2] == "unknown", (x, y)
    assert fast["regime"]["Sigma"] == slow["regime"]["Sigma"]


def test_recheck_is_memoised_by_data_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = core.CHECKERS["pd"]
    monkeypatch.setitem(core.CHECKERS, "pd", lambda data: calls.append(1) or original(data))
    core.clear_memo()
    M = np.diag([1.0, 2.0, 3.0])
    cert = core.Certificate("pd", "M > 0", {"M": core.encode(M), "margin": "0"})
    assert core.recheck(cert) and core.recheck(json.loads(json.dumps(cert.to_json())))
    assert len(calls) == 1
    bad = core.Certificate("pd", "M > 0", {"M": core.encode(np.diag([1.0, -2.0, 3.0])), "margin": "0"})
    assert not core.recheck(bad) and len(calls) == 2
    assert core.fractions(core.qmat(cert.data["M"]))[1][1] == Fraction(2)
    core.clear_memo()
