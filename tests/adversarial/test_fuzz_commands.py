"""A fuzzer for every command (issue 24): hostile inputs, each answered by exit 2 and one line.

The table :data:`FUZZ` maps every command of :func:`flowcert.cli.build_parser` (``pretrained`` and
``kpflow`` by action) to hostile argument lists built on a folder of hostile files (:func:`hostile`):
deep nesting, extreme numbers, sizes past :data:`flowcert.limits.LIMITS`, FIFOs, devices, links,
bad UTF-8, bad options, sparse checkpoints declaring huge tensors. :func:`test_every_command_is_fuzzed`
fails when a command is added to the parser without an entry, so none can ship unfuzzed.

Default suite: every case in-process (``cli.main``) under a wall-clock watchdog; each must exit 2
with exactly one stderr line, no traceback, nothing on stdout. ``slow``: the same cases as
subprocesses under a time limit and an address-space limit (``RLIMIT_AS``), and the link test of
every writing command: a symbolic link (to a victim file, or dangling) as the output path is
refused and the victim is untouched, the dangling target not created.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from adv_run import time_limit

from flowcert import cli

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
ATT = DATA / "attention" / "multistable_d3.json"
GAUSS = DATA / "gaussian_stable_2d.json"
RNN = DATA / "rnn" / "rnn_tanh_small.json"
SPEC = {"Sigma_inf": [[1, 0], [0, 1]], "K": [[0, 1], [-1, 0]], "V": [[1, 0], [0, 1]], "B": [[1, 0], [0, 1]]}
DEEP = "[" * 900 + "1" + "]" * 900

Case = Callable[[Path], list[str]]


def _edit(src: Path, dst: Path, **changes: object) -> str:
    raw = json.loads(src.read_text())
    raw.update(changes)
    dst.write_text(json.dumps(raw))
    return str(dst)


def _deep(src: Path, dst: Path, key: str) -> str:
    text = json.dumps({**json.loads(src.read_text()), key: "@@"}).replace('"@@"', DEEP)
    dst.write_text(text)
    return str(dst)


def _sparse_safetensors(path: Path, declared: int) -> None:
    """A small sparse file whose header declares one unused F32 tensor of ``declared`` bytes."""
    header = json.dumps({"unused": {"dtype": "F32", "shape": [declared // 4], "data_offsets": [0, declared]}}).encode()
    with open(path, "wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header)
        fh.truncate(8 + len(header) + declared)


def hostile(d: Path) -> Path:
    """Write the hostile files into ``d`` (once per session)."""
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    _edit(ATT, d / "beta.json", beta=1e300)
    _edit(ATT, d / "V308.json", V=[[1e308, 0, 0], [0, 1, 0], [0, 0, 1]])
    _edit(ATT, d / "n6.json", n=1_000_000)
    _edit(ATT, d / "n308.json", n=1e308)
    _edit(ATT, d / "seed64.json", seed=2**64 - 1)
    _edit(ATT, d / "d1.json", V=[[1.0]], Q=[[1.0]], K=[[1.0]])
    _edit(ATT, d / "tend.json", t_end=1e300)
    x = np.zeros((600, 3))
    x[:, 0] = 1.0
    _edit(ATT, d / "tokens.json", X0=x.tolist(), n=None)
    raw = json.loads((d / "tokens.json").read_text())
    raw.pop("n")
    (d / "tokens.json").write_text(json.dumps(raw))
    _deep(ATT, d / "deep_att.json", "V")
    (d / "pole.json").write_text(json.dumps({"heads": [{"P": [["1/(1-t)", 0], [0, 1]], "V": [[1, 0], [0, 1]]}],
                                             "n": 3, "t_end": 2}))
    (d / "utf8.json").write_bytes(b'{"V": "\xff"}')
    (d / "folder.json").mkdir()
    (d / "empty").mkdir()
    os.mkfifo(d / "fifo.json")
    os.mkfifo(d / "fifo.svg")
    os.symlink("/dev/zero", d / "zero.json")
    _edit(RNN, d / "g.json", g=1e300)
    _edit(RNN, d / "I.json", I=10**9)
    _edit(RNN, d / "BTH.json", B=1000, T=1000, H=100)
    _edit(RNN, d / "rseed.json", seed=2**64 - 1)
    _edit(RNN, d / "wbig.json", cell="rnn_tanh", weights={"W": [[1e308] * 4] * 4})
    _deep(RNN, d / "deep_rnn.json", "weights")
    (d / "spec_unknown.json").write_text(json.dumps({**SPEC, "x": 1}))
    (d / "spec_bool.json").write_text(json.dumps({**SPEC, "B": [[True, 0], [0, 1]]}))
    (d / "spec_401.json").write_text(json.dumps(SPEC).replace('"B": [[1', '"B": [[' + "9" * 401, 1))
    (d / "spec_big.json").write_text(json.dumps({k: np.eye(100).tolist() for k in SPEC}))
    _deep(GAUSS, d / "spec_deep.json", "K")
    (d / "resume_utf8.jsonl").write_bytes(b'{"file": "\xff"}\n')
    (d / "bad_gauss.json").write_text('{"A": 1}')
    # checkpoints: a valid tiny one, then one hostile change each
    cfg, T = random_tensors("bert", seed=1, d=8, n_heads=2, n_layers=1, d_ff=16, vocab=12, n_pos=16)
    good = write_checkpoint(d / "ck_good", cfg, T)
    for name, change in (("ck_digits", {"hidden_size": "@@5000"}), ("ck_400", {"hidden_size": "@@400"}),
                         ("ck_deep", {"hidden_size": "@@deep"}), ("ck_heads", {"num_attention_heads": 3})):
        root = d / name
        root.mkdir()
        (root / "model.safetensors").symlink_to(good / "model.safetensors")
        text = json.dumps({**cfg, **change})
        text = text.replace('"@@5000"', "9" * 5000).replace('"@@400"', "9" * 400).replace('"@@deep"', DEEP)
        (root / "config.json").write_text(text)
    for name, declared in (("ck_sparse", 3 * 2**30), ("ck_header", 0)):
        root = d / name
        root.mkdir()
        (root / "config.json").write_text(json.dumps(cfg))
        _sparse_safetensors(root / "model.safetensors", declared)
    (d / "ck_header" / "model.safetensors").write_bytes((2**62).to_bytes(8, "little") + b"{}")
    big = d / "ck_overflow"
    T2 = {k: v.astype(np.float64) * (1e30 if k.endswith("query.weight") else 1.0) for k, v in T.items()}
    write_checkpoint(big, cfg, T2)
    (d / "victim.txt").write_text("victim\n")
    return d


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile(tmp_path_factory.mktemp("hostile"))


def _p(name: str) -> Case:
    return lambda d: [str(d / name)]


#: command -> hostile argument lists (each builder takes the folder of hostile files).
FUZZ: dict[str, list[Case]] = {
    "verify": [
        *(lambda d, f=f: ["verify", "attention", "--params", str(d / f)] for f in (
            "beta.json", "V308.json", "n6.json", "n308.json", "seed64.json", "d1.json", "tokens.json",
            "deep_att.json", "utf8.json", "folder.json", "fifo.json", "zero.json")),
        lambda d: ["verify", "gaussian", "--params", str(d / "empty")],
        lambda d: ["verify", "attention", "--simulate", "--params", str(d / "tend.json")],
        lambda d: ["verify", "attention", "--simulate", "--params", str(d / "pole.json")],
        lambda d: ["verify", "attention", "--params", str(ATT), "--seed", "-1"],
        lambda d: ["verify", "attention", "--params", str(ATT), "--seed", str(2**64 - 1)],
        lambda d: ["verify", "rnn", "--params", str(RNN), "--jobs", "2"],
        lambda d: ["verify", "rnn", "--params", str(d / "deep_rnn.json")],
        # sweeps
        lambda d: ["verify", "gaussian", "--params", str(GAUSS), str(GAUSS), "--jobs", "4800"],
        lambda d: ["verify", "gaussian", "--params", str(GAUSS), "--jobs", "0"],
        *(lambda d, f=f: ["verify", "gaussian", "--params", str(GAUSS), "--resume", str(d / f)]
          for f in ("fifo.json", "zero.json", "folder.json", "missing.jsonl", "resume_utf8.jsonl", "deep_att.json")),
    ],
    "simulate": [
        *(lambda d, f=f: ["simulate", "attention", "--params", str(d / f)] for f in (
            "beta.json", "V308.json", "n6.json", "tend.json", "tokens.json", "deep_att.json", "fifo.json")),
        lambda d: ["simulate", "attention", "--params", str(ATT), "--t-end", "1e300"],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--samples", "1000000000"],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--samples", "0"],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--device", "meta"],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--seed", "-1"],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--plot", str(d / "folder.json")],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--plot", str(d / "nodir" / "x.png")],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--plot", str(d / ("a" * 300 + ".png"))],
        lambda d: ["simulate", "attention", "--params", str(ATT), "--plot", "/proc/x.png"],
        lambda d: ["simulate", "gaussian", "--params", str(GAUSS), "--plot", str(d / "no\ndir" / "x.png")],
    ],
    "equilibria": [
        lambda d: ["equilibria", "attention", "--params", str(d / "n6.json")],
        lambda d: ["equilibria", "attention", "--params", str(ATT), "--cap", "1000000000000"],
        lambda d: ["equilibria", "attention", "--params", str(ATT), "--cap", "-3"],
        lambda d: ["equilibria", "attention", "--params", str(d / "deep_att.json")],
    ],
    "codegen": [
        lambda d: ["codegen", "gaussian", "--backend", "numpy", "--params", str(GAUSS)],
        lambda d: ["codegen", "attention", "--backend", "numpy", "--params", str(d / "deep_att.json")],
        lambda d: ["codegen", "attention", "--backend", "c", "--out", str(d / "fifo.json")],
        lambda d: ["codegen", "attention", "--backend", "c", "--out", str(d / "folder.json")],
    ],
    "design": [
        *(lambda d, f=f: ["design", "gaussian", "--spec", str(d / f)] for f in (
            "spec_unknown.json", "spec_bool.json", "spec_401.json", "spec_big.json", "spec_deep.json", "fifo.json")),
    ],
    "report": [
        lambda d: ["report", "--params", str(d / "bad_gauss.json"), "--out", str(d / "report_left_behind")],
        lambda d: ["report", "--out", str(d / "victim.txt")],
        lambda d: ["report", "--params", str(d / "deep_att.json"), "--system", "attention", "--out", str(d / "r2")],
    ],
    "schema": [
        lambda d: ["schema", "nonsense"],
        lambda d: ["schema", ""],
        lambda d: ["schema", "gaussian", "--json", "--extra"],
    ],
    "graph": [
        lambda d: ["graph", "--paper", ""],
        lambda d: ["graph", "--out", str(d / "folder.json" / "..")],
        lambda d: ["graph", "--paper", "gaussian", "--out", str(d / "fifo.svg")],
    ],
    "reach": [
        lambda d: ["reach", "gaussian", "--params", str(GAUSS), "--target", str(d / "deep_att.json"), "--T", "1"],
        lambda d: ["reach", "gaussian", "--params", str(GAUSS), "--target", str(GAUSS), "--T", "1",
                   "--out", str(d / "folder.json")],
    ],
    "kpflow": [
        *(lambda d, f=f: ["kpflow", "analyze", "--params", str(d / f)] for f in (
            "g.json", "I.json", "BTH.json", "rseed.json", "wbig.json", "deep_rnn.json", "zero.json")),
    ],
    "pretrained heads": [
        *(lambda d, f=f: ["pretrained", "heads", "--model", str(d / f)] for f in (
            "ck_digits", "ck_400", "ck_deep", "ck_heads", "ck_sparse", "ck_header", "ck_overflow", "empty", "fifo.json")),
    ],
    "pretrained export": [
        lambda d: ["pretrained", "export", "--model", str(d / "ck_good"), "--layer", "0", "--system", "attention",
                   "--out", str(d / "folder.json")],
        lambda d: ["pretrained", "export", "--model", str(d / "ck_good"), "--layer", "0", "--system", "attention",
                   "--out", str(d / "fifo.json")],
        lambda d: ["pretrained", "export", "--model", str(d / "ck_sparse"), "--layer", "0", "--system", "attention",
                   "--out", str(d / "x.json")],
    ],
    "pretrained embed": [
        lambda d: ["pretrained", "embed", "--model", str(d / "ck_good"), "--text", "cat"],  # no tokenizer.json
        lambda d: ["pretrained", "embed", "--model", str(d / "ck_deep"), "--text", "cat"],
    ],
    "pretrained verify": [
        lambda d: ["pretrained", "verify", "--model", str(d / "ck_sparse"), "--system", "gaussian"],
        lambda d: ["pretrained", "verify", "--model", str(d / "ck_deep"), "--system", "attention"],
        lambda d: ["pretrained", "verify", "--model", str(d / "ck_good"), "--system", "gaussian", "--jobs", "4800"],
        lambda d: ["pretrained", "verify", "--model", str(d / "ck_good"), "--system", "gaussian",
                   "--resume", str(d / "fifo.json")],
    ],
    "recheck": [
        *(lambda d, f=f: ["recheck", str(d / f)] for f in (
            "deep_att.json", "utf8.json", "folder.json", "fifo.json", "zero.json", "missing.jsonl", "bad_gauss.json")),
        *(lambda d, f=f: ["recheck", "--rerun", str(d / f)] for f in ("deep_att.json", "zero.json", "bad_gauss.json")),
    ],
    "pretrained experiment": [
        lambda d: ["pretrained", "experiment", "consensus", "--model", str(d / "ck_sparse")],
        lambda d: ["pretrained", "experiment", "consensus", "--model", str(d / "ck_good"), "--seed", "-5"],
    ],
}

CASES = [(command, i) for command, cases in FUZZ.items() for i in range(len(cases))]


def _commands() -> set[str]:
    """Every command of the parser (``pretrained`` and ``kpflow`` by action)."""
    import argparse

    def subs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:  # noqa: SLF001 - argparse has no public listing
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                return dict(action.choices)
        return {}

    out = set()
    for name, sub in subs(cli.build_parser()).items():
        inner = subs(sub)
        out |= {f"{name} {a}" for a in inner} if inner else {name}
    return out


def test_every_command_is_fuzzed() -> None:
    missing = _commands() - set(FUZZ)
    assert not missing, f"commands without hostile inputs in FUZZ: {sorted(missing)}"
    assert all(FUZZ[c] for c in FUZZ)


def _check(code: int, out: str, err: str, argv: list[str]) -> None:
    assert code == 2, (argv, code, err[-800:])
    assert "Traceback" not in err and err.count("\n") == 1 and err.endswith("\n"), (argv, err[-800:])
    assert err.startswith("flowcert: error: "), (argv, err)


@pytest.mark.parametrize("command,index", CASES, ids=[f"{c.replace(' ', '-')}-{i}" for c, i in CASES])
def test_hostile_input_exits_2_with_one_line(files: Path, command: str, index: int, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    argv = FUZZ[command][index](files)
    monkeypatch.chdir(tmp_path)  # default output places (pretrained verify's export folder) land here
    with time_limit(60):
        code = cli.main(argv)
    out, err = capsys.readouterr()
    _check(code, out, err, argv)
    assert out == ""
    assert not (files / "report_left_behind").exists() and not (files / "r2").exists()
    assert not any(tmp_path.iterdir()), f"bad input left {sorted(p.name for p in tmp_path.iterdir())} behind"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def _run(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "flowcert", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limited, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("command,index", CASES, ids=[f"{c.replace(' ', '-')}-{i}" for c, i in CASES])
def test_hostile_input_in_a_bounded_process(files: Path, command: str, index: int) -> None:
    argv = FUZZ[command][index](files)
    proc = _run(argv, files)
    _check(proc.returncode, proc.stdout, proc.stderr, argv)


#: every command that writes a file, with its output option last.
WRITERS: dict[str, Callable[[Path, str], list[str]]] = {
    "graph": lambda d, out: ["graph", "--paper", "gaussian", "--out", out],
    "codegen": lambda d, out: ["codegen", "attention", "--backend", "numpy", "--out", out],
    "simulate": lambda d, out: ["simulate", "gaussian", "--params", str(GAUSS), "--t-end", "0.1", "--plot", out],
    "pretrained export": lambda d, out: ["pretrained", "export", "--model", str(d / "ck_good"), "--layer", "0",
                                         "--system", "attention", "--out", out],
    "reach": lambda d, out: ["reach", "gaussian", "--params", str(GAUSS), "--target", str(GAUSS), "--T", "1",
                             "--out", out],
    "report": lambda d, out: ["report", "--params", str(GAUSS), "--quick", "--out", out],
    "pretrained verify": lambda d, out: ["pretrained", "verify", "--model", str(d / "ck_good"), "--system", "gaussian",
                                         "--heads", "0", "--out-dir", str(Path(out).parent / "heads"),
                                         "--json", "--summary", out],
}
_SUFFIX = {"graph": ".svg", "codegen": ".py", "simulate": ".png", "pretrained export": ".json", "reach": ".json",
           "report": "", "pretrained verify": ".md"}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_no_output_follows_a_link(tmp_path: Path, files: Path, command: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    link, dangling = tmp_path / f"link{_SUFFIX[command]}", tmp_path / f"dangling{_SUFFIX[command]}"
    link.symlink_to(victim)
    dangling.symlink_to(tmp_path / "target_created")
    for out in (link, dangling):
        argv = WRITERS[command](files, str(out))
        with time_limit(60):
            code = cli.main(argv)
        _, err = capsys.readouterr()
        _check(code, "", err, argv)
        assert "symbolic link" in err
    assert victim.read_text() == "victim\n" and not (tmp_path / "target_created").exists()
    assert link.is_symlink() and dangling.is_symlink()
