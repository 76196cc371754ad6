"""Suite-wide pytest options.

``--full`` opts into the scaled-up runs: suites read it (``request.config.getoption("--full")``)
to raise their example counts and case lists, and it also lifts the default ``-m 'not slow'`` of
``pyproject.toml`` so the tests marked ``slow`` run too (``make test-full`` passes ``-m ''`` as well).
"""

from __future__ import annotations


def pytest_addoption(parser):
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the full, scaled-up suites (more hypothesis examples and cases) and the tests marked slow",
    )


def pytest_configure(config):
    if config.getoption("--full") and config.option.markexpr == "not slow":
        config.option.markexpr = ""
