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

#: Largest ``d`` per command; above it the command refuses the input (exit 2).
COMMAND_MAX_D: dict[str, int] = {
    "verify": 384,                  # MiniLM's residual stream; 87 s (Thm 4.1 regime) to 194 s (blow-up) at d = 384 before
                                    # VERIFY_SECONDS: now within it, a stage it cannot fit is unknown (budget)
    "simulate": 384,
    "reach": 40,
}


def stage_skip_reason(stage: str, d: int) -> str | None:
    """Why ``stage`` is skipped at dimension ``d`` (``None`` when it runs)."""
    limit = STAGE_MAX_D.get(stage)
    if limit is None or d <= limit:
        return None
    return (f"skipped: d = {d} exceeds {limit}, the largest d this stage handles within about "
            f"{STAGE_SECONDS:g} s (flowcert.limits.STAGE_MAX_D[{stage!r}])")


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
    "rnn:B*T*H": 20_000,            # trajectory entries of kpflow analyze / verify rnn (200,000 took minutes)
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
    from .schema import OptionError, ParamError

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
