r"""Compile generated C kernels with the machine's C compiler and load them through ctypes.

Builds are cached on disk by the hash of the source, flags, compiler and (for ``-march=native``)
the CPU's model and feature flags, in a per-user directory (``$FLOWCERT_CACHE`` or
``~/.cache/flowcert-<uid>``) created with mode 0700. A directory or library that is not owned by
the user, is a symlink, or is writable by group or others is never trusted: the build goes to a
fresh private directory instead. Builds are written under unpredictable names and renamed into
place. When no compiler is found, :class:`CompilerUnavailable` is raised so callers can fall back
to the numpy kernel and say so; when the compiler rejects the source, :class:`CompilationFailed`
is raised (a bug, never a skip).

No equations of its own: it compiles what :class:`flowcert.symbolic.codegen.ShapedCPrinter` prints
(for the gaussian system, eq. (7) of the gaussian paper, :math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`),
and lives in ``numeric`` because it runs a compiler and loads code (moved from ``symbolic/cbuild.py``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import sympy as sp

from ..symbolic.codegen import Program, ShapedCPrinter, shapes


class CompilerUnavailable(RuntimeError):
    """No C compiler on this machine: use the numpy backend instead (callers may skip, saying so)."""


class CompilationFailed(RuntimeError):
    """A compiler exists but rejected the generated source: a bug, never a reason to skip."""


def cache_dir() -> Path:
    """The requested cache directory: ``$FLOWCERT_CACHE`` or ``~/.cache/flowcert-<uid>``."""
    default = Path.home() / ".cache" / f"flowcert-{os.getuid()}"
    return Path(os.environ.get("FLOWCERT_CACHE") or default)


def _private(path: Path, *, directory: bool) -> str | None:
    """Why ``path`` may not be trusted (not ours, writable by group/others, wrong type, a symlink), or None."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"cannot stat ({exc.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if directory != stat.S_ISDIR(info.st_mode) or (not directory and not stat.S_ISREG(info.st_mode)):
        return "has the wrong file type"
    if info.st_uid != os.getuid():
        return f"is owned by uid {info.st_uid}, not {os.getuid()}"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


_FALLBACK: list[Path] = []


def _fresh_private_dir(reason: str) -> Path:
    """A fresh 0700 directory for this process, used when the configured cache is not private."""
    if not _FALLBACK:
        warnings.warn(f"flowcert: C build cache {reason}; building in a fresh private directory", stacklevel=3)
        _FALLBACK.append(Path(tempfile.mkdtemp(prefix="flowcert-cc-")))  # mode 0700
    return _FALLBACK[0]


def private_cache_dir() -> Path:
    """The cache directory, created 0700, or a fresh private one when it is not ours alone.

    Every ancestor created here gets mode 0700; an existing directory must be owned by the user,
    not be a symlink, and not be writable by group or others.
    """
    folder = cache_dir()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return _fresh_private_dir(f"{folder} cannot be created ({exc.strerror})")
    problem = _private(folder, directory=True)
    if problem is not None:
        return _fresh_private_dir(f"{folder} {problem}")
    return folder


def _cpu_signature() -> str:
    """What ``-march=native`` depends on: machine, CPU model and feature flags (Linux ``/proc/cpuinfo``)."""
    parts = [platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key = line.split(":", 1)[0].strip()
                if key in ("model name", "flags", "Features", "CPU part", "isa"):
                    parts.append(line.strip())
                if not line.strip():
                    break  # the first processor describes the machine
    except OSError:
        parts.append("no /proc/cpuinfo")
    return "\n".join(parts)


def library_digest(source: str, flags: tuple[str, ...], cc: str) -> str:
    """Cache key: source, flags, compiler path and, for ``-march=native``, the CPU built for."""
    key = "\0".join([source, " ".join(flags), cc])
    if any("native" in f for f in flags):
        key += "\0" + _cpu_signature()
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _shared_library(name: str, source: str, flags: tuple[str, ...]) -> ctypes.CDLL:
    """Compile ``source`` (or reuse the cached build of the same source, flags and CPU) and load it.

    A cached library is loaded only when it is a regular file owned by the user and not writable by
    group or others, inside a directory with the same properties; otherwise it is rebuilt in a
    fresh private directory. Builds go to unpredictable temporary names and are renamed into place.
    """
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None or (os.sep in cc and not os.access(cc, os.X_OK)) or (os.sep not in cc and shutil.which(cc) is None):
        raise CompilerUnavailable("no C compiler found (set CC); falling back to numpy")
    folder = private_cache_dir()
    lib_path = folder / f"{name}_{library_digest(source, flags, cc)}.so"
    if os.path.lexists(lib_path):
        problem = _private(lib_path, directory=False)
        if problem is None:
            return ctypes.CDLL(str(lib_path))
        folder = _fresh_private_dir(f"library {lib_path.name} {problem}")
        lib_path = folder / lib_path.name
        if os.path.lexists(lib_path) and _private(lib_path, directory=False) is None:
            return ctypes.CDLL(str(lib_path))
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=folder) as work:  # 0700, unpredictable name
        src_path = Path(work) / f"{name}.c"
        src_path.write_text(source)
        tmp = Path(work) / f"{name}.so"
        try:
            proc = subprocess.run([cc, *flags, "-o", str(tmp), str(src_path), "-lm"], capture_output=True, text=True)
        except OSError as exc:
            raise CompilerUnavailable(f"cannot run the C compiler {cc!r} ({exc.strerror}); falling back to numpy") from None
        if proc.returncode != 0:
            raise CompilationFailed(f"C compilation of {name} failed: {proc.stderr.strip()[:500]}")
        os.chmod(tmp, 0o700)
        os.replace(src_path, lib_path.with_suffix(".c"))  # the source stays beside the library
        os.replace(tmp, lib_path)
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
