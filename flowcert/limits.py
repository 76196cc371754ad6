r"""Size limits: the largest dimension :math:`d` each stage handles within a documented time.

The gaussian system (gaussian paper, eq. (7)) has :math:`\mu\in\mathbb R^d`,
:math:`\Sigma\in\mathbb R^{d\times d}`; the costly stages grow like :math:`d^3` to :math:`d^6`
(Lemma 3.1's transport check, the Thm 3.3 construction and Table 1's exact analysis). Each
stage has one entry in :data:`STAGE_MAX_D`; above it the stage is *skipped with its reason in the
JSON*, and the rest of the run goes on. A command refuses its input (exit 2, one line) only
above :data:`COMMAND_MAX_D`, where even its cheapest stage would run for minutes.

Measured on the 2-core development machine, one thread, CPU seconds per stage
(``python benchmarks/sizes.py``): every stage at its limit stays under :data:`STAGE_SECONDS`
seconds on the reference inputs. To handle larger :math:`d` after making a stage faster,
raise its entry here (and re-run the benchmark).
"""

from __future__ import annotations

from typing import Any

#: Documented time budget of one stage at its limit (CPU seconds, 2-core development machine).
STAGE_SECONDS = 60.0

#: Largest ``d`` per stage (above it the stage is skipped, with this table named as the reason).
STAGE_MAX_D: dict[str, int] = {
    # raised after the flint / matrix-free Newton work (benchmarks/verify_scaling.py, issue 18):
    "gaussian:integrate": 384,      # the moment ODE (d(d+3)/2 unknowns): 20 s (Thm 4.1 regime) to 54 s (blow-up) at d = 384
    "gaussian:prop-2.1": 384,       # Prop. 2.1 hypotheses: 1.4 s at d = 100, 3.7 s at 200
    "gaussian:lemma-2.3": 384,
    "gaussian:prop-2.4": 384,
    # the next two bound the *cross-checks* only: above them the hypotheses are still decided
    "gaussian:lemma-3.1": 256,      # transport Psi(t) and its determinant along the flow: 15 s to 118 s at d = 384
    "gaussian:thm-3.3": 48,         # reachability construction and its cross-check: 34-83 s at d = 128
    "gaussian:table-1": 384,        # regime analysis (Table 1): flint certificates, matrix-free Newton; 12-17 s per stage at d = 384
    "gaussian:particles": 50,       # particle cross-checks of --simulate
}

#: Largest ``d`` per stage for *low-rank* constant parameters: :math:`A=0` and :math:`V,B` of rank at most
#: :math:`d/4` (every exported attention head: rank :math:`d_h`), where the moment run integrates the
#: :math:`r_Vr_B` factored transport and Newton works on the active block (its Table 1 verdicts are exact
#: facts about :math:`A=0` and non-symmetric :math:`B,V`). A stage not listed keeps :data:`STAGE_MAX_D`.
LOW_RANK_STAGE_MAX_D: dict[str, int] = {
    "gaussian:integrate": 768,      # GPT-2 width (rank 64): the factored transport has 4096 states
    "gaussian:prop-2.1": 768,
    "gaussian:lemma-2.3": 768,
    "gaussian:prop-2.4": 768,
    "gaussian:table-1": 768,        # Newton on the 4 r_h block
}

#: Largest ``d`` per command; above it the command refuses the input (exit 2).
COMMAND_MAX_D: dict[str, int] = {
    "verify": 768,                  # GPT-2's residual stream; above STAGE_MAX_D only low-rank inputs run the costly stages
                                    # every verify runs within VERIFY_SECONDS: a stage it cannot fit is unknown (budget)
    "simulate": 384,
    "reach": 40,
}


#: Stages whose size limit does not apply to *structured* parameters (B, V factored, A and Sigma0 diagonal:
#: a pretrained head's export): their exact work is on the factors and diagonals, O(d k), and the float work
#: O(d^2 k); the command's cost model (:func:`structured_verify_cost`) bounds them instead.
STRUCTURED_STAGES = frozenset({"gaussian:prop-2.1", "gaussian:lemma-2.3", "gaussian:prop-2.4", "gaussian:table-1"})


def stage_skip_reason(stage: str, d: int, *, low_rank: bool = False, structured: bool = False) -> str | None:
    """Why ``stage`` is skipped at dimension ``d`` (``None`` when it runs); ``low_rank`` parameters get
    the larger limit of :data:`LOW_RANK_STAGE_MAX_D` where it has one, ``structured`` ones none for the
    stages of :data:`STRUCTURED_STAGES`."""
    limit = STAGE_MAX_D.get(stage)
    if limit is None or d <= limit or (structured and stage in STRUCTURED_STAGES):
        return None
    low = LOW_RANK_STAGE_MAX_D.get(stage)
    if low_rank and low is not None:
        if d <= low:
            return None
        return (f"skipped: d = {d} exceeds {low}, the largest d this stage handles within about "
                f"{STAGE_SECONDS:g} s for low-rank parameters (flowcert.limits.LOW_RANK_STAGE_MAX_D[{stage!r}])")
    table = "" if low is None else f"; low-rank parameters (A = 0, rank V, B <= d/4) go to {low}"
    return (f"skipped: d = {d} exceeds {limit}, the largest d this stage handles within about "
            f"{STAGE_SECONDS:g} s (flowcert.limits.STAGE_MAX_D[{stage!r}]{table})")


# ---------------------------------------------------------------------------------------
# verify gaussian on structured parameters (a pretrained head's export): a measured cost model (issue 45)
# ---------------------------------------------------------------------------------------

#: CPU seconds of ``verify gaussian`` on structured parameters (B, V factored with inner dimension k, A and
#: Sigma0 diagonal) as ``start + d2k * d^2 k + d2 * d^2``: the float searches of the factors' products
#: (d x d x k), the float images the numerical stages keep (d x d) and the fixed start (imports, SymPy's
#: closure proofs). Fitted to ``verify gaussian --json`` on exported GPT-2-shaped heads (seeded random
#: ``transformers`` init, k = d_h = 128; one thread, the 2-core development machine, 2026-11-29): 8.0, 11.4 and
#: 21.9 CPU s at d = 1024, 2048, 4096 (predicted 7.9, 10.5, 21.1); ``benchmarks/pretrained_scale.py`` re-measures.
STRUCTURED_SECONDS: dict[str, float] = {"start": 7.0, "d2k": 5e-9, "d2": 2e-7}
#: Peak resident bytes of the same: ``base + d2 * d^2`` (the float images of A, B, V, Sigma0 and the product
#: the asymmetry search forms) plus the factors as JSON text and numbers (``dk`` per inner entry). Measured
#: 0.26, 0.50, 1.31 GB at d = 1024, 2048, 4096 (predicted 0.25, 0.48, 1.34).
STRUCTURED_BYTES: dict[str, float] = {"base": 1.6e8, "d2": 64.0, "dk": 200.0}
#: Predictions are multiplied by this before they are compared with the budget.
STRUCTURED_COST_MARGIN = 1.25


def structured_verify_cost(d: int, k: int) -> tuple[float, float]:
    """Predicted ``(CPU seconds, peak bytes)`` of ``verify gaussian`` on structured parameters of size d, inner k."""
    t, b = STRUCTURED_SECONDS, STRUCTURED_BYTES
    return (t["start"] + t["d2k"] * d * d * k + t["d2"] * d * d,
            b["base"] + b["d2"] * d * d + b["dk"] * d * k)


def structured_problem(d: int, k: int) -> str | None:
    """Why structured parameters of size ``d`` and inner dimension ``k`` cannot be verified within
    :data:`COMMAND_SECONDS` and :data:`COMMAND_BYTES` (None when they can); decided before anything of
    size d x d is allocated."""
    seconds, peak = structured_verify_cost(d, k)
    m = STRUCTURED_COST_MARGIN
    if m * seconds <= COMMAND_SECONDS and m * peak <= COMMAND_BYTES:
        return None
    return (f"d = {d}, k = {k}: predicted {seconds:.0f} CPU s and {peak / 2**30:.2f} GB (x {m:g}) exceed "
            f"{COMMAND_SECONDS:g} s and {COMMAND_BYTES // 2**30} GB (flowcert.limits.structured_verify_cost)")


def command_problem(command: str, d: int) -> str | None:
    """Why ``command`` refuses dimension ``d`` (``None`` when it accepts it)."""
    limit = COMMAND_MAX_D.get(command)
    if limit is None or d <= limit:
        return None
    return (f"d = {d} exceeds {limit}, the largest d `flowcert {command}` handles "
            f"(flowcert.limits.COMMAND_MAX_D[{command!r}])")


# ---------------------------------------------------------------------------------------
# the one limits table of every system and command (issue 24)
# ---------------------------------------------------------------------------------------

#: Documented budget of one command at a limit below: wall time (s) and peak memory (bytes)
#: on 2 cores.
COMMAND_SECONDS = 120.0
COMMAND_BYTES = 2 * 2**30
#: CPU-time budget of one verify document (``flowcert.numeric.integration.command_budget``): every
#: budgeted stage -- the runs, the catalogue entries, the exact Table 1 analysis -- shares it, and a
#: stage that would start after it is spent is reported ``unknown`` with reason ``budget``.
#: :data:`COMMAND_SECONDS` less the start-up (imports, about 6 s) and the output.
VERIFY_SECONDS = 100.0

#: ``name -> largest value`` accepted, each checked before any work (exit 2 above it, the
#: entry named in the message). Measured with ``/usr/bin/time -v`` at the limit (README table).
LIMITS: dict[str, int | float] = {
    "attention:d": 768,             # token dimension: a GPT-2 head (768); pretrained heads must verify (MiniLM, d = 384)
    "attention:n": 512,             # tokens of verify/simulate attention (the field costs n^2 d per step)
    "attention:n*d": 8_192,         # verify attention: Jacobians are (n d) x (n d) (ten tokens of a GPT-2 head: 7,680)
    "attention:heads": 16,          # attention heads
    "attention:steps": 200_000,     # fixed RK4 steps t_end / dt of simulate attention (and --simulate); step_work bounds the cost
    "attention:step_work": 5e8,     # steps * n^2 * d * heads: the field's cost over a fixed-step run (n = 512, d = 3: 635 steps)
    "attention:samples": 256,       # simulate attention --samples (initial conditions run to rest, each classified)
    "equilibria:n": 128,            # tokens of equilibria attention (default cap: 12.5 s, 0.4 GB at n = 128, d = 3)
    "equilibria:cap": 4_096,        # --cap: sign patterns per eigenvector
    "equilibria:cap*n*d": 294_912,  # what is listed: cap * n * d numbers per eigenvector (4096 * 24 * 3: 40 s, 0.9 GB, 98 MB of JSON)
    "rnn:B*T*H": 4_000_000,         # ceiling: above it the effective-rank sketches alone exceed 2 GB; below it the cost model decides
    "rnn:cpu_seconds": COMMAND_SECONDS,  # predicted CPU seconds of kpflow analyze / verify rnn (cost model below, x margin)
    "rnn:bytes": COMMAND_BYTES,     # predicted peak resident bytes of the same
    "rnn:H": 256,                   # state dimension
    "rnn:I": 1_024,                 # input dimension
    "rnn:g": 1e3,                   # recurrent gain of the random init (tanh saturates long before)
    "design:d": 64,                 # design gaussian: dimension of the spec
    "pretrained:hidden_size": 4_096,
    "pretrained:layers": 96,
    "pretrained:heads": 128,
    "pretrained:ffn": 16_384,
    "pretrained:positions": 65_536,
    "pretrained:vocab": 1_000_000,
    "pretrained:weight": 1e4,       # largest |weight|: LayerNorm'd activations times weights stay far from overflow
    "pretrained:tensor_bytes": 2**30,   # one safetensors tensor as declared in the header
    "sweep:jobs_per_core": 2,       # --jobs at most this many per core (and at most the number of files)
    "seed": 2**32 - 1,              # --seed and the files' seed (every numpy and torch generator accepts it)
    "magnitude": 1e150,             # largest |entry| of a matrix or a scalar such as beta or g
    # recheck: the exact work its certificates' data call for, estimated before any of it is done
    # (flowcert.certificates.budget; flowcert.recheck_budget.check_recheck_budget): the sum over every certificate and the largest one
    "recheck:seconds": VERIFY_SECONDS,  # COMMAND_SECONDS less start-up, reading and re-deriving
    "recheck:bytes": 1.5 * 2**30,       # COMMAND_BYTES less the interpreter, its modules and the parsed documents
}


def _shown(value: float) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:6]}... ({len(text)} digits)"


def limit_problem(name: str, value: float, what: str | None = None) -> str | None:
    """Why ``value`` exceeds the limit ``name`` of :data:`LIMITS` (``None`` when it does not)."""
    limit = LIMITS[name]
    if value <= limit:
        return None
    what = what or name.split(":", 1)[-1]
    shown = _shown(value)
    return (f"{what} = {shown} is too large: at most {_shown(limit)}, the largest flowcert handles within "
            f"{COMMAND_SECONDS:g} s and {COMMAND_BYTES // 2**30} GB (flowcert.limits.LIMITS[{name!r}])")


def check_limit(name: str, value: float, key: str, file: str | None = None, what: str | None = None) -> None:
    """Raise a :class:`~flowcert.schema.ParamError` for ``key`` when ``value`` exceeds limit ``name``.

    ``key`` is an option (``--cap``) or a parameter key (``n``); an option gets the
    ``--opt: problem`` form, a key the parameter-file form.
    """
    problem = limit_problem(name, value, what)
    if problem is None:
        return
    from .errors import OptionError, ParamError

    if key.startswith("-"):
        raise OptionError(key, problem)
    raise ParamError(key, problem, file=file)


def check_attention_run(steps: int, n: int, d: int, heads: int, key: str, file: str | None = None,
                        t_end: float | None = None, dt: float | None = None) -> None:
    """The two limits of a fixed-step attention run: ``attention:steps`` and ``attention:step_work``."""
    where = f" (t_end {t_end:.3g}, dt {dt:g})" if t_end is not None and dt is not None else ""
    check_limit("attention:steps", steps, key, file, what=f"steps t_end/dt{where}")
    check_limit("attention:step_work", float(steps) * n * n * d * heads, key, file,
                what=f"steps * n^2 * d * heads ({steps} * {n}^2 * {d} * {heads})")


def max_jobs(files: int) -> int:
    """Largest useful ``--jobs``: the number of files, and at most :data:`LIMITS` ``sweep:jobs_per_core`` per core."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(files, int(LIMITS["sweep:jobs_per_core"]) * cores))


# ---------------------------------------------------------------------------------------
# kpflow analyze / verify rnn: a measured cost model (issue 36)
# ---------------------------------------------------------------------------------------

#: Unit costs of the primitives of :mod:`flowcert.gpu.rnn.work`: ``(a, b)`` = CPU seconds per multiply-add
#: and per overhead step (a recurrence step of a batch, one call of G, one batched factorisation step), so
#: that one application costs :math:`a\cdot\text{size}+b\cdot\text{steps}`; ``start``: the command
#: itself (interpreter, imports, document: the median excess of ten whole small runs). Fitted from two
#: sizes (B, T, H = 4, 50, 32 and 32, 100, 128) by ``python benchmarks/kpflow_cost.py --calibrate`` (one
#: thread, CPU seconds, the shared 2-core development machine, 2026-11-24, load 12-17) and checked
#: against ten whole runs by ``--validate``: measured / predicted CPU 0.78-1.12, peak 0.6-1.0.
RNN_UNIT_SECONDS: dict[str, tuple[float, float]] = {
    "start": (0.0, 6.5),
    "P": (1.4e-10, 1.7e-5),
    "P_single": (1.4e-10, 3e-5),
    "P_recompute": (2.8e-10, 2.2e-3),
    "P_recompute_single": (2.8e-10, 5e-4),
    "G": (7.7e-11, 3.5e-4),
    "G_autograd": (9.7e-10, 5e-4),
    "cell": (5.7e-11, 7.4e-5),
    "qr": (4.4e-10, 2.5e-4),
    "dense": (2.9e-10, 0.0),
    "flops": (1.4e-9, 0.0),
    "lmi": (0.0, 4.0),
}
#: Resident bytes of the command before any array (interpreter, torch, flowcert, the document).
RNN_BASE_BYTES = 400 * 2**20
#: Predictions are multiplied by this before they are compared with the budget (the measured
#: prediction error of ``benchmarks/limits.py`` is within it).
RNN_COST_MARGIN = 1.25


def kpflow_cost(B: int, T: int, H: int, I: int, cell: str, *, mode: str = "stored", consensus: str | None = None,
                probes: int = 64, op: str = "PKP", exact_max: int = 1200) -> dict[str, float]:
    """Predicted CPU seconds and peak bytes of ``kpflow analyze`` (:func:`flowcert.gpu.rnn.work.analysis_work`
    counts times :data:`RNN_UNIT_SECONDS`; the consensus stage by its own measured model,
    :func:`flowcert.gpu.rnn.work.consensus_plan`, whose prediction the document records), before the margin."""
    from .gpu.rnn.work import analysis_work

    w = analysis_work(B, T, H, I, cell, mode=mode, consensus=consensus, probes=probes, op=op, exact_max=exact_max)
    u = RNN_UNIT_SECONDS
    seconds = u["start"][1]
    cons = w.get("consensus_counts") or {}
    for k, count in w["counts"].items():
        a, b = u[k]
        count = count - cons.get(k, 0.0)  # the consensus stage is priced by its own measured model below
        seconds += count * (a * w["sizes"][k] + b * (1 if k == "lmi" else w["steps"][k]))
    if w.get("consensus") is not None:
        seconds += w["consensus"]["predicted_cpu_s"]
    peak = RNN_BASE_BYTES + w["persistent_bytes"] + max(w["bytes"].values())
    return {"cpu_seconds": seconds, "bytes": float(peak)}


def kpflow_fits(B: int, T: int, H: int, I: int, cell: str, **options: Any) -> bool:
    """Whether :func:`check_kpflow_cost` accepts the request."""
    try:
        check_kpflow_cost(B, T, H, I, cell, **options)
    except ValueError:
        return False
    return True


def check_kpflow_cost(B: int, T: int, H: int, I: int, cell: str, *, mode: str | None = "stored",
                      consensus: str | None = None, probes: int = 64, op: str = "PKP", key: str = "B",
                      file: str | None = None) -> None:
    """Refuse (exit 2, one line naming the limit) a ``kpflow analyze`` request whose predicted cost times
    :data:`RNN_COST_MARGIN` exceeds ``rnn:cpu_seconds`` or ``rnn:bytes``; nothing is allocated before.
    ``mode=None``: the request fits if some mode fits (a parameter file checked before the mode is known)."""
    check_limit("rnn:B*T*H", B * T * H, key, file, what="B*T*H")
    modes = ("stored", "recompute") if mode is None else (mode,)
    costs = {m: kpflow_cost(B, T, H, I, cell, mode=m, consensus=consensus, probes=probes, op=op) for m in modes}

    def excess(m: str) -> float:
        return max(costs[m]["cpu_seconds"] / float(LIMITS["rnn:cpu_seconds"]), costs[m]["bytes"] / float(LIMITS["rnn:bytes"]))

    best = min(modes, key=excess)
    cost = costs[best]
    what = (f"B {B}, T {T}, H {H}, I {I}, {cell}, {best} Jacobians"
            + (f", --consensus {consensus} ({op}, {probes} probes)" if consensus else ""))
    if mode is not None and RNN_COST_MARGIN * excess(mode) > 1:
        other = "recompute" if mode == "stored" else "stored"
        alt = kpflow_cost(B, T, H, I, cell, mode=other, consensus=consensus, probes=probes, op=op)
        if RNN_COST_MARGIN * max(alt["cpu_seconds"] / float(LIMITS["rnn:cpu_seconds"]),
                                 alt["bytes"] / float(LIMITS["rnn:bytes"])) <= 1:
            what += f"; --mode {other} fits"
    check_limit("rnn:cpu_seconds", RNN_COST_MARGIN * cost["cpu_seconds"], key, file,
                what=f"predicted CPU seconds x {RNN_COST_MARGIN:g} ({what})")
    check_limit("rnn:bytes", RNN_COST_MARGIN * cost["bytes"], key, file,
                what=f"predicted peak bytes x {RNN_COST_MARGIN:g} ({what})")
