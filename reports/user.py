r"""Report section for the user's own matrices (``flowcert report --params FILE [--system S]``).

The section is the verdict and cross-check part of ``flowcert verify S --params FILE --simulate``:
the parameters as understood, every theorem with its hypotheses (the builder adds the theorem
table), the Table 1 regime for the gaussian system, and the simulation that cross-checks it.
A system is one entry of :data:`VERIFIERS`; the other systems join it when their ``verify``
lands (the lead adds them at merge).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .common import cell

Section = dict[str, Any]


def _gaussian(path: str, out: Path, quick: bool) -> Section:
    import numpy as np

    from .. import gaussian
    from ..numeric import gaussian as ng
    from ..gaussian.params import load_gaussian
    from .figures import plot_moments
    from .gaussian import integrator_protocol

    p = load_gaussian(path)
    doc = gaussian.verify(p, simulate=True)
    reg, sim = doc["regime"], doc["simulation"]
    figures: list[str] = []
    lines = ["### Parameters as understood", "", "```json", json.dumps(doc["params"]), "```", "",
             "### Table 1 regime and simulation", "",
             f"- $\\Sigma$: `{reg['Sigma']}`; $\\mu$: `{reg['mu']}`; basis: {reg['basis']}"
             + (f" ({cell(reg['reason'])})" if reg.get("reason") else ""),
             f"- certified upper bound on the blow-up time: {reg.get('blowup_time_upper_bound')}",
             f"- simulation to $t={sim['t_end']:g}$ ({cell(sim.get('method', ''))}): blow-up time "
             f"{sim['blowup_time']}, agrees with the regime: {sim['agrees']}", ""]
    sol = ng.integrate_moments(gaussian.coefficients(p), p.mu0, p.Sigma0, p.t_end,
                               t_eval=None if p.time_varying else np.linspace(0, p.t_end, 400))
    if sol.t.size > 1:
        plot_moments(sol, out / "moments.png", f"parameters from {Path(path).name}")
        figures.append("moments.png")
        lines += [f"![Moments for {cell(Path(path).name)}. Protocol: the parameters above, horizon t={p.t_end:g}, "
                  f"deterministic; integrator: {integrator_protocol()}; method used: {sol.method or 'n/a'}.]"
                  "(moments.png)", ""]
    return {"title": f"Your parameters ({Path(path).name}, system gaussian)", "markdown": "\n".join(lines),
            "theorems": doc["theorems"], "figures": figures}


#: ``system -> section builder`` for ``--params``.
VERIFIERS: dict[str, Callable[[str, Path, bool], Section]] = {"gaussian": _gaussian}


def section(path: str, system: str, out: Path, *, quick: bool) -> Section:
    """The verdict and cross-check section for a parameter file (contract of the paper sections).

    Raises
    ------
    flowcert.errors.InputError
        If ``system`` has no verifier yet.
    flowcert.errors.ParamError
        If the file is missing or invalid.
    """
    from ..errors import InputError

    if system not in VERIFIERS:
        raise InputError(f"--system: '{system}' has no verifier in the report (available: {', '.join(VERIFIERS)})")
    out.mkdir(parents=True, exist_ok=True)
    return VERIFIERS[system](path, out, quick)
