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
read ``method`` for what was measured. The engine of issue #34 fixes the sign per hypothesis.

The constructors: :meth:`Result.from_document` takes the document of a system's ``verify_run``, whose
theorems are the engine's typed records (:class:`flowcert.catalogue.TheoremResult`), and makes each
object from the engine's object (:meth:`Theorem.of`, :meth:`Hypothesis.of`, :meth:`Certificate.of`);
JSON is written only at the edge, by the engine's writer. A saved document (JSON records) is read with
the ``from_json`` constructors; the dataclasses can also be built directly, field by field.

Dict access (``result["theorems"]``, ``result.get("regime")``) keeps working for one release for code
written against the former dict results of ``flowcert.gaussian.verify``, ``flowcert.attention.verify``
and ``flowcert.rnn.analyze_cell``; it gives the JSON document's value and warns
(:class:`DeprecationWarning`). Use the attributes, or :meth:`Result.to_json`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

import numpy as np

from .papers import PAPERS, Paper

__all__ = ["Applies", "CheckStatus", "Certificate", "CrossCheck", "Hypothesis", "PAPERS", "Paper", "Result",
           "Simulation", "Status", "Theorem", "Verdict"]


class _Word(str, Enum):
    """A verdict word: a ``str`` equal to its JSON spelling."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Applies(_Word):
    """Whether a theorem applies to the parameters.

    ``YES`` (``"applies"``): every hypothesis holds (or is assumed); ``NO`` (``"inapplicable"``): one
    fails; ``UNDECIDED`` (``"undecided"``): none fails, one is unknown. In the JSON document these are
    ``true``, ``false`` and ``null`` (:attr:`json`, :meth:`from_json`). ``bool(Applies.YES)`` is True,
    the others are False, as the JSON values were.
    """

    YES = "applies"
    NO = "inapplicable"
    UNDECIDED = "undecided"

    @classmethod
    def from_json(cls, value: bool | None) -> Applies:
        """``True`` / ``False`` / ``None`` of the document as a constant."""
        return cls.YES if value is True else cls.NO if value is False else cls.UNDECIDED

    @property
    def json(self) -> bool | None:
        """The document's value: ``True``, ``False`` or ``None``."""
        return True if self is Applies.YES else False if self is Applies.NO else None

    def __bool__(self) -> bool:
        return self is Applies.YES


class Status(_Word):
    """The verdict on one hypothesis.

    ``HOLDS``: proved, by a certificate re-checked without trusting the solver that produced it, or
    by construction (``method`` says which); ``FAILS``: refuted, with a witness where one exists;
    ``UNKNOWN``: not decided (``detail`` says why); ``ASSUMED``: stated by the user (for example
    ``assume=["smooth"]``) and not checked; a theorem whose hypotheses hold or are assumed applies
    *under that assumption*.
    """

    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"
    ASSUMED = "assumed"


class CheckStatus(_Word):
    """The outcome of a theorem's cross-check by simulation: ``agrees``, ``disagrees`` or ``skipped``
    (not run, or no number to test; the details say why)."""

    AGREES = "agrees"
    DISAGREES = "disagrees"
    SKIPPED = "skipped"


class Verdict(_Word):
    """The status of a whole result (:attr:`Result.status`).

    ``DISAGREES``: some cross-check disagrees with its theorem's prediction (look at it first);
    otherwise ``UNDECIDED`` when some theorem is undecided, else ``DECIDED`` (every theorem applies
    or is inapplicable).
    """

    DECIDED = "decided"
    UNDECIDED = "undecided"
    DISAGREES = "disagrees"


def _ordered(parts: Mapping[str, Any], order: tuple[str, ...], extra: Mapping[str, Any] = MappingProxyType({})) -> dict[str, Any]:
    """The keys of ``order`` (the record's own keys, in its order) from ``parts`` and ``extra``, then
    any key of ``extra`` that ``order`` lacks (a record built field by field)."""
    both = {**parts, **extra}
    out = {k: both[k] for k in order if k in both}
    out.update((k, v) for k, v in extra.items() if k not in out)
    return out


def _split(rec: Mapping[str, Any], known: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The keys of ``rec`` outside ``known`` (kept as they are) and the record's key order."""
    return {k: v for k, v in rec.items() if k not in known}, tuple(rec)


@dataclass(frozen=True)
class Certificate:
    """The evidence behind a ``holds`` or ``fails``: data from which ``checker`` re-decides ``claim``
    without trusting the solver that produced it (:func:`flowcert.certificates.recheck`).

    Attributes
    ----------
    kind : str
        The certificate kind (``psd``, ``pd``, ``lyapunov``, ``ldl`` …; the certificates page lists them).
    claim : str
        What it proves, in words.
    checker : str
        The independent algorithm that re-checks it (``exact-ldl``: exact rational LDLᵀ …).
    data : Mapping
        Exact data (rationals as strings), as in the JSON document.
    """

    kind: str
    claim: str
    checker: str
    data: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    _order: tuple[str, ...] = field(default=("kind", "claim", "checker", "data"), repr=False, compare=False)

    @classmethod
    def of(cls, cert: Any, whole: bool = False) -> Certificate:
        """From the engine's certificate (:class:`flowcert.certificates.core.Certificate`): ``data`` as the
        document writes it (a field named in ``subject`` is the subject, not copied; ``whole``: kept,
        :func:`flowcert.catalogue.whole_data`), ``subject`` and ``digest`` in :attr:`extra`."""
        subject = cert.subject
        data = cert.data if whole or subject is None else {k: v for k, v in cert.data.items() if k not in subject}
        extra = {} if subject is None else {"subject": dict(subject), **({} if cert.digest is None else {"digest": cert.digest})}
        return cls(cert.kind, cert.claim, cert.checker, data, extra)

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> Certificate:
        """From a certificate record of a saved document."""
        extra, order = _split(rec, ("kind", "claim", "checker", "data"))
        return cls(rec.get("kind", ""), rec.get("claim", ""), rec.get("checker", ""), rec.get("data", {}), extra, order)

    def to_json(self) -> dict[str, Any]:
        """The certificate record of the document."""
        from .certificates.core import Certificate as Serialised  # the one writer of certificate objects

        return _ordered(Serialised(self.kind, self.claim, dict(self.data), self.checker).to_json(), self._order,
                        self.extra)

    def recheck(self) -> bool:
        """Re-decide the claim from the data alone (True: accepted)."""
        from .certificates.core import recheck

        return bool(recheck(self.to_json()))


@dataclass(frozen=True)
class Hypothesis:
    """One named hypothesis of a theorem, decided on the parameters.

    Attributes
    ----------
    name : str
        The hypothesis, as the theorem states it (``Sigma0 >= 0``).
    status : Status
        ``holds``, ``fails``, ``unknown`` or ``assumed`` (:class:`Status`).
    margin : float or None
        How far the checked quantity is from the boundary; intended sign: positive when it holds
        (see the module notes: some entries still report the raw quantity; ``method`` says which).
    method : str
        How it was decided (``exact rational LDL``, ``cell definition``, ``assumed by the user`` …).
    certificate : Certificate or None
        The re-checkable evidence, where one exists.
    detail : str
        Why, in words (the reason of an ``unknown``, the witness of a ``fails``).
    """

    name: str
    status: Status
    margin: float | None = None
    method: str = ""
    certificate: Certificate | None = None
    detail: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    _order: tuple[str, ...] = field(default=("name", "status", "margin", "method", "certificate", "detail"),
                                    repr=False, compare=False)

    @classmethod
    def of(cls, h: Any) -> Hypothesis:
        """From the engine's verdict (:class:`flowcert.certificates.core.HypothesisResult`)."""
        from .catalogue import whole_data

        cert = None if h.certificate is None else Certificate.of(h.certificate, whole_data(h))
        return cls(h.name, Status(h.status), h.margin, h.method, cert, h.detail)

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> Hypothesis:
        """From a hypothesis record of a saved document."""
        extra, order = _split(rec, ("name", "status", "margin", "method", "certificate", "detail"))
        cert = rec.get("certificate")
        return cls(rec.get("name", ""), Status(rec.get("status", "unknown")), rec.get("margin"), rec.get("method", ""),
                   None if cert is None else Certificate.from_json(cert), rec.get("detail", ""), extra, order)

    def to_json(self) -> dict[str, Any]:
        """The hypothesis record of the document."""
        cert = None if self.certificate is None else self.certificate.to_json()
        return _ordered({"name": self.name, "status": self.status.value, "margin": self.margin, "method": self.method,
                         "certificate": cert, "detail": self.detail}, self._order, self.extra)


@dataclass(frozen=True)
class CrossCheck:
    """A theorem's prediction tested by simulation: ``status`` (:class:`CheckStatus`) and ``details``
    (what was compared, the numbers, or the reason it was skipped)."""

    status: CheckStatus
    details: Any = None

    @classmethod
    def of(cls, check: Any) -> CrossCheck:
        """From the engine's cross-check (:class:`flowcert.catalogue.CrossCheck`)."""
        return cls(CheckStatus(check.status), check.details)

    @classmethod
    def from_json(cls, rec: Mapping[str, Any] | None) -> CrossCheck:
        """From a cross-check record of a saved document."""
        rec = rec or {}
        return cls(CheckStatus(rec.get("status", "skipped")), rec.get("details"))

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "details": self.details}


_THEOREM_KEYS = ("id", "source", "statement", "correction", "applies", "hypotheses", "prediction", "cross_check",
                 "rests_on")


@dataclass(frozen=True)
class Theorem:
    """One catalogue theorem decided on the parameters.

    Attributes
    ----------
    id : str
        ``<paper>:<kind>-<number>[.<item>]`` (``gaussian:thm-4.7.1``).
    paper : Paper
        The source paper (title, authors, arXiv id).
    label : str
        The paper's own label (``Theorem 4.7 (1)``).
    statement : str
        The statement checked, in LaTeX, as corrected where the paper is wrong.
    correction : str or None
        What was corrected in the printed statement, or None (the docs' errata page lists them).
    applies : Applies
        ``applies`` / ``inapplicable`` / ``undecided`` (:class:`Applies`).
    hypotheses : tuple of Hypothesis
    prediction : Mapping
        What the theorem says happens for these parameters, in its own terms.
    cross_check : CrossCheck
        The prediction tested by simulation.
    rests_on : list
        The results and assumptions the proof uses (:mod:`flowcert.graph`), erratum links marked.
    """

    id: str
    paper: Paper | None
    label: str
    statement: str
    correction: str | None
    applies: Applies
    hypotheses: tuple[Hypothesis, ...]
    prediction: Any = None
    cross_check: CrossCheck = field(default_factory=lambda: CrossCheck(CheckStatus.SKIPPED, {"reason": "not requested"}))
    rests_on: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    _source: Any = field(default=None, repr=False, compare=False)
    _order: tuple[str, ...] = field(default=_THEOREM_KEYS, repr=False, compare=False)
    _result: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, result: Any) -> Theorem:
        """From the engine's record (:class:`flowcert.catalogue.TheoremResult`), attribute by attribute;
        :meth:`to_json` is then the engine's own writer (:meth:`TheoremResult.to_json`)."""
        from .graph import rests_on

        return cls(result.id, PAPERS.get(result.id.split(":")[0]), result.label, result.statement, result.correction,
                   Applies.from_json(result.applies), tuple(Hypothesis.of(h) for h in result.hypotheses),
                   result.prediction, CrossCheck.of(result.cross_check), rests_on(result.id), _result=result)

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> Theorem:
        """From a theorem record of a saved document."""
        extra, order = _split(rec, _THEOREM_KEYS)
        source = rec.get("source")
        label = source.get("label", "") if isinstance(source, Mapping) else ""
        paper = PAPERS.get(str(rec["id"]).split(":")[0])
        return cls(rec["id"], paper, label, rec.get("statement", ""), rec.get("correction"),
                   Applies.from_json(rec.get("applies")), tuple(Hypothesis.from_json(h) for h in rec.get("hypotheses", ())),
                   rec.get("prediction"), CrossCheck.from_json(rec.get("cross_check")), rec.get("rests_on"), extra,
                   source, order)

    @property
    def source(self) -> Any:
        """The document's ``source``: ``{"file", "label"}``."""
        if self._source is not None:
            return self._source
        return {"file": self.paper.file if self.paper else "", "label": self.label}

    @property
    def cross_check_status(self) -> CheckStatus:
        """``agrees``, ``disagrees`` or ``skipped`` (:attr:`cross_check` ``.status``)."""
        return self.cross_check.status

    @property
    def deciding(self) -> Hypothesis | None:
        """The hypothesis that decides a theorem that does not apply: the first that fails, else the
        first that is unknown; None when it applies."""
        for wanted in (Status.FAILS, Status.UNKNOWN):
            for h in self.hypotheses:
                if h.status is wanted:
                    return h
        return None

    @property
    def assumptions(self) -> tuple[Hypothesis, ...]:
        """The hypotheses stated by the user rather than checked (``assumed``)."""
        return tuple(h for h in self.hypotheses if h.status is Status.ASSUMED)

    @property
    def record(self) -> dict[str, Any]:
        """The theorem record of the document (:meth:`to_json`)."""
        return self.to_json()

    def to_json(self) -> dict[str, Any]:
        """The theorem record of the document (the engine's writer for a theorem built by :meth:`of`)."""
        if self._result is not None:
            return self._result.to_json()
        return _ordered({"id": self.id, "source": self.source, "statement": self.statement,
                         "correction": self.correction, "applies": self.applies.json,
                         "hypotheses": [h.to_json() for h in self.hypotheses], "prediction": self.prediction,
                         "cross_check": self.cross_check.to_json(), "rests_on": self.rests_on},
                        self._order, self.extra)

    def summary(self) -> str:
        """One line: id, verdict, cross-check, and the deciding hypothesis of a theorem that does not apply."""
        line = f"{self.id:<22} {self.applies.value:<12} cross-check {self.cross_check.status.value:<9}"
        h = self.deciding
        if h is not None:
            line += f" {h.status.value}: {h.name}"
        elif self.assumptions:
            line += " assuming " + ", ".join(a.name for a in self.assumptions)
        return line.rstrip()


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
        record alone (its ``*_final`` states at ``t_reached`` / ``t_end``)."""
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

    def to_json(self) -> dict[str, Any]:
        """The document's ``simulation`` record."""
        return dict(self.record)

    def __getitem__(self, key: str) -> Any:  # the former dict: one release
        _deprecated("result.simulation[...]", "the attributes of Simulation or .record")
        return self.record[key]

    def get(self, key: str, default: Any = None) -> Any:
        _deprecated("result.simulation.get(...)", "the attributes of Simulation or .record")
        return self.record.get(key, default)


def _theorem(t: Any) -> Theorem:
    """A theorem of a document: the engine's record (:meth:`Theorem.of`), a saved record
    (:meth:`Theorem.from_json`), or already a :class:`Theorem`."""
    if isinstance(t, Theorem):
        return t
    return Theorem.from_json(t) if isinstance(t, Mapping) else Theorem.of(t)


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
    def from_document(cls, document: Mapping[str, Any], params: Any = None, run: Any = None) -> Result:
        """The typed result of a ``verify`` document.

        The systems' documents (:meth:`flowcert.system.System.verify_run`) hold the engine's typed
        records (:class:`flowcert.catalogue.TheoremResult`): each :class:`Theorem` is made from its
        record's attributes (:meth:`Theorem.of`), never from JSON. A saved document's theorem records
        (JSON) are read with :meth:`Theorem.from_json`.

        Parameters
        ----------
        document : Mapping
            The document (``flowcert``, ``system``, ``params``, ``theorems`` and the system's parts).
        params : object, optional
            The validated parameter object behind it.
        run : object, optional
            The run behind its ``simulation`` record.
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
    def to_document(self) -> dict[str, Any]:
        """The document with the typed parts encoded (numpy values not yet converted: see :meth:`to_json`)."""
        parts = {"flowcert": self.version, "system": self.system, "params": self.params_json,
                 "theorems": [t.to_json() for t in self.theorems.values()]}
        if self.regime is not None:
            parts["regime"] = self.regime
        if self.simulation is not None:
            parts["simulation"] = self.simulation.to_json()
        return _ordered(parts, self._order, self.sections)

    def to_json(self) -> dict[str, Any]:
        """Exactly the document ``flowcert verify SYSTEM --params FILE --json`` prints (a plain dict:
        numpy values as lists and numbers, non-finite floats as None)."""
        from .documents import plain

        return plain(self.to_document())

    def recheck(self) -> Any:
        """Re-check this result's document as ``flowcert recheck`` would a saved one (issue 38): every
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
    def _doc(self) -> dict[str, Any]:
        if "json" not in self._cache:
            self._cache["json"] = self.to_json()
        return self._cache["json"]

    def __getitem__(self, key: str) -> Any:
        _deprecated(f"result[{key!r}]", "the attributes of Result or result.to_json()")
        return self._doc()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The document's value at ``key`` (deprecated dict access)."""
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
