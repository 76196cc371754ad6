"""Real pretrained transformers: your own model in, a verdict per head out.

* :func:`verify` (``flowcert.pretrained.verify(model, system="gaussian", heads=[0, 1])``): every
  selected head checked as ``gaussian`` or ``attention``; a :class:`PretrainedResult` (a
  :class:`~flowcert.result.Result` per head and the per-head table).
* :func:`load`: the model as a :class:`Checkpoint`, from a ``transformers`` model instance (BERT,
  GPT-2 or OPT architecture; rotary models such as Llama are refused), a state dict with its config, a local folder (``config.json`` +
  ``model.safetensors``), ``"minilm"`` (the installed all-MiniLM-L6-v2), or a hub id found in the
  local Hugging Face cache (``HF_HUB_CACHE`` / ``HF_HOME``; never the network).
* :class:`Transformer`: the forward pass with every block callable; :mod:`.heads`: every head's
  matrices in the papers' conventions; :mod:`.experiments`: the papers' pretrained-model experiments.

Imports are lazy so that ``flowcert --help`` stays fast."""

from __future__ import annotations

from typing import Any

__all__ = ["Checkpoint", "LayerWeights", "PretrainedResult", "Transformer", "find_minilm", "load", "load_checkpoint",
           "load_tokenizer", "verify"]


def __getattr__(name: str) -> Any:
    if name in ("Checkpoint", "LayerWeights", "find_minilm"):
        from . import checkpoint

        return getattr(checkpoint, name)
    if name == "load_checkpoint":  # the Python face: errors name no command-line flag
        from ..errors import python_terms
        from .checkpoint import load_checkpoint

        return python_terms(load_checkpoint)
    if name in ("Transformer", "load_tokenizer"):
        from . import model

        return getattr(model, name)
    if name in ("verify", "load", "PretrainedResult"):
        from . import verdicts

        return getattr(verdicts, name)
    raise AttributeError(f"module 'flowcert.pretrained' has no attribute {name!r}")
