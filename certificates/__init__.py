"""Certificates re-checked without trusting any solver.

Importing the package registers the checker of every certificate kind, so
``flowcert.certificates.core.recheck`` decides any saved certificate on its own.
"""

from . import core, exact, spectrum  # noqa: F401
from . import gaussian  # noqa: F401  (registers the gaussian kinds)
from .core import recheck  # noqa: F401
