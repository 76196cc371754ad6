"""Maths as maths (issue 47, item 1): every formula the report and the notebook views show is MathML.

A record's texts (a hypothesis' method and detail, a prediction, a cross-check's reason and criterion,
the theorem graph's errata) write their formulas as TeX between ``$`` (``exact rational $LDL^\\top$``);
the report (:func:`flowcert.reports.common.plain`) and the notebook views (:mod:`flowcert.display`)
draw them as MathML. These tests read the prose a reader sees, with ``<math>``, ``<code>``, ``<pre>``,
``<script>`` and ``<style>`` taken out, and refuse formulas written as ASCII (``||Bx||^2``,
``lambda_max``, ``eta(B+B^T) <= 0``) or as raw TeX.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import flowcert
from flowcert.reports.common import plain
from flowcert.reports.html import render

#: What a formula written as ASCII or raw TeX looks like in prose.
ASCII_MATHS = re.compile(
    r"\^|_\{|\\[A-Za-z]+|\|\||<=|>=|!=|\+-|\blambda|\bsigma(?!oid)|\bSigma|\brho_|\bmu\(|\bPhi\b|\beta\(|"
    r"\bsum_|\bmax_|\bmin_|\bx_t\b|\balpha_|\bbeta\b|\bkappa\b|\bsqrt\(")

#: Texts that flowcert.certificates still words in ASCII (its certificates' claims). Each entry must still
#: occur in the report (the last test below), so the list only shrinks.
PENDING_IN_CERTIFICATES: tuple[str, ...] = ()  # certificate claims are shown verbatim in code font (their terms are
# JSON paths, and flowcert recheck compares the string as it is): none of flowcert's texts is left in ASCII maths

_HIDDEN = {"math", "code", "pre", "script", "style", "title", "head"}
_BLOCKS = {"p", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "div", "tr", "br", "summary", "dt", "dd"}


class _Prose(HTMLParser):
    """The page's visible prose, one line per block, formulas and code replaced by a placeholder."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden, self.buf, self.lines = 0, [], []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._flush()
        if tag in _HIDDEN:
            if not self.hidden and tag in ("math", "code"):
                self.buf.append(" ⟨formula⟩ " if tag == "math" else " ⟨code⟩ ")
            self.hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        if tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.buf.append(data)

    def _flush(self) -> None:
        line = " ".join("".join(self.buf).split())
        if line:
            self.lines.append(line)
        self.buf = []


def prose_lines(page: str) -> list[str]:
    parser = _Prose()
    parser.feed(page)
    parser.close()
    parser._flush()
    return parser.lines


def ascii_maths(page: str) -> list[str]:
    """The lines of a page's prose that show a formula as ASCII or raw TeX."""
    return [line for line in prose_lines(page) if ASCII_MATHS.search(line)]


@pytest.fixture(scope="module")
def page() -> str:
    from test_report_browser import built_report

    return (built_report() / "report.html").read_text(encoding="utf-8")


def test_the_check_sees_ascii_maths_and_not_mathml_or_code() -> None:
    md = ("Decided by exact Rayleigh quotients ||Bx||^2/||x||^2.\n\n"
          "Decided by exact Rayleigh quotients $\\lVert Bx\\rVert^2/\\lVert x\\rVert^2$, key `lambda_max(A + A^T)`.\n\n"
          "| why |\n|---|\n| with eta(B+B^T) = 0 |\n")
    page, fallbacks = render(md)
    assert fallbacks == 0
    assert ascii_maths(page) == ["Decided by exact Rayleigh quotients ||Bx||^2/||x||^2.", "with eta(B+B^T) = 0"]


def test_a_record_text_keeps_its_formulas_and_escapes_its_prose() -> None:
    assert plain(r"exact rational $LDL^\top$ *twice*") == r"exact rational $LDL^\top$ \*twice\*"
    assert plain(r"$\eta(B+B^\top)\prec0$ (eq. (12)): the subspace is $\{0\}$") == \
        r"$\eta(B+B^\top)\prec0$ (eq. (12)): the subspace is $\{0\}$"
    # a lone dollar, TeX outside a formula or a formula that does not convert: the whole text as code
    assert plain("costs $5 and $6") == "`costs $5 and $6`"
    assert plain(r"a \lambda outside") == r"`a \lambda outside`"
    assert plain(r"$\frac$ is not a formula").startswith("`")


def test_report_prose_has_no_ascii_or_raw_tex_maths(page: str) -> None:
    left = [line for line in ascii_maths(page) if not any(p in line for p in PENDING_IN_CERTIFICATES)]
    assert not left, f"{len(left)} line(s) of prose show maths as ASCII or TeX; write them as $…$ TeX at their " \
                     "source:\n  " + "\n  ".join(line[:200] for line in left[:20])


def test_the_pending_list_only_shrinks(page: str) -> None:
    text = "\n".join(prose_lines(page))
    gone = [p for p in PENDING_IN_CERTIFICATES if p not in text]
    assert not gone, f"no longer in the report, drop from PENDING_IN_CERTIFICATES: {gone}"


def test_theorem_graph_errata_are_maths(page: str) -> None:
    assert "eta(B+B^T)" not in page and "e^{lambda_j t}" not in page
    assert page.count("<math") > 1000


# ---------------------------------------------------------------------------
# the notebook views (flowcert.display)
# ---------------------------------------------------------------------------

README = {"A": -np.eye(2), "B": np.eye(2) / 2, "V": -np.eye(2) / 5, "b": np.zeros(2), "mu0": np.ones(2),
          "Sigma0": np.eye(2)}


def _outside_math(page: str) -> str:
    return re.sub(r"<math.*?</math>|<code.*?</code>|<style>.*?</style>", " ", page, flags=re.S)


@pytest.fixture(scope="module")
def readme() -> flowcert.Result:
    return flowcert.verify("gaussian", README)


def test_views_show_methods_details_and_predictions_as_mathml(readme: flowcert.Result) -> None:
    with_maths = 0
    for tid, t in readme.theorems.items():
        views = [t._repr_html_(), *(h._repr_html_() for h in t.hypotheses)]
        for view in views:
            outside = _outside_math(view)
            assert "$" not in outside and not re.search(r"\\[A-Za-z]+", outside), (tid, outside[:300])
        texts = [h.method for h in t.hypotheses] + [h.detail or "" for h in t.hypotheses]
        texts += [v for v in (t.prediction or {}).values() if isinstance(v, str)]
        with_maths += sum("$" in x for x in texts)
    assert with_maths >= 5
    law = readme.theorems["gaussian:prop-2.1"]
    assert "$" in law.prediction["law"] and "<math" in law._repr_html_() and "rho_t" not in law._repr_html_()
    table = readme._repr_html_()
    assert "$" not in _outside_math(table)


def test_a_cut_method_never_cuts_a_formula() -> None:
    from flowcert.display import _prose

    html = _prose(r"exact bounds of $\alpha$, $\lambda_{\min}(V)$, $\lambda_{\min}(B)$ (below)", 30)
    assert "$" not in html and html.count("<math") == 1 and html.endswith("…")  # cut before the second formula
