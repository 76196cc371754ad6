"""Set-up of the executed documentation pages (imported by a hidden first cell of each page).

Moves the kernel to the repository root, so that the pages name files as a researcher in a
checkout would (``tests/data/...``), and gives :func:`shell`, which runs one ``flowcert`` command
line with this environment's executable and prints it with its output and exit code.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.chdir(ROOT)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

try:  # one BLAS / torch thread: the build runs several kernels at once on small machines
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def shell(command: str, max_lines: int | None = 40) -> None:
    """Run ``command`` (``flowcert ...``), print ``$ command``, its output (at most ``max_lines``
    lines) and its exit code."""
    args = shlex.split(command)
    exe = Path(sys.executable).with_name(args[0])
    run = subprocess.run([str(exe), *args[1:]], capture_output=True, text=True, cwd=os.getcwd())
    lines = (run.stdout + run.stderr).splitlines()
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
    print("$ " + command)
    print("\n".join(lines))
    print(f"[exit code {run.returncode}]")
    return None
