r"""Symbolic cells of the ``rnn`` system and their Jacobians :math:`J_z=\partial_zF`, :math:`J_\theta=\partial_\theta F`
(KPFlow paper eq. 8, App. E.4; note §1.6), for small sizes.

Cells (same definitions as :mod:`flowcert.gpu.rnn.cells`):

.. math::

    F_{\text{rnn\_tanh}}=z+\Delta t(-z+W\tanh z+W_{in}x),\qquad
    F_{\text{torch\_rnn}}=\tanh(W_{ih}x+b_{ih}+W_{hh}z+b_{hh}),

the GRU cell, and the Hodgkin–Huxley step :math:`z+\Delta t\,f_{HH}(z)` with the gating rows
:math:`\dot k=\alpha_k(V)(1-k)-\beta_k(V)k`, whose V-derivative is
:math:`\alpha_k'(V)(1-k)-\beta_k'(V)k` — the paper's eq. 85, :math:`-(\alpha_k'+\beta_k')k`, is wrong
(:func:`hh_gating_erratum` proves the difference is not identically zero).

Theorem 1 (eq. 64): for eq. 8, :math:`J_\theta(z,x)J_\theta(z',x')^\top=\Delta t^2(x\cdot x'+\tanh z\cdot\tanh z')I`
(:func:`kernel_factorisation`); for the torch-style cell the outer factor :math:`\operatorname{diag}(1-F^2)`
depends on the state, so no such scalar factorisation exists.

Parameters are flattened in the order of :func:`param_names` (row-major within each matrix); the
names match the torch cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp

HH_CONST = {"g_K": 36.0, "g_Na": 120.0, "g_l": 0.3, "V_K": -77.0, "V_Na": 50.0, "V_l": -54.387,
            "I_app": 10.0, "V_t": -40.0, "K_p": 5.0}


def param_names(kind: str) -> tuple[str, ...]:
    """Order of the trained parameters (torch names)."""
    return {"rnn_tanh": ("W", "W_in"), "torch_rnn": ("W_ih", "b_ih", "W_hh", "b_hh"),
            "gru": ("weight_ih", "weight_hh", "bias_ih", "bias_hh"), "hodgkin_huxley": ("W", "W_in"),
            "linear": ("W_in", "b")}[kind]


def param_shapes(kind: str, H: int, I: int, bias: bool = False) -> dict[str, tuple[int, ...]]:
    """Names and shapes of the trained parameters θ of a cell (N = H/4 neurons for HH); ``bias``: the
    optional trained bias b of the eq. 8 cells (``rnn_tanh``, ``relu_rnn``)."""
    if kind in ("rnn_tanh", "relu_rnn"):
        return {"W": (H, H), "W_in": (H, I), **({"b": (H,)} if bias else {})}
    if kind == "torch_rnn":
        return {"W_ih": (H, I), "b_ih": (H,), "W_hh": (H, H), "b_hh": (H,)}
    if kind == "gru":
        return {"weight_ih": (3 * H, I), "weight_hh": (3 * H, H), "bias_ih": (3 * H,), "bias_hh": (3 * H,)}
    if kind == "hodgkin_huxley":
        N = H // 4
        return {"W": (N, N), "W_in": (N, I)}
    if kind == "linear":
        return {"W_in": (H, I), "b": (H,)}
    raise ValueError(f"unknown cell {kind!r}")


def _mat(name: str, r: int, c: int) -> sp.Matrix:
    return sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{name}_{i}_{j}"))


def _vec(name: str, n: int) -> sp.Matrix:
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"{name}_{i}"))


def _sig(e: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-e))


def hh_rates(V: sp.Expr) -> dict[str, tuple[sp.Expr, sp.Expr]]:
    """Classical squid-axon rates :math:`(\\alpha_k,\\beta_k)` as SymPy expressions."""
    return {
        "m": (sp.Rational(1, 10) * (V + 40) / (1 - sp.exp(-(V + 40) / 10)), 4 * sp.exp(-(V + 65) / 18)),
        "n": (sp.Rational(1, 100) * (V + 55) / (1 - sp.exp(-(V + 55) / 10)), sp.Rational(1, 8) * sp.exp(-(V + 65) / 80)),
        "h": (sp.Rational(7, 100) * sp.exp(-(V + 65) / 20), 1 / (1 + sp.exp(-(V + 35) / 10))),
    }


@dataclass
class SymbolicCell:
    """F(z, x; θ) with its symbols and derived Jacobians.

    Attributes
    ----------
    z, x, theta : sympy.Matrix
        Column vectors of symbols (θ flattened in :func:`param_names` order).
    F : sympy.Matrix
        The step map.
    """

    kind: str
    z: sp.Matrix
    x: sp.Matrix
    theta: sp.Matrix
    F: sp.Matrix
    shapes: dict[str, tuple[int, ...]]

    def J_z(self) -> sp.Matrix:
        """:math:`\\partial F/\\partial z`."""
        return self.F.jacobian(self.z)

    def J_theta(self) -> sp.Matrix:
        """:math:`\\partial F/\\partial\\theta` (columns in θ order)."""
        return self.F.jacobian(self.theta)

    def numeric(self, which: str) -> Callable[..., np.ndarray]:
        """numpy function ``f(z, x, theta_flat)`` for ``which`` in {"F", "J_z", "J_theta"}."""
        expr = {"F": self.F, "J_z": self.J_z(), "J_theta": self.J_theta()}[which]
        fn = sp.lambdify((list(self.z), list(self.x), list(self.theta)), expr, "numpy")
        return lambda z, x, th: np.array(fn(list(z), list(x), list(th)), dtype=float)


def build(kind: str, H: int, I: int, dt: sp.Expr | float = sp.Rational(1, 10), A: np.ndarray | None = None) -> SymbolicCell:
    """Symbolic cell of a given kind and size (HH: H = 4N); ``A`` fixes the linear cell's state matrix
    (exact rationals of the given floats; symbols when omitted)."""
    z, x = _vec("z", H), _vec("x", I)
    dt = sp.nsimplify(dt)
    if kind == "rnn_tanh":
        W, Wi = _mat("W", H, H), _mat("W_in", H, I)
        F = z + dt * (-z + W * z.applyfunc(sp.tanh) + Wi * x)
        parts = {"W": W, "W_in": Wi}
    elif kind == "torch_rnn":
        Wih, bih, Whh, bhh = _mat("W_ih", H, I), _vec("b_ih", H), _mat("W_hh", H, H), _vec("b_hh", H)
        F = (Wih * x + bih + Whh * z + bhh).applyfunc(sp.tanh)
        parts = {"W_ih": Wih, "b_ih": bih, "W_hh": Whh, "b_hh": bhh}
    elif kind == "gru":
        Wih, Whh, bih, bhh = _mat("weight_ih", 3 * H, I), _mat("weight_hh", 3 * H, H), _vec("bias_ih", 3 * H), _vec("bias_hh", 3 * H)
        gi, gh = Wih * x + bih, Whh * z + bhh
        r = (gi[:H, :] + gh[:H, :]).applyfunc(_sig)
        u = (gi[H:2 * H, :] + gh[H:2 * H, :]).applyfunc(_sig)
        n = (gi[2 * H:, :] + r.multiply_elementwise(gh[2 * H:, :])).applyfunc(sp.tanh)
        F = (sp.ones(H, 1) - u).multiply_elementwise(n) + u.multiply_elementwise(z)
        parts = {"weight_ih": Wih, "weight_hh": Whh, "bias_ih": bih, "bias_hh": bhh}
    elif kind == "hodgkin_huxley":
        N = H // 4
        W, Wi = _mat("W", N, N), _mat("W_in", N, I)
        c = {k: sp.nsimplify(v) for k, v in HH_CONST.items()}
        V, m, nn, h = z[:N, :], z[N:2 * N, :], z[2 * N:3 * N, :], z[3 * N:, :]
        s = V.applyfunc(lambda v: _sig((v - c["V_t"]) / c["K_p"]))
        rows = []
        for i in range(N):
            ionic = (c["g_K"] * nn[i] ** 4 * (V[i] - c["V_K"]) + c["g_Na"] * m[i] ** 3 * h[i] * (V[i] - c["V_Na"])
                     + c["g_l"] * (V[i] - c["V_l"]))
            rows.append(-ionic + (W * s)[i] + (Wi * x)[i] + c["I_app"])
        gates = []
        for k, g in (("m", m), ("n", nn), ("h", h)):
            for i in range(N):
                a, b = hh_rates(V[i])[k]
                gates.append(a * (1 - g[i]) - b * g[i])
        F = z + dt * sp.Matrix(rows + gates)
        parts = {"W": W, "W_in": Wi}
    elif kind == "linear":
        Am = _mat("A", H, H) if A is None else sp.Matrix(H, H, lambda i, j: sp.Rational(float(A[i][j])))
        Wi, b = _mat("W_in", H, I), _vec("b", H)
        F = Am * z + Wi * x + b
        parts = {"W_in": Wi, "b": b}
    else:
        raise ValueError(f"unknown cell {kind!r}")
    theta = sp.Matrix([e for name in param_names(kind) for e in parts[name]])  # row-major
    shapes = {k: tuple(v.shape) if v.shape[1] != 1 or k.startswith("W") or k.startswith("weight") else (v.shape[0],)
              for k, v in parts.items()}
    return SymbolicCell(kind, z, x, theta, F, shapes)


def hh_gating_erratum() -> dict[str, sp.Expr]:
    r"""Derivative of :math:`\dot k=\alpha(V)(1-k)-\beta(V)k` in V: the correct form, the paper's
    eq. 85, and their difference :math:`\alpha'(V)` (nonzero), for generic α, β."""
    V, k = sp.symbols("V k")
    a, b = sp.Function("alpha")(V), sp.Function("beta")(V)
    derived = sp.diff(a * (1 - k) - b * k, V)
    correct = sp.diff(a, V) * (1 - k) - sp.diff(b, V) * k
    paper = -(sp.diff(a, V) + sp.diff(b, V)) * k
    return {"derived": derived, "correct_minus_derived": sp.simplify(correct - derived),
            "paper_minus_derived": sp.simplify(paper - derived)}


def kernel_factorisation(H: int = 2, I: int = 1) -> sp.Matrix:
    r""":math:`J_\theta(z,x)J_\theta(z',x')^\top-\Delta t^2(x\cdot x'+\tanh z\cdot\tanh z')I` for eq. 8
    (zero matrix: Theorem 1 with a constant outer Jacobian)."""
    c = build("rnn_tanh", H, I)
    z2, x2 = _vec("zp", H), _vec("xp", I)
    J1 = c.J_theta()
    J2 = J1.subs(dict(zip(list(c.z) + list(c.x), list(z2) + list(x2))), simultaneous=True)
    dt = sp.Rational(1, 10)
    k = (c.x.T * x2)[0, 0] + (c.z.applyfunc(sp.tanh).T * z2.applyfunc(sp.tanh))[0, 0]
    return sp.simplify(J1 * J2.T - dt**2 * k * sp.eye(H))


def gram_psd_identity() -> sp.Expr:
    r"""Residual of :math:`v^\top\big(\tfrac1BGG^\top\big)v-\tfrac1B(G^\top v)^\top(G^\top v)` for symbolic
    :math:`G\in\mathbb R^{n\times m}`, :math:`v\in\mathbb R^n` (matrix level, any sizes): zero, so
    :math:`\mathcal K=\frac1BGG^\top\succeq0` (Theorem 1: semidefinite, not definite as printed)."""
    n, m = sp.symbols("n m", integer=True, positive=True)
    B = sp.Symbol("B", positive=True)
    G, v = sp.MatrixSymbol("G", n, m), sp.MatrixSymbol("v", n, 1)
    return sp.simplify((v.T * (G * G.T / B) * v - (G.T * v).T * (G.T * v) / B).doit())
