r"""Pretrained documents bound to their checkpoint: ``flowcert recheck --checkpoint DIR``.

A head record of ``flowcert pretrained heads`` says where its head lies (``location``: the SHA-256 of
the checkpoint's weight files, :func:`flowcert.pretrained.provenance.files_sha256`, the layer, the head
and the slices of ``Wq, Wk, Wv, Wo``), and every certificate in it names its subject

.. code-block:: text

    checkpoint:<sha256>/layers/<layer>/heads/<head>/P      P = Q^T K   (a_i = Q[:, i], b_j = K[:, j])
    checkpoint:<sha256>/layers/<layer>/heads/<head>/U      U = W_O W_V (a_i = W_O[i, :], b_j = W_V[:, j])

(:func:`~flowcert.pretrained.hypotheses.head_subject`): the rows and columns a certificate carries
(:mod:`flowcert.certificates.lowrank`) are slices of those weights, not a free copy of M or U.

:func:`recheck_heads` re-derives, for each record, everything the declarations fix
(:data:`~flowcert.pretrained.hypotheses.HEAD_THEOREMS`, :data:`~flowcert.pretrained.hypotheses.HEAD_HYPOTHESES`):
the theorem ids, statements, predictions and hypothesis names in order, ``applies`` from the statuses,
each status from a certificate of a declared kind that proves that direction (checked by its exact
checker), each claim from the certificate's data, each subject and the location from the record's
layer and head and the document's digest. Then

* with a checkpoint (:func:`open_checkpoint`), the document's digest must be the checkpoint's, and every
  vector a certificate carries must equal its slice of the weights exactly (the stored float32/float64
  weights are dyadic rationals held exactly in float64; the certificate's ``float.hex`` strings are
  compared as float64 values): the certificate is **bound**. The proved inertia of the symmetric parts
  (``M.sym_part.inertia_proved``, which has no certificate) is proved again from the weights;
* without one, an accepted certificate is **unbound**: it proves its claim for the vectors it carries,
  and nothing says they are the checkpoint's.

A sweep line made from a checkpoint (``pretrained verify``: a ``provenance`` with ``checkpoint_sha256``)
is a ``verify`` document re-checked by its system's rules (:func:`flowcert.recheck.recheck_document`),
its parameters read back from the export it references (``{"$ref": FILE, "sha256": HEX}``,
:func:`flowcert.recheck.dereferenced`); :func:`recheck_line` adds that its ``provenance`` is its
document's, and with ``--checkpoint`` that the digest is the checkpoint's, that the parameters that
are exact slices of the weights (``Q``, ``K`` of an attention head) equal them, and that the whole
export, recomputed from the weights by the same float64 program (:func:`flowcert.pretrained.export.exported`:
``B``, ``V = W_O W_V``, the prompt's tokens), equals the document's parameters bit for bit. Then its
certificates are **bound**: the parameters they are bound to are this checkpoint's export. Without
``--checkpoint``, or where the recomputation differs by rounding only (another BLAS or torch build,
:data:`REEXPORT_RTOL`), they count **unbound**: they prove their claims about the export's parameters.

The trust boundary: a reader still trusts the paper's theorem, this catalogue's declaration of what each
certificate decides, and the checkpoint folder given to ``--checkpoint`` (its digest is what the
document names).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import OptionError, ParamError
from ..systems import REGISTRY, get_system
from .checkpoint import Checkpoint

if TYPE_CHECKING:
    from ..recheck_certificate import DocumentCheck
    from ..records import Document, HypothesisRecord, JSONObject, ProvenanceRecord, SweepLine

__all__ = ["CheckpointRef", "open_checkpoint", "recheck_heads", "recheck_line"]


@dataclass
class CheckpointRef:
    """A checkpoint given to ``flowcert recheck --checkpoint``: its folder, digest and weights."""

    directory: str
    sha256: str
    ckpt: Checkpoint
    _whole: Checkpoint | None = None

    def whole(self) -> Checkpoint:
        """Every weight of the checkpoint (``ckpt`` holds the attention blocks only), read once: what the
        prompt's tokens of an attention export are computed with."""
        if self._whole is None:
            from .checkpoint import load_checkpoint

            self._whole = self.ckpt if not self.ckpt.attention_only else load_checkpoint(self.directory)
        return self._whole


def open_checkpoint(directory: str) -> CheckpointRef:
    """Load the checkpoint of ``--checkpoint DIR`` (its weight files' SHA-256 and its weights).

    Raises
    ------
    flowcert.errors.OptionError
        Naming ``--checkpoint``: not a directory, missing or malformed weight files.
    """
    from .checkpoint import load_checkpoint

    if not Path(directory).is_dir():
        raise OptionError("--checkpoint", f"{directory!r} is not a directory")
    try:
        ckpt = load_checkpoint(directory, attention_only=True)  # the heads' weights; the digest covers every file
    except ParamError as exc:
        problem = exc.problem.removeprefix("--model: ")
        raise OptionError("--checkpoint", problem if str(directory) in problem else f"{directory!r}: {problem}") from None
    assert ckpt.sha256 is not None
    return CheckpointRef(str(directory), ckpt.sha256, ckpt)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _vectors(kind: str, data: JSONObject) -> list[tuple[str, str, Any, Any]]:
    """``(data field, "a" | "b", index, hex strings)`` of every vector a head certificate carries:
    ``a`` a row of A, ``b`` a column of B (N = A B)."""
    if kind == "entry_asymmetry":
        i, j = data["i"], data["j"]
        return [("a_i", "a", i, data["a_i"]), ("a_j", "a", j, data["a_j"]),
                ("b_i", "b", i, data["b_i"]), ("b_j", "b", j, data["b_j"])]
    out = []
    for k, it in enumerate(data["minors"]):
        for p, idx in enumerate(it["idx"]):
            out += [(f"minors[{k}].a[{p}]", "a", idx, it["a"][p]), (f"minors[{k}].b[{p}]", "b", idx, it["b"][p])]
    return out


def _same(strings: Any, vec: np.ndarray) -> bool:
    """Whether ``float.hex`` strings are exactly the float64 vector ``vec``."""
    try:
        return isinstance(strings, list) and len(strings) == len(vec) and all(
            float.fromhex(s) == float(v) for s, v in zip(strings, vec))
    except (TypeError, ValueError, OverflowError):
        return False


def _weights_mismatch(kind: str, data: JSONObject, factors: tuple[np.ndarray, np.ndarray], factor: str) -> str | None:
    """Why a certificate's vectors are not the checkpoint's slices (None when every one is)."""
    A, B = factors
    for name, side, idx, strings in _vectors(kind, data):
        if not _int(idx) or not 0 <= idx < A.shape[0]:
            return f"data.{name}: index {idx!r} is not a row/column of {factor} (size {A.shape[0]})"
        vec = A[idx] if side == "a" else B[:, idx]
        if not _same(strings, vec):
            what = f"row {idx} of A" if side == "a" else f"column {idx} of B"
            return f"data.{name} is not {what} for {factor} = A B of this head in --checkpoint (the weights differ)"
    return None


class _Heads:
    """The state of one document's re-check: the outcome, the document's digest and the checkpoint."""

    def __init__(self, out: Any, sha: Any, ref: CheckpointRef | None, causal: Any) -> None:
        self.out, self.sha, self.ref, self.causal = out, sha, ref, causal
        self.seen: set[str] = set()

    def refuse(self, path: str, reason: str, kind: str = "-") -> None:
        self.out.refused.append((path, kind, reason))
        if kind != "-":
            self.out.records.append((path, kind, False))

    def record(self, base: str, rec: Any) -> None:
        from .hypotheses import HEAD_THEOREMS, head_location

        if not isinstance(rec, dict) or not _int(rec.get("layer")) or not _int(rec.get("head")) or not _int(rec.get("d_head")):
            return self.refuse(base, "a head record without integer layer, head and d_head")
        layer, head, dh = rec["layer"], rec["head"], rec["d_head"]
        factors = None
        if self.ref is not None:
            ck = self.ref.ckpt
            for key, value, top in (("layer", layer, ck.n_layers), ("head", head, ck.n_heads)):
                if not 0 <= value < top:
                    return self.refuse(f"{base}.{key}", f"{key} {value} is not in 0..{top - 1} of --checkpoint")
            if dh != ck.d_head:
                return self.refuse(f"{base}.d_head", f"d_head {dh} is not --checkpoint's {ck.d_head}")
            from .heads import head_at

            h = head_at(ck, layer, head)
            factors = {"P": h.factors("P"), "U": h.factors("U")}
        if factors is not None:
            self.inertia(base, rec, factors)
        loc = rec.get("location")
        for key in ("layer", "head"):
            if isinstance(loc, dict) and loc.get(key) != rec[key]:
                self.refuse(f"{base}.{key}", f"the record's {key} {rec[key]} is not its location's {loc.get(key)!r}")
        if loc != head_location(self.sha, layer, head, dh):
            self.refuse(f"{base}.location", f"not where layer {layer} head {head} lies in the checkpoint "
                                            f"{str(self.sha)[:12]}… (digest, tensors and slices)")
        want = [t for t in HEAD_THEOREMS if self.causal or not t[5]]
        theorems = rec.get("theorems")
        if not isinstance(theorems, list) or [t.get("id") if isinstance(t, dict) else None for t in theorems] != [t[0] for t in want]:
            self.refuse(f"{base}.theorems", f"the theorems of a head of a {'causal' if self.causal else 'bidirectional'} "
                                            f"model are {[t[0] for t in want]}")
            theorems = []
        for i, (t, (tid, label, statement, names, prediction, _)) in enumerate(zip(theorems, want)):
            tb = f"{base}.theorems[{i}]"
            for key, value in (("statement", statement), ("prediction", prediction)):
                if t.get(key) != value:
                    self.refuse(f"{tb}.{key}", f"not the {key} of {tid}")
            hyps = t.get("hypotheses")
            if not isinstance(hyps, list) or [h.get("name") if isinstance(h, dict) else None for h in hyps] != list(names):
                self.refuse(f"{tb}.hypotheses", f"the hypotheses of {tid} are {list(names)}, in this order")
                continue
            statuses = [self.hypothesis(f"{tb}.hypotheses[{j}]", h, layer, head, factors) for j, h in enumerate(hyps)]
            from ..recheck_certificate import applies_of

            if None not in statuses and t.get("applies") != applies_of(statuses):
                self.refuse(f"{tb}.applies", f"applies is {t.get('applies')!r}, the statuses give {applies_of(statuses)!r}")
        for key, name in (("sym_M_indefinite", "sym(P) indefinite"), ("sym_U_indefinite", "sym(U) indefinite")):
            h = rec.get(key)
            if not isinstance(h, dict) or h.get("name") != name:
                self.refuse(f"{base}.{key}", f"the record of {name!r} is missing or renamed")
            else:
                self.hypothesis(f"{base}.{key}", h, layer, head, factors)

    def inertia(self, base: str, rec: dict[str, Any], factors: dict[str, Any]) -> None:
        """The proved inertia of sym(M), sym(U) (no certificate: the proof is re-run on the weights)."""
        from ..certificates.lowrank import symmetric_part_inertia

        for key, factor in (("M", "P"), ("U", "U")):
            got: Any = rec.get(key)
            for step in ("sym_part", "inertia_proved", "inertia"):
                got = got.get(step) if isinstance(got, dict) else None
            inert = symmetric_part_inertia(*factors[factor])
            if got != (None if inert is None else list(inert)):
                self.refuse(f"{base}.{key}.sym_part.inertia_proved.inertia",
                            f"not the inertia proved from --checkpoint's weights ({inert})")

    def hypothesis(self, path: str, h: HypothesisRecord, layer: int, head: int, factors: Any) -> str | None:
        """Check one hypothesis record; its status when it stands (None when refused)."""
        from ..certificates.core import explain
        from ..certificates.lowrank import asymmetry_claim, minors_claim
        from ..recheck_certificate import is_certificate, kind_of
        from .hypotheses import BY_TYPE, HEAD_HYPOTHESES, head_subject

        name, status, cert = h["name"], h.get("status"), h.get("certificate")
        if status not in ("holds", "fails", "unknown"):
            return self.refuse(f"{path}.status", f"status {status!r} is not holds, fails or unknown")
        if name in BY_TYPE:
            if status != "holds" or cert is not None:
                return self.refuse(path, f"{name!r} holds by type, with no certificate")
            return status
        if cert is None:
            if status == "holds":
                return self.refuse(path, "holds with no certificate")
            if status == "fails":
                self.out.uncertified.append(path)
            return status
        cpath = f"{path}.certificate"
        self.seen.add(cpath)
        kind = kind_of(cert)
        proof = HEAD_HYPOTHESES[name].proof(kind)
        if proof is None:
            return self.refuse(cpath, f"a {kind} certificate cannot decide {name!r}", kind)
        if not is_certificate(cert) or not isinstance(cert["data"], dict):
            return self.refuse(cpath, "malformed certificate", kind)
        factor = proof.subject["N"]
        subject = {"N": head_subject(self.sha, layer, head, factor)}
        if cert.get("subject") != subject:
            return self.refuse(cpath, f"subject {cert.get('subject')} is not {factor} of layer {layer} head {head} of "
                                      f"the document's checkpoint ({subject['N']})", kind)
        ok, why = explain(cert)
        if not ok:
            return self.refuse(cpath, why, kind)
        got = proof.direction(cert["data"])
        if got != status:
            return self.refuse(cpath, f"the certificate proves '{got}', the document says '{status}'", kind)
        want = (asymmetry_claim if kind == "entry_asymmetry" else minors_claim)(cert["data"], factor)
        if cert["claim"] != want:
            return self.refuse(cpath, f"claim {cert['claim']!r} is not what the data prove ({want!r})", kind)
        if factors is not None:
            why = _weights_mismatch(kind, cert["data"], factors[factor], factor)
            if why is not None:
                return self.refuse(cpath, f"subject {subject['N']}: {why}", kind)
        self.out.records.append((cpath, kind, True))
        if factors is not None:
            self.out.bound += 1
        else:
            self.out.unbound += 1
            self.out.checkpoint_unbound.append(cpath)
            if status == "holds":
                self.out.holds_unbound.append(path)
        return status


def recheck_heads(doc: Document, prefix: str = "$", checkpoint: CheckpointRef | None = None) -> DocumentCheck:
    """Re-check a ``pretrained`` document (module docstring): every head record against the declarations
    and, with ``checkpoint``, against the weights; any other certificate in it as a bare one.

    Returns
    -------
    flowcert.recheck.DocumentCheck
    """
    from ..recheck_certificate import DocumentCheck, certificates_in, check_certificate, resolver

    out = DocumentCheck()
    model = (doc.get("params") or {}).get("model") if isinstance(doc.get("params"), dict) else None
    sha = model.get("sha256") if isinstance(model, dict) else None
    causal = model.get("causal") if isinstance(model, dict) else None
    ref = checkpoint
    heads = doc.get("heads")
    if isinstance(heads, list) and heads and checkpoint is not None:
        if sha != checkpoint.sha256:
            out.refused.append((f"{prefix}.params.model.sha256", "-", f"the document's checkpoint {sha!r} is not "
                                f"--checkpoint {checkpoint.directory!r} (sha256 {checkpoint.sha256})"))
            ref = None
        elif causal != checkpoint.ckpt.causal:
            out.refused.append((f"{prefix}.params.model.causal", "-", f"--checkpoint is {'' if checkpoint.ckpt.causal else 'not '}causal"))
    if not isinstance(heads, list) and "experiment" not in doc:  # issue 44: no re-routing of another document
        out.refused.append((f"{prefix}.system", "-", "a pretrained document lists its heads (heads) or an experiment; "
                                                      "this one does not: its system is not 'pretrained'"))
    state = _Heads(out, sha, ref, causal)
    if isinstance(heads, list):
        if heads and not isinstance(causal, bool):
            out.refused.append((f"{prefix}.params.model", "-", "a heads document names its checkpoint (sha256, causal)"))
        for k, rec in enumerate(heads):
            state.record(f"{prefix}.heads[{k}]", rec)
    if ref is not None and isinstance(heads, list) and heads:
        _rederived_heads(out, doc, heads, prefix, ref)
    for path, cert in certificates_in(doc, prefix):
        if path not in state.seen and not any(path.startswith(s + ".") for s in state.seen):
            check_certificate(out, path, cert, None, resolver({}), None)
    return out


def _rederived_heads(out: DocumentCheck, doc: Document, heads: list[Any], prefix: str, ref: CheckpointRef) -> None:
    """With ``--checkpoint``: the model's metadata are the checkpoint's, and every head record is the one
    ``pretrained heads`` computes from its weights (spectra, singular values, conventions, theorems; certificate data
    stay with their checkers), compared field by field (:func:`flowcert.rederive.compare`)."""
    from ..documents import plain
    from ..rederive import compare
    from .heads import head_at
    from .hypotheses import head_record

    found: list[tuple[str, str]] = []
    ck = ref.ckpt
    compare((doc.get("params") or {}).get("model"), plain({"m": ck.summary()})["m"], f"{prefix}.params.model", found,
            prefix)
    for k, rec in enumerate(heads):
        ok = isinstance(rec, dict) and all(_int(rec.get(x)) for x in ("layer", "head"))
        if not ok or not (0 <= rec["layer"] < ck.n_layers and 0 <= rec["head"] < ck.n_heads):
            continue  # refused above
        fresh = plain({"r": head_record(head_at(ck, rec["layer"], rec["head"]), ck.causal, ref.sha256)})["r"]
        compare(rec, fresh, f"{prefix}.heads[{k}]", found, prefix)
    out.refused += [(path, "derived", why) for path, why in found]


def recheck_line(rec: SweepLine, result: DocumentCheck, prefix: str, checkpoint: CheckpointRef | None) -> None:
    """The line-level part of a sweep record made from a checkpoint (module docstring), added to ``result``
    (the :class:`~flowcert.recheck.DocumentCheck` of its document)."""
    prov = rec.get("provenance")
    doc = rec.get("result")
    if not isinstance(doc, dict) or (prov is None and doc.get("provenance") is None):
        return  # a line without a document (bad input, an internal error), or not made from a checkpoint
    if doc.get("provenance") != prov:
        result.refused.append((f"{prefix}.provenance", "-", "the line's provenance is not its document's"))
        return
    sha = prov.get("checkpoint_sha256") if isinstance(prov, dict) else None
    if checkpoint is not None:
        if sha != checkpoint.sha256:
            result.refused.append((f"{prefix}.provenance.checkpoint_sha256", "-", f"the line's checkpoint {sha!r} is not "
                                   f"--checkpoint {checkpoint.directory!r} (sha256 {checkpoint.sha256})"))
        else:
            _provenance_bound(prov, result, prefix, checkpoint)
            _exact_slices(rec, doc, prov, result, prefix, checkpoint.ckpt)
            if not result.refused and _reexported(doc, prov, result, prefix, checkpoint):
                return  # the parameters are this checkpoint's export, recomputed bit for bit: bound
    # the parameters are float64 products of the weights (and prompt tokens), not recomputed here
    result.unbound += result.bound
    result.bound = 0
    result.checkpoint_unbound += [p for p, _, ok in result.records if ok]
    for i, t in enumerate(doc.get("theorems") or []):
        for j, h in enumerate(t.get("hypotheses") or [] if isinstance(t, dict) else []):
            if isinstance(h, dict) and h.get("status") == "holds" and h.get("certificate") is not None:
                result.holds_unbound.append(f"{prefix}.result.theorems[{i}].hypotheses[{j}]")


def _provenance_bound(prov: ProvenanceRecord, result: DocumentCheck, prefix: str, ref: CheckpointRef) -> None:
    """The line's provenance is ``--checkpoint``'s: its architecture, and a prompt that the
    checkpoint's own tokenizer turns into exactly the line's tokens (re-tokenised; a checkpoint without a tokenizer
    cannot re-derive a prompt's tokens, which is refused rather than trusted)."""
    from .model import load_tokenizer

    if prov.get("architecture") != ref.ckpt.kind:
        result.refused.append((f"{prefix}.provenance.architecture", "-",
                               f"{prov.get('architecture')!r} is not --checkpoint's architecture {ref.ckpt.kind!r}"))
    prompt, tokens = prov.get("prompt"), prov.get("tokens")
    if not isinstance(prompt, str):
        return
    try:
        ids = list(load_tokenizer(ref.directory).encode(prompt).ids)
    except ParamError as exc:
        result.refused.append((f"{prefix}.provenance.prompt", "-", f"cannot be re-tokenised with --checkpoint ({exc})"))
        return
    if ids != tokens:
        result.refused.append((f"{prefix}.provenance.tokens", "-", "not the tokens --checkpoint's tokenizer gives for "
                                                                    "the line's prompt"))


def _exact_slices(rec: SweepLine, doc: Document, prov: ProvenanceRecord, result: DocumentCheck, prefix: str,
                  ck: Checkpoint) -> None:
    """Refuse a line whose parameters that are exact slices of the weights differ from them (the slices its
    system declares: :meth:`flowcert.system.SystemBase.weight_slices`; attention ``Q``, ``K``)."""
    from ..certificates.subjects import exact_value, matches
    from .heads import head_at

    layer, head = prov.get("layer"), prov.get("head")
    if not (_int(layer) and _int(head) and 0 <= layer < ck.n_layers and 0 <= head < ck.n_heads):
        result.refused.append((f"{prefix}.provenance", "-", f"layer {layer!r} head {head!r} is not a head of --checkpoint"))
        return
    params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
    system = prov.get("system")
    known = isinstance(system, str) and system in REGISTRY
    slices = get_system(system).weight_slices(params, head_at(ck, layer, head)) if known else []
    for path, got, W in slices:  # the parameters the system declares to be exact slices of the weights
        if not matches(exact_value(W), got):
            key = path.rsplit(".", 1)[-1]
            result.refused.append((f"{prefix}.result.params.{path}", "-",
                                   f"not the {key} of layer {layer} head {head} of --checkpoint"))


#: largest relative difference between a line's parameters and their re-export that is taken for the
#: rounding of another BLAS or torch build (unbound, said so); anything larger is refused
REEXPORT_RTOL = 1e-9


def _reexported(doc: Document, prov: ProvenanceRecord, result: DocumentCheck, prefix: str, ref: CheckpointRef) -> bool:
    """Whether the document's parameters are the export of its head (:func:`flowcert.pretrained.export.exported`:
    B, V = W_O W_V and the prompt's tokens, float64 computations) recomputed from ``ref`` bit for bit.

    Equal: the certificates, bound to the parameters by their subjects, are bound to the checkpoint. Within
    :data:`REEXPORT_RTOL`: another machine's rounding, so unbound (the line keeps its parameters' word).
    Beyond it: refused, naming the first parameter that differs."""
    import numpy as np

    from ..documents import params_reference, understood_params
    from ..errors import InputError
    from .export import exported

    params, system = doc.get("params"), prov.get("system")
    if not isinstance(params, dict) or params_reference(params) is not None or not isinstance(system, str) \
            or system not in REGISTRY:
        return False  # a parameter file that could not be read (reported), or no system to export for
    try:
        raw = exported(ref.whole(), system, prov["layer"], prov["head"], prov)
        again = understood_params(system, raw)
    except (InputError, KeyError, TypeError, ValueError) as exc:
        result.refused.append((f"{prefix}.provenance", "-", f"the head cannot be exported from --checkpoint: {exc}"))
        return False
    if again == params:
        return True
    for key in again:
        a, b = again.get(key), params.get(key)
        if a == b:
            continue
        try:
            x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            close = x.shape == y.shape and bool(np.all(np.abs(x - y) <= REEXPORT_RTOL * np.maximum(1.0, np.abs(x))))
        except (TypeError, ValueError):
            close = False
        if not close:
            result.refused.append((f"{prefix}.result.params.{key}", "-", f"not the export of layer {prov['layer']} "
                                   f"head {prov['head']} recomputed from --checkpoint"))
    return False
