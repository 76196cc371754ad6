"""Command-line option types shared by every command: each refuses a bad value in the parser
(exit code 2, one line naming the option), before any work; upper limits come from
:data:`flowcert.limits.LIMITS`.
"""

from __future__ import annotations

import argparse

__all__ = ["device_arg", "one_line", "positive_int_arg", "seed_arg"]


def one_line(text: str) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\x1b`` …): an error is one line whatever the user typed."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)


def seed_arg(text: str) -> int:
    """``--seed``: an integer in [0, flowcert.limits.LIMITS['seed']] (what every numpy and torch generator accepts)."""
    from .limits import LIMITS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if not 0 <= value <= LIMITS["seed"]:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {LIMITS['seed']}], got {text[:30]!r}")
    return value


def positive_int_arg(text: str) -> int:
    """A positive integer option (``--jobs``, ``--samples``, ``--cap``); its upper limit is checked by the command."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text[:30]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text[:30]!r}")
    return value


def device_arg(text: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N`` (whether it is present is checked by the command)."""
    import re

    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N, got {text[:30]!r}")
    return text
