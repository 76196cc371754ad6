r"""Deprecated re-exports, kept for users only (the package never imports it; importing it warns):
``flowcert.params`` was split by concern.

* :mod:`flowcert.schema`: :class:`ParamError`, :class:`Field`, :class:`Schema`, :func:`validate` and the
  scalar validators and checks (shared by every system);
* :mod:`flowcert.arrays`: :func:`as_matrix`, :func:`as_vector` (nested lists to arrays or SymPy matrices in t);
* :mod:`flowcert.expressions`: the expression parser for time-varying entries (the symbol :math:`t`);
* :mod:`flowcert.files`: :func:`load_file` (JSON or ``.npz``);
* :mod:`flowcert.gaussian.params`: the ``gaussian`` schema and :class:`GaussianParams`
  (gaussian paper, eq. (7): :math:`A,B,V,b,\mu_0,\Sigma_0`).
"""

import warnings

from .arrays import as_matrix, as_vector
from .expressions import ELEMENTARY_FUNCTIONS, as_time_expression, expression_text, t
from .files import load_file
from .gaussian.params import (
    GAUSSIAN_ACTIVATIONS,
    GAUSSIAN_SCHEMA,
    GaussianParams,
    load_gaussian,
    parse_gaussian,
)
from .errors import ParamError
from .schema import (
    INDEFINITE_RTOL,
    Field,
    Schema,
    Validator,
    Value,
    as_choice,
    as_positive_float,
    check_finite,
    check_keys,
    check_not_indefinite,
    check_symmetric,
    nested_shape,
    validate,
)

warnings.warn("flowcert.params is deprecated; import from flowcert.schema, flowcert.arrays, flowcert.expressions, "
              "flowcert.files or flowcert.gaussian.params instead", DeprecationWarning, stacklevel=2)

__all__ = [
    "ParamError",
    "t",
    "ELEMENTARY_FUNCTIONS",
    "Field",
    "Schema",
    "GAUSSIAN_SCHEMA",
    "GaussianParams",
    "load_file",
    "parse_gaussian",
    "load_gaussian",
    "validate",
    "check_keys",
    "nested_shape",
    "as_matrix",
    "as_vector",
    "as_positive_float",
    "as_choice",
    "as_time_expression",
    "check_finite",
    "check_symmetric",
    "check_not_indefinite",
]
