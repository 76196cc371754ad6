r"""The Gaussian Transformer in the numeric layer (gaussian paper): one room, seven modules.

* :mod:`.moments`: the moment ODE (7), :math:`\dot\mu=(A+V+V\Sigma B)\mu+b`,
  :math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`, its Jacobian,
  flow and Newton equilibria;
* :mod:`.reduction` and :mod:`.lifted`: the invariant block and the factored transport of low-rank
  parameters (proved by :func:`flowcert.symbolic.gaussian.reduction_proofs`), and runs through them;
* :mod:`.particles`: the particle system (2) and the Lemma 3.1 transport check;
* :mod:`.paths` and :mod:`.reach`: the Theorem 3.3 construction (Proof 3.4);
* :mod:`.riccati`: the Riccati form, Thm 4.1 / 4.11;
* :mod:`.relu`: the ReLU activation, Lemma 2.3 and Prop. 2.4.

The package re-exports the names of the former module ``flowcert.numeric.gaussian``
(:mod:`.moments` and :mod:`.particles`; the elementwise ``relu`` function stays in
:mod:`.particles`, since ``relu`` names the submodule).
"""

from ...symbolic.gaussian import linearisation_program, moment_program  # the IR lives in symbolic
from ..integration import IntegrationFailed, StiffnessMonitor, solve_switching  # shared controls
from .moments import (
    Array,
    Coefficients,
    constant,
    covariance_field,
    integrate_moments,
    jacobian_vech,
    manifold_drift,
    MEAN_ESCAPE,
    moment_jacobian,
    moment_kernel,
    MomentSolution,
    newton_equilibrium,
    symmetric_basis,
    symmetric_part,
    time_unit,
    vech_indices,
)
from .particles import (
    ACTIVATIONS,
    particle_field,
    particle_study,
    ParticleStudy,
    sample_gaussian,
    simulate_particles,
    transport_check,
    TransportCheck,
)

__all__ = [
    "IntegrationFailed",
    "StiffnessMonitor",
    "solve_switching",
    "linearisation_program",
    "moment_program",
    "ACTIVATIONS",
    "Array",
    "Coefficients",
    "constant",
    "covariance_field",
    "integrate_moments",
    "jacobian_vech",
    "manifold_drift",
    "MEAN_ESCAPE",
    "moment_jacobian",
    "moment_kernel",
    "MomentSolution",
    "newton_equilibrium",
    "particle_field",
    "particle_study",
    "ParticleStudy",
    "sample_gaussian",
    "simulate_particles",
    "symmetric_basis",
    "symmetric_part",
    "time_unit",
    "transport_check",
    "TransportCheck",
    "vech_indices",
]
