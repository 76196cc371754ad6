r"""``recheck --rerun``: a document's records run again and compared.

Re-derivation (:mod:`flowcert.rederive`) checks a record (a simulation, a cross-check, a ``reach``
integration) for type and range only: it is the output of a numerical run. With ``--rerun`` the run
is repeated from the document's own parameters, with the cross-checks the document ran (each
theorem's cross-check is ``entry_checks[id]``; one whose record says "not requested" was not run)
and the seed its records state, and compared with the record:

* verdict words (a cross-check's ``status``, an integration's ``status``) and every other string,
  boolean and null must be equal;
* an integer (a count, a rank, an index) must be an integer within :math:`10^{-3}` relative of the re-run's
  (so a small count is equal), never within the floor below: a rank stands beside singular-value gaps of
  :math:`10^{14}` in the same record;
* any other number :math:`a` against the re-run :math:`b` must satisfy

  .. math:: |a-b|\le 10^{-3}\max(|a|,|b|)\quad\text{or}\quad|a-b|\le 10^{-6}\,s,

  with :math:`s` the largest magnitude in the same record and in the state the run starts from (a
  ``reach`` integration's start and target, a simulation's parameters; scale-free: an exact
  rescaling rescales both). A run is a measurement: another BLAS or CPU moves round-off-sized residuals, which the
  floor :math:`10^{-6}s` absorbs, while a verdict never moves.

What cannot be re-run (a user's module, a pretrained head's forward pass, a run whose document
does not state its seed) is counted as not re-run, never as re-checked.
"""

from __future__ import annotations

import math
from typing import Any, Mapping
from .records import Document

__all__ = ["RERUN_RTOL", "RERUN_FLOOR", "rerun"]

#: relative tolerance of a re-run number
RERUN_RTOL = 1e-3
#: absolute floor, relative to the largest magnitude of the record the number sits in
RERUN_FLOOR = 1e-6

_NOT_REQUESTED = "not requested"


def _numbers(v: Any) -> list[float]:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return []
    if isinstance(v, (int, float)):
        return [abs(float(v))] if math.isfinite(v) else []
    if isinstance(v, Mapping):
        return [x for u in v.values() for x in _numbers(u)]
    if isinstance(v, list):
        return [x for u in v for x in _numbers(u)]
    return []


def compare_run(a: Any, b: Any, path: str, scale: float, out: list[tuple[str, str]]) -> None:
    """Refusals of a record ``a`` against its re-run ``b`` (module docstring), appended to ``out``."""
    if isinstance(b, Mapping):
        if not isinstance(a, Mapping) or set(a) != set(b):
            out.append((path, "the re-run record has other keys"))
            return
        for k in b:
            compare_run(a[k], b[k], f"{path}.{k}", scale, out)
        return
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            out.append((path, f"the re-run gives a list of {len(b)}"))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare_run(x, y, f"{path}[{i}]", scale, out)
        return
    if isinstance(b, int) and not isinstance(b, bool):  # a count or a rank: relative agreement only, never the
        if isinstance(a, int) and not isinstance(a, bool) and abs(a - b) <= RERUN_RTOL * max(abs(a), abs(b)):
            return  # floor of a record's largest magnitude (a rank beside a 1e14 singular-value gap)
        out.append((path, f"{a!r} is not the re-run {b!r}"))
        return
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        if math.isfinite(a) and math.isfinite(b) and (abs(a - b) <= RERUN_RTOL * max(abs(a), abs(b))
                                                      or abs(a - b) <= RERUN_FLOOR * scale):
            return
        out.append((path, f"{a!r} is not the re-run {b!r}"))
        return
    if type(a) is not type(b) or a != b:
        out.append((path, f"{_shown(a)} is not the re-run {_shown(b)}"))


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _record(a: Any, b: Any, path: str, out: list[tuple[str, str]], state: Any = None) -> None:
    """Compare a record with its re-run, the floor's scale the largest magnitude of both and of ``state`` (the
    parameters the run starts from: a record of errors, all round-off sized, is measured against the state)."""
    compare_run(a, b, path, max(_numbers(a) + _numbers(b) + _numbers(state), default=0.0), out)


def _verify_checks(doc: Document, sysobj: Any) -> tuple[frozenset[str], int | None]:
    """The cross-checks a verify document ran (its entries' checks, except those whose record says "not
    requested") and the seed its records state (None: none stated)."""
    entry_checks = getattr(sysobj, "entry_checks", None) or {}
    ran, seed = set(), None
    for t in doc.get("theorems", []):
        check = entry_checks.get(t.get("id")) if isinstance(t, Mapping) else None
        cc = t.get("cross_check") if isinstance(t, Mapping) else None
        if not isinstance(cc, Mapping) or not isinstance(cc.get("details"), Mapping):
            continue
        if isinstance(cc["details"].get("seed"), int) and not isinstance(cc["details"]["seed"], bool):
            seed = cc["details"]["seed"]
        reason = cc["details"].get("reason")
        if check is not None and not (cc.get("status") == "skipped" and isinstance(reason, str)
                                      and reason.startswith(_NOT_REQUESTED)):
            ran.add(check)
    sim = doc.get("simulation")
    if isinstance(sim, Mapping) and sim.get("skipped") is None and "simulation" in (getattr(sysobj, "checks", None) or {}):
        ran.add("simulation")  # a system whose run is one of its named checks (attention)
    if isinstance(doc.get("seed"), int) and not isinstance(doc.get("seed"), bool):
        seed = doc["seed"]  # a document that states its seed at the top (attention)
    return frozenset(ran), seed


def rerun(doc: Document, prefix: str = "$") -> tuple[list[tuple[str, str]], int, int]:
    """Re-run a document's records and compare them (module docstring).

    Parameters
    ----------
    doc : Mapping
        A document that re-derives (:func:`flowcert.rederive.rederivable`), its parameters dereferenced.
    prefix : str
        Its JSON path.

    Returns
    -------
    (list of (str, str), int, int)
        Refusals ``(JSON path, reason)``, the records re-run, and the records that could not be.
    """
    from .errors import InputError
    from .rederive import classifier, reader_input
    from .systems import get_system

    system = doc["system"]
    out: list[tuple[str, str]] = []
    if "equilibria" in doc:  # a listing of seeded runs' end states (no exact classes) is a record not re-run here
        return out, 0, int(not doc.get("classes"))
    raw = reader_input(system, dict(doc["params"]))
    sysobj = get_system(system)
    classify = classifier(system, doc)
    checks, seed = _verify_checks(doc, sysobj)
    try:
        fresh = sysobj.rerun_document(raw, doc, simulate="simulation" in doc or bool(checks), seed=seed, checks=checks)
    except InputError as exc:
        return [(f"{prefix}.params", f"cannot be re-run: {exc}")], 0, 0
    state = [fresh.get("params"), fresh.get("target")]  # where the runs start (reach: and where they end)
    rerun_n = 0
    for key in doc:  # the simulation, a reach integration, a system's other records (rnn: identities, ...)
        if key not in ("flowcert", "provenance") and classify(f"$.{key}") == "record" and key in fresh:
            _record(doc[key], fresh[key], f"{prefix}.{key}", out, state)
            rerun_n += 1
    by_id = {t["id"]: t for t in fresh.get("theorems", [])}
    for i, t in enumerate(doc.get("theorems", [])):
        want = by_id.get(t.get("id")) if isinstance(t, Mapping) else None
        if want is None:
            continue  # re-derivation refuses an unknown or missing theorem
        for key in t:  # its cross-check, and any part the system records (rnn: numerical predictions)
            if key in want and classify(f"$.theorems[{i}].{key}") == "record":
                _record(t[key], want[key], f"{prefix}.theorems[{i}].{key}", out)
                rerun_n += 1
    return out, rerun_n, 0
