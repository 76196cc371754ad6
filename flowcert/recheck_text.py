"""The plain-text report of ``flowcert recheck`` and the names of its unbound certificates (issue 47).

An *unbound* certificate is accepted by its checker but its subject is not re-derived from the document's
parameters, so it proves its claim only for the data it carries. :func:`unbound_named` names each one of a
document, by file, line and JSON path, with why it is unbound; :func:`summary` is the report, which under
``--strict`` lists every one of them (``UNBOUND FILE PATH: why``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from . import __version__

__all__ = ["UNCHECKED", "CHECKPOINT", "UnboundRecord", "unbound_named", "summary"]

#: why a certificate that names an input the document does not carry is unbound
UNCHECKED = ("names an input this document does not carry (a checkpoint's head, a side file not kept, an unfollowed "
             "parameter reference): not checked")
#: why a certificate about a checkpoint's head is unbound, without ``--checkpoint`` and with it
CHECKPOINT = ("about a checkpoint's head, not re-derived from its weights (pass --checkpoint DIR)",
              "about a checkpoint's head whose parameters are not this checkpoint's weights recomputed (another "
              "checkpoint, or float64 products of its weights)")


class UnboundRecord(TypedDict):
    """One unbound certificate named in ``recheck --json`` (``unbound_certificates``): where it is and why."""

    file: str
    line: int | None
    path: str
    reason: str


def unbound_named(file: str, line: int | None, dc: Any, checkpoint: bool) -> list[UnboundRecord]:
    """``{"file", "line", "path", "reason"}`` of every unbound certificate of one document's
    :class:`~flowcert.recheck.DocumentCheck` ``dc`` (each path once; ``checkpoint``: ``--checkpoint`` was given)."""
    found: dict[str, str] = {}
    for path in dc.unchecked:
        found.setdefault(path, UNCHECKED)
    for path in dc.checkpoint_unbound:
        found.setdefault(path, CHECKPOINT[checkpoint])
    for path, why in dc.unbound_reasons:
        found.setdefault(path, why)
    return [{"file": file, "line": line, "path": p, "reason": why} for p, why in found.items()]


def _strict(out: Any) -> list[str]:
    """The ``--strict`` lines: the count, then ``UNBOUND FILE PATH: why`` for each unbound certificate."""
    if out.unbound_certificates:
        named = [(u["file"] if u["line"] is None else f"{u['file']}:{u['line']}", u["path"], u["reason"])
                 for u in out.unbound_certificates]
    else:  # a Recheck built by hand: its lists of paths (``FILE PATH``)
        named = [(*p.split(" ", 1), UNCHECKED) for p in dict.fromkeys(out.unchecked)]
        named += [(*p.split(" ", 1), CHECKPOINT[out.checkpoint is not None]) for p in dict.fromkeys(out.checkpoint_unbound)]
    rest = out.unbound - len(named)
    lines = [f"STRICT: {out.unbound} unbound certificate(s)" + (":" if named else "")
             + (f" ({rest} more not named)" if named and rest > 0 else "")]
    return lines + [f"UNBOUND {at} {path}: {why}" for at, path, why in named]


def summary(out: Any) -> str:
    """Plain-text report of a :class:`~flowcert.recheck.Recheck`: totals, counts by kind, the path of each
    refusal, and under ``strict`` every unbound certificate by path with why it is unbound."""
    lines = [f"flowcert {__version__} — recheck: {out.certificates} certificate(s) in {len(out.files)} file(s), "
             f"{out.accepted} accepted, {len(out.refused)} refused",
             f"  bound {out.bound} (subject re-derived from the document's parameters), unbound {out.unbound} "
             f"(each proves its claim only for the data it carries), refused {len(out.refused)}"]
    if out.records_rerun or out.records_not_rerun:
        lines.append(f"  records (simulations, cross-checks, integrations): {out.records_rerun} re-run and compared, "
                     f"{out.records_not_rerun} checked for type and range only"
                     + (" (pass --rerun to run them again)" if out.records_not_rerun else ""))
    if out.uncertified:
        lines.append(f"  {len(out.uncertified)} 'fails' without a certificate (uncertified)")
    if out.holds_unbound:
        lines.append(f"  {len(out.holds_unbound)} 'holds' rest on no bound certificate: NOT re-checked")
    for u in out.unread:
        lines.append(f"  parameter file not read: {u}: its document is NOT re-checked")
    if out.unchecked:
        lines.append(f"  {len(out.unchecked)} certificate(s) name inputs this document does not carry (a "
                     "checkpoint's head: pass --checkpoint): not checked")
    if out.checkpoint_unbound:
        why = "pass --checkpoint DIR" if out.checkpoint is None else \
            "another checkpoint, or parameters that are float64 products of its weights"
        lines.append(f"  {len(out.checkpoint_unbound)} certificate(s) about a checkpoint's heads not re-derived from "
                     f"its weights ({why}): unbound, each proves its claim for the data it carries")
    elif out.checkpoint is not None:
        lines.append(f"  checkpoint {out.checkpoint['directory']} (sha256 {out.checkpoint['sha256']}): head "
                     "certificates re-derived from its weights")
    if out.by_kind:
        width = max(len(k) for k in out.by_kind)
        lines.append(f"  {'kind':<{width}}  accepted  refused")
        for k, v in sorted(out.by_kind.items()):
            lines.append(f"  {k:<{width}}  {v['accepted']:>8}  {v['refused']:>7}")
    for r in out.refused:
        at = r.file if r.line is None else f"{r.file}:{r.line}"
        lines.append(f"REFUSED {at} {r.path} ({r.kind}): {r.reason}")
    for p in out.holds_unbound:
        lines.append(f"UNBOUND {p}: holds without a bound certificate")
    if out.strict and out.unbound:
        lines += _strict(out)
    return "\n".join(lines) + "\n"
