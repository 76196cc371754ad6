r"""The JSON records of flowcert's documents, as types.

Every command writes one JSON document (``docs/cli.md`` lists each key and whether it is *derived*,
*certified* or a *record*). These :class:`typing.TypedDict` classes name the shapes that functions
pass around, so that a signature says which record it reads or writes instead of ``dict[str, Any]``:

* :class:`Document`: the top level (``flowcert``, ``system``, ``params``, ``theorems`` …);
* :class:`TheoremRecord` with its :class:`SourceRecord`, :class:`HypothesisRecord` and
  :class:`CertificateRecord` (a certificate proves its ``claim`` about its ``subject``: the data it
  carries, re-checked exactly by ``checker``);
* :class:`CrossCheckRecord` (a numerical record) and :class:`RegimeRecord` (the gaussian paper's
  Table 1 reading, eq. (7): :math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`);
* :class:`ProvenanceRecord` (the checkpoint head a pretrained export came from) and
  :class:`SweepLine` (one line of a sweep's JSONL);
* ``JSONValue`` / ``JSONObject`` (from :mod:`flowcert.certificates.records`) for a value read from or
  written as JSON whose shape the contract leaves open (a system's ``params``, a prediction, a
  certificate's ``data``).

The classes are ``total=False``: a record built in steps, or read back for checking, may lack a key;
:mod:`flowcert.recheck` decides which keys a document must have.
"""

from __future__ import annotations

from typing import TypedDict

from .certificates.records import CertificateJSON, HypothesisJSON, JSONObject, JSONValue

__all__ = ["SourceRecord", "CrossCheckRecord", "TheoremRecord", "RegimeRecord", "ProvenanceRecord", "Document",
           "SweepLine"]

#: A certificate record and a hypothesis record: the shapes the certificates layer writes
#: (:class:`flowcert.certificates.records.CertificateJSON`, ``HypothesisJSON``), under the names of this module.
#: ``JSONValue`` and ``JSONObject`` (a value as JSON carries it; an object whose keys the contract leaves open)
#: are that layer's too.
CertificateRecord = CertificateJSON
HypothesisRecord = HypothesisJSON


class SourceRecord(TypedDict, total=False):
    """Where a theorem is printed: its paper, label and citation (derived from the catalogue)."""

    paper: str
    label: str
    authors: str
    arxiv: str
    url: str
    file: str
    citation: str


class CrossCheckRecord(TypedDict, total=False):
    """A numerical test of a theorem's prediction (a record: the output of a run)."""

    status: str
    details: JSONObject


class TheoremRecord(TypedDict, total=False):
    """One theorem of a document: its statement, hypotheses, whether it applies, and what it predicts."""

    id: str
    source: SourceRecord
    statement: str
    correction: str | None
    applies: bool | None
    hypotheses: list[HypothesisRecord]
    prediction: JSONObject
    cross_check: CrossCheckRecord
    rests_on: list[JSONObject]


class RegimeRecord(TypedDict, total=False):
    """The asymptotic regime of a gaussian run (Table 1), with the basis it is read on."""

    Sigma: str
    mu: str
    Sigma_inf: JSONValue
    mu_inf: JSONValue
    blowup_time_upper_bound: float | None
    basis: str
    equilibrium: JSONValue
    argument: str
    observed_blowup_time: float | None
    global_existence: JSONObject
    growth_rate: JSONValue
    reason: str
    observed_note: str
    trace_bound: JSONValue
    riccati: JSONObject
    spectra: JSONObject | None
    mu_certificate: JSONObject | None
    bounded_by: str


class ProvenanceRecord(TypedDict, total=False):
    """The checkpoint head an export was made from (bound by ``recheck --checkpoint``)."""

    checkpoint_sha256: str
    model: str
    architecture: str
    layer: int
    head: int | None
    system: str
    prompt: str | None
    tokens: list[int] | None


class Document(TypedDict, total=False):
    """A command's JSON document (``docs/cli.md``); which keys appear depends on the command."""

    flowcert: str
    system: str
    params: JSONObject
    theorems: list[TheoremRecord]
    regime: RegimeRecord
    consistency: JSONObject
    provenance: ProvenanceRecord
    simulation: JSONObject
    heads: list[JSONObject]


class SweepLine(TypedDict, total=False):
    """One line of a sweep's JSONL output (:mod:`flowcert.sweep`): a file, its digest, its status and its document."""

    file: str
    index: int
    status: str
    exit_code: int
    result: Document | None
    error: str | None
    seconds: float | None
    provenance: ProvenanceRecord | None
    sha256: str
