"""Deprecated alias, kept for one release: this module is :mod:`flowcert.numeric.gaussian.relu` (same module object).

The ReLU activation (gaussian paper, Lemma 2.3, Prop. 2.4).
"""

import sys

from .gaussian import relu as _module

sys.modules[__name__] = _module
