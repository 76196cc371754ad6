"""Running ``verify gaussian`` in-process under a wall-clock limit, and the session tally."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator


class Timeout(BaseException):
    """The call ran past its limit.

    A ``BaseException``, so that an ``except Exception`` in the code under test cannot swallow it.
    """


@contextlib.contextmanager
def _limit(seconds: float, timer: int, signum: int, what: str) -> Iterator[None]:
    """Raise :class:`Timeout` in the main thread once ``timer`` has run ``seconds`` (no-op elsewhere)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Timeout(f"ran past {seconds:g} s{what}")

    old = signal.signal(signum, handler)
    signal.setitimer(timer, seconds)
    try:
        yield
    finally:
        signal.setitimer(timer, 0)
        signal.signal(signum, old)


def time_limit(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Raise :class:`Timeout` in the main thread after ``seconds`` (SIGALRM; no-op elsewhere)."""
    return _limit(seconds, signal.ITIMER_REAL, signal.SIGALRM, "")


@dataclass
class Outcome:
    doc: dict[str, Any] | None
    error: BaseException | None
    seconds: float
    warnings: list[str]


def run_verify(raw: dict[str, Any], timeout: float = 120.0) -> Outcome:
    """``flowcert.gaussian.verify(parse_gaussian(raw))`` as the CLI runs it, JSON round-tripped."""
    from flowcert.gaussian.catalogue import verify
    from flowcert.gaussian.params import parse_gaussian

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with time_limit(timeout):
                doc = verify(parse_gaussian(raw))
                doc = json.loads(as_cli_prints(doc), parse_constant=_reject_constant)
            err = None
        except (Exception, Timeout) as exc:  # noqa: BLE001 - recorded and asserted on by the caller
            doc, err = None, exc
    shown = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught]
    return Outcome(doc, err, time.perf_counter() - t0, shown)


def as_cli_prints(doc: dict[str, Any]) -> str:
    """The text ``flowcert verify --json`` prints for ``doc`` (its own serialiser, so its conventions apply)."""
    import io
    from contextlib import redirect_stdout

    from flowcert import cli

    buf = io.StringIO()
    with redirect_stdout(buf):
        cli._emit(doc, True, "")
    return buf.getvalue()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"the CLI printed the non-JSON constant {name}")


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


@dataclass
class Tally:
    """Everything the adversarial suite tried and what it found (printed at the end of the run)."""

    inputs: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=lambda: {"holds": 0, "fails": 0, "unknown": 0})
    holds_checked: int = 0
    holds_unchecked: int = 0
    false_holds: list[str] = field(default_factory=list)
    false_fails: list[str] = field(default_factory=list)
    false_regimes: list[str] = field(default_factory=list)
    rejected_certificates: list[str] = field(default_factory=list)
    known_bug_findings: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    certificates_rechecked: int = 0
    warnings: list[str] = field(default_factory=list)
    regimes: dict[str, int] = field(default_factory=dict)

    def add_inputs(self, kind: str, n: int = 1) -> None:
        self.inputs[kind] = self.inputs.get(kind, 0) + n

    def record(self, label: str, jd: Any, known_bug: bool, regime: dict[str, Any] | None = None) -> None:
        for k, v in jd.counts.items():
            self.verdicts[k] += v
        self.holds_checked += sum(1 for f in jd.findings if f.status == "holds" and f.truth is not None)
        self.holds_unchecked += len(jd.unchecked_holds)
        self.certificates_rechecked += jd.certificates
        if regime is not None:
            key = f"{regime.get('Sigma')}/{regime.get('basis')}"
            self.regimes[key] = self.regimes.get(key, 0) + 1
        lines = ([f"{label}: false holds {f.name} ({f.note})" for f in jd.false_holds]
                 + [f"{label}: false regime: {r}" for r in jd.regime_errors]
                 + [f"{label}: certificate rejected by recheck: {c}" for c in jd.bad_certificates])
        if known_bug:
            self.known_bug_findings.extend(lines)
        else:
            self.false_holds.extend(f"{label}: {f.name} ({f.note})" for f in jd.false_holds)
            self.false_regimes.extend(f"{label}: {r}" for r in jd.regime_errors)
            self.rejected_certificates.extend(f"{label}: {c}" for c in jd.bad_certificates)
        self.false_fails.extend(f"{label}: {f.name} ({f.note})" for f in jd.false_fails)

    @property
    def false_verdicts(self) -> int:
        """False claims outside the known-bug (xfail) cases: must be 0."""
        return len(self.false_holds) + len(self.false_regimes) + len(self.rejected_certificates)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs_tried": sum(self.inputs.values()),
            "inputs_by_kind": self.inputs,
            "verdicts": self.verdicts,
            "holds_checked_independently": self.holds_checked,
            "holds_without_oracle": self.holds_unchecked,
            "certificates_rechecked": self.certificates_rechecked,
            "regimes": self.regimes,
            "false_verdicts": self.false_verdicts,
            "false_holds": self.false_holds,
            "false_regimes": self.false_regimes,
            "rejected_certificates": self.rejected_certificates,
            "false_fails": self.false_fails,
            "known_bug_findings (xfail cases)": self.known_bug_findings,
            "crashes": self.crashes,
            "warnings_seen": sorted(set(self.warnings)),
        }


TALLY = Tally()


def cpu_limit(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Raise :class:`Timeout` once the process has used ``seconds`` more of *user* CPU time
    (``ITIMER_VIRTUAL``; the stage budgets use ``ITIMER_PROF``, a caller's wall clock ``ITIMER_REAL``).

    A budget watchdog, not a benchmark: it stops a run past the documented budget
    (:data:`flowcert.limits.COMMAND_SECONDS`) whatever the load of the machine. Main thread only.
    """
    return _limit(seconds, signal.ITIMER_VIRTUAL, signal.SIGVTALRM, " of CPU time")
