"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.numeric.gaussian.relu` (same module object).

The ReLU activation (gaussian paper, Lemma 2.3, Prop. 2.4).
"""

import sys
import warnings

warnings.warn("flowcert.numeric.gaussian_relu is deprecated; import flowcert.numeric.gaussian.relu instead", DeprecationWarning, stacklevel=2)

from .gaussian import relu as _module

sys.modules[__name__] = _module
