"""Deprecated alias, kept for one release: this module is :mod:`flowcert.gaussian.reach` (same module object).

``flowcert reach gaussian`` (gaussian paper, Thm 3.3) and its controls files.
"""

import sys

from .gaussian import reach as _module

sys.modules[__name__] = _module
