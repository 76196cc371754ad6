r"""JSON documents: what ``--json`` prints and what :meth:`flowcert.result.Result.to_json` returns.

One encoding for every command (docs/design.md, "The command line and JSON contract"): numpy scalars and arrays become
numbers and nested lists (:func:`json_default`), and JSON having no :math:`\pm\infty` or NaN,
non-finite floats are written as ``null`` (:func:`finite`). :func:`plain` applies both, so the
dict it returns is exactly the document the command line prints; :func:`emit` prints it.
:func:`verify_document` is the ``verify SYSTEM --params FILE`` document of one parameter set (the
sweep calls it per file).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import Document, JSONObject

__all__ = ["REF_KEY", "document", "emit", "header", "finite", "json_default", "params_reference", "plain", "records",
           "understood_params", "verify_document"]


def header(system: str) -> Document:
    """The first two keys of every document: ``{"flowcert": version, "system": system}``."""
    from . import __version__

    return {"flowcert": __version__, "system": system}


def document(system: str, params: object, **rest: object) -> Document:
    """A document: :func:`header`, ``params`` as understood (after validation), then the command's own
    keys in order."""
    return {**header(system), "params": params, **rest}


def finite(obj: Any) -> Any:
    """JSON has no inf/nan: non-finite floats are written as null (documented in the README)."""
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def json_default(obj: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars and arrays as Python numbers and nested lists, and a typed
    part of a document (a :class:`~flowcert.catalogue.TheoremResult`, a result object: anything with
    ``to_json()``) as its record."""
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    to_json = getattr(obj, "to_json", None)
    if callable(to_json):
        return to_json()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def records(doc: Mapping[str, object]) -> Document:
    """``doc`` with its typed parts written as their records (``theorems``: the
    :class:`~flowcert.catalogue.TheoremResult` objects the systems return, as theorem records);
    numpy values are kept (:func:`plain` converts them). What the systems' ``verify`` returns."""
    return {k: [t.to_json() if callable(getattr(t, "to_json", None)) else t for t in v] if k == "theorems" else v
            for k, v in doc.items()}


def plain(doc: Mapping[str, object]) -> JSONObject:
    """``doc`` as the plain JSON value ``--json`` prints (numpy converted, non-finite floats null)."""
    return json.loads(json.dumps(doc, default=json_default), parse_constant=lambda _: None)  # as finite()


_LITERAL = {True: "true", False: "false", None: "null"}
_SCALARS = {str, float, int, bool, type(None)}


def _scalar_text(x: Any) -> str:
    """A JSON scalar as ``json.dumps`` writes it (non-finite floats refused, as ``allow_nan=False``)."""
    t = type(x)
    if t is str:
        return json.encoder.encode_basestring_ascii(x)  # type: ignore[attr-defined]
    if t is float:
        if x != x or x in (float("inf"), float("-inf")):
            raise ValueError(f"out of range float value for JSON: {x!r}")
        return float.__repr__(x)
    if t is bool or x is None:
        return _LITERAL[x]
    if t is int:
        return int.__repr__(x)
    raise TypeError(f"not a JSON scalar: {t.__name__}")


def _indented(o: Any, level: int, out: list[str]) -> None:
    """Append the text of the plain JSON value ``o`` at depth ``level`` to ``out``, as
    ``json.dumps(o, indent=1)`` writes it; a list of scalars (a matrix row) is joined in one step."""
    pad = "\n" + " " * (level + 1)
    if isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        out.append("{")
        for i, (k, v) in enumerate(o.items()):
            if type(k) is not str:
                raise TypeError("document keys must be strings")
            out.append(("," if i else "") + pad + json.encoder.encode_basestring_ascii(k) + ": ")  # type: ignore[attr-defined]
            _indented(v, level + 1, out)
        out.append("\n" + " " * level + "}")
    elif isinstance(o, (list, tuple)):
        if not o:
            out.append("[]")
            return
        kinds = set(map(type, o))
        if kinds <= _SCALARS:
            text = float.__repr__ if kinds == {float} else _scalar_text
            if text is float.__repr__ and not all(map(math.isfinite, o)):
                text = _scalar_text  # raises on the non-finite entry, as json.dumps does
            out.append("[" + pad + ("," + pad).join(map(text, o)) + "\n" + " " * level + "]")
            return
        out.append("[")
        for i, v in enumerate(o):
            out.append(("," if i else "") + pad)
            _indented(v, level + 1, out)
        out.append("\n" + " " * level + "]")
    else:
        out.append(_scalar_text(o))


def indented(value: Any) -> str:
    """``json.dumps(value, indent=1, allow_nan=False)`` of a plain JSON value, byte for byte, without the
    pure-Python encoder's call per entry (a d = 384 head's document is 600,000 of them)."""
    out: list[str] = []
    _indented(value, 0, out)
    return "".join(out)


def emit(doc: Mapping[str, object], as_json: bool, summary: str) -> None:
    """Print ``doc`` as one JSON document (``as_json``) or the human ``summary``."""
    if as_json:
        sys.stdout.write(indented(plain(doc)) + "\n")
    else:
        sys.stdout.write(summary)


#: the key of a parameter reference, ``{"$ref": FILE, "sha256": HEX}``: a document's ``params`` when they
#: are the file's, read and validated, and not copied (:func:`verify_document` with ``reference=True``)
REF_KEY = "$ref"


def params_reference(params: Any) -> tuple[str, str] | None:
    """``(file, sha256)`` when ``params`` is a parameter reference (:data:`REF_KEY`), else None."""
    if isinstance(params, dict) and params.keys() == {REF_KEY, "sha256"} and isinstance(params[REF_KEY], str) \
            and isinstance(params["sha256"], str):
        return params[REF_KEY], params["sha256"]
    return None


def understood_params(system: str, raw: object) -> JSONObject:
    """The ``params`` a ``verify`` document of the raw mapping ``raw`` carries: the system's validation of
    it, as plain JSON (what ``recheck`` re-derives a referenced or recomputed parameter file into).

    Raises
    ------
    ParamError
        ``raw`` is not valid parameters of ``system``.
    """
    from .systems import get_system

    return plain(get_system(system).load(raw, command="verify").to_json())


def verify_document(system: str, path: Any, *, simulate: bool = False, seed: int | None = None,
                    checks: frozenset[str] | None = None, reference: bool = False) -> Document:
    """The ``verify SYSTEM --params FILE`` document (one parameter set; the sweep calls this per file).

    Parameters
    ----------
    system : str
        A registered system name (:data:`flowcert.systems.REGISTRY`).
    path : str or path-like or mapping or parameter object
        The parameters, as :meth:`flowcert.system.System.load` takes them.
    simulate, seed, checks
        As ``--simulate`` / ``--seed`` / ``--checks`` (None: the default set of ``--simulate``).
    reference : bool
        With a file ``path``: the document's ``params`` is ``{"$ref": path, "sha256": HEX}`` (HEX: the
        SHA-256 of the bytes read) instead of the parameters as understood: what ``pretrained verify``
        writes per head (a d = 384 head's parameters are 8 MB). ``flowcert recheck`` reads the file back,
        compares its digest and re-derives every subject from it.

    Returns
    -------
    dict
        The document with theorem records (:func:`records` of the system's ``verify_run``; numpy values
        not yet converted: see :func:`plain`); a file or mapping that carries ``provenance`` (an
        exported head) gives the document the same top-level ``provenance``.
    """
    import os
    from collections.abc import Mapping

    from .errors import ParamError
    from .files import load_file_sha256
    from .schema import PROVENANCE_KEY
    from .systems import get_system

    sysobj = get_system(system)
    raw, ref = path, None
    if isinstance(path, (str, os.PathLike)):  # read once: the parameters and where they came from
        raw, sha = load_file_sha256(path)
        ref = {REF_KEY: os.fspath(path), "sha256": sha} if reference else None
    try:
        p = sysobj.load(raw, command="verify")
    except ParamError as err:
        raise (err.with_file(os.fspath(path)) if raw is not path else err) from None
    from .engine import explain_skips
    from .limits import VERIFY_SECONDS
    from .numeric.integration import command_budget

    with command_budget(VERIFY_SECONDS, f"verify {system}"):  # every budgeted stage and run shares it
        typed = sysobj.verify_run(p, simulate=simulate or checks is not None, seed=seed, checks=checks).document
        explain_skips(typed.get("theorems", []), sysobj, simulate, checks)
        doc = records(typed)
    if isinstance(raw, Mapping) and raw.get(PROVENANCE_KEY) is not None:
        from .pretrained.provenance import check_provenance

        doc = {**doc, PROVENANCE_KEY: check_provenance(raw[PROVENANCE_KEY])}
    return doc if ref is None else {**doc, "params": ref}
