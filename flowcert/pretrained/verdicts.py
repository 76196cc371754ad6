r"""Your own transformer, head by head: ``flowcert.pretrained.verify(model, system=..., heads=...)``.

Each selected head :math:`(\ell, h)` is read in the papers' conventions (:mod:`.heads`: gaussian
:math:`B=K^\top Q/\sqrt{d_h}`, :math:`V=W_O^hW_V^h`, A = 0, b = 0, μ₀ = 0, Σ₀ = I; attention the
raw :math:`Q, K` and :math:`U=W_O^hW_V^h` with β = 1/√d_h, causal for GPT-2 and OPT, from the tokens of a
prompt carried through the blocks before :math:`\ell`) and checked by :func:`flowcert.verify`, the
same job as ``flowcert pretrained verify`` runs per exported file. The answer is a
:class:`PretrainedResult`: a :class:`~flowcert.result.Result` per head and the per-head table.

The model may be a ``transformers`` model instance (BERT, GPT-2 or OPT architecture; GPT-2's ``Conv1D``
weights are stored transposed with a fused ``c_attn``, read as for a file), a state dict with its
config, a local folder, ``"minilm"``, or a hub id found in the local Hugging Face cache
(:func:`~flowcert.pretrained.checkpoint.load_model`; never the network).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InputError, python_terms
from ..result import Applies, Result, Verdict
from ..systems import get_system, names

if TYPE_CHECKING:
    from ..records import SweepLine
    from .checkpoint import CheckpointSummary

__all__ = ["PretrainedResult", "load", "verify"]

#: Systems a head can be checked as: those that declare ``export`` (:data:`flowcert.systems.REGISTRY`).
SYSTEMS = names("export")


@python_terms
def load(model: Any, *, config: Any = None) -> Any:
    """The model as a :class:`~flowcert.pretrained.checkpoint.Checkpoint` (see
    :func:`~flowcert.pretrained.checkpoint.load_model` for the forms accepted).

    Parameters
    ----------
    model : Checkpoint, transformers.PreTrainedModel, mapping, path or str
        A loaded checkpoint, a model instance (BERT, GPT-2 or OPT architecture), a state dict (with
        ``config``), a local folder, ``"minilm"``, or a hub id in the local Hugging Face cache
        (never downloaded).
    config : optional
        Keyword-only. The config of a state dict (a mapping, a ``transformers`` config or a
        ``config.json`` path); only with a state dict.

    Returns
    -------
    Checkpoint
        Architecture, sizes and float64 weights (the exact stored values).

    Raises
    ------
    flowcert.errors.InputError
        A :class:`~flowcert.errors.ParamError` naming what is missing or wrong (``model: ...``,
        ``config: ...``, ``config.json: ...``), in Python terms (no command-line flag).
    """
    from .checkpoint import load_model

    return load_model(model, config)


@dataclass(frozen=True, eq=False)
class PretrainedResult:
    """Every selected head of a model, verified: ``results[(layer, head)]`` is a :class:`Result`.

    Attributes
    ----------
    system : str
        ``gaussian`` or ``attention``.
    model : CheckpointSummary
        The checkpoint's sizes and kind (``Checkpoint.summary()``).
    results : Mapping[tuple[int, int], Result]
        By (layer, head), layer-major.
    seconds : Mapping[tuple[int, int], float]
        CPU seconds of each head's verification.
    """

    system: str
    model: CheckpointSummary
    results: Mapping[tuple[int, int], Result]
    seconds: Mapping[tuple[int, int], float] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"<flowcert.pretrained.PretrainedResult {self.model.get('kind')} d={self.model.get('d')}: "
                f"{len(self)} heads as {self.system}>")

    def __getitem__(self, key: tuple[int, int]) -> Result:
        return self.results[key]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def records(self) -> list[SweepLine]:
        """The heads as ``pretrained verify`` sweep records (``file`` ``L{layer}_H{head}.json``,
        ``status``, ``result`` the verify document, ``seconds``)."""
        return [{"file": f"L{layer}_H{head}.json", "status": "ok", "exit_code": 0,
                 "result": res.to_json(), "seconds": self.seconds.get((layer, head))}
                for (layer, head), res in self.results.items()]

    def summary_table(self, grouped: bool = False) -> str:
        """The per-head Markdown table of ``pretrained verify --summary`` (``grouped``: heads with the
        same regime, theorems and deciding hypothesis share a row).

        Parameters
        ----------
        grouped : bool, default False
            One row per group of heads that share regime, theorems that apply and deciding
            hypothesis (with their count and seconds, median and max) instead of one row per head.

        Returns
        -------
        str
            The Markdown table: per head (sorted by layer, then head), its regime, the theorems that
            apply, the deciding hypothesis (the first one not applying) and its seconds.
        """
        from .command import compact_record, grouped_table, summary_table

        recs = [compact_record(r) for r in self.records()]
        return grouped_table(recs) if grouped else summary_table(recs)

    def summary(self) -> str:
        """One line per head: layer, head, overall status, theorems that apply, and the deciding hypothesis."""
        lines = [f"flowcert.pretrained.verify {self.model.get('kind')} d={self.model.get('d')}: {len(self)} heads "
                 f"as {self.system}"]
        for (layer, head), res in self.results.items():
            applies = [t.id for t in res.theorems.values() if t.applies]
            ts = list(res.theorems.values())
            # an undecided head names the unknown hypothesis it waits on, not a failing one of another theorem
            first = (next((t for t in ts if t.applies is Applies.UNDECIDED), None) if res.status is Verdict.UNDECIDED
                     else None) or next((t for t in ts if t.deciding is not None), None)
            why = f"; {first.id}: {first.deciding.status.value} {first.deciding.name}" if first else ""
            lines.append(f"L{layer} H{head}: {res.status.value}, {len(applies)} apply{why}")
        return "\n".join(lines) + "\n"

    def _repr_html_(self) -> str:
        import html

        from ..display import RESULT_STYLE, word_badge
        from .command import head_row

        e = html.escape
        rows = []
        for (layer, head), rec in zip(self.results, self.records()):
            _, _, regime, applies, deciding, secs = head_row(rec)
            res = self.results[(layer, head)]
            rows.append(f"<tr><td>{layer}</td><td>{head}</td><td>{word_badge(res.status.value)}</td><td>{e(regime)}</td>"
                        f"<td>{e(', '.join(applies) or 'none')}</td><td>{e(deciding or '-')}</td>"
                        f"<td>{'' if secs is None else f'{secs:.1f}'}</td></tr>")
        head = "".join(f"<th>{c}</th>" for c in ("layer", "head", "status", "regime / limit", "theorems that apply",
                                                  "deciding hypothesis", "CPU s"))
        return (f'<div class="flowcert-result"><style>{RESULT_STYLE}</style><p><strong>flowcert.pretrained.verify '
                f"{e(str(self.model.get('kind')))}</strong> <small>{len(self)} heads as {e(self.system)}; "
                f"result[(layer, head)] for one head's table</small></p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table></div>")


def _indices(value: Any, name: str, top: int) -> list[int]:
    import numpy as np

    if value is None:
        return list(range(top))
    items = [value] if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else list(value)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < top:
            raise InputError(f"{name}: must be integers in 0..{top - 1}, got {value!r}")
    return [int(v) for v in items]


@python_terms
def verify(model: Any, *, system: str = "gaussian", layers: Any = None, heads: Any = None, simulate: bool = False,
           seed: int | None = None, prompt: str | None = None, tokens: Any = None, config: Any = None,
           progress: bool | None = None) -> PretrainedResult:
    """Verify every selected head of a transformer as ``system``.

    Parameters
    ----------
    model : transformers.PreTrainedModel, mapping, path or str
        A model instance (BERT, GPT-2 or OPT architecture), a state dict (with ``config``), a local
        folder, ``"minilm"``, or a hub id in the local Hugging Face cache (never downloaded).
    system : {"gaussian", "attention"}
        How each head is read (see the module notes).
    layers, heads : int or list of int, optional
        The blocks and the heads in each (default: all).
    simulate, seed
        As :func:`flowcert.verify` (``simulate=True``: cross-checks by simulation, slower).
    prompt : str, optional
        attention: the text whose tokens start the flow (default: the CLI's prompt); needs the
        model's ``tokenizer.json``.
    tokens : list of int, optional
        attention: token ids instead of a prompt (a model without a tokenizer, such as a randomly
        initialised one).
    config : optional
        The config of a state dict.
    progress : bool, optional
        A progress bar over the heads (None: on a terminal).

    Returns
    -------
    PretrainedResult
        ``result[(layer, head)]`` is each head's :class:`~flowcert.result.Result`; ``.summary_table()``
        the per-head table, ``.summary()`` one line per head; renders as a table in Jupyter.
    """
    from ..api import strict_flag
    from ..progress import bar
    from .checkpoint import load_model
    from .command import DEFAULT_PROMPT, exported
    from .model import Transformer

    if system not in SYSTEMS:
        raise InputError(f"system: a head is checked as one of {', '.join(SYSTEMS)}, got {system!r}")
    strict_flag("simulate", simulate)
    if progress is not None:
        strict_flag("progress", progress)
    if prompt is not None and tokens is not None:
        raise InputError("tokens: give a prompt or tokens, not both")
    ck = load_model(model, config)
    layer_ids = _indices(layers, "layers", ck.n_layers)
    head_ids = _indices(heads, "heads", ck.n_heads)
    ids: list[int] | None = None
    if get_system(system).from_tokens:  # the token systems (attention) start from a prompt's tokens
        if tokens is not None:
            ids = _indices(tokens, "tokens", ck.vocab_size)
            if not ids:
                raise InputError("tokens: give at least one token id")
        elif not (ck.path / "tokenizer.json").is_file():
            raise InputError(f"tokens: the model ({ck.path}) has no tokenizer.json to read a prompt with; "
                             "pass tokens=[ids]")
        else:
            ids = Transformer(ck).tokenize(prompt if prompt is not None else DEFAULT_PROMPT)
    tokens_of = {"prompt": None, "tokens": ids}  # the prompt's token ids, as a provenance names them
    results: dict[tuple[int, int], Result] = {}
    seconds: dict[tuple[int, int], float] = {}
    X0: dict[int, Any] = {}
    from ..api import verify as verify_one

    with bar(len(layer_ids) * len(head_ids), desc=f"heads ({system})", unit="head", enabled=progress) as b:
        for layer in layer_ids:
            for head in head_ids:
                t0 = time.process_time()
                raw = exported(ck, system, layer, head, tokens_of, X0)  # the CLI's export, the same values
                results[(layer, head)] = verify_one(system, raw, simulate=simulate, seed=seed)
                seconds[(layer, head)] = time.process_time() - t0
                b.update(1)
    return PretrainedResult(system, ck.summary(), results, seconds)
