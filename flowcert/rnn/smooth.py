r"""Is a user's recurrent cell differentiable? A structural check of the hypothesis of Prop. 1 and Cor. 1.

KPFlow's Prop. 1 (eq. 5), :math:`\partial_sz=-\mathcal P\mathcal K\mathcal P^*\mathrm{Err}`, needs the
cell :math:`z_t=F(z_{t-1},x_t;\theta)` differentiable in :math:`(z,\theta)` along the trajectory.
A composition of :math:`C^\infty` maps is :math:`C^\infty`, so the hypothesis *holds* when every
operation the cell performs is smooth. :func:`smooth_cell` establishes that by tracing the cell's
``forward`` with ``torch.fx`` and checking every node against an allow-list of smooth operations:
affine maps (``linear``, ``matmul``, ``+``, ``-``, ``*``, division by a constant, non-negative
integer powers), ``tanh``, ``sigmoid``, ``exp``, ``sin``, ``cos``, ``softplus``, ``softmax``,
``gelu``, ``silu``, reshaping and indexing, and the ``torch.nn`` cells and layers built from them
(``Linear``, ``GRUCell``, ``LSTMCell``, ``RNNCell`` with ``tanh``, ``Tanh``, ``Sigmoid`` …).

Anything else leaves the hypothesis ``unknown`` with the operation named: kinks (``relu``, ``abs``,
``max``/``min``, ``clamp``, ``where``, ``sign``), an operation not on the list, division by a
tensor (smooth only where the divisor is nonzero), a cell that cannot be traced (data-dependent
Python control flow), forward hooks, or parametrised weights. The user may instead state the
hypothesis (``assume=["smooth"]``): it is then reported with status ``assumed``, never ``holds``.
"""

from __future__ import annotations

import operator
from typing import Any

from ..certificates import core

__all__ = ["ASSUMPTIONS", "NAME", "assumed", "smooth_cell"]

#: The hypothesis' name in the catalogue (the same as for flowcert's own cells).
NAME = "F differentiable in (z, theta)"
#: The hypotheses a user may state with ``assume=``: name -> the hypothesis it stands for.
ASSUMPTIONS = {"smooth": NAME}

#: Method names (``x.tanh()``) of smooth operations, and of shape/indexing operations (smooth: linear).
SMOOTH_METHODS = frozenset({
    "tanh", "sigmoid", "exp", "sin", "cos", "add", "sub", "mul", "matmul", "mm", "neg", "sum", "mean",
    "softmax", "log_softmax", "view", "reshape", "t", "transpose", "permute", "chunk", "split", "unbind",
    "unsqueeze", "squeeze", "contiguous", "expand", "expand_as", "narrow", "flatten", "repeat", "select",
    "size", "dim", "to", "double", "float", "type_as", "clone", "__getitem__",
})
#: Kinks and branches: operations that make a cell non-differentiable somewhere.
KINKS = frozenset({"relu", "relu_", "relu6", "abs", "max", "min", "maximum", "minimum", "amax", "amin", "clamp",
                   "clamp_min", "clamp_max", "clip", "where", "sign", "floor", "ceil", "round", "trunc",
                   "hardtanh", "leaky_relu", "elu", "selu", "celu", "hardsigmoid", "hardswish", "threshold",
                   "prelu", "rrelu", "dropout", "masked_fill", "sort", "topk", "argmax", "argmin", "heaviside",
                   "gt", "lt", "ge", "le", "eq", "ne", "greater", "less"})  # comparisons: branches


def _smooth_functions() -> set[Any]:
    import torch
    import torch.nn.functional as F

    return {torch.tanh, torch.sigmoid, torch.exp, torch.sin, torch.cos, torch.matmul, torch.mm, torch.bmm,
            torch.addmm, torch.add, torch.sub, torch.mul, torch.neg, torch.cat, torch.stack, torch.chunk,
            torch.split, torch.reshape, torch.transpose, torch.unsqueeze, torch.squeeze, torch.flatten,
            torch.sum, torch.mean, torch.einsum, torch.outer, torch.softmax, torch.log_softmax,
            F.linear, F.bilinear, F.softplus, F.softmax, F.log_softmax, F.gelu, F.silu, F.tanh, F.sigmoid,
            operator.add, operator.sub, operator.mul, operator.neg, operator.pos, operator.matmul,
            operator.getitem, getattr}


def _smooth_modules(module: Any) -> str | None:
    """None when ``module`` (a leaf of the trace) is a smooth ``torch.nn`` layer, else the reason."""
    import torch.nn as nn

    kind = type(module)
    smooth = (nn.Linear, nn.Bilinear, nn.Identity, nn.Tanh, nn.Sigmoid, nn.Softplus, nn.SiLU, nn.GELU,
              nn.Softmax, nn.LogSoftmax, nn.GRUCell, nn.LSTMCell, nn.Flatten, nn.Unflatten)
    if kind is nn.RNNCell:
        return None if module.nonlinearity == "tanh" else f"RNNCell with nonlinearity {module.nonlinearity!r}"
    if kind in smooth:
        return None
    if kind is nn.Dropout and module.p == 0.0:
        return None
    name = kind.__name__
    return f"module {name} ({'a kink' if name.lower() in KINKS else 'not on the smooth allow-list'})"


def _hooked(module: Any) -> str | None:
    from torch.nn.modules import module as nn_module

    if getattr(nn_module, "_global_forward_hooks", None) or getattr(nn_module, "_global_forward_pre_hooks", None):
        return "global forward hooks are registered (the trace does not see them)"
    for name, m in module.named_modules():
        if m._forward_hooks or m._forward_pre_hooks:
            return f"forward hooks on {name or 'the cell'} (the trace does not see them)"
        if getattr(m, "parametrizations", None):
            return f"parametrised weights on {name or 'the cell'}"
    return None


def _node_problem(node: Any, modules: dict[str, Any], smooth: set[Any]) -> str | None:
    """None when the traced node is a smooth operation, else what it is."""
    import torch

    if node.op in ("placeholder", "output", "get_attr"):
        return None
    if node.op == "call_module":
        return _smooth_modules(modules[node.target])
    if node.op == "call_method":
        name = str(node.target)
        if name in SMOOTH_METHODS:
            return None
        if name in ("pow", "__pow__"):
            return _power(node.args[1:] or [node.kwargs.get("exponent")])
        if name in ("div", "__truediv__"):
            return _division(node.args[1] if len(node.args) > 1 else node.kwargs.get("other"))
        return f"method .{name}() ({'a kink' if name in KINKS else 'not on the smooth allow-list'})"
    target = node.target
    if target in smooth:
        return None
    if target in (operator.truediv, torch.div, torch.true_divide):
        return _division(node.args[1] if len(node.args) > 1 else node.kwargs.get("other"))
    if target in (operator.pow, torch.pow):
        return _power(node.args[1:2])
    name = getattr(target, "__name__", str(target))
    return f"function {name} ({'a kink' if name in KINKS else 'not on the smooth allow-list'})"


def _division(divisor: Any) -> str | None:
    import torch.fx as fx

    if isinstance(divisor, (int, float)) and not isinstance(divisor, bool) and divisor != 0:
        return None
    if isinstance(divisor, fx.Node):
        return "division by a tensor (smooth only where it is nonzero)"
    return f"division by {divisor!r}"


def _power(args: Any) -> str | None:
    e = args[0] if args else None
    if isinstance(e, int) and not isinstance(e, bool) and e >= 0:
        return None
    return f"power {e!r} (smooth for non-negative integer exponents only)"


def smooth_cell(module: Any) -> core.HypothesisResult:
    """Decide "F differentiable in (z, theta)" for a user's cell by its structure.

    Parameters
    ----------
    module : torch.nn.Module
        The cell, called as ``module(x_t, h) -> h_next``.

    Returns
    -------
    HypothesisResult
        ``holds`` when every traced operation is on the smooth allow-list (a composition of smooth
        maps is smooth), with the operations counted; ``unknown`` otherwise, naming the first
        operation that is not (or why the cell could not be traced). Never ``fails``: a kink is not
        necessarily met by the trajectory.
    """
    import torch.fx as fx

    method = "torch.fx trace of the cell: every operation on the smooth allow-list (flowcert.rnn.smooth)"
    hooked = _hooked(module)
    if hooked is not None:
        return _unknown(hooked)
    if _smooth_modules(module) is None:  # a torch.nn cell itself (GRUCell, RNNCell(tanh), ...)
        return core.HypothesisResult(NAME, "holds", None, method, None,
                                     f"the cell is torch.nn.{type(module).__name__}, built from smooth operations")
    try:
        gm = fx.symbolic_trace(module)
    except Exception as exc:  # noqa: BLE001 - any tracing failure leaves the question open
        return _unknown(f"torch.fx could not trace the cell ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})")
    modules = dict(gm.named_modules())
    smooth = _smooth_functions()
    ops = 0
    for node in gm.graph.nodes:
        problem = _node_problem(node, modules, smooth)
        if problem is not None:
            return _unknown(f"{problem} at node {node.name!r}")
        ops += node.op not in ("placeholder", "output", "get_attr")
    return core.HypothesisResult(NAME, "holds", None, method, None,
                                 f"{ops} traced operations, all smooth: the cell is C-infinity in (z, x, theta)")


def _unknown(why: str) -> core.HypothesisResult:
    return core.HypothesisResult(NAME, "unknown", None, "torch.fx trace of the cell (smooth allow-list)", None,
                                 f"{why}; state it with assume=['smooth'] if you know it holds along the trajectory")


def assumed(name: str) -> core.HypothesisResult:
    """The hypothesis ``name`` of :data:`ASSUMPTIONS` as stated by the user: status ``assumed``."""
    return core.HypothesisResult(ASSUMPTIONS[name], "assumed", None, f"assumed by the user (assume=[{name!r}])", None,
                                 "not checked by flowcert; the verdicts that rest on it hold under this assumption")
