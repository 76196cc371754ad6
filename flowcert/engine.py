r"""One evaluator of catalogue entries, for every system: isolation, size limits, CPU budgets.

An entry is evaluated by a function ``build() -> TheoremResult``. :func:`evaluate` runs it so that
no entry can take a ``verify`` document down or run unbounded:

* **size** — above the entry's limit in :data:`flowcert.limits.STAGE_MAX_D` the entry is not run:
  one ``unknown`` hypothesis ``size_within_limit`` names the limit;
* **budget** — the entry gets :data:`ENTRY_SECONDS` of CPU time (:func:`~flowcert.numeric.integration.stage_budget`);
  past it, ``stage_within_budget`` is ``unknown`` with the time spent;
* **isolation** — an exception inside the entry (an overflow, a singular matrix, a solver failure)
  becomes ``entry_evaluated: unknown`` naming the error in one line; ``KeyboardInterrupt`` and
  ``SystemExit`` pass.

An entry that was not evaluated has ``applies: null`` and a ``skipped`` cross-check, so it can never
report ``holds``. The three hypothesis names are :data:`ENGINE_HYPOTHESES`; ``flowcert recheck``
accepts them in any entry, ``unknown`` and without a certificate only.

**Cross-checks asked for.** ``simulate=False`` runs no simulation at all; ``simulate=True`` runs a
system's default set of cross-checks and ``checks=[...]`` exactly the ones named (``System.checks``).
:func:`chosen` computes them from ``simulate``/``checks``, :func:`asked` sets them for one evaluation
(a context variable, so nested catalogues see the same set); an entry asks :func:`wants` before it
simulates and otherwise reports :func:`not_requested`. Every system's catalogue uses this one ``wants``.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

from .bindings import ENGINE_HYPOTHESES
from .catalogue import CrossCheck, TheoremResult
from .certificates.core import HypothesisResult
from .limits import STAGE_SECONDS, stage_skip_reason
from .numeric.integration import BudgetExceeded, stage_budget

__all__ = ["ENGINE_HYPOTHESES", "ENTRY_SECONDS", "asked", "chosen", "error_text", "evaluate", "not_requested",
           "undecided", "wants"]

#: CPU-time budget of one catalogue entry (seconds).
ENTRY_SECONDS = STAGE_SECONDS



def error_text(exc: BaseException) -> str:
    """``Type: message at file:line`` of the innermost frame (one line, no traceback)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def undecided(entry_id: str, label: str, name: str, method: str, reason: str) -> TheoremResult:
    """An entry that could not be evaluated: one ``unknown`` hypothesis saying why, cross-check skipped."""
    return TheoremResult(entry_id, label, "", [HypothesisResult(name, "unknown", None, method, None, reason)], {},
                         CrossCheck("skipped", {"reason": reason}))


def evaluate(entry_id: str, label: str, build: Callable[[], TheoremResult], *, d: int | None = None,
             seconds: float | None = ENTRY_SECONDS) -> TheoremResult:
    """``build()`` within the entry's size limit (at dimension ``d``; None: no limit) and CPU budget,
    isolated from the other entries (see the module docstring)."""
    skip = stage_skip_reason(entry_id, d) if d is not None else None
    if skip is not None:
        return undecided(entry_id, label, "size_within_limit", "flowcert.limits", skip)
    try:
        with stage_budget(seconds, entry_id):
            return build()
    except BudgetExceeded as exc:
        return undecided(entry_id, label, "stage_within_budget", "budget", str(exc))
    except Exception as exc:  # noqa: BLE001 - the other entries must still be reported
        return undecided(entry_id, label, "entry_evaluated", "internal",
                         f"evaluation failed: {type(exc).__name__}: {exc}")


_CHECKS: ContextVar[frozenset[str]] = ContextVar("flowcert_checks", default=frozenset())


@contextmanager
def asked(checks: frozenset[str]) -> Iterator[None]:
    """Within the block, :func:`wants` answers for ``checks`` (the cross-checks of this evaluation)."""
    token = _CHECKS.set(frozenset(checks))
    try:
        yield
    finally:
        _CHECKS.reset(token)


def chosen(simulate: bool, checks: frozenset[str] | None, default: frozenset[str] | set[str] | dict) -> frozenset[str]:
    """The cross-checks of one evaluation: none without ``simulate``; else ``checks``, or ``default``
    (a system's set of ``simulate=True``) when ``checks`` is None."""
    if not simulate:
        return frozenset()
    return frozenset(checks) if checks is not None else frozenset(default)


def wants(check: str) -> bool:
    """Whether the cross-check ``check`` was asked for in the current evaluation."""
    return check in _CHECKS.get()


def not_requested(check: str) -> CrossCheck:
    """The cross-check of an entry whose simulation ``check`` was not asked for."""
    return CrossCheck("skipped", {"reason": f"not requested: the cross-check {check!r} runs with simulate=True "
                                            f"(checks=[{check!r}], or --checks {check})"})
