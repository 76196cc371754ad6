r"""Your own recurrent cell through the KPFlow catalogue: ``flowcert.verify("rnn", cell, inputs=x)``.

A cell is any ``torch.nn.Module`` called as ``cell(x_t, h) -> h_next`` on a batch (the signature of
``torch.nn.RNNCell`` and ``GRUCell``); a cell whose state is a tuple, such as ``torch.nn.LSTMCell``'s
:math:`(h, c)`, takes and returns the tuple and is run on the one state :math:`z=[h; c]` (split before each
call, concatenated after; the readout reads h). The trajectory
:math:`z_t=F(z_{t-1},x_t;\theta)`, :math:`t=1..T`, is run from :math:`z_0` (``h0``, default zeros)
with θ the parameters of the cell that require grad, and the document is the one of
``flowcert kpflow analyze`` (:func:`flowcert.rnn.analyze.analyze_model`): Prop. 1, Cor. 1, Thm 1, Thm 2.

Prop. 1 and Cor. 1 need the cell differentiable; it is established structurally
(:func:`flowcert.rnn.smooth.smooth_cell`) or stated (``assume=["smooth"]``, status ``assumed``).
The state size :math:`H` is read from ``h0``, else from ``cell.hidden_size``, else found by probing
the cell once with zero states of each size its parameters suggest; when that is ambiguous the
error says to pass ``h0``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, ParamError, python_terms
from ..result import Result

if TYPE_CHECKING:
    from ..records import JSONObject
    from .analyze import KPFlowDocument, Model

__all__ = ["CellAnalysis", "CellParams", "analyze_cell", "cell_params", "is_module"]

#: The former name of the result type of :func:`analyze_cell` (a dict then; a :class:`Result` now).
CellAnalysis = Result


def is_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (without importing torch when it is not loaded)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


@dataclass(frozen=True)
class CellParams:
    """A user's cell with its inputs, validated: what :func:`analyze_cell` and ``verify("rnn", cell)`` run.

    Attributes
    ----------
    module : torch.nn.Module
        A private copy of the cell in ``dtype`` (the user's module is left untouched).
    x : torch.Tensor
        Inputs [B, T, I].
    z0 : torch.Tensor
        Initial state [B, H].
    targets : torch.Tensor or None
        [B, T, O], or None (random, seeded).
    assume : frozenset of str
        Hypotheses stated by the user (:data:`flowcert.rnn.smooth.ASSUMPTIONS`).
    name : str
        The class name of the user's cell.
    """

    module: Any
    x: Any
    z0: Any
    targets: Any
    assume: frozenset[str]
    name: str
    #: sizes of the state's parts for a cell that takes and returns a tuple (LSTMCell: (H, H)); () for one tensor
    parts: tuple[int, ...] = ()

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(B, T, H, I)."""
        B, T, I = self.x.shape
        return B, T, int(self.z0.shape[1]), I


def _tensor(value: Any, key: str, ndim: int, what: str, dtype: Any) -> Any:
    """``value`` (array, tensor or nested lists) as a float tensor of ``ndim`` dimensions."""
    import numpy as np
    import torch

    from ..arrays import to_numpy

    arr = to_numpy(value, key)
    if not isinstance(arr, np.ndarray):
        try:
            arr = np.array(arr, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParamError(key, f"expected an array of shape {what}, got {type(value).__name__}") from None
    if arr.dtype.kind not in "fiu":
        raise ParamError(key, f"expected real numbers, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ParamError(key, f"expected shape {what}, got {tuple(arr.shape)}")
    if not np.isfinite(arr).all():
        from ..schema import check_finite

        check_finite(np.asarray(arr, dtype=np.float64), key)  # names the first entry: [b][t][i] is NaN
    return torch.as_tensor(np.asarray(arr, dtype=np.float64)).to(dtype)


def _returns_state(module: Any, x0: Any, state: Any) -> bool:
    """Whether ``module(x0, state)`` runs and returns a state of the same structure and shapes."""
    import torch

    try:
        with torch.no_grad():
            out = module(x0, state) if state is not None else module(x0)
    except Exception:  # noqa: BLE001 - a state the cell does not take
        return False
    if isinstance(state, torch.Tensor):
        return isinstance(out, torch.Tensor) and out.shape == state.shape
    return (isinstance(out, (tuple, list)) and len(out) == len(state)
            and all(isinstance(o, torch.Tensor) and o.shape == s.shape for o, s in zip(out, state)))


def _state_layout(module: Any, x0: Any) -> tuple[int, tuple[int, ...]]:
    """(H, parts): one state tensor [B, H] (parts ``()``), or a tuple state such as an LSTM's (h, c), found from
    ``hidden_size`` (a tensor of that size, else two of it) or from a call without a state."""
    import torch

    H = getattr(module, "hidden_size", None)
    zeros = lambda n: torch.zeros(x0.shape[0], n, dtype=x0.dtype)  # noqa: E731
    if isinstance(H, int) and not isinstance(H, bool) and H > 0:
        if not _returns_state(module, x0, zeros(H)) and _returns_state(module, x0, (zeros(H), zeros(H))):
            return 2 * H, (H, H)
        return H, ()
    try:
        return _state_size(module, x0), ()
    except InputError:
        try:
            with torch.no_grad():
                out = module(x0)
        except Exception:  # noqa: BLE001 - the cell needs a state: the probing error stands
            out = None
        if (isinstance(out, (tuple, list)) and len(out) > 1 and all(isinstance(o, torch.Tensor) and o.dim() == 2 for o in out)
                and _returns_state(module, x0, tuple(zeros(o.shape[1]) for o in out))):
            parts = tuple(int(o.shape[1]) for o in out)
            return sum(parts), parts
        raise


def _is_tuple_state(h0: Any) -> bool:
    """``h0`` given as a tuple or list of [B, H_i] arrays (an LSTM's (h0, c0)), not as one nested list."""
    import numpy as np

    return isinstance(h0, (tuple, list)) and len(h0) > 1 and all(
        not isinstance(h, (list, tuple)) and np.ndim(h) == 2 for h in h0)


def _state_size(module: Any, x0: Any) -> int:
    """H from ``hidden_size``, else by probing the cell with zero states of the sizes its parameters suggest."""
    H = getattr(module, "hidden_size", None)
    if isinstance(H, int) and not isinstance(H, bool) and H > 0:
        return H
    import torch

    dims = sorted({int(n) for p in module.parameters() for n in p.shape})
    fits = []
    for h in sorted(set(dims) | {2 * n for n in dims}):
        try:
            with torch.no_grad():
                out = module(x0, torch.zeros(x0.shape[0], h, dtype=x0.dtype))
        except Exception:  # noqa: BLE001 - a size the cell does not take
            continue
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (x0.shape[0], h):
            fits.append(h)
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise InputError("h0: cannot tell the cell's state size (no hidden_size attribute, and no state size "
                         f"among {sorted(set(dims) | {2 * n for n in dims})} gives cell(x_t, h) of shape [B, H] "
                         f"with x_t of input size I = {x0.shape[1]}); check the inputs' size I, or pass h0=, "
                         "a [B, H] array")
    raise InputError(f"h0: the cell's state size is ambiguous (H in {fits} all give cell(x_t, h) of shape [B, H]); "
                     "pass h0=, a [B, H] array")


def cell_params(cell: Any, inputs: Any, *, h0: Any = None, targets: Any = None, assume: Any = None,
                dtype: Any = None) -> CellParams:
    """Validate a cell and its inputs (see :func:`analyze_cell` for the parameters).

    Parameters
    ----------
    cell : torch.nn.Module
        Called as ``cell(x_t, h) -> h_next`` on a batch; a deep copy converted to ``dtype`` is kept and
        called once to check the signature (the user's module is left untouched).
    inputs : array or Tensor
        [B, T, I] with B, T, I >= 1, finite real numbers (numpy, torch tensor or nested lists).
    h0 : array or Tensor, optional
        Keyword-only. The initial state [B, H]; default zeros, with H from ``cell.hidden_size``, else
        the one state size among those its parameters suggest for which the cell returns [B, H].
    targets : array or Tensor, optional
        Keyword-only. [B, T, O] targets of the readout loss; None: random later (seeded).
    assume : str or list of str, optional
        Keyword-only. Hypotheses stated instead of checked, among
        :data:`flowcert.rnn.smooth.ASSUMPTIONS` (``"smooth"``).
    dtype : torch.dtype, optional
        Keyword-only. A floating dtype for the copy of the cell and the tensors; None: ``torch.float64``.

    Returns
    -------
    CellParams
        The copied module, ``x`` [B, T, I], ``z0`` [B, H], ``targets`` (or None), the assumptions and
        the cell's class name.

    Raises
    ------
    flowcert.errors.InputError
        Not a module, inputs missing or of the wrong shape, an ``h0`` or ``targets`` that does not fit,
        an unknown assumption, a ``dtype`` that is not a floating torch dtype, a state size that
        cannot be told (pass ``h0``), or a cell whose call fails or whose output is not a [B, H]
        tensor; one line naming the key.
    """
    import torch

    from .forward_ad import load_forward_ad
    from .smooth import ASSUMPTIONS

    if not is_module(cell):
        raise InputError(f"params: expected a torch.nn.Module cell, got {type(cell).__name__}")
    if inputs is None:
        raise InputError("inputs: required with a torch.nn.Module cell (an array or tensor of shape [B, T, I])")
    names = [assume] if isinstance(assume, str) else list(assume or ())
    for a in names:
        if a not in ASSUMPTIONS:
            raise InputError(f"assume: unknown assumption {a!r} (known: {', '.join(ASSUMPTIONS)})")
    dt = torch.float64 if dtype is None else dtype
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise InputError(f"dtype: expected a floating torch.dtype, got {dtype!r}")
    x = _tensor(inputs, "inputs", 3, "[B, T, I]", dt)
    B, T, I = x.shape
    if min(B, T, I) < 1:
        raise ParamError("inputs", f"expected shape [B, T, I] with B, T, I >= 1, got {tuple(x.shape)}")
    mod = copy.deepcopy(cell).to(dt)
    _check_input_size(mod, I)
    parts: tuple[int, ...] = ()
    if h0 is None:
        H, parts = _state_layout(mod, x[:, 0])
        z0 = torch.zeros(B, H, dtype=dt)
    elif _is_tuple_state(h0):
        zs = [_tensor(h, f"h0[{i}]", 2, f"[B, H_{i}] with B = {B}", dt) for i, h in enumerate(h0)]
        for i, z in enumerate(zs):
            if z.shape[0] != B:
                raise ParamError(f"h0[{i}]", f"expected shape [B, H_{i}] with B = {B}, got {tuple(z.shape)}")
        parts, z0 = tuple(int(z.shape[1]) for z in zs), torch.cat(zs, -1)
    else:
        z0 = _tensor(h0, "h0", 2, f"[B, H] with B = {B}", dt)
        if z0.shape[0] != B:
            raise ParamError("h0", f"expected shape [B, H] with B = {B}, got {tuple(z0.shape)}")
    y = None
    if targets is not None:
        y = _tensor(targets, "targets", 3, f"[B, T, O] with B, T = {B}, {T}", dt)
        if tuple(y.shape[:2]) != (B, T):
            raise ParamError("targets", f"expected shape [B, T, O] with B, T = {B}, {T}, got {tuple(y.shape)}")
    if h0 is not None:
        _check_state_size(mod, int(z0.shape[1]), parts)
    state = tuple(z0.split(list(parts), -1)) if parts else z0
    shown = [[B, n] for n in parts] if parts else list(z0.shape)
    with torch.no_grad():
        try:
            out = mod(x[:, 0], state)
        except Exception as exc:  # noqa: BLE001 - the user's cell refuses the call: bad input, said plainly
            if h0 is not None:
                _blame_state(mod, x[:, 0], int(z0.shape[1]))
            raise InputError(f"params: cell(x_t, h) fails with x_t [{B}, {I}] and h {shown} "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    if not _returns_state(mod, x[:, 0], state):
        got = (f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) else
               type(out).__name__ if not isinstance(out, torch.Tensor) else f"shape {tuple(out.shape)}")
        want = f"a tuple of tensors of shapes {shown}" if parts else f"a tensor of shape {shown}"
        raise InputError(f"params: cell(x_t, h) must return the next state in the form it takes, {want}; got {got} "
                         "(a cell whose state is a tuple, like LSTMCell's (h, c), takes and returns the tuple: "
                         "pass h0 as a tuple of [B, H_i] arrays)")
    load_forward_ad()  # valid: the analysis's dual numbers, without torch's jit.script deprecation notes
    return CellParams(mod, x, z0, y, frozenset(names), type(cell).__name__, parts)


def _declared(module: Any, name: str) -> int | None:
    """The module's ``input_size`` / ``hidden_size`` attribute when it is a positive int (torch's cells)."""
    n = getattr(module, name, None)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _check_input_size(module: Any, I: int) -> None:
    """I against the cell's declared ``input_size`` (torch's cells).

    Raises
    ------
    flowcert.errors.ParamError
        ``inputs``: I differs from ``input_size``, naming both.
    """
    want = _declared(module, "input_size")
    if want is not None and I != want:
        raise ParamError("inputs", f"the cell takes input_size = {want} features, got I = {I} (inputs are [B, T, I])")


def _check_state_size(module: Any, H: int, parts: tuple[int, ...]) -> None:
    """A given h0's size (each part's, for a tuple state) against the cell's declared ``hidden_size``.

    Raises
    ------
    flowcert.errors.ParamError
        ``h0`` (or ``h0[i]``): the size differs from ``hidden_size``, naming both.
    """
    want = _declared(module, "hidden_size")
    if want is None:
        return
    for i, n in enumerate(parts or (H,)):
        if n != want:
            raise ParamError(f"h0[{i}]" if parts else "h0", f"the cell takes hidden_size = {want}, got H = {n} (h0 is [B, H])")


def _blame_state(module: Any, x0: Any, H: int) -> None:
    """A cell with no ``hidden_size`` that refuses the given h0: when it runs with a state of another size
    (found as without h0), that size is what h0 should have.

    Raises
    ------
    flowcert.errors.ParamError
        ``h0``: the cell takes H = n, got H.
    """
    try:
        found, _ = _state_layout(module, x0)
    except InputError:
        return
    if found != H:
        raise ParamError("h0", f"the cell takes a state of size H = {found}, got H = {H} (h0 is [B, H])")


def verify_cell(p: CellParams, *, seed: int = 0, mode: str = "stored", consensus: str | None = None,
                probes: int = 64, consensus_op: str = "PKP", exact_max: int | None = None) -> tuple[KPFlowDocument, Any]:
    """The ``kpflow analyze`` document of a validated cell (``theorems`` as typed
    :class:`~flowcert.catalogue.TheoremResult` objects, encoded at the edge), and its trajectory (the run)."""
    import torch

    from ..gpu.rnn.cells import ModuleCell
    from ..gpu.rnn.operators import Trajectory
    from .analyze import EXACT_MAX, analyze_model
    from .smooth import assumed, smooth_cell

    torch.set_num_threads(1)
    B, T, H, I = p.shape
    dt = p.x.dtype
    mc = ModuleCell(p.module, H, I, p.parts)
    theta = mc.parameters()
    gen = torch.Generator().manual_seed(int(seed))
    y = (torch.randn(B, T, 3, generator=gen, dtype=torch.float64).to(dt) if p.targets is None else p.targets)
    W_out = (torch.randn(y.shape[-1], H, generator=gen, dtype=torch.float64) / math.sqrt(H)).to(dt)
    if p.parts:  # a tuple state (h, c, ...): the readout reads its first part, h
        W_out[:, p.parts[0]:] = 0.0
    b_out = torch.zeros(y.shape[-1], dtype=dt)
    with torch.no_grad():
        tr = Trajectory.run(mc, theta, p.x, p.z0)
    if tuple(tr.Z.shape) != (B, T, H) or not bool(torch.isfinite(tr.Z).all()):
        raise InputError("params: the cell's trajectory is not finite or not of shape [B, T, H]")
    m: Model = {"cell": mc, "theta": theta, "x": p.x, "y": y, "W_out": W_out, "b_out": b_out, "tr": tr}
    smooth = assumed("smooth") if "smooth" in p.assume else smooth_cell(p.module)
    params: JSONObject = {"cell": "module", "module": p.name, "B": B, "T": T, "H": H, "I": I, "seed": seed,
              "parameters": {k: list(v.shape) for k, v in theta.items()},
              "targets": "given" if p.targets is not None else "random", "dtype": str(dt).replace("torch.", "")}
    if p.parts:
        params["state_parts"] = list(p.parts)
    if p.assume:
        params["assume"] = sorted(p.assume)
    doc = analyze_model(m, params, mode=mode, exact_max=EXACT_MAX if exact_max is None else exact_max, seed=seed,
                        consensus=consensus, probes=probes, consensus_op=consensus_op, smooth=smooth, typed=True)
    return doc, tr


@python_terms
def analyze_cell(cell: Any, inputs: Any, *, h0: Any = None, targets: Any = None, assume: Any = None,
                 mode: str = "stored", dtype: Any = None, seed: int = 0, consensus: str | None = None,
                 probes: int = 64, consensus_op: str = "PKP", exact_max: int | None = None) -> Result:
    r"""KPFlow analysis of your own recurrent cell: ``flowcert.verify("rnn", cell, inputs=x)`` with the
    analysis options.

    Parameters
    ----------
    cell : torch.nn.Module
        Called as ``cell(x_t, h) -> h_next`` on a batch; left untouched (a copy is converted to
        ``dtype``); θ = its parameters that require grad.
    inputs : array or Tensor
        [B, T, I] (numpy of any real dtype, or a torch tensor on any device).
    h0 : array or Tensor or tuple of them, optional
        [B, H]; or a tuple of [B, H_i] arrays for a cell whose state is a tuple (``(h0, c0)`` of an
        LSTM); default zeros, H from ``cell.hidden_size`` (an ``LSTMCell``: (H, H)), else found by
        probing the cell.
    targets : array or Tensor, optional
        [B, T, O] for the readout loss :math:`\tfrac12\|W_{out}z+b_{out}-y^*\|^2`; default random
        (O = 3). W_out is random :math:`\mathcal N(0,1/H)`, b_out = 0 (both seeded by ``seed``).
    assume : list of str, optional
        ``["smooth"]``: state that the cell is differentiable instead of having it checked
        (reported ``assumed``).
    mode : {"stored", "recompute"}
    dtype : torch.dtype, optional
        float64 by default.
    seed : int
    consensus, probes, consensus_op, exact_max
        As the CLI's ``--consensus``, ``--probes``, ``--consensus-op`` (and the dense-reference budget).

    Returns
    -------
    Result
        The theorems Prop. 1, Cor. 1 (decided once the cell is known smooth), Thm 1 (decided when
        the cell's structure is read: torch's RNN, GRU and LSTM cells, or a torch.fx graph whose
        weights are each used once by a linear map, :mod:`flowcert.rnn.structure`), Thm 2 (decided
        when every Jacobian is proved invertible: in exact rationals for B·T ≤ 64 and H ≤ 8, above that by
        rigorous float64 bounds while the Jacobian stack fits ``FLOAT_STACK_BYTES``; ``cross_check.details.
        jacobian_checks`` names the path and its limits); ``sections`` holds the identities and
        effective ranks; ``run`` the trajectory. ``to_json()`` is the ``kpflow analyze --json``
        document. Dict access (the former return type) works for one release.

    Raises
    ------
    flowcert.errors.InputError
        Bad inputs, ``h0``, ``targets``, ``assume``, or a cell of the wrong signature (a ``ValueError``).
    """
    if mode not in ("stored", "recompute"):
        raise InputError(f"mode: must be 'stored' or 'recompute', got {mode!r}")
    from ..api import checked_seed

    seed = checked_seed(seed) or 0
    p = cell_params(cell, inputs, h0=h0, targets=targets, assume=assume, dtype=dtype)
    doc, tr = verify_cell(p, seed=seed, mode=mode, consensus=consensus, probes=probes, consensus_op=consensus_op,
                          exact_max=exact_max)
    return Result.from_document(doc, p, tr)
