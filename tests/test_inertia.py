"""Exact spectral inertia on defective spectra (issue 33, item 1).

The expected inertia is known by construction: a real Jordan form with eigenvalues in
{0, ±1, ±i, 1 ± i, -1 ± i}, conjugated by an integer unimodular S (so S^-1 is integral and the
matrix stays rational), has (n+, n-, n0) = the block sizes on each side. The construction is the
oracle, and SymPy's ``roots`` of the characteristic polynomial (with multiplicities) is a second,
independent one. Both the producer (root isolation) and the checker (Cauchy indices) must agree
with it, and the checker must refuse every other triple.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from flowcert.certificates import core, spectrum
from flowcert.certificates.cauchy_index import inertia_by_cauchy_index

#: eigenvalue -> (real part sign, 1x1 or 2x2 real block)
EIGEN = {
    "0": (0, sp.Matrix([[0]])),
    "1": (1, sp.Matrix([[1]])),
    "-1": (-1, sp.Matrix([[-1]])),
    "+-i": (0, sp.Matrix([[0, 1], [-1, 0]])),
    "1+-i": (1, sp.Matrix([[1, 1], [-1, 1]])),
    "-1+-i": (-1, sp.Matrix([[-1, 1], [-1, -1]])),
}


def real_jordan_block(eig: str, k: int) -> sp.Matrix:
    """Real Jordan block of size k for ``eig`` (2k rows for a complex pair)."""
    _, C = EIGEN[eig]
    m = C.rows
    J = sp.zeros(m * k, m * k)
    for b in range(k):
        J[b * m:(b + 1) * m, b * m:(b + 1) * m] = C
        if b + 1 < k:
            J[b * m:(b + 1) * m, (b + 1) * m:(b + 2) * m] = sp.eye(m)
    return J


def expected(blocks: list[tuple[str, int]]) -> tuple[int, int, int]:
    count = {1: 0, -1: 0, 0: 0}
    for eig, k in blocks:
        sign, C = EIGEN[eig]
        count[sign] += C.rows * k
    return count[1], count[-1], count[0]


def by_roots(M: sp.Matrix) -> tuple[int, int, int]:
    """Independent count: SymPy's explicit roots of the characteristic polynomial, with multiplicity."""
    x = sp.Symbol("x")
    roots = sp.roots(sp.Poly(M.charpoly(x).as_expr(), x), multiple=True)
    assert len(roots) == M.rows
    re = [sp.re(r) for r in roots]
    return sum(1 for v in re if v > 0), sum(1 for v in re if v < 0), sum(1 for v in re if v == 0)


def unimodular(seed: int, n: int) -> sp.Matrix:
    """An integer matrix of determinant 1 (product of unit triangular ones) and its integral inverse."""
    rng = np.random.default_rng(seed)
    L = sp.Matrix(n, n, lambda i, j: 1 if i == j else (int(rng.integers(-2, 3)) if i > j else 0))
    U = sp.Matrix(n, n, lambda i, j: 1 if i == j else (int(rng.integers(-2, 3)) if i < j else 0))
    return L * U


def conjugated(blocks: list[tuple[str, int]], seed: int) -> sp.Matrix:
    J = sp.diag(*[real_jordan_block(e, k) for e, k in blocks])
    S = unimodular(seed, J.rows)
    return S * J * S.inv()


def assert_inertia(M: sp.Matrix, want: tuple[int, int, int]) -> None:
    assert spectrum.exact_inertia(M) == want
    assert inertia_by_cauchy_index(M) == want
    cert = spectrum.inertia_certificate(M)
    assert cert is not None and tuple(cert.data["inertia"]) == want
    assert core.recheck(cert.to_json())
    n = M.rows
    for p in range(n + 1):  # every other triple summing to n is refused
        for q in range(n + 1 - p):
            if (p, q, n - p - q) != want:
                forged = json.loads(json.dumps(cert.to_json()))
                forged["data"]["inertia"] = [p, q, n - p - q]
                assert not core.recheck(forged), (p, q)


block = st.tuples(st.sampled_from(sorted(EIGEN)), st.integers(1, 3))


@st.composite
def jordan_structures(draw):
    blocks = draw(st.lists(block, min_size=1, max_size=5))
    size = sum(EIGEN[e][1].rows * k for e, k in blocks)
    if size > 8:
        blocks = blocks[:1]
    return blocks


@settings(max_examples=60, deadline=None)
@given(jordan_structures(), st.integers(0, 2**31 - 1))
def test_inertia_of_conjugated_real_jordan_forms(blocks, seed):
    M = conjugated(blocks, seed)
    want = expected(blocks)
    assert by_roots(M) == want  # the two oracles agree
    assert spectrum.exact_inertia(M) == want
    assert inertia_by_cauchy_index(M) == want


def partitions(m: int, largest: int | None = None):
    largest = m if largest is None else largest
    if m == 0:
        yield []
        return
    for k in range(min(m, largest), 0, -1):
        for rest in partitions(m - k, k):
            yield [k, *rest]


ZERO_STRUCTURES = [p for m in range(1, 7) for p in partitions(m)]
COMPANIONS = [[], [("-1", 1)], [("1", 1)], [("+-i", 1)], [("1+-i", 1)]]


@pytest.mark.parametrize("zero", ZERO_STRUCTURES, ids=lambda p: "J0" + "+".join(map(str, p)))
def test_every_jordan_structure_of_zero_up_to_six(zero):
    for c, companion in enumerate(COMPANIONS):
        blocks = [("0", k) for k in zero] + companion
        if sum(EIGEN[e][1].rows * k for e, k in blocks) > 8:
            continue
        M = conjugated(blocks, seed=len(zero) * 10 + c)
        want = expected(blocks)
        assert spectrum.exact_inertia(M) == want
        assert inertia_by_cauchy_index(M) == want


@pytest.mark.parametrize("M, want", [
    (sp.zeros(3, 3), (0, 0, 3)),
    (real_jordan_block("0", 3), (0, 0, 3)),
    (sp.diag(0, 0, -1), (0, 1, 2)),
    (real_jordan_block("0", 4), (0, 0, 4)),
    (sp.diag(real_jordan_block("+-i", 2), real_jordan_block("0", 2)), (0, 0, 6)),
])
def test_the_reported_false_inertias(M, want):
    """The cases of the issue: the old rectangle count gave (1, 1, 1) for the first two."""
    assert_inertia(M, want)


def test_old_false_certificate_is_refused():
    """A certificate as the old producer wrote it for the 3x3 zero matrix must not re-check."""
    forged = {"kind": "spectrum_inertia", "claim": "J has 1 eigenvalues with Re > 0",
              "checker": "exact-charpoly-sturm", "data": {"J": core.encode(sp.zeros(3, 3)), "inertia": [1, 1, 1]}}
    assert not core.recheck(forged)


def test_detectability_of_a_nilpotent_unobservable_part():
    """(H, A) with A = J_2(0) (+) [-1] and H seeing only the stable state: the unobservable subspace is
    the J_2(0) block, with inertia (0, 0, 2): not detectable. The checker re-derives it with flint."""
    A = sp.diag(real_jordan_block("0", 2), sp.Matrix([[-1]]))
    Q = sp.diag(0, 0, 1)
    cert = spectrum.detectability_certificate(A, Q)
    assert cert is not None and cert.data["dimension"] == 2 and cert.data["inertia"] == [0, 0, 2]
    assert cert.data["detectable"] is False and core.recheck(cert.to_json())
    forged = json.loads(json.dumps(cert.to_json()))
    forged["data"].update(detectable=True, inertia=[0, 2, 0])
    assert not core.recheck(forged)
    seen = spectrum.detectability_certificate(A, sp.diag(1, 0, 0))  # sees the chain's top: detectable
    assert seen is not None and seen.data["dimension"] == 1 and seen.data["detectable"] is True
    assert core.recheck(seen.to_json())


def test_nilpotent_A_is_not_certified_unstable(tmp_path):
    """verify gaussian with A = J_3(0): no hypothesis "A has an eigenvalue with Re > 0" may hold, and
    the unstable count of A = 0 is 0 (issue 33: both were certified, and re-checked)."""
    A = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    k, cert = spectrum.unstable_count(np.zeros((3, 3)))
    assert k == 0 and cert is not None and cert.data["inertia"] == [0, 0, 3]
    k, cert = spectrum.unstable_count(A)
    assert k == 0 and cert.data["inertia"] == [0, 0, 3]
    params = {"A": A.tolist(), "B": (0.1 * np.eye(3)).tolist(), "V": (0.1 * np.eye(3)).tolist(),
              "b": [0.0] * 3, "mu0": [0.0] * 3, "Sigma0": np.eye(3).tolist(), "t_end": 1.0}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(params))
    out = subprocess.run([sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(f), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for t in doc["theorems"]:
        for h in t["hypotheses"]:
            cert = h.get("certificate") or {}
            if cert.get("kind") in ("spectrum_inertia", "unstable_count"):
                data = cert["data"]
                got = data.get("inertia") or [data.get("count"), None, None]
                assert got[0] == 0, (t["id"], h["name"], got)
            if "Re" in h["name"] and ">" in h["name"] and "A" in h["name"]:
                assert h["status"] != "holds", (t["id"], h["name"])
