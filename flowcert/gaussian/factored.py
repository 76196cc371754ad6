r"""Hypotheses on a matrix of the gaussian system given by its factors (gaussian paper, Table 1).

``B`` or ``V`` may be given as :math:`N=\sqrt q\,LR` (:class:`~flowcert.certificates.lowrank.LowRank`;
a pretrained head: :math:`B=K^\top Q/\sqrt{d_h}`, :math:`V=W_OW_V`, rank :math:`\le d_h`). The verdicts speak
of that exact product and are decided on the factors, :math:`O(dk)` exact work; the float image the
numerical runs use is never evidence. What is decided here:

* :math:`\pm N\succ0`, :math:`N=\eta I` and every hypothesis that presumes a symmetric :math:`N`
  (:math:`\lambda_{\min}(N)` of Thm 4.8 (2), the sign of :math:`\eta`) *fail* by an exact asymmetric
  entry pair :math:`(LR)_{ij}\ne(LR)_{ji}` (``low_rank_asymmetry``; :math:`\sqrt q>0` scales both alike);
* a symmetric :math:`N` of inner dimension :math:`k<d` is singular, so :math:`\pm N\succ0` fails (rank);
* anything else is ``unknown``: no dense exact work is done on a rounded copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import flint

from ..certificates import core
from ..certificates.hypotheses import definite
from ..certificates.lowrank import LowRank, find_low_rank_asymmetry, low_rank_asymmetry_certificate

if TYPE_CHECKING:
    from .params import GaussianParams

__all__ = ["definite_of", "not_symmetric", "symmetric_needed", "negated"]

_METHOD = "exact entry pair of the factors (low_rank_asymmetry)"


@core.memoised
def not_symmetric(N: LowRank, what: str, hyp: str) -> core.HypothesisResult:
    """``hyp`` refuted by an exact asymmetric entry pair of ``N`` (called ``what`` in the claim); ``unknown``
    when the float search finds none or the pair does not re-check."""
    ij = find_low_rank_asymmetry(N)
    if ij is None:
        return core.HypothesisResult(hyp, "unknown", None, _METHOD, None,
                                     f"{what} is given factored and no asymmetric entry pair was found in float64")
    cert = low_rank_asymmetry_certificate(N, ij, what)
    out = core.certified(hyp, "fails", cert, None, _METHOD, f"{what} is not symmetric")
    if out.status != "fails":
        return core.HypothesisResult(hyp, "unknown", None, _METHOD, None, f"the entry pair {ij} of {what} did not re-check")
    return out


def definite_of(p: GaussianParams, key: str, sign: int) -> core.HypothesisResult:
    r"""The exact verdict on :math:`\mathrm{sign}\cdot p.key\succ0`: :func:`~flowcert.certificates.hypotheses.definite`
    of a dense matrix; for a factored one, refuted by asymmetry (then by rank), else ``unknown``."""
    N = p.factored.get(key)
    if N is None:
        return definite(getattr(p, key), key, sign)
    what = key if sign > 0 else f"-{key}"
    hyp = f"{what} > 0"
    res = not_symmetric(N if sign > 0 else N.negated(), what, hyp)
    if res.status == "fails":
        return core.HypothesisResult(res.name, res.status, res.margin, res.method, res.certificate,
                                     f"{key} is not symmetric, so not {'positive' if sign > 0 else 'negative'} definite")
    if N.inner < N.shape[0]:
        return core.HypothesisResult(hyp, "fails", None, "rank of the factors", None,
                                     f"{key} = sqrt(q) L R has rank <= {N.inner} < d = {N.shape[0]}: singular")
    return core.HypothesisResult(hyp, "unknown", None, "factored matrix", None,
                                 f"{key} is given factored with full inner dimension; definiteness is not decided on factors")


def symmetric_needed(p: GaussianParams, key: str, hyp: str) -> core.HypothesisResult | None:
    """For a factored ``p.key``: ``hyp`` (which presumes a symmetric ``key``, or ``key = eta I``) refuted by
    asymmetry, else ``unknown``; None for a dense ``key`` (the dense decision applies)."""
    N = p.factored.get(key)
    if N is None:
        return None
    res = not_symmetric(N, key, hyp)
    if res.status == "fails":
        return res
    return core.HypothesisResult(hyp, "unknown", None, "factored matrix", None,
                                 f"{key} is given factored and no asymmetric entry pair was found; not decided on factors")


def negated(M: Any) -> Any:
    """:math:`-M` of an exact matrix in its own form (a diagonal stays diagonal; an array or ``fmpq_mat`` negates)."""
    from ..certificates.diagonal import Diagonal

    if isinstance(M, Diagonal):
        return M.scaled(flint.fmpq(-1))
    return -M
