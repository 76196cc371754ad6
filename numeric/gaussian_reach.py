"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.numeric.gaussian.reach` (same module object).

Theorem 3.3 (gaussian paper, Proof 3.4). The controls files moved to :mod:`flowcert.gaussian.reach`.
"""

import sys
import warnings

warnings.warn("flowcert.numeric.gaussian_reach is deprecated; import flowcert.numeric.gaussian.reach instead", DeprecationWarning, stacklevel=2)

from .gaussian import reach as _module

sys.modules[__name__] = _module
