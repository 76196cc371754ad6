"""Deprecated alias, kept for one release: this module is :mod:`flowcert.numeric.gaussian.reach` (same module object).

Theorem 3.3 (gaussian paper, Proof 3.4). The controls files moved to :mod:`flowcert.gaussian.reach`.
"""

import sys

from .gaussian import reach as _module

sys.modules[__name__] = _module
