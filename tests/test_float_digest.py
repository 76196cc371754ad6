"""The float form of large subjects in certificate digests (``subjects.subject_digest``) and the numpy
texts of float matrices (``forms.float_texts``).

A subject digest must be a function of the exact value alone: the producer hashes what it encoded, the
checker what it re-derived from a document, in whatever form each holds it. These tests compare every
form against each other and against a digest written out here from its definition (SHA-256 of the
floats' little-endian bytes), and ``float_texts`` against ``float.as_integer_ratio`` entry by entry.
"""

from __future__ import annotations

import copy
import hashlib
import json
from fractions import Fraction

import flint
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from flowcert.certificates import core, forms, subjects

N = 64  # N * N = 4096 = forms.LARGE: the smallest square matrix that takes the float form


def _by_definition(F: np.ndarray) -> str:
    inner = json.dumps({"float64": list(F.shape), "sha256": hashlib.sha256((F + 0.0).astype("<f8").tobytes()).hexdigest()},
                       separators=(",", ":"))
    return "sha256:" + hashlib.sha256(('{"M":' + inner + "}").encode()).hexdigest()


def _matrix(seed: int) -> np.ndarray:
    F = np.random.default_rng(seed).standard_normal((N, N))
    F[0, :4] = [0.0, -0.0, 5e-324, 2.0**70]  # zeros of both signs, a subnormal, a large power of two
    return F


def test_every_form_of_one_exact_value_has_one_digest() -> None:
    F = _matrix(0)
    texts = [[forms.float_text(x) for x in r] for r in F.tolist()]
    forms_of_F = [F, F.tolist(), core.encode(F), texts, json.loads(json.dumps(texts)), core.qmat(F), -(-core.qmat(F))]
    digests = {subjects.subject_digest({"M": v}) for v in forms_of_F}
    assert digests == {_by_definition(F)}
    assert subjects.subject_digest({"M": F}, legacy=True) != _by_definition(F)  # the float form is in use
    assert {subjects.subject_digest({"M": v}, legacy=True) for v in forms_of_F[1:]} == \
        {subjects.subject_digest({"M": F.tolist()}, legacy=True)}


def test_one_ulp_changes_the_digest_and_negative_zero_does_not() -> None:
    F = _matrix(1)
    G = F.copy()
    G[5, 7] = np.nextafter(G[5, 7], np.inf)
    Z = F.copy()
    Z[0, 0] = -0.0
    assert subjects.subject_digest({"M": G}) != subjects.subject_digest({"M": F})
    assert subjects.subject_digest({"M": Z}) == subjects.subject_digest({"M": F})


def test_values_that_are_not_floats_keep_the_text_form() -> None:
    third = flint.fmpq_mat(N, N, [flint.fmpq(1, 3)] * (N * N))  # 1/3 is no float
    small = np.ones((N - 1, N - 1))  # below forms.LARGE
    ints = [[1] * N for _ in range(N)]  # ints: exactly floats, in any form
    assert subjects.subject_digest({"M": third}) == subjects.subject_digest({"M": third}, legacy=True)
    assert subjects.subject_digest({"M": small}) == subjects.subject_digest({"M": small}, legacy=True)
    assert subjects.subject_digest({"M": ints}) == subjects.subject_digest({"M": np.ones((N, N))}) == \
        _by_definition(np.ones((N, N)))


_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=12), elements=_floats))
def test_float_texts_are_the_exact_ratios(F: np.ndarray) -> None:
    got = forms.float_texts(F)
    assert got == [[forms.float_text(x) for x in r] for r in F.tolist()]
    assert all(Fraction(t) == Fraction(x) for rt, rx in zip(got, F.tolist()) for t, x in zip(rt, rx))


def test_recheck_accepts_a_digest_written_in_the_text_form(tmp_path) -> None:
    """A document written before the float form (its digests over the ``"p/q"`` texts) still re-checks,
    and a digest that is neither form is refused."""
    from flowcert.documents import plain, verify_document
    from flowcert.recheck import recheck_document

    rng = np.random.default_rng(3)
    A = -np.eye(N) + 0.01 * rng.standard_normal((N, N))
    params = {"A": A.tolist(), "B": np.eye(N).tolist(), "V": (-np.eye(N)).tolist(), "b": [0.0] * N,
              "mu0": [0.0] * N, "Sigma0": np.eye(N).tolist(), "t_end": 1.0}
    doc = plain(verify_document("gaussian", params))
    assert recheck_document(doc).rechecked

    def legacy(cert: dict) -> str:
        from flowcert.bindings import DERIVED
        from flowcert.recheck_certificate import _encoded, resolver

        resolve = resolver(doc, DERIVED.get("gaussian"))
        return subjects.subject_digest({k: _encoded(subjects.evaluate(e, resolve)) for k, e in cert["subject"].items()},
                                       legacy=True)

    old, changed = copy.deepcopy(doc), 0
    for t in old["theorems"]:
        for h in t["hypotheses"]:
            c = h.get("certificate")
            if c and c.get("digest") and c.get("subject") and not any(e in _computed() for e in c["subject"].values()):
                before, c["digest"] = c["digest"], legacy(c)
                changed += before != c["digest"]
    assert changed > 0  # some subjects are large float matrices
    check = recheck_document(old)
    assert check.rechecked and check.bound == recheck_document(doc).bound
    bad = copy.deepcopy(old)
    cert = next(h["certificate"] for t in bad["theorems"] for h in t["hypotheses"]
                if h.get("certificate") and h["certificate"].get("digest"))
    cert["digest"] = "sha256:" + "0" * 64
    assert recheck_document(bad).refused


def _computed() -> set[str]:
    from flowcert.bindings import COMPUTED

    return set(COMPUTED)


def test_a_remembered_float_image_is_never_given_to_a_changed_matrix() -> None:
    """``qmat`` of floats remembers their image (``forms.remember_image``): a matrix changed in place
    afterwards gets the image of what it now is, or none."""
    F = _matrix(4)
    Q = core.qmat(F)
    assert np.array_equal(forms.float_image(Q), F)
    Q[3, 3] = flint.fmpq(1, 3)  # no float
    assert forms.float_image(Q) is None
    Q[3, 3] = flint.fmpq(1, 4)
    G = F.copy()
    G[3, 3] = 0.25
    assert np.array_equal(forms.float_image(Q), G)
    S = core.qmat(np.round(F * 8) / 16) * 2  # exactly floats; found by the slow path, then remembered
    got = forms.float_image(S)
    assert got is not None and all(Fraction(g) == Fraction(int(S[i, j].p), int(S[i, j].q))
                                   for i, row in enumerate(got.tolist()) for j, g in enumerate(row))
    assert np.array_equal(forms.float_image(S), got)
    S[0, 1] = flint.fmpq(1, 3)
    assert forms.float_image(S) is None


def test_texts_of_an_exact_matrix_read_back_by_content() -> None:
    """``encode`` of a large matrix that is no float matrix remembers its texts' matrix (by content): the
    checker reading them back gets that matrix, and a changed copy of the texts gets its own."""
    Q = flint.fmpq_mat(N, N, [flint.fmpq(i % 7 - 3, 3 + i % 5) for i in range(N * N)])
    texts = core.encode(Q)
    assert core.qmat(texts) == Q and core.qmat(json.loads(json.dumps(texts))) == Q
    other = [list(r) for r in texts]
    other[2][9] = "5/11"
    R = flint.fmpq_mat(Q)
    R[2, 9] = flint.fmpq(5, 11)
    assert core.qmat(other) == R != Q


def test_a_long_vector_has_one_digest_in_every_form() -> None:
    """A vector is one column in every form (``exact_value``): a 1-D array, a flat list and a column list
    of the same floats give the same digest, the float form's."""
    v = np.random.default_rng(5).standard_normal(N * N)
    column = v.reshape(-1, 1)
    digests = {subjects.subject_digest({"M": x}) for x in (v, v.tolist(), column, column.tolist(), core.qmat(column))}
    assert digests == {_by_definition(column)}
