"""Tests that kill injected bugs and surviving mutants (issue 11): each asserts a closed form.

* Particle study (Prop. 2.1 cross-check): for a linear field (:math:`V=0`), :math:`\\dot x=Ax+b`
  maps the empirical moments exactly as eq. (7) maps any moments, so the study's error is at the
  integration tolerance, while the moments themselves move by :math:`O(1)`; reading the
  :math:`t=0` particles instead of the final ones gives an error of that size.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from flowcert.numeric import gaussian as ng


def test_particle_study_reads_the_final_particles():
    A = np.array([[-1.0, 2.0], [0.0, -0.5]])
    b = np.array([1.0, -2.0])
    coeffs = ng.constant(A, np.zeros((2, 2)), np.zeros((2, 2)), b)
    mu0, S0, T = np.array([0.5, 1.0]), np.array([[1.0, 0.3], [0.3, 0.5]]), 1.0
    study = ng.particle_study(coeffs, mu0, S0, T, Ns=(20, 40), seeds=1)
    assert max(study.errors) < 1e-6
    # the moments do move by O(1): mu(T) = e^{AT} mu0 + A^{-1}(e^{AT} - I) b
    E = scipy.linalg.expm(A * T)
    mu_T = E @ mu0 + np.linalg.solve(A, (E - np.eye(2)) @ b)
    assert np.linalg.norm(mu_T - mu0) > 1.0


def test_inverse_bounds_refuse_a_residual_of_norm_one_or_more(monkeypatch):
    """With X = J^{-1}/k (exact dyadics), R = I - XJ = (1 - 1/k) I and ||R||_F = 2 (1 - 1/k) for n = 4:
    k = 2 gives exactly 1 and k = 3 gives 4/3; the Neumann series needs ||R|| < 1, so both are None.
    (``rho > 1`` for ``rho >= 1`` is an equivalent mutant: ``_sqrt_up`` never returns exactly 1.)"""
    import sympy as sp

    from flowcert.certificates import gaussian as cg

    J = sp.diag(1, 2, 4, 8)
    f = sp.Matrix([1, -1, 2, 3])
    real_inv = np.linalg.inv
    assert cg._inverse_bounds(J, f) is not None  # the honest float inverse is exact here
    for k in (2, 3):
        monkeypatch.setattr(np.linalg, "inv", lambda M, k=k: real_inv(M) / k)
        assert cg._inverse_bounds(J, f) is None
