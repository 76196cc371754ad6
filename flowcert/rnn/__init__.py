r"""The ``rnn`` system (KPFlow paper, Hazelden et al.): parameter files (:mod:`.params`), the
catalogue entries ``kpflow:prop-1``, ``kpflow:cor-1``, ``kpflow:thm-1``, ``kpflow:thm-2`` and the
``flowcert kpflow analyze`` document (:mod:`.analyze`), and CPU-scale experiments (:mod:`.experiments`).

Central identity (Prop. 1, eq. 5, discrete convention of note §1.3):
:math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\,\mathrm{Err}`.
"""
