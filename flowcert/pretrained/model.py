r"""Torch forward pass of a loaded checkpoint, with every block separately callable.

Multi-head attention of block :math:`\ell` on tokens :math:`X\in\mathbb R^{n\times d}` (rows are
tokens), head :math:`h` with row blocks :math:`W_Q^h, W_K^h, W_V^h\in\mathbb R^{d_h\times d}` and
column block :math:`W_O^h\in\mathbb R^{d\times d_h}`:

.. math::
    A^h = \operatorname{softmax}_j\Big(\frac{(XW_Q^{h\top}+b_Q^h)(XW_K^{h\top}+b_K^h)^\top}{\sqrt{d_h}}
          + \text{mask}\Big),\qquad
    \mathrm{Attn}(X) = \sum_h A^h (XW_V^{h\top}+b_V^h) W_O^{h\top} + b_O ,

with the causal mask (:math:`-\infty` above the diagonal) for GPT-2 and OPT (OPT scales the query,
bias included, by :math:`d_h^{-1/2}` before the product: the same score). The switches used by the
experiments: ``ffn=False`` drops the feed-forward sub-block together with its skip connection and
its LayerNorm (as in the consensus paper's GPT-2 runs); ``layernorm=False`` replaces every
LayerNorm by the identity (gaussian paper §5.3); ``attn=`` prescribes the matrices :math:`A^h`;
``mixer=`` replaces the whole attention sub-layer output by a given map of its input.
Everything runs in float64 unless ``dtype`` says otherwise.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .checkpoint import Checkpoint

__all__ = ["Transformer", "load_tokenizer", "tokens_entering"]


def tokens_entering(ckpt: Checkpoint, layer: int, ids: Sequence[int]) -> np.ndarray:
    """The hidden states of token ``ids`` entering block ``layer`` (the embeddings, then blocks
    ``0..layer-1``), each row scaled to unit norm: the tokens on the sphere the attention system
    starts from (float64)."""
    m = Transformer(ckpt)
    X = m.embed(ids)
    if layer:
        X = m.run(X, layers=range(layer))
    X = np.asarray(X.numpy(), dtype=float)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def load_tokenizer(directory: str | Path) -> Any:
    """The ``tokenizers.Tokenizer`` of a checkpoint's ``tokenizer.json`` (no padding)."""
    from tokenizers import Tokenizer

    from .checkpoint import bad

    path = Path(directory) / "tokenizer.json"
    if not path.is_file():
        raise bad(f"--model: '{directory}' has no tokenizer.json")
    from ..files import read_json_text

    text = read_json_text(path, "tokenizer.json")  # the one reader: regular file, size cap, UTF-8, nesting
    try:
        tok = Tokenizer.from_str(text)
    except Exception as exc:  # noqa: BLE001 - a reader failure is bad input
        raise bad(f"tokenizer.json: cannot be read ({exc})") from None
    tok.no_padding()
    tok.no_truncation()  # a text longer than the position table is refused by embed(), not cut
    return tok


class Transformer:
    """The blocks of a :class:`~flowcert.pretrained.checkpoint.Checkpoint` as torch functions.

    Parameters
    ----------
    ckpt : Checkpoint
    dtype : torch.dtype, optional
        Default ``torch.float64``.
    """

    def __init__(self, ckpt: Checkpoint, dtype: Any = None) -> None:
        import torch

        self.ckpt = ckpt
        self.dtype = dtype or torch.float64
        t = lambda a: None if a is None else torch.as_tensor(np.asarray(a), dtype=self.dtype)  # noqa: E731
        self.layers = [{k: t(getattr(lw, k)) for k in lw.__dataclass_fields__} for lw in ckpt.layers]
        self.word_emb, self.pos_emb, self.type_emb = t(ckpt.word_emb), t(ckpt.pos_emb), t(ckpt.type_emb)
        self.emb_ln = (t(ckpt.emb_ln_w), t(ckpt.emb_ln_b))
        self.lnf = (t(ckpt.lnf_w), t(ckpt.lnf_b))
        self.proj_in, self.proj_out = t(ckpt.proj_in), t(ckpt.proj_out)
        self._tokenizer: Any = None

    # ---------------------------------------------------------------- pieces
    def _ln(self, x: Any, wb: tuple[Any, Any], on: bool) -> Any:
        import torch

        if not on:
            return x
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), wb[0], wb[1], self.ckpt.eps)

    def _act(self, x: Any) -> Any:
        import torch

        a = self.ckpt.activation
        if a == "relu":
            return torch.relu(x)
        return torch.nn.functional.gelu(x, approximate="tanh" if a == "gelu_new" else "none")

    def _split(self, y: Any) -> Any:
        """(..., n, d) -> (..., h, n, d_h)."""
        h, dh = self.ckpt.n_heads, self.ckpt.d_head
        return y.reshape(*y.shape[:-1], h, dh).transpose(-2, -3)

    def attention_probs(self, X: Any, layer: int) -> Any:
        r"""The attention matrices :math:`A^h` of block ``layer`` on its attention input ``X``
        (after LN_1 for GPT-2 and pre-LN OPT): shape (..., h, n, n), rows sum to 1.

        Parameters
        ----------
        X : torch.Tensor
            The attention sub-layer's input, shape (..., n, d), in the model's ``dtype``.
        layer : int
            The block, ``0 <= layer < n_layers``.

        Returns
        -------
        torch.Tensor
            :math:`A^h=\operatorname{softmax}_j\big(q^h_i\cdot k^h_j/\sqrt{d_h}\big)`, shape (..., h, n, n),
            with the causal mask (zeros above the diagonal) for GPT-2 and OPT.
        """
        import torch

        W = self.layers[layer]
        q = self._split(X @ W["Wq"].T + W["bq"])
        k = self._split(X @ W["Wk"].T + W["bk"])
        s = q @ k.transpose(-1, -2) / math.sqrt(self.ckpt.d_head)
        if self.ckpt.causal:
            n = X.shape[-2]
            mask = torch.ones(n, n, dtype=torch.bool).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return torch.softmax(s, dim=-1)

    def attention(self, X: Any, layer: int, attn: Any = None) -> Any:
        r"""Multi-head attention output on its input ``X``; ``attn`` prescribes :math:`A^h`
        (shape (h, n, n) or (n, n), broadcast over heads).

        Parameters
        ----------
        X : torch.Tensor
            The attention sub-layer's input, shape (..., n, d).
        layer : int
            The block, ``0 <= layer < n_layers``.
        attn : torch.Tensor, optional
            Prescribed attention matrices (converted to the model's ``dtype``); None: the block's own,
            :meth:`attention_probs`.

        Returns
        -------
        torch.Tensor
            :math:`\sum_h A^h (XW_V^{h\top}+b_V^h) W_O^{h\top} + b_O`, shape (..., n, d) (no skip
            connection, no LayerNorm).
        """
        W = self.layers[layer]
        A = self.attention_probs(X, layer) if attn is None else attn.to(self.dtype)
        v = self._split(X @ W["Wv"].T + W["bv"])
        z = (A @ v).transpose(-2, -3)
        z = z.reshape(*z.shape[:-2], self.ckpt.d)
        return z @ W["Wo"].T + W["bo"]

    def feed_forward(self, X: Any, layer: int) -> Any:
        r""":math:`W_2\,\mathrm{act}(W_1X+b_1)+b_2` (no skip, no LN).

        Parameters
        ----------
        X : torch.Tensor
            The feed-forward sub-layer's input, shape (..., n, d).
        layer : int
            The block, ``0 <= layer < n_layers``.

        Returns
        -------
        torch.Tensor
            Shape (..., n, d); ``act`` is the checkpoint's activation (``gelu``, ``gelu_new`` = tanh
            approximation, or ``relu``).
        """
        W = self.layers[layer]
        return self._act(X @ W["W1"].T + W["b1"]) @ W["W2"].T + W["b2"]

    def block(self, X: Any, layer: int, *, ffn: bool = True, layernorm: bool = True, attn: Any = None,
              mixer: Callable[[Any], Any] | None = None) -> Any:
        r"""One block (see the module docstring for the switches).

        Parameters
        ----------
        X : torch.Tensor
            The block's input, shape (..., n, d).
        layer : int
            The block, ``0 <= layer < n_layers``.
        ffn : bool, default True
            Keep the feed-forward sub-block; False drops it with its skip connection and its LayerNorm.
        layernorm : bool, default True
            Keep the LayerNorms; False replaces each by the identity.
        attn : torch.Tensor, optional
            Prescribed attention matrices :math:`A^h` (see :meth:`attention`).
        mixer : callable, optional
            ``Y -> output`` replacing the whole attention sub-layer (``attn`` is then unused); the skip
            connection and the LayerNorms stay.

        Returns
        -------
        torch.Tensor
            The block's output, shape (..., n, d): post-LN for BERT (and OPT with
            ``do_layer_norm_before: false``), :math:`\mathrm{LN}_2(H+\mathrm{FF}(H))` with
            :math:`H=\mathrm{LN}_1(X+\mathrm{mix}(X))`; pre-LN for GPT-2 and OPT,
            :math:`H+\mathrm{FF}(\mathrm{LN}_2H)` with :math:`H=X+\mathrm{mix}(\mathrm{LN}_1X)`.
        """
        W = self.layers[layer]
        ln1, ln2 = (W["ln1_w"], W["ln1_b"]), (W["ln2_w"], W["ln2_b"])
        mix = mixer if mixer is not None else (lambda Y: self.attention(Y, layer, attn))
        if not self.ckpt.pre_ln:  # BERT, post-LN OPT
            H = self._ln(X + mix(X), ln1, layernorm)
            if not ffn:
                return H
            return self._ln(H + self.feed_forward(H, layer), ln2, layernorm)
        H = X + mix(self._ln(X, ln1, layernorm))  # GPT-2, OPT: pre-LN
        if not ffn:
            return H
        return H + self.feed_forward(self._ln(H, ln2, layernorm), layer)

    def run(self, X: Any, layers: Sequence[int] | None = None, *, repeat: int = 1, ffn: bool = True,
            layernorm: bool = True, callback: Callable[[int, Any], None] | None = None) -> Any:
        """Apply ``layers`` (default all, in order) ``repeat`` times; ``callback(pass, X)`` after
        each pass. No final LayerNorm (see :meth:`final`).

        Parameters
        ----------
        X : torch.Tensor
            The input hidden states, shape (..., n, d) (e.g. :meth:`embed`).
        layers : sequence of int, optional
            The blocks applied in each pass, in order; None: all of them.
        repeat : int, default 1
            Number of passes; the output of a pass is the next pass's input.
        ffn : bool, default True
            Keep the feed-forward sub-blocks (see :meth:`block`).
        layernorm : bool, default True
            Keep the LayerNorms (see :meth:`block`).
        callback : callable, optional
            Called as ``callback(pass, X)`` after each pass, ``pass`` counted from 1.

        Returns
        -------
        torch.Tensor
            The hidden states after the last pass, shape (..., n, d); computed without gradients.
        """
        import torch

        layers = range(self.ckpt.n_layers) if layers is None else layers
        with torch.no_grad():
            for r in range(repeat):
                for li in layers:
                    X = self.block(X, li, ffn=ffn, layernorm=layernorm)
                if callback is not None:
                    callback(r + 1, X)
        return X

    def final(self, X: Any, layernorm: bool = True) -> Any:
        """The final LayerNorm of GPT-2 (``ln_f``) and pre-LN OPT (``final_layer_norm``), then OPT's
        ``project_out`` when it has one; the identity for BERT.

        Parameters
        ----------
        X : torch.Tensor
            Hidden states, shape (..., n, d).
        layernorm : bool, default True
            False: no final LayerNorm (``layernorm=False`` of :meth:`block`); ``project_out`` stays.

        Returns
        -------
        torch.Tensor
            ``ln_f(X)`` for GPT-2; ``project_out(final_layer_norm(X))`` for OPT (each when it has
            one; shape (..., n, word_embed_proj_dim)); ``X`` itself for BERT.
        """
        if self.ckpt.kind == "bert":
            return X
        if self.lnf[0] is not None:
            X = self._ln(X, self.lnf, layernorm)
        return X if self.proj_out is None else X @ self.proj_out.T

    # ---------------------------------------------------------------- tokens
    def embed(self, ids: Sequence[int], token_type: Sequence[int] | None = None) -> Any:
        """Input embeddings of token ids (BERT: word + position + type, then LN; GPT-2: wte + wpe;
        OPT: ``project_in`` of ``embed_tokens`` + ``embed_positions``, positions from 0 as HF counts them
        on an unpadded input).

        Parameters
        ----------
        ids : sequence of int
            Token ids, each in ``0 .. vocab_size - 1``; at most ``max_positions`` of them.
        token_type : sequence of int, optional
            BERT's token type ids (default all 0); ignored for GPT-2.

        Returns
        -------
        torch.Tensor
            Shape (n, d), in the model's ``dtype``; positions ``0 .. n-1``.

        Raises
        ------
        ParamError
            No ids, an id outside the vocabulary, or more ids than positions.
        """
        import torch

        from .checkpoint import bad

        ids_t = torch.as_tensor(list(ids), dtype=torch.long)
        if ids_t.numel() == 0:
            raise bad("tokens: empty input")
        if int(ids_t.max()) >= self.ckpt.vocab_size or int(ids_t.min()) < 0:
            raise bad(f"tokens: id out of range 0..{self.ckpt.vocab_size - 1}")
        n = ids_t.numel()
        if n > self.ckpt.max_positions:
            raise bad(f"tokens: {n} tokens exceed max positions {self.ckpt.max_positions}")
        W = self.word_emb[ids_t]
        X = (W if self.proj_in is None else W @ self.proj_in.T) + self.pos_emb[:n]
        if self.ckpt.kind == "bert":
            tt = torch.zeros(n, dtype=torch.long) if token_type is None else torch.as_tensor(list(token_type))
            X = self._ln(X + self.type_emb[tt], self.emb_ln, True)
        return X

    def tokenize(self, text: str) -> list[int]:
        """Token ids from the checkpoint's ``tokenizer.json``.

        Parameters
        ----------
        text : str
            The text to encode (no padding, no truncation; special tokens as the tokenizer adds them).

        Returns
        -------
        list of int
            The token ids, ready for :meth:`embed`.

        Raises
        ------
        ParamError
            The checkpoint's folder has no readable ``tokenizer.json`` (read once, then cached).
        """
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.ckpt.path)
        return list(self._tokenizer.encode(text).ids)

    def hidden_states(self, text: str) -> Any:
        """Last hidden states of one text (BERT: the encoder output; GPT-2: after ``ln_f``; OPT: after
        ``final_layer_norm`` and ``project_out``).

        Parameters
        ----------
        text : str
            The text, tokenized by :meth:`tokenize`.

        Returns
        -------
        torch.Tensor
            Shape (n, d): :meth:`final` of :meth:`run` (all blocks, one pass) of :meth:`embed`.
        """
        X = self.run(self.embed(self.tokenize(text)))
        return self.final(X)

    def sentence_embedding(self, text: str) -> np.ndarray:
        """Mean-pooled, L2-normalised embedding (sentence-transformers' MiniLM recipe).

        Parameters
        ----------
        text : str
            The text to embed.

        Returns
        -------
        numpy.ndarray
            Shape (d,), unit Euclidean norm: the mean over tokens of :meth:`hidden_states`, normalised.
        """
        H = self.hidden_states(text)
        m = H.mean(dim=0)
        return (m / m.norm()).numpy()
