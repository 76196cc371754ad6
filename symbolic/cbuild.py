"""Compile generated C kernels with the machine's C compiler and load them through ctypes.

Builds are cached on disk by the hash of the source (``$FLOWCERT_CACHE`` or
``~/.cache/flowcert``). When no compiler is found, :class:`CompilerUnavailable` is raised so
callers can fall back to the numpy kernel and say so.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import numpy as np

from .codegen import CPrinter, Program


class CompilerUnavailable(RuntimeError):
    """No working C compiler: use the numpy backend instead."""


def cache_dir() -> Path:
    return Path(os.environ.get("FLOWCERT_CACHE", Path.home() / ".cache" / "flowcert"))


def compile_c(program: Program, flags: tuple[str, ...] = ("-O3", "-march=native", "-fPIC", "-shared")) -> Callable[..., tuple[np.ndarray, ...]]:
    """Compile (or load from cache) and return ``f(*inputs) -> outputs`` over float64 arrays.

    Inputs take the numpy kernel's shapes: ``(..., d, d)`` matrices and ``(..., d)`` vectors with
    one optional leading batch axis (inputs without it are broadcast).
    """
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise CompilerUnavailable("no C compiler found (set CC); falling back to numpy")
    source = CPrinter().print(program)
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:20]
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    lib_path = folder / f"{program.name}_{digest}.so"
    if not lib_path.exists():
        src_path = folder / f"{program.name}_{digest}.c"
        src_path.write_text(source)
        tmp = lib_path.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run([cc, *flags, "-o", str(tmp), str(src_path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompilerUnavailable(f"C compilation failed: {proc.stderr.strip()[:500]}")
        os.replace(tmp, lib_path)
    lib = ctypes.CDLL(str(lib_path))
    fn = getattr(lib, program.name)
    fn.restype = ctypes.c_int
    is_vec = [s.shape[1] == 1 for s in program.inputs]
    out_vec = program.output_is_vector

    def kernel(*args: np.ndarray) -> tuple[np.ndarray, ...]:
        arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in args]
        d = arrays[0].shape[-1]
        batch = max((a.shape[0] if a.ndim == (1 if v else 2) + 1 else 1) for a, v in zip(arrays, is_vec))
        call: list[object] = [ctypes.c_long(batch), ctypes.c_long(d)]
        for a, v in zip(arrays, is_vec):
            batched = a.ndim == (1 if v else 2) + 1
            call += [a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), ctypes.c_long((d if v else d * d) if batched else 0)]
        outs = [np.empty((batch, d) if v else (batch, d, d)) for v in out_vec]
        call += [o.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) for o in outs]
        if fn(*call) != 0:
            raise MemoryError("C kernel could not allocate its scratch buffer")
        return tuple(outs)

    kernel.source = source  # type: ignore[attr-defined]
    return kernel
