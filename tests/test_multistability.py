"""The multistability paper (note 001): Lemma 8 Jacobian against SymPy, finite differences and
torch.func.jacfwd; the SymPy Lyapunov and closed-form identities; certified eigen-enclosures;
certified verdicts against the closed forms (consensus v1 stable for any Q, K; v_k unstable; D2);
certificates that fail when tampered with; equilibria, Newton and basins; bad input."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcert import cli
from flowcert.attention import multistability as fm
from flowcert.attention import params as ap
from flowcert.certificates import core
from flowcert.recheck import recheck_document
from flowcert.certificates.attention import multistability as cm
from flowcert.numeric.attention import field as nf
from flowcert.numeric.attention import multistability as nm
from flowcert.symbolic.attention import Structure
from flowcert.symbolic.attention import multistability as sm

torch.set_num_threads(1)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sym_V(rng, d, gap=0.05):
    """Random symmetric V with eigenvalues separated by >= gap and lambda_1 > 0."""
    while True:
        G = rng.normal(size=(d, d))
        V = np.round((G + G.T) / 2, 3)
        lam = np.linalg.eigvalsh(V)
        if lam[-1] > 0 and np.diff(lam).min() > gap:
            return V


# ---------------------------------------------------------------------------------------------
# Jacobians
# ---------------------------------------------------------------------------------------------


def test_lemma8_jacobian_equals_the_sympy_jacobian_at_rational_points():
    Xs, Ms, Vs, Fs = sm.symbolic_jacobian(2, 2)
    rng = np.random.default_rng(0)
    X = nf.project(rng.normal(size=(2, 2)))
    M, V = rng.normal(size=(2, 2, 2))
    subs = {**dict(zip(Xs, X.ravel())), **dict(zip(Ms, M.ravel())), **dict(zip(Vs, V.ravel()))}
    want = np.array(Fs.subs(subs).evalf(30).tolist(), dtype=float)
    assert np.abs(nm.ambient_jacobian(X, M, V) - want).max() < 1e-13


@pytest.mark.parametrize("variant,causal,ellipsoid", [
    ("self_attention", False, False), ("self_attention", True, False), ("self_attention", False, True),
    ("self_attention", True, True), ("oja", False, False), ("oja", False, True),
    ("multiagent_oja", False, False), ("multiagent_oja", False, True)])  # the Oja variants have no mask
def test_lemma8_jacobian_matches_jacfwd_of_the_generated_torch_kernel_and_central_differences(causal, ellipsoid, variant):
    rng = np.random.default_rng(hash((causal, ellipsoid, variant)) % 2**32)
    n, d = 4, 3
    c = 0.6 if variant == "self_attention" else 1.0
    W = np.diag([1.0, 2.0, 0.5]) if ellipsoid else None
    X = nf.project(rng.normal(size=(n, d)), W)
    Q, K, V = rng.normal(size=(3, d, d))
    M = Q.T @ K
    J = nm.ambient_jacobian(X, M, V, c, causal, W, variant)
    s = Structure(variant=variant, causal=causal, ellipsoid=ellipsoid, normalization="unit")
    kern = nf.structure_kernel(s, "torch")
    extra = [torch.from_numpy(a) for a in ([nf.causal_mask(n)] if causal else []) + ([W] if ellipsoid else [])]
    mats = {"self_attention": [Q, K, V], "oja": [V], "multiagent_oja": [np.ones(n), V]}[variant]
    mats = [torch.from_numpy(m) for m in mats]

    # A X V^T is linear in V: the row sum c of self-attention is passed as c V (the Oja variants have no c)
    mats_c = mats[:-1] + [c * mats[-1]] if variant == "self_attention" else mats
    jac = torch.func.jacfwd(lambda x: kern(x.reshape(n, d), *mats_c, *extra)[0].reshape(-1))(torch.from_numpy(X.ravel()))
    assert np.abs(jac.numpy() - J).max() < 1e-12 * (1 + np.abs(J).max())
    h = 1e-6
    fd = np.zeros_like(J)
    for k in range(n * d):
        e = np.zeros(n * d)
        e[k] = h
        fp = nm.field_one_head(X + e.reshape(n, d), M, V, c, causal, W, variant)
        fmn = nm.field_one_head(X - e.reshape(n, d), M, V, c, causal, W, variant)
        fd[:, k] = (fp - fmn).ravel() / (2 * h)
    assert np.abs(fd - J).max() < 1e-8 * (1 + np.abs(J).max())


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6), d=st.integers(2, 4), data=st.data())
def test_closed_form_bipartite_spectra_match_the_numeric_tangent_and_normal_spectra(seed, n, d, data):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(d, d))
    V = (G + G.T) / 2
    M = rng.normal(size=(d, d)) * data.draw(st.floats(0, 2))
    c = data.draw(st.sampled_from([1.0, 1 / math.sqrt(d)]))
    lam, U = nm.eigen_desc(V)
    k = data.draw(st.integers(0, d - 1))
    s = np.array(data.draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    X = nm.bipartite_point(U[:, k], s)
    assert np.abs(nm.field_one_head(X, M, V, c)).max() < 1e-12 * (1 + np.abs(V).max())  # an equilibrium
    sp_ = nm.spectra(nm.ambient_jacobian(X, M, V, c), X)
    tang, normal = nm.bipartite_spectra(lam, U[:, k] @ M @ U[:, k], k, int((s > 0).sum()), int((s < 0).sum()), c)
    scale = 1 + np.abs(V).max()
    assert np.abs(np.sort(sp_.tangent.real) - np.sort(tang.real)).max() < 1e-9 * scale
    assert np.abs(sp_.tangent.imag).max() < 1e-9 * scale  # real spectrum (note D4)
    assert np.abs(np.sort(sp_.normal.real) - np.sort(normal.real)).max() < 1e-9 * scale


# ---------------------------------------------------------------------------------------------
# symbolic identities
# ---------------------------------------------------------------------------------------------


def test_lyapunov_identities_of_lemmas_1_and_5_are_proved():
    assert sm.oja_lyapunov_identity(3)["residual"] == 0
    assert sm.multiagent_lyapunov_identity(3, 2)["residual"] == 0
    J, pred = sm.oja_jacobian_at_eigenvector(3, 1)
    assert J == pred


def test_bipartite_identities_and_corrected_theorem_2_are_proved():
    for name, residual in sm.bipartite_identities().items():
        assert residual == 0, name
    c = sm.theorem2_conditions()
    assert c["trace_residual"] == 0 and c["det_residual"] == 0
    # the printed (9) is wrong somewhere: it differs from the corrected one as an expression
    assert sp.simplify(c["printed_det"] + c["det_condition"]) != 0 or sp.simplify(c["printed_trace"] - c["trace_condition"]) != 0


def test_printed_inequality_9_gives_wrong_verdicts_and_corrected_one_none():
    """Note 001 §3: random blocks, corrected (9) == direct 2x2 eigenvalues, printed (9) not always."""
    c = sm.theorem2_conditions()
    p_, n1, n2, lj, lk = c["symbols"]
    f = {k: sp.lambdify((p_, n1, n2, lj, lk), c[k]) for k in ("trace_condition", "det_condition", "printed_trace", "printed_det")}
    rng = np.random.default_rng(3)
    wrong_c = wrong_p = 0
    for _ in range(300):
        a, N1, N2 = rng.normal() * 2, int(rng.integers(1, 8)), int(rng.integers(1, 8))
        Lj, Lk = rng.normal(size=2)
        al1, al2 = math.exp(a), math.exp(-a)
        b1, b2 = N1 * al1 + N2 * al2, N1 * al2 + N2 * al1
        d1, d2 = (N1 * al1 - N2 * al2) / b1, (N2 * al1 - N1 * al2) / b2
        Jb = Lj * np.array([[N1 * al1 / b1, N2 * al2 / b1], [N1 * al2 / b2, N2 * al1 / b2]]) - Lk * np.diag([d1, d2])
        hurwitz = np.linalg.eigvals(Jb).real.max() < 0
        args = (al1, N1, N2, Lj, Lk)
        wrong_c += hurwitz != (f["trace_condition"](*args) < 0 and f["det_condition"](*args) > 0)
        wrong_p += hurwitz != (f["printed_trace"](*args) < 0 and f["printed_det"](*args) < 0)
    assert wrong_c == 0 and wrong_p > 0


# ---------------------------------------------------------------------------------------------
# certified spectra and verdicts
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 6))
def test_eigen_enclosures_contain_the_eigenvalues(seed, d):
    rng = np.random.default_rng(seed)
    G = np.round(rng.normal(size=(d, d)), 2)
    V = G + G.T
    enc = cm.eigen_enclosure(V)
    mpmath.mp.dps = 40
    ev = sorted(mpmath.eigsy(mpmath.matrix(V.tolist()))[0], reverse=True)
    if enc.separated:
        for e, lo, hi in zip(ev, enc.lo, enc.hi):
            assert mpmath.mpf(lo.numerator) / lo.denominator <= e <= mpmath.mpf(hi.numerator) / hi.denominator


def test_repeated_eigenvalue_is_not_separated_and_lambda1_simple_fails_exactly():
    V = np.diag([1.0, 1.0, 0.0])
    assert not cm.eigen_enclosure(V).separated
    p = ap.parse_attention({"V": V.tolist(), "P": np.eye(3).tolist(), "n": 3})
    D = fm.data_of(p)
    hyp = {h.name: h for h in fm.assumption_1(D)}
    assert hyp["Assumption 1: lambda_1 simple"].status == "fails"
    # a repeated lower eigenvalue does not hide a simple top one (exact inertia of V - tI)
    D = fm.data_of(ap.parse_attention({"V": np.diag([2.0, 1.0, 1.0]).tolist(), "P": np.eye(3).tolist(), "n": 3}))
    h = {h.name: h for h in fm.assumption_1(D)}["Assumption 1: lambda_1 simple"]
    assert h.status == "holds" and core.recheck(h.certificate)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 7), d=st.integers(2, 4), scale=st.floats(0, 3))
def test_consensus_v1_is_certified_stable_and_vk_unstable_for_any_QK(seed, n, d, scale):
    """Done-when of issue 12: any V with Assumption 1, any Q, K."""
    rng = np.random.default_rng(seed)
    V = _sym_V(rng, d)
    Q, K = rng.normal(size=(2, d, d)) * scale
    p = ap.parse_attention({"V": V.tolist(), "Q": Q.tolist(), "K": K.tolist(), "n": n})
    D = fm.data_of(p)
    r1 = fm.class_result(D, 0, n, 0)
    assert r1["verdict"] == "stable" and core.recheck(r1["certificate"])
    for k in range(1, d):
        rk = fm.class_result(D, k, n, 0)
        assert rk["verdict"] == "unstable" and core.recheck(rk["certificate"])


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), half=st.integers(1, 4), d=st.integers(2, 4), scale=st.floats(0.1, 4))
def test_equal_split_verdicts_match_the_tanh_closed_form(seed, half, d, scale):
    """D2: at n1 = n2 the point at v_k is stable iff k=1, t>0, lambda_2 < t lambda_1, or k=d, t<0,
    lambda_d < 0, lambda_1 < t lambda_d (t = tanh a_k)."""
    rng = np.random.default_rng(seed)
    while True:  # separated eigenvalues, lambda_1 > 0, any signs below
        G = rng.normal(size=(d, d))
        V = np.round((G + G.T) / 2, 3)
        lam = np.linalg.eigvalsh(V)
        if np.diff(lam).min() > 0.05 and lam[-1] > 0.05:
            break
    n = 2 * half
    M = np.round(rng.normal(size=(d, d)) * scale, 3)
    p = ap.parse_attention({"V": V.tolist(), "P": M.tolist(), "n": n})
    D = fm.data_of(p)
    for k in range(d):
        t = math.tanh(D.a(k))
        lam = D.lam
        closed = (k == 0 and t > 0 and lam[1] < t * lam[0]) or (k == d - 1 and t < 0 and lam[-1] < 0 and lam[0] < t * lam[-1])
        r = fm.class_result(D, k, half, half)
        if r["verdict"] != "unknown":
            assert (r["verdict"] == "stable") == closed
            assert core.recheck(r["certificate"])


def test_certificates_reject_tampering():
    rng = np.random.default_rng(9)
    V = _sym_V(rng, 3)
    p = ap.parse_attention({"V": V.tolist(), "P": (3 * np.eye(3)).tolist(), "n": 4})
    D = fm.data_of(p)
    r = fm.class_result(D, 0, 4, 0)
    cert = json.loads(json.dumps(r["certificate"]))
    assert core.recheck(cert)
    cert["data"]["claim"] = "unstable"
    assert not core.recheck(cert)
    cert = json.loads(json.dumps(r["certificate"]))
    cert["data"]["V"][0][1] = "7"  # no longer symmetric
    assert not core.recheck(cert)
    enc = cm.enclosure_certificate(core.rational_matrix(V), D.enc).to_json()
    assert core.recheck(enc)
    enc["data"]["lo"][0] = enc["data"]["hi"][0]  # claims a tighter enclosure than proved
    assert not core.recheck(enc)


def test_singleton_group_bipartite_can_be_stable_although_the_paper_says_unstable():
    """Note 001 §3 Theorem 2 correction 4: delta_l lambda_k > 0 is not needed for n_l = 1."""
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(400):
        d, n = 3, int(rng.integers(3, 7))
        V = _sym_V(rng, d)
        M = rng.normal(size=(d, d)) * 3
        p = ap.parse_attention({"V": V.tolist(), "P": M.tolist(), "n": n})
        D = fm.data_of(p)
        for k in (0, d - 1):
            r = fm.class_result(D, k, n - 1, 1)
            a = D.a(k)
            d2 = (math.exp(a) - (n - 1) * math.exp(-a)) / ((n - 1) * math.exp(-a) + math.exp(a))
            if r["verdict"] == "stable" and d2 * D.lam[k] < 0:
                found += 1
                X = nm.bipartite_point(D.U[:, k], np.r_[np.ones(n - 1), -1.0])
                assert nm.spectra(nm.ambient_jacobian(X, D.Mb, D.V), X).tangent.real.max() < 0
        if found >= 2:
            break
    assert found >= 1


# ---------------------------------------------------------------------------------------------
# equilibria, Newton, basins, CLI
# ---------------------------------------------------------------------------------------------

MULTI = {"V": [[1, 0, 0], [0, 0.1, 0], [0, 0, -0.5]], "P": [[3, 0, 0], [0, 0, 0], [0, 0, 0]], "n": 4, "seed": 1}


def test_basins_agree_with_certified_verdicts_on_a_multistable_example():
    """a_1 = 3, tanh 3 > lambda_2 / lambda_1: consensus v1 and the 2:2 bipartite point at v1 are
    both stable (D2), so random runs split between them; nothing certified unstable attracts."""
    p = ap.parse_attention(MULTI)
    out = fm.basins(p, 32, seed=1, t_max=300.0)
    labels = {o["label"]: o for o in out["basins"]["outcomes"]}
    assert out["agrees"] and not out["basins"]["reached_certified_unstable"]
    assert "consensus v1" in labels and labels["consensus v1"]["verdict"] == "stable"
    assert any(k.startswith("bipartite v1") and o["verdict"] == "stable" for k, o in labels.items())
    assert sum(o["count"] for o in out["basins"]["outcomes"]) == 32
    for o in out["basins"]["outcomes"]:
        lo, hi = o["wilson"]
        assert lo <= o["fraction"] <= hi


def test_newton_converges_to_equilibria_and_classify_names_them():
    p = ap.parse_attention(MULTI)
    D = fm.data_of(p)
    X = nm.bipartite_point(D.U[:, 0], np.array([1, 1, -1, -1.0])) + 1e-3
    nr = nm.newton(X, D.Mb, D.V)
    assert nr.converged and np.abs(nm.field_one_head(nr.X, D.Mb, D.V)).max() < 1e-12
    cl = nm.classify(nr.X, D.V, D.Mb)
    assert cl.labels == ["bipartite"] and cl.k == 0


def test_wilson_interval():
    lo, hi = fm.wilson(0, 10)
    assert lo == 0 and 0.2 < hi < 0.35
    lo, hi = fm.wilson(5, 10)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12


def test_cli_equilibria_verify_and_bad_input(tmp_path, capsys):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(MULTI))
    assert cli.main(["equilibria", "attention", "--params", str(f), "--json", "--cap", "4"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["skipped"]["skipped_patterns"] == 3 * (8 - 4)
    cons = [e for e in doc["equilibria"] if e["class"] == ["consensus"]]
    assert [e["stable"] for e in cons] == [True, False, False]
    V, P = np.array(MULTI["V"], float), np.array(MULTI["P"], float)
    for e in doc["equilibria"]:  # every listed point is a zero of the field
        assert np.abs(nm.field_one_head(np.array(e["X"]), P, V)).max() < 1e-12
    check = recheck_document(doc)  # the class certificates with V and beta Q^T K filled in from the document
    assert not check.refused and check.unbound == 0
    assert check.bound >= len({e["certificate"]["class"] for e in doc["equilibria"] if e["certificate"] is not None})
    assert cli.main(["verify", "attention", "--params", str(f), "--json"]) == 0
    ids = [t["id"] for t in json.loads(capsys.readouterr().out)["theorems"]]
    assert set(fm.THEOREM_IDS) <= set(ids)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({**MULTI, "V": [[1, 2, 0], [0, 0.1, 0], [0, 0, -0.5]]}))
    assert cli.main(["equilibria", "attention", "--params", str(bad)]) == 2
    assert "symmetric" in capsys.readouterr().err
    rep = tmp_path / "r.json"
    rep.write_text(json.dumps({**MULTI, "V": [[1, 0, 0], [0, 1, 0], [0, 0, -0.5]]}))
    # a repeated lambda_1 fails Assumption 1 but is valid input: its classes are continua (subspace classes),
    # none asymptotically stable (exact multiplicity 2 of the characteristic polynomial's root 1)
    assert cli.main(["equilibria", "attention", "--params", str(rep), "--json"]) == 0
    sub = [c for c in json.loads(capsys.readouterr().out)["classes"] if c["k"] == 1]
    assert sub and all(c["subspace"]["dimension"] == 2 and c["stable"] is False for c in sub)
    assert cli.main(["verify", "attention", "--params", str(bad), "--json"]) == 0
    th = {t["id"]: t for t in json.loads(capsys.readouterr().out)["theorems"]}
    assert th["multistability:thm-2"]["applies"] is False


def test_single_run_is_classified_only_once_settled(tmp_path, capsys):
    p = ap.parse_attention(MULTI)
    D = fm.data_of(p)
    X = nm.bipartite_point(D.U[:, 0], np.array([1, 1, -1, -1.0]))
    assert fm.classify_run(p, X)["limit_verdict"] == "stable"
    moved = nf.project(X + 1e-3 * np.random.default_rng(0).normal(size=X.shape))
    r = fm.classify_run(p, moved)
    assert r["limit_class"] is None and "not settled" in r["limit_class_reason"]
    f = tmp_path / "m.json"
    f.write_text(json.dumps({**MULTI, "t_end": 200}))
    assert cli.main(["verify", "attention", "--params", str(f), "--simulate", "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)["simulation"]
    assert sim["limit_verdict"] == "stable" and sim["agrees"] is True and sim["max_drift"] < 1e-8
    assert cli.main(["simulate", "attention", "--params", str(f), "--samples", "8", "--json", "--t-end", "200"]) == 0
    b = json.loads(capsys.readouterr().out)["simulation"]["basins"]
    assert sum(o["count"] for o in b["outcomes"]) == 8 and not b["reached_certified_unstable"]


@pytest.mark.slow
def test_clustering_equilibria_are_found_by_newton_from_simulation_limits():
    """A d = 3, n = 10 instance whose random runs reach consensus v1 or a 2-clustering: the
    clustering is located by Newton (a zero of the field), labelled, and gets no verdict."""
    p = ap.load_attention("tests/data/attention/clustering_d3.json")
    D = fm.data_of(p)
    doc = fm.equilibria(p, cap=2, samples=24)
    found = [e for e in doc["equilibria"] if e["eigvec_index"] is None]
    assert found and all(e["class"] == ["clustering"] and e["stable"] is None for e in found)
    for e in found:
        X = np.array(e["X"])
        assert np.abs(nm.field_one_head(X, D.Mb, D.V)).max() < 1e-12
        assert e["clusters"] >= 2  # a 1-clustering is never an equilibrium (Remark 4 corrected)
        assert len(e["tangent_spectrum"]) == p.n * (p.d - 1)


def test_more_bad_input_exits_2_with_one_line(tmp_path, capsys):
    tv = tmp_path / "tv.json"
    tv.write_text(json.dumps({"P": [["cos(t)", 0], [0, 1]], "V": [[1, 0], [0, 1]], "n": 3}))
    assert cli.main(["simulate", "attention", "--params", str(tv), "--samples", "4"]) == 2
    assert cli.main(["equilibria", "attention", "--params", str(tv)]) == 2  # time-varying head
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"V": np.eye(70).tolist(), "P": np.zeros((70, 70)).tolist(), "n": 3}))
    assert cli.main(["equilibria", "attention", "--params", str(big)]) == 2
    assert cli.main(["simulate", "attention", "--params", str(tv), "--device", "nosuchdevice"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 4 and "too large" in err and "time-varying" in err


def test_simulate_never_reports_a_cross_check_as_not_requested():
    """With --simulate, an entry without a cross-check says why, not 'not requested (--simulate)'."""
    from flowcert.attention import multistability as ms
    from flowcert.attention.system import SYSTEM

    p = SYSTEM.load({"V": [[1, 0.5, 0], [0.2, 0.1, 0], [0, 0, -0.5]], "Q": np.eye(3).tolist(),
                     "K": [[3, 0.5, 0], [0, 0.5, 0], [0.3, 0, -1]], "n": 4, "seed": 1, "t_end": 5})  # V not symmetric
    with_run = ms.theorems(p, simulate=True)
    without = ms.theorems(p, simulate=False)
    assert any(th.cross_check.details.get("reason") == ms.NOT_REQUESTED for th in without)
    assert all(th.cross_check.details.get("reason") != ms.NOT_REQUESTED for th in with_run)
