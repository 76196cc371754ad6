"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.gaussian.reach` (same module object).

``flowcert reach gaussian`` (gaussian paper, Thm 3.3) and its controls files.
"""

import sys
import warnings

warnings.warn("flowcert.reach is deprecated; import flowcert.gaussian.reach instead", DeprecationWarning, stacklevel=2)

from .gaussian import reach as _module

sys.modules[__name__] = _module
