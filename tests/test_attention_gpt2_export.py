"""A GPT-2 head exported for the ``attention`` system reproduces the model's own attention.

``transformers.GPT2Model`` stores its projections as ``Conv1D`` weights of shape (in, out) with the
query, key and value fused in ``c_attn`` (BERT's ``nn.Linear`` is (out, in)). The export must
transpose and split them so that, for tokens :math:`X` entering the attention (after ``ln_1``),

.. math:: A_h = \\operatorname{softmax}\\big(\\beta\\,XQ_h^\\top K_hX^\\top + C\\big),\\qquad
          \\mathrm{Attn}(X) = \\sum_h A_hXU_h^\\top + b_O,

with :math:`(Q_h, K_h, U_h, \\beta)` read from ``pretrained export --system attention`` (:math:`C` the
causal mask, biases zero here because the export's linear reading leaves them out). A transposed
weight fails both: the scores of ``X W`` and of ``X W^T`` differ for a random non-symmetric W.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from flowcert.cli import main  # noqa: E402

torch.set_num_threads(1)
D, HEADS, N = 16, 4, 7


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    torch.manual_seed(3)
    cfg = transformers.GPT2Config(n_embd=D, n_head=HEADS, n_layer=1, n_positions=32, vocab_size=50,
                                  bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    model = transformers.GPT2Model(cfg).eval().double()
    with torch.no_grad():  # weights of order 1 (not the 0.02 init) so that a wrong layout shows clearly
        for name, w in model.named_parameters():
            if name.endswith("attn.c_attn.weight") or name.endswith("attn.c_proj.weight"):
                w.copy_(torch.randn_like(w) / np.sqrt(D))
            elif "attn" in name and name.endswith("bias"):
                w.zero_()
    root = tmp_path_factory.mktemp("gpt2") / "model"
    model.float().save_pretrained(root, safe_serialization=True)
    return root, transformers.GPT2Model.from_pretrained(root, attn_implementation="eager").double().eval()


def _export(root, tmp_path, head):
    out = tmp_path / f"h{head}.json"
    assert main(["pretrained", "export", "--model", str(root), "--layer", "0", "--head", str(head),
                 "--system", "attention", "--out", str(out)]) == 0
    raw = json.loads(out.read_text())
    (h,) = raw["heads"]
    return np.array(h["Q"]), np.array(h["K"]), np.array(h["V"]), raw["beta"], raw["causal"]


def _attention_inputs(model, ids):
    """Tokens entering layer 0's attention (ln_1 of the embeddings), its attention maps and output."""
    seen = {}
    block = model.h[0]
    hooks = [block.ln_1.register_forward_hook(lambda m, i, o: seen.__setitem__("X", o[0].detach().numpy())),
             block.attn.register_forward_hook(lambda m, i, o: seen.__setitem__("out", o[0][0].detach().numpy()))]
    try:
        with torch.no_grad():
            res = model(input_ids=torch.as_tensor([ids]), output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    return seen["X"], res.attentions[0][0].numpy(), seen["out"]


def _softmax_causal(S):
    S = np.where(np.tril(np.ones(S.shape, bool)), S, -np.inf)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def test_exported_heads_reproduce_gpt2_attention(gpt2_dir, tmp_path):
    root, model = gpt2_dir
    ids = list(np.random.default_rng(5).integers(0, 50, size=N))
    X, maps, out = _attention_inputs(model, ids)
    total = np.zeros_like(out)
    for head in range(HEADS):
        Q, K, U, beta, causal = _export(root, tmp_path, head)
        assert causal is True and Q.shape == K.shape == (D // HEADS, D) and U.shape == (D, D)
        assert beta == pytest.approx(1 / np.sqrt(D // HEADS), rel=1e-15)
        A = _softmax_causal(beta * (X @ Q.T) @ (X @ K.T).T)
        np.testing.assert_allclose(A, maps[head], rtol=1e-5, atol=1e-6)
        total += A @ X @ U.T
    bias = model.h[0].attn.c_proj.bias.detach().numpy()
    np.testing.assert_allclose(total + bias, out, rtol=1e-5, atol=1e-6)


def test_untransposed_reading_would_be_caught(gpt2_dir):
    """The comparison above can fail: reading the (in, out) Conv1D block as if it were (out, in)
    (no transpose) gives head 0 the rows of ``c_attn`` instead of its columns, and other maps."""
    root, model = gpt2_dir
    ids = list(np.random.default_rng(5).integers(0, 50, size=N))
    X, maps, _ = _attention_inputs(model, ids)
    W = model.h[0].attn.c_attn.weight.detach().numpy()  # (in, out): columns q | k | v
    dh, beta = D // HEADS, 1 / np.sqrt(D // HEADS)
    for Q, K, ok in ((W[:, :dh].T, W[:, D:D + dh].T, True), (W[:dh, :D], W[:dh, D:2 * D], False)):
        A = _softmax_causal(beta * (X @ Q.T) @ (X @ K.T).T)
        assert bool(np.abs(A - maps[0]).max() < 1e-6) == ok
