"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.certificates.hypotheses` (same module object).

Hypothesis checks shared by every system: exact definiteness and certified eigenvalue bounds.
"""

import sys
import warnings

warnings.warn("flowcert.hypotheses is deprecated; import flowcert.certificates.hypotheses instead", DeprecationWarning,
              stacklevel=2)

from .certificates import hypotheses as _module  # noqa: E402

sys.modules[__name__] = _module
