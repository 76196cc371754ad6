"""``verify gaussian`` stage by stage as the dimension grows; prints one JSON document.

Seeded random cases of each regime of Table 1 (gaussian paper):

* ``thm41``: :math:`V=\\eta I` with :math:`\\eta=-1`, :math:`B\\succ0`, :math:`A` random (Thm 4.1
  closed-form limit, certified);
* ``thm47``: :math:`V\\prec0`, :math:`B\\succ0`, :math:`A+A^\\top\\prec0` (Thm 4.7(2): :math:`\\Sigma\\to0`);
* ``thm48``: :math:`V\\succ0`, :math:`B\\succ0`, :math:`A+A^\\top\\succeq0` (Thm 4.8(1): blow-up).

Each stage (simulation, every theorem, the equilibrium and its Newton polish, the regime,
certificate re-checks) is timed inclusively (a stage that calls another includes it). The
exponent of each stage is the least-squares slope of log(time) against log(d) over the sizes
from 64 up (all sizes with ``--quick``). Ratios, not absolute times, are what to read: the
machine is shared.

    python benchmarks/verify_scaling.py [--quick] [--sizes 8 16 32] [--regimes thm41 thm47]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from collections import defaultdict
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from flowcert.certificates import core  # noqa: E402
from flowcert.gaussian import asymptotics, catalogue  # noqa: E402
from flowcert.gaussian import regime as regime_module  # noqa: E402
from flowcert.gaussian.params import parse_gaussian  # noqa: E402
from flowcert.numeric import gaussian as ng  # noqa: E402

SIZES = (8, 16, 32, 64, 128, 256, 384)
QUICK_SIZES = (8, 16, 32)
REGIMES = ("thm41", "thm47", "thm48")


def case(regime: str, d: int, seed: int = 0) -> dict[str, Any]:
    """A seeded random parameter set of the given regime (raw mapping, as from a file)."""
    rng = np.random.default_rng([seed, d, REGIMES.index(regime)])
    G = rng.normal(size=(d, d)) / math.sqrt(d)
    H = rng.normal(size=(d, d)) / math.sqrt(d)
    spd = np.eye(d) + 0.5 * (H @ H.T)
    R = rng.normal(size=(d, d)) / math.sqrt(d)
    if regime == "thm41":
        A, B, V = 0.5 * G, 0.5 * (spd + spd.T), -np.eye(d)
    elif regime == "thm47":
        S = 0.5 * (G - G.T)
        A, B, V = S - np.eye(d) - 0.1 * (R @ R.T), 0.5 * (spd + spd.T), -np.eye(d) - 0.1 * (R.T @ R)
    elif regime == "thm48":
        S = 0.5 * (G - G.T)
        A, B, V = S + 0.1 * np.eye(d), 0.5 * (spd + spd.T), np.eye(d) + 0.1 * (R.T @ R)
    else:
        raise ValueError(regime)
    V = 0.5 * (V + V.T)
    W = rng.normal(size=(d, d)) / math.sqrt(d)
    Sigma0 = 0.1 * (np.eye(d) + W @ W.T)
    Sigma0 = 0.5 * (Sigma0 + Sigma0.T)
    return {"A": A.tolist(), "B": B.tolist(), "V": V.tolist(), "b": (0.1 * rng.normal(size=d)).tolist(),
            "mu0": np.zeros(d).tolist(), "Sigma0": Sigma0.tolist(), "t_end": 10.0}


class Stages:
    """Inclusive wall time per stage, collected by wrapping module attributes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, module: Any, attr: str, stage: str) -> None:
        original = getattr(module, attr)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - t0
                self.calls[stage] += 1

        setattr(module, attr, timed)
        self._undo.append((module, attr, original))

    def undo(self) -> None:
        for module, attr, original in reversed(self._undo):
            setattr(module, attr, original)
        self._undo.clear()


def instrument(st: Stages) -> None:
    for attr in ("prop_2_1", "lemma_2_3", "prop_2_4", "lemma_3_1", "thm_3_3"):
        st.wrap(catalogue, attr, attr)
    for attr in ("Equilibrium", "EtaAnalysis", "thm_4_1", "lemma_4_4", "thm_4_7_1", "thm_4_7_2", "thm_4_7_3",
                 "thm_4_8", "thm_4_11"):
        st.wrap(asymptotics, attr, attr)
    st.wrap(regime_module, "regime", "regime")  # Table 1's regime (imported by asymptotics at call time)
    st.wrap(ng, "integrate_moments", "integrate_moments")
    st.wrap(ng, "newton_equilibrium", "newton")
    st.wrap(core, "recheck", "recheck")


def run_one(regime: str, d: int, seed: int) -> dict[str, Any]:
    raw = case(regime, d, seed)
    core.clear_memo()
    st = Stages()
    instrument(st)
    try:
        t0 = time.perf_counter()
        p = parse_gaussian(raw)
        st.seconds["load"] = time.perf_counter() - t0
        doc = catalogue.verify(p)
        total = time.perf_counter() - t0
    finally:
        st.undo()
    hyps = [h for th in doc["theorems"] for h in th["hypotheses"]]
    unknown = [f"{th['id']}: {h['name']} ({h['method']}: {h['detail'][:80]})" for th in doc["theorems"]
               for h in th["hypotheses"] if h["status"] == "unknown"]
    return {"regime": regime, "d": d, "seed": seed, "total_s": total,
            "stages_s": dict(sorted(st.seconds.items(), key=lambda kv: -kv[1])), "calls": dict(st.calls),
            "verdict": {"Sigma": doc["regime"]["Sigma"], "mu": doc["regime"]["mu"], "basis": doc["regime"]["basis"]},
            "hypotheses": {s: sum(h["status"] == s for h in hyps) for s in ("holds", "fails", "unknown")},
            "unknown": unknown}


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log t against log d."""
    pts = [(d, t) for d, t in points if t > 0]
    if len(pts) < 2:
        return None
    x = np.log([d for d, _ in pts])
    y = np.log([t for _, t in pts])
    return float(np.polyfit(x, y, 1)[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES} only")
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--regimes", nargs="+", choices=REGIMES, default=list(REGIMES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="d = 4, one regime (CI)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.sizes, args.regimes, args.quick = [4], list(REGIMES)[:1], True
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    runs = []
    for regime in args.regimes:
        for d in sizes:
            r = run_one(regime, d, args.seed)
            runs.append(r)
            top = ", ".join(f"{k} {v:.1f}" for k, v in list(r["stages_s"].items())[:6])
            print(f"{regime} d={d}: {r['total_s']:.2f} s, {r['hypotheses']}; {top}", file=sys.stderr, flush=True)
            print("RUN " + json.dumps(r), file=sys.stderr, flush=True)  # partial results survive an interrupted sweep
    fit_from = min(sizes) if args.quick else 64
    fits: dict[str, Any] = {}
    for regime in args.regimes:
        rr = [r for r in runs if r["regime"] == regime and r["d"] >= fit_from]
        stages = sorted({s for r in rr for s in r["stages_s"]})
        fits[regime] = {"total": exponent([(r["d"], r["total_s"]) for r in rr]),
                        **{s: exponent([(r["d"], r["stages_s"].get(s, 0.0)) for r in rr]) for s in stages}}
    smallest = {regime: next(r["total_s"] for r in runs if r["regime"] == regime) for regime in args.regimes}
    for r in runs:
        r["ratio_to_smallest_d"] = r["total_s"] / smallest[r["regime"]]
    print(json.dumps({"benchmark": "verify_scaling", "sizes": list(sizes), "fit_from_d": fit_from,
                      "exponents": fits, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
