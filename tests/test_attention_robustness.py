"""Attention catalogue robustness (issue 28, class 1): closed-form constants that cannot overflow,
and entries that fail alone.

Expected values come from the closed forms of note 003 (Lemma 4.1: c1 = 1/(sqrt(d) l e^{2K^2 b}),
c2 = e^{2K^2 b}, K^2 = 1/lambda_min(W)) and note 001 (eq. (8), Lemma 10) evaluated independently
here, never from the code's output."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from flowcert.attention import consensus as cat
from flowcert.attention import isolation, parse
from flowcert.certificates.attention import consensus as cert
from flowcert.numeric.attention import consensus as ncons
from flowcert.numeric.attention import multistability as nm


@pytest.mark.parametrize("b, lam, ell, d", [(0.3, 1.0, 4, 3), (2.0, 0.5, 10, 5), (0.01, 2.0, 1, 2)])
def test_lemma_4_1_constants_match_the_closed_form_where_representable(b, lam, ell, d):
    c = cert.lemma_4_1_constants(b, lam, ell, d)
    want_c1 = 1.0 / (math.sqrt(d) * ell * math.exp(2 * b / lam))
    want_c2 = math.exp(2 * b / lam)
    assert c.c1 == pytest.approx(want_c1, rel=1e-13) and c.c2 == pytest.approx(want_c2, rel=1e-13)
    assert c.c1_reason is None and c.c2_reason is None


@pytest.mark.parametrize("b, lam", [(400.0, 1.0), (1.0, 1e-3), (1e6, 1e-6)])
def test_lemma_4_1_constants_never_overflow(b, lam):
    c = cert.lemma_4_1_constants(b, lam, 7, 3)
    x = 2 * b / lam  # > 709.8: e^x is not a float64
    assert c.log_c2 == pytest.approx(x, rel=1e-15)
    assert c.log_c1 == pytest.approx(-(0.5 * math.log(3) + math.log(7) + x), rel=1e-15)
    assert c.c1 is None and c.c2 is None
    assert "smallest normal" in c.c1_reason and "largest" in c.c2_reason


def test_log_attention_weights_match_softmax_and_survive_underflow():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    P = rng.normal(size=(3, 3))
    S = X @ P @ X.T
    ref = np.exp(S) / np.exp(S).sum(1, keepdims=True) / math.sqrt(3)
    assert np.allclose(np.exp(ncons.log_attention_weights(X, P, row_sum=1 / math.sqrt(3))), ref, rtol=1e-13, atol=0)
    # scores 2000 apart: alpha underflows to 0, its log stays exact (= -2000 - log 2 + log c on a 2-token example)
    Y = np.array([[1.0, 0.0], [-1.0, 0.0]])
    L = ncons.log_attention_weights(Y, 1000.0 * np.eye(2), row_sum=1.0)
    assert L[0, 1] == pytest.approx(-2000.0 - math.log1p(math.exp(-2000.0)), rel=1e-15)
    assert np.isfinite(L).all()


@pytest.mark.parametrize("a", [0.7, -1.3, 0.0])
def test_scaled_weights_leave_the_bipartite_spectrum_unchanged(a):
    lam = np.array([2.0, 0.5, -1.0])
    al1, al2 = math.exp(a), math.exp(-a)
    n1, n2, c, k = 3, 2, 1.0, 0
    b1, b2 = n1 * al1 + n2 * al2, n1 * al2 + n2 * al1
    d1, d2 = (n1 * al1 - n2 * al2) / b1, (n2 * al1 - n1 * al2) / b2
    want = [-lam[k] * d1] * (n1 - 1) * 2 + [-lam[k] * d2] * (n2 - 1) * 2
    for lj in lam[1:]:
        A2 = np.array([[n1 * al1 / b1, n2 * al2 / b1], [n1 * al2 / b2, n2 * al1 / b2]])
        want += list(np.linalg.eigvals(lj * A2 - lam[k] * np.diag([d1, d2])))
    got, _ = nm.bipartite_spectra(lam, a, k, n1, n2, c)
    assert np.allclose(np.sort_complex(np.array(want, complex)), np.sort_complex(got), atol=1e-13)


def test_bipartite_spectrum_finite_at_huge_a():
    # a -> +inf: delta_1 = delta_2 = 1, A2 -> I; tangent spectrum {-lambda_k}, {lambda_j - lambda_k}
    lam = np.array([2.0, 0.5, -1.0])
    got, normal = nm.bipartite_spectra(lam, 900.0, 0, 3, 2)
    assert np.isfinite(got).all() and np.isfinite(normal).all()
    want = sorted([-2.0] * 6 + [0.5 - 2.0] * 2 + [-1.0 - 2.0] * 2)
    assert np.allclose(sorted(got.real), want, atol=1e-12)


def test_guarded_entry_fails_alone_as_unknown():
    def boom():
        return math.exp(1000.0)

    r = isolation.guarded("consensus:lemma-4.1", "Lemma 4.1", boom)
    assert r.applies.json is None and r.cross_check.status == "skipped"
    assert "OverflowError" in r.hypotheses[0].detail and r.hypotheses[0].status == "unknown"
    ok = isolation.guarded("x:y-1", "Y", lambda: "value")
    assert ok == "value"


def _cli(raw, tmp_path, *extra):
    f = tmp_path / "p.json"
    f.write_text(json.dumps(raw))
    return subprocess.run([sys.executable, "-m", "flowcert", "verify", "attention", "--params", str(f), "--json", *extra],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("raw", [
    # ellipsoid with lambda_min(W) = 1e-3: 2 K^2 b = 3464 (note 003 Lemma 4.1)
    pytest.param({"P": np.eye(3).tolist(), "V": np.eye(3).tolist(), "W": np.diag([1e-3, 1.0, 1.0]).tolist(), "n": 4, "t_end": 2},
                 marks=pytest.mark.slow),
    # sphere, |P| in the hundreds: 2 b = 748
    pytest.param({"P": np.diag([300.0, 200.0, 100.0]).tolist(), "V": np.eye(3).tolist(), "n": 4, "t_end": 2},
                 marks=pytest.mark.slow),
    # one head Q, K, V with a large score matrix on the sphere (multistability entries too)
    {"Q": (20 * np.eye(3)).tolist(), "K": (40 * np.eye(3)).tolist(), "V": np.diag([1.0, 0.3, -0.5]).tolist(), "n": 4},
], ids=["ellipsoid-small-lambda-min", "sphere-P-hundreds", "QK-800"])
def test_verify_exits_0_with_full_document(raw, tmp_path):
    # the two slow cases are also covered in-process by test_verify_in_process_full_document
    out = _cli(raw, tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    ids = [t["id"] for t in doc["theorems"]]
    assert len([i for i in ids if i.startswith("consensus:")]) == 10
    failed = [t["id"] for t in doc["theorems"] if any(h["name"] in ("evaluation", "entry_evaluated") for h in t["hypotheses"])]
    assert failed == []
    l41 = next(t for t in doc["theorems"] if t["id"] == "consensus:lemma-4.1")
    if l41["applies"]:
        p = l41["prediction"]
        lam = float(np.linalg.eigvalsh(np.array(raw.get("W", np.eye(3)))).min())
        assert p["log_c2_paper"] == pytest.approx(2 * p["b"] / lam, rel=1e-12)
        assert (p["c2_paper"] is None) == (p["log_c2_paper"] > math.log(sys.float_info.max))


def test_lemma_4_1_cross_check_in_log_space():
    # |P| in the hundreds: some alpha_ij underflow to 0 but log alpha >= log c1 is still checked
    raw = {"P": np.diag([300.0, 200.0, 100.0]).tolist(), "V": np.eye(3).tolist(), "n": 4, "t_end": 1, "seed": 2}
    r = {t.id: t for t in cat.theorems(parse(raw), simulate=True)}["consensus:lemma-4.1"]
    assert r.cross_check.status == "agrees", r.cross_check.details
    det = r.cross_check.details
    assert det["log_min_alpha"] >= det["log_c1"] and det["log_max_alpha"] <= 1e-12


def test_bound_b_is_exact_rational():
    # Lemma 4.1's b for P = diag(300, 200, 100): the Frobenius sup bound sqrt(140000) rounded up
    s = cat.setting(parse({"P": np.diag([300.0, 200.0, 100.0]).tolist(), "V": np.eye(3).tolist(), "n": 3}))
    _, b = cat.P_bounded(s)
    assert isinstance(b, Fraction) and b >= Fraction(374) and float(b) == pytest.approx(math.sqrt(140000), rel=1e-9)


def test_multistability_entry_fails_alone(monkeypatch):
    from flowcert.attention import multistability as ms

    def boom(*a, **k):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(ms, "_printed9_disagreements", boom)  # used by Theorem 2 only
    raw = {"V": [[1, 0.2, 0], [0.2, 0.1, 0], [0, 0, -0.5]], "Q": np.eye(3).tolist(),
           "K": [[3, 0.5, 0], [0, 0.5, 0], [0.3, 0, -1]], "n": 4}
    th = {t.id: t for t in ms.theorems(parse(raw))}
    assert set(th) == set(ms.THEOREM_IDS)
    bad = [i for i, t in th.items() if any(h.name in ("evaluation", "entry_evaluated") for h in t.hypotheses)]
    assert bad == ["multistability:thm-2"] and "ZeroDivisionError: planted" in th[bad[0]].hypotheses[0].detail
    assert th["multistability:lemma-10"].applies.json is True


@pytest.mark.parametrize("raw", [
    {"P": np.eye(3).tolist(), "V": np.eye(3).tolist(), "W": np.diag([1e-3, 1.0, 1.0]).tolist(), "n": 4, "t_end": 2},
    {"P": np.diag([300.0, 200.0, 100.0]).tolist(), "V": np.eye(3).tolist(), "n": 4, "t_end": 2},
], ids=["ellipsoid-small-lambda-min", "sphere-P-hundreds"])
def test_verify_in_process_full_document(raw):
    from flowcert import attention

    doc = attention.verify_document(parse(raw))
    json.dumps(doc, allow_nan=False)
    ids = [t["id"] for t in doc["theorems"]]
    assert len([i for i in ids if i.startswith("consensus:")]) == 10
    assert not [t["id"] for t in doc["theorems"] if any(h["name"] in ("evaluation", "entry_evaluated") for h in t["hypotheses"])]
    p = next(t for t in doc["theorems"] if t["id"] == "consensus:lemma-4.1")["prediction"]
    assert p["c1"] is None and p["c2_paper"] is None and p["log_c2_paper"] > math.log(sys.float_info.max)
