"""``verify attention --simulate`` on real heads, one fresh process per head; prints JSON.

A MiniLM head exported by ``pretrained verify --system attention`` is one head with
:math:`Q, K\\in\\mathbb R^{d_h\\times d}` (:math:`d_h = 32`, :math:`d = 384`), the value–output map
:math:`V = W_OW_V` of rank :math:`\\le d_h`, :math:`\\beta = 1/\\sqrt{d_h}` and the default prompt's
tokens as ``X0`` (:math:`n = 10`). Each head runs in its own child process (so its peak RSS is its
own): the child times ``SYSTEM.verify(p, simulate=True)`` (the document of ``verify attention --simulate``) with ``time.process_time`` (``cpu_s``) and reports
``ru_maxrss`` (``peak_mb``) and its whole CPU time, imports included (``process_cpu_s``).

In the same run:

* ``reference``: a seeded full-rank random head at the same :math:`d` and :math:`n`
  (:math:`Q, K, V\\sim\\mathcal N(0, 1/d)`, tokens uniform on the sphere), timed the same way;
  ``ratio`` is head / reference (CPU seconds).
* ``--baseline REV``: the same heads through the code of git revision ``REV`` (extracted with
  ``git archive`` into a temporary folder and imported from there), with ``speedup`` = baseline /
  current CPU seconds and ``same_verdicts``: every theorem's ``applies``, every hypothesis status,
  every cross-check status and the simulation's limit class, label and ``agrees`` are equal.
* ``--gpt2``: a GPT-2-shaped head (``transformers.GPT2Model``, ``n_embd = 768``, 12 heads, randomly
  initialised, ``save_pretrained`` into a temporary folder, exported by ``flowcert pretrained export
  --system attention``, with ``n`` hidden states of the model as ``X0``).

    python benchmarks/attention_heads.py [--heads 2:5 0:0 3:7 5:11 | --all] [--gpt2] [--baseline REV [--repo DIR]]
                                         [--smoke] [--records FILE.jsonl]

``--smoke`` runs the smallest case only (one head of a seeded random BERT at d = 8, and its
reference), for CI. ``--records`` writes each head's verdict fingerprint as JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"flowcert": "flowcert", "symbolic": "symbolic", "numeric": "numeric", "gpu": "gpu",
          "certificates": "certificates", "reports": "reports"}
DEFAULT_HEADS = ["2:5", "0:0", "3:7", "5:11"]


# ------------------------------------------------------------------ child: one verify, one process
def fingerprint(doc: dict[str, Any]) -> dict[str, Any]:
    """What must not change: applies, hypothesis and cross-check statuses, the simulation's limit."""
    sim = doc.get("simulation") or {}
    return {"theorems": [[t["id"], t["applies"], [[h["name"], h["status"]] for h in t["hypotheses"]],
                          (t.get("cross_check") or {}).get("status")] for t in doc["theorems"]],
            "simulation": {k: sim.get(k) for k in ("limit_class", "limit_label", "limit_verdict", "agrees")}}


def child(path: str) -> None:
    import resource
    import time

    import torch

    torch.set_num_threads(1)
    from flowcert.attention.system import SYSTEM

    p = SYSTEM.load(path)
    c0 = time.process_time()
    doc = SYSTEM.verify(p, simulate=True)  # the verify document (a dict, in every revision)
    cpu = time.process_time() - c0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    sim = doc.get("simulation") or {}
    print(json.dumps({"d": p.d, "n": p.n, "cpu_s": cpu, "process_cpu_s": ru.ru_utime + ru.ru_stime,
                      "peak_mb": ru.ru_maxrss / 1024, "doc_mb": len(json.dumps(doc)) / 2**20,
                      "steps": sim.get("steps"), "t_reached": sim.get("t_reached"),
                      "final_speed": sim.get("final_speed"),
                      "methods": {f"{t['id']}|{h['name']}": h["method"] for t in doc["theorems"] for h in t["hypotheses"]},
                      "fingerprint": fingerprint(doc)}))


def run_child(path: Path, tree: Path | None) -> dict[str, Any]:
    """``child(path)`` in a fresh interpreter; ``tree`` (a package folder) replaces the installed code."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    proc = subprocess.run([sys.executable, __file__, "--child", str(path)], env=env, capture_output=True, text=True,
                          check=False, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ parent: cases, baseline, comparison
def package_tree(rev: str, into: Path, repo: Path = ROOT) -> Path:
    """The code of ``rev`` (in the git checkout ``repo``) as an importable ``flowcert`` package (the
    layer folders linked under it)."""
    src = into / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg = into / "pkg" / "flowcert"
    pkg.mkdir(parents=True)
    for entry in (src / "flowcert").iterdir():
        (pkg / entry.name).symlink_to(entry)
    for name in ("symbolic", "numeric", "gpu", "certificates", "reports"):
        (pkg / name).symlink_to(src / name)
    return into / "pkg"


def minilm_cases(specs: list[str], out: Path) -> list[tuple[str, Path]]:
    from flowcert.pretrained import find_minilm, load_checkpoint
    from flowcert.pretrained.command import export_heads

    root = find_minilm()
    if root is None:
        raise SystemExit("MiniLM is not installed (make install)")
    ck = load_checkpoint(root)
    cases = []
    for spec in specs:
        layer, head = (int(x) for x in spec.split(":"))
        cases.append((f"minilm L{layer} H{head}", Path(export_heads(ck, "attention", [layer], [head], out)[0])))
    return cases


def gpt2_case(out: Path, head: int = 0, n: int = 10, seed: int = 0) -> tuple[str, Path]:
    """A randomly initialised ``GPT2Model`` (n_embd 768, 12 heads, one block), saved and exported
    through the CLI; ``X0`` = its first block's input for ``n`` seeded token ids, rows normalised."""
    import numpy as np
    import torch
    import transformers

    from flowcert.cli import main as cli

    torch.manual_seed(seed)
    model = transformers.GPT2Model(transformers.GPT2Config(n_embd=768, n_head=12, n_layer=1, n_positions=64,
                                                            vocab_size=128, bos_token_id=0, eos_token_id=0)).eval()
    model.save_pretrained(out / "gpt2", safe_serialization=True)
    path = out / f"gpt2_L0_H{head}.json"
    with contextlib.redirect_stdout(sys.stderr):  # the command's "wrote ..." line: stdout is this script's JSON
        code = cli(["pretrained", "export", "--model", str(out / "gpt2"), "--layer", "0", "--head", str(head),
                    "--system", "attention", "--out", str(path)])
    if code != 0:
        raise SystemExit(f"pretrained export exited {code}")
    ids = torch.as_tensor(np.random.default_rng(seed).integers(0, 128, size=(1, n)))
    with torch.no_grad():
        X = model(input_ids=ids, output_hidden_states=True).hidden_states[0][0].double().numpy()
    raw = json.loads(path.read_text())
    raw.update(X0=(X / np.linalg.norm(X, axis=1, keepdims=True)).tolist(), n=n)
    path.write_text(json.dumps(raw))
    return f"gpt2-shaped L0 H{head}", path


def smoke_case(out: Path) -> tuple[str, Path]:
    """One head of a seeded random BERT at d = 8 (two heads of 4), random tokens (n = 4)."""
    from flowcert.pretrained.heads import attention_params, write_params
    from flowcert.pretrained.synthetic import random_checkpoint

    ck = random_checkpoint("bert", d=8, n_heads=2, n_layers=1, d_ff=16, vocab=16, seed=0, std=0.3)
    raw = attention_params(ck, 0, 0)
    raw["n"] = 4
    return "smoke bert d8 L0 H0", write_params(raw, out / "smoke.json")


def reference_case(d: int, n: int, out: Path, seed: int = 0) -> Path:
    """Seeded full-rank random head at the same d and n: Q, K, V ~ N(0, 1/d), tokens uniform on the sphere."""
    import numpy as np

    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
    X0 = rng.normal(size=(n, d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    path = out / f"reference_d{d}_n{n}.json"
    path.write_text(json.dumps({"heads": [{"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist()}], "beta": 1.0,
                                "X0": X0.tolist(), "n": n}))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heads", nargs="*", default=None, metavar="L:H", help=f"MiniLM heads (default {DEFAULT_HEADS})")
    ap.add_argument("--all", action="store_true", help="all 72 MiniLM heads")
    ap.add_argument("--gpt2", action="store_true", help="the GPT-2-shaped d = 768 head too")
    ap.add_argument("--baseline", metavar="REV", help="also run every head with the code of git revision REV")
    ap.add_argument("--repo", default=str(ROOT), help="the git checkout REV is taken from (default: this script's)")
    ap.add_argument("--smoke", action="store_true", help="smallest case only (CI)")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--records", metavar="FILE.jsonl", help="write each head's result and fingerprint here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="attention_heads_") as tmp:
        work = Path(tmp)
        if args.smoke:
            cases = [smoke_case(work)]
        else:
            specs = [f"{layer}:{h}" for layer in range(6) for h in range(12)] if args.all else \
                (DEFAULT_HEADS if args.heads is None else args.heads)
            cases = minilm_cases(specs, work) if specs else []
            if args.gpt2:
                cases.append(gpt2_case(work))
        base = package_tree(args.baseline, Path(tempfile.mkdtemp(dir=tmp)), Path(args.repo)) if args.baseline else None
        heads, refs = [], {}
        for label, path in cases:
            rec: dict[str, Any] = {"head": label, **run_child(path, None)}
            if base is not None:
                old = run_child(path, base)
                rec["baseline"] = {k: old.get(k) for k in ("cpu_s", "process_cpu_s", "peak_mb", "doc_mb", "steps", "error")}
                if "cpu_s" in old and "cpu_s" in rec:
                    rec["speedup"] = old["cpu_s"] / rec["cpu_s"]
                    rec["same_verdicts"] = old["fingerprint"] == rec["fingerprint"]
                    rec["changed_methods"] = sorted(k for k, v in rec["methods"].items() if old["methods"].get(k) != v)
            if "d" in rec and not args.no_reference:
                key = (rec["d"], rec["n"])
                if key not in refs:
                    refs[key] = run_child(reference_case(*key, work), None)
                    if base is not None:
                        refs[key]["baseline_cpu_s"] = run_child(reference_case(*key, work), base).get("cpu_s")
                rec["ratio_to_reference"] = rec["cpu_s"] / refs[key]["cpu_s"]
            heads.append(rec)
            print(json.dumps({"progress": label, "cpu_s": rec.get("cpu_s"), "speedup": rec.get("speedup"),
                              "same_verdicts": rec.get("same_verdicts")}), file=sys.stderr)
        if args.records:
            Path(args.records).write_text("".join(json.dumps(r) + "\n" for r in heads))
    ok = [r for r in heads if "cpu_s" in r]
    summary: dict[str, Any] = {"heads": len(heads), "errors": len(heads) - len(ok),
                               "cpu_s_total": sum(r["cpu_s"] for r in ok),
                               "peak_mb_max": max((r["peak_mb"] for r in ok), default=None)}
    if base is not None:
        summary["baseline_cpu_s_total"] = sum((r["baseline"].get("cpu_s") or 0.0) for r in ok)
        summary["all_same_verdicts"] = all(r.get("same_verdicts") for r in ok)
    out = {"summary": summary, "baseline": args.baseline,
           "heads": [{k: v for k, v in r.items() if k not in ("fingerprint", "methods")} for r in heads],
           "reference": [{"d": d, "n": n, **{k: v for k, v in r.items() if k not in ("fingerprint", "methods")}}
                         for (d, n), r in refs.items()]}
    print(json.dumps(out, indent=1))
    return 0 if summary["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
