"""The library face: :func:`verify` on a path, a mapping of numpy arrays or a parameter object.

``flowcert.verify("gaussian", {"A": A, "B": B, "V": V, "b": b, "mu0": mu0, "Sigma0": S0})`` runs
the same job as ``flowcert verify gaussian --params FILE`` and returns a
:class:`~flowcert.result.Result` whose :meth:`~flowcert.result.Result.to_json` is the CLI's
``--json`` document.
"""

from __future__ import annotations

from typing import Any

from .result import Result

__all__ = ["verify"]


def verify(system: str, params: Any, *, simulate: bool = False, seed: int | None = None) -> Result:
    """Decide every catalogue theorem of ``system`` on ``params``.

    Parameters
    ----------
    system : str
        A registered system (``"gaussian"``, ``"attention"``, ``"rnn"``; :data:`flowcert.systems.REGISTRY`).
    params : str or os.PathLike or mapping or parameter object
        A parameter file (JSON or ``.npz``), a mapping with the file's keys whose values are numpy
        arrays, nested lists or numbers, or an already validated parameter object.
    simulate : bool
        Cross-validate by simulation (``--simulate``).
    seed : int, optional
        Seed of the random draws (``--seed``); None: the system's default (gaussian 0, attention
        the file's ``seed``), as on the command line.

    Returns
    -------
    Result
        ``.theorems`` by id, ``.regime`` / ``.simulation`` where present, ``.to_json()``.

    Raises
    ------
    flowcert.errors.InputError
        Unknown system or bad parameters (:class:`~flowcert.errors.ParamError` names the key).
    """
    from .errors import InputError
    from .systems import get_system

    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise InputError(f"seed: must be a non-negative integer, got {seed!r}")
    sysobj = get_system(system)
    p = sysobj.load(params, command="verify")
    doc, run = sysobj.verify_run(p, simulate=simulate, seed=seed)
    return Result(sysobj.name, doc, p, run)
