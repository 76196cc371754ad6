r"""The ``rnn`` system (KPFlow paper) as a :class:`flowcert.system.System`.

.. math::

    \partial_s z = -\mathcal P\,\mathcal K\,\mathcal P^*\,\mathrm{Err}\qquad\text{(Prop. 1, eq. 5)}.

``verify rnn`` is the ``kpflow analyze`` document (:func:`flowcert.rnn.analyze.analyze`): its
cross-checks (finite differences, adjoint, inverse and NTK identities) always run, being cheap at
these sizes, so ``simulate`` and ``seed`` change nothing for a parameter file. From Python the
parameters may also be your own ``torch.nn.Module`` cell with ``inputs=`` (and ``h0=``,
``targets=``, ``assume=``): :mod:`flowcert.rnn.cell`. Its one optional capability is ``kpflow``
(:func:`flowcert.systems.capability`); it has no ``simulate`` or ``codegen`` (its cells' kernels are
generated inside :mod:`flowcert.gpu.rnn`), so it declares none and has no stub.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..system import SystemBase, VerifyRun, load_any
from .params import RNNParams, load_rnn, parse_rnn

if TYPE_CHECKING:
    from ..records import Document, JSONObject
    from .analyze import KPFlowDocument

__all__ = ["SYSTEM", "RNNSystem"]


class RNNSystem(SystemBase):
    """Gradient descent on a recurrent model, through the KPFlow operators (see :class:`flowcert.system.System`)."""

    name = "rnn"
    params_type = RNNParams
    warm_modules = ("flowcert.rnn.analyze", "flowcert.rnn.params")
    single_head = False
    from_tokens = False
    #: the cross-checks (names of ``checks=``): cheap at these sizes, they always run
    checks = {"finite_differences": "Prop. 1 and Cor. 1: plain GD steps against -eta P K P* Err, observed order 1",
              "identities": "adjoint, inverse and NTK identities of the operators; Thm 2's U V U^-1 and Volterra "
                            "spectrum"}
    @property
    def schema(self) -> Any:
        """The keys of a parameter file (:data:`flowcert.rnn.params.RNN_SCHEMA`)."""
        from .params import RNN_SCHEMA

        return RNN_SCHEMA

    #: keywords of :meth:`load` for a ``torch.nn.Module`` cell
    load_options = ("inputs", "h0", "targets", "assume")

    def load(self, params: Any, *, command: str | None = None, inputs: Any = None, h0: Any = None,
             targets: Any = None, assume: Any = None) -> Any:
        """Validated parameters: a path, mapping or :class:`RNNParams`, or a ``torch.nn.Module`` cell
        with ``inputs`` (and ``h0``, ``targets``, ``assume``; :func:`flowcert.rnn.cell.cell_params`)."""
        from .cell import CellParams, cell_params, is_module

        if isinstance(params, CellParams):
            return params
        if is_module(params):
            return cell_params(params, inputs, h0=h0, targets=targets, assume=assume)
        given = [k for k, v in (("inputs", inputs), ("h0", h0), ("targets", targets), ("assume", assume))
                 if v is not None]
        if given:
            raise InputError(f"{given[0]}: only with a torch.nn.Module cell (a parameter file or mapping "
                             "draws its own inputs)")
        return load_any(params, RNNParams, parse_rnn, load_rnn)

    def verify(self, p: Any, *, simulate: bool = False, seed: int | None = None,
               checks: frozenset[str] | None = None, mode: str = "stored", **consensus: Any) -> Document:
        """The ``kpflow analyze`` document, with theorem records (``mode``: store the Jacobians or
        recompute them; ``consensus``, ``probes``, ``consensus_op``: the consensus spectrum of
        :func:`~flowcert.rnn.analyze.analyze`)."""
        from ..documents import records

        return records(self.verify_run(p, seed=seed, mode=mode, **consensus).document)

    def verify_run(self, p: Any, *, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None, mode: str = "stored", **consensus: Any) -> VerifyRun:
        """The document (typed theorems), and for a user's cell its trajectory (a parameter file's
        identities are its run)."""
        from .analyze import analyze
        from .cell import CellParams, verify_cell
        from .forward_ad import load_forward_ad

        load_forward_ad()
        if isinstance(p, CellParams):
            return VerifyRun(*verify_cell(p, seed=seed or 0, mode=mode, **consensus))
        return VerifyRun(analyze(p, mode=mode, typed=True, **consensus))

    def kpflow(self, p: Any, *, mode: str = "stored", consensus: str | None = None, probes: int = 64,
               consensus_op: str = "PKP") -> tuple[Document, str]:
        """``kpflow analyze``: the document of :meth:`verify` (theorem records) with the consensus
        spectrum where asked (``--consensus``, ``--probes``, ``--consensus-op``), and its text.

        Raises
        ------
        flowcert.errors.InputError
            ``--consensus`` is not a keep specification, or ``--probes`` is below 2.
        """
        if consensus is not None:
            from ..gpu.rnn.consensus import parse_keep  # imports torch: only when asked

            try:
                parse_keep(consensus)
            except ValueError as err:
                raise InputError(f"--consensus: {err}") from None
        if probes < 2:
            raise InputError(f"--probes: must be at least 2, got {probes}")
        doc = self.verify(p, mode=mode, consensus=consensus, probes=probes, consensus_op=consensus_op)
        return doc, _kpflow_text(doc)

    #: numerical runs: the identities' residuals, the effective ranks (SVDs, sketches), the consensus estimate and
    #: the theorems' numerical predictions (QR Lyapunov exponents, numerical ranks)
    record_paths = (r"^\$\.identities$", r"^\$\.effective_rank$", r"^\$\.consensus$",
                    r"^\$\.theorems\[\d+\]\.prediction$")
    #: the top-level contraction / bounded-real records (their checkers and flowcert.papers.kpflow.check)
    certified_paths = (r"^\$\.certificates$",)
    optional_records = frozenset({"consensus", "provenance"})

    def rederivable(self, doc: Document) -> bool:
        """A parameter file's document; a user's module's weights are not in the document."""
        params = doc.get("params")
        return super().rederivable(doc) and not (isinstance(params, Mapping) and params.get("cell") == "module")

    def rederived(self, raw: JSONObject, doc: Document) -> Document:
        """In the operator mode the document names, without a consensus spectrum (a record)."""
        from ..documents import plain
        from .analyze import analyze
        from .forward_ad import load_forward_ad

        load_forward_ad()
        mode = doc.get("operator_mode") if doc.get("operator_mode") in ("stored", "recompute") else "stored"
        return plain(analyze(self.load(raw, command="verify"), mode=mode))


def _kpflow_text(doc: KPFlowDocument) -> str:
    """The lines ``kpflow analyze`` prints without ``--json``: the identities' residuals, the effective
    ranks, one line per theorem and the consensus spectrum."""
    ident, ranks = doc["identities"], doc["effective_rank"]
    lines = [f"flowcert {doc['flowcert']} — kpflow analyze ({doc['params']['cell']})"]
    for r in ident["prop1"]["fd"]:
        lines.append(f"prop1  eta {r['eta']:.3g}  residual {r['residual']:.3e}  order {r.get('observed_order')}")
    lines.append(f"adjoint P {ident['adjoint']['P']:.2e}  inverse {ident['inverse']['residual']:.2e}  "
                 f"ntk {ident['ntk']['residual']:.2e}")
    lines.append("effective rank: " + ", ".join(f"{k} {ranks[k]['value']}" for k in ("K", "P", "PKP")))
    from ..result import Result

    lines += Result.from_document({"system": "rnn", "theorems": doc["theorems"]}).summary().splitlines()[1:]
    if "consensus" in doc:
        c = doc["consensus"]
        top = ", ".join(f"{v:.4g}" + (f" ± {e:.2g}" if e else "") for v, e in zip(c["eigenvalues"][:4], c["stderr"] or [None] * 4))
        lines.append(f"consensus {c['operator']} keep {c['keep']}: {top} ({'exact' if c['exact'] else str(c['probes']) + ' probes'})")
    return "\n".join(lines) + "\n"


#: The registry's object for this system (:data:`flowcert.systems.REGISTRY`).


SYSTEM = RNNSystem()
