r"""Integrators that keep the tokens on their manifold :math:`\mathcal E_W^n`
(:math:`\mathcal E_W=\{x: x^\top Wx=1\}`; the sphere for :math:`W=I`), in numpy/scipy.

The ambient extension of the field is evaluated at the retraction :math:`\pi_W(X)` (row-wise
:math:`x/|x|_W`, consensus paper eq. (2)):

.. math::

    \dot X = F\big(t, \pi_W(X)\big),

so the radial direction is neutral (for :math:`\gamma_i=x_i^\top Wy_i<0` the sphere is normally
repelling for the raw field, note 001 §1.6), every stage stays tangent at the retracted point,
and the solution is retracted at every output time. The *drift*
:math:`\max_{t,i}\big||x_i(t)|_W-1\big|` of the unretracted solution is measured and returned:
a run whose drift exceeds its budget has left the manifold and is a failed run, not evidence.

Every run has budgets (:data:`RUN_EVALUATIONS` field evaluations, :data:`RUN_SECONDS` of CPU time,
within the enclosing command budget of :mod:`flowcert.numeric.integration`): a field too fast for
its horizon (entries near :math:`10^{150}`) ends as a failed run with the reason, never a hang.

Public API: :func:`integrate` returning a :class:`TokenTrajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..integration import IntegrationFailed, solve_switching
from .field import manifold_drift, project

Array = np.ndarray
#: Field evaluations of one run (DOP853: 12 a step; a run needing more has a field too fast for its horizon).
RUN_EVALUATIONS = 2_000_000
#: CPU seconds of one run (capped by the enclosing command budget).
RUN_SECONDS = 60.0
FieldFn = Callable[[float, Array], Array]  # (t, X (n, d) on the manifold) -> F (n, d)


@dataclass
class TokenTrajectory:
    """Solution on the manifold.

    Attributes
    ----------
    t : array (m,)
    X : array (m, n, d)
        Retracted states at ``t``.
    drift : float
        :math:`\\max\\big||x_i|_W-1\\big|` of the unretracted solution over all output times.
    ok : bool
        The integrator succeeded and the drift stayed within ``drift_budget``.
    message : str
    reduction : dict or None
        Set when the run was made in an invariant subspace and lifted
        (:meth:`flowcert.numeric.attention.reduction.Subspace.record`).
    """

    t: Array
    X: Array
    drift: float
    ok: bool
    message: str
    reduction: dict | None = None

    @property
    def X_final(self) -> Array:
        return self.X[-1]


def integrate(field: FieldFn, X0: Array, t_end: float, *, W: Array | None = None, t_eval: Array | None = None,
              rtol: float = 1e-9, atol: float = 1e-11, method: str = "DOP853",
              drift_budget: float = 1e-6) -> TokenTrajectory:
    """Integrate :math:`\\dot X=F(t,\\pi_W(X))` with ``scipy.integrate.solve_ivp``.

    Parameters
    ----------
    field : callable
        ``field(t, X) -> F`` for one configuration ``X`` of shape (n, d).
    X0 : array (n, d)
        Initial tokens on the manifold.
    t_end : float
    W : array (d, d), optional
        Ellipsoid matrix (unit sphere if None).
    t_eval : array, optional
        Output times (default 201 equally spaced).
    drift_budget : float
        Largest acceptable :math:`||x|_W-1|` before retraction.
    """
    shape = X0.shape
    t_eval = np.linspace(0.0, t_end, 201) if t_eval is None else np.asarray(t_eval, float)

    def rhs(time: float, y: Array) -> Array:
        return field(time, project(y.reshape(shape), W)).ravel()

    try:  # explicit only (as before), within the evaluation and CPU budgets
        sol, _, _ = solve_switching(rhs, (0.0, t_end), np.asarray(X0, float).ravel(), method=method, t_eval=t_eval,
                                    rtol=rtol, atol=atol, max_evaluations=RUN_EVALUATIONS, max_seconds=RUN_SECONDS,
                                    implicit_max_states=0)
    except IntegrationFailed as exc:
        return TokenTrajectory(np.array([0.0]), project(np.asarray(X0, float)[None], W), 0.0, False,
                          f"integrator failed: {exc}")
    raw = sol.y.T.reshape(-1, *shape)
    drift = float(manifold_drift(raw, W).max()) if raw.size else float("nan")
    ok = bool(sol.success) and drift <= drift_budget
    msg = sol.message if sol.success else f"integrator failed: {sol.message}"
    if sol.success and not ok:
        msg = f"left the manifold: drift {drift:.3e} > budget {drift_budget:.1e}"
    return TokenTrajectory(sol.t, project(raw, W), drift, ok, msg)
