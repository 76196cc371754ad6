"""The HTML report in a real browser: headless Debian Chromium driven by Selenium + chromedriver.

The report (``flowcert report --quick``) is served on localhost and opened in Chromium; the test
checks that the math renders (MathML elements with non-zero size), every figure loads
(``naturalWidth > 0``), every internal link resolves to an element, wide tables do not scroll
sideways, and the page makes no request outside localhost (Performance resource entries and the
DevTools network log). Screenshots of the front page and of the gaussian section are saved in
``reports/out/browser`` (or ``$FLOWCERT_SCREENSHOTS``).

When Chromium, chromedriver or selenium is missing the test is skipped with a loud reason;
under ``CI=true`` or ``FLOWCERT_REQUIRE_BROWSER=1`` (set by ``.ci/run``) that is a failure instead;
``make test`` installs them first (``make browser-deps``: apt-get as root).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
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


@pytest.fixture(scope="module")
def served_report() -> Iterator[tuple[str, Path]]:
    """Build the quick report and serve its folder on 127.0.0.1 (a free port)."""
    _require_browser()
    from test_report import quick_report  # one quick build per session, shared with the content tests

    out = quick_report().out
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
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="flowcert-chromium-")
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
        driver.get(served_report[0])
        driver.execute_script("return document.fonts ? document.fonts.ready : null")
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


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
    # a summary link lands on its theorem row in the section
    first = browser.execute_script("return document.querySelector('a[href^=\"#thm-\"]').getAttribute('href');")
    row = browser.execute_script("return document.getElementById(arguments[0].slice(1)).closest('tr') !== null;", first)
    assert row


def test_wide_tables_do_not_scroll(browser: Any) -> None:
    overflow = browser.execute_script(
        "return Array.from(document.querySelectorAll('table')).filter(t => t.scrollWidth > t.clientWidth + 1"
        " || t.getBoundingClientRect().right > document.querySelector('main').getBoundingClientRect().right + 1).length;")
    assert overflow == 0
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")


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
    folder = _screenshot_dir()
    browser.execute_script("window.scrollTo(0, 0);")
    assert browser.save_screenshot(str(folder / "front_page.png"))
    browser.execute_script("document.getElementById('sec-gaussian').scrollIntoView();")
    assert browser.save_screenshot(str(folder / "gaussian_section.png"))
    browser.execute_script("document.querySelector('img').scrollIntoView();")
    assert browser.save_screenshot(str(folder / "gaussian_figure.png"))
    for name in ("front_page.png", "gaussian_section.png", "gaussian_figure.png"):
        assert (folder / name).stat().st_size > 10_000
