r"""The ``attention`` system (multistability and consensus papers) as a :class:`flowcert.system.System`.

.. math::

    \dot x_i = (I - x_i x_i^\top W)\sum_{\eta=1}^h V_\eta \sum_j A^\eta_{ij}(t, X)\, x_j .

Loading (:mod:`.params`), the ``verify`` and ``equilibria`` documents, ``simulate`` (batched torch
RK4 with retraction, or basin statistics with ``--samples``) and the generated field kernel all
delegate to :mod:`flowcert.attention` (the report section and figures: :mod:`flowcert.reports.user`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..system import SimulateOptions, SystemBase, VerifyRun, load_any
from .params import AttentionParams, load_attention, parse_attention

if TYPE_CHECKING:
    from ..pretrained.heads import AttentionHeadParams
    from ..records import Document, JSONObject
    from ..system import ParameterKey
    from .records import EquilibriaDocument

__all__ = ["SYSTEM", "AttentionSystem"]


class AttentionSystem(SystemBase):
    """Self-attention (and the Oja variants) on the sphere or an ellipsoid (see :class:`flowcert.system.System`)."""

    name = "attention"
    understood_only = frozenset({"d"})

    def rederivable(self, doc: Document) -> bool:
        """Verify documents, and ``equilibria attention`` documents that name their cap."""
        return super().rederivable(doc) or ("equilibria" in doc and isinstance(doc.get("cap"), int))

    def rederived(self, raw: JSONObject, doc: Document) -> Document:
        """An ``equilibria`` document: the listing again, with the document's cap; else the verify document."""
        if "equilibria" not in doc:
            return super().rederived(raw, doc)
        from ..documents import plain

        return plain(self.equilibria(self.load(raw, command="equilibria"), cap=doc["cap"])[0])

    def record_patterns(self, doc: Document) -> tuple[str, ...]:
        """Without an exact enumeration (several heads, a causal mask, an ellipsoid) the listing is the end states of
        seeded runs: a record."""
        if "equilibria" in doc and not doc.get("classes"):
            return (r"^\$\.equilibria$",)
        return self.record_paths
    params_type = AttentionParams
    warm_modules = ("flowcert.attention", "sympy")
    single_head = False
    from_tokens = True
    #: cross-checks of ``simulate=True`` (names of ``checks=``; all run by default)
    checks = {"simulation": "one run from X0: its limit class against the certified equilibria",
              "consensus_run": "the run behind the consensus paper's cross-checks (Thm 3.2, Lemmas 4.1, 4.2, "
                               "Thms 4.1, 5.1, 6.1)",
              "projection": "Lemma 3.1: the projected flow against the ellipsoid's tangent projection",
              "gradient": "Thm 3.1: the field against the gradient of the energy",
              "oja": "multistability paper: Oja trajectories against the predicted eigenvector",
              "basins": "multistability paper: sampled basins against the certified stable classes (Thms 1, 2) "
                        "and W along runs (Lemma 5)"}

    def parameter_keys(self) -> list[ParameterKey]:
        """The keys of a parameter file (:data:`flowcert.attention.params.ATTENTION_KEY_DOCS`)."""
        from .params import ATTENTION_KEY_DOCS

        return [{"key": k, "required": need, "default": None, "doc": doc} for k, (need, doc) in ATTENTION_KEY_DOCS.items()]

    @property
    def entry_checks(self) -> dict[str, str]:
        """The cross-check that tests each entry's prediction: the catalogues' ``SIMULATION_CHECKS``, and
        ``consensus_run`` for the other consensus entries."""
        from . import consensus, multistability

        return {**{f"consensus:{e}": "consensus_run" for e in ("thm-3.2", "lemma-4.1", "lemma-4.2", "thm-4.1",
                                                              "lemma-5.1", "thm-5.1", "lemma-6.1", "thm-6.1")},
                **consensus.SIMULATION_CHECKS, **multistability.SIMULATION_CHECKS}

    def load(self, params: Any, *, command: str | None = None) -> AttentionParams:
        """Validated parameters (path, mapping or :class:`AttentionParams`)."""
        return load_any(params, AttentionParams, parse_attention, load_attention)

    @staticmethod
    def weight_slices(params: Mapping[str, Any], head: Any) -> list[tuple[str, Any, Any]]:
        """The export's ``Q`` and ``K`` of its one head: the raw projections, exact slices of the weights
        (:func:`flowcert.pretrained.heads.attention_params`); ``V = W_O W_V`` is a float product."""
        heads = params.get("heads")
        got = heads[0] if isinstance(heads, list) and len(heads) == 1 and isinstance(heads[0], Mapping) else {}
        return [(f"heads[0].{key}", got.get(key), W) for key, W in (("Q", head.Q), ("K", head.K))]

    def verify_run(self, p: AttentionParams, *, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None) -> VerifyRun:
        """The ``verify attention`` document (typed theorems: :func:`flowcert.attention.verify_results`)
        and the run behind ``simulation`` (its own ``X_final``; no separate object)."""
        from . import verify_results

        if simulate and not p.time_varying:  # --simulate runs fixed-step RK4 to t_end
            _check_fixed_step_run(p, p.t_end, "t_end")
        doc = verify_results(p, simulate=simulate, seed=seed, checks=checks)
        return VerifyRun(doc, doc.get("simulation"))

    def equilibria(self, p: AttentionParams, cap: int | None = None, *, file: Any = None) -> tuple[EquilibriaDocument, str]:
        """The ``equilibria attention`` document (:func:`flowcert.attention.equilibria`), after the
        ``equilibria:*`` limits (``file``: the parameter file their messages name), and its text (one
        line per equilibrium)."""
        from ..limits import check_limit
        from . import equilibria
        from .enumeration import DEFAULT_CAP

        check_limit("equilibria:n", p.n, "n", file=file)
        if cap is not None:
            check_limit("equilibria:cap", cap, "--cap")
        size = DEFAULT_CAP if cap is None else cap
        check_limit("equilibria:cap*n*d", size * p.n * p.d, "--cap", file=file,
                    what=f"cap * n * d ({size} * {p.n} * {p.d}), the size of the listing")
        doc = equilibria(p, cap=cap)
        lines = [f"{len(doc['equilibria'])} equilibria; skipped: {doc['skipped']}"]
        lines += [f"  {'/'.join(e['class']):<22} k={e['eigvec_index']}  stable={e['stable']}  {e.get('label', '')}"
                  for e in doc["equilibria"]]
        return doc, "\n".join(lines) + "\n"

    def export(self, checkpoint: Any, layer: int, head: int | None = None) -> AttentionHeadParams:
        """``pretrained export --system attention``: the heads of ``layer`` (or one) as an attention
        parameter mapping (:func:`flowcert.pretrained.heads.attention_params`)."""
        from ..pretrained.heads import attention_params

        return attention_params(checkpoint, layer, head)

    def simulate(self, p: AttentionParams, options: SimulateOptions) -> tuple[Document, str]:
        """``simulate attention``: one run from ``X0``, or ``--samples`` runs with basin statistics."""
        from ..documents import document
        from . import simulate

        from ..limits import check_limit

        if options.samples is not None:
            check_limit("attention:samples", options.samples, "--samples")
        else:
            _check_fixed_step_run(p, options.t_end, "--t-end")
        device = options.device or "cpu"
        if device != "cpu":
            import torch

            try:
                torch.empty(0, device=device)
            except (RuntimeError, AssertionError) as exc:
                raise InputError(f"--device: {device!r} is not available ({str(exc).splitlines()[0]})") from None
        sim = simulate(p, t_end=options.t_end, samples=options.samples, device=device, seed=options.seed)
        doc = document(self.name, p.to_json(), simulation=sim)
        if options.plot is not None:
            sim["plot"] = options.plot(sim)
        lines = [f"t_end {sim['t_end']:.6g}  limit_class {sim.get('limit_class')}  max drift {sim.get('max_drift')}"]
        for row in sim.get("basins", {}).get("outcomes", []):
            lines.append(f"  {row['fraction']:.3f} [{row['wilson'][0]:.3f}, {row['wilson'][1]:.3f}]  {row['label']}")
        return doc, "\n".join(lines) + "\n"

    def codegen(self, backend: str, p: Any = None) -> str:
        """The field kernel of the structure of ``p`` (path, mapping or parameters; the default
        one-head structure without ``p``)."""
        from ..symbolic.attention import Structure
        from . import codegen_source

        return codegen_source(self.load(p).structure if p is not None else Structure(), backend)

def _check_fixed_step_run(p: AttentionParams, t_end: float, key: str) -> None:
    """Refuse a fixed-step run to ``t_end`` over the ``attention:steps`` / ``attention:step_work`` limits (before any work)."""
    import math

    from ..limits import check_attention_run
    from . import default_dt

    dt = default_dt(p)
    check_attention_run(math.ceil(t_end / dt), p.n, p.d, len(p.heads), key, t_end=t_end, dt=dt)


#: The registry's object for this system (:data:`flowcert.systems.REGISTRY`).
SYSTEM = AttentionSystem()
