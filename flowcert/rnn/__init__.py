r"""The ``rnn`` system (KPFlow paper, Hazelden et al.): parameter files (:mod:`.params`), the
catalogue entries ``kpflow:prop-1``, ``kpflow:cor-1``, ``kpflow:thm-1``, ``kpflow:thm-2`` and the
``flowcert kpflow analyze`` document (:mod:`.analyze`), CPU-scale experiments (:mod:`.experiments`),
and the system's :class:`flowcert.system.System` object (:mod:`.system`, listed in :mod:`flowcert.systems`).

Central identity (Prop. 1, eq. 5, discrete convention of note §1.3):
:math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\,\mathrm{Err}`.
"""


def __getattr__(name: str):  # lazy: flowcert.rnn.analyze_cell without importing the analysis at start-up
    if name in ("analyze_cell", "CellAnalysis"):
        from . import analyze

        return getattr(analyze, name)
    raise AttributeError(name)
