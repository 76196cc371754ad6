"""The PDF of the report as a reader gets it: ``report.pdf`` of the quick build, read with poppler.

``flowcert report`` prints the page with every ``<details>`` open (a print-mode rendering), so the
PDF carries what the page folds: hypothesis margins and certificates, and the cross-checks'
measurements. The test reads the page count (``pdfinfo``), extracts the text (``pdftotext``) and
finds certificate margins and re-check statements in it, and renders three pages (first, middle,
last) to PNG with ``pdftoppm`` into ``reports/out/browser`` (or ``$FLOWCERT_SCREENSHOTS``) for a person
to look at, checking that each has ink.

Skipped, loudly, without Chromium or poppler-utils; under ``CI=true`` or
``FLOWCERT_REQUIRE_BROWSER=1`` a failure instead (``make browser-deps`` installs both).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_report_browser import _require_browser, _screenshot_dir, built_report

TOOLS = ("pdfinfo", "pdftotext", "pdftoppm")


@pytest.fixture(scope="module")
def pdf() -> Path:
    _require_browser()
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        import os
        import warnings

        message = f"PDF TEST NOT RUN: missing {', '.join(missing)} (Debian poppler-utils; make browser-deps)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("FLOWCERT_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        warnings.warn(message, stacklevel=2)
        pytest.skip(message)
    path = built_report() / "report.pdf"
    assert path.is_file(), "Chromium is installed, so the report must have a PDF"
    return path


def _run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout


def test_pdf_has_its_pages_and_the_unfolded_evidence(pdf: Path) -> None:
    pages = int(re.search(r"^Pages:\s+(\d+)", _run("pdfinfo", str(pdf)), re.M).group(1))
    assert 20 <= pages <= 150, pages
    text = _run("pdftotext", "-layout", str(pdf), "-")
    # certificate margins and re-checks live in <details> on the page: the printed page opens them all
    margins = re.findall(r"margin: (-?[\d.]+(?:e[-+]?\d+)?)", text)
    assert len(margins) >= 30 and all(float(m) == float(m) for m in margins)
    assert text.count("re-checked by exact-ldl") >= 10
    assert "quantity" in text and "value" in text  # the cross-checks' measured tables
    assert "Errata of the papers" in text
    for folded in ("detail", "measured"):
        assert text.count(folded) >= 10  # each summary is printed above its opened content


def test_three_pages_render(pdf: Path) -> None:
    """First, middle and last page as PNG (pdftoppm), each with ink, saved for a person to look at."""
    from matplotlib import image

    pages = int(re.search(r"^Pages:\s+(\d+)", _run("pdfinfo", str(pdf)), re.M).group(1))
    folder = _screenshot_dir()
    for page in sorted({1, pages // 2, pages}):
        stem = folder / f"pdf_page_{page:03d}"
        _run("pdftoppm", "-png", "-r", "60", "-f", str(page), "-l", str(page), "-singlefile", str(pdf), str(stem))
        png = image.imread(f"{stem}.png")
        assert png.shape[0] > 500 and png.shape[1] > 400
        assert (png[..., :3] < 0.5).mean() > 0.005, page  # not a blank page


def _pages(pdf: Path) -> list[list[str]]:
    """Each page's non-empty text lines, whitespace collapsed (pdftotext's layout mode)."""
    text = _run("pdftotext", "-layout", str(pdf), "-")
    pages = text.split("\f")[:-1] if text.endswith("\f") else text.split("\f")
    return [[" ".join(line.split()) for line in page.splitlines() if line.strip()] for page in pages]


def _headings(page: str) -> list[str]:
    """The visible words of every heading of the page (h2-h4 and the errata's bold run-in headings)."""
    import html as html_lib

    found = re.findall(r"<(h[2-4])\b[^>]*>(.*?)</\1>|<p><strong>((?:(?!</?p>|</strong>).)*)</strong></p>", page, re.S)
    return [" ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", a or b)).split()) for _, a, b in found]


FOOT = re.compile(r"(\d+) / (\d+)")


def test_every_page_is_numbered_under_a_running_header(pdf: Path) -> None:
    pages = _pages(pdf)
    sections = [h for h in _headings((pdf.parent / "report.html").read_text(encoding="utf-8"))]
    for number, lines in enumerate(pages, start=1):
        assert FOOT.fullmatch(lines[-1]) and lines[-1] == f"{number} / {len(pages)}", (number, lines[-1:])
        assert lines[0].startswith("flowcert report"), (number, lines[0])
    # a page inside a section names it in its header: the header of the page where a section's heading
    # stands is that heading's text
    headed = [lines for lines in pages if lines[0] != "flowcert report"]
    assert len(headed) >= 0.8 * (len(pages) - 3)
    for lines in headed:
        title = lines[0].removeprefix("flowcert report").strip()
        assert any(h.startswith(title[:40]) for h in sections), title


def test_the_outline_and_the_contents_lead_to_their_pages(pdf: Path) -> None:
    data = pdf.read_bytes()
    assert b"/Outlines" in data and data.count(b"/Parent") >= 60  # bookmarks: one per heading
    pages = _pages(pdf)
    front = [line for lines in pages[:2] for line in lines]
    start = front.index("Sections")
    listed = [(m.group(1), int(m.group(2))) for line in front[start + 1:]
              if (m := re.fullmatch(r"(.+?) (\d+)", line)) and not FOOT.fullmatch(line)]
    assert len(listed) >= 40
    numbers = [n for _, n in listed]
    assert numbers == sorted(numbers) and numbers[0] > 1 and numbers[-1] <= len(pages)
    for title, number in listed:
        words = title.split()[:5]
        # the heading stands on the page the contents give (its first words, below the running header)
        assert any(" ".join(line.split()[:len(words)]) == " ".join(words) for line in pages[number - 1][1:]), \
            (title, number, pages[number - 1][:4])


def test_no_heading_at_a_page_foot_and_no_small_theorem_box_split(pdf: Path) -> None:
    pages = _pages(pdf)
    headings = [h for h in _headings((pdf.parent / "report.html").read_text(encoding="utf-8")) if len(h) >= 8]
    for number, lines in enumerate(pages[:-1], start=1):
        last = lines[-2]  # above the page number
        orphan = [h for h in headings if h == last or (len(last) >= 12 and h.startswith(last) and h != last)]
        assert not orphan, f"page {number} ends with the heading {orphan[0]!r}"
    # theorem boxes open with "<id> — <label>" and run to the next box, section or page of another kind
    capacity = max(len(lines) for lines in pages)
    starts = [(p, i) for p, lines in enumerate(pages) for i, line in enumerate(lines)
              if re.match(r"[a-z]+:[a-zA-Z0-9.-]+ — ", line)]
    split_small = []
    for (p, i), (q, j) in zip(starts, starts[1:]):
        if q > p and j > 1:  # the next box does not open its page: this box ran onto page q
            length = len(pages[p]) - 1 - i + sum(len(pages[k]) - 2 for k in range(p + 1, q)) + j - 1
            if length <= capacity // 2:
                split_small.append((pages[p][i], p + 1, length))
    assert not split_small, split_small[:3]
