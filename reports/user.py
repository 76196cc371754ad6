r"""Report section for the user's own matrices (``flowcert report --params FILE [--system S]``).

The section is the verdict and cross-check part of ``flowcert verify S --params FILE --simulate``:
the parameters as understood, every theorem with its hypotheses (the builder adds the theorem
table), what the system's cross-check found (the Table 1 regime and the moment run for gaussian,
the final tokens for attention, the KPFlow identities for rnn), plotted from the run ``verify``
made itself. Every system of the registry (:mod:`flowcert.systems`) that serves ``report``
builds its own section (:meth:`flowcert.system.System.report_section`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..outputs import make_folder

Section = dict[str, Any]


def section(path: str, system: str, out: Path, *, quick: bool) -> Section:
    """The verdict and cross-check section for a parameter file (contract of the paper sections).

    Raises
    ------
    flowcert.errors.InputError
        If ``system`` has no section in the report.
    flowcert.errors.ParamError
        If the file is missing or invalid.
    """
    from ..errors import InputError
    from ..systems import get_system, names

    if system not in names("report"):
        raise InputError(f"--system: '{system}' has no verifier in the report (available: {', '.join(names('report'))})")
    sysobj = get_system(system)
    p = sysobj.load(path)
    make_folder("--out", out)  # through no link (flowcert.outputs)
    return sysobj.report_section(p, out, label=Path(path).name, quick=quick)
