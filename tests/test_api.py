"""The library face (``flowcert.verify``, :class:`flowcert.result.Result`) and the system registry.

* ``flowcert.verify("gaussian", {numpy arrays})`` returns the document the CLI prints on the same
  data (the CLI runs in a subprocess), so the verdicts are the same;
* a bad mapping raises the one input-error type, naming the key;
* the HTML verdict table is well-formed XML with every theorem id, and escapes what it shows;
* every registered system implements the protocol and the commands its registry line lists, and
  the CLI's choices come from the registry;
* ``report --params`` builds the verdict section for attention and rnn too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import flowcert
from flowcert import cli
from flowcert.errors import InputError, ParamError
from flowcert.result import Result
from flowcert.system import System
from flowcert.systems import REGISTRY, get_system, names

DATA = Path(__file__).parent / "data"
STABLE = DATA / "gaussian_stable_2d.json"


def _arrays(path: Path) -> dict:
    return {k: np.asarray(v, dtype=float) for k, v in json.loads(path.read_text()).items()}


def test_verify_from_arrays_is_the_cli_document():
    """Same data as numpy arrays in-process and as a file through the CLI: the same document."""
    res = flowcert.verify("gaussian", _arrays(STABLE))
    out = subprocess.run([sys.executable, "-m", "flowcert", "verify", "gaussian", "--params", str(STABLE), "--json"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    cli_doc = json.loads(out.stdout)
    assert res.to_json() == cli_doc
    verdicts = {t["id"]: (t["applies"], [h["status"] for h in t["hypotheses"]], t["cross_check"]["status"])
                for t in cli_doc["theorems"]}
    assert {i: (t.applies.json, [h.status.value for h in t.hypotheses], t.cross_check_status.value)
            for i, t in res.theorems.items()} == verdicts
    assert res.regime == cli_doc["regime"] and res.simulation is None
    # a parameter object and a path give the same document
    assert flowcert.verify("gaussian", res.params).to_json() == cli_doc
    assert json.dumps(res.to_json(), indent=1) + "\n" == out.stdout


@pytest.mark.parametrize("key, value, fragment", [
    ("V", None, "missing"),
    ("A", np.ones((2, 3)), "shape"),
    ("Sigma0", np.array([[1.0, 2.0], [0.0, 1.0]]), "symmetric"),
    ("mu0", np.array([np.nan, 0.0]), ""),
    ("t_end", np.float64(-1.0), "positive"),
])
def test_mapping_errors_name_the_key(key, value, fragment):
    raw = _arrays(STABLE)
    if value is None:
        del raw[key]
    else:
        raw[key] = value
    with pytest.raises(InputError) as info:
        flowcert.verify("gaussian", raw)
    err = info.value
    assert isinstance(err, ParamError) and err.key == key
    assert f"'{key}'" in str(err) and fragment in str(err) and "\n" not in str(err)


def test_other_bad_input_is_the_one_error_type():
    with pytest.raises(InputError, match="not available"):
        flowcert.verify("no_such_system", {})
    with pytest.raises(InputError, match="expected a file path, a mapping"):
        flowcert.verify("gaussian", 42)
    with pytest.raises(InputError, match="seed"):
        flowcert.verify("gaussian", _arrays(STABLE), seed=-1)
    assert issubclass(ParamError, InputError) and issubclass(ParamError, ValueError)
    assert cli.InputError is InputError  # the CLI's name is the same class


def _fake(theorem_ids: list[str], system: str = "gaussian") -> Result:
    theorems = [{"id": i, "source": "s", "applies": [True, False, None][k % 3],
                 "hypotheses": [{"name": f"h<{k}> & 'q'", "status": "holds", "margin": 1.0, "method": "m",
                                 "certificate": None}],
                 "prediction": None, "cross_check": {"status": "skipped", "details": "<b>x</b>"}}
                for k, i in enumerate(theorem_ids)]
    return Result.from_document({"flowcert": "0", "system": system, "params": {}, "theorems": theorems,
                                 "regime": {"Sigma": "converges_pd", "mu": "converges", "basis": "certified"}})


def test_html_is_well_formed_and_escaped():
    ids = ["gaussian:thm-4.7.1", "x:<script>alert(1)</script>", "a&b:\"q\""]
    res = _fake(ids)
    page = res._repr_html_()
    root = ET.fromstring(page)  # raises on malformed markup (an unescaped '<' or '&' would)
    cells = [td.text for td in root.iter("td")]
    for i in ids:
        assert i in cells
    assert "<script>" not in page and "h<0>" not in page
    rows = list(root.iter("tr"))
    assert len(rows) == len(ids) + 1  # header + one row per theorem
    assert len(list(root.iter("details"))) == len(ids)  # the hypotheses folded, one block per theorem
    md = res._repr_markdown_()
    assert all(line.count("|") - line.count("\\|") == 5 for line in md.splitlines() if line.startswith("| "))


def test_real_result_renders_every_theorem():
    res = flowcert.verify("gaussian", STABLE, simulate=False)
    root = ET.fromstring(res._repr_html_())
    first_cells = [tr.find("td").text for tr in root.iter("tr") if tr.find("td") is not None]
    assert sorted(first_cells) == sorted(res.theorems)
    # issue 47: disagreeing or undecided theorems on top (each group in catalogue order), each row with its claim
    look = [i for i, t in res.theorems.items() if t.cross_check.status == "disagrees" or t.applies.json is None]
    assert first_cells == look + [i for i in res.theorems if i not in look]
    rows = [tr for tr in root.iter("tr") if tr.find("td") is not None]
    assert all(tr.get("class") == "look" for tr in rows[:len(look)]) and all(tr.get("class") is None for tr in rows[len(look):])
    assert all(tr.find("td").find(".//{http://www.w3.org/1998/Math/MathML}math") is not None
               or tr.find("td").find(".//math") is not None for tr in rows)
    assert all(i in res._repr_markdown_() for i in res.theorems)


def test_registry_is_complete():
    """Every registry line resolves to a System serving its commands; every system module is registered."""
    root = Path(flowcert.__file__).parent
    on_disk = {p.parent.name for p in root.glob("*/system.py")}
    assert on_disk == set(REGISTRY)
    for name, entry in REGISTRY.items():
        s = get_system(name)
        assert isinstance(s, System) and s.name == name
        assert isinstance(s.params_type, type) and s.warm_modules
        for command, method in (("equilibria", "equilibria"), ("reach", "reach")):
            assert (command in entry.commands) == callable(getattr(s, method, None)), (name, command)
        # a token system's parameters start from tokens (X0): the pretrained export then reads a prompt
        assert isinstance(s.from_tokens, bool) and s.from_tokens == ("X0" in s.params_type.__dataclass_fields__)
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for command in ("verify", "simulate", "equilibria", "codegen"):
        system_arg = next(a for a in sub[command]._actions if a.dest == "system")
        expected = names("simulate") if command == "codegen" else names(command)
        assert tuple(system_arg.choices) == expected, command


def test_no_name_comparisons_outside_the_systems():
    """``system == "gaussian"``-style dispatch is gone: the registry decides (grep of the package)."""
    import re

    root = Path(flowcert.__file__).parent
    pattern = re.compile(r"""system\s*(==|!=)\s*["']""")
    hits = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py") if p.name != "system.py"
            for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits


@pytest.mark.parametrize("system, raw", [
    ("rnn", {"cell": "rnn_tanh", "B": 2, "T": 3, "H": 2, "I": 2, "g": 0.8, "seed": 1, "dt": 0.1}),
    ("attention", {"V": [[1.0, 0.0], [0.0, 0.5]], "Q": [[1.0, 0.0], [0.0, 1.0]], "K": [[1.0, 0.0], [0.0, 1.0]],
                   "n": 3, "seed": 0, "t_end": 20}),
])
def test_report_params_serves_every_system(tmp_path, system, raw, capsys):
    """``report --params FILE --system S`` writes the verdict section with every theorem of ``verify S``."""
    params = tmp_path / f"{system}.json"
    params.write_text(json.dumps(raw))
    out = tmp_path / "out"
    assert cli.main(["report", "--params", str(params), "--system", system, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    (sec,) = report["sections"]
    assert sec["key"] == "user" and f"system {system}" in sec["title"]
    ids = [t["id"] for t in sec["theorems"]]
    assert ids and len(ids) == len(set(ids))
    md = (out / "report.md").read_text()
    assert "Parameters as understood" in md and all(i in md for i in ids)
    for fig in sec["figures"]:
        assert (out / fig).is_file()


def test_report_params_unknown_system_is_bad_input(tmp_path, capsys):
    assert cli.main(["report", "--params", str(STABLE), "--system", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "nope" in capsys.readouterr().err


def test_lazy_public_names():
    """``import flowcert`` loads nothing else; the public names resolve on first use."""
    out = subprocess.run([sys.executable, "-c", "import sys, flowcert; print(sorted(m for m in sys.modules "
                          "if m.startswith('flowcert'))); print(flowcert.verify.__module__, flowcert.InputError.__module__)"],
                         capture_output=True, text=True, timeout=120)
    first, second = out.stdout.splitlines()
    assert first == "['flowcert']"
    assert second == "flowcert.api flowcert.errors"
    with pytest.raises(AttributeError):
        flowcert.no_such_name  # noqa: B018


def test_progress_bars_draw_only_when_asked_or_on_a_terminal():
    """``flowcert.progress.bar`` is tqdm on the stream when enabled (or on a TTY), silent otherwise;
    ``INHERIT`` follows the entry point's ``progress=`` (the particle study inside ``verify``)."""
    import io

    from flowcert import progress
    from flowcert.sweep import Progress

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    for enabled, stream, drawn in ((True, io.StringIO(), True), (None, io.StringIO(), False),
                                   (None, TTY(), True), (False, TTY(), False)):
        with progress.bar(3, desc="heads", enabled=enabled, stream=stream) as b:
            for _ in range(3):
                b.update(1)
        assert ("3/3" in stream.getvalue()) == drawn, (enabled, type(stream).__name__)
    for choice, drawn in ((True, True), (False, False)):
        stream = io.StringIO()
        with progress.inherited(choice):
            with progress.bar(2, desc="particles", enabled=progress.INHERIT, stream=stream) as b:
                b.update(2)
        assert ("2/2" in stream.getvalue()) == drawn
    tty = TTY()
    bar = Progress(2, tty, True)
    for status in ("ok", "bad_input"):
        bar.update({"status": status})
    assert "2/2" in tty.getvalue() and "1 failed" in tty.getvalue()


def test_systems_declare_the_exact_weight_slices_of_their_export():
    """recheck --checkpoint compares entry by entry what a system declares to be exact slices of a head's
    weights: attention's one-head Q and K (raw projections); gaussian's factors of B = K^T Q / sqrt(d_h) and
    V = W_O W_V (issue 45); a document with other than one head, or a B or V not factored, gives nothing to
    match (None), which the comparison refuses."""
    import numpy as np

    class Head:
        Q, K, V, O = np.ones((2, 3)), np.zeros((2, 3)), np.full((2, 3), 2.0), np.full((3, 2), 3.0)

    att = get_system("attention").weight_slices({"heads": [{"Q": 1, "K": 2, "V": 3}]}, Head)
    assert [(p, g) for p, g, _ in att] == [("heads[0].Q", 1), ("heads[0].K", 2)]
    assert att[0][2] is Head.Q and att[1][2] is Head.K
    assert [g for _, g, _ in get_system("attention").weight_slices({"heads": [{}, {}]}, Head)] == [None, None]
    gauss = get_system("gaussian").weight_slices({"B": {"factors": ["KT", "Q"]}, "V": {"factors": ["O", "W"]}}, Head)
    assert [(p, g) for p, g, _ in gauss] == [("B.factors[0]", "KT"), ("B.factors[1]", "Q"), ("V.factors[0]", "O"),
                                             ("V.factors[1]", "W")]
    for (_, _, W), want in zip(gauss, (Head.K.T, Head.Q, Head.O, Head.V)):
        np.testing.assert_array_equal(W, want)
    assert [g for _, g, _ in get_system("gaussian").weight_slices({"B": 1, "V": 2}, Head)] == [None] * 4
    assert get_system("rnn").weight_slices({}, Head) == []
