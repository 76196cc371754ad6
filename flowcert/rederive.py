r"""Re-derivation of a ``verify`` document: the document is what flowcert computes on its
own parameters, or it is refused.

Every field of a document is one of three classes (:func:`field_class`, stated in docs/cli.md):

* **derived**: a deterministic function of the parameters and the catalogue (statements,
  corrections, sources, hypothesis names, statuses, margins, methods, details, ``applies``,
  predictions, a regime on a certified basis, the consistency pass). ``recheck`` re-derives it with
  the same engine as ``verify`` (without simulation) from the document's own ``params``, read by the
  same reader as ``verify`` (whatever ``verify`` refuses, ``recheck`` refuses), and compares:
  words, strings, booleans, integers and nulls must be equal; a float :math:`a` against the
  re-derived :math:`b` must satisfy

  .. math:: |a-b|\le 10^{-6}\max(|a|,|b|)\quad\text{or}\quad|a-b|\le 64\,\epsilon\,s,

  with :math:`\epsilon=2^{-52}` and :math:`s` the largest magnitude of the array the value sits in
  (both parts scale-free: an exact rescaling of the parameters rescales the tolerance with it).
  Keys, list lengths and the order of records must be the re-derived ones: a removed, added,
  duplicated or reordered theorem or hypothesis is refused.
* **certified**: a certificate's ``data`` and ``digest``, checked by the certificate's independent
  checker from its subject (:mod:`flowcert.recheck`); its ``kind``, ``claim``, ``checker`` and
  ``subject`` are derived.
* **record**: the output of a numerical run: ``simulation``, each theorem's ``cross_check``, the
  version string. Checked for type and range (a cross-check's ``status`` is a verdict word, its
  ``details`` an object); ``recheck`` counts them as not re-run.

The gaussian ``regime`` and Table 1 are derived too. A document that ran eq. (7) is re-derived with
the run replaced by what its ``simulation`` record says of it (from :math:`(\mu_0,\Sigma_0)` to the
recorded final state, :func:`flowcert.gaussian.catalogue.recorded_run`): the equilibrium Newton finds
from there, its certificate, the regime's class and limits and every Table 1 verdict must be the
re-derived ones. The record itself is trusted only as a record (``recheck --rerun`` would re-run it).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .records import Document, JSONObject

__all__ = ["FLOAT_RTOL", "FLOAT_ULPS", "classifier", "compare", "field_class", "rederive", "rederivable"]

#: relative tolerance of a derived float
FLOAT_RTOL = 1e-6
#: absolute part, in units of the largest magnitude of the containing array (times 2^-52)
FLOAT_ULPS = 64.0
_EPS = 2.0 ** -52

CROSS_CHECK_WORDS = ("agrees", "disagrees", "skipped")

_RECORD = (r"^\$\.flowcert$", r"^\$\.simulation$", r"^\$\.provenance$", r"^\$\.theorems\[\d+\]\.cross_check$")
_CERTIFIED = (r"\.certificate\.(data|digest)$",)


def _system(name: Any) -> Any:
    from .systems import REGISTRY, get_system

    return get_system(name) if isinstance(name, str) and name in REGISTRY else None


def classifier(system: str | None = None, doc: Any = None) -> Callable[[str], str]:
    """The :func:`field_class` of documents of ``system`` like ``doc``, its patterns compiled once (a comparison
    classifies every leaf of a document: a MiniLM head's has hundreds of thousands)."""
    sysobj = _system(system)
    records = _RECORD + ((sysobj.record_patterns(doc) if isinstance(doc, dict) else sysobj.record_paths)
                         if sysobj is not None else ())
    certified = _CERTIFIED + (sysobj.certified_paths if sysobj is not None else ())
    rec, cert = re.compile("|".join(f"(?:{p})" for p in records)), re.compile("|".join(f"(?:{p})" for p in certified))

    def classify(path: str) -> str:
        return "record" if rec.search(path) else "certified" if cert.search(path) else "derived"

    return classify


def field_class(path: str, system: str | None = None, doc: Any = None) -> str:
    """``"record"``, ``"certified"`` or ``"derived"`` for a JSON path of a document ``doc`` of ``system``
    (module docstring; a system adds its own records and certified parts, :class:`flowcert.system.SystemBase`)."""
    return classifier(system, doc)(path)


def rederivable(doc: Any) -> bool:
    """Whether ``doc`` is a ``verify`` document that its system can re-derive from its parameters."""
    if not isinstance(doc, dict):
        return False
    sysobj = _system(doc.get("system"))
    return sysobj is not None and sysobj.rederivable(doc)


def reader_input(system: str, params: JSONObject) -> JSONObject:
    """The input ``verify``'s reader takes for a document's ``params`` as understood: the keys it derives and
    the absent optional ones (null) left out. Re-read, it must give the document's ``params`` back."""
    drop = _system(system).understood_only
    return {k: v for k, v in params.items() if v is not None and k not in drop}


def rederive(doc: Document, prefix: str = "$") -> tuple[list[tuple[str, str]], int]:
    """Refusals ``(JSON path, reason)`` of ``doc`` against its re-derivation, and the number of records not re-run.

    Parameters
    ----------
    doc : dict
        A ``verify`` document (:func:`rederivable`), its parameters dereferenced.
    prefix : str
        The document's JSON path (a sweep line's ``$.result``).

    Returns
    -------
    (list of (str, str), int)
    """
    from .errors import InputError

    out: list[tuple[str, str]] = []
    params = doc.get("params")
    if not isinstance(params, dict):
        return [(f"{prefix}.params", "a verify document carries its parameters, an object")], 0
    simulated = "simulation" in doc
    if simulated and not isinstance(doc["simulation"], dict):
        return [(f"{prefix}.simulation", "a record of the run: an object")], 1
    sysobj = _system(doc["system"])
    try:
        fresh = sysobj.rederived(reader_input(doc["system"], params), doc)
    except InputError as exc:  # the reader of verify refuses them: so does recheck
        return [(f"{prefix}.params", f"parameters verify refuses: {exc}")], 0
    except (ArithmeticError, ValueError, TypeError, KeyError) as exc:
        return [(f"{prefix}.params", f"cannot be re-derived from these parameters ({type(exc).__name__}: {exc})")], 0
    records = 0
    keys, want = list(doc), list(fresh) + [k for k in sysobj.optional_records if k in doc and k not in fresh]
    if set(keys) != set(want):
        extra, missing = sorted(set(keys) - set(want)), sorted(set(want) - set(keys))
        out.append((prefix, f"keys {extra} not in the re-derived document" if extra else f"keys {missing} missing"))
    classify = classifier(doc["system"], doc)
    for key in fresh:
        if key not in doc:
            continue
        path = f"{prefix}.{key}"
        if key in sysobj.claims_parts:  # a pass over the document's own claims: re-run on them
            try:
                want = sysobj.part_from_claims(key, doc)
            except (AttributeError, TypeError, KeyError, ValueError, IndexError):  # claims of the wrong shape
                out.append((path, "cannot be re-derived from the document's claims (a malformed part)"))
                continue
            compare(doc[key], want, path, out, prefix, classify=classify)
        else:
            records += compare(doc[key], fresh[key], path, out, prefix, classify=classify)
    out += [(f"{prefix}{p[1:]}", why) for p, why in sysobj.check_records(doc)]
    return out, records + simulated


def compare(a: Any, b: Any, path: str, out: list[tuple[str, str]], prefix: str, scale: float | None = None,
            system: str | None = None, doc: Any = None, classify: Callable[[str], str] | None = None) -> int:
    """Compare a document's value ``a`` with the re-derived ``b`` (``doc``: the whole document, whose system says
    which paths are records; ``classify``: its :func:`classifier`, made here when not given); returns the records
    met (not compared)."""
    classify = classify or classifier(system, doc)
    cls = classify("$" + path[len(prefix):])
    if cls == "record":
        _record(a, path, out)
        return 1
    if cls == "certified":
        _same_form(a, b, path, out)
        return 0
    if isinstance(b, dict):
        if not isinstance(a, dict):
            out.append((path, f"expected an object, got {_shown(a)}"))
            return 0
        if list(a) != list(b):
            extra, missing = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            why = (f"keys {extra} not in the re-derived record" if extra else
                   f"keys {missing} missing" if missing else "keys out of the re-derived order")
            out.append((path, why))
        return sum(compare(a[k], b[k], f"{path}.{k}", out, prefix, scale, classify=classify) for k in b if k in a)
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            out.append((path, f"expected a list of {len(b)}, got {_shown(a)}"))
            return 0
        s = _magnitude(b)
        return sum(compare(x, y, f"{path}[{i}]", out, prefix, s, classify=classify) for i, (x, y) in enumerate(zip(a, b)))
    if not _equal(a, b, scale):
        out.append((path, f"{_shown(a)} is not the re-derived {_shown(b)}"))
    return 0


def _same_form(a: Any, b: Any, path: str, out: list[tuple[str, str]]) -> None:
    """A certificate's data against the re-derived certificate's of the same kind: the values are its checker's to
    judge (a witness may differ from one machine's floats to another's), but the form is the kind's own: the same
    keys in every object, and an integer (an index, a count) where the kind writes one."""
    if isinstance(b, dict):
        if not isinstance(a, dict) or set(a) != set(b):
            got = sorted(a) if isinstance(a, dict) else _shown(a)
            out.append((path, f"certificate data with keys {got}, not the {sorted(b)} its kind writes"))
            return
        for k in b:
            _same_form(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(b, list):
        if not isinstance(a, list):
            out.append((path, f"expected a list in the certificate data, got {_shown(a)}"))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _same_form(x, y, f"{path}[{i}]", out)
    elif isinstance(b, int) and not isinstance(b, bool) and (isinstance(a, bool) or not isinstance(a, int)):
        out.append((path, f"expected an integer in the certificate data, got {_shown(a)}"))


def _equal(a: Any, b: Any, scale: float | None) -> bool:
    if isinstance(b, bool) or isinstance(a, bool) or b is None or a is None or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(b, (int, float)) and isinstance(a, (int, float)):
        if isinstance(b, int) and isinstance(a, int):
            return a == b
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        d = abs(a - b)
        return d <= FLOAT_RTOL * max(abs(a), abs(b)) or (scale is not None and d <= FLOAT_ULPS * _EPS * scale)
    return a == b


def _magnitude(v: Any) -> float:
    """The largest magnitude of the numbers in a (nested) list."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return 0.0
    if isinstance(v, (int, float)):
        return abs(float(v)) if math.isfinite(v) else 0.0
    if isinstance(v, list):
        return max((_magnitude(x) for x in v), default=0.0)
    return 0.0


def _record(a: Any, path: str, out: list[tuple[str, str]]) -> None:
    """A record's type and range."""
    if path.endswith(".cross_check"):
        if not isinstance(a, dict) or a.get("status") not in CROSS_CHECK_WORDS or not isinstance(a.get("details"), dict):
            out.append((path, f"a cross-check record: status one of {list(CROSS_CHECK_WORDS)}, details an object"))
    elif path.endswith(".flowcert") and not isinstance(a, str):
        out.append((path, "the version string"))


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
