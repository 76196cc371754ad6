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

from ..catalogue import TheoremResult

__all__ = ["attempt", "error_text", "failed_entry", "guarded"]

T = TypeVar("T")


def error_text(exc: BaseException) -> str:
    """``Type: message at file:line`` of the innermost frame (one line, no traceback)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def failed_entry(id_: str, label: str, exc: BaseException) -> TheoremResult:
    """The record of an entry whose evaluation raised ``exc``: the engine's ``entry_evaluated: unknown``,
    with the error named (:func:`flowcert.engine.undecided`)."""
    from ..engine import undecided

    return undecided(id_, label, "entry_evaluated", "internal", f"evaluation failed: {error_text(exc)}; nothing is claimed")


def guarded(id_: str, label: str, fn: Callable[..., TheoremResult], *args: Any, **kw: Any) -> TheoremResult:
    """``fn(*args, **kw)`` through the one evaluator (:func:`flowcert.engine.evaluate`: an entry that raises is
    reported alone as ``entry_evaluated: unknown``; ``KeyboardInterrupt`` passes). The attention entries keep
    the command's budget (no per-entry one)."""
    from ..engine import evaluate

    return evaluate(id_, label, lambda: fn(*args, **kw), seconds=None)


def attempt(fn: Callable[[], T], fallback: Callable[[str], T]) -> T:
    """``fn()``, or ``fallback(error text)`` if it raises."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return fallback(error_text(exc))
