"""Certificates of the gaussian system, their exact re-check, and the Thm 4.8(1) blow-up bound.

Every expected value here is derived independently of the code under test:

* the covariance field F and its linearisation on Sym(d) are recomputed by hand, the latter in
  the Kronecker form of note 000 (column-major vec, vec(XYZ) = (Z^T kron X) vec Y):
  J = I kron M + M kron I + (Sigma B^T) kron V + V kron (Sigma B^T), M = A + V Sigma B, restricted
  to symmetric matrices through the duplication matrix D (J_s = D^+ J D, vech in the
  upper-triangle order of ``numpy.triu_indices``);
* definiteness is decided exactly from the characteristic polynomial: for a real symmetric M,
  det(xI + M) = prod(x + lambda_i) has only non-negative (positive) coefficients iff M is
  positive semidefinite (definite);
* blow-up times come from the scalar Bernoulli equation y' = alpha y + beta y^2, solved by hand.
"""

from __future__ import annotations

import copy
import json
import math
import re

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from exact_helpers import exact_pd, exact_psd, q, qmat
from flowcert.certificates import core
from flowcert.certificates import gaussian as cg
from flowcert.certificates.hypotheses import psd_hypothesis
from flowcert.numeric import gaussian as ng
from flowcert.gaussian.params import parse_gaussian

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------
# independent helpers
# ---------------------------------------------------------------------------------------------


def field_exact(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix, S: sp.Matrix) -> sp.Matrix:
    """F(Sigma) = A Sigma + Sigma A^T + V Sigma B Sigma + Sigma B^T Sigma V^T."""
    return A * S + S * A.T + V * S * B * S + S * B.T * S * V.T


def _kron(X: sp.Matrix, Y: sp.Matrix) -> sp.Matrix:
    m, n = Y.shape
    return sp.Matrix(X.rows * m, X.cols * n, lambda r, c: X[r // m, c // n] * Y[r % m, c % n])


def duplication(d: int) -> np.ndarray:
    rows, cols = np.triu_indices(d)
    D = np.zeros((d * d, rows.size))
    for k, (i, j) in enumerate(zip(rows, cols)):
        D[i + j * d, k] = 1.0  # column-major vec index of entry (i, j)
        D[j + i * d, k] = 1.0
    return D


def jac_exact(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix, S: sp.Matrix) -> sp.Matrix:
    d = A.rows
    I = sp.eye(d)
    M = A + V * S * B
    SB = S * B.T
    J = _kron(I, M) + _kron(M, I) + _kron(SB, V) + _kron(V, SB)
    D = sp.Matrix(duplication(d).astype(int).tolist())
    Dplus = (D.T * D).inv() * D.T
    return Dplus * J * D


def jac_float(A, B, V, S) -> np.ndarray:
    d = A.shape[0]
    I = np.eye(d)
    M = A + V @ S @ B
    SB = S @ B.T
    J = np.kron(I, M) + np.kron(M, I) + np.kron(SB, V) + np.kron(V, SB)
    D = duplication(d)
    return np.linalg.solve(D.T @ D, D.T) @ J @ D


def abscissa(J) -> float:
    return float(np.linalg.eigvals(np.asarray(J, dtype=float)).real.max())


def lyapunov_claim(J: sp.Matrix, P: sp.Matrix, e: sp.Rational) -> bool:
    """P - eI >= 0 and -(J^T P + P J) - eI >= 0 with e > 0 (decided exactly, independently)."""
    if not (e > 0 and P == P.T):
        return False
    n = P.rows
    return exact_psd(P - e * sp.eye(n)) and exact_psd(-(J.T * P + P * J) - e * sp.eye(n))


def decode(rows) -> sp.Matrix:
    return sp.Matrix([[sp.Rational(x) for x in row] for row in rows])


def encode(M: sp.Matrix) -> list[list[str]]:
    return [[str(M[i, j]) for j in range(M.cols)] for i in range(M.rows)]


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


# ---------------------------------------------------------------------------------------------
# the note's bistable example (erratum 2) and Sigma = 0
# ---------------------------------------------------------------------------------------------

A_BI = np.array([[-5.0, -5.0], [5.0, 4.0]])
V_BI = -np.diag([5.0, 1.0])
B_BI = np.array([[5.0, 3.0], [3.0, 2.0]])
S_BI = np.array([[1.0, -2.0], [-2.0, 5.0]])

A_H = np.array([[-1.0, 3.0], [0.0, -2.0]])  # Hurwitz, non-normal
B_H = np.array([[2.0, 1.0], [0.0, 1.0]])
V_H = np.array([[0.5, -1.0], [2.0, 0.25]])


@pytest.fixture(scope="module")
def bistable_result():
    return cg.stability(A_BI, B_BI, V_BI, S_BI)


@pytest.fixture(scope="module")
def zero_result():
    return cg.stability(A_H, B_H, V_H, np.zeros((2, 2)))


def test_bistable_example_is_an_exact_pd_equilibrium():
    A, B, V, S = (qmat(M) for M in (A_BI, B_BI, V_BI, S_BI))
    assert field_exact(A, B, V, S) == sp.zeros(2, 2)
    assert exact_pd(S)
    # Lemma 4.4: M = A + V S B satisfies M S + S M^T = 0 (here M = 0 exactly)
    M = A + V * S * B
    assert M * S + S * M.T == sp.zeros(2, 2)
    # Table 1 row 2 is contradicted: Re spec A < 0, yet this PD equilibrium is linearly stable
    assert abscissa(A) < 0
    assert abscissa(jac_exact(A, B, V, S)) < 0


def _check_stable_certificate(res, A, B, V, S):
    """Independent reading of a stable_equilibrium certificate at an exact equilibrium."""
    assert res.status == "holds", res.detail
    cert = res.certificate.to_json()
    assert cert["kind"] == "stable_equilibrium"
    assert core.recheck(cert)
    assert core.recheck(json.loads(json.dumps(cert)))  # survives a JSON round trip
    data = cert["data"]
    Aq, Bq, Vq, Sq = (qmat(M) for M in (A, B, V, S))
    assert [decode(data[k]) for k in ("A", "B", "V", "Sigma")] == [Aq, Bq, Vq, Sq]
    P, e = decode(data["P"]), sp.Rational(data["margin"])
    J = jac_exact(Aq, Bq, Vq, Sq)
    assert lyapunov_claim(J, P, e)
    # consequence: Re lambda(J) <= -e / (2 lambda_max(P)) for every eigenvalue
    lam_max_P = float(np.linalg.eigvalsh(np.array(P, dtype=float)).max())
    assert abscissa(J) <= -float(e) / (2 * lam_max_P) * (1 - 1e-9)


def test_bistable_pd_equilibrium_is_certified_stable(bistable_result):
    _check_stable_certificate(bistable_result, A_BI, B_BI, V_BI, S_BI)


def test_sigma_zero_with_hurwitz_A_is_certified_stable(zero_result):
    J = jac_exact(qmat(A_H), qmat(B_H), qmat(V_H), sp.zeros(2, 2))
    # at Sigma = 0 the spectrum is {a_i + a_j}: -2, -3, -4
    assert sorted(np.linalg.eigvals(np.array(J, dtype=float)).real) == pytest.approx([-4, -3, -2])
    _check_stable_certificate(zero_result, A_H, B_H, V_H, np.zeros((2, 2)))


def test_sigma_zero_with_unstable_A_fails_with_a_positive_eigenvalue():
    A, B, V, S = np.diag([1.0, 2.0]), np.eye(2), -np.eye(2), np.zeros((2, 2))
    res = cg.stability(A, B, V, S)
    assert res.status == "fails"
    J = jac_exact(qmat(A), qmat(B), qmat(V), qmat(S))
    eig = np.linalg.eigvals(np.array(J, dtype=float))
    assert sorted(eig.real) == pytest.approx([2, 3, 4])  # a_i + a_j
    named = [float(x) for x in NUMBER.findall(res.detail)]
    assert any(x > 0 and np.min(np.abs(eig - x)) < 1e-6 for x in named), res.detail
    cert = res.certificate.to_json()
    assert cert["kind"] in ("unstable", "unstable_point") and core.recheck(cert)
    assert decode(cert["data"]["J"]) == J


# ---------------------------------------------------------------------------------------------
# property: never "holds" for an unstable linearisation (and "fails" only for an unstable one)
# ---------------------------------------------------------------------------------------------

ENTRY = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def systems(draw):
    d = draw(st.integers(1, 3))

    def mat():
        return np.array(draw(st.lists(ENTRY, min_size=d * d, max_size=d * d))).reshape(d, d)

    A, B, V = mat(), mat(), mat()
    kind = draw(st.sampled_from(["zero", "zero_hurwitz", "designed", "designed_stable", "random"]))
    if kind.startswith("zero"):
        S = np.zeros((d, d))
        if kind == "zero_hurwitz":  # A + A^T < 0, so A is Hurwitz and so is DF_0 = (X -> A X + X A^T)
            L = mat()
            A = -(L @ L.T) - 0.1 * np.eye(d) + (A - A.T)
        return A, B, V, S
    L = mat()
    S = L @ L.T + 0.2 * np.eye(d)
    S = (S + S.T) / 2  # exactly symmetric
    if kind == "designed_stable":
        # Thm 4.7(1'): V = -v I, B > 0 gives -(P V + V P) = 2 v P > 0, a locally stable PD equilibrium
        V = -draw(st.floats(0.2, 2.0)) * np.eye(d)
        B = L.T @ L + 0.2 * np.eye(d)
        B = (B + B.T) / 2
    if kind != "random":
        # note 000, Lemma 4.4 inverse design: A = W S^{-1} - V S B (W skew) makes S an equilibrium
        W = mat()
        A = (W - W.T) @ np.linalg.inv(S) - V @ S @ B
    return A, B, V, S


@SETTINGS
@given(systems())
def test_stability_verdict_agrees_with_the_true_linearisation(system):
    A, B, V, S = system
    res = cg.stability(A, B, V, S)
    assert res.status in {"holds", "fails", "unknown"}
    event(res.status)
    J = jac_float(A, B, V, S)
    if res.status == "holds":
        assert abscissa(J) < 0
        cert = res.certificate.to_json()
        assert core.recheck(cert)
        data = cert["data"]
        Sq = decode(data["Sigma"])
        assert Sq == qmat(S)
        # the Lyapunov inequalities hold exactly for the hand-built (Kronecker) Jacobian at Sigma
        Jq = jac_exact(*(decode(data[k]) for k in ("A", "B", "V")), Sq)
        assert lyapunov_claim(Jq, decode(data["P"]), sp.Rational(data["margin"]))
        P, e = decode(data["P"]), float(sp.Rational(data["margin"]))
        # the certified equilibrium lies within the Kantorovich ball, where DF stays Hurwitz with
        # the certified margin; at Sigma itself: Re lambda <= -e / (2 lambda_max(P))
        lam_max_P = float(np.linalg.eigvalsh(np.array(P, dtype=float)).max())
        assert abscissa(J) <= -e / (2 * lam_max_P) + 1e-9 * (1 + np.abs(J).max())
    elif res.status == "fails":
        assert abscissa(J) > 0
        cert = res.certificate.to_json()
        assert core.recheck(cert)
        assert decode(cert["data"]["J"]) == jac_exact(qmat(A), qmat(B), qmat(V), qmat(S))


# ---------------------------------------------------------------------------------------------
# tampering: a modified certificate whose claim is false must be rejected
# ---------------------------------------------------------------------------------------------


def _tampered(cert_json, **changes):
    c = copy.deepcopy(cert_json)
    c["data"].update(changes)
    return c


def _claim_at_exact_equilibrium(data) -> bool:
    """Truth of a stable_equilibrium claim whose Sigma is an exact equilibrium (ball of radius 0)."""
    A, B, V, S = (decode(data[k]) for k in ("A", "B", "V", "Sigma"))
    assert field_exact(A, B, V, S) == sp.zeros(A.rows, A.rows)
    return lyapunov_claim(jac_exact(A, B, V, S), decode(data["P"]), sp.Rational(data["margin"]))


@pytest.mark.parametrize("which", ["bistable", "zero"])
def test_tampered_margin_and_P_are_rejected(which, bistable_result, zero_result):
    cert = (bistable_result if which == "bistable" else zero_result).certificate.to_json()
    P = decode(cert["data"]["P"])
    n = P.rows
    cases = {
        "margin huge": _tampered(cert, margin="1000000"),
        "margin zero": _tampered(cert, margin="0"),
        "margin negative": _tampered(cert, margin="-1/2"),
        "P -> -P": _tampered(cert, P=encode(-P)),
        "P[0][0] -> -1": _tampered(cert, P=encode(P + (-1 - P[0, 0]) * sp.diag(*([1] + [0] * (n - 1))))),
        "P asymmetric": _tampered(cert, P=[[str(P[i, j] + (1 if (i, j) == (0, 1) else 0)) for j in range(n)]
                                           for i in range(n)]),
        "P off-diagonal x100": _tampered(cert, P=encode(P + 100 * max(abs(x) for x in P) * (sp.ones(n, n) - sp.eye(n)))),
    }
    for label, bad in cases.items():
        if label == "P asymmetric":
            assert decode(bad["data"]["P"]) != decode(bad["data"]["P"]).T
        else:
            assert not _claim_at_exact_equilibrium(bad["data"]), label  # the modified claim is false
        assert core.recheck(bad) is False, label


def test_tampered_entry_of_A_is_rejected(zero_result):
    cert = zero_result.certificate.to_json()
    A = decode(cert["data"]["A"])
    A[0, 0] = 1  # [[1, 3], [0, -2]]: Sigma = 0 stays an equilibrium, DF there has eigenvalue 2
    bad = _tampered(cert, A=encode(A))
    J = jac_exact(A, decode(cert["data"]["B"]), decode(cert["data"]["V"]), sp.zeros(2, 2))
    assert abscissa(J) == pytest.approx(2.0)
    assert not _claim_at_exact_equilibrium(bad["data"])
    assert core.recheck(bad) is False


def test_tampered_A_along_the_equilibrium_family_is_decided_exactly(bistable_result):
    """A -> A + w [[0,1],[-1,0]] Sigma^{-1} keeps Sigma an exact equilibrium (Lemma 4.4 design)."""
    cert = bistable_result.certificate.to_json()
    S = decode(cert["data"]["Sigma"])
    K = sp.Matrix([[0, 1], [-1, 0]]) * S.inv()
    outcomes = set()
    for w in (-40, -10, -3, -1, 1, 3, 10, 40):
        A = decode(cert["data"]["A"]) + w * K
        bad = _tampered(cert, A=encode(A))
        truth = _claim_at_exact_equilibrium(bad["data"])
        outcomes.add(truth)
        assert core.recheck(bad) is truth, w
    assert False in outcomes  # at least one modification makes the claim false


@settings(max_examples=40, deadline=None)
@given(
    which=st.sampled_from(["bistable", "zero"]),
    i=st.integers(0, 2), j=st.integers(0, 2),
    num=st.integers(-(2**12), 2**12), den=st.integers(1, 2**8),
    symmetric=st.booleans(),
    margin=st.one_of(st.none(), st.fractions(min_value=-2, max_value=4, max_denominator=64)),
)
def test_recheck_agrees_with_the_claim_under_random_tampering(bistable_result, zero_result, which, i, j, num, den,
                                                              symmetric, margin):
    cert = (bistable_result if which == "bistable" else zero_result).certificate.to_json()
    P = decode(cert["data"]["P"])
    delta = sp.Rational(num, den)
    P[i, j] += delta
    if symmetric and i != j:
        P[j, i] += delta
    changes = {"P": encode(P)}
    if margin is not None:
        changes["margin"] = str(sp.Rational(margin.numerator, margin.denominator))
    bad = _tampered(cert, **changes)
    assert core.recheck(bad) is _claim_at_exact_equilibrium(bad["data"])


GARBAGE = [
    {}, {"kind": "psd"}, {"kind": "psd", "claim": "x"}, {"claim": "x", "data": {}},
    {"kind": "stable_equilibrium", "claim": "x", "data": {}},
    {"kind": "stable_equilibrium", "claim": "x", "data": None},
    {"kind": "lyapunov", "claim": "x", "data": {"J": [["1"]], "P": [["1"]], "margin": "nan"}},
    {"kind": "lyapunov", "claim": "x", "data": {"J": "oops", "P": [["1"]], "margin": "1"}},
    {"kind": "psd", "claim": "x", "data": {"M": [["1", "2"], ["3"]]}},
    {"kind": "psd", "claim": "x", "data": {"M": []}},
    {"kind": "unstable", "claim": "x", "data": {"J": [["1"]], "P": [["-1"]], "v": []}},
    {"kind": "no_such_kind", "claim": "x", "data": {"M": [["1"]]}},
    {"kind": ["psd"], "claim": "x", "data": {"M": [["1"]]}},
    None, "psd", 0, 1.5, [], [{"kind": "psd"}],
]


def test_recheck_of_garbage_is_false_and_never_raises():
    offenders = []
    for garbage in GARBAGE:
        try:
            out = core.recheck(garbage)
        except Exception as exc:  # noqa: BLE001 - recording what escaped is the point
            offenders.append(f"{garbage!r}: raised {type(exc).__name__}: {exc}")
            continue
        if out is not False:
            offenders.append(f"{garbage!r}: returned {out!r}")
    assert not offenders, "\n".join(offenders)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-10, 10, allow_nan=False) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        JSON_VALUES,
        st.fixed_dictionaries(
            {},
            optional={
                "kind": st.sampled_from(sorted(core.CHECKERS)) | JSON_VALUES,
                "claim": JSON_VALUES,
                "data": JSON_VALUES,
                "checker": JSON_VALUES,
            },
        ),
    )
)
def test_recheck_never_raises(obj):
    assert isinstance(core.recheck(obj), bool)


def test_pd_certificate_means_positive_definite():
    """A recheck-accepted "pd" certificate must prove M > 0; a negative margin would not."""
    bad = {"kind": "pd", "claim": "M is positive definite", "data": {"M": [["-1"]], "margin": "-5"}}
    assert not exact_pd(decode(bad["data"]["M"]))
    assert core.recheck(bad) is False


# ---------------------------------------------------------------------------------------------
# psd_hypothesis: exact verdicts on float data
# ---------------------------------------------------------------------------------------------


def test_psd_exact_boundary_cases():
    ok = psd_hypothesis("M >= 0", np.diag([1.0, 0.0]), "M")
    assert ok.status == "holds" and core.recheck(ok.certificate.to_json())
    assert psd_hypothesis("M >= 0", np.diag([1.0, 5e-324]), "M").status == "holds"
    for tiny in (-1e-300, -5e-324):
        res = psd_hypothesis("M >= 0", np.diag([1.0, tiny]), "M")
        assert res.status == "fails", tiny
    assert psd_hypothesis("M >= 0", np.array([[1.0, 0.1], [0.0, 1.0]]), "M").status == "fails"


def _witness_check(res, Mq: sp.Matrix) -> None:
    """If the verdict names a witness v, v^T M v < 0 must hold exactly."""
    m = re.search(r"\$v\$ = \[([^\]]*)\]", res.detail)
    assert m, res.detail
    v = sp.Matrix([sp.Rational(s.strip().strip("'\"")) for s in m.group(1).split(",")])
    assert (v.T * Mq * v)[0, 0] < 0


def _agree_with_exact(M: np.ndarray) -> bool:
    res = psd_hypothesis("M >= 0", M, "M")
    Mq = qmat(M)
    truth = exact_psd(Mq)
    assert res.status == ("holds" if truth else "fails")
    if truth:
        cert = res.certificate.to_json()
        assert core.recheck(cert) and decode(cert["data"]["M"]) == Mq
    else:
        _witness_check(res, Mq)
    return truth


def test_psd_of_rounded_outer_products_both_ways():
    """fl(v v^T) is PSD or not depending on rounding; the verdict must follow exact arithmetic."""
    rng = np.random.default_rng(12345)
    seen = set()
    for _ in range(400):
        v = rng.normal(size=2)
        M = np.outer(v, v)
        det = q(M[0, 0]) * q(M[1, 1]) - q(M[0, 1]) ** 2
        key = int(bool(det > 0)) - int(bool(det < 0))
        if key in seen:
            continue
        seen.add(key)
        assert _agree_with_exact(M) == bool(det >= 0)
        if {-1, 1} <= seen:
            break
    assert {-1, 1} <= seen


@settings(max_examples=40, deadline=None)
@given(
    d=st.integers(2, 3),
    vs=st.lists(st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64), min_size=6, max_size=6),
    two=st.booleans(),
)
def test_psd_verdict_is_exact_for_rounded_gram_matrices(d, vs, two):
    v, w = np.array(vs[:d]), np.array(vs[3:3 + d])
    M = np.outer(v, v)
    if two:
        M = M + np.outer(w, w)
    assert np.array_equal(M, M.T)
    _agree_with_exact(M)


# ---------------------------------------------------------------------------------------------
# Thm 4.8(1): the blow-up bound
# ---------------------------------------------------------------------------------------------


def _blowup_bound():
    import flowcert.gaussian as fg

    if hasattr(fg, "blowup_bound"):
        return fg.blowup_bound
    from flowcert import gaussian_asymptotics

    return gaussian_asymptotics.blowup_bound


def params(A, B, V, Sigma0, t_end=10.0):
    d = len(Sigma0)
    return parse_gaussian({"A": np.asarray(A).tolist(), "B": np.asarray(B).tolist(), "V": np.asarray(V).tolist(),
                           "b": [0.0] * d, "mu0": [0.0] * d, "Sigma0": np.asarray(Sigma0).tolist(), "t_end": t_end})


def bernoulli_blowup(alpha: float, beta: float, y0: float) -> float:
    """Blow-up time of y' = alpha y + beta y^2, y(0) = y0 > 0 (inf if none)."""
    if beta * y0 + alpha <= 0:
        return math.inf
    x = alpha / (beta * y0)
    if abs(x) < 1e-8:  # log1p(x) / x = 1 - x/2 + O(x^2), also safe for subnormal alpha
        return (1.0 - x / 2) / (beta * y0)
    return math.log1p(x) / alpha


def simulated_blowup(p, t_end):
    sol = ng.integrate_moments(ng.constant(p.A, p.B, p.V, p.b), p.mu0, p.Sigma0, t_end)
    return sol


def _mat(draw, d, lo=-1.0, hi=1.0):
    return np.array(draw(st.lists(st.floats(lo, hi, allow_nan=False, width=64), min_size=d * d,
                                  max_size=d * d))).reshape(d, d)


def _pd(draw, d, shift):
    L = _mat(draw, d)
    S = L @ L.T + shift * np.eye(d)
    return (S + S.T) / 2


@st.composite
def thm48_cases(draw):
    d = draw(st.integers(1, 3))
    W = _mat(draw, d)
    K = W - W.T  # exactly skew in floats
    A = K if draw(st.booleans()) else _pd(draw, d, 0.05) + K
    return A, _pd(draw, d, 0.1), _pd(draw, d, 0.1), _pd(draw, d, 0.1)


@settings(max_examples=25, deadline=None)
@given(thm48_cases())
def test_blowup_bound_dominates_the_simulated_blowup_time(case):
    A, B, V, S0 = case
    p = params(A, B, V, S0)
    d = S0.shape[0]
    alpha = float(np.linalg.eigvalsh(A + A.T).min())
    beta = 2 * np.linalg.eigvalsh(V).min() * np.linalg.eigvalsh(B).min() / d
    assert alpha > -1e-12  # Thm 4.8(1) applies
    bound = _blowup_bound()(p)
    assert bound is not None and math.isfinite(bound)
    # eq. (20) is decreasing in alpha and beta: a valid bound is at least the exact formula
    assert bound >= bernoulli_blowup(max(alpha, 0.0), beta, float(np.trace(S0))) * (1 - 1e-9)
    sol = simulated_blowup(p, 1.05 * bound)
    assert sol.status == "blowup" and sol.blowup_time is not None
    assert sol.blowup_time <= bound


@settings(max_examples=25, deadline=None)
@given(
    d=st.integers(1, 3),
    a=st.one_of(st.just(0.0), st.floats(0.0, 2.0, width=64)),
    v=st.floats(0.2, 2.0, width=64), c=st.floats(0.2, 2.0, width=64),
    data=st.data(),
)
def test_blowup_bound_equals_the_closed_form_in_isotropic_cases(d, a, v, c, data):
    W = _mat(data.draw, d)
    A = a * np.eye(d) + (W - W.T)  # A + A^T = 2a I exactly
    S0 = _pd(data.draw, d, 0.1)
    p = params(A, c * np.eye(d), v * np.eye(d), S0)
    alpha, beta, y0 = 2 * a, 2 * v * c / d, float(np.trace(S0))
    expected = bernoulli_blowup(alpha, beta, y0)
    bound = _blowup_bound()(p)
    assert bound == pytest.approx(expected, rel=1e-6)
    assert bound >= expected * (1 - 1e-12)


@settings(max_examples=20, deadline=None)
@given(
    d=st.integers(1, 3),
    a=st.one_of(st.just(0.0), st.floats(0.0, 2.0, width=64)),
    v=st.floats(0.2, 2.0, width=64), c=st.floats(0.2, 2.0, width=64), s=st.floats(0.1, 3.0, width=64),
)
def test_true_blowup_time_of_the_scalar_case_is_below_the_bound(d, a, v, c, s):
    # Sigma = s(t) I solves eq. (7): s' = 2 a s + 2 v c s^2, i.e. y = d s solves
    # y' = 2 a y + (2 v c / d) y^2, which blows up at log(1 + a / (v c s)) / (2 a) (1 / (2 v c s) at a = 0)
    I = np.eye(d)
    p = params(a * I, c * I, v * I, s * I)
    true_time = bernoulli_blowup(2 * a, 2 * v * c, s)
    bound = _blowup_bound()(p)
    assert true_time <= bound
    assert bound <= true_time * (1 + 1e-6)  # eq. (20) is tight here
    sol = simulated_blowup(p, 1.05 * bound)
    assert sol.status == "blowup"
    assert true_time * (1 - 1e-3) <= sol.blowup_time <= true_time * (1 + 1e-9)


@settings(max_examples=20, deadline=None)
@given(
    d=st.integers(1, 3),
    a=st.floats(-2.0, 2.0, width=64),
    v=st.floats(0.2, 2.0, width=64), c=st.floats(0.2, 2.0, width=64), s=st.floats(0.05, 3.0, width=64),
)
def test_blowup_bound_is_never_below_the_true_time(d, a, v, c, s):
    """Any finite value returned must bound the true blow-up time (none exists when a + v c s <= 0)."""
    assume(abs(a + v * c * s) > 1e-6)
    I = np.eye(d)
    p = params(a * I, c * I, v * I, s * I)
    true_time = bernoulli_blowup(2 * a, 2 * v * c, s)
    bound = _blowup_bound()(p)
    if bound is not None:
        assert bound >= true_time * (1 - 1e-12)


# ---------------------------------------------------------------------------------------------
# hypotheses on A + A^T are about the exact matrix, not its floating-point rounding
# ---------------------------------------------------------------------------------------------


def _theorem(p, theorem_id):
    """The catalogue record ``theorem_id`` evaluated on ``p`` (wherever the module keeps it)."""
    import flowcert.gaussian as fg

    try:
        from flowcert import gaussian_asymptotics as ga
    except ImportError:  # pragma: no cover - older layout
        ga = None
    if theorem_id == "gaussian:thm-4.8.1":
        return ga.thm_4_8(p, 1) if ga is not None and hasattr(ga, "thm_4_8") else fg.thm_4_8_1(p)
    return ga.thm_4_7_2(p) if ga is not None and hasattr(ga, "thm_4_7_2") else fg.thm_4_7_2(p)


@pytest.mark.parametrize(
    ("sign", "theorem_id", "name"),
    [(1, "gaussian:thm-4.8.1", "A + A^T >= 0"), (-1, "gaussian:thm-4.7.2", "-(A + A^T) >= 0")],
)
def test_symmetric_part_hypothesis_is_decided_on_exact_data(sign, theorem_id, name):
    a, b = sign * 0.1, sign * 0.7
    s = a + b  # rounds towards zero: |fl(a + b)| < |a + b|
    A = np.array([[s / 2, a], [b, s / 2]])
    Aq = qmat(A)
    H = sign * (Aq + Aq.T)
    assert not exact_psd(H)  # exactly, sign (A + A^T) is indefinite (determinant < 0)
    V = sign * np.eye(2)
    p = params(A, np.eye(2), V, np.eye(2), t_end=0.2)
    th = _theorem(p, theorem_id)
    hyp = next(h for h in th.hypotheses if h.name == name)
    assert hyp.status != "holds", f"{name} certified for an indefinite matrix: {hyp.certificate and hyp.certificate.to_json()}"
