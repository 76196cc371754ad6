r"""The JSON records of the ``attention`` system's documents, as types (the keys ``docs/cli.md`` lists).

* :class:`ClassRecord`: the certified verdict of one class :math:`(k,n_1,n_2)` of points
  :math:`x_i=\pm v_k` (:func:`flowcert.attention.enumeration.class_result`);
* :data:`EquilibriumRecord`: one listed equilibrium (a sign pattern of a class, a Newton-refined
  limit, or the end state of a run to rest);
* :class:`EquilibriaBody` / :class:`EquilibriaDocument`: the ``equilibria attention`` document;
* :class:`RunClassification` and :class:`SimulationRecord`: the ``simulation`` record of
  ``simulate attention`` and ``verify attention --simulate`` (one run, or ``basins`` of many).

The classes are ``total=False`` where a record is built in steps or its keys depend on the run.
"""

from __future__ import annotations

from typing import TypedDict, Union

from ..records import CertificateRecord, Document, JSONObject, JSONValue
from .classify import LimitRecord

__all__ = ["ClassRecord", "EquilibriaBody", "EquilibriaDocument", "EquilibriumRecord", "RunClassification",
           "SimulationRecord"]

class ClassRecord(TypedDict, total=False):
    """The verdict at the class :math:`(k,n_1,n_2)` (1-based ``k``), its certificate and closed-form spectra."""

    k: int
    n1: int
    n2: int
    #: True (stable), False (unstable) or None (undecided)
    stable: bool | None
    verdict: str
    reason: str
    certificate: CertificateRecord | None
    #: the tangent and ambient spectra, as ``[real, imaginary]`` pairs
    tangent_spectrum: list[list[float]]
    ambient_spectrum: list[list[float]]
    #: a repeated eigenvalue: the eigenspace the class's points range over
    subspace: JSONObject


#: One equilibrium of the listing: its ``class`` labels, the eigenvector and signs it is made of (or
#: None), the point ``X``, spectra, ``stable`` and the certificate that decides it (or None).
EquilibriumRecord = TypedDict("EquilibriumRecord", {
    "class": list[str], "eigvec_index": Union[int, None], "signs": list[int], "n1": int, "n2": int,
    "X": list[list[float]], "clusters": JSONValue, "tangent_spectrum": Union[list[list[float]], None],
    "ambient_spectrum": Union[list[list[float]], None], "stable": Union[bool, None], "certificate": Union[JSONObject, None],
    "subspace": JSONObject, "reason": str}, total=False)


class EquilibriaBody(TypedDict, total=False):
    """The command's own keys of an ``equilibria attention`` document (:func:`flowcert.attention.enumeration.equilibria`)."""

    classes: list[ClassRecord]
    equilibria: list[EquilibriumRecord]
    #: what the listing leaves out, and why
    skipped: JSONObject
    #: eigenvalues of V, descending (None without the exact enumeration)
    eigenvalues: list[float] | None
    eigenvalue_enclosures: list[list[float]] | None


class EquilibriaDocument(Document, EquilibriaBody, total=False):
    """An ``equilibria attention`` document: the header, ``params``, the listing's ``cap`` and the body."""

    cap: int


class RunClassification(LimitRecord, total=False):
    """The classes of a run's end state (:func:`flowcert.attention.enumeration.classify_run`): the shared
    classifier's keys, and for model (1)/(2)/(5) the limit identified and its certified verdict."""

    limit_label_reason: str
    limit_verdict: str
    limit_verdict_reason: str


class SimulationRecord(RunClassification, total=False):
    """The ``simulation`` record of the attention system (a record: the output of a run)."""

    t_end: float | None
    t_reached: float
    blowup_time: float | None
    dt: float | None
    integrator: str
    steps: int
    rejected_steps: int
    rtol: float
    atol: float
    device: str
    X0: list[list[float]]
    X_final: list[list[float]]
    max_drift: float
    final_speed: float
    agrees: bool | None
    #: the low-rank reduction the run used (None: the full system)
    reduction: JSONObject | None
    #: a run reused from the consensus catalogue: which
    source: str
    #: :func:`flowcert.attention.consensus.consensus_limit` of that run
    consensus_limit: JSONObject
    agrees_basis: JSONObject
    #: why no run was made
    skipped: str
    samples: int
    seed: int
    #: ``outcomes`` (label, count, fraction, Wilson interval, verdict) and ``reached_certified_unstable``
    basins: JSONObject
    #: the ``--plot`` file written
    plot: str
