r"""Lyapunov functions, linearisations and closed forms of the consensus paper (Rodríguez Abella,
Silvestre, Tabuada, *The asymptotic behavior of attention in transformers*, eq. (7)), in SymPy.

Model (7), tokens :math:`y_i\in\mathcal E_W=\{y^\top Wy=1\}\subset\mathbb R^{d}`, :math:`d=n+1`:

.. math::

    \dot y_i=\sum_{\eta=1}^h\sum_j\alpha^\eta_{ij}\big(U_\eta y_j-(y_i^\top WU_\eta y_j)\,y_i\big),\qquad
    \alpha^\eta_{ij}=\frac{e^{y_i^\top P_\eta y_j}}{\sqrt{d}\sum_k e^{y_i^\top P_\eta y_k}}

(sums over :math:`j,k\le i` for causal attention). Every claim below is an identity whose residual
SymPy reduces to 0, or an expression whose sign is read off a factorisation:

* **Thm 3.2** (:math:`h=1`, :math:`U=I`, :math:`P=P^\top\succ0`, **tokens on** :math:`\mathcal E_P`,
  the erratum): :math:`V_P=-\tfrac12\sum_{ij}e^{y_i^\top Py_j}`, with
  :math:`\partial V/\partial y_k=-Z_kPX_k` (:math:`Z_k=\sqrt d\sum_je^{y_k^\top Py_j}`,
  :math:`X_k=\sum_j\alpha_{kj}y_j`) and

  .. math:: \dot V_P=-\sum_kZ_k\big(|\dot y_k|_P^2+\langle y_k,X_k\rangle_P^2(1-|y_k|_P^2)\big)
            \overset{\mathcal E_P}{=}-\sum_kZ_k|\dot y_k|_P^2\le0 .

* **Thm 4.1** (max-type, Dini): :math:`V=\max_i(1-v^\top y_i)`,
  :math:`D^+V=-\min_{i\in\mathcal I}\sum_\eta\sum_j\alpha^\eta_{ij}q_{ij}`, and for an active
  :math:`i` (:math:`v^\top y_i\le v^\top y_j`) with :math:`v^\top y_i>0`,

  .. math:: q_{ij}=v^\top y_j-(y_i^\top Wy_j)\,v^\top y_i=(v^\top y_j-v^\top y_i)+v^\top y_i\,(1-y_i^\top Wy_j)\ge0

  (the last factor by Cauchy–Schwarz in :math:`\langle\cdot,\cdot\rangle_W`).
* **Lemma 5.1 / Thm 5.1** (causal, :math:`U=I`, sphere): :math:`a=y^{0\top}y`,
  :math:`\dot a=\tilde\alpha(1-a^2)`, :math:`V(a)=\tfrac23-a+\tfrac{a^3}3=\tfrac13(a-1)^2(a+2)`,
  :math:`\dot V=-\tilde\alpha(1-a^2)^2`; in the cascade (19),
  :math:`\dot a_i=\sum_{j<i}\tilde\alpha_{ij}(1-a_i^2)+\sum_{j<i}\tilde\alpha_{ij}e_j^\top(y^0-a_iy_i)` with
  :math:`|y^0-a_iy_i|^2=1-a_i^2`.
* **Lemma 6.1 / Thm 6.1** (causal, :math:`h=1`, :math:`U=U^\top`, :math:`Uv=\lambda v`):
  :math:`b=v^\top y`, :math:`\dot b=\tilde\alpha(\lambda-y^\top Uy)\,b`,
  :math:`\lambda-y^\top Uy=\sum_k(\lambda-\mu_k)(q_k^\top y)^2\ge0`, identity (23) and
  :math:`V_+(b)=1-b`.
* **Linearisations at consensus** (derived by differentiating the scalarised field with symbolic
  :math:`P`): transverse eigenvalues :math:`-h/\sqrt d` (full), :math:`-h(i-1)/(i\sqrt d)` (causal,
  :math:`U=I`), :math:`(\mu_k-i\lambda)/(i\sqrt d)` (Thm 6.1 at :math:`(v,\dots,v)`).
* **Two tokens**, :math:`P=0`, :math:`U=I`: :math:`y_1^\top y_2(t)=\tanh(\operatorname{artanh}a_0+kt)`,
  :math:`k=h/\sqrt d` (full) or :math:`h/(2\sqrt d)` (causal).
* **Tetrahedron**, :math:`P=-\beta I`, :math:`\ell=4`, :math:`d=3`: tangent spectrum
  :math:`\{0^3,\lambda_E^2,\lambda_T^3\}` with :math:`p=1/(3+e^{-4\beta/3})`,
  :math:`\lambda_E=-\tfrac{8\beta p}{3\sqrt3}`, :math:`\lambda_T=\tfrac{8(3-2\beta)p}{9\sqrt3}`:
  a stable non-consensus equilibrium iff :math:`\beta>3/2`.

Identities that hold on the sphere only are reduced modulo :math:`|y|^2-1` (:func:`on_spheres`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import sympy as sp

t = sp.Symbol("t", real=True)


@dataclass
class Proof:
    """A scalar identity ``expr == 0`` (``residual`` after simplification) or a sign argument."""

    name: str
    latex: str
    residual: sp.Expr

    @property
    def proved(self) -> bool:
        return self.residual == 0


def _zero(e: sp.Expr) -> sp.Expr:
    e = sp.cancel(sp.together(sp.expand(e)))
    return e if e == 0 else sp.simplify(e)


def unit_vector(name: str, dim: int) -> sp.Matrix:
    r"""Symbolic vector whose squared norm is reduced to 1 by :func:`on_spheres` (the last
    component's square is the leading monomial of :math:`|y|^2-1`)."""
    return vector(name, dim)


def on_spheres(expr: sp.Expr, *vectors: sp.Matrix) -> sp.Expr:
    r"""Remainder of ``expr`` (a polynomial in the components) modulo :math:`|y|^2-1` for each vector.

    The relations have pairwise coprime leading monomials (:math:`y_{d}^2`, distinct variables) in a
    lex order that puts those variables first, so they form a Gröbner basis and the remainder is
    0 iff the identity holds on the product of spheres."""
    rels = [sp.expand(_dot(v, v) - 1) for v in vectors]
    gens = [v[v.rows - 1] for v in vectors]
    others = sorted((expr.free_symbols | set().union(*(r.free_symbols for r in rels))) - set(gens), key=str)
    e = sp.expand(expr)
    if not rels:
        return e
    _, r = sp.reduced(e, rels, *gens, *others, order="lex")
    return sp.expand(r)


def vector(name: str, dim: int) -> sp.Matrix:
    return sp.Matrix(sp.symbols(f"{name}_0:{dim}", real=True))


def _dot(a: sp.Matrix, b: sp.Matrix, W: sp.Matrix | None = None) -> sp.Expr:
    return (a.T * (b if W is None else W * b))[0, 0]


def field(Y: Sequence[sp.Matrix], heads: Sequence[tuple[sp.Matrix, sp.Matrix | None]], *,
          W: sp.Matrix | None = None, causal: bool = False, dim: int | None = None,
          weights: Sequence[Sequence[Sequence[sp.Expr]]] | None = None) -> list[sp.Matrix]:
    r"""Right-hand side of (7) for explicit tokens ``Y`` (column vectors) and heads ``(P, U)``
    (``U=None`` is the identity); ``weights[eta][i][j]`` replaces :math:`\alpha^\eta_{ij}` if given."""
    d = dim or Y[0].rows
    out = []
    for i, yi in enumerate(Y):
        f = sp.zeros(yi.rows, 1)
        js = range(i + 1) if causal else range(len(Y))
        for eta, (P, U) in enumerate(heads):
            if weights is not None:
                a = [weights[eta][i][j] for j in js]
            else:
                e = [sp.exp(_dot(yi, Y[j], P)) for j in js]
                a = [x / (sp.sqrt(d) * sum(e)) for x in e]
            for aj, j in zip(a, js):
                Uy = Y[j] if U is None else U * Y[j]
                f += aj * (Uy - _dot(yi, Uy, W) * yi)
        out.append(f)
    return out


# ---------------------------------------------------------------------------------------------
# Theorem 3.2: gradient structure on E_P
# ---------------------------------------------------------------------------------------------


def symmetric_matrix(name: str, dim: int) -> sp.Matrix:
    return sp.Matrix(dim, dim, lambda i, j: sp.Symbol(f"{name}_{min(i, j)}{max(i, j)}", real=True))


@lru_cache(maxsize=None)
def theorem_3_2_proofs(ell: int = 3, dim: int = 3) -> tuple[Proof, ...]:
    r"""The gradient identity and the closed form of :math:`\dot V_P` for symbolic symmetric :math:`P`.

    1. ``gradient``: :math:`\partial V/\partial y_k+P\sum_je^{y_k^\top Py_j}y_j=0` (SymPy differentiates the
       true exponentials; they are then named :math:`E_{kj}=E_{jk}`), i.e. :math:`\partial V/\partial y_k=-Z_kPX_k`.
    2. ``field_form``: the right-hand side of (8) (:math:`W=P`) is :math:`\dot y_k=X_k-\langle y_k,X_k\rangle_Py_k`.
    3. ``V_dot``: :math:`(PX)^\top(X-\langle y,X\rangle_Py)=|X-\langle y,X\rangle_Py|_P^2+\langle y,X\rangle_P^2(1-|y|_P^2)`
       for all :math:`X,y`; with 1 and 2, :math:`\dot V_P=\sum_k\partial_kV^\top\dot y_k=-\sum_kZ_k(|\dot y_k|_P^2+\langle y_k,X_k\rangle_P^2(1-|y_k|_P^2))`.
    """
    P = symmetric_matrix("p", dim)
    Y = [vector(f"y{i}", dim) for i in range(ell)]
    E = {(i, j): sp.Symbol(f"E_{min(i, j)}{max(i, j)}", positive=True) for i in range(ell) for j in range(ell)}
    s = {(i, j): _dot(Y[i], Y[j], P) for i in range(ell) for j in range(ell)}
    V = -sp.Rational(1, 2) * sum(sp.exp(s[i, j]) for i in range(ell) for j in range(ell))
    back = {sp.exp(s[i, j]): E[i, j] for i in range(ell) for j in range(ell)}
    res = sp.Integer(0)
    for k in range(ell):
        g = sp.Matrix([sp.diff(V, c) for c in Y[k]]).xreplace(back) + P * sum((E[k, j] * Y[j] for j in range(ell)), sp.zeros(dim, 1))
        res += sum(abs(sp.expand(e)) for e in g)
    proofs = [Proof("gradient", r"\partial V/\partial y_k=-Z_kPX_k", res)]
    a = [sp.Symbol(f"a_{j}", positive=True) for j in range(ell)]
    F = field(Y, [(P, None)], W=P, weights=[[a] * ell])[0]
    X = sum((a[j] * Y[j] for j in range(ell)), sp.zeros(dim, 1))
    proofs.append(Proof("field_form", r"\dot y_k=X_k-\langle y_k,X_k\rangle_Py_k",
                        sum(abs(sp.expand(e)) for e in F - (X - _dot(Y[0], X, P) * Y[0]))))
    Xg, y = vector("x", dim), vector("y", dim)
    c = _dot(y, Xg, P)
    proofs.append(Proof("V_dot", r"\dot V_P=-\sum_kZ_k\big(|\dot y_k|_P^2+\langle y_k,X_k\rangle_P^2(1-|y_k|_P^2)\big)",
                        sp.expand(_dot(Xg, Xg - c * y, P) - _dot(Xg - c * y, Xg - c * y, P) - c**2 * (1 - _dot(y, y, P)))))
    # on E_P (|y_k|_P = 1) the second term vanishes: Vdot = -sum Z_k |ydot_k|_P^2 <= 0 (Z_k > 0, P > 0)
    return tuple(proofs)


def V_P_lower_bound(ell: int) -> sp.Expr:
    r"""Global minimum of :math:`V_P` on :math:`\mathcal E_P^\ell`: :math:`-\ell^2e/2` (iff consensus,
    since :math:`y_i^\top Py_j\le1` by Cauchy–Schwarz)."""
    return -sp.Rational(ell**2, 2) * sp.E


# ---------------------------------------------------------------------------------------------
# Theorem 4.1: max-type Lyapunov function and its Dini derivative
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def theorem_4_1_proofs() -> tuple[Proof, ...]:
    r"""Per-term decomposition behind :math:`D^+V\le0`.

    With :math:`c=v^\top y_j`, :math:`b=v^\top y_i`, :math:`a=y_i^\top Wy_j`:
    :math:`c-ab=(c-b)+b(1-a)`, where :math:`c-b\ge0` (i active), :math:`b>0` (hemisphere),
    :math:`1-a\ge0` (Cauchy–Schwarz on :math:`\mathcal E_W`). Also
    :math:`\tfrac{d}{dt}(1-v^\top y_i)=-v^\top\dot y_i` for the field (7) with :math:`U=I`.
    """
    a, b, c = sp.symbols("a b c", real=True)
    p1 = Proof("per_term", r"v^\top y_j-(y_i^\top Wy_j)v^\top y_i=(v^\top y_j-v^\top y_i)+v^\top y_i(1-y_i^\top Wy_j)",
               _zero((c - a * b) - ((c - b) + b * (1 - a))))
    # Cauchy-Schwarz on the sphere: 1 - y_i^T y_j = |y_i - y_j|^2 / 2 for unit vectors
    yi, yj = unit_vector("u", 3), unit_vector("w", 3)
    p2 = Proof("cauchy_schwarz", r"1-y_i^\top y_j=\tfrac12|y_i-y_j|^2\ \text{on}\ \mathbb S^n",
               on_spheres(1 - _dot(yi, yj) - _dot(yi - yj, yi - yj) / 2, yi, yj))
    # the derivative of 1 - v^T y_i along the field with weights alpha_ij, U = I, W general
    dim, ell = 3, 3
    Y = [vector(f"y{i}", dim) for i in range(ell)]
    v = vector("v", dim)
    Wm = symmetric_matrix("w", dim)
    al = [[sp.Symbol(f"alpha_{i}{j}", positive=True) for j in range(ell)] for i in range(ell)]
    F = field(Y, [(sp.zeros(dim), None)], W=Wm, weights=[al])
    p3 = Proof("dini_terms", r"-\tfrac{d}{dt}(1-v^\top y_i)=\sum_j\alpha_{ij}\big(v^\top y_j-(y_i^\top Wy_j)v^\top y_i\big)",
               _zero(_dot(v, F[0]) - sum(al[0][j] * (_dot(v, Y[j]) - _dot(Y[0], Y[j], Wm) * _dot(v, Y[0]))
                                        for j in range(ell))))
    return (p1, p2, p3)


# ---------------------------------------------------------------------------------------------
# Lemma 5.1 / Theorem 5.1: causal attention with U = I
# ---------------------------------------------------------------------------------------------

a_sym = sp.Symbol("a", real=True)


def V_5(a: sp.Expr = a_sym) -> sp.Expr:
    r"""Eq. (17): :math:`V(a)=\tfrac23-a+\tfrac{a^3}3`."""
    return sp.Rational(2, 3) - a + a**3 / 3


@lru_cache(maxsize=None)
def lemma_5_1_proofs(dim: int = 3) -> tuple[Proof, ...]:
    r""":math:`\dot a=\tilde\alpha(1-a^2)`, the factorisation of :math:`V`, :math:`\dot V=-\tilde\alpha(1-a^2)^2`,
    and the cascade identity (19) with :math:`|y^0-a_iy_i|^2=1-a_i^2`."""
    al = sp.Symbol("alpha", positive=True)
    y0, y = unit_vector("u", dim), unit_vector("w", dim)
    ydot = al * (y0 - _dot(y, y0) * y)
    a = _dot(y0, y)
    out = [
        Proof("a_dot", r"\dot a=\tilde\alpha(1-a^2)", on_spheres(_dot(y0, ydot) - al * (1 - a**2), y0, y)),
        Proof("V_factor", r"V(a)=\tfrac13(a-1)^2(a+2)", _zero(V_5() - (a_sym - 1) ** 2 * (a_sym + 2) / 3)),
        Proof("V_prime", r"V'(a)=a^2-1", _zero(sp.diff(V_5(), a_sym) - (a_sym**2 - 1))),
        Proof("V_dot", r"\dot V=V'(a)\dot a=-\tilde\alpha(1-a^2)^2",
              _zero((a_sym**2 - 1) * al * (1 - a_sym**2) + al * (1 - a_sym**2) ** 2)),
    ]
    # cascade (19): token i = 3 with tokens 1, 2 before it; y_j = y0 + e_j
    yi = unit_vector("z", dim)
    y2 = unit_vector("w", dim)
    e2 = y2 - y0
    al3 = [sp.Symbol(f"alpha_3{j}", positive=True) for j in (1, 2, 3)]
    F = field([y0, y2, yi], [(sp.zeros(dim), None)], causal=True, weights=[[[1], [1, 1], al3]])[2]
    ai = _dot(y0, yi)
    rhs = (al3[0] + al3[1]) * (1 - ai**2) + al3[1] * _dot(e2, y0 - ai * yi)
    out.append(Proof("cascade_19", r"\dot a_i=\sum_{j<i}\tilde\alpha_{ij}(1-a_i^2)+\sum_{j<i}\tilde\alpha_{ij}e_j^\top(y^0-a_iy_i)",
                     on_spheres(_dot(y0, F) - rhs, y0, y2, yi)))
    out.append(Proof("input_gain", r"|y^0-a_iy_i|^2=1-a_i^2", on_spheres(_dot(y0 - ai * yi, y0 - ai * yi) - (1 - ai**2), y0, yi)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Lemma 6.1 / Theorem 6.1: causal attention with symmetric U
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def lemma_6_1_proofs(dim: int = 3) -> tuple[Proof, ...]:
    r"""In the eigenbasis :math:`U=\operatorname{diag}(\lambda,\mu_2,\dots)`, :math:`v=e_1`:
    :math:`\dot b=\tilde\alpha(\lambda-y^\top Uy)b`, the sum-of-squares form of
    :math:`\lambda-y^\top Uy` on the sphere, and identity (23) with :math:`e_j=y_j-v`."""
    lam = sp.Symbol("lambda", real=True)
    mus = sp.symbols(f"mu_2:{dim + 1}", real=True)
    U = sp.diag(lam, *mus)
    v = sp.Matrix([1] + [0] * (dim - 1))
    al = sp.Symbol("alpha", positive=True)
    y = unit_vector("w", dim)
    b = _dot(v, y)
    ydot = al * (U * y - _dot(y, U * y) * y)
    out = [Proof("b_dot", r"\dot b=\tilde\alpha(\lambda-y^\top Uy)\,b", on_spheres(_dot(v, ydot) - al * (lam - _dot(y, U * y)) * b, y)),
           Proof("sos", r"\lambda-y^\top Uy=\sum_k(\lambda-\mu_k)(q_k^\top y)^2",
                 on_spheres(lam - _dot(y, U * y) - sum((lam - m) * y[k + 1] ** 2 for k, m in enumerate(mus)), y))]
    y1, yi = unit_vector("u", dim), unit_vector("z", dim)
    al2 = [sp.Symbol("alpha_21", positive=True), sp.Symbol("alpha_22", positive=True)]
    F = field([y1, yi], [(sp.zeros(dim), U)], causal=True, weights=[[[1], al2]])[1]
    bi = _dot(v, yi)
    e1 = y1 - v
    g = al2[0] * ((lam * v.T - bi * yi.T * U) * e1)[0, 0]
    rhs = al2[0] * lam * (1 - bi**2) + al2[1] * (lam - _dot(yi, U * yi)) * bi + g
    out.append(Proof("identity_23", r"\dot b_i=\sum_{j<i}\tilde\alpha_{ij}\lambda(1-b_i^2)+\tilde\alpha_{ii}(\lambda-y_i^\top Uy_i)b_i+g(t,e)",
                     on_spheres(_dot(v, F) - rhs, y1, yi)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# linearisations at consensus
# ---------------------------------------------------------------------------------------------


def full_consensus_eigenvalue(h: int, d: int) -> sp.Expr:
    r"""Transverse eigenvalue at any consensus point, full attention, :math:`U=I`: :math:`-h/\sqrt d`."""
    return -sp.Integer(h) / sp.sqrt(d)


def causal_consensus_eigenvalue(h: int, d: int, i: int) -> sp.Expr:
    r"""Causal, :math:`U=I`: :math:`-h(i-1)/(i\sqrt d)` for token :math:`i` (1-based; token 1 gives 0)."""
    return -sp.Integer(h) * (i - 1) / (i * sp.sqrt(d))


def theorem_6_1_eigenvalue(mu: sp.Expr, lam: sp.Expr, d: int, i: int) -> sp.Expr:
    r"""Thm 6.1 at :math:`(v,\dots,v)`: :math:`(\mu_k-i\lambda)/(i\sqrt d)`."""
    return (mu - i * lam) / (i * sp.sqrt(d))


@lru_cache(maxsize=None)
def consensus_linearisation(kind: str, ell: int, dim: int, h: int = 1) -> tuple[sp.Matrix, dict]:
    r"""Tangent Jacobian at the consensus point :math:`y_i=e_d` (``kind`` = ``"full"`` or
    ``"causal"``, :math:`U=I`, symbolic unconstrained :math:`P_\eta`) or at :math:`(v,\dots,v)=(e_1,\dots)`
    (``"thm6.1"``, :math:`U=\operatorname{diag}(\lambda,\mu_2,\dots)`, :math:`h=1`), obtained by
    differentiating the scalarised field (7). Returns the matrix in tangent coordinates
    (token-major; the coordinates orthogonal to the base point) and its eigenvalues with multiplicities.
    """
    coords = [vector(f"y{i}", dim) for i in range(ell)]
    if kind == "thm6.1":
        lam = sp.Symbol("lambda", positive=True)
        mus = sp.symbols(f"mu_2:{dim + 1}", real=True)
        heads = [(sp.Matrix(dim, dim, lambda r, c: sp.Symbol(f"p_{r}{c}", real=True)), sp.diag(lam, *mus))]
        base = sp.Matrix([1] + [0] * (dim - 1))
        tangent = list(range(1, dim))
    else:
        heads = [(sp.Matrix(dim, dim, lambda r, c, k=k: sp.Symbol(f"p{k}_{r}{c}", real=True)), None) for k in range(h)]
        base = sp.Matrix([0] * (dim - 1) + [1])
        tangent = list(range(dim - 1))
    F = field(coords, heads, causal=kind != "full")
    at = {c: base[k] for y in coords for k, c in enumerate(y)}
    var = [coords[i][k] for i in range(ell) for k in tangent]
    rows = [F[i][k] for i in range(ell) for k in tangent]
    J = sp.Matrix([[sp.simplify(sp.diff(r, x).xreplace(at)) for x in var] for r in rows])
    return J, J.eigenvals()


# ---------------------------------------------------------------------------------------------
# two tokens, P = 0
# ---------------------------------------------------------------------------------------------


def two_token_rate(h: int, d: int, causal: bool) -> sp.Expr:
    r""":math:`k=h/\sqrt d` (full) or :math:`h/(2\sqrt d)` (causal)."""
    return sp.Integer(h) / (sp.sqrt(d) * (2 if causal else 1))


def two_token_closed_form(a0: sp.Expr, k: sp.Expr, time: sp.Expr = t) -> sp.Expr:
    r""":math:`a(t)=\tanh(\operatorname{artanh}a_0+kt)`."""
    return sp.tanh(sp.atanh(a0) + k * time)


@lru_cache(maxsize=None)
def two_token_proofs(dim: int = 3, h: int = 2) -> tuple[Proof, ...]:
    r""":math:`\dot a=k(1-a^2)` from the field (full and causal, :math:`P=0`, :math:`h` heads) and the
    closed form solving it with :math:`a(0)=a_0`."""
    y1, y2 = unit_vector("u", dim), unit_vector("w", dim)
    heads = [(sp.zeros(dim), None)] * h
    a = _dot(y1, y2)
    out = []
    for causal in (False, True):
        F = field([y1, y2], heads, causal=causal)
        k = two_token_rate(h, dim, causal)
        kind = "causal" if causal else "full"
        out.append(Proof(f"a_dot_{kind}", rf"\dot a=k(1-a^2),\ k=h/({'2' if causal else ''}\sqrt d)\ \text{{({kind})}}",
                         on_spheres(_dot(F[0], y2) + _dot(y1, F[1]) - k * (1 - a**2), y1, y2)))
    a0, k = sp.Symbol("a_0", real=True), sp.Symbol("k", positive=True)
    sol = two_token_closed_form(a0, k)
    out.append(Proof("tanh_solution", r"\tfrac{d}{dt}\tanh(\operatorname{artanh}a_0+kt)=k(1-a^2),\ a(0)=a_0",
                     _zero(sp.diff(sol, t) - k * (1 - sol**2)) + _zero(sol.subs(t, 0) - a0)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# the regular tetrahedron, P = -beta I: stable non-consensus
# ---------------------------------------------------------------------------------------------

beta = sp.Symbol("beta", real=True)


def tetrahedron() -> list[sp.Matrix]:
    """Vertices of the regular tetrahedron on :math:`\\mathbb S^2` (pairwise inner products :math:`-1/3`)."""
    return [sp.Matrix(v) / sp.sqrt(3) for v in ([1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1])]


def tetrahedron_spectrum(b: sp.Expr = beta) -> dict[str, sp.Expr]:
    r"""Closed-form tangent eigenvalues at the tetrahedron, :math:`P=-\beta I`, :math:`U=I`, full, :math:`h=1`:
    ``rotation`` (0, ×3), ``E`` (×2), ``T`` (×3)."""
    p = 1 / (3 + sp.exp(-sp.Rational(4, 3) * b))
    return {"rotation": sp.Integer(0), "E": -8 * b * p / (3 * sp.sqrt(3)),
            "T": 8 * (3 - 2 * b) * p / (9 * sp.sqrt(3))}


TETRAHEDRON_THRESHOLD = sp.Rational(3, 2)


def tetrahedron_tangent_jacobian() -> sp.Matrix:
    r"""The 8×8 tangent Jacobian at the tetrahedron as a function of :math:`\beta` (orthonormal
    tangent frames), from the scalarised field; every exponential is written as a power of
    :math:`B=e^{\beta/3}`, so the entries are rational in :math:`B` and :math:`\beta`."""
    Y = tetrahedron()
    xs = [vector(f"y{i}", 3) for i in range(4)]
    F = sp.Matrix.vstack(*field(xs, [(-beta * sp.eye(3), None)]))
    var = [c for y in xs for c in y]
    at = {c: Y[i][k] for i, y in enumerate(xs) for k, c in enumerate(y)}
    B = sp.Symbol("B", positive=True)

    def powers(e: sp.Expr) -> sp.Expr:
        e = sp.powsimp(sp.expand(e.xreplace(at)))
        return sp.cancel(e.replace(lambda x: isinstance(x, sp.exp), lambda x: B ** sp.nsimplify(3 * sp.expand(x.args[0]) / beta)))

    J = F.jacobian(var).applyfunc(powers)
    frames = []
    for i, y in enumerate(Y):
        a = sp.Matrix([1, -1, 0]) if i < 2 else sp.Matrix([1, 1, 0])
        a = a - _dot(a, y) * y
        c = y.cross(a)
        for w in (a / a.norm(), c / c.norm()):
            col = sp.zeros(12, 1)
            col[3 * i:3 * i + 3, 0] = w
            frames.append(col)
    Fr = sp.Matrix.hstack(*frames)
    return (Fr.T * J * Fr).applyfunc(sp.cancel), B


@lru_cache(maxsize=1)
def tetrahedron_proofs() -> tuple[Proof, ...]:
    r"""Power sums :math:`\operatorname{tr}M^k=2\lambda_E^k+3\lambda_T^k` (:math:`k=1,2,3`) of the tangent
    Jacobian against the closed form. The group :math:`T_d` acts on the tangent space as
    :math:`T_1\oplus E\oplus T_2` (each once; :math:`T_1` the rotations, in the kernel), so by Schur's
    lemma :math:`M` is a scalar on each block and these three power sums fix the two scalars. Slow."""
    M, B = tetrahedron_tangent_jacobian()
    lam = {k: v.subs(sp.exp(-sp.Rational(4, 3) * beta), B**-4) for k, v in tetrahedron_spectrum().items()}
    out = []
    Mk = sp.eye(8)
    for k in (1, 2, 3):
        Mk = (Mk * M).applyfunc(sp.cancel)
        out.append(Proof(f"trace_M{k}", rf"\operatorname{{tr}}M^{k}=2\lambda_E^{k}+3\lambda_T^{k}",
                         _zero(Mk.trace() - 2 * lam["E"] ** k - 3 * lam["T"] ** k)))
    out.append(Proof("threshold", r"\lambda_T<0\iff\beta>3/2\ (\lambda_E<0\iff\beta>0)",
                     _zero(sp.solve(sp.Eq(tetrahedron_spectrum()["T"], 0), beta)[0] - TETRAHEDRON_THRESHOLD)))
    return tuple(out)


def all_proofs(slow: bool = False) -> list[Proof]:
    """Every identity above (the tetrahedron power sums only with ``slow``)."""
    out = [*theorem_3_2_proofs(), *theorem_4_1_proofs(), *lemma_5_1_proofs(), *lemma_6_1_proofs(), *two_token_proofs()]
    if slow:
        out += list(tetrahedron_proofs())
    return out
