r"""The Gaussian Transformer on the public face (gaussian paper): catalogue, asymptotics, reach, parameters.

* :mod:`.catalogue`: the ``verify gaussian`` job and the entries of Prop. 2.1, Lemma 3.1, Thm 3.3,
  Lemma 2.3 and Prop. 2.4 for eq. (7),
  :math:`\dot\mu=(A+V+V\Sigma B)\mu+b`, :math:`\dot\Sigma=A\Sigma+\Sigma A^\top+V\Sigma B\Sigma+\Sigma B^\top\Sigma V^\top`;
* :mod:`.asymptotics`: Thm 4.1, 4.7, 4.8, 4.11, Lemma 4.4 and the regime (Table 1);
* :mod:`.reach`: ``flowcert reach gaussian`` and the controls files (Thm 3.3);
* :mod:`.params`: the parameter schema of the system;
* :mod:`.system`: the system's :class:`flowcert.system.System` object (load, verify, simulate,
  codegen, reach, report section) listed in :mod:`flowcert.systems`.

The package re-exports the names of the former module ``flowcert.gaussian`` (:mod:`.catalogue`),
except :func:`verify`, which returns a :class:`flowcert.result.Result` as :func:`flowcert.verify`
does (dict access to the former document works for one release); the document itself is
:func:`flowcert.gaussian.catalogue.verify`.
"""

from typing import Any

from .catalogue import (
    coefficients,
    lemma_2_3,
    lemma_3_1,
    particle_cross_check,
    prop_2_1,
    prop_2_4,
    REACH_BUDGET,
    REACH_MAX_COND,
    thm_3_3,
    ZERO_TOL,
)


def verify(p: Any, simulate: bool = False, seed: int = 0, *, checks: Any = None) -> Any:
    """Every gaussian catalogue theorem on ``p`` (a ``GaussianParams``, a mapping or a path):
    :func:`flowcert.verify` for ``"gaussian"``; returns a :class:`~flowcert.result.Result`.

    Parameters
    ----------
    p : GaussianParams, mapping or path
        The parameters of eq. (7): a validated ``GaussianParams``, a mapping with the parameter
        file's keys (``A``, ``B``, ``V``, ``b``, ``mu0``, ``Sigma0``, ...; numpy arrays, torch tensors,
        nested lists or numbers), or the path of a parameter file (JSON or ``.npz``).
    simulate : bool, default False
        Cross-validate the predictions by simulation (``--simulate``).
    seed : int, default 0
        Seed of the random draws of the cross-checks (``--seed``); a non-negative integer.
    checks : str or list of str, optional
        Keyword-only. The cross-checks to run with ``simulate=True``, among
        ``flowcert.get_system("gaussian").checks`` (``moments``, ``particles``, ``relu``,
        ``transport``, ``reach``, ``perturbation``); None: the system's default set.

    Returns
    -------
    Result
        ``.theorems`` by id (Prop. 2.1, Lemma 2.3, Prop. 2.4, Lemma 3.1, Thm 3.3, ...), ``.status``,
        ``.regime`` and, with ``simulate``, ``.simulation``; ``.to_json()`` is the CLI's ``--json``
        document.

    Raises
    ------
    flowcert.errors.InputError
        Bad parameters (:class:`~flowcert.errors.ParamError` names the key), a bad keyword value
        (``simulate`` not a bool, a negative ``seed``) or an unknown cross-check name. A ``ValueError``.
    """
    from ..api import verify as verify_any

    return verify_any("gaussian", p, simulate=simulate, seed=seed, checks=checks)

__all__ = [
    "coefficients",
    "lemma_2_3",
    "lemma_3_1",
    "particle_cross_check",
    "prop_2_1",
    "prop_2_4",
    "REACH_BUDGET",
    "REACH_MAX_COND",
    "thm_3_3",
    "verify",
    "ZERO_TOL",
]
