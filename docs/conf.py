"""Sphinx configuration of flowcert's documentation (``make docs``).

Why Sphinx: the anchors flowcert's users know (python-control, cvxpy, SymPy) document themselves
with Sphinx + numpydoc, and flowcert's docstrings are numpydoc already; MyST-NB executes the
tutorials (Markdown notebooks) during the build, so a changed API breaks the build; sphinx-argparse
renders the CLI reference from ``flowcert.cli.build_parser()`` itself. Math is converted to MathML
at build time (``_ext/flowcert_docs.py``): no MathJax, no CDN, nothing loaded from the network.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import flowcert  # noqa: E402

project = "flowcert"
author = "flowcert authors"
copyright = "flowcert authors"
release = version = flowcert.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinxarg.ext",
    "flowcert_docs",
]

exclude_patterns = ["_build", "_ext", "_generated", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"

# -- math: MathML at build time (flowcert_docs), never MathJax -------------------------------------
html_math_renderer = "mathml"

# -- MyST / MyST-NB ------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3
nb_execution_mode = os.environ.get("FLOWCERT_DOCS_EXECUTE", "force")  # every build runs every cell
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_render_markdown_format = "myst"
nb_merge_streams = True
nb_kernel_rgx_aliases = {".*": "python3"}

# -- API reference -------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# every public name appears, on the page of the module that defines it (a package's re-exports are not
# documented twice: that would be a duplicate object description)
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": False, "ignore-module-all": True}
autodoc_typehints = "none"  # numpydoc states the types; signatures stay readable
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()  # docstring style is checked by review, not by the build

# -- HTML ----------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"flowcert {release}"
html_static_path: list[str] = ["_static"]
html_css_files = ["flowcert.css"]
html_show_sourcelink = False
html_copy_source = False
os.environ["FLOWCERT_DOCS_EXT"] = str(HERE / "_ext")

# ``python -m flowcert`` runs the CLI on import: keep autosummary's module walk from importing it.
import types  # noqa: E402

_main_stub = types.ModuleType("flowcert.__main__")
_main_stub.__sphinx_mock__ = True  # type: ignore[attr-defined]
sys.modules.setdefault("flowcert.__main__", _main_stub)

# A relative ``:mod:`.experiments``` in a package docstring, shown in its parent's summary table,
# matches flowcert.rnn.experiments and flowcert.pretrained.experiments: Sphinx picks one and warns
# (subtype ``ref.python``, ambiguous targets only; missing targets are another check).
suppress_warnings = ["ref.python"]
