"""The one limits table (flowcert.limits.LIMITS) and the one reader's bounds (flowcert.files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flowcert import files, limits
from flowcert.schema import OptionError, ParamError


def test_every_limit_names_itself() -> None:
    for name, value in limits.LIMITS.items():
        assert limits.limit_problem(name, value) is None
        over = value * 2 if isinstance(value, float) else value + 1
        problem = limits.limit_problem(name, over)
        assert problem is not None and f"LIMITS[{name!r}]" in problem and "\n" not in problem


def test_check_limit_options_and_keys() -> None:
    with pytest.raises(OptionError, match=r"^--cap: "):
        limits.check_limit("equilibria:cap", limits.LIMITS["equilibria:cap"] + 1, "--cap")
    with pytest.raises(ParamError, match="key 'n'"):
        limits.check_limit("attention:n", 10**400, "n")
    assert "400 digits" in str(limits.limit_problem("attention:n", 10**399))


def test_max_jobs_is_bounded_by_files_and_cores() -> None:
    assert limits.max_jobs(1) == 1
    assert 1 <= limits.max_jobs(10**9) <= limits.LIMITS["sweep:jobs_per_core"] * 4096


def _fail(problem: str) -> ParamError:
    return ParamError(None, problem, file="f")


@pytest.mark.parametrize("depth", [files.MAX_JSON_DEPTH + 1, 900, sys.getrecursionlimit() + 10])
def test_deep_nesting_is_refused_before_parsing(depth: int) -> None:
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        with pytest.raises(ParamError, match=f"nested {depth} levels"):
            files.check_json_depth(text, _fail)


def test_depth_scan_ignores_brackets_in_strings() -> None:
    doc = {"a": "[[[[{{{{\\\"[[[[" * 20, "b": [[[1]]], "c": "x\\", "d": "\\\\[["}
    files.check_json_depth(json.dumps(doc), _fail, 4)  # the object and three brackets
    with pytest.raises(ParamError, match="nested 4 levels"):
        files.check_json_depth(json.dumps(doc), _fail, 3)


def test_load_json_reader(tmp_path: Path) -> None:
    p = tmp_path / "c.json"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ParamError, match="UTF-8"):
        files.load_json(p)
    p.write_text('{"a": ' + "9" * 5000 + "}")
    with pytest.raises(ParamError, match="5000 digits"):
        files.load_json(p)
    p.write_text("[1, 2]")
    assert files.load_json(p) == [1, 2]
    with pytest.raises(ParamError, match="larger than the 3 bytes"):
        files.load_json(p, max_bytes=3)


def test_equilibria_listing_size_is_bounded_before_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cap * n * d over its limit is refused (exit 2, one line) before any enumeration; n alone is not."""
    from flowcert import cli

    p = tmp_path / "p.json"
    p.write_text(json.dumps({"V": [[1, 0.2, 0], [0.2, 0.1, 0], [0, 0, -0.5]], "Q": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                             "K": [[3, 0.5, 0], [0, 0.5, 0], [0.3, 0, -1]], "n": 100}))
    cap = limits.LIMITS["equilibria:cap*n*d"] // (100 * 3) + 1
    assert cap <= limits.LIMITS["equilibria:cap"]
    assert cli.main(["equilibria", "attention", "--params", str(p), "--cap", str(cap)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--cap" in err and "equilibria:cap*n*d" in err
