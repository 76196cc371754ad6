r"""``flowcert reach gaussian``: exact finite-time reachability (gaussian paper, Thm 3.3).

Given a start :math:`(\mu_0,\Sigma_0)` (the ``mu0``, ``Sigma0`` of a gaussian parameter file; its
``A``, ``B``, ``V``, ``b`` are validated but ignored, the controls are constructed) and a target
file, build the controls of Proof 3.4 that steer eq. (7) to the target at time ``T``, integrate
eq. (7) with them, and report the terminal error. See :mod:`flowcert.numeric.gaussian.reach`; controls files (``.npz``, JSON) are written and read here.

Target file (JSON object or ``.npz``)::

    key     required  value
    ------  --------  -----------------------------------------------------
    mu      yes       length-d vector of finite numbers (the target mean)
    Sigma   yes       d x d matrix of finite numbers, exactly symmetric, PSD,
                      with rank(Sigma) = rank(Sigma0)

``d`` is the size of ``Sigma0`` in the parameter file. Ranks are numerical: an eigenvalue counts
iff it exceeds :data:`~flowcert.numeric.gaussian.reach.RANK_RTOL` times the largest.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, TypedDict

import numpy as np

from ..documents import header
from ..arrays import as_matrix, as_vector
from ..files import load_file
from ..outputs import check_file, replacing, write_text
from ..schema import (
    Field,
    ParamError,
    Schema,
    as_positive_float,
    check_not_indefinite,
    check_symmetric,
    validate,
)
from .params import GaussianParams, load_gaussian
from ..numeric.gaussian.reach import FORMAT, ReachControls, ReachResult, build_controls
from ..records import Document, JSONObject

__all__ = ["run", "load_target", "target_schema", "THEOREM", "ReachDocument", "ControlsData"]

THEOREM = "gaussian:thm-3.3"

METHOD = (
    "Proof 3.4 of the gaussian paper: congruence M = U1 D U0^T (det M > 0, M Sigma0 M^T = "
    "Sigma_hat), path Phi(t) = exp(s(t) log Q) exp(s(t) log S) from the polar decomposition "
    "M = QS with the smoothstep ramp s, V = -Phi' Phi^-1, B = Sigma(t)^+ and "
    "A = -V - V Sigma(t) B with the planned Sigma(t) = Phi Sigma0 Phi^T (open loop), "
    "b = (mu_hat - mu0)/T; verified by integrating eq. (7) with DOP853"
)


def target_schema(d: int) -> Schema:
    """Schema of a target file for dimension ``d`` (keys ``mu``, ``Sigma``)."""

    def mu(raw: object, key: str, dims: Mapping[str, int]) -> object:
        return as_vector(raw, key, dims["d"])

    def sigma(raw: object, key: str, dims: Mapping[str, int]) -> object:
        S = as_matrix(raw, key, (dims["d"], dims["d"]))
        assert isinstance(S, np.ndarray)
        check_symmetric(S, key)
        check_not_indefinite(S, key)
        return S

    return Schema(
        system="target",
        fields={
            "mu": Field(mu, doc="target mean, length d"),
            "Sigma": Field(sigma, doc="target covariance, d x d, symmetric PSD"),
        },
        infer_dims=lambda raw: {"d": d},
    )


def load_target(path: str | os.PathLike[str], d: int) -> tuple[np.ndarray, np.ndarray]:
    """Read and validate a target file.

    Parameters
    ----------
    path : str or path-like
        ``.json`` or ``.npz`` with keys ``mu`` and ``Sigma``.
    d : int
        Dimension (the size of ``Sigma0``).

    Returns
    -------
    mu, Sigma : numpy.ndarray
        Read-only float64 arrays of shapes (d,), (d, d).

    Raises
    ------
    ParamError
        Naming the file and the key: unknown or missing keys, shapes, non-finite entries,
        asymmetric or indefinite ``Sigma``.
    """
    name = os.fspath(path)
    raw = load_file(name)
    try:
        values = validate(raw, target_schema(d))
    except ParamError as err:
        problem = err.problem
        if err.key in ("mu", "Sigma") and problem.startswith("expected shape"):
            problem += f" (d = {d}, the size of Sigma0 in the parameter file)"
        raise ParamError(err.key, problem, file=name, names_key=err.names_key) from None
    mu, sigma = values["mu"], values["Sigma"]
    assert isinstance(mu, np.ndarray) and isinstance(sigma, np.ndarray)
    return mu, sigma


class TerminalError(TypedDict):
    """The distance of the integrated state at ``T`` from the target (null where the integration failed)."""

    mu: float | None
    Sigma: float | None
    Sigma_relative: float | None
    mu_relative: float | None


class Integration(TypedDict):
    """The record of the integration of eq. (7) under the constructed controls."""

    method: str
    rtol: float
    atol: float
    status: str
    message: str
    #: condition number of the planned :math:`\Sigma(t)` (the feedback's amplification)
    condition: float


class ReachStart(TypedDict):
    """The start of a ``reach`` document as understood: ``mu0`` and ``Sigma0``."""

    mu0: list[float]
    Sigma0: list[list[float]]


class ReachTarget(TypedDict):
    """The target of a ``reach`` document: ``mu`` and ``Sigma``."""

    mu: list[float]
    Sigma: list[list[float]]


class ReachDocument(TypedDict):
    """The ``reach gaussian`` document (:func:`run`; ``docs/cli.md``)."""

    flowcert: str
    system: str
    T: float
    rank: int
    rank_basis: str
    terminal_error: TerminalError
    #: the controls file written, or None
    controls: str | None
    method: str
    theorem: str
    params: ReachStart
    target: ReachTarget
    integration: Integration | None
    notes: list[str]


class ControlsData(TypedDict):
    """A controls file as read back (:func:`load_controls`): float64 arrays over ``k`` knots in dimension ``d``."""

    format: str
    #: the ramp of the path (``smoothstep`` or ``linear``)
    ramp: str
    t: np.ndarray
    A: np.ndarray
    B: np.ndarray
    V: np.ndarray
    b: np.ndarray
    mu0: np.ndarray
    Sigma0: np.ndarray
    mu_hat: np.ndarray
    Sigma_hat: np.ndarray
    T: float
    M: np.ndarray
    rank: int
    rank_rtol: float
    Phi: np.ndarray
    Sigma_plan: np.ndarray
    mu_plan: np.ndarray


def _finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def run(params_path: str, target_path: str, T: float, out: str | None = None) -> ReachDocument:
    """The job behind ``flowcert reach gaussian --params FILE --target FILE --T T [--out CONTROLS]``.

    Parameters
    ----------
    params_path : str
        Gaussian parameter file; only ``mu0`` and ``Sigma0`` are used.
    target_path : str
        Target file with ``mu`` and ``Sigma`` (see the module docstring).
    T : float
        Final time, > 0.
    out : str or None
        Where to write the controls (``.npz`` or ``.json``, format
        ``flowcert-reach-controls/1`` of :mod:`flowcert.numeric.gaussian.reach`); None: not written.

    Returns
    -------
    ReachDocument
        JSON-ready: ``flowcert``, ``system`` (``"gaussian"``), ``T``, ``rank``,
        ``terminal_error`` (``mu``, ``Sigma``, ``Sigma_relative``, ``mu_relative``; null if the
        integration failed), ``controls`` (the path written, or null), ``method``, ``theorem``
        (``"gaussian:thm-3.3"``), ``params`` (``mu0``, ``Sigma0`` as understood), ``target``
        (``mu``, ``Sigma``), ``integration`` (method, tolerances, status, condition number) and
        ``notes`` (among them: the A, B, V, b of the parameter file are ignored).

    Raises
    ------
    ParamError
        Bad files or keys; ``T <= 0`` (key ``'T'``); a rank mismatch (key ``'Sigma'``, naming
        both ranks and Lemma 3.1); an ``out`` name not ending in ``.npz``/``.json`` or not
        writable (key ``'out'``).
    """
    from ..limits import command_problem
    from ..numeric.gaussian import reach as gr

    T = as_positive_float(T, "T")
    if out is not None and Path(out).suffix.lower() not in (".npz", ".json"):
        raise ParamError("out", f"controls file must end in .npz or .json, got {out!r}")
    if out is not None:
        try:
            check_file("--out", out, (".npz", ".json"))
        except ParamError as err:  # named as the key 'out' of this function (the CLI's --out)
            raise ParamError("out", err.problem, file=out) from None
    params = load_gaussian(params_path)
    if (problem := command_problem("reach", params.d)) is not None:
        raise ParamError("params", problem, file=params_path)
    mu0, Sigma0 = params.mu0, params.Sigma0
    mu_hat, Sigma_hat = load_target(target_path, params.d)

    try:
        rank = _same_rank(Sigma0, Sigma_hat, repr(params_path))
    except ParamError as err:
        raise err.with_file(os.fspath(target_path)) from None

    result = gr.reach(mu0, Sigma0, mu_hat, Sigma_hat, T)
    written = None
    if out is not None:
        try:
            written = str(save_controls(result, out))
        except OSError as exc:
            raise ParamError(
                "out", f"cannot write the controls file ({exc.strerror or exc})", file=out
            ) from None

    return _document(result, T, written, params.mu0, params.Sigma0, mu_hat, Sigma_hat, rank)


RANK_BASIS = ("exact: the inertia of Sigma0 and of the target Sigma in rational arithmetic (each float is a "
              "rational); the construction itself counts eigenvalues above RANK_RTOL times the largest")


def exact_rank(S: np.ndarray, key: str) -> int:
    """The rank of a symmetric float matrix as the rational matrix it is (its exact inertia, :math:`n_+ + n_-`)."""
    from ..certificates import core

    n_pos, n_neg, _ = core.inertia_certificate(S, key).data["inertia"]
    return int(n_pos + n_neg)


def _same_rank(Sigma0: np.ndarray, Sigma_hat: np.ndarray, start: str) -> int:
    """The common exact rank of the start and the target; a :class:`ParamError` on ``Sigma`` where they differ
    exactly, or where the construction's numerical ranks differ (ill conditioned)."""
    from ..numeric.gaussian import reach as gr

    r0, r1 = exact_rank(Sigma0, "Sigma0"), exact_rank(Sigma_hat, "Sigma")
    lemma = ("the rank of Sigma(t) is invariant along eq. (7) for every choice of A, B, V, b (Lemma 3.1: "
             "Sigma(t) = Psi Sigma0 Psi^T with Psi invertible), so no controls reach this target")
    if r0 != r1:
        raise ParamError("Sigma", f"rank mismatch: the target Sigma has exact rank {r1} but Sigma0 of {start} has "
                                  f"exact rank {r0}; {lemma}")
    tol = gr.RANK_RTOL
    n0, n1 = gr.numerical_rank(Sigma0, tol), gr.numerical_rank(Sigma_hat, tol)
    if (n0, n1) != (r0, r1):
        raise ParamError("Sigma", f"Sigma0 and the target have exact rank {r0}, but the construction (eigenvalues "
                                  f"above {tol:g} times the largest) sees ranks {n0} and {n1}: too ill conditioned "
                                  "to construct controls in float64")
    return r0


def _document(result: Any, T: float, written: str | None, mu0: np.ndarray, Sigma0: np.ndarray, mu_hat: np.ndarray,
              Sigma_hat: np.ndarray, rank: int) -> ReachDocument:
    """The ``reach gaussian`` JSON document of a construction (see :func:`run`, "Returns"); ``result`` None: the
    derived parts only, with the records (terminal error, integration, controls) left null."""
    err = result.terminal_error() if result is not None else {}
    ok = result is not None and result.status == "ok"
    return {
        **header("gaussian"),
        "T": T,
        "rank": rank,
        "rank_basis": RANK_BASIS,
        "terminal_error": {
            "mu": _finite_or_none(err["mu"]) if ok else None,
            "Sigma": _finite_or_none(err["Sigma"]) if ok else None,
            "Sigma_relative": _finite_or_none(err["Sigma_relative"]) if ok else None,
            "mu_relative": _finite_or_none(err["mu_relative"]) if ok else None,
        },
        "controls": written,
        "method": METHOD,
        "theorem": THEOREM,
        "params": {"mu0": mu0.tolist(), "Sigma0": Sigma0.tolist()},
        "target": {"mu": mu_hat.tolist(), "Sigma": Sigma_hat.tolist()},
        "integration": None if result is None else {
            "method": "DOP853",
            "rtol": result.rtol,
            "atol": result.atol,
            "status": result.status,
            "message": result.solution.message,
            "condition": result.condition,
        },
        "notes": [
            "A, B, V, b of the parameter file are ignored: the controls are constructed "
            "(only mu0 and Sigma0 are used)",
            "mu_relative is |mu(T) - mu_hat| / max(|mu0|, |mu_hat|, ||Sigma0||^1/2, "
            "||Sigma_hat||^1/2); Sigma_relative is ||Sigma(T) - Sigma_hat||_F / ||Sigma_hat||_F",
            "the feedback B = Sigma^+ makes the mean error grow like the condition number of "
            "Sigma times the covariance error (integration.condition)",
        ],
    }


def _inputs(raw: Mapping[str, Any], doc: Document) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                  float, int]:
    """A ``reach`` document's start (``raw``: its ``params``), target, horizon and their common exact rank, validated
    as the command validates its files: ``(mu0, Sigma0, mu_hat, Sigma_hat, T, rank)``."""
    unknown = sorted(set(raw) - {"mu0", "Sigma0"})
    if unknown:
        raise ParamError(f"params.{unknown[0]}", "a reach document's start has only mu0 and Sigma0")
    if "Sigma0" not in raw or "mu0" not in raw:
        raise ParamError("params", "a reach document's start needs mu0 and Sigma0")
    Sigma0 = as_matrix(raw["Sigma0"], "params.Sigma0", (None, None))
    assert isinstance(Sigma0, np.ndarray)
    if Sigma0.shape[0] != Sigma0.shape[1]:
        raise ParamError("params.Sigma0", f"expected a square matrix, got shape {Sigma0.shape}")
    check_symmetric(Sigma0, "params.Sigma0")
    check_not_indefinite(Sigma0, "params.Sigma0")
    mu0 = np.asarray(as_vector(raw["mu0"], "params.mu0", Sigma0.shape[0]))
    target = doc.get("target")
    if not isinstance(target, Mapping):
        raise ParamError("target", "the target, an object with mu and Sigma")
    values = validate(dict(target), target_schema(Sigma0.shape[0]))
    T = as_positive_float(doc.get("T"), "T")
    return mu0, Sigma0, values["mu"], values["Sigma"], T, _same_rank(Sigma0, values["Sigma"], "the document")


def rederived_document(raw: Mapping[str, Any], doc: Document) -> ReachDocument:
    """The derived parts of a ``reach gaussian`` document made again from its own start (``raw``: its ``params``),
    ``target`` and ``T``, validated as the command validates its files, without integrating: the records
    (``terminal_error``, ``integration``, ``controls``) are left null (:mod:`flowcert.rederive` checks them by type
    and range, :func:`check_records`).

    Raises
    ------
    flowcert.errors.ParamError
        What ``reach`` refuses: keys, shapes, an asymmetric or indefinite covariance, ``T <= 0``, ranks that differ.
    """
    mu0, Sigma0, mu_hat, Sigma_hat, T, rank = _inputs(raw, doc)
    return _document(None, T, None, mu0, Sigma0, mu_hat, Sigma_hat, rank)


def rerun_record(raw: Mapping[str, Any], doc: Document) -> ReachDocument:
    """A ``reach`` document made again with its construction and integration re-run (``recheck --rerun``)."""
    from ..numeric.gaussian import reach as gr

    mu0, Sigma0, mu_hat, Sigma_hat, T, rank = _inputs(raw, doc)
    result = gr.reach(mu0, Sigma0, mu_hat, Sigma_hat, T)
    return _document(result, T, doc.get("controls"), mu0, Sigma0, mu_hat, Sigma_hat, rank)


def check_records(doc: Document) -> list[tuple[str, str]]:
    """Refusals ``(JSON path, reason)`` of a ``reach`` document's records by type and range: the integration's
    status is ``ok`` exactly when every terminal error is a number, and the errors are finite and non-negative."""
    integ, err = doc.get("integration"), doc.get("terminal_error")
    if not isinstance(integ, Mapping) or not isinstance(integ.get("status"), str):
        return [("$.integration", "a record of the integration: an object with a status")]
    keys = ("mu", "Sigma", "Sigma_relative", "mu_relative")
    if not isinstance(err, Mapping) or sorted(err) != sorted(keys):
        return [("$.terminal_error", f"a record of the terminal error: an object with {list(keys)}")]
    for k in keys:
        v = err[k]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf):
            return [(f"$.terminal_error.{k}", "a terminal error is a finite number >= 0, or null")]
    if (integ["status"] == "ok") != all(err[k] is not None for k in ("mu", "Sigma")):
        return [("$.terminal_error", "the errors are numbers exactly when the integration's status is ok")]
    if doc.get("controls") is not None and not isinstance(doc.get("controls"), str):
        return [("$.controls", "the controls file written: a path, or null")]
    return []


# ---------------------------------------------------------------------------------------
# controls files (moved from the numeric layer: file I/O belongs to the public face)
# ---------------------------------------------------------------------------------------


def _controls_of(obj: ReachResult | ReachControls) -> tuple[ReachControls, int]:
    if isinstance(obj, ReachResult):
        return obj.controls, obj.n_knots
    return obj, 101


def controls_json(obj: ReachResult | ReachControls, n_knots: int | None = None) -> JSONObject:
    """The controls file as a JSON-serialisable dict (same keys as the ``.npz``, nested lists).

    Parameters
    ----------
    obj : ReachResult or ReachControls
    n_knots : int, optional
        Default: the result's ``n_knots`` (101 for bare controls).
    """
    ctl, default = _controls_of(obj)
    table = ctl.tabulate(n_knots or default)
    out: JSONObject = {}
    for key, value in table.items():
        out[key] = value.item() if value.ndim == 0 else value.tolist()
    return out


def save_controls(
    obj: ReachResult | ReachControls, path: str | os.PathLike[str], n_knots: int | None = None
) -> Path:
    """Write the controls file: ``.npz`` (``numpy.savez``) or ``.json`` (:func:`controls_json`).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ValueError
        If the suffix is neither ``.npz`` nor ``.json``.
    """
    p = Path(os.fspath(path))
    suffix = p.suffix.lower()
    ctl, default = _controls_of(obj)
    if suffix == ".npz":
        table = ctl.tabulate(n_knots or default)
        with replacing("--out", p) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **table)
    elif suffix == ".json":
        write_text("--out", p, json.dumps(controls_json(ctl, n_knots or default)) + "\n")
    else:
        raise ValueError(f"controls file must end in .npz or .json, got {p.name!r}")
    return p


_SHAPES: dict[str, Callable[[int, int], tuple[int, ...]]] = {
    "t": lambda k, d: (k,),
    "A": lambda k, d: (k, d, d),
    "B": lambda k, d: (k, d, d),
    "V": lambda k, d: (k, d, d),
    "b": lambda k, d: (k, d),
    "mu0": lambda k, d: (d,),
    "Sigma0": lambda k, d: (d, d),
    "mu_hat": lambda k, d: (d,),
    "Sigma_hat": lambda k, d: (d, d),
    "T": lambda k, d: (),
    "M": lambda k, d: (d, d),
    "rank": lambda k, d: (),
    "rank_rtol": lambda k, d: (),
    "Phi": lambda k, d: (k, d, d),
    "Sigma_plan": lambda k, d: (k, d, d),
    "mu_plan": lambda k, d: (k, d),
}


def load_controls(path: str | os.PathLike[str]) -> ControlsData:
    """Read a controls file (``.npz`` or ``.json``) and check its keys and shapes.

    Returns
    -------
    ControlsData
        Arrays as float64 numpy arrays (``T``, ``rank_rtol`` as float, ``rank`` as int,
        ``format``, ``ramp`` as str).

    Raises
    ------
    ValueError
        Wrong format tag, missing keys or shapes.
    """
    p = Path(os.fspath(path))
    if p.suffix.lower() == ".npz":
        with np.load(p, allow_pickle=False) as z:
            raw: dict[str, Any] = {k: z[k] for k in z.files}
    elif p.suffix.lower() == ".json":
        raw = json.loads(p.read_text(encoding="utf-8"))
    else:
        raise ValueError(f"controls file must end in .npz or .json, got {p.name!r}")
    fmt = str(np.asarray(raw.get("format", "")).item()) if "format" in raw else ""
    if fmt != FORMAT:
        raise ValueError(f"{p.name}: not a controls file (format {fmt!r}, expected {FORMAT!r})")
    missing = [k for k in (*_SHAPES, "ramp") if k not in raw]
    if missing:
        raise ValueError(f"{p.name}: missing keys {missing}")
    out: dict[str, Any] = {"format": fmt, "ramp": str(np.asarray(raw["ramp"]).item())}
    k = int(np.asarray(raw["t"]).shape[0])
    d = int(np.asarray(raw["mu0"]).shape[0])
    for key, shape in _SHAPES.items():
        arr = np.asarray(raw[key], dtype=np.float64)
        if arr.shape != shape(k, d):
            raise ValueError(f"{p.name}: key {key!r} has shape {arr.shape}, expected {shape(k, d)}")
        out[key] = arr
    out["T"] = float(out["T"])
    out["rank_rtol"] = float(out["rank_rtol"])
    out["rank"] = int(out["rank"])
    return out


def controls_from_file(path: str | os.PathLike[str]) -> ReachControls:
    """Rebuild the exact (analytic) controls saved in a controls file."""
    data = load_controls(path)
    return build_controls(
        data["mu0"], data["Sigma0"], data["mu_hat"], data["Sigma_hat"], data["T"],
        ramp=data["ramp"], tol=data["rank_rtol"], M=data["M"],
    )
