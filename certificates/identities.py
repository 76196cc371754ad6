r"""Parameter-free identities of the models, proved in SymPy at the matrix level.

Kind ``symbolic_identity``: ``data = {"identity": name}``. The identity does not depend on the
parameters (it holds for every :math:`A,B,V,\dots`), so its subject is the model itself; the checker
runs the named proof of :mod:`flowcert.symbolic` (matrix-level normal forms, size-independent; the
attention identities, polynomial at fixed sizes, are re-derived in exact sparse polynomial rings
over :math:`\mathbb Q`, :mod:`flowcert.symbolic.attention.polynomial_proofs`) and
accepts iff every residual is zero. Registered identities:

* ``gaussian:moment_closure`` — Prop. 2.1 and Lemma 3.1 of the gaussian paper: exponential tilting,
  the affine form of Gaussian attention, the mean and covariance equations (7), symmetry, the
  congruence form and the transport identity (:func:`flowcert.symbolic.gaussian.proofs`).
* ``multistability:oja_lyapunov`` — Lemma 1: :math:`\dot W+\|(I-xx^\top)Vx\|^2=-(x^\top Vx)^2(1-x^\top x)`,
  a polynomial identity in :math:`x\in\mathbb R^3` and symmetric :math:`V` (so for every :math:`d\le3` by
  substitution; :func:`flowcert.symbolic.attention.multistability.oja_lyapunov_identity`).
* ``multistability:multiagent_lyapunov`` — Lemma 5: :math:`\dot W+\frac1n\sum\|\dot x_i\|^2=
  -\frac1n\sum(x_i^\top y)^2(1-\|x_i\|^2)` at :math:`n=3`, :math:`d=2`.
* ``consensus:theorem_3_2`` — Thms 3.1/3.2 of the consensus paper: the gradient of :math:`V_P`, the
  field form and :math:`\dot V_P=-\sum_kZ_k|\dot y_k|_P^2` (:func:`flowcert.symbolic.attention.consensus.theorem_3_2_proofs`).
* ``consensus:theorem_4_1`` — Thm 4.1: the per-term decomposition of the Dini derivative.
* ``consensus:lemma_5_1`` — Lemma 5.1 / Thm 5.1: :math:`\dot a=\alpha(1-a^2)`, :math:`V(a)`, the cascade
  identity (19) and the input gain.
* ``consensus:lemma_6_1`` — Lemma 6.1 / Thm 6.1: :math:`\dot b`, the sum of squares and identity (23).
* ``kpflow:gram_psd`` — Thm 1 of the KPFlow paper: :math:`v^\top(\frac1BGG^\top)v=\frac1B|G^\top v|^2`, so
  :math:`\mathcal K\succeq0` (:func:`flowcert.symbolic.rnn.gram_psd_identity`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from . import core

__all__ = ["IDENTITIES", "RUNS", "identity_certificate", "proved", "results"]


def _gaussian_moment_closure() -> bool:
    from ..symbolic import gaussian

    return all(p.proved for p in gaussian.proofs())


def _multistability(which: str) -> Callable[[], Any]:
    def run() -> Any:
        from ..symbolic.attention import multistability as sm

        return sm.oja_lyapunov_identity(3) if which == "oja" else sm.multiagent_lyapunov_identity(3, 2)

    return run


def _consensus(which: str) -> Callable[[], Any]:
    def run() -> Any:
        from ..symbolic.attention import consensus as sc

        return getattr(sc, f"{which}_proofs")()

    return run


#: identity name -> the SymPy computation whose output :func:`results` shares with the catalogue
RUNS: dict[str, Callable[[], Any]] = {
    "multistability:oja_lyapunov": _multistability("oja"),
    "multistability:multiagent_lyapunov": _multistability("multiagent"),
    **{f"consensus:{w}": _consensus(w) for w in ("theorem_3_2", "theorem_4_1", "lemma_5_1", "lemma_6_1")},
}


def _kpflow_gram_psd() -> bool:
    import sympy as sp

    from ..symbolic.rnn import gram_psd_identity

    r = gram_psd_identity()
    return bool(r == 0 or isinstance(r, sp.ZeroMatrix) or getattr(r, "is_zero_matrix", False))


@functools.lru_cache(maxsize=None)
def results(name: str) -> Any:
    """The output of the registered computation ``name`` (residuals or :class:`~flowcert.symbolic.Proof`
    records), run once per process and shared by the catalogue and the checker."""
    return RUNS[name]()


def _ring_normal_form(name: str) -> Callable[[], bool]:
    def proof() -> bool:
        from ..symbolic.attention import polynomial_proofs

        return polynomial_proofs.proved(name)

    return proof


#: identity name -> proof: the gaussian and kpflow identities by SymPy's matrix-level normal forms; the
#: attention identities (:data:`RUNS`) re-derived in sparse polynomial rings over QQ, where a residual is
#: its own normal form (:mod:`flowcert.symbolic.attention.polynomial_proofs`; a different algorithm from
#: the SymPy computation the catalogue reports, and two orders of magnitude cheaper to re-check)
IDENTITIES: dict[str, Callable[[], bool]] = {
    "gaussian:moment_closure": _gaussian_moment_closure,
    "kpflow:gram_psd": _kpflow_gram_psd,
    **{name: _ring_normal_form(name) for name in RUNS},
}


def proved(name: str) -> bool:
    """Whether the registered identity ``name`` is proved (its proof, :data:`IDENTITIES`, run once per process)."""
    return _proved(name)


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
