r"""Seeded random checkpoints in Hugging Face layout (test fixtures and the random-weight runs).

Initialisation as in Hugging Face's BERT/GPT-2 (``initializer_range`` :math:`\sigma=0.02`): every
weight matrix and embedding :math:`\sim\mathcal N(0,\sigma^2)`, GPT-2's residual projections
(``attn.c_proj``, ``mlp.c_proj``) :math:`\sim\mathcal N(0,\sigma^2/(2L))`, biases 0, LayerNorm
:math:`\gamma=1,\ \beta=0`. ``bias_std`` > 0 draws biases and LayerNorm offsets too (tests use it so
that every parameter is exercised). Stored as float32, like the released checkpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..records import JSONObject

__all__ = ["random_tensors", "write_checkpoint", "random_checkpoint"]


def random_tensors(kind: str, *, d: int, n_heads: int, n_layers: int, d_ff: int, vocab: int = 64,
                   n_pos: int = 64, seed: int = 0, std: float = 0.02, bias_std: float = 0.0,
                   ln_std: float = 0.0) -> tuple[JSONObject, dict[str, np.ndarray]]:
    """(config, tensors) of a seeded random BERT (``kind="bert"``) or GPT-2 (``"gpt2"``) model: the config as
    its ``config.json`` object, the tensors by their Hugging Face names."""
    rng = np.random.default_rng(seed)
    T: dict[str, np.ndarray] = {}

    def w(name: str, shape: tuple[int, ...], s: float = std) -> None:
        T[name] = (rng.standard_normal(shape) * s).astype(np.float32)

    def b(name: str, n: int) -> None:
        T[name] = (rng.standard_normal(n) * bias_std).astype(np.float32)

    def ln(prefix: str) -> None:
        T[prefix + "weight"] = (1.0 + rng.standard_normal(d) * ln_std).astype(np.float32)
        T[prefix + "bias"] = (rng.standard_normal(d) * ln_std).astype(np.float32)

    cfg: JSONObject
    if kind == "bert":
        cfg = {"model_type": "bert", "hidden_size": d, "num_attention_heads": n_heads, "num_hidden_layers": n_layers,
               "intermediate_size": d_ff, "vocab_size": vocab, "max_position_embeddings": n_pos, "type_vocab_size": 2,
               "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
        w("embeddings.word_embeddings.weight", (vocab, d))
        w("embeddings.position_embeddings.weight", (n_pos, d))
        w("embeddings.token_type_embeddings.weight", (2, d))
        ln("embeddings.LayerNorm.")
        for i in range(n_layers):
            p = f"encoder.layer.{i}."
            for nm in ("query", "key", "value"):
                w(p + f"attention.self.{nm}.weight", (d, d))
                b(p + f"attention.self.{nm}.bias", d)
            w(p + "attention.output.dense.weight", (d, d))
            b(p + "attention.output.dense.bias", d)
            ln(p + "attention.output.LayerNorm.")
            w(p + "intermediate.dense.weight", (d_ff, d))
            b(p + "intermediate.dense.bias", d_ff)
            w(p + "output.dense.weight", (d, d_ff))
            b(p + "output.dense.bias", d)
            ln(p + "output.LayerNorm.")
        return cfg, T
    if kind != "gpt2":
        raise ValueError(f"kind must be 'bert' or 'gpt2', got {kind!r}")
    cfg = {"model_type": "gpt2", "n_embd": d, "n_head": n_heads, "n_layer": n_layers, "n_inner": d_ff,
           "vocab_size": vocab, "n_positions": n_pos, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    w("wte.weight", (vocab, d))
    w("wpe.weight", (n_pos, d))
    res = std / np.sqrt(2 * n_layers)
    for i in range(n_layers):
        p = f"h.{i}."
        ln(p + "ln_1.")
        w(p + "attn.c_attn.weight", (d, 3 * d))
        b(p + "attn.c_attn.bias", 3 * d)
        w(p + "attn.c_proj.weight", (d, d), res)
        b(p + "attn.c_proj.bias", d)
        ln(p + "ln_2.")
        w(p + "mlp.c_fc.weight", (d, d_ff))
        b(p + "mlp.c_fc.bias", d_ff)
        w(p + "mlp.c_proj.weight", (d_ff, d), res)
        b(p + "mlp.c_proj.bias", d)
    ln("ln_f.")
    return cfg, T


def write_checkpoint(directory: str | Path, cfg: JSONObject, tensors: dict[str, np.ndarray],
                     tokenizer_vocab: list[str] | None = None) -> Path:
    """Write ``config.json`` + ``model.safetensors`` (and a WordLevel ``tokenizer.json`` over
    ``tokenizer_vocab`` with whitespace pre-tokenisation, when given)."""
    from safetensors.numpy import save

    from ..outputs import make_folder, write_bytes, write_text

    root = make_folder("directory", directory)  # every file through the one writer (no link anywhere)
    write_text("directory", root / "config.json", json.dumps(cfg, indent=1))
    write_bytes("directory", root / "model.safetensors", save({k: np.ascontiguousarray(v) for k, v in tensors.items()}))
    if tokenizer_vocab is not None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(tokenizer_vocab)}, unk_token=tokenizer_vocab[0]))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        write_text("directory", root / "tokenizer.json", tok.to_str())
    return root


def random_checkpoint(kind: str, **kw: Any) -> Any:
    """An in-memory :class:`~flowcert.pretrained.checkpoint.Checkpoint` of :func:`random_tensors`."""
    from .checkpoint import from_tensors

    cfg, T = random_tensors(kind, **kw)
    return from_tensors(cfg, T)
