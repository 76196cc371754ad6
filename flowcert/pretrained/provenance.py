r"""Provenance: what an exported head, a verify document or a sweep line was made from.

Every record made from a checkpoint carries one top-level key, in one shape:

.. code-block:: text

    "provenance": {"checkpoint_sha256": "<64 hex digits>", "model": "<name or path as given>",
                   "architecture": "bert" | "gpt2" | "opt", "layer": int, "head": int | null,
                   "system": "gaussian" | "attention", "prompt": str | null, "tokens": [int] | null}

``head`` is null for an export of every head of a layer (``pretrained export`` without ``--head``);
``prompt`` and ``tokens`` are null for the systems that do not start from a prompt (gaussian). Keys
may be added, never changed. An export is re-used only when its provenance equals the one asked for
(:func:`export_key`); anything else is refused.

**The checkpoint digest** :func:`files_sha256` is the SHA-256 of the checkpoint folder's *weight
files*: ``config.json`` (it fixes how the weights are read: sizes, heads, LayerNorm epsilon) and
every ``*.safetensors`` file (with ``model.safetensors.index.json`` for sharded checkpoints),
directly in the folder, in the canonical order of their names' UTF-8 bytes (so it does not depend
on the order a file system lists them). Each file contributes

.. math:: \operatorname{be}_8(|n|)\;\|\;n\;\|\;\operatorname{be}_8(|c|)\;\|\;c

(its name :math:`n` and content :math:`c`, each preceded by its length as 8 big-endian bytes), so
no two different folders hash the same stream. A checkpoint built in memory
(:func:`flowcert.pretrained.checkpoint.from_tensors`) has no files: :func:`tensors_sha256` hashes its
configuration (canonical JSON) and its float64 weights in the order of :func:`_weights` instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import numpy as np

if TYPE_CHECKING:
    from ..records import ProvenanceRecord

__all__ = ["KEY", "files_sha256", "weight_files", "tensors_sha256", "checkpoint_sha256", "record",
           "check_provenance", "export_key", "describe", "read_export_provenance"]

#: The top-level key of every record that says where its parameters came from.
KEY = "provenance"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


def weight_files(directory: str | os.PathLike[str]) -> list[str]:
    """Names of the files :func:`files_sha256` covers, in the canonical order (UTF-8 bytes of the name)."""
    names = [e.name for e in os.scandir(directory) if e.is_file(follow_symlinks=True)
             and (e.name == "config.json" or e.name.endswith(".safetensors") or e.name == "model.safetensors.index.json")]
    return sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape"))


def _framed(h: Any, data: bytes) -> None:
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)


def files_sha256(directory: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a checkpoint folder's weight files (module docstring: which files, which order).

    Each file is read through the one reader's checks (a regular file: a FIFO or a device is
    refused, :class:`~flowcert.errors.ParamError`), in chunks.
    """
    from ..errors import ParamError
    from ..files import open_regular

    h = hashlib.sha256()
    for name in weight_files(directory):
        def fail(problem: str, name: str = name) -> ParamError:
            return ParamError(None, f"{name}: {problem}")

        fd, info = open_regular(os.path.join(directory, name), fail)
        with os.fdopen(fd, "rb") as fh:
            _framed(h, name.encode("utf-8", "surrogateescape"))
            h.update(int(info.st_size).to_bytes(8, "big"))
            read = 0
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
                read += len(chunk)
            if read != info.st_size:
                raise fail("changed while being read")
    return h.hexdigest()


def _weights(ckpt: Any) -> Iterator[tuple[str, np.ndarray]]:
    """Every weight of a :class:`~flowcert.pretrained.checkpoint.Checkpoint`, named, in a fixed order."""
    for name in ("word_emb", "pos_emb", "type_emb", "emb_ln_w", "emb_ln_b", "lnf_w", "lnf_b", "proj_in", "proj_out"):
        value = getattr(ckpt, name, None)
        if value is not None:
            yield name, np.asarray(value)
    for i, lw in enumerate(ckpt.layers):
        for field in lw.__dataclass_fields__:
            yield f"layers.{i}.{field}", np.asarray(getattr(lw, field))


def tensors_sha256(ckpt: Any) -> str:
    """SHA-256 (hex) of a checkpoint held in memory: its configuration as canonical JSON, then each
    weight (:func:`_weights`) as name, shape and little-endian float64 bytes, each framed by its length."""
    h = hashlib.sha256()
    _framed(h, json.dumps(ckpt.config, sort_keys=True, default=str).encode())
    for name, a in _weights(ckpt):
        _framed(h, name.encode())
        _framed(h, json.dumps(list(a.shape)).encode())
        _framed(h, np.ascontiguousarray(a, dtype="<f8").tobytes())
    return h.hexdigest()


def checkpoint_sha256(ckpt: Any) -> str:
    """The digest of a checkpoint: the one it was loaded with (``ckpt.sha256``, the weight files of
    its folder), else :func:`tensors_sha256` (computed once and kept on the checkpoint)."""
    digest = getattr(ckpt, "sha256", None)
    if not digest:
        digest = tensors_sha256(ckpt)
        try:
            ckpt.sha256 = digest
        except AttributeError:
            pass
    return digest


def record(ckpt: Any, model: str, layer: int, head: int | None, system: str, prompt: str | None = None,
           tokens: list[int] | None = None) -> ProvenanceRecord:
    """The provenance record of one export (module docstring: the shape)."""
    return {"checkpoint_sha256": checkpoint_sha256(ckpt), "model": str(model), "architecture": ckpt.kind,
            "layer": int(layer), "head": None if head is None else int(head), "system": system,
            "prompt": prompt, "tokens": None if tokens is None else [int(t) for t in tokens]}


def export_key(prov: ProvenanceRecord) -> ProvenanceRecord:
    """What must match for an export to be re-used: everything but the model's name as given
    (the same weights reached by another path are the same export)."""
    return {k: v for k, v in prov.items() if k != "model"}


def describe(prov: ProvenanceRecord | None) -> str:
    """One line naming a provenance: model, digest (first 12 hex digits), layer/head, prompt."""
    if not prov:
        return "no provenance"
    prompt = prov.get("prompt")
    tokens = prov.get("tokens")
    where = f"L{prov.get('layer')}" + ("" if prov.get("head") is None else f"H{prov.get('head')}")
    text = (f"{prov.get('model')} (sha256 {str(prov.get('checkpoint_sha256'))[:12]}, {prov.get('architecture')}), "
            f"{where}, {prov.get('system')}")
    if prompt is not None:
        text += f", prompt {prompt!r} ({len(tokens or [])} tokens)"
    return text


_TYPES: dict[str, tuple[type, ...]] = {"checkpoint_sha256": (str,), "model": (str,), "architecture": (str,),
                                       "layer": (int,), "head": (int, type(None)), "system": (str,),
                                       "prompt": (str, type(None)), "tokens": (list, type(None))}
#: Longest prompt text and token list a provenance record may hold.
MAX_PROMPT_CHARS = 100_000


def check_provenance(value: object, key: str = KEY) -> ProvenanceRecord:
    """Validate a provenance record read from a file (the shape of the module docstring; more keys allowed).

    ``value`` may be the record's JSON text (how an ``.npz`` export stores it). Returns the record.

    Raises
    ------
    flowcert.errors.ParamError
        Naming ``key`` and what is wrong, one line.
    """
    from ..errors import ParamError

    if isinstance(value, str):  # an .npz file holds the record as JSON text (its members are arrays)
        from ..files import parse_json

        value = parse_json(value, lambda problem: ParamError(key, problem), 4)
    if not isinstance(value, Mapping):
        raise ParamError(key, f"must be an object, got {type(value).__name__}")
    for name, types in _TYPES.items():
        if name not in value:
            raise ParamError(key, f"missing {name!r}")
        v = value[name]
        if isinstance(v, bool) or not isinstance(v, types):
            raise ParamError(key, f"{name!r} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}, "
                                  f"got {type(v).__name__}")
    if not _HEX64.fullmatch(value["checkpoint_sha256"]):
        raise ParamError(key, "'checkpoint_sha256' must be 64 lowercase hex digits")
    if value["prompt"] is not None and len(value["prompt"]) > MAX_PROMPT_CHARS:
        raise ParamError(key, f"'prompt' is longer than {MAX_PROMPT_CHARS} characters")
    tokens = value["tokens"]
    if tokens is not None and (len(tokens) > MAX_PROMPT_CHARS or
                               not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31 for t in tokens)):
        raise ParamError(key, f"'tokens' must be at most {MAX_PROMPT_CHARS} token ids (integers in [0, 2^31))")
    return dict(value)


def read_export_provenance(path: str | os.PathLike[str]) -> ProvenanceRecord | None:
    """The provenance of an exported parameter file (``None`` when it has none), read through the one reader."""
    from ..files import load_file

    raw = load_file(path)
    prov = raw.get(KEY)
    return None if prov is None else check_provenance(prov, f"{Path(path).name}: {KEY}")
