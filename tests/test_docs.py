"""The documentation site: ``make docs`` builds it (Sphinx, ``-W``), and its pages render their
math and load nothing from the network.

The build executes every tutorial (MyST-NB), so it takes minutes: the test is ``slow``. Set
``FLOWCERT_DOCS_HTML`` to an already built ``docs/_build/html`` to check that site instead of
building a fresh one (``make docs`` then ``FLOWCERT_DOCS_HTML=docs/_build/html pytest -m slow
tests/test_docs.py``).

Static checks on every page: no ``<script>``/``<link>``/``<img>`` with a remote address, no
``<merror>`` and no TeX fallback (the build turns a formula latex2mathml cannot convert into a
warning, hence an error). In Chromium (the browser of ``tests/test_report_browser.py``): pages
with formulas lay out every ``<math>`` element with a non-zero size, figures produced by the
executed tutorials load, and no request leaves localhost.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

import pytest

from test_report_browser import _Quiet, _require_browser, chromium_driver

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: Pages the browser opens: prose with inline and display math, an executed tutorial with
#: figures, the generated catalogue and an API page whose module docstring states equations.
PAGES = ("index.html", "getting-started.html", "tutorials/gaussian.html", "tutorials/attention.html",
         "catalogue.html", "errata.html", "generated/flowcert.limits.html", "generated/flowcert.attention.html")

_REMOTE = re.compile(r"""<(script|link|img|iframe|source)\b[^>]*\b(src|href)\s*=\s*["']?\s*(https?:)?//""", re.I)


@pytest.fixture(scope="module")
def site() -> Path:
    """The built HTML folder: ``$FLOWCERT_DOCS_HTML`` or a fresh ``sphinx -W`` build."""
    given = os.environ.get("FLOWCERT_DOCS_HTML")
    if given:
        return Path(given).resolve()
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = Path(tempfile.mkdtemp(prefix="flowcert-docs-")) / "html"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "-j", "2",
                          str(ROOT / "docs"), str(out)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    return out


def test_every_page_is_built(site: Path) -> None:
    for page in PAGES + ("cli.html", "certificates.html", "testing.html", "limits.html", "tutorials/rnn.html",
                         "tutorials/pretrained.html", "api.html"):
        assert (site / page).is_file(), page


def test_pages_load_nothing_remote_and_have_no_math_errors(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 50  # the API reference has a page per module
    with_math = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not _REMOTE.search(text), f"{page}: {_REMOTE.search(text).group(0)}"
        assert "<merror" not in text, page
        assert 'class="tex"' not in text, page  # a formula that was not converted
        assert not re.search(r"<script[^>]*(mathjax|katex)", text, re.I), page  # no math script, local or remote
        with_math += "<math" in text
    assert with_math >= 10


def test_letters_by_meaning_and_linked_errata(site: Path) -> None:
    """The docs use the report's converter: no mathvariant a browser drops is left in any page, the
    script and double-struck letters are Unicode, and every correction of the catalogue links to its
    entry on the errata page."""
    from flowcert.reports.errata import CORRECTIONS, ERRATA

    pages = sorted(site.rglob("*.html"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        dropped = [m for m in re.findall(r'<(m[a-z]+)\b[^>]*\bmathvariant="([^"]*)"', text) if m != ("mi", "normal")]
        assert dropped == [], (page, dropped[:3])
    everything = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert "𝒫" in everything and "𝒦" in everything and "ℝ" in everything
    errata = (site / "errata.html").read_text(encoding="utf-8")
    assert {e.key for e in ERRATA} <= set(re.findall(r'id="erratum-([^"]+)"', errata))
    catalogue = (site / "catalogue.html").read_text(encoding="utf-8")
    links = set(re.findall(r'href="errata\.html#erratum-([^"]+)"', catalogue))
    assert {c.erratum for c in CORRECTIONS.values()} <= links
    assert not re.search(r"note 00\d, erratum|erratum \d\)", re.sub(r"<[^>]+>", "", catalogue + errata))


def test_cli_reference_lists_every_command(site: Path) -> None:
    from flowcert.cli import build_parser

    text = re.sub(r"<[^>]+>", "", (site / "cli.html").read_text(encoding="utf-8"))  # highlighting splits tokens
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sub.choices:
        assert f"flowcert {name}" in text, name


def test_catalogue_lists_every_graph_result(site: Path) -> None:
    from flowcert import graph

    text = re.sub(r"<[^>]+>", "", (site / "catalogue.html").read_text(encoding="utf-8"))
    for node in graph.NODES:
        if node.kind == "result":
            assert node.id in text, node.id


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    _require_browser()
    handler = functools.partial(_Quiet, directory=str(site))
    with socketserver.TCPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/"
        finally:
            httpd.shutdown()


@pytest.fixture(scope="module")
def browser(served: str) -> Iterator[Any]:
    with chromium_driver("flowcert-chromium-docs-") as driver:
        yield driver


def _requests(browser: Any) -> set[str]:
    urls = set(browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat(performance.getEntriesByType('navigation').map(e => e.name));"))
    for item in browser.get_log("performance"):
        msg = json.loads(item["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.add(msg["params"]["request"]["url"])
    return urls


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_math_offline(browser: Any, served: str, page: str) -> None:
    browser.get_log("performance")  # drop the previous page's entries
    browser.get(served + page)
    browser.execute_script("return document.fonts ? document.fonts.ready : null")
    sizes = browser.execute_script(
        "return Array.from(document.querySelectorAll('article math')).map(m => {"
        "const r = m.getBoundingClientRect(); return [r.width, r.height, m.namespaceURI];});")
    assert sizes, f"{page}: no formula"
    assert all(ns == "http://www.w3.org/1998/Math/MathML" for _, _, ns in sizes)
    assert all(w > 0 and h > 0 for w, h, _ in sizes), [s for s in sizes if not (s[0] > 0 and s[1] > 0)][:5]
    assert browser.execute_script("return document.querySelectorAll('merror, code.tex').length") == 0
    # no formula is cut at the column's edge: a wide one scrolls in its own box
    clipped = browser.execute_script(
        "const col = document.querySelector('article').getBoundingClientRect();"
        "return Array.from(document.querySelectorAll('article math')).filter(m => !m.closest('.math-display, .table-wrapper,"
        " table') && m.getBoundingClientRect().right > col.right + 1).length;")
    assert clipped == 0
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.getAttribute('src')]);")
    assert all(done and width > 0 for done, width, _ in images), images
    if page.startswith("tutorials/"):
        assert images, f"{page}: the executed tutorial produced no figure"
    urls = _requests(browser)
    assert served + page in urls  # the log recorded the page itself
    network = [u for u in urls if urlparse(u).scheme not in ("data", "chrome", "blob", "about")]
    outside = [u for u in network if urlparse(u).scheme not in ("http", "https")
               or urlparse(u).hostname not in ("127.0.0.1", "localhost")]
    assert outside == []
