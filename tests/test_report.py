"""What the report says: sections, verdicts equal to ``flowcert verify``, figures, derivation status, CLI."""

from __future__ import annotations

import atexit
import functools
import json
import re
import shutil
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest
import sympy as sp

from flowcert import cli
from flowcert.reports import build
from flowcert.reports import gaussian as gsec
from flowcert.reports.common import hypothesis_markdown, split_formula, statement_markdown, theorem_anchor, verdict_word
from flowcert.reports.html import mathml


@functools.lru_cache(maxsize=1)
def quick_report() -> build.Report:
    """The quick report, built once per test session (the browser test imports this too)."""
    out = Path(tempfile.mkdtemp(prefix="flowcert-report-"))
    atexit.register(shutil.rmtree, out, True)
    return build.build_report(out, quick=True)


@pytest.fixture(scope="module")
def report() -> tuple[build.Report, str, dict[str, Any]]:
    rep = quick_report()
    return rep, (rep.out / "report.md").read_text(encoding="utf-8"), json.loads((rep.out / "report.json").read_text())


def _cells(line: str) -> list[str]:
    """Cells of a Markdown table row (pipes escaped with a backslash stay in the cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _block(md: str, theorem_id: str) -> str:
    """The Markdown of one theorem's block (from its anchored heading to the closing fence)."""
    heads = [m.start() for m in re.finditer(re.escape(f"#### [{theorem_id}]{{#{theorem_anchor(theorem_id)}}}"), md)]
    assert len(heads) == 1, theorem_id
    return md[heads[0]:md.index("\n::::\n", heads[0])]


def _verify_json(params: dict[str, Any] | Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    path = params if isinstance(params, Path) else tmp_path / "params.json"
    if not isinstance(params, Path):
        path.write_text(json.dumps(params))
    capsys.readouterr()
    assert cli.main(["verify", "gaussian", "--params", str(path), "--checks", ",".join(sorted(gsec.REPORT_CHECKS)),
                     "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_section_exists(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    rep, md, doc = report
    assert [s["key"] for s in doc["sections"]] == list(build.SECTIONS)
    page = (rep.out / "report.html").read_text(encoding="utf-8")
    for s in rep.sections:
        assert f"## [{s.title}]{{#sec-{s.key}}}" in md
        assert f'id="sec-{s.key}"' in page
        # the theorem graph has no parameters of its own; the pretrained section's verdicts are per head
        assert s.theorems or s.key in ("graph", "pretrained"), s.key
    anchors = re.findall(r'id="(thm-[^"]+)"', page)
    assert anchors and len(anchors) == len(set(anchors))  # each theorem row once: the front page's links are unambiguous
    for part in ("### Model", "### Derivations", "### Figure 1", "### Blow-up versus bounded", "### Errata",
                 "### Theorems and verdicts"):
        assert part in md


def test_gaussian_rows_carry_the_verdicts_of_verify(report: tuple[build.Report, str, dict[str, Any]],
                                                   tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, md, doc = report
    verified = _verify_json(gsec.EXAMPLE, tmp_path, capsys)["theorems"]
    in_report = next(s for s in doc["sections"] if s["key"] == "gaussian")["theorems"]
    assert [t["id"] for t in in_report] == [t["id"] for t in verified]
    for t in verified:
        word = f"`{verdict_word(t['applies'])}`"
        block = _block(md, t["id"])
        assert f"Verdict {word}," in block, t["id"]  # the section's theorem block
        front = [line for line in md.splitlines() if line.startswith(f"| [{t['id']}](#{theorem_anchor(t['id'])})")]
        assert len(front) == 1 and _cells(front[0])[2] == word  # the front page summary (id, label, verdict)
        items = [line for line in block.splitlines() if line.startswith("- `")]
        assert len(items) == len(t["hypotheses"])  # one list item per hypothesis, in order
        for item, h in zip(items, t["hypotheses"]):
            assert item.startswith(f"- `{h['status']}` **{hypothesis_markdown(h['name'])}**, decided by "), item


def test_figures_exist_and_are_referenced(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    rep, md, doc = report
    sources = build.image_sources(md)
    assert len(sources) == len(set(sources))
    listed = [f for s in doc["sections"] for f in s["figures"]]
    assert sorted(listed) == sorted(sources)
    for f in listed:
        data = (rep.out / f).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, f
    names = {Path(f).name for f in listed}
    assert {"figure1_mean_matching.png", "regimes_bounded_vs_blowup.png"} <= names
    # every caption states its protocol: parameters, seed (or deterministic), horizon, integrator, tolerances
    captions = re.findall(r"!\[(.*?)\]\(gaussian/", md)
    assert len(captions) == len([f for f in listed if f.startswith("gaussian/")])
    for cap in captions:
        assert "Protocol" in cap and ("seed" in cap or "deterministic" in cap) and "rtol" in cap, cap[:80]
        assert re.search(r"horizon \$?t=|times \[", cap), cap[:80]


def test_derivation_rows_say_checked_only_when_proved(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    from flowcert.symbolic import gaussian as sym
    from flowcert.symbolic.matrix import IdentityProof, check_all

    _, md, _ = report
    proofs = sym.proofs()
    assert md.count("simplifies to 0: checked") == sum(p.proved for p in proofs)
    # a false identity (transpose dropped) is not reported as checked
    wrong, right = check_all([
        IdentityProof("wrong", r"(AB)^\top = A^\top B^\top", (sym.A * sym.B).T, sym.A.T * sym.B.T),
        IdentityProof("right", r"(AB)^\top = B^\top A^\top", (sym.A * sym.B).T, sym.B.T * sym.A.T),
    ])
    assert not wrong.proved and right.proved
    rows = gsec.derivation_rows([wrong, right, IdentityProof("unchecked", "x", sym.A, sym.A)])
    assert "NOT PROVED" in rows[2] and "checked" not in rows[2].replace("NOT PROVED", "")
    assert rows[3].endswith("| simplifies to 0: checked |")
    assert "not checked" in rows[4]


def test_model_equations_come_from_sympy(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    from flowcert.symbolic import gaussian as sym

    _, md, _ = report
    for expr in (sym.mean_field(), sym.covariance_field(), sym.linearisation()):
        assert sp.latex(expr) in md


def test_pdf_printed_by_chromium_or_explained(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    rep, md, _ = report
    pdf = rep.out / "report.pdf"
    if build.chromium_binary() is None:
        assert "PDF: not produced" in md and "Chromium" in md
        return
    assert "printed by headless Chromium" in md and "every folded detail open" in md and rep.pdf in md
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-" and data.rstrip().endswith(b"%%EOF")
    assert len(data) > 500_000  # the figures are in it, not only text
    assert pdf in rep.files


def test_report_math_all_converts(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    rep, _, _ = report
    page = (rep.out / "report.html").read_text(encoding="utf-8")
    assert 'class="tex"' not in page and page.count("<math") > 50
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_sections_without_theorems_have_no_verdict_heading(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    rep, md, _ = report
    parts = re.split(r"^## \[", md, flags=re.M)
    for s in rep.sections:
        body = next(p for p in parts if p.startswith(f"{s.title}]{{#sec-{s.key}}}"))
        assert ("### Theorems and verdicts" in body) == bool(s.theorems), s.key
        assert body.count(":::: theorem") == len(s.theorems), s.key


def test_corrections_are_self_contained(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    """Every correction states the corrected mathematics and links to its erratum in the report; no
    reference to a note the reader cannot open is left in the text."""
    from flowcert.reports.errata import CORRECTIONS, ERRATA

    rep, md, doc = report
    page = (rep.out / "report.html").read_text(encoding="utf-8")
    corrected = [t for s in doc["sections"] for t in s["theorems"] if t.get("correction")]
    assert len(corrected) >= 20
    for t in corrected:
        assert t["id"] in CORRECTIONS, f"{t['id']}: correction without TeX and erratum (reports/errata.py)"
        block = _block(md, t["id"])
        anchor = f"erratum-{CORRECTIONS[t['id']].erratum}"
        assert f"*Corrected.* {CORRECTIONS[t['id']].text} See [erratum " in block and f"](#{anchor})." in block
        assert f'id="{anchor}"' in page
    assert {f"erratum-{e.key}" for e in ERRATA} <= set(re.findall(r'id="(erratum-[^"]+)"', page))
    text = "\n".join(line for line in md.splitlines() if not line.startswith("#### ["))  # source labels aside
    assert not re.search(r"\bnote (?:00\d|§)|\berratum \d|\bnote \d{3}", text, re.I), \
        re.search(r".{60}(?:\bnote (?:00\d|§)|\berratum \d).{20}", text, re.I)


def test_every_name_shown_is_mathematics(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    """Each hypothesis name and each prediction or measurement key of the report has its TeX, and the
    block shows the TeX, not the plain name."""
    from flowcert.reports.catalogue_tex import HYPOTHESIS_TEX, QUANTITY_TEX

    _, md, doc = report
    keys: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict) and not ({"kind", "claim"} <= set(x) or {"name", "status"} <= set(x)):
            for k, v in x.items():
                if k != "data":
                    keys.add(k)
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    for s in doc["sections"]:
        for t in s["theorems"]:
            block = _block(md, t["id"])
            for h in t["hypotheses"]:
                assert h["name"] in HYPOTHESIS_TEX, h["name"]
                assert f"**{HYPOTHESIS_TEX[h['name']]}**" in block
            walk(t.get("prediction") or {})
            walk((t.get("cross_check") or {}).get("details") or {})
    assert len(keys) > 150 and sorted(keys - set(QUANTITY_TEX)) == [], " ".join(sorted(keys - set(QUANTITY_TEX)))


def test_predictions_are_tables_with_numbers_to_significance(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    _, md, doc = report
    with_prediction = [t for s in doc["sections"] for t in s["theorems"] if t.get("prediction")]
    assert len(with_prediction) > 30
    for t in with_prediction:
        block = _block(md, t["id"])
        assert "**Prediction**\n\n| quantity | value |\n|---|---|\n" in block, t["id"]
        tables = "\n".join(line for line in block.splitlines() if line.startswith("|"))  # the records' own texts aside
        noisy = [x for x in re.findall(r"(?<![\d.])\d+\.\d+", tables) if len(x.replace(".", "").lstrip("0")) > 6]
        assert noisy == [], (t["id"], noisy)  # 2.9999999999999925 has 17 significant digits; shown, it is 3
        assert "..." not in block.split("**Prediction**")[1]  # nothing cut in the middle of a JSON text


def test_per_head_detail_is_grouped_and_in_a_csv(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    """The 72 MiniLM heads: one table row per verdict pattern (counts add up to 72) and every head in heads.csv."""
    import csv

    rep, md, doc = report
    sec = next(s for s in doc["sections"] if s["key"] == "pretrained")
    if not sec["figures"]:
        pytest.skip("the MiniLM package is not installed")
    assert sec["files"] == ["pretrained/heads.csv"]
    rows = list(csv.DictReader((rep.out / "pretrained" / "heads.csv").open()))
    assert len(rows) == 72 and {(int(r["layer"]), int(r["head"])) for r in rows} == {(a, b) for a in range(6) for b in range(12)}
    assert "[heads.csv](pretrained/heads.csv)" in md
    head = md.index("| heads | sym$(M)$ |")
    table = md[head:md.index("\n\n", head)].splitlines()[2:]
    assert 1 <= len(table) < 10 and sum(int(_cells(r)[0].split(":")[0]) for r in table) == 72
    for start in [m.start() for m in re.finditer(r"\| heads \| regime \|", md)]:  # the whole-model sweep tables
        sweep = md[start:md.index("\n\n", start)].splitlines()[2:]
        assert sum(int(_cells(r)[0].split(":")[0]) for r in sweep) == 72


def test_head_list_joins_runs() -> None:
    from flowcert.reports.pretrained import head_list

    assert head_list([(0, 0), (0, 1), (0, 2), (0, 5), (1, 3)]) == "L0: 0–2, 5; L1: 3"
    assert head_list([(a, b) for a in range(6) for b in range(12)]) == "L0–L5: 0–11"
    assert head_list([(2, 7), (2, 8)]) == "L2: 7, 8"


def test_every_report_system_has_its_section() -> None:
    from flowcert.reports.user import SECTIONS
    from flowcert.systems import names

    assert set(names("report")) <= set(SECTIONS)


def test_split_formula_pieces_are_formulas() -> None:
    latex = r"\rho_0=\mathcal N(\mu_0,\Sigma_0),\ \sigma=\mathrm{id}\ \Rightarrow\ \left(a, b\right),\quad x\in[0, T)"
    pieces = split_formula(latex)
    assert pieces == [r"\rho_0=\mathcal N(\mu_0,\Sigma_0),", r"\sigma=\mathrm{id}", r"\Rightarrow",
                      r"\left(a, b\right),", r"x\in[0, T)"]
    for p in pieces:
        assert "<math" in mathml(p, False)


def test_statements_are_text_with_inline_math(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    from flowcert.reports.html import render_page

    # prose written as \text{...} at the top of a formula comes out as prose between formulas
    assert statement_markdown(r"\text{The }g\text{-orthogonal map}\ \text{on}\ [0,T]") == "The $g$-orthogonal map on $[0,T]$"
    # a spacing command at a piece's edge is dropped, so no formula ends in a backslash ("\$")
    assert statement_markdown(r"x\ (\ell=2:\ \text{from all } y\ne0)") == r"$x$ $(\ell=2:$ from all $y\ne0)$"
    # text that already carries its $...$ is kept as written
    assert statement_markdown("At $v_1$: stable.") == "At $v_1$: stable."
    _, _, doc = report
    for s in doc["sections"]:
        for t in s["theorems"]:
            md = statement_markdown(t["statement"] or "")
            assert not re.search(r"\$\\text\{", md), t["id"]  # no formula opens with prose
            render_page(md, strict=True)  # no TeX outside math, every formula converts


def test_rate_fit_interval_covers_the_true_slope() -> None:
    """The slope interval of :func:`fit_rate` has its nominal coverage on synthetic power laws."""
    import numpy as np

    rng = np.random.default_rng(1)
    Ns = np.array([50, 100, 200, 400, 800])
    covered = sum(gsec.fit_rate(Ns, 0.3 * Ns ** -0.5 * np.exp(0.4 * rng.standard_normal((16, 5)))).contains(-0.5)
                  for _ in range(200))
    assert 178 <= covered <= 199  # Binomial(200, 0.95): mean 190, sd 3.1
    wrong = gsec.fit_rate(Ns, 0.3 * Ns ** -0.25 * np.exp(0.4 * rng.standard_normal((16, 5))))
    assert not wrong.contains(-0.5) and wrong.hi - wrong.lo < 0.25  # a wrong rate is refused, not drowned in noise


def test_report_particle_interval_contains_minus_half(report: tuple[build.Report, str, dict[str, Any]]) -> None:
    """The quick report's Prop. 2.1 figure states a slope interval that contains -1/2, in text and caption."""
    _, md, _ = report
    m = re.search(r"\$s=(-?[\d.]+)\$, 95% confidence interval \$\[(-?[\d.]+),(-?[\d.]+)\]\$ \(contains the theory's", md)
    assert m, "the particle slope and its interval are stated"
    s, lo, hi = map(float, m.groups())
    assert lo <= -0.5 <= hi and lo < s < hi and hi - lo < 0.4
    assert f"fitted slope {s:.3f} [{lo:.3f}, {hi:.3f}] (95% interval), which contains the theory's -1/2" in md


@pytest.mark.slow
def test_particle_rate_interval_contains_minus_half() -> None:
    """Prop. 2.1 on the light-tailed parameters: the quick build's slope interval contains -1/2 (seeded)."""
    from flowcert.gaussian.params import parse_gaussian

    proto = gsec.PARTICLE_RATE["quick"]
    fit = gsec.particle_rate(parse_gaussian(gsec.LIGHT_EXAMPLE), 0.5, proto["Ns"], proto["runs"], proto["seed"])
    assert fit.errors.shape == (proto["runs"], len(proto["Ns"]))
    assert fit.contains(-0.5), (fit.slope, fit.lo, fit.hi)
    assert fit.hi - fit.lo < 0.4  # informative: it excludes -1 and 0
    assert not fit.contains(0.0) and not fit.contains(-1.0)


# ------------------------------------------------------------------ the section contract


def _fake_section(monkeypatch: pytest.MonkeyPatch, body: Any) -> None:
    module = types.ModuleType("flowcert.reports.fakepaper")
    module.section = body  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flowcert.reports.fakepaper", module)
    monkeypatch.setattr(build, "SECTIONS", ("fakepaper",))


def test_a_section_that_raises_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(out: Path, *, quick: bool) -> dict[str, Any]:
        raise ZeroDivisionError("inside the section")
    _fake_section(monkeypatch, boom)
    with pytest.raises(build.SectionError, match="fakepaper.*ZeroDivisionError"):
        build.build_report(tmp_path, quick=True)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("case", ["missing", "unreferenced", "dangling", "shape"])
def test_section_contract_is_enforced(case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def body(out: Path, *, quick: bool) -> Any:
        (out / "f.png").write_bytes(b"\x89PNG")
        if case == "shape":
            return {"title": "t", "markdown": "m"}
        md = {"missing": "![c](g.png)", "unreferenced": "text", "dangling": "![c](f.png) ![d](h.png)"}[case]
        return {"title": "T", "markdown": md, "theorems": [], "figures": ["g.png" if case == "missing" else "f.png"]}
    _fake_section(monkeypatch, body)
    with pytest.raises(build.SectionError):
        build.build_report(tmp_path, quick=True)


def test_images_rebased_into_section_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def body(out: Path, *, quick: bool) -> Any:
        (out / "f.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        rec = {"id": "gaussian:thm-9", "applies": None, "cross_check": {"status": "skipped", "details": {}},
               "statement": r"\|x\| \le |y|", "hypotheses": [{"name": "h|1", "status": "unknown", "method": "m"}]}
        return {"title": "T", "markdown": "![cap f.png](f.png) and `f.png`", "theorems": [rec], "figures": ["f.png"]}
    _fake_section(monkeypatch, body)
    build.build_report(tmp_path, quick=True)
    md = (tmp_path / "report.md").read_text()
    assert "![cap f.png](fakepaper/f.png) and `f.png`" in md
    block = _block(md, "gaussian:thm-9")
    assert r"**Statement.** $\|x\| \le |y|$" in block and "Verdict `undecided`," in block
    assert "- `unknown` **h\\|1**, decided by m" in block
    assert 'src="data:image/png;base64,' in (tmp_path / "report.html").read_text()


# ------------------------------------------------------------------ command line


@pytest.mark.parametrize("args, key", [
    (["--only", "nonsense"], "--only"),
    (["--out", "{file}"], "--out"),
    (["--params", "{missing}"], "params"),
    (["--params", "{params}", "--system", "nosuch"], "--system"),
    (["--params", "{params}", "--only", "gaussian"], "--only"),
    (["--quick", "--bogus"], "unrecognized"),
])
def test_report_bad_input_exits_2_with_one_line(args: list[str], key: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "p.json").write_text(json.dumps(gsec.EXAMPLE))
    subs = {"{file}": str(tmp_path / "a_file"), "{missing}": str(tmp_path / "nope.json"), "{params}": str(tmp_path / "p.json")}
    argv = ["report", "--out", str(tmp_path / "out"), *[subs.get(a, a) for a in args]]
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and key in err and "Traceback" not in err
    assert not (tmp_path / "out" / "report.html").exists()


@pytest.mark.slow
def test_params_report_matches_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = Path(__file__).parent / "data" / "gaussian_stable_2d.json"
    assert cli.main(["report", "--params", str(data), "--out", str(tmp_path / "out"), "--quick"]) == 0
    md = (tmp_path / "out" / "report.md").read_text()
    verified = _verify_json(data, tmp_path, capsys)["theorems"]
    assert "Your parameters" in md
    for t in verified:
        assert f"Verdict `{verdict_word(t['applies'])}`," in _block(md, t["id"])
