r"""The ``attention`` system's public face: parameters, simulation, the theorem catalogue (one
module per paper) and equilibria (multistability paper; consensus paper).

The model (see :mod:`flowcert.symbolic.attention.field`):

.. math::

    \dot x_i = (I - x_i x_i^\top W)\sum_{\eta=1}^h V_\eta \sum_j A^\eta_{ij}(t, X)\, x_j,\qquad
    A^\eta_{ij} = c\,\operatorname{softmax}_{j\in\mathcal N_i}\big(\beta\, x_i^\top Q_\eta(t)^\top K_\eta(t) x_j\big).

Public API
----------
``load(path)`` / ``parse(raw)``
    -> :class:`~flowcert.attention.params.AttentionParams` (``ParamError`` on bad input).
``field(p, backend="numpy")``
    -> ``f(t, X) -> F`` for one or a batch of configurations (numpy or torch kernels).
``simulate(p, t_end=None, samples=None, device="cpu", dt=None, seed=None)``
    -> the ``simulation`` JSON dict: one batched torch RK4 run from ``X0`` (or ``samples`` random
    initial conditions, with basin statistics when the multistability module can classify);
    time-varying heads are evaluated vectorised on the RK4 half-step grid, one chunk of steps at
    a time (:meth:`AttentionParams.kernel_args_many`), not per stage.
``integrate(p, t_end=None, X0=None)``
    -> :class:`~flowcert.numeric.attention.integrate.TokenTrajectory` (scipy DOP853 on the manifold).
``verify(p, simulate=False, seed=None)``
    -> a :class:`flowcert.result.Result` (as :func:`flowcert.verify`; dict access to the former
    document works for one release). ``verify_document`` is the ``verify`` JSON document; ``theorems`` collects ``theorems(p, simulate=, seed=)`` of
    the two catalogues, :mod:`flowcert.attention.multistability` and :mod:`flowcert.attention.consensus`
    (:data:`CATALOGUES`, imported by name, not looked up); each returns a list of
    :class:`~flowcert.catalogue.TheoremResult`. With ``simulate`` the document also has
    ``simulation`` (one run, :func:`simulate`; ``limit_class`` from the multistability classifier
    once the run has settled, ``agrees`` from its certified verdict, else None — a catalogue
    module may set it). With time-varying heads the record is built from the consensus
    catalogue's own run (``theorems_with_run``; scipy DOP853 on the manifold), not a second
    fixed-step RK4 run.
``equilibria(p)``
    -> the ``equilibria attention`` JSON document (multistability module).
``codegen_source(structure, backend)``
    -> source of the generated kernel (``numpy``, ``torch`` or ``c``).

The system's :class:`flowcert.system.System` object, listed in :mod:`flowcert.systems`, is
:data:`flowcert.attention.system.SYSTEM`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .flow import field, integrate, reduced  # noqa: F401 - the public field and integrator
from .params import AttentionParams, load_attention, parse_attention

if TYPE_CHECKING:
    from ..records import Document
    from .records import EquilibriaDocument, SimulationRecord

__all__ = ["CATALOGUES", "AttentionParams", "codegen_source", "equilibria", "field", "integrate", "load", "parse",
           "simulate", "verify", "verify_document", "verify_results"]

#: Catalogue modules (``flowcert.attention.<name>``), each exposing ``theorems(p, *, simulate, seed)``.
CATALOGUES = ("multistability", "consensus")


def load(path: str) -> AttentionParams:
    """Read and validate a parameter file (see :mod:`flowcert.attention.params`)."""
    return load_attention(path)


def parse(raw: Mapping[str, object]) -> AttentionParams:
    """Validate a mapping (see :mod:`flowcert.attention.params`)."""
    return parse_attention(raw)


def default_dt(p: AttentionParams) -> float:
    """RK4 step: 0.01, or 0.001 for time-varying heads (the consensus paper's 5 Hz D(t))."""
    return 1e-3 if p.time_varying else 1e-2


def _tensor_args(p: AttentionParams, n: int, device: Any) -> Any:
    import torch

    def at(t: float) -> list:
        return [torch.as_tensor(np.array(a), dtype=torch.float64, device=device)
                for a in p.kernel_args(t, n, square=p.time_varying)]  # constant: an m x d query/key pair as it is

    if not p.time_varying:
        return at(0.0)  # a sequence: no per-stage time evaluation (and no device sync)
    return at


def _grid_args(p: AttentionParams, n: int, device: Any) -> Callable[[np.ndarray], list]:
    """``times -> kernel arguments`` stacked over ``times`` (one vectorised evaluation of the
    time-varying heads per chunk of RK4 steps, :meth:`AttentionParams.kernel_args_many`)."""
    import torch

    def grid(times: np.ndarray) -> list:
        return [torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64, device=device)
                for a in p.kernel_args_many(times, n)]

    return grid


def simulate(p: AttentionParams, t_end: float | None = None, samples: int | None = None, device: str = "cpu",
             dt: float | None = None, seed: int | None = None) -> SimulationRecord:
    """Batched torch runs on the manifold with the retraction after every step.

    Without ``samples``: one run from ``X0`` (random tokens from ``seed`` if the file has none),
    adaptive Dormand–Prince 5(4) (:func:`flowcert.gpu.attention.simulate_adaptive`; ``dt`` null,
    ``steps``/``rejected_steps`` reported, at most as many attempts as ``t_end`` over
    :func:`default_dt`, ``t_reached`` short of ``t_end`` if they run out), or fixed-step RK4 when
    ``dt`` is given (:func:`flowcert.gpu.attention.simulate`).
    With ``samples``: ``samples`` random initial conditions to rest, classified by the
    multistability module (Newton on the equilibrium equations + certificate), with Wilson
    intervals (``basins``).
    """
    import torch

    from ..gpu import attention as ga

    explicit = t_end is not None
    t_end = p.t_end if t_end is None else t_end
    fixed_dt = dt
    dt = default_dt(p) if dt is None else dt
    seed = p.seed if seed is None else seed
    dev = torch.device(device)
    if samples:
        from ..errors import InputError
        from . import enumeration

        if p.time_varying:
            raise InputError("--samples: basin statistics need constant heads (runs go to rest); "
                             "the parameters have time-varying entries")

        # runs go to rest: the horizon is at least 400 unless --t-end says otherwise
        return enumeration.basins(p, samples, seed=seed, device=dev, dt=0.05 if dt == 1e-2 else dt,
                                     t_max=t_end if explicit or "t_end" in p.given else max(t_end, 400.0))
    X0 = p.initial_tokens() if p.X0 is not None else p.initial_tokens(None, np.random.default_rng(seed))
    budget = max(1, int(np.ceil(t_end / default_dt(p))))  # never more attempts than the fixed-step run's steps
    W = None if p.W is None else torch.as_tensor(np.array(p.W), device=dev)
    red = reduced(p, X0)  # constant low-rank heads: the run stays in k <= n + rank(V) dimensions
    q, sub = red if red is not None else (p, None)
    X0t = torch.as_tensor(np.array(X0 if sub is None else q.X0), device=dev)[None]
    if fixed_dt is None:
        run = ga.simulate_adaptive(q.structure, X0t, _tensor_args(q, q.n, dev), t_end, W=W, max_steps=budget)
        X, t_reached, drift = run.X[0].cpu().numpy(), float(run.t[0]), run.max_drift
        step: SimulationRecord = {"dt": None, "integrator": "Dormand-Prince 5(4) + retraction (torch)",
                                "steps": int(run.steps[0]), "rejected_steps": int(run.rejected[0]),
                                "rtol": 1e-9, "atol": 1e-11}
    else:
        steps = max(1, int(np.ceil(t_end / fixed_dt)))
        grid = _grid_args(p, p.n, dev) if p.time_varying else None
        traj = ga.simulate(q.structure, X0t, _tensor_args(q, q.n, dev), t_end, steps, W=W, args_grid=grid)
        X, t_reached, drift = traj.X[0].cpu().numpy(), t_end, traj.max_drift
        step = {"dt": t_end / steps, "integrator": "RK4 + retraction (torch)", "steps": steps}
    if sub is not None:
        X = sub.lift(X)
    speed = float(np.abs(field(p)(t_reached, X)).max())  # the full field at the lifted tokens
    out: SimulationRecord = {"t_end": t_end, "t_reached": t_reached, "blowup_time": None, **step, "device": str(dev),
                           "X0": X0.tolist(), "X_final": X.tolist(), "max_drift": drift,
                           "final_speed": speed, "limit_class": None, "limit_classes": None, "agrees": None,
                           "reduction": None if sub is None else sub.record()}
    try:
        from . import enumeration

        out.update(enumeration.classify_run(p, X, t=t_reached))
    except (ImportError, AttributeError):
        out["limit_class_reason"] = "no classifier available"
    return out


def verify(p: Any, simulate: bool = False, seed: int | None = None, *, checks: Any = None) -> Any:
    """Every theorem of both papers on ``p`` (parameters, a mapping or a path): :func:`flowcert.verify`
    for ``"attention"``; returns a :class:`~flowcert.result.Result`.

    Parameters
    ----------
    p : AttentionParams, mapping or path
        The parameters: a validated :class:`~flowcert.attention.params.AttentionParams`, a mapping
        with the parameter file's keys (numpy arrays, torch tensors, nested lists or numbers), or the
        path of a parameter file.
    simulate : bool, default False
        Cross-validate the predictions by simulation (``--simulate``): the catalogues'
        cross-checks and the ``simulation`` record.
    seed : int, optional
        Seed of the random draws (``--seed``); None: the parameter file's ``seed``.
    checks : str or list of str, optional
        Keyword-only. The cross-checks to run with ``simulate=True``, among
        ``flowcert.get_system("attention").checks``; None: the system's default set.

    Returns
    -------
    Result
        The theorems of the multistability and consensus catalogues by id, ``.status`` and, with
        ``simulate``, ``.simulation``; ``.to_json()`` is the CLI's ``--json`` document.

    Raises
    ------
    flowcert.errors.InputError
        Bad parameters (:class:`~flowcert.errors.ParamError` names the key), a bad keyword value
        (``simulate`` not a bool, a negative ``seed``) or an unknown cross-check name. A ``ValueError``.
    """
    from ..api import verify as verify_any

    return verify_any("attention", p, simulate=simulate, seed=seed, checks=checks)


def verify_document(p: AttentionParams, simulate: bool = False, seed: int | None = None,
                    checks: frozenset[str] | None = None) -> Document:
    """The ``verify attention`` document with theorem records (:func:`flowcert.documents.records` of
    :func:`verify_results`)."""
    from ..documents import records

    return records(verify_results(p, simulate=simulate, seed=seed, checks=checks))


def verify_results(p: AttentionParams, simulate: bool = False, seed: int | None = None,
                   checks: frozenset[str] | None = None) -> Document:
    """The ``verify attention`` document with typed ``theorems`` (:class:`~flowcert.catalogue.TheoremResult`,
    from every catalogue module; encoded at the edge by :func:`flowcert.documents.plain`).

    With ``simulate`` and time-varying heads, ``simulation`` is built from the run the consensus
    catalogue's cross-checks already made (:func:`_simulation_from_run`: adaptive DOP853 on the
    manifold) instead of a second fixed-step RK4 run. ``checks`` (implies ``simulate``) names the
    cross-checks that run (:attr:`flowcert.attention.system.AttentionSystem.checks`; None: all);
    without ``simulation`` among them the ``simulation`` record says it was not requested."""
    from ..documents import document

    seed = p.seed if seed is None else seed
    simulate = simulate or checks is not None
    wanted = {"checks": checks} if checks is not None else {}
    from . import consensus, multistability  # the catalogues (CATALOGUES), in their order

    theorems = multistability.theorems(p, simulate=simulate, seed=seed, **wanted)
    reused: SimulationRecord | None = None
    if simulate and p.time_varying:  # the consensus catalogue's run also serves as the simulation
        results, run = consensus.theorems_with_run(p, simulate=True, seed=seed, **wanted)
        if run is not None:
            reused = _simulation_from_run(p, consensus, run, results, seed)
        theorems += results
    else:
        theorems += consensus.theorems(p, simulate=simulate, seed=seed, **wanted)
    doc = document("attention", p.to_json(), seed=seed, theorems=theorems)
    if simulate and checks is not None and "simulation" not in checks and reused is None:
        why = "not requested: the cross-check 'simulation' runs with simulate=True (checks=['simulation'], or --checks simulation)"
        doc["simulation"] = {"t_end": None, "blowup_time": None, "limit_class": None, "limit_classes": None,
                             "agrees": None, "skipped": why}
    elif simulate:
        sim = reused if reused is not None else globals()["simulate"](p, seed=seed)
        if sim.get("limit_verdict") in ("stable", "unstable"):
            # a settled run at a certified-unstable equilibrium contradicts the verdicts
            sim["agrees"] = sim["limit_verdict"] == "stable"
        doc["simulation"] = sim
    return doc


def _simulation_from_run(p: AttentionParams, module: Any, run: Any, results: list, seed: int) -> SimulationRecord:
    """The ``simulation`` record from a catalogue's run (``module.Run``, scipy on the manifold).

    ``limit_class`` is ``"consensus"`` only when the catalogue's :func:`consensus_limit` certifies
    it (settled, spread below its tolerance, certified transverse linearisation), else None with
    the reason. ``agrees`` is False if any of the catalogue's cross-checks disagrees, True if at
    least one agrees and none disagrees, None otherwise (all skipped, or a failed run)."""
    s = module.setting(p, seed)
    out: SimulationRecord = {"t_end": p.t_end, "blowup_time": None, "dt": None, "integrator": run.summary()["integrator"],
                           "device": "cpu", "X0": s.X0.tolist(), "X_final": run.X[-1].tolist(),
                           "t_reached": float(run.t[-1]), "max_drift": run.drift, "final_speed": run.speed,
                           "limit_class": None, "limit_classes": None, "agrees": None,
                           "source": f"the run of the {module.__name__.rsplit('.', 1)[-1]} catalogue's cross-checks (reused)"}
    if not run.ok:
        out["limit_class_reason"] = f"failed run: {run.message}"
        return out
    lim = module.consensus_limit(s, run)
    out["consensus_limit"] = lim
    from .classify import class_keys, limit_of, limit_record

    out.update(limit_record(limit_of(p, run.X[-1], t=float(run.t[-1]), speed=run.speed)))
    if lim.get("limit_class") == "consensus":  # certified exponentially attracting consensus, settled or not
        out.update(class_keys(["consensus"]))
        out.pop("limit_class_reason", None)
    checks = {th.id: th.cross_check.status for th in results if th.cross_check is not None}
    agree = sorted(k for k, v in checks.items() if v == "agrees")
    disagree = sorted(k for k, v in checks.items() if v == "disagrees")
    out["agrees"] = False if disagree else (True if agree else None)
    out["agrees_basis"] = {"agrees": agree, "disagrees": disagree,
                           "skipped": sorted(k for k, v in checks.items() if v == "skipped")}
    return out


def equilibria(p: AttentionParams, cap: int | None = None) -> EquilibriaDocument:
    """The ``equilibria attention`` document (see :func:`flowcert.attention.enumeration.equilibria`)."""
    from ..documents import document
    from . import enumeration

    from .enumeration import DEFAULT_CAP

    doc = enumeration.equilibria(p, cap=cap)
    # the listing's cap (added, issue 44): recheck re-derives the listing with it
    return document("attention", p.to_json(), cap=DEFAULT_CAP if cap is None else cap, **doc)


def codegen_source(structure: Any, backend: str) -> str:
    """Source of the generated field kernel of ``structure`` for ``backend``."""
    from ..symbolic import codegen
    from ..symbolic.attention import structure_program

    printer = {"numpy": codegen.NumpyPrinter(), "torch": codegen.TorchPrinter(), "c": codegen.ShapedCPrinter()}[backend]
    header = {"numpy": "import numpy as np\n\n\n", "torch": "import torch\n\n\n", "c": ""}[backend]
    return header + printer.print(structure_program(structure))
