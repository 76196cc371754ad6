r"""``model.safetensors`` read lazily and defensively: the header checked on opening (its size bounded by
:data:`MAX_HEADER_BYTES`, every tensor's dtype, shape and byte range inside the
file), each tensor read on access, its bytes counted, BF16 widened exactly (a split of
:mod:`flowcert.pretrained.checkpoint`)."""

from __future__ import annotations

import math
import os
import stat
from typing import Any, Mapping

import numpy as np

from ..errors import ParamError

#: largest safetensors header read (bytes)
MAX_HEADER_BYTES = 64 * 2**20


def bad(message: str) -> ParamError:
    """Bad input as a one-line :class:`~flowcert.errors.ParamError` (exit code 2 in the CLI)."""
    return ParamError(None, message)


#: safetensors dtype -> (numpy dtype of the stored bytes, item size); BF16 is widened on reading.
_ST_DTYPES: dict[str, tuple[str, int]] = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
                                          "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
                                          "U8": ("u1", 1), "BOOL": ("?", 1)}


class SafeTensors(Mapping[str, np.ndarray]):
    """A ``model.safetensors`` file read lazily: header checked on opening, tensors read on access.

    Parameters
    ----------
    path : path
        The file (a regular file; FIFOs, devices and folders are refused).

    Raises
    ------
    ParamError
        A malformed header, a declared tensor whose bytes do not match its dtype and shape, lie
        outside the file, overlap, or exceed ``LIMITS['pretrained:tensor_bytes']``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from ..files import parse_json
        from ..limits import LIMITS

        self.path = os.fspath(path)

        def fail(problem: str) -> ParamError:
            return bad(f"model.safetensors: {problem}")

        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        except OSError as exc:
            raise fail(f"cannot open ({exc.strerror or exc})") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise fail("is not a regular file")
            size = info.st_size
            head = os.pread(fd, 8, 0)
            if len(head) < 8:
                raise fail(f"is {size} bytes, too short for a header")
            n = int.from_bytes(head, "little")
            if n > min(MAX_HEADER_BYTES, size - 8):
                raise fail(f"declares a header of {n} bytes (the file has {size}, at most {MAX_HEADER_BYTES} read)")
            text = os.pread(fd, n, 8)
        except OSError as exc:
            raise fail(f"cannot read ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        try:
            header_text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise fail("the header is not valid UTF-8") from None
        header = parse_json(header_text, fail)
        if not isinstance(header, dict):
            raise fail("the header is not a JSON object")
        data_size, start = size - 8 - n, 8 + n
        cap = int(LIMITS["pretrained:tensor_bytes"])
        self._entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        spans = []
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            if not isinstance(entry, dict) or set(entry) - {"dtype", "shape", "data_offsets"}:
                raise fail(f"tensor {name[:60]!r}: expected an object with dtype, shape, data_offsets")
            dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
            if dtype not in _ST_DTYPES:
                raise fail(f"tensor {name[:60]!r}: unknown dtype {str(dtype)[:20]!r}")
            if (not isinstance(shape, list) or len(shape) > 8
                    or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k < 2**40 for k in shape)):
                raise fail(f"tensor {name[:60]!r}: shape must be a list of at most 8 non-negative integers")
            if (not isinstance(offsets, list) or len(offsets) != 2
                    or not all(isinstance(k, int) and not isinstance(k, bool) for k in offsets)):
                raise fail(f"tensor {name[:60]!r}: data_offsets must be two integers")
            nbytes = math.prod(shape) * _ST_DTYPES[dtype][1]
            b, e = offsets
            if nbytes > cap:
                raise fail(f"tensor {name[:60]!r} declares {nbytes} bytes, more than {cap} "
                           "(flowcert.limits.LIMITS['pretrained:tensor_bytes'])")
            if not 0 <= b <= e <= data_size or e - b != nbytes:
                raise fail(f"tensor {name[:60]!r}: data_offsets [{b}, {e}] do not hold {nbytes} bytes "
                           f"inside the {data_size} bytes of data")
            spans.append((b, e, name))
            self._entries[name] = (dtype, tuple(shape), start + b, nbytes)
        spans.sort()
        for (b0, e0, n0), (b1, _e1, n1) in zip(spans, spans[1:]):
            if b1 < e0:
                raise fail(f"tensors {n0[:40]!r} and {n1[:40]!r} overlap")
        self._size = size

    def declared(self, name: str) -> tuple[tuple[int, ...], str]:
        """Declared shape and safetensors dtype of tensor ``name`` (nothing is read)."""
        dtype, shape, _offset, _nbytes = self._entries[name]
        return shape, dtype

    def __getitem__(self, name: str) -> np.ndarray:
        return self.view(name).copy()

    def view(self, name: str) -> np.ndarray:
        """Tensor ``name`` as a read-only array over the bytes read (no copy; ``[name]`` gives a copy)."""
        dtype, shape, offset, nbytes = self._entries[name]
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size != self._size:
                raise bad("model.safetensors: the file changed while being read")
            data = os.pread(fd, nbytes, offset)
        finally:
            os.close(fd)
        if len(data) != nbytes:
            raise bad(f"model.safetensors: tensor {name[:60]!r}: short read")
        raw = np.frombuffer(data, dtype=_ST_DTYPES[dtype][0])
        if dtype == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.reshape(shape)

    def __iter__(self) -> Any:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
