"""Real pretrained transformers: load HF-layout checkpoints, run any block, extract every head's
matrices in the papers' conventions, and check the theorems' hypotheses on them.

Imports are lazy so that ``flowcert --help`` stays fast."""

from __future__ import annotations

from typing import Any

__all__ = ["Checkpoint", "LayerWeights", "Transformer", "find_minilm", "load_checkpoint", "load_tokenizer"]


def __getattr__(name: str) -> Any:
    if name in ("Checkpoint", "LayerWeights", "find_minilm", "load_checkpoint"):
        from . import checkpoint

        return getattr(checkpoint, name)
    if name in ("Transformer", "load_tokenizer"):
        from . import model

        return getattr(model, name)
    raise AttributeError(name)
