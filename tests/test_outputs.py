"""The one writer (flowcert.outputs): checks before work, never through a link, nothing left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flowcert import outputs
from flowcert.cli import one_line
from flowcert.schema import OptionError, ParamError


def test_write_replaces_a_link_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("victim")
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    with pytest.raises(OptionError, match="symbolic link"):
        outputs.check_file("--out", link)
    # even when the link appears after the check, the rename replaces the link, not its target
    with pytest.raises(OptionError, match="symbolic link"):
        outputs.write_text("--out", link, "new")
    assert victim.read_text() == "victim" and link.is_symlink()


@pytest.mark.parametrize("make,needle", [
    (lambda p: p.mkdir(), "folder"),
    (lambda p: os.mkfifo(p), "FIFO"),
    (lambda p: p.symlink_to(p.parent / "nothing"), "symbolic link"),
])
def test_check_file_refuses_non_files(tmp_path: Path, make, needle: str) -> None:
    target = tmp_path / "x.png"
    make(target)
    with pytest.raises(OptionError, match=needle):
        outputs.check_file("--plot", target, (".png",))


def test_names_and_folders(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="does not exist"):
        outputs.check_file("--out", tmp_path / "missing" / "x.svg")
    with pytest.raises(OptionError, match="256 bytes"):
        outputs.check_file("--out", tmp_path / ("a" * 252 + ".svg"))
    assert outputs.check_file("--out", tmp_path / ("a" * 251 + ".svg"))  # 255 bytes: allowed
    with pytest.raises(OptionError, match="must end in"):
        outputs.check_file("--out", tmp_path / "x.txt", (".svg",))
    (tmp_path / "file").write_text("")
    with pytest.raises(OptionError, match="not a folder"):
        outputs.check_folder("--out", tmp_path / "file" / "sub")
    assert not (tmp_path / "new").exists() and outputs.check_folder("--out", tmp_path / "new" / "sub")
    assert not (tmp_path / "new").exists()  # checked, not created


def test_nothing_left_behind_on_failure(tmp_path: Path) -> None:
    before = set(tmp_path.iterdir())
    with pytest.raises(RuntimeError):
        with outputs.replacing("--out", tmp_path / "x.json") as tmp:
            tmp.write_text("partial")
            raise RuntimeError("the work failed")
    assert set(tmp_path.iterdir()) == before


def test_written_file_has_umask_permissions_and_keeps_existing_ones(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    p = outputs.write_text("--out", tmp_path / "a.txt", "x")
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask and p.read_text() == "x"
    os.chmod(p, 0o600)
    outputs.write_text("--out", p, "y")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_text() == "y"


def test_option_error_is_a_param_error_and_one_line() -> None:
    err = OptionError("--out", "bad\nname")
    assert isinstance(err, ParamError) and str(err) == "--out: bad name"
    assert one_line("a\nb\x1b\u2028") == "a\\nb\\x1b\\u2028"
