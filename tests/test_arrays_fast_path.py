"""The float fast path of flowcert.arrays (a JSON matrix of floats/ints read in one pass) must give
exactly what the general leaf-by-leaf path gives, and leave every other input to it (booleans,
nulls, strings, ragged rows, integers beyond float64: the same error, naming the entry)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcert import arrays
from flowcert.errors import ParamError

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

leaf = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(-2**60, 2**60))
odd = st.sampled_from([True, False, None, "1.0", 10**400, float("nan"), [1.0]])


def _both(value, shape=(None, None)):
    out = []
    for fast in (True, False):
        saved = arrays._float_rows
        if not fast:
            arrays._float_rows = lambda v: None  # the general path alone
        try:
            out.append(("ok", arrays.as_matrix(value, "M", shape)))
        except ParamError as exc:
            out.append(("error", str(exc)))
        finally:
            arrays._float_rows = saved
    return out


@SETTINGS
@given(st.integers(1, 5), st.integers(0, 5), st.data())
def test_fast_path_equals_the_general_path(rows: int, cols: int, data) -> None:
    value = [[data.draw(leaf) for _ in range(cols)] for _ in range(rows)]
    if cols and data.draw(st.booleans()):  # one hostile entry somewhere
        value[data.draw(st.integers(0, rows - 1))][data.draw(st.integers(0, cols - 1))] = data.draw(odd)
    if rows > 1 and data.draw(st.booleans()):  # or a ragged row
        value[-1] = value[-1] + [1.0]
    (k1, v1), (k2, v2) = _both(value)
    assert k1 == k2
    if k1 == "ok":
        assert v1.dtype == v2.dtype == np.float64 and v1.shape == v2.shape and np.array_equal(v1, v2)
        assert not v1.flags.writeable
    else:
        assert v1 == v2


def test_fast_path_takes_a_plain_matrix_and_refuses_a_boolean() -> None:
    assert arrays._float_rows([[1.0, 2], [3, 4.5]]) is not None
    assert arrays._float_rows([[1.0, True]]) is None
    with pytest.raises(ParamError, match="boolean"):
        arrays.as_matrix([[1.0, True]], "M")
    with pytest.raises(ParamError, match="shape"):
        arrays.as_matrix([[1.0, 2.0]], "M", (2, 2))
