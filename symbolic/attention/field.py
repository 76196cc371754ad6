r"""The ``attention`` system as matrix expressions: one model for both papers (multistability
paper, eqs. (1), (2), (5), (13); consensus paper, eq. (7)).

Tokens are the rows :math:`x_i^\top` of :math:`X\in\mathbb R^{n\times d}`, on the ellipsoid
:math:`\mathcal E_W=\{x: x^\top W x = 1\}` (:math:`W=W^\top\succ0`; the unit sphere when
:math:`W=I`). With :math:`h` heads, head :math:`\eta` having :math:`M_\eta=Q_\eta^\top K_\eta`
(:math:`P_\eta` in the consensus paper) and value :math:`V_\eta` (:math:`U_\eta` there),

.. math::

    \dot x_i = \big(I - x_i x_i^\top W\big) \sum_{\eta=1}^h V_\eta \sum_{j=1}^n A^\eta_{ij}(X)\, x_j,
    \qquad
    A^\eta_{ij} = c\,\frac{\mathbb 1[j\in\mathcal N_i]\; e^{\beta\, x_i^\top M_\eta x_j}}
                       {\sum_{\ell\in\mathcal N_i} e^{\beta\, x_i^\top M_\eta x_\ell}},

query :math:`i`, key :math:`j`, softmax over :math:`j`; :math:`\mathcal N_i=\{1..n\}` (full) or
:math:`\{1..i\}` (``causal``, lower-triangular attention); :math:`\beta` is the temperature of
eq. (13). The row sum :math:`c` is the ``normalization``:

* ``"unit"``: :math:`c=1` (multistability paper, eq. (1); no :math:`1/n`);
* ``"sqrt"``: :math:`c=1/\sqrt{d}`, the consensus paper's :math:`1/\sqrt{n+1}` — there the tokens
  live in :math:`\mathbb R^{n+1}`, so its :math:`n+1` is our ambient dimension :math:`d` (note
  003, Pitfall 1: the row sum of eq. (6)/(7) is :math:`1/\sqrt{n+1}`; eqs. (4)/(5) as printed
  normalise the wrong index). It is a pure time rescaling of ``"unit"`` by :math:`1/\sqrt d`.

Variants (the attention matrix replaced, everything else unchanged):

* ``"self_attention"`` (default): as above;
* ``"oja"``: :math:`A=I`, i.e. :math:`n` independent Oja flows :math:`\dot x=(I-xx^\top W)Vx`
  (eq. (2));
* ``"multiagent_oja"``: :math:`A=\frac1n\mathbb 1\mathbb 1^\top` (eq. (5)), the :math:`\beta\to0`
  limit of self-attention (Proposition 2).

In matrix form, with the causal mask as an additive matrix :math:`C` (:math:`C_{ij}=0` for
:math:`j\le i`, :math:`-\infty` above the diagonal; :math:`e^{-\infty}=0`),

.. math::

    S_\eta = \beta X Q_\eta^\top K_\eta X^\top + C,\qquad
    Y = \sum_\eta c\,\operatorname{softmax}_{\mathrm{rows}}(S_\eta)\, X V_\eta^\top,\qquad
    F = Y - \operatorname{diag}\big(\operatorname{rowdot}(X W, Y)\big)\, X,

row :math:`i` of :math:`F` being :math:`(I-x_ix_i^\top W)\,y_i`, tangent to :math:`\mathcal E_W`
at :math:`x_i` (:math:`x_i^\top W(I-x_ix_i^\top W)=0` when :math:`x_i^\top Wx_i=1`). The
temperature is not a kernel argument: :math:`S` is linear in :math:`Q`, so callers pass
:math:`\beta Q_\eta`; time-varying heads are evaluated at :math:`t` by the caller and passed as
numbers (the kernels are autonomous in their arguments).

:func:`attention_program` lowers :math:`F` for a :class:`Structure` to the kernel IR of
:mod:`flowcert.symbolic.codegen` (numpy, torch and C printers); :func:`program_inputs` names the
kernel arguments. :func:`scalarised_field` writes the field entry by entry for tiny :math:`n, d`
(cross-checks and symbolic Jacobians only: its size grows like :math:`n^3 d^3`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ..codegen import Program, RowDot, SoftmaxRows, lower_expressions

n, d = sp.symbols("n d", integer=True, positive=True)
X = sp.MatrixSymbol("X", n, d)
Q, K, V = (sp.MatrixSymbol(name, d, d) for name in ("Q", "K", "V"))
#: Additive causal mask (n x n): 0 on and below the diagonal, -inf above.
C = sp.MatrixSymbol("C", n, n)
#: Ellipsoid matrix of {x^T W x = 1} (d x d, symmetric positive definite).
W = sp.MatrixSymbol("W", d, d)
#: The all-ones vector (multiagent Oja: A = 1 1^T / n).
ONE = sp.MatrixSymbol("one", n, 1)

NORMALIZATIONS = ("unit", "sqrt")
VARIANTS = ("self_attention", "oja", "multiagent_oja")


def _check(normalization: str) -> None:
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, not {normalization!r}")


@dataclass(frozen=True)
class Structure:
    """The discrete choices of the model (everything that changes the generated kernel).

    Attributes
    ----------
    variant : {"self_attention", "oja", "multiagent_oja"}
    heads : int
        Number of heads (self-attention only; 1 for the Oja variants).
    normalization : {"unit", "sqrt"}
        Attention rows sum to 1 or to :math:`1/\\sqrt d`.
    causal : bool
        Lower-triangular attention (self-attention only).
    ellipsoid : bool
        Tokens on :math:`\\{x^\\top Wx=1\\}` with a general :math:`W` (a kernel argument); False
        means the unit sphere (:math:`W=I`, no argument).
    """

    variant: str = "self_attention"
    heads: int = 1
    normalization: str = "unit"
    causal: bool = False
    ellipsoid: bool = False

    def __post_init__(self) -> None:
        _check(self.normalization)
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, not {self.variant!r}")
        if self.heads < 1:
            raise ValueError("heads must be >= 1")
        if self.variant != "self_attention" and (self.heads != 1 or self.causal):
            raise ValueError(f"variant {self.variant!r} has no heads and no causal mask")


def head_symbols(structure: Structure) -> list[tuple[sp.MatrixSymbol, sp.MatrixSymbol, sp.MatrixSymbol]]:
    """``(Q_eta, K_eta, V_eta)`` symbols; named ``Q, K, V`` for one head, ``Q0, K0, V0, Q1 ...``
    otherwise."""
    if structure.heads == 1:
        return [(Q, K, V)]
    return [tuple(sp.MatrixSymbol(f"{c}{e}", d, d) for c in "QKV") for e in range(structure.heads)]  # type: ignore[misc]


def scores(q: sp.MatrixExpr = Q, k: sp.MatrixExpr = K, causal: bool = False) -> sp.MatrixExpr:
    r""":math:`S = X Q^\top K X^\top (+C)`, so :math:`S_{ij} = x_i^\top M x_j` with :math:`M=Q^\top K`."""
    S = X * q.T * k * X.T
    return S + C if causal else S


def _scale(normalization: str) -> sp.Expr:
    return sp.Integer(1) if normalization == "unit" else 1 / sp.sqrt(d)


def attention_matrix(normalization: str = "unit", q: sp.MatrixExpr = Q, k: sp.MatrixExpr = K,
                     causal: bool = False) -> sp.MatrixExpr:
    r""":math:`A=c\operatorname{softmax}_{\mathrm{rows}}(S)`, rows summing to :math:`c` (1 for
    ``"unit"``, :math:`1/\sqrt d` for ``"sqrt"``)."""
    _check(normalization)
    A = SoftmaxRows(scores(q, k, causal))
    return A if normalization == "unit" else _scale(normalization) * A


def influence(normalization: str = "unit", structure: Structure | None = None) -> sp.MatrixExpr:
    r""":math:`Y=\sum_\eta A^\eta X V_\eta^\top`: row :math:`i` is :math:`y_i=\sum_\eta V_\eta\sum_j A^\eta_{ij}x_j`."""
    s = structure or Structure(normalization=normalization)
    if s.variant == "oja":
        return X * V.T
    if s.variant == "multiagent_oja":
        return (ONE * ONE.T * X * V.T) / n
    terms = [attention_matrix(s.normalization, q, k, s.causal) * X * v.T for q, k, v in head_symbols(s)]
    return sp.MatAdd(*terms) if len(terms) > 1 else terms[0]


def attention_field(normalization: str = "unit", structure: Structure | None = None) -> sp.MatrixExpr:
    r""":math:`F = Y - \operatorname{diag}(\operatorname{rowdot}(XW, Y))\,X`: row :math:`i` is
    :math:`(I - x_i x_i^\top W)\, y_i`."""
    s = structure or Structure(normalization=normalization)
    Y = influence(structure=s)
    XW = X * W if s.ellipsoid else X
    return Y - sp.DiagMatrix(RowDot(XW, Y)) * X


def program_inputs(structure: Structure) -> list[sp.MatrixSymbol]:
    """Kernel arguments in order: ``X``, then ``Q, K, V`` per head (self-attention), ``V``
    (Oja), ``one, V`` (multiagent Oja), then ``C`` if causal and ``W`` if on an ellipsoid."""
    if structure.variant == "oja":
        mats: list[sp.MatrixSymbol] = [V]
    elif structure.variant == "multiagent_oja":
        mats = [ONE, V]
    else:
        mats = [m for head in head_symbols(structure) for m in head]
    return [X, *mats, *([C] if structure.causal else []), *([W] if structure.ellipsoid else [])]


@lru_cache(maxsize=None)
def structure_program(structure: Structure) -> Program:
    """Kernel IR of :func:`attention_field` for ``structure``: ``attention_field(*program_inputs)
    -> (F,)``, batched over leading axes (``X`` is ``(..., n, d)``, matrices ``(..., d, d)``)."""
    s = structure
    rows = "1" if s.normalization == "unit" else "1/sqrt(d)"
    what = {"oja": "Oja flow (A = I)", "multiagent_oja": "multiagent Oja flow (A = 1 1^T / n)",
            "self_attention": f"self-attention, {s.heads} head(s), rows sum to {rows}"
                              + (", causal" if s.causal else "")}[s.variant]
    manifold = "ellipsoid x^T W x = 1" if s.ellipsoid else "unit sphere"
    return lower_expressions(
        "attention_field",
        [("F", attention_field(structure=s))],
        program_inputs(s),
        doc=f"{what} on the {manifold}: F = Y - diag(rowdot(X{'W' if s.ellipsoid else ''}, Y)) X; "
            "batched over leading axes.",
    )


def attention_program(normalization: str = "unit") -> Program:
    """Kernel IR of the one-head, full-attention field on the sphere: ``attention_field(X, Q, K, V)
    -> (F,)`` (shorthand for :func:`structure_program`)."""
    return structure_program(Structure(normalization=normalization))


def scalarised_field(
    n_tokens: int, dim: int, normalization: str = "unit", beta: sp.Expr = sp.Integer(1)
) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix]:
    r"""The one-head field entry by entry for tiny sizes: ``(X, Q, K, V, F)`` as explicit matrices
    of symbols ``x_i_k, q_k_l, ...``, with :math:`F_{ik}` written from the sums of eq. (1)
    directly (no max-subtraction, no matrix-level nodes). For cross-checks only.
    """
    _check(normalization)
    Xs = sp.Matrix(n_tokens, dim, lambda i, k: sp.Symbol(f"x_{i}_{k}"))
    Qs, Ks, Vs = (sp.Matrix(dim, dim, lambda k, l, c=c: sp.Symbol(f"{c}_{k}_{l}")) for c in "qkv")
    return (Xs, Qs, Ks, Vs, explicit_field(Xs, Qs.T * Ks, Vs, normalization, beta))


def explicit_field(Xs: sp.Matrix, M: sp.Matrix, Vs: sp.Matrix, normalization: str = "unit",
                   beta: sp.Expr = sp.Integer(1), causal: bool = False,
                   Ws: sp.Matrix | None = None, variant: str = "self_attention") -> sp.Matrix:
    r"""Eq. (1)/(2)/(5)/(7) entry by entry for explicit SymPy matrices ``Xs`` (n x d), ``M``
    (:math:`Q^\top K`), ``Vs``: one head, any variant, mask and ellipsoid ``Ws``."""
    _check(normalization)
    n_tokens, dim = Xs.shape
    rows = [Xs[i, :].T for i in range(n_tokens)]
    scale = 1 if normalization == "unit" else 1 / sp.sqrt(dim)
    Wm = sp.eye(dim) if Ws is None else Ws
    F = sp.zeros(n_tokens, dim)
    for i, xi in enumerate(rows):
        if variant == "oja":
            weights = [sp.Integer(1) if j == i else sp.Integer(0) for j in range(n_tokens)]
        elif variant == "multiagent_oja":
            weights = [sp.Rational(1, n_tokens)] * n_tokens
        else:
            keys = range(i + 1) if causal else range(n_tokens)
            e = {j: sp.exp(beta * (xi.T * M * rows[j])[0, 0]) for j in keys}
            total = sp.Add(*e.values())
            weights = [scale * e[j] / total if j in e else sp.Integer(0) for j in range(n_tokens)]
        y = Vs * sum((w * xj for w, xj in zip(weights, rows)), sp.zeros(dim, 1))
        f = y - xi * (xi.T * Wm * y)[0, 0]
        F[i, :] = f.T
    return F
