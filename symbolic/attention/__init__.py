"""The ``attention`` system in SymPy: tokens on the sphere or an ellipsoid under self-attention
(multistability paper, eq. (1); consensus paper, eq. (7)). ``field`` holds the model; each paper's
derivations live in a module named after the paper."""

from .field import (NORMALIZATIONS, K, Q, V, X, attention_field, attention_matrix, attention_program, d,
                    influence, n, scalarised_field, scores)

__all__ = ["NORMALIZATIONS", "K", "Q", "V", "X", "attention_field", "attention_matrix", "attention_program",
           "d", "influence", "n", "scalarised_field", "scores"]
