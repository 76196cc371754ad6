"""``verify gaussian`` on real heads against the seeded random cases of ``verify_scaling.py``; prints JSON.

A head exported by ``flowcert pretrained export --system gaussian`` has :math:`A=0`, :math:`B=M^\\top`,
:math:`V=U` of rank :math:`d_{\\rm head}` (gaussian paper, eq. (7):
:math:`\\dot\\mu=(A+V+V\\Sigma B)\\mu+b`, :math:`\\dot\\Sigma=A\\Sigma+\\Sigma A^\\top+V\\Sigma B\\Sigma+\\Sigma B^\\top\\Sigma V^\\top`),
so the moment equation runs through the factored transport (``r_V r_B + r_V`` states). Timed per head:
the export, then every stage of ``verify`` (inclusive, as in ``verify_scaling.py``), wall and CPU
seconds. The reference is ``verify_scaling.case(regime, d)`` (full rank, same ``d``) timed the same
way in the same run; ``ratio`` is head / reference (CPU seconds). The GPT-2-shaped heads come from
a seeded random checkpoint (d = 768, 12 heads of 64); their stage limits are raised to 768 for the
run (``--no-raise`` keeps :mod:`flowcert.limits` as it is).

    python benchmarks/pretrained_verify.py [--minilm 2:5 0:0 3:7 5:11] [--gpt2-heads 0] [--reference thm48]
                                           [--attention 2:5 0:0]

``--attention`` times ``verify attention --simulate`` on MiniLM heads with the default prompt's tokens
as ``X0`` (as ``pretrained verify`` exports them), against a seeded full-rank random head at the same
``d`` and ``n`` in the same run.

``--baseline REV`` times the command itself, side by side: every head (``--minilm``, ``--gpt2-heads``
of a ``transformers.GPT2Model`` with ``n_embd = 768``, seeded random init, saved with
``save_pretrained`` and exported with ``flowcert pretrained export``) is verified by
``python -m flowcert verify gaussian --params FILE --json [--simulate]`` in a fresh process, once with
the current tree and once with the code at ``REV`` (``git archive`` into a temporary directory, put on
``PYTHONPATH`` as the ``flowcert`` package through its ``package-dir`` table), alternating. Per head:
CPU seconds and peak RSS of that process (``os.wait4``), wall seconds, document bytes by top-level key,
and whether every verdict (status of every hypothesis, ``applies``, cross-check status, regime
``Sigma``/``mu``/``basis``) is the same in both documents. Above ``COMMAND_MAX_D`` of a side the process
raises that side's limits first (so today's code can be timed at d = 768).

    python benchmarks/pretrained_verify.py --baseline 738cc72 [--minilm 2:5 0:0 3:7 5:11] [--gpt2-heads 0]
                                           [--simulate] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import verify_scaling as vs  # noqa: E402
from flowcert import limits  # noqa: E402
from flowcert.certificates import core  # noqa: E402
from flowcert.gaussian import catalogue  # noqa: E402
from flowcert.gaussian.params import parse_gaussian  # noqa: E402


def timed_verify(raw: dict[str, Any]) -> dict[str, Any]:
    """Every stage of ``verify gaussian`` on one raw parameter mapping (wall and CPU seconds)."""
    core.clear_memo()
    core.clear_content_memos()
    st = vs.Stages()
    vs.instrument(st)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        p = parse_gaussian({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in raw.items()})
        st.seconds["load"] = time.perf_counter() - t0
        doc = catalogue.verify(p)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        st.undo()
    reg = doc["regime"]
    return {"d": p.d, "wall_s": wall, "cpu_s": cpu,
            "stages_s": dict(sorted(st.seconds.items(), key=lambda kv: -kv[1])),
            "regime": {k: reg.get(k) for k in ("Sigma", "mu", "basis", "observed_blowup_time", "reason")},
            "applies": [t["id"] for t in doc["theorems"] if t["applies"]],
            "unknown_by_budget": [t["id"] for t in doc["theorems"]
                                  if any(h["method"] == "budget" for h in t["hypotheses"])]}


def head_case(ckpt: Any, layer: int, head: int) -> tuple[dict[str, Any], float]:
    from flowcert.pretrained.heads import gaussian_params

    t0 = time.perf_counter()
    raw = gaussian_params(ckpt, layer, head)
    return raw, time.perf_counter() - t0


def attention_case(ckpt: Any, layer: int, head: int) -> tuple[dict[str, Any], float]:
    """An exported ``attention`` head with the default prompt's tokens as ``X0`` (as ``pretrained verify``)."""
    from flowcert.pretrained.command import DEFAULT_PROMPT, prompt_tokens
    from flowcert.pretrained.heads import attention_params

    t0 = time.perf_counter()
    raw = attention_params(ckpt, layer, head)
    X0 = prompt_tokens(ckpt, layer, DEFAULT_PROMPT)
    raw.update(X0=X0.tolist(), n=int(X0.shape[0]))
    return raw, time.perf_counter() - t0


def attention_reference(d: int, n: int, seed: int = 0) -> dict[str, Any]:
    """Seeded full-rank random head at the same d and n: Q, K, V ~ N(0, 1/d), tokens uniform on the sphere."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
    X0 = rng.normal(size=(n, d))
    X0 /= np.linalg.norm(X0, axis=1, keepdims=True)
    return {"heads": [{"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist()}], "beta": 1.0, "X0": X0.tolist(), "n": n}


def timed_attention(raw: dict[str, Any]) -> dict[str, Any]:
    """``verify attention --simulate`` on one raw mapping: wall and CPU seconds, verdict summary."""
    from flowcert.attention import verify_document as verify
    from flowcert.attention.system import SYSTEM

    core.clear_memo()
    core.clear_content_memos()
    t0, c0 = time.perf_counter(), time.process_time()
    p = SYSTEM.load(raw)
    doc = verify(p, simulate=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    sim = doc.get("simulation") or {}
    return {"d": p.d, "n": p.n, "wall_s": wall, "cpu_s": cpu, "limit_class": sim.get("limit_class"),
            "limit_label": sim.get("limit_label"), "steps": sim.get("steps"),
            "applies": [t["id"] for t in doc["theorems"] if t["applies"]],
            "unknown": sorted({h["name"] for t in doc["theorems"] for h in t["hypotheses"] if h["status"] == "unknown"})}


def run_heads(ckpt: Any, specs: list[str], case: Any, timed: Any, label: str) -> list[dict[str, Any]]:
    """Export (``case``) and time (``timed``) each ``layer:head`` of ``specs``; progress on stderr."""
    recs = []
    for spec in specs:
        layer, head = (int(x) for x in spec.split(":"))
        raw, export_s = case(ckpt, layer, head)
        recs.append({"layer": layer, "head": head, "export_s": export_s, **timed(raw)})
        print(json.dumps({"progress": f"{label} {spec}", "cpu_s": recs[-1]["cpu_s"]}), file=sys.stderr)
    return recs


def raise_limits(d: int) -> None:
    for key in ("gaussian:integrate", "gaussian:prop-2.1", "gaussian:lemma-2.3", "gaussian:prop-2.4", "gaussian:table-1"):
        limits.STAGE_MAX_D[key] = max(limits.STAGE_MAX_D[key], d)


# ---------------------------------------------------------------------------------------
# --baseline REV: the command in fresh processes, current tree against REV
# ---------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def tree_at(rev: str, where: Path) -> Path:
    """The code at ``rev`` as an importable ``flowcert`` package under ``where/site`` (returns that path).

    ``git archive`` writes the sources; the ``[tool.setuptools.package-dir]`` table of that revision's
    ``pyproject.toml`` says where each subpackage lives, and a directory of symbolic links makes them
    one package (the editable install of the current tree is found later on ``sys.path``)."""
    import subprocess
    import tarfile
    import tomllib

    src, site = where / "src", where / "site"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], check=True,
                             capture_output=True).stdout
    import io

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    mapping = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    pkg = site / "flowcert"
    pkg.mkdir(parents=True)
    for entry in (src / mapping.get("flowcert", "flowcert")).iterdir():
        (pkg / entry.name).symlink_to(entry)
    for name, path in mapping.items():
        parts = name.split(".")
        if len(parts) == 2 and not (pkg / parts[1]).exists():
            (pkg / parts[1]).symlink_to(src / path)
    return site


RUNNER = """
import sys
from flowcert import limits
d = int(sys.argv[1])
if d > limits.COMMAND_MAX_D.get("verify", d):
    limits.COMMAND_MAX_D["verify"] = d
    for k in ("gaussian:integrate", "gaussian:prop-2.1", "gaussian:lemma-2.3", "gaussian:prop-2.4", "gaussian:table-1"):
        limits.STAGE_MAX_D[k] = max(limits.STAGE_MAX_D[k], d)
from flowcert.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_verify(params: Path, d: int, site: Path | None, out: Path, simulate: bool) -> dict[str, Any]:
    """``verify gaussian --params params --json`` in a fresh process (``site`` on PYTHONPATH, or the
    installed tree): CPU seconds and peak RSS from ``os.wait4``, the document written to ``out``."""
    import subprocess

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    if site is not None:
        env["PYTHONPATH"] = str(site)
    else:
        env.pop("PYTHONPATH", None)
    cmd = [sys.executable, "-c", RUNNER, str(d), "verify", "gaussian", "--params", str(params), "--json"]
    with open(out, "wb") as fh:
        t0 = time.perf_counter()
        # cwd outside any checkout: with ``-c`` the current directory comes first on sys.path, and a
        # checkout's ``flowcert/`` there would shadow the tree under test
        proc = subprocess.Popen(cmd + (["--simulate"] if simulate else []), stdout=fh, stderr=subprocess.PIPE, env=env,
                                cwd=out.parent)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")[-400:] if proc.stderr else ""
    raw = out.read_bytes()
    rec: dict[str, Any] = {"exit_code": os.waitstatus_to_exitcode(status), "cpu_s": ru.ru_utime + ru.ru_stime,
                           "peak_mb": ru.ru_maxrss / 1024, "wall_s": wall, "doc_bytes": len(raw)}
    try:
        doc = json.loads(raw)
    except ValueError:
        rec["error"] = err or "no JSON document"
        return rec
    rec["bytes_by_key"] = {k: len(json.dumps(v)) for k, v in doc.items()}
    rec["certificate_bytes"] = sum(len(json.dumps(h.get("certificate"))) for t in doc.get("theorems", [])
                                   for h in t.get("hypotheses", []))
    rec["verdicts"] = verdicts(doc)
    return rec


def verdicts(doc: dict[str, Any]) -> dict[str, Any]:
    """What must not change: every hypothesis status, ``applies``, cross-check status, the regime's class."""
    reg = doc.get("regime") or {}
    sim = doc.get("simulation") or {}
    return {"theorems": [[t["id"], t.get("applies"), [[h["name"], h["status"]] for h in t.get("hypotheses", [])],
                          (t.get("cross_check") or {}).get("status")] for t in doc.get("theorems", [])],
            "regime": [reg.get("Sigma"), reg.get("mu"), reg.get("basis")],
            "simulation_agrees": sim.get("agrees")}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where two :func:`verdicts` differ (empty: identical)."""
    out = []
    ta, tb = {t[0]: t for t in a["theorems"]}, {t[0]: t for t in b["theorems"]}
    for i in sorted(set(ta) | set(tb)):
        if ta.get(i) != tb.get(i):
            out.append(f"{i}: {ta.get(i)} != {tb.get(i)}")
    for key in ("regime", "simulation_agrees"):
        if a[key] != b[key]:
            out.append(f"{key}: {a[key]} != {b[key]}")
    return out


def gpt2_checkpoint(where: Path, seed: int = 0) -> Path:
    """A ``transformers.GPT2Model`` (n_embd 768, 12 heads, one layer, vocabulary 1000), seeded random
    init, saved with ``save_pretrained`` (``transformers`` is in the ``test`` extra)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    model = transformers.GPT2Model(transformers.GPT2Config(n_embd=768, n_layer=1, n_head=12, vocab_size=1000,
                                                           n_positions=256))
    model.save_pretrained(where)
    return where


def export(model: Path | str, layer: int, head: int, out: Path) -> Path:
    """``flowcert pretrained export --system gaussian`` (the current tree)."""
    import subprocess

    subprocess.run([sys.executable, "-m", "flowcert", "pretrained", "export", "--model", str(model), "--layer",
                    str(layer), "--head", str(head), "--system", "gaussian", "--out", str(out)], check=True,
                   capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return out


def side_by_side(rev: str, minilm: list[str], gpt2_heads: list[int], simulate: bool) -> dict[str, Any]:
    """Every head verified by the current tree and by ``rev`` in fresh processes (module docstring)."""
    import tempfile

    from flowcert.pretrained import find_minilm

    out: dict[str, Any] = {"baseline": rev, "simulate": simulate, "heads": []}
    with tempfile.TemporaryDirectory(prefix="flowcert-baseline-") as tmp:
        tmpd = Path(tmp)
        site = tree_at(rev, tmpd / "rev")
        cases: list[tuple[str, Path, int]] = []
        root = find_minilm()
        for spec in minilm if root is not None else []:
            layer, head = (int(x) for x in spec.split(":"))
            cases.append((f"minilm L{layer} H{head}", export("minilm", layer, head, tmpd / f"m{layer}_{head}.json"), 384))
        if gpt2_heads:
            ck = gpt2_checkpoint(tmpd / "gpt2")
            for head in gpt2_heads:
                cases.append((f"gpt2-768 L0 H{head}", export(ck, 0, head, tmpd / f"g{head}.json"), 768))
        for name, params, d in cases:
            rec: dict[str, Any] = {"head": name, "d": d}
            for side, where in (("baseline", site), ("current", None)):
                rec[side] = run_verify(params, d, where, tmpd / f"{side}.json", simulate)
                print(json.dumps({"progress": f"{name} {side}", "cpu_s": rec[side]["cpu_s"],
                                  "peak_mb": rec[side]["peak_mb"]}), file=sys.stderr, flush=True)
            b, c = rec["baseline"], rec["current"]
            rec["ratio_cpu"] = c["cpu_s"] / b["cpu_s"] if b["cpu_s"] else None
            rec["ratio_peak"] = c["peak_mb"] / b["peak_mb"] if b["peak_mb"] else None
            if "verdicts" in b and "verdicts" in c:
                rec["verdict_differences"] = differences(b["verdicts"], c["verdicts"])
                rec["verdicts_identical"] = not rec["verdict_differences"]
            for side in ("baseline", "current"):
                rec[side].pop("verdicts", None)
            out["heads"].append(rec)
    done = [h for h in out["heads"] if h["head"].startswith("minilm")]
    out["minilm_totals"] = {side: {"cpu_s": sum(h[side]["cpu_s"] for h in done),
                                   "peak_mb_max": max((h[side]["peak_mb"] for h in done), default=None)}
                            for side in ("baseline", "current")}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minilm", nargs="*", default=["2:5", "0:0", "3:7", "5:11"], metavar="L:H")
    ap.add_argument("--gpt2-heads", nargs="*", type=int, default=[0], metavar="H")
    ap.add_argument("--reference", nargs="*", default=["thm48"], choices=vs.REGIMES)
    ap.add_argument("--no-raise", action="store_true")
    ap.add_argument("--attention", nargs="*", default=["2:5", "0:0"], metavar="L:H",
                    help="MiniLM heads timed with verify attention --simulate (and a random head at the same d, n)")
    ap.add_argument("--smoke", action="store_true", help="no checkpoint heads; the thm48 reference at d = 4 (CI)")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="time the command per head in fresh processes, this tree against the code at REV")
    ap.add_argument("--simulate", action="store_true", help="--baseline: verify with --simulate")
    ap.add_argument("--out", default=None, metavar="FILE.json", help="also write the JSON document here")
    args = ap.parse_args(argv)
    if args.smoke:
        args.minilm, args.gpt2_heads, args.attention, args.reference = [], [], [], ["thm48"]
    if args.baseline:
        doc = side_by_side(args.baseline, args.minilm, args.gpt2_heads, args.simulate)
        text = json.dumps(doc, indent=1)
        if args.out:
            Path(args.out).write_text(text + "\n")
        print(text)
        return 0
    import torch

    torch.set_num_threads(1)
    from flowcert.pretrained import find_minilm, load_checkpoint
    from flowcert.pretrained.synthetic import random_checkpoint

    out: dict[str, Any] = {"minilm": [], "gpt2": [], "reference": {}, "attention": [], "attention_reference": {}}
    ref_cpu: dict[int, float] = {}
    root = find_minilm()
    if root is not None and (args.minilm or args.attention):
        ck = load_checkpoint(root)
        out["minilm"] = run_heads(ck, args.minilm, head_case, timed_verify, "minilm")
        out["attention"] = run_heads(ck, args.attention, attention_case, timed_attention, "attention")
        for rec in out["attention"]:
            key = f"d{rec['d']}_n{rec['n']}"
            if key not in out["attention_reference"]:
                out["attention_reference"][key] = timed_attention(attention_reference(rec["d"], rec["n"]))
            rec["ratio_cpu_to_reference"] = rec["cpu_s"] / out["attention_reference"][key]["cpu_s"]
    if args.gpt2_heads:
        if not args.no_raise:
            raise_limits(768)
        ck = random_checkpoint("gpt2", d=768, n_heads=12, n_layers=1, d_ff=64, vocab=64, seed=0, std=0.1)
        out["gpt2"] = run_heads(ck, [f"0:{h}" for h in args.gpt2_heads], head_case, timed_verify, "gpt2")
    dims = sorted({r["d"] for r in out["minilm"]} | ({384} if out["gpt2"] else set()) | ({4} if args.smoke else set()))
    for regime in args.reference:
        for d in dims:
            rec = timed_verify(vs.case(regime, d))
            out["reference"][f"{regime}@{d}"] = rec
            ref_cpu[d] = min(ref_cpu.get(d, float("inf")), rec["cpu_s"])
    for rec in out["minilm"] + out["gpt2"]:
        ref = ref_cpu.get(rec["d"]) or ref_cpu.get(384)
        rec["ratio_cpu_to_reference"] = None if not ref else rec["cpu_s"] / ref
        rec["reference_d"] = rec["d"] if rec["d"] in ref_cpu else 384
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
