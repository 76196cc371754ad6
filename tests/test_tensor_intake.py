"""Arrays in from Python: torch tensors and numpy arrays of any float dtype, and one clear error otherwise.

* a float32 tensor / float16 array of dyadic values (exact in every format) gives the same document
  as float64 numpy, with a :class:`~flowcert.errors.PrecisionWarning` naming the key;
* a long double that float64 cannot hold is rounded, and the warning says so;
* wrong shape, complex, boolean, ragged (object) input: one line, a ``ValueError``, naming the key
  with the expected and the received shape or dtype (the former message called a 4x4 tensor a scalar);
* bad keyword values are refused (``simulate="yes"`` was accepted), and Python errors name no flag.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import flowcert
from flowcert.errors import InputError, ParamError, PrecisionWarning, as_python_error

DATA = Path(__file__).parent / "data"
RAW = {"A": [[-1.0, 0.0], [0.0, -1.0]], "B": [[0.5, 0.0], [0.0, 0.5]], "V": [[-0.25, 0.0], [0.0, -0.25]],
       "b": [0.0, 0.0], "mu0": [1.0, 1.0], "Sigma0": [[1.0, 0.0], [0.0, 1.0]]}  # dyadic: exact in float16


def _np(dtype=np.float64):
    return {k: np.asarray(v, dtype=dtype) for k, v in RAW.items()}


@pytest.fixture(scope="module")
def reference():
    return flowcert.verify("gaussian", _np()).to_json()


@pytest.mark.parametrize("convert", [
    lambda v: torch.tensor(v, dtype=torch.float32),
    lambda v: torch.tensor(v, dtype=torch.bfloat16),
    lambda v: np.asarray(v, dtype=np.float16),
    lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True),
])
def test_tensors_and_narrow_floats_give_the_same_document(reference, convert):
    raw = {k: convert(v) for k, v in RAW.items()}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        doc = flowcert.verify("gaussian", raw).to_json()
    assert doc == reference
    notes = [str(w.message) for w in seen if issubclass(w.category, PrecisionWarning)]
    narrow = raw["A"].dtype not in (torch.float64, np.float64)
    assert len(notes) == (1 if narrow else 0)  # one note per call, naming every key converted
    assert all("widened exactly" in n for n in notes)
    assert not narrow or all(k in notes[0].split(":")[0].split(", ") for k in RAW)
    assert all(w.filename == __file__ for w in seen if issubclass(w.category, PrecisionWarning))  # the user's line


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors(reference):
    raw = {k: torch.tensor(v, device="cuda") for k, v in RAW.items()}
    assert flowcert.verify("gaussian", raw).to_json() == reference


def test_long_double_is_rounded_with_a_note():
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is float64 here")
    raw = _np()
    raw["mu0"] = np.array([1, 1], dtype=np.longdouble) + np.longdouble(2) ** -60  # not a float64
    with pytest.warns(PrecisionWarning, match="mu0: .*rounded"):
        res = flowcert.verify("gaussian", raw)
    assert res.params.mu0.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("key, value, fragments", [
    ("A", torch.zeros(4, 4), ["'A'", "(2, 2)", "(4, 4)"]),
    ("A", torch.zeros(2, 2, dtype=torch.complex64), ["'A'", "complex"]),
    ("A", np.zeros((2, 2), dtype=complex), ["'A'", "complex"]),
    ("A", torch.zeros(2, 2, dtype=torch.bool), ["'A'", "boolean"]),
    ("A", np.array([[1.0, 2.0], [3.0]], dtype=object), ["'A'", "object array", "(2,)"]),
    ("mu0", torch.zeros(2, 1), ["'mu0'", "(2,)", "(2, 1)"]),
    ("Sigma0", [[1.0, 0.0], [0.0]], ["'Sigma0'", "not a rectangular", "(1,)"]),
])
def test_bad_arrays_one_line_naming_key_and_shapes(key, value, fragments):
    raw = {**_np(), key: value}
    with pytest.raises(ValueError) as info:
        flowcert.verify("gaussian", raw)
    msg = str(info.value)
    assert isinstance(info.value, ParamError) and "\n" not in msg and "tensor(" not in msg
    for f in fragments:
        assert f in msg


@pytest.mark.parametrize("kwargs, name", [
    ({"simulate": "yes"}, "simulate"), ({"simulate": 1}, "simulate"), ({"progress": "no"}, "progress"),
    ({"seed": 1.5}, "seed"), ({"seed": True}, "seed"), ({"checks": ["nope"]}, "checks"), ({"checks": 3}, "checks"),
    ({"inputs": np.zeros((1, 2, 2))}, "inputs"), ({"assume": ["smooth"]}, "assume"),
])
def test_bad_keywords_are_refused(kwargs, name):
    with pytest.raises(InputError) as info:
        flowcert.verify("gaussian", _np(), **kwargs)
    assert str(info.value).startswith(f"{name}:") and "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_checks_names_are_the_systems():
    for name in ("gaussian", "attention", "rnn"):
        system = flowcert.get_system(name)
        assert system.checks and all(isinstance(v, str) and v for v in system.checks.values())
    res = flowcert.verify("gaussian", _np(), checks=["moments", "particles"])
    assert res.system == "gaussian"


def test_python_errors_name_no_flag():
    err = as_python_error(ParamError(None, "--model: 'x' is not a directory (see --out-dir)"))
    assert str(err) == "model: 'x' is not a directory (see out_dir)" and isinstance(err, ParamError)
    assert str(as_python_error(InputError("--params: bad"))) == "params: bad"
    with pytest.raises(InputError) as info:
        flowcert.pretrained.load_checkpoint("/no/such/folder")
    assert "--" not in str(info.value) and "model" in str(info.value)


def test_mapping_from_a_json_file_matches_tensors(reference, tmp_path):
    """The CLI's file and the tensors are the same parameters."""
    f = tmp_path / "p.json"
    f.write_text(json.dumps(RAW))
    assert flowcert.verify("gaussian", f).to_json() == reference


def test_attention_checks_are_honoured():
    """``checks=["oja"]`` runs Lemma 1's Oja trajectories and nothing else: the basin studies and the
    final run say they were not requested (and name the check that would run them)."""
    import flowcert.attention  # noqa: F401

    path = Path(__file__).parent / "data" / "attention" / "clustering_d3.json"
    doc = flowcert.verify("attention", path, checks=["oja"]).to_json()
    cross = {t["id"]: t["cross_check"] for t in doc["theorems"]}
    assert cross["multistability:lemma-1"]["status"] in ("agrees", "disagrees")
    for entry in ("multistability:thm-1", "multistability:thm-2", "multistability:lemma-5"):
        assert cross[entry]["status"] == "skipped" and "'basins'" in cross[entry]["details"]["reason"]
    assert "not requested" in doc["simulation"]["skipped"] and doc["simulation"]["agrees"] is None
    everything = flowcert.verify("attention", path, simulate=True).to_json()
    assert everything["simulation"].get("skipped") is None
    assert "not requested" not in json.dumps(everything["theorems"])
