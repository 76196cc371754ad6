"""The library face: :func:`verify`, one entry point for every system.

``flowcert.verify("gaussian", {"A": A, "B": B, "V": V, "b": b, "mu0": mu0, "Sigma0": S0})`` runs the
same job as ``flowcert verify gaussian --params FILE`` and returns a :class:`~flowcert.result.Result`
whose :meth:`~flowcert.result.Result.to_json` is the CLI's ``--json`` document.
``flowcert.verify("rnn", torch.nn.GRUCell(3, 8), inputs=x)`` checks the KPFlow theorems on your own
recurrent cell (:func:`flowcert.rnn.analyze_cell`).

Every keyword is checked before any work: a value of the wrong type (``simulate="yes"``), an
unknown cross-check name, or a keyword the system does not take is an :class:`~flowcert.errors.InputError`
(a ``ValueError``) naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import InputError, python_terms
from .result import Result

__all__ = ["check_names", "checked_seed", "strict_flag", "verify"]


def strict_flag(name: str, value: Any) -> bool:
    """A strict boolean keyword (``True``/``False``; numpy booleans too): ``"yes"`` or ``1`` is refused."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(f"{name}: must be True or False, got {value!r}")


def checked_seed(seed: Any) -> int | None:
    """A ``seed=`` keyword: None, or a non-negative integer (numpy integers too); a bool or a negative is refused."""
    import numpy as np

    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise InputError(f"seed: must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_names(system: Any, checks: Any) -> frozenset[str] | None:
    """Validate ``checks=`` against the cross-checks a system declares (``System.checks``).

    Parameters
    ----------
    system : System
        The system object.
    checks : None, str or iterable of str
        None: the system's default set; a name or names of its cross-checks.

    Returns
    -------
    frozenset of str or None

    Raises
    ------
    InputError
        Not a string or an iterable of strings, or a name the system does not have (the message
        lists the names it has).
    """
    if checks is None:
        return None
    names = dict(getattr(system, "checks", {}))
    if isinstance(checks, str):
        checks = [checks]
    if not isinstance(checks, Iterable) or isinstance(checks, (bytes, dict)):
        raise InputError(f"checks: expected a name or a list of names, got {type(checks).__name__}")
    chosen = list(checks)
    for c in chosen:
        if not isinstance(c, str):
            raise InputError(f"checks: expected names (str), got {c!r}")
        if c not in names:
            raise InputError(f"checks: system '{system.name}' has no cross-check {c!r} "
                             f"(it has: {', '.join(names) or 'none'})")
    return frozenset(chosen)


@python_terms
def verify(system: str, params: Any, *, simulate: bool = False, checks: Any = None, seed: int | None = None,
           progress: bool | None = None, inputs: Any = None, h0: Any = None, targets: Any = None,
           assume: Any = None) -> Result:
    """Decide every catalogue theorem of ``system`` on ``params``.

    Parameters
    ----------
    system : str
        ``"gaussian"``, ``"attention"`` or ``"rnn"`` (:data:`flowcert.systems.REGISTRY`).
    params : path, mapping, parameter object, or torch.nn.Module
        A parameter file (JSON or ``.npz``); a mapping with the file's keys whose values are numpy
        arrays (any real dtype), torch tensors (any device and floating dtype: converted to float64,
        with a :class:`~flowcert.errors.PrecisionWarning` when the format was not float64), nested
        lists or numbers; an already validated parameter object (``Result.params``); or, for
        ``rnn``, your own recurrent cell: a ``torch.nn.Module`` called as ``cell(x_t, h) -> h_next``
        (``torch.nn.RNNCell``, ``GRUCell``, or a module of your own), with ``inputs=``.
    simulate : bool
        Cross-validate the predictions by simulation (``--simulate``).
    checks : str or list of str, optional
        Which cross-checks to run with ``simulate=True``; None: the system's default set. The names
        a system has are ``flowcert.get_system(name).checks`` (gaussian: ``moments``, ``particles``,
        ``relu``, ``transport``, ``reach``, ``perturbation``; attention: ``simulation``,
        ``consensus_run``, ``projection``, ``gradient``, ``oja``; rnn: ``finite_differences``,
        ``identities``). Validated here; exactly the named cross-checks run (None with
        ``simulate=True``: the default set, ``flowcert.get_system(name).default_checks`` where a system
        declares one, else all). A cross-check left out is ``skipped`` with a reason naming what to pass
        (``checks=[...]``).
    seed : int, optional
        Seed of the random draws (``--seed``); None: the system's default (gaussian 0, attention the
        file's ``seed``, rnn 0).
    progress : bool, optional
        Show a progress bar (tqdm, on stderr) on the long steps of the job (the particle study of
        Prop. 2.1); None: only when stderr is a terminal.
    inputs : array or Tensor, optional
        rnn with a module cell: the input sequences, shape [B, T, I].
    h0 : array or Tensor, optional
        rnn with a module cell: the initial state [B, H]; default zeros, with H read from the cell
        (``hidden_size``, the shapes of its parameters, or one probing call).
    targets : array or Tensor, optional
        rnn with a module cell: [B, T, O] targets of the readout loss; default random (seeded).
    assume : list of str, optional
        rnn with a module cell: hypotheses you state instead of having them checked; ``"smooth"``
        (the cell is differentiable in its state and parameters). Reported with status
        ``assumed``, never ``holds``.

    Returns
    -------
    Result
        ``.theorems`` by id, ``.status``, ``.summary()``, ``.regime`` / ``.simulation`` where present,
        ``.to_json()`` (the CLI's ``--json`` document).

    Raises
    ------
    flowcert.errors.InputError
        Unknown system, bad parameters (:class:`~flowcert.errors.ParamError` names the key), a bad
        keyword value, or a keyword the system does not take. A ``ValueError``.
    """
    from .systems import get_system

    simulate = strict_flag("simulate", simulate)
    seed = checked_seed(seed)
    if progress is not None:
        strict_flag("progress", progress)
    sysobj = get_system(system)
    chosen = check_names(sysobj, checks)
    options = {k: v for k, v in (("inputs", inputs), ("h0", h0), ("targets", targets), ("assume", assume))
               if v is not None}
    takes = tuple(getattr(sysobj, "load_options", ()))
    for k in options:
        if k not in takes:
            raise InputError(f"{k}: system '{sysobj.name}' takes no {k}= "
                             + (f"(only {', '.join(takes)} with a torch.nn.Module cell)" if takes else "(rnn cells only)"))
    p = sysobj.load(params, command="verify", **options) if options or takes else sysobj.load(params, command="verify")
    from .engine import explain_skips
    from .progress import inherited

    with inherited(progress):
        run = sysobj.verify_run(p, simulate=simulate, seed=seed, checks=chosen)
    explain_skips(run.theorems, sysobj, simulate, chosen)
    return Result.from_document(run.document, p, run.run)
