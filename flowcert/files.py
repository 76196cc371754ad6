r"""File input shared by every system: JSON or ``.npz`` parameter files, read into a raw mapping.

Only regular files of at most :data:`MAX_FILE_BYTES` bytes are read (FIFOs, devices, directories
refused on the open descriptor). JSON: an object at the top level, no duplicate keys, integers of
at most :data:`MAX_JSON_DIGITS` digits, ``NaN``/``Infinity`` read (and rejected by the schema
later). ``.npz``: every member a ``.npy`` file whose header (dtype numeric, no pickles, at most
:data:`MAX_ARRAY_ELEMENTS` elements) is checked before its data are read; 0-d arrays read as scalars. A file
is a map :math:`\text{key}\mapsto\text{value}` that a :class:`~flowcert.schema.Schema` then
validates; every problem is a :class:`~flowcert.schema.ParamError` naming the file.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from .errors import ParamError

if TYPE_CHECKING:
    from .records import JSONObject, JSONValue

#: Largest parameter file read (bytes); larger files are refused before reading.
MAX_FILE_BYTES = 64 * 2**20
#: Largest number of elements of one ``.npz`` member, checked on its header before allocating.
MAX_ARRAY_ELEMENTS = 4 * 2**20
#: Largest number of digits of a JSON integer (Python's own int() limit; beyond it a one-line error naming the file, below it the schema names the key).
MAX_JSON_DIGITS = 4300
#: Deepest nesting of JSON arrays/objects read (checked by a scan before parsing, far below
#: Python's recursion limit, so no later recursive walk can overflow the stack).
MAX_JSON_DEPTH = 32


# ---------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------


class DuplicateKeyError(Exception):
    """A JSON object names one key twice (the key is ``args[0]``); flowcert reads no such document."""


def no_duplicate_keys(pairs: list[tuple[str, JSONValue]]) -> JSONObject:
    """``object_pairs_hook`` of :func:`json.loads`: the object, or :class:`DuplicateKeyError` for a key given twice."""
    out: JSONObject = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def load_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read a parameter file into a raw mapping (not yet validated); :func:`load_file_sha256` also
    gives the SHA-256 of the bytes read.

    Parameters
    ----------
    path : str or path-like
        A ``.json`` file holding an object, or a ``.npz`` archive (read with
        ``allow_pickle=False``; 0-d arrays become Python scalars).

    Returns
    -------
    dict
        Key -> raw value (nested lists for JSON, numpy arrays for ``.npz``).

    Raises
    ------
    ParamError
        Wrong suffix, missing or unreadable file, invalid JSON (with line and column),
        duplicate keys, a top level that is not an object, a corrupt archive.
    """
    return load_file_sha256(path)[0]


def load_file_sha256(path: str | os.PathLike[str]) -> tuple[dict[str, object], str]:
    """:func:`load_file`, and the SHA-256 (hex) of the very bytes that were parsed: what a document that
    references its parameter file instead of copying it names (``{"$ref": FILE, "sha256": HEX}``)."""
    import hashlib

    name = os.fspath(path)
    p = Path(name)
    suffix = p.suffix.lower()

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=name)

    if suffix not in (".json", ".npz"):
        raise fail("expected a .json or .npz file")
    raw = _read_regular(name, fail)
    return _parsed(raw, suffix, fail), hashlib.sha256(raw).hexdigest()


def _parsed(raw: bytes, suffix: str, fail: Callable[[str], ParamError]) -> dict[str, object]:
    if suffix == ".json":
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise fail("not valid UTF-8 text") from None
        data = parse_json(text, fail)
        if not isinstance(data, dict):
            raise fail(f"top level must be an object, got {_json_kind(data)}")
        return data
    return _read_npz(raw, fail)


class LongIntegerError(ValueError):
    """A JSON integer of more than :data:`MAX_JSON_DIGITS` digits (its digit count is ``args[0]``)."""


def json_int(text: str) -> int:
    """``parse_int`` of :func:`json.loads`: the integer, or :class:`LongIntegerError` beyond
    :data:`MAX_JSON_DIGITS` digits."""
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_DIGITS:
        raise LongIntegerError(digits)
    return int(text)


_KEEP = b"[]{}\""
_DROP = bytes(c for c in range(256) if c not in _KEEP)
_STRINGS = re.compile(rb'"[^"]*"')
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_json_depth(text: str, fail: Callable[[str], ParamError], limit: int | None = None) -> None:
    """Refuse JSON text nested deeper than ``limit`` (default :data:`MAX_JSON_DEPTH`), without recursion.

    Escaped backslashes and quotes are removed first, then every byte but brackets and quotes,
    then the strings (a bracket inside a string does not count); the depth is the running sum of
    +1 per opening and -1 per closing bracket, its maximum taken in C (``itertools.accumulate``).
    """
    limit = MAX_JSON_DEPTH if limit is None else limit
    raw = text.replace("\\\\", "").replace('\\"', "").encode("utf-8", "surrogatepass")
    marks = _STRINGS.sub(b"", raw.translate(None, _DROP))
    depth = max(itertools.accumulate(map(_DEPTH_STEP.__getitem__, marks.replace(b'"', b""))), default=0)
    if depth > limit:
        raise fail(f"JSON nested {depth} levels deep (at most {limit})")


def read_regular(name: str, fail: Callable[[str], ParamError], max_bytes: int | None = None) -> bytes:
    """Bytes of a regular file of at most ``max_bytes`` (default :data:`MAX_FILE_BYTES`).

    The one reader of every input file: FIFOs, devices, sockets and directories are refused on
    the open descriptor, so a FIFO cannot block and a link to ``/dev/zero`` cannot be read.
    """
    return _read_regular(name, fail, max_bytes)


def load_json(path: str | os.PathLike[str], what: str | None = None, *, max_bytes: int | None = None,
              max_depth: int | None = None) -> Any:
    """Read one JSON document of any top-level kind through the one reader.

    Regular file only, at most ``max_bytes``, strict UTF-8, nesting at most ``max_depth``,
    integers of at most :data:`MAX_JSON_DIGITS` digits, no duplicate keys. ``what`` names the
    file in errors (default: the path).

    Raises
    ------
    ParamError
        Naming the file, one line.
    """
    name = os.fspath(path)

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=what or name)

    text = _decode(read_regular(name, fail, max_bytes), fail)
    return parse_json(text, fail, max_depth)


def read_json_text(path: str | os.PathLike[str], what: str | None = None, *, max_bytes: int | None = None) -> str:
    """The text of a JSON file that another parser reads (``tokenizer.json``), checked like :func:`load_json`
    (regular file, size, strict UTF-8, nesting) but not parsed here."""
    name = os.fspath(path)

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=what or name)

    text = _decode(read_regular(name, fail, max_bytes), fail)
    check_json_depth(text, fail, 4 * MAX_JSON_DEPTH)
    return text


def _decode(raw: bytes, fail: Callable[[str], ParamError]) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(f"not valid UTF-8 text (byte {exc.start})") from None


def parse_json(text: str, fail: Callable[[str], ParamError], max_depth: int | None = None) -> Any:
    """The JSON value of ``text`` (nesting at most ``max_depth``, no duplicate key, no overlong integer);
    anything else raises ``fail(problem)``."""
    try:
        check_json_depth(text, fail, max_depth)
        return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_int=json_int)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except DuplicateKeyError as exc:
        raise fail(f"duplicate key {exc.args[0]!r}") from None
    except RecursionError:
        raise fail("not valid JSON (nested too deeply)") from None
    except LongIntegerError as exc:
        raise fail(f"a JSON integer has {exc.args[0]} digits (at most {MAX_JSON_DIGITS})") from None


def open_regular(name: str, fail: Callable[[str], ParamError]) -> tuple[int, os.stat_result]:
    """A descriptor of a regular file, opened without blocking and checked with ``fstat`` on the
    open descriptor (so a FIFO cannot block and a symlink to ``/dev/zero`` cannot be read)."""
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail("is a directory, expected a file") from None
    except OSError as exc:
        raise fail(f"cannot open ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise fail(f"cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode) or not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise fail("is a directory, expected a file" if stat.S_ISDIR(info.st_mode)
                   else "is not a regular file (a FIFO, device or socket), expected a file")
    return fd, info


def read_lines(name: str, fail: Callable[[str], ParamError], max_line_bytes: int | None = None) -> Iterator[str]:
    """The lines of a regular file (JSON lines of any total size), one at a time, each strict UTF-8
    and at most ``max_line_bytes`` (default :data:`MAX_FILE_BYTES`); same checks as :func:`read_regular`."""
    cap = MAX_FILE_BYTES if max_line_bytes is None else max_line_bytes
    fd, _ = open_regular(name, fail)
    with os.fdopen(fd, "rb") as fh:
        for number, raw in enumerate(iter(lambda: fh.readline(cap + 1), b""), 1):
            if len(raw) > cap:
                raise fail(f"line {number} is longer than the {cap} bytes a line may have")
            yield _decode(raw, fail).rstrip("\n")


def _read_regular(name: str, fail: Callable[[str], ParamError], max_bytes: int | None = None) -> bytes:
    """Bytes of a regular file of at most :data:`MAX_FILE_BYTES` (FIFOs, devices, directories refused,
    :func:`open_regular`)."""
    fd, info = open_regular(name, fail)
    try:
        cap = MAX_FILE_BYTES if max_bytes is None else max_bytes
        if info.st_size > cap:
            raise fail(f"is {info.st_size} bytes, larger than the {cap} bytes this file may have")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise fail(f"grew beyond {cap} bytes while being read")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise fail(f"cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _read_npz(raw: bytes, fail: Callable[[str], ParamError]) -> dict[str, object]:
    """Members of an ``.npz`` archive: each a ``.npy`` file, header checked before any allocation."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise fail(f"not a valid .npz file ({exc})") from None
    out: dict[str, object] = {}
    with archive:
        for info in members:
            if not info.filename.endswith(".npy"):
                raise fail(f"not a valid .npz file (member {info.filename!r} is not a .npy file)")
            key = info.filename[: -len(".npy")]
            if key in out:
                raise fail(f"duplicate key {key!r}")
            if info.file_size > MAX_FILE_BYTES:
                raise fail(f"member {info.filename!r} unpacks to {info.file_size} bytes (at most {MAX_FILE_BYTES})")
            try:
                with archive.open(info) as member:
                    out[key] = _read_npy(member, key, fail)
            except ParamError:
                raise
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, RuntimeError) as exc:
                raise fail(f"not a valid .npz file (member {info.filename!r}: {exc})") from None
    return out


def _read_npy(member: Any, key: str, fail: Callable[[str], ParamError]) -> object:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(member)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise fail(f"entry {key!r} is not a .npy array ({exc})") from None
    if dtype.hasobject:
        raise fail(f"entry {key!r} is an object array (needs pickle), expected numbers")
    if dtype.kind not in "biufcUS":
        raise fail(f"entry {key!r} has dtype {dtype}, expected numbers")
    count = 1
    for n in shape:
        count *= int(n)
    if count > MAX_ARRAY_ELEMENTS:
        raise fail(f"entry {key!r} declares shape {tuple(shape)} ({count} elements, at most {MAX_ARRAY_ELEMENTS})")
    data = member.read(count * dtype.itemsize + 1)
    if len(data) != count * dtype.itemsize:
        raise fail(f"entry {key!r}: the data does not match the declared shape {tuple(shape)}")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()
    return arr.item() if arr.ndim == 0 else arr


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
