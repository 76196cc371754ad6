"""The ``flowcert`` command line (a contract: see docs/design.md, "The command line and JSON contract").

Exit codes: 0 the command ran (whatever the verdicts), 2 bad input (one line on stderr naming
the key and the problem), 1 an internal error, 3 (``recheck`` only) a certificate was refused,
74 an output could not be written (stdout full or closed, a full disk: one line naming the output
and the error), 130 / 143 interrupted by ``SIGINT`` / ``SIGTERM`` (what the run had started to
write is removed first), 141 the reader of stdout went away (a broken pipe: no message, as Unix
tools). Heavy modules are imported inside commands.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from . import __version__
from .documents import emit as _emit
from .documents import finite as _finite  # noqa: F401  (kept for callers of the former private names)
from .documents import json_default as _json_default  # noqa: F401
from .documents import verify_document
from .errors import EXIT_IO, InputError, OutputError, ParamError, precision_notes
from .options import device_arg, one_line, positive_int_arg, seed_arg
from .systems import capability, get_system, names

#: Systems with a simulation (the choices of ``simulate``, ``codegen`` and ``reach``), from the registry.
SYSTEMS = names("simulate")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"flowcert: error: {one_line(message)}\n")
        raise SystemExit(2)


def _load(system: str, path: str, command: str | None = None) -> Any:
    """Validated parameters of ``system`` from ``path`` (the registry's loader, with ``command``'s limits)."""
    return get_system(system).load(path, command=command)

def cmd_verify(args: argparse.Namespace) -> int:
    from . import sweep
    from .systems import serves

    if not serves(args.system, "sweep"):
        for flag, value in (("--jobs", args.jobs), ("--resume", args.resume), ("--scheduler", args.scheduler)):
            if value is not None:
                raise InputError(f"{flag}: sweeps cover {' and '.join(names('sweep'))}; 'verify {args.system}' takes one file")
    if args.checks is not None and sweep.is_sweep(args.params, args.jobs, args.scheduler, args.resume):
        raise InputError("--checks: for one parameter file (a sweep runs the default set with --simulate)")
    if serves(args.system, "sweep") and sweep.is_sweep(args.params, args.jobs, args.scheduler, args.resume):
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
        raise InputError(f"--params: one file for 'verify {args.system}' (sweeps cover {' and '.join(names('sweep'))})")
    checks = _checks(args.system, args.checks)
    doc = verify_document(args.system, args.params[0], simulate=args.simulate, seed=args.seed, checks=checks)
    from .result import verify_summary

    _emit(doc, args.json, verify_summary(doc))
    return 0


def _checks(system: str, text: str | None) -> frozenset[str] | None:
    """``--checks a,b`` as the names of the system's cross-checks (exit 2 naming the unknown one)."""
    if text is None:
        return None
    from .api import check_names
    from .systems import get_system

    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise InputError("--checks: expected comma-separated names of cross-checks, got nothing")
    try:
        return check_names(get_system(system), names)
    except InputError as exc:
        raise InputError(f"--{exc}") from None


def cmd_schema(args: argparse.Namespace) -> None:
    """``flowcert schema SYSTEM``: the keys a parameter file of the system takes (the system's own list)."""
    from .documents import header

    keys = get_system(args.system).parameter_keys()
    width = max((len(k["key"]) for k in keys), default=3)
    need = max((len(k["required"]) for k in keys), default=8)
    lines = [f"flowcert {__version__} — parameter keys of '{args.system}' (a .json or .npz file, or a Python mapping)"]
    for k in keys:
        default = "" if k["default"] is None else f" (default {k['default']!r})"
        lines.append(f"  {k['key']:<{width}}  {k['required']:<{need}}  {k['doc']}{default}")
    _emit({**header(args.system), "keys": keys}, args.json, "\n".join(lines) + "\n")


def cmd_simulate(args: argparse.Namespace) -> None:
    import numpy as np

    from .system import SimulateOptions

    from .outputs import check_file

    plot = None
    if args.plot:
        check_file("--plot", args.plot, (".png",))
        from .reports.user import simulation_plotter  # rendering lives above this layer: imported only for --plot

        plot = simulation_plotter(args.system, args.plot)
    system = get_system(args.system)
    simulate = capability(args.system, "simulate")
    p = system.load(args.params, command="simulate")
    t_end = p.t_end if args.t_end is None else args.t_end
    if not (t_end > 0 and np.isfinite(t_end)):
        raise InputError(f"--t-end: must be a positive finite number, got {t_end}")
    doc, summary = simulate(p, SimulateOptions(t_end=t_end, samples=args.samples, device=args.device,
                                                      seed=args.seed, plot=plot))
    _emit(doc, args.json, summary)


def cmd_equilibria(args: argparse.Namespace) -> None:
    doc, text = capability(args.system, "equilibria")(_load(args.system, args.params), cap=args.cap, file=args.params)
    _emit(doc, args.json, text)


def cmd_codegen(args: argparse.Namespace) -> None:
    from .outputs import check_file, write_text

    out = check_file("--out", args.out) if args.out else None
    source = capability(args.system, "codegen")(args.backend, args.params)
    if out is not None:
        write_text("--out", out, source)
        sys.stdout.write(f"wrote {out}\n")
    else:
        sys.stdout.write(source)


def cmd_reach(args: argparse.Namespace) -> None:
    reach = capability(args.system, "reach", f"system '{args.system}' has no reachability construction")
    doc, summary = reach(args.params, args.target, args.T, args.out)
    _emit(doc, True, summary) if args.json else sys.stdout.write(summary)


def cmd_pretrained(args: argparse.Namespace) -> int | None:
    from .pretrained.command import run

    doc, summary = run(args)
    if doc is None:  # ``pretrained verify``: a sweep, its JSON lines are written; summary is the exit code
        return summary
    _emit(doc, args.json, summary)


def cmd_design(args: argparse.Namespace) -> None:
    """``flowcert design SYSTEM --spec FILE``: the system's inverse design (gaussian: Lemma 4.4, A from
    Sigma_inf, K, V, B)."""
    doc, summary = capability(args.system, "design")(args.spec)
    _emit(doc, args.json, summary)


def cmd_report(args: argparse.Namespace) -> None:
    """The report is built in a temporary folder renamed into ``--out`` at the end
    (:func:`flowcert.outputs.staged_folder`): an interrupted or failed build leaves nothing behind."""
    from .outputs import check_folder, staged_folder
    from .reports.build import build_report

    check_folder("--out", args.out)
    if args.params is not None:  # bad input exits 2 before the --out folder is made
        if args.system not in names():
            raise InputError(f"--system: '{args.system}' has no verifier in the report (available: {', '.join(names())})")
        _load(args.system, args.params)
    with staged_folder("--out", args.out) as stage:
        report = build_report(stage, quick=args.quick, only=args.only, params=args.params, system=args.system)
    for path in report.files:
        sys.stdout.write(f"wrote {Path(args.out) / Path(path).relative_to(stage)}\n")
    sys.stdout.write(report.pdf + "\n")


def cmd_kpflow(args: argparse.Namespace) -> None:
    """``flowcert kpflow analyze``: KPFlow identities, effective ranks and theorems (rnn system)."""
    doc, text = capability("rnn", "kpflow")(get_system("rnn").load(args.params), mode=args.mode,
                                            consensus=args.consensus, probes=args.probes,
                                            consensus_op=args.consensus_op)
    _emit(doc, args.json, text)


def cmd_graph(args: argparse.Namespace) -> None:
    """``flowcert graph [--paper KEY] [--out FILE]``: draw the theorem graph (one file per paper)."""
    from . import graph
    from .outputs import check_file
    from .reports.graph import draw  # drawing is rendering: it lives in reports (one figure style)

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
        draw(paper, target)
        sys.stdout.write(f"wrote {target}\n")


def cmd_recheck(args: argparse.Namespace) -> int:
    """Exit 0 when every certificate re-checks (or there is none), 3 when one is refused."""
    from . import recheck

    checkpoint = None
    if args.checkpoint is not None:
        from .pretrained.binding import open_checkpoint

        checkpoint = open_checkpoint(args.checkpoint)  # bad input names --checkpoint (exit 2)
    try:
        out = recheck.recheck_files(args.files, strict=args.strict, checkpoint=checkpoint, rerun=args.rerun)
    except ParamError as exc:
        raise InputError(f"FILE: {exc.file!r}: {exc.problem}") from None
    _emit(out.to_json(), args.json, out.summary())
    return 0 if out.ok else 3


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
    rep.add_argument("--system", default="gaussian",
                     help=f"the system --params describes ({'|'.join(names('report'))}; default gaussian)")
    rep.set_defaults(func=cmd_report)

    ver = sub.add_parser("verify", help="decide every theorem's hypotheses on given parameters",
                         epilog="The keys a parameter file needs: flowcert schema SYSTEM (gaussian: A, B, V, b, mu0, "
                                "Sigma0; attention: V, Q, K or heads; rnn: cell, B, T, H, I).")
    ver.add_argument("system", choices=names("verify"))
    ver.add_argument("--params", required=True, nargs="+", metavar="FILE",
                     help="parameter file (.json or .npz); several files or a directory run a sweep (one JSON line per set)")
    ver.add_argument("--simulate", action="store_true", help="cross-validate by simulation (the default set of cross-checks)")
    ver.add_argument("--checks", default=None, metavar="NAMES",
                     help="comma-separated cross-checks to run (implies --simulate), e.g. moments,particles; the names "
                          "of a system: flowcert.get_system(NAME).checks")
    ver.add_argument("--json", action="store_true", help="print one JSON document on stdout (a sweep: no progress bar)")
    ver.add_argument("--jobs", type=positive_int_arg, default=None, metavar="N", help="sweep on N local processes")
    ver.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="sweep on a Dask cluster (dask.distributed scheduler address; extra 'flowcert[dask]')")
    ver.add_argument("--resume", default=None, metavar="JSONL", help="sweep: skip the files already reported in this file")
    ver.add_argument("--seed", type=seed_arg, default=None,
                     help="seed of the random draws of --simulate (gaussian: default 0; attention: the file's seed)")
    ver.set_defaults(func=cmd_verify)

    sch = sub.add_parser("schema", help="list the keys of a system's parameter file (required, optional, defaults)")
    sch.add_argument("system", choices=names("verify"))
    sch.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    sch.set_defaults(func=cmd_schema)

    eq = sub.add_parser("equilibria", help="enumerate and classify equilibria (attention)")
    eq.add_argument("system", choices=names("equilibria"))
    eq.add_argument("--params", required=True)
    eq.add_argument("--cap", type=positive_int_arg, default=None, help="largest number of sign patterns per eigenvector")
    eq.add_argument("--json", action="store_true")
    eq.set_defaults(func=cmd_equilibria)

    des = sub.add_parser("design", help="Lemma 4.4 inverse design: A with a prescribed equilibrium Sigma_inf")
    des.add_argument("system", choices=list(names("design")))
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
    gen.add_argument("system", choices=names("codegen"))
    gen.add_argument("--backend", choices=("numpy", "torch", "c"), required=True)
    gen.add_argument("--out", default=None, help="write the source here instead of stdout")
    gen.add_argument("--params", default=None, help="attention: take the kernel structure from this file")
    gen.set_defaults(func=cmd_codegen)

    kpf = sub.add_parser("kpflow", help="KPFlow operators of gradient descent on a recurrent model")
    kpf.add_argument("action", choices=("analyze",))
    kpf.add_argument("--params", required=True, help="rnn parameter file (.json or .npz)")
    kpf.add_argument("--mode", choices=("stored", "recompute"), default="stored",
                     help="P: store the Jacobians (default) or recompute them by jvp/vjp")
    kpf.add_argument("--consensus", default=None, metavar="AXES",
                     help="kept axes of a consensus spectrum (true partial trace over the others), e.g. T, H, B, TH")
    kpf.add_argument("--probes", type=int, default=64, help="Rademacher probes of the consensus estimator (default 64)")
    kpf.add_argument("--consensus-op", choices=("PKP", "PP", "K"), default="PKP",
                     help="operator of the consensus spectrum: P K P* (default), P P*, or K")
    kpf.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    kpf.set_defaults(func=cmd_kpflow)

    rec = sub.add_parser("recheck", help="re-verify every certificate in saved flowcert documents, with no solver "
                                         "(exit 3 if one is refused)")
    rec.add_argument("files", nargs="+", metavar="FILE",
                     help="a verify/equilibria/kpflow/pretrained JSON document, a sweep's JSON lines, or one certificate")
    rec.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    rec.add_argument("--strict", action="store_true",
                     help="exit 3 also when a certificate is unbound (its subject not re-derived from the document)")
    rec.add_argument("--rerun", action="store_true",
                     help="run the records (simulations, cross-checks, reach integrations) again from the document's "
                          "own parameters and seed, and compare them (slower: the cost of the runs)")
    rec.add_argument("--checkpoint", default=None, metavar="DIR",
                     help="the checkpoint folder (config.json + model.safetensors) pretrained documents name: each "
                          "head's certificates are re-derived from its weights (without it they count unbound)")
    rec.set_defaults(func=cmd_recheck)

    from .pretrained.command import add_parser as _pretrained_parser

    _pretrained_parser(sub).set_defaults(func=cmd_pretrained)
    return parser


class Terminated(BaseException):
    """``SIGTERM`` (or another terminating signal) as an exception, so that every ``finally`` runs
    (temporary files and folders are removed) before the exit code ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _BrokenPipe(BaseException):
    """The reader of stdout went away: unwind quietly (cleanups run), exit ``128 + SIGPIPE``."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


class _Stdout:
    """Standard output for a command: a failed write or flush (a full device, a closed descriptor)
    is :class:`~flowcert.errors.OutputError` naming ``stdout``, a broken pipe is :class:`_BrokenPipe`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any) -> Any:
        if self._stream is None:
            raise OutputError("stdout", "it is closed")
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise _BrokenPipe() from None
        except OSError as exc:
            raise OutputError("stdout", exc) from None
        except ValueError as exc:  # "I/O operation on closed file"
            raise OutputError("stdout", str(exc)) from None

    def write(self, text: str) -> int:
        """Write all of ``text`` or raise: through the binary buffer, whose short writes (a pipe whose reader
        left, which ``TextIOWrapper.write`` would report as written in full) are written on until they fail."""
        buffer = getattr(self._stream, "buffer", None)
        if buffer is None or not isinstance(text, str):
            return self._call("write", text)
        self._call("flush")  # what the text layer holds goes first
        data = memoryview(text.encode(self._stream.encoding or "utf-8", self._stream.errors or "strict"))
        while data:
            try:
                n = buffer.write(data)
            except BrokenPipeError:
                raise _BrokenPipe() from None
            except (OSError, ValueError) as exc:
                raise OutputError("stdout", exc if isinstance(exc, OSError) else str(exc)) from None
            if not n:
                raise OutputError("stdout", f"a short write ({len(data)} bytes not written)")
            data = data[n:]
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._call("flush")

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise OutputError("stdout", "it is closed")
        return getattr(self._stream, name)


def _silence_stdout(stream: Any) -> None:
    """After a broken pipe or a failed write: point fd 1 at /dev/null so the interpreter's last flush
    of the process's own stdout cannot complain (nothing is done to a stream a caller put in its place)."""
    if stream is None or stream is not sys.__stdout__:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code.

    Warnings raised while a command runs (numpy's RuntimeWarning on hostile numbers) are held
    back: on bad input (exit 2) only the one error line is printed; otherwise they follow.
    ``SIGTERM`` is turned into :class:`Terminated` while the command runs (in the main thread), so
    the temporary outputs are removed before the exit code 143 (``SIGINT``: 130); stdout is guarded
    (:class:`_Stdout`): a full or closed stdout exits :data:`~flowcert.errors.EXIT_IO` (74) with one
    line, a broken pipe exits 141 quietly.
    """
    import warnings

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (exit 2, one line already printed), --help, --version
        return exc.code if isinstance(exc.code, int) else 2

    main_thread = __import__("threading").current_thread() is __import__("threading").main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        with warnings.catch_warnings(record=True) as caught:
            try:
                with precision_notes():  # one PrecisionWarning for the command, none when it fails
                    rc = args.func(args)
                sys.stdout.flush()
            except (ParamError, InputError) as exc:
                sys.stderr.write(f"flowcert: error: {one_line(str(exc))}\n")
                return 2
            except OutputError as exc:
                sys.stderr.write(f"flowcert: error: {one_line(str(exc))}\n")
                if exc.output == "stdout":
                    _silence_stdout(stdout)  # what is still buffered for stdout cannot be written either
                return EXIT_IO
            except _BrokenPipe:
                _silence_stdout(stdout)
                return 128 + signal.SIGPIPE
            except KeyboardInterrupt:
                return 130
            except Terminated as exc:
                return 128 + exc.signum
            except OSError as exc:
                if exc.errno != errno.ENAMETOOLONG:
                    return _internal_error(exc)
                where = f"{one_line(repr(os.fsdecode(exc.filename)))}: " if exc.filename is not None else ""
                sys.stderr.write(f"flowcert: error: {where}{exc.strerror or 'file name too long'}\n")
                return 2
            except Exception as exc:  # noqa: BLE001 - exit code 1 is the contract for internal errors
                return _internal_error(exc)
    finally:
        sys.stdout = stdout
        if main_thread:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return rc if isinstance(rc, int) else 0


def _internal_error(exc: BaseException) -> int:
    sys.stderr.write(f"flowcert: internal error: {type(exc).__name__}: {one_line(str(exc))}\n")
    if "--debug" in sys.argv or os.environ.get("FLOWCERT_DEBUG"):
        raise exc
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
