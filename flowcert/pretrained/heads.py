r"""Every head of a checkpoint in the papers' conventions, and parameter files for ``flowcert verify``.

Head :math:`h` of block :math:`\ell` has :math:`Q=W_Q^h, K=W_K^h, V=W_V^h\in\mathbb R^{d_h\times d}`
(row blocks of the ``nn.Linear`` weights) and :math:`O=W_O^h\in\mathbb R^{d\times d_h}` (column block).

* Attention form (consensus paper eq. (7), multistability eq. (1)): score
  :math:`s_{ij}=x_i^\top M x_j` with

  .. math:: M = \frac{1}{\sqrt{d_h}}\,Q^\top K\qquad(\text{query } i \text{ left, key } j \text{ right}),

  so :math:`P=Q^\top K` with inverse temperature :math:`\beta=1/\sqrt{d_h}`.
* Gaussian paper eq. (2) writes the logit as :math:`x_j^\top B x_i` (key left), so
  :math:`B = M^\top = K^\top Q/\sqrt{d_h}`.
* Value map :math:`V=W_V^h` (:math:`d_h\times d`) and the combined value–output map
  :math:`U = W_O^h W_V^h\in\mathbb R^{d\times d}` (the consensus paper's :math:`U_\eta=W_\eta V_\eta'`,
  the gaussian and multistability papers' :math:`V`).

Both :math:`M` and :math:`U` have rank :math:`\le d_h`; their nonzero eigenvalues are those of the
:math:`d_h\times d_h` matrices :math:`KQ^\top/\sqrt{d_h}` and :math:`W_V^hW_O^h`
(:math:`\operatorname{spec}(AB)\setminus\{0\}=\operatorname{spec}(BA)\setminus\{0\}`), and those of the
symmetric part :math:`\tfrac12(M+M^\top)=Z\,(RJR^\top/2)\,Z^\top` with :math:`[Q^\top\,K^\top]=ZR`
(thin QR) and :math:`J=\begin{pmatrix}0&I\\I&0\end{pmatrix}/\sqrt{d_h}` are those of
:math:`RJR^\top/2`. The biases :math:`b_Q,b_K,b_V` are outside this linear reading (reported, not used).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypedDict

import numpy as np

from .checkpoint import bad
from .checkpoint import Checkpoint

if TYPE_CHECKING:
    from ..records import ProvenanceRecord

__all__ = ["CheckpointHead", "extract_heads", "head_at", "gaussian_params", "attention_params", "write_params",
           "GaussianHeadParams", "FactoredMatrix", "DiagonalMatrix", "HeadFactors", "AttentionHeadParams"]


class FactoredMatrix(TypedDict, total=False):
    r"""A matrix given by its factors, :math:`\sqrt q\,LR` (:class:`flowcert.certificates.lowrank.LowRank`)."""

    factors: list[np.ndarray]
    scale_squared: str


class DiagonalMatrix(TypedDict):
    """A matrix given by its diagonal (:class:`flowcert.certificates.diagonal.Diagonal`)."""

    diagonal: list[float]


class GaussianHeadParams(TypedDict):
    """A ``gaussian`` parameter mapping of one head (:func:`gaussian_params`): B and V factored, A and Sigma0
    diagonal, b and mu0 float64 vectors."""

    A: DiagonalMatrix
    B: FactoredMatrix
    V: FactoredMatrix
    b: np.ndarray
    mu0: np.ndarray
    Sigma0: DiagonalMatrix


class HeadFactors(TypedDict):
    """One head of an ``attention`` parameter mapping: ``Q``, ``K`` (d_h x d) and ``V`` (d x d), as nested lists."""

    Q: list[list[float]]
    K: list[list[float]]
    V: list[list[float]]


class AttentionHeadParams(TypedDict):
    """An ``attention`` parameter mapping of one block's heads (:func:`attention_params`), JSON-ready."""

    heads: list[HeadFactors]
    beta: float
    causal: bool
    normalization: str


@dataclass
class CheckpointHead:
    """One head's factors (exact stored values, float64)."""

    layer: int
    head: int
    Q: np.ndarray  # (d_h, d)
    K: np.ndarray  # (d_h, d)
    V: np.ndarray  # (d_h, d)
    O: np.ndarray  # (d, d_h)
    bq: np.ndarray
    bk: np.ndarray
    bv: np.ndarray

    @property
    def d(self) -> int:
        return self.Q.shape[1]

    @property
    def d_head(self) -> int:
        return self.Q.shape[0]

    @property
    def beta(self) -> float:
        r"""Inverse temperature :math:`1/\sqrt{d_h}`."""
        return 1.0 / math.sqrt(self.d_head)

    @property
    def M(self) -> np.ndarray:
        r""":math:`Q^\top K/\sqrt{d_h}` (d x d, float64 product)."""
        return (self.Q.T @ self.K) * self.beta

    @property
    def B(self) -> np.ndarray:
        r"""Gaussian paper's :math:`B=M^\top`."""
        return self.M.T

    @property
    def U(self) -> np.ndarray:
        """Value–output map :math:`W_OW_V` (d x d)."""
        return self.O @ self.V

    def factors(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        r"""The exact factors :math:`(A, B)` of :math:`P = Q^\top K` (``"P"``) or :math:`U = W_OW_V` (``"U"``),
        :math:`N = AB`, that the certificates of :mod:`flowcert.certificates.lowrank` slice.

        Parameters
        ----------
        name : str
            ``"P"`` or ``"U"``.

        Returns
        -------
        tuple of numpy.ndarray
            ``(Q.T, K)`` for ``"P"`` (shapes (d, d_h), (d_h, d)); ``(O, V)`` for ``"U"`` (the same
            shapes). The stored arrays themselves, not copies; :math:`1/\sqrt{d_h}` is not applied.

        Raises
        ------
        KeyError
            Any other ``name``.
        """
        if name == "P":
            return self.Q.T, self.K
        if name == "U":
            return self.O, self.V
        raise KeyError(name)

    def eig_M(self) -> np.ndarray:
        r"""Nonzero-part spectrum of M: eigenvalues of :math:`KQ^\top/\sqrt{d_h}`, by descending real part."""
        return _sorted(np.linalg.eigvals(self.K @ self.Q.T * self.beta))

    def eig_U(self) -> np.ndarray:
        """Nonzero-part spectrum of U: eigenvalues of :math:`W_VW_O`, by descending real part."""
        return _sorted(np.linalg.eigvals(self.V @ self.O))

    def eig_sym(self, which: str) -> np.ndarray:
        r"""Nonzero-part spectrum (descending) of the symmetric part of M or U (see module docstring).

        Parameters
        ----------
        which : str
            ``"M"`` for :math:`\tfrac12(M+M^\top)`; any other value for :math:`\tfrac12(U+U^\top)`.

        Returns
        -------
        numpy.ndarray
            The :math:`2d_h` real eigenvalues of :math:`RJR^\top s/2`, where :math:`[A\ B^\top]=ZR` is the
            thin QR of the factors (:meth:`factors`) and :math:`s` is :math:`1/\sqrt{d_h}` for M, 1 for
            U, in descending order; the other eigenvalues of the d x d symmetric part are 0.
        """
        if which == "M":
            left, right, s = self.Q.T, self.K, self.beta
        else:
            left, right, s = self.O, self.V, 1.0
        Z, R = np.linalg.qr(np.hstack([left, right.T]))
        k = left.shape[1]
        J = np.zeros((2 * k, 2 * k))
        J[:k, k:] = np.eye(k)
        J[k:, :k] = np.eye(k)
        return np.sort(np.linalg.eigvalsh(R @ J @ R.T * (s / 2)))[::-1]


def _sorted(ev: np.ndarray) -> np.ndarray:
    return ev[np.lexsort((-ev.imag, -ev.real))]


def head_at(ckpt: Checkpoint, layer: int, head: int) -> CheckpointHead:
    """Head ``head`` of block ``layer``: row block ``head`` of ``Wq, Wk, Wv`` (and of the biases), column
    block ``head`` of ``Wo`` (each block ``d_head`` wide; the caller checks the indices).

    Parameters
    ----------
    ckpt : Checkpoint
        The loaded checkpoint.
    layer : int
        The block, ``0 <= layer < n_layers`` (not checked).
    head : int
        The head, ``0 <= head < n_heads`` (not checked).

    Returns
    -------
    CheckpointHead
        Copies of the head's ``Q, K, V`` (d_h x d), ``O`` (d x d_h) and biases ``bq, bk, bv``.
    """
    lw, dh = ckpt.layers[layer], ckpt.d_head
    r = slice(head * dh, (head + 1) * dh)
    return CheckpointHead(layer, head, lw.Wq[r].copy(), lw.Wk[r].copy(), lw.Wv[r].copy(), lw.Wo[:, r].copy(),
                lw.bq[r].copy(), lw.bk[r].copy(), lw.bv[r].copy())


def extract_heads(ckpt: Checkpoint) -> list[CheckpointHead]:
    """All heads, layer-major (72 for MiniLM: 6 layers x 12 heads).

    Parameters
    ----------
    ckpt : Checkpoint
        The loaded checkpoint.

    Returns
    -------
    list of CheckpointHead
        :func:`head_at` of every block and head, ordered by layer, then head.
    """
    return [head_at(ckpt, li, h) for li in range(len(ckpt.layers)) for h in range(ckpt.n_heads)]


def _pick(ckpt: Checkpoint, layer: int, head: int | None) -> list[CheckpointHead]:
    if not 0 <= layer < ckpt.n_layers:
        raise bad(f"--layer: must be in 0..{ckpt.n_layers - 1}, got {layer}")
    if head is not None and not 0 <= head < ckpt.n_heads:
        raise bad(f"--head: must be in 0..{ckpt.n_heads - 1}, got {head}")
    # only the heads asked for are sliced (every head of every layer would be 4 n_layers n_heads copies)
    return [head_at(ckpt, layer, h) for h in (range(ckpt.n_heads) if head is None else (head,))]


def gaussian_params(ckpt: Checkpoint, layer: int, head: int) -> GaussianHeadParams:
    """A ``gaussian`` parameter mapping for one head (attention only: A = 0, b = 0;
    B = K^T Q / sqrt(d_h), V = W_O W_V, both factored: ``{"factors": [K^T, Q], "scale_squared": "1/d_h"}``
    and ``{"factors": [W_O, W_V]}``, the model's own matrices of rank <= d_h, never a rounded d x d
    product; mu0 = 0, Sigma0 = I; A and Sigma0 as ``{"diagonal": [...]}``), validated by ``parse_gaussian``.
    Nothing of size d x d is written.

    Parameters
    ----------
    ckpt : Checkpoint
        The loaded checkpoint.
    layer : int
        The block, ``0 <= layer < n_layers``.
    head : int
        The head, ``0 <= head < n_heads``.

    Returns
    -------
    GaussianHeadParams
        ``A``, ``B``, ``V``, ``b``, ``mu0``, ``Sigma0`` as float64 numpy arrays (d x d or d), ready for
        :func:`flowcert.verify` with ``"gaussian"`` or :func:`write_params`.

    Raises
    ------
    ParamError
        ``layer`` outside ``0 .. n_layers - 1`` or ``head`` outside ``0 .. n_heads - 1`` (named as
        ``--layer`` / ``--head``).
    """
    from ..gaussian.params import parse_gaussian

    h = _pick(ckpt, layer, head)[0]
    d = h.d
    raw: GaussianHeadParams = {"A": {"diagonal": [0.0] * d},
                               "B": {"factors": [h.K.T.copy(), h.Q], "scale_squared": f"1/{h.d_head}"},
                               "V": {"factors": [h.O, h.V]}, "b": np.zeros(d), "mu0": np.zeros(d),
                               "Sigma0": {"diagonal": [1.0] * d}}
    parse_gaussian(raw)
    return raw


def attention_params(ckpt: Checkpoint, layer: int, head: int | None = None) -> AttentionHeadParams:
    """An ``attention`` parameter mapping (the keys of :mod:`flowcert.attention.params`):
    ``heads: [{Q, K, V}]`` with Q, K the raw (d_h x d) projections, V the value–output map W_O W_V
    (d x d), ``beta = 1/sqrt(d_h)``, ``causal`` for GPT-2 and OPT, ``normalization: "unit"`` (rows of the
    attention matrix sum to 1).

    Parameters
    ----------
    ckpt, layer : Checkpoint, int
        As for :func:`gaussian_params`.
    head : int, optional
        The head, ``0 <= head < n_heads``; None: every head of the block, in order (a multi-head
        system).

    Returns
    -------
    AttentionHeadParams
        ``heads`` (a list of ``{"Q", "K", "V"}`` as nested lists), ``beta``, ``causal`` and
        ``normalization``: JSON-ready, for :func:`flowcert.verify` with ``"attention"`` or
        :func:`write_params`.

    Raises
    ------
    ParamError
        ``layer`` outside ``0 .. n_layers - 1`` or ``head`` outside ``0 .. n_heads - 1`` (named as
        ``--layer`` / ``--head``).
    """
    hs = _pick(ckpt, layer, head)
    return {"heads": [{"Q": h.Q.tolist(), "K": h.K.tolist(), "V": h.U.tolist()} for h in hs],
            "beta": hs[0].beta, "causal": ckpt.causal, "normalization": "unit"}


def write_params(raw: Mapping[str, object], path: str | Path,
                 provenance: ProvenanceRecord | None = None) -> Path:
    """Write a parameter mapping as ``.json`` (nested lists) or ``.npz`` (flat arrays only), with its
    ``provenance`` (:mod:`flowcert.pretrained.provenance`) as the first key (``.npz``: a JSON string).

    Parameters
    ----------
    raw : mapping
        The parameter mapping (:func:`gaussian_params` or :func:`attention_params`, possibly with the
        initial tokens ``X0`` and ``n`` of an export); numpy arrays are
        written as nested lists in ``.json``.
    path : str or pathlib.Path
        The output file; its suffix, ``.json`` or ``.npz``, chooses the format (``.npz``: a factored matrix is
        written as its float64 product, a dense matrix; ``.json`` keeps its factors). Written to a temporary
        file beside it and renamed onto it (never through a link).
    provenance : ProvenanceRecord, optional
        The provenance record, stored under its key before the parameters; None: none.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ParamError
        A suffix other than ``.json`` / ``.npz``, ``.npz`` for a mapping with ``heads`` (not flat
        arrays), or a folder that does not exist or cannot be written in (named as ``--out``).
    flowcert.errors.OutputError
        An OS error while the file is written.
    """
    from ..outputs import replacing, write_text
    from .provenance import KEY

    p = Path(path)
    if p.suffix == ".npz":
        from ..certificates.diagonal import Diagonal, is_diagonal_form
        from ..certificates.lowrank import LowRank, is_factored

        # .npz holds flat arrays: a factored matrix goes in as its float64 product (a dense matrix, verified as
        # given), as every export did before factored matrices; the .json keeps the factors themselves
        raw = {k: LowRank.from_json(_listed(v)).floats() if is_factored(v) else
               np.diag(Diagonal.from_json(v).floats()) if is_diagonal_form(v) else v for k, v in raw.items()}
        if any(not isinstance(v, (np.ndarray, list, float, int, bool, str)) or isinstance(v, list) and v
               and isinstance(v[0], dict) for v in raw.values()):
            raise bad(f"--out: '{p}': .npz holds flat arrays only (use .json for 'heads')")
        arrays = {k: np.asarray(v) for k, v in raw.items()}
        if provenance is not None:
            arrays = {KEY: np.asarray(json.dumps(provenance)), **arrays}
        with replacing("--out", p) as tmp:
            np.savez(tmp, **arrays)
    elif p.suffix == ".json":
        doc = {} if provenance is None else {KEY: provenance}
        doc.update({k: _listed(v) for k, v in raw.items()})
        write_text("--out", p, json.dumps(doc))
    else:
        raise bad(f"--out: '{p}' must end in .json or .npz")
    return p


def _listed(v: object) -> object:
    """A value with its numpy arrays as nested lists (inside a factored matrix too), for JSON."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, dict):
        return {k: _listed(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_listed(x) for x in v]
    return v


def __getattr__(name: str) -> Any:
    """``Head``, the old name of :class:`CheckpointHead`, still imports (with a DeprecationWarning)."""
    if name == "Head":
        import warnings

        warnings.warn("flowcert.pretrained.heads.Head is CheckpointHead", DeprecationWarning, stacklevel=2)
        return CheckpointHead
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
