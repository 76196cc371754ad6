"""Old path of :mod:`flowcert.certificates.hypotheses` (hypothesis checks shared by every system), kept for one release."""

from .certificates.hypotheses import (  # noqa: F401
    holds_by,
    as_float,
    sym_part,
    gram,
    lower_eigenvalue_bound,
    definite,
    semidefinite,
    upper_eigenvalue_bound,
)
