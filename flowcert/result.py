r"""The public typed results of :func:`flowcert.verify`: :class:`Result`, :class:`Theorem`,
:class:`Hypothesis`, :class:`Certificate`, :class:`CrossCheck`, :class:`Simulation`, :class:`Paper`.

A :class:`Result` is one parameter set checked against every catalogue theorem of a system. Its
:meth:`Result.to_json` is exactly the document ``flowcert verify SYSTEM --params FILE --json`` prints
(docs/design.md, "The command line and JSON contract"): the typed objects are encoded back key by key, in the document's own
key order, so the JSON contract does not depend on them.

The verdict words are named constants (``str`` enums: each *is* its word, ``Status.HOLDS == "holds"``):

* :class:`Applies`, a theorem: ``applies`` (every hypothesis holds), ``inapplicable`` (one fails),
  ``undecided`` (none fails, one is unknown); in the JSON document ``true`` / ``false`` / ``null``
  (:attr:`Applies.json`);
* :class:`Status`, a hypothesis: ``holds`` (proved: a re-checked certificate, or by construction),
  ``fails`` (refuted, with a witness), ``unknown`` (not decided, the reason is given), ``assumed``
  (stated by the user, not checked);
* :class:`CheckStatus`, the cross-check of a prediction by simulation: ``agrees``, ``disagrees``,
  ``skipped``;
* :class:`Verdict`, the whole result (:attr:`Result.status`): ``decided``, ``undecided``, ``disagrees``.

``margin`` of a hypothesis is a number measuring how far the checked quantity is from the boundary
of the hypothesis (an eigenvalue, a gap, a distance), or None. The intended convention is *positive
when the hypothesis holds*, *negative when it fails*, its size the slack; some entries still
report the raw quantity (for example the smallest eigenvalue of a matrix that must be negative):
read ``method`` for what was measured.

One family of objects runs from the engine to the edge: :class:`Theorem` *is* the catalogue's
record (:class:`flowcert.catalogue.Theorem`), :class:`Hypothesis` and :class:`Certificate` are the
certificates layer's own (:mod:`flowcert.certificates.core`), and the verdict words are
:mod:`flowcert.certificates.verdicts`. Nothing is rebuilt: :meth:`Result.from_document` keeps the
objects a system's ``verify_run`` made, and JSON is written only at the edge, by their ``to_json``. A
saved document (JSON records) is read with the ``from_json`` constructors, which keep each record's
key order and the keys the types do not know, so it is written back byte for byte.

Dict access (``result["theorems"]``, ``result.get("regime")``) keeps working for one release for code
written against the former dict results of ``flowcert.gaussian.verify``, ``flowcert.attention.verify``
and ``flowcert.rnn.analyze_cell``; it gives the JSON document's value and warns
(:class:`DeprecationWarning`). Use the attributes, or :meth:`Result.to_json`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import display as _display  # noqa: F401  (installs the views of Hypothesis and Certificate)
from .catalogue import CrossCheck, Theorem
from .certificates.core import Certificate, Hypothesis
from .certificates.verdicts import Applies, CheckStatus, Status, Verdict, ordered
from .papers import PAPERS, Paper

if TYPE_CHECKING:
    from .records import Document, JSONObject

__all__ = ["Applies", "CheckStatus", "Certificate", "CrossCheck", "Hypothesis", "PAPERS", "Paper", "Result",
           "Simulation", "Status", "Theorem", "Verdict", "verify_summary"]


@dataclass(frozen=True)
class Simulation:
    """The run that cross-checks the predictions (``simulate=True``), as arrays, like scipy's ``OdeResult``.

    Attributes
    ----------
    t : numpy.ndarray or None
        Times of the stored states (shape ``(n,)``); for a run that keeps only its final state, one time.
    states : Mapping[str, numpy.ndarray]
        Each state variable over ``t`` (leading axis ``n``): gaussian ``mu`` (n, d) and ``Sigma``
        (n, d, d); attention ``X`` (final tokens only).
    success : bool or None
        Whether the integrator reached the end (or a detected blow-up) without failing.
    message : str
        The integrator's message.
    sol : callable or None
        A dense interpolant ``sol(t) -> state`` where the integrator provides one, else None.
    record : Mapping
        The document's ``simulation`` record (``t_end``, ``blowup_time``, ``agrees`` …).
    """

    t: Any
    states: Mapping[str, Any]
    success: bool | None
    message: str
    sol: Any = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_run(cls, record: Mapping[str, Any], run: Any = None) -> Simulation:
        """From the document's ``simulation`` record and the run object behind it (a dataclass with a
        time array ``t`` and state arrays along it, such as the gaussian ``MomentSolution``), or the
        record alone (its ``*_final`` states at ``t_reached`` / ``t_end``).

        Parameters
        ----------
        record : Mapping
            The document's ``simulation`` record.
        run : object, optional
            The run behind it; None (or a mapping): the record alone.

        Returns
        -------
        Simulation
        """
        t = getattr(run, "t", None) if run is not None and not isinstance(run, Mapping) else None
        if t is not None:
            t = np.asarray(t, dtype=float)
            states = {k: v for k, v in vars(run).items()
                      if k != "t" and isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == t.shape[0]}
            status = getattr(run, "status", None)
            success = None if status is None else status != "failed"
            message = str(getattr(run, "message", ""))
            sol = getattr(run, "sol", None)
            return cls(t, MappingProxyType(states), success, message, sol if callable(sol) else None, record)
        end = record.get("t_reached", record.get("t_end"))
        states = {k[:-len("_final")]: np.asarray(v, dtype=float)[None]
                  for k, v in record.items() if k.endswith("_final") and v is not None}
        skipped = record.get("skipped")
        return cls(None if end is None else np.array([float(end)]), MappingProxyType(states),
                   False if skipped else None, str(skipped or record.get("integrator_message") or ""), None, record)

    @property
    def agrees(self) -> bool | None:
        """The document's ``agrees``: the run against the prediction it tests (None: no evidence)."""
        return self.record.get("agrees")

    @property
    def t_end(self) -> float | None:
        return self.record.get("t_end")

    @property
    def blowup_time(self) -> float | None:
        return self.record.get("blowup_time")

    def to_json(self) -> JSONObject:
        """The document's ``simulation`` record."""
        return dict(self.record)

    def __repr__(self) -> str:
        from .display import summarise

        states = ", ".join(f"{k}={summarise(v)}" for k, v in self.states.items())
        return f"Simulation(t={summarise(self.t)}, {states}, success={self.success}, message={self.message!r})"

    def _repr_html_(self) -> str:
        """The notebook view (:func:`flowcert.display.simulation_html`): arrays by shape, first entries and range."""
        from .display import simulation_html

        return simulation_html(self)

    def __getitem__(self, key: str) -> Any:  # the former dict: one release
        _deprecated("result.simulation[...]", "the attributes of Simulation or .record")
        return self.record[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The record's value at ``key`` (deprecated dict access).

        Parameters
        ----------
        key : str
            A key of the ``simulation`` record.
        default : object, optional
            Returned when the record has no ``key``.

        Returns
        -------
        object
        """
        _deprecated("result.simulation.get(...)", "the attributes of Simulation or .record")
        return self.record.get(key, default)


def _theorem(t: Any) -> Theorem:
    """A theorem of a document: the engine's object itself, or a saved record (:meth:`Theorem.from_json`)."""
    return Theorem.from_json(t) if isinstance(t, Mapping) else t


def _deprecated(what: str, use: str) -> None:
    warnings.warn(f"{what}: dict access to flowcert results is deprecated and goes in the next release; "
                  f"use {use}", DeprecationWarning, stacklevel=3)


@dataclass(frozen=True, eq=False)
class Result:
    """The outcome of :func:`flowcert.verify` on one parameter set: every catalogue theorem of the system.

    Attributes
    ----------
    system : str
        ``gaussian``, ``attention`` or ``rnn``.
    theorems : Mapping[str, Theorem]
        Every theorem by id, in the catalogue's order.
    params : object
        The validated parameters (a parameter object such as ``GaussianParams``; for a user's
        recurrent cell, a :class:`~flowcert.rnn.cell.CellParams` with the cell, inputs and state);
        feed it back to :func:`flowcert.verify`.
    params_json : Mapping
        The parameters as understood, as the JSON document records them (``params``).
    regime : Mapping or None
        gaussian only: Table 1's answer for constant parameters (``Sigma``, ``mu``, limits, certified
        blow-up time bound, ``basis``).
    simulation : Simulation or None
        The cross-checking run (``simulate=True``).
    sections : Mapping
        The system's other parts of the document (rnn: ``identities``, ``effective_rank``,
        ``certificates``, ``operator_mode``; attention: none …).
    version : str
        The flowcert version that produced it (``flowcert`` in the document).
    run : object
        The raw run behind ``simulation`` (for plotting; for a user's cell, its trajectory), or None.

    Notes
    -----
    ``result.to_json()`` is the CLI's ``--json`` document; ``result.summary()`` one line per theorem;
    in Jupyter the result renders as a table (one row per theorem, its hypotheses folded).
    """

    system: str
    theorems: Mapping[str, Theorem]
    params: Any = None
    params_json: Mapping[str, Any] = field(default_factory=dict, repr=False)
    regime: Mapping[str, Any] | None = field(default=None, repr=False)
    simulation: Simulation | None = field(default=None, repr=False)
    sections: Mapping[str, Any] = field(default_factory=dict, repr=False)
    version: str = ""
    run: Any = field(default=None, repr=False, compare=False)
    _order: tuple[str, ...] = field(default=("flowcert", "system", "params", "theorems", "regime", "simulation"),
                                    repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_document(cls, document: Document, params: Any = None, run: Any = None) -> Result:
        """The typed result of a ``verify`` document.

        The systems' documents (:meth:`flowcert.system.System.verify_run`) hold the engine's
        :class:`Theorem` objects, which are kept as they are; a saved document's theorem records (JSON)
        are read with :meth:`Theorem.from_json`.

        Parameters
        ----------
        document : Mapping
            The document (``flowcert``, ``system``, ``params``, ``theorems`` and the system's parts).
        params : object, optional
            The validated parameter object behind it.
        run : object, optional
            The run behind its ``simulation`` record.

        Returns
        -------
        Result
        """
        top = ("flowcert", "system", "params", "theorems", "regime", "simulation")
        sim = document.get("simulation")
        return cls(
            system=str(document.get("system", "")),
            theorems=MappingProxyType({t.id: t for t in map(_theorem, document.get("theorems", []))}),
            params=params,
            params_json=document.get("params", {}),
            regime=document.get("regime"),
            simulation=None if sim is None else Simulation.from_run(sim, run),
            sections={k: v for k, v in document.items() if k not in top},
            version=str(document.get("flowcert", "")),
            run=run,
            _order=tuple(document),
        )

    # ------------------------------------------------------------------ reading
    @property
    def status(self) -> Verdict:
        """The whole result: ``disagrees`` / ``undecided`` / ``decided`` (:class:`Verdict`)."""
        ts = self.theorems.values()
        if any(t.cross_check.status is CheckStatus.DISAGREES for t in ts):
            return Verdict.DISAGREES
        if any(t.applies is Applies.UNDECIDED for t in ts):
            return Verdict.UNDECIDED
        return Verdict.DECIDED

    def counts(self) -> dict[str, int]:
        """How many theorems apply / are inapplicable / undecided, and how many cross-checks agree /
        disagree / were skipped."""
        out = {w.value: 0 for w in (*Applies, *CheckStatus)}
        for t in self.theorems.values():
            out[t.applies.value] += 1
            out[t.cross_check.status.value] += 1
        return out

    def summary(self) -> str:
        """One line per theorem (:meth:`Theorem.summary`) under a heading line with the counts."""
        c = self.counts()
        head = (f"flowcert verify {self.system}: {self.status.value}; {len(self.theorems)} theorems, "
                f"{c['applies']} apply, {c['inapplicable']} inapplicable, {c['undecided']} undecided; "
                f"cross-checks {c['agrees']} agree, {c['disagrees']} disagree, {c['skipped']} skipped")
        return "\n".join([head, *(t.summary() for t in self.theorems.values())]) + "\n"

    def __repr__(self) -> str:
        c = self.counts()
        return (f"<flowcert.Result {self.system}: {self.status.value}, {len(self.theorems)} theorems, "
                f"{c['applies']} apply>")

    # ------------------------------------------------------------------ JSON
    def to_document(self) -> Document:
        """The document with the typed parts encoded (numpy values not yet converted: see :meth:`to_json`)."""
        parts = {"flowcert": self.version, "system": self.system, "params": self.params_json,
                 "theorems": [t.to_json() for t in self.theorems.values()]}
        if self.regime is not None:
            parts["regime"] = self.regime
        if self.simulation is not None:
            parts["simulation"] = self.simulation.to_json()
        return ordered(parts, self._order, self.sections)

    def to_json(self) -> Document:
        """Exactly the document ``flowcert verify SYSTEM --params FILE --json`` prints (a plain dict:
        numpy values as lists and numbers, non-finite floats as None)."""
        from .documents import plain

        return plain(self.to_document())

    def recheck(self) -> Any:
        """Re-check this result's document as ``flowcert recheck`` would a saved one: every
        certificate's subject re-derived from the parameters, every status, claim and ``applies``
        re-derived from the catalogue.

        Returns
        -------
        flowcert.recheck.DocumentCheck
            ``bound``, ``unbound``, ``refused`` (path and reason of each) and ``rechecked``.
        """
        from .recheck import recheck_document

        return recheck_document(self.to_json())

    # ------------------------------------------------------------------ the former dict (one release)
    def _doc(self) -> Document:
        if "json" not in self._cache:
            self._cache["json"] = self.to_json()
        return self._cache["json"]

    def __getitem__(self, key: str) -> Any:
        _deprecated(f"result[{key!r}]", "the attributes of Result or result.to_json()")
        return self._doc()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The document's value at ``key`` (deprecated dict access).

        Parameters
        ----------
        key : str
            A top-level key of the document.
        default : object, optional
            Returned when the document has no ``key``.

        Returns
        -------
        object
        """
        _deprecated(f"result.get({key!r})", "the attributes of Result or result.to_json()")
        return self._doc().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._doc()

    def keys(self) -> Any:
        """The document's keys (deprecated dict access)."""
        return self._doc().keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._doc())

    def __len__(self) -> int:
        return len(self._doc())

    # ------------------------------------------------------------------ display
    def _repr_html_(self) -> str:
        from .display import result_html

        return result_html(self)

    def _repr_markdown_(self) -> str:
        from .display import result_markdown

        return result_markdown(self)


def verify_summary(doc: Mapping[str, object]) -> str:
    """The human-readable lines of a ``verify`` document (without ``--json``): the status line and one line
    per theorem of :meth:`Result.summary` (the verdict words: ``applies`` /
    ``inapplicable`` / ``undecided``, ``agrees`` / ``disagrees`` / ``skipped``), each theorem's
    hypotheses under it, then the lines of the system's own parts (its ``summary_lines(doc)``, where the
    system has one: gaussian the regime, gaussian and attention the simulation). ``doc`` may hold typed
    theorems (as the systems return them) or theorem records."""
    from .documents import records
    from .systems import REGISTRY, get_system

    rec = records(dict(doc))
    res = Result.from_document(rec)
    head, *rows = res.summary().splitlines()
    lines = [f"flowcert {rec['flowcert']} — verify {rec['system']}", head]
    for th, row in zip(res.theorems.values(), rows):
        lines.append(row)
        for h in th.hypotheses:
            lines.append(f"    {h.status.value:<8} {h.name}  ({h.method})")
    if rec["system"] in REGISTRY:
        lines += get_system(rec["system"]).summary_lines(rec)
    return "\n".join(lines) + "\n"
