"""The ``flowcert`` command line (a contract: see DESIGN.md, "Command line").

Exit codes: 0 the command ran (whatever the verdicts), 2 bad input (one line on stderr naming
the key and the problem), 1 an internal error. Heavy modules are imported inside commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from . import __version__

SYSTEMS = ("gaussian",)


class InputError(Exception):
    """Bad input: reported as one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"flowcert: error: {message}\n")
        raise SystemExit(2)


def _load(system: str, path: str) -> Any:
    from .params import load_gaussian

    if system != "gaussian":
        raise InputError(f"system '{system}' is not available yet (available: {', '.join(SYSTEMS)})")
    return load_gaussian(path)


def _finite(obj: Any) -> Any:
    """JSON has no inf/nan: non-finite floats are written as null (documented in the README)."""
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _emit(doc: dict[str, Any], as_json: bool, summary: str) -> None:
    if as_json:
        json.dump(_finite(json.loads(json.dumps(doc, default=_json_default))), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary)


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _summary(doc: dict[str, Any]) -> str:
    lines = [f"flowcert {doc['flowcert']} — verify {doc['system']}"]
    for th in doc["theorems"]:
        lines.append(f"{th['id']:<24} applies={th['applies']!s:<5} cross_check={th['cross_check']['status']}")
        for h in th["hypotheses"]:
            lines.append(f"    {h['status']:<8} {h['name']}  ({h['method']})")
    if "regime" in doc:
        r = doc["regime"]
        lines.append(f"regime: Sigma {r['Sigma']}, mu {r['mu']} (basis: {r['basis']})")
    if "simulation" in doc:
        s = doc["simulation"]
        lines.append(f"simulation: t_end {s['t_end']:.4g}, blow-up {s['blowup_time']}, agrees {s['agrees']}")
    return "\n".join(lines) + "\n"


def cmd_verify(args: argparse.Namespace) -> int:
    from . import gaussian, sweep

    if sweep.is_sweep(args.params, args.jobs, args.scheduler, args.resume):
        if args.jobs is not None and args.jobs < 1:
            raise InputError(f"--jobs: must be a positive integer, got {args.jobs}")
        if args.jobs is not None and args.scheduler:
            raise InputError("--jobs: not with --scheduler (the Dask cluster sets the parallelism)")
        for path in args.params:
            if not Path(path).exists():
                raise InputError(f"--params: no such file or directory: {path}")
        return sweep.run(args.system, args.params, simulate=args.simulate, jobs=args.jobs or 1,
                         scheduler=args.scheduler, resume=args.resume, progress=not args.json)
    p = _load(args.system, args.params[0])
    doc = gaussian.verify(p, simulate=args.simulate)
    _emit(doc, args.json, _summary(doc))
    return 0


def cmd_simulate(args: argparse.Namespace) -> None:
    import numpy as np

    from . import gaussian
    from .numeric import gaussian as ng

    p = _load(args.system, args.params)
    t_end = p.t_end if args.t_end is None else args.t_end
    if not (t_end > 0 and np.isfinite(t_end)):
        raise InputError(f"--t-end: must be a positive finite number, got {t_end}")
    ensemble = _ensemble(args, p, t_end)
    sol = ng.integrate_moments(gaussian.coefficients(p), p.mu0, p.Sigma0, t_end)
    doc = {
        "flowcert": __version__, "system": args.system, "params": p.to_json(),
        "simulation": {"t_end": float(sol.t[-1]), "blowup_time": sol.blowup_time, "status": sol.status,
                       "mu_final": sol.mu[-1].tolist(), "Sigma_final": sol.Sigma[-1].tolist(), "agrees": None,
                       "method": sol.method, "integrator_message": sol.message, "mean_escape_time": sol.mean_escape_time},
    }
    if args.plot:
        from .reports.figures import plot_moments

        plot_moments(sol, Path(args.plot))
        doc["simulation"]["plot"] = args.plot
    summary = (f"t_end {sol.t[-1]:.6g}  status {sol.status}  blow-up {sol.blowup_time}\n"
               f"mu = {np.array2string(sol.mu[-1], precision=6)}\nSigma =\n{np.array2string(sol.Sigma[-1], precision=6)}\n")
    if ensemble is not None:
        doc["ensemble"] = ensemble
        spread = ensemble["blowup_time"]
        summary += (f"ensemble of {ensemble['samples']} on {ensemble['device']}: {ensemble['blowups']} blow-ups"
                    + (f" at t in [{spread['min']:.6g}, {spread['max']:.6g}]" if spread else "")
                    + f", {ensemble['final_states']['samples']} reached t_end\n")
    _emit(doc, args.json, summary)


def _ensemble(args: argparse.Namespace, p: Any, t_end: float) -> dict[str, Any] | None:
    """``--samples N [--device cpu|cuda] [--seed S]``: the batched torch ensemble, or None."""
    if args.samples is None:
        for flag, value in (("--device", args.device), ("--seed", args.seed)):
            if value is not None:
                raise InputError(f"{flag}: only with --samples N")
        return None
    from .gaussian.ensemble import MAX_SAMPLES, ensemble

    if not 1 <= args.samples <= MAX_SAMPLES:
        raise InputError(f"--samples: must be an integer in [1, {MAX_SAMPLES}], got {args.samples}")
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed: must be a non-negative integer, got {args.seed}")
    if p.time_varying:
        raise InputError("--samples: the batched integrator takes constant parameters; these are time-varying")
    device = args.device or "cpu"
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InputError("--device: cuda requested but torch sees no CUDA device (use --device cpu)")
    return ensemble(p, args.samples, t_end, device=device, seed=args.seed or 0)


def cmd_codegen(args: argparse.Namespace) -> None:
    from .numeric import gaussian as ng
    from .symbolic import codegen

    programs = [ng.moment_program(), ng.linearisation_program()]
    printer = {"numpy": codegen.NumpyPrinter(), "torch": codegen.TorchPrinter(), "c": codegen.ShapedCPrinter()}[args.backend]
    header = {"numpy": "import numpy as np\n\n\n", "torch": "import torch\n\n\n", "c": ""}[args.backend]
    source = header + "\n\n".join(printer.print(prog) for prog in programs)
    if args.out:
        Path(args.out).write_text(source)
        sys.stdout.write(f"wrote {args.out}\n")
    else:
        sys.stdout.write(source)


def cmd_reach(args: argparse.Namespace) -> None:
    from . import reach

    if args.system != "gaussian":
        raise InputError(f"system '{args.system}' has no reachability construction")
    doc = reach.run(args.params, args.target, args.T, args.out)
    err = doc["terminal_error"]
    summary = (f"Theorem 3.3 controls over [0, {args.T}] (rank {doc['rank']}): terminal error "
               f"mu {err['mu']}, Sigma {err['Sigma']} (relative {err['Sigma_relative']})\n")
    _emit(doc, True, summary) if args.json else sys.stdout.write(summary)


def cmd_report(args: argparse.Namespace) -> None:
    from .reports.build import build_report

    report = build_report(Path(args.out), quick=args.quick, only=args.only, params=args.params, system=args.system)
    for path in report.files:
        sys.stdout.write(f"wrote {path}\n")
    sys.stdout.write(report.pdf + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="flowcert", description="Verify the mathematics of transformer and RNN dynamics.")
    parser.add_argument("--version", action="version", version=f"flowcert {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rep = sub.add_parser("report", help="write the derivations report (Markdown + HTML)")
    rep.add_argument("--out", default="reports/out", help="output folder (default reports/out)")
    rep.add_argument("--quick", action="store_true", help="fewer samples and shorter studies (under a minute)")
    rep.add_argument("--only", default=None, metavar="PAPER", help="build only this paper's section")
    rep.add_argument("--params", default=None, metavar="FILE",
                     help="build the verdict and cross-check section for your own parameter file instead")
    rep.add_argument("--system", default="gaussian", help="the system --params describes (default gaussian)")
    rep.set_defaults(func=cmd_report)

    ver = sub.add_parser("verify", help="decide every theorem's hypotheses on given parameters")
    ver.add_argument("system", choices=SYSTEMS)
    ver.add_argument("--params", required=True, nargs="+", metavar="FILE",
                     help="parameter file (.json or .npz); several files or a directory run a sweep (one JSON line per set)")
    ver.add_argument("--simulate", action="store_true", help="cross-validate by simulation")
    ver.add_argument("--json", action="store_true", help="print one JSON document on stdout (a sweep: no progress bar)")
    ver.add_argument("--jobs", type=int, default=None, metavar="N", help="sweep on N local processes")
    ver.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="sweep on a Dask cluster (dask.distributed scheduler address; extra 'flowcert[dask]')")
    ver.add_argument("--resume", default=None, metavar="JSONL", help="sweep: skip the files already reported in this file")
    ver.set_defaults(func=cmd_verify)

    sim = sub.add_parser("simulate", help="integrate the system")
    sim.add_argument("system", choices=SYSTEMS)
    sim.add_argument("--params", required=True)
    sim.add_argument("--t-end", type=float, default=None, dest="t_end")
    sim.add_argument("--plot", default=None, help="write a PNG figure here")
    sim.add_argument("--json", action="store_true")
    sim.add_argument("--samples", type=int, default=None, help="also run N perturbed initial states in one torch batch")
    sim.add_argument("--device", choices=("cpu", "cuda"), default=None, help="device of the --samples batch (default cpu)")
    sim.add_argument("--seed", type=int, default=None, help="seed of the --samples perturbations (default 0)")
    sim.set_defaults(func=cmd_simulate)

    rea = sub.add_parser("reach", help="steer (mu0, Sigma0) to a target in time T (Theorem 3.3)")
    rea.add_argument("system", choices=SYSTEMS)
    rea.add_argument("--params", required=True, help="start: a gaussian parameter file (mu0, Sigma0 are used)")
    rea.add_argument("--target", required=True, help="target file with keys mu, Sigma (.json or .npz)")
    rea.add_argument("--T", type=float, required=True, help="horizon")
    rea.add_argument("--out", default=None, help="save the controls (.npz or .json)")
    rea.add_argument("--json", action="store_true")
    rea.set_defaults(func=cmd_reach)

    gen = sub.add_parser("codegen", help="print kernels generated from the symbolic model")
    gen.add_argument("system", choices=SYSTEMS)
    gen.add_argument("--backend", choices=("numpy", "torch", "c"), required=True)
    gen.add_argument("--out", default=None, help="write the source here instead of stdout")
    gen.set_defaults(func=cmd_codegen)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = build_parser().parse_args(argv)
    from .params import ParamError

    try:
        rc = args.func(args)
    except (ParamError, InputError) as exc:
        sys.stderr.write(f"flowcert: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - exit code 1 is the contract for internal errors
        sys.stderr.write(f"flowcert: internal error: {type(exc).__name__}: {exc}\n")
        if "--debug" in sys.argv or __import__("os").environ.get("FLOWCERT_DEBUG"):
            raise
        return 1
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
