"""Tests for flowcert.reports.html (markdown-it-py + dollarmath -> standalone HTML, MathML math)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcert.reports.html import VERDICTS, markdown_to_html, render, write_report

SAMPLE = r"""# Stability certificate for `rnn-2` <draft>

The candidate $V(x) = x^\top P x$ is positive definite since $P \succ 0$.
It costs $5 and $6, and a literal \$ sign stays text.

$$
\dot V(x) = x^\top \left(A^\top P + P A\right) x \preceq 0,
\qquad
A = \begin{pmatrix} -1 & 2 \\ 0 & -3 \end{pmatrix}
$$

$$\operatorname{tr}(\Sigma) \in \mathbb{R}, \quad \mathrm{d}t, \quad A \otimes B$$

$$\lambda_{\max}\left(\tfrac12 (A + A^\top)\right) < 0$$

## Results

| check | verdict | note |
|:------|:-------:|-----:|
| Lyapunov | `holds` | **strict** |
| LMI | `fails` | *margin* 1 < 2 |

1. first, see [details](details.html)
2. second
   - nested `unknown`

- symbolic `agrees`
- numeric `disagrees`

```python
cost = "$5 and $x$"  # <script>alert(1)</script>
```

![phase portrait](plots/phase.png)
"""


class _TagCollector(HTMLParser):
    """Collects start tags, to check the output is well-formed enough to parse."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs |= {name for name, _ in attrs}


def _body(page: str) -> str:
    return page.split("<main", 1)[1].split(">", 1)[1].split("</main>", 1)[0]


def test_sample_math_count_and_no_fallbacks() -> None:
    page, fallbacks = render(SAMPLE, "sample")
    assert fallbacks == 0
    # 3 display formulas + 2 inline ones; "$5 and $6" and "\$" are not math.
    assert page.count("<math") == 5
    assert page.count('<math display="block"') == 3
    assert page.count('<math display="inline"') == 2
    assert "$5 and $6" in page


def test_pmatrix_and_symbols_convert() -> None:
    page = markdown_to_html(r"$$A = \begin{pmatrix} a & b \\ c & d \end{pmatrix}$$", "m")
    assert "<mtable>" in page
    assert page.count("<mtr>") == 2
    assert "pmatrix" not in page  # converted, not shown as source
    page, fallbacks = render(
        r"$\dot x$ $A^\top$ $P \succ 0$ $a \preceq b$ $\operatorname{tr} X$ "
        r"$\mathrm{d}t$ $\mathbb{R}$ $A \otimes B$ $\Sigma$",
        "m",
    )
    assert fallbacks == 0
    assert page.count("<math") == 9
    for char in ("\u02d9", "\u22a4", "\u227b", "\u2aaf", "\u211d", "\u2297", "\u03a3"):
        assert char in page


def test_offline_no_cdn_no_script() -> None:
    page = markdown_to_html(SAMPLE, "sample")
    assert "http" not in page  # no CDN, not even the MathML xmlns
    assert "<script" not in page.lower()
    assert page.lower().count("<link") == 1 and '<link rel="icon" href="data:,">' in page  # no favicon request
    assert "<style>" in page
    assert page.startswith("<!DOCTYPE html>")
    parser = _TagCollector()
    parser.feed(page)
    assert "script" not in parser.tags
    assert "math" in parser.tags


def test_html_escaping_outside_math() -> None:
    page = markdown_to_html("a < b & c > d <b>raw</b>\n\n# Head <i>x</i>", "T <&>")
    body = _body(page)
    assert "a &lt; b &amp; c &gt; d &lt;b&gt;raw&lt;/b&gt;" in body
    assert "<b>" not in body and "<i>" not in body
    assert "<title>T &lt;&amp;&gt;</title>" in page


def test_math_cannot_inject_markup() -> None:
    page, fallbacks = render(r"$\text{<script>alert(1)</script>}$ and $$\href{javascript:x}{y}$$", "x")
    assert "<script" not in page
    assert "javascript" not in page
    assert "&lt;script&gt;" in page
    assert fallbacks == 0


def test_code_blocks_and_spans_keep_dollars() -> None:
    md = "```\nprice = $5 + $x$ <tag>\n$$\\frac{1}{2}$$\n```\n\nInline `$y$` here."
    page, fallbacks = render(md, "c")
    assert fallbacks == 0
    assert "<math" not in page
    assert "price = $5 + $x$ &lt;tag&gt;" in page
    assert "$$\\frac{1}{2}$$" in page
    assert "<code>$y$</code>" in page


def test_table_renders() -> None:
    page = markdown_to_html(SAMPLE, "t")
    assert "<table>" in page and "</table>" in page
    assert len(re.findall(r"<th[ >]", page)) == 3
    assert page.count("<tr>") == 3
    assert 'style="text-align:center"' in page
    assert "1 &lt; 2" in page
    # GitHub tables split on every unescaped pipe: absolute values in cells use \lvert, \rvert
    page = markdown_to_html("| a | b |\n|---|---|\n| $\\lvert x\\rvert$ | 2 |", "t")
    assert page.count("<td") == 2
    assert "<math" in page


def test_verdict_badges() -> None:
    page = markdown_to_html(SAMPLE, "t")
    for word in ("holds", "fails", "unknown", "agrees", "disagrees"):
        assert f'<code class="verdict verdict-{word}">{word}</code>' in page
    for word in VERDICTS:
        assert f".verdict-{word}" in page  # styled in the inline CSS
    assert '<code class="verdict' not in markdown_to_html("`holdsx` and `x holds`", "t")


def test_block_structure() -> None:
    body = _body(markdown_to_html(SAMPLE, "t"))
    assert '<h1 id="stability-certificate-for-rnn-2-draft">' in body
    assert "<h2" in body
    assert "<ol>" in body and "<ul>" in body
    assert re.search(r"<li>second\s*<ul>\s*<li>nested", body)
    assert '<a href="details.html">details</a>' in body
    assert '<img src="plots/phase.png" alt="phase portrait">' in body
    assert '<pre><code class="language-python">' in body
    assert "<strong>strict</strong>" in body and "<em>margin</em>" in body


def test_display_math_inside_paragraph_uses_span() -> None:
    body = _body(markdown_to_html("before $$x^2$$ after", "t"))
    assert body.strip().startswith("<p>") and "<div" not in body
    assert '<span class="math-display"><math display="block">' in body


def test_unsafe_link_scheme_neutralised() -> None:
    page = markdown_to_html("[x](javascript:alert(1)) ![y](data:text/html,zz) [z](vbscript:x)", "t")
    assert "<a " not in page and "<img" not in page  # not links: shown as text
    assert "javascript:alert(1)" in page


def test_attribute_syntax_limited_to_id_and_class() -> None:
    body = _body(markdown_to_html("[s]{#row-1 .c onclick=x} ![i](a.png){onerror=y} "
                                  "[t]{#x style=\"color:red\"} [u]{id=\"a&quot;b\"}", "t"))
    assert '<span id="row-1" class="c">s</span>' in body
    assert "onclick=" not in body and 'onerror="' not in body and "style" not in body
    assert "<span>u</span>" in body  # an id with a quote is dropped
    parser = _TagCollector()
    parser.feed(body)
    assert parser.attrs <= {"id", "class", "src", "alt"}


def test_images_embedded_from_base(tmp_path: Path) -> None:
    from flowcert.reports.html import render_page

    png = bytes.fromhex("89504e470d0a1a0a")  # a PNG signature is enough for a data URI
    (tmp_path / "f.png").write_bytes(png)
    r = render_page("![cap](f.png) ![gone](g.png) ![up](../x.png)", "t", base=tmp_path)
    assert '<img src="data:image/png;base64,iVBORw0KGgo=" alt="cap">' in r.page
    assert r.images == ["f.png", "g.png", "../x.png"]
    assert r.missing_images == ["g.png", "../x.png"]


@pytest.mark.parametrize(
    "latex",
    [r"\frac{", r"\label{eq} x", "", r"\begin{pmatrix} a", "x^", r"\left( x"],
)
def test_bad_math_falls_back(latex: str) -> None:
    page, fallbacks = render(f"$${latex}$$\n\ntext", "t")
    if latex:
        assert fallbacks == 1
        assert '<code class="tex">' in page
    assert "<p>text</p>" in page


def test_fallback_escapes_source() -> None:
    page, fallbacks = render(r"$$<b> \frac{$$", "t")
    assert fallbacks == 1
    assert r'<code class="tex">&lt;b&gt; \frac{</code>' in page
    assert "<b>" not in _body(page)


@pytest.mark.parametrize("md, token", [
    ("## Multistability\n\n### Theorems\n\n$At an equal split point$ x$ ok", "$"),  # prose inside one $...$ pair
    ("## Consensus\n\n| a | b |\n|---|---|\n| $\\dot V=\\sum_k|\\dot y_k|$ | 0 |", "\\"),  # a pipe splits the cell
    ("## S\n\nThe rate \\lambda is bare TeX.", "\\lambda"),
    ("## S\n\nA literal \\$ sign.", "$"),
])
def test_strict_render_refuses_tex_outside_math(md: str, token: str) -> None:
    from flowcert.reports.html import TexLeakError, render_page

    with pytest.raises(TexLeakError) as err:
        render_page(md, strict=True)
    message = str(err.value)
    assert "section '" + md.split("\n", 1)[0][3:] + "'" in message  # names the section
    assert "Markdown source:" in message and token in message
    render_page(md)  # the lenient renderer (not used for reports) still renders it


def test_strict_render_accepts_math_code_and_pre() -> None:
    from flowcert.reports.html import render_page

    md = "## S\n\nInline $x^2$ and `$y$`, `\\lambda`.\n\n```\n$$\\frac12$$ \\sum\n```\n\n$$\\dot V\\le0$$\n"
    r = render_page(md, strict=True)
    assert r.page.count("<math") == 2


def test_strict_render_refuses_fallback_math() -> None:
    from flowcert.reports.html import TexLeakError, render_page

    with pytest.raises(TexLeakError):
        render_page("$$\\frac{$$", strict=True)


def test_write_report_is_strict(tmp_path: Path) -> None:
    from flowcert.reports.html import TexLeakError

    with pytest.raises(TexLeakError):
        write_report("# T\n\nstray $ here", tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_write_report(tmp_path: Path) -> None:
    md_path, html_path = write_report(SAMPLE, tmp_path / "out", stem="cert", strict=False)
    assert md_path == tmp_path / "out" / "cert.md"
    assert html_path == tmp_path / "out" / "cert.html"
    assert md_path.read_text(encoding="utf-8") == SAMPLE
    page = html_path.read_text(encoding="utf-8")
    assert page.count("<math") == 5
    assert "<title>Stability certificate for rnn-2 &lt;draft&gt;</title>" in page
    _, html2 = write_report("no heading", tmp_path, title="Custom", strict=False)
    assert "<title>Custom</title>" in html2.read_text(encoding="utf-8")


_MD_ALPHABET = st.sampled_from(
    list("abc xyz0123456789\n\t|-*#`$\\[]()!<>&\"'_{}^:.~=+")
    + ["<script>", "</script>", "$$", "```", "**", "\\begin{pmatrix}", "\\text{"]
    + ["javascript:", "\n\n", "1. ", "- ", "> "]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_never_crashes(text: str) -> None:
    page, fallbacks = render(text, text[:20])
    assert isinstance(page, str) and fallbacks >= 0
    assert "<script" not in page.lower()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MD_ALPHABET, max_size=60).map("".join))
def test_markdownish_text_never_crashes(text: str) -> None:
    page, fallbacks = render(text, "t")
    assert fallbacks >= 0
    assert "<script" not in page.lower()
    assert 'href="javascript' not in page.lower()
    assert "http" not in page


# ------------------------------------------------------------------ letters by meaning (issue 37)

LATIN = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize("variant", ["bold", "italic", "bold-italic", "script", "bold-script", "fraktur",
                                     "double-struck", "bold-fraktur", "sans-serif", "bold-sans-serif",
                                     "sans-serif-italic", "sans-serif-bold-italic", "monospace"])
def test_styled_letters_are_the_same_letters_in_their_style(variant: str) -> None:
    """Each styled letter is a different code point whose compatibility decomposition (NFKC, Unicode's own
    table, not ours) is the plain letter, and whose name says the style."""
    import unicodedata

    from flowcert.reports.letters import VARIANTS, styled

    out = styled(LATIN, variant)
    assert len(out) == len(LATIN)
    for plain_ch, ch in zip(LATIN, out):
        assert ch != plain_ch and unicodedata.normalize("NFKC", ch) == plain_ch, (variant, plain_ch, ch)
        name = unicodedata.name(ch)
        words = VARIANTS[variant].replace("DOUBLE-STRUCK", "DOUBLE-STRUCK").split()
        letterlike = {"SCRIPT": "SCRIPT", "FRAKTUR": "BLACK-LETTER", "DOUBLE-STRUCK": "DOUBLE-STRUCK"}
        assert all(w in name for w in words) or letterlike.get(VARIANTS[variant], "?") in name \
            or (variant == "italic" and name == "PLANCK CONSTANT"), (variant, name)
    assert styled("+ (1)", "bold") == "+ (𝟏)"  # operators keep their glyph, digits take the style


def test_styled_refuses_a_letter_without_its_style() -> None:
    from flowcert.reports.letters import styled

    with pytest.raises(ValueError, match="no script code point"):
        styled("1", "script")  # there is no script digit: a browser would show a plain 1


@pytest.mark.parametrize("latex, letters", [
    (r"x\in\mathbb R^d", "ℝ"), (r"\mathcal N(\mu,\Sigma)", "𝒩"), (r"\mathcal P\mathcal K\mathcal P^*", "𝒫𝒦𝒫"),
    (r"\mathbb E[x]", "𝔼"), (r"\Bbb R", "ℝ"), (r"\mathbf{x}", "𝐱"), (r"\boldsymbol{\mu}", "𝝁"), (r"\mathbb 1", "𝟙"),
    (r"i\mathbb{R}", "ℝ"), (r"\mathscr{L}", "ℒ"), (r"\mathfrak g", "𝔤"),
])
def test_math_letters_reach_the_page_as_unicode(latex: str, letters: str) -> None:
    from flowcert.reports.html import mathml

    out = mathml(latex, False)
    assert all(ch in out for ch in letters), out
    assert re.findall(r'mathvariant="([^"]*)"', out) == [], out  # nothing left for the browser to drop


def test_upright_letters_stay_upright() -> None:
    """``\\mathrm``: a one-letter ``<mi>`` keeps ``mathvariant="normal"`` (MathML Core honours it); a word
    of several letters is one ``<mi>`` (upright by itself)."""
    from flowcert.reports.html import mathml

    assert '<mi mathvariant="normal">d</mi>' in mathml(r"\mathrm{d}x", False)  # latex2mathml alone loses it
    assert '<mi mathvariant="normal">T</mi>' in mathml(r"x^\mathrm{T}", False)
    err = mathml(r"\mathrm{Err}_j", False)
    assert "<mi>Err</mi>" in err and "mathvariant" not in err


def test_strict_render_refuses_a_mathvariant_the_browser_drops() -> None:
    from flowcert.reports.html import TexLeakError, check_visible_text

    check_visible_text('<p><math><mi mathvariant="normal">d</mi></math></p>')  # kept by MathML Core
    for bad in ('<p><math><mi mathvariant="script">P</mi></math></p>',
                '<p><math><mn mathvariant="double-struck">1</mn></math></p>',
                '<p><math><mo mathvariant="normal">+</mo></math></p>'):
        with pytest.raises(TexLeakError, match="mathvariant"):
            check_visible_text(bad)


def test_a_style_without_letters_falls_back_and_strict_refuses() -> None:
    from flowcert.reports.html import TexLeakError, mathml, render_page

    with pytest.raises(ValueError, match="mathvariant"):
        mathml(r"\mathcal{1}", False)
    with pytest.raises(TexLeakError):
        render_page(r"Bad $\mathcal{1}$ letter.", strict=True)


@pytest.mark.parametrize("md", [
    "## S\n\nA name `stable_at_v_d_without_\\|lambda_d\\|>lambda_1` in code.",
    "## S\n\n``` x \\_y ```",
])
def test_strict_render_refuses_leaked_escapes(md: str) -> None:
    from flowcert.reports.html import TexLeakError, render_page

    with pytest.raises(TexLeakError, match="Markdown escape"):
        render_page(md, strict=True)


def test_inline_math_at_the_start_of_a_text_ending_in_a_digit() -> None:
    """``$a$ = 4`` is math (mdit-py-plugins read the text's last character as the one before ``$``)."""
    for md in ("$a$ = 4", "| q | v |\n|---|---|\n| $\\lambda$ = 4 | 1 |"):
        assert "<math" in markdown_to_html(md) and "$" not in _body(markdown_to_html(md))
    for md in ("costs 5$ and $3", "$a$5", "4$a$"):
        assert "<math" not in markdown_to_html(md)


# ------------------------------------------------------------------ tables that hold their numbers

def test_numeric_cells_never_wrap_and_tables_scroll_in_a_container() -> None:
    page = markdown_to_html("| head | tr U | range |\n|---|---|---|\n| x y | -16.381 | 1.2e-05 to 3.4 |\n"
                            "| z | `code` | 0.5 [0.4, 0.6] |")
    body = _body(page)
    assert body.count('<div class="table-wrap">') == 1 and body.count("</table>\n</div>") == 1
    assert '<td class="num">-16.381</td>' in body and '<td class="num">1.2e-05 to 3.4</td>' in body
    assert '<td class="num">0.5 [0.4, 0.6]</td>' in body
    assert "<td>x y</td>" in body and '<td class="num"><code>' not in body
    assert "overflow-wrap: anywhere" not in page.split("<style>")[1].split("pre {")[1].split("}")[1]  # only pre may break anywhere
    assert "th.num, td.num { white-space: nowrap" in page


def test_number_formatting_to_significance() -> None:
    from flowcert.reports.values import number, table_safe, value_markdown

    assert number(2.9999999999999925) == "3" and number(3.000000000000031) == "3"
    assert number(-1.021405182655144e-14) == "-1.021e-14" and number(12) == "12" and number(float("inf")) == "∞"
    assert value_markdown([[0.5357142857142857, 0.10714285714285712], [0.10714285714285712, 1.821428571428571]]) == \
        r"$\begin{pmatrix}0.5357 & 0.1071 \\ 0.1071 & 1.821\end{pmatrix}$"
    assert value_markdown({"name": "h", "status": "holds", "method": "m", "margin": 2.9999999999999925}) == \
        "`holds` h (decided by m; margin 3)"
    assert value_markdown(list(range(20))).endswith("…): 20 values")
    assert table_safe(r"a|b $\|x\| = |y|$") == r"a\|b $\Vert x\Vert  = \vert y\vert$"


def test_predictions_are_tables_of_math() -> None:
    from flowcert.reports.common import theorem_block
    from flowcert.reports.html import render_page

    rec = {"id": "multistability:obs-D3", "applies": True, "statement": "x", "hypotheses": [],
           "prediction": {"counts": {"stable_at_v_d_without_|lambda_d|>lambda_1": 0}, "Sigma_inf": [[1.0, 0.0], [0.0, 2.9999999999999925]]},
           "cross_check": {"status": "agrees", "details": {"margin": 2.9999999999999925}}}
    md = "\n".join(theorem_block(rec))
    assert "| quantity | value |" in md and "2.9999" not in md
    assert r"without $\lvert\lambda_d\rvert>\lambda_1$" in md  # the key as mathematics, safe in a table cell (no bare |)
    page = render_page(md, strict=True).page
    assert "\\|" not in page and "<table>" in page
