r"""The papers' pretrained-model experiments, run on real (MiniLM) and seeded random (GPT-2-shaped) weights.

1. Gaussian paper §5.2: Gaussian tokens :math:`x_i^{(0)}\sim\mathcal N(0,I_d)` through the block
   stack (embeddings bypassed); at each layer the sliced 2-Wasserstein distance between the token
   cloud and a same-size sample of its moment-matched Gaussian :math:`\mathcal N(\hat\mu,\hat\Sigma)`,

   .. math:: \mathrm{SW}_2(X,G)^2=\frac1L\sum_{l=1}^L\frac1n\sum_{i=1}^n\big(\theta_l^\top X_{(i)}-\theta_l^\top G_{(i)}\big)^2,

   (sorted projections, :math:`\theta_l` uniform on the sphere), divided by the scale
   :math:`\sqrt{\operatorname{tr}\hat\Sigma/d}`. Threshold: the largest value of the same statistic
   over :math:`R` calibration draws in which :math:`X` itself is a Gaussian sample
   :math:`\mathcal N(\hat\mu,\hat\Sigma)` of the same size (a Monte Carlo null, per layer).
2. Gaussian paper §5.3: LayerNorm removed, attention replaced by the residual single-head map
   :math:`X\mapsto X+\operatorname{softmax}(XBX^\top)XV^\top` with :math:`B=bI`, :math:`V=vI`, pretrained
   feed-forward blocks kept; :math:`\operatorname{tr}\hat\Sigma` per layer for :math:`v<0<b`
   (Thm 4.7 signs: bounded) against :math:`v,b>0` (Thm 4.8 signs: blow-up).
3. Consensus paper §7.5: the whole stack applied repeatedly to embedded text; per pass the paper's
   :math:`E=1-\frac1n\sum_i|\cos(y_1,y_i)|` (eq. 25, blind to sign) and the signed mean pairwise cosine
   :math:`\bar c=\frac{1}{n(n-1)}\sum_{i\ne j}\cos(y_i,y_j)` (consensus iff :math:`\bar c\to1`), with and
   without feed-forward blocks, on MiniLM (bidirectional, pretrained) and on a GPT-2-shaped causal model
   with seeded random initialisation (:mod:`.synthetic`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

if TYPE_CHECKING:
    from .checkpoint import CheckpointSummary

__all__ = ["sliced_w2", "gaussianity", "covariance_growth", "consensus", "summary", "PROMPTS", "GaussianityProtocol",
           "GaussianityStudy", "CovarianceRun", "CovarianceProtocol", "CovarianceStudy", "ConsensusRun",
           "ConsensusModelRuns", "ConsensusStudy"]

PROMPTS = (
    "Describe a futuristic city where humans and robots live together. Talk about what the city looks like "
    "and what daily life is like there.",
    "The meaning of life is a question that philosophers have debated for centuries.",
    "Control systems use feedback to keep a process close to a desired operating point.",
)


class GaussianityProtocol(TypedDict):
    """The settings of :func:`gaussianity` and the definitions of its statistic and threshold."""

    n_tokens: int
    batches: int
    projections: int
    calibration_draws: int
    seed: int
    input: str
    statistic: str
    threshold: str


class GaussianityStudy(TypedDict):
    """Experiment 1 (:func:`gaussianity`): for every layer from 0 to L, the statistic over batches, the threshold and the verdict."""

    layers: list[int]
    statistic_mean: list[float]
    statistic_q10: list[float]
    statistic_q90: list[float]
    threshold: list[float]
    null_mean: list[float]
    exceeds: list[bool]
    excess_kurtosis_mean: list[float]
    protocol: GaussianityProtocol


class _CovarianceRunBase(TypedDict):
    signs: str
    ffn: bool
    V: str
    B: str
    trace_cov: list[float]
    mean_norm: list[float]


class CovarianceRun(_CovarianceRunBase, total=False):
    """One run of :func:`covariance_growth`: the signs, whether the feed-forward blocks are kept, and the
    trace and mean norm after every block (``trace_cov_meanfield``: the mean-field prediction, attention-only runs)."""

    trace_cov_meanfield: list[float]


class CovarianceProtocol(TypedDict):
    """The settings of :func:`covariance_growth`."""

    n_tokens: int
    seed: int
    passes: int
    layers_per_pass: int
    v: float
    b: float
    blocks: str


class CovarianceStudy(TypedDict):
    """Experiment 2 (:func:`covariance_growth`): four runs and the protocol."""

    runs: list[CovarianceRun]
    protocol: CovarianceProtocol


class ConsensusRun(TypedDict):
    """One prompt through :func:`consensus`, with or without feed-forward blocks: ``E`` and the mean cosine
    before the first pass and after each one, and the final fraction of tokens opposite :math:`y_1`."""

    prompt: str
    n_tokens: int
    ffn: bool
    E: list[float]
    mean_cos: list[float]
    final_fraction_opposite_y1: float


class ConsensusModelRuns(TypedDict, total=False):
    """One model of :func:`consensus`: its summary, its number of passes and its runs (the random GPT-2
    also its ``seed`` and ``init``)."""

    model: CheckpointSummary
    passes: int
    seed: int
    init: str
    runs: list[ConsensusRun]


class ConsensusStudy(TypedDict, total=False):
    """Experiment 3 (:func:`consensus`): the pretrained model, the random GPT-2 and the definitions (``protocol``)."""

    pretrained: ConsensusModelRuns
    gpt2_random: ConsensusModelRuns
    protocol: dict[str, str]


def _torch() -> Any:
    import torch

    torch.set_num_threads(1)
    return torch


def sliced_w2(X: np.ndarray, Y: np.ndarray, thetas: np.ndarray) -> float:
    r"""Sliced 2-Wasserstein distance of two equal-size samples (rows) along unit directions ``thetas`` (L, d).

    Parameters
    ----------
    X : numpy.ndarray
        The first sample, shape (n, d), one point per row.
    Y : numpy.ndarray
        The second sample, same shape as ``X``.
    thetas : numpy.ndarray
        The directions :math:`\theta_l`, shape (L, d), rows of unit norm.

    Returns
    -------
    float
        :math:`\mathrm{SW}_2(X,Y)`: the root mean square, over the L directions and the n ranks, of the
        difference of the sorted projections :math:`\theta_l^\top X_{(i)}-\theta_l^\top Y_{(i)}`
        (not rescaled).
    """
    px, py = np.sort(X @ thetas.T, axis=0), np.sort(Y @ thetas.T, axis=0)
    return float(np.sqrt(np.mean((px - py) ** 2)))


def _gauss_like(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""A same-size sample of :math:`\mathcal N(\hat\mu,\hat\Sigma)` (eigenvalues clipped at 0)."""
    mu = X.mean(0)
    lam, E = np.linalg.eigh(np.cov(X, rowvar=False))
    return mu + (rng.standard_normal(X.shape) * np.sqrt(np.clip(lam, 0, None))) @ E.T


def _gauss_stat(X: np.ndarray, rng: np.random.Generator, thetas: np.ndarray) -> float:
    scale = math.sqrt(max(np.trace(np.cov(X, rowvar=False)) / X.shape[1], 1e-300))
    return sliced_w2(X, _gauss_like(X, rng), thetas) / scale


def _model(model: Any) -> Any:
    from .checkpoint import Checkpoint, load_checkpoint
    from .model import Transformer

    if isinstance(model, Transformer):
        return model
    return Transformer(model if isinstance(model, Checkpoint) else load_checkpoint(model))


def gaussianity(model: Any, *, quick: bool = True, seed: int = 0, n: int | None = None, batches: int | None = None,
                n_proj: int = 128, calib: int | None = None) -> GaussianityStudy:
    r"""Experiment 1 (gaussian §5.2). Returns per-layer statistics, thresholds and the protocol.

    Parameters
    ----------
    model : Transformer, Checkpoint or path
        A :class:`~flowcert.pretrained.model.Transformer` (used as it is), a
        :class:`~flowcert.pretrained.checkpoint.Checkpoint`, or a folder (or cached hub id) read by
        :func:`~flowcert.pretrained.checkpoint.load_checkpoint`.
    quick : bool, default True
        Small defaults for ``n``, ``batches`` and ``calib`` (512, 2, 4) instead of the paper-size ones
        (4096, 10, 20).
    seed : int, default 0
        Seed of every draw (input tokens, directions, Gaussian samples).
    n : int, optional
        Tokens per batch, drawn from :math:`\mathcal N(0,I_d)`; None: by ``quick``.
    batches : int, optional
        Independent batches of tokens; None: by ``quick``.
    n_proj : int, default 128
        Number of random unit directions of the sliced distance.
    calib : int, optional
        Calibration draws per batch and layer of the Monte Carlo null; None: by ``quick``.

    Returns
    -------
    GaussianityStudy
        Per layer ``0 .. L`` (0: the input tokens): ``statistic_mean``, ``statistic_q10``,
        ``statistic_q90`` (over batches) of :math:`\mathrm{SW}_2/\sqrt{\operatorname{tr}\hat\Sigma/d}`,
        ``threshold`` (largest null value over batches and calibration draws), ``null_mean``,
        ``exceeds`` (True where every batch's statistic is above the threshold),
        ``excess_kurtosis_mean`` (of the standardised projections), with ``layers`` and ``protocol``.

    Raises
    ------
    ParamError
        ``model`` is a folder that :func:`~flowcert.pretrained.checkpoint.load_checkpoint` refuses.
    """
    torch = _torch()
    m = _model(model)
    d, L = m.ckpt.d, m.ckpt.n_layers
    n = n or (512 if quick else 4096)
    batches = batches or (2 if quick else 10)
    calib = calib or (4 if quick else 20)
    rng = np.random.default_rng(seed)
    thetas = rng.standard_normal((n_proj, d))
    thetas /= np.linalg.norm(thetas, axis=1, keepdims=True)
    stat = np.zeros((batches, L + 1))
    null = np.zeros((batches, L + 1, calib))
    kurt = np.zeros((batches, L + 1))
    with torch.no_grad():
        for bi in range(batches):
            X = torch.as_tensor(rng.standard_normal((n, d)), dtype=m.dtype)
            for li in range(L + 1):
                if li:
                    X = m.block(X, li - 1)
                Xn = X.numpy()
                stat[bi, li] = _gauss_stat(Xn, rng, thetas)
                G = _gauss_like(Xn, rng)
                null[bi, li] = [_gauss_stat(_gauss_like(G, rng), rng, thetas) for _ in range(calib)]
                Z = (Xn - Xn.mean(0)) @ thetas.T
                Z /= Z.std(0)
                kurt[bi, li] = float(np.mean(Z ** 4) - 3.0)
    thr = null.max(axis=(0, 2))
    return {"layers": list(range(L + 1)), "statistic_mean": stat.mean(0).tolist(),
            "statistic_q10": np.quantile(stat, 0.1, axis=0).tolist(), "statistic_q90": np.quantile(stat, 0.9, axis=0).tolist(),
            "threshold": thr.tolist(), "null_mean": null.mean(axis=(0, 2)).tolist(),
            "exceeds": (stat.min(0) > thr).tolist(), "excess_kurtosis_mean": kurt.mean(0).tolist(),
            "protocol": {"n_tokens": n, "batches": batches, "projections": n_proj, "calibration_draws": calib,
                         "seed": seed, "input": "N(0, I_d) tokens, embeddings bypassed, blocks as released (LayerNorm on)",
                         "statistic": "SW2(X, N(mu_hat, Sigma_hat) sample) / sqrt(tr Sigma_hat / d)",
                         "threshold": "max over batches x calibration draws of the statistic on a Gaussian sample"}}


def covariance_growth(model: Any, *, quick: bool = True, seed: int = 0, n: int | None = None, passes: int = 2,
                      v: float | None = None, b: float | None = None) -> CovarianceStudy:
    r"""Experiment 2 (gaussian §5.3): tr of the empirical covariance per layer for V = -vI (with B = bI:
    Thm 4.7 signs) and V = +vI (Thm 4.8 signs), with the pretrained feed-forward blocks and without
    them (attention-only control). Defaults b = 1/d (mean-field regime: self-logit b|x|^2 ~ 1) and
    v = 1/2 (the residual map's mean factor 1 -+ v must stay inside (-1, 1) for the opposing case).
    Attention-only runs also carry the Gaussian mean-field prediction
    :math:`\Sigma^+=(I+V\Sigma B)\Sigma(I+V\Sigma B)^\top` (note 000 §1.4, discrete residual layer)
    iterated from the empirical :math:`\hat\Sigma_0`.

    Parameters
    ----------
    model : Transformer, Checkpoint or path
        As for :func:`gaussianity`.
    quick : bool, default True
        Default ``n`` 512 instead of 4096.
    seed : int, default 0
        Seed of the input tokens :math:`X_0\sim\mathcal N(0,I_d)`.
    n : int, optional
        Number of tokens; None: by ``quick``.
    passes : int, default 2
        Passes through the block stack (``passes * L`` blocks in all).
    v : float, optional
        Size of :math:`V=\mp vI`; None: 1/2.
    b : float, optional
        :math:`B=bI`; None: 1/d.

    Returns
    -------
    CovarianceStudy
        ``runs``: four runs (``signs`` ``opposing`` / ``positive`` times ``ffn`` True / False), each with
        ``trace_cov`` and ``mean_norm`` (the norm of the empirical mean) after every block, from the
        input on (``inf`` once the tokens are no longer finite), and for ``ffn=False`` the mean-field
        ``trace_cov_meanfield``; ``protocol``: the settings.

    Raises
    ------
    ParamError
        ``model`` is a folder that :func:`~flowcert.pretrained.checkpoint.load_checkpoint` refuses.
    """
    torch = _torch()
    m = _model(model)
    d, L = m.ckpt.d, m.ckpt.n_layers
    n = n or (512 if quick else 4096)
    b = 1.0 / d if b is None else b
    v = 0.5 if v is None else v
    rng = np.random.default_rng(seed)
    X0 = torch.as_tensor(rng.standard_normal((n, d)), dtype=m.dtype)
    runs: list[CovarianceRun] = []
    for ffn in (True, False):
        for label, vv in (("opposing", -v), ("positive", v)):
            def mixer(Y: Any, vv: float = vv) -> Any:
                A = torch.softmax(b * (Y @ Y.T), dim=-1)  # logits x_j^T B x_i, B = bI
                return vv * (A @ Y)                          # sum_j A_ij V x_j, V = vI
            X, tr, mean = X0, [], []
            with torch.no_grad():
                for k in range(passes * L + 1):
                    if k:
                        X = m.block(X, (k - 1) % L, layernorm=False, mixer=mixer, ffn=ffn)
                    Xn = X.numpy()
                    ok = bool(np.all(np.isfinite(Xn)))
                    tr.append(float(np.trace(np.cov(Xn, rowvar=False))) if ok else float("inf"))
                    mean.append(float(np.linalg.norm(Xn.mean(0))) if ok else float("inf"))
            run: CovarianceRun = {"signs": label, "ffn": ffn, "V": f"{vv:+g} I", "B": f"{b:.6g} I", "trace_cov": tr,
                                  "mean_norm": mean}
            if not ffn:
                S = np.cov(X0.numpy(), rowvar=False)
                mf = [float(np.trace(S))]
                for _ in range(passes * L):
                    G = np.eye(d) + vv * b * S
                    S = G @ S @ G.T
                    mf.append(float(np.trace(S)))
                run["trace_cov_meanfield"] = mf
            runs.append(run)
    return {"runs": runs,
            "protocol": {"n_tokens": n, "seed": seed, "passes": passes, "layers_per_pass": L, "v": v, "b": b,
                         "blocks": "LayerNorm removed; attention replaced by X + softmax(X B X^T) X V^T; "
                                   "pretrained FF kept (ffn=True) or removed (ffn=False)"}}


def _cos_stats(Y: np.ndarray) -> tuple[float, float]:
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    C = Yn @ Yn.T
    n = len(Y)
    E = 1.0 - float(np.mean(np.abs(C[0])))
    cbar = float((C.sum() - n) / (n * (n - 1)))
    return E, cbar


def _iterate(m: Any, X: Any, passes: int, ffn: bool) -> tuple[list[float], list[float], float]:
    """E and mean cosine after every pass, and the final fraction of tokens with cos(y_1, y_i) < 0."""
    Es, cs = [], []
    E, c = _cos_stats(m.final(X).numpy())
    Es.append(E)
    cs.append(c)

    def cb(_: int, Y: Any) -> None:
        E, c = _cos_stats(m.final(Y).numpy())
        Es.append(E)
        cs.append(c)
    Y = m.final(m.run(X, repeat=passes, ffn=ffn, callback=cb)).numpy()
    return Es, cs, float(np.mean(Y @ Y[0] < 0))


def gpt2_random(seed: int = 0, d: int = 128, n_heads: int = 4, n_layers: int = 12) -> Any:
    """The GPT-2-shaped causal model with seeded random initialisation (GPT-2 small has d=768, 12 heads).

    Parameters
    ----------
    seed : int, default 0
        Seed of the weights (:func:`flowcert.pretrained.synthetic.random_checkpoint`).
    d : int, default 128
        Hidden size; the feed-forward width is ``4 * d``.
    n_heads : int, default 4
        Attention heads per block (must divide ``d``).
    n_layers : int, default 12
        Number of blocks.

    Returns
    -------
    Transformer
        A :class:`~flowcert.pretrained.model.Transformer` of an in-memory GPT-2 checkpoint
        (vocabulary 30522, 512 positions, Hugging Face initialisation with ``initializer_range`` 0.02).
    """
    from .model import Transformer
    from .synthetic import random_checkpoint

    return Transformer(random_checkpoint("gpt2", d=d, n_heads=n_heads, n_layers=n_layers, d_ff=4 * d,
                                         vocab=30522, n_pos=512, seed=seed))


def consensus(model: Any, *, quick: bool = True, seed: int = 0, passes: int | None = None,
              gpt2_passes: int | None = None, prompts: tuple[str, ...] = PROMPTS) -> ConsensusStudy:
    r"""Experiment 3 (consensus §7.5) on ``model`` (pretrained, with tokenizer) and on the random GPT-2.

    Parameters
    ----------
    model : Transformer, Checkpoint or path
        Its folder must hold ``tokenizer.json``.
        A :class:`~flowcert.pretrained.model.Transformer` (used as it is), a
        :class:`~flowcert.pretrained.checkpoint.Checkpoint`, or a folder (or cached hub id) read by
        :func:`~flowcert.pretrained.checkpoint.load_checkpoint`.
    quick : bool, default True
        Small defaults for ``passes`` and ``gpt2_passes`` (15, 100) instead of the paper-size ones
        (300, 2000).
    seed : int, default 0
        Seed of the random GPT-2 (:func:`gpt2_random`).
    passes : int, optional
        Passes of the whole stack for ``model``; None: by ``quick``.
    gpt2_passes : int, optional
        Passes for the random GPT-2; None: by ``quick``.
    prompts : tuple of str, default PROMPTS
        The texts, each run with and without feed-forward blocks; the random GPT-2 gets the same
        token ids modulo its vocabulary.

    Returns
    -------
    ConsensusStudy
        ``pretrained`` and ``gpt2_random``, each with the model's summary, its number of passes and
        ``runs``: per prompt and ``ffn``, ``E`` and ``mean_cos`` before the first pass and after each
        one, and ``final_fraction_opposite_y1`` (tokens with :math:`\cos(y_1,y_i)<0` at the end);
        ``protocol``: the definitions.

    Raises
    ------
    ParamError
        ``model`` cannot be loaded, or its folder has no ``tokenizer.json``.
    """
    _torch()
    m = _model(model)
    passes = passes or (15 if quick else 300)
    gpt2_passes = gpt2_passes or (100 if quick else 2000)
    g = gpt2_random(seed)
    res: ConsensusStudy = {"pretrained": {"model": m.ckpt.summary(), "passes": passes, "runs": []},
                           "gpt2_random": {"model": g.ckpt.summary(), "passes": gpt2_passes, "seed": seed,
                                           "init": "N(0, 0.02^2), residual projections N(0, 0.02^2/(2L)), biases 0, LN (1, 0)",
                                           "runs": []}}
    for p in prompts:
        ids = m.tokenize(p)
        for ffn in (True, False):
            E, c, neg = _iterate(m, m.embed(ids), passes, ffn)
            res["pretrained"]["runs"].append({"prompt": p, "n_tokens": len(ids), "ffn": ffn, "E": E, "mean_cos": c,
                                              "final_fraction_opposite_y1": neg})
            ids_g = [i % g.ckpt.vocab_size for i in ids]
            E, c, neg = _iterate(g, g.embed(ids_g), gpt2_passes, ffn)
            res["gpt2_random"]["runs"].append({"prompt": p, "n_tokens": len(ids), "ffn": ffn, "E": E, "mean_cos": c,
                                               "final_fraction_opposite_y1": neg})
    res["protocol"] = {"E": "1 - mean_i |cos(y_1, y_i)| (consensus paper eq. 25; 0 also for +-y_1 configurations)",
                       "mean_cos": "mean over i != j of cos(y_i, y_j) (1 iff consensus)",
                       "feedback": "hidden state of the last block fed back as the next pass's input (no re-embedding); "
                                   "GPT-2 statistics measured after ln_f, BERT on the block output",
                       "tokens": "MiniLM tokenizer ids (for the random GPT-2: the same ids mod its vocabulary)",
                       "no_ffn": "feed-forward sub-block removed with its skip connection and its LayerNorm"}
    return res


def summary(name: str, res: GaussianityStudy | CovarianceStudy | ConsensusStudy) -> str:
    """A few text lines per experiment (CLI output).

    Parameters
    ----------
    name : str
        ``"gaussianity"`` (:func:`gaussianity`), ``"covariance"`` (:func:`covariance_growth`); any
        other name reads ``res`` as a :func:`consensus` result.
    res : GaussianityStudy, CovarianceStudy or ConsensusStudy
        The experiment's result.

    Returns
    -------
    str
        One line per layer (gaussianity: statistic, threshold, verdict), per run (covariance: the
        trace after every block) or per prompt and model (consensus: first and last ``E`` and mean
        cosine); ends with a newline.
    """
    if name == "gaussianity":
        rows = [f"layer {l}: SW2/scale {s:.4f}  threshold {t:.4f}  {'NON-GAUSSIAN' if e else 'within'}"
                for l, s, t, e in zip(res["layers"], res["statistic_mean"], res["threshold"], res["exceeds"])]
        return "\n".join(rows) + "\n"
    if name == "covariance":
        return "".join(f"{r['signs']} ffn={r['ffn']} (V={r['V']}, B={r['B']}): tr cov "
                       + " ".join(f"{x:.3g}" for x in r["trace_cov"]) + "\n" for r in res["runs"])
    lines = []
    for which in ("pretrained", "gpt2_random"):
        for r in res[which]["runs"]:
            lines.append(f"{which:<11} ffn={r['ffn']!s:<5} n={r['n_tokens']:<3} E {r['E'][0]:.3f} -> {r['E'][-1]:.4f}  "
                         f"mean cos {r['mean_cos'][0]:.3f} -> {r['mean_cos'][-1]:.4f}")
    return "\n".join(lines) + "\n"
