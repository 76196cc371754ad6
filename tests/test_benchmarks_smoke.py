"""Every script in benchmarks/ runs in its smoke mode (smallest size, one repetition) and prints one valid
JSON document (issue 36, item 6): a benchmark that no longer runs (attention_kernels.py called a cache
that had moved) fails here, not months later. Seconds each; nothing asserts on time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


def test_every_benchmark_is_listed() -> None:
    assert SCRIPTS and "attention_kernels.py" in SCRIPTS and "kpflow_ops.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke_prints_json(script: str, tmp_path: Path) -> None:
    text = (ROOT / "benchmarks" / script).read_text()
    assert "--smoke" in text, f"{script} has no --smoke mode"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "FLOWCERT_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--smoke"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict) and doc
    assert "Traceback" not in proc.stderr
