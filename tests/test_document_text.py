"""The document writer (``documents.indented``, ``documents.plain``) and the encoded-matrix fast paths
(``forms.Encoded``, the memoised ``core.encode``) write exactly what the reference functions write."""

from __future__ import annotations

import json
import math

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert import documents
from flowcert.certificates import core, forms, subjects

_scalars = (st.none() | st.booleans() | st.integers(-10**30, 10**30)
            | st.floats(allow_nan=False, allow_infinity=False, width=64) | st.text(max_size=8))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=5), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_indented_is_json_dumps_indent_1_byte_for_byte(value) -> None:
    assert documents.indented(value) == json.dumps(value, indent=1, allow_nan=False)


@pytest.mark.parametrize("bad", [[1.0, math.inf], [math.nan], {"a": [2.0, -math.inf]}])
def test_indented_refuses_non_finite_floats_as_json_does(bad) -> None:
    with pytest.raises(ValueError):
        json.dumps(bad, indent=1, allow_nan=False)
    with pytest.raises(ValueError):
        documents.indented(bad)


def test_plain_writes_non_finite_floats_as_null() -> None:
    doc = {"a": [1.0, math.inf, -math.inf, math.nan], "b": np.array([np.nan, 2.0]), "c": np.float64(np.inf)}
    assert documents.plain(doc) == {"a": [1.0, None, None, None], "b": [None, 2.0], "c": None}


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e300]))
def test_encode_of_a_large_float_matrix_is_the_exact_rationals_and_canonical(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(70, 70)) * scale  # 4,900 entries: the memoised path
    F[0, 0] = 0.0
    want = [[str(flint.fmpq(*x.as_integer_ratio())) for x in row] for row in F.tolist()]
    got = core.encode(F)
    assert got == want and isinstance(got, forms.Encoded)
    again = core.encode(F.copy())
    again[0][0] = "1/3"  # a copy: the memo is not shared with callers
    assert core.encode(F) == want
    # an exact matrix of these floats is encoded the same way, and so is its negative
    assert core.encode(core.qmat(F)) == want
    assert core.encode(-core.qmat(F)) == [[str(-flint.fmpq(*x.as_integer_ratio())) for x in row] for row in F.tolist()]
    # the subject digest of the encoded rows is the digest of the float rows (one canonical text)
    assert subjects.subject_digest({"M": got}) == subjects.subject_digest({"M": F.tolist()})


def test_encode_of_an_exact_matrix_that_no_float_holds() -> None:
    Q = flint.fmpq_mat(64, 64, [flint.fmpq(1, 3 + (i % 5)) for i in range(64 * 64)])
    assert core.encode(Q) == [[str(flint.fmpq(1, 3 + ((r * 64 + c) % 5))) for c in range(64)] for r in range(64)]


def test_memoised_float_matrix_follows_a_change_in_place() -> None:
    rng = np.random.default_rng(7)
    F = rng.normal(size=(80, 80))
    first = core.encode(F)
    Q = core.qmat(F)
    F[3, 4] = 0.5
    assert core.encode(F)[3][4] == "1/2" and first[3][4] != "1/2"
    assert core.qmat(F)[3, 4] == flint.fmpq(1, 2) and Q[3, 4] != flint.fmpq(1, 2)
