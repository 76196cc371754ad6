"""Progress bars for long work (sweeps, ``pretrained verify``, particle studies): ``tqdm`` on stderr.

``enabled=None`` means "on a terminal": a bar is drawn when the stream is a TTY, so scripts, pipes
and ``--json`` output stay clean; ``True`` draws one anyway (a notebook shows it as text),
``False`` never. Without a bar the object still counts, so callers need no branches.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

__all__ = ["bar", "inherited", "wanted"]

#: The choice of the entry point in force (``flowcert.verify(progress=...)``) for the long steps
#: deep inside a job (the particle study): False unless an entry point says otherwise.
_CHOICE: ContextVar[bool | None] = ContextVar("flowcert_progress", default=False)
#: ``enabled=INHERIT``: follow the entry point's choice (:func:`inherited`).
INHERIT = "inherit"


@contextmanager
def inherited(enabled: bool | None) -> Iterator[None]:
    """Within the block, bars created with ``enabled=INHERIT`` follow ``enabled``."""
    token = _CHOICE.set(enabled)
    try:
        yield
    finally:
        _CHOICE.reset(token)


def wanted(enabled: Any, stream: TextIO | None = None) -> bool:
    """Whether to draw: ``enabled``, or for None whether ``stream`` (default stderr) is a terminal
    (``INHERIT``: the entry point's choice)."""
    stream = stream or sys.stderr
    if enabled == INHERIT:
        enabled = _CHOICE.get()
    if enabled is None:
        isatty = getattr(stream, "isatty", None)
        return bool(isatty and isatty())
    return bool(enabled)


class _Silent:
    """The bar's interface without drawing (``update``, ``set_postfix_str``, ``close``)."""

    def __init__(self, total: int) -> None:
        self.total, self.n = total, 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def bar(total: int, *, desc: str, unit: str = "it", enabled: Any = None, stream: TextIO | None = None) -> Any:
    """A ``tqdm`` bar of ``total`` steps on ``stream`` (default stderr) when :func:`wanted`, else a silent one.

    Parameters
    ----------
    total : int
        Number of steps.
    desc : str
        What is counted (``"heads"``, ``"sets"``).
    unit : str
        The unit shown with the rate.
    enabled : bool, None or ``INHERIT``
        True / False, None: only on a terminal, ``INHERIT``: as the entry point chose (:func:`inherited`).
    stream : text stream, optional
        Where to draw (default ``sys.stderr``).
    """
    stream = stream or sys.stderr
    if total <= 0 or not wanted(enabled, stream):
        return _Silent(total)
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=stream, dynamic_ncols=True, leave=True)
