r"""The one ``System`` protocol every dynamical system of flowcert implements (docs/design.md, "Systems").

A system (``gaussian``: eq. (7) of the gaussian paper, :math:`(\mu,\Sigma)`; ``attention``: tokens
on the sphere, multistability and consensus papers; ``rnn``: KPFlow, :math:`\partial_s z=-\mathcal
P\mathcal K\mathcal P^*\mathrm{Err}`) is an object with its ``name``, parameter loading, the
``verify`` document, and where it has them a simulation and generated kernels. The registry
(:mod:`flowcert.systems`) lists them; the command line, the sweep, ``report --params`` and
``pretrained`` look systems up there instead of comparing names. Rendering (report sections,
figures) is not part of a system: it lives in :mod:`flowcert.reports`, above this layer.

:func:`load_any` is the shared parameter intake: a path (JSON or ``.npz``), a mapping of numpy
arrays / nested lists, or an already validated parameter object.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

from .errors import InputError
from .records import Document, JSONObject, JSONValue

__all__ = ["ParameterKey", "SimulateOptions", "System", "SystemBase", "VerifyRun", "load_any"]


class ParameterKey(TypedDict):
    """One key of a system's parameter file, as ``flowcert schema SYSTEM`` lists it."""

    key: str
    #: ``"required"`` or ``"optional"``
    required: str
    #: the value an absent optional key takes (None: none, or a required key)
    default: JSONValue
    doc: str


@dataclass(frozen=True)
class SimulateOptions:
    """The ``simulate`` flags a system reads (``None``: not given)."""

    t_end: float
    samples: int | None = None
    device: str | None = None
    seed: int | None = None
    #: Draws the run into the ``--plot`` file and returns the path written (the command line passes
    #: :func:`flowcert.reports.user.simulation_plotter`; a system never draws by itself).
    plot: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class VerifyRun:
    """What a system's ``verify_run`` hands back: the ``verify`` document with its theorems typed, and the
    run behind its simulation, so a caller (:func:`flowcert.verify`, ``report --params``) can plot it
    without integrating again.

    Attributes
    ----------
    document : dict
        The ``verify`` document; its ``theorems`` are the engine's typed
        :class:`~flowcert.catalogue.TheoremResult` objects (:func:`flowcert.documents.records` writes
        them as records).
    run : object
        The run behind the ``simulation`` record: gaussian, the solution of eq. (7)
        (:class:`~flowcert.numeric.gaussian.moments.MomentSolution`, None when the size limit skipped it);
        attention, the ``simulation`` record itself; rnn, a user's cell's trajectory (None for a
        parameter file).
    """

    document: dict[str, Any]
    run: Any = None

    @property
    def theorems(self) -> list[Any]:
        """The typed theorem results of :attr:`document` (:class:`~flowcert.catalogue.TheoremResult`)."""
        return list(self.document.get("theorems", []))

    @property
    def regime(self) -> Any:
        """The document's ``regime`` part (gaussian), or None."""
        return self.document.get("regime")

    @property
    def simulation(self) -> Any:
        """The document's ``simulation`` record, or None when it has none."""
        return self.document.get("simulation")


@runtime_checkable
class System(Protocol):
    """What the command line, the sweep, ``report --params`` and :func:`flowcert.verify` need of a system.

    Attributes
    ----------
    name : str
        The system key (``flowcert verify NAME``).
    params_type : type
        The validated parameter object :meth:`load` returns.
    warm_modules : tuple of str
        Modules a sweep imports once before forking its workers.
    single_head : bool
        The system models one attention head (``pretrained export`` then needs ``--head``).
    from_tokens : bool
        The system's state is a set of tokens, so a pretrained head's export starts from a prompt's
        hidden states (``X0``, :func:`flowcert.pretrained.model.tokens_entering`).
    checks : Mapping[str, str]
        The cross-checks the system can run with ``simulate=True``, name -> what it compares: the
        names ``flowcert.verify(..., checks=[...])`` and ``verify --checks`` accept.
    load_options : tuple of str, optional
        Keywords :meth:`load` takes besides ``params`` (rnn: ``inputs``, ``h0``, ``targets``,
        ``assume`` for a ``torch.nn.Module`` cell); absent or empty: none.

    Notes
    -----
    The optional capabilities are declared on the system's registry line (:data:`flowcert.systems.REGISTRY`)
    and found from it (:func:`flowcert.systems.capability`); a system has the method of each one it
    declares, and no stub for the others:

    * ``simulate(p, options: SimulateOptions) -> (document, text)``;
    * ``codegen(backend, p=None) -> str``: source of the kernels generated from the symbolic model;
    * ``equilibria(p, cap=None, *, file=None) -> (document, text)``;
    * ``reach(params, target, T, out) -> (document, text)``;
    * ``design(spec) -> (document, text)``: an inverse design from a specification file;
    * ``export(checkpoint, layer, head) -> mapping``: a pretrained head as this system's parameters;
    * ``kpflow(p, *, mode, consensus, probes, consensus_op) -> (document, text)``.

    A capability the command line prints returns its document and the text shown without ``--json``,
    so no system's keys are read in :mod:`flowcert.cli`.
    """

    name: str
    params_type: type
    warm_modules: tuple[str, ...]
    single_head: bool
    from_tokens: bool
    checks: Mapping[str, str]

    def load(self, params: Any, *, command: str | None = None) -> Any:
        """Validate ``params`` (path, mapping or parameter object); :class:`~flowcert.errors.InputError` if bad."""
        ...

    def verify(self, p: Any, *, simulate: bool = False, seed: int | None = None,
               checks: frozenset[str] | None = None) -> Document:
        """The ``verify`` document of validated parameters ``p`` (``checks``: the cross-checks asked
        for, names of :attr:`checks`; None: the default set), with theorem records
        (:class:`SystemBase` derives it from :meth:`verify_run`)."""
        ...

    def verify_run(self, p: Any, *, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None) -> VerifyRun:
        """The verify document and the run behind its simulation (:class:`VerifyRun`; the report plots the
        run); the document's ``theorems`` are the typed :class:`~flowcert.catalogue.TheoremResult` objects."""
        ...


class SystemBase:
    """What every system shares: :meth:`verify` is :meth:`verify_run`'s document with its theorems
    written as records (:func:`flowcert.documents.records`); ``verify_run`` is the system's own, and
    returns the typed results (:class:`~flowcert.catalogue.TheoremResult`) that :func:`flowcert.verify`
    keeps and :func:`flowcert.documents.plain` encodes at the edge."""

    #: the system's parameter-file schema (:class:`flowcert.schema.Schema`), where it has one
    schema: Any = None

    def parameter_keys(self) -> list[ParameterKey]:
        """The keys of a parameter file, as ``flowcert schema SYSTEM`` lists them: ``{"key", "required",
        "default", "doc"}`` each, in the schema's order (from :attr:`schema`; a system without one
        overrides this).

        Returns
        -------
        list of ParameterKey
        """
        if self.schema is None:
            return []
        return [{"key": k, "required": "required" if f.required else "optional",
                 "default": None if f.required else f.default, "doc": f.doc} for k, f in self.schema.fields.items()]

    def verify(self, p: Any, *, simulate: bool = False, seed: int | None = None,
               checks: frozenset[str] | None = None) -> Document:
        """The ``verify`` document of validated parameters ``p``, with theorem records."""
        from .documents import records
        from .engine import explain_skips

        typed = self.verify_run(p, simulate=simulate, seed=seed, checks=checks).document
        explain_skips(typed.get("theorems", []), self, simulate, checks)
        return records(typed)

    def verify_run(self, p: Any, *, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None) -> VerifyRun:
        raise NotImplementedError

    #: JSON paths (regular expressions over ``$…``) of a verify document that are records of a numerical run,
    #: beside the simulation and the cross-checks (:mod:`flowcert.rederive`)
    record_paths: tuple[str, ...] = ()
    #: paths that certificates and their checkers vouch for (beside every certificate's data and digest)
    certified_paths: tuple[str, ...] = ()
    #: keys of ``params`` as understood that the reader derives instead of taking
    understood_only: frozenset[str] = frozenset()
    #: top-level keys a verify document may carry beyond the re-derived ones: records of what was asked, and the
    #: ``provenance`` of a checkpoint's export (bound by its parameter reference and ``--checkpoint``)
    optional_records: frozenset[str] = frozenset({"simulation", "provenance"})

    #: top-level parts re-derived from the document's own claims (a consistency pass over them), not from params
    claims_parts: frozenset[str] = frozenset()

    def part_from_claims(self, key: str, doc: Document) -> Any:
        """The part ``key`` of :attr:`claims_parts` as the pass makes it from ``doc``'s claims."""
        raise KeyError(key)

    def check_records(self, doc: Document) -> list[tuple[str, str]]:
        """Refusals ``(JSON path, reason)`` of the document's records by type and range (none here)."""
        return []

    #: top-level keys of other commands' documents (equilibria, reach, …): not verify documents
    COMMAND_KEYS = frozenset({"equilibria", "reach", "design", "experiment", "heads", "sweep"})
    #: keys only a verify document has (any one of them makes a document one)
    VERIFY_KEYS = frozenset({"theorems", "regime", "consistency", "simulation", "identities", "effective_rank"})

    def rederivable(self, doc: Document) -> bool:
        """Whether a document of this system can be re-derived from its ``params`` alone: here its verify
        documents (a system that re-derives a command's documents too extends this and :meth:`rederived`)."""
        return bool(self.VERIFY_KEYS & doc.keys()) and not (self.COMMAND_KEYS & doc.keys())

    def record_patterns(self, doc: Document) -> tuple[str, ...]:
        """The record paths of ``doc`` (:attr:`record_paths`; a command's documents may have others)."""
        return self.record_paths

    def rerun_document(self, raw: JSONObject, doc: Document, *, simulate: bool, seed: int | None,
                       checks: frozenset[str]) -> Document:
        """The document ``doc`` made again with its runs repeated (``recheck --rerun``, :mod:`flowcert.rerun`): here
        ``verify`` on the reader input ``raw`` with ``simulate``, ``seed`` and ``checks`` (a system whose commands
        write other documents with runs extends this)."""
        from .documents import plain, verify_document

        return plain(verify_document(self.name, raw, simulate=simulate, seed=seed, checks=checks))

    def rederived(self, raw: JSONObject, doc: Document) -> Document:
        """The document ``verify`` writes for the reader input ``raw`` without simulating (plain JSON): what
        ``recheck`` compares ``doc`` with. A system whose document depends on a run overrides this."""
        from .documents import plain, verify_document

        return plain(verify_document(self.name, raw, simulate=False))

    @staticmethod
    def weight_slices(params: Mapping[str, Any], head: Any) -> list[tuple[str, Any, Any]]:
        """The parameters of a pretrained head's export that are exact slices of its weights, as
        ``(path under params, the value given, the weights)``: ``recheck --checkpoint`` compares them
        entry by entry. None here: a system whose export is made of float products (gaussian's
        B = KᵀQ/√d_h, V = W_O W_V) has no exact slice; a system that has some declares them.

        Parameters
        ----------
        params : Mapping
            The document's parameters.
        head : flowcert.pretrained.heads.CheckpointHead
            The head of the checkpoint the line names.

        Returns
        -------
        list of (str, object, numpy.ndarray)
        """
        return []

    @staticmethod
    def summary_lines(doc: Document, detail: bool = False) -> list[str]:
        """The text lines of the system's own parts of a ``verify`` document, after the theorems: here
        the ``simulation`` record where there is one (a system with more parts extends it).

        Parameters
        ----------
        doc : Mapping
            The document, or a mapping with only its own parts (``regime``, ``simulation`` …).
        detail : bool, optional
            Add the reasons (the notebook display shows them; the command line's text does not).

        Returns
        -------
        list of str
        """
        s = doc.get("simulation")
        if s is None:
            return []
        if s.get("skipped"):
            return [f"simulation: {s['skipped']}"]
        if not isinstance(s.get("t_end"), (int, float)):  # a record with no end time
            return [f"simulation: agrees {s.get('agrees')}"]
        return [f"simulation: t_end {s['t_end']:.4g}, blow-up {s.get('blowup_time')}, agrees {s.get('agrees')}"]


def _intake(value: Any, key: str) -> Any:
    """Python values as the ``.npz`` reader gives them, in nested mappings and lists too (``heads``):
    0-d arrays, numpy scalars and 0-d tensors as Python numbers, torch tensors and numpy arrays of
    any real dtype as numpy arrays (float64 where floating; :func:`flowcert.arrays.to_numpy`)."""
    from .arrays import to_numpy

    if isinstance(value, Mapping) and "factors" in value and isinstance(value["factors"], (list, tuple)):
        # a factored matrix: each factor on its own (their shapes differ), its scale as given
        return {**value, "factors": [to_numpy(f, f"{key}.factors[{i}]") for i, f in enumerate(value["factors"])]}
    if isinstance(value, Mapping) and "diagonal" in value:
        diagonal = to_numpy(value["diagonal"], f"{key}.diagonal")
        return {**value, "diagonal": diagonal.tolist() if hasattr(diagonal, "tolist") else diagonal}
    if isinstance(value, Mapping):
        return {k: _intake(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
        return [_intake(v, f"{key}[{i}]") for i, v in enumerate(value)]
    return to_numpy(value, key)


def load_any(params: Any, params_type: type, parse: Callable[[Mapping[str, Any]], Any],
             load: Callable[[Any], Any]) -> Any:
    """Validated parameters from a path, a mapping (numpy arrays or nested lists) or a parameter object.

    Raises
    ------
    flowcert.errors.InputError
        ``params`` is none of these; :class:`~flowcert.errors.ParamError` (an InputError naming the
        key) when the parameters themselves are bad.
    """
    if isinstance(params, params_type):
        return params
    if isinstance(params, Mapping):
        return parse(_intake(params, ""))
    if isinstance(params, (str, os.PathLike)):
        return load(params)
    raise InputError(f"params: expected a file path, a mapping of arrays or a {params_type.__name__}, "
                     f"got {type(params).__name__}")
