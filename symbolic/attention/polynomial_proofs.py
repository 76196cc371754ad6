r"""The attention papers' parameter-free identities, re-derived in sparse polynomial rings over :math:`\mathbb Q`.

These are the statements of :func:`flowcert.symbolic.attention.consensus.theorem_3_2_proofs`,
:func:`~flowcert.symbolic.attention.consensus.theorem_4_1_proofs`,
:func:`~flowcert.symbolic.attention.consensus.lemma_5_1_proofs`,
:func:`~flowcert.symbolic.attention.consensus.lemma_6_1_proofs`,
:func:`flowcert.symbolic.attention.multistability.oja_lyapunov_identity` and
:func:`~flowcert.symbolic.attention.multistability.multiagent_lyapunov_identity`, at the same sizes,
derived a second time by a different algorithm: every quantity is an element of
:math:`\mathbb Q[x_1,\dots,x_m]` (:mod:`sympy.polys.rings`, a dictionary from exponent vectors to
exact rationals), built with the ring's own addition and multiplication, so that each residual *is*
its normal form and an identity is proved iff every coefficient of its residual is the rational 0.
No simplifier, no floating point and no assumption on the symbols enters the decision.

Identities that hold on spheres only are reduced modulo :math:`|y|^2-1` for each unit vector
:math:`y` by multivariate division in the lex order that puts the last component of every unit
vector first: the leading monomials :math:`y_{d-1}^2` are pairwise coprime, so the relations are a
Gröbner basis and the remainder is zero iff the residual lies in their ideal (then the identity
holds on the product of spheres).

The one non-polynomial step, the gradient of :math:`V_P=-\tfrac12\sum_{ij}e^{y_i^\top Py_j}` in
Theorem 3.2, is the chain rule :math:`\partial e^{s}=e^{s}\partial s` with each exponential named
:math:`E_{ij}=E_{ji}` (the symmetry of :math:`P` makes :math:`s_{ij}=s_{ji}`).

:func:`proofs` returns ``((name, residual), ...)``; :func:`proved` is true iff every residual is zero.
Each computation is run at most once per process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

__all__ = ["IDENTITIES", "proofs", "proved"]

Vec = list  # a list of ring elements (a column vector)


class _Ring:
    """A polynomial ring over QQ in lex order whose generators are declared by name, unit-vector
    last components first (so that :meth:`on_spheres` divides by a Gröbner basis)."""

    def __init__(self, unit: Sequence[tuple[str, int]], vectors: Sequence[tuple[str, int]] = (),
                 symmetric: Sequence[tuple[str, int]] = (), scalars: Sequence[str] = ()) -> None:
        from sympy.polys.domains import QQ
        from sympy.polys.orderings import lex
        from sympy.polys.rings import ring

        names = [f"{v}_{dim - 1}" for v, dim in unit]
        names += [f"{v}_{i}" for v, dim in unit for i in range(dim - 1)]
        names += [f"{v}_{i}" for v, dim in vectors for i in range(dim)]
        names += [f"{m}_{i}{j}" for m, dim in symmetric for i in range(dim) for j in range(i, dim)]
        names += list(scalars)
        if len(set(names)) != len(names):
            raise ValueError("a generator is declared twice")
        self.R, *gens = ring(names, QQ, lex)
        self.g = dict(zip(names, gens))
        self.QQ = QQ
        self.unit = [self.vec(v, dim) for v, dim in unit]

    def __getitem__(self, name: str) -> Any:
        return self.g[name]

    def const(self, p: int, q: int = 1) -> Any:
        return self.R(self.QQ(p, q))

    def vec(self, name: str, dim: int) -> Vec:
        return [self.g[f"{name}_{i}"] for i in range(dim)]

    def sym(self, name: str, dim: int) -> list[list[Any]]:
        return [[self.g[f"{name}_{min(i, j)}{max(i, j)}"] for j in range(dim)] for i in range(dim)]

    def on_spheres(self, e: Any, *vectors: Vec) -> Any:
        """The remainder of ``e`` modulo :math:`|y|^2-1` for each of ``vectors`` (declared unit)."""
        for v in vectors:
            if v not in self.unit:
                raise ValueError("on_spheres needs vectors declared unit")
        return e.rem([dot(v, v) - 1 for v in vectors]) if vectors else e


def dot(a: Vec, b: Vec, W: list[list[Any]] | None = None) -> Any:
    r""":math:`a^\top b` or :math:`a^\top Wb`."""
    if len(a) != len(b):
        raise ValueError("dot of vectors of different sizes")
    wb = b if W is None else matvec(W, b)
    out = 0 * a[0]
    for x, y in zip(a, wb):
        out += x * y
    return out


def matvec(M: list[list[Any]], v: Vec) -> Vec:
    if any(len(row) != len(v) for row in M):
        raise ValueError("matrix-vector sizes differ")
    return [sum((m * x for m, x in zip(row, v)), 0 * v[0]) for row in M]


def add(*vs: Vec) -> Vec:
    return [sum(xs[1:], xs[0]) for xs in zip(*vs, strict=True)]


def scale(c: Any, v: Vec) -> Vec:
    return [c * x for x in v]


def sub(a: Vec, b: Vec) -> Vec:
    return [x - y for x, y in zip(a, b, strict=True)]


def field(Y: Sequence[Vec], weights: Sequence[Sequence[Any]], *, U: list[list[Any]] | None = None,
          W: list[list[Any]] | None = None, causal: bool = False) -> list[Vec]:
    r"""Right-hand side of the consensus paper's (7) with the attention weights given:
    :math:`\dot y_i=\sum_j\alpha_{ij}\big(Uy_j-\langle y_i,Uy_j\rangle_Wy_i\big)` (:math:`j\le i` when causal)."""
    out = []
    for i, yi in enumerate(Y):
        js = range(i + 1) if causal else range(len(Y))
        f = scale(0 * yi[0], yi)
        for j in js:
            Uy = Y[j] if U is None else matvec(U, Y[j])
            f = add(f, scale(weights[i][j], sub(Uy, scale(dot(yi, Uy, W), yi))))
        out.append(f)
    return out


def _theorem_3_2(ell: int = 3, dim: int = 3) -> tuple[tuple[str, Any], ...]:
    ys = [(f"y{i}", dim) for i in range(ell)]
    E = [f"E_{i}{j}" for i in range(ell) for j in range(i, ell)]
    r = _Ring((), ys + [("x", dim), ("y", dim)], [("p", dim)], E + [f"a_{j}" for j in range(ell)])
    P = r.sym("p", dim)
    Y = [r.vec(n, dim) for n, _ in ys]
    Ek = r.sym("E", ell)  # E_ij = E_ji = exp(y_i^T P y_j)
    s = [[dot(Y[i], Y[j], P) for j in range(ell)] for i in range(ell)]
    half = r.const(1, 2)
    # gradient: dV/dy_k = -1/2 sum_ij E_ij ds_ij/dy_k (chain rule), plus P sum_j E_kj y_j, must vanish
    grad = []
    for k in range(ell):
        dV = [-half * sum((Ek[i][j] * s[i][j].diff(c) for i in range(ell) for j in range(ell)), r.const(0))
              for c in Y[k]]
        grad += add(dV, matvec(P, add(*(scale(Ek[k][j], Y[j]) for j in range(ell)))))
    a = [r[f"a_{j}"] for j in range(ell)]
    F = field(Y, [a] * ell, W=P)[0]
    X = add(*(scale(a[j], Y[j]) for j in range(ell)))
    field_form = sub(F, sub(X, scale(dot(Y[0], X, P), Y[0])))
    Xg, y = r.vec("x", dim), r.vec("y", dim)
    c = dot(y, Xg, P)
    u = sub(Xg, scale(c, y))
    v_dot = dot(Xg, u, P) - dot(u, u, P) - c**2 * (1 - dot(y, y, P))
    return (("gradient", grad), ("field_form", field_form), ("V_dot", [v_dot]))


def _theorem_4_1() -> tuple[tuple[str, Any], ...]:
    dim, ell = 3, 3
    ys = [(f"y{i}", dim) for i in range(ell)]
    r = _Ring([("u", 3), ("w", 3)], ys + [("v", dim)], [("w", dim)],
              ["a", "b", "c"] + [f"alpha_{i}{j}" for i in range(ell) for j in range(ell)])
    a, b, c = r["a"], r["b"], r["c"]
    per_term = (c - a * b) - ((c - b) + b * (1 - a))
    yi, yj = r.unit
    cs = r.on_spheres(1 - dot(yi, yj) - dot(sub(yi, yj), sub(yi, yj)) * r.const(1, 2), yi, yj)
    Y = [r.vec(n, dim) for n, _ in ys]
    v = r.vec("v", dim)
    Wm = r.sym("w", dim)
    al = [[r[f"alpha_{i}{j}"] for j in range(ell)] for i in range(ell)]
    F = field(Y, al, W=Wm)
    dini = dot(v, F[0]) - sum((al[0][j] * (dot(v, Y[j]) - dot(Y[0], Y[j], Wm) * dot(v, Y[0])) for j in range(ell)),
                              r.const(0))
    return (("per_term", [per_term]), ("cauchy_schwarz", [cs]), ("dini_terms", [dini]))


def _lemma_5_1(dim: int = 3) -> tuple[tuple[str, Any], ...]:
    al3 = [f"alpha_3{j}" for j in (1, 2, 3)]
    r = _Ring([("u", dim), ("w", dim), ("z", dim)], (), (), ["alpha", "a"] + al3)
    al, A = r["alpha"], r["a"]
    y0, y, yi = r.unit
    ydot = scale(al, sub(y0, scale(dot(y, y0), y)))
    a = dot(y0, y)
    V = r.const(2, 3) - A + A**3 * r.const(1, 3)
    out = [
        ("a_dot", [r.on_spheres(dot(y0, ydot) - al * (1 - a**2), y0, y)]),
        ("V_factor", [V - (A - 1) ** 2 * (A + 2) * r.const(1, 3)]),
        ("V_prime", [V.diff(A) - (A**2 - 1)]),
        ("V_dot", [(A**2 - 1) * al * (1 - A**2) + al * (1 - A**2) ** 2]),
    ]
    y2 = y  # the second token is the unit vector "w", as in the SymPy derivation
    e2 = sub(y2, y0)
    a3 = [r[n] for n in al3]
    one = r.const(1)
    F = field([y0, y2, yi], [[one], [one, one], a3], causal=True)[2]
    ai = dot(y0, yi)
    rhs = (a3[0] + a3[1]) * (1 - ai**2) + a3[1] * dot(e2, sub(y0, scale(ai, yi)))
    out.append(("cascade_19", [r.on_spheres(dot(y0, F) - rhs, y0, y2, yi)]))
    g = sub(y0, scale(ai, yi))
    out.append(("input_gain", [r.on_spheres(dot(g, g) - (1 - ai**2), y0, yi)]))
    return tuple(out)


def _lemma_6_1(dim: int = 3) -> tuple[tuple[str, Any], ...]:
    mus = [f"mu_{k}" for k in range(2, dim + 1)]
    r = _Ring([("w", dim), ("u", dim), ("z", dim)], (), (), ["lambda", "alpha", "alpha_21", "alpha_22"] + mus)
    lam, al = r["lambda"], r["alpha"]
    mu = [r[m] for m in mus]
    zero, one = r.const(0), r.const(1)
    diag = [lam] + mu
    U = [[diag[i] if i == j else zero for j in range(dim)] for i in range(dim)]
    v = [one] + [zero] * (dim - 1)
    y, y1, yi = r.unit
    b = dot(v, y)
    yUy = dot(y, y, U)
    ydot = scale(al, sub(matvec(U, y), scale(yUy, y)))
    out = [("b_dot", [r.on_spheres(dot(v, ydot) - al * (lam - yUy) * b, y)]),
           ("sos", [r.on_spheres(lam - yUy - sum(((lam - m) * y[k + 1] ** 2 for k, m in enumerate(mu)), zero), y)])]
    a2 = [r["alpha_21"], r["alpha_22"]]
    F = field([y1, yi], [[one], a2], U=U, causal=True)[1]
    bi = dot(v, yi)
    e1 = sub(y1, v)
    # g = alpha_21 (lambda v^T - b_i y_i^T U) e_1
    g = a2[0] * (lam * dot(v, e1) - bi * dot(yi, e1, U))
    rhs = a2[0] * lam * (1 - bi**2) + a2[1] * (lam - dot(yi, yi, U)) * bi + g
    out.append(("identity_23", [r.on_spheres(dot(v, F) - rhs, y1, yi)]))
    return tuple(out)


def _oja_lyapunov(d: int = 3) -> tuple[tuple[str, Any], ...]:
    r = _Ring((), [("x", d)], [("v", d)])
    V, x = r.sym("v", d), r.vec("x", d)
    R = dot(x, x, V)
    xdot = sub(matvec(V, x), scale(R, x))
    Wdot = -dot(x, xdot, V)
    rhs = -dot(xdot, xdot)
    return (("residual", [Wdot - rhs + R**2 * (1 - dot(x, x))]),)


def _multiagent_lyapunov(n: int = 3, d: int = 2) -> tuple[tuple[str, Any], ...]:
    r = _Ring((), [(f"x{i}", d) for i in range(n)], [("v", d)])
    V = r.sym("v", d)
    xs = [r.vec(f"x{i}", d) for i in range(n)]
    inv_n = r.const(1, n)
    xbar = scale(inv_n, add(*xs))
    y = matvec(V, xbar)
    xdots = [sub(y, scale(dot(xi, y), xi)) for xi in xs]
    xbardot = scale(inv_n, add(*xdots))
    Wdot = -dot(xbar, xbardot, V)
    speed = inv_n * sum((dot(xd, xd) for xd in xdots), r.const(0))
    normal = inv_n * sum((dot(xi, y) ** 2 * (1 - dot(xi, xi)) for xi in xs), r.const(0))
    return (("residual", [Wdot + speed + normal]),)


#: identity name (as in :mod:`flowcert.certificates.identities`) -> its ring derivation
IDENTITIES: dict[str, Callable[[], tuple[tuple[str, Any], ...]]] = {
    "multistability:oja_lyapunov": _oja_lyapunov,
    "multistability:multiagent_lyapunov": _multiagent_lyapunov,
    "consensus:theorem_3_2": _theorem_3_2,
    "consensus:theorem_4_1": _theorem_4_1,
    "consensus:lemma_5_1": _lemma_5_1,
    "consensus:lemma_6_1": _lemma_6_1,
}


@lru_cache(maxsize=None)
def proofs(name: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``((part, residuals), ...)`` of the registered identity ``name``, each residual a ring element."""
    return tuple((part, tuple(res)) for part, res in IDENTITIES[name]())


def proved(name: str) -> bool:
    """True iff every residual of ``name`` is the zero polynomial (every coefficient exactly 0); a derivation
    with no part, or a part with no residual, proves nothing."""
    parts = proofs(name)
    return bool(parts) and all(res and all(not e for e in res) for _, res in parts)
