"""The C build cache (issue 11): private directory, untrusted files never loaded, CPU in the key,
compilation failure distinct from a missing compiler.

A planted library carries a constructor that writes a marker file when it is loaded: the marker
must never appear, and the kernel must still compute :math:`Y=\\max(A,0)` exactly.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from flowcert.numeric import native
from flowcert.symbolic.codegen import ElementwiseMap, lower_expressions

CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler on this machine (the C backend is optional)")

x = sp.Symbol("x", real=True)
A = sp.MatrixSymbol("A", sp.Symbol("n", integer=True, positive=True), sp.Symbol("m", integer=True, positive=True))


def _relu_program(name: str):
    return lower_expressions(name, [("Y", ElementwiseMap(sp.Lambda(x, sp.Max(x, 0)), A))], [A])


FLAGS = ("-O1", "-fPIC", "-shared")


@pytest.fixture(autouse=True)
def _fresh_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_FALLBACK", [])


def _plant(folder: Path, name: str, marker: Path) -> Path:
    """Compile a library that writes ``marker`` when loaded, under the name the cache would use."""
    program = _relu_program(name)
    source = native.ShapedCPrinter().print(program)
    lib = folder / f"{name}_{native.library_digest(source, FLAGS, CC)}.so"
    evil = folder / "evil.c"
    evil.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void hit(void) '
                    f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
                    f"int {name}(void) {{ return 0; }}\n")
    subprocess.run([CC, *FLAGS, "-o", str(lib), str(evil)], check=True, capture_output=True)
    evil.unlink()
    return lib


def _check_kernel(name: str) -> None:
    a = np.array([[-1.5, 0.0, 2.25], [3.0, -0.0, -7.0]])
    (y,) = native.compile_c_shaped(_relu_program(name), flags=FLAGS)(a)
    assert np.array_equal(y[0], np.maximum(a, 0.0))


@needs_cc
def test_planted_library_in_world_writable_cache_is_never_loaded(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, 0o777)
    monkeypatch.setenv("FLOWCERT_CACHE", str(cache))
    marker = tmp_path / "LOADED"
    _plant(cache, "relu_planted", marker)
    with pytest.warns(UserWarning, match="writable by group or others"):
        _check_kernel("relu_planted")
    assert not marker.exists()


@needs_cc
def test_writable_library_in_private_cache_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "mine"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("FLOWCERT_CACHE", str(cache))
    marker = tmp_path / "LOADED"
    lib = _plant(cache, "relu_writable", marker)
    os.chmod(lib, 0o666)
    with pytest.warns(UserWarning, match="writable by group or others"):
        _check_kernel("relu_writable")
    assert not marker.exists()


@needs_cc
def test_symlinked_library_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "mine"
    cache.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("FLOWCERT_CACHE", str(cache))
    marker = tmp_path / "LOADED"
    real = _plant(elsewhere, "relu_link", marker)
    (cache / real.name).symlink_to(real)
    with pytest.warns(UserWarning, match="symbolic link"):
        _check_kernel("relu_link")
    assert not marker.exists()


@needs_cc
def test_cache_is_created_private_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "new" / "cache"
    monkeypatch.setenv("FLOWCERT_CACHE", str(cache))
    _check_kernel("relu_private")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    libs = list(cache.glob("relu_private_*.so"))
    assert len(libs) == 1 and not stat.S_IMODE(libs[0].stat().st_mode) & 0o022
    assert [p.name for p in cache.iterdir() if p.suffix not in (".so", ".c")] == []  # no temporaries left
    before = libs[0].stat().st_mtime_ns
    _check_kernel("relu_private")
    assert libs[0].stat().st_mtime_ns == before  # reused, not rebuilt


def test_native_builds_are_keyed_by_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    native_flags = ("-O3", "-march=native", "-fPIC", "-shared")
    monkeypatch.setattr(native, "_cpu_signature", lambda: "cpu one")
    one = native.library_digest("int f;", native_flags, "cc"), native.library_digest("int f;", FLAGS, "cc")
    monkeypatch.setattr(native, "_cpu_signature", lambda: "cpu two")
    two = native.library_digest("int f;", native_flags, "cc"), native.library_digest("int f;", FLAGS, "cc")
    assert one[0] != two[0] and one[1] == two[1]
    assert native.library_digest("int f;", FLAGS, "cc") != native.library_digest("int g;", FLAGS, "cc")


def test_no_compiler_is_compiler_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCERT_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(native.CompilerUnavailable):
        native.compile_c_shaped(_relu_program("relu_nocc"), flags=FLAGS)


@needs_cc
def test_invalid_c_is_compilation_failed_not_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCERT_CACHE", str(tmp_path / "c"))
    real_print = native.ShapedCPrinter.print
    monkeypatch.setattr(native.ShapedCPrinter, "print", lambda self, program: real_print(self, program) + "\n}}} oops")
    with pytest.raises(native.CompilationFailed) as info:
        native.compile_c_shaped(_relu_program("relu_broken"), flags=FLAGS)
    assert not isinstance(info.value, native.CompilerUnavailable)
