"""The one kind of bad input: every loader, command and library entry point raises :class:`InputError`.

The command line turns it into exit code 2 with one line on stderr naming the parameter and the
problem (docs/design.md, "The command line and JSON contract"); from Python it is an ordinary exception, a
:class:`ValueError`, so ``except ValueError`` catches every bad input. :class:`ParamError` is the
same idea for a parameter file or mapping, with the offending ``key`` as an attribute: it is an
:class:`InputError`, so ``except InputError`` catches both and ``except ParamError`` keeps working.

The same checks serve the command line and Python, and the command line names its flags
(``--model: ...``). :func:`python_terms` rewrites a message for a Python caller (``model: ...``):
the library's entry points (:func:`flowcert.verify`, :mod:`flowcert.pretrained`,
:func:`flowcert.rnn.analyze_cell`) raise their errors through it, so a Python user never reads a
flag. :class:`PrecisionWarning` is the note given when an array arrives in another floating-point
format than float64 (a float32 tensor, a float16 array) and is converted: one warning per call of an
entry point, naming every key converted, and none when the call then raises (:class:`precision_notes`).
"""

from __future__ import annotations

import functools
import re
import warnings
from contextvars import ContextVar
from typing import Any, Callable, TypeVar

__all__ = ["InputError", "OptionError", "ParamError", "PrecisionWarning", "python_terms", "OutputError", "EXIT_IO"]

#: Exit code of an output that could not be written (stdout full or closed, a disk full while a file
#: is written): ``EX_IOERR`` of BSD ``sysexits.h``.
EXIT_IO = 74


class InputError(ValueError):
    """Bad input (a parameter, a flag, a file): one line, exit code 2 on the command line.

    A :class:`ValueError` (since 0.2; before it was a plain ``Exception``), so ``except ValueError``
    and ``except InputError`` both catch it.
    """


class PrecisionWarning(UserWarning):
    """An array was converted to float64 from another floating-point format (a note, not an error):
    widened exactly (float16, bfloat16, float32: the values keep that format's precision) or
    rounded (float128 / long double)."""


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
        """Return a copy of this error that also names ``file``.

        Parameters
        ----------
        file : str
            The file the parameters came from (replaces any file already named).

        Returns
        -------
        ParamError
            A new :class:`ParamError` with the same ``key``, ``problem`` and ``names_key``, whose
            message reads ``params: file 'F': ...``; this error is left unchanged.
        """
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


#: ``--some-flag`` where it stands as a word: a command-line flag in a message.
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _python_message(message: str) -> str:
    """``--out-dir: ...`` -> ``out_dir: ...``: the flag named as the Python keyword it stands for."""
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_"), message)


def as_python_error(err: InputError) -> InputError:
    """``err`` with its message in Python terms (no command-line flags); the same class where it
    can be rebuilt from a message, else an :class:`InputError`."""
    text = str(err)
    new = _python_message(text)
    if new == text:
        return err
    if isinstance(err, ParamError):
        lead = _FLAG.match(err.problem)
        if err.key is None and err.file is None and lead is not None and err.problem[lead.end():].startswith(": "):
            # "--model: ..." with no key: the flag is the parameter, named as the Python keyword
            return OptionError(lead.group(1).replace("-", "_"), _python_message(err.problem[lead.end() + 2:]))
        key = None if err.key is None else _python_message(err.key)
        if type(err) is OptionError:
            return OptionError(key, _python_message(err.problem))
        return ParamError(key, _python_message(err.problem), file=err.file, names_key=err.names_key)
    return InputError(new)


#: The precision notes of the call in progress (:class:`precision_notes`), or None outside one.
_NOTES: ContextVar[list[tuple[str, str, bool]] | None] = ContextVar("flowcert_precision_notes", default=None)


def precision_message(notes: list[tuple[str, str, bool]]) -> str:
    """The text of one :class:`PrecisionWarning` for ``notes`` (``(key, dtype, exact)``), keys grouped by
    format: ``A, B: float32 values converted to float64 (widened exactly; ...)``.

    Parameters
    ----------
    notes : list of (str, str, bool)
        The key, the format it came in, and whether float64 holds it exactly.

    Returns
    -------
    str
    """
    groups: dict[tuple[str, bool], list[str]] = {}
    for key, dtype, exact in notes:
        keys = groups.setdefault((dtype, exact), [])
        if key not in keys:
            keys.append(key)
    return "; ".join(
        f"{', '.join(keys)}: {dtype} values converted to float64 ("
        + (f"widened exactly; the values keep {dtype} precision" if exact else "rounded to the nearest float64") + ")"
        for (dtype, exact), keys in groups.items())


def note_precision(key: str, dtype: str, exact: bool) -> bool:
    """Add a precision note to the call in progress; False when no call collects them (warn at once).

    Parameters
    ----------
    key : str
        The parameter converted.
    dtype : str
        The format it came in (``float32``).
    exact : bool
        Whether float64 holds its values exactly.

    Returns
    -------
    bool
        True when the note was collected (one :class:`PrecisionWarning` at the end of the call).
    """
    notes = _NOTES.get()
    if notes is None:
        return False
    notes.append((key, dtype, exact))
    return True


class precision_notes:
    """Collect the precision notes of one call: one :class:`PrecisionWarning` for all its keys when the
    call returns, none when it raises (the error is the answer). Nested uses join the outermost.

    Parameters
    ----------
    stacklevel : int
        ``stacklevel`` of the warning as seen from the ``with`` statement's frame (2: its caller).
    """

    def __init__(self, stacklevel: int = 2) -> None:
        self.stacklevel = stacklevel
        self._token: Any = None

    def __enter__(self) -> precision_notes:
        if _NOTES.get() is None:
            self._token = _NOTES.set([])
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if self._token is None:
            return
        notes = _NOTES.get() or []
        _NOTES.reset(self._token)
        self._token = None
        if kind is None and notes:
            # from __exit__, 1 is here and 2 the with statement's frame
            warnings.warn(precision_message(notes), PrecisionWarning, stacklevel=self.stacklevel + 1)


F = TypeVar("F", bound=Callable[..., Any])


def python_terms(fn: F) -> F:
    """Decorate a Python entry point: the :class:`InputError` it raises names no command-line flag
    (``--model: 'x' is not a directory`` becomes ``model: 'x' is not a directory``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with precision_notes():  # one PrecisionWarning per call, none on a call that raises
                return fn(*args, **kwargs)
        except InputError as err:
            new = as_python_error(err)
            if new is err:
                raise
            raise new from None

    return wrapper  # type: ignore[return-value]


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
