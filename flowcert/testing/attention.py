r"""Strategies for attention parameter sets (the ``attention`` system's parameter files).

The model (docs/design.md, "Systems"; both attention papers):
:math:`\dot x_i=\Pi_{x_i}\sum_\eta V_\eta\sum_j A^\eta_{ij}x_j`,
:math:`A^\eta_{ij}=c\,\mathrm{softmax}_j(\beta\,x_i^\top Q_\eta^\top K_\eta x_j)` (causal: :math:`j\le i`).
A strategy returns the JSON object of a parameter file (nested lists), ready for
``flowcert.attention.parse`` or ``flowcert verify attention --params``.

Value matrices for Assumption 1 of the multistability paper (:math:`V=V^\top`, simple
:math:`\lambda_1>0`) come from :func:`simple_top_symmetric`: exact eigenvalues (see
:mod:`flowcert.testing.matrices`) with a gap :math:`\lambda_1-\lambda_2\ge` ``gap``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..records import JSONObject
from .matrices import MAX_DIM, check_dim, exact_float, grid_exponent, positive_definite, scaled_orthogonal, symmetric
from .states import MAX_TOKENS, ellipsoid_tokens, hemisphere_tokens, no_hemisphere_tokens, sphere_tokens


def simple_top_symmetric(d: int, gap: float = 0.25, bound: float = 4.0) -> st.SearchStrategy[np.ndarray]:
    r"""Symmetric :math:`V` with exact eigenvalues, :math:`\lambda_1-\lambda_2\ge` ``gap`` and :math:`\lambda_1>0`."""
    return simple_top_with_vector(d, gap, bound).map(lambda Vv: Vv[0])


@st.composite
def simple_top_with_vector(draw: st.DrawFn, d: int, gap: float = 0.25, bound: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """``(V, v)``: :func:`simple_top_symmetric` and its unit top eigenvector ``v`` (exact direction, float-normalised)."""
    check_dim(d)
    Q, c = draw(scaled_orthogonal(d))
    e = grid_exponent(gap, c)
    unit = c / 2**e
    top = draw(st.integers(math.ceil(bound / 2 / unit), math.floor(bound / unit)))
    rest_hi = top - math.ceil(gap / unit)
    rest = draw(st.lists(st.integers(-math.floor(bound / unit), rest_hi), min_size=d - 1, max_size=d - 1))
    k = [top] + rest
    v = np.array([float(x) for x in Q[:, 0]])
    return exact_float(Q.dot(np.diag(np.array(k, dtype=object))).dot(Q.T), 2**e), v / np.linalg.norm(v)


def _small_matrix(d: int, bound: float = 2.0) -> st.SearchStrategy[np.ndarray]:
    """Dyadic entries (multiples of 1/8) in ``[-bound, bound]``; shrinks to 0."""
    m = int(bound * 8)
    return st.lists(st.integers(-m, m), min_size=d * d, max_size=d * d).map(lambda v: np.array(v, float).reshape(d, d) / 8)


def _lists(x: Any) -> Any:
    return np.asarray(x, float).tolist()


@st.composite
def attention_params(
    draw: st.DrawFn,
    d: int | None = None,
    n: int | None = None,
    heads: int = 1,
    causal: bool = False,
    value: str = "any",
    score: str = "any",
    tokens: str = "sphere",
    normalization: str = "unit",
    beta: float = 1.0,
    t_end: float = 10.0,
    on_P_ellipsoid: bool = False,
) -> JSONObject:
    r"""An attention parameter file as a JSON object.

    Parameters
    ----------
    d, n : int, optional
        Ambient dimension and number of tokens (drawn if omitted; ``d <= MAX_DIM``, ``n <= MAX_TOKENS``).
    heads : int
        Number of heads (``1 <= heads <= 3``).
    causal : bool
        Lower-triangular attention.
    value : {"any", "identity", "assumption-1", "repeated-top", "symmetric"}
        ``V`` per head: arbitrary dyadic, :math:`I`, Assumption 1 of the multistability paper
        (symmetric, simple :math:`\lambda_1>0`), symmetric with :math:`\lambda_1=\lambda_2`
        (Assumption 1 violated), or any symmetric.
    score : {"any", "symmetric", "pd", "indefinite", "zero"}
        The bilinear form :math:`P=Q^\top K` (given as ``Q``, ``K``; except for ``"any"``
        :math:`Q=I` and :math:`K=P`; ``"indefinite"``: one positive eigenvalue, the rest negative).
    tokens : {"sphere", "hemisphere", "top-hemisphere", "none", "absent"}
        ``X0`` on the sphere, in an open hemisphere (margin 0.1), in the open hemisphere
        :math:`v^\top y>0.1` of the top eigenvector of ``V`` (with ``value="assumption-1"``), in
        no open hemisphere (an antipodal pair), or not given.
    on_P_ellipsoid : bool
        Put the tokens on :math:`\mathcal E_P=\{y^\top Py=1\}` (``W = P``, the setting of the
        consensus paper's Thm 3.2; needs ``score="pd"``).
    normalization : {"unit", "sqrt"}
    beta, t_end : float
    """
    if not 1 <= heads <= 3:
        raise ValueError(f"heads: must be in [1, 3], got {heads!r}")
    d = draw(st.integers(2, 4)) if d is None else check_dim(d)
    n = draw(st.integers(2, 5)) if n is None else n
    if not 1 <= n <= MAX_TOKENS:
        raise ValueError(f"n: must be in [1, {MAX_TOKENS}], got {n!r}")
    hs = []
    for _ in range(heads):
        top_v = None
        if value == "identity":
            V = np.eye(d)
        elif value == "assumption-1":
            V, top_v = draw(simple_top_with_vector(d))
        elif value == "repeated-top":
            if d < 2:
                raise ValueError("value='repeated-top' needs d >= 2")
            Q, c = draw(scaled_orthogonal(d))
            top = draw(st.integers(1, 4))
            rest = draw(st.lists(st.integers(-4, top), min_size=d - 2, max_size=d - 2))
            V = exact_float(Q.dot(np.diag(np.array([top, top] + rest, dtype=object))).dot(Q.T), 4)
        elif value == "symmetric":
            V = draw(symmetric(d, margin=0.25, bound=4.0))
        elif value == "any":
            V = draw(_small_matrix(d))
        else:
            raise ValueError(f"value: unknown kind {value!r}")
        if score == "zero":
            Qm, Km = np.eye(d), np.zeros((d, d))
        elif score == "pd":
            Qm, Km = np.eye(d), draw(positive_definite(d, 0.25, 2.0))
        elif score == "indefinite":
            Qm, Km = np.eye(d), draw(symmetric(d, (1, d - 1, 0), 0.25, 2.0))
        elif score == "symmetric":
            Qm, Km = np.eye(d), draw(symmetric(d, margin=0.25, bound=2.0))
        elif score == "any":
            Qm, Km = draw(_small_matrix(d, 1.0)), draw(_small_matrix(d, 1.0))
        else:
            raise ValueError(f"score: unknown kind {score!r}")
        hs.append({"Q": _lists(Qm), "K": _lists(Km), "V": _lists(V)})
    doc: JSONObject = {"heads": hs, "n": n, "beta": beta, "causal": causal, "normalization": normalization,
                           "t_end": t_end}
    if on_P_ellipsoid:
        doc["W"] = hs[0]["K"]
        doc["X0"] = _lists(draw(ellipsoid_tokens(n, d, np.array(hs[0]["K"])))[0])
    elif tokens == "sphere":
        doc["X0"] = _lists(draw(sphere_tokens(n, d)))
    elif tokens == "hemisphere":
        doc["X0"] = _lists(draw(hemisphere_tokens(n, d, 0.1))[0])
    elif tokens == "top-hemisphere":
        if top_v is None:
            raise ValueError("tokens='top-hemisphere' needs value='assumption-1'")
        doc["X0"] = _lists(draw(hemisphere_tokens(n, d, 0.1, v=top_v))[0])
    elif tokens == "none":
        if n < 2:
            raise ValueError("tokens='none' needs n >= 2")
        doc["X0"] = _lists(draw(no_hemisphere_tokens(n, d))[0])
    elif tokens != "absent":
        raise ValueError(f"tokens: unknown kind {tokens!r}")
    return doc


@st.composite
def oja_params(draw: st.DrawFn, variant: str = "multiagent_oja", d: int | None = None, n: int = 4,
               value: str = "assumption-1") -> JSONObject:
    """Parameter file of the Oja (``variant="oja"``) or multiagent Oja flow: ``V`` and ``n`` only."""
    d = draw(st.integers(2, 4)) if d is None else check_dim(d)
    base = draw(attention_params(d=d, n=n, value=value, score="zero", tokens="sphere"))
    return {"variant": variant, "V": base["heads"][0]["V"], "n": n, "X0": base["X0"], "t_end": base["t_end"]}


__all__ = ["MAX_DIM", "MAX_TOKENS", "attention_params", "oja_params", "simple_top_symmetric", "simple_top_with_vector"]
