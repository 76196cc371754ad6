r"""The invariant subspace of constant heads: tokens that start in :math:`S` stay in :math:`S`.

The field (multistability paper eq. (1), consensus paper eq. (7), sphere :math:`W=I`) is

.. math:: \dot x_i = (I-x_ix_i^\top)\sum_\eta V_\eta\sum_j A^\eta_{ij}(X)\,x_j,\qquad
          A^\eta_{ij}=c\operatorname{softmax}_j\big(x_i^\top M_\eta x_j + C_{ij}\big),

so :math:`\dot x_i\in\operatorname{span}(x_i)+\sum_\eta\operatorname{range}V_\eta`. Let :math:`S` be a
subspace with :math:`\operatorname{range}V_\eta\subseteq S` for every head and every :math:`x_i(0)\in S`,
and :math:`B\in\mathbb R^{d\times k}` an orthonormal basis of it (:math:`B^\top B=I`, hence
:math:`V_\eta B = BV'_\eta` with :math:`V'_\eta=B^\top V_\eta B`). Then for :math:`X=ZB^\top`
(rows :math:`x_i=Bz_i`, :math:`|x_i|=|z_i|`):

.. math:: x_i^\top M_\eta x_j = z_i^\top(B^\top M_\eta B)z_j,\qquad
          (I-x_ix_i^\top)V_\eta\textstyle\sum_jA_{ij}x_j
          = B\,(I-z_iz_i^\top)V'_\eta\sum_jA_{ij}z_j ,

i.e. :math:`F(ZB^\top)=F'(Z)B^\top` where :math:`F'` is the same system in :math:`\mathbb R^k` with
:math:`M'_\eta=B^\top M_\eta B` (for :math:`M=\beta Q^\top K`: :math:`Q'=QB`, :math:`K'=KB`) and
:math:`V'_\eta`. The solution of the reduced system, lifted by :math:`B^\top`, *is* the solution
of the full one (uniqueness), and so is its retraction: :math:`\pi(ZB^\top)=\pi(Z)B^\top`. An
exported head has :math:`\operatorname{rank}V=\operatorname{rank}W_OW_V\le d_h`, so
:math:`k\le n+d_h` (42 for MiniLM's 384, 74 for GPT-2's 768) and every field evaluation costs
:math:`O(nkd_h)` instead of :math:`O(nd^2)`.

A value map computed in float64 (:math:`U=W_OW_V` from float32 factors) has rank :math:`d_h` only
up to rounding: its singular values past :math:`d_h` are :math:`\sim10^{-15}\sigma_1`. They are
dropped when at most :math:`d\,u\,\sigma_1` (:math:`u=2^{-53}`), below the rounding bound
:math:`\gamma_d\|V\|\,|x|` of the full evaluation :math:`Vx` itself; the largest dropped one is
reported (``neglected``), and a head whose spectrum has no such gap is not reduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

Array = np.ndarray

#: unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53


@dataclass(frozen=True)
class Subspace:
    """An orthonormal basis ``B`` (d, k) of :math:`S\\supseteq\\operatorname{span}(X_0)+\\sum_\\eta
    \\operatorname{range}V_\\eta`, and the largest dropped singular value of a ``V`` relative to its
    largest (0 when none was dropped)."""

    B: Array
    neglected: float

    @property
    def dim(self) -> int:
        return int(self.B.shape[1])

    def reduce(self, X: Array) -> Array:
        """Coordinates :math:`Z=XB` of tokens in :math:`S` (rows)."""
        return np.asarray(X, float) @ self.B

    def lift(self, Z: Array) -> Array:
        """Tokens :math:`X=ZB^\\top` (any leading axes)."""
        return np.asarray(Z, float) @ self.B.T

    def record(self) -> dict[str, float | int]:
        """The JSON summary: ``dim`` k, ambient ``d`` and ``neglected``."""
        return {"dim": self.dim, "d": int(self.B.shape[0]), "neglected": self.neglected}


def value_range(V: Array) -> tuple[Array, float]:
    """Left singular vectors of ``V`` above :math:`d\\,u\\,\\sigma_1` and the largest relative singular
    value left out (0 if none)."""
    V = np.asarray(V, float)
    U, s, _ = np.linalg.svd(V)
    if s.size == 0 or s[0] == 0.0:
        return U[:, :0], 0.0
    keep = s > V.shape[0] * UNIT_ROUNDOFF * s[0]
    r = int(keep.sum())
    return U[:, :r], float(s[r] / s[0]) if r < s.size else 0.0


def invariant_subspace(values: Sequence[Array], X0: Array, *, max_fraction: float = 0.5) -> Subspace | None:
    """The subspace of the module docstring for constant value maps ``values`` and tokens ``X0``
    (rows), or None when it would not save work (:math:`k>` ``max_fraction`` :math:`d`).

    ``B`` is the Householder QR factor of :math:`[U_1\\cdots U_h\\;X_0^\\top]` (:math:`U_\\eta` the
    kept singular vectors of :math:`V_\\eta`): orthonormal columns whose span contains every column,
    whether or not they are independent (:math:`A=QR`)."""
    X0 = np.asarray(X0, float)
    d = X0.shape[-1]
    parts, neglected = [], 0.0
    for V in values:
        U, dropped = value_range(V)
        parts.append(U)
        neglected = max(neglected, dropped)
    A = np.hstack([*parts, X0.T])
    if A.shape[1] > max_fraction * d or not np.isfinite(A).all():
        return None
    B, _ = np.linalg.qr(A)
    return Subspace(B, neglected)
