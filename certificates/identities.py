r"""Parameter-free identities of the models, proved in SymPy at the matrix level.

Kind ``symbolic_identity``: ``data = {"identity": name}``. The identity does not depend on the
parameters (it holds for every :math:`A,B,V,\dots`), so its subject is the model itself; the checker
runs the named proof of :mod:`flowcert.symbolic` (matrix-level normal forms, size-independent) and
accepts iff every residual is zero. Registered identities:

* ``gaussian:moment_closure`` — Prop. 2.1 and Lemma 3.1 of the gaussian paper: exponential tilting,
  the affine form of Gaussian attention, the mean and covariance equations (7), symmetry, the
  congruence form and the transport identity (:func:`flowcert.symbolic.gaussian.proofs`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from . import core

__all__ = ["IDENTITIES", "identity_certificate"]


def _gaussian_moment_closure() -> bool:
    from ..symbolic import gaussian

    return all(p.proved for p in gaussian.proofs())


#: identity name -> proof (True when SymPy reduces every residual to zero)
IDENTITIES: dict[str, Callable[[], bool]] = {
    "gaussian:moment_closure": _gaussian_moment_closure,
}


@functools.lru_cache(maxsize=None)
def _proved(name: str) -> bool:
    return bool(IDENTITIES[name]())


def _check_symbolic_identity(data: dict[str, Any]) -> bool:
    name = data.get("identity")
    return isinstance(name, str) and name in IDENTITIES and _proved(name)


def identity_certificate(name: str) -> core.Certificate:
    """The ``symbolic_identity`` certificate of a registered identity (its claim from :mod:`.claims`)."""
    from .claims import claim

    data = {"identity": name}
    return core.Certificate("symbolic_identity", claim("symbolic_identity", data) or "", data,
                            checker="sympy-normal-form", subject={})
