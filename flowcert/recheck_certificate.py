r"""Finding and checking the certificates of one document: the part of ``flowcert recheck`` that
:mod:`flowcert.recheck` and the pretrained binding (:mod:`flowcert.pretrained.binding`) share.

A certificate :math:`c` found in a document (:func:`certificates_in`) is checked by
:func:`check_certificate`: each field its subject names is re-derived from the document
(:func:`resolver`) and must be the field it carries, then its kind's exact checker runs on the data, so that

.. math:: \text{bound}(c) \iff \mathrm{subject}(c) = \mathrm{derive}(\mathrm{doc})
          \;\wedge\; \mathrm{check}_{\mathrm{kind}(c)}(\mathrm{data}(c)) = \mathtt{True};

what was established is tallied in a :class:`DocumentCheck`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .records import CertificateRecord

__all__ = ["CERTIFICATE_KEYS", "OPTIONAL_CERTIFICATE_KEYS", "is_certificate", "looks_like_certificate",
           "certificates_in", "resolver", "DocumentCheck", "kind_of", "check_certificate", "applies_of"]

#: The keys of a serialised certificate, exactly (``subject`` may be added: :data:`OPTIONAL_CERTIFICATE_KEYS`).
CERTIFICATE_KEYS = frozenset({"kind", "claim", "checker", "data"})
#: Keys a certificate may carry besides :data:`CERTIFICATE_KEYS`.
OPTIONAL_CERTIFICATE_KEYS = frozenset({"subject", "digest"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_certificate(obj: Any) -> bool:
    """True for a JSON object whose keys are exactly :data:`CERTIFICATE_KEYS` (values unchecked:
    a malformed one is found, then refused, rather than skipped)."""
    return isinstance(obj, dict) and CERTIFICATE_KEYS <= obj.keys() <= CERTIFICATE_KEYS | OPTIONAL_CERTIFICATE_KEYS


def looks_like_certificate(obj: Any) -> bool:
    """An object with both ``kind`` and ``data``: a certificate, or one whose keys were altered
    (refused, so that deleting ``checker`` cannot hide a certificate from the count)."""
    return isinstance(obj, dict) and "kind" in obj and "data" in obj


def _step(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENT.match(key) else f"{path}[{json.dumps(key)}]"


def certificates_in(doc: Any, path: str = "$") -> Iterator[tuple[str, CertificateRecord]]:
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

_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def resolver(doc: Any, derived: Any = None) -> Any:
    """``name -> value`` over a document: a path from its root, ``params.A``, ``params.heads[0].V``,
    ``A_exact`` (``KeyError`` if absent); ``derived``: name -> ``fn(doc)``, inputs the system recomputes
    from the document (:data:`flowcert.bindings.DERIVED`), looked up first."""

    def resolve(name: str) -> Any:
        if derived and name in derived:
            return derived[name](doc)
        value: Any = doc
        pos = 0
        text = "." + name
        while pos < len(text):
            m = _PATH_STEP.match(text, pos)
            if m is None:
                raise KeyError(name)
            key, index = m.group(1), m.group(2)
            if key is not None:
                if not isinstance(value, dict) or key not in value:
                    raise KeyError(name)
                value = value[key]
            else:
                if not isinstance(value, list) or int(index) >= len(value):
                    raise KeyError(name)
                value = value[int(index)]
            pos = m.end()
        return value

    return resolve


@dataclass
class DocumentCheck:
    """What ``recheck`` established about one document.

    ``bound``: certificates whose subject was re-derived from the document's parameters and matched,
    accepted by their checker, proving the status the document states, with the claim their data prove.
    ``unbound``: certificates accepted by their checker whose subject could not be re-derived (no
    declaration, or an input the document does not carry): each proves its claim for the data it carries.
    ``refused``: ``(path, kind, reason)``. ``uncertified``: paths of statuses with no certificate
    (a ``holds`` of a declared entry is refused instead). ``holds_unbound``: ``holds`` resting on an
    unbound certificate, or on no certificate in an entry without a declaration.
    """

    bound: int = 0
    unbound: int = 0
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    uncertified: list[str] = field(default_factory=list)
    holds_unbound: list[str] = field(default_factory=list)
    #: certificates that name an input the document does not carry, and so could not be checked at all
    unchecked: list[str] = field(default_factory=list)
    #: ``(path, kind, accepted by its checker)`` of every certificate examined
    records: list[tuple[str, str, bool]] = field(default_factory=list)
    #: unbound certificates about a checkpoint's head that were not re-derived from its weights (no
    #: ``--checkpoint``, or parameters that are float64 products of the weights)
    checkpoint_unbound: list[str] = field(default_factory=list)
    #: ``path: reason`` of a parameter reference whose file could not be read (missing, unreadable)
    unread: list[str] = field(default_factory=list)
    #: whether the document's derived fields were re-derived from its parameters (:mod:`flowcert.rederive`)
    rederived: bool = False
    #: records (simulations, cross-checks) checked for type and range only, not re-run
    records_not_rerun: int = 0
    #: records run again and compared (``recheck --rerun``, :mod:`flowcert.rerun`)
    records_rerun: int = 0
    #: ``(path, why)`` of accepted certificates unbound for a reason of their own (besides ``unchecked`` and
    #: ``checkpoint_unbound``): no subject, or no claim re-derived
    unbound_reasons: list[tuple[str, str]] = field(default_factory=list)

    @property
    def rechecked(self) -> bool:
        """Nothing refused, every referenced parameter file read, and every ``holds`` rests on a bound certificate."""
        return not self.refused and not self.holds_unbound and not self.unread

    def _repr_html_(self) -> str:
        """The notebook view (:func:`flowcert.display.recheck_html`)."""
        from .display import recheck_html

        return recheck_html(self)


def kind_of(cert: Any) -> str:
    k = cert.get("kind") if isinstance(cert, dict) else None
    return k if isinstance(k, str) else json.dumps(k)


def _encoded(value: Any) -> Any:
    """A subject's exact value as certificate data: ``"p/q"`` matrices and numbers, other values as they are."""
    import flint

    from .certificates.core import encode
    from .certificates.diagonal import Diagonal
    from .certificates.lowrank import LowRank

    if isinstance(value, (LowRank, Diagonal)):
        return value.to_json()
    if isinstance(value, flint.fmpq_mat):
        return encode(value)
    if isinstance(value, flint.fmpq):
        return str(value)
    return value


def check_certificate(out: DocumentCheck, path: str, cert: Any, proof: Any, resolve: Any, status: str | None,
                 claims_checked: bool = True) -> bool:
    """Check one certificate; True when it is bound (False: unbound or refused, recorded in ``out``).

    Each field named by the subject (the catalogue's for a hypothesis, the certificate's own elsewhere)
    is re-derived from the document and filled in (a saved copy must match it); then the checker runs
    on the filled data, the status it proves and its claim are re-derived. ``claims_checked``: refuse an
    unbound certificate whose claim is not the one its data prove (off only inside documents of a
    system with no binding declarations, whose claims are free text)."""
    from .certificates.claims import claim
    from .certificates.core import InputNotCarried, explain
    from .certificates.subjects import SubjectError, evaluate, matches, near

    kind = kind_of(cert)

    def refuse(why: str) -> bool:
        out.refused.append((path, kind, why))
        out.records.append((path, kind, False))
        return False

    if not is_certificate(cert):
        return refuse(f"malformed certificate: keys {sorted(cert)}")
    if not isinstance(cert["data"], dict):
        return refuse("malformed certificate: 'data' is not an object")
    subject = proof.subject if proof is not None else cert.get("subject")
    if proof is not None and "subject" in cert and cert["subject"] != dict(proof.subject):
        return refuse(f"subject {cert['subject']} is not the catalogue's {dict(proof.subject)}")
    if subject is not None and (not isinstance(subject, dict) or not all(isinstance(v, str) for v in subject.values())):
        return refuse("malformed subject: not an object of expressions")
    data = dict(cert["data"])
    binds = bool(subject) or (subject == {} and kind == "symbolic_identity")
    computed = _computed(subject)
    for key, expr in (subject or {}).items():
        try:
            value = evaluate(expr, resolve)
        except SubjectError as exc:
            if "does not have" not in str(exc):
                return refuse(f"subject {expr}: {exc}")
            binds = False  # an input this document does not carry (a head referenced by its checkpoint)
            continue
        if expr in computed:  # a float computation: its copy must be the re-derived value up to rounding
            if key not in data or not near(value, data[key]):  # noise; the checker then runs on the value itself
                return refuse(f"subject {expr} re-derived from the document's params does not match the "
                              f"certificate's {key}")
            data[key] = _encoded(value)
        elif key in data:
            if not matches(value, data[key]):
                return refuse(f"subject {expr} does not match the certificate's {key}")
        else:
            data[key] = _encoded(value)
    if subject and not binds and any(k not in data for k in subject):
        out.unbound += 1  # nothing to check it on without the inputs it names
        out.unchecked.append(path)
        return False
    if subject and binds and not computed:
        from .certificates.subjects import subject_digest

        filled = [k for k in subject if k not in cert["data"]]
        if filled and "digest" not in cert:
            return refuse(f"the certificate names its subject {sorted(filled)} but carries no digest of it")
        named = {k: data[k] for k in subject}
        if "digest" in cert and cert["digest"] != subject_digest(named) and \
                cert["digest"] != subject_digest(named, legacy=True):  # a document written before the float form
            return refuse(f"subject {', '.join(subject[k] for k in sorted(subject))} is not the data this "
                          "certificate was made for (digest differs)")
    try:
        ok, why = explain({**cert, "data": data}, missing_raises=True)
    except InputNotCarried:  # an input named by the data is not to be had here (a side file not kept): unchecked
        out.unbound += 1
        out.unchecked.append(path)
        return False
    if not ok:
        return refuse(why if not (binds and computed) else
                      f"on {', '.join(sorted(computed))} re-derived from the document's params: {why}")
    if proof is not None:
        got = proof.direction(data)
        if got != status:
            return refuse(f"the certificate proves '{got}', the document says '{status}'")
    want = claim(kind, data, dict(subject) if binds else {})
    if (binds or claims_checked) and want is not None and cert["claim"] != want:
        return refuse(f"claim {cert['claim']!r} is not what the data prove ({want!r})")
    out.records.append((path, kind, True))
    if binds and want is not None:
        out.bound += 1
        return True
    out.unbound += 1
    out.unbound_reasons.append((path, "its claim is not re-derived from its data (no claim of this kind is declared)"
                                if binds else "no subject: it proves its claim only for the data it carries"))
    return False


def _computed(subject: Any) -> set[str]:
    """The expressions of ``subject`` that name a floating-point computation (:data:`flowcert.bindings.COMPUTED`)."""
    from .bindings import COMPUTED

    return {e for e in subject.values() if e in COMPUTED} if isinstance(subject, dict) else set()


def applies_of(statuses: list[str]) -> bool | None:
    """The document's ``applies`` that the statuses give (assumed: stated by the user, params.assume)."""
    from .certificates.verdicts import Applies

    return Applies.of(set(statuses)).json
