r"""The one writer: every file and folder a command writes (``--out``, ``--plot``, ``--out-dir``, ``--summary``,
report files and figures, exported parameter files).

**No link anywhere in an output path.** A path is opened one component at a time, from ``/`` (an
absolute path) or the working directory (a relative one): each folder with
``O_DIRECTORY | O_NOFOLLOW`` relative to the descriptor of the folder before it (``openat(2)``). A
symbolic link in *any* component -- the file itself, its folder or any folder named on the way --
is refused (one line, exit 2), and the data are then written through the descriptor of the folder
found that way, so a link planted in a component after the check cannot redirect the write.

* A file :math:`p` (:func:`replacing`, :func:`write_bytes`, :func:`save_figure`): a temporary
  :math:`p'` is created in :math:`p`'s folder with ``O_CREAT | O_EXCL | O_NOFOLLOW``, written, and
  renamed onto :math:`p` (``renameat(2)`` on the folder's descriptor: it replaces a link named
  :math:`p`, never writes through it).
* A folder (:func:`staged_folder`): built under a temporary name and renamed into place at the end
  (merged, entry by entry, into a folder that already exists); on any failure, ``SIGINT`` or
  ``SIGTERM`` the temporary folder is removed, so an interrupted run leaves nothing behind.

Checked *before any work* (:func:`check_file`, :func:`check_folder`) and refused with one line
(:class:`~flowcert.errors.OptionError`, exit 2): a symbolic link in any component (dangling or
not), a folder or FIFO or device where a file is wanted, a file where a folder is wanted, a
missing or unwritable folder, a name component longer than :data:`MAX_NAME_BYTES` bytes or a path
longer than :data:`MAX_PATH_BYTES`. An operating-system error while the data are written (a full
disk, an I/O error) is :class:`~flowcert.errors.OutputError` (exit :data:`~flowcert.errors.EXIT_IO`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import OutputError
from .schema import OptionError

__all__ = ["check_file", "check_folder", "make_folder", "replacing", "staged_folder", "write_text", "write_bytes",
           "save_figure", "MAX_NAME_BYTES", "MAX_PATH_BYTES"]

#: Longest file-name component (bytes, as the file system stores it; POSIX NAME_MAX).
MAX_NAME_BYTES = 255
#: Longest whole path (bytes; POSIX PATH_MAX).
MAX_PATH_BYTES = 4095

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


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


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _checked_name(flag: str, path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(name, shown)`` of an output path whose name is acceptable (else one-line refusal)."""
    name = os.fspath(path)
    shown = repr(name)
    problem = _name_problem(name)
    if problem is not None:
        raise OptionError(flag, f"{shown} {problem}")
    return name, shown


def _components(name: str) -> tuple[str, list[str]]:
    """The start (``/`` or ``.``) and the components of ``name`` (empty and ``.`` components dropped)."""
    start = "/" if name.startswith("/") else "."
    return start, [p for p in name.split("/") if p not in ("", ".")]


def _joined(start: str, parts: list[str]) -> str:
    text = "/".join(parts)
    return "/" + text if start == "/" else (text or ".")


class _Walk:
    """An open folder reached without following a link: its descriptor, the components of the
    path that exist (``found``) and those that do not (``missing``)."""

    def __init__(self, fd: int, start: str, found: list[str], missing: list[str]) -> None:
        self.fd, self.start, self.found, self.missing = fd, start, found, missing

    @property
    def where(self) -> str:
        return _joined(self.start, self.found)

    def close(self) -> None:
        os.close(self.fd)


def _refusal(flag: str, shown: str, fd: int, part: str, prefix: str, last: bool, exc: OSError) -> OptionError:
    """Why component ``part`` (``prefix`` so far) could not be opened as a folder, in one line."""
    try:
        info = os.stat(part, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return OptionError(flag, f"cannot open folder {prefix!r} for {shown} ({_why(exc)})")
    if stat.S_ISLNK(info.st_mode):
        what = shown if last else f"{prefix!r} in {shown}"
        return OptionError(flag, f"{what} is a symbolic link; flowcert never writes through a link")
    if not stat.S_ISDIR(info.st_mode):
        if last:
            return OptionError(flag, f"{shown} exists and is not a folder")
        return OptionError(flag, f"{prefix!r} is not a folder, so {shown} cannot be reached")
    return OptionError(flag, f"cannot open folder {prefix!r} for {shown} ({_why(exc)})")


def _walk(flag: str, shown: str, folder: str, *, create: bool = False, target: bool = True) -> _Walk:
    """Open ``folder`` component by component with ``O_NOFOLLOW`` (a link anywhere is refused).

    Components that do not exist are created when ``create`` (each ``mkdirat`` on the descriptor
    of its parent), else left in :attr:`_Walk.missing` with the deepest existing folder open.
    ``target``: ``folder`` is the output itself (``shown``), not the folder of an output file.
    """
    start, parts = _components(folder)
    try:
        fd = os.open(start, _DIR_FLAGS)
    except OSError as exc:
        raise OptionError(flag, f"cannot open folder {start!r} for {shown} ({_why(exc)})") from None
    try:
        for i, part in enumerate(parts):
            prefix = _joined(start, parts[: i + 1])
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    if ".." in parts[i:]:
                        raise OptionError(flag, f"{shown} goes up ('..') from folder {prefix!r}, which does not exist")
                    return _Walk(fd, start, parts[:i], parts[i:])
                if part == "..":
                    raise OptionError(flag, f"{shown} goes up ('..') from a folder that does not exist") from None
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise OptionError(flag, f"cannot create folder {prefix!r} for {shown} ({_why(exc)})") from None
                try:
                    nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _refusal(flag, shown, fd, part, prefix, target and i == len(parts) - 1, exc) from None
            except OSError as exc:
                raise _refusal(flag, shown, fd, part, prefix, target and i == len(parts) - 1, exc) from None
            os.close(fd)
            fd = nxt
        return _Walk(fd, start, parts, [])
    except BaseException:
        os.close(fd)
        raise


def _split_file(flag: str, shown: str, name: str) -> tuple[str, str]:
    """``(folder, base)`` of a file name; a name that can only be a folder is refused."""
    folder, base = os.path.split(name)
    if base in ("", ".", ".."):
        raise OptionError(flag, f"{shown} names a folder, expected a file name")
    return folder or ".", base


def _temporary_name(base: str) -> str:
    """``.STEM-PID-HEX.SUFFIX``: hidden, unique, and naming the process that made it (:func:`remove_stale`)."""
    stem, dot, suffix = base.rpartition(".")
    suffix = f".{suffix}" if dot and stem and len(suffix) <= 16 else ""
    return f".{(stem if dot and stem else base)[:40]}-{os.getpid()}-{secrets.token_hex(6)}{suffix}"


_STAGED = re.compile(r"^\..{1,40}-(\d+)-[0-9a-f]{12}(\.[^.]{1,16})?$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale(fd: int, stem: str) -> list[str]:
    """Remove, in the folder open as ``fd``, the staging entries for ``stem`` (``.STEM-PID-HEX…``, or
    ``.flowcert-PID-HEX`` for ``stem`` None) left by a process that no longer exists (one killed by SIGKILL
    before it could clean up); returns their names. An entry of a live process is left alone."""
    gone = []
    for name in os.listdir(fd):
        m = _STAGED.match(name)
        if m is None or not name.startswith(f".{stem[:40]}-") or _alive(int(m.group(1))):
            continue
        with contextlib.suppress(OSError):
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            gone.append(name)
    return gone


def _lstat_at(fd: int, base: str) -> os.stat_result | None:
    try:
        return os.stat(base, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _probe(flag: str, shown: str, walk: _Walk) -> None:
    """Create and remove a temporary file in the open folder (catches /proc, read-only and full file systems)."""
    tmp = _temporary_name("probe")
    try:
        os.close(os.open(tmp, _NEW_FILE, 0o600, dir_fd=walk.fd))
    except OSError as exc:
        raise OptionError(flag, f"cannot write in folder {walk.where!r} for {shown} ({_why(exc)})") from None
    with contextlib.suppress(OSError):
        os.unlink(tmp, dir_fd=walk.fd)


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
        A bad suffix or name, a symbolic link in any component, an existing non-regular file, a
        missing or unwritable folder.
    """
    name, shown = _checked_name(flag, path)
    p = Path(name)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise OptionError(flag, f"the file name must end in {' or '.join(suffixes)}, got {shown}")
    folder, base = _split_file(flag, shown, name)
    walk = _walk(flag, shown, folder, target=False)
    try:
        if walk.missing:
            raise OptionError(flag, f"folder {folder!r} does not exist, for {shown}")
        info = _lstat_at(walk.fd, base)
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise OptionError(flag, f"{shown} is a symbolic link; flowcert never writes through a link")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise OptionError(flag, f"{shown} exists and is {_kind(info.st_mode)}, expected a file name")
        _probe(flag, shown, walk)
    finally:
        walk.close()
    return p


def check_folder(flag: str, path: str | os.PathLike[str]) -> Path:
    """Check an output folder before any work (it is *not* created here).

    The folder may exist (a real folder, reached through no link) or be creatable: its deepest
    existing ancestor must be a writable folder.

    Raises
    ------
    flowcert.schema.OptionError
        A bad name, a link in any component, an existing file, an ancestor that is a file, an
        unwritable place.
    """
    name, shown = _checked_name(flag, path)
    walk = _walk(flag, shown, name)
    try:
        _probe(flag, shown, walk)
    finally:
        walk.close()
    return Path(name)


def make_folder(flag: str, path: str | os.PathLike[str]) -> Path:
    """Create a folder (and its missing parents) through no link; errors are :class:`OptionError`."""
    name, shown = _checked_name(flag, path)
    _walk(flag, shown, name, create=True).close()
    return Path(name)


def _umask_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """``SIGINT`` and ``SIGTERM`` wait (in the main thread) while a commit renames things into place."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _through(fd: int, name: str, folder: str) -> str:
    """A path to ``name`` in the folder open as ``fd`` that no later link can redirect
    (``/proc/self/fd/FD/name`` where the platform has it; else the folder's path)."""
    proc = f"/proc/self/fd/{fd}"
    return f"{proc}/{name}" if os.path.isdir(proc) else os.path.join(folder, name)


@contextlib.contextmanager
def _new_file(flag: str, path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(descriptor, path)`` of a new temporary file beside ``path``; renamed onto ``path`` on success."""
    name, shown = _checked_name(flag, path)
    folder, base = _split_file(flag, shown, name)
    walk = _walk(flag, shown, folder, target=False)
    try:
        if walk.missing:
            raise OptionError(flag, f"folder {folder!r} does not exist, for {shown}")
        remove_stale(walk.fd, base.rpartition(".")[0] or base)
        tmp = _temporary_name(base)
        try:
            wfd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=walk.fd)
        except OSError as exc:
            raise OptionError(flag, f"cannot write {shown} ({_why(exc)})") from None
        done = False
        try:
            yield wfd, _through(walk.fd, tmp, folder)
            info = _lstat_at(walk.fd, base)
            if info is not None and stat.S_ISLNK(info.st_mode):
                raise OptionError(flag, f"{shown} became a symbolic link; not written")
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise OptionError(flag, f"{shown} became {_kind(info.st_mode)}; not written")
            os.fchmod(wfd, stat.S_IMODE(info.st_mode) if info is not None else _umask_mode())
            with _signals_held():
                os.replace(tmp, base, src_dir_fd=walk.fd, dst_dir_fd=walk.fd)
                done = True
        except OSError as exc:
            raise OutputError(f"{flag} {shown}", exc) from None
        finally:
            os.close(wfd)
            if not done:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=walk.fd)
    finally:
        walk.close()


@contextlib.contextmanager
def replacing(flag: str, path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary file path beside ``path``; on success rename it onto ``path``.

    The temporary file is created with ``O_EXCL | O_NOFOLLOW`` in the folder reached through no
    link, keeps the suffix of ``path`` (matplotlib and numpy choose the format by it), and is
    reached through the folder's descriptor (``/proc/self/fd``), so a link planted later in the
    path cannot redirect it. A link found at ``path`` at the end is refused (exit 2); the temporary
    file is removed on any failure; an OS error while writing is :class:`~flowcert.errors.OutputError`.
    """
    with _new_file(flag, path) as (_fd, tmp):
        yield Path(tmp)


def write_bytes(flag: str, path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`replacing` (never through a link)."""
    with _new_file(flag, path) as (fd, _tmp):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    return Path(os.fspath(path))


def write_text(flag: str, path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` through :func:`replacing` (never through a link)."""
    return write_bytes(flag, path, text.encode(encoding))


def save_figure(fig: Any, path: str | os.PathLike[str], flag: str = "--out", **kwargs: Any) -> Path:
    """``fig.savefig(path, **kwargs)`` through :func:`replacing` (never through a link)."""
    with replacing(flag, path) as tmp:
        fig.savefig(tmp, **kwargs)
    return Path(os.fspath(path))


# ---------------------------------------------------------------------------------------
# folders written as a whole
# ---------------------------------------------------------------------------------------


def _merge(flag: str, shown: str, src: int, dst: int, where: str) -> None:
    """Move every entry of the open folder ``src`` into the open folder ``dst`` (sub-folders that
    exist on both sides are merged; files replace files; nothing follows a link)."""
    for entry in list(os.scandir(src)):
        target = _lstat_at(dst, entry.name)
        if entry.is_dir(follow_symlinks=False) and target is not None and stat.S_ISDIR(target.st_mode):
            a = os.open(entry.name, _DIR_FLAGS, dir_fd=src)
            try:
                b = os.open(entry.name, _DIR_FLAGS, dir_fd=dst)
                try:
                    _merge(flag, shown, a, b, f"{where}/{entry.name}")
                finally:
                    os.close(b)
            finally:
                os.close(a)
            os.rmdir(entry.name, dir_fd=src)
            continue
        if target is not None and stat.S_ISDIR(target.st_mode) != entry.is_dir(follow_symlinks=False):
            what = "a symbolic link" if stat.S_ISLNK(target.st_mode) else _kind(target.st_mode)
            raise OptionError(flag, f"{where}/{entry.name} exists and is {what}; {shown} not written")
        os.replace(entry.name, entry.name, src_dir_fd=src, dst_dir_fd=dst)


@contextlib.contextmanager
def staged_folder(flag: str, path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder standing for the folder ``path``; at the end it is renamed into place.

    * ``path`` does not exist: the temporary folder is made beside its first missing component
      (``.NAME-XXXXXXXXXXXX``, with the rest of the path inside it) and renamed onto that component
      at the end;
    * ``path`` is a folder: the temporary folder is made inside it (``.flowcert-XXXXXXXXXXXX``)
      and its entries are moved into ``path`` at the end (files replace files of the same name).

    On any exception (``KeyboardInterrupt`` and a ``SIGTERM`` turned into an exception included)
    the temporary folder is removed with everything in it, so nothing is left behind. Every
    component is opened with ``O_NOFOLLOW`` (:func:`_walk`); the commit holds ``SIGINT``/``SIGTERM``.

    Raises
    ------
    flowcert.schema.OptionError
        The checks of :func:`check_folder`, or a conflict found when merging.
    flowcert.errors.OutputError
        An OS error while committing.
    """
    name, shown = _checked_name(flag, path)
    walk = _walk(flag, shown, name)
    tmp = ""
    try:
        if walk.missing:
            top, rest = walk.missing[0], walk.missing[1:]
            remove_stale(walk.fd, top.rpartition(".")[0] or top)
            tmp = _temporary_name(top)
        else:
            top, rest = "", []
            remove_stale(walk.fd, "flowcert")  # a staging folder of a killed run is never merged as output
            tmp = f".flowcert-{os.getpid()}-{secrets.token_hex(6)}"
        try:
            os.mkdir(tmp, 0o777, dir_fd=walk.fd)
        except OSError as exc:
            raise OptionError(flag, f"cannot write in folder {walk.where!r} for {shown} ({_why(exc)})") from None
        base = os.path.join(walk.where, tmp)
        inner = _walk(flag, shown, os.path.join(base, *rest), create=True) if rest else None
        if inner is not None:
            inner.close()
        yield Path(os.path.join(base, *rest))
        try:
            with _signals_held():
                if top:
                    try:
                        os.rename(tmp, top, src_dir_fd=walk.fd, dst_dir_fd=walk.fd)
                        tmp = ""
                    except OSError as exc:
                        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                            raise
                if tmp:  # the folder exists (now): merge into it
                    into = os.open(top, _DIR_FLAGS, dir_fd=walk.fd) if top else os.dup(walk.fd)
                    src = os.open(tmp, _DIR_FLAGS, dir_fd=walk.fd)
                    try:
                        _merge(flag, shown, src, into, name)
                    finally:
                        os.close(src)
                        os.close(into)
                    os.rmdir(tmp, dir_fd=walk.fd)
                    tmp = ""
        except OSError as exc:
            raise OutputError(f"{flag} {shown}", exc) from None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp, dir_fd=walk.fd)
        walk.close()
