r"""Step maps :math:`z_t=F(z_{t-1},x_t;\theta)` of the ``rnn`` system (KPFlow paper, eq. 8, App. E.4).

Pure functions of a parameter dict, so that ``torch.func`` (jvp, vjp, jacrev, functional calls)
differentiates them in :math:`z` and :math:`\theta`. float64 by default.

* ``rnn_tanh`` (paper eq. 8, explicit Euler with step :math:`\Delta t`):

  .. math:: F = z + \Delta t\,(-z + W\phi(z) + W_{in}x\,[+\,b]\,[+\,\xi_t]),\qquad \theta=\{W, W_{in}\,[,b]\},

  :math:`\phi=\tanh`; ``relu_rnn`` is the same cell with :math:`\phi=\max(0,\cdot)` (supplementary
  Fig. 12; kpflow's ``BasicRNNCell``). Options: a trained bias b (``bias``), and input noise
  :math:`\xi_t\sim\mathcal N(0,\sigma^2I_H)` (``noisy``): one fixed realisation, carried as H extra
  input channels after the I real ones (so every operator sees a deterministic map of
  :math:`(z_{t-1},x_t)`).

* ``torch_rnn`` (PyTorch ``nn.RNNCell``): :math:`F=\tanh(W_{ih}x+b_{ih}+W_{hh}z+b_{hh})`.
* ``gru`` (PyTorch ``nn.GRUCell``, gate order r, u(=z), n):

  .. math:: r=\sigma(W_{ir}x+b_{ir}+W_{hr}h+b_{hr}),\ u=\sigma(W_{iu}x+b_{iu}+W_{hu}h+b_{hu}),\\
            n=\tanh(W_{in}x+b_{in}+r\odot(W_{hn}h+b_{hn})),\quad F=(1-u)\odot n+u\odot h.

* ``hodgkin_huxley`` (App. E.4, eqs. 76–82), state :math:`z=[V;m;n;h]\in\mathbb R^{4N}`, Euler step:

  .. math:: \dot V=-\big(g_K n^4(V-V_K)+g_{Na}m^3h(V-V_{Na})+g_l(V-V_l)\big)+W\sigma(V)+W_{in}x+I_{app},\\
            \dot k=\alpha_k(V)(1-k)-\beta_k(V)k,\quad k\in\{m,n,h\},\qquad \sigma(V)=\operatorname{sigmoid}((V-V_t)/K_p).

  The ionic currents carry the physiological minus sign (the paper prints ``+``, which makes
  :math:`\partial\dot V/\partial V=+G>0` and every trajectory blow up). Rates are the classical
  squid-axon ones (mV, ms). The gating derivative is the corrected
  :math:`D_Vf_k=\operatorname{diag}(\alpha_k'(1-k)-\beta_k'k)` (the paper's eq. 85 is wrong); it is
  produced by autograd and checked against SymPy in :mod:`flowcert.symbolic.rnn`.
* ``linear``: :math:`F=Az+W_{in}x+b` with :math:`A` fixed (not trained), :math:`\theta=\{W_{in},b\}`.
  The trajectory is affine in :math:`\theta`, so Proposition 1 is exact (no :math:`O(\eta)` term),
  and the Jacobian :math:`A` is constant (the bounded-real lemma applies).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...symbolic.rnn import param_shapes

Params = dict[str, torch.Tensor]

CELLS = ("rnn_tanh", "relu_rnn", "torch_rnn", "gru", "hodgkin_huxley", "linear")
EQ8 = ("rnn_tanh", "relu_rnn")

# Classical Hodgkin–Huxley constants (mV, ms, mS/cm^2).
HH = {"g_K": 36.0, "g_Na": 120.0, "g_l": 0.3, "V_K": -77.0, "V_Na": 50.0, "V_l": -54.387,
      "I_app": 10.0, "V_t": -40.0, "K_p": 5.0}


def hh_rates(V: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    r"""Squid-axon rates :math:`(\alpha_k(V),\beta_k(V))` for :math:`k\in\{m,n,h\}`."""
    am = 0.1 * (V + 40.0) / (1.0 - torch.exp(-(V + 40.0) / 10.0))
    bm = 4.0 * torch.exp(-(V + 65.0) / 18.0)
    an = 0.01 * (V + 55.0) / (1.0 - torch.exp(-(V + 55.0) / 10.0))
    bn = 0.125 * torch.exp(-(V + 65.0) / 80.0)
    ah = 0.07 * torch.exp(-(V + 65.0) / 20.0)
    bh = 1.0 / (1.0 + torch.exp(-(V + 35.0) / 10.0))
    return {"m": (am, bm), "n": (an, bn), "h": (ah, bh)}


def _gru_gates(theta: Any, z: torch.Tensor, x: torch.Tensor, H: int) -> tuple[torch.Tensor, ...]:
    """GRU recurrent pre-activations and gates ``(W_hh z + b_hh, r, u, n)`` at ``(z, x)`` (torch layout)."""
    gi = x @ theta["weight_ih"].T + theta["bias_ih"]
    gh = z @ theta["weight_hh"].T + theta["bias_hh"]
    r = torch.sigmoid(gi[:, :H] + gh[:, :H])
    u = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return gh, r, u, n


def _outer_sum(q: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_nq_nf_n^\top`: q [N, a] -> [a, b]; q [N, m, a] (m vectors) -> [m, a, b] (one GEMM), f [N, b]."""
    if q.dim() == 2:
        return q.T @ f
    N, m, A = q.shape
    return (f.T @ q.reshape(N, m * A)).reshape(f.shape[1], m, A).permute(1, 2, 0)


def _rows(f: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    r""":math:`f_nW^\top`: W [a, b] -> [N, a]; W [m, a, b] (m matrices) -> [N, m, a] (one GEMM), f [N, b]."""
    if W.dim() == 2:
        return f @ W.T
    m, A, Bd = W.shape
    return (f @ W.permute(2, 0, 1).reshape(Bd, m * A)).reshape(f.shape[0], m, A)


def _col(v: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """A per-point factor v [N, H] shaped to multiply q [N, H] or [N, m, H]."""
    return v if q.dim() == 2 else v[:, None, :]


@dataclass(frozen=True)
class Cell:
    """A step map with its sizes.

    Attributes
    ----------
    kind : str
        One of :data:`CELLS`.
    H : int
        State dimension (for ``hodgkin_huxley`` :math:`4N`, N neurons).
    I : int
        Input dimension.
    dt : float
        Euler step (``rnn_tanh``, ``hodgkin_huxley``); unused by the discrete cells.
    A : torch.Tensor or None
        The fixed state matrix of the ``linear`` cell.
    """

    kind: str
    H: int
    I: int
    dt: float = 1.0
    A: torch.Tensor | None = field(default=None, compare=False)
    bias: bool = False
    noisy: bool = False

    @property
    def neurons(self) -> int:
        """Number of neurons (H, or H/4 for Hodgkin–Huxley)."""
        return self.H // 4 if self.kind == "hodgkin_huxley" else self.H

    def step(self, theta: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """:math:`F(z, x;\\theta)` for batched ``z`` [N, H], ``x`` [N, I]."""
        return _STEPS[self.kind](self, theta, z, x)

    def state_jacobian(self, theta: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor | None:
        r"""Closed-form :math:`\partial_zF(z,x)` for batched points, [N, H, H], or None (use autograd).

        * eq. 8: :math:`(1-\Delta t)I+\Delta t\,W\operatorname{diag}\phi'(z)` (:math:`\phi'=1-\tanh^2`, or
          :math:`1_{z>0}`, torch's convention at 0);
        * torch RNN: :math:`\operatorname{diag}(1-F^2)W_{hh}`;
        * GRU: :math:`\operatorname{diag}(u)+\operatorname{diag}(c_u)W_{hu}+\operatorname{diag}(c_n)W_{hn}+\operatorname{diag}(c_r)W_{hr}`
          with :math:`c_u=(h-n)u(1-u)`, :math:`c_n=(1-u)(1-n^2)r`, :math:`c_r=(1-u)(1-n^2)(W_{hn}h+b_{hn})r(1-r)`;
        * linear: A.

        Checked against autograd in the tests; memory is J itself (in-place accumulation).
        """
        if self.kind in EQ8:
            d = 1.0 - torch.tanh(z) ** 2 if self.kind == "rnn_tanh" else (z > 0).to(z.dtype)
            J = (self.dt * theta["W"])[None] * d[:, None, :]
            J.diagonal(dim1=1, dim2=2).add_(1.0 - self.dt)
            return J
        if self.kind == "torch_rnn":
            F = _torch_rnn(self, theta, z, x)
            return (1.0 - F**2)[:, :, None] * theta["W_hh"][None]
        if self.kind == "gru":
            H = self.H
            gh, r, u, n = _gru_gates(theta, z, x, H)
            a = (1.0 - u) * (1.0 - n**2)
            W = theta["weight_hh"]
            J = ((z - n) * u * (1.0 - u))[:, :, None] * W[None, H:2 * H]
            J.addcmul_((a * r)[:, :, None], W[None, 2 * H:])
            J.addcmul_((a * gh[:, 2 * H:] * r * (1.0 - r))[:, :, None], W[None, :H])
            J.diagonal(dim1=1, dim2=2).add_(u)
            return J
        if self.kind == "linear" and self.A is not None:
            return self.A[None].expand(z.shape[0], -1, -1).clone()
        return None

    def parameter_linearisation(self, theta: Params, z: torch.Tensor, x: torch.Tensor) -> tuple[
            Callable[[torch.Tensor], Params], Callable[[Params], torch.Tensor]] | None:
        r"""Closed-form :math:`G^\top` and :math:`G` of :math:`G=\partial_\theta F(z,x)` at the N points
        (z, x), or None (autograd). GRU (gate cotangents, module docstring's equations differentiated by
        hand), torch RNN and eq. 8; intermediates cached here (O(NH)).

        :math:`G^\top` maps q [N, H] to per-parameter gradients, or m vectors at once, q [N, m, H]
        (points first), to gradients ``[m, *shape]``; :math:`G` maps dθ (each ``[*shape]``, or ``[m, *shape]``) to
        [N, H] (or [N, m, H]). A batch costs one matrix product per weight for all m vectors.
        """
        if self.kind in EQ8:
            phi = torch.tanh(z) if self.kind == "rnn_tanh" else torch.relu(z)
            xi, dt = x[:, : self.I], self.dt

            def vjp8(q: torch.Tensor) -> Params:
                g = {"W": dt * _outer_sum(q, phi), "W_in": dt * _outer_sum(q, xi)}
                return {**g, "b": dt * q.sum(0)} if self.bias else g

            def jvp8(d: Params) -> torch.Tensor:
                out = _rows(phi, d["W"]) + _rows(xi, d["W_in"])
                return dt * (out + d["b"] if self.bias else out)
            return vjp8, jvp8
        if self.kind == "torch_rnn":
            sd = 1.0 - _torch_rnn(self, theta, z, x) ** 2

            def vjpr(q: torch.Tensor) -> Params:
                d = q * _col(sd, q)
                bias = d.sum(0)
                return {"W_ih": _outer_sum(d, x), "b_ih": bias, "W_hh": _outer_sum(d, z), "b_hh": bias.clone()}

            def jvpr(d: Params) -> torch.Tensor:
                pre = _rows(x, d["W_ih"]) + _rows(z, d["W_hh"]) + (d["b_ih"] + d["b_hh"])
                return pre * _col(sd, pre)
            return vjpr, jvpr
        if self.kind != "gru":
            return None
        H = self.H
        gh, r, u, n = _gru_gates(theta, z, x, H)
        ghn = gh[:, 2 * H:]
        a = (1.0 - u) * (1.0 - n**2)  # dF/d(pre-activation of n)
        su, sr = (z - n) * u * (1.0 - u), a * ghn * r * (1.0 - r)  # dF/d(pre u), dF/d(pre r)
        ar = a * r

        def vjpg(q: torch.Tensor) -> Params:
            # cotangents of the pre-activations of r, u, n: of gi = W_ih x + b_ih, and of gh = W_hh h + b_hh
            # (the hidden n-block enters as r * (W_hn h + b_hn))
            di = torch.cat([q * _col(sr, q), q * _col(su, q), q * _col(a, q)], -1)
            dh = torch.cat([di[..., :2 * H], q * _col(ar, q)], -1)
            return {"weight_ih": _outer_sum(di, x), "weight_hh": _outer_sum(dh, z), "bias_ih": di.sum(0), "bias_hh": dh.sum(0)}

        def jvpg(d: Params) -> torch.Tensor:
            dgi = _rows(x, d["weight_ih"]) + d["bias_ih"]  # biases [3H] or [m, 3H] broadcast over the points
            dgh = _rows(z, d["weight_hh"]) + d["bias_hh"]
            out = _col(sr, dgh) * (dgi[..., :H] + dgh[..., :H])
            out += _col(su, dgh) * (dgi[..., H:2 * H] + dgh[..., H:2 * H])
            out += _col(a, dgh) * dgi[..., 2 * H:] + _col(ar, dgh) * dgh[..., 2 * H:]
            return out
        return vjpg, jvpg

    def features(self, theta: Params, z: torch.Tensor, x: torch.Tensor) -> dict[str, torch.Tensor]:
        r"""Inner features :math:`f_j^{inner}` each weight multiplies (Theorem 1), [N, d_j] per weight.

        Biases multiply the constant feature 1. Weights whose outer Jacobian
        :math:`D f^{outer}` is constant are listed in :meth:`constant_outer`.
        """
        one = torch.ones(z.shape[0], 1, dtype=z.dtype, device=z.device)
        if self.kind in EQ8:
            f = {"W": torch.tanh(z) if self.kind == "rnn_tanh" else torch.relu(z), "W_in": x[:, : self.I]}
            return {**f, "b": one} if self.bias else f
        if self.kind == "torch_rnn":
            return {"W_hh": z, "W_ih": x, "b_hh": one, "b_ih": one}
        if self.kind == "gru":
            return {"weight_hh": z, "weight_ih": x, "bias_hh": one, "bias_ih": one}
        if self.kind == "hodgkin_huxley":
            V = z[:, : self.neurons]
            return {"W": torch.sigmoid((V - HH["V_t"]) / HH["K_p"]), "W_in": x}
        return {"W_in": x, "b": one}

    def constant_outer(self) -> bool:
        """True when :math:`f=f^{outer}(W_j f_j^{inner},\\dots)` has a constant outer Jacobian for every j."""
        return self.kind in EQ8 + ("hodgkin_huxley", "linear")


def _eq8(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    phi = torch.tanh(z) if c.kind == "rnn_tanh" else torch.relu(z)
    drive = phi @ th["W"].T + x[:, : c.I] @ th["W_in"].T
    if c.bias:
        drive = drive + th["b"]
    if c.noisy:
        drive = drive + x[:, c.I:]
    return z + c.dt * (-z + drive)


def _torch_rnn(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ th["W_ih"].T + th["b_ih"] + z @ th["W_hh"].T + th["b_hh"])


def _gru(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    # ATen's fused cell (what nn.GRUCell calls): same equations as gru_reference, with
    # forward- and reverse-mode derivatives, about 1.5x faster than the composed ops.
    return torch.gru_cell(x, z, th["weight_ih"], th["weight_hh"], th["bias_ih"], th["bias_hh"])


def gru_reference(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The GRU equations of the module docstring written out (checked against the fused cell)."""
    gi = x @ th["weight_ih"].T + th["bias_ih"]
    gh = z @ th["weight_hh"].T + th["bias_hh"]
    H = c.H
    r = torch.sigmoid(gi[:, :H] + gh[:, :H])
    u = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1.0 - u) * n + u * z


def hh_field(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Continuous-time Hodgkin–Huxley vector field (App. E.4, physiological signs)."""
    N = c.neurons
    V, m, n, h = z[:, :N], z[:, N:2 * N], z[:, 2 * N:3 * N], z[:, 3 * N:]
    ionic = (HH["g_K"] * n**4 * (V - HH["V_K"]) + HH["g_Na"] * m**3 * h * (V - HH["V_Na"])
             + HH["g_l"] * (V - HH["V_l"]))
    s = torch.sigmoid((V - HH["V_t"]) / HH["K_p"])
    dV = -ionic + s @ th["W"].T + x @ th["W_in"].T + HH["I_app"]
    rates = hh_rates(V)
    gates = [rates[k][0] * (1.0 - g) - rates[k][1] * g for k, g in (("m", m), ("n", n), ("h", h))]
    return torch.cat([dV] + gates, dim=1)


def _hh(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return z + c.dt * hh_field(c, th, z, x)


def _linear(c: Cell, th: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    assert c.A is not None
    return z @ c.A.T + x @ th["W_in"].T + th["b"]


_STEPS: dict[str, Callable[[Cell, Params, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "rnn_tanh": _eq8, "relu_rnn": _eq8, "torch_rnn": _torch_rnn, "gru": _gru, "hodgkin_huxley": _hh, "linear": _linear,
}


def with_noise(x: torch.Tensor, H: int, noise: float, seed: int = 0) -> torch.Tensor:
    r"""Inputs [B, T, I] with one noise realisation :math:`\xi\sim\mathcal N(0,\sigma^2)` [B, T, H] appended."""
    gen = torch.Generator().manual_seed(int(seed))
    xi = noise * torch.randn(x.shape[0], x.shape[1], H, generator=gen, dtype=torch.float64)
    return torch.cat([x, xi.to(dtype=x.dtype, device=x.device)], -1)


def init_params(kind: str, H: int, I: int, *, g: float = 1.0, seed: int = 0, dt: float = 1.0,
                dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu", bias: bool = False,
                noisy: bool = False) -> tuple[Cell, Params]:
    r"""A cell and random parameters.

    ``rnn_tanh``/``hodgkin_huxley``: :math:`W_{ij}\sim\mathcal N(0,g^2/N)` (paper, main text),
    :math:`W_{in}\sim\mathcal N(0,1/I)`. ``torch_rnn``/``gru``: PyTorch's default
    :math:`U(-1/\sqrt H,1/\sqrt H)`, with the recurrent weight multiplied by g (as the paper's code).
    ``linear``: :math:`A=g\,Q` with Q a random orthogonal matrix times 0.9 (so :math:`\|A\|=0.9g`).
    The eq. 8 bias b starts at 0.1·N(0, 1).
    """
    gen = torch.Generator().manual_seed(int(seed))
    th: Params = {}
    A = None
    for name, shp in param_shapes(kind, H, I, bias and kind in EQ8).items():
        if kind in ("torch_rnn", "gru"):
            k = 1.0 / H**0.5
            w = (torch.rand(shp, generator=gen, dtype=dtype) * 2 - 1) * k
            if name in ("W_hh", "weight_hh"):
                w = w * g
        elif name == "W":
            w = torch.randn(shp, generator=gen, dtype=dtype) * g / shp[0] ** 0.5
        elif name == "W_in":
            w = torch.randn(shp, generator=gen, dtype=dtype) / max(I, 1) ** 0.5
        else:
            w = 0.1 * torch.randn(shp, generator=gen, dtype=dtype)
        th[name] = w
    if kind == "linear":
        Q, _ = torch.linalg.qr(torch.randn(H, H, generator=gen, dtype=dtype))
        A = (0.9 * g * Q).to(device)
    return Cell(kind, H, I, dt, A, bias=bias and kind in EQ8, noisy=noisy and kind in EQ8), {k: v.to(device) for k, v in th.items()}


def initial_state(cell: Cell, B: int, dtype: torch.dtype = torch.float64,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """z_0: zeros, or for Hodgkin–Huxley the resting state (V=-65 mV, gates at steady state)."""
    if cell.kind != "hodgkin_huxley":
        return torch.zeros(B, cell.H, dtype=dtype, device=device)
    N = cell.neurons
    V = torch.full((B, N), -65.0, dtype=dtype)
    r = hh_rates(V)
    gates = [r[k][0] / (r[k][0] + r[k][1]) for k in ("m", "n", "h")]
    return torch.cat([V] + gates, dim=1).to(device)


class ModuleCell:
    r"""A user's ``torch.nn.Module`` with the ``torch.nn.RNNCell`` signature ``cell(x_t, h_prev) -> h_t`` as a
    step map :math:`F(z,x;\theta)` (``torch.func.functional_call`` with θ = its trainable parameters).

    Same interface as :class:`Cell` where the operators use it (``step``, ``H``, ``I``, ``kind``);
    ``kind`` is ``"module"`` and the structure-dependent parts (:meth:`Cell.features`) do not exist.
    """

    kind = "module"
    dt = 1.0
    A = None
    bias = False
    noisy = False

    def __init__(self, module: torch.nn.Module, H: int, I: int, parts: tuple[int, ...] = ()) -> None:
        self.module, self.H, self.I = module, int(H), int(I)
        #: sizes of the state's parts when the cell takes and returns a tuple (an LSTM's (h, c)); the state is
        #: then z = [h; c], split before each call and concatenated after
        self.parts = tuple(int(p) for p in parts)

    @property
    def neurons(self) -> int:
        return self.H

    def to(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> "ModuleCell":
        """The same step map with a private copy of the module in ``dtype`` / on ``device`` (float32 → float64
        is exact: the copy computes the same function, with less rounding)."""
        import copy

        return ModuleCell(copy.deepcopy(self.module).to(device=device, dtype=dtype), self.H, self.I, self.parts)

    def parameters(self) -> Params:
        """θ: the module's parameters that require grad, detached."""
        return {k: v.detach() for k, v in self.module.named_parameters() if v.requires_grad}

    def step(self, theta: Params, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """:math:`F(z, x;\\theta)` = ``module(x, z)`` with the parameters replaced by ``theta`` (a tuple state:
        ``torch.cat(module(x, z.split(parts)), -1)``)."""
        if not self.parts:
            return torch.func.functional_call(self.module, theta, (x, z))
        out = torch.func.functional_call(self.module, theta, (x, tuple(z.split(list(self.parts), -1))))
        return torch.cat(list(out), -1)

    def constant_outer(self) -> bool:
        return False
