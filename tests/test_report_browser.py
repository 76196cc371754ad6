"""The HTML report in a real browser: headless Debian Chromium driven by Selenium + chromedriver.

The report (``flowcert report --quick``) is served on localhost and opened in Chromium; the test
checks what a reader sees: the math renders (MathML elements with non-zero size) with its letters
by meaning drawn (ℝ and 𝒦 are glyphs of their own, not ``R``/``K`` and not a missing-glyph box:
compared in screenshots), no ``mathvariant`` is left for the browser to drop, no TeX is left
outside math (``$`` or ``\\command`` in the visible text, no ``<merror>``), theorem blocks are full
width, every figure loads and, at 800 px, is shown at 60 % of its natural width or more (a
multi-panel figure switches to its two-row form), no table cell breaks a number across lines
(each number's text range has one line box) and the page never scrolls sideways (a wide table
scrolls in its own box), every internal link resolves to an element, and the page makes no request
outside localhost (Performance resource entries and the DevTools network log). Screenshots at
1280 px and 800 px (front page, theorem blocks, the grouped per-head tables, a multi-panel and a
graph figure, the ℝ/𝒦 glyphs) are saved in ``reports/out/browser`` (or ``$FLOWCERT_SCREENSHOTS``)
for a person to look at.

When Chromium, chromedriver or selenium is missing the test is skipped with a loud reason;
under ``CI=true`` or ``FLOWCERT_REQUIRE_BROWSER=1`` (set by ``.ci/run``) that is a failure instead;
``make test`` installs them first (``make browser-deps``: apt-get as root). ``FLOWCERT_REPORT_OUT``
names an already built quick report to check instead of building one.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import socketserver
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver")


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package (pip install -e '.[test]')"
    if CHROMIUM is None:
        return "Debian's chromium (apt-get install -y chromium chromium-driver)"
    if CHROMEDRIVER is None:
        return "Debian's chromium-driver (apt-get install -y chromium-driver)"
    return None


def _require_browser() -> None:
    missing = _missing()
    if missing is None:
        return
    message = f"BROWSER TEST NOT RUN: missing {missing}; the HTML report is untested in a browser"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("FLOWCERT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{message} (CI / FLOWCERT_REQUIRE_BROWSER=1: the browser test must run)")
    warnings.warn(message, stacklevel=2)
    sys.stderr.write(f"\n*** {message} ***\n")
    pytest.skip(message)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


@contextlib.contextmanager
def chromium_driver(prefix: str) -> Iterator[Any]:
    """Headless Chromium under chromedriver, offline flags, a fresh profile (removed after), 1280 x 1600."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix=prefix)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1600"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.set_page_load_timeout(120)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def built_report() -> Path:
    """The quick report's folder: ``$FLOWCERT_REPORT_OUT`` (an already built ``flowcert report --quick``
    output, to look again without rebuilding) or the session's own quick build (shared with the content
    tests)."""
    given = os.environ.get("FLOWCERT_REPORT_OUT")
    if given:
        return Path(given).resolve()
    from test_report import quick_report

    return quick_report().out


@pytest.fixture(scope="module")
def served_report() -> Iterator[tuple[str, Path]]:
    """Build the quick report and serve its folder on 127.0.0.1 (a free port)."""
    _require_browser()
    out = built_report()
    handler = functools.partial(_Quiet, directory=str(out))
    with socketserver.TCPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/report.html", out
        finally:
            httpd.shutdown()


@pytest.fixture(scope="module")
def browser(served_report: tuple[str, Path]) -> Iterator[Any]:
    with chromium_driver("flowcert-chromium-") as driver:
        driver.get(served_report[0])
        driver.execute_script("return document.fonts ? document.fonts.ready : null")
        yield driver


def _screenshot_dir() -> Path:
    path = Path(os.environ.get("FLOWCERT_SCREENSHOTS", ROOT / "reports" / "out" / "browser"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_math_renders_as_mathml(browser: Any) -> None:
    sizes = browser.execute_script(
        "return Array.from(document.querySelectorAll('math')).map(m => {"
        "const r = m.getBoundingClientRect(); return [r.width, r.height, m.namespaceURI];});")
    assert len(sizes) >= 20
    assert all(ns == "http://www.w3.org/1998/Math/MathML" for _, _, ns in sizes)  # parsed as MathML
    assert all(w > 0 and h > 0 for w, h, _ in sizes), [s for s in sizes if not (s[0] > 0 and s[1] > 0)][:5]
    # a fraction is laid out as a fraction: numerator above denominator
    stacked = browser.execute_script(
        "const f = document.querySelector('mfrac'); if (!f) return null;"
        "const [a, b] = f.children; return a.getBoundingClientRect().bottom <= b.getBoundingClientRect().top + 1;")
    assert stacked in (True, None)
    assert browser.execute_script("return document.querySelectorAll('code.tex').length") == 0  # no fallbacks


def test_every_figure_loads(browser: Any, served_report: tuple[str, Path]) -> None:
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.src.slice(0, 22)]);")
    figures = json.loads((served_report[1] / "report.json").read_text())
    expected = sum(len(s["figures"]) for s in figures["sections"])
    assert len(images) == expected > 0
    for complete, width, height, src in images:
        assert complete and width > 0 and height > 0, src
        assert src.startswith("data:image/png;base64"), src  # embedded: the page is one file


def test_internal_links_resolve(browser: Any) -> None:
    targets = browser.execute_script(
        "return Array.from(document.querySelectorAll('a[href^=\"#\"]')).map(a => a.getAttribute('href'));")
    assert len(targets) >= 10
    unresolved = [t for t in targets if not browser.execute_script(
        "return document.getElementById(decodeURIComponent(arguments[0].slice(1))) !== null;", t)]
    assert unresolved == []
    # every summary link lands on its theorem's block in the section
    links = browser.execute_script("return Array.from(document.querySelectorAll('a[href^=\"#thm-\"]')).map(a => a.getAttribute('href'));")
    assert len(links) >= 30
    in_block = browser.execute_script(
        "return arguments[0].filter(h => document.getElementById(h.slice(1)).closest('div.theorem') !== null).length;", links)
    assert in_block == len(links)


_TEX = r"\$|\\[A-Za-z]+"


def test_no_tex_outside_math(browser: Any) -> None:
    """The rendered DOM shows no ``$`` and no ``\\command`` outside code/pre/math, and no ``<merror>``."""
    # innerText is what a reader sees: open every <details>, hide code/pre/math, read body.innerText
    visible = browser.execute_script(
        "const open = Array.from(document.querySelectorAll('details:not([open])'));"
        "open.forEach(d => d.open = true);"
        "const hidden = Array.from(document.querySelectorAll('code, pre, math'));"
        "const saved = hidden.map(e => e.style.display); hidden.forEach(e => e.style.display = 'none');"
        "const text = document.body.innerText;"
        "hidden.forEach((e, i) => e.style.display = saved[i]); open.forEach(d => d.open = false);"
        "return text;")
    assert len(visible) > 10_000
    leaks = [visible[max(0, m.start() - 60):m.end() + 60] for m in re.finditer(_TEX, visible)]
    assert leaks == []
    # and every text node in the DOM (captions, closed details, alt-free text) outside those elements
    nodes = browser.execute_script(
        "const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); const out = [];"
        "while (w.nextNode()) { const n = w.currentNode;"
        "  if (!n.parentElement.closest('code, pre, math, style, script')) out.push(n.textContent); }"
        "return out;")
    assert [n for n in nodes if re.search(_TEX, n)] == []
    assert browser.execute_script("return document.getElementsByTagName('merror').length") == 0
    assert browser.execute_script("return document.getElementsByTagNameNS('http://www.w3.org/1998/Math/MathML', 'merror').length") == 0


def test_theorem_blocks_readable(browser: Any) -> None:
    """One block per theorem; hypotheses are list items (badge first) whose details fold in <details>."""
    blocks = browser.execute_script(
        "return Array.from(document.querySelectorAll('div.theorem')).map(b => ["
        " b.querySelector('h4 [id^=\"thm-\"]') !== null,"
        " Array.from(b.querySelectorAll(':scope > ul')).filter(u => (u.previousElementSibling || {}).textContent === 'Hypotheses')"
        "  .flatMap(u => Array.from(u.children)).map(li => li.firstElementChild ? li.firstElementChild.className : ''),"
        " b.getBoundingClientRect().width]);")
    assert len(blocks) >= 30
    main_width = browser.execute_script("return document.querySelector('main').getBoundingClientRect().width")
    assert sum(len(items) for _, items, _ in blocks) >= 100  # the hypotheses were found
    for anchored, items, width in blocks:
        assert anchored
        assert all(c.startswith("verdict ") for c in items)  # each hypothesis starts with its status badge
        assert width > 0.9 * main_width  # a full-width block, not a narrow table column
    assert browser.execute_script("return document.querySelectorAll('div.theorem details > summary').length") > 20


#: Every number of every table cell (outside MathML, which never breaks) whose text range spans
#: more than one line box: a number broken in the middle.
_BROKEN_NUMBERS = r"""
const re = /(?<![\w.])[-+\u2212]?\d[\d.,]*(?:[eE][-+\u2212]?\d+)?(?!\w)/g;
const opened = Array.from(document.querySelectorAll('details:not([open])'));
opened.forEach(d => d.open = true);
const broken = []; let numbers = 0;
for (const cell of document.querySelectorAll('td, th')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('math')) continue;
    re.lastIndex = 0; let m;
    while ((m = re.exec(node.data))) {
      if (m[0].length < 2) continue;
      numbers += 1;
      const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0).map(x => Math.round(x.top)));
      if (tops.size > 1) broken.push(m[0] + ' in: ' + cell.textContent.slice(0, 80));
    }
  }
}
opened.forEach(d => d.open = false);
return [numbers, broken];
"""


def _at_width(browser: Any, width: int) -> None:
    """Resize the window and wait until every image has loaded the source this width selects."""
    import time

    browser.set_window_size(width, 1400)
    for _ in range(100):
        if browser.execute_script("return Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"):
            return
        time.sleep(0.05)


@pytest.mark.parametrize("width", [1280, 800])
def test_tables_hold_their_numbers(browser: Any, width: int) -> None:
    """No cell breaks a number; a table wider than the column scrolls in its own box, never the page."""
    _at_width(browser, width)
    try:
        numbers, broken = browser.execute_script(_BROKEN_NUMBERS)
        assert numbers > 500  # the check saw the tables' numbers
        assert broken == [], broken[:10]
        overflow = browser.execute_script(
            "const main = document.querySelector('main').getBoundingClientRect();"
            "return Array.from(document.querySelectorAll('.table-wrap, div.theorem, img, .math-display'))"
            ".filter(t => t.getBoundingClientRect().right > main.right + 1).map(t => t.textContent.slice(0, 80));")
        assert overflow == []
        assert browser.execute_script("const e = document.documentElement; return e.scrollWidth <= e.clientWidth")
        # a wide table scrolls inside its box (the box never clips it without a scroll bar)
        clipped = browser.execute_script(
            "return Array.from(document.querySelectorAll('.table-wrap')).filter(w => w.scrollWidth > w.clientWidth + 1"
            " && getComputedStyle(w).overflowX !== 'auto').length;")
        assert clipped == 0
    finally:
        _at_width(browser, 1280)


def test_images_keep_their_size_at_800_px(browser: Any) -> None:
    """At 800 px no figure is scaled below 60 % of its natural width: multi-panel figures switch to
    their two-row form (``<picture>``), and every figure was made for the column."""
    _at_width(browser, 800)
    try:
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.clientWidth, i.naturalWidth, i.currentSrc.length,"
            " i.parentElement.tagName, i.alt.slice(0, 60)]);")
        assert len(images) > 10
        small = [(round(w / n, 2), alt) for w, n, _, _, alt in images if w < 0.6 * n]
        assert small == []
        pictures = [i for i in images if i[3] == "PICTURE"]
        assert len(pictures) >= 5  # the multi-panel figures
    finally:
        _at_width(browser, 1280)
    wide = browser.execute_script("return Array.from(document.querySelectorAll('picture img')).map(i => i.naturalWidth);")
    assert [w for w, (_, n, _, _, _) in zip(wide, pictures) if w <= n] == []  # at 1280 px the one-row form is wider


def test_no_mathvariant_left_for_the_browser_to_drop(browser: Any) -> None:
    left = browser.execute_script(
        "return Array.from(document.querySelectorAll('[mathvariant]')).map(e => [e.localName,"
        " e.getAttribute('mathvariant'), e.textContent, getComputedStyle(e).textTransform]);")
    # MathML Core keeps only mathvariant="normal" on a one-letter <mi> (it turns off the automatic italic)
    assert [x for x in left if not (x[0] == "mi" and x[1] == "normal" and len(x[2]) == 1)] == []
    assert all(x[3] == "none" for x in left), left[:5]  # the browser applied it: no math-auto italic


def _png(data: bytes) -> Any:
    import io

    from matplotlib import image

    return image.imread(io.BytesIO(data), format="png")


@pytest.mark.parametrize("letter, plain_letter", [("ℝ", "R"), ("𝒦", "K")])
def test_letters_by_meaning_are_drawn(browser: Any, letter: str, plain_letter: str) -> None:
    """The page's ℝ and 𝒦 are drawn as such: in a screenshot the letter differs from its plain twin and
    from a code point no font has (a missing-glyph box), and has ink."""
    import numpy as np

    found = browser.execute_script(
        "return Array.from(document.querySelectorAll('mi')).filter(m => m.textContent === arguments[0]).length;", letter)
    assert found > 0, f"no {letter} in the page"
    browser.execute_script(
        "const box = document.createElement('div'); box.id = 'glyph-probe';"
        "box.style.cssText = 'position:fixed;top:10px;left:10px;background:#fff;font-size:72px;z-index:9;padding:12px';"
        "box.innerHTML = arguments[0].map((c, i) => `<math id=\"probe-${i}\"><mi>${c}</mi></math>`).join(' ');"
        "document.body.appendChild(box);", [letter, plain_letter, "\U000F0000"])
    try:
        from selenium.webdriver.common.by import By

        shots = [browser.find_element(By.ID, f"probe-{i}").screenshot_as_png for i in range(3)]
        (_screenshot_dir() / f"glyph_{plain_letter}.png").write_bytes(browser.find_element(By.ID, "glyph-probe").screenshot_as_png)
    finally:
        browser.execute_script("document.getElementById('glyph-probe').remove();")
    drawn, twin, missing = (_png(x)[..., :3] for x in shots)
    assert (drawn < 0.5).mean() > 0.01  # ink
    for other in (twin, missing):
        assert drawn.shape != other.shape or not np.array_equal(drawn, other)


def test_no_request_outside_localhost(browser: Any, served_report: tuple[str, Path]) -> None:
    entries = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat(performance.getEntriesByType('navigation').map(e => e.name));")
    urls = set(entries)
    for item in browser.get_log("performance"):
        msg = json.loads(item["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.add(msg["params"]["request"]["url"])
    assert served_report[0] in urls  # the log did record the page itself
    # chrome:// and data: are the browser's own resources; anything that goes over a network is checked
    network = [u for u in urls if urlparse(u).scheme not in ("data", "chrome", "blob", "about")]
    outside = [u for u in network if urlparse(u).scheme not in ("http", "https")
               or urlparse(u).hostname not in ("127.0.0.1", "localhost")]
    assert outside == []
    assert all(u == served_report[0] for u in network), network  # the page loads nothing else, not even locally


def test_screenshots(browser: Any) -> None:
    """Front page, theorem blocks (ℝ in the pretrained section, 𝒦 in KPFlow), the grouped per-head tables,
    a multi-panel figure and a theorem graph at 1280 px and 800 px, saved for a person to look at."""
    folder = _screenshot_dir()
    views = (("front_page", "window.scrollTo(0, 0);"),
             ("gaussian_theorems", "document.getElementById('thm-gaussian-thm-4-7-1').scrollIntoView();"),
             ("multistability_theorem", "document.getElementById('thm-multistability-obs-D3').scrollIntoView();"),
             ("kpflow_theorem", "document.getElementById('thm-kpflow-prop-1').scrollIntoView();"),
             ("pretrained_tables", "document.getElementById('heads-in-the-papers-conventions').scrollIntoView();"),
             ("multipanel_figure", "document.querySelector('picture').scrollIntoView();"),
             ("graph_figure", "document.getElementById('sec-graph').scrollIntoView();"
                              "document.querySelectorAll('#sec-graph ~ p img, img[alt^=\"Theorem graph\"]')[1].scrollIntoView();"),
             ("errata", "document.getElementById('sec-errata').scrollIntoView();"))
    try:
        for width in (1280, 800):
            _at_width(browser, width)
            for name, script in views:
                browser.execute_script(script)
                path = folder / f"{name}_{width}.png"
                assert browser.save_screenshot(str(path))
                assert path.stat().st_size > 10_000
    finally:
        _at_width(browser, 1280)


@pytest.mark.parametrize("width", [1280, 800])
def test_code_spans_and_ids_never_break_inside(browser: Any, width: int) -> None:
    """A key, a theorem id or a file name in code font stays on one line (never "gaussian:assumption-" / "12");
    a command breaks only at its spaces (each word is one span)."""
    _at_width(browser, width)
    try:
        spans, broken = browser.execute_script(
            "const codes = Array.from(document.querySelectorAll('code:not(.words), code.words > span.w'))"
            ".filter(c => !c.closest('pre'));"
            "return [codes.length, codes.filter(c => new Set(Array.from(c.getClientRects()).map(r => Math.round(r.top)))"
            ".size > 1).map(c => c.textContent.slice(0, 60))];")
        assert spans > 500
        assert broken == [], broken[:10]
    finally:
        _at_width(browser, 1280)
