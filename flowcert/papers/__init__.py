r"""The catalogue as data: one module per source paper, each declaring its entries once.

An entry (:class:`flowcert.bindings.Entry`) is the id, the paper's label, the statement (TeX, as
corrected where the paper is wrong, with the correction stated) and its hypotheses, each declared
with its subject and the certificates that decide it (:class:`flowcert.bindings.Hypothesis`). The
systems decide the hypotheses and build each record with ``ENTRY.result(...)``; ``flowcert
recheck`` reads the same declarations, importing nothing heavier than this package.

* :mod:`.gaussian` — the Gaussian Transformer paper (``gaussian:*``).
* :mod:`.multistability` — multistability of self-attention dynamics (``multistability:*``, the
  ``attention`` system), and the rules of an ``equilibria attention`` document.
* :mod:`.consensus` — the asymptotic behaviour of attention (``consensus:*``, the ``attention``
  system), and the rules of a ``verify attention`` document.
"""
