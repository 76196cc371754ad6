"""flowcert: symbolic-numeric verification of transformer and recurrent-network dynamics.

Layers (dependencies point one way):
``symbolic <- numeric, gpu <- certificates <- flowcert (catalogue, API, CLI) <- reports``.

From Python::

    import flowcert
    res = flowcert.verify("gaussian", {"A": A, "B": B, "V": V, "b": b, "mu0": mu0, "Sigma0": S0})
    res.status, res.theorems["gaussian:thm-4.7.1"].applies, res.regime, res.to_json()
    print(res.summary())
    flowcert.verify("rnn", torch.nn.GRUCell(3, 8), inputs=x)      # your own recurrent cell
    flowcert.pretrained.verify(model, system="gaussian")            # your own transformer

The public names below, and the subpackages (``flowcert.rnn``, ``flowcert.pretrained`` …), are
imported on first use (module ``__getattr__``), so ``import flowcert`` and ``flowcert --help`` stay fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it (imported on first access)
_LAZY = {
    "verify": "flowcert.api",
    "Result": "flowcert.result",
    "Theorem": "flowcert.result",
    "Hypothesis": "flowcert.result",
    "Certificate": "flowcert.result",
    "CrossCheck": "flowcert.result",
    "Simulation": "flowcert.result",
    "Paper": "flowcert.result",
    "Applies": "flowcert.result",
    "Status": "flowcert.result",
    "CheckStatus": "flowcert.result",
    "Verdict": "flowcert.result",
    "InputError": "flowcert.errors",
    "PrecisionWarning": "flowcert.errors",
    "ParamError": "flowcert.errors",
    "System": "flowcert.system",
    "get_system": "flowcert.systems",
    "REGISTRY": "flowcert.systems",
}

#: subpackages reachable as attributes without importing them first (``flowcert.rnn.analyze_cell``)
_SUBPACKAGES = ("attention", "gaussian", "pretrained", "rnn", "testing")

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'flowcert' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBPACKAGES))
