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
    B           yes       d x d matrix; entries numbers or strings in t; or factored (below)
    V           yes       d x d matrix; entries numbers or strings in t; or factored (below)
    b           yes       length-d vector; entries numbers or strings in t
    mu0         yes       length-d vector of numbers
    Sigma0      yes       d x d matrix of numbers, exactly symmetric, not indefinite
    t_end       no        positive finite number (default 10.0)
    activation  no        "identity" (default) or "relu"

``B`` and ``V`` may be given by their factors, ``{"factors": [L, R], "scale_squared": q}``: the
exact matrix :math:`\sqrt q\,LR` with :math:`L` (d x k) and :math:`R` (k x d) matrices of numbers and
:math:`q>0` a rational (a number or a ``"p/q"`` text; default 1). A pretrained head is
:math:`B=K^\top Q/\sqrt{d_h}` (``{"factors": [K^T, Q], "scale_squared": "1/d_h"}``) and :math:`V=W_OW_V`:
the verdicts then speak of that exact product (decided on the factors), never of a rounded d x d copy,
which the numerical runs alone use.

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
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

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
    check_magnitude,
    check_keys,
    check_not_indefinite,
    check_symmetric,
    nested_shape,
    validate,
)

if TYPE_CHECKING:
    from ..certificates.diagonal import Diagonal
    from ..certificates.lowrank import LowRank


def _gaussian_dims(raw: Mapping[str, object]) -> dict[str, int]:
    # d is the number of rows of Sigma0; every other key must agree with it.
    sigma = raw["Sigma0"]
    if _is_diagonal(sigma):
        n = sigma.n if not isinstance(sigma, dict) else len(sigma["diagonal"]) if isinstance(sigma["diagonal"], list) else 0
        if n == 0:
            raise ParamError("Sigma0", "diagonal must be a non-empty list of numbers")
        _check_images(raw, n)
        return {"d": n}
    shape = nested_shape(sigma, "Sigma0")
    if shape and 0 in shape:
        raise ParamError("Sigma0", "dimension d must be at least 1, got an empty matrix")
    if len(shape) != 2 or shape[0] != shape[1]:
        found = f"a scalar ({show_value(sigma)})" if shape == () else shape_text(shape)
        raise ParamError("Sigma0", f"expected a square d x d matrix, got {found}")
    return {"d": shape[0]}


def _inner(raw: object) -> int:
    """The inner dimension k of a factored matrix's JSON form (its first factor's row length; 0 otherwise)."""
    from ..certificates.lowrank import LowRank, is_factored

    if isinstance(raw, LowRank):
        return raw.inner
    fs = raw.get("factors") if is_factored(raw) else None  # type: ignore[union-attr]
    first = fs[0] if isinstance(fs, (list, tuple)) and fs else None
    if isinstance(first, np.ndarray):
        return int(first.shape[1]) if first.ndim == 2 else 0
    return len(first[0]) if isinstance(first, (list, tuple)) and first and isinstance(first[0], (list, tuple)) else 0


def _check_images(raw: Mapping[str, object], d: int) -> None:
    """Refuse structured parameters whose float images (d x d, for the numerical stages) would not fit in
    memory, before any is allocated (:func:`flowcert.limits.structured_verify_cost`)."""
    from ..limits import COMMAND_BYTES, STRUCTURED_COST_MARGIN, structured_verify_cost

    k = max(_inner(raw.get("B")), _inner(raw.get("V")), 1)
    peak = structured_verify_cost(d, k)[1]
    if STRUCTURED_COST_MARGIN * peak > COMMAND_BYTES:
        raise ParamError("Sigma0", f"d = {d}: the d x d float images of A, B, V, Sigma0 need about {peak / 2**30:.1f} GB "
                                   f"(x {STRUCTURED_COST_MARGIN:g}), more than {COMMAND_BYTES // 2**30} GB "
                                   "(flowcert.limits.structured_verify_cost)")


def _square(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_matrix(raw, key, (dims["d"], dims["d"]), allow_expr=allow_expr)

    return validator


def _square_or_factored(raw: object, key: str, dims: Mapping[str, int]) -> object:
    r"""A d x d matrix (constant or in t), or the factored form ``{"factors": [L, R], "scale_squared": q}``
    of the exact matrix :math:`\sqrt q\,LR` (kept as a :class:`~flowcert.certificates.lowrank.LowRank`)."""
    from ..certificates.lowrank import LowRank, is_factored

    if isinstance(raw, LowRank) or is_factored(raw):
        try:
            N = raw if isinstance(raw, LowRank) else LowRank.from_json(raw)
        except ValueError as exc:
            raise ParamError(key, str(exc)) from None
        if N.shape != (dims["d"], dims["d"]):
            raise ParamError(key, f"factors give a {N.shape[0]} x {N.shape[1]} matrix, expected {dims['d']} x {dims['d']}")
        for which, F in (("L", N.L), ("R", N.R)):
            check_magnitude(F, key, limit=FACTOR_MAGNITUDE,
                            source=f"factor {which}: the product's entries must stay within flowcert.limits.LIMITS['magnitude']")
        return N
    return as_matrix(raw, key, (dims["d"], dims["d"]), allow_expr=True)


def _vector(allow_expr: bool) -> Validator:
    def validator(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_vector(raw, key, dims["d"], allow_expr=allow_expr)

    return validator


def _is_diagonal(raw: object) -> bool:
    from ..certificates.diagonal import Diagonal, is_diagonal_form

    return isinstance(raw, Diagonal) or is_diagonal_form(raw)


#: largest absolute value of an entry of a factor: a product of two factors (k terms) then stays within LIMITS["magnitude"]
FACTOR_MAGNITUDE = 1e70


def _diagonal(raw: object, key: str, dims: Mapping[str, int]) -> object:
    """``{"diagonal": [a_1, ..., a_d]}``: the exact diag(a) (a :class:`~flowcert.certificates.diagonal.Diagonal`)."""
    from ..certificates.diagonal import Diagonal

    try:
        D = Diagonal.from_json(raw)
    except ValueError as exc:
        raise ParamError(key, str(exc)) from None
    if D.n != dims["d"]:
        raise ParamError(key, f"diagonal has {D.n} entries, expected {dims['d']}")
    check_magnitude(np.array([abs(float(int(q.p))) / float(int(q.q)) if abs(int(q.p)) < 2**1000 else float("inf")
                              for q in D.entries]), key)
    return D


def _square_or_diagonal(raw: object, key: str, dims: Mapping[str, int]) -> object:
    """A d x d matrix (constant or in t), or ``{"diagonal": [...]}``."""
    return _diagonal(raw, key, dims) if _is_diagonal(raw) else as_matrix(raw, key, (dims["d"], dims["d"]), allow_expr=True)


def _covariance(raw: object, key: str, dims: Mapping[str, int]) -> object:
    if _is_diagonal(raw):
        D = _diagonal(raw, key, dims)
        if any(a < 0 for a in D.entries):  # type: ignore[attr-defined]
            raise ParamError(key, "not positive semidefinite (a negative diagonal entry); expected a covariance matrix")
        return D
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
        "A": Field(_square_or_diagonal, doc="feed-forward matrix, d x d, constant or in t, or {\"diagonal\": [...]}"),
        "B": Field(_square_or_factored, doc="attention bilinear form, d x d, constant or in t, or factored"),
        "V": Field(_square_or_factored, doc="value matrix, d x d, constant or in t, or factored"),
        "b": Field(_vector(True), doc="feed-forward bias, length d, constant or in t"),
        "mu0": Field(_vector(False), doc="initial mean, length d"),
        "Sigma0": Field(_covariance, doc="initial covariance, d x d, symmetric PSD, or {\"diagonal\": [...]}"),
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

    #: the keys given factored (``{"factors": [L, R], ...}``), with their exact matrices; the field itself then
    #: holds a float image for the numerical runs, never used as exact data
    factored: Mapping[str, LowRank] = field(default_factory=dict, init=False)
    #: the keys given as ``{"diagonal": [...]}`` (A, Sigma0), with their exact matrices (float images in the fields)
    diagonal: Mapping[str, Diagonal] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        from ..certificates.lowrank import LowRank

        from ..certificates.diagonal import Diagonal

        raw = {key: getattr(self, key) for key in GAUSSIAN_SCHEMA.fields}
        factored, diagonal = {}, {}
        for key, value in validate(raw, GAUSSIAN_SCHEMA).items():
            if isinstance(value, LowRank):
                factored[key] = value
                value = value.floats()
                value.setflags(write=False)
            elif isinstance(value, Diagonal):
                diagonal[key] = value
                value = np.diag(np.array(value.floats(), dtype=np.float64))
                value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "factored", factored)
        object.__setattr__(self, "diagonal", diagonal)

    def exact(self, key: str) -> object:
        """The exact form of a matrix parameter: its :class:`~flowcert.certificates.lowrank.LowRank` or
        :class:`~flowcert.certificates.diagonal.Diagonal` when given so (its certificates then carry that
        form), else the float64 array (its entries are the exact values)."""
        return self.factored.get(key) or self.diagonal.get(key) or getattr(self, key)

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
            "A": self.matrix_json("A"),
            "B": self.matrix_json("B"),
            "V": self.matrix_json("V"),
            "b": echo_value(self.b, True),
            "mu0": echo_value(self.mu0, True),
            "Sigma0": self.matrix_json("Sigma0"),
            "t_end": self.t_end,
            "activation": self.activation,
        }

    def matrix_json(self, key: str) -> object:
        """The matrix parameter ``key`` as :meth:`to_json` echoes it: in the form it was given (factored,
        diagonal) or as nested lists (expressions in t as their text)."""
        N = self.factored.get(key) or self.diagonal.get(key)
        return N.to_json() if N is not None else echo_value(getattr(self, key), False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GaussianParams):
            return NotImplemented
        for mine_s, theirs_s in ((self.factored, other.factored), (self.diagonal, other.diagonal)):
            if set(mine_s) != set(theirs_s) or any(not N.same(theirs_s[k]) for k, N in mine_s.items()):
                return False
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
