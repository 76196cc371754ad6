r"""Every certificate kind flowcert can write, and where its checker lives.

A certificate is the JSON object ``{"kind", "claim", "checker", "data"}``
(:meth:`flowcert.certificates.core.Certificate.to_json`); its claim is decided from ``data`` alone
by the checker of its ``kind``, a function :math:`\mathtt{data}\mapsto\{\mathtt{True},\mathtt{False}\}`
that trusts no solver. This table is the one place that maps a kind to that function, as
``"module:function"``; :func:`flowcert.certificates.core.recheck` imports the module on the first
certificate of the kind, so a fresh interpreter that imported nothing but
:mod:`flowcert.certificates` re-checks every kind, and no checker depends on which system modules
happened to be imported before. The table imports nothing itself.

A new kind is one line here: ``tests/test_recheck.py`` scans the package for every kind a
:class:`~flowcert.certificates.core.Certificate` is built with and fails on one this table lacks.
``kantorovich`` is not written on its own today (it is the existence ball inside
``stable_equilibrium`` and ``pd_equilibrium``) and stays readable for saved documents.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: a re-check loads no more than it needs
    from .records import Checker

_PKG = "flowcert.certificates"

#: kind -> ``"module:function"`` of its checker (module relative to :mod:`flowcert.certificates`).
KINDS: dict[str, str] = {
    # exact linear algebra (certificates/core.py)
    "inertia": "core:_check_inertia",
    "psd": "core:_check_psd",
    "pd": "core:_check_pd",
    "lyapunov": "core:_check_lyapunov",
    "unstable": "core:_check_unstable",
    # exact predicates of parameters and witnesses of failed definiteness (certificates/predicates.py)
    "predicate": "predicates:_check_predicate",
    "not_psd": "predicates:_check_not_psd",
    "not_pd": "predicates:_check_not_pd",
    "not_symmetric": "predicates:_check_not_symmetric",
    # parameter-free identities of the models, proved in SymPy (certificates/identities.py)
    "symbolic_identity": "identities:_check_symbolic_identity",
    # scalar conditions of the gaussian theorems on certified eigenvalue bounds (certificates/conditions.py)
    "lemma23_condition": "conditions:_check_lemma23",
    "thm48_trace_condition": "conditions:_check_thm48",
    "lemma44_design": "conditions:_check_lemma44",
    # spectra of a matrix: exact inertia, unstable eigenvalue count, detectability (certificates/spectrum.py)
    "spectrum_inertia": "spectrum:_check_spectrum_inertia",
    "zero_eigenvalue": "spectrum:_check_zero_eigenvalue",
    "unstable_count": "spectrum:_check_unstable_count",
    "detectability": "spectrum:_check_detectability",
    # gaussian system, equilibria of eq. (7) / (18) (certificates/gaussian.py)
    "kantorovich": "gaussian:_check_kantorovich",
    "stable_equilibrium": "gaussian:_check_stable_equilibrium",
    "unstable_point": "gaussian:_check_unstable_point",
    "pd_equilibrium": "gaussian:_check_pd_equilibrium",
    "d2_equilibria": "gaussian:_check_d2_equilibria",
    "trace_monotone": "gaussian:_check_trace_monotone",
    "eta_pd_equilibrium": "gaussian:_check_eta_pd_equilibrium",
    # attention system, multistability paper (certificates/attention/multistability.py)
    "symmetric_eigen_enclosure": "attention.multistability:_check_enclosure",
    "attention_bipartite_spectrum": "attention.multistability:_check_verdict",
    # attention system, consensus paper (certificates/attention/consensus.py)
    "open_hemisphere": "attention.consensus:_check_hemisphere",
    "no_open_hemisphere": "attention.consensus:_check_no_hemisphere",
    "simple_positive_top_eigenvalue": "attention.consensus:_check_simple_top",
    "repeated_top_eigenvalue": "attention.consensus:_check_repeated_top",
    "nonpositive_top_eigenvalue": "attention.consensus:_check_nonpositive_top",
    "sup_norm_bound": "attention.head_bounds:_check_sup_bound",
    "tetrahedron_spectrum_sign": "attention.consensus:_check_tetra",
    # attention system, the top eigenpair of V / U (certificates/attention/eigenvectors.py)
    "simple_top_eigenvalue": "attention.eigenvectors:_check_simple_top",
    "eigenvector_side": "attention.eigenvectors:_check_side",
    # attention system, Newton-found equilibria (certificates/attention/krawczyk.py)
    "attention_krawczyk_equilibrium": "attention.krawczyk:check",
    # rnn system, KPFlow operators (certificates/rnn.py)
    "bounded_real": "rnn:_check_bounded_real",
    "contraction": "rnn:_check_contraction",
    # rnn system at real size: rigorous floating-point bounds on a referenced Jacobian stack (certificates/rnn_float.py)
    "invertible_float": "rnn_float:_check_invertible_float",
    "contraction_float": "rnn_float:_check_contraction_float",
    # products of stored low-rank weight factors, pretrained heads (certificates/lowrank.py)
    "entry_asymmetry": "lowrank:_check_asymmetry",
    "low_rank_asymmetry": "lowrank:_check_low_rank_asymmetry",
    "minor_not_psd": "lowrank:_check_minors",
}


def location(kind: str) -> tuple[str, str] | None:
    """``(module, function)`` of the checker of ``kind`` (absolute module name), or None if unknown."""
    target = KINDS.get(kind)
    if target is None:
        return None
    module, _, function = target.partition(":")
    return f"{_PKG}.{module}", function


def resolve(kind: str) -> Checker | None:
    """The checker of ``kind``, importing its module on first use; None for a kind not in :data:`KINDS`."""
    where = location(kind)
    if where is None:
        return None
    module, function = where
    fn = getattr(importlib.import_module(module), function)
    if not callable(fn):
        raise TypeError(f"{module}:{function} (checker of {kind!r}) is not callable")
    return fn
