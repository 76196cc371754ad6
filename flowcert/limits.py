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
    "verify": 384,                  # MiniLM's residual stream; 87 s (Thm 4.1 regime) to 194 s (blow-up) at d = 384
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
