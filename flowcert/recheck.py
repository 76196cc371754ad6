r"""``flowcert recheck``: re-verify every certificate in documents flowcert wrote, with no solver.

A certificate is a JSON object whose keys are exactly ``kind``, ``claim``, ``checker`` and ``data``
(:meth:`flowcert.certificates.core.Certificate.to_json`); any other object with both ``kind`` and
``data`` is taken for a certificate whose keys were altered, and refused. Its claim is decided from ``data`` alone
by the exact checker of its kind (:func:`flowcert.certificates.core.explain`; the checkers are
listed in :data:`flowcert.certificates.kinds.KINDS`), so for every certificate :math:`c` found

.. math:: \text{accepted}(c) \iff \mathrm{check}_{\mathrm{kind}(c)}(\mathrm{data}(c)) = \mathtt{True},

and nothing a solver reported enters the decision. A certificate inside another one's ``data``
(an ``eta_pd_equilibrium`` carries its ``unstable_count``) is checked by the outer checker and not
counted again.

Input: a ``verify`` / ``equilibria`` / ``kpflow analyze`` / ``pretrained`` document (a JSON object
with a ``flowcert`` version key), a sweep's JSON lines (one record ``{"file", "index", "status",
"result", ...}`` or one document per line), or one bare certificate object. Anything else (not
JSON, not UTF-8, another JSON value at the top level, a missing or irregular file) is bad input.
A document with no certificate is valid and counts zero.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from . import __version__
from .paramrefs import dereferenced  # noqa: F401  (re-exported: flowcert.recheck.dereferenced)
from .files import json_int, no_duplicate_keys, read_regular, DuplicateKeyError, LongIntegerError, MAX_JSON_DIGITS
from .recheck_certificate import (CERTIFICATE_KEYS, DocumentCheck, applies_of,  # noqa: F401  (re-exported)
                                  certificates_in, check_certificate, is_certificate, kind_of,
                                  looks_like_certificate, resolver)
from .schema import ParamError

__all__ = ["CERTIFICATE_KEYS", "is_certificate", "looks_like_certificate", "certificates_in", "read_documents", "Refusal",
           "RefusalRecord", "Recheck", "RecheckDocument", "recheck_files"]

if TYPE_CHECKING:
    from .recheck_text import UnboundRecord

#: Keys that make a top-level object a sweep record (``flowcert verify`` on several files).
SWEEP_RECORD_KEYS = frozenset({"file", "index", "status", "result"})


def _is_flowcert_json(obj: Any) -> bool:
    return isinstance(obj, dict) and ("flowcert" in obj or SWEEP_RECORD_KEYS <= obj.keys() or is_certificate(obj))


#: longest float literal read (a float64 needs at most 24 characters; a 300-digit literal is no float flowcert wrote)
MAX_FLOAT_CHARS = 40


class _BadLiteral(ValueError):
    """A JSON literal flowcert never writes: NaN, Infinity, or an overlong float."""


def _json_constant(name: str) -> Any:
    raise _BadLiteral(f"the literal {name} (JSON has no non-finite numbers; flowcert writes null)")


def _json_float(text: str) -> float:
    if len(text) > MAX_FLOAT_CHARS:
        raise _BadLiteral(f"a float literal of {len(text)} characters (at most {MAX_FLOAT_CHARS})")
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _BadLiteral(f"the float literal {text[:20]} overflows float64")
    return value


def _parse(text: str) -> Any:
    return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_int=json_int, parse_float=_json_float,
                      parse_constant=_json_constant)


def _problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
    if isinstance(exc, DuplicateKeyError):
        return f"duplicate key {exc.args[0]!r}"
    if isinstance(exc, LongIntegerError):
        return f"a JSON integer has {exc.args[0]} digits (at most {MAX_JSON_DIGITS})"
    if isinstance(exc, _BadLiteral):
        return f"not a flowcert document: {exc.args[0]}"
    return "not valid JSON (nested too deeply)"


_PARSE_ERRORS = (json.JSONDecodeError, DuplicateKeyError, LongIntegerError, _BadLiteral, RecursionError)


def read_documents(path: str | os.PathLike[str]) -> list[tuple[int | None, Any]]:
    """The documents of one file: ``[(None, doc)]`` for one JSON value, ``[(line, doc), ...]`` for JSON lines.

    Raises
    ------
    ParamError
        The file is missing, not a regular file, too large, not UTF-8, not JSON or JSON lines,
        or holds a value that is not a flowcert document, sweep record or certificate.
    """
    name = os.fspath(path)

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=name)

    try:
        text = read_regular(name, fail).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise fail("not valid UTF-8 text") from None
    try:
        docs: list[tuple[int | None, Any]] = [(None, _parse(text))]
    except json.JSONDecodeError as exc:
        lines = [(n, s) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
        if exc.msg != "Extra data" or len(lines) < 2:
            raise fail(_problem(exc)) from None
        docs = []
        for n, line in lines:
            try:
                docs.append((n, _parse(line)))
            except _PARSE_ERRORS as err:
                raise fail(f"line {n}: {_problem(err)}") from None
    except _PARSE_ERRORS as exc:
        raise fail(_problem(exc)) from None
    for n, doc in docs:
        if not _is_flowcert_json(doc):
            where = "" if n is None else f"line {n}: "
            raise fail(f"{where}not a flowcert document (an object with a 'flowcert' key), a sweep record "
                       "or a certificate")
    return docs


class RefusalRecord(TypedDict):
    """A refusal as ``recheck --json`` writes it (:meth:`Refusal.to_json`)."""

    file: str
    line: int | None
    path: str
    kind: str
    reason: str


class RecheckDocument(TypedDict):
    """The ``recheck --json`` document (:meth:`Recheck.to_json`; ``docs/cli.md`` lists its keys)."""

    flowcert: str
    files: list[str]
    certificates: int
    accepted: int
    refused: list[RefusalRecord]
    by_kind: dict[str, dict[str, int]]
    bound: int
    unbound: int
    refused_count: int
    uncertified: list[str]
    holds_unbound: list[str]
    unchecked: list[str]
    rechecked: bool
    strict: bool
    checkpoint: dict[str, str] | None
    checkpoint_unbound: list[str]
    unread: list[str]
    unbound_certificates: list[UnboundRecord]
    records_rerun: int
    records_not_rerun: int


@dataclass
class Refusal:
    """One refused certificate: where it is and why."""

    file: str
    line: int | None
    path: str
    kind: str
    reason: str

    def to_json(self) -> RefusalRecord:
        """The refusal as ``recheck --json`` writes it."""
        return {"file": self.file, "line": self.line, "path": self.path, "kind": self.kind, "reason": self.reason}


@dataclass
class Recheck:
    """Outcome of re-checking several files (``to_json`` is the ``--json`` document).

    ``certificates`` / ``accepted`` / ``by_kind`` count every certificate found and whether its checker
    accepts its data; ``bound`` / ``unbound`` / ``uncertified`` and the document-level refusals come
    from :func:`recheck_document` (``refused`` holds both kinds of refusal).
    """

    files: list[str]
    certificates: int = 0
    accepted: int = 0
    refused: list[Refusal] = field(default_factory=list)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    bound: int = 0
    unbound: int = 0
    uncertified: list[str] = field(default_factory=list)
    holds_unbound: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    strict: bool = False
    checkpoint_unbound: list[str] = field(default_factory=list)
    #: ``{"directory", "sha256"}`` of ``--checkpoint``, or None
    checkpoint: dict[str, str] | None = None
    #: referenced parameter files that could not be read (``path: reason``): their documents are not re-checked
    unread: list[str] = field(default_factory=list)
    #: every unbound certificate: ``{"file", "line", "path", "reason"}`` (:func:`flowcert.recheck_text.unbound_named`)
    unbound_certificates: list[UnboundRecord] = field(default_factory=list)
    #: records run again and compared (``--rerun``), and records checked for type and range only
    records_rerun: int = 0
    records_not_rerun: int = 0

    @property
    def ok(self) -> bool:
        """Nothing refused (and with ``strict``, nothing unbound)."""
        return not self.refused and not (self.strict and (self.unbound or self.holds_unbound))

    @property
    def rechecked(self) -> bool:
        """Nothing refused and every ``holds`` rests on a bound certificate."""
        return not self.refused and not self.holds_unbound and not self.unread

    def _repr_html_(self) -> str:
        """The notebook view (:func:`flowcert.display.recheck_html`)."""
        from .display import recheck_html

        return recheck_html(self)

    def to_json(self) -> RecheckDocument:
        """The ``recheck --json`` document."""
        return {"flowcert": __version__, "files": list(self.files), "certificates": self.certificates,
                "accepted": self.accepted, "refused": [r.to_json() for r in self.refused],
                "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())},
                "bound": self.bound, "unbound": self.unbound, "refused_count": len(self.refused),
                "uncertified": list(self.uncertified), "holds_unbound": list(self.holds_unbound),
                "unchecked": list(self.unchecked),
                "rechecked": self.rechecked, "strict": self.strict,
                "checkpoint": self.checkpoint, "checkpoint_unbound": list(self.checkpoint_unbound),
                "unread": list(self.unread), "unbound_certificates": [dict(u) for u in self.unbound_certificates],
                "records_rerun": self.records_rerun, "records_not_rerun": self.records_not_rerun}

    def summary(self) -> str:
        """Plain-text report: totals, counts by kind, the path of each refusal (:func:`flowcert.recheck_text.summary`)."""
        from .recheck_text import summary

        return summary(self)


def recheck_files(paths: Sequence[str], *, strict: bool = False, checkpoint: Any = None, rerun: bool = False) -> Recheck:
    """Read every file (all of them first, so bad input is reported before any work), then
    re-check every document (:func:`recheck_document`) and every certificate they contain;
    ``checkpoint``: the weights pretrained documents are re-derived from
    (:func:`flowcert.pretrained.binding.open_checkpoint`).

    Parameters
    ----------
    paths : sequence of str
        The files: ``verify`` / ``equilibria`` / ``kpflow analyze`` / ``pretrained`` documents, sweeps'
        JSON lines, or bare certificates.
    strict : bool, default False
        Keyword-only. Unbound certificates (whose subject is not re-derived from the document's
        parameters) and a ``holds`` resting on no bound certificate also make :attr:`Recheck.ok` false.
    checkpoint : CheckpointRef, optional
        Keyword-only. The checkpoint of ``--checkpoint DIR``, as
        :func:`~flowcert.pretrained.binding.open_checkpoint` returns it; None: certificates about a
        checkpoint's heads are not re-derived from its weights (counted as ``checkpoint_unbound``).
    rerun : bool, default False
        Keyword-only. Run the records (simulations, cross-checks, integrations) again and compare them
        (:mod:`flowcert.rerun`); without it they are counted as not re-run.

    Returns
    -------
    Recheck
        The totals over every file and document: certificates found, accepted and refused (with
        where and why), counts by kind, bound and unbound certificates, and the claims left
        unchecked or uncertified.

    Raises
    ------
    ParamError
        A file is not something flowcert wrote (see :func:`read_documents`).
    """
    loaded = [(p, read_documents(p)) for p in paths]
    from .recheck_budget import check_recheck_budget
    check_recheck_budget([(str(p), docs) for p, docs in loaded], certificates_in)  # exit 2 naming the budget, before any exact work
    out = Recheck(files=[str(p) for p in paths], strict=strict)
    if checkpoint is not None:
        out.checkpoint = {"directory": str(checkpoint.directory), "sha256": str(checkpoint.sha256)}
    from .recheck_text import unbound_named
    from .sweeplines import duplicate_refusals
    for p, docs in loaded:
        out.refused += [Refusal(str(p), n, path, "-", why) for n, path, why in duplicate_refusals(docs)]
        for line, doc in docs:
            where = f"{p}:{line}" if line is not None else str(p)
            dc = recheck_document(doc, checkpoint=checkpoint, origin=str(p), rerun=rerun, budget=False)  # checked above
            out.records_rerun += dc.records_rerun
            out.records_not_rerun += dc.records_not_rerun
            for _, kind, ok in dc.records:
                tally = out.by_kind.setdefault(kind, {"accepted": 0, "refused": 0})
                out.certificates += 1
                out.accepted += ok
                tally["accepted" if ok else "refused"] += 1
            out.certificates += len(dc.unchecked)
            out.bound += dc.bound
            out.unbound += dc.unbound
            out.uncertified += [f"{where} {q}" for q in dc.uncertified]
            out.holds_unbound += [f"{where} {q}" for q in dc.holds_unbound]
            out.unchecked += [f"{where} {q}" for q in dc.unchecked]
            out.checkpoint_unbound += [f"{where} {q}" for q in dc.checkpoint_unbound]
            out.unread += [f"{where} {q}" for q in dc.unread]
            out.unbound_certificates += unbound_named(str(p), line, dc, checkpoint is not None)
            out.refused += [Refusal(str(p), line, q, k, why) for q, k, why in dc.refused]
    return out


# ---------------------------------------------------------------------------------------------
# Documents, not only their certificates (issue 38): subjects, statuses, names, claims, applies
# ---------------------------------------------------------------------------------------------


def _theorem(out: DocumentCheck, base: str, t: Any, entry: Any, resolve: Any, seen: set[str],
             doc_params: Any = None) -> None:
    hyps = t.get("hypotheses") if isinstance(t, dict) else None
    if not isinstance(hyps, list):
        out.refused.append((base, "-", "a theorem record without a hypotheses list"))
        return
    names = [h.get("name") if isinstance(h, dict) else None for h in hyps]
    from .bindings import ENGINE_HYPOTHESES

    if entry is not None and set(names) & ENGINE_HYPOTHESES:  # the engine did not evaluate the entry
        for j, h in enumerate(hyps):
            if not isinstance(h, dict) or h.get("name") not in ENGINE_HYPOTHESES or h.get("status") != "unknown" \
                    or h.get("certificate") is not None or len(hyps) != 1:
                out.refused.append((f"{base}.hypotheses[{j}]", "-", "an entry the engine did not evaluate has one "
                                                                    "unknown hypothesis and no certificate"))
        if t.get("applies") is not None:
            out.refused.append((f"{base}.applies", "-", "an entry that was not evaluated does not apply"))
        return
    if entry is not None:
        declared = [h.name for h in entry.hypotheses]
        if len(set(names)) != len(names):
            out.refused.append((f"{base}.hypotheses", "-", "a hypothesis appears twice"))
        for j, n in enumerate(names):
            if n not in declared:
                out.refused.append((f"{base}.hypotheses[{j}].name", "-", f"{n!r} is not a hypothesis of {entry.id}"))
        order = [declared.index(n) for n in names if n in declared]
        if order != sorted(order):
            out.refused.append((f"{base}.hypotheses", "-", f"hypotheses out of the catalogue's order for {entry.id}"))
        for n in declared:
            if n not in names and n not in entry.optional:
                out.refused.append((f"{base}.hypotheses", "-", f"{entry.id} always reports {n!r}, which is missing"))
    statuses = []
    for j, h in enumerate(hyps):
        path = f"{base}.hypotheses[{j}]"
        status = h.get("status") if isinstance(h, dict) else None
        if status == "assumed":  # a hypothesis the user stated: never certified, and said so in params.assume
            from .bindings import ASSUMPTIONS

            assumed = (doc_params or {}).get("assume") if isinstance(doc_params, dict) else None
            named = {ASSUMPTIONS.get(a) for a in assumed} if isinstance(assumed, list) else set()
            if h.get("certificate") is not None or h.get("name") not in named:
                out.refused.append((f"{path}.status", "-", "assumed only for the hypothesis an assumption stated in "
                                                           "params.assume names, and never with a certificate"))
                continue
            statuses.append(status)
            out.uncertified.append(path)
            continue
        if status not in ("holds", "fails", "unknown"):
            out.refused.append((f"{path}.status", "-", f"status {status!r} is not holds, fails or unknown"))
            continue
        statuses.append(status)
        spec = entry.by_name(h.get("name")) if entry is not None else None
        cert = h.get("certificate")
        if cert is None:
            if status == "holds" and spec is not None and spec.needs_certificate(resolve):
                out.refused.append((path, "-", "holds with no certificate"))
            elif status == "holds":
                out.holds_unbound.append(path)
            elif status == "fails":
                out.uncertified.append(path)
            continue
        cpath = f"{path}.certificate"
        seen.add(cpath)
        if spec is None:
            if check_certificate(out, cpath, cert, None, resolve, status, claims_checked=entry is not None) is False \
                    and status == "holds":
                out.holds_unbound.append(path)
            continue
        proofs = spec.proofs_of(kind_of(cert))
        if not proofs:
            out.refused.append((cpath, kind_of(cert), f"a {kind_of(cert)} certificate cannot decide {spec.name!r}"))
            continue
        if isinstance(cert, dict) and cert.get("subject") == {} and any(not p.subject for p in proofs):
            # declared unbound (a numerical limit's matrix): it is that declaration's certificate, not a
            # refused one of the bound declarations of the same kind
            proofs = [p for p in proofs if not p.subject]
        attempts = []
        for proof in proofs:  # one kind may be declared with several subjects: the first that binds
            trial = DocumentCheck()
            bound = check_certificate(trial, cpath, cert, proof, resolve, status)
            attempts.append(trial)
            if bound:
                break
        # none binds: a mismatch with one declared subject is not excused by another's absent input
        trial = next((a for a in attempts if a.bound), None) or next((a for a in attempts if a.refused), attempts[0])
        out.bound += trial.bound
        out.unbound += trial.unbound
        out.refused += trial.refused
        out.records += trial.records
        out.unchecked += trial.unchecked
        out.unbound_reasons += trial.unbound_reasons
        if not trial.bound and not trial.refused and status == "holds":
            out.holds_unbound.append(path)
    if t.get("applies") != applies_of(statuses) and len(statuses) == len(hyps):
        out.refused.append((f"{base}.applies", "-", f"applies is {t.get('applies')!r}, the statuses give "
                                                    f"{applies_of(statuses)!r}"))


def recheck_document(doc: Any, *, prefix: str = "$", checkpoint: Any = None, origin: str | None = None,
                     rerun: bool = False, budget: bool = True) -> DocumentCheck:
    """Re-check one document against the catalogue (issue 38): every certificate's subject re-derived
    from the document's ``params``, every status from its certificate, names, claims and ``applies``
    from the catalogue entry, and the system's document-level checks (the gaussian regime); a system
    with a document checker of its own (:data:`flowcert.bindings.DOCUMENT_CHECKERS`: ``pretrained``)
    is re-checked by it, against ``checkpoint`` when given. Parameters given by reference
    (``{"$ref": FILE, "sha256": HEX}``) are read back from FILE (as named, else beside ``origin``, the
    file being re-checked) and must have that digest (:func:`dereferenced`). With ``rerun``, the records of a
    re-derived document are run again and compared (:func:`flowcert.rerun.rerun`). With ``budget`` (the
    default), the exact work of its certificates is estimated first, as ``flowcert recheck`` does
    (:func:`flowcert.recheck_budget.check_recheck_budget`).

    Returns
    -------
    DocumentCheck
        The bound / unbound / refused counts and where each refusal is.

    Raises
    ------
    flowcert.errors.ParamError
        With ``budget``: the document's certificates exceed the re-check budget of the limits table.
    """
    from .bindings import DERIVED, EXTRA_CHECKS, entries_of
    from .documents import params_reference

    if budget and isinstance(doc, dict):
        from .recheck_budget import check_recheck_budget

        check_recheck_budget([(origin or "<document>", [(None, doc)])], certificates_in)
    out = DocumentCheck()
    if isinstance(doc, dict) and is_certificate(doc):
        check_certificate(out, prefix, doc, None, resolver({}), None)
        return out
    if not isinstance(doc, dict):
        return out
    if SWEEP_RECORD_KEYS <= doc.keys() and "flowcert" not in doc:
        return _sweep_record(doc, prefix, checkpoint, origin)
    doc = dereferenced(doc, prefix, origin, out)
    if params_reference(doc.get("params")) is not None:  # a reference not followed: nothing can be re-derived
        return _unfollowed(doc, prefix, out)
    system = doc.get("system")
    from .bindings import DOCUMENT_CHECKERS
    from .systems import REGISTRY

    if "flowcert" in doc and not (isinstance(system, str) and (system in REGISTRY or system in DOCUMENT_CHECKERS)):
        out.refused.append((f"{prefix}.system", "-", f"{system!r} is not a system of flowcert "
                                                     f"({', '.join([*REGISTRY, *DOCUMENT_CHECKERS])})"))
        system = None  # its certificates are still checked, each on its own
    checker = _document_checker(system)
    if checker is not None:
        return checker(doc, prefix, checkpoint)
    table = entries_of(system) if isinstance(system, str) else {}
    resolve = resolver(doc, DERIVED.get(system) if isinstance(system, str) else None)
    seen: set[str] = set()
    theorems = doc.get("theorems")
    if isinstance(theorems, list):
        for i, t in enumerate(theorems):
            tid = t.get("id") if isinstance(t, dict) else None
            base = f"{prefix}.theorems[{i}]"
            entry = table.get(tid) if isinstance(tid, str) else None
            if table and entry is None:
                out.refused.append((f"{base}.id", "-", f"{tid!r} is not an entry of the {system} catalogue"))
            _theorem(out, base, t, entry, resolve, seen, doc.get("params"))
    for path, cert in certificates_in(doc, prefix):
        if path in seen or any(path.startswith(s + ".") for s in seen):
            continue
        check_certificate(out, path, cert, None, resolve, None, claims_checked=bool(table))
    if isinstance(system, str) and system in EXTRA_CHECKS:
        for path, reason in EXTRA_CHECKS[system](doc):
            out.refused.append((f"{prefix}{path[1:]}" if path.startswith("$") else path, "-", reason))
    from .rederive import rederivable, rederive

    if rederivable(doc):  # the second guarantee: the document is what flowcert computes on its parameters
        found, out.records_not_rerun = rederive(doc, prefix)
        out.refused += [(path, "derived", reason) for path, reason in found]
        out.rederived = True
        if rerun:
            from .rerun import rerun as run_again

            found, out.records_rerun, out.records_not_rerun = run_again(doc, prefix)
            out.refused += [(path, "record", reason) for path, reason in found]
    return out


def _unfollowed(doc: dict[str, Any], prefix: str, out: DocumentCheck) -> DocumentCheck:
    """A document whose parameter reference could not be followed (refused or unread, in ``out``): its
    certificates are counted, unchecked, and every ``holds`` rests on nothing re-checked."""
    for path, _ in certificates_in(doc, prefix):
        out.unbound += 1
        out.unchecked.append(path)
    for i, t in enumerate(doc.get("theorems") or []):
        for j, h in enumerate((t.get("hypotheses") or []) if isinstance(t, dict) else []):
            if isinstance(h, dict) and h.get("status") == "holds":
                out.holds_unbound.append(f"{prefix}.theorems[{i}].hypotheses[{j}]")
    return out


def _document_checker(system: Any) -> Any:
    """The document checker of ``system`` (:data:`flowcert.bindings.DOCUMENT_CHECKERS`), or None."""
    import importlib

    from .bindings import DOCUMENT_CHECKERS

    target = DOCUMENT_CHECKERS.get(system) if isinstance(system, str) else None
    if target is None:
        return None
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def _sweep_record(rec: dict[str, Any], prefix: str, checkpoint: Any, origin: str | None = None) -> DocumentCheck:
    """A sweep line: its ``result`` re-checked as the document it is, then the line's own provenance
    (:func:`flowcert.pretrained.binding.recheck_line`)."""
    result = rec.get("result")
    from .documents import params_reference
    from .pretrained.binding import recheck_line

    if not isinstance(result, dict):
        out = DocumentCheck()
    else:  # a referenced parameter file is read once, for the document and for the line
        first = DocumentCheck()
        ref = params_reference(result.get("params"))
        if ref is not None and ref[0] != rec.get("file"):
            first.refused.append((f"{prefix}.result.params", "-", f"references {ref[0]!r}, not the line's file "
                                                                   f"{rec.get('file')!r}"))
        result = dereferenced(result, f"{prefix}.result", origin, first)
        if params_reference(result.get("params")) is not None:  # not followed: nothing can be re-derived
            out = _unfollowed(result, f"{prefix}.result", first)
        else:
            out = recheck_document(result, prefix=f"{prefix}.result", checkpoint=checkpoint, origin=origin, budget=False)
            out.refused[:0] = first.refused
    recheck_line({**rec, "result": result}, out, prefix, checkpoint)
    from .sweeplines import line_refusals

    refusals, unread = line_refusals(rec, prefix, origin)
    out.refused += [(path, "-", why) for path, why in refusals]
    out.unread += unread
    return out

