r"""The Gaussian Transformer, symbolically (gaussian paper, Prop. 2.1, eqs. (2), (6), (7)).

Particle field with identity activation, eq. (2)/(4):

.. math::

    \Gamma[\rho](x) = A x + b + \frac{\int e^{y^\top B x}\, V y\, d\rho(y)}{\int e^{y^\top B x}\, d\rho(y)} .

For :math:`\rho=\mathcal N(\mu,\Sigma)` the attention term is affine, eq. (6):
:math:`\mathcal A[\rho](x)=V(\mu+\Sigma B x)`, and the moments obey eq. (7):

.. math::

    \dot\mu = (A+V+V\Sigma B)\mu + b,\qquad
    \dot\Sigma = A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top
              = M\Sigma+\Sigma M^\top,\quad M=A+V\Sigma B .

Everything here is a ``MatrixSymbol`` expression of symbolic size :math:`d`, so derivation cost
does not grow with :math:`d`. :func:`proofs` returns each step as an identity whose difference
normalises to zero; :func:`scalarised_proofs` re-derives the same facts entry by entry for
small :math:`d` as an independent cross-check.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from . import codegen
from .matrix import (
    IdentityProof,
    Poly,
    Relations,
    check_all,
    coefficient,
    gaussian_expectation,
    normal_form,
    poly_to_expr,
)

d = sp.Symbol("d", integer=True, positive=True)
A, B, V = (sp.MatrixSymbol(n, d, d) for n in ("A", "B", "V"))
Sigma = sp.MatrixSymbol("Sigma", d, d)
P = sp.MatrixSymbol("P", d, d)  # P = Sigma^{-1} where Sigma is invertible
Sigma0 = sp.MatrixSymbol("Sigma_0", d, d)
Psi = sp.MatrixSymbol("Psi", d, d)
Delta = sp.MatrixSymbol("Delta", d, d)
mu, b, x, y, xi = (sp.MatrixSymbol(n, d, 1) for n in ("mu", "b", "x", "y", "xi"))
eps = sp.Symbol("epsilon")

SYMMETRIC = Relations(symmetric=(Sigma, Sigma0, P, Delta), inverses=((P, Sigma),))


def congruence_matrix() -> sp.MatrixExpr:
    r""":math:`M = A + V\Sigma B`, the matrix of the affine particle field (Lemma 3.1)."""
    return A + V * Sigma * B


def attention_gaussian() -> sp.MatrixExpr:
    r"""Attention under :math:`\mathcal N(\mu,\Sigma)`, eq. (6): :math:`V(\mu+\Sigma B x)`."""
    return V * (mu + Sigma * B * x)


def particle_field() -> sp.MatrixExpr:
    r"""Mean-field velocity with identity activation: :math:`Ax+b+V(\mu+\Sigma Bx)`."""
    return A * x + b + attention_gaussian()


def mean_field() -> sp.MatrixExpr:
    r""":math:`\dot\mu=(A+V+V\Sigma B)\mu+b`, eq. (7)."""
    return (A + V + V * Sigma * B) * mu + b


def covariance_field(S: sp.MatrixExpr = Sigma) -> sp.MatrixExpr:
    r""":math:`F(\Sigma)=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`, eq. (7)."""
    return A * S + S * A.T + V * S * B * S + S * B.T * S * V.T


@lru_cache(maxsize=1)
def frechet_derivative() -> Poly:
    r"""Derive :math:`DF_\Sigma[\Delta]` as the :math:`\epsilon^1` part of :math:`F(\Sigma+\epsilon\Delta)`.

    Returns the normal form; it equals
    :math:`M\Delta+\Delta M^\top+V\Delta B\Sigma+\Sigma B^\top\Delta V^\top`.
    """
    return coefficient(normal_form(covariance_field(Sigma + eps * Delta), SYMMETRIC), eps, 1)


def linearisation() -> sp.MatrixExpr:
    """The Fréchet derivative :math:`DF_\\Sigma[\\Delta]` as a matrix expression."""
    return poly_to_expr(frechet_derivative(), (d, d))


def _moment_rhs() -> tuple[sp.MatrixExpr, sp.MatrixExpr]:
    """Moment closure from eq. (8): d/dt E[phi] = E[grad phi . Gamma] with phi = x, x x^T."""
    gamma = particle_field()
    mean_rate = poly_to_expr(gaussian_expectation(gamma, x, mu, Sigma, SYMMETRIC), (d, 1))
    second_rate = poly_to_expr(
        gaussian_expectation(gamma * x.T + x * gamma.T, x, mu, Sigma, SYMMETRIC), (d, d)
    )
    # Sigma = E[x x^T] - mu mu^T, so Sigma' = M2' - mu' mu^T - mu mu'^T.
    cov_rate = second_rate - mean_rate * mu.T - mu * mean_rate.T
    return mean_rate, cov_rate


def proofs() -> list[IdentityProof]:
    r"""Every identity behind Prop. 2.1 and Lemma 3.1, checked at the matrix level.

    The normal forms do not depend on any data, so they are computed once per process (every
    ``verify gaussian`` reports them: 0.7 s each time otherwise); the list is a fresh copy.

    Returns
    -------
    list of IdentityProof
        Each with an empty residual when proved.
    """
    return list(_proofs())


@lru_cache(maxsize=None)
def _proofs() -> tuple[IdentityProof, ...]:
    m = mu + Sigma * xi
    log_density = lambda c: -sp.Rational(1, 2) * (y - c).T * P * (y - c)  # noqa: E731
    tilt_lhs = log_density(mu) + xi.T * y
    tilt_rhs = log_density(m) + mu.T * xi + sp.Rational(1, 2) * xi.T * Sigma * xi
    mean_rate, cov_rate = _moment_rhs()
    Mmat = congruence_matrix()
    dpsi = Mmat * Psi  # Psi' = M Psi
    transport = Psi * Sigma0 * Psi.T
    rel_psi = Relations(symmetric=(Sigma0,))
    quad = V * Delta * B * Delta + Delta * B.T * Delta * V.T
    return tuple(check_all(
        [
            IdentityProof(
                "exponential_tilting",
                r"-\tfrac12(y-\mu)^\top\Sigma^{-1}(y-\mu)+\xi^\top y = "
                r"-\tfrac12(y-\mu-\Sigma\xi)^\top\Sigma^{-1}(y-\mu-\Sigma\xi)+\mu^\top\xi+\tfrac12\xi^\top\Sigma\xi",
                tilt_lhs,
                tilt_rhs,
                SYMMETRIC,
            ),
            IdentityProof(
                "gaussian_attention_affine",
                r"V\,\mathbb E_{\text{tilted}}[y]\,\text{at}\ \xi=Bx = V(\mu+\Sigma Bx)",
                V * m.subs(xi, B * x),
                attention_gaussian(),
                SYMMETRIC,
            ),
            IdentityProof(
                "mean_equation",
                r"\mathbb E[\Gamma(x)] = (A+V+V\Sigma B)\mu+b",
                mean_rate,
                mean_field(),
                SYMMETRIC,
            ),
            IdentityProof(
                "covariance_equation",
                r"\dot M_2-\dot\mu\mu^\top-\mu\dot\mu^\top = "
                r"A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top",
                cov_rate,
                covariance_field(),
                SYMMETRIC,
            ),
            IdentityProof(
                "symmetry_preserved",
                r"F(\Sigma)^\top = F(\Sigma)",
                covariance_field().T,
                covariance_field(),
                SYMMETRIC,
            ),
            IdentityProof(
                "congruence_form",
                r"F(\Sigma) = M\Sigma+\Sigma M^\top,\ M=A+V\Sigma B",
                covariance_field(),
                Mmat * Sigma + Sigma * Mmat.T,
                SYMMETRIC,
            ),
            IdentityProof(
                "transport_solves_lyapunov",
                r"\tfrac{d}{dt}(\Psi\Sigma_0\Psi^\top) = M(\Psi\Sigma_0\Psi^\top)+(\Psi\Sigma_0\Psi^\top)M^\top"
                r"\ \text{when}\ \dot\Psi=M\Psi",
                dpsi * Sigma0 * Psi.T + Psi * Sigma0 * dpsi.T,
                Mmat * transport + transport * Mmat.T,
                rel_psi,
            ),
            IdentityProof(
                "quadratic_expansion_exact",
                r"F(\Sigma+\Delta)-F(\Sigma) = DF_\Sigma[\Delta]+V\Delta B\Delta+\Delta B^\top\Delta V^\top",
                covariance_field(Sigma + Delta) - covariance_field(),
                linearisation() + quad,
                SYMMETRIC,
            ),
            IdentityProof(
                "frechet_derivative_form",
                r"DF_\Sigma[\Delta] = M\Delta+\Delta M^\top+V\Delta B\Sigma+\Sigma B^\top\Delta V^\top",
                linearisation(),
                Mmat * Delta + Delta * Mmat.T + V * Delta * B * Sigma + Sigma * B.T * Delta * V.T,
                SYMMETRIC,
            ),
        ]
    ))


# ---------------------------------------------------------------------------------------
# Reductions of eq. (7) for low-rank parameters (flowcert.numeric.gaussian.reduction)
# ---------------------------------------------------------------------------------------

r, k = sp.Symbol("r", integer=True, positive=True), sp.Symbol("k", integer=True, positive=True)
Vl, Vr, Bl, Br = (sp.MatrixSymbol(n, d, r) for n in ("V_l", "V_r", "B_l", "B_r"))
H = sp.MatrixSymbol("H", r, r)
w = sp.MatrixSymbol("w", r, 1)
Q1, Q2 = sp.MatrixSymbol("Q_1", d, k), sp.MatrixSymbol("Q_2", d, d - k)
A1, B1, V1, S1 = (sp.MatrixSymbol(n, k, k) for n in ("A_1", "B_1", "V_1", "S_1"))
S2 = sp.MatrixSymbol("S_2", d - k, d - k)
m1, b1 = sp.MatrixSymbol("m_1", k, 1), sp.MatrixSymbol("b_1", k, 1)
m2, b2 = sp.MatrixSymbol("m_2", d - k, 1), sp.MatrixSymbol("b_2", d - k, 1)


def _orthonormal(poly: Poly, columns: tuple[sp.MatrixSymbol, ...]) -> Poly:
    r"""``poly`` modulo :math:`Q_i^\top Q_i=I`, :math:`Q_i^\top Q_j=0` (:math:`i\ne j`) for the blocks of
    an orthogonal matrix :math:`[Q_1\ Q_2]`: a word with :math:`Q_i^\top Q_j` is dropped, :math:`Q_i^\top Q_i`
    is deleted (repeatedly, as the word shortens). Both are equalities under that hypothesis, so a
    residual that vanishes after the rewriting proves the identity for every orthogonal split."""
    out: Poly = {}
    for chain, coeff in poly.items():
        word: list[sp.MatrixExpr] = []
        for atom in chain:
            prev = word[-1] if word else None
            if isinstance(prev, sp.Transpose) and prev.arg in columns and atom in columns:
                if prev.arg != atom:
                    word = None  # type: ignore[assignment]
                    break
                word.pop()
                continue
            word.append(atom)
        if word is not None:
            key = tuple(word)
            out[key] = sp.expand(out.get(key, 0) + coeff)
    return {c: v for c, v in out.items() if v != 0}


def _field(A_: sp.MatrixExpr, B_: sp.MatrixExpr, V_: sp.MatrixExpr, S: sp.MatrixExpr) -> sp.MatrixExpr:
    return A_ * S + S * A_.T + V_ * S * B_ * S + S * B_.T * S * V_.T


@lru_cache(maxsize=None)
def reduction_proofs() -> tuple[IdentityProof, ...]:
    r"""The two reductions of eq. (7) that :mod:`flowcert.numeric.gaussian.reduction` integrates, proved
    at the matrix level (symbolic :math:`d`, :math:`k`, :math:`r`; each residual must be empty).

    *Invariant subspace.* :math:`[Q_1\ Q_2]` orthogonal, :math:`A=Q_1A_1Q_1^\top` (so for :math:`B,V`),
    :math:`\Sigma=Q_1S_1Q_1^\top+Q_2S_2Q_2^\top`, :math:`\mu=Q_1m_1+Q_2m_2`, :math:`b=Q_1b_1+Q_2b_2`:

    .. math::

        F(\Sigma)=Q_1F_k(S_1)Q_1^\top,\qquad (A+V+V\Sigma B)\mu+b=Q_1\big((A_1+V_1+V_1S_1B_1)m_1+b_1\big)+Q_2b_2,

    :math:`F_k` the field of eq. (7) in dimension :math:`k`: the block :math:`S_1` solves eq. (7) for
    :math:`(A_1,B_1,V_1,b_1)`, :math:`\dot S_2=0`, the off-diagonal block stays 0 and :math:`\dot m_2=b_2`.

    *Factored transport* (:math:`A=0`, :math:`V=V_lV_r^\top`, :math:`B=B_lB_r^\top`, :math:`\Psi=I+V_lHB_r^\top`,
    :math:`\Sigma=\Psi\Sigma_0\Psi^\top`, :math:`G=V_r^\top\Sigma B_l`, :math:`Q=B_r^\top V_l`):
    :math:`\dot H=G(I+QH)` gives :math:`V_l\dot HB_r^\top=V\Sigma B\Psi` (the transport of Lemma 3.1,
    so :math:`\Sigma` solves eq. (7) by ``transport_solves_lyapunov``); :math:`G` in the :math:`r\times r`
    constants :math:`C_1..C_4,P,R` of ``FACTORED_DOC``; :math:`\Sigma=\Sigma_0+NK+K^\top N^\top+NC_4N^\top`
    (:math:`N=V_lH`, :math:`K=B_r^\top\Sigma_0`); and the mean :math:`\mu=\mu_0+tb+V_lw`,
    :math:`\dot w=V_r^\top\mu+GB_r^\top\mu` solves :math:`\dot\mu=(V+V\Sigma B)\mu+b`.
    """
    Vf, Bf = Vl * Vr.T, Bl * Br.T
    Ir = sp.Identity(r)
    Psi_f = sp.Identity(d) + Vl * H * Br.T
    Sig_f = Psi_f * Sigma0 * Psi_f.T
    G = Vr.T * Sig_f * Bl
    P_, Q_, R_ = Vr.T * Vl, Br.T * Vl, Vl.T * Bl
    C1, C2, C3, C4 = Vr.T * Sigma0 * Bl, Br.T * Sigma0 * Bl, Vr.T * Sigma0 * Br, Br.T * Sigma0 * Br
    N, K = Vl * H, Br.T * Sigma0
    wdot = Vr.T * mu + G * Br.T * mu  # mu stands for mu_0 + t b + V_l w at time t
    sym0 = Relations(symmetric=(Sigma0,))
    factored = check_all([
        IdentityProof("factored_transport", r"V_l\dot HB_r^\top=V\Sigma B\Psi\ \text{for}\ \dot H=G(I+QH)",
                      Vl * (G * (Ir + Q_ * H)) * Br.T, Vf * Sig_f * Bf * Psi_f, sym0),
        IdentityProof("factored_G", r"V_r^\top\Sigma B_l=(C_1+PHC_2)+(C_3+PHC_4)H^\top R",
                      G, (C1 + P_ * H * C2) + (C3 + P_ * H * C4) * H.T * R_, sym0),
        IdentityProof("factored_sigma", r"\Psi\Sigma_0\Psi^\top=\Sigma_0+NK+K^\top N^\top+NC_4N^\top",
                      Sig_f, Sigma0 + N * K + K.T * N.T + N * C4 * N.T, sym0),
        IdentityProof("factored_mean", r"b+V_l\dot w=(V+V\Sigma B)\mu+b",
                      b + Vl * wdot, (Vf + Vf * Sig_f * Bf) * mu + b, sym0),
    ])
    cols = (Q1, Q2)
    A_, B_, V_ = Q1 * A1 * Q1.T, Q1 * B1 * Q1.T, Q1 * V1 * Q1.T
    Sig = Q1 * S1 * Q1.T + Q2 * S2 * Q2.T
    m = Q1 * m1 + Q2 * m2
    b_ = Q1 * b1 + Q2 * b2
    block = [
        IdentityProof("invariant_block_covariance", r"F(\Sigma)=Q_1F_k(S_1)Q_1^\top",
                      _field(A_, B_, V_, Sig), Q1 * _field(A1, B1, V1, S1) * Q1.T),
        IdentityProof("invariant_block_mean", r"(A+V+V\Sigma B)\mu+b=Q_1((A_1+V_1+V_1S_1B_1)m_1+b_1)+Q_2b_2",
                      (A_ + V_ + V_ * Sig * B_) * m + b_, Q1 * ((A1 + V1 + V1 * S1 * B1) * m1 + b1) + Q2 * b2),
    ]
    for pr in block:
        pr.residual = _orthonormal(normal_form(pr.lhs - pr.rhs, pr.relations), cols)
    return tuple(factored) + tuple(block)


# ---------------------------------------------------------------------------------------
# Scalarised cross-check for small d
# ---------------------------------------------------------------------------------------


def _entries(name: str, n: int, m: int, symmetric: bool = False) -> sp.Matrix:
    if symmetric:
        return sp.Matrix(n, n, lambda i, j: sp.Symbol(f"{name}_{min(i, j)}{max(i, j)}", real=True))
    return sp.Matrix(n, m, lambda i, j: sp.Symbol(f"{name}_{i}{j}", real=True))


def scalarised_proofs(dim: int) -> dict[str, bool]:
    r"""Re-derive Prop. 2.1 entry by entry for a concrete ``dim`` (independent of the matrix form).

    Checks (i) completing the square with :math:`\Sigma^{-1}` computed explicitly,
    (ii) the mean and covariance equations by Gaussian moments
    :math:`\mathbb E z_i=0,\ \mathbb E z_iz_j=\Sigma_{ij}`.
    """
    Am, Bm, Vm = (_entries(n, dim, dim) for n in ("a", "b", "v"))
    S = _entries("s", dim, dim, symmetric=True)
    m, bv, yv, xv, zv = (_entries(n, dim, 1) for n in ("m", "c", "y", "x", "z"))
    Si = S.inv()
    tilt = (
        (-(yv - m).T * Si * (yv - m) / 2 + (xv.T * yv))
        - (-(yv - m - S * xv).T * Si * (yv - m - S * xv) / 2 + m.T * xv + xv.T * S * xv / 2)
    )[0, 0]
    ok_tilt = sp.simplify(sp.together(tilt)) == 0

    def expect(expr: sp.Expr) -> sp.Expr:
        expr = sp.expand(expr.subs({zv[i]: zv[i] for i in range(dim)}))
        poly = sp.Poly(expr, *zv)
        total = sp.Integer(0)
        for monom, c in poly.terms():
            if sum(monom) == 0:
                total += c
            elif sum(monom) == 2:
                idx = [i for i, k in enumerate(monom) for _ in range(k)]
                total += c * S[idx[0], idx[1]]
            elif sum(monom) > 2:
                raise NotImplementedError
        return sp.expand(total)

    xpt = m + zv
    gamma = Am * xpt + bv + Vm * (m + S * Bm * xpt)
    mean_rate = gamma.applyfunc(expect)
    second = (gamma * xpt.T + xpt * gamma.T).applyfunc(expect)
    cov_rate = second - mean_rate * m.T - m * mean_rate.T
    mean_claim = (Am + Vm + Vm * S * Bm) * m + bv
    cov_claim = Am * S + S * Am.T + Vm * S * Bm * S + S * Bm.T * S * Vm.T
    return {
        "exponential_tilting": bool(ok_tilt),
        "mean_equation": (mean_rate - mean_claim).applyfunc(sp.expand).is_zero_matrix is True,
        "covariance_equation": (cov_rate - cov_claim).applyfunc(sp.expand).is_zero_matrix is True,
    }


def gaussian_mgf_1d() -> bool:
    r"""For :math:`d=1`, integrate :math:`\int e^{\xi y}\mathcal N(y;\mu,s)\,dy` and compare with
    :math:`e^{\mu\xi+s\xi^2/2}` (the cumulant generating function behind eq. (6))."""
    yy, xs, mm = sp.symbols("y xi mu", real=True)
    s = sp.Symbol("s", positive=True)
    dens = sp.exp(-((yy - mm) ** 2) / (2 * s)) / sp.sqrt(2 * sp.pi * s)
    mgf = sp.integrate(sp.exp(xs * yy) * dens, (yy, -sp.oo, sp.oo), conds="none")
    return sp.simplify(mgf - sp.exp(mm * xs + s * xs**2 / 2)) == 0


def equilibria_exact(A: sp.Matrix, B: sp.Matrix, V: sp.Matrix) -> list[sp.Matrix] | None:
    r"""All real symmetric solutions of eq. (18) for rational data, by a Gröbner basis.

    Returns None when the solution set is not finite (positive-dimensional variety) or SymPy
    cannot isolate the roots. Intended for :math:`d\le2` (3 unknowns, quadratic equations).
    """
    dim = A.rows
    S = _entries("s", dim, dim, symmetric=True)
    unknowns = sorted(S.free_symbols, key=str)
    F = A * S + S * A.T + V * S * B * S + S * B.T * S * V.T
    eqs = [sp.expand(F[i, j]) for i in range(dim) for j in range(i, dim)]
    G = sp.groebner(eqs, *unknowns, order="lex")
    if not G.is_zero_dimensional:
        return None
    sols = sp.solve_poly_system(list(G.exprs), *unknowns)
    if sols is None:
        return None
    out = []
    for sol in sols:
        if all(v.is_real for v in sol):
            out.append(S.subs(dict(zip(unknowns, sol))))
    return out


# ---- the moment programs: the IR that numeric (numpy, C) and gpu (torch) kernels print ----


@lru_cache(maxsize=None)
def moment_program() -> codegen.Program:
    """IR of eq. (7), lowered once from the symbolic model."""
    return codegen.lower(
        "moment_field",
        [("mu_dot", mean_field()), ("Sigma_dot", covariance_field())],
        [A, B, V, b, mu, Sigma],
        SYMMETRIC,
        doc="Gaussian Transformer moment field, eq. (7); batched over leading axes.",
    )


@lru_cache(maxsize=None)
def linearisation_program() -> codegen.Program:
    """IR of the Fréchet derivative of the covariance field."""
    return codegen.lower(
        "covariance_linearisation",
        [("dF", linearisation())],
        [A, B, V, Sigma, Delta],
        SYMMETRIC,
        doc="DF_Sigma[Delta] of the covariance field; batched over leading axes.",
    )
