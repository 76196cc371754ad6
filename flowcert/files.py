r"""File input shared by every system: JSON or ``.npz`` parameter files, read into a raw mapping.

JSON: an object at the top level, no duplicate keys, ``NaN``/``Infinity`` read (and rejected by
the schema later). ``.npz``: one array per key, 0-d arrays read as scalars, no pickles. A file
is a map :math:`\text{key}\mapsto\text{value}` that a :class:`~flowcert.schema.Schema` then
validates; every problem is a :class:`~flowcert.schema.ParamError` naming the file.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .schema import ParamError


# ---------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def load_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read a parameter file into a raw mapping (not yet validated).

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
    name = os.fspath(path)
    p = Path(name)
    suffix = p.suffix.lower()

    def fail(problem: str) -> ParamError:
        return ParamError(None, problem, file=name)

    if suffix not in (".json", ".npz"):
        raise fail("expected a .json or .npz file")
    if not p.exists():
        raise fail("no such file")
    if p.is_dir():
        raise fail("is a directory, expected a file")
    if suffix == ".json":
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise fail("not valid UTF-8 text") from None
        except OSError as exc:
            raise fail(f"cannot read ({exc.strerror or exc})") from None
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise fail(
                f"not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
            ) from None
        except _DuplicateKey as exc:
            raise fail(f"duplicate key {exc.args[0]!r}") from None
        except RecursionError:
            raise fail("not valid JSON (nested too deeply)") from None
        if not isinstance(data, dict):
            raise fail(f"top level must be an object, got {_json_kind(data)}")
        return data
    try:
        loaded = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise fail(f"not a valid .npz file ({exc})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise fail("not a valid .npz file (it holds a single .npy array, expected an archive)")
    out: dict[str, object] = {}
    with loaded:
        for key in loaded.files:
            try:
                arr = loaded[key]
            except ValueError:
                raise fail(
                    f"entry {key!r} is an object array (needs pickle), expected numbers"
                ) from None
            except (OSError, EOFError, zipfile.BadZipFile) as exc:
                raise fail(f"not a valid .npz file ({exc})") from None
            out[key] = arr.item() if arr.ndim == 0 else arr
    return out


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
