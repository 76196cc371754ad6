r"""Parameter files of the ``attention`` system (docs/design.md, "The command line and JSON contract"): one
model for the multistability and consensus papers.

Schema (``d`` from the value matrix; ``n`` from ``X0`` or ``n``)::

    key            value
    -------------  ----------------------------------------------------------------------------
    V, Q, K        one head: d x d matrices (entries numbers or strings in t); instead of Q, K a
                   head may give P = Q^T K directly (the consensus paper's P; read as Q = I, K = P)
    heads          instead of V/Q/K: a list of {"Q", "K", "V"} (or {"P", "V"}) objects, h >= 1
    variant        "self_attention" (default), "oja" (A = I), "multiagent_oja" (A = 1 1^T / n);
                   the Oja variants take V (constant) and n only: no Q, K, P, heads, beta, causal,
                   normalization
    X0             n x d initial tokens, each on the manifold: |x_i^T W x_i - 1| <= 1e-9
    n              number of tokens (>= 1; default: rows of X0, else 10)
    beta           temperature (finite real, default 1): scores beta x_i^T Q^T K x_j
    causal         boolean (default false): lower-triangular attention
    normalization  "unit" (rows of A sum to 1; default) or "sqrt" (rows sum to 1/sqrt(d): the
                   consensus paper's 1/sqrt(n+1), its n+1 being our ambient d)
    W              d x d, exactly symmetric positive definite (exact rational LDL^T); tokens on
                   {y^T W y = 1} (default: the unit sphere)
    t_end          positive horizon (default 20)
    seed           non-negative integer (default 0) for random initial tokens and samples

Every problem raises :class:`flowcert.errors.ParamError` (one line naming the key): unknown
keys, wrong shapes, NaN/inf, a non-symmetric or indefinite ``W``, tokens off the manifold,
mixing ``heads`` with ``V/Q/K``, attention keys for an Oja variant. Properties that are
hypotheses of a theorem (a symmetric ``V`` for Assumption 1, a simple top eigenvalue ...) are not
input errors: the catalogue reports them as failing hypotheses.

Public API
----------
:class:`Head`, :class:`AttentionParams` (``structure``, ``kernel_args(t)``, ``M(eta, t)``,
``initial_tokens(batch, rng)``, ``to_json()``), :func:`parse_attention`, :func:`load_attention`,
:data:`ATTENTION_KEYS`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict, Union

import numpy as np
import sympy as sp

from ..arrays import as_matrix
from ..expressions import t
from ..files import load_file
from ..schema import PROVENANCE_KEY, ParamError, as_choice, as_positive_float, check_symmetric
from ..limits import check_limit
from ..records import JSONObject
from ..schema import check_magnitude
from ..symbolic.attention import Structure

__all__ = ["ATTENTION_KEYS", "AttentionParams", "Head", "HeadJSON", "load_attention", "parse_attention"]

ATTENTION_KEYS = ("V", "Q", "K", "P", "heads", "variant", "X0", "n", "beta", "causal", "normalization", "W",
                  "t_end", "seed")
#: Each key of :data:`ATTENTION_KEYS`: (when it is needed, what it is), as ``flowcert schema attention`` lists them.
ATTENTION_KEY_DOCS = {
    "V": ("required (one head)", "value matrix, d x d (numbers or strings in t); d is read from it"),
    "Q": ("required with K (one head)", "query matrix, m x d (or give P instead of Q and K)"),
    "K": ("required with Q (one head)", "key matrix, m x d, as many rows as Q"),
    "P": ("optional", "P = Q^T K, d x d, instead of Q and K"),
    "heads": ("instead of V, Q, K", 'a list of {"Q", "K", "V"} (or {"P", "V"}) objects, one per head'),
    "variant": ("optional", '"self_attention" (default), "oja" or "multiagent_oja" (these take V and n only)'),
    "X0": ("optional", "n x d initial tokens on the manifold {y^T W y = 1} (default: random, from seed)"),
    "n": ("optional", "number of tokens (default: rows of X0, else 10)"),
    "beta": ("optional", "temperature (default 1)"),
    "causal": ("optional", "lower-triangular attention (default false)"),
    "normalization": ("optional", '"unit" (rows of A sum to 1, default) or "sqrt" (rows sum to 1/sqrt(d))'),
    "W": ("optional", "d x d symmetric positive definite: tokens on {y^T W y = 1} (default identity)"),
    "t_end": ("optional", "horizon > 0 (default 20)"),
    "seed": ("optional", "non-negative integer (default 0): random initial tokens and samples"),
}
_ATTENTION_ONLY = ("Q", "K", "P", "heads", "beta", "causal", "normalization")
MANIFOLD_TOL = 1e-9
DEFAULT_N = 10

Value = Any  # np.ndarray (constant) or sp.Matrix (entries in t)
class HeadJSON(TypedDict, total=False):
    """One head as ``params.heads`` writes it: ``Q``, ``K`` and ``V``, or ``P`` (:math:`Q^\\top K`) and ``V``;
    each a matrix as rows of numbers, or of expression strings in t."""

    Q: list[list[Union[float, str]]]
    K: list[list[Union[float, str]]]
    P: list[list[Union[float, str]]]
    V: list[list[Union[float, str]]]


def _echo(value: Value) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    from ..expressions import expression_text

    return [[int(e) if isinstance(e, sp.Integer) else float(e) if isinstance(e, sp.Float) else expression_text(e)
             for e in value.row(i)] for i in range(value.rows)]


class _Evaluator:
    """Numeric ``t -> [matrices]`` for a list of constant or time-varying matrices: one
    ``lambdify`` per time-varying matrix (entries flattened row-major; Floats passed as arguments
    so that they keep all 53 bits), built once. ``evaluator(t)`` gives the matrices at one time,
    ``evaluator.many(times)`` the stacked matrices (leading axis: ``times``) in one vectorised
    numpy call per matrix, for a fixed-step integrator's stage times."""

    def __init__(self, values: list[Value]) -> None:
        self.values = values
        symbolic = [v for v in values if isinstance(v, sp.MatrixBase)]
        floats = sorted(set().union(*(m.atoms(sp.Float) for m in symbolic)), key=sp.default_sort_key) if symbolic else []
        dummies = [sp.Dummy() for _ in floats]
        table = dict(zip(floats, dummies))
        self.fns = [sp.lambdify([t, *dummies], list(v.xreplace(table)), modules="numpy")
                    if isinstance(v, sp.MatrixBase) else None for v in values]
        self.consts = [float(f) for f in floats]

    def __call__(self, time: float) -> list[np.ndarray]:
        out = []
        for v, fn in zip(self.values, self.fns):
            if fn is None:
                out.append(v)
                continue
            with np.errstate(all="ignore"):
                m = np.array(fn(np.float64(time), *self.consts), dtype=np.float64).reshape(v.shape)
            if not np.all(np.isfinite(m)):
                raise ParamError(None, f"a time-varying head entry is not finite at t = {time!r}")
            out.append(m)
        return out

    def many(self, times: np.ndarray) -> list[np.ndarray]:
        """The matrices at every entry of the 1-D array ``times``: arrays of shape
        ``(len(times), rows, cols)`` (constant matrices broadcast, read-only)."""
        times = np.asarray(times, dtype=np.float64).reshape(-1)
        out = []
        for v, fn in zip(self.values, self.fns):
            if fn is None:
                out.append(np.broadcast_to(v, (times.size, *v.shape)))
                continue
            m = np.empty((times.size, v.shape[0] * v.shape[1]))
            with np.errstate(all="ignore"):
                for k, entry in enumerate(fn(times, *self.consts)):
                    m[:, k] = entry  # a constant entry broadcasts
            if not np.all(np.isfinite(m)):
                bad = times[~np.all(np.isfinite(m), axis=1)][0]
                raise ParamError(None, f"a time-varying head entry is not finite at t = {float(bad)!r}")
            out.append(m.reshape(times.size, *v.shape))
        return out


def _evaluator(values: list[Value]) -> _Evaluator:
    """One numeric function ``t -> [matrices]`` (with ``.many(times)``) for a list of constant
    or time-varying matrices (see :class:`_Evaluator`)."""
    return _Evaluator(values)


@dataclass(frozen=True, eq=False)
class Head:
    """One attention head: scores :math:`x_i^\\top Q^\\top K x_j`, value ``V`` (``U`` in the consensus
    paper). Entries are read-only float64 arrays, or ``sympy.Matrix`` in :data:`flowcert.expressions.t`.
    ``from_P`` records that the file gave :math:`P=Q^\\top K` (then ``Q = I``, ``K = P``)."""

    Q: Value
    K: Value
    V: Value
    from_P: bool = False

    @property
    def time_varying(self) -> bool:
        return any(isinstance(m, sp.MatrixBase) for m in (self.Q, self.K, self.V))

    def to_json(self) -> HeadJSON:
        """The head as ``params.heads`` writes it (``P`` when the file gave P)."""
        if self.from_P:
            return {"P": _echo(self.K), "V": _echo(self.V)}
        return {"Q": _echo(self.Q), "K": _echo(self.K), "V": _echo(self.V)}


@dataclass(frozen=True, eq=False)
class AttentionParams:
    """Validated parameters of the ``attention`` system (build with :func:`parse_attention`).

    Attributes
    ----------
    heads : tuple of Head
        For the Oja variants one head with ``Q = K = None``.
    variant, normalization : str
    n, d : int
    beta : float
    causal : bool
    W : numpy.ndarray or None
        Ellipsoid matrix; None for the unit sphere.
    X0 : numpy.ndarray or None
        (n, d) initial tokens on the manifold, or None (random tokens from ``seed``).
    t_end : float
    seed : int
    """

    heads: tuple[Head, ...]
    variant: str
    n: int
    d: int
    beta: float = 1.0
    causal: bool = False
    normalization: str = "unit"
    W: np.ndarray | None = None
    X0: np.ndarray | None = None
    t_end: float = 20.0
    seed: int = 0
    given: frozenset[str] = field(default_factory=frozenset)

    @property
    def structure(self) -> Structure:
        """The kernel structure (variant, heads, normalization, causal, ellipsoid)."""
        return Structure(self.variant, len(self.heads), self.normalization, self.causal, self.W is not None)

    @property
    def time_varying(self) -> bool:
        return any(h.time_varying for h in self.heads)

    @property
    def V(self) -> Value:
        """Value matrix of the first (or only) head."""
        return self.heads[0].V

    @cached_property
    def _matrices(self) -> _Evaluator:
        mats: list[Value] = []
        for h in self.heads:
            mats += [h.V] if self.variant != "self_attention" else [h.Q, h.K, h.V]
        return _evaluator(mats)

    def head_matrices(self, time: float = 0.0) -> list[tuple[np.ndarray | None, np.ndarray | None, np.ndarray]]:
        """``[(Q, K, V), ...]`` evaluated at ``time`` (``Q = K = None`` for the Oja variants)."""
        vals = self._matrices(time)
        if self.variant != "self_attention":
            return [(None, None, vals[0])]
        return [tuple(vals[3 * e:3 * e + 3]) for e in range(len(self.heads))]  # type: ignore[misc]

    def M(self, eta: int = 0, time: float = 0.0) -> np.ndarray:
        """:math:`\\beta Q_\\eta^\\top K_\\eta` at ``time`` (zero for the multiagent Oja variant)."""
        q, k, _ = self.head_matrices(time)[eta]
        if q is None:
            return np.zeros((self.d, self.d))
        return self.beta * (q.T @ k)

    def kernel_args(self, time: float = 0.0, n: int | None = None, square: bool = True) -> list[np.ndarray]:
        """Arguments of the generated kernel after ``X`` (order of
        :func:`flowcert.symbolic.attention.program_inputs`) at ``time``, with ``Q`` scaled by
        :math:`\\beta`. An m x d query/key pair is passed as the square pair :math:`(I, Q^\\top K)`
        (every backend), or as it is with ``square=False``: the numpy and torch kernels are matrix
        products (:math:`XQ^\\top`, then :math:`\\cdot K`, then :math:`\\cdot X^\\top`), valid for any m
        and :math:`O(ndm)` instead of :math:`O(nd^2)`."""
        from ..numeric.attention.field import causal_mask

        n = self.n if n is None else n
        args: list[np.ndarray] = []
        for q, k, v in self.head_matrices(time):
            if self.variant == "self_attention":
                if q.shape[0] != self.d and square:  # m x d query/key: the C kernel takes square (I, Q^T K)
                    q, k = np.eye(self.d), q.T @ k
                args += [self.beta * q, k, v]
            elif self.variant == "multiagent_oja":
                args += [np.ones(n), v]
            else:
                args += [v]
        if self.causal:
            args.append(causal_mask(n))
        if self.W is not None:
            args.append(self.W)
        return args

    def kernel_args_many(self, times: np.ndarray, n: int | None = None) -> list[np.ndarray]:
        """:meth:`kernel_args` at every entry of the 1-D array ``times`` at once: arrays with a
        leading axis ``len(times)`` (one vectorised evaluation of each time-varying head matrix;
        constant arguments broadcast)."""
        from ..numeric.attention.field import causal_mask

        times = np.asarray(times, dtype=np.float64).reshape(-1)
        m = times.size
        n = self.n if n is None else n
        vals = self._matrices.many(times)
        args: list[np.ndarray] = []
        if self.variant != "self_attention":
            v = vals[0]
            args += [np.broadcast_to(np.ones(n), (m, n)), v] if self.variant == "multiagent_oja" else [v]
        else:
            for e in range(len(self.heads)):
                q, k, v = vals[3 * e:3 * e + 3]
                if q.shape[-2] != self.d:  # m x d query/key: the kernels take square (I, Q^T K)
                    q, k = np.broadcast_to(np.eye(self.d), (m, self.d, self.d)), np.swapaxes(q, -1, -2) @ k
                args += [self.beta * q, k, v]
        if self.causal:
            args.append(np.broadcast_to(causal_mask(n), (m, n, n)))
        if self.W is not None:
            args.append(np.broadcast_to(self.W, (m, *self.W.shape)))
        return args

    def initial_tokens(self, batch: int | None = None, rng: np.random.Generator | None = None) -> np.ndarray:
        """``X0`` if given (and ``batch`` is None), else tokens uniform on the sphere mapped to the
        manifold by :math:`\\pi_W`; shape (n, d) or (batch, n, d)."""
        from ..numeric.attention.field import project

        if batch is None and self.X0 is not None:
            return self.X0.copy()
        rng = rng or np.random.default_rng(self.seed)
        shape = (self.n, self.d) if batch is None else (batch, self.n, self.d)
        return project(rng.normal(size=shape), self.W)

    def to_json(self) -> JSONObject:
        """The parameters as understood (after validation and defaults)."""
        out: JSONObject = {"variant": self.variant, "n": self.n, "d": self.d}
        if self.variant == "self_attention":
            out.update({"heads": [h.to_json() for h in self.heads], "beta": self.beta, "causal": self.causal,
                        "normalization": self.normalization})
        else:
            out["V"] = _echo(self.heads[0].V)
        out["W"] = None if self.W is None else self.W.tolist()
        out["X0"] = None if self.X0 is None else self.X0.tolist()
        out.update({"t_end": self.t_end, "seed": self.seed})
        return out


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------


def _head(raw: Mapping[str, object], where: str, d: int | None, variant: str) -> Head:
    prefix = f"{where}." if where else ""
    if not isinstance(raw, Mapping):
        raise ParamError(where or None, f"each head must be an object with keys Q, K, V (or P, V), got {type(raw).__name__}")
    allowed = ("Q", "K", "V", "P")
    for key in raw:
        if key not in allowed:
            raise ParamError(f"{prefix}{key}", f"unknown key {prefix}{key!r} in a head (allowed: Q, K, V, P)", names_key=True)
    if "V" not in raw:
        raise ParamError(f"{prefix}V", f"missing required key {prefix + 'V'!r}", names_key=True)
    V = as_matrix(raw["V"], f"{prefix}V", (d, d), allow_expr=True)
    d = V.shape[0]
    if d < 1 or V.shape[1] != d:
        raise ParamError(f"{prefix}V", f"expected a square d x d matrix with d >= 1, got shape {tuple(V.shape)}")
    if "P" in raw:
        for key in ("Q", "K"):
            if key in raw:
                raise ParamError(f"{prefix}{key}", "give either P or Q and K in a head, not both")
        P = as_matrix(raw["P"], f"{prefix}P", (d, d), allow_expr=True)
        return Head(_identity(d), P, V, from_P=True)
    for key in ("Q", "K"):
        if key not in raw:
            raise ParamError(f"{prefix}{key}", f"missing required key {prefix + key!r} (or give P = Q^T K)", names_key=True)
    # Q, K may be m x d (m query/key width); the scores only need Q^T K (d x d)
    Qm = as_matrix(raw["Q"], f"{prefix}Q", (None, d), allow_expr=True)
    if Qm.shape[0] < 1:
        raise ParamError(f"{prefix}Q", "expected at least one row")
    Km = as_matrix(raw["K"], f"{prefix}K", (None, d), allow_expr=True)
    if Km.shape[0] != Qm.shape[0]:
        raise _rows_mismatch(prefix, Qm.shape, Km.shape, d)
    return Head(Qm, Km, V)


def _rows_mismatch(prefix: str, q: tuple[int, ...], k: tuple[int, ...], d: int) -> ParamError:
    """The error for Q (m x d) and K (m' x d) with m != m': it names the one that is not d x d when the
    other is (the usual square head), else Q, and says both shapes."""
    wrong = "K" if q == (d, d) and k != (d, d) else "Q"
    other, (mine, theirs) = ("Q", (k, q)) if wrong == "K" else ("K", (q, k))
    return ParamError(f"{prefix}{wrong}", f"expected shape ({theirs[0]}, {d}) (as many rows as {prefix}{other}, "
                                          f"which is {theirs[0]} x {d}), got {tuple(mine)}")


def _identity(d: int) -> np.ndarray:
    eye = np.eye(d)
    eye.setflags(write=False)
    return eye


def _int(raw: object, key: str, low: int) -> int:
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer, float, np.floating)):
        raise ParamError(key, f"must be an integer >= {low}, got {raw!r}")
    if isinstance(raw, (float, np.floating)) and not (math.isfinite(raw) and float(raw).is_integer()):
        raise ParamError(key, f"must be an integer >= {low}, got {raw!r}")
    value = int(raw)
    if value < low:
        raise ParamError(key, f"must be an integer >= {low}, got {value}")
    return value


def _real(raw: object, key: str) -> float:
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer, float, np.floating)):
        raise ParamError(key, f"must be a finite real number, got {raw!r}")
    value = float(raw)
    if not math.isfinite(value):
        raise ParamError(key, f"must be a finite real number, got {value}")
    return value


def _bool(raw: object, key: str) -> bool:
    if not isinstance(raw, (bool, np.bool_)):
        raise ParamError(key, f"must be true or false, got {raw!r}")
    return bool(raw)


def _constant(value: Value, key: str) -> np.ndarray:
    if isinstance(value, sp.MatrixBase):
        raise ParamError(key, "must be constant here (time-varying entries are allowed in attention heads only)")
    return value


def _ellipsoid(raw: object, d: int) -> np.ndarray | None:
    from ..certificates import core

    W = as_matrix(raw, "W", (d, d))
    check_magnitude(W, "W")
    check_symmetric(W, "W")
    if not core.is_pd(core.rational_matrix(W)):
        raise ParamError("W", "must be positive definite (exact rational LDL^T found a non-positive pivot)")
    return W


def _tokens(raw: object, n: int | None, d: int, W: np.ndarray | None) -> np.ndarray:
    rows = raw.shape[0] if isinstance(raw, np.ndarray) and raw.ndim else len(raw) if isinstance(raw, list) else 0
    check_limit("attention:n", rows, "X0", what="tokens (rows of X0)")  # before converting millions of tokens
    X0 = as_matrix(raw, "X0", (n, d))
    if X0.shape[0] < 1:
        raise ParamError("X0", "expected at least one token (row)")
    sq = np.einsum("ij,jk,ik->i", X0, np.eye(d) if W is None else W, X0)
    bad = np.flatnonzero(~(np.abs(sq - 1.0) <= MANIFOLD_TOL))
    if bad.size:
        i = int(bad[0])
        where = "unit sphere (|x_i| = 1)" if W is None else "ellipsoid x^T W x = 1"
        raise ParamError("X0", f"row {i} has x^T {'W ' if W is not None else ''}x = {float(sq[i])!r}, "
                         f"not on the {where} within {MANIFOLD_TOL:g}; normalise the tokens")
    return X0


def _not_continuous(entry: sp.Expr, t_end: float, certify: Any) -> bool:
    """True when ``entry`` is certified not real and continuous on [0, t_end]: by interval evaluation,
    or, where that is undecided (at a pole), by SymPy's exact ``continuous_domain``."""
    verdict = certify(entry, t, t_end, budget_s=1.0).status
    if verdict != "unknown":
        return verdict == "fails"
    from sympy.calculus.util import continuous_domain

    try:
        window = sp.Interval(0, sp.Rational(t_end))
        return sp.Complement(window, continuous_domain(entry, t, window)).is_empty is False
    except Exception:  # noqa: BLE001 - SymPy could not decide: leave it to the integrator's own checks
        return False


def _check_continuous(heads: tuple[Head, ...], t_end: float, listed: bool) -> None:
    """Refuse a time-varying entry certified *not* real and continuous on [0, t_end] (a pole such as
    1/(1-t) with t_end > 1): every command then refuses it alike, before any integration."""
    from ..certificates.continuity import certify_continuous

    for e, h in enumerate(heads):
        for name in ("Q", "K", "V"):
            value = getattr(h, name)
            if not isinstance(value, sp.MatrixBase):
                continue
            key = (f"heads[{e}]." if listed else "") + ("P" if h.from_P and name == "K" else name)
            for index, entry in enumerate(value):
                if entry.free_symbols and _not_continuous(entry, t_end, certify_continuous):
                    i, j = divmod(index, value.shape[1])
                    raise ParamError(key, f"entry [{i}][{j}] = {entry} is not real and continuous on [0, t_end] = "
                                          f"[0, {t_end:g}] (interval evaluation, or SymPy's continuous_domain at a pole); shorten t_end")


def parse_attention(raw: Mapping[str, object]) -> AttentionParams:
    """Validate a raw mapping (from :func:`flowcert.files.load_file` or built in code).

    Raises
    ------
    ParamError
        The first problem, naming the key (see the module docstring).
    """
    if not isinstance(raw, Mapping):
        raise ParamError(None, f"attention parameters must be an object (mapping), got a {type(raw).__name__}")
    for key in raw:
        if key == PROVENANCE_KEY:  # where the parameters came from: checked, never used
            from ..pretrained.provenance import check_provenance

            check_provenance(raw[key])
            continue
        if key not in ATTENTION_KEYS:
            import difflib

            close = difflib.get_close_matches(str(key), ATTENTION_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ParamError(str(key), f"unknown key {str(key)!r} (allowed: {', '.join(ATTENTION_KEYS)}){hint}",
                             names_key=True)
    variant = as_choice(raw.get("variant", "self_attention"), "variant", ("self_attention", "oja", "multiagent_oja"))
    if variant != "self_attention":
        for key in _ATTENTION_ONLY:
            if key in raw:
                raise ParamError(key, f"the {variant} variant takes V and n only (it has no attention)")
        if "V" not in raw:
            raise ParamError("V", "missing required key 'V'", names_key=True)
        V = _constant(as_matrix(raw["V"], "V", (None, None)), "V")
        if V.shape[0] < 1 or V.shape[0] != V.shape[1]:
            raise ParamError("V", f"expected a square d x d matrix with d >= 1, got shape {V.shape}")
        heads: tuple[Head, ...] = (Head(None, None, V),)
    elif "heads" in raw:
        for key in ("V", "Q", "K", "P"):
            if key in raw:
                raise ParamError(key, "give either 'heads' or top-level V/Q/K (one head), not both")
        hs = raw["heads"]
        if isinstance(hs, np.ndarray) or not isinstance(hs, (list, tuple)) or not hs:
            raise ParamError("heads", "must be a non-empty list of {Q, K, V} objects")
        first = _head(hs[0], "heads[0]", None, variant)
        d0 = first.V.shape[0]
        heads = (first, *(_head(h, f"heads[{e}]", d0, variant) for e, h in enumerate(hs) if e > 0))
    else:
        heads = (_head({k: raw[k] for k in ("Q", "K", "V", "P") if k in raw}, "", None, variant),)
    d = int(heads[0].V.shape[0])
    if d < 2:
        raise ParamError("V", "d = 1: the tokens live on the sphere S^(d-1), which needs d >= 2")
    check_limit("attention:d", d, "V")
    check_limit("attention:heads", len(heads), "heads")
    for e, h in enumerate(heads):
        prefix = f"heads[{e}]." if "heads" in raw else ""
        for name in ("Q", "K", "V"):
            check_magnitude(getattr(h, name), prefix + ("P" if h.from_P and name == "K" else name))
    W = _ellipsoid(raw["W"], d) if "W" in raw else None
    n = _int(raw["n"], "n", 1) if "n" in raw else None
    if n is not None:
        check_limit("attention:n", n, "n")
    X0 = _tokens(raw["X0"], n, d, W) if "X0" in raw else None
    if n is None:
        n = DEFAULT_N if X0 is None else int(X0.shape[0])
    check_limit("attention:n*d", n * d, "n", what=f"n * d ({n} * {d})")
    beta = _real(raw["beta"], "beta") if "beta" in raw else 1.0
    check_limit("magnitude", abs(beta), "beta", what="|beta|")
    causal = _bool(raw["causal"], "causal") if "causal" in raw else False
    norm = as_choice(raw.get("normalization", "unit"), "normalization", ("unit", "sqrt"))
    t_end = as_positive_float(raw["t_end"], "t_end") if "t_end" in raw else 20.0
    seed = _int(raw["seed"], "seed", 0) if "seed" in raw else 0
    check_limit("seed", seed, "seed")
    p = AttentionParams(heads, variant, n, d, beta, causal, norm, W, X0, t_end, seed, frozenset(raw))
    if p.time_varying:
        _check_continuous(heads, t_end, "heads" in raw)
    return p


def load_attention(path: str | os.PathLike[str]) -> AttentionParams:
    """Read and validate an ``attention`` parameter file (errors name the file)."""
    raw = load_file(path)
    try:
        return parse_attention(raw)
    except ParamError as err:
        raise err.with_file(os.fspath(path)) from None
