r"""The architectures :mod:`flowcert.pretrained` reads (BERT, GPT-2, OPT) and the ones it refuses (rotary).

**The export convention checked.** Head :math:`h` of block :math:`\ell` is exported as the factors
:math:`Q, K\in\mathbb R^{d_h\times d}` (``Head.factors("P") == (Q^T, K)``), the biases
:math:`b_Q, b_K` (reported beside them) and :math:`\beta = d_h^{-1/2}`. On the block's *attention
input* :math:`x_1..x_n` (the hidden states entering the block, after the block's first LayerNorm
where the architecture applies it before attention: GPT-2, pre-LN OPT; the raw hidden states for
BERT and post-LN OPT) the model's pre-softmax score of query :math:`i` and key :math:`j` is

.. math:: s_{ij} = \beta\,(Qx_i + b_Q)\cdot(Kx_j + b_K)
          = \beta\,x_i^\top Q^\top K x_j + \beta\,(b_Q^\top K x_j + x_i^\top Q^\top b_K + b_Q^\top b_K),

whose bilinear part :math:`\beta\,x_i^\top Q^\top K x_j` is what the papers' dynamics use (and the
whole score when the model's query and key biases are zero). Causal models (GPT-2, OPT) mask the
entries :math:`j > i`; only :math:`j \le i` are compared there.

**What the model computes** is taken from the model itself: the hidden states from
``output_hidden_states``, the model's own LayerNorm modules, and the pre-softmax logits recorded at
the model's own ``softmax`` call (eager attention), one (batch, heads, n, n) tensor per block. They
agree with flowcert's factors to 1e-5 relative in float32 and 1e-12 in float64. Every model is a
tiny, randomly initialised ``transformers`` model (never downloaded).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import flowcert  # noqa: E402
from flowcert.errors import InputError  # noqa: E402
from flowcert.pretrained import Transformer, load_checkpoint  # noqa: E402
from flowcert.pretrained.checkpoint import from_model, from_state_dict  # noqa: E402
from flowcert.pretrained.heads import Head, attention_params, extract_heads  # noqa: E402

torch.set_num_threads(1)
IDS = [3, 5, 2, 7, 11, 9, 4]
REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the models

def _bert(d: int = 8, **kw: Any) -> Any:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=24, hidden_size=d, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=2 * d, max_position_embeddings=16, **kw)
    cfg._attn_implementation = "eager"
    return transformers.BertModel(cfg).eval()


def _gpt2(d: int = 12, **kw: Any) -> Any:
    torch.manual_seed(1)
    cfg = transformers.GPT2Config(vocab_size=24, n_embd=d, n_layer=2, n_head=2, n_positions=16,
                                  bos_token_id=0, eos_token_id=0, **kw)
    cfg._attn_implementation = "eager"
    return transformers.GPT2Model(cfg).eval()


def _opt(d: int = 16, cls: Any = None, **kw: Any) -> Any:
    torch.manual_seed(2)
    cfg = transformers.OPTConfig(vocab_size=24, hidden_size=d, num_hidden_layers=2, num_attention_heads=2,
                                 ffn_dim=2 * d, max_position_embeddings=16, pad_token_id=1, bos_token_id=0,
                                 eos_token_id=0, **kw)
    cfg._attn_implementation = "eager"
    return (cls or transformers.OPTModel)(cfg).eval()


def _spread(model: Any, scale: float = 0.5) -> Any:
    """Weights of order one (the default initialisation, std 0.02, gives tiny scores), seeded."""
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return model


def _decoder(model: Any) -> Any:
    """OPT's decoder: ``OPTModel.decoder`` or ``OPTForCausalLM.model.decoder``."""
    return model.decoder if hasattr(model, "decoder") else model.model.decoder


def _attn_input(model: Any, kind: str, layer: int, X: Any) -> Any:
    """The attention input of block ``layer`` from the hidden states ``X`` entering it, through the
    model's own LayerNorm where the architecture applies it before attention."""
    if kind == "gpt2":
        return model.h[layer].ln_1(X)
    if kind == "opt":
        block = _decoder(model).layers[layer]
        return block.self_attn_layer_norm(X) if block.do_layer_norm_before else X
    return X  # BERT: post-LN, the block's input is the attention input


def _model_scores(model: Any, kind: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(attention inputs per block (n, d), pre-softmax logits per block (heads, n, n)) as the model
    computes them: the logits are the inputs of the model's own softmax calls, one per block."""
    seen: list[Any] = []
    real: Callable[..., Any] = torch.nn.functional.softmax

    def recording(x: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(x.detach().clone())
        return real(x, *args, **kwargs)

    torch.nn.functional.softmax = recording
    try:
        with torch.no_grad():
            out = model(input_ids=torch.tensor([IDS]), output_hidden_states=True)
    finally:
        torch.nn.functional.softmax = real
    n_layers = model.config.num_hidden_layers
    assert len(seen) == n_layers  # one softmax per block: the attention's
    with torch.no_grad():
        inputs = [_attn_input(model, kind, li, out.hidden_states[li])[0].numpy() for li in range(n_layers)]
    return inputs, [s[0].numpy() for s in seen]


def _flowcert_scores(h: Head, X: np.ndarray, with_bias: bool = True) -> np.ndarray:
    r""":math:`\beta(QX^\top + b_Q)^\top(KX^\top + b_K)` in float64 from the exported factors (module docstring)."""
    Qt, K = h.factors("P")  # (d, d_h), (d_h, d)
    X = np.asarray(X, dtype=np.float64)
    q, k = X @ Qt, X @ K.T
    if with_bias:
        q, k = q + h.bq, k + h.bk
    return h.beta * (q @ k.T)


def _compare(model: Any, kind: str, ck: Any, rtol: float, with_bias: bool = True) -> None:
    inputs, logits = _model_scores(model, kind)
    causal = kind in ("gpt2", "opt")
    n = len(IDS)
    keep = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    heads = extract_heads(ck)
    assert len(heads) == ck.n_layers * ck.n_heads == 2 * 2
    for h in heads:
        want = logits[h.layer][h.head][keep].astype(np.float64)
        got = _flowcert_scores(h, inputs[h.layer], with_bias)[keep]
        scale = np.abs(want).max()
        assert scale > 0.1  # scores of order one: a relative test that means something
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{kind} layer {h.layer} head {h.head}")
        if causal:  # the masked entries are the ones above the diagonal, and the model masks them
            assert np.all(logits[h.layer][h.head][~keep] < -1e30)


CASES = {
    "bert": lambda: _bert(),
    "gpt2": lambda: _gpt2(),
    "opt": lambda: _opt(),
    "opt-post-ln": lambda: _opt(do_layer_norm_before=False),
    "opt-causal-lm-projected": lambda: _opt(cls=transformers.OPTForCausalLM, word_embed_proj_dim=8),
    "opt-no-bias-no-affine": lambda: _opt(enable_bias=False, layer_norm_elementwise_affine=False),
}


# ----------------------------------------------------------------------------- scores

@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exported_factors_reproduce_the_models_scores(case, dtype):
    """s_ij = beta (Q x_i + b_Q).(K x_j + b_K) from flowcert's factors equals the model's own logits."""
    model = _spread(CASES[case]())
    if dtype == "float64":
        model = model.double()
    kind = case.split("-")[0]
    ck = from_model(model)
    assert ck.kind == kind and ck.n_heads == 2 and ck.n_layers == 2 and ck.causal == (kind != "bert")
    _compare(model, kind, ck, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("case", ["bert", "gpt2", "opt"])
def test_without_query_key_biases_the_score_is_the_bilinear_form(case):
    """With b_Q = b_K = 0 in the model, its logits are exactly beta x_i^T Q^T K x_j (float64)."""
    model = _spread(CASES[case]()).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("query.bias", "key.bias", "q_proj.bias", "k_proj.bias")):
                p.zero_()
            if name.endswith("c_attn.bias"):  # GPT-2's fused (q, k, v) bias: zero the q and k thirds
                p[: 2 * model.config.n_embd].zero_()
    ck = from_model(model)
    for h in extract_heads(ck):
        assert not h.bq.any() and not h.bk.any()
    _compare(model, case, ck, rtol=1e-12, with_bias=False)


def test_opt_query_is_scaled_with_its_bias():
    """OPT scales q_proj(x) (bias included) by d_h^-1/2 before the product: beta (Qx+b_Q).(Kx+b_K), the
    BERT/GPT-2 score. A reading that scaled W_Q x alone would be off by beta b_Q.(Kx+b_K); the biases
    here are of order one, so the float64 comparison tells the two apart."""
    model = _spread(_opt()).double()
    ck = from_model(model)
    inputs, logits = _model_scores(model, "opt")
    h = extract_heads(ck)[0]
    X = inputs[0]
    Qt, K = h.factors("P")
    wrong = (h.beta * (X @ Qt) + h.bq) @ (X @ K.T + h.bk).T
    keep = np.tril(np.ones((len(IDS),) * 2, dtype=bool))
    assert np.abs(wrong - logits[0][0])[keep].max() > 1e-3
    np.testing.assert_allclose(_flowcert_scores(h, X)[keep], logits[0][0][keep], rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- OPT read

@pytest.mark.parametrize("case", ["opt", "opt-post-ln", "opt-causal-lm-projected", "opt-no-bias-no-affine"])
def test_opt_forward_equals_transformers(case):
    """flowcert's forward pass of the OPT checkpoint gives the model's last hidden state (float64):
    learned positions with OPT's offset, pre/post-LN, project_in/out, missing biases/affine LN. (With
    SDPA attention: OPT's eager attention takes its softmax in float32 even in a float64 model.)"""
    model = _spread(CASES[case](), 0.3).double()
    model.set_attn_implementation("sdpa")
    m = Transformer(from_model(model))
    with torch.no_grad():
        out = model(input_ids=torch.tensor([IDS]), output_hidden_states=True)
    want = (out.last_hidden_state if hasattr(out, "last_hidden_state") else None)
    if want is None:  # OPTForCausalLM: the decoder's output is the base model's
        with torch.no_grad():
            want = model.model(input_ids=torch.tensor([IDS])).last_hidden_state
    np.testing.assert_allclose(m.final(m.run(m.embed(IDS))).numpy(), want[0].numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("cls", ["OPTModel", "OPTForCausalLM"])
def test_opt_saved_folder_read_as_the_cli_reads_it(cls, tmp_path):
    """save_pretrained, then load_checkpoint (what ``flowcert pretrained`` calls on --model): the same
    weights as the instance, bit for bit, also when only the attention weights are read; the scores
    of the folder's factors are the model's."""
    model = _spread(_opt(cls=getattr(transformers, cls)))
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    a, b, c = from_model(model), load_checkpoint(tmp_path), load_checkpoint(tmp_path, attention_only=True)
    assert b.kind == "opt" and b.causal and b.sha256 is not None
    for la, lb, lc in zip(a.layers, b.layers, c.layers):
        for name in la.__dataclass_fields__:
            assert np.array_equal(getattr(la, name), getattr(lb, name)), name
        for name in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo"):
            assert np.array_equal(getattr(la, name), getattr(lc, name)), name
    assert np.array_equal(a.pos_emb, b.pos_emb) and np.array_equal(a.word_emb, b.word_emb)
    _compare(model, "opt", b, rtol=1e-5)
    assert attention_params(b, 0)["causal"] is True  # OPT's mask is causal: the export says so
    # the same folder through flowcert.pretrained.load and a state dict with its config
    s = from_state_dict(model.state_dict(), model.config)
    assert np.array_equal(flowcert.pretrained.load(str(tmp_path)).layers[1].Wk, s.layers[1].Wk)


def test_opt_folder_through_the_cli(tmp_path):
    """``flowcert pretrained heads --model <OPT folder> --json`` runs (exit 0) and reports every head."""
    _spread(_opt()).save_pretrained(tmp_path)
    r = subprocess.run([sys.executable, "-m", "flowcert", "pretrained", "heads", "--model", str(tmp_path), "--json"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    model = doc["params"]["model"]
    assert (model["kind"], model["d"], model["n_heads"], model["n_layers"], model["causal"]) == ("opt", 16, 2, 2, True)
    assert sorted((h["layer"], h["head"]) for h in doc["heads"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]


# ----------------------------------------------------------------------------- rotary refused

ROTARY = {
    "llama": lambda: transformers.LlamaModel(transformers.LlamaConfig(
        vocab_size=24, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=16, max_position_embeddings=16)),
    "mistral": lambda: transformers.MistralModel(transformers.MistralConfig(
        vocab_size=24, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=16, max_position_embeddings=16)),
    "gpt_neox": lambda: transformers.GPTNeoXModel(transformers.GPTNeoXConfig(
        vocab_size=24, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
        max_position_embeddings=16)),
}


def _assert_rotary_line(message: str, model_type: str) -> None:
    assert "\n" not in message.strip()
    assert f"'{model_type}'" in message
    assert "rotary position embeddings" in message and "depends on the positions" in message


@pytest.mark.parametrize("name", list(ROTARY))
def test_rotary_models_are_refused_in_python(name, tmp_path):
    """An instance, a state dict with its config and a saved folder: InputError, one line naming RoPE."""
    torch.manual_seed(3)
    model = ROTARY[name]()
    with pytest.raises(InputError) as e:
        flowcert.pretrained.load(model)
    _assert_rotary_line(str(e.value), name)
    with pytest.raises(InputError) as e:
        flowcert.pretrained.load(model.state_dict(), config=model.config)
    _assert_rotary_line(str(e.value), name)
    model.save_pretrained(tmp_path)
    with pytest.raises(InputError) as e:
        flowcert.pretrained.load(str(tmp_path))
    _assert_rotary_line(str(e.value), name)


def test_rotary_config_keys_are_refused_without_weights():
    """A config marked rotary by its keys alone (GPT-J's rotary_dim; an unknown type with rope_theta)
    is refused before any tensor is looked for."""
    gptj = transformers.GPTJConfig(vocab_size=24, n_embd=8, n_layer=2, n_head=2, rotary_dim=4).to_dict()
    with pytest.raises(InputError) as e:
        from_state_dict({}, gptj)
    _assert_rotary_line(str(e.value), "gptj")
    with pytest.raises(InputError, match="rope_theta.*rotary position embeddings"):
        from_state_dict({}, {"model_type": "my_model", "rope_theta": 10000.0})
    with pytest.raises(InputError, match="model_type.*'bert', 'gpt2', 'opt'"):
        from_state_dict({}, {"model_type": "t5"})


def test_rotary_folder_exits_2_with_one_line(tmp_path):
    """``flowcert pretrained heads --model <Llama folder>``: exit 2, one stderr line, no traceback."""
    torch.manual_seed(4)
    ROTARY["llama"]().save_pretrained(tmp_path)
    r = subprocess.run([sys.executable, "-m", "flowcert", "pretrained", "heads", "--model", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    _assert_rotary_line(lines[0], "llama")


# ----------------------------------------------------------------------------- other position-dependent scores

@pytest.mark.parametrize("key, value", [("scale_attn_by_inverse_layer_idx", True), ("scale_attn_weights", False)])
def test_gpt2_scalings_other_than_inverse_sqrt_dh_are_refused(key, value):
    """GPT-2's score scale is 1/sqrt(d_h) unless these keys say otherwise; flowcert reads beta = 1/sqrt(d_h)
    for every head, so it refuses them (naming the key) rather than export another matrix."""
    model = _gpt2(**{key: value})
    with pytest.raises(InputError, match=key):
        from_model(model)


def test_bert_relative_positions_are_refused():
    cfg = {**_bert().config.to_dict(), "position_embedding_type": "relative_key"}
    with pytest.raises(InputError, match="position_embedding_type"):
        from_state_dict(_bert().state_dict(), cfg)
