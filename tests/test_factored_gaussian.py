"""Factored matrices of the gaussian system (issue 45): B, V given as {"factors": [L, R], "scale_squared": q},
the exact matrix sqrt(q) L R. The verdicts must speak of that exact product, decided on the factors, and re-check
bound to the factors; nothing may be decided on the rounded d x d copy."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core
from flowcert.certificates.conditions import _factored_rayleigh, factored_norm_bound
from flowcert.certificates.lowrank import LowRank, low_rank_asymmetry_certificate
from flowcert.gaussian.params import parse_gaussian
from flowcert.errors import ParamError


def _exact(F: np.ndarray) -> flint.fmpq_mat:
    return flint.fmpq_mat(F.shape[0], F.shape[1], [flint.fmpq(*float(x).as_integer_ratio()) for x in F.ravel()])


def _raw(d: int, B: object, V: object) -> dict:
    return {"A": np.zeros((d, d)).tolist(), "B": B, "V": V, "b": [0.0] * d, "mu0": [0.0] * d,
            "Sigma0": np.eye(d).tolist()}


# ------------------------------------------------------------------ the value and its parameters


def test_factored_parameters_round_trip_and_echo() -> None:
    rng = np.random.default_rng(0)
    L, R = rng.normal(size=(5, 2)), rng.normal(size=(2, 5))
    p = parse_gaussian(_raw(5, {"factors": [L.tolist(), R.tolist()], "scale_squared": "1/32"}, {"factors": [L.tolist(), R.tolist()]}))
    assert set(p.factored) == {"B", "V"}
    assert p.factored["B"].scale_squared == Fraction(1, 32)
    assert p.to_json()["B"] == {"factors": [L.tolist(), R.tolist()], "scale_squared": "1/32"}
    assert p.to_json()["V"] == {"factors": [L.tolist(), R.tolist()]}
    assert parse_gaussian(p.to_json()) == p
    np.testing.assert_allclose(p.B, (L @ R) / np.sqrt(32), rtol=1e-14)


@pytest.mark.parametrize("bad, words", [
    ({"factors": [[[1.0, 2.0]]]}, "two matrices"),
    ({"factors": [[[1.0]] * 3, [[1.0] * 3]], "scale_squared": 0}, "> 0"),
    ({"factors": [[[1.0]] * 3, [[1.0] * 3]], "scale_squared": True}, "scale_squared"),
    ({"factors": [[[1.0]] * 3, [[1.0] * 3]], "scale": 2}, "unknown key 'scale'"),
    ({"factors": [[[1.0]] * 3, [[1.0] * 4]]}, "3 x 4"),
    ({"factors": [[[1.0]] * 3, [[1.0, 2.0], [1.0, 2.0]]]}, "do not fit"),
    ({"factors": [[[float("nan")]] * 3, [[1.0] * 3]]}, "non-finite"),
    ({"factors": [[["1"]] * 3, [[1.0] * 3]]}, "numbers only"),
    ({"factors": [[[10 ** 400]] * 3, [[1.0] * 3]]}, "not a finite float64"),
    ({"factors": [[[1e100]] * 3, [[1.0] * 3]]}, "larger than 1e+70"),
])
def test_bad_factored_input_names_the_key(bad: dict, words: str) -> None:
    with pytest.raises(ParamError) as err:
        parse_gaussian(_raw(3, bad, np.eye(3).tolist()))
    assert "key 'B'" in str(err.value) and words in str(err.value) and "\n" not in str(err.value)


def test_bad_factored_input_exits_2_with_one_line(tmp_path) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps(_raw(3, {"factors": [[[1.0]] * 3, [[1.0] * 4]]}, np.eye(3).tolist())))
    r = subprocess.run([sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "'B'" in r.stderr


# ------------------------------------------------------------------ the checkers, against exact dense arithmetic


def _diag_factors(a: list[int], b: list[int], d: int) -> LowRank:
    """N = sqrt(q) L R with L = [a_1 e_1, a_2 e_2, ...], R = [b_1 e_1^T; ...]: N = sqrt(q) diag(a_i b_i, 0...)."""
    k = len(a)
    L, R = np.zeros((d, k)), np.zeros((k, d))
    for i in range(k):
        L[i, i], R[i, i] = a[i], b[i]
    return LowRank(L, R, Fraction(1, 8))


def test_norm_bound_is_sharp_on_a_closed_form() -> None:
    N = _diag_factors([3, 1], [2, 5], 6)  # ||N||^2 = (1/8) max(6, 5)^2 = 36/8
    assert factored_norm_bound(N, Fraction(36, 8))
    assert not factored_norm_bound(N, Fraction(36, 8) - Fraction(1, 2**40))
    assert factored_norm_bound(N.transpose(), Fraction(36, 8)) and factored_norm_bound(N.negated(), Fraction(36, 8))


def test_norm_bound_with_rank_deficient_left_factor_uses_the_right() -> None:
    L = np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]])  # L^T L singular
    R = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    N = LowRank(L, R)  # N = [[1,1,0],[2,2,0],[0,0,0]]: ||N||^2 = 10 (rank one: |(1,2)|^2 |(1,1)|^2)
    assert factored_norm_bound(N, Fraction(10))
    assert not factored_norm_bound(N, Fraction(10) - Fraction(1, 2**30))


square_factors = st.integers(2, 5).flatmap(lambda d: st.tuples(
    st.just(d),
    st.lists(st.lists(st.integers(-4, 4), min_size=2, max_size=2), min_size=d, max_size=d),
    st.lists(st.lists(st.integers(-4, 4), min_size=d, max_size=d), min_size=2, max_size=2)))


@settings(max_examples=40, deadline=None)
@given(square_factors, st.sampled_from([Fraction(1), Fraction(1, 4), Fraction(9, 16)]))
def test_norm_bound_never_proves_below_the_exact_norm(case: tuple, q: Fraction) -> None:
    d, L, R = case
    N = LowRank(np.array(L, float), np.array(R, float), q)
    Nq = _exact(N.L) * _exact(N.R) * flint.fmpq(int(np.sqrt(q.numerator)), int(np.sqrt(q.denominator)))
    G = Nq.transpose() * Nq  # ||N||^2 = lambda_max(G), compared exactly below
    est = N.norm2_float() ** 2
    for u in (Fraction(est) * Fraction(1 + 2**-20) + Fraction(1, 2**60), Fraction(est) * Fraction(1 - 2**-10)):
        if factored_norm_bound(N, u):
            uq = flint.fmpq(u.numerator, u.denominator)
            assert core.is_psd(flint.fmpq_mat([[uq if i == j else 0 for j in range(d)] for i in range(d)]) - G)


@settings(max_examples=30, deadline=None)
@given(square_factors, st.lists(st.integers(-9, 9), min_size=5, max_size=5))
def test_factored_rayleigh_is_the_exact_quotient(case: tuple, xs: list[int]) -> None:
    d, L, R = case
    x = xs[:d]
    if not any(x):
        return
    N = LowRank(np.array(L, float), np.array(R, float), Fraction(1, 4))
    y = _exact(N.L) * _exact(N.R) * flint.fmpq_mat(d, 1, x)
    want = flint.fmpq(1, 4) * (y.transpose() * y)[0, 0] / sum(v * v for v in x)
    assert _factored_rayleigh(N, [str(v) for v in x]) == want


def test_asymmetry_checker_refuses_a_symmetric_pair_and_bad_indices() -> None:
    L = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    N = LowRank(L, L.T.copy(), Fraction(1, 3))  # symmetric: L L^T
    M = LowRank(L, np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0]]))  # M_01 = 2, M_10 = 0
    for low, ij in ((N, (0, 2)), (M, (0, 0)), (M, (0, 3))):
        c = low_rank_asymmetry_certificate(low, ij, "N")
        assert core.recheck(c.to_json()) is False
    assert core.recheck(low_rank_asymmetry_certificate(M, (0, 1), "N").to_json()) is True


# ------------------------------------------------------------------ the whole verify, and its re-check


def _verify(raw: dict, tmp_path, name: str) -> dict:
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(raw))
    r = subprocess.run([sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(f), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _statuses(doc: dict) -> dict[tuple[str, str], str]:
    return {(t["id"], h["name"]): h["status"] for t in doc["theorems"] for h in t["hypotheses"]}


def test_factored_and_dense_agree_where_the_factors_decide(tmp_path) -> None:
    """Small integer factors: L R is exact in float64, so the dense document speaks of the same exact matrix."""
    rng = np.random.default_rng(5)
    d = 6
    L, R = rng.integers(-3, 4, size=(d, 2)).astype(float), rng.integers(-3, 4, size=(2, d)).astype(float)
    Lv, Rv = rng.integers(-3, 4, size=(d, 3)).astype(float), rng.integers(-3, 4, size=(3, d)).astype(float)
    fac = _verify(_raw(d, {"factors": [(L / 64).tolist(), (R / 64).tolist()]}, {"factors": [Lv.tolist(), Rv.tolist()]}),
                  tmp_path, "fac")
    dense = _verify(_raw(d, (L @ R / 4096).tolist(), (Lv @ Rv).tolist()), tmp_path, "dense")
    f, g = _statuses(fac), _statuses(dense)
    decided = {k: v for k, v in f.items() if v != "unknown"}
    assert len(decided) >= 20
    assert all(g[k] == v for k, v in decided.items()), {k: (v, g[k]) for k, v in decided.items() if g[k] != v}
    assert fac["params"]["B"]["factors"][0] == (L / 64).tolist()


@pytest.fixture(scope="module")
def factored_doc(tmp_path_factory) -> dict:
    rng = np.random.default_rng(7)
    d = 8
    raw = _raw(d, {"factors": [(0.1 * rng.normal(size=(d, 2))).tolist(), (0.1 * rng.normal(size=(2, d))).tolist()],
                   "scale_squared": "1/2"},
               {"factors": [rng.normal(size=(d, 2)).tolist(), rng.normal(size=(2, d)).tolist()]})
    return _verify(raw, tmp_path_factory.mktemp("fac"), "p")


def _recheck(doc: dict, tmp_path, name: str) -> dict:
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "flowcert", "recheck", str(f), "--json"], capture_output=True, text=True)
    return json.loads(r.stdout) if r.stdout.strip() else {"refused": [r.stderr], "returncode": r.returncode}


def test_a_factored_document_rechecks_bound(factored_doc: dict, tmp_path) -> None:
    kinds = {h["certificate"]["kind"] for t in factored_doc["theorems"] for h in t["hypotheses"] if h["certificate"]}
    assert {"low_rank_asymmetry", "lemma23_condition"} <= kinds
    out = _recheck(factored_doc, tmp_path, "same")
    assert out["refused"] == [] and out["bound"] == out["certificates"] > 20


def test_a_changed_factor_or_scale_is_refused(factored_doc: dict, tmp_path) -> None:
    for i, change in enumerate((lambda d: d["params"]["B"]["factors"][0][0].__setitem__(0, 0.5),
                                lambda d: d["params"]["B"].__setitem__("scale_squared", "1/3"),
                                lambda d: d["params"]["V"]["factors"][1][1].__setitem__(3, 2.0))):
        doc = copy.deepcopy(factored_doc)
        change(doc)
        assert _recheck(doc, tmp_path, f"m{i}")["refused"], i


def test_a_moved_asymmetry_pair_is_refused(factored_doc: dict, tmp_path) -> None:
    doc = copy.deepcopy(factored_doc)
    for t in doc["theorems"]:
        for h in t["hypotheses"]:
            c = h["certificate"]
            if c and c["kind"] == "low_rank_asymmetry":
                c["data"]["j"] = c["data"]["i"]
    assert _recheck(doc, tmp_path, "pair")["refused"]


# ------------------------------------------------------------------ diagonal matrices (A = 0, Sigma0 = I of a head)


def test_diagonal_parameters_round_trip_and_refuse_bad_input() -> None:
    d = 4
    raw = _raw(d, np.eye(d).tolist(), np.eye(d).tolist())
    raw.update(A={"diagonal": [0.0, -1.0, 0.5, "1/3"]}, Sigma0={"diagonal": [1.0, 2.0, 0.0, 1.0]})
    p = parse_gaussian(raw)
    assert set(p.diagonal) == {"A", "Sigma0"}
    np.testing.assert_array_equal(p.Sigma0, np.diag([1.0, 2.0, 0.0, 1.0]))
    assert p.to_json()["A"] == {"diagonal": [0.0, -1.0, 0.5, "1/3"]} and parse_gaussian(p.to_json()) == p
    for key, bad, words in (("Sigma0", {"diagonal": [1.0, -1.0, 1.0, 1.0]}, "not positive semidefinite"),
                            ("A", {"diagonal": [1.0, 2.0]}, "2 entries, expected 4"),
                            ("A", {"diagonal": [1.0] * 4, "x": 1}, "unknown key 'x'"),
                            ("A", {"diagonal": [True] * 4}, "a diagonal entry")):
        with pytest.raises(ParamError) as err:
            parse_gaussian({**raw, key: bad})
        assert f"key '{key}'" in str(err.value) and words in str(err.value)


def test_diagonal_checkers_read_the_entries_exactly() -> None:
    from flowcert.certificates.core import inertia_certificate
    from flowcert.certificates.diagonal import Diagonal
    from flowcert.certificates.hypotheses import definite_verdict
    from flowcert.certificates.spectrum import hurwitz as hurwitz_verdict

    D = Diagonal.from_json({"diagonal": [2.0, "1/3", 0.0]})
    assert inertia_certificate(D, "D").data["inertia"] == [2, 0, 1]
    assert definite_verdict("D >= 0", D, "D", False).status == "holds"
    no = definite_verdict("D > 0", D, "D", True)  # the zero entry: a not_pd witness e_3
    assert no.status == "fails" and no.certificate.data["v"] == ["0", "0", "1"]
    assert hurwitz_verdict("Re spec(-D) < 0", D.scaled(flint.fmpq(-1))).status == "fails"  # a zero eigenvalue
    assert hurwitz_verdict("Re spec(J) < 0", Diagonal.from_json({"diagonal": [-1.0, "-1/7"]})).status == "holds"
    for kind, data in (("psd", {"M": {"diagonal": [1.0, -2 ** -1074]}}), ("pd", {"M": {"diagonal": [1.0, 0.0]}, "margin": "0"}),
                       ("pd", {"M": {"diagonal": [1.0, 1.0]}, "margin": "1"}),
                       ("inertia", {"M": {"diagonal": [1.0, 0.0]}, "inertia": [2, 0, 0]}),
                       ("not_psd", {"M": {"diagonal": [1.0, 0.0]}, "v": ["0", "1"]})):
        assert core.recheck({"kind": kind, "claim": "", "data": data}) is False, kind


def test_a_head_shaped_document_rechecks_and_a_changed_diagonal_is_refused(tmp_path) -> None:
    rng = np.random.default_rng(11)
    d = 8
    raw = _raw(d, {"factors": [(0.1 * rng.normal(size=(d, 2))).tolist(), (0.1 * rng.normal(size=(2, d))).tolist()],
                   "scale_squared": "1/2"}, {"factors": [rng.normal(size=(d, 2)).tolist(), rng.normal(size=(2, d)).tolist()]})
    raw.update(A={"diagonal": [0.0] * d}, Sigma0={"diagonal": [1.0] * d})
    doc = _verify(raw, tmp_path, "head")
    kinds = {h["certificate"]["kind"] for t in doc["theorems"] for h in t["hypotheses"] if h["certificate"]}
    assert {"low_rank_asymmetry", "lemma23_condition", "spectrum_inertia", "psd", "pd"} <= kinds
    dense = _verify(_raw(d, raw["B"], raw["V"]), tmp_path, "dense")  # the same matrices, A and Sigma0 written out
    assert _statuses(doc) == _statuses(dense)
    out = _recheck(doc, tmp_path, "same")
    assert out["refused"] == [] and out["bound"] == out["certificates"]
    for key, value in (("Sigma0", {"diagonal": [2.0] + [1.0] * (d - 1)}), ("A", {"diagonal": [1.0] + [0.0] * (d - 1)})):
        changed = copy.deepcopy(doc)
        changed["params"][key] = value
        assert _recheck(changed, tmp_path, f"c_{key}")["refused"], key


# ------------------------------------------------------------------ the cost model refuses before it allocates


def test_structured_parameters_beyond_memory_are_refused_before_allocation() -> None:
    import tracemalloc

    from flowcert.limits import COMMAND_BYTES, structured_verify_cost

    d = 40_000  # d x d float images: 51 GB; the factors themselves are small (k = 1)
    assert structured_verify_cost(d, 1)[1] > COMMAND_BYTES
    raw = {"A": {"diagonal": [0.0] * d}, "B": {"factors": [[[1.0]] * d, [[1.0] * d]]}, "V": {"factors": [[[1.0]] * d, [[1.0] * d]]},
           "b": [0.0] * d, "mu0": [0.0] * d, "Sigma0": {"diagonal": [1.0] * d}}
    tracemalloc.start()
    with pytest.raises(ParamError) as err:
        parse_gaussian(raw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "key 'Sigma0'" in str(err.value) and "GB" in str(err.value) and peak < 50 * 2**20


def test_the_cost_model_accepts_a_d4096_head_and_refuses_what_it_cannot_do() -> None:
    from flowcert.limits import structured_problem

    assert structured_problem(4096, 128) is None
    assert structured_problem(384, 32) is None
    problem = structured_problem(16384, 128)
    assert problem is not None and "predicted" in problem and "flowcert.limits.structured_verify_cost" in problem


def test_the_recheck_budget_prices_a_factored_certificate_by_its_form() -> None:
    """A norm bound on d x k factors costs O(d k^2) products and k x k conditions, not an exact d x d matrix:
    priced far below the same certificate with its matrix written out densely."""
    from flowcert.certificates.budget import estimate

    rng = np.random.default_rng(2)
    d, k = 512, 16
    N = LowRank(rng.normal(size=(d, k)), rng.normal(size=(k, d)), Fraction(1, 16))
    data = {"B": N.to_json(), "Sigma0": {"diagonal": [1.0] * d}, "value": True, "u": "3", "w": "1"}
    dense = {**data, "B": N.floats().tolist(), "Sigma0": np.eye(d).tolist()}
    low, full = estimate(json.loads(json.dumps(data))), estimate(dense)
    assert low.rows == k and full.rows == d and 50 * low.seconds < full.seconds


def test_definiteness_of_a_symmetric_factored_matrix_by_rank() -> None:
    """N = L L^T: with k < d it is singular, so N > 0 fails (the rank of the factors); with k = d and L invertible
    it is positive definite, so the factors (no asymmetric pair, full rank) must not refute it."""
    from flowcert.gaussian.factored import definite_of

    d = 4
    L_full = np.array([[2.0, 0, 0, 0], [1, 1, 0, 0], [0, 1, 3, 0], [1, 0, 0, 1]])  # lower triangular, det = 6
    for L, want in ((L_full[:, :2].copy(), "fails"), (L_full, "unknown")):
        p = parse_gaussian(_raw(d, {"factors": [L.tolist(), L.T.tolist()]}, np.eye(d).tolist()))
        got = definite_of(p, "B", 1)
        assert got.status == want, (L.shape, got.status, got.detail)
        if want == "fails":
            assert "rank <= 2 < d = 4" in got.detail
