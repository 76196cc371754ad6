r"""The ``rnn`` system (KPFlow paper) as a :class:`flowcert.system.System`.

.. math::

    \partial_s z = -\mathcal P\,\mathcal K\,\mathcal P^*\,\mathrm{Err}\qquad\text{(Prop. 1, eq. 5)}.

``verify rnn`` is the ``kpflow analyze`` document (:func:`flowcert.rnn.analyze.analyze`): its
cross-checks (finite differences, adjoint, inverse and NTK identities) always run, being cheap at
these sizes, so ``simulate`` and ``seed`` change nothing. The system has no ``simulate`` or
``codegen`` command (its cells' kernels are generated inside :mod:`flowcert.gpu.rnn`).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..system import SimulateOptions, load_any
from .params import RNNParams, load_rnn, parse_rnn

__all__ = ["SYSTEM", "RNNSystem"]


class RNNSystem:
    """Gradient descent on a recurrent model, through the KPFlow operators (see :class:`flowcert.system.System`)."""

    name = "rnn"
    params_type = RNNParams
    warm_modules = ("flowcert.rnn.analyze", "flowcert.rnn.params")
    single_head = False

    def load(self, params: Any, *, command: str | None = None) -> RNNParams:
        """Validated parameters (path, mapping or :class:`RNNParams`)."""
        return load_any(params, RNNParams, parse_rnn, load_rnn)

    def verify(self, p: RNNParams, *, simulate: bool = False, seed: int | None = None,
               mode: str = "stored", **consensus: Any) -> dict[str, Any]:
        """The ``kpflow analyze`` document (``mode``: store the Jacobians or recompute them;
        ``consensus``, ``probes``, ``consensus_op``: the consensus spectrum of :func:`~flowcert.rnn.analyze.analyze`)."""
        from .analyze import analyze

        return analyze(p, mode=mode, **consensus)

    def verify_run(self, p: RNNParams, *, simulate: bool = False,
                   seed: int | None = None) -> tuple[dict[str, Any], Any]:
        """The document; the identities are its run (no separate trajectory object)."""
        return self.verify(p), None

    def simulate(self, p: RNNParams, options: SimulateOptions) -> tuple[dict[str, Any], str]:
        """Not a command of this system."""
        raise InputError("system 'rnn' has no simulate command (use: flowcert kpflow analyze)")

    def codegen(self, backend: str, p: Any = None) -> str:
        """Not a command of this system."""
        raise InputError("system 'rnn' has no codegen command")

#: The registry's object for this system (:data:`flowcert.systems.REGISTRY`).
SYSTEM = RNNSystem()
