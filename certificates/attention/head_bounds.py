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

The checker of ``sup_norm_bound`` certificates is here: every head of ``heads`` (when present), then
the top-level head, by :func:`~flowcert.certificates.attention.bounds.frobenius_sup_bound` or, for a
constant head, :meth:`~flowcert.certificates.attention.bounds.ScaledProduct.frobenius_upper`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, TypedDict

import sympy as sp

from ..records import JSONObject
from .bounds import ScaledProduct, ScaledProductData, as_symbolic, frobenius_sup_bound, srepr_rows

__all__ = ["HeadEntry", "head_data", "check_heads"]


class HeadEntry(TypedDict, total=False):
    """One head of ``heads``: ``constant`` (a :class:`~flowcert.certificates.attention.bounds.ScaledProduct`'s data), or ``M`` (rows of SymPy text) in ``t``."""

    constant: ScaledProductData
    M: list[list[str]]
    t: str


def head_data(P: Any) -> HeadEntry:
    """One head's entry of ``heads``: ``{"constant": {beta, K, Q}}`` for a constant head
    (:class:`~flowcert.certificates.attention.bounds.ScaledProduct`), else ``{"M": rows, "t": name}``."""
    if isinstance(P, ScaledProduct):
        return {"constant": P.data()}
    Ms, t = as_symbolic(P)
    return {"M": srepr_rows(Ms), "t": t.name}


def check_heads(data: JSONObject) -> bool:
    """Every entry of ``data["heads"]`` is bounded by ``data["bound"]`` (with ``derivative`` as given)."""
    heads = data["heads"]
    if not isinstance(heads, list) or not heads or not all(isinstance(h, dict) for h in heads):
        return False
    allowed = {"constant", "M", "t"}
    common = {"bound": data["bound"], "derivative": data.get("derivative", False)}
    return all(set(h) <= allowed and ("constant" in h) != ("M" in h) and _check_sup_bound({**h, **common})
               for h in heads)


def _check_constant_bound(data: JSONObject) -> bool:
    """A constant head (:class:`ScaledProduct`): :math:`b\\ge` its Frobenius bound, or :math:`b\\ge0=\\|\\dot P\\|`."""
    head, bound = ScaledProduct.from_data(data["constant"]), Fraction(data["bound"])
    if head is None or bound < 0:
        return False
    return True if data.get("derivative") else bound >= head.frobenius_upper()


def _check_sup_bound(data: JSONObject) -> bool:
    if "heads" in data:  # the bound for every head
        if not check_heads(data):
            return False
        top = {k: data[k] for k in ("constant", "M", "t") if k in data}
        if not top or top in data["heads"]:
            return True  # every head is checked; a top-level head (older documents) is one of them
    if "constant" in data:
        return _check_constant_bound(data)
    t = sp.Symbol(data.get("t", "t"), real=True)
    M = sp.Matrix([[sp.sympify(e, locals={"t": t}) for e in row] for row in data["M"]])
    if data.get("derivative"):
        if frobenius_sup_bound(M, t)[0] is None:  # P itself must be built from continuous functions
            return False
        M = M.diff(t)
    b, _ = frobenius_sup_bound(M, t, allow_sign=bool(data.get("derivative")))
    return b is not None and b <= Fraction(data["bound"])
