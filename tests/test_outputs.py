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


# ----------------------------------------------------------------------------------------------
# no link anywhere in an output path (issue 33, item 3)
# ----------------------------------------------------------------------------------------------

def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``tmp/victim`` (a folder holding ``keep.txt``) and ``tmp/link -> victim``, ``tmp/real/deep -> ../victim``."""
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("victim")
    (tmp_path / "link").symlink_to("victim")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "deep").symlink_to("../victim")
    return tmp_path


@pytest.mark.parametrize("relative", ["link/x.txt", "link/sub/x.txt", "real/deep/x.txt", "real/deep/a/b/x.txt"])
def test_a_link_in_any_parent_component_is_refused(linked: Path, relative: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _tree(linked)
    for path in (linked / relative, Path(relative)):  # absolute and relative (from the working folder)
        monkeypatch.chdir(linked)
        for call in (lambda: outputs.check_file("--out", path), lambda: outputs.write_text("--out", path, "x"),
                     lambda: outputs.check_folder("--out", path), lambda: outputs.make_folder("--out", path)):
            with pytest.raises(OptionError, match="symbolic link; flowcert never writes through a link") as info:
                call()
            assert "\n" not in str(info.value)
        with pytest.raises(OptionError, match="symbolic link"):
            with outputs.staged_folder("--out", path):
                pass
    assert _tree(linked) == before and (linked / "victim" / "keep.txt").read_text() == "victim"


def test_a_link_made_during_the_write_cannot_redirect_it(tmp_path: Path) -> None:
    """The folder is held open: swapping it for a link after the check changes nothing."""
    (tmp_path / "out").mkdir()
    (tmp_path / "victim").mkdir()
    with outputs.replacing("--out", tmp_path / "out" / "x.txt") as tmp:
        (tmp_path / "out").rename(tmp_path / "moved")
        (tmp_path / "out").symlink_to("victim")
        tmp.write_text("data")
    assert (tmp_path / "moved" / "x.txt").read_text() == "data" and os.listdir(tmp_path / "victim") == []


def test_over_long_name_components_are_refused_in_one_line(tmp_path: Path) -> None:
    long = "a" * 300
    for call in (lambda: outputs.check_file("--out", tmp_path / long / "x.txt"),
                 lambda: outputs.check_folder("--out", tmp_path / long),
                 lambda: outputs.write_text("--out", tmp_path / f"{long}.txt", "x")):
        with pytest.raises(OptionError, match=r"name component of 30[04] bytes \(at most 255\)"):
            call()


# ----------------------------------------------------------------------------------------------
# folders written as a whole (issue 33, item 4)
# ----------------------------------------------------------------------------------------------

def test_a_staged_folder_appears_only_at_the_end(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    with outputs.staged_folder("--out", target) as stage:
        assert stage != target and not (tmp_path / "a").exists() and stage.is_dir()
        outputs.write_text("--out", stage / "f.txt", "one")
        outputs.make_folder("--out", stage / "sub")
        outputs.write_text("--out", stage / "sub" / "g.txt", "two")
    assert _tree(tmp_path) == ["a", "a/b", "a/b/c", "a/b/c/f.txt", "a/b/c/sub", "a/b/c/sub/g.txt"]


def test_a_staged_folder_merges_into_an_existing_one(tmp_path: Path) -> None:
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "mine.txt").write_text("user file")
    (tmp_path / "out" / "f.txt").write_text("old")
    (tmp_path / "out" / "sub" / "h.txt").write_text("old sub")
    with outputs.staged_folder("--out", tmp_path / "out") as stage:
        outputs.write_text("--out", stage / "f.txt", "new")
        outputs.make_folder("--out", stage / "sub")
        outputs.write_text("--out", stage / "sub" / "g.txt", "new sub")
    assert _tree(tmp_path / "out") == ["f.txt", "mine.txt", "sub", "sub/g.txt", "sub/h.txt"]
    assert (tmp_path / "out" / "f.txt").read_text() == "new" and (tmp_path / "out" / "mine.txt").read_text() == "user file"


@pytest.mark.parametrize("exc", [RuntimeError("failed"), KeyboardInterrupt()])
@pytest.mark.parametrize("exists", [False, True])
def test_a_failed_or_interrupted_staged_folder_leaves_nothing(tmp_path: Path, exc: BaseException, exists: bool) -> None:
    if exists:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "mine.txt").write_text("user file")
    before = _tree(tmp_path)
    with pytest.raises(type(exc)):
        with outputs.staged_folder("--out", tmp_path / "out" / "deeper" if not exists else tmp_path / "out") as stage:
            outputs.write_text("--out", stage / "partial.txt", "partial")
            raise exc
    assert _tree(tmp_path) == before


def test_a_write_error_is_an_output_error(tmp_path: Path) -> None:
    """An OS error while the data are written (here: the file system is full) is exit 74's OutputError."""
    from flowcert.errors import OutputError

    with pytest.raises(OutputError, match=r"cannot write --out .*No space left on device"):
        with outputs.replacing("--out", tmp_path / "x.bin"):
            raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []
