"""The ``attention`` system in numpy: generated field kernels, integrators that keep tokens on
their manifold, equilibria (multistability and consensus papers)."""

from .field import attention_field, c_field_kernel, field_kernel

__all__ = ["attention_field", "c_field_kernel", "field_kernel"]
