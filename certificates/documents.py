r"""Re-checking a whole document from the certificates layer: ``flowcert.certificates.recheck_document``.

A document is re-checked against the theorem catalogue (which hypotheses an entry has, what each
certificate is about), and the catalogue lives above this layer. So, as for the checkers of
:mod:`.kinds`, the document checker is named here as ``"module:function"`` and imported on first
use; this module imports nothing from the layers above.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["DOCUMENT_CHECKER", "recheck_document"]

#: ``"module:function"`` of the document checker (the catalogue's, in the public layer)
DOCUMENT_CHECKER = "flowcert.recheck:recheck_document"
#: ``"module:function"`` that opens a checkpoint folder for :func:`recheck_document`
CHECKPOINT_LOADER = "flowcert.pretrained.binding:open_checkpoint"


def recheck_document(doc: Any, checkpoint: Any = None) -> Any:
    """Re-check one saved document (a ``verify`` / ``equilibria`` / ``kpflow analyze`` / pretrained
    document, a sweep record or a bare certificate) against the catalogue.

    Parameters
    ----------
    doc : dict
        The parsed JSON document.
    checkpoint : str, path or loaded checkpoint reference, optional
        The checkpoint folder a pretrained document names (``flowcert recheck --checkpoint``): its head
        certificates are then re-derived from the weights (bound), else they count unbound.

    Returns
    -------
    flowcert.recheck.DocumentCheck
        ``bound``, ``unbound``, ``refused`` (each refusal with its JSON path and reason), and
        ``rechecked`` (nothing refused and every ``holds`` bound).
    """
    if isinstance(checkpoint, (str, os.PathLike)):
        module, _, function = CHECKPOINT_LOADER.partition(":")
        checkpoint = getattr(importlib.import_module(module), function)(os.fspath(checkpoint))
    module, _, function = DOCUMENT_CHECKER.partition(":")
    return getattr(importlib.import_module(module), function)(doc, checkpoint=checkpoint)
