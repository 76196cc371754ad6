r"""One classifier for the end state of an attention run, for every structure (one or several
heads, full or causal attention, ``unit`` or ``sqrt`` rows, sphere or ellipsoid), shared by both
papers' cross-checks and ``simulation.limit_class``.

A run has *settled* when :math:`\max_i|\dot x_i|\le` ``settle_tol`` at its last time. Its tokens
are then grouped into clusters (single linkage at distance ``cluster_tol``), and the end state
gets every label that applies (note 001 §2; note 003 §5, Pitfall 3):

* ``consensus``: one cluster, :math:`x_1=\dots=x_n`;
* ``bipartite``: two antipodal clusters :math:`\{w,-w\}` (the consensus paper's *bipolar* pair;
  for one head with symmetric :math:`V`, :math:`w=\pm v_k`);
* ``polygonal``: the drive vanishes, :math:`\sum_\eta V_\eta\sum_jA^\eta_{ij}x_j=0` for all
  :math:`i` (when the caller passes it);
* ``clustering``: none of the above, with :math:`k` clusters (:math:`k\ge2`; a settled
  "1-clustering" off consensus is impossible, note 001 Remark 4).

An unsettled run is ``not_settled`` with its final speed and time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

__all__ = ["CLUSTER_TOL", "SETTLE_TOL", "LimitClass", "LimitClassRecord", "classify_limit", "clusters"]

#: a run has settled once ``max_i |xdot_i|`` is below this
SETTLE_TOL = 1e-7
#: tokens closer than this belong to one cluster; clusters whose sum is below it are antipodal
CLUSTER_TOL = 1e-4


class LimitClassRecord(TypedDict, total=False):
    """The JSON form of a :class:`LimitClass` (:meth:`LimitClass.to_json`), with the keys of its ``details``
    (``reason``, for a run that has not settled)."""

    settled: bool
    classes: list[str]
    label: str
    clusters: int
    cluster_sizes: list[int]
    final_speed: float
    t_final: float | None
    reason: str


@dataclass
class LimitClass:
    """The classes of a run's end state (``labels``), or ``["not_settled"]``."""

    settled: bool
    labels: list[str]
    clusters: int
    final_speed: float
    t_final: float | None
    centres: np.ndarray
    assignment: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """A one-line name: ``consensus``, ``bipartite (n1:n2)``, ``clustering (k=3)``, ``not_settled`` ..."""
        if not self.settled:
            return "not_settled"
        parts = []
        for lab in self.labels:
            if lab == "bipartite":
                n = np.bincount(self.assignment, minlength=2)
                parts.append(f"bipartite ({max(n)}:{min(n)})")
            elif lab == "clustering":
                parts.append(f"clustering (k={self.clusters})")
            else:
                parts.append(lab)
        return "/".join(parts)

    def to_json(self) -> LimitClassRecord:
        """The end state as JSON: classes, label, cluster count and sizes, final speed and time, and ``details``."""
        return {"settled": self.settled, "classes": self.labels, "label": self.label, "clusters": self.clusters,
                "cluster_sizes": np.bincount(self.assignment, minlength=self.clusters).tolist() if self.clusters else [],
                "final_speed": self.final_speed, "t_final": self.t_final, **self.details}


def clusters(X: np.ndarray, tol: float = CLUSTER_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Single-linkage clusters of the rows of ``X`` at distance ``tol``: ``(centres, assignment)``,
    clusters numbered by first appearance, centres the mean of their members."""
    X = np.asarray(X, float)
    n = X.shape[0]
    D = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)
    assign = np.full(n, -1)
    c = 0
    for i in range(n):
        if assign[i] >= 0:
            continue
        stack = [i]
        assign[i] = c
        while stack:
            j = stack.pop()
            for m in np.nonzero((D[j] <= tol) & (assign < 0))[0]:
                assign[m] = c
                stack.append(int(m))
        c += 1
    centres = np.array([X[assign == k].mean(0) for k in range(c)])
    return centres, assign


def classify_limit(X: np.ndarray, speed: float, t: float | None = None, *, drive: np.ndarray | None = None,
                   settle_tol: float = SETTLE_TOL, cluster_tol: float = CLUSTER_TOL,
                   drive_tol: float | None = None) -> LimitClass:
    """Classes of the end state ``X`` (n, d) of a run whose field has max norm ``speed`` at time ``t``.

    ``drive`` (n, d), when given, is :math:`\\sum_\\eta V_\\eta\\sum_jA^\\eta_{ij}x_j` at ``X``; it is
    polygonal when its max norm is below ``drive_tol`` (default ``cluster_tol``)."""
    X = np.asarray(X, float)
    centres, assign = clusters(X, cluster_tol)
    k = len(centres)
    if not speed <= settle_tol:
        return LimitClass(False, ["not_settled"], k, float(speed), t, centres, assign,
                          {"reason": f"not settled: max |xdot| = {float(speed):.3e} > {settle_tol:g} at t = {t}"})
    labels: list[str] = []
    if k == 1:
        labels.append("consensus")
    elif k == 2 and np.linalg.norm(centres[0] + centres[1]) <= cluster_tol:
        labels.append("bipartite")
    if drive is not None and float(np.abs(drive).max()) <= (cluster_tol if drive_tol is None else drive_tol):
        labels.append("polygonal")
    if not labels:
        labels.append("clustering")
    return LimitClass(True, labels, k, float(speed), t, centres, assign)
