r"""The structure Theorem 1 needs, read from a user's recurrent cell (KPFlow paper, Thm 1, eq. 64; note 002).

Theorem 1 splits the parameter operator by weights, :math:`\mathcal K=\sum_j\mathcal K_j`, for a step map
of the form

.. math:: f(z,x)=f^{outer}\big(W_1f_1^{inner}(z,x),\dots,W_Jf_J^{inner}(z,x)\big),

each :math:`W_j` used once, as the matrix of a linear map whose input is the *inner feature*
:math:`f_j^{inner}\in\mathbb R^{d_j}` (a bias is the weight of the constant feature 1). Then
:math:`\partial f/\partial W_j[\Delta W]=Df^{outer}_j\,\Delta W f_j^{inner}`, so over the N = B·T
points of a run :math:`\operatorname{rank}\mathcal K_j\le n_j\operatorname{rank}F_j`, with
:math:`F_j\in\mathbb R^{N\times d_j}` the stacked features and :math:`n_j` the rows of :math:`W_j`; and
:math:`\operatorname{rank}\operatorname{tr}_H\mathcal K_j=\operatorname{rank}F_j` when
:math:`Df^{outer}` is constant.

:func:`structure_of` reads it:

* ``torch.nn.RNNCell``, ``GRUCell`` (state h) and ``LSTMCell`` (state :math:`z=[h;c]`): PyTorch's equations,
  :math:`f_{ih}=x`, :math:`f_{hh}=h`, biases :math:`f=1`; the outer map applies tanh/ReLU/sigmoid to
  :math:`W_jf_j`, so :math:`Df^{outer}` is not constant (as for flowcert's ``torch_rnn`` and ``gru``);
* any other module, from its ``torch.fx`` graph: every trainable parameter must be the weight or bias of
  exactly one ``nn.Linear`` / ``F.linear`` / ``nn.RNNCell`` / ``nn.GRUCell`` / ``nn.LSTMCell`` call, and
  the inner feature is that call's input, evaluated by running the graph. :math:`Df^{outer}` is
  constant when every operation after a linear map is affine with constant coefficients (``+``,
  ``-``, multiplication by a number, concatenation, splitting, indexing); otherwise it is not
  decided from the graph.

Anything else (a parameter used twice, inside another operation, a cell ``torch.fx`` cannot trace)
leaves the structure unknown, with the reason and what would decide it.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["CellStructure", "structure_of"]

Features = Callable[[Any, Any], dict[str, Any]]


@dataclass(frozen=True)
class CellStructure:
    """The inner features of a cell's weights.

    Attributes
    ----------
    features : callable
        ``features(z, x)`` with z [N, H], x [N, I] -> ``{parameter name: F_j [N, d_j]}`` at the cell's
        own parameters.
    rows : dict of str to int
        :math:`n_j`, the rows of each :math:`W_j` (a bias: its length).
    constant_outer : bool or None
        Whether :math:`Df^{outer}` is constant: True, False, or None (not decided).
    how : str
        How the structure was read.
    outer_why : str
        Why ``constant_outer`` is what it is.
    """

    features: Features
    rows: dict[str, int]
    constant_outer: bool | None
    how: str
    outer_why: str


def _ones(z: Any) -> Any:
    import torch

    return torch.ones(z.shape[0], 1, dtype=z.dtype, device=z.device)


def _torch_cell(module: Any, parts: tuple[int, ...], prefix: str = "") -> dict[str, str] | None:
    """The feature role ('x', 'h', '1') of each parameter of a torch.nn recurrent cell, or None."""
    import torch.nn as nn

    if type(module) not in (nn.RNNCell, nn.GRUCell, nn.LSTMCell):
        return None
    roles = {"weight_ih": "x", "weight_hh": "h", "bias_ih": "1", "bias_hh": "1"}
    return {prefix + k: roles[k] for k, _ in module.named_parameters()}


def _trainable(module: Any) -> dict[str, Any]:
    return {k: v for k, v in module.named_parameters() if v.requires_grad}


def structure_of(module: Any, parts: tuple[int, ...] = ()) -> CellStructure | str:
    """Theorem 1's structure of ``module`` (module docstring), or the reason it cannot be read.

    Parameters
    ----------
    module : torch.nn.Module
        The cell, called as ``module(x, h)`` (``h`` a tuple of the state's parts when ``parts`` is given).
    parts : tuple of int
        The sizes of the state's parts (``(n, n)`` for an LSTM's (h, c)); empty for one state tensor.

    Returns
    -------
    CellStructure or str
    """
    import torch.nn as nn

    params = _trainable(module)
    roles = _torch_cell(module, parts)
    if roles is not None:
        split = parts[0] if parts else None

        def features(z: Any, x: Any) -> dict[str, Any]:
            h = z if split is None else z[:, :split]
            val = {"x": x, "h": h, "1": _ones(z)}
            return {k: val[r] for k, r in roles.items() if k in params}

        act = "tanh/sigmoid" if type(module) is not nn.RNNCell else module.nonlinearity
        return CellStructure(features, {k: int(params[k].shape[0]) for k in roles if k in params}, False,
                         f"torch.nn.{type(module).__name__}: PyTorch's equations (f_ih = x, f_hh = h, biases 1)",
                         f"f^outer applies {act} to W_j f_j^inner: its Jacobian depends on the state")
    return _from_graph(module, params, parts)


#: operations after which D f^outer stays constant (affine with constant coefficients)
_AFFINE_FUNCS = {operator.add, operator.sub, operator.neg, operator.pos, operator.getitem}
_AFFINE_METHODS = {"add", "sub", "neg", "view", "reshape", "chunk", "split", "unbind", "narrow", "select",
                   "contiguous", "__getitem__", "squeeze", "unsqueeze", "flatten"}


def _from_graph(module: Any, params: dict[str, Any], parts: tuple[int, ...]) -> CellStructure | str:
    import torch
    import torch.fx as fx
    import torch.nn as nn
    import torch.nn.functional as F

    try:
        gm = fx.symbolic_trace(module)
    except Exception as exc:  # noqa: BLE001 - any tracing failure leaves the structure unknown
        return (f"torch.fx could not trace the cell ({type(exc).__name__}: {' '.join(str(exc).split())[:120]}); "
                "a cell without data-dependent Python control flow can be traced")
    mods = dict(gm.named_modules())
    uses: dict[str, list[tuple[Any, Any]]] = {k: [] for k in params}  # name -> [(node, feature node or "1")]
    linear_out: list[Any] = []
    for node in gm.graph.nodes:
        if node.op == "call_module":
            m = mods[node.target]
            owned = {f"{node.target}.{k}": k for k, _ in m.named_parameters() if f"{node.target}.{k}" in params}
            if isinstance(m, nn.Linear):
                for full, k in owned.items():
                    uses[full].append((node, node.args[0] if k == "weight" else "1"))
                linear_out.append(node)
            elif _torch_cell(m, ()) is not None:
                hx = node.args[1] if len(node.args) > 1 else node.kwargs.get("hx")
                h = hx[0] if isinstance(hx, (tuple, list)) else hx
                if h is None:
                    return f"{type(m).__name__} {node.target!r} is called without a state"
                for full, k in owned.items():
                    uses[full].append((node, {"weight_ih": node.args[0], "weight_hh": h}.get(k, "1")))
                linear_out.append(node)
            elif owned:
                return (f"parameter {next(iter(owned))!r} belongs to {type(m).__name__} {node.target!r}, not a linear map: "
                        "Thm 1's f = f^outer(W_j f_j^inner) holds for weights of nn.Linear / F.linear / torch.nn cells")
        elif node.op == "get_attr" and node.target in params:
            for user in node.users:
                if user.op == "call_function" and user.target is F.linear:
                    a = user.args
                    weight = a[1] if len(a) > 1 else user.kwargs.get("weight")
                    bias = a[2] if len(a) > 2 else user.kwargs.get("bias")
                    if weight is node:
                        uses[node.target].append((user, a[0] if a else user.kwargs.get("input")))
                    elif bias is node:
                        uses[node.target].append((user, "1"))
                    else:
                        return f"parameter {node.target!r} is the input of F.linear at node {user.name!r}, not its weight"
                    if user not in linear_out:
                        linear_out.append(user)
                else:
                    return (f"parameter {node.target!r} is used by {user.name!r} ({user.target}), not as the weight of a "
                            "linear map: write W x as nn.Linear / F.linear so its inner feature is the map's input")
    for k, u in uses.items():
        if len(u) != 1:
            return (f"parameter {k!r} is used {len(u)} times per step: Thm 1 needs each W_j used once "
                    "(f = f^outer(W_j f_j^inner))")
    cells = [n for n in linear_out if n.op == "call_module" and _torch_cell(mods[n.target], ()) is not None]
    if cells:  # a torch.nn cell applies tanh/sigmoid to its W_j f_j inside: never affine
        outer_ok, outer_why = False, (f"f^outer applies tanh/sigmoid to W_j f_j^inner inside torch.nn."
                                      f"{type(mods[cells[0].target]).__name__} {cells[0].target!r}: its Jacobian depends on the state")
    else:
        outer_ok, outer_why = _affine_after(gm, linear_out)
    feature_nodes = {k: u[0][1] for k, u in uses.items()}

    def features(z: Any, x: Any) -> dict[str, Any]:
        seen: dict[Any, Any] = {}
        wanted = {n for n in feature_nodes.values() if n != "1"}

        class Recorder(fx.Interpreter):
            def run_node(self, n: Any) -> Any:
                out = super().run_node(n)
                if n in wanted:
                    seen[n] = out
                return out

        state = tuple(z.split(list(parts), -1)) if parts else z
        with torch.no_grad():
            Recorder(gm).run(x, state)
        return {k: _ones(z) if n == "1" else seen[n] for k, n in feature_nodes.items()}

    return CellStructure(features, {k: int(params[k].shape[0]) for k in params}, outer_ok,
                     f"torch.fx graph: each of the {len(params)} parameters is the weight or bias of one linear map",
                     outer_why)


def _affine_after(gm: Any, linear_out: list[Any]) -> tuple[bool | None, str]:
    """Whether every operation downstream of a linear map is affine with constant coefficients."""
    import torch

    tainted = set(linear_out)
    for node in gm.graph.nodes:
        if node in tainted or node.op in ("placeholder", "get_attr", "output"):
            continue
        args = [a for a in node.all_input_nodes]
        if not any(a in tainted for a in args):
            continue
        tainted.add(node)
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", str(node.target))
        if node.op == "call_method" and node.target in _AFFINE_METHODS:
            continue
        if node.op == "call_function" and (node.target in _AFFINE_FUNCS or node.target in (torch.cat, torch.stack)):
            continue
        if node.op in ("call_function", "call_method") and name in ("mul", "truediv", "__mul__", "div"):
            others = [a for a in node.args if a not in args]
            if len(args) == 1 and all(isinstance(c, (int, float)) for c in others):
                continue
        if node.op == "call_module" and node in linear_out:
            continue
        return None, (f"operation {name} at node {node.name!r} acts on the output of a linear map: D f^outer is not "
                      "decided from the graph (constant when everything after the linear maps is affine)")
    return True, "every operation after the linear maps is affine with constant coefficients"
