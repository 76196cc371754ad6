"""Certificates re-checked without trusting any solver.

``recheck(certificate)`` decides any saved certificate on its own: the checker of each kind is
listed in :data:`flowcert.certificates.kinds.KINDS` and imported on first use, so importing this
package loads no system module. ``recheck_document(doc)`` re-checks a whole saved document against
the catalogue (subjects, statuses, names, claims, ``applies``; :mod:`flowcert.recheck`).
"""

from . import core, exact, kinds  # noqa: F401
from .core import explain, recheck  # noqa: F401
from .documents import recheck_document  # noqa: F401
