"""The ``attention`` system's public face: parameters, catalogue entries (one module per paper),
verify / simulate / equilibria."""
