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

__all__ = ["BARE_REASONS", "ENGINE_HYPOTHESES", "ENTRY_SECONDS", "asked", "chosen", "error_text", "evaluate",
           "explain_skips", "how_to_ask", "not_requested", "skip_reason", "undecided", "wants"]

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


#: the reasons an entry gives when it was left without a cross-check: the default of a record and the
#: multistability catalogue's; :func:`explain_skips` turns them into a reason that says what to pass
BARE_REASONS = frozenset({"not requested", "not requested (--simulate)"})


def how_to_ask(check: str, default: frozenset[str] | set[str]) -> str:
    """How to ask for the cross-check ``check``: with ``simulate=True`` when it is in the ``default`` set,
    else by name only (``checks=[...]`` / ``--checks NAME``)."""
    named = f"checks=[{check!r}] (--checks {check})"
    if check in default:
        return f"the cross-check {check!r} runs with simulate=True (--simulate), or alone with {named}"
    return f"the cross-check {check!r} is not in simulate=True's default set: ask for it with {named}"


def skip_reason(theorem: TheoremResult, check: str | None, ran: frozenset[str], default: frozenset[str]) -> str:
    """Why ``theorem``'s prediction was not tested, and how to have it tested where passing something would.

    Parameters
    ----------
    theorem : TheoremResult
        An entry whose cross-check is ``skipped`` with a reason of :data:`BARE_REASONS`.
    check : str or None
        The cross-check that tests this entry (a name of ``System.checks``), or None when none does.
    ran : frozenset of str
        The cross-checks of this evaluation (empty without ``simulate``).
    default : frozenset of str
        The cross-checks ``simulate=True`` runs when ``checks`` is not given.

    Returns
    -------
    str
    """
    from .certificates.verdicts import Applies

    if theorem.applies is Applies.NO:
        return "not tested: a hypothesis fails, so the theorem predicts nothing here"
    if theorem.applies is Applies.UNDECIDED:
        return "not tested: a hypothesis is unknown, so the prediction is not claimed here"
    if check is not None and check not in ran:
        return f"not requested: {how_to_ask(check, default)}"
    return "no simulation tests this result on these parameters"


def explain_skips(theorems: list[TheoremResult], system: object, simulate: bool,
                  checks: frozenset[str] | None) -> None:
    """Give every entry left with a bare ``not requested`` (:data:`BARE_REASONS`) the reason of
    :func:`skip_reason`, in place: which cross-check would test it and how to ask for it (``checks=[...]``
    / ``--checks NAME``), or why nothing tests it here.

    Parameters
    ----------
    theorems : list of TheoremResult
        The typed theorems of a ``verify`` document (records are left alone).
    system : System
        The system: its ``checks``, ``default_checks`` (None or absent: all of ``checks``) and
        ``entry_checks`` (entry id -> the cross-check that tests it; absent: none known).
    simulate, checks
        As given to ``verify``.
    """
    names = frozenset(getattr(system, "checks", {}))
    default = getattr(system, "default_checks", None)
    default = names if default is None else frozenset(default)
    ran = chosen(simulate or checks is not None, checks, default)
    entry_checks = getattr(system, "entry_checks", None) or {}
    for t in theorems:
        cc = getattr(t, "cross_check", None)
        if cc is None or cc.status.value != "skipped" or not isinstance(cc.details, dict):
            continue
        if set(cc.details) == {"reason"} and cc.details["reason"] in BARE_REASONS:
            t.cross_check = CrossCheck("skipped", {"reason": skip_reason(t, entry_checks.get(t.id), ran, default)})


def not_requested(check: str) -> CrossCheck:
    """The cross-check of an entry whose simulation ``check`` was not asked for."""
    return CrossCheck("skipped", {"reason": f"not requested: the cross-check {check!r} runs with simulate=True "
                                            f"(checks=[{check!r}], or --checks {check})"})
