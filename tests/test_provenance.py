"""Provenance of pretrained exports (issue 33, item 2): the checkpoint digest, and exports that are
never stale.

The digest must change when any byte of a weight file changes and must not depend on the order in
which the file system lists the files; an out-dir holding an export made from other weights or
another prompt is refused (never re-used); every record (export file, verify document, sweep line,
``--summary``) names the weights' digest and the prompt. Checkpoints are tiny synthetic ones
(:mod:`flowcert.pretrained.synthetic`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcert.cli import main
from flowcert.pretrained import provenance as pv
from flowcert.pretrained.checkpoint import load_checkpoint
from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

VOCAB = ["[UNK]", "a", "b", "c", "d"]


def _model(where: Path, seed: int = 0) -> Path:
    return write_checkpoint(where, *random_tensors("bert", d=8, n_heads=2, n_layers=2, d_ff=16, vocab=8, n_pos=16,
                                                   seed=seed), tokenizer_vocab=VOCAB)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model(tmp_path_factory.mktemp("m") / "tiny")


# ----------------------------------------------------------------------------------------------
# the digest
# ----------------------------------------------------------------------------------------------

def _reference_digest(folder: Path) -> str:
    """The documented stream, written out independently: for each weight file in the order of its
    name's UTF-8 bytes, 8-byte big-endian name length, name, 8-byte big-endian size, content."""
    names = sorted((p.name for p in folder.iterdir() if p.name == "config.json" or p.name.endswith(".safetensors")),
                   key=lambda n: n.encode())
    h = hashlib.sha256()
    for n in names:
        data = (folder / n).read_bytes()
        h.update(len(n.encode()).to_bytes(8, "big") + n.encode() + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def test_the_digest_is_the_documented_stream_and_what_load_records(model: Path) -> None:
    digest = pv.files_sha256(model)
    assert digest == _reference_digest(model) == load_checkpoint(model).sha256
    assert len(digest) == 64 and set(digest) <= set("0123456789abcdef")


@settings(max_examples=12, deadline=None)
@given(st.floats(0.0, 1.0, exclude_max=True), st.integers(1, 255), st.sampled_from(["model.safetensors", "config.json"]))
def test_any_changed_byte_changes_the_digest(tmp_path_factory: pytest.TempPathFactory, model: Path, where: float,
                                             flip: int, name: str) -> None:
    copy = tmp_path_factory.mktemp("flip") / "m"
    shutil.copytree(model, copy)
    data = bytearray((copy / name).read_bytes())
    data[int(where * len(data))] ^= flip
    (copy / name).write_bytes(bytes(data))
    assert pv.files_sha256(copy) != pv.files_sha256(model)


def test_the_digest_does_not_depend_on_listing_order_or_other_files(tmp_path: Path, model: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    digest = pv.files_sha256(model)
    # the same files created in the opposite order, plus files the digest does not cover
    other = tmp_path / "other"
    other.mkdir()
    for p in sorted(model.iterdir(), reverse=True):
        shutil.copyfile(p, other / p.name)
    (other / "README.md").write_text("not a weight file")
    assert pv.files_sha256(other) == digest
    real = os.scandir

    def reversed_scandir(path: object) -> list[os.DirEntry]:
        return list(reversed(list(real(path))))  # type: ignore[arg-type]

    monkeypatch.setattr(pv.os, "scandir", reversed_scandir)
    assert pv.files_sha256(model) == digest
    # a weight file that is added (a second shard) or renamed is part of what the digest names
    shutil.copyfile(model / "model.safetensors", other / "extra.safetensors")
    assert pv.files_sha256(other) != digest


def test_an_in_memory_checkpoint_is_hashed_by_its_weights(model: Path) -> None:
    ck = load_checkpoint(model)
    ck.sha256 = None
    a = pv.checkpoint_sha256(ck)
    ck2 = load_checkpoint(model)
    ck2.sha256 = None
    ck2.layers[1].Wv[0, 0] = float(ck2.layers[1].Wv[0, 0]) + 2.0**-40
    assert pv.checkpoint_sha256(ck2) != a and ck.sha256 == a  # kept on the checkpoint


# ----------------------------------------------------------------------------------------------
# exports are keyed by what they were made from
# ----------------------------------------------------------------------------------------------

def _lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def test_every_record_names_the_digest_and_the_prompt(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, summary = tmp_path / "out", tmp_path / "s.md"
    assert main(["pretrained", "verify", "--model", str(model), "--system", "attention", "--layers", "1", "--heads", "0",
                 "--prompt", "a b c", "--out-dir", str(out), "--summary", str(summary), "--json"]) == 0
    (line,) = _lines(capsys.readouterr().out)
    digest = pv.files_sha256(model)
    want = {"checkpoint_sha256": digest, "model": str(model), "architecture": "bert", "layer": 1, "head": 0,
            "system": "attention", "prompt": "a b c", "tokens": [1, 2, 3]}
    exported = json.loads((out / "L1_H0.json").read_text())
    assert exported["provenance"] == want and line["provenance"] == want and line["result"]["provenance"] == want
    assert line["file"] == str(out / "L1_H0.json") and len(exported["X0"]) == 3
    text = summary.read_text()
    assert digest in text and "'a b c'" in text and "[1, 2, 3]" in text
    # the exported file verifies on its own, and its document names where it came from
    assert main(["verify", "attention", "--params", str(out / "L1_H0.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["provenance"] == want
    # pretrained export (one file) names it too
    single = tmp_path / "g.json"
    assert main(["pretrained", "export", "--model", str(model), "--layer", "0", "--head", "1", "--system", "gaussian",
                 "--out", str(single), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["provenance"]["checkpoint_sha256"] == digest and doc["provenance"]["prompt"] is None
    assert json.loads(single.read_text())["provenance"] == doc["provenance"]


def test_another_prompt_in_the_same_out_dir_is_refused(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["pretrained", "verify", "--model", str(model), "--system", "attention", "--layers", "0", "--heads", "1",
            "--out-dir", str(tmp_path / "out"), "--json"]
    assert main([*base, "--prompt", "a b c"]) == 0
    capsys.readouterr()
    before = (tmp_path / "out" / "L0_H1.json").read_bytes()
    assert main([*base, "--prompt", "a b c d a b c d"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out-dir" in err and "'a b c' (3 tokens)" in err and "(8 tokens)" in err
    assert (tmp_path / "out" / "L0_H1.json").read_bytes() == before  # not overwritten either
    assert main([*base, "--prompt", "a b c"]) == 0  # the same prompt re-uses it
    assert (tmp_path / "out" / "L0_H1.json").read_bytes() == before


def test_another_model_with_the_same_folder_name_never_shares_an_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _model(tmp_path / "one" / "tiny", seed=1), _model(tmp_path / "two" / "tiny", seed=2)
    monkeypatch.chdir(tmp_path)
    args = ["pretrained", "verify", "--system", "gaussian", "--layers", "0", "--heads", "0", "--json"]
    assert main([*args, "--model", str(first)]) == 0 and main([*args, "--model", str(second)]) == 0
    a, b = _lines(capsys.readouterr().out)
    assert a["provenance"]["checkpoint_sha256"] == pv.files_sha256(first) != pv.files_sha256(second) == \
        b["provenance"]["checkpoint_sha256"]
    assert a["file"] != b["file"]  # the default folders are keyed by the weights
    ours = load_checkpoint(second)  # head 0 of layer 0: B = K^T Q / sqrt(d_h), d_h = 4, from the second model's weights
    assert b["result"]["params"]["$ref"] == b["file"]  # the line references its export
    B = json.loads(Path(b["file"]).read_text())["B"]  # factored: K^T, Q of the second model's weights, scale 1/d_h
    np.testing.assert_array_equal(np.array(B["factors"][0]), ours.layers[0].Wk[:4].T)
    np.testing.assert_array_equal(np.array(B["factors"][1]), ours.layers[0].Wq[:4])
    assert B["scale_squared"] == "1/4"
    # an explicit out-dir holding the first model's export is refused for the second
    out = Path(a["file"]).parent
    assert main([*args, "--model", str(second), "--out-dir", str(out)]) == 2
    assert "holds an export of" in capsys.readouterr().err


def test_an_export_without_provenance_or_behind_a_link_is_refused(model: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "L0_H0.json").write_text(json.dumps({"A": [[0.0]]}))
    args = ["pretrained", "verify", "--model", str(model), "--system", "gaussian", "--layers", "0", "--heads", "0",
            "--out-dir", str(out)]
    assert main(args) == 2 and "no provenance" in capsys.readouterr().err
    (out / "L0_H0.json").unlink()
    (tmp_path / "elsewhere.json").write_text("{}")
    (out / "L0_H0.json").symlink_to(tmp_path / "elsewhere.json")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err and (tmp_path / "elsewhere.json").read_text() == "{}"


def test_resume_skips_only_lines_with_the_same_provenance(model: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    args = ["pretrained", "verify", "--model", str(model), "--system", "gaussian", "--layers", "0", "--out-dir", str(out),
            "--json"]
    assert main(args) == 0
    lines = _lines(capsys.readouterr().out)
    forged = dict(lines[1], provenance=dict(lines[1]["provenance"], checkpoint_sha256="0" * 64))
    resume = tmp_path / "r.jsonl"
    resume.write_text(json.dumps(lines[0]) + "\n" + json.dumps(forged) + "\n")
    assert main([*args, "--resume", str(resume)]) == 0
    again = _lines(capsys.readouterr().out)
    assert [r["file"] for r in again] == [lines[1]["file"]]  # the forged line is about other weights: redone


GOOD = {"checkpoint_sha256": "a" * 64, "model": "m", "architecture": "bert", "layer": 0, "head": 0,
        "system": "gaussian", "prompt": None, "tokens": None}


@pytest.mark.parametrize("bad, needle", [({"model": "m"}, "missing 'checkpoint_sha256'"), ([1], "must be an object"),
                                         ({**GOOD, "checkpoint_sha256": "XYZ"}, "64 lowercase hex"),
                                         ({**GOOD, "layer": "0"}, "'layer' must be int"),
                                         ({**GOOD, "tokens": [-1]}, "'tokens' must be")])
def test_a_malformed_provenance_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: object,
                                             needle: str) -> None:
    raw = json.loads((Path(__file__).parent / "data" / "gaussian_stable_2d.json").read_text())
    raw["provenance"] = bad
    (tmp_path / "p.json").write_text(json.dumps(raw))
    assert main(["verify", "gaussian", "--params", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "provenance" in err and needle in err
