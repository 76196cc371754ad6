"""Hostile input (issue 11): expression grammar and its bounds, continuity on the evaluator's branch,
file reading, output paths, size limits.

Expected verdicts are mathematics, not previous outputs: :math:`(1-t)^{1/3}` (principal branch)
is not real for :math:`t>1`; :math:`\\sqrt{t-c}` is real on :math:`[0,T]` iff :math:`c\\le0`;
:math:`1/(t-c)` is continuous on :math:`[0,T]` iff :math:`c\\notin[0,T]`; a polynomial is continuous
everywhere. Every bad input must be a :class:`ParamError` (exit code 2 with one line on the CLI).
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert import cli, files, limits
from flowcert.certificates.continuity import certify_continuous, point_enclosure
from flowcert.expressions import as_time_expression, expression_text, t
from flowcert.errors import ParamError
from flowcert.gaussian.params import load_gaussian, parse_gaussian

ROOT = Path(__file__).resolve().parents[1]
STABLE = ROOT / "tests" / "data" / "gaussian_stable_2d.json"
RAW = json.loads(STABLE.read_text())


def _with_A00(tmp_path: Path, entry: object, **extra: object) -> Path:
    raw = json.loads(json.dumps(RAW))
    raw["A"][0][0] = entry
    raw.update(extra)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(raw))
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------------------------
# expression grammar
# ----------------------------------------------------------------------------------------------

HOSTILE = [
    "exp(exp(exp(100)))", "sin(Float(1, 10**6))", "exp(exp(50))", "9**9**9**9", "2^2^2^2^2^2",
    "__import__('os').system('id')", "(lambda: 1)()", "t.real", "[t]", "t if t else 1", "1j", "'a'",
    "Symbol('x')", "Integer(10)**10**10", "sympify('t')", "eval('1')", "x", "sin(t, t)", "sin()",
    "sin(x=t)", "exp", "1e400", "10**400*10**-400", "2**-5000", "sqrt(-1)", "log(0)", "1/0",
    "(t+2)**(10**300)", "exp(exp(exp(100*t+100)))", "9" * 500, "t" + "+t" * 1000, "-" * 100 + "t", "sin(" * 60 + "t" + ")" * 60,
    "t\n+1", "Abs(t)[0]", "t @ t", "t % 2", "t // 2", "-~t", "t < 1", "f(t)",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expression_is_one_param_error(text: str) -> None:
    with pytest.raises(ParamError) as info:
        as_time_expression(text, "A", (0, 0))
    message = str(info.value)
    assert "\n" not in message and "key 'A'" in message


@pytest.mark.parametrize("text", ["exp(exp(exp(100)))", "sin(Float(1, 10**6))", "exp(exp(50))"])
def test_issue_inputs_exit_2_on_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    code, out, err = _cli(capsys, "verify", "gaussian", "--params", str(_with_A00(tmp_path, text)))
    assert code == 2 and out == "" and err.count("\n") == 1 and "key 'A'" in err


def test_the_parser_never_calls_eval_or_sympify(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/sympify called on user text")

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(sp, "sympify", boom)
    monkeypatch.setattr("sympy.parsing.sympy_parser.parse_expr", boom)
    e = as_time_expression("sin(t)^2 + 3*t/2 - exp(-t)*cbrt(t+1)", "A")
    assert sp.simplify(e - (sp.sin(t) ** 2 + sp.Rational(3, 2) * t - sp.exp(-t) * sp.cbrt(t + 1))) == 0


@pytest.mark.parametrize("text, expected", [
    ("t^2 + 1", t**2 + 1), ("2^3^2", sp.Integer(512)), ("-t**2", -(t**2)), ("abs(t) + ln(E)", sp.Abs(t) + 1),
    ("atan2(1, 1)", sp.pi / 4), ("3/2*t", sp.Rational(3, 2) * t), ("0.1*t", sp.Float(0.1) * t),
    ("sqrt(t) + cbrt(t)", sp.sqrt(t) + sp.cbrt(t)),  # real at t = 0: the base is exactly 0
])
def test_grammar_reads_the_usual_syntax(text: str, expected: sp.Expr) -> None:
    got = as_time_expression(text, "A")
    assert sp.simplify(got - expected) == 0
    assert as_time_expression(expression_text(got), "A") == got


@settings(max_examples=40, deadline=None)
@given(st.integers(-30, 30), st.integers(1, 30), st.floats(-1e3, 1e3, allow_nan=False))
def test_value_at_zero_is_enclosed(p: int, q: int, c: float) -> None:
    """The bounded evaluator encloses exp(p/q) + c (a closed form) at t = 0."""
    e = as_time_expression(f"exp({p}/{q} + t) + {c!r}", "A")
    lo, hi = point_enclosure(e, t, 0)
    import mpmath

    with mpmath.workdps(60):  # the exact value, to 60 digits; the enclosure is rigorous
        want = mpmath.exp(mpmath.mpf(p) / q) + mpmath.mpf(c)
        assert lo <= want <= hi
        assert hi - lo <= 1e-20 * (abs(want) + math.exp(p / q))  # and tight (80-bit working precision)


# ----------------------------------------------------------------------------------------------
# continuity on the evaluator's branch
# ----------------------------------------------------------------------------------------------

def test_cbrt_of_a_negative_value_is_not_real_and_never_holds(tmp_path: Path) -> None:
    from flowcert.gaussian import catalogue

    p = load_gaussian(_with_A00(tmp_path, "cbrt(1-t)-2", t_end=5))
    assert catalogue._continuity(p).status == "fails"
    # the evaluator agrees: the coefficient is not real at t = 2
    p.at(0.5)
    with pytest.raises(ParamError):
        p.at(2.0)
    p_short = load_gaussian(_with_A00(tmp_path, "cbrt(1-t)-2", t_end=0.5))
    assert catalogue._continuity(p_short).status == "holds"


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.5, 20.0))
def test_sqrt_is_real_exactly_when_its_argument_is_nonnegative(frac: float, T: float) -> None:
    c = frac * T  # inside (0, T): sqrt(t - c) is not real on [0, c)
    assert certify_continuous(sp.sqrt(t - sp.Float(c)), t, T).status != "holds"
    assert certify_continuous(sp.sqrt(t + sp.Float(c)), t, T).status == "holds"


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.5, 20.0))
def test_a_pole_inside_is_never_certified(frac: float, T: float) -> None:
    c = frac * T
    assert certify_continuous(1 / (t - sp.Float(c)), t, T).status != "holds"
    assert certify_continuous(1 / (t - sp.Float(T + 1 + c)), t, T).status == "holds"
    assert certify_continuous(sp.tan(t), t, math.pi / 2 + frac).status != "holds"


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=6), st.floats(0.1, 50.0))
def test_polynomials_and_smooth_compositions_hold(coeffs: list[int], T: float) -> None:
    poly = sum(c * t**k for k, c in enumerate(coeffs))
    assert certify_continuous(sp.sin(poly) * sp.exp(-t) + sp.Abs(poly), t, T).status == "holds"


@pytest.mark.parametrize("expr, T, status", [
    (sp.asin(t / 2), 2.0, "holds"), (sp.asin(t / 2), 3.0, "fails"), (sp.log(t + 1), 5.0, "holds"),
    (sp.log(t - 1), 5.0, "fails"), (sp.acosh(t + 1), 1.0, "holds"), (sp.atanh(t), 2.0, "fails"),
    ((t - 3) ** sp.Rational(1, 2), 2.0, "fails"), ((t + 1) ** sp.Float(0.5), 2.0, "holds"),
    # one part in 2^70 outside [-1, 1] everywhere: the endpoints must be read exactly, not rounded to 53 bits
    (sp.asin(1 + (t + 1) / sp.Integer(2) ** 70), 1.0, "fails"), (sp.asin(1 - (t + 1) / sp.Integer(2) ** 70), 1.0, "holds"),
])
def test_domains_of_the_elementary_functions(expr: sp.Expr, T: float, status: str) -> None:
    assert certify_continuous(expr, t, T).status == status


# ----------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------

def _npz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr)
    return buf.getvalue()


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder.json"
    folder.mkdir()
    good = {k: _npy_bytes(np.asarray(v, dtype=float)) for k, v in RAW.items()}
    huge_header = io.BytesIO()
    np.lib.format.write_array_header_1_0(huge_header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    bigint = tmp_path / "bigint.json"
    bigint.write_text(STABLE.read_text().replace('"t_end": 20', '"t_end": ' + "9" * 5000))
    return {
        "fifo": fifo, "dev-zero": zero, "folder": folder, "bigint": bigint,
        "not-npy": _npz(tmp_path / "notnpy.npz", {**good, "A.npy": b"not a npy file"}),
        "not-npy-name": _npz(tmp_path / "notname.npz", {**good, "A.txt": b"[[1]]"}),
        "huge-shape": _npz(tmp_path / "huge.npz", {**good, "A.npy": huge_header.getvalue()}),
        "pickle": _npz(tmp_path / "pickle.npz", {**good, "A.npy": _npy_bytes(np.array([object()], dtype=object))}),
        "truncated": _npz(tmp_path / "trunc.npz", {**good, "A.npy": _npy_bytes(np.zeros((2, 2)))[:-8]}),
    }


def test_bad_files_are_one_param_error_each(tmp_path: Path) -> None:
    for name, path in _bad_files(tmp_path).items():
        with pytest.raises(ParamError) as info:
            load_gaussian(path)
        assert "\n" not in str(info.value), name


def test_file_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 64)
    with pytest.raises(ParamError, match="larger than"):
        load_gaussian(STABLE)


def test_valid_npz_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "ok.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in RAW.items()})
    p = load_gaussian(path)
    assert np.array_equal(p.A, np.asarray(RAW["A"])) and p.t_end == RAW["t_end"]


def test_fifo_exits_2_on_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "verify", "gaussian", "--params", str(_bad_files(tmp_path)["fifo"]))
    assert code == 2 and err.count("\n") == 1


# ----------------------------------------------------------------------------------------------
# output paths
# ----------------------------------------------------------------------------------------------

def test_output_problems_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    cases = [
        ("codegen", "gaussian", "--backend", "numpy", "--out", str(tmp_path / "missing" / "x.py")),
        ("codegen", "gaussian", "--backend", "numpy", "--out", str(tmp_path / "adir")),
        ("report", "--out", str(tmp_path / "afile")),
        ("report", "--out", str(tmp_path / "afile" / "sub")),
        ("simulate", "gaussian", "--params", str(STABLE), "--plot", str(tmp_path / "missing" / "x.png")),
        ("simulate", "gaussian", "--params", str(STABLE), "--plot", str(tmp_path / "x.txt")),
        ("simulate", "gaussian", "--params", str(STABLE), "--plot", str(tmp_path / "adir")),
    ]
    for argv in cases:
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and err.startswith("flowcert: error: --"), argv
    assert sorted(os.listdir(tmp_path)) == ["adir", "afile"] and os.listdir(tmp_path / "adir") == []


def test_the_path_written_is_the_path_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "moments.png"
    code, out, _ = _cli(capsys, "simulate", "gaussian", "--params", str(STABLE), "--plot", str(plot), "--json")
    assert code == 0 and json.loads(out)["simulation"]["plot"] == str(plot)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and os.listdir(tmp_path) == ["moments.png"]
    target = tmp_path / "k.py"
    code, out, _ = _cli(capsys, "codegen", "gaussian", "--backend", "numpy", "--out", str(target))
    assert code == 0 and out == f"wrote {target}\n" and target.read_text().startswith("import numpy")


# ----------------------------------------------------------------------------------------------
# sizes
# ----------------------------------------------------------------------------------------------

def test_stages_above_their_limit_are_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from flowcert import gaussian

    for stage in ("gaussian:lemma-3.1", "gaussian:thm-3.3", "gaussian:table-1"):
        monkeypatch.setitem(limits.STAGE_MAX_D, stage, 1)
    doc = gaussian.catalogue.verify(parse_gaussian(RAW), simulate=True)  # the cross-checks are asked for
    by_id = {th["id"]: th for th in doc["theorems"]}
    for stage in ("gaussian:lemma-3.1", "gaussian:thm-3.3"):
        # the limit bounds the cross-check only: the hypotheses (Sigma0 >= 0, ...) are still decided
        assert all(h["status"] != "unknown" for h in by_id[stage]["hypotheses"])
        check = by_id[stage]["cross_check"]
        assert check["status"] == "skipped" and stage in check["details"]["reason"]
        assert "d = 2 exceeds 1" in check["details"]["reason"]
    assert "gaussian:table-1" in doc["regime"]["reason"] and doc["regime"]["Sigma"] == "unknown"
    for tid in ("gaussian:thm-4.1", "gaussian:thm-4.11.2"):  # Table 1 ids are listed, undecided, with the reason
        (hyp,) = by_id[tid]["hypotheses"]
        assert hyp["status"] == "unknown" and "gaussian:table-1" in hyp["detail"] and by_id[tid]["applies"] is None
    assert by_id["gaussian:prop-2.1"]["applies"] is not None  # the cheap stages still ran


def test_commands_refuse_above_their_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(limits.COMMAND_MAX_D, "verify", 1)
    monkeypatch.setitem(limits.COMMAND_MAX_D, "simulate", 1)
    for command in ("verify", "simulate"):
        code, out, err = _cli(capsys, command, "gaussian", "--params", str(STABLE))
        assert code == 2 and "d = 2 exceeds 1" in err and err.count("\n") == 1


def test_the_time_budget_keeps_a_callers_timer() -> None:
    """The parser's SIGALRM budget re-arms an outer interval timer with its remaining time."""
    import signal

    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        as_time_expression("sin(t) + exp(-t)", "A")
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < remaining <= 30.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_grammar_caps_are_exact() -> None:
    """Depth and node caps at their boundary: MAX_DEPTH nested operators pass, one more does not."""
    from flowcert import expressions as ex

    for wrap in (lambda s: f"-{s}", lambda s: f"sin({s})", lambda s: f"({s} + 1)"):
        text = "t"
        for _ in range(ex.MAX_DEPTH):
            text = wrap(text)
        as_time_expression(text, "A")
        with pytest.raises(ParamError, match="nested deeper"):
            as_time_expression(wrap(text), "A")
    groups = "*".join(["(t+t+t+t+t)"] * 18)  # 269 syntax nodes, depth 23: within both caps
    assert sum(1 for _ in __import__("ast").walk(__import__("ast").parse(groups, mode="eval"))) < ex.MAX_NODES
    as_time_expression(groups, "A")


# ----------------------------------------------------------------------------------------------
# no link anywhere in an output path; outputs and signals (issue 33, items 3 and 4)
# ----------------------------------------------------------------------------------------------

def _linked(tmp_path: Path) -> Path:
    (tmp_path / "victim").mkdir()
    (tmp_path / "link").symlink_to("victim")
    return tmp_path / "link"


@pytest.mark.parametrize("argv", [
    ("codegen", "gaussian", "--backend", "numpy", "--out", "{link}/k.py"),
    ("codegen", "gaussian", "--backend", "numpy", "--out", "{link}/sub/k.py"),
    ("simulate", "gaussian", "--params", str(STABLE), "--plot", "{link}/x.png"),
    ("report", "--out", "{link}/report"),
    ("report", "--out", "{link}"),
    ("graph", "--paper", "gaussian", "--out", "{link}/g.svg"),
    ("reach", "gaussian", "--params", str(STABLE), "--target", str(STABLE), "--T", "1", "--out", "{link}/c.npz"),
])
def test_no_command_writes_through_a_link_in_a_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      argv: tuple[str, ...]) -> None:
    link = _linked(tmp_path)
    code, out, err = _cli(capsys, *(a.format(link=link) for a in argv))
    assert code == 2 and err.count("\n") == 1 and "symbolic link" in err and out == "", err
    assert os.listdir(tmp_path / "victim") == [] and sorted(os.listdir(tmp_path)) == ["link", "victim"]


class _Failing(io.StringIO):
    """A stdout whose writes fail like a full device, a closed one, or a pipe whose reader left."""

    def __init__(self, error: OSError | ValueError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


@pytest.mark.parametrize("error, code", [(OSError(28, "No space left on device"), 74), (OSError(5, "Input/output error"), 74),
                                         (ValueError("I/O operation on closed file."), 74), (BrokenPipeError(32, "Broken pipe"), 141)])
def test_a_failing_stdout_is_one_line_and_an_io_exit_code(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                          error: Exception, code: int) -> None:
    capsys.readouterr()
    monkeypatch.setattr("sys.stdout", _Failing(error))
    assert cli.main(["codegen", "gaussian", "--backend", "numpy"]) == code
    err = capsys.readouterr().err
    if code == 141:
        assert err == ""  # a broken pipe is quiet, as Unix tools
    else:
        assert err.count("\n") == 1 and err.startswith("flowcert: error: cannot write stdout (") and "internal" not in err


def test_a_closed_stdout_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdout", None)  # what Python gives a process started with fd 1 closed
    assert cli.main(["codegen", "gaussian", "--backend", "numpy"]) == 74
    assert capsys.readouterr().err == "flowcert: error: cannot write stdout (it is closed)\n"


@pytest.mark.parametrize("argv", [
    ("verify", "gaussian", "--params", "{long}.json"), ("verify", "gaussian", "--params", "{long}/x.json"),
    ("pretrained", "heads", "--model", "{long}"), ("report", "--out", "{long}"), ("codegen", "gaussian", "--backend", "numpy",
                                                                                    "--out", "{long}.py"),
    ("recheck", "{long}.json"), ("kpflow", "analyze", "--params", "{long}.json"),
])
def test_an_over_long_file_name_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    long = str(tmp_path / ("a" * 300))
    code, out, err = _cli(capsys, *(a.format(long=long) for a in argv))
    assert code == 2 and err.count("\n") == 1 and "internal" not in err and out == ""
    assert "too long" in err or "bytes (at most 255)" in err


def _flowcert(*argv: str, **kw: object) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.Popen([sys.executable, "-m", "flowcert", *argv], env=env, text=True, **kw)  # type: ignore[call-overload]


def _wait_for(predicate: Callable[[], bool], seconds: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert proc.poll() is None, "the command ended before it started writing"
        assert time.monotonic() < deadline, "the command did not start writing in time"
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_report_killed_mid_run_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    """The report is built in a staged folder: a signal while it is written removes it (exit 128 + signum)."""
    work = tmp_path / "work"
    work.mkdir()
    proc = _flowcert("report", "--quick", "--params", str(STABLE), "--out", "out/sub", cwd=work,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for(lambda: any(work.iterdir()), 300, proc)  # the staged folder exists: the run is writing
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum and "Traceback" not in err
    assert list(work.iterdir()) == []


def test_pretrained_verify_killed_mid_run_leaves_nothing_behind(tmp_path: Path) -> None:
    """pretrained verify --out-dir: exports are staged; SIGTERM during the sweep removes them (exit 143)."""
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    # 24 heads: the sweep still has seconds of work when the first export appears (4 heads ran out first)
    model = write_checkpoint(tmp_path / "model", *random_tensors("bert", d=8, n_heads=4, n_layers=6, d_ff=16, seed=3),
                             tokenizer_vocab=["[UNK]", "a", "b", "c"])
    work = tmp_path / "work"
    work.mkdir()
    proc = _flowcert("pretrained", "verify", "--model", str(model), "--system", "attention", "--simulate", "--json",
                     "--prompt", "a b c a b", "--out-dir", "out", cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for(lambda: any(p.name.endswith(".json") for p in work.rglob("*")), 300, proc)  # an export is written
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in err
    assert list(work.iterdir()) == []
