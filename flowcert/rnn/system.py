r"""The ``rnn`` system (KPFlow paper) as a :class:`flowcert.system.System`.

.. math::

    \partial_s z = -\mathcal P\,\mathcal K\,\mathcal P^*\,\mathrm{Err}\qquad\text{(Prop. 1, eq. 5)}.

``verify rnn`` is the ``kpflow analyze`` document (:func:`flowcert.rnn.analyze.analyze`): its
cross-checks (finite differences, adjoint, inverse and NTK identities) always run, being cheap at
these sizes, so ``simulate`` and ``seed`` change nothing. The system has no ``simulate`` or
``codegen`` command (its cells' kernels are generated inside :mod:`flowcert.gpu.rnn`).
"""

from __future__ import annotations

from pathlib import Path
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

    def report_section(self, p: RNNParams, out: Path, *, label: str, quick: bool,
                       run: tuple[dict[str, Any], Any] | None = None) -> dict[str, Any]:
        """Parameters as understood, the KPFlow identities and effective ranks, and the verdicts."""
        import json

        from ..reports.common import cell

        doc = run[0] if run is not None else self.verify(p)
        ident, ranks = doc["identities"], doc["effective_rank"]
        lines = ["### Parameters as understood", "", "```json", json.dumps(doc["params"]), "```", "",
                 "### KPFlow identities (the cross-checks)", "",
                 "| identity | residual |", "|---|---|"]
        lines += [f"| Prop. 1, step $\\eta={r['eta']:.3g}$ | {r['residual']:.3e} |" for r in ident["prop1"]["fd"]]
        lines += [f"| adjoint $\\mathcal P^*$ | {ident['adjoint']['P']:.2e} |",
                  f"| inverse $\\mathcal P^{{-1}}$ | {ident['inverse']['residual']:.2e} |",
                  f"| hidden NTK | {ident['ntk']['residual']:.2e} |", "",
                  "Effective rank: " + ", ".join(f"{k} {cell(ranks[k]['value'])}" for k in ("K", "P", "PKP")), ""]
        return {"title": f"Your parameters ({label}, system rnn)", "markdown": "\n".join(lines),
                "theorems": doc["theorems"], "figures": []}


#: The registry's object for this system (:data:`flowcert.systems.REGISTRY`).
SYSTEM = RNNSystem()
