r"""Per-entry isolation of the attention catalogue: an exception inside one entry's evaluation
(an overflow, a singular matrix, a solver failure) becomes that entry's record — one hypothesis
``evaluation`` with status ``unknown`` naming the error — and never takes the ``verify`` document
down. Soundness is unchanged: an entry that failed to evaluate has ``applies: null`` and a
``skipped`` cross-check, so it can never report ``holds``.

A shared precomputation that raises (:func:`attempt`) is replaced by the caller's fallback, and
the error is carried into every entry that needed it.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, TypeVar

from ..catalogue import CrossCheck, TheoremResult
from ..certificates import core

__all__ = ["attempt", "error_text", "failed_entry", "guarded"]

T = TypeVar("T")


def error_text(exc: BaseException) -> str:
    """``Type: message at file:line`` of the innermost frame (one line, no traceback)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def failed_entry(id_: str, label: str, exc: BaseException) -> TheoremResult:
    """The record of an entry whose evaluation raised ``exc``: ``unknown``, with the error named."""
    why = error_text(exc)
    hyp = core.HypothesisResult("evaluation", "unknown", None, "entry evaluation", None,
                                f"the entry could not be evaluated ({why}); nothing is claimed")
    return TheoremResult(id_, label, "", [hyp], {"error": why},
                         CrossCheck("skipped", {"reason": f"the entry could not be evaluated: {why}"}))


def guarded(id_: str, label: str, fn: Callable[..., TheoremResult], *args: Any, **kw: Any) -> TheoremResult:
    """``fn(*args, **kw)``, or :func:`failed_entry` if it raises (``KeyboardInterrupt`` passes)."""
    try:
        return fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - isolation is the point: each entry fails alone
        return failed_entry(id_, label, exc)


def attempt(fn: Callable[[], T], fallback: Callable[[str], T]) -> T:
    """``fn()``, or ``fallback(error text)`` if it raises."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return fallback(error_text(exc))
