"""KPFlow operators of the ``rnn`` system in torch (float64 by default, matrix-free).

Modules: :mod:`.cells` (the step maps), :mod:`.operators` (P, P*, P^{-1}, K, PKP*, hidden NTK),
:mod:`.spectra` (partial trace, effective rank, Hutch++ trace / Frobenius norm / alignment /
participation ratio, Theorem 2, Lyapunov exponents), :mod:`.consensus` (true partial traces over
any of the (B, T, H) axes at real size: Rademacher estimator with standard errors, exact path,
kpflow's block sum; consensus spectra) and :mod:`.tasks` (Memory-Pro family, flip-flop, line
attractor, low-rank forecasting).
"""
