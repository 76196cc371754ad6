"""The one kind of bad input: every loader, command and library entry point raises :class:`InputError`.

The command line turns it into exit code 2 with one line on stderr naming the parameter and the
problem (DESIGN.md, "Command line"); from Python it is an ordinary exception. :class:`ParamError`
is the same idea for a parameter file or mapping, with the offending ``key`` as an attribute: it
is an :class:`InputError` (and, as before, a :class:`ValueError`), so ``except InputError``
catches both and ``except ParamError`` keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = ["InputError", "OptionError", "ParamError", "OutputError", "EXIT_IO"]

#: Exit code of an output that could not be written (stdout full or closed, a disk full while a file
#: is written): ``EX_IOERR`` of BSD ``sysexits.h``.
EXIT_IO = 74


class InputError(Exception):
    """Bad input (a parameter, a flag, a file): one line, exit code 2 on the command line."""


class ParamError(InputError, ValueError):
    """A parameter file or mapping is malformed.

    Parameters
    ----------
    key : str or None
        The offending key (``None`` for problems with the file as a whole).
    problem : str
        What is wrong and what was expected, one line.
    file : str, optional
        The file the parameters came from.
    names_key : bool
        True when ``problem`` already names the key (unknown / missing keys), so the
        message does not repeat the ``key '...':`` prefix.

    Attributes
    ----------
    key, problem, file

    Notes
    -----
    ``str(err)`` is one line: ``params: [file 'F': ][key 'K': ]problem``.
    """

    def __init__(
        self,
        key: str | None,
        problem: str,
        *,
        file: str | None = None,
        names_key: bool = False,
    ) -> None:
        self.key = key
        self.problem = " ".join(str(problem).splitlines())
        self.file = file
        self.names_key = names_key
        super().__init__(self._message())

    def _message(self) -> str:
        parts = ["params: "]
        if self.file is not None:
            parts.append(f"file {self.file!r}: ")
        if self.key is not None and not self.names_key:
            parts.append(f"key {self.key!r}: ")
        parts.append(self.problem)
        return "".join(parts)

    def __str__(self) -> str:
        return self._message()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_param_error, (self.key, self.problem, self.file, self.names_key))

    def with_file(self, file: str) -> ParamError:
        """Return a copy of this error that also names ``file``."""
        return ParamError(self.key, self.problem, file=file, names_key=self.names_key)


class OptionError(ParamError):
    """A bad command-line option (an output path, ``--jobs``, ``--seed`` …): ``str`` is ``OPTION: problem``.

    A :class:`ParamError`, so every caller that maps bad input to exit code 2 maps this too.
    """

    def _message(self) -> str:
        return f"{self.key}: {self.problem}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (OptionError, (self.key, self.problem))


def _rebuild_param_error(
    key: str | None, problem: str, file: str | None, names_key: bool
) -> ParamError:
    return ParamError(key, problem, file=file, names_key=names_key)


class OutputError(Exception):
    """An output could not be written after its checks passed (stdout full or closed, a full disk, an I/O
    error while a file is written): one line naming the output and the error, exit code :data:`EXIT_IO`.

    Parameters
    ----------
    output : str
        What was being written (``stdout``, ``--out 'report/'``).
    error : OSError or str
        The operating system's error.
    """

    def __init__(self, output: str, error: OSError | str) -> None:
        self.output = output
        reason = error if isinstance(error, str) else (error.strerror or str(error))
        self.reason = " ".join(str(reason).splitlines())
        super().__init__(f"cannot write {output} ({self.reason})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (OutputError, (self.output, self.reason))
