r"""The parameters ``pretrained verify`` exports for one head, computed from the checkpoint's weights.

A head's export is its system's declared export (gaussian: :math:`A=0`,
:math:`B=K^\top Q/\sqrt{d_h}`, :math:`V=W_OW_V`; attention: the block's factors :math:`Q, K, V`), and
for a system that starts from tokens the prompt's hidden states :math:`h_i` entering the head's
layer :math:`\ell`, rows put on the unit sphere:

.. math:: (X_0)_i = h_i / \lVert h_i\rVert_2 .

``pretrained verify`` writes it (:mod:`flowcert.pretrained.command`) and ``flowcert recheck
--checkpoint`` recomputes it by the same float64 program to bind a line's parameters to the weights
(:mod:`flowcert.pretrained.binding`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..records import ProvenanceRecord

__all__ = ["DEFAULT_PROMPT", "prompt_tokens", "exported"]

DEFAULT_PROMPT = "Flows of tokens converge to consensus."


def prompt_tokens(ckpt: Any, layer: int, prompt: str, ids: list[int] | None = None) -> Any:
    """The prompt's hidden states entering ``layer`` (embeddings, then layers ``0..layer-1``), rows
    scaled to unit norm: the tokens on the sphere that the attention system starts from (``ids``:
    the prompt's token ids when already known)."""
    from .model import Transformer, tokens_entering

    return tokens_entering(ckpt, layer, Transformer(ckpt).tokenize(prompt) if ids is None else ids)


def exported(ckpt: Any, system: str, layer: int, head: int, prov: ProvenanceRecord,
             X0: dict[int, Any] | None = None) -> dict[str, object]:
    """The parameter mapping ``pretrained verify`` exports for one head: the system's declared export, and
    for the token systems (attention) the prompt's tokens of ``prov`` as ``X0`` (``X0``: a per-layer cache).
    ``flowcert recheck --checkpoint`` recomputes it to bind a line's parameters to the weights."""
    from ..systems import capability, get_system

    raw = capability(system, "export")(ckpt, layer, head)
    if get_system(system).from_tokens:  # the token systems start from the prompt's tokens
        X0 = {} if X0 is None else X0
        if layer not in X0:
            X0[layer] = prompt_tokens(ckpt, layer, prov["prompt"], prov["tokens"])
        raw.update(X0=X0[layer].tolist(), n=int(X0[layer].shape[0]))
    return raw
