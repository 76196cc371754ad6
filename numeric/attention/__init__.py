"""The ``attention`` system in numpy: generated field kernels (``field``), integrators that keep
tokens on their manifold (``integrate``), Jacobians, spectra and equilibria (``multistability``)."""

from .field import (attention_field, c_field_kernel, causal_mask, field_kernel, manifold_drift, project,
                    structure_kernel, tangent_projection, w_norms)

__all__ = ["attention_field", "c_field_kernel", "causal_mask", "field_kernel", "manifold_drift", "project",
           "structure_kernel", "tangent_projection", "w_norms"]
