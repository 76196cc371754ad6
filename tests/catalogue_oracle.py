"""Evaluate one catalogue entry on a parameter file, and test its prediction against a simulation.

Used by tests/test_catalogue_properties.py. For the gaussian system each entry is evaluated by its
own function (cheaper than the whole ``verify``); entries without a cross-check of their own get
one here, from the theorem's conclusion:

* Thm 4.7(2): :math:`\\frac{d}{dt}\\operatorname{tr}\\Sigma=\\operatorname{tr}((A+A^\\top)\\Sigma)+2\\operatorname{tr}(\\Sigma V\\Sigma B)\\le0`,
  so the trace never increases and :math:`\\Sigma\\to0`;
* Thm 4.7(3): :math:`\\operatorname{tr}\\Sigma(t)\\le\\max(\\operatorname{tr}\\Sigma_0,y^*)` (the predicted bound);
* Thm 4.8: the integrator's blow-up event comes no later than the predicted bound (20).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def gaussian_entry(theorem_id: str, doc: dict[str, Any], simulate: bool = True):
    """``(TheoremResult, extra)``: the entry on ``doc``; ``extra`` is the oracle's own check or None."""
    from flowcert.gaussian import asymptotics as asy
    from flowcert.gaussian import catalogue as cat
    from flowcert.gaussian.params import parse_gaussian
    from flowcert.numeric import gaussian as ng

    p = parse_gaussian(doc)
    simple = {
        "gaussian:prop-2.1": lambda: cat.prop_2_1(p, simulate),
        "gaussian:lemma-2.3": lambda: cat.lemma_2_3(p),
        "gaussian:prop-2.4": lambda: cat.prop_2_4(p, simulate),
        "gaussian:lemma-3.1": lambda: cat.lemma_3_1(p),
        "gaussian:thm-3.3": lambda: cat.thm_3_3(p),
        "gaussian:thm-4.7.2": lambda: asy.thm_4_7_2(p),
        "gaussian:thm-4.7.3": lambda: asy.thm_4_7_3(p),
        "gaussian:thm-4.8.1": lambda: asy.thm_4_8(p, 1),
        "gaussian:thm-4.8.2": lambda: asy.thm_4_8(p, 2),
        "gaussian:thm-4.1": lambda: asy.thm_4_1(p, asy.EtaAnalysis(p)),
        "gaussian:thm-4.11.1": lambda: asy.thm_4_11(p, asy.EtaAnalysis(p), 1),
        "gaussian:thm-4.11.2": lambda: asy.thm_4_11(p, asy.EtaAnalysis(p), 2),
    }
    from flowcert.engine import asked

    wanted = cat.DEFAULT_CHECKS | {"particles"} if simulate else frozenset()
    with np.errstate(all="ignore"), asked(wanted):
        if theorem_id in simple:
            res = simple[theorem_id]()
        else:
            sol = ng.integrate_moments(cat.coefficients(p), p.mu0, p.Sigma0, p.t_end)
            eq = asy.Equilibrium(p, sol)
            res = asy.lemma_4_4(p, eq, asy.EtaAnalysis(p)) if theorem_id == "gaussian:lemma-4.4" else asy.thm_4_7_1(p, eq)
        extra = _own_check(theorem_id, p, res) if simulate and res.applies else None
    return res, extra


def _own_check(theorem_id: str, p, res) -> dict[str, Any] | None:
    from flowcert.gaussian import catalogue as cat
    from flowcert.numeric import gaussian as ng

    if theorem_id == "gaussian:thm-4.7.2":
        sol = ng.integrate_moments(cat.coefficients(p), p.mu0, p.Sigma0, p.t_end)
        tr = np.trace(sol.Sigma, axis1=1, axis2=2)
        tol = 1e-8 * (1 + tr[0])
        return {"ok": sol.status == "ok" and bool(np.all(np.diff(tr) <= tol)) and tr[-1] < tr[0] + tol,
                "trace": [float(tr[0]), float(tr[-1])], "status": sol.status}
    if theorem_id == "gaussian:thm-4.7.3":
        sol = ng.integrate_moments(cat.coefficients(p), p.mu0, p.Sigma0, p.t_end)
        bound = res.prediction["trace_bound"]
        tr = np.trace(sol.Sigma, axis1=1, axis2=2)
        return {"ok": sol.status == "ok" and float(tr.max()) <= bound * (1 + 1e-8) + 1e-12,
                "max_trace": float(tr.max()), "bound": bound}
    if theorem_id in ("gaussian:thm-4.8.1", "gaussian:thm-4.8.2"):
        bound = res.prediction.get("blowup_time_upper_bound")
        if bound is None:
            return None
        sol = ng.integrate_moments(cat.coefficients(p), p.mu0, p.Sigma0, 1.05 * bound + 1e-3)
        return {"ok": sol.blowup_time is not None and sol.blowup_time <= bound * (1 + 1e-6),
                "blowup_time": sol.blowup_time, "bound": bound, "status": sol.status}
    return None
