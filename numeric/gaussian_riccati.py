"""Deprecated alias, kept for one release: this module is :mod:`flowcert.numeric.gaussian.riccati` (same module object).

The Riccati form of eq. (7) (gaussian paper, Thm 4.1, Thm 4.11).
"""

import sys

from .gaussian import riccati as _module

sys.modules[__name__] = _module
