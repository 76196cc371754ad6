"""KPFlow operators of the ``rnn`` system in torch (float64 by default, matrix-free).

Modules: :mod:`.cells` (the step maps), :mod:`.operators` (P, P*, P^{-1}, K, PKP*, hidden NTK),
:mod:`.spectra` (partial trace, effective rank, Hutch++, Theorem 2, Lyapunov exponents) and
:mod:`.tasks` (Memory-Pro family).
"""
