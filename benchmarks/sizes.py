r"""CPU seconds of each ``verify gaussian`` stage against d: the evidence behind ``flowcert/limits.py``.

Inputs: :math:`A=-2I+0.1G` (:math:`G` standard normal, seed 0), :math:`B=-I/2`, :math:`V=0.3I`,
:math:`b=0.1\mathbf 1`, :math:`\mu_0=\mathbf 1`, :math:`\Sigma_0=I`, :math:`T=20` (gaussian paper,
eq. (7)). Each stage is timed with ``time.process_time`` on one thread; ``ratio`` divides by the
moment integration at the same d (the reference measured in the same run), and ``limit`` is the
stage's entry of :data:`flowcert.limits.STAGE_MAX_D`. Stages above their limit are not run.

    python benchmarks/sizes.py [--d 10 20 40]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from flowcert import limits  # noqa: E402
from flowcert.gaussian import asymptotics, catalogue  # noqa: E402
from flowcert.gaussian.params import parse_gaussian  # noqa: E402
from flowcert.numeric import gaussian as ng  # noqa: E402


def _params(d: int) -> dict:
    rng = np.random.default_rng(0)
    A = -2 * np.eye(d) + 0.1 * rng.standard_normal((d, d))
    return {"A": A.tolist(), "B": (-0.5 * np.eye(d)).tolist(), "V": (0.3 * np.eye(d)).tolist(),
            "b": [0.1] * d, "mu0": [1.0] * d, "Sigma0": np.eye(d).tolist(), "t_end": 20}


def _cpu(f) -> tuple[float, object]:
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--smoke", action="store_true", help="d = 2 only (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.d = [2]
    rows = []
    for d in args.d:
        p = parse_gaussian(_params(d))
        ref, sol = _cpu(lambda: ng.integrate_moments(catalogue.coefficients(p), p.mu0, p.Sigma0, p.t_end))
        stages = {
            "gaussian:prop-2.1": lambda: catalogue.prop_2_1(p, False),
            "gaussian:lemma-2.3": lambda: catalogue.lemma_2_3(p),
            "gaussian:prop-2.4": lambda: catalogue.prop_2_4(p, False),
            "gaussian:lemma-3.1": lambda: catalogue.lemma_3_1(p),
            "gaussian:thm-3.3": lambda: catalogue.thm_3_3(p),
            "gaussian:table-1": lambda: asymptotics.entries(p, sol),
        }
        row = {"d": d, "gaussian:integrate": {"cpu_s": round(ref, 3), "limit": limits.STAGE_MAX_D["gaussian:integrate"]}}
        for name, f in stages.items():
            limit = limits.STAGE_MAX_D[name]
            if d > limit:
                row[name] = {"skipped": f"d > {limit}", "limit": limit}
                continue
            sec, _ = _cpu(f)
            row[name] = {"cpu_s": round(sec, 3), "ratio": round(sec / max(ref, 1e-9), 2), "limit": limit}
        rows.append(row)
    print(json.dumps({"benchmark": "sizes", "stage_seconds": limits.STAGE_SECONDS, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
