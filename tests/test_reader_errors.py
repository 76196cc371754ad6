"""Errors on the right key (issue 47, item 7): a shape error names the key that is wrong, an rnn size
error says which size, a NaN says where, a precision note comes once per call (none when the call
raises), and the first rnn call shows none of torch's ``torch.jit.script`` deprecation notes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import flowcert
from flowcert.errors import ParamError, PrecisionWarning

torch.set_num_threads(1)

RNG = np.random.default_rng(0)


def _error(system: str, params: object, **kw: object) -> ParamError:
    with pytest.raises(ParamError) as info:
        flowcert.verify(system, params, **kw)
    return info.value


@pytest.mark.parametrize("q_rows, k_rows, wrong", [(2, 3, "Q"), (3, 2, "K"), (1, 2, "Q")])
def test_a_q_or_k_of_the_wrong_shape_names_itself(q_rows: int, k_rows: int, wrong: str) -> None:
    d = 3
    params = {"Q": RNG.normal(size=(q_rows, d)), "K": RNG.normal(size=(k_rows, d)), "V": np.eye(d)}
    err = _error("attention", params)
    assert err.key == wrong
    assert str((q_rows if wrong == "Q" else k_rows, d)) in str(err)  # the shape given


def test_a_head_in_a_list_names_its_index() -> None:
    err = _error("attention", {"heads": [{"Q": np.ones((2, 2)), "K": np.ones((2, 2)), "V": np.eye(2)},
                                         {"Q": np.ones((1, 2)), "K": np.ones((2, 2)), "V": np.eye(2)}]})
    assert err.key == "heads[1].Q"


X = RNG.normal(size=(2, 4, 3))


class _Plain(torch.nn.Module):
    """A cell with no input_size / hidden_size attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.W = torch.nn.Linear(3, 4)
        self.U = torch.nn.Linear(4, 4, bias=False)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.W(x) + self.U(h))


@pytest.mark.parametrize("cell, kw, key, sizes", [
    (lambda: torch.nn.GRUCell(3, 4), {"inputs": RNG.normal(size=(2, 4, 5))}, "inputs", ("3", "5")),
    (lambda: torch.nn.RNNCell(3, 4), {"inputs": X, "h0": np.zeros((2, 6))}, "h0", ("4", "6")),
    (lambda: torch.nn.LSTMCell(3, 4), {"inputs": X, "h0": (np.zeros((2, 4)), np.zeros((2, 5)))}, "h0[1]", ("4", "5")),
    (_Plain, {"inputs": X, "h0": np.zeros((2, 6))}, "h0", ("4", "6")),
])
def test_rnn_size_errors_say_which_size(cell: object, kw: dict, key: str, sizes: tuple[str, str]) -> None:
    err = _error("rnn", cell(), **kw)
    assert err.key == key
    assert "fails" not in str(err)
    assert all(f"= {n}" in str(err) for n in sizes)


def test_nan_in_rnn_inputs_gives_its_index() -> None:
    x = X.copy()
    x[1, 2, 0] = np.nan
    err = _error("rnn", torch.nn.GRUCell(3, 4), inputs=x)
    assert err.key == "inputs" and "[1][2][0]" in str(err) and "NaN" in str(err)


GAUSSIAN = {"A": [[-1.0, 0.0], [0.0, -1.0]], "B": [[0.0, 0.0], [0.0, 0.0]], "V": [[1.0, 0.0], [0.0, 1.0]],
            "b": [0.0, 0.0], "mu0": [1.0, 0.0], "Sigma0": [[1.0, 0.0], [0.0, 1.0]]}


def _notes(seen: list) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, PrecisionWarning)]


def test_precision_warning_once_per_call_naming_every_key() -> None:
    raw = {k: np.asarray(v, dtype=np.float32) for k, v in GAUSSIAN.items()}
    for _ in range(2):  # a second call warns again: once per call, not once per process
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            flowcert.verify("gaussian", raw)
        notes = _notes(seen)
        assert len(notes) == 1
        assert notes[0].split(":")[0].split(", ") == list(GAUSSIAN)
        assert [w.filename for w in seen if issubclass(w.category, PrecisionWarning)] == [__file__]


def test_no_precision_warning_on_a_call_that_raises() -> None:
    raw = {k: np.asarray(v, dtype=np.float32) for k, v in GAUSSIAN.items()}
    raw["Sigma0"] = np.asarray([[1.0, 2.0], [0.0, 1.0]], dtype=np.float32)  # not symmetric
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ParamError):
            flowcert.verify("gaussian", raw)
    assert _notes(seen) == []


def test_first_rnn_call_shows_no_jit_script_deprecation() -> None:
    import subprocess
    import sys

    code = ("import warnings, numpy as np, torch, flowcert\n"
            "torch.set_num_threads(1)\n"
            "warnings.simplefilter('always')\n"
            "flowcert.verify('rnn', torch.nn.GRUCell(2, 3), inputs=np.ones((1, 3, 2)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert "jit.script" not in out.stderr
