"""Deprecated alias, kept for users only (the package never imports it; importing it warns): this module is :mod:`flowcert.gaussian.asymptotics` (same module object).

Asymptotics of eq. (7) (gaussian paper, Thm 4.1, 4.7, 4.8, 4.11, Lemma 4.4, Table 1).
"""

import sys
import warnings

warnings.warn("flowcert.gaussian_asymptotics is deprecated; import flowcert.gaussian.asymptotics instead", DeprecationWarning, stacklevel=2)

from .gaussian import asymptotics as _module

sys.modules[__name__] = _module
