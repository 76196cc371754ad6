"""Tests of flowcert.params: parameter files, their validation and their messages."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.arrays import as_matrix, as_vector
from flowcert.errors import ParamError
from flowcert.expressions import t
from flowcert.files import load_file
from flowcert.gaussian.params import GAUSSIAN_SCHEMA, GaussianParams, load_gaussian, parse_gaussian
from flowcert.schema import as_positive_float, check_finite, check_symmetric

DATA = Path(__file__).parent / "data"
MALFORMED = DATA / "malformed"

ALLOWED = "(allowed: A, B, V, b, mu0, Sigma0, t_end, activation)"

# file name -> substring of the one-line message, written from the specification
MALFORMED_CASES = {
    "unknown_key.json": f"unknown key 'Sigma_0' {ALLOWED}",
    "missing_V.json": "missing required key 'V'",
    "A_wrong_shape.json": "key 'A': expected shape (2, 2), got (2, 3)",
    "B_nan.json": "key 'B': entry [0][1] is NaN",
    "Sigma0_asymmetric.json": "key 'Sigma0': must be symmetric (max |S - S^T| = 1.0e-01)",
    "Sigma0_indefinite.json": (
        "key 'Sigma0': not positive semidefinite (smallest eigenvalue -1.0e-01)"
    ),
    "Sigma0_not_square.json": "key 'Sigma0': expected a square d x d matrix, got (2, 3)",
    "Sigma0_string.json": "key 'Sigma0': entry [0][0] is a string ('1'), expected a number",
    "t_end_negative.json": "key 't_end': must be a positive finite number, got -1",
    "t_end_string.json": "key 't_end': must be a positive finite number, got '10'",
    "A_other_symbol.json": "key 'A': entry [1][0] 'sin(x)' uses symbols other than t",
    "A_parse_error.json": "key 'A': entry [1][1] 'sin(t' is not a valid expression in t",
    "A_power_tower.json": "key 'A': entry [1][1] '9**9**9**9' is not a valid expression in t (the power 9 ** 9 ** 9 is far outside float64)",
    "A_attribute_access.json": "key 'A': entry [0][0] 't.func' is not a valid expression in t",
    "A_singular_at_zero.json": (
        "key 'A': entry [0][0] '1/t' is not a finite real number at t = 0"
    ),
    "B_unknown_function.json": "key 'B': entry [0][0] 'foo(t)' uses unknown function foo",
    "A_ragged.json": "key 'A': not a rectangular nested list",
    "b_column.json": "key 'b': expected shape (2,), got (2, 1)",
    "b_infinite.json": "key 'b': entry [0] is -inf",
    "mu0_scalar.json": "key 'mu0': expected shape (2,), got a scalar (0)",
    "mu0_wrong_length.json": "key 'mu0': expected shape (2,), got (3,)",
    "mu0_null.json": "key 'mu0': entry [1] is null, expected a number",
    "V_boolean.json": "key 'V': entry [0][0] is a boolean (true), expected a number",
    "activation_unknown.json": (
        "key 'activation': expected one of 'identity', 'relu', got 'tanh'"
    ),
    "empty_dimension.json": "key 'Sigma0': dimension d must be at least 1",
    "not_json.json": "not_json.json': not valid JSON (line 3 column 5: ",
    "top_level_array.json": "top_level_array.json': top level must be an object",
    "duplicate_key.json": "duplicate_key.json': duplicate key 'A'",
    "params.txt": "params.txt': expected a .json or .npz file",
    "corrupt.npz": "corrupt.npz': not a valid .npz file",
}


def test_every_malformed_file_has_a_case() -> None:
    assert sorted(p.name for p in MALFORMED.iterdir()) == sorted(MALFORMED_CASES)
    assert len(MALFORMED_CASES) >= 10


@pytest.mark.parametrize("name", sorted(MALFORMED_CASES))
def test_malformed_file_is_rejected_with_its_message(name: str) -> None:
    path = MALFORMED / name
    with pytest.raises(ParamError) as info:
        load_gaussian(path)
    message = str(info.value)
    assert MALFORMED_CASES[name] in message
    assert message.startswith("params: ")
    assert "\n" not in message
    assert f"file {str(path)!r}" in message  # load_gaussian names the file
    assert isinstance(info.value, ValueError)


def test_error_attributes_and_plain_format() -> None:
    raw = json.loads((MALFORMED / "Sigma0_asymmetric.json").read_text())
    with pytest.raises(ParamError) as info:
        parse_gaussian(raw)
    err = info.value
    assert err.key == "Sigma0"
    assert err.problem.startswith("must be symmetric (max |S - S^T| = 1.0e-01)")
    assert "(S + S.T)/2" in err.problem
    assert str(err).startswith("params: key 'Sigma0': must be symmetric")
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.key == err.key


def test_unknown_and_missing_keys_name_the_key_once() -> None:
    raw = json.loads((MALFORMED / "unknown_key.json").read_text())
    with pytest.raises(ParamError) as info:
        parse_gaussian(raw)
    assert info.value.key == "Sigma_0"
    assert str(info.value).startswith(f"params: unknown key 'Sigma_0' {ALLOWED}")
    assert "did you mean 'Sigma0'" in str(info.value)
    raw = json.loads((MALFORMED / "missing_V.json").read_text())
    with pytest.raises(ParamError, match=r"^params: missing required key 'V'$"):
        parse_gaussian(raw)


def test_missing_file() -> None:
    with pytest.raises(ParamError, match=r"file 'foo\.json': no such file"):
        load_file("foo.json")
    with pytest.raises(ParamError, match=r"file 'foo\.txt': expected a \.json or \.npz file"):
        load_file("foo.txt")


def test_not_a_mapping() -> None:
    with pytest.raises(ParamError, match="must be an object"):
        parse_gaussian([1, 2])  # type: ignore[arg-type]


# --- .npz files, written per test ----------------------------------------------------------


def _valid_arrays() -> dict[str, np.ndarray]:
    return {
        "A": -np.eye(2),
        "B": np.zeros((2, 2)),
        "V": np.eye(2),
        "b": np.array([0.5, -0.5]),
        "mu0": np.array([1.0, 2.0]),
        "Sigma0": np.array([[2.0, 0.5], [0.5, 1.0]]),
    }


NPZ_CASES = [
    ("column_b", {"b": np.zeros((2, 1))}, "key 'b': expected shape (2,), got (2, 1)"),
    ("scalar_mu0", {"mu0": np.array(1.0)}, "key 'mu0': expected shape (2,), got a scalar"),
    ("bool_A", {"A": np.eye(2, dtype=bool)}, "key 'A': is a boolean array"),
    ("nan_V", {"V": np.array([[1.0, 0.0], [np.nan, 1.0]])}, "key 'V': entry [1][0] is NaN"),
    ("int_t_end", {"t_end": np.array(-3)}, "key 't_end': must be a positive finite number, got -3"),
    (
        "asym_Sigma0",
        {"Sigma0": np.array([[1.0, 0.25], [0.0, 1.0]])},
        "key 'Sigma0': must be symmetric (max |S - S^T| = 2.5e-01)",
    ),
    ("extra", {"W": np.eye(2)}, f"unknown key 'W' {ALLOWED}"),
]


@pytest.mark.parametrize("name,changes,expected", NPZ_CASES, ids=[c[0] for c in NPZ_CASES])
def test_malformed_npz(tmp_path: Path, name: str, changes: dict, expected: str) -> None:
    arrays = {**_valid_arrays(), **changes}
    path = tmp_path / f"{name}.npz"
    np.savez(path, **arrays)
    with pytest.raises(ParamError) as info:
        load_gaussian(path)
    assert expected in str(info.value)


def test_npy_disguised_as_npz(tmp_path: Path) -> None:
    path = tmp_path / "single.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.eye(2))
    with pytest.raises(ParamError, match="not a valid .npz file"):
        load_file(path)


def test_valid_npz_round_trip(tmp_path: Path) -> None:
    arrays = _valid_arrays()
    path = tmp_path / "ok.npz"
    np.savez(path, **arrays, t_end=np.array(3.5), activation=np.array("relu"))
    raw = load_file(path)
    assert raw["t_end"] == 3.5 and isinstance(raw["t_end"], float)
    assert raw["activation"] == "relu"
    p = load_gaussian(path)
    for key, value in arrays.items():
        got = getattr(p, key)
        assert got.dtype == np.float64 and got.shape == value.shape
        np.testing.assert_array_equal(got, value)
    assert (p.t_end, p.activation) == (3.5, "relu")


# --- valid files ---------------------------------------------------------------------------


def test_stable_2d_file() -> None:
    p = load_gaussian(DATA / "gaussian_stable_2d.json")
    assert p.d == 2 and not p.time_varying and p.time_varying_keys == ()
    for key in ("A", "B", "V", "Sigma0"):
        assert getattr(p, key).shape == (2, 2)
        assert getattr(p, key).dtype == np.float64
    assert p.b.shape == (2,) and p.mu0.shape == (2,)
    assert p.t_end == 20.0 and isinstance(p.t_end, float)
    assert p.activation == "identity"
    np.testing.assert_array_equal(p.A, [[-1.0, 0.5], [0.0, -2.0]])
    A, B, V, b = p.at(3.0)
    assert A is p.A and B is p.B and V is p.V and b is p.b
    with pytest.raises(ValueError):
        p.A[0, 0] = 5.0  # frozen: the arrays are read-only


def test_3d_file() -> None:
    p = load_gaussian(DATA / "gaussian_3d.json")
    assert p.d == 3
    assert p.activation == "relu" and p.t_end == 2.5
    assert p.A.shape == (3, 3) and p.b.shape == (3,) and p.mu0.shape == (3,)
    assert p.b.dtype == np.float64  # integer 0 in the file becomes 0.0
    np.testing.assert_array_equal(p.b, [0.0, 0.5, -0.5])
    np.testing.assert_array_equal(p.Sigma0, p.Sigma0.T)


def test_time_varying_file() -> None:
    p = load_gaussian(DATA / "gaussian_time_varying.json")
    assert p.time_varying
    assert p.time_varying_keys == ("A", "B", "b")
    assert isinstance(p.A, sp.MatrixBase) and isinstance(p.V, np.ndarray)
    assert p.A[0, 1] == sp.cos(t)
    assert p.A[1, 1] == sp.Integer(-2) and isinstance(p.A[1, 1], sp.Integer)
    assert isinstance(p.B[0, 0], sp.Float) and float(p.B[0, 0]) == 0.1
    assert p.b.shape == (2, 1)

    for time in (0.0, 0.7, 2.0):
        A, B, V, b = p.at(time)
        assert A.dtype == B.dtype == V.dtype == b.dtype == np.float64
        assert A.shape == (2, 2) and b.shape == (2,)
        # hand-evaluated
        expected_A = [[-1 + 0.5 * math.sin(time), math.cos(time)], [0.0, -2.0]]
        np.testing.assert_allclose(A, expected_A, rtol=0, atol=1e-15)
        np.testing.assert_allclose(B, [[0.1, 0.0], [0.0, 0.1 * math.exp(-time)]], atol=1e-16)
        np.testing.assert_allclose(b, [math.sin(2 * time), 0.25], atol=1e-15)
        np.testing.assert_array_equal(V, [[0.5, 0.0], [0.0, 0.5]])
    A, _, _, b = p.at(0.0)
    assert A[0, 0] == -1.0 and A[0, 1] == 1.0 and b[0] == 0.0

    echoed = p.to_json()
    assert echoed["A"] == [["0.5*sin(t) - 1", "cos(t)"], [0, -2]]
    assert echoed["b"] == ["sin(2*t)", 0.25]
    assert parse_gaussian(json.loads(json.dumps(echoed))) == p


def test_time_varying_numbers_are_kept_exactly() -> None:
    x = 0.12345678901234567
    raw = _raw(2)
    raw["A"] = [[x, "t"], [1e-300, 3]]
    p = parse_gaussian(raw)
    A = p.at(0.5)[0]
    assert A[0, 0] == x and A[1, 0] == 1e-300 and A[0, 1] == 0.5 and A[1, 1] == 3.0
    assert p.to_json()["A"] == [[x, "t"], [1e-300, 3]]


def test_time_varying_value_not_finite_later() -> None:
    raw = _raw(1)
    raw["A"] = [["1/(t - 1)"]]
    p = parse_gaussian(raw)
    assert p.at(0.0)[0][0, 0] == -1.0
    with pytest.raises(ParamError, match=r"key 'A': entry \[0\]\[0\] .* at t = 1.0"):
        p.at(1.0)


def test_power_caret_and_constants() -> None:
    raw = _raw(1)
    raw["b"] = ["t^2 + pi"]
    p = parse_gaussian(raw)
    assert p.at(2.0)[3][0] == pytest.approx(4 + math.pi, abs=0, rel=1e-15)


def test_direct_construction_validates() -> None:
    with pytest.raises(ParamError, match="key 'A': expected shape"):
        GaussianParams(
            A=np.eye(3), B=np.eye(2), V=np.eye(2), b=np.zeros(2), mu0=np.zeros(2),
            Sigma0=np.eye(2),
        )
    p = GaussianParams(
        A=sp.Matrix([[sp.sin(t)]]), B=[[0.0]], V=[[1]], b=[0], mu0=[0], Sigma0=[[1]]
    )
    assert p.time_varying_keys == ("A",)
    assert p.B.dtype == np.float64


def test_sigma0_psd_screen_is_relative() -> None:
    raw = _raw(2)
    raw["Sigma0"] = [[1e6, 0.0], [0.0, -1e-6]]  # -1e-6 > -1e-10 * 1e6: left to certificates
    assert parse_gaussian(raw).Sigma0[1, 1] == -1e-6
    raw["Sigma0"] = [[1.0, 0.0], [0.0, -1e-9]]
    with pytest.raises(ParamError, match="not positive semidefinite"):
        parse_gaussian(raw)


# --- reusable validators ---------------------------------------------------------------------


def test_validators_directly() -> None:
    assert as_matrix([[1, 2]], "M").shape == (1, 2)
    with pytest.raises(ParamError, match="expected a matrix"):
        as_matrix([1, 2], "M")
    assert as_vector([1, 2, 3], "v", 3).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ParamError, match=r"key 'v': expected shape \(3,\), got \(1, 3\)"):
        as_vector([[1, 2, 3]], "v", 3)
    assert as_positive_float(2, "x") == 2.0
    for bad in (True, 0, -0.5, math.inf, math.nan, "1", None, [1]):
        with pytest.raises(ParamError, match="must be a positive finite number"):
            as_positive_float(bad, "x")
    with pytest.raises(ParamError, match=r"entry \[1\] is inf"):
        check_finite(np.array([0.0, np.inf]), "v")
    check_symmetric(np.array([[1.0, 2.0], [2.0, 1.0]]), "S")
    with pytest.raises(ParamError, match="must be symmetric"):
        check_symmetric(np.array([[1.0, 2.0], [2.0 + 1e-16 * 4, 1.0]]), "S")
    with pytest.raises(ParamError, match="too large for float64"):
        as_vector([10**400], "v")


# --- properties --------------------------------------------------------------------------------


def _raw(d: int) -> dict[str, object]:
    eye = np.eye(d).tolist()
    return {
        "A": eye, "B": eye, "V": eye, "b": [0.0] * d, "mu0": [0.0] * d, "Sigma0": eye,
    }


finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def valid_raw(draw: st.DrawFn) -> dict[str, object]:
    d = draw(st.integers(1, 4))
    square = st.lists(st.lists(finite, min_size=d, max_size=d), min_size=d, max_size=d)
    vector = st.lists(finite, min_size=d, max_size=d)
    # a PSD Sigma0 with exact symmetry: diagonal with non-negative entries
    diag = draw(st.lists(st.floats(0, 1e6), min_size=d, max_size=d))
    sigma = [[diag[i] if i == j else 0.0 for j in range(d)] for i in range(d)]
    return {
        "A": draw(square), "B": draw(square), "V": draw(square), "b": draw(vector),
        "mu0": draw(vector), "Sigma0": sigma,
        "t_end": draw(st.floats(1e-6, 1e6)),
        "activation": draw(st.sampled_from(["identity", "relu"])),
    }


@settings(max_examples=60, deadline=None)
@given(valid_raw())
def test_float_matrices_round_trip_through_json(raw: dict[str, object]) -> None:
    p = parse_gaussian(json.loads(json.dumps(raw)))
    for key in ("A", "B", "V", "b", "mu0", "Sigma0"):
        value = getattr(p, key)
        assert value.dtype == np.float64
        np.testing.assert_array_equal(value, np.array(raw[key], dtype=np.float64))
    echoed = p.to_json()
    assert echoed == raw  # floats echo bit for bit (-0.0 == 0.0 aside)
    again = parse_gaussian(json.loads(json.dumps(echoed)))
    assert again == p
    for key in ("A", "b", "Sigma0"):
        assert getattr(again, key).tobytes() == getattr(p, key).tobytes()


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=20), st.sampled_from([1, 2]))
def test_any_extra_key_is_rejected_by_name(extra: str, d: int) -> None:
    if extra in GAUSSIAN_SCHEMA.fields:
        return
    raw = {**_raw(d), extra: 1.0}
    with pytest.raises(ParamError) as info:
        parse_gaussian(raw)
    assert f"unknown key {extra!r}" in str(info.value)
    assert info.value.key == extra
