r"""What ``flowcert recheck`` re-derives in an attention document beyond its hypotheses (issue 38).

* ``equilibria attention``: each class record's verdict, ``stable`` and certificate (kind
  ``attention_bipartite_spectrum``, bound to the document's :math:`V` and :math:`\beta Q^\top K`, for the
  class :math:`(k,n_1,n_2)` the record names); each listed equilibrium's ``eigvec_index``, ``n1``, ``n2``,
  ``signs``, ``stable`` and ``class`` (re-derived exactly: consensus / bipartite, and polygonal when
  :math:`\lambda_k=0` or an equal split has :math:`a_k=0`) against the class it points to; a Newton point's
  ``stable`` against its Krawczyk certificate, bound to :math:`V` and :math:`\beta Q^\top K`. Its point
  ``X`` and its float spectra are the certificate's own objects and observations.
* ``verify attention``: the consensus entries report exactly one of ``P > 0`` (constant P) and
  ``P = P^T > 0`` (time-varying P); a tetrahedron prediction's stability certificate is bound to
  :math:`\beta` read from head 0 and its status is the one the certificate proves. A simulation's
  ``limit_class`` stays an observation.

:func:`check` is registered in :data:`flowcert.bindings.EXTRA_CHECKS`.
"""

from __future__ import annotations

from typing import Any

from .. import bindings as bd

__all__ = ["check"]

_P_NAMES = ("P > 0", "P = P^T > 0")
_P_ENTRIES = ("consensus:lemma-3.1", "consensus:thm-3.1", "consensus:thm-3.2")


def check(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Refusals ``(JSON path, reason)`` of an attention document's claims beyond its hypotheses."""
    out: list[tuple[str, str]] = []
    if isinstance(doc.get("theorems"), list):
        out += _theorems(doc)
    if "classes" in doc or "equilibria" in doc:
        out += _equilibria(doc)
    return out


def _theorems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    from .consensus_hypotheses import P_FORMS

    out = []
    for i, t in enumerate(doc["theorems"]):
        if not isinstance(t, dict) or not isinstance(t.get("hypotheses"), list):
            continue
        names = [h.get("name") for h in t["hypotheses"] if isinstance(h, dict)]
        if t.get("id") in _P_ENTRIES and names != ["evaluation"] and sum(n in _P_NAMES for n in names) != 1:
            out.append((f"$.theorems[{i}].hypotheses", f"{t['id']} reports exactly one of {list(_P_NAMES)}"))
        eq = (t.get("prediction") or {}).get("equilibrium") if isinstance(t.get("prediction"), dict) else None
        stab = eq.get("stability") if isinstance(eq, dict) else None
        if isinstance(stab, dict):
            where = f"$.theorems[{i}].prediction.equilibrium.stability"
            c = stab.get("certificate")
            heads = (doc.get("params") or {}).get("heads") or [{}]
            want = {"beta": f"-({P_FORMS['P' if 'P' in heads[0] else 'QK']})[0,0]"}
            if c is None:
                if stab.get("status") != "unknown":
                    out.append((where, f"status {stab.get('status')!r} without its tetrahedron_spectrum_sign certificate"))
            elif c.get("kind") != "tetrahedron_spectrum_sign" or c.get("subject") != want:
                out.append((f"{where}.certificate", f"the tetrahedron's certificate must be a tetrahedron_spectrum_sign "
                                                    f"bound to {want}"))
            elif stab.get("status") != ("holds" if (c.get("data") or {}).get("stable") is True else "fails"):
                out.append((f"{where}.status", "the status is not the one its certificate proves"))
    return out


def _equilibria(doc: dict[str, Any]) -> list[tuple[str, str]]:
    from ..certificates.subjects import SubjectError
    from .consensus_hypotheses import _params_of
    from .enumeration import STABLE, class_subject

    try:
        p = _params_of(doc)
    except (KeyError, SubjectError) as exc:
        return [("$.params", f"the parameters do not read back ({exc})")]
    classes = doc.get("classes") if isinstance(doc.get("classes"), list) else []
    out: list[tuple[str, str]] = []
    subject = class_subject(p)
    for i, c in enumerate(classes):
        where = f"$.classes[{i}]"
        if not isinstance(c, dict):
            out.append((where, "a class record is not an object"))
            continue
        cert, verdict = c.get("certificate"), c.get("verdict")
        if cert is None:
            if verdict != "unknown" or c.get("stable") is not None:
                out.append((where, f"verdict {verdict!r} / stable {c.get('stable')!r} without its certificate"))
            continue
        data = cert.get("data") if isinstance(cert, dict) else None
        if not isinstance(data, dict) or cert.get("kind") != "attention_bipartite_spectrum" or cert.get("subject") != subject:
            out.append((f"{where}.certificate", f"a class certificate is an attention_bipartite_spectrum bound to {subject}"))
            continue
        if [data.get("k"), data.get("n1"), data.get("n2")] != [_int(c.get("k")) - 1, c.get("n1"), c.get("n2")]:
            out.append((f"{where}.certificate", "the certificate is for another class than (k, n1, n2)"))
        if data.get("claim") != verdict or verdict not in STABLE:
            out.append((f"{where}.verdict", f"verdict {verdict!r} is not the certificate's {data.get('claim')!r}"))
        elif c.get("stable") is not STABLE[verdict]:
            out.append((f"{where}.stable", f"stable is {c.get('stable')!r}, the verdict gives {STABLE[verdict]!r}"))
    records = doc.get("equilibria") if isinstance(doc.get("equilibria"), list) else []
    labels = _labels(p) if any(isinstance(e, dict) and e.get("eigvec_index") is not None for e in records) else None
    for j, e in enumerate(records):
        if isinstance(e, dict):
            out += _record(f"$.equilibria[{j}]", e, classes, p, labels, subject)
    return out


def _int(x: Any) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else -10**9


def _labels(p: Any) -> Any:
    """``(k, n1, n2) -> exact labels`` (0-based k) of ``p``'s eigenvector classes, memoised."""
    from .enumeration import _data, eigen_labels

    D = _data(p)
    memo: dict[tuple[int, int, int], list[str]] = {}

    def of(k: int, n1: int, n2: int) -> list[str] | None:
        if D.enc is None or not 0 <= k < p.d:
            return None
        if (k, n1, n2) not in memo:
            memo[(k, n1, n2)] = eigen_labels(D, k, n1, n2)
        return memo[(k, n1, n2)]

    return of


def _record(where: str, e: dict[str, Any], classes: list[Any], p: Any, labels: Any,
            subject: dict[str, str]) -> list[tuple[str, str]]:
    from .enumeration import STABLE

    ptr, k = e.get("certificate"), e.get("eigvec_index")
    if k is None:  # a Newton point: its stability is its Krawczyk certificate's
        want = {key: v for key, v in subject.items() if key != "variant"}
        if ptr is None:
            return [] if e.get("stable") is None else [(f"{where}.stable", "stable without a certificate")]
        data = ptr.get("data") if isinstance(ptr, dict) else None
        if not isinstance(data, dict) or ptr.get("kind") != "attention_krawczyk_equilibrium" or ptr.get("subject") != want:
            return [(f"{where}.certificate", f"a Newton point's certificate is an attention_krawczyk_equilibrium bound to {want}")]
        if data.get("sqrt_d") != (p.d if p.normalization == "sqrt" else None):
            return [(f"{where}.certificate", "sqrt_d is not the document's normalisation")]
        if e.get("stable") is not STABLE.get(data.get("claim")):
            return [(f"{where}.stable", f"stable is {e.get('stable')!r}, the certificate proves {data.get('claim')!r}")]
        return []
    signs, n1, n2 = e.get("signs"), e.get("n1"), e.get("n2")
    if not isinstance(signs, list) or [signs.count(1), signs.count(-1)] != [n1, n2] or len(signs) != p.n:
        return [(f"{where}.signs", "signs do not give (n1, n2) over n tokens")]
    ref = [i for i, c in enumerate(classes) if isinstance(c, dict) and c.get("k") == k and
           sorted([c.get("n1"), c.get("n2")]) == sorted([n1, n2])]
    if not ref:
        return [(f"{where}.eigvec_index", f"no class (k, n1, n2) = ({k}, {n1}, {n2}) in classes")]
    cl = classes[ref[0]]
    out = []
    if ptr is None:
        if cl.get("certificate") is not None:
            out.append((f"{where}.certificate", f"the record of a certified class has no certificate (classes[{ref[0]}])"))
    elif not isinstance(ptr, dict) or ptr.get("class") != ref[0] or not isinstance(cl.get("certificate"), dict) or \
            [ptr.get("kind"), ptr.get("claim")] != [cl["certificate"].get("kind"), cl["certificate"].get("claim")]:
        out.append((f"{where}.certificate", f"the pointer is not to classes[{ref[0]}] and its certificate"))
    if e.get("stable") is not cl.get("stable"):
        out.append((f"{where}.stable", f"stable is {e.get('stable')!r}, classes[{ref[0]}] says {cl.get('stable')!r}"))
    want_labels = labels(_int(k) - 1, n1, n2) if labels is not None else None
    if want_labels is not None and e.get("class") != want_labels:
        out.append((f"{where}.class", f"class is {e.get('class')!r}, exactly {want_labels!r}"))
    return out


bd.EXTRA_CHECKS["attention"] = check
