"""Real pretrained transformers: load HF-layout checkpoints, run any block, extract every head's
matrices in the papers' conventions, and check the theorems' hypotheses on them."""

from .checkpoint import Checkpoint, LayerWeights, find_minilm, load_checkpoint
from .model import Transformer, load_tokenizer

__all__ = ["Checkpoint", "LayerWeights", "Transformer", "find_minilm", "load_checkpoint", "load_tokenizer"]
