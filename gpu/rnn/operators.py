r"""The KPFlow operators on hidden trajectories :math:`\mathbb R^{B\times T\times H}` (paper §2, App. B–C).

Convention (note §1.3): :math:`z_0=h_0` is not stored, :math:`z_t=F(z_{t-1},x_t;\theta)`,
:math:`Z[b,t-1]=z_t`, and the Jacobians of step t are taken at :math:`(z_{t-1},x_t)`:
:math:`A_t=\partial_zF`, :math:`G_t=\partial_\theta F`. With :math:`L=\frac1B\sum_{b,t}\ell(z_t^b)`,
:math:`\mathrm{Err}=\nabla\ell` per sample and

.. math::

    (\mathcal Pq)_t=\sum_{s\le t}A_t\cdots A_{s+1}q_s\ (p_t=A_tp_{t-1}+q_t),\qquad
    (\mathcal P^{*}r)_s=r_s+A_{s+1}^\top(\mathcal P^{*}r)_{s+1},\qquad
    (\mathcal P^{-1}q)_t=q_t-A_tq_{t-1},

.. math::

    \mathcal K=\tfrac1B GG^\top\ (\text{vjp, then jvp; }J_\theta\text{ never formed}),\qquad
    \partial_s z=-\mathcal P\mathcal K\mathcal P^{*}\,\mathrm{Err}\ \ (\text{Prop. 1}),\qquad
    \tfrac1B J_ZJ_Z^\top=\mathcal P\mathcal K\mathcal P^\top\ \ (\text{hidden NTK}).

:math:`\mathcal P` has two modes (a deliberate memory/time trade-off, measured in
``benchmarks/kpflow_ops.py``): ``"stored"`` forms every :math:`A_t` once (H vjps over all B·T
points at once; memory :math:`8BTH^2` bytes in float64) and then applies P by T batched mat-vecs;
``"recompute"`` stores only the states (:math:`8BTH` bytes) and applies each :math:`A_t` by a jvp
(P) or vjp (P*) through the cell, paying one cell evaluation per step and application.
:math:`\mathcal P^{-1}` needs no recurrence: one jvp over all (b, t) at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from .cells import Cell, Params
from .work import BATCH_BYTES

Tensor = torch.Tensor


def _grad(out: Tensor, inputs: Sequence[Tensor], cot: Tensor, retain: bool) -> tuple[Tensor, ...]:
    """Vector–Jacobian product by plain autograd (``torch.func.vjp`` imports torch._dynamo on first
    use, seconds of start-up for a command-line call)."""
    return torch.autograd.grad(out, list(inputs), cot, retain_graph=retain, allow_unused=True)


def jvp(f: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Tensor]:
    """``(f(*primals), J_f tangents)`` by forward-mode dual numbers (``torch.autograd.forward_ad``), the same
    numbers as ``torch.func.jvp`` without its import of ``torch._dynamo`` (seconds per command-line call).
    A primal may be a tensor or a dict of tensors (with a matching tangent)."""
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        def dual(p: Any, t: Any) -> Any:
            if isinstance(p, dict):
                return {k: fwAD.make_dual(v, t[k]) if k in t else v for k, v in p.items()}
            return fwAD.make_dual(p, t)

        out = f(*(dual(p, t) for p, t in zip(primals, tangents)))
        primal, tangent = fwAD.unpack_dual(out)
        if tangent is None:  # the output does not depend on the primals
            tangent = torch.zeros_like(primal)
        return primal, tangent


def _at_z(cell: Cell, theta: Params, z: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """(z with grad, F(z, x)) with a graph in z only."""
    zr = z.detach().requires_grad_(True)
    with torch.enable_grad():
        return zr, cell.step({k: v.detach() for k, v in theta.items()}, zr, x)


def rollout(cell: Cell, theta: Params, x: Tensor, h0: Tensor, q: Tensor | None = None) -> Tensor:
    """Hidden trajectory [B, T, H]; with ``q`` the perturbed map :math:`z_t=F(z_{t-1},x_t)+q_t`."""
    z, out = h0, []
    for t in range(x.shape[1]):
        z = cell.step(theta, z, x[:, t])
        if q is not None:
            z = z + q[:, t]
        out.append(z)
    return torch.stack(out, 1)


def previous(Z: Tensor, h0: Tensor) -> Tensor:
    """States the Jacobians are taken at: :math:`[z_0,\\dots,z_{T-1}]`, shape [B, T, H]."""
    return torch.cat([h0[:, None], Z[:, :-1]], 1)


def on_device(tr: "Trajectory", device: torch.device | str | None) -> "Trajectory":
    """``tr`` itself, or the same model re-run on ``device`` when that differs from where it lives."""
    if device is None or torch.device(device) == tr.device:
        return tr
    return tr.to(device=device)


class Operator:
    r"""A linear map on [B, T, H] tensors with its Euclidean adjoint; operators compose.

    :math:`A+B`, :math:`A-B`, :math:`cA`, :math:`-A`, :math:`A\circ B` (``A @ B``) and
    :math:`A^\top` (``A.T``) are operators again, with adjoints :math:`(A+B)^\top=A^\top+B^\top`,
    :math:`(AB)^\top=B^\top A^\top`; see also :func:`identity` and :func:`projector`.

    Parameters
    ----------
    shape : tuple of int
        (B, T, H).
    matvec, rmatvec : callable
        :math:`q\mapsto Aq` and :math:`r\mapsto A^\top r` on one [B, T, H] tensor.
    name : str
    dtype, device : torch.dtype, torch.device or str
        Of the vectors the operator acts on (float64 on the CPU by default).
    batch, rbatch : callable, optional
        :math:`A` and :math:`A^\top` on m vectors at once, ``V`` of shape [m, B, T, H]; default: one
        call per vector.
    """

    def __init__(self, shape: Sequence[int], matvec: Callable[[Tensor], Tensor],
                 rmatvec: Callable[[Tensor], Tensor], name: str = "A", *,
                 dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu",
                 batch: Callable[[Tensor], Tensor] | None = None,
                 rbatch: Callable[[Tensor], Tensor] | None = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self._mv, self._rmv, self.name = matvec, rmatvec, name
        self.dtype, self.device = dtype, torch.device(device)
        self._bmv, self._rbmv = batch, rbatch
        self.self_adjoint = False  # set where A = A^T by construction (Gram forms, K); spectra use it

    def _like(self, mv: Callable[[Tensor], Tensor], rmv: Callable[[Tensor], Tensor], name: str,
              batch: Callable[[Tensor], Tensor] | None = None,
              rbatch: Callable[[Tensor], Tensor] | None = None) -> "Operator":
        return Operator(self.shape, mv, rmv, name, dtype=self.dtype, device=self.device, batch=batch, rbatch=rbatch)

    @property
    def size(self) -> int:
        """B·T·H."""
        return self.shape[0] * self.shape[1] * self.shape[2]

    def __call__(self, q: Tensor) -> Tensor:
        return self._mv(q)

    def adjoint(self, r: Tensor) -> Tensor:
        """:math:`A^\\top r`."""
        return self._rmv(r)

    def apply_batch(self, V: Tensor) -> Tensor:
        """:math:`A` applied to each of the m vectors of ``V`` [m, B, T, H]."""
        if self._bmv is not None:
            return self._bmv(V)
        return torch.stack([self._mv(v) for v in V]) if len(V) else torch.zeros_like(V)

    def adjoint_batch(self, V: Tensor) -> Tensor:
        """:math:`A^\\top` applied to each of the m vectors of ``V`` [m, B, T, H]."""
        if self._rbmv is not None:
            return self._rbmv(V)
        return torch.stack([self._rmv(v) for v in V]) if len(V) else torch.zeros_like(V)

    @property
    def T(self) -> "Operator":
        """The adjoint operator."""
        return self._like(self._rmv, self._mv, f"{self.name}^T", self._rbmv, self._bmv)

    def __matmul__(self, other: "Operator") -> "Operator":
        return self._like(lambda q: self(other(q)), lambda r: other.adjoint(self.adjoint(r)), f"{self.name}{other.name}",
                          lambda V: self.apply_batch(other.apply_batch(V)),
                          lambda V: other.adjoint_batch(self.adjoint_batch(V)))

    def __add__(self, other: "Operator") -> "Operator":
        if not isinstance(other, Operator):
            return NotImplemented
        if other.shape != self.shape:
            raise ValueError(f"shapes differ: {self.shape} and {other.shape}")
        return self._like(lambda q: self(q) + other(q), lambda r: self.adjoint(r) + other.adjoint(r),
                          f"({self.name}+{other.name})",
                          lambda V: self.apply_batch(V) + other.apply_batch(V),
                          lambda V: self.adjoint_batch(V) + other.adjoint_batch(V))

    def __mul__(self, c: float) -> "Operator":
        if isinstance(c, Operator) or not isinstance(c, (int, float)):
            return NotImplemented
        c = float(c)
        return self._like(lambda q: c * self(q), lambda r: c * self.adjoint(r), f"{c:g}*{self.name}",
                          lambda V: c * self.apply_batch(V), lambda V: c * self.adjoint_batch(V))

    __rmul__ = __mul__

    def __neg__(self) -> "Operator":
        return self * -1.0

    def __sub__(self, other: "Operator") -> "Operator":
        return self + (-other)

    def gram(self) -> "Operator":
        r""":math:`AA^\top` (self-adjoint, PSD)."""
        op = self @ self.T
        out = self._like(op, op, f"{self.name}{self.name}^T", op.apply_batch, op.apply_batch)
        out.self_adjoint = True
        return out

    def dense(self, dtype: torch.dtype | None = None) -> Tensor:
        """The (BTH)×(BTH) matrix (row-major flattening of [B, T, H]); small sizes only."""
        n = self.size
        E = torch.eye(n, dtype=self.dtype, device=self.device).reshape(n, *self.shape)
        M = self.apply_batch(E).reshape(n, n).T
        return M if dtype is None else M.to(dtype)

    def to_scipy(self):  # -> scipy.sparse.linalg.LinearOperator
        """Export as a ``scipy.sparse.linalg.LinearOperator`` (flattened row-major).

        The numpy dtype is the operator's (float32 or float64); vectors are moved to the
        operator's device and back.
        """
        import numpy as np
        from scipy.sparse.linalg import LinearOperator

        npdt = np.float32 if self.dtype == torch.float32 else np.float64

        def wrap(f: Callable[[Tensor], Tensor]) -> Callable[[np.ndarray], np.ndarray]:
            def g(v: np.ndarray) -> np.ndarray:
                t = torch.as_tensor(np.ascontiguousarray(v, dtype=npdt).reshape(self.shape)).to(self.device)
                return f(t).detach().reshape(-1).cpu().numpy()
            return g

        return LinearOperator((self.size, self.size), matvec=wrap(self._mv), rmatvec=wrap(self._rmv), dtype=npdt)


def identity(shape: Sequence[int], *, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> Operator:
    """The identity on [B, T, H]."""
    f = lambda q: q  # noqa: E731
    return Operator(shape, f, f, "I", dtype=dtype, device=device, batch=f, rbatch=f)


def projector(y: Tensor, x: Tensor | None = None) -> Operator:
    r"""Rank one :math:`|y\rangle\langle x|:\ q\mapsto\langle x,q\rangle\,y` (adjoint :math:`|x\rangle\langle y|`).

    With ``x`` omitted, the orthogonal projector :math:`yy^\top/\|y\|^2` onto the span of y.
    """
    if x is None:
        y = y / y.norm()
        x = y
    if x.shape != y.shape:
        raise ValueError(f"shapes differ: {tuple(y.shape)} and {tuple(x.shape)}")
    dims = tuple(range(1, y.dim() + 1))

    def rank1(a: Tensor, b: Tensor) -> Callable[[Tensor], Tensor]:
        return lambda V: torch.tensordot(V, b, dims=(dims, tuple(range(b.dim()))))[(...,) + (None,) * a.dim()] * a

    return Operator(y.shape, lambda q: (x * q).sum() * y, lambda r: (y * r).sum() * x, "proj",
                    dtype=y.dtype, device=y.device, batch=rank1(y, x), rbatch=rank1(x, y))


@dataclass
class Trajectory:
    """A model evaluated on a batch: cell, θ, inputs [B,T,I], z_0 [B,H], states Z [B,T,H]."""

    cell: Cell
    theta: Params
    x: Tensor
    h0: Tensor
    Z: Tensor

    @classmethod
    def run(cls, cell: Cell, theta: Params, x: Tensor, h0: Tensor) -> "Trajectory":
        with torch.no_grad():
            Z = rollout(cell, theta, x, h0)
        return cls(cell, theta, x, h0, Z)

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.Z.shape)  # type: ignore[return-value]

    @property
    def dtype(self) -> torch.dtype:
        return self.Z.dtype

    @property
    def device(self) -> torch.device:
        return self.Z.device

    def to(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> "Trajectory":
        """The same model in another dtype and/or on another device (states re-run there)."""
        import dataclasses

        cv = lambda v: v.to(device=device, dtype=dtype if v.is_floating_point() else None)  # noqa: E731
        if hasattr(self.cell, "module"):  # a user's module: its buffers and constants follow too
            cell = self.cell.to(dtype=dtype, device=device)
        else:
            cell = self.cell if self.cell.A is None else dataclasses.replace(self.cell, A=cv(self.cell.A))
        return Trajectory.run(cell, {k: cv(v) for k, v in self.theta.items()}, cv(self.x), cv(self.h0))

    @property
    def Zprev(self) -> Tensor:
        return previous(self.Z, self.h0)

    def _flat(self) -> tuple[Tensor, Tensor]:
        B, T, H = self.shape
        return self.Zprev.reshape(B * T, H), self.x.reshape(B * T, -1)


# ---------------------------------------------------------------------------------------- P


def state_jacobians(tr: Trajectory) -> Tensor:
    """All :math:`A_t=\\partial_zF(z_{t-1},x_t)`, shape [B, T, H, H] (contiguous).

    Closed form where the cell has one (:meth:`Cell.state_jacobian`: eq. 8, torch RNN, GRU, linear),
    else one reverse-mode graph of the cell over all B·T points, then H vjps with the basis
    cotangents :math:`e_k` (row k of every :math:`A_t` at once); peak memory is J itself plus one
    cell evaluation, unlike a vmapped jvp whose intermediates are H times larger.
    """
    B, T, H = tr.shape
    zp, xf = tr._flat()
    closed = getattr(tr.cell, "state_jacobian", lambda *a: None)
    with torch.no_grad():
        Jc = closed({k: v.detach() for k, v in tr.theta.items()}, zp, xf)
    if Jc is not None:
        return Jc.reshape(B, T, H, H)
    z = zp.detach().requires_grad_(True)
    with torch.enable_grad():
        out = tr.cell.step({k: v.detach() for k, v in tr.theta.items()}, z, xf)
    J = torch.empty(B * T, H, H, dtype=zp.dtype, device=zp.device)
    for k in range(H):  # plain autograd: about 2x faster than torch.func.vjp closures here
        J[:, k, :] = torch.autograd.grad(out[:, k].sum(), z, retain_graph=k < H - 1)[0]
    return J.reshape(B, T, H, H)


class Propagation(Operator):
    r""":math:`\mathcal P` (forward linearised recurrence) with :math:`\mathcal P^*=\mathcal P^\top`.

    Vectors are propagated in a time-major row layout [T, B, m, H] (m vectors at once): with stored
    Jacobians one ``baddbmm`` per step, :math:`p_t\leftarrow q_t+p_{t-1}A_t^\top` for P and
    :math:`a_t\leftarrow r_t+a_{t+1}A_{t+1}` for P*, both row vectors times an [H, H] block (the
    transposed view costs the same as the plain one, unlike the column form :math:`A_tp`), written in
    place into one output buffer.

    Parameters
    ----------
    tr : Trajectory
    mode : {"stored", "recompute"}
        Store the B·T Jacobians (fast mat-vecs, :math:`O(BTH^2)` memory) or recompute their
        action by jvp/vjp through the cell at each step (:math:`O(BTH)` memory).
    device : torch.device or str, optional
        Where the operator lives (default: the trajectory's device; another device moves the
        trajectory there).
    """

    def __init__(self, tr: Trajectory, mode: str = "stored", *, device: torch.device | str | None = None) -> None:
        if mode not in ("stored", "recompute"):
            raise ValueError(f"mode must be 'stored' or 'recompute', got {mode!r}")
        tr = on_device(tr, device)
        self.tr, self.mode = tr, mode
        self.J = state_jacobians(tr) if mode == "stored" else None
        super().__init__(tr.shape, self._forward, self._backward, "P", dtype=tr.dtype, device=tr.device,
                         batch=self._forward_batch, rbatch=self._backward_batch)

    def apply_A(self, t: int, v: Tensor) -> Tensor:
        """:math:`A_{t+1}v` for 0-based time index t (batched over trials)."""
        return self._step(t, v[:, None, :], False)[:, 0]

    def apply_At(self, t: int, v: Tensor) -> Tensor:
        """:math:`A_{t+1}^\\top v` for 0-based time index t."""
        return self._step(t, v[:, None, :], True)[:, 0]

    def _step(self, t: int, R: Tensor, adjoint: bool, out: Tensor | None = None, add: Tensor | None = None) -> Tensor:
        r"""Row vectors R [B, m, H] times :math:`A_t^\top` (P) or :math:`A_t` (P*), plus ``add``, into ``out``."""
        if self.J is not None:
            Jt = self.J[:, t] if adjoint else self.J[:, t].transpose(1, 2)
            if add is None:
                return torch.bmm(R, Jt, out=out) if out is not None else torch.bmm(R, Jt)
            return torch.baddbmm(add, R, Jt, out=out) if out is not None else torch.baddbmm(add, R, Jt)
        tr = self.tr
        B, m, H = R.shape
        z = tr.Zprev[:, t, None, :].expand(B, m, H).reshape(B * m, H).contiguous()
        x = tr.x[:, t, None, :].expand(B, m, tr.x.shape[-1]).reshape(B * m, -1).contiguous()
        if adjoint:
            zr, fz = _at_z(tr.cell, tr.theta, z, x)
            y = _grad(fz, [zr], R.reshape(B * m, H), False)[0]
        else:
            y = jvp(lambda zz: tr.cell.step(tr.theta, zz, x), (z,), (R.reshape(B * m, H).contiguous(),))[1]
        y = y.reshape(B, m, H)
        if add is not None:
            y = y + add
        if out is None:
            return y
        out.copy_(y)
        return out

    def propagate(self, R: Tensor, adjoint: bool = False, out: Tensor | None = None) -> Tensor:
        r""":math:`\mathcal P` (or :math:`\mathcal P^*` with ``adjoint``) on rows R [T, B, m, H] (time-major);
        returns [T, B, m, H], written into ``out`` when given (a reusable buffer)."""
        T = R.shape[0]
        out = torch.empty(R.shape, dtype=R.dtype, device=R.device) if out is None else out
        order = range(T - 2, -1, -1) if adjoint else range(1, T)
        first = T - 1 if adjoint else 0
        out[first].copy_(R[first])
        for t in order:
            prev = t + 1 if adjoint else t - 1
            self._step(t + 1 if adjoint else t, out[prev], adjoint, out=out[t], add=R[t])
        return out

    def apply_many(self, V: Tensor) -> Tensor:
        """P applied to m vectors at once, ``V`` of shape [B, T, H, m]."""
        return self.propagate(V.permute(1, 0, 3, 2).contiguous()).permute(1, 0, 3, 2)

    def _forward_batch(self, V: Tensor) -> Tensor:
        """P on [m, B, T, H]."""
        return self.propagate(V.permute(2, 1, 0, 3).contiguous()).permute(2, 1, 0, 3).contiguous()

    def _backward_batch(self, V: Tensor) -> Tensor:
        """P^T on [m, B, T, H]."""
        return self.propagate(V.permute(2, 1, 0, 3).contiguous(), True).permute(2, 1, 0, 3).contiguous()

    def _forward(self, q: Tensor) -> Tensor:
        return self.propagate(q.permute(1, 0, 2)[:, :, None, :].contiguous())[:, :, 0].permute(1, 0, 2).contiguous()

    def _backward(self, r: Tensor) -> Tensor:
        return self.propagate(r.permute(1, 0, 2)[:, :, None, :].contiguous(), True)[:, :, 0].permute(1, 0, 2).contiguous()

    def _all_A(self, v: Tensor) -> Tensor:
        """:math:`(A_tv_t)_t` for all (b, t) at once."""
        if self.J is not None:
            return torch.einsum("btij,btj->bti", self.J, v)
        B, T, H = self.shape
        zp, xf = self.tr._flat()
        return jvp(lambda z: self.tr.cell.step(self.tr.theta, z, xf), (zp,), (v.reshape(B * T, H),))[1].reshape(B, T, H)

    def _all_At(self, v: Tensor) -> Tensor:
        if self.J is not None:
            return torch.einsum("btji,btj->bti", self.J, v)
        B, T, H = self.shape
        zp, xf = self.tr._flat()
        zr, out = _at_z(self.tr.cell, self.tr.theta, zp, xf)
        return _grad(out, [zr], v.reshape(B * T, H), False)[0].reshape(B, T, H)

    def inverse(self) -> Operator:
        r""":math:`\mathcal P^{-1}q=q_t-A_tq_{t-1}` (bidiagonal) and its adjoint
        :math:`r_t-A_{t+1}^\top r_{t+1}`; no recurrence."""
        def inv(q: Tensor) -> Tensor:
            shifted = torch.cat([torch.zeros_like(q[:, :1]), q[:, :-1]], 1)
            return q - self._all_A(shifted)

        def inv_t(r: Tensor) -> Tensor:
            # row t of _all_At(r) is A_t^T r_t (0-based); row s needs A_{s+1}^T r_{s+1}
            back = torch.cat([self._all_At(r)[:, 1:], torch.zeros_like(r[:, :1])], 1)
            return r - back

        return self._like(inv, inv_t, "P^-1")


# ---------------------------------------------------------------------------------------- K


class ParameterJacobian:
    r""":math:`G:\delta\theta\mapsto(G_t\delta\theta)_{b,t}` (jvp) and :math:`G^\top` (vjp), matrix-free.

    θ is also seen as one flat vector of length :attr:`dim` (the parameters in :attr:`names` order,
    each row-major). Batches: :meth:`apply_rows` maps [n, dim] to the time-major rows [T, B, n, H] that
    :meth:`Propagation.propagate` works on, :meth:`adjoint_rows` maps such rows back to [n, dim];
    :meth:`apply_batch` / :meth:`adjoint_batch` do the same with vectors [n, B, T, H]. With the closed
    forms of the cell (GRU, torch RNN, eq. 8) a batch is one matrix product per weight for all n vectors;
    otherwise one autograd call per vector, written into one output buffer. Batches are split so that
    their transients stay within :data:`BATCH_BYTES`.

    Parameters
    ----------
    tr : Trajectory
    only : sequence of str, optional
        Restrict θ to these parameter names (the others are held fixed), e.g. for :math:`K_j`.
    device : torch.device or str, optional
        Where the operator lives (default: the trajectory's device).
    """

    def __init__(self, tr: Trajectory, only: Sequence[str] | None = None, *,
                 device: torch.device | str | None = None) -> None:
        tr = on_device(tr, device)
        self.tr = tr
        self.names = list(only) if only is not None else list(tr.theta)
        self.shapes = {k: tuple(tr.theta[k].shape) for k in self.names}
        self.sizes = [int(tr.theta[k].numel()) for k in self.names]
        self.dim = sum(self.sizes)
        B, T, H = tr.shape
        # the B*T points in time-major order (row t*B + b), the layout of Propagation.propagate
        zp = tr.Zprev.transpose(0, 1).reshape(T * B, H)
        xf = tr.x.transpose(0, 1).reshape(T * B, -1)
        fixed = {k: v for k, v in tr.theta.items() if k not in self.names}
        self._f = lambda th: tr.cell.step({**fixed, **th}, zp, xf)  # noqa: E731
        self._theta = {k: tr.theta[k] for k in self.names}
        lin = getattr(tr.cell, "parameter_linearisation", lambda *a: None)
        with torch.no_grad():
            self._closed = lin({k: v.detach() for k, v in tr.theta.items()}, zp, xf)
        if self._closed is not None:  # closed form: no graph kept, no transient beyond O(BTH)
            return
        self._leaves = {k: v.detach().requires_grad_(True) for k, v in self._theta.items()}
        with torch.enable_grad():
            self._out = self._f(self._leaves)  # graph kept for repeated vjps

    @property
    def _chunk(self) -> int:
        """Vectors per batch: a closed-form batch holds about 8 [B·T, H] transients per vector and gate."""
        B, T, H = self.tr.shape
        item = torch.finfo(self.tr.dtype).bits // 8
        width = 3 if getattr(self.tr.cell, "kind", "") == "gru" else 1
        return max(1, BATCH_BYTES // (item * (8 * width * B * T * H + 2 * self.dim)))

    def _points(self, q: Tensor) -> Tensor:
        """[B, T, H] -> the time-major points [T·B, H]."""
        return q.transpose(0, 1).reshape(-1, q.shape[-1])

    def _trajectory(self, y: Tensor) -> Tensor:
        """[T·B, H] -> [B, T, H]."""
        B, T, H = self.tr.shape
        return y.reshape(T, B, H).transpose(0, 1).contiguous()

    def __call__(self, dtheta: Params) -> Tensor:
        if self._closed is not None:
            full = {k: dtheta[k] if k in dtheta else torch.zeros_like(v) for k, v in self.tr.theta.items()}
            return self._trajectory(self._closed[1](full))
        return self._trajectory(jvp(self._f, (self._theta,), (dtheta,))[1])

    def _adjoint_points(self, q: Tensor) -> Params:
        if self._closed is not None:
            g = self._closed[0](q)
            return {k: g[k] for k in self.names}
        g = _grad(self._out, list(self._leaves.values()), q, True)
        return {k: (torch.zeros_like(v) if gi is None else gi) for (k, v), gi in zip(self._leaves.items(), g)}

    def adjoint(self, q: Tensor) -> Params:
        """:math:`G^\\top q` for one q [B, T, H], per parameter."""
        return self._adjoint_points(self._points(q))

    def unflatten(self, w: Tensor) -> Params:
        """Flat ``[..., dim]`` -> per-parameter views ``[..., *shape]``."""
        lead = w.shape[:-1]
        return {k: p.reshape(*lead, *self.shapes[k]) for k, p in zip(self.names, torch.split(w, self.sizes, -1))}

    def adjoint_rows(self, R: Tensor, out: Tensor | None = None) -> Tensor:
        r""":math:`G^\top` on rows R [T, B, n, H] -> flat gradients [n, dim] (into ``out`` if given)."""
        T, B, n, H = R.shape
        out = torch.empty(n, self.dim, dtype=R.dtype, device=R.device) if out is None else out
        step = self._chunk if self._closed is not None else 1
        for c0 in range(0, n, step):
            Rc = R[:, :, c0:c0 + step]
            nc = Rc.shape[2]
            g = self._adjoint_points(Rc.reshape(T * B, nc, H) if self._closed is not None else Rc.reshape(T * B, H))
            o = out[c0:c0 + nc]
            a = 0
            for k, sz in zip(self.names, self.sizes):
                o[:, a:a + sz].copy_(g[k].reshape(nc, sz))
                a += sz
        return out

    def apply_rows(self, W: Tensor, out: Tensor | None = None) -> Tensor:
        r""":math:`G` on n flat parameter vectors W [n, dim] -> rows [T, B, n, H] (into ``out`` if given)."""
        n = W.shape[0]
        B, T, H = self.tr.shape
        out = torch.empty(T, B, n, H, dtype=W.dtype, device=W.device) if out is None else out
        if self._closed is None:
            for i in range(n):
                out[:, :, i] = jvp(self._f, (self._theta,), (self.unflatten(W[i]),))[1].reshape(T, B, H)
            return out
        fixed = {k: v for k, v in self.tr.theta.items() if k not in self.names}
        step = self._chunk
        for c0 in range(0, n, step):
            Wc = W[c0:c0 + step]
            nc = Wc.shape[0]
            d = {**{k: torch.zeros((nc, *v.shape), dtype=W.dtype, device=W.device) for k, v in fixed.items()},
                 **self.unflatten(Wc)}
            out[:, :, c0:c0 + nc] = self._closed[1](d).reshape(T, B, nc, H)
        return out

    def adjoint_batch(self, Q: Tensor, out: Tensor | None = None) -> Tensor:
        r""":math:`G^\top` on n vectors Q [n, B, T, H] -> [n, dim]."""
        return self.adjoint_rows(Q.permute(2, 1, 0, 3), out)

    def apply_batch(self, W: Tensor) -> Tensor:
        r""":math:`G` on n flat parameter vectors W [n, dim] -> [n, B, T, H]."""
        return self.apply_rows(W).permute(2, 1, 0, 3).contiguous()


class ParameterOperator(Operator):
    r""":math:`\mathcal K=\frac1B GG^\top` (self-adjoint): one vjp then one jvp per application, batched;
    :attr:`G` is its :class:`ParameterJacobian`."""

    def __init__(self, G: ParameterJacobian) -> None:
        self.G = G
        B = G.tr.shape[0]

        def K(q: Tensor) -> Tensor:
            return G({k: v / B for k, v in G.adjoint(q).items()})

        def Kb(V: Tensor) -> Tensor:
            return G.apply_batch(G.adjoint_batch(V).div_(B))

        super().__init__(G.tr.shape, K, K, "K", dtype=G.tr.dtype, device=G.tr.device, batch=Kb, rbatch=Kb)
        self.self_adjoint = True

    def rows(self, R: Tensor) -> Tensor:
        """K on rows [T, B, n, H] (the layout of :meth:`Propagation.propagate`)."""
        return self.G.apply_rows(self.G.adjoint_rows(R).div_(self.shape[0]))


def parameter_operator(tr: Trajectory, only: Sequence[str] | None = None, *,
                       device: torch.device | str | None = None) -> ParameterOperator:
    r""":math:`\mathcal K=\frac1B GG^\top` (self-adjoint), one vjp then one jvp per application (batched)."""
    return ParameterOperator(ParameterJacobian(tr, only, device=device))


def hidden_ntk(tr: Trajectory, *, device: torch.device | str | None = None) -> Operator:
    r""":math:`\frac1B J_ZJ_Z^\top` with :math:`J_Z=dZ/d\theta` through the whole rollout."""
    tr = on_device(tr, device)
    B = tr.shape[0]
    f = lambda th: rollout(tr.cell, th, tr.x, tr.h0)  # noqa: E731
    leaves = {k: v.detach().requires_grad_(True) for k, v in tr.theta.items()}
    with torch.enable_grad():
        Z = f(leaves)

    def ntk(q: Tensor) -> Tensor:
        grads = _grad(Z, list(leaves.values()), q, True)
        g = {k: (torch.zeros_like(v) if gi is None else gi) / B for (k, v), gi in zip(leaves.items(), grads)}
        return jvp(f, (tr.theta,), (g,))[1]

    return Operator(tr.shape, ntk, ntk, "NTK", dtype=tr.dtype, device=tr.device)


@dataclass
class KPFlow:
    """The three operators of a trajectory and their compositions.

    Attributes
    ----------
    P : Propagation
    K : Operator
    """

    tr: Trajectory
    P: Propagation
    K: Operator

    @classmethod
    def build(cls, tr: Trajectory, mode: str = "stored", *, device: torch.device | str | None = None) -> "KPFlow":
        """P (``mode``: stored or recomputed Jacobians) and K of ``tr``, on ``device`` (default: the trajectory's)."""
        tr = on_device(tr, device)
        return cls(tr, Propagation(tr, mode), parameter_operator(tr))

    @property
    def PKP(self) -> Operator:
        r""":math:`\mathcal P\mathcal K\mathcal P^*` (self-adjoint, PSD); a batch stays in the time-major rows
        from :math:`\mathcal P^*` to :math:`\mathcal P` (one layout change each way)."""
        op = self.P @ self.K @ self.P.T
        P, K = self.P, self.K
        if not isinstance(K, ParameterOperator):
            out = op._like(op, op, "PKP*", op.apply_batch, op.apply_batch)
        else:
            def batch(V: Tensor) -> Tensor:
                R = P.propagate(V.permute(2, 1, 0, 3).contiguous(), True)
                return P.propagate(K.rows(R)).permute(2, 1, 0, 3).contiguous()

            out = op._like(op, op, "PKP*", batch, batch)
        out.self_adjoint = True
        return out

    @property
    def PP(self) -> Operator:
        r""":math:`\mathcal P\mathcal P^*` ("optimise-then-discretise")."""
        op = self.P.gram()
        op.name = "PP*"
        return op

    def gd_flow(self, err: Tensor) -> Tensor:
        r""":math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}` (Proposition 1)."""
        return -self.P(self.K(self.P.adjoint(err)))


def readout_error(Z: Tensor, W_out: Tensor, b_out: Tensor, y: Tensor) -> Tensor:
    r""":math:`\mathrm{Err}=\nabla_z\ell` for :math:`\ell=\tfrac12\|W_{out}z+b_{out}-y^*\|^2`, shape [B,T,H]."""
    return (Z @ W_out.T + b_out - y) @ W_out


def loss(Z: Tensor, W_out: Tensor, b_out: Tensor, y: Tensor) -> Tensor:
    r""":math:`L=\frac1B\sum_{b,t}\tfrac12\|W_{out}z_t^b+b_{out}-y_t^{*b}\|^2`."""
    return 0.5 * ((Z @ W_out.T + b_out - y) ** 2).sum() / Z.shape[0]


def task_blocks(kp: KPFlow, err: Tensor, tasks: Sequence[Tensor]) -> list[list[Tensor]]:
    r"""Multi-task blocks :math:`\delta z_{ij}=-\mathcal P_i\mathcal K_{ij}\mathcal P_j^*\mathrm{Err}_j` (eq. 11, corrected).

    ``tasks[i]`` holds the trial indices of task i (disjoint). :math:`K_{ij}` keeps the 1/B of
    the whole batch, so :math:`\sum_j\delta z_{ij}=(-\mathcal P\mathcal K\mathcal P^*\mathrm{Err})|_i`.
    Returns ``out[i][j]`` of shape ``[|task i|, T, H]``.
    """
    out: list[list[Tensor]] = [[None] * len(tasks) for _ in tasks]  # type: ignore[list-item]
    for j, idx_j in enumerate(tasks):
        e = torch.zeros_like(err)
        e[idx_j] = err[idx_j]
        dz = -kp.P(kp.K(kp.P.adjoint(e)))
        for i, idx_i in enumerate(tasks):
            out[i][j] = dz[idx_i]
    return out


def interference_matrix(blocks: list[list[Tensor]]) -> Tensor:
    r""":math:`M_{ij}=\langle\delta z_{ii},\delta z_{ij}\rangle/(\|\delta z_{ii}\|\|\delta z_{ij}\|)` (§2.6)."""
    n = len(blocks)
    M = torch.zeros(n, n, dtype=blocks[0][0].dtype, device=blocks[0][0].device)
    for i in range(n):
        for j in range(n):
            a, b = blocks[i][i].reshape(-1), blocks[i][j].reshape(-1)
            M[i, j] = (a @ b) / (a.norm() * b.norm()).clamp_min(1e-300)
    return M
