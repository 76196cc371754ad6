r"""A bound on :math:`\sup_{t\ge0}\|P_\eta(t)\|_F` (or on :math:`\|\dot P_\eta\|_F`) for *every* head
(consensus paper, Lemma 4.1 and Thms 4.1, 5.1, 6.1), bindable to a document's heads.

A ``sup_norm_bound`` certificate carries the head with the largest bound (``constant`` or ``M``, as
:mod:`flowcert.certificates.attention.bounds` writes it). With ``heads`` in its data, a list with one
entry per head in the same form (:func:`head_data`), it claims the bound for every head; the largest head
beside them is then optional (kept for small heads, dropped for large ones, and when present it must be
one of ``heads``): the checker runs the bound check of :mod:`.bounds` on each entry, so no head is left
out. The entries are what the loader makes of the document's heads (a constant head as its float
data and :math:`\beta`, a time-varying one as exact rational SymPy text in ``t``): a document's recheck
derives them from its own ``params`` and compares them field by field.
"""

from __future__ import annotations

from typing import Any

from .bounds import ScaledProduct, _as_symbolic, _check_sup_bound, _srepr_rows

__all__ = ["head_data", "check_heads"]


def head_data(P: Any) -> dict[str, Any]:
    """One head's entry of ``heads``: ``{"constant": {beta, K, Q}}`` for a constant head
    (:class:`~flowcert.certificates.attention.bounds.ScaledProduct`), else ``{"M": rows, "t": name}``."""
    if isinstance(P, ScaledProduct):
        return {"constant": P.data()}
    Ms, t = _as_symbolic(P)
    return {"M": _srepr_rows(Ms), "t": t.name}


def check_heads(data: dict[str, Any]) -> bool:
    """Every entry of ``data["heads"]`` is bounded by ``data["bound"]`` (with ``derivative`` as given)."""
    heads = data["heads"]
    if not isinstance(heads, list) or not heads or not all(isinstance(h, dict) for h in heads):
        return False
    allowed = {"constant", "M", "t"}
    common = {"bound": data["bound"], "derivative": data.get("derivative", False)}
    return all(set(h) <= allowed and ("constant" in h) != ("M" in h) and _check_sup_bound({**h, **common})
               for h in heads)
