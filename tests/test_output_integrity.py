"""Output integrity of the command line, in real processes (issue 44, item 8).

* stdout on a full device (``/dev/full``): exit 74 and one line naming stdout, never exit 0 with a truncated JSON;
* the reader of stdout leaves early (``flowcert ... | head -c 10``), before or after the output passed the pipe's
  buffer: exit 141 and nothing on stderr. ``TextIOWrapper.write`` reports a pipe's short write as written in full,
  so a large output to a reader that left used to exit 0;
* a staging file left by a run killed with SIGKILL is removed by the next run into the same place and is never
  taken for its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
FLOWCERT = [sys.executable, "-m", "flowcert"]
CERT = {"kind": "pd", "claim": "M - 1/2 I is positive definite", "checker": "exact-ldl",
        "data": {"M": [["2", "0"], ["0", "3"]], "margin": "1/2"}}

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


def _many_unbound(tmp_path: Path, lines: int = 2500) -> Path:
    """JSON lines of bare certificates: ``recheck --strict`` names each one, some 300 KB of text."""
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(json.dumps(CERT) for _ in range(lines)) + "\n")
    return path


@needs_dev_full
@pytest.mark.parametrize("argv", [("codegen", "gaussian", "--backend", "numpy"), ("recheck", "{bare}", "--json"),
                                  ("recheck", "{many}", "--strict")])
def test_a_full_device_on_stdout_is_exit_74_with_one_line(tmp_path, argv):
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(CERT))
    many = _many_unbound(tmp_path)
    args = [a.format(bare=bare, many=many) for a in argv]
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*FLOWCERT, *args], cwd=ROOT, env=ENV, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr == "flowcert: error: cannot write stdout (No space left on device)\n"


@pytest.mark.parametrize("read", [0, 10])
def test_a_reader_that_leaves_early_is_exit_141_and_quiet(tmp_path, read):
    """``read`` bytes are read, then the pipe is closed: before any output (0), or after part of an output far
    larger than the pipe's buffer (10, as ``head -c 10``)."""
    proc = subprocess.Popen([*FLOWCERT, "recheck", str(_many_unbound(tmp_path)), "--strict"], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if read:
        assert proc.stdout.read(read).startswith(b"flowcert")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and err == b""


def test_the_whole_output_still_comes_through_a_pipe(tmp_path):
    proc = subprocess.run([*FLOWCERT, "recheck", str(_many_unbound(tmp_path)), "--strict"], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3 and proc.stdout.count("\nUNBOUND ") == 2500 and proc.stdout.endswith("\n")
    assert len(proc.stdout.encode()) > 2**16 and proc.stderr == ""


def test_a_killed_runs_staging_file_is_removed_by_the_next_run_into_the_same_place(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid names no process now (a SIGKILLed run's)
    stale = tmp_path / f".kernels-{dead.pid}-0123456789ab.py"
    stale.write_text("half-written")
    out = tmp_path / "kernels.py"
    proc = subprocess.run([*FLOWCERT, "codegen", "gaussian", "--backend", "numpy", "--out", str(out)], cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["kernels.py"]
    assert "half-written" not in out.read_text() and "def " in out.read_text()
