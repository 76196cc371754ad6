r"""The verdict words of flowcert: ``str`` enums, each equal to its JSON spelling.

A hypothesis :math:`h` of a theorem is decided on given parameters to one :class:`Status`; a theorem
:math:`T` with hypotheses :math:`h_1,\dots,h_m` then *applies* (:class:`Applies`) when every
:math:`h_i` holds or is assumed, is *inapplicable* when some :math:`h_i` fails, and is *undecided*
otherwise; its prediction is tested by simulation to one :class:`CheckStatus`; a whole result is one
:class:`Verdict`. They live at the bottom of the house so that the engine's own objects
(:class:`flowcert.certificates.core.Hypothesis`, :class:`flowcert.catalogue.Theorem`) carry them: the
public typed results *are* the engine's objects (docs/design.md, "Typed results").

:func:`ordered` and :func:`split` keep a record read from a saved document as it came: its key order,
and the keys the types do not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any, TypeVar, cast

__all__ = ["Applies", "CheckStatus", "Itself", "Status", "Verdict", "ordered", "split"]


class _Word(str, Enum):
    """A verdict word: a ``str`` equal (and hashing equal) to its JSON spelling."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __hash__(self) -> int:
        return hash(str(self.value))


class Applies(_Word):
    """Whether a theorem applies to the parameters.

    ``YES`` (``"applies"``): every hypothesis holds (or is assumed); ``NO`` (``"inapplicable"``): one
    fails; ``UNDECIDED`` (``"undecided"``): none fails, one is unknown. In the JSON document these are
    ``true``, ``false`` and ``null`` (:attr:`json`, :meth:`from_json`). ``bool(Applies.YES)`` is True,
    the others are False, as the JSON values were.
    """

    YES = "applies"
    NO = "inapplicable"
    UNDECIDED = "undecided"

    @classmethod
    def from_json(cls, value: bool | None) -> Applies:
        """``True`` / ``False`` / ``None`` of the document as a constant.

        Parameters
        ----------
        value : bool or None
            The document's ``applies``.

        Returns
        -------
        Applies
        """
        return cls.YES if value is True else cls.NO if value is False else cls.UNDECIDED

    @classmethod
    def of(cls, statuses: set[str]) -> Applies:
        """The theorem's verdict from the statuses of its hypotheses: inapplicable when one fails,
        applies when each holds or is assumed, else undecided.

        Parameters
        ----------
        statuses : set of str
            The statuses of the theorem's hypotheses (an empty set: applies).

        Returns
        -------
        Applies
        """
        if "fails" in statuses:
            return cls.NO
        return cls.YES if statuses <= {"holds", "assumed"} else cls.UNDECIDED

    @property
    def json(self) -> bool | None:
        """The document's value: ``True``, ``False`` or ``None``."""
        return True if self is Applies.YES else False if self is Applies.NO else None

    def __bool__(self) -> bool:
        return self is Applies.YES


class Status(_Word):
    """The verdict on one hypothesis.

    ``HOLDS``: proved, by a certificate re-checked without trusting the solver that produced it, or
    by construction (``method`` says which); ``FAILS``: refuted, with a witness where one exists;
    ``UNKNOWN``: not decided (``detail`` says why); ``ASSUMED``: stated by the user (for example
    ``assume=["smooth"]``) and not checked; a theorem whose hypotheses hold or are assumed applies
    *under that assumption*.
    """

    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"
    ASSUMED = "assumed"


class CheckStatus(_Word):
    """The outcome of a theorem's cross-check by simulation: ``agrees``, ``disagrees`` or ``skipped``
    (not run, or no number to test; the details say why)."""

    AGREES = "agrees"
    DISAGREES = "disagrees"
    SKIPPED = "skipped"


class Verdict(_Word):
    """The status of a whole result (:attr:`flowcert.result.Result.status`).

    ``DISAGREES``: some cross-check disagrees with its theorem's prediction (look at it first);
    otherwise ``UNDECIDED`` when some theorem is undecided, else ``DECIDED`` (every theorem applies
    or is inapplicable).
    """

    DECIDED = "decided"
    UNDECIDED = "undecided"
    DISAGREES = "disagrees"


#: A record type (a :class:`typing.TypedDict` of a document's records, or a plain mapping).
R = TypeVar("R", bound=Mapping[str, object])
#: The type of a record's values.
V = TypeVar("V")


def ordered(parts: R, order: tuple[str, ...] | None,
            extra: Mapping[str, object] = MappingProxyType({})) -> R:
    """A record from its typed ``parts``: in ``order`` (a saved record's own key order, where it was
    read from one; None: ``parts`` as they are), with the keys of ``extra`` the types do not know, and
    without a key that a saved record lacked (a record of the type of ``parts``)."""
    if order is None and not extra:
        return cast(R, dict(parts))
    both = {**parts, **extra}
    out = {k: both[k] for k in (order if order is not None else tuple(parts)) if k in both}
    out.update((k, v) for k, v in extra.items() if k not in out)
    return cast(R, out)


def split(rec: Mapping[str, V], known: tuple[str, ...]) -> tuple[dict[str, V], tuple[str, ...]]:
    """The keys of a saved record outside ``known`` (kept as they are) and the record's key order."""
    return {k: v for k, v in rec.items() if k not in known}, tuple(rec)


class Itself:
    """A record whose engine object is the public one: :meth:`of` returns its argument."""

    @classmethod
    def of(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """``obj`` itself: the engine's object is the public one (kept for callers of the former
        constructors ``Theorem.of``, ``Hypothesis.of``, ``Certificate.of`` and ``CrossCheck.of``).

        Parameters
        ----------
        obj : object
            The engine's record.
        *args, **kwargs
            Ignored (the former constructors' options).

        Returns
        -------
        object
            ``obj``.
        """
        return obj

