r"""Hypotheses of the consensus paper's catalogue (note 003), on the ``attention`` system: the
:class:`Setting` of one parameter set (heads :math:`P_\eta=\beta Q_\eta^\top K_\eta`, values
:math:`U_\eta`, the ellipsoid :math:`\{y^\top Wy=1\}`, full or causal attention) and the certified
predicates that :mod:`flowcert.attention.consensus` combines into theorem records:
:math:`U=I`, :math:`W=P`, :math:`P=P^\top\succ0`, :math:`\sup_t\Vert P(t)\Vert<\infty`, uniform
continuity of :math:`P(t)`, constant :math:`U`. Each returns a
:class:`~flowcert.certificates.core.HypothesisResult` whose ``holds``/``fails`` rests on an exact
or re-checked certificate (:mod:`flowcert.certificates.attention.consensus`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np
import sympy as sp

from ..certificates import core
from ..certificates.attention import consensus as cert
from ..certificates.hypotheses import holds_by
from .params import AttentionParams


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _fails(name: str, method: str, detail: str) -> core.HypothesisResult:
    return core.HypothesisResult(name, "fails", None, method, None, detail)


# the setting as the consensus paper writes it


@dataclass
class Setting:
    """Heads :math:`(P_\\eta, U_\\eta)`, manifold and initial tokens read from :class:`AttentionParams`."""

    p: AttentionParams
    X0: np.ndarray

    @property
    def h(self) -> int:
        return len(self.p.heads)

    @property
    def ell(self) -> int:
        return int(self.X0.shape[0])

    @property
    def d(self) -> int:
        return self.p.d

    @property
    def row_sum(self) -> float:
        return 1.0 / math.sqrt(self.d) if self.p.normalization == "sqrt" else 1.0

    @cached_property
    def P(self) -> list[Any]:
        """:math:`P_\\eta=\\beta Q_\\eta^\\top K_\\eta` (numpy, or a SymPy matrix in t)."""
        out = []
        for hd in self.p.heads:
            if isinstance(hd.Q, sp.MatrixBase) or isinstance(hd.K, sp.MatrixBase):
                Q = sp.Matrix(hd.Q) if not isinstance(hd.Q, sp.MatrixBase) else hd.Q
                K = sp.Matrix(hd.K) if not isinstance(hd.K, sp.MatrixBase) else hd.K
                M = K if hd.from_P else Q.T * K
                out.append(M if self.p.beta == 1 else sp.Float(self.p.beta) * M)
            else:
                M = np.asarray(hd.K, float) if hd.from_P else np.asarray(hd.Q, float).T @ np.asarray(hd.K, float)
                out.append(M if self.p.beta == 1 else self.p.beta * M)
        return out

    @cached_property
    def P_data(self) -> list[Any]:
        """Each head's :math:`P_\\eta` as given: a :class:`~flowcert.certificates.attention.consensus.ScaledProduct`
        of its float data (constant), or the SymPy matrix in t of :attr:`P`."""
        out: list[Any] = []
        for hd, P in zip(self.p.heads, self.P):
            if isinstance(P, sp.MatrixBase):
                out.append(P)
            else:
                K = np.asarray(hd.K, float)
                out.append(cert.ScaledProduct(float(self.p.beta), K, None if hd.from_P else np.asarray(hd.Q, float)))
        return out

    @property
    def U(self) -> list[Any]:
        return [hd.V for hd in self.p.heads]

    @property
    def P_constant(self) -> bool:
        return not any(isinstance(P, sp.MatrixBase) for P in self.P)

    def P_at(self, eta: int, t: float) -> np.ndarray:
        return self.p.M(eta, t)

    def score_operator(self, eta: int, t: float) -> Any:
        r""":math:`P_\eta(t)` for :func:`flowcert.numeric.attention.consensus.scores`: the factor pair
        :math:`(\beta Q_\eta, K_\eta)` of a constant head given by Q and K, else :meth:`P_at`."""
        hd = self.p.heads[eta]
        if hd.from_P or isinstance(self.P[eta], sp.MatrixBase):
            return self.P_at(eta, t)
        return self.p.beta * np.asarray(hd.Q, float), np.asarray(hd.K, float)

    @property
    def W(self) -> np.ndarray:
        return np.eye(self.d) if self.p.W is None else self.p.W


def setting(p: AttentionParams, seed: int | None = None) -> Setting:
    """The consensus setting of ``p``; random initial tokens from ``seed`` when ``X0`` is absent."""
    X0 = p.initial_tokens() if p.X0 is not None else p.initial_tokens(None, np.random.default_rng(p.seed if seed is None else seed))
    return Setting(p, X0)


# structural hypotheses (decided exactly on the given data)


def _exact_equal(A: Any, B: Any) -> bool:
    if isinstance(A, sp.MatrixBase) or isinstance(B, sp.MatrixBase):
        return sp.simplify(sp.Matrix(A) - sp.Matrix(B)) == sp.zeros(*sp.Matrix(A).shape)
    return bool(np.array_equal(np.asarray(A, float), np.asarray(B, float)))


def value_identity(s: Setting) -> core.HypothesisResult:
    bad = [k + 1 for k, U in enumerate(s.U) if not _exact_equal(U, np.eye(s.d))]
    if bad:
        return _fails("U_eta = I", "exact comparison", f"value matrix of head(s) {bad} is not the identity")
    return holds_by("U_eta = I", "exact comparison", "every head's value matrix is the identity")


def full_attention(s: Setting) -> core.HypothesisResult:
    return _fails("full attention", "parameter", "causal = true") if s.p.causal else holds_by("full attention", "parameter")


def causal_attention(s: Setting) -> core.HypothesisResult:
    return holds_by("causal attention", "parameter") if s.p.causal else _fails("causal attention", "parameter", "causal = false")


def single_head(s: Setting) -> core.HypothesisResult:
    return holds_by("h = 1", "parameter") if s.h == 1 else _fails("h = 1", "parameter", f"h = {s.h}")


def sphere(s: Setting) -> core.HypothesisResult:
    if s.p.W is None or _exact_equal(s.p.W, np.eye(s.d)):
        return holds_by("tokens on the unit sphere (W = I)", "parameter")
    return _fails("tokens on the unit sphere (W = I)", "exact comparison", "W is not the identity")


def ellipsoid(s: Setting) -> core.HypothesisResult:
    return holds_by("W = W^T > 0", "validated by the loader (exact rational LDL^T)")


def constant_P(s: Setting) -> core.HypothesisResult:
    if s.P_constant:
        return holds_by("P constant", "parameter")
    return _fails("P constant", "parameter", "P(t) depends on t")


def W_equals_P(s: Setting) -> core.HypothesisResult:
    name = "tokens on E_P (W = P; erratum)"
    if not s.P_constant:
        return _fails(name, "parameter", "P depends on t")
    if s.p.W is not None and _exact_equal(s.p.W, s.P[0]):
        return holds_by(name, "exact comparison")
    if s.p.W is None and _exact_equal(s.P[0], np.eye(s.d)):
        return holds_by(name, "exact comparison", "P = I and tokens on the sphere")
    return _fails(name, "exact comparison", "the ellipsoid matrix W differs from P (Thm 3.2 needs tokens on E_P)")


def P_spd(s: Setting) -> core.HypothesisResult:
    if not s.P_constant:
        return _fails("P = P^T > 0", "parameter", "P depends on t")
    return cert.symmetric_positive_definite(np.asarray(s.P[0], float), "P")


def P_bounded(s: Setting) -> tuple[core.HypothesisResult, Fraction | None]:
    return cert.bounded(s.P_data, "sup_t |P_eta(t)| <= b")


def P_uniformly_continuous(s: Setting) -> core.HypothesisResult:
    return cert.uniformly_continuous(s.P_data, "P_eta uniformly continuous on t >= 0")


def U_constant(s: Setting) -> core.HypothesisResult:
    if any(isinstance(U, sp.MatrixBase) for U in s.U):
        return _fails("U constant", "parameter", "U depends on t")
    return holds_by("U constant", "parameter")


def proofs_hypothesis(name: str, proofs: Any) -> core.HypothesisResult:
    ok = all(q.proved for q in proofs)
    return core.HypothesisResult(name, "holds" if ok else "unknown", None, "SymPy identities (residual 0)", None,
                                 ", ".join(f"{q.name}: {'0' if q.proved else 'nonzero'}" for q in proofs))
