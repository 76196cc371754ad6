"""The registry of systems: one line per system (docs/design.md, "Systems").

Each line names the module whose ``SYSTEM`` object implements :class:`flowcert.system.System`
and the commands the system serves. The modules are imported only when a system is used, so
``flowcert --help`` (which needs the names and commands for its choices) stays fast. A new system
is one module plus one line here.

Commands: ``verify`` (one file), ``sweep`` (``verify`` over many files), ``simulate``, ``codegen``,
``equilibria``, ``reach``, ``design``, ``report`` (``report --params``), ``export`` (``pretrained export``),
``kpflow`` (``kpflow analyze``). Besides ``verify``, ``sweep`` and ``report`` (every system's), a
command the line lists is an optional *capability*: the system object has the method of that name
(``simulate``, ``codegen``, ``equilibria``, ``reach``, ``design``, ``export``, ``kpflow``), and
:func:`capability` finds it from this declaration; a system has no stub for a command it does not serve.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

from .errors import InputError

__all__ = ["REGISTRY", "capability", "get_system", "names", "serves", "systems"]


class RegistryLine(NamedTuple):
    """One registry line: the module holding ``SYSTEM`` and the commands it serves."""

    module: str
    commands: frozenset[str]


REGISTRY: dict[str, RegistryLine] = {
    "gaussian": RegistryLine("flowcert.gaussian.system",
                      frozenset({"verify", "sweep", "simulate", "codegen", "reach", "design", "report", "export"})),
    "attention": RegistryLine("flowcert.attention.system",
                       frozenset({"verify", "sweep", "simulate", "codegen", "equilibria", "report", "export"})),
    "rnn": RegistryLine("flowcert.rnn.system", frozenset({"verify", "report", "kpflow"})),
}


def names(command: str | None = None) -> tuple[str, ...]:
    """Registered system names (in registry order), or those serving ``command``."""
    return tuple(n for n, e in REGISTRY.items() if command is None or command in e.commands)


def serves(name: str, command: str) -> bool:
    """Whether system ``name`` serves ``command``."""
    return name in REGISTRY and command in REGISTRY[name].commands


def get_system(name: str) -> Any:
    """The :class:`~flowcert.system.System` object named ``name`` (imports its module).

    Raises
    ------
    flowcert.errors.InputError
        ``name`` is not registered.
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise InputError(f"system '{name}' is not available (available: {', '.join(REGISTRY)})")
    return importlib.import_module(REGISTRY[name].module).SYSTEM


def systems(command: str | None = None) -> list[Any]:
    """The system objects (serving ``command`` if given), in registry order."""
    return [get_system(n) for n in names(command)]


def capability(name: str, command: str, missing: str | None = None) -> Any:
    """The method of system ``name`` serving the optional command ``command`` (its registry line
    declares it; the method has the command's name).

    Raises
    ------
    flowcert.errors.InputError
        ``name`` is not registered, or does not serve ``command`` (``missing``: the message, else
        ``system 'NAME' has no COMMAND command``).
    """
    system = get_system(name)
    if not serves(name, command):
        raise InputError(missing or f"system '{name}' has no {command} command")
    return getattr(system, command)
