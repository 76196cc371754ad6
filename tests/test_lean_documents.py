"""What keeps a real head's documents lean and fast without changing what they say (issue 36):

* ``schema.nested_shape`` finds a matrix's shape without a call per entry, and still names a ragged one;
* a ``sup_norm_bound`` certificate with every head's data needs no extra copy of the largest head (a
  large head drops it), and its checker still checks every head (a head over the bound is refused);
* the document of an exported head references its file instead of copying it.
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.certificates import core
from flowcert.schema import ParamError, nested_shape

_scalar = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.integers(-5, 5) | st.booleans()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(0, 3), st.data())
def test_nested_shape_of_rectangular_and_ragged_lists(rows: int, cols: int, depth: int, data) -> None:
    M = [[data.draw(_scalar) for _ in range(cols)] for _ in range(rows)]
    if depth == 1:  # a third axis
        M = [[[x, x] for x in r] for r in M]
    assert nested_shape(M, "k") == np.array(M, dtype=object if depth == 1 else float).shape[:3 if depth == 1 else 2] \
        if cols else nested_shape(M, "k") == (rows, 0)
    if depth >= 2 and rows > 1:  # one row shorter, or one entry turned into a list: ragged
        bad = [list(r) for r in M]
        if depth == 2:
            bad[-1] = bad[-1] + [0.0]
        else:
            bad[0] = [[1.0]] + bad[0][1:] if cols > 1 else [[1.0], 2.0]
        with pytest.raises(ParamError, match="not a rectangular nested list"):
            nested_shape(bad, "k")


def _sup_bound_with_heads(heads: list[np.ndarray]):
    from flowcert.certificates.attention import bounds
    from flowcert.certificates.attention.head_bounds import head_data

    P = [bounds.ScaledProduct(1.0, h) for h in heads]  # constant heads P = beta K, beta = 1
    res, b = bounds.bounded(P)
    c = res.certificate
    own = {k: v for k, v in c.data.items() if k not in ("constant", "M", "t")}
    return {**c.to_json(), "data": {**own, "heads": [head_data(p) for p in P]}}, b


def test_sup_norm_bound_over_every_head_without_a_top_level_copy() -> None:
    heads = [np.array([[1.0, 0.5], [0.0, 2.0]]), np.array([[0.25, 0.0], [0.0, -0.5]])]
    cert, b = _sup_bound_with_heads(heads)
    assert "constant" not in cert["data"] and "M" not in cert["data"] and len(cert["data"]["heads"]) == 2
    assert core.explain(cert)[0]
    # |P|_F of the first head is sqrt(1 + 0.25 + 4) = 2.29...: a bound below it must be refused
    low = json.loads(json.dumps(cert))
    low["data"]["bound"] = str(Fraction(2))
    assert not core.explain(low)[0]
    # the second head scaled up past the bound: refused although the first head is within it
    big = json.loads(json.dumps(cert))
    big["data"]["heads"][1] = big["data"]["heads"][0] | {}
    big["data"]["heads"][1]["constant"] = dict(big["data"]["heads"][1]["constant"], beta=10.0)
    assert not core.explain(big)[0]
    empty = json.loads(json.dumps(cert))
    empty["data"]["heads"] = []
    assert not core.explain(empty)[0]


def test_a_verify_document_by_reference_names_the_bytes_it_read(tmp_path) -> None:
    from flowcert.documents import params_reference, verify_document

    src = tmp_path / "p.json"
    src.write_text(json.dumps({"A": [[-1.0, 0.0], [0.0, -2.0]], "B": [[1.0, 0.0], [0.0, 1.0]],
                               "V": [[-1.0, 0.0], [0.0, -1.0]], "b": [0.0, 0.0], "mu0": [1.0, 0.0],
                               "Sigma0": [[1.0, 0.0], [0.0, 1.0]], "t_end": 1.0}))
    by_ref = verify_document("gaussian", str(src), reference=True)
    copied = verify_document("gaussian", str(src))
    assert params_reference(by_ref["params"]) == (str(src), hashlib.sha256(src.read_bytes()).hexdigest())
    assert {k: v for k, v in by_ref.items() if k != "params"} == {k: v for k, v in copied.items() if k != "params"}
    assert params_reference(copied["params"]) is None
