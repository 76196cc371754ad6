r"""The catalogue as data: one module per source paper, each declaring its entries once.

An entry (:class:`flowcert.bindings.Entry`) is the id, the paper's label, the statement (TeX, as
corrected where the paper is wrong, with the correction stated) and its hypotheses, each declared
with its subject and the certificates that decide it (:class:`flowcert.bindings.HypothesisBinding`). The
systems decide the hypotheses and build each record with ``ENTRY.result(...)``; ``flowcert
recheck`` reads the same declarations, importing nothing heavier than this package.

* :mod:`.gaussian` — the Gaussian Transformer paper (``gaussian:*``).
* :mod:`.multistability` — multistability of self-attention dynamics (``multistability:*``, the
  ``attention`` system), and the rules of an ``equilibria attention`` document.
* :mod:`.consensus` — the asymptotic behaviour of attention (``consensus:*``, the ``attention``
  system), and the rules of a ``verify attention`` document.

:data:`PAPERS` is the one table of the four papers (:class:`Paper`: key, title, authors, arXiv id,
file): the theorem records' ``source`` (title, authors, arXiv id, PDF, the paper's label) and the
typed results' ``paper`` both come from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["OBSERVATION", "PAPERS", "Paper"]

#: how the label of flowcert's own observation on a paper begins (not a result the paper states)
OBSERVATION = "flowcert's observation"


@dataclass(frozen=True)
class Paper:
    """A source paper of the catalogue.

    Attributes
    ----------
    key : str
        The catalogue's paper key, the prefix of theorem ids (``gaussian``, ``multistability``,
        ``kpflow``, ``consensus``).
    title, authors : str
    arxiv : str
        The arXiv identifier (``2606.07600``).
    file : str
        The text of the paper in the project's paper folder (internal; a document's ``source.file`` is
        the paper's PDF on arXiv, :attr:`pdf`).
    """

    key: str
    title: str
    authors: str
    arxiv: str
    file: str

    @property
    def url(self) -> str:
        """The paper's arXiv abstract page."""
        return f"https://arxiv.org/abs/{self.arxiv}"

    @property
    def pdf(self) -> str:
        """The paper's PDF on arXiv (a theorem record's ``source.file``)."""
        return f"https://arxiv.org/pdf/{self.arxiv}"

    def cite(self, label: str = "") -> str:
        """One line a reader can look up: authors, *title*, arXiv id and the paper's own ``label``.

        Parameters
        ----------
        label : str, optional
            The result's label in the paper (``Theorem 4.7 (1)``).

        Returns
        -------
        str
        """
        base = f"{self.authors}, {self.title}, arXiv:{self.arxiv}"
        if label.lower().startswith(OBSERVATION.lower()):  # flowcert's own observation on the paper, not a result it states
            return f"{base}; not a result stated in the paper: {label}"
        return base + (f", {label}" if label else "")


#: The four papers, by key: the one table (titles and identifiers from the papers and their notes);
#: a theorem record's ``source`` and :attr:`flowcert.result.Theorem.paper` both read it.
PAPERS: Mapping[str, Paper] = MappingProxyType({p.key: p for p in (
    Paper("gaussian", "Reachability and asymptotics of Gaussian Transformer dynamics",
          "A. Alcalde, Z. Ji, E. Zuazua", "2606.07600", "000_c5dbab8f62abe14d.txt"),
    Paper("multistability", "Multistability of Self-Attention Dynamics in Transformers",
          "C. Altafini", "2511.11553", "001_206237fe670cef43.txt"),
    Paper("kpflow", "KPFlow: An Operator Perspective on Dynamic Collapse Under Gradient Descent Training of "
          "Recurrent Networks", "J. Hazelden, L. Driscoll, E. Shlizerman, E. Shea-Brown", "2507.06381",
          "002_920a650c5f3b6f50.txt"),
    Paper("consensus", "The asymptotic behavior of attention in transformers",
          "Á. Rodríguez Abella, J.P. Silvestre, P. Tabuada", "2412.02682", "003_951a97dfacf88740.txt"),
)})
