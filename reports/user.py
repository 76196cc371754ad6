r"""Report section for the user's own matrices (``flowcert report --params FILE [--system S]``), and
the figure of ``flowcert simulate S --plot FILE``.

The section is the verdict and cross-check part of ``flowcert verify S --params FILE --simulate``:
the parameters as understood, every theorem with its hypotheses (the builder adds the theorem
blocks), and what the system's cross-check found (the Table 1 regime and the moment run of eq. (7)
for gaussian, the final tokens for attention, the KPFlow identities
:math:`\partial_s z=-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}` for rnn), plotted from the run
``verify`` made itself (:meth:`flowcert.system.System.verify_run`). Systems do not render: each
system that serves ``report`` in the registry (:mod:`flowcert.systems`) has its section here,
in :data:`SECTIONS`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .common import Section, cell
from .values import number

from ..outputs import make_folder
from ..records import Document


def _params_block(doc: Document) -> list[str]:
    return ["### Parameters as understood", "", "```json", json.dumps(doc["params"]), "```", ""]


def gaussian_section(p: Any, doc: Document, sol: Any, out: Path, label: str) -> Section:
    """Parameters as understood, the Table 1 regime, the simulation and its figure (the verify run's own)."""
    from .figures import plot_moments
    from .gaussian import integrator_protocol

    reg, sim = doc["regime"], doc["simulation"]
    figures: list[str] = []
    bound = reg.get("blowup_time_upper_bound")
    lines = [*_params_block(doc), "### Table 1 regime and simulation", "",
             f"- $\\Sigma$: `{reg['Sigma']}`; $\\mu$: `{reg['mu']}`; basis: {reg['basis']}"
             + (f" ({cell(reg['reason'])})" if reg.get("reason") else ""),
             f"- certified upper bound on the blow-up time: {'none' if bound is None else number(bound)}",
             f"- simulation to $t={number(sim['t_end'])}$ ({cell(sim.get('method', ''))}): blow-up time "
             f"{'none' if sim['blowup_time'] is None else number(sim['blowup_time'])}, agrees with the regime: "
             f"{sim['agrees']}"
             if sim.get("t_end") is not None else f"- simulation skipped: {cell(sim.get('skipped'))}", ""]
    if sol is not None and sol.t.size > 1:
        plot_moments(sol, out / "moments.png", f"parameters from {label}")
        figures.append("moments.png")
        lines += [f"![Moments for {cell(label)}. Protocol: the parameters above, horizon t={p.t_end:g}, "
                  f"deterministic; integrator: {integrator_protocol()}; method used: {sol.method or 'n/a'}; "
                  "the run of `verify` itself, at the integrator's own steps.](moments.png)", ""]
    return {"title": f"Your parameters ({label}, system gaussian)", "markdown": "\n".join(lines),
            "theorems": doc["theorems"], "figures": figures}


def attention_section(p: Any, doc: Document, sim: Any, out: Path, label: str) -> Section:
    """Parameters as understood, the verdicts, and the cross-checking run (final tokens plotted)."""
    from .multistability import plot_simulation

    figures: list[str] = []
    lines = [*_params_block(doc), "### Simulation", ""]
    if sim:
        lines += [f"- run to $t={number(sim['t_end'])}$ ({cell(sim.get('integrator', ''))}): limit class "
                  f"`{sim.get('limit_class')}`"
                  + (f" ({cell(sim['limit_class_reason'])})" if sim.get("limit_class_reason") else "")
                  + f"; agrees with the verdicts: {sim.get('agrees')}", ""]
        if sim.get("X_final") is not None:
            plot_simulation(sim, out / "tokens.png")
            figures.append("tokens.png")
            lines += [f"![Final tokens for {cell(label)}: the run of `verify --simulate` itself "
                      "(no second simulation).](tokens.png)", ""]
    else:
        lines += ["No simulation was run for these parameters.", ""]
    return {"title": f"Your parameters ({label}, system attention)", "markdown": "\n".join(lines),
            "theorems": doc["theorems"], "figures": figures}


def rnn_section(p: Any, doc: Document, run: Any, out: Path, label: str) -> Section:
    """Parameters as understood, the KPFlow identities and effective ranks, and the verdicts."""
    ident, ranks = doc["identities"], doc["effective_rank"]
    lines = [*_params_block(doc), "### KPFlow identities (the cross-checks)", "",
             "| identity | residual |", "|---|---|"]
    lines += [f"| Prop. 1, step $\\eta={number(r['eta'], 3)}$ | {number(r['residual'], 3)} |" for r in ident["prop1"]["fd"]]
    lines += [f"| adjoint $\\mathcal P^*$ | {number(ident['adjoint']['P'], 3)} |",
              f"| inverse $\\mathcal P^{{-1}}$ | {number(ident['inverse']['residual'], 3)} |",
              f"| hidden NTK | {number(ident['ntk']['residual'], 3)} |", "",
              "Effective rank: " + ", ".join(f"{k} {cell(ranks[k]['value'])}" for k in ("K", "P", "PKP")), ""]
    return {"title": f"Your parameters ({label}, system rnn)", "markdown": "\n".join(lines),
            "theorems": doc["theorems"], "figures": []}


#: The ``report --params`` section of each system, called with (parameters, verify document, the
#: run behind its simulation, output folder, file name).
SECTIONS: dict[str, Callable[[Any, Document, Any, Path, str], Section]] = {
    "gaussian": gaussian_section, "attention": attention_section, "rnn": rnn_section}


def section(path: str, system: str, out: Path, *, quick: bool) -> Section:
    """The verdict and cross-check section for a parameter file (contract of the paper sections;
    ``quick`` changes nothing: the section is one ``verify --simulate`` run).

    Raises
    ------
    flowcert.errors.InputError
        If ``system`` has no section in the report.
    flowcert.errors.ParamError
        If the file is missing or invalid.
    """
    from ..errors import InputError
    from ..systems import get_system, names

    if system not in names("report") or system not in SECTIONS:
        raise InputError(f"--system: '{system}' has no verifier in the report (available: {', '.join(names('report'))})")
    sysobj = get_system(system)
    p = sysobj.load(path)
    make_folder("--out", out)  # through no link (flowcert.outputs)
    from ..documents import records

    run = sysobj.verify_run(p, simulate=True)
    doc = records(run.document)  # the report reads theorem records: written here, at the edge
    return SECTIONS[system](p, doc, run.run, out, Path(path).name)


def simulation_plotter(system: str, path: str) -> Callable[[Any], str]:
    """The figure writer ``flowcert simulate SYSTEM --plot FILE`` hands to the system
    (:attr:`flowcert.system.SimulateOptions.plot`): it draws the run and returns the path written.

    gaussian: the moments of eq. (7) against time (the run's solution object); attention: the final
    tokens or the basin fractions (the ``simulation`` document).

    Raises
    ------
    flowcert.errors.InputError
        (when called) the file cannot be written; exit code 2.
    """
    from ..errors import InputError

    def draw(run: Any) -> str:
        try:
            if system == "gaussian":
                from .figures import plot_moments

                return str(plot_moments(run, Path(path), narrow=False))
            from .multistability import plot_simulation

            plot_simulation(run, Path(path), narrow=False)
            return path
        except OSError as exc:
            raise InputError(f"--plot: cannot write {path!r} ({exc.strerror or exc})") from None

    return draw
