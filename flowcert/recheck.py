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
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from .files import _json_int, _no_duplicates, _read_regular, _DuplicateKey, _LongInteger, MAX_JSON_DIGITS
from .schema import ParamError

__all__ = ["CERTIFICATE_KEYS", "is_certificate", "looks_like_certificate", "certificates_in", "read_documents", "Refusal", "Recheck", "recheck_files"]

#: The keys of a serialised certificate, exactly.
CERTIFICATE_KEYS = frozenset({"kind", "claim", "checker", "data"})
#: Keys that make a top-level object a sweep record (``flowcert verify`` on several files).
SWEEP_RECORD_KEYS = frozenset({"file", "index", "status", "result"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_certificate(obj: Any) -> bool:
    """True for a JSON object whose keys are exactly :data:`CERTIFICATE_KEYS` (values unchecked:
    a malformed one is found, then refused, rather than skipped)."""
    return isinstance(obj, dict) and obj.keys() == CERTIFICATE_KEYS


def looks_like_certificate(obj: Any) -> bool:
    """An object with both ``kind`` and ``data``: a certificate, or one whose keys were altered
    (refused, so that deleting ``checker`` cannot hide a certificate from the count)."""
    return isinstance(obj, dict) and "kind" in obj and "data" in obj


def _step(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENT.match(key) else f"{path}[{json.dumps(key)}]"


def certificates_in(doc: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every certificate (every object that :func:`looks_like_certificate`) in a JSON value with its
    JSON path (``$.theorems[3].hypotheses[1].certificate``), in document order; the data of a
    certificate are not searched further."""
    stack: list[tuple[str, Any]] = [(path, doc)]
    while stack:
        where, obj = stack.pop()
        if looks_like_certificate(obj):
            yield where, obj
        elif isinstance(obj, dict):
            stack.extend((_step(where, str(k)), v) for k, v in reversed(list(obj.items())))
        elif isinstance(obj, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(obj))))


def _is_flowcert_json(obj: Any) -> bool:
    return isinstance(obj, dict) and ("flowcert" in obj or SWEEP_RECORD_KEYS <= obj.keys() or is_certificate(obj))


def _parse(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_json_int)


def _problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
    if isinstance(exc, _DuplicateKey):
        return f"duplicate key {exc.args[0]!r}"
    if isinstance(exc, _LongInteger):
        return f"a JSON integer has {exc.args[0]} digits (at most {MAX_JSON_DIGITS})"
    return "not valid JSON (nested too deeply)"


_PARSE_ERRORS = (json.JSONDecodeError, _DuplicateKey, _LongInteger, RecursionError)


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
        text = _read_regular(name, fail).decode("utf-8-sig")
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


@dataclass
class Refusal:
    """One refused certificate: where it is and why."""

    file: str
    line: int | None
    path: str
    kind: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "kind": self.kind, "reason": self.reason}


@dataclass
class Recheck:
    """Outcome of re-checking the certificates of several files (``to_json`` is the ``--json`` document)."""

    files: list[str]
    certificates: int = 0
    accepted: int = 0
    refused: list[Refusal] = field(default_factory=list)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every certificate re-checked (also true when there were none)."""
        return not self.refused

    def to_json(self) -> dict[str, Any]:
        return {"flowcert": __version__, "files": list(self.files), "certificates": self.certificates,
                "accepted": self.accepted, "refused": [r.to_json() for r in self.refused],
                "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())}}

    def summary(self) -> str:
        """Plain-text report: totals, counts by kind, and the path of each refused certificate."""
        lines = [f"flowcert {__version__} — recheck: {self.certificates} certificate(s) in {len(self.files)} file(s), "
                 f"{self.accepted} accepted, {len(self.refused)} refused"]
        if self.by_kind:
            width = max(len(k) for k in self.by_kind)
            lines.append(f"  {'kind':<{width}}  accepted  refused")
            for k, v in sorted(self.by_kind.items()):
                lines.append(f"  {k:<{width}}  {v['accepted']:>8}  {v['refused']:>7}")
        for r in self.refused:
            at = r.file if r.line is None else f"{r.file}:{r.line}"
            lines.append(f"REFUSED {at} {r.path} ({r.kind}): {r.reason}")
        return "\n".join(lines) + "\n"


def recheck_files(paths: Sequence[str]) -> Recheck:
    """Read every file (all of them first, so bad input is reported before any work), then
    re-check every certificate they contain.

    Raises
    ------
    ParamError
        A file is not something flowcert wrote (see :func:`read_documents`).
    """
    from .certificates.core import explain

    loaded = [(p, read_documents(p)) for p in paths]
    out = Recheck(files=[str(p) for p in paths])
    for p, docs in loaded:
        for line, doc in docs:
            for path, cert in certificates_in(doc):
                if is_certificate(cert):
                    ok, reason = explain(cert)
                else:
                    ok, reason = False, (f"malformed certificate: keys {sorted(cert)}, expected exactly "
                                         f"{sorted(CERTIFICATE_KEYS)}")
                kind = cert["kind"] if isinstance(cert["kind"], str) else json.dumps(cert["kind"])
                tally = out.by_kind.setdefault(kind, {"accepted": 0, "refused": 0})
                out.certificates += 1
                if ok:
                    out.accepted += 1
                    tally["accepted"] += 1
                else:
                    tally["refused"] += 1
                    out.refused.append(Refusal(str(p), line, path, kind, reason))
    return out
