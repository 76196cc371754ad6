r"""The ``gaussian`` system (gaussian paper, eq. (7)) as a :class:`flowcert.system.System`.

.. math::

    \dot\mu=(A+V+V\Sigma B)\mu+b,\qquad
    \dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top .

Loading (:mod:`.params`, with the command's size limit of :mod:`flowcert.limits`), the ``verify``
document (:mod:`.catalogue`), ``simulate`` (one DOP853/Radau run of eq. (7), optionally a batched
torch ensemble, :mod:`.ensemble`) and the generated moment and linearisation kernels. The
``report --params`` section and the ``simulate --plot`` figure are drawn by :mod:`flowcert.reports.user`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, TypedDict

from ..errors import InputError, ParamError
from ..records import Document, JSONObject
from ..system import SimulateOptions, SystemBase, VerifyRun, load_any
from .params import GaussianParams, load_gaussian, parse_gaussian

if TYPE_CHECKING:
    from ..pretrained.heads import GaussianHeadParams
    from .catalogue import GaussianSimulation
    from .ensemble import EnsembleRecord
    from .reach import ReachDocument
    from .regime import DesignDocument

__all__ = ["SYSTEM", "GaussianSystem", "SimulateDocument"]


class SimulateDocument(TypedDict, total=False):
    """The ``simulate gaussian`` document: the parameters as understood, the run of eq. (7) and the
    ``--samples`` ensemble where one was asked for."""

    flowcert: str
    system: str
    params: JSONObject
    simulation: GaussianSimulation
    ensemble: EnsembleRecord


class GaussianSystem(SystemBase):
    """The mean-field Gaussian transformer, eq. (7) (see :class:`flowcert.system.System`)."""

    name = "gaussian"
    params_type = GaussianParams
    warm_modules = ("flowcert.gaussian", "flowcert.numeric.gaussian", "sympy")
    single_head = True
    from_tokens = False
    #: cross-checks of ``simulate=True`` (names of ``checks=``; the default set is every one:
    #: :data:`flowcert.gaussian.catalogue.DEFAULT_CHECKS`)
    checks = {"moments": "one run of the moment equation (7): Table 1's regime and limits against it",
              "particles": "Prop. 2.1: N particles with empirical attention against eq. (7), error O(N^-1/2) "
                           "(batched, 5 sizes x 24 seeds, about 1 CPU s at d = 2)",
              "relu": "Prop. 2.4: ReLU particles against the first-order W2 bound",
              "transport": "Lemma 3.1: the transport equations integrated",
              "reach": "Thm 3.3: the constructed controls integrated to the target",
              "perturbation": "Thm 4.1: perturbed runs return to the certified equilibrium"}

    @property
    def schema(self) -> Any:
        """The keys of a parameter file (:data:`flowcert.gaussian.params.GAUSSIAN_SCHEMA`)."""
        from .params import GAUSSIAN_SCHEMA

        return GAUSSIAN_SCHEMA

    #: the cross-check that tests each entry's prediction (the others have none, or none by simulation)
    entry_checks = {"gaussian:prop-2.1": "particles", "gaussian:prop-2.4": "relu", "gaussian:lemma-3.1": "transport",
                    "gaussian:thm-3.3": "reach", "gaussian:thm-4.1": "moments", "gaussian:thm-4.7.1": "perturbation",
                    "gaussian:thm-4.11.1": "moments", "gaussian:thm-4.11.2": "moments"}

    @property
    def default_checks(self) -> frozenset[str]:
        """The cross-checks of ``simulate=True`` without ``checks`` (:data:`flowcert.gaussian.catalogue.DEFAULT_CHECKS`)."""
        from .catalogue import DEFAULT_CHECKS

        return DEFAULT_CHECKS

    def load(self, params: Any, *, command: str | None = None) -> GaussianParams:
        """Validated parameters; ``command`` applies its size limit (:func:`flowcert.limits.command_problem`), and
        for ``verify`` on structured parameters (B, V factored, A and Sigma0 diagonal: a pretrained head) the
        measured cost model :func:`flowcert.limits.structured_problem` instead."""
        from ..limits import command_problem, structured_problem
        from .catalogue import structured

        p = load_any(params, GaussianParams, parse_gaussian, load_gaussian)
        if command == "verify" and structured(p):
            problem = structured_problem(p.d, max(p.factored["B"].inner, p.factored["V"].inner))
        else:
            problem = command_problem(command, p.d) if command else None
        if problem is not None:
            raise InputError(f"--params: {problem}")
        return p

    @staticmethod
    def summary_lines(doc: Document, detail: bool = False) -> list[str]:
        """The text lines of this system's own parts of a ``verify`` document (after the theorems):
        the Table 1 regime (``detail``: with its reason) and the run of eq. (7)."""
        lines = []
        if "regime" in doc:
            r = doc["regime"]
            sim = doc.get("simulation")
            basis = r["basis"]
            if basis == "simulation" and (sim is None or sim.get("skipped")):  # nothing was read off a run
                basis = "no simulation asked: simulate=True (--simulate) runs one"
            lines.append(f"regime: Sigma {r['Sigma']}, mu {r['mu']} (basis: {basis})"
                         + (f"; {r['reason']}" if detail and r.get("reason") else ""))
        return lines + SystemBase.summary_lines(doc, detail)

    def verify_run(self, p: GaussianParams, *, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None) -> VerifyRun:
        """The ``verify gaussian`` document (typed theorems) and the run of eq. (7) behind it (None when
        the size limit skipped it): :func:`flowcert.gaussian.catalogue.verify_run`."""
        from .catalogue import verify_run

        return verify_run(p, simulate=simulate, seed=seed or 0, checks=checks)

    def design(self, spec: Any) -> tuple[DesignDocument, str]:
        r"""``design gaussian --spec FILE``: Lemma 4.4 read backwards, the :math:`A` for which a prescribed
        :math:`\Sigma_\infty\succ0` solves (18), from ``Sigma_inf, K, V, B``
        (:func:`flowcert.gaussian.regime.lemma_4_4_design`); the document and its text."""
        import numpy as np

        from ..files import load_file

        try:
            doc = self.design_document(load_file(spec))
        except ParamError as err:
            raise err.with_file(spec) from None
        except (ValueError, TypeError) as exc:
            raise InputError(f"{spec}: {exc}") from None
        return doc, (f"A =\n{np.array2string(np.array(doc['A']), precision=12)}\n"
                     f"(18) residual exactly zero: {doc['residual_is_zero']}\n")

    def design_document(self, raw: Mapping[str, Any]) -> DesignDocument:
        """The ``design gaussian`` document of a specification ``raw`` (keys ``Sigma_inf, K, V, B``), validated as
        the command validates its file: what ``recheck`` re-derives a design document from.

        Raises
        ------
        flowcert.errors.ParamError
            An unknown or missing key, a shape, a magnitude, or a size beyond ``design:d``.
        """
        import numpy as np

        from ..arrays import as_matrix
        from ..documents import document
        from ..limits import check_limit
        from ..schema import check_magnitude
        from .regime import lemma_4_4_design

        keys = ("Sigma_inf", "K", "V", "B")
        unknown = [k for k in raw if k not in keys]
        if unknown:
            raise ParamError(str(unknown[0]), f"unknown key {str(unknown[0])!r} (allowed: {', '.join(keys)})",
                             names_key=True)
        missing = [k for k in keys if k not in raw]
        if missing:
            raise ParamError(missing[0], f"missing required key(s) {missing}", names_key=True)
        mats = []
        for k in keys:
            m = np.asarray(as_matrix(raw[k], k, (None, None) if not mats else mats[0].shape), dtype=float)
            if k == "Sigma_inf":
                if m.shape[0] != m.shape[1]:
                    raise ParamError(k, f"expected a square d x d matrix, got shape {m.shape}")
                check_limit("design:d", m.shape[0], k)
            check_magnitude(m, k)
            mats.append(m)
        return document(self.name, {k: m.tolist() for k, m in zip(keys, mats)}, **lemma_4_4_design(*mats))

    def export(self, checkpoint: Any, layer: int, head: int) -> GaussianHeadParams:
        """``pretrained export --system gaussian``: one head as a gaussian parameter mapping
        (:func:`flowcert.pretrained.heads.gaussian_params`)."""
        from ..pretrained.heads import gaussian_params

        return gaussian_params(checkpoint, layer, head)

    @staticmethod
    def weight_slices(params: Mapping[str, Any], head: Any) -> list[tuple[str, Any, Any]]:
        r"""The factors of the export's ``B`` and ``V``: :math:`K^\top`, :math:`Q` and :math:`W_O`, :math:`W_V`,
        exact slices of the weights (:func:`flowcert.pretrained.heads.gaussian_params`)."""
        def factor(key: str, i: int) -> Any:
            m = params.get(key)
            fs = m.get("factors") if isinstance(m, Mapping) else None
            return fs[i] if isinstance(fs, list) and len(fs) == 2 else None

        return [("B.factors[0]", factor("B", 0), head.K.T), ("B.factors[1]", factor("B", 1), head.Q),
                ("V.factors[0]", factor("V", 0), head.O), ("V.factors[1]", factor("V", 1), head.V)]

    def simulate(self, p: GaussianParams, options: SimulateOptions) -> tuple[SimulateDocument, str]:
        """``simulate gaussian``: one run of eq. (7) to ``t_end``, and the ``--samples`` ensemble if asked."""
        import numpy as np

        from ..documents import document
        from ..numeric import gaussian as ng
        from .catalogue import coefficients

        ensemble = _ensemble(p, options)
        sol = ng.integrate_moments(coefficients(p), p.mu0, p.Sigma0, options.t_end)
        doc = document(self.name, p.to_json(), simulation={
            "t_end": float(sol.t[-1]), "blowup_time": sol.blowup_time, "status": sol.status,
            "mu_final": sol.mu[-1].tolist(), "Sigma_final": sol.Sigma[-1].tolist(), "agrees": None,
            "method": sol.method, "integrator_message": sol.message, "mean_escape_time": sol.mean_escape_time})
        if options.plot is not None:
            doc["simulation"]["plot"] = options.plot(sol)
        summary = (f"t_end {sol.t[-1]:.6g}  status {sol.status}  blow-up {sol.blowup_time}\n"
                   f"mu = {np.array2string(sol.mu[-1], precision=6)}\n"
                   f"Sigma =\n{np.array2string(sol.Sigma[-1], precision=6)}\n")
        if ensemble is not None:
            doc["ensemble"] = ensemble
            spread = ensemble["blowup_time"]
            summary += (f"ensemble of {ensemble['samples']} on {ensemble['device']}: {ensemble['blowups']} blow-ups"
                        + (f" at t in [{spread['min']:.6g}, {spread['max']:.6g}]" if spread else "")
                        + f", {ensemble['final_states']['samples']} reached t_end\n")
        return doc, summary

    def codegen(self, backend: str, p: Any = None) -> str:
        """The moment equation (7) and its linearisation as ``numpy``, ``torch`` or ``c`` source
        (matrix-level kernels: the same for every parameter set, so a parameter file is refused)."""
        if p is not None:
            raise InputError("--params: only for 'codegen attention' (the gaussian kernels take no parameter file)")
        from ..numeric import gaussian as ng
        from ..symbolic import codegen

        programs = [ng.moment_program(), ng.linearisation_program()]
        printer = {"numpy": codegen.NumpyPrinter(), "torch": codegen.TorchPrinter(),
                   "c": codegen.ShapedCPrinter()}[backend]
        header = {"numpy": "import numpy as np\n\n\n", "torch": "import torch\n\n\n", "c": ""}[backend]
        return header + "\n\n".join(printer.print(prog) for prog in programs)

    def reach(self, params: str, target: str, T: float, out: str | None = None) -> tuple[ReachDocument, str]:
        """``reach gaussian``: Theorem 3.3's controls steering ``(mu0, Sigma0)`` to ``target`` in time ``T``;
        the document and its one line of text (rank and terminal errors)."""
        from .reach import run

        doc = run(params, target, T, out)
        err = doc["terminal_error"]
        return doc, (f"Theorem 3.3 controls over [0, {T}] (rank {doc['rank']}): terminal error "
                     f"mu {err['mu']}, Sigma {err['Sigma']} (relative {err['Sigma_relative']})\n")

    def rederivable(self, doc: Document) -> bool:
        """Verify documents, and the documents of ``design gaussian`` and ``reach gaussian``."""
        return super().rederivable(doc) or command_document(doc) is not None

    def record_patterns(self, doc: Document) -> tuple[str, ...]:
        """A ``reach`` document's integration of eq. (7) under the constructed controls is a record (its terminal
        error, the integrator's report, the controls file written)."""
        if command_document(doc) == "reach":
            return (r"^\$\.terminal_error$", r"^\$\.integration$", r"^\$\.controls$")
        return self.record_paths

    def rerun_document(self, raw: JSONObject, doc: Document, *, simulate: bool, seed: int | None,
                       checks: frozenset[str]) -> Document:
        """``design`` made again (it has no run); ``reach`` with its construction and integration repeated; a verify
        document through ``verify``."""
        kind = command_document(doc)
        if kind == "design":
            from ..documents import plain

            return plain(self.design_document(raw))
        if kind == "reach":
            from .reach import rerun_record

            return rerun_record(raw, doc)
        return super().rerun_document(raw, doc, simulate=simulate, seed=seed, checks=checks)

    def rederived(self, raw: JSONObject, doc: Document) -> Document:
        """Without a run; for a document that ran eq. (7), its regime and Table 1 from the run as its
        ``simulation`` record has it (:func:`~flowcert.gaussian.catalogue.recorded_run`). A ``design`` document
        is made again from its specification; a ``reach`` document's derived parts from its start, target and
        horizon (:func:`flowcert.gaussian.reach.rederived_document`)."""
        from ..documents import plain, records
        from . import catalogue

        kind = command_document(doc)
        if kind == "design":
            return plain(self.design_document(raw))
        if kind == "reach":
            from .reach import rederived_document

            return rederived_document(raw, doc)
        sim = doc.get("simulation")
        if not isinstance(sim, dict) or sim.get("skipped") is not None:
            return super().rederived(raw, doc)
        p = self.load(raw, command="verify")
        return plain(records(catalogue.verify_run(p, simulate=False, recorded=catalogue.recorded_run(p, sim)).document))

    claims_parts = frozenset({"consistency"})

    def part_from_claims(self, key: str, doc: Document) -> Any:
        """``consistency``: the pass of :func:`flowcert.gaussian.regime.consistency` re-run on the document's claims."""
        import copy

        from .regime import consistency

        if key != "consistency":
            raise KeyError(key)
        return consistency(copy.deepcopy({k: doc[k] for k in ("regime", "theorems", "simulation") if k in doc}))

    def check_records(self, doc: Document) -> list[tuple[str, str]]:
        """The run record: it ends in (0, t_end]; a run that blew up ends at its blow-up time; one that reached
        its end ends at ``params.t_end``. A ``reach`` document's records: :func:`flowcert.gaussian.reach.check_records`."""
        if command_document(doc) == "reach":
            from .reach import check_records

            return check_records(doc)
        sim, params = doc.get("simulation"), doc.get("params")
        if not isinstance(sim, Mapping) or not isinstance(params, Mapping) or sim.get("skipped") is not None:
            return []
        t_end, T = sim.get("t_end"), params.get("t_end")
        if t_end is None:
            return []
        if not isinstance(t_end, (int, float)) or isinstance(t_end, bool) or not isinstance(T, (int, float)) \
                or not 0 < t_end <= T:
            return [("$.simulation.t_end", f"a run ends in (0, t_end = {T}]")]
        blow = sim.get("blowup_time")
        if blow is not None and blow != t_end:
            return [("$.simulation.blowup_time", "a run that blew up ends at its blow-up time")]
        if blow is None and sim.get("Sigma_final") is not None and t_end != T \
                and "successfully" in str(sim.get("integrator_message")):
            return [("$.simulation.t_end", f"a run that reached its end ends at t_end = {T}")]
        return []


def command_document(doc: Document) -> str | None:
    """``"design"`` or ``"reach"`` for the documents of those commands (by the keys only each has), else None."""
    if SystemBase.VERIFY_KEYS & doc.keys():
        return None
    if _DESIGN_KEYS & doc.keys():
        return "design"
    return "reach" if _REACH_KEYS & doc.keys() else None


#: keys only a design / a reach document has (any one makes a document one, so a removed key is refused, not unread)
_DESIGN_KEYS = frozenset({"A_exact", "M_spectrum", "residual_is_zero", "formula"})
_REACH_KEYS = frozenset({"terminal_error", "integration", "target", "rank_basis"})


def _ensemble(p: GaussianParams, options: SimulateOptions) -> EnsembleRecord | None:
    """``--samples N [--device cpu|cuda] [--seed S]``: the batched torch ensemble, or None."""
    if options.samples is None:
        for flag, value in (("--device", options.device), ("--seed", options.seed)):
            if value is not None:
                raise InputError(f"{flag}: only with --samples N")
        return None
    from .ensemble import MAX_SAMPLES, ensemble

    if not 1 <= options.samples <= MAX_SAMPLES:
        raise InputError(f"--samples: must be an integer in [1, {MAX_SAMPLES}], got {options.samples}")
    if options.seed is not None and options.seed < 0:
        raise InputError(f"--seed: must be a non-negative integer, got {options.seed}")
    if p.time_varying:
        raise InputError("--samples: the batched integrator takes constant parameters; these are time-varying")
    device = options.device or "cpu"
    if device not in ("cpu", "cuda"):
        raise InputError(f"--device: must be cpu or cuda, got {device!r}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InputError("--device: cuda requested but torch sees no CUDA device (use --device cpu)")
    return ensemble(p, options.samples, options.t_end, device=device, seed=options.seed or 0)


#: The registry's object for this system (:data:`flowcert.systems.REGISTRY`).


SYSTEM = GaussianSystem()
