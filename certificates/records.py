r"""The JSON shapes of the certificates layer: a certificate's record and data, a hypothesis record.

A certificate of kind :math:`k` proves its ``claim`` from its ``data`` :math:`D` alone: the checker
of :math:`k` (:data:`flowcert.certificates.kinds.KINDS`) decides :math:`\mathrm{check}_k(D)\in
\{\mathrm{True},\mathrm{False}\}` in exact (or rigorously rounded) arithmetic. These types name what
the layer's functions pass around instead of an open ``dict``:

* :data:`JSONValue` / :data:`JSONObject`: a value as JSON carries it, and an object whose keys the
  kind decides (a certificate's ``data``); the same definitions as :mod:`flowcert.records`, which
  this layer may not import (``symbolic <- numeric, gpu <- certificates <- flowcert``);
* :data:`Checker`: the checker of a kind, :math:`D\mapsto\mathrm{check}_k(D)`;
* :class:`CertificateJSON` and :class:`HypothesisJSON`: the records :meth:`Certificate.to_json
  <flowcert.certificates.core.Certificate.to_json>` and :meth:`Hypothesis.to_json
  <flowcert.certificates.core.Hypothesis.to_json>` write (``docs/cli.md``), read back by their
  ``from_json``.

The classes are ``total=False``: a record read back from a saved document may lack a key, and the
reader decides which keys it needs.
"""

from __future__ import annotations

from typing import Any, Callable, TypedDict, Union

__all__ = ["JSONValue", "JSONObject", "Checker", "CertificateJSON", "HypothesisJSON"]

#: A value as JSON carries it (numbers, strings, booleans, null, lists and objects of these).
JSONValue = Union[None, bool, int, float, str, list[Any], dict[str, Any]]
#: A JSON object whose keys the contract leaves open (a certificate's ``data``: the kind decides them).
JSONObject = dict[str, JSONValue]
#: The checker of a certificate kind: True when the claim holds on the data.
Checker = Callable[[JSONObject], bool]


class CertificateJSON(TypedDict, total=False):
    """A certificate record: ``claim`` about ``subject``, proved by ``data`` and re-checked by ``checker``."""

    kind: str
    claim: str
    checker: str
    data: JSONObject
    subject: dict[str, str]
    digest: str


class HypothesisJSON(TypedDict, total=False):
    """A hypothesis record: its name, status (``holds``/``fails``/``unknown``/``assumed``) and evidence."""

    name: str
    status: str
    margin: float | None
    method: str
    certificate: CertificateJSON | None
    detail: str
