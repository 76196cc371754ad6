"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.numeric.gaussian.riccati` (same module object).

The Riccati form of eq. (7) (gaussian paper, Thm 4.1, Thm 4.11).
"""

import sys
import warnings

warnings.warn("flowcert.numeric.gaussian_riccati is deprecated; import flowcert.numeric.gaussian.riccati instead", DeprecationWarning, stacklevel=2)

from .gaussian import riccati as _module

sys.modules[__name__] = _module
