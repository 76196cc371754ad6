"""A staging folder or file left by a run killed with SIGKILL is removed by the next run into the same place, and
never merged as output (issue 44, item 8); one of a live process is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from flowcert.outputs import staged_folder, write_text

KILLED = textwrap.dedent("""
    import os, signal, sys
    from flowcert.outputs import staged_folder
    with staged_folder("--out", sys.argv[1]) as stage:
        (stage / "half.txt").write_text("half-written")
        os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_killed_runs_staging_folder_is_removed_by_the_next_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-c", KILLED, str(out)], capture_output=True)
    assert proc.returncode == -9
    left = [p for p in os.listdir(out) if p.startswith(".flowcert-")]
    assert len(left) == 1 and (out / left[0] / "half.txt").exists()
    with staged_folder("--out", out) as stage:
        (stage / "whole.txt").write_text("ok")
    assert sorted(os.listdir(out)) == ["whole.txt"]


def test_a_live_processes_staging_is_left_alone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    mine = out / f".flowcert-{os.getppid()}-0123456789ab"  # the parent (pytest's runner or a shell) is alive
    mine.mkdir()
    with staged_folder("--out", out) as stage:
        (stage / "whole.txt").write_text("ok")
    assert mine.exists() and (out / "whole.txt").exists()


def test_a_killed_runs_temporary_file_is_removed(tmp_path):
    dead = tmp_path / ".report-999999999-0123456789ab.md"  # no such process
    dead.write_text("half")
    write_text("--out", tmp_path / "report.md", "whole")
    assert not dead.exists() and (tmp_path / "report.md").read_text() == "whole"
