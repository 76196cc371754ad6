r"""The end state of an attention run, classified for every parameter structure: one classifier
(:func:`flowcert.numeric.attention.classify.classify_limit`) fed with the run's field and drive
:math:`\sum_\eta V_\eta\sum_jA^\eta_{ij}(t,X)x_j` (rows of :math:`A^\eta` summing to :math:`c`: 1, or
:math:`1/\sqrt d` for ``sqrt``; lower-triangular when causal; :math:`A=I` for Oja and
:math:`\tfrac1n\mathbb 1\mathbb 1^\top` for multiagent Oja). Used by ``simulation.limit_class``
(:func:`flowcert.attention.enumeration.classify_run`) and by the consensus paper's cross-checks
(:func:`flowcert.attention.consensus.consensus_limit`).
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from ..numeric.attention.classify import CLUSTER_TOL, SETTLE_TOL, LimitClass, classify_limit
from ..numeric.attention.consensus import attention_weights
from ..records import JSONObject
from .params import AttentionParams

__all__ = ["ClassKeys", "LimitRecord", "class_keys", "drive", "limit_of", "limit_record", "speed_of"]


class ClassKeys(TypedDict):
    """The classes of a run's end state as the ``simulation`` record writes them (docs/cli.md)."""

    #: the first label, or None (not settled, or no label)
    limit_class: str | None
    #: every label, or None
    limit_classes: list[str] | None


class LimitRecord(ClassKeys, total=False):
    """The ``simulation`` keys of a classification (:func:`limit_record`)."""

    limit_label: str | None
    #: :meth:`flowcert.numeric.attention.classify.LimitClass.to_json`
    limit: JSONObject
    limit_class_reason: str


def drive(p: AttentionParams, t: float, X: np.ndarray) -> np.ndarray:
    r""":math:`\sum_\eta V_\eta\sum_jA^\eta_{ij}x_j` at time ``t`` (rows: tokens), before the tangent projection."""
    X = np.asarray(X, float)
    n = X.shape[0]
    c = 1.0 if p.normalization == "unit" else 1.0 / math.sqrt(p.d)
    out = np.zeros_like(X)
    for eta, (_, _, V) in enumerate(p.head_matrices(t)):
        if p.variant == "oja":
            A = np.eye(n)
        elif p.variant == "multiagent_oja":
            A = np.full((n, n), 1.0 / n)
        else:
            A = attention_weights(X, p.M(eta, t), causal=p.causal, row_sum=c)
        out += A @ X @ np.asarray(V, float).T
    return out


def speed_of(p: AttentionParams, t: float, X: np.ndarray) -> float:
    """``max_i |xdot_i|`` from the generated field kernel."""
    from .flow import field

    return float(np.abs(field(p)(t, np.asarray(X, float))).max())


def limit_of(p: AttentionParams, X: np.ndarray, t: float | None = None, speed: float | None = None,
             settle_tol: float = SETTLE_TOL, cluster_tol: float = CLUSTER_TOL) -> LimitClass:
    """Classes of the end state ``X`` of a run of ``p`` at time ``t`` (default ``p.t_end``)."""
    t = p.t_end if t is None else t
    speed = speed_of(p, t, X) if speed is None else speed
    return classify_limit(X, speed, t, drive=drive(p, t, X), settle_tol=settle_tol, cluster_tol=cluster_tol)


def class_keys(labels: list[str] | None) -> ClassKeys:
    """``{"limit_class": first label or None, "limit_classes": labels or None}`` (docs/cli.md: a string and a list)."""
    labels = None if labels is None else list(labels)
    return {"limit_class": labels[0] if labels else None, "limit_classes": labels}


def limit_record(lc: LimitClass) -> LimitRecord:
    """The ``simulation`` keys of a classification: ``limit_classes`` (the labels, or None when not
    settled), ``limit_class`` (the first label as a string, or None: the contract's type since
    the start), ``limit_label`` and ``limit``; ``limit_class_reason`` when not settled."""
    out: LimitRecord = {**class_keys(lc.labels if lc.settled else None), "limit_label": lc.label, "limit": lc.to_json()}
    if not lc.settled:
        out["limit_class_reason"] = lc.details["reason"]
    return out
