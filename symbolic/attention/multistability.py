r"""Symbolic derivations of the multistability paper (Altafini; note 001), proved in SymPy.

* **Lemma 1** (Oja flow (2)): with :math:`W=\tfrac12(\lambda_1-x^\top Vx)`, along
  :math:`\dot x=(I-xx^\top)Vx` the polynomial identity

  .. math:: \dot W + \|(I-xx^\top)Vx\|^2 = -(x^\top Vx)^2\,(1-x^\top x)

  holds for every :math:`x\in\mathbb R^d` (symmetric :math:`V`), so on the sphere
  :math:`\dot W=-\|(I-xx^\top)Vx\|^2\le0`.
* **Lemma 5** (multiagent Oja (5), corrected normalisation :math:`W=\tfrac12(\lambda_1-\bar x^\top V\bar x)`):

  .. math:: \dot W + \tfrac1n\sum_i\|\dot x_i\|^2 = -\tfrac1n\sum_i (x_i^\top y)^2(1-\|x_i\|^2),\qquad y=V\bar x.

* **Oja Jacobian** at :math:`e_k` with :math:`V=\operatorname{diag}(\lambda)`: ambient
  :math:`\operatorname{diag}(\lambda_j-\lambda_k)` with :math:`-2\lambda_k` at entry :math:`k`.
* **Bipartite blocks** (Lemma 10 / D1): with :math:`\alpha_{1,2}=e^{\pm a}`,
  :math:`\beta_1=n_1\alpha_1+n_2\alpha_2`, :math:`\beta_2=n_1\alpha_2+n_2\alpha_1`,
  :math:`\delta_1=(n_1\alpha_1-n_2\alpha_2)/\beta_1`, :math:`\delta_2=(n_2\alpha_1-n_1\alpha_2)/\beta_2`,
  :math:`A_2=\begin{bmatrix}n_1\alpha_1/\beta_1&n_2\alpha_2/\beta_1\\n_1\alpha_2/\beta_2&n_2\alpha_1/\beta_2\end{bmatrix}`,
  :math:`J_j=\lambda_jA_2-\lambda_k\operatorname{diag}(\delta_1,\delta_2)`:
  :math:`\delta_\ell=2(A_2)_{\ell\ell}-1`, :math:`D=\det A_2=n_1n_2(\alpha_1^2-\alpha_2^2)/(\beta_1\beta_2)`,
  :math:`\operatorname{tr}J_j=\lambda_j(1+D)-2\lambda_kD`,
  :math:`\det J_j=D(\lambda_j-\lambda_k)(\lambda_j-\lambda^*)`, :math:`\lambda^*=\lambda_k\delta_1\delta_2/D`;
  equal split: :math:`\delta_1=\delta_2=D=\tanh a`, eigenvalues :math:`\lambda_j-\tanh(a)\lambda_k`
  and :math:`\tanh(a)(\lambda_j-\lambda_k)` (D2).
* **Theorem 2, corrected inequality (9)**: the first line is
  :math:`\operatorname{tr}J_j\cdot\beta_1\beta_2/(2n_1n_2\alpha_1^2)` and the second is
  :math:`\det J_j`; the printed signs are wrong (note 001 §3).

Public API: :func:`oja_lyapunov_identity`, :func:`multiagent_lyapunov_identity`,
:func:`oja_jacobian_at_eigenvector`, :func:`bipartite_identities`, :func:`theorem2_conditions`,
:func:`symbolic_jacobian`. Each ``*_identity``/``*_identities`` returns residuals that SymPy
simplifies to 0 (the proof).
"""

from __future__ import annotations

import sympy as sp

from .field import explicit_field


def _sym_matrix(name: str, d: int) -> sp.Matrix:
    return sp.Matrix(d, d, lambda i, j: sp.Symbol(f"{name}_{min(i, j)}_{max(i, j)}", real=True))


def oja_lyapunov_identity(d: int = 3) -> dict[str, sp.Expr]:
    """``Wdot``, ``rhs`` :math:`=-\\|(I-xx^\\top)Vx\\|^2` and the residual
    :math:`\\dot W-\\text{rhs}+(x^\\top Vx)^2(1-x^\\top x)` (expands to 0) for symmetric symbolic V."""
    V = _sym_matrix("v", d)
    x = sp.Matrix(sp.symbols(f"x0:{d}", real=True))
    R = (x.T * V * x)[0]
    xdot = V * x - x * R
    Wdot = -(x.T * V * xdot)[0]  # W = (lambda_1 - x^T V x)/2, V symmetric
    rhs = -(xdot.T * xdot)[0]
    residual = sp.expand(Wdot - rhs + R**2 * (1 - (x.T * x)[0]))
    return {"Wdot": Wdot, "rhs": rhs, "residual": residual}


def multiagent_lyapunov_identity(n: int = 3, d: int = 2) -> dict[str, sp.Expr]:
    """Lemma 5 residual :math:`\\dot W+\\frac1n\\sum\\|\\dot x_i\\|^2+\\frac1n\\sum(x_i^\\top y)^2(1-\\|x_i\\|^2)`
    (expands to 0)."""
    V = _sym_matrix("v", d)
    xs = [sp.Matrix(sp.symbols(f"x{i}_0:{d}", real=True)) for i in range(n)]
    xbar = sum(xs, sp.zeros(d, 1)) / n
    y = V * xbar
    xdots = [y - xi * (xi.T * y)[0] for xi in xs]
    xbardot = sum(xdots, sp.zeros(d, 1)) / n
    Wdot = -(xbar.T * V * xbardot)[0]
    speed = sum((xd.T * xd)[0] for xd in xdots) / n
    normal = sum((xi.T * y)[0] ** 2 * (1 - (xi.T * xi)[0]) for xi in xs) / n
    return {"Wdot": Wdot, "rhs": -speed, "residual": sp.expand(Wdot + speed + normal)}


def oja_jacobian_at_eigenvector(d: int = 3, k: int = 0) -> tuple[sp.Matrix, sp.Matrix]:
    """(Jacobian of :math:`Vx-x\\,x^\\top Vx` at :math:`e_k` for :math:`V=\\operatorname{diag}(\\lambda)`,
    the predicted diagonal) — equal as matrices."""
    lam = sp.symbols(f"lambda1:{d + 1}", real=True)
    V = sp.diag(*lam)
    x = sp.Matrix(sp.symbols(f"x0:{d}", real=True))
    f = V * x - x * (x.T * V * x)[0]
    J = f.jacobian(x).subs({x[i]: (1 if i == k else 0) for i in range(d)})
    pred = sp.diag(*[(-2 * lam[k]) if j == k else lam[j] - lam[k] for j in range(d)])
    return J, pred


def _bipartite_symbols() -> dict[str, sp.Expr]:
    """Symbols with :math:`p=e^{a}>0` (so every identity is rational in :math:`p` and
    :math:`\tanh a=(p^2-1)/(p^2+1)`)."""
    a = sp.Symbol("p", positive=True)
    n1, n2 = sp.symbols("n1 n2", positive=True)
    lj, lk = sp.symbols("lambda_j lambda_k", real=True)
    al1, al2 = a, 1 / a
    b1, b2 = n1 * al1 + n2 * al2, n1 * al2 + n2 * al1
    d1, d2 = (n1 * al1 - n2 * al2) / b1, (n2 * al1 - n1 * al2) / b2
    A2 = sp.Matrix([[n1 * al1 / b1, n2 * al2 / b1], [n1 * al2 / b2, n2 * al1 / b2]])
    J = lj * A2 - lk * sp.diag(d1, d2)
    return dict(a=a, n1=n1, n2=n2, lj=lj, lk=lk, al1=al1, al2=al2, b1=b1, b2=b2, d1=d1, d2=d2, A2=A2, J=J)


def bipartite_identities() -> dict[str, sp.Expr]:
    """Residuals of the D1/D2 identities and of Lemma 10's entries (each simplifies to 0)."""
    s = _bipartite_symbols()
    A2, J, d1, d2, lj, lk = s["A2"], s["J"], s["d1"], s["d2"], s["lj"], s["lk"]
    D = A2.det()
    Dform = s["n1"] * s["n2"] * (s["al1"] ** 2 - s["al2"] ** 2) / (s["b1"] * s["b2"])
    lstar = lk * d1 * d2 / D
    out = {
        "delta1 = 2 A2_11 - 1": d1 - (2 * A2[0, 0] - 1),
        "delta2 = 2 A2_22 - 1": d2 - (2 * A2[1, 1] - 1),
        "det A2 = n1 n2 (alpha1^2 - alpha2^2)/(beta1 beta2)": D - Dform,
        "tr A2 = 1 + D": A2.trace() - (1 + D),
        "delta1 + delta2 = 2D": d1 + d2 - 2 * D,
        "tr J = lambda_j (1 + D) - 2 lambda_k D": J.trace() - (lj * (1 + D) - 2 * lk * D),
        "det J = D (lambda_j - lambda_k)(lambda_j - lambda*)": J.det() - D * (lj - lk) * (lj - lstar),
        "Lemma 10 entries a_j, b_j, c_j, d_j": sum(e**2 for e in (J - sp.Matrix([
            [-d1 * lk + lj * s["n1"] * s["al1"] / s["b1"], lj * s["n2"] * s["al2"] / s["b1"]],
            [lj * s["n1"] * s["al2"] / s["b2"], -d2 * lk + lj * s["n2"] * s["al1"] / s["b2"]]]))),
    }
    half = {s["n2"]: s["n1"]}
    t = (s["a"] ** 2 - 1) / (s["a"] ** 2 + 1)  # tanh(a) with p = e^a
    Jh = J.subs(half)
    out["equal split: delta = D = tanh a"] = (d1.subs(half) - t) ** 2 + (d2.subs(half) - t) ** 2 + (D.subs(half) - t) ** 2
    mu = sp.Symbol("mu")
    out["equal split: eigenvalues lambda_j - t lambda_k, t (lambda_j - lambda_k)"] = (
        Jh.charpoly(mu).as_expr() - sp.expand((mu - (lj - t * lk)) * (mu - t * (lj - lk))))
    return {name: sp.cancel(sp.together(expr)) for name, expr in out.items()}


def theorem2_conditions() -> dict[str, sp.Expr]:
    """Corrected (9) as expressions of ``p = e^a, n1, n2, lambda_j, lambda_k`` (stable iff
    ``trace_condition < 0`` and ``det_condition > 0``), the printed ones, and the residuals of the
    corrected forms against trace/determinant (0)."""
    s = _bipartite_symbols()
    al1, al2, n1, n2, b1, b2, d1, d2, lj, lk, J = (s[k] for k in ("al1", "al2", "n1", "n2", "b1", "b2", "d1", "d2", "lj", "lk", "J"))
    tr_c = (1 + al2 * (n1**2 + n2**2) / (2 * al1 * n1 * n2)) * lj - (1 - al2**2 / al1**2) * lk
    det_c = d1 * d2 * lk**2 - (d2 * n1 * al1 / b1 + d1 * n2 * al1 / b2) * lj * lk + n1 * n2 / (b1 * b2) * (al1**2 - al2**2) * lj**2
    tr_p = (1 - al2 * (n1**2 + n2**2) / (2 * al1 * n1 * n2)) * lj - (1 - al2**2 / al1**2) * lk
    det_p = d1 * d2 * lk**2 + (d2 * n1 * al1 / b1 + d1 * n2 * al1 / b2) * lj * lk + n1 * n2 / (b1 * b2) * (al2**2 - al1**2) * lj**2
    res_tr = sp.cancel(sp.together(tr_c - J.trace() * b1 * b2 / (2 * n1 * n2 * al1**2)))
    res_det = sp.cancel(sp.together(det_c - J.det()))
    return {"trace_condition": tr_c, "det_condition": det_c, "printed_trace": tr_p, "printed_det": det_p,
            "trace_residual": res_tr, "det_residual": res_det,
            "symbols": (s["a"], n1, n2, lj, lk)}


def symbolic_jacobian(n_tokens: int, dim: int, variant: str = "self_attention") -> tuple[sp.Matrix, sp.Matrix, sp.Matrix, sp.Matrix]:
    """``(X, M, V, F)``: the ambient Jacobian of the explicit field (``X.ravel()`` order) with
    symbolic tokens ``x_i_k``, score matrix ``m_k_l`` and value matrix ``v_k_l`` (tiny sizes)."""
    Xs = sp.Matrix(n_tokens, dim, lambda i, k: sp.Symbol(f"x_{i}_{k}"))
    M = sp.Matrix(dim, dim, lambda k, l: sp.Symbol(f"m_{k}_{l}"))
    V = sp.Matrix(dim, dim, lambda k, l: sp.Symbol(f"v_{k}_{l}"))
    F = explicit_field(Xs, M, V, variant=variant)
    return Xs, M, V, sp.Matrix(list(F)).jacobian(list(Xs))
