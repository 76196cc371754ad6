"""What a reader of the command line sees (issue 47, items 4 and 6): the verdict words and a status
line in ``verify``'s text, a reason that says how to ask for every cross-check left out, a regime that
says when no simulation was asked, ``flowcert schema``, ``pretrained verify``'s table, ``--tokens`` and
progress, ``recheck --strict`` naming what is unbound, and an undecided head named by its unknown
hypothesis."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import flowcert
from flowcert.cli import main

torch.set_num_threads(1)

DATA = Path(__file__).parent / "data"
STABLE = DATA / "gaussian_stable_2d.json"
README = {"A": -np.eye(2), "B": np.eye(2) / 2, "V": -np.eye(2) / 5, "b": np.zeros(2), "mu0": np.ones(2),
          "Sigma0": np.eye(2)}


def test_verify_text_speaks_the_verdict_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "gaussian", "--params", str(STABLE)]) == 0
    out = capsys.readouterr().out
    summary = flowcert.verify("gaussian", STABLE).summary()
    assert all(line in out.splitlines() for line in summary.splitlines())  # status line and one line per theorem
    assert "applies=" not in out and "cross_check=" not in out


def _reasons(result: flowcert.Result) -> dict[str, str]:
    return {t.id: t.cross_check.details["reason"] for t in result.theorems.values()
            if t.cross_check.status.value == "skipped"}


@pytest.mark.parametrize("options", [{"simulate": False}, {"checks": ["moments"]}], ids=["plain", "moments-only"])
def test_every_not_requested_says_how_to_ask(options: dict[str, object]) -> None:
    system = flowcert.get_system("gaussian")
    reasons = _reasons(flowcert.verify("gaussian", README, **options))
    asked = [r for r in reasons.values() if r.startswith("not requested")]
    assert asked and all(r != "not requested" for r in reasons.values())
    for r in asked:
        named = [c for c in system.checks if f"checks=[{c!r}]" in r]
        assert len(named) == 1 and f"--checks {named[0]}" in r
    if "checks" in options:  # a check left out of checks=[...] names itself
        assert "checks=['particles']" in reasons["gaussian:prop-2.1"]


def test_simulate_runs_every_default_check() -> None:
    """The particle study is in the default set (issue 47, item 5): simulate=True leaves nothing unrequested."""
    system = flowcert.get_system("gaussian")
    assert "particles" in system.default_checks
    reasons = _reasons(flowcert.verify("gaussian", README, simulate=True))
    assert not [r for r in reasons.values() if r.startswith("not requested")] and "gaussian:prop-2.1" not in reasons


def test_a_theorem_that_does_not_apply_is_not_said_to_be_unrequested() -> None:
    res = flowcert.verify("gaussian", README, simulate=True)
    for tid, reason in _reasons(res).items():
        if res.theorems[tid].applies.value == "inapplicable":
            assert not reason.startswith("not requested"), (tid, reason)


def test_regime_says_no_simulation_was_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "gaussian", "--params", str(DATA / "gaussian_time_varying.json")]) == 0
    regime = [line for line in capsys.readouterr().out.splitlines() if line.startswith("regime:")]
    assert regime and "basis: simulation" not in regime[0] and "simulate" in regime[0]


@pytest.mark.parametrize("system", ["gaussian", "attention", "rnn"])
def test_schema_lists_the_keys_the_loader_takes(system: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", system, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    keys = [k["key"] for k in doc["keys"]]
    if system == "attention":
        from flowcert.attention.params import ATTENTION_KEYS

        assert keys == list(ATTENTION_KEYS)
    else:
        schema = flowcert.get_system(system).schema
        assert keys == list(schema.allowed)
        assert [k["key"] for k in doc["keys"] if k["required"] == "required"] == list(schema.required)
    assert main(["schema", system]) == 0
    text = capsys.readouterr().out
    assert all(f"  {k} " in text for k in keys)
    assert main(["verify", "--help"]) == 0 and "flowcert schema SYSTEM" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------ pretrained verify

def _model(where: Path, tokenizer: bool = True) -> Path:
    from flowcert.pretrained.synthetic import random_tensors, write_checkpoint

    tensors = random_tensors("bert", d=8, n_heads=2, n_layers=1, d_ff=16, vocab=8, n_pos=16, seed=3)
    return write_checkpoint(where, *tensors, **({"tokenizer_vocab": ["[UNK]", "a", "b", "c"]} if tokenizer else {}))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_pretrained_verify_prints_a_table_with_progress_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m")
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    assert main(["pretrained", "verify", "--model", str(model), "--system", "gaussian", "--layers", "0",
                 "--out-dir", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert not any(line.lstrip().startswith("{") for line in lines)  # a table, not JSON lines
    assert "theorems that apply" in lines[0]
    rows = [line.split() for line in lines[1:] if line.split()[:1] == ["0"]]
    assert sorted(int(r[1]) for r in rows) == [0, 1]  # one row per head
    assert "exports" in err.getvalue() and "sets" in err.getvalue()  # progress, on the terminal's stderr
    # the same call with --json prints the JSON lines and no bar
    err2 = _Terminal()
    monkeypatch.setattr("sys.stderr", err2)
    assert main(["pretrained", "verify", "--model", str(model), "--system", "gaussian", "--layers", "0",
                 "--out-dir", str(tmp_path / "out"), "--json"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len(recs) == 2 and err2.getvalue() == ""


def test_pretrained_verify_takes_token_ids_for_a_model_without_tokenizer(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m", tokenizer=False)
    base = ["pretrained", "verify", "--model", str(model), "--system", "attention", "--layers", "0", "--heads", "1",
            "--out-dir", str(tmp_path / "out")]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tokens" in err
    assert main([*base, "--tokens", "1,2,3", "--json"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert line["provenance"]["tokens"] == [1, 2, 3] and line["provenance"]["prompt"] is None
    assert len(json.loads(Path(line["file"]).read_text())["X0"]) == 3
    assert main([*base, "--tokens", "1", "99"]) == 2 and "--tokens" in capsys.readouterr().err
    assert main([*base, "--tokens", "1", "--prompt", "a"]) == 2 and "--tokens" in capsys.readouterr().err


def test_an_undecided_head_is_named_by_its_unknown_hypothesis() -> None:
    from flowcert.pretrained.command import head_row

    theorems = [{"id": "x:thm-1", "applies": False, "hypotheses": [{"name": "h_fails", "status": "fails"}]},
                {"id": "x:thm-2", "applies": None, "hypotheses": [{"name": "h_holds", "status": "holds"},
                                                                   {"name": "h_unknown", "status": "unknown"}]}]
    *_, deciding, _ = head_row({"file": "L0_H0.json", "result": {"theorems": theorems}})
    assert deciding == "x:thm-2: h_unknown unknown"
    *_, deciding, _ = head_row({"file": "L0_H0.json", "result": {"theorems": theorems[:1]}})
    assert deciding == "x:thm-1: h_fails fails"


def test_recheck_strict_names_the_unbound_certificates() -> None:
    from flowcert.recheck import Recheck

    out = Recheck(files=["a.json"], unbound=2, strict=True, unchecked=["a.json $.theorems[0].hypotheses[1].certificate"],
                  checkpoint_unbound=["a.json $.theorems[2].hypotheses[0].certificate"])
    text = out.summary()
    assert "UNBOUND a.json $.theorems[0].hypotheses[1].certificate" in text
    assert "UNBOUND a.json $.theorems[2].hypotheses[0].certificate" in text
    assert not out.ok
