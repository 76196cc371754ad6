"""Issue 10: gaussian verdicts right in every regime (exact inertia, detectability, exact d = 2
equilibria, blow-up only with proof, PSD-preserving integration, consistency pass, particle rate).

Every expectation is mathematics derived here (closed forms, numpy spectra far from the axis,
exact identities), never an output of the code under test.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from flowcert.certificates import core, spectrum
from flowcert.certificates import gaussian as cg
from flowcert.gaussian import asymptotics, catalogue
from flowcert.gaussian.regime import consistency, riccati_facts
from flowcert.numeric import gaussian as ng
from flowcert.numeric.gaussian import moments, riccati
from flowcert.gaussian.params import parse_gaussian

ROT = [[0.0, -1.0], [1.0, 0.0]]


def _p(A, B, V, Sigma0=((1.0, 0.2), (0.2, 0.5)), t_end=2.0):
    return parse_gaussian({"A": np.asarray(A, float).tolist(), "B": np.asarray(B, float).tolist(),
                           "V": np.asarray(V, float).tolist(), "b": [0.0] * len(A), "mu0": [0.0] * len(A),
                           "Sigma0": np.asarray(Sigma0, float).tolist(), "t_end": t_end})


def _regime(p):
    sol = ng.integrate_moments(catalogue.coefficients(p), p.mu0, p.Sigma0, p.t_end)
    theorems, reg = asymptotics.entries(p, sol)
    return {t.id: t for t in theorems}, reg


# ---- exact spectral inertia ------------------------------------------------------------------


@pytest.mark.parametrize("A, want", [
    (np.diag([1.0, -1.0]), (1, 1, 0)),                      # eigenvalues sum to zero: singular Lyapunov operator
    (np.array(ROT), (0, 0, 2)),                             # exactly +-i
    (np.array([[0.0, 1.0], [0.0, 0.0]]), (0, 0, 2)),       # nilpotent
    (np.array([[2.0, 1, 0, 0], [0, -2, 0, 0], [0, 0, 0, -3], [0, 0, 3, 0]]), (1, 1, 2)),
])
def test_exact_inertia_on_constructed_spectra(A, want):
    cert = spectrum.inertia_certificate(core.rational_matrix(A))
    assert tuple(cert.data["inertia"]) == want
    assert core.recheck(cert.to_json())
    forged = copy.deepcopy(cert.to_json())
    forged["data"]["inertia"] = [want[0] + 1, want[1], want[2] - 1] if want[2] else [want[1], want[0], 0]
    if forged["data"]["inertia"] != list(want):
        assert not core.recheck(forged)


def test_exact_inertia_matches_numpy_off_the_axis():
    rng = np.random.default_rng(3)
    for d in (2, 3, 4, 5):
        for _ in range(4):
            A = rng.integers(-4, 5, size=(d, d)) / rng.choice([1, 2, 4])
            ev = np.linalg.eigvals(A)
            if np.abs(ev.real).min() < 1e-6:
                continue  # numpy cannot be the referee there
            want = (int((ev.real > 0).sum()), int((ev.real < 0).sum()), 0)
            assert spectrum.exact_inertia(core.rational_matrix(A)) == want


def test_unstable_count_decides_mixed_spectra_and_rotations():
    k, c = spectrum.unstable_count(np.diag([1.0, -1.0]))
    assert k == 1 and core.recheck(c)
    k, c = spectrum.unstable_count(np.array(ROT))
    assert k == 0 and c.data["inertia"] == [0, 0, 2]
    assert spectrum.hurwitz("Re spec(A) < 0", np.array(ROT)).status == "fails"
    assert spectrum.hurwitz("Re spec(A) > 0", -np.array(ROT)).status == "fails"
    assert spectrum.hurwitz("Re spec(A) < 0", np.array(ROT) - 1e-300 * np.eye(2)).status == "holds"


# ---- detectability -----------------------------------------------------------------------------


def test_detectability_pbh_exact():
    c = spectrum.detectability_certificate(sp.Matrix([[0, -1], [1, 0]]), sp.diag(2, 0))
    assert c.data["detectable"] and core.recheck(c)
    c = spectrum.detectability_certificate(sp.Matrix([[1, 0], [0, -1]]), sp.diag(0, 2))
    assert not c.data["detectable"] and c.data["inertia"] == [1, 0, 0]     # e1: unobservable, Re = 1
    c = spectrum.detectability_certificate(sp.Matrix([[-1, 0], [0, 1]]), sp.diag(0, 2))
    assert c.data["detectable"] and c.data["dimension"] == 1               # the unobservable e1 is stable
    forged = copy.deepcopy(c.to_json())
    forged["data"]["detectable"] = False
    assert not core.recheck(forged)


def test_detectability_agrees_with_numeric_pbh():
    rng = np.random.default_rng(7)
    for _ in range(12):
        A = rng.integers(-3, 4, size=(3, 3)).astype(float)
        G = rng.integers(-1, 2, size=(1, 3)).astype(float)
        B = G.T @ G  # rank <= 1: detectability is a real question
        num = riccati.detectable(A, B, -1.0)
        if num is None:
            continue
        cert = spectrum.detectability_certificate(core.rational_matrix(A), core.rational_matrix(2 * B))
        assert cert.data["detectable"] == num


# ---- Thm 4.7(1) on float data ------------------------------------------------------------------


def test_thm47_1_refuted_on_the_float_file(tmp_path):
    raw = json.loads(open("tests/data/errata/thm47_1_counterexample.json").read())
    A, B, V = (np.array(raw[k], float) for k in ("A", "B", "V"))
    res = cg.no_pd_equilibrium_d2(A, B, V)
    assert res.status == "fails" and core.recheck(res.certificate.to_json())
    forged = copy.deepcopy(res.certificate.to_json())
    forged["data"]["pd_count"] = 1
    assert not core.recheck(forged)
    for e in cg.real_equilibria_d2(*(core.rational_matrix(M) for M in (A, B, V))):
        S = np.array(e["Sigma_approx"])
        assert np.abs(ng.covariance_field(A, B, V, S)).max() < 1e-9 * (1 + np.abs(S).max()) ** 2


def test_d2_equilibria_find_the_bistable_pd_equilibrium():
    A, B, V = np.array([[-5.0, -5], [5, 4]]), np.array([[5.0, 3], [3, 2]]), -np.diag([5.0, 1])
    res = cg.no_pd_equilibrium_d2(A, B, V)
    assert res.status == "holds"
    eqs = cg.real_equilibria_d2(*(core.rational_matrix(M) for M in (A, B, V)))
    pd = [np.array(e["Sigma_approx"]) for e in eqs if e["pd"]]
    assert any(np.allclose(S, [[1, -2], [-2, 5]], atol=1e-9) for S in pd)  # erratum 2 of note 000


# ---- regime: blow-up only with proof -------------------------------------------------------------


@pytest.mark.parametrize("t_end", [2.0, 12.0])
def test_exponential_growth_is_unbounded_not_blowup(t_end):
    """A = I, B = V = 0: Sigma(t) = e^{2t} Sigma0 exactly, for every t."""
    by_id, reg = _regime(_p(np.eye(2), np.zeros((2, 2)), np.zeros((2, 2)), t_end=t_end))
    assert reg["Sigma"] == "unbounded" and reg["basis"] == "certified"
    assert reg["growth_rate"]["lower_bound"] == pytest.approx(2.0)
    assert reg["global_existence"]["proved"]
    assert reg["blowup_time_upper_bound"] is None


def test_skew_B_is_linear_and_unbounded():
    by_id, reg = _regime(_p(np.eye(2), [[0.0, 1.0], [-1.0, 0.0]], np.eye(2)))
    assert reg["Sigma"] == "unbounded" and reg["basis"] == "certified"


def test_rotation_with_detectable_weight_converges_to_zero():
    """A rotation, B = diag(1, 0), V = -I: eta(B + B^T) only semidefinite, (H, A) observable."""
    by_id, reg = _regime(_p(ROT, np.diag([1.0, 0.0]), -np.eye(2)))
    assert by_id["gaussian:thm-4.1"].applies
    assert reg["Sigma"] == "converges_zero" and reg["basis"] == "certified"
    sol = ng.integrate_moments(ng.constant(np.array(ROT), np.diag([1.0, 0.0]), -np.eye(2), np.zeros(2)),
                               np.zeros(2), np.array([[1.0, 0.2], [0.2, 0.5]]), 400.0, t_eval=np.array([100.0, 400.0]))
    n100, n400 = (np.linalg.norm(S) for S in sol.Sigma)
    assert n400 < 0.5 * n100  # algebraic decay (about 1/t)


def test_eigenvalues_summing_to_zero_decide_thm_4_1():
    """A = diag(1, -1), V = -I, B = I: Thm 4.1 with k = 1 gives diag(1, 0) (A_a = 1, B11 = -2: P11 = 1)."""
    by_id, reg = _regime(_p(np.diag([1.0, -1.0]), np.eye(2), -np.eye(2)))
    assert by_id["gaussian:thm-4.1"].applies.json is True
    assert reg["Sigma"] == "converges_singular"
    np.testing.assert_allclose(reg["Sigma_inf"], np.diag([1.0, 0.0]), atol=1e-12)


def test_rotation_without_attention_is_bounded():
    by_id, reg = _regime(_p(ROT, np.zeros((2, 2)), np.zeros((2, 2)), t_end=1.0))
    assert reg["Sigma"] == "bounded" and reg["basis"] == "certified"


# ---- the particle rate (Prop. 2.1) ---------------------------------------------------------------


def test_particle_check_skips_heavy_tails_with_the_value():
    p = _p(np.zeros((2, 2)), 2 * np.eye(2), -np.eye(2), Sigma0=np.eye(2), t_end=1.0)
    cc = catalogue.particle_cross_check(p, 0)
    assert cc.status == "skipped" and cc.details["variance_condition"] == pytest.approx(8.0)  # 2 * (2 * 2)


# ---- PSD-preserving integration --------------------------------------------------------------------


def test_transport_form_matches_the_closed_form():
    A = np.array([[0.3, 2.0], [-1.0, -0.2]])
    S0 = np.array([[1.0, 1.0], [1.0, 1.0]])  # rank 1
    sol = moments.integrate_transport(ng.constant(A, np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)),
                                      np.zeros(2), S0, 3.0)
    from scipy.linalg import expm

    E = expm(3.0 * A)
    np.testing.assert_allclose(sol.Sigma[-1], E @ S0 @ E.T, rtol=1e-8, atol=1e-10)
    assert np.linalg.eigvalsh(sol.Sigma[-1]).min() >= -1e-12 * np.linalg.norm(sol.Sigma[-1])


def test_a_cone_leaving_run_is_repaired_or_failed(monkeypatch):
    real = moments.manifold_drift
    calls = [0]

    def drift_once(S):
        calls[0] += 1
        d = real(S)
        return dict(d, negative_eigenvalue=1.0) if calls[0] == 1 else d

    monkeypatch.setattr(moments, "manifold_drift", drift_once)
    sol = ng.integrate_moments(ng.constant(-np.eye(2), np.eye(2), -np.eye(2), np.zeros(2)),
                               np.zeros(2), np.eye(2), 1.0)
    assert sol.status == "ok" and "transport form" in sol.message
    np.testing.assert_allclose(sol.Sigma[-1], np.eye(2) / (2 * np.exp(2.0) - 1), rtol=1e-8)  # s' = -2s - 2s^2: 1/s = 2e^{2t} - 1
    monkeypatch.setattr(moments, "CONE_TOL", -1.0)  # nothing passes: the run is failed, not evidence
    sol = ng.integrate_moments(ng.constant(np.eye(2), np.eye(2), np.eye(2), np.zeros(2)), np.zeros(2), np.eye(2), 1.0)
    assert sol.status == "failed" and sol.blowup_time is None


# ---- consistency pass -------------------------------------------------------------------------------


def test_consistency_pass_catches_forced_conflicts():
    doc = {"theorems": [{"id": "gaussian:thm-4.7.2", "applies": True, "prediction": {}}],
           "regime": {"Sigma": "blows_up", "basis": "certified", "Sigma_inf": None,
                      "global_existence": {"proved": True, "arguments": ["trace bound"]}},
           "simulation": {"agrees": True, "manifold_drift": {"negative_eigenvalue": 0.5}}}
    block = consistency(doc)
    assert doc["regime"]["Sigma"] == "unknown" and "consistency pass" in doc["regime"]["reason"]
    assert doc["simulation"]["agrees"] is None
    assert len(block["conflicts"]) >= 2
    clean = {"theorems": [], "regime": {"Sigma": "bounded", "basis": "certified"}}
    assert consistency(clean)["conflicts"] == [] and clean["regime"]["Sigma"] == "bounded"


# ---- property: every blows_up has a proof; bounded/unbounded agree with the Riccati form ------------


small = st.integers(-3, 3).map(lambda k: k / 2)


@settings(max_examples=8, deadline=None)
@given(a=st.lists(small, min_size=4, max_size=4), b=st.lists(small, min_size=4, max_size=4),
       eta=st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]))
def test_regime_claims_are_backed(a, b, eta):
    A, B = np.array(a).reshape(2, 2), np.array(b).reshape(2, 2)
    p = _p(A, B, eta * np.eye(2), Sigma0=np.eye(2), t_end=1.0)
    by_id, reg = _regime(p)
    if reg["Sigma"] == "blows_up":
        assert by_id["gaussian:thm-4.8.1"].applies or by_id["gaussian:thm-4.8.2"].applies
    facts = riccati_facts(p)
    if reg["Sigma"] in ("bounded", "unbounded", "converges_zero", "converges_pd", "converges_singular") \
            and reg["basis"] == "certified":
        ba = riccati.blowup_analysis(A, B, eta, np.eye(2), t_max=50.0)
        assert ba.status != "blows_up", (reg, ba)
    if facts.get("Q_psd"):
        assert reg["Sigma"] != "blows_up" and reg["global_existence"]["proved"]


# ---- spectra and Lemma 4.4's inverse design -----------------------------------------------------------


def test_spectra_at_the_thm41_limit():
    by_id, reg = _regime(_p(np.diag([1.0, -1.0]), np.eye(2), -np.eye(2)))
    # M_inf = A - Sigma_inf = diag(0, -1); J_s on Sym(2) at diag(1, 0): vech eigenvalues -2, -2, -2
    np.testing.assert_allclose(sorted(z[0] for z in reg["spectra"]["M_inf"]), [-1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose([z[0] for z in reg["spectra"]["J_s"]], [-2.0, -2.0, -2.0], atol=1e-12)


def test_lemma_4_4_inverse_design_and_cli(tmp_path):
    from flowcert.cli import main
    from flowcert.gaussian.regime import lemma_4_4_design

    S, K = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([[0.0, 1.5], [-1.5, 0.0]])
    V, B = np.diag([-1.0, -0.5]), np.array([[1.0, 0.2], [0.2, 2.0]])
    out = lemma_4_4_design(S, K, V, B)
    assert out["residual_is_zero"]
    A = np.array(out["A"])
    assert np.abs(ng.covariance_field(A, B, V, S)).max() < 1e-12
    np.testing.assert_allclose([z[0] for z in out["M_spectrum"]], 0.0, atol=1e-12)  # purely imaginary
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"Sigma_inf": S.tolist(), "K": (K + np.eye(2)).tolist(), "V": V.tolist(), "B": B.tolist()}))
    assert main(["design", "gaussian", "--spec", str(spec)]) == 2  # K not skew: exit 2, one line


@pytest.mark.slow
def test_thm47_1_refuted_from_the_cli(capsys):
    from flowcert.cli import main

    assert main(["verify", "gaussian", "--params", "tests/data/errata/thm47_1_counterexample.json", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    th = next(t for t in doc["theorems"] if t["id"] == "gaussian:thm-4.7.1")
    witness = next(h for h in th["hypotheses"] if h["name"] == "pd_equilibrium_exists")
    assert witness["status"] == "fails" and core.recheck(witness["certificate"])
    assert th["applies"] is False and doc["consistency"]["conflicts"] == []


def test_table1_ids_match_the_entries_and_survive_a_failed_analysis(monkeypatch):
    """Every Table 1 id is listed even when the analysis raises (unknown, with the reason), never dropped."""
    p = _p([[-1.0, 0.0], [0.0, -2.0]], np.eye(2), -np.eye(2))
    theorems, _ = _regime(p)
    assert [(t.id, t.label) for t in theorems.values()] == [(e.id, e.label) for e in catalogue.TABLE_1]

    def boom(*args, **kwargs):
        raise np.linalg.LinAlgError("planted")

    monkeypatch.setattr(asymptotics, "entries", boom)
    doc = catalogue.verify(p)
    by_id = {t["id"]: t for t in doc["theorems"]}
    for e in catalogue.TABLE_1:
        (h,) = by_id[e.id]["hypotheses"]
        assert h["status"] == "unknown" and "planted" in h["detail"]
    assert doc["regime"]["Sigma"] == "unknown" and "planted" in doc["regime"]["reason"]
