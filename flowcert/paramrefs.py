r"""Parameters given by reference: a document whose ``params`` is ``{"$ref": FILE, "sha256": HEX}`` (what
``pretrained verify`` writes per head) is re-checked on FILE's parameters, read back and compared by digest
(:func:`dereferenced`; used by :mod:`flowcert.recheck`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .recheck_certificate import DocumentCheck
    from .records import Document


def referenced_file(name: str, origin: str | None) -> str | None:
    """Where a parameter reference's FILE is: as named, else beside ``origin`` (the referring file); None when
    neither is a file."""
    import os

    candidates = [name] + ([os.path.join(os.path.dirname(origin), name)] if origin and not os.path.isabs(name) else [])
    return next((c for c in candidates if os.path.isfile(c)), None)


def dereferenced(doc: Document, prefix: str, origin: str | None, out: DocumentCheck) -> Document:
    """``doc`` with a parameter reference ``{"$ref": FILE, "sha256": HEX}`` replaced by the parameters as
    understood (the system's validation of FILE, as ``verify`` writes them); ``doc`` itself without one.

    FILE is looked up as named, then beside ``origin``. Its bytes must have the SHA-256 ``HEX`` and its
    provenance must be the document's, else the reference is refused (``out.refused``); a file that
    cannot be read is ``out.unread`` and the document keeps its reference (its certificates then name
    inputs it does not carry: unchecked)."""
    from .documents import params_reference, plain, understood_params
    from .errors import ParamError
    from .files import load_file_sha256
    from .schema import PROVENANCE_KEY
    from .systems import REGISTRY

    ref = params_reference(doc.get("params"))
    if ref is None:
        return doc
    name, sha = ref
    where = f"{prefix}.params"
    found = referenced_file(name, origin)
    if found is None:
        out.unread.append(f"{where}: {name!r} not found")
        return doc
    try:
        raw, got = load_file_sha256(found)
    except ParamError as exc:
        out.unread.append(f"{where}: {exc}")
        return doc
    if got != sha:
        out.refused.append((f"{where}.sha256", "-", f"{found!r} has SHA-256 {got}, not the {sha} the document was "
                                                    "made from"))
        return doc
    system = doc.get("system")
    if not isinstance(system, str) or system not in REGISTRY:
        out.refused.append((f"{prefix}.system", "-", f"{system!r} is not a system"))
        return doc
    try:
        params = understood_params(system, raw)
        prov = raw.get(PROVENANCE_KEY)
        if prov is not None:
            from .pretrained.provenance import check_provenance

            prov = check_provenance(prov)
    except ParamError as exc:
        out.refused.append((where, "-", f"{found!r} is not valid {system} parameters: {exc}"))
        return doc
    if plain({"p": prov})["p"] != doc.get(PROVENANCE_KEY):
        out.refused.append((f"{prefix}.{PROVENANCE_KEY}", "-", f"not the provenance of {found!r}"))
    return {**doc, "params": params}
