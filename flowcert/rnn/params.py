"""Parameter files of the ``rnn`` system (schema and loader; reuses :mod:`flowcert.schema`).

Schema (``H`` is the state dimension; for ``hodgkin_huxley`` H = 4N with N neurons)::

    key      required  value
    -------  --------  ------------------------------------------------------------------
    cell     yes       "rnn_tanh" (paper eq. 8, Euler), "relu_rnn" (eq. 8 with ReLU), "torch_rnn", "gru",
                       "hodgkin_huxley", "linear"
    B, T     yes       positive integers: trials and time steps
    H, I     yes       positive integers: state and input dimension
    dt       no        Euler step of rnn_tanh / hodgkin_huxley (default 0.1; ignored otherwise)
    seed     no        non-negative integer (default 0): weights, inputs and readout
    g        no        non-negative number (default 1.0): recurrent gain of the random init
    weights  no        object name -> matrix/vector overriding the random init (names per cell)
    A        no        H x H state matrix of the linear cell (default 0.9 g Q, Q random orthogonal)
    task     no        "memory_pro" (needs I = 3 and T divisible by 3), "flip_flop" (I bits),
                       "line_attractor" (integrate the I inputs), "low_rank_forecast" (next step of a
                       rank-2 rotation in R^I), or "random" (default); see flowcert.gpu.rnn.tasks
    bias     no        eq. 8 cells only: true adds a trained bias b (default false)
    noise    no        eq. 8 cells only: std of the input noise xi_t added to the drive (default 0;
                       one fixed realisation drawn from seed)

Limits (:data:`flowcert.limits.LIMITS`, checked before any work): H <= 256, I <= 1024, g <= 1000,
every weight entry at most 1e150 in absolute value, B*T*H <= 4,000,000, and the predicted cost of the
analysis (:func:`flowcert.limits.kpflow_cost`: CPU seconds and peak bytes, in its cheaper mode) within
``rnn:cpu_seconds`` and ``rnn:bytes``; ``kpflow analyze`` re-checks it with its mode and consensus options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arrays import as_matrix, as_vector
from ..files import load_file
from ..limits import LIMITS, check_kpflow_cost, check_limit
from ..records import JSONObject
from ..schema import Field, ParamError, Schema, as_choice, as_positive_float, check_magnitude, validate
from ..symbolic.rnn import param_shapes

CELL_KINDS = ("rnn_tanh", "relu_rnn", "torch_rnn", "gru", "hodgkin_huxley", "linear")
EQ8 = ("rnn_tanh", "relu_rnn")
TASK_KINDS = ("random", "memory_pro", "flip_flop", "line_attractor", "low_rank_forecast")
MAX_SIZE = int(LIMITS["rnn:B*T*H"])  # a ceiling; below it the cost model decides


def as_positive_int(raw: object, key: str) -> int:
    """A positive integer (JSON integer or numpy integer; booleans and floats are refused).

    Parameters
    ----------
    raw : object
        The raw value read from the file or mapping.
    key : str
        The parameter's key, named in the error.

    Returns
    -------
    int
        ``raw`` as a Python ``int``, at least 1.

    Raises
    ------
    ParamError
        ``raw`` is a boolean, not an integer (``3.0`` included), or less than 1.
    """
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
        raise ParamError(key, f"must be a positive integer, got {raw!r}")
    if int(raw) < 1:
        raise ParamError(key, f"must be a positive integer, got {int(raw)}")
    return int(raw)


def _seed(raw: object, key: str, dims: Mapping[str, int]) -> int:
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)) or int(raw) < 0:
        raise ParamError(key, f"must be a non-negative integer, got {raw!r}")
    check_limit("seed", int(raw), key)
    return int(raw)


def _gain(raw: object, key: str, dims: Mapping[str, int]) -> float:
    if raw == 0 and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return 0.0
    g = as_positive_float(raw, key)
    check_limit("rnn:g", g, key)
    return g


def _dims(raw: Mapping[str, object]) -> dict[str, int]:
    dims = {k: as_positive_int(raw[k], k) for k in ("B", "T", "H", "I")}
    cell = as_choice(raw["cell"], "cell", CELL_KINDS)
    if cell == "hodgkin_huxley" and dims["H"] % 4:
        raise ParamError("H", f"hodgkin_huxley needs H = 4N (state [V; m; n; h]), got {dims['H']}")
    check_limit("rnn:H", dims["H"], "H")
    check_limit("rnn:I", dims["I"], "I")
    # the cost of the plain analysis in its cheaper mode; kpflow analyze re-checks with its options
    check_kpflow_cost(dims["B"], dims["T"], dims["H"], dims["I"], cell, mode=None)
    dims["cell"] = CELL_KINDS.index(cell)
    b = raw.get("bias", False)
    dims["bias"] = int(isinstance(b, (bool, np.bool_)) and bool(b))
    return dims


def _weights(raw: object, key: str, dims: Mapping[str, int]) -> dict[str, np.ndarray]:
    if not isinstance(raw, Mapping):
        raise ParamError(key, "must be an object mapping parameter names to matrices/vectors")
    cell = CELL_KINDS[dims["cell"]]
    allowed = param_shapes(cell, dims["H"], dims["I"], bool(dims["bias"]) and cell in EQ8)
    out = {}
    for name, value in raw.items():
        if name not in allowed:
            raise ParamError(key, f"unknown weight {name!r} for cell {cell!r} (allowed: {', '.join(allowed)})")
        shp = allowed[name]
        sub = f"{key}.{name}"
        out[name] = as_matrix(value, sub, shp) if len(shp) == 2 else as_vector(value, sub, shp[0])
        check_magnitude(out[name], sub)
    return out


def _A(raw: object, key: str, dims: Mapping[str, int]) -> np.ndarray:
    if CELL_KINDS[dims["cell"]] != "linear":
        raise ParamError(key, "only the 'linear' cell takes a state matrix A")
    A = as_matrix(raw, key, (dims["H"], dims["H"]))
    check_magnitude(A, key)
    return A


def _task(raw: object, key: str, dims: Mapping[str, int]) -> str:
    task = as_choice(raw, key, TASK_KINDS)
    if task == "memory_pro":
        if dims["I"] != 3:
            raise ParamError("I", f"task 'memory_pro' has 3 inputs (fixation, cos, sin), got I = {dims['I']}")
        if dims["T"] % 3:
            raise ParamError("T", f"task 'memory_pro' needs T divisible by 3 (stimulus/memory/response), got {dims['T']}")
    return task


def _bias(raw: object, key: str, dims: Mapping[str, int]) -> bool:
    if not isinstance(raw, (bool, np.bool_)):
        raise ParamError(key, f"must be true or false, got {raw!r}")
    if raw and CELL_KINDS[dims["cell"]] not in EQ8:
        raise ParamError(key, f"only the eq. 8 cells ({', '.join(EQ8)}) take a bias option")
    return bool(raw)


def _noise(raw: object, key: str, dims: Mapping[str, int]) -> float:
    v = _gain(raw, key, dims)
    if v and CELL_KINDS[dims["cell"]] not in EQ8:
        raise ParamError(key, f"only the eq. 8 cells ({', '.join(EQ8)}) take a noise option")
    return v


_INT = Field(lambda raw, key, dims: as_positive_int(raw, key))

RNN_SCHEMA = Schema(
    system="rnn",
    fields={
        "cell": Field(lambda raw, key, dims: as_choice(raw, key, CELL_KINDS),
                      doc="cell kind: " + ", ".join(repr(k) for k in CELL_KINDS)),
        "B": Field(_INT.validate, doc="batch size (input sequences)"), "T": Field(_INT.validate, doc="time steps"),
        "H": Field(_INT.validate, doc="hidden size"), "I": Field(_INT.validate, doc="input size"),
        "dt": Field(lambda raw, key, dims: as_positive_float(raw, key), required=False, default=0.1, doc="Euler step"),
        "seed": Field(_seed, required=False, default=0, doc="random seed"),
        "g": Field(_gain, required=False, default=1.0, doc="recurrent gain"),
        "weights": Field(_weights, required=False, default=None, doc="explicit weights"),
        "A": Field(_A, required=False, default=None, doc="state matrix of the linear cell"),
        "task": Field(_task, required=False, default="random", doc="task"),
        "bias": Field(_bias, required=False, default=False, doc="eq. 8 bias"),
        "noise": Field(_noise, required=False, default=0.0, doc="eq. 8 input-noise std"),
    },
    infer_dims=_dims,
)


@dataclass
class RNNParams:
    """Validated ``rnn`` parameters (see the module docstring)."""

    cell: str
    B: int
    T: int
    H: int
    I: int
    dt: float = 0.1
    seed: int = 0
    g: float = 1.0
    weights: dict[str, np.ndarray] | None = None
    A: np.ndarray | None = None
    task: str = "random"
    bias: bool = False
    noise: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        """The parameters as understood (after validation and defaults)."""
        d: JSONObject = {k: getattr(self, k) for k in ("cell", "B", "T", "H", "I", "dt", "seed", "g", "task", "bias", "noise")}
        d["weights"] = None if self.weights is None else {k: v.tolist() for k, v in self.weights.items()}
        d["A"] = None if self.A is None else self.A.tolist()
        return d


def parse_rnn(raw: Mapping[str, object]) -> RNNParams:
    """Validate a raw mapping as ``rnn`` parameters (raises :class:`ParamError`).

    Parameters
    ----------
    raw : mapping
        Key -> raw value, with the keys of the schema (module docstring): ``cell``, ``B``, ``T``,
        ``H``, ``I`` required; ``dt``, ``seed``, ``g``, ``weights``, ``A``, ``task``, ``bias``,
        ``noise`` optional.

    Returns
    -------
    RNNParams
        The validated parameters, defaults filled in.

    Raises
    ------
    ParamError
        A missing, unknown or malformed key, a value outside :data:`flowcert.limits.LIMITS` (sizes,
        gain, weight magnitudes, the predicted cost of the analysis), or an option the cell or task
        does not take; the message names the key.
    """
    return RNNParams(**validate(raw, RNN_SCHEMA))  # type: ignore[arg-type]


def load_rnn(path: str | os.PathLike[str]) -> RNNParams:
    """Read and validate an ``rnn`` parameter file.

    Parameters
    ----------
    path : str or path-like
        A ``.json`` file holding an object, or a ``.npz`` archive (:func:`flowcert.files.load_file`).

    Returns
    -------
    RNNParams
        The validated parameters (:func:`parse_rnn`).

    Raises
    ------
    ParamError
        The file cannot be read or parsed, or its contents are not valid ``rnn`` parameters (as
        :func:`parse_rnn`, with the file named in the message).
    """
    raw = load_file(path)
    try:
        return parse_rnn(raw)
    except ParamError as err:
        raise err.with_file(os.fspath(path)) from None
