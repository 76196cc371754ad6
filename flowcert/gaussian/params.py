r"""Parameters of the ``gaussian`` system (gaussian paper, eq. (7): :math:`A,B,V,b` and :math:`(\mu_0,\Sigma_0)`).

A parameter file is JSON (an object at the top level) or ``.npz`` (one array per key,
0-d arrays read as scalars). Matrices are nested lists of numbers, row-major; vectors are
flat lists. Nothing is silently coerced: a scalar where a vector is expected, a ``(d, 1)``
column where a ``(d,)`` vector is expected, a boolean where a number is expected, an
asymmetric covariance -- each is an error that names the key and says what was expected.

Schema of the ``gaussian`` system (``d`` is the number of rows of ``Sigma0``)::

    key         required  value
    ----------  --------  ----------------------------------------------------------
    A           yes       d x d matrix; entries numbers or strings in t
    B           yes       d x d matrix; entries numbers or strings in t
    V           yes       d x d matrix; entries numbers or strings in t
    b           yes       length-d vector; entries numbers or strings in t
    mu0         yes       length-d vector of numbers
    Sigma0      yes       d x d matrix of numbers, exactly symmetric, not indefinite
    t_end       no        positive finite number (default 10.0)
    activation  no        "identity" (default) or "relu"

All numbers must be finite (JSON ``NaN``/``Infinity`` are read and then rejected) and
``d >= 1``. If any entry of ``A``, ``B``, ``V`` or ``b`` is a string, that parameter is
time-varying: its entries become SymPy expressions in the real symbol :data:`t` (SymPy
syntax; only ``t``, ``pi``, ``E`` and elementary functions may appear; ``^`` means power),
and its numeric entries are kept exactly (``sympy.Float`` / ``sympy.Integer``).

Every problem raises :class:`ParamError`, whose ``str`` is one line, e.g.
``params: key 'A': expected shape (2, 2), got (2, 3)``.

Other systems are added by writing a :class:`Schema` (a table ``key -> Field``) from the
reusable validators :func:`as_matrix`, :func:`as_vector`, :func:`as_positive_float`,
:func:`as_choice`, :func:`check_finite`, :func:`check_symmetric` and
:func:`check_not_indefinite`, and validating with :func:`validate`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sympy as sp

from ..arrays import as_matrix, as_vector
from ..expressions import compile_matrix, echo_value
from ..files import load_file
from ..schema import (
    PROVENANCE_KEY,
    Field,
    ParamError,
    Schema,
    Validator,
    Value,
    shape_text,
    show_value,
    as_choice,
    as_positive_float,
    check_keys,
    check_not_indefinite,
    check_symmetric,
    nested_shape,
    validate,
)


def _gaussian_dims(raw: Mapping[str, object]) -> dict[str, int]:
    # d is the number of rows of Sigma0; every other key must agree with it.
    sigma = raw["Sigma0"]
    shape = nested_shape(sigma, "Sigma0")
    if shape and 0 in shape:
        raise ParamError("Sigma0", "dimension d must be at least 1, got an empty matrix")
    if len(shape) != 2 or shape[0] != shape[1]:
        found = f"a scalar ({show_value(sigma)})" if shape == () else shape_text(shape)
        raise ParamError("Sigma0", f"expected a square d x d matrix, got {found}")
    return {"d": shape[0]}


def _square(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_matrix(raw, key, (dims["d"], dims["d"]), allow_expr=allow_expr)

    return validator


def _vector(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_vector(raw, key, dims["d"], allow_expr=allow_expr)

    return validator


def _covariance(raw: object, key: str, dims: Mapping[str, int]) -> object:
    sigma = as_matrix(raw, key, (dims["d"], dims["d"]))
    assert isinstance(sigma, np.ndarray)
    check_symmetric(sigma, key)
    check_not_indefinite(sigma, key)
    return sigma


GAUSSIAN_ACTIVATIONS = ("identity", "relu")

#: Schema of the ``gaussian`` system (key order = the order messages list them in).
GAUSSIAN_SCHEMA = Schema(
    system="gaussian",
    fields={
        "A": Field(_square(True), doc="feed-forward matrix, d x d, constant or in t"),
        "B": Field(_square(True), doc="attention bilinear form, d x d, constant or in t"),
        "V": Field(_square(True), doc="value matrix, d x d, constant or in t"),
        "b": Field(_vector(True), doc="feed-forward bias, length d, constant or in t"),
        "mu0": Field(_vector(False), doc="initial mean, length d"),
        "Sigma0": Field(_covariance, doc="initial covariance, d x d, symmetric PSD"),
        "t_end": Field(
            lambda raw, key, dims: as_positive_float(raw, key),
            required=False,
            default=10.0,
            doc="final time, > 0",
        ),
        "activation": Field(
            lambda raw, key, dims: as_choice(raw, key, GAUSSIAN_ACTIVATIONS),
            required=False,
            default="identity",
            doc='feed-forward activation: "identity" or "relu"',
        ),
    },
    infer_dims=_gaussian_dims,
)

_TIME_KEYS = ("A", "B", "V", "b")


@dataclass(frozen=True, eq=False)
class GaussianParams:
    """Validated parameters of the ``gaussian`` system.

    Constructing an instance validates it (same rules as :func:`parse_gaussian`), so
    every instance is valid. Constant parameters are read-only float64 arrays;
    time-varying ones (any string entry) are ``sympy.Matrix`` objects in :data:`t`
    (``b`` as a ``d x 1`` column).

    Attributes
    ----------
    A, B, V : numpy.ndarray or sympy.Matrix
        d x d.
    b : numpy.ndarray or sympy.Matrix
        Shape (d,), or a d x 1 ``sympy.Matrix`` when time-varying.
    mu0 : numpy.ndarray
        Shape (d,).
    Sigma0 : numpy.ndarray
        Shape (d, d), exactly symmetric, not clearly indefinite.
    t_end : float
        Final time, default 10.0.
    activation : str
        ``"identity"`` (default) or ``"relu"``.
    """

    A: Value
    B: Value
    V: Value
    b: Value
    mu0: np.ndarray
    Sigma0: np.ndarray
    t_end: float = 10.0
    activation: str = "identity"

    def __post_init__(self) -> None:
        raw = {key: getattr(self, key) for key in GAUSSIAN_SCHEMA.fields}
        for key, value in validate(raw, GAUSSIAN_SCHEMA).items():
            object.__setattr__(self, key, value)

    @property
    def d(self) -> int:
        """State dimension."""
        return int(self.Sigma0.shape[0])

    @property
    def time_varying_keys(self) -> tuple[str, ...]:
        """The keys among A, B, V, b that depend on time (are ``sympy.Matrix``)."""
        return tuple(k for k in _TIME_KEYS if isinstance(getattr(self, k), sp.MatrixBase))

    @property
    def time_varying(self) -> bool:
        """True if any of A, B, V, b is time-varying."""
        return bool(self.time_varying_keys)

    @cached_property
    def _evaluators(self) -> dict[str, Callable[[float], np.ndarray]]:
        return {
            key: compile_matrix(key, getattr(self, key), vector=(key == "b"))
            for key in self.time_varying_keys
        }

    def at(self, time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Numeric ``(A, B, V, b)`` at a time.

        Parameters
        ----------
        time : float
            The time t.

        Returns
        -------
        tuple of numpy.ndarray
            float64 arrays of shapes (d, d), (d, d), (d, d), (d,). Constant parameters
            are returned as the stored read-only arrays.

        Raises
        ------
        ParamError
            If a time-varying entry is not a finite real number at ``time``.
        """
        tau = float(time)
        if not math.isfinite(tau):
            raise ValueError(f"time must be finite, got {time!r}")
        evaluators = self._evaluators
        out = []
        for key in _TIME_KEYS:
            value = getattr(self, key)
            out.append(evaluators[key](tau) if key in evaluators else value)
        return (out[0], out[1], out[2], out[3])

    def to_json(self) -> dict[str, object]:
        """The parameters as understood, as a JSON-ready dict.

        Numbers are nested lists of floats (repr round-trips exactly). In a time-varying
        matrix, integer and float entries are echoed as numbers and every other entry as
        ``str(expr)``; ``parse_gaussian(p.to_json())`` rebuilds ``p`` (a time-varying
        parameter whose entries are all plain numbers comes back constant).
        """
        return {
            "A": echo_value(self.A, False),
            "B": echo_value(self.B, False),
            "V": echo_value(self.V, False),
            "b": echo_value(self.b, True),
            "mu0": echo_value(self.mu0, True),
            "Sigma0": echo_value(self.Sigma0, False),
            "t_end": self.t_end,
            "activation": self.activation,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GaussianParams):
            return NotImplemented
        for key in GAUSSIAN_SCHEMA.fields:
            mine, theirs = getattr(self, key), getattr(other, key)
            if isinstance(mine, np.ndarray) or isinstance(theirs, np.ndarray):
                if not (
                    isinstance(mine, np.ndarray)
                    and isinstance(theirs, np.ndarray)
                    and np.array_equal(mine, theirs)
                ):
                    return False
            elif mine != theirs:
                return False
        return True


def parse_gaussian(raw: Mapping[str, object]) -> GaussianParams:
    """Validate a raw mapping as ``gaussian`` parameters.

    Parameters
    ----------
    raw : Mapping
        As returned by :func:`load_file`, or a dict built in code.

    Returns
    -------
    GaussianParams

    Raises
    ------
    ParamError
        The first problem, naming the key (see the module docstring for the schema).
    """
    check_keys(raw, GAUSSIAN_SCHEMA)
    given = {k: v for k, v in raw.items() if k != PROVENANCE_KEY}  # provenance: checked, never used
    return GaussianParams(**given)  # type: ignore[arg-type]  # __post_init__ validates


def load_gaussian(path: str | os.PathLike[str]) -> GaussianParams:
    """Read and validate a ``gaussian`` parameter file.

    Errors about keys name the file too: ``params: file 'p.json': key 'A': ...``.
    """
    raw = load_file(path)
    try:
        return parse_gaussian(raw)
    except ParamError as err:
        raise err.with_file(os.fspath(path)) from None
