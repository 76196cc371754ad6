"""Certificates for the ``attention`` system: one module per paper (multistability, consensus)."""
