"""The ``flowcert`` command line (a contract: see DESIGN.md, "Command line").

Exit codes: 0 the command ran (whatever the verdicts), 2 bad input (one line on stderr naming
the key and the problem), 1 an internal error. Heavy modules are imported inside commands.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from . import __version__

SYSTEMS = ("gaussian", "attention")


class InputError(Exception):
    """Bad input: reported as one line with exit code 2."""


def one_line(text: str) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\x1b`` …): an error is one line whatever the user typed."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in text)


def seed_arg(text: str) -> int:
    """``--seed``: an integer in [0, flowcert.limits.LIMITS['seed']] (what every numpy and torch generator accepts)."""
    from .limits import LIMITS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if not 0 <= value <= LIMITS["seed"]:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {LIMITS['seed']}], got {text[:30]!r}")
    return value


def positive_int_arg(text: str) -> int:
    """A positive integer option (``--jobs``, ``--samples``, ``--cap``); its upper limit is checked by the command."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text[:30]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text[:30]!r}")
    return value


def device_arg(text: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N`` (whether it is present is checked by the command)."""
    import re

    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N, got {text[:30]!r}")
    return text


def _check_device(device: str) -> None:
    """Refuse a CUDA device that torch does not see (exit 2)."""
    if device == "cpu":
        return
    import torch

    index = int(device.split(":")[1]) if ":" in device else 0
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise InputError(f"--device: {device!r} requested but torch sees {torch.cuda.device_count()} CUDA device(s) (use --device cpu)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"flowcert: error: {one_line(message)}\n")
        raise SystemExit(2)


def _load(system: str, path: str, command: str | None = None) -> Any:
    from .limits import command_problem
    from .params import load_gaussian

    if system == "attention":
        from .attention import load

        return load(path)
    if system != "gaussian":
        raise InputError(f"system '{system}' is not available yet (available: {', '.join(SYSTEMS)})")
    p = load_gaussian(path)
    problem = command_problem(command, p.d) if command else None
    if problem is not None:
        raise InputError(f"--params: {problem}")
    return p


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
        if s.get("skipped"):
            lines.append(f"simulation: {s['skipped']}")
        else:
            lines.append(f"simulation: t_end {s['t_end']:.4g}, blow-up {s['blowup_time']}, agrees {s['agrees']}")
    return "\n".join(lines) + "\n"


def verify_document(system: str, path: str, *, simulate: bool = False, seed: int | None = None) -> dict[str, Any]:
    """The ``verify SYSTEM --params FILE`` document (one parameter set; the sweep calls this per file)."""
    if system == "rnn":  # the KPFlow catalogue; its cross-checks always run (cheap at these sizes)
        from .rnn.analyze import analyze
        from .rnn.params import load_rnn

        return analyze(load_rnn(path))
    p = _load(system, path, "verify")
    if system == "attention":
        from . import attention

        if simulate and not p.time_varying:  # --simulate runs fixed-step RK4 to t_end
            from .limits import check_attention_run

            check_attention_run(math.ceil(p.t_end / attention.default_dt(p)), p.n, p.d, len(p.heads), "t_end",
                                file=path, t_end=p.t_end, dt=attention.default_dt(p))

        return attention.verify(p, simulate=simulate, seed=seed)
    from . import gaussian

    return gaussian.verify(p, simulate=simulate, seed=seed or 0)


def cmd_verify(args: argparse.Namespace) -> int:
    from . import sweep

    if args.system == "rnn":
        for flag, value in (("--jobs", args.jobs), ("--resume", args.resume), ("--scheduler", args.scheduler)):
            if value is not None:
                raise InputError(f"{flag}: sweeps cover gaussian and attention; 'verify rnn' takes one file")
    if args.system != "rnn" and sweep.is_sweep(args.params, args.jobs, args.scheduler, args.resume):
        from .limits import LIMITS, max_jobs

        if args.jobs is not None and args.jobs > max_jobs(10**9):
            raise InputError(f"--jobs: {args.jobs} exceeds {max_jobs(10**9)}, {LIMITS['sweep:jobs_per_core']} per core "
                             "(flowcert.limits.LIMITS['sweep:jobs_per_core'])")
        if args.jobs is not None and args.scheduler:
            raise InputError("--jobs: not with --scheduler (the Dask cluster sets the parallelism)")
        for path in args.params:
            if not Path(path).exists():
                raise InputError(f"--params: no such file or directory: {path}")
        if not sweep.expand(args.params):
            raise InputError(f"--params: no .json or .npz files in {', '.join(map(repr, args.params))}")
        return sweep.run(args.system, args.params, simulate=args.simulate, jobs=args.jobs or 1,
                         scheduler=args.scheduler, resume=args.resume, progress=not args.json)
    if len(args.params) != 1:
        raise InputError(f"--params: one file for 'verify {args.system}' (sweeps cover gaussian and attention)")
    doc = verify_document(args.system, args.params[0], simulate=args.simulate, seed=args.seed)
    _emit(doc, args.json, _summary(doc))
    return 0


def cmd_simulate(args: argparse.Namespace) -> None:
    import numpy as np

    from . import gaussian
    from .numeric import gaussian as ng

    from .outputs import check_file

    plot = check_file("--plot", args.plot, (".png",)) if args.plot else None
    p = _load(args.system, args.params, "simulate")
    t_end = p.t_end if args.t_end is None else args.t_end
    if not (t_end > 0 and np.isfinite(t_end)):
        raise InputError(f"--t-end: must be a positive finite number, got {t_end}")
    if args.system == "attention":
        return _simulate_attention(args, p, t_end)
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

        from .outputs import replacing

        with replacing("--plot", plot) as tmp:
            plot_moments(sol, tmp)
        doc["simulation"]["plot"] = str(plot)
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
    if p.time_varying:
        raise InputError("--samples: the batched integrator takes constant parameters; these are time-varying")
    device = args.device or "cpu"
    _check_device(device)
    return ensemble(p, args.samples, t_end, device=device, seed=args.seed or 0)


def _simulate_attention(args: argparse.Namespace, p: Any, t_end: float) -> None:
    from . import attention

    from .limits import check_attention_run, check_limit

    if args.samples is not None:
        check_limit("attention:samples", args.samples, "--samples")
    else:
        check_attention_run(math.ceil(t_end / attention.default_dt(p)), p.n, p.d, len(p.heads), "--t-end",
                            t_end=t_end, dt=attention.default_dt(p))
    device = args.device or "cpu"
    _check_device(device)
    sim = attention.simulate(p, t_end=t_end, samples=args.samples, device=device, seed=args.seed)
    doc = {"flowcert": __version__, "system": "attention", "params": p.to_json(), "simulation": sim}
    if args.plot:
        from .outputs import replacing
        from .reports.multistability import plot_simulation

        with replacing("--plot", args.plot) as tmp:
            plot_simulation(sim, tmp)
        sim["plot"] = args.plot
    lines = [f"t_end {sim['t_end']:.6g}  limit_class {sim.get('limit_class')}  max drift {sim.get('max_drift')}"]
    for row in sim.get("basins", {}).get("outcomes", []):
        lines.append(f"  {row['fraction']:.3f} [{row['wilson'][0]:.3f}, {row['wilson'][1]:.3f}]  {row['label']}")
    _emit(doc, args.json, "\n".join(lines) + "\n")


def cmd_equilibria(args: argparse.Namespace) -> None:
    from . import attention

    from .limits import check_limit

    p = _load("attention", args.params)
    check_limit("equilibria:n", p.n, "n", file=args.params)
    if args.cap is not None:
        check_limit("equilibria:cap", args.cap, "--cap")
    doc = attention.equilibria(p, cap=args.cap)
    lines = [f"{len(doc['equilibria'])} equilibria; skipped: {doc['skipped']}"]
    for e in doc["equilibria"]:
        lines.append(f"  {'/'.join(e['class']):<22} k={e['eigvec_index']}  stable={e['stable']}  {e.get('label', '')}")
    _emit(doc, args.json, "\n".join(lines) + "\n")


def cmd_codegen(args: argparse.Namespace) -> None:
    from .numeric import gaussian as ng
    from .symbolic import codegen

    from .outputs import check_file, write_text

    if args.system != "attention" and args.params is not None:
        raise InputError(f"--params: only for 'codegen attention' (the {args.system} kernels take no parameter file)")
    out = check_file("--out", args.out) if args.out else None
    if args.system == "attention":
        from . import attention
        from .symbolic.attention import Structure

        structure = _load("attention", args.params).structure if args.params else Structure()
        source = attention.codegen_source(structure, args.backend)
    else:
        programs = [ng.moment_program(), ng.linearisation_program()]
        printer = {"numpy": codegen.NumpyPrinter(), "torch": codegen.TorchPrinter(), "c": codegen.ShapedCPrinter()}[args.backend]
        header = {"numpy": "import numpy as np\n\n\n", "torch": "import torch\n\n\n", "c": ""}[args.backend]
        source = header + "\n\n".join(printer.print(prog) for prog in programs)
    if out is not None:
        write_text("--out", out, source)
        sys.stdout.write(f"wrote {out}\n")
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


def cmd_pretrained(args: argparse.Namespace) -> None:
    from .pretrained.command import run

    doc, summary = run(args)
    _emit(doc, args.json, summary)


def cmd_design(args: argparse.Namespace) -> None:
    """``flowcert design gaussian --spec FILE``: Lemma 4.4's inverse design (A from Sigma_inf, K, V, B)."""
    import numpy as np

    from .arrays import as_matrix
    from .files import load_file
    from .gaussian.regime import lemma_4_4_design
    from .limits import check_limit
    from .params import ParamError
    from .schema import check_magnitude

    keys = ("Sigma_inf", "K", "V", "B")
    raw = load_file(args.spec)
    unknown = [k for k in raw if k not in keys]
    if unknown:
        raise ParamError(str(unknown[0]), f"unknown key {str(unknown[0])!r} (allowed: {', '.join(keys)})",
                         file=args.spec, names_key=True)
    missing = [k for k in keys if k not in raw]
    if missing:
        raise ParamError(missing[0], f"missing required key(s) {missing}", file=args.spec, names_key=True)
    try:
        mats = []
        for k in keys:
            m = np.asarray(as_matrix(raw[k], k, (None, None) if not mats else mats[0].shape), dtype=float)
            if k == "Sigma_inf":
                if m.shape[0] != m.shape[1]:
                    raise ParamError(k, f"expected a square d x d matrix, got shape {m.shape}")
                check_limit("design:d", m.shape[0], k)
            check_magnitude(m, k)
            mats.append(m)
        doc = {"flowcert": __version__, "system": "gaussian", **lemma_4_4_design(*mats)}
    except ParamError as err:
        raise err.with_file(args.spec) from None
    except (ValueError, TypeError) as exc:
        raise InputError(f"{args.spec}: {exc}") from None
    _emit(doc, args.json, f"A =\n{np.array2string(np.array(doc['A']), precision=12)}\n"
                          f"(18) residual exactly zero: {doc['residual_is_zero']}\n")


def cmd_report(args: argparse.Namespace) -> None:
    from .outputs import check_folder
    from .reports.build import build_report

    check_folder("--out", args.out)
    if args.params is not None:  # bad input exits 2 before the --out folder is made
        from .reports.user import VERIFIERS

        if args.system not in VERIFIERS:
            raise InputError(f"--system: '{args.system}' has no verifier in the report (available: {', '.join(VERIFIERS)})")
        _load(args.system, args.params)
    report = build_report(Path(args.out), quick=args.quick, only=args.only, params=args.params, system=args.system)
    for path in report.files:
        sys.stdout.write(f"wrote {path}\n")
    sys.stdout.write(report.pdf + "\n")


def cmd_kpflow(args: argparse.Namespace) -> None:
    """``flowcert kpflow analyze``: KPFlow identities, effective ranks and theorems (rnn system)."""
    from .rnn.analyze import analyze
    from .rnn.params import load_rnn

    doc = analyze(load_rnn(args.params), mode=args.mode)
    ident, ranks = doc["identities"], doc["effective_rank"]
    lines = [f"flowcert {doc['flowcert']} — kpflow analyze ({doc['params']['cell']})"]
    for r in ident["prop1"]["fd"]:
        lines.append(f"prop1  eta {r['eta']:.3g}  residual {r['residual']:.3e}  order {r.get('observed_order')}")
    lines.append(f"adjoint P {ident['adjoint']['P']:.2e}  inverse {ident['inverse']['residual']:.2e}  "
                 f"ntk {ident['ntk']['residual']:.2e}")
    lines.append("effective rank: " + ", ".join(f"{k} {ranks[k]['value']}" for k in ("K", "P", "PKP")))
    lines += [f"{t['id']:<16} applies={t['applies']!s:<5} cross_check={t['cross_check']['status']}" for t in doc["theorems"]]
    _emit(doc, args.json, "\n".join(lines) + "\n")


def cmd_graph(args: argparse.Namespace) -> None:
    """``flowcert graph [--paper KEY] [--out FILE]``: draw the theorem graph (one file per paper)."""
    from . import graph
    from .outputs import check_file

    papers = [args.paper] if args.paper is not None else list(graph.PAPER_KEYS)
    if args.paper is not None and args.paper not in graph.PAPER_KEYS:
        raise InputError(f"--paper: unknown paper {args.paper!r} (choose from {', '.join(graph.PAPER_KEYS)})")
    out = Path(args.out) if args.out is not None else None
    targets = []
    for paper in papers:
        if out is None:
            target = Path(f"graph-{paper}.svg")
        elif len(papers) == 1:
            target = out
        else:
            target = out.with_name(f"{out.stem}-{paper}{out.suffix}")
        targets.append(check_file("--out", target, (".svg", ".png", ".pdf")))
    for paper, target in zip(papers, targets):
        graph.draw(paper, target)
        sys.stdout.write(f"wrote {target}\n")


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
    ver.add_argument("system", choices=SYSTEMS + ("rnn",))
    ver.add_argument("--params", required=True, nargs="+", metavar="FILE",
                     help="parameter file (.json or .npz); several files or a directory run a sweep (one JSON line per set)")
    ver.add_argument("--simulate", action="store_true", help="cross-validate by simulation")
    ver.add_argument("--json", action="store_true", help="print one JSON document on stdout (a sweep: no progress bar)")
    ver.add_argument("--jobs", type=positive_int_arg, default=None, metavar="N", help="sweep on N local processes")
    ver.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="sweep on a Dask cluster (dask.distributed scheduler address; extra 'flowcert[dask]')")
    ver.add_argument("--resume", default=None, metavar="JSONL", help="sweep: skip the files already reported in this file")
    ver.add_argument("--seed", type=seed_arg, default=None,
                     help="seed of the random draws of --simulate (gaussian: default 0; attention: the file's seed)")
    ver.set_defaults(func=cmd_verify)

    eq = sub.add_parser("equilibria", help="enumerate and classify equilibria (attention)")
    eq.add_argument("system", choices=("attention",))
    eq.add_argument("--params", required=True)
    eq.add_argument("--cap", type=positive_int_arg, default=None, help="largest number of sign patterns per eigenvector")
    eq.add_argument("--json", action="store_true")
    eq.set_defaults(func=cmd_equilibria)

    des = sub.add_parser("design", help="Lemma 4.4 inverse design: A with a prescribed equilibrium Sigma_inf")
    des.add_argument("system", choices=["gaussian"])
    des.add_argument("--spec", required=True, help="JSON file with Sigma_inf (PD), K (skew), V, B")
    des.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    des.set_defaults(func=cmd_design)

    sim = sub.add_parser("simulate", help="integrate the system")
    sim.add_argument("system", choices=SYSTEMS)
    sim.add_argument("--params", required=True)
    sim.add_argument("--t-end", type=float, default=None, dest="t_end")
    sim.add_argument("--plot", default=None, help="write a PNG figure here")
    sim.add_argument("--json", action="store_true")
    sim.add_argument("--samples", type=positive_int_arg, default=None,
                     help="gaussian: also run N perturbed initial states in one torch batch; attention: N random initial conditions (basins)")
    sim.add_argument("--device", type=device_arg, default=None, help="torch device of the --samples batch (gaussian: cpu or cuda; default cpu)")
    sim.add_argument("--seed", type=seed_arg, default=None, help="seed of the --samples draws (default 0)")
    sim.set_defaults(func=cmd_simulate)

    rea = sub.add_parser("reach", help="steer (mu0, Sigma0) to a target in time T (Theorem 3.3)")
    rea.add_argument("system", choices=SYSTEMS)
    rea.add_argument("--params", required=True, help="start: a gaussian parameter file (mu0, Sigma0 are used)")
    rea.add_argument("--target", required=True, help="target file with keys mu, Sigma (.json or .npz)")
    rea.add_argument("--T", type=float, required=True, help="horizon")
    rea.add_argument("--out", default=None, help="save the controls (.npz or .json)")
    rea.add_argument("--json", action="store_true")
    rea.set_defaults(func=cmd_reach)

    gra = sub.add_parser("graph", help="draw the theorem graph: what each result rests on, false statements coloured")
    gra.add_argument("--paper", default=None, metavar="KEY", help="one paper (gaussian, multistability, consensus, kpflow)")
    gra.add_argument("--out", default=None, metavar="FILE.svg",
                     help="output file (.svg/.png/.pdf); with several papers, -<paper> is added to the name")
    gra.set_defaults(func=cmd_graph)

    gen = sub.add_parser("codegen", help="print kernels generated from the symbolic model")
    gen.add_argument("system", choices=SYSTEMS)
    gen.add_argument("--backend", choices=("numpy", "torch", "c"), required=True)
    gen.add_argument("--out", default=None, help="write the source here instead of stdout")
    gen.add_argument("--params", default=None, help="attention: take the kernel structure from this file")
    gen.set_defaults(func=cmd_codegen)

    kpf = sub.add_parser("kpflow", help="KPFlow operators of gradient descent on a recurrent model")
    kpf.add_argument("action", choices=("analyze",))
    kpf.add_argument("--params", required=True, help="rnn parameter file (.json or .npz)")
    kpf.add_argument("--mode", choices=("stored", "recompute"), default="stored",
                     help="P: store the Jacobians (default) or recompute them by jvp/vjp")
    kpf.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    kpf.set_defaults(func=cmd_kpflow)

    from .pretrained.command import add_parser as _pretrained_parser

    _pretrained_parser(sub).set_defaults(func=cmd_pretrained)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code.

    Warnings raised while a command runs (numpy's RuntimeWarning on hostile numbers) are held
    back: on bad input (exit 2) only the one error line is printed; otherwise they follow.
    """
    import warnings

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (exit 2, one line already printed), --help, --version
        return exc.code if isinstance(exc.code, int) else 2
    from .params import ParamError

    with warnings.catch_warnings(record=True) as caught:
        try:
            rc = args.func(args)
        except (ParamError, InputError) as exc:
            sys.stderr.write(f"flowcert: error: {one_line(str(exc))}\n")
            return 2
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # noqa: BLE001 - exit code 1 is the contract for internal errors
            sys.stderr.write(f"flowcert: internal error: {type(exc).__name__}: {one_line(str(exc))}\n")
            if "--debug" in sys.argv or __import__("os").environ.get("FLOWCERT_DEBUG"):
                raise
            return 1
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
