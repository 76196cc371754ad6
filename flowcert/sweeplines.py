r"""A sweep line is bound to its file and consistent in itself.

A line of ``verify SYSTEM --params DIR`` is ``{file, index, status, exit_code, result, error, seconds,
provenance, sha256}``. ``recheck`` (and ``--resume`` before it skips a file) holds it to:

* **its words**: ``status`` ``ok`` ⇔ ``exit_code`` 0, a ``result`` document and no ``error``;
  ``bad_input`` ⇔ 2 and ``internal_error`` ⇔ 1, each with an ``error`` line and no ``result``;
  ``index`` a non-negative integer;
* **its file**: ``sha256`` (added to the contract) is the SHA-256 of the bytes the line was made from; where
  the file can be read (as named, else beside the sweep's output) its bytes must have that digest and
  its parameters, read by ``verify``'s reader, must be the ``result``'s ``params`` — so a ``file`` swapped
  between two lines is refused; where it cannot be read, the binding is reported unread;
* **the other lines**: no file and no index twice in one output.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import Document, SweepLine

__all__ = ["STATUS_EXIT", "file_digest", "line_refusals", "duplicate_refusals"]

#: a line's status and its exit code
STATUS_EXIT = {"ok": 0, "bad_input": 2, "internal_error": 1}


def file_digest(path: str) -> str | None:
    """The SHA-256 (hex) of a file's bytes, or None when it cannot be read."""
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _found(name: str, origin: str | None) -> str | None:
    candidates = [name] + ([os.path.join(os.path.dirname(origin), name)] if origin and not os.path.isabs(name) else [])
    return next((c for c in candidates if os.path.isfile(c)), None)


def line_refusals(rec: SweepLine, prefix: str, origin: str | None) -> tuple[list[tuple[str, str]], list[str]]:
    """Refusals ``(path, reason)`` of one sweep line, and what could not be read (``path: reason``)."""
    out: list[tuple[str, str]] = []
    status, code, result, error = rec.get("status"), rec.get("exit_code"), rec.get("result"), rec.get("error")
    if status not in STATUS_EXIT:
        return [(f"{prefix}.status", f"one of {sorted(STATUS_EXIT)}")], []
    if code != STATUS_EXIT[status] or isinstance(code, bool):
        out.append((f"{prefix}.exit_code", f"a line with status {status} exits {STATUS_EXIT[status]}"))
    if (status == "ok") != isinstance(result, dict) or (status == "ok") != (error is None):
        out.append((f"{prefix}.result", "status ok carries a result and no error; any other status an error and no result"))
    index = rec.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        out.append((f"{prefix}.index", "a non-negative integer"))
    name, sha = rec.get("file"), rec.get("sha256")
    if not isinstance(name, str):
        return out + [(f"{prefix}.file", "the parameter file's name")], []
    if rec.get("provenance") is not None:  # a checkpoint's export: bound by its provenance and parameter reference
        return out, []
    if sha is None:  # a line written before lines named their file's digest: its binding is not checked
        return out, [f"{prefix}.sha256: the line names no digest of {name!r}: its file binding is not checked"]
    path = _found(name, origin)
    if path is None:
        return out, [f"{prefix}.file: {name!r} not found: the line's binding to it is not checked"]
    if file_digest(path) != sha:
        return out + [(f"{prefix}.sha256", f"{path!r} does not have this SHA-256: the line is not about that file")], []
    if isinstance(result, dict) and "$ref" not in (result.get("params") or {}):
        out += _same_params(result, path, f"{prefix}.result.params")
    return out, []


def _same_params(result: Document, path: str, where: str) -> list[tuple[str, str]]:
    """The line's document carries the parameters of its file, as ``verify``'s reader understands them."""
    from .documents import understood_params
    from .errors import InputError

    system = result.get("system")
    try:
        want = understood_params(system, path) if isinstance(system, str) else None
    except (InputError, KeyError):
        return [(where, f"{path!r} is not valid {system} parameters")]
    if want is None or {k: v for k, v in want.items()} != result.get("params"):
        return [(where, f"not the parameters of {path!r}")]
    return []


def duplicate_refusals(lines: list[tuple[int | None, Any]]) -> list[tuple[int | None, str, str]]:
    """``(line, path, reason)`` for a file or an index reported twice among a sweep output's lines."""
    out: list[tuple[int | None, str, str]] = []
    seen_files: dict[str, int | None] = {}
    seen_index: dict[int, int | None] = {}
    for n, rec in lines:
        if not isinstance(rec, dict) or "file" not in rec or "flowcert" in rec:
            continue
        f, i = rec.get("file"), rec.get("index")
        if isinstance(f, str):
            if f in seen_files:
                out.append((n, "$.file", f"{f!r} is reported on line {seen_files[f]} too"))
            seen_files.setdefault(f, n)
        if isinstance(i, int) and not isinstance(i, bool):
            if i in seen_index:
                out.append((n, "$.index", f"index {i} is reported on line {seen_index[i]} too"))
            seen_index.setdefault(i, n)
    return out
