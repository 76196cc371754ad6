r"""Compile generated C kernels with the machine's C compiler and load them through ctypes.

Builds are cached on disk by the hash of the source (``$FLOWCERT_CACHE`` or
``~/.cache/flowcert``). When no compiler is found, :class:`CompilerUnavailable` is raised so
callers can fall back to the numpy kernel and say so.

No equations of its own: it compiles what :class:`flowcert.symbolic.codegen.ShapedCPrinter` prints
(for the gaussian system, eq. (7) of the gaussian paper, :math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`),
and lives in ``numeric`` because it runs a compiler and loads code (moved from ``symbolic/cbuild.py``).
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
import sympy as sp

from ..symbolic.codegen import Program, ShapedCPrinter, shapes


class CompilerUnavailable(RuntimeError):
    """No working C compiler: use the numpy backend instead."""


def cache_dir() -> Path:
    return Path(os.environ.get("FLOWCERT_CACHE", Path.home() / ".cache" / "flowcert"))


def _shared_library(name: str, source: str, flags: tuple[str, ...]) -> ctypes.CDLL:
    """Compile ``source`` (or reuse the cached build of the same source and flags) and load it."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise CompilerUnavailable("no C compiler found (set CC); falling back to numpy")
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:20]
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    lib_path = folder / f"{name}_{digest}.so"
    if not lib_path.exists():
        src_path = folder / f"{name}_{digest}.{os.getpid()}.c"  # per process: builds may race
        src_path.write_text(source)
        tmp = lib_path.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run([cc, *flags, "-o", str(tmp), str(src_path), "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompilerUnavailable(f"C compilation failed: {proc.stderr.strip()[:500]}")
        os.replace(tmp, lib_path)
        os.replace(src_path, lib_path.with_suffix(".c"))  # the source stays beside the library
    return ctypes.CDLL(str(lib_path))


def compile_c_shaped(
    program: Program, flags: tuple[str, ...] = ("-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared")
) -> Callable[..., tuple[np.ndarray, ...]]:
    """Compile a program of :func:`~flowcert.symbolic.codegen.lower_expressions` (any symbolic
    shapes, elementwise maps, softmax) and return ``f(*inputs) -> outputs`` over float64 arrays.

    Inputs take the numpy kernel's shapes, ``(..., r, c)`` matrices and ``(..., r)`` vectors, with
    one optional leading batch axis; dimensions are read off the inputs and must agree. Outputs
    always carry the batch axis (size 1 when no input is batched).
    """
    printer = ShapedCPrinter()
    source = printer.print(program)
    fn = getattr(_shared_library(program.name, source, flags), program.name)
    fn.restype = ctypes.c_int
    dims = printer.dimensions(program)
    fn.argtypes = [ctypes.c_long] * (1 + len(dims)) + [ctypes.c_void_p, ctypes.c_long] * len(program.inputs) \
        + [ctypes.c_void_p] * len(program.outputs)
    # plain-Python plan: each axis is a dimension index or a fixed size
    axis = lambda size: dims.index(size) if isinstance(size, sp.Symbol) else -int(size) - 1  # noqa: E731
    cores = [tuple(axis(x) for x in (s.shape[:1] if s.shape[1] == 1 else s.shape)) for s in program.inputs]
    outs = [tuple(axis(x) for x in (shape[:1] if v else shape))
            for shape, v in zip((shapes(program)[o] for o in program.outputs), program.output_is_vector)]
    names = [s.name for s in program.inputs]

    def kernel(*args: np.ndarray) -> tuple[np.ndarray, ...]:
        if len(args) != len(names):
            raise TypeError(f"{program.name} takes {len(names)} arrays, got {len(args)}")
        bound = [-1] * len(dims)
        batch, arrays, call = 1, [], []
        for name, a, core in zip(names, args, cores):
            a = np.ascontiguousarray(a, dtype=np.float64)
            arrays.append(a)  # keeps the buffers alive during the call
            batched = a.ndim == len(core) + 1
            if not batched and a.ndim != len(core):
                raise ValueError(f"{name}: expected {len(core)} or {len(core) + 1} axes, got shape {a.shape}")
            for k, got in zip(core, a.shape[batched:]):
                want = bound[k] if k >= 0 else -k - 1
                if k >= 0 and want < 0:
                    bound[k] = want = got
                if want != got:
                    raise ValueError(f"{name}: axis of size {got} where {dims[k] if k >= 0 else 'it'} is {want}")
            stride = 0
            if batched and a.shape[0] != 1:
                if batch not in (1, a.shape[0]):
                    raise ValueError(f"{name}: batch {a.shape[0]} against {batch}")
                batch, stride = a.shape[0], a[0].size
            call += [a.ctypes.data, stride]
        results = [np.empty((batch,) + tuple(bound[k] if k >= 0 else -k - 1 for k in out)) for out in outs]
        status = fn(batch, *bound, *call, *(o.ctypes.data for o in results))
        if status != 0:
            raise MemoryError("C kernel could not allocate its scratch buffer")
        return tuple(results)

    kernel.source = source  # type: ignore[attr-defined]
    return kernel


compile_c = compile_c_shaped  # one C backend for every program (square ``d x d`` ones included)
