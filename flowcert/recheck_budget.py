"""The budget of a ``recheck`` run: every certificate's data (and each document's parameters, from which subjects
are re-derived) estimated before any exact work (:func:`flowcert.certificates.budget.estimate`), against the limits
table's ``recheck:seconds`` (in all) and ``recheck:bytes`` (per certificate)."""

from __future__ import annotations

from typing import Any, Callable

from .certificates.budget import estimate
from .limits import LIMITS
from .errors import InputError
from .schema import ParamError

__all__ = ["check_recheck_budget"]


def check_recheck_budget(files: list[tuple[str, list[tuple[int | None, Any]]]],
                         certificates_in: Callable[[Any], Any]) -> None:
    """Refuse (a :class:`~flowcert.schema.ParamError` naming the file, the certificate and the budget) documents
    whose certificates' exact re-check is estimated (:func:`flowcert.certificates.budget.estimate`, from the size
    of their data alone) to exceed ``recheck:seconds`` in all or ``recheck:bytes`` for one certificate; each
    document's ``params`` (subjects are re-derived from them) are estimated as one more certificate.
    ``files``: ``(name, [(line, document), ...])`` as :func:`flowcert.recheck.read_documents` reads them;
    ``certificates_in``: the ``(path, certificate)`` pairs of a document (:func:`flowcert.recheck.certificates_in`)."""
    seconds, peak = float(LIMITS["recheck:seconds"]), float(LIMITS["recheck:bytes"])
    spent = 0.0
    for name, docs in files:
        for line, doc in docs:
            held = [("$", doc), ("$.result", doc.get("result"))] if isinstance(doc, dict) else []  # a sweep line: its result
            items = [(f"{at}.params", "parameters", d["params"]) for at, d in held
                     if isinstance(d, dict) and isinstance(d.get("params"), (dict, list))]
            forms = _structured_params([d.get("params") for _, d in held if isinstance(d, dict)], name)
            items += [(p, str(c.get("kind")), _with_forms(c, forms)) for p, c in certificates_in(doc)]
            for path, kind, data in items:
                cost = estimate(data, seconds - spent, peak)
                spent += cost.seconds
                if spent > seconds or cost.bytes > peak:
                    where = path if line is None else f"line {line}: {path}"
                    what = "with the certificates before it " if cost.seconds <= seconds and cost.bytes <= peak else ""
                    raise ParamError(None, f"{where} ({kind}) {what}exceeds the re-check budget ({seconds:g} s, "
                                           f"{peak / 2**30:g} GB of exact work; flowcert.limits.LIMITS['recheck:seconds'"
                                           f"], ['recheck:bytes']): {cost.describe()}", file=name)


def _structured_params(candidates: list[Any], origin: str) -> dict[str, Any]:
    """The factored and diagonal matrices among a document's parameters (a referenced parameter file read for
    them), by key: a certificate whose subject names one is priced on its form, not as a d x d matrix."""
    from .documents import params_reference
    from .files import load_file
    from .paramrefs import referenced_file

    for params in candidates:
        ref = params_reference(params)
        if ref is not None:  # read as recheck reads it (the shared reader and its limits), for pricing only
            path = referenced_file(ref[0], origin)
            try:
                params = load_file(path) if path is not None else None
            except InputError:
                params = None
        if isinstance(params, dict):
            return {k: v for k, v in params.items() if isinstance(v, dict) and ("factors" in v or "diagonal" in v)}
    return {}


def _with_forms(cert: Any, forms: dict[str, Any]) -> Any:
    """A certificate's data with each subject field it leaves to the document (``params.KEY`` or ``-params.KEY``)
    filled in by that parameter's factored or diagonal form, for pricing only."""
    data = cert.get("data") if isinstance(cert, dict) else None
    subject = cert.get("subject") if isinstance(cert, dict) else None
    if not forms or not isinstance(data, dict) or not isinstance(subject, dict):
        return data
    filled = dict(data)
    for field, expr in subject.items():
        key = expr.lstrip("-").strip() if isinstance(expr, str) else ""
        if field not in filled and key.startswith("params.") and key[7:] in forms:
            filled[field] = forms[key[7:]]
    return filled
