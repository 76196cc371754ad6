"""CPU seconds of the README's gaussian example with ``simulate=True`` (issue 47, item 5).

Times the whole ``flowcert.verify`` call after the imports, on one thread: first cold (the first
call of the process, as the README runs it), then warm with the default cross-checks and with the
particle check alone; prints one JSON document. The budget is 5 CPU s
for the default set (``process_time``: the machine is shared, so wall time is not the measure).

    python benchmarks/readme_simulate.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import flowcert  # noqa: E402

try:  # torch may be imported by a check; keep it on one thread
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch is a dependency
    pass


def readme_params() -> dict[str, np.ndarray]:
    """The README's "Five lines" parameters."""
    A, B, V = -np.eye(2), np.eye(2) / 2, -np.eye(2) / 5
    return {"A": A, "B": B, "V": V, "b": np.zeros(2), "mu0": np.ones(2), "Sigma0": np.eye(2)}


def timed(**kwargs: object) -> tuple[float, float, str, dict]:
    """(CPU s, wall s, Prop. 2.1 verdict, its cross-check details) of one ``verify`` call."""
    c0, w0 = time.process_time(), time.perf_counter()
    result = flowcert.verify("gaussian", readme_params(), **kwargs)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    doc = result.to_json()
    prop = next(t for t in doc["theorems"] if t["id"] == "gaussian:prop-2.1")
    cc = prop.get("cross_check") or {}
    return cpu, wall, str(cc.get("status")), cc.get("details") or {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="one repetition (the smoke test)")
    args = ap.parse_args()
    if args.smoke:
        args.repeat = 1
    cold = timed(simulate=True)  # the README's flow: imports, then one call (lazy imports, SymPy caches)
    out: dict[str, object] = {"cold_simulate": {"cpu_s": round(cold[0], 3), "wall_s": round(cold[1], 3),
                                                "prop_2_1": cold[2]}}
    for name, kw in {"simulate": {"simulate": True}, "particles_only": {"checks": ["particles"]}}.items():
        runs = [timed(**kw) for _ in range(args.repeat)]
        out[name] = {"cpu_s": [round(r[0], 3) for r in runs], "wall_s": [round(r[1], 3) for r in runs],
                     "prop_2_1": runs[-1][2], "details": runs[-1][3]}
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
