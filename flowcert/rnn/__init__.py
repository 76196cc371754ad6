r"""The ``rnn`` system (KPFlow paper, Hazelden et al.): parameter files (:mod:`.params`), the
catalogue entries ``kpflow:prop-1``, ``kpflow:cor-1``, ``kpflow:thm-1``, ``kpflow:thm-2`` and the
``flowcert kpflow analyze`` document (:mod:`.analyze`), your own torch cell (:mod:`.cell`,
:func:`analyze_cell`; its smoothness: :mod:`.smooth`), CPU-scale experiments (:mod:`.experiments`),
and the system's :class:`flowcert.system.System` object (:mod:`.system`, listed in :mod:`flowcert.systems`).

Central identity (Prop. 1, eq. 5, discrete convention of note §1.3):
:math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\,\mathrm{Err}`.
"""


from typing import Any

__all__ = ["CellAnalysis", "CellParams", "analyze_cell", "smooth_cell"]


def __getattr__(name: str) -> Any:  # lazy: flowcert.rnn.analyze_cell without importing torch at start-up
    if name in ("analyze_cell", "CellAnalysis", "CellParams"):
        from . import cell

        return getattr(cell, name)
    if name == "smooth_cell":
        from .smooth import smooth_cell

        return smooth_cell
    raise AttributeError(f"module 'flowcert.rnn' has no attribute {name!r}")
