r"""The one writer: every file a command writes (``--out``, ``--plot``, report files, figures).

An output path :math:`p` is checked *before any work* (:func:`check_file`, :func:`check_folder`)
and written *without following a symbolic link* (:func:`replacing`): the data go to a temporary
file :math:`p'` created with ``O_EXCL`` in the same folder, then ``os.replace(p', p)`` renames it
onto :math:`p`. ``rename(2)`` replaces a link named :math:`p` by the new file; it never writes
through it, so a link planted at :math:`p` (or made between the check and the write) cannot
redirect the output. Refused with one line (exit 2): a symbolic link (dangling or not), a folder,
a FIFO, a device or socket, a missing or unwritable folder, a name component longer than
:data:`MAX_NAME_BYTES` bytes or a path longer than :data:`MAX_PATH_BYTES`. On any failure the
temporary file is removed, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .schema import OptionError

__all__ = ["check_file", "check_folder", "replacing", "write_text", "write_bytes", "save_figure",
           "MAX_NAME_BYTES", "MAX_PATH_BYTES"]

#: Longest file-name component (bytes, as the file system stores it; POSIX NAME_MAX).
MAX_NAME_BYTES = 255
#: Longest whole path (bytes; POSIX PATH_MAX).
MAX_PATH_BYTES = 4095


def _name_problem(path: str) -> str | None:
    raw = os.fsencode(path)
    if not raw:
        return "is empty, expected a file name"
    if b"\x00" in raw:
        return "contains a NUL byte"
    if len(raw) > MAX_PATH_BYTES:
        return f"is {len(raw)} bytes long (at most {MAX_PATH_BYTES})"
    for part in raw.split(b"/"):
        if len(part) > MAX_NAME_BYTES:
            return f"has a name component of {len(part)} bytes (at most {MAX_NAME_BYTES})"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _probe(flag: str, shown: str, folder: Path) -> None:
    """Create and remove a temporary file in ``folder`` (catches /proc, read-only and full file systems)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".flowcert-", suffix=".probe", dir=folder)
    except OSError as exc:
        raise OptionError(flag, f"cannot write in folder {str(folder)!r} for {shown} ({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _inspect(flag: str, path: str | os.PathLike[str]) -> tuple[str, str, os.stat_result | None]:
    """``(name, shown, lstat or None)`` of an output path: a bad name or a symbolic link is refused here."""
    name = os.fspath(path)
    shown = repr(name)
    problem = _name_problem(name)
    if problem is not None:
        raise OptionError(flag, f"{shown} {problem}")
    try:
        info = os.lstat(name)
    except (FileNotFoundError, NotADirectoryError):
        return name, shown, None
    except OSError as exc:
        raise OptionError(flag, f"cannot inspect {shown} ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise OptionError(flag, f"{shown} is a symbolic link; flowcert never writes through a link")
    return name, shown, info


def check_file(flag: str, path: str | os.PathLike[str], suffixes: tuple[str, ...] | None = None) -> Path:
    """Check an output file name before any work; return it as a :class:`~pathlib.Path`.

    Parameters
    ----------
    flag : str
        The option named in errors (``--out``, ``--plot``).
    path : str or path-like
        The file to write (used exactly as given).
    suffixes : tuple of str, optional
        Allowed suffixes (lower case, with the dot).

    Raises
    ------
    flowcert.schema.OptionError
        A bad suffix or name, a symbolic link, an existing non-regular file, a missing or
        unwritable folder.
    """
    name, shown, info = _inspect(flag, path)
    p = Path(name)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise OptionError(flag, f"the file name must end in {' or '.join(suffixes)}, got {shown}")
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise OptionError(flag, f"{shown} exists and is {_kind(info.st_mode)}, expected a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OptionError(flag, f"folder {str(parent)!r} does not exist, for {shown}")
    _probe(flag, shown, parent)
    return p


def check_folder(flag: str, path: str | os.PathLike[str]) -> Path:
    """Check an output folder before any work (it is *not* created here).

    The folder may exist (a real folder, not a link to one) or be creatable: its nearest existing
    ancestor must be a writable folder.

    Raises
    ------
    flowcert.schema.OptionError
        A bad name, an existing file or link, an ancestor that is a file, an unwritable place.
    """
    name, shown, info = _inspect(flag, path)
    p = Path(name)
    if info is not None:
        if not stat.S_ISDIR(info.st_mode):
            raise OptionError(flag, f"{shown} exists and is not a folder")
        _probe(flag, shown, p)
        return p
    existing = next((a for a in p.absolute().parents if os.path.lexists(a)), Path("/"))
    if not existing.is_dir():
        raise OptionError(flag, f"{str(existing)!r} is not a folder, so folder {shown} cannot be made")
    _probe(flag, shown, existing)
    return p


def make_folder(flag: str, path: str | os.PathLike[str]) -> Path:
    """Create a folder checked by :func:`check_folder` (and its parents); errors are :class:`OptionError`."""
    p = check_folder(flag, path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionError(flag, f"cannot create {os.fspath(path)!r} ({exc.strerror or exc})") from None
    return p


def _mode_for(p: Path) -> int:
    """Permissions of the file written: those of the regular file it replaces, else 0o666 less the umask."""
    try:
        info = os.lstat(p)
        if stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def replacing(flag: str, path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on success rename it onto ``path``.

    The temporary file is created with ``O_EXCL`` (``mkstemp``) and keeps the suffix of ``path``
    (matplotlib and numpy choose the format by it). ``os.replace`` never follows a link at
    ``path``; a link found there at the end is refused all the same (exit 2), the temporary file
    is removed on any failure.
    """
    p = Path(os.fspath(path))
    folder = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.stem[:40]}-", suffix=p.suffix, dir=folder)
    except OSError as exc:
        raise OptionError(flag, f"cannot write {os.fspath(path)!r} ({exc.strerror or exc})") from None
    os.close(fd)
    done = False
    try:
        yield Path(tmp)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(p).st_mode):
                raise OptionError(flag, f"{os.fspath(path)!r} became a symbolic link; not written")
        try:
            os.chmod(tmp, _mode_for(p))
            os.replace(tmp, p)
        except OSError as exc:
            raise OptionError(flag, f"cannot write {os.fspath(path)!r} ({exc.strerror or exc})") from None
        done = True
    except OSError as exc:
        raise OptionError(flag, f"cannot write {os.fspath(path)!r} ({exc.strerror or exc})") from None
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_bytes(flag: str, path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`replacing` (never through a link)."""
    with replacing(flag, path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(os.fspath(path))


def write_text(flag: str, path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` through :func:`replacing` (never through a link)."""
    return write_bytes(flag, path, text.encode(encoding))


def save_figure(fig: Any, path: str | os.PathLike[str], flag: str = "--out", **kwargs: Any) -> Path:
    """``fig.savefig(path, **kwargs)`` through :func:`replacing` (never through a link)."""
    with replacing(flag, path) as tmp:
        fig.savefig(tmp, **kwargs)
    return Path(os.fspath(path))
