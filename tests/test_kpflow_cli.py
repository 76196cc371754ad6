"""``flowcert kpflow analyze`` as a contract (subprocess): keys, names, exit codes, verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(tmp_path: Path, params: dict, *extra: str) -> subprocess.CompletedProcess:
    f = tmp_path / "p.json"
    f.write_text(json.dumps(params))
    return subprocess.run([sys.executable, "-m", "flowcert", "kpflow", "analyze", "--params", str(f), *extra],
                          capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("cell,paper_bound", [("linear", True), ("gru", False)])
def test_analyze_json(tmp_path, capsys, cell, paper_bound):
    """In-process (``cli.main``) to save the interpreter start; the subprocess path is tested below."""
    from flowcert.cli import main

    p = {"cell": cell, "B": 3, "T": 6, "H": 4, "I": 3, "g": 0.8, "seed": 1}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    assert main(["kpflow", "analyze", "--params", str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ident = doc["identities"]
    assert {"prop1", "adjoint", "inverse", "ntk"} <= set(ident)
    assert all(ident[k]["name"] == k for k in ("prop1", "adjoint", "inverse", "ntk"))
    assert ident["adjoint"]["P"] < 1e-13 and ident["inverse"]["residual"] < 1e-12 and ident["ntk"]["residual"] < 1e-12
    fd = ident["prop1"]["fd"]
    if cell == "linear":
        assert all(row["residual"] < 2 * row["roundoff_floor"] + 1e-14 for row in fd)
    else:
        assert all(0.8 < row["observed_order"] < 1.2 for row in fd[1:])
    er = doc["effective_rank"]
    assert {"K", "P", "PKP", "definition"} <= set(er)
    assert 1 <= er["PKP"]["value"] <= er["P"]["value"] <= 3 * 6 * 4
    ids = [t["id"] for t in doc["theorems"]]
    assert ids == ["kpflow:prop-1", "kpflow:cor-1", "kpflow:thm-1", "kpflow:thm-2"]
    th1 = doc["theorems"][2]
    assert th1["applies"] is (cell == "linear")
    assert th1["prediction"]["paper_bound_holds"] is paper_bound
    assert all(t["cross_check"]["status"] == "agrees" for t in doc["theorems"])


def test_bad_input(tmp_path, capsys):
    r = run(tmp_path, {"cell": "lstm", "B": 1, "T": 1, "H": 1, "I": 1})
    assert r.returncode == 2 and "cell" in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    from flowcert.cli import main

    f = tmp_path / "q.json"
    for bad, key in (({"cell": "gru", "B": 1.5, "T": 1, "H": 1, "I": 1}, "'B'"),
                     ({"cell": "hodgkin_huxley", "B": 1, "T": 1, "H": 6, "I": 1}, "'H'"),
                     ({"cell": "gru", "B": 1, "T": 4, "H": 2, "I": 3, "task": "memory_pro"}, "'T'"),
                     ({"cell": "gru", "B": 1, "T": 3, "H": 2, "I": 3, "weights": {"W": [[1.0]]}}, "'weights'")):
        f.write_text(json.dumps(bad))
        assert main(["kpflow", "analyze", "--params", str(f)]) == 2
        err = capsys.readouterr().err
        assert key in err and err.count("\n") == 1


@pytest.mark.slow
def test_report_section_contract(tmp_path):
    """The report section returns the contract keys, writes its figures, and lists the 4 theorems."""
    from flowcert.reports.kpflow import section

    r = section(tmp_path, quick=True)
    assert set(r) == {"title", "markdown", "theorems", "figures"}
    assert [t["id"] for t in r["theorems"]] == ["kpflow:prop-1", "kpflow:cor-1", "kpflow:thm-1", "kpflow:thm-2"]
    for f in r["figures"]:
        assert (tmp_path / f).is_file() and f"]({f})" in r["markdown"]


def test_verify_rnn(tmp_path, capsys):
    """``flowcert verify rnn`` gives the catalogue records (Theorem 1 does not apply to the GRU)."""
    from flowcert.cli import main

    f = tmp_path / "v.json"
    f.write_text(json.dumps({"cell": "gru", "B": 2, "T": 3, "H": 3, "I": 3, "task": "memory_pro"}))
    assert main(["verify", "rnn", "--params", str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["system"] == "rnn"
    th = {t["id"]: t for t in doc["theorems"]}
    assert th["kpflow:thm-1"]["applies"] is False
    assert [h["status"] for h in th["kpflow:thm-1"]["hypotheses"] if "outer" in h["name"]] == ["fails"]
    assert th["kpflow:prop-1"]["cross_check"]["status"] == "agrees"


def test_theorem2_singular_jacobians(tmp_path, capsys):
    """g = 0, dt = 1: every A_t = 0, so U^{-1} does not exist; Theorem 2 does not apply (exact check)."""
    from flowcert.cli import main

    f = tmp_path / "g0.json"
    f.write_text(json.dumps({"cell": "rnn_tanh", "B": 2, "T": 4, "H": 3, "I": 3, "dt": 1.0, "g": 0}))
    assert main(["kpflow", "analyze", "--params", str(f), "--json"]) == 0
    th2 = json.loads(capsys.readouterr().out)["theorems"][3]
    assert th2["applies"] is False and th2["hypotheses"][0]["status"] == "fails"
    assert th2["cross_check"]["details"]["uvu_relative_residual"] is None


def test_consensus_flag(tmp_path, capsys):
    """--consensus T adds the consensus key: exact when the traced size <= probes (compared with the
    dense partial trace), and exact too whenever the exact path is cheap (whatever the probes); bad axes exit 2."""
    import torch

    from flowcert.cli import main
    from flowcert.gpu.rnn import spectra
    from flowcert.gpu.rnn.operators import KPFlow
    from flowcert.rnn.analyze import build_model
    from flowcert.rnn.params import parse_rnn

    p = {"cell": "gru", "B": 3, "T": 5, "H": 4, "I": 2, "seed": 2}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    assert main(["kpflow", "analyze", "--params", str(f), "--json", "--consensus", "T", "--probes", "12"]) == 0
    c = json.loads(capsys.readouterr().out)["consensus"]
    assert {"keep", "eigenvalues", "stderr", "probes", "method"} <= set(c)
    assert c["keep"] == "T" and c["exact"] and c["probes"] == 12
    kp = KPFlow.build(build_model(parse_rnn(p))["tr"])
    ref = spectra.partial_trace_dense(kp.PKP.dense(), (3, 5, 4), ["B", "H"]) / 12
    lam = torch.linalg.eigvalsh(ref).flip(0)
    assert torch.allclose(torch.tensor(c["eigenvalues"], dtype=torch.float64), lam, atol=1e-13 * float(lam[0]))
    assert main(["kpflow", "analyze", "--params", str(f), "--json", "--consensus", "T", "--probes", "6",
                 "--consensus-op", "PP"]) == 0
    c = json.loads(capsys.readouterr().out)["consensus"]
    # 6 probes < |S| = 12, but the exact path's 60 applications are cheap in absolute terms: taken, and said
    assert c["exact"] and c["path"] == "exact" and "cheap" in c["path_reason"] and c["operator"] == "PP*"
    assert c["trusted"] and c["predicted_cpu_s"] > 0 and c["cpu_s"] > 0
    for bad, key in ((["--consensus", "X"], "--consensus"), (["--consensus", "BTH"], "--consensus"),
                     (["--consensus", "T", "--probes", "1"], "--probes")):
        assert main(["kpflow", "analyze", "--params", str(f), *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and key in err[0]
