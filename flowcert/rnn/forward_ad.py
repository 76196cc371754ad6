"""Forward-mode automatic differentiation without torch's own deprecation notes.

The first ``torch.autograd.forward_ad.make_dual`` of a process imports
``torch._decomp.decompositions_for_jvp``, which compiles torch's jvp decompositions with
``torch.jit.script``: 18 ``DeprecationWarning`` lines about torch's internals (not about flowcert's
code or the user's), shown on the first rnn call. :func:`load_forward_ad` does that import once, with
exactly that warning ignored, before the rnn analysis uses dual numbers; every other warning, and
``torch.jit.script`` deprecations raised anywhere else, are left as they are.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["load_forward_ad"]

#: the module whose import scripts torch's jvp decompositions
_DECOMPOSITIONS = "torch._decomp.decompositions_for_jvp"


def load_forward_ad() -> None:
    """Import torch's jvp decompositions quietly (once per process; a no-op when already imported)."""
    if _DECOMPOSITIONS in sys.modules:
        return
    import importlib

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is not supported", category=DeprecationWarning)
        importlib.import_module(_DECOMPOSITIONS)
