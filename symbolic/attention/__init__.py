"""The ``attention`` system in SymPy: tokens on the sphere or an ellipsoid under self-attention
(multistability paper, eq. (1); consensus paper, eq. (7)). ``field`` holds the model; each paper's
derivations live in a module named after the paper."""

from .field import (NORMALIZATIONS, ONE, VARIANTS, C, K, Q, Structure, V, W, X, attention_field,
                    attention_matrix, attention_program, d, explicit_field, head_symbols, influence, n,
                    program_inputs, scalarised_field, scores, structure_program)

__all__ = ["NORMALIZATIONS", "ONE", "VARIANTS", "C", "K", "Q", "Structure", "V", "W", "X", "attention_field",
           "attention_matrix", "attention_program", "d", "explicit_field", "head_symbols", "influence", "n",
           "program_inputs", "scalarised_field", "scores", "structure_program"]
