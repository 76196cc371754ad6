"""Sweeps: ``flowcert verify SYSTEM --params FILE [FILE ...]`` over many parameter sets.

Each parameter set is verified on its own (in this process, in ``--jobs N`` local processes,
or on a Dask cluster given by ``--scheduler ADDRESS``) and reported as one JSON line as soon as
it is done, so the output can be streamed, and a sweep resumed (``--resume PREVIOUS.jsonl``
skips the files already reported there). A line is

``{"file", "index", "status": "ok" | "bad_input" | "internal_error", "exit_code": 0 | 2 | 1,
"result": <the verify document> | null, "error": str | null, "seconds", "provenance": {...} | null}``
(``provenance``: where the parameters came from, :mod:`flowcert.provenance`).

A failure in one set is its own line and never stops the others. The sweep's exit code is 0
when every set ran, 1 if any set hit an internal error, otherwise 2 if any set was bad input.
Shared by every system: the per-system work is :func:`flowcert.documents.verify_document`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, TextIO, TypeVar

if TYPE_CHECKING:
    from .records import SweepLine

#: what :func:`resumed_records` keeps of each line
_Kept = TypeVar("_Kept")

SUFFIXES = (".json", ".npz")


def expand(paths: Sequence[str]) -> list[str]:
    """Files named directly, and the ``.json`` / ``.npz`` files of each directory (sorted)."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out.extend(str(f) for f in sorted(path.iterdir()) if f.is_file() and f.suffix.lower() in SUFFIXES)
        else:
            out.append(p)
    return out


def resumed_records(resume: str, keep: Callable[[SweepLine], _Kept] = lambda rec: rec) -> list[_Kept]:
    """``keep(record)`` for each record of a previous sweep's JSON lines (lines that do not parse are ignored).

    The file is streamed through the one reader (:func:`flowcert.files.read_lines`): a regular
    file of any size (a whole-model sweep of d = 384 heads is hundreds of MB), each line at most
    :data:`flowcert.files.MAX_FILE_BYTES`, strict UTF-8, nesting bounded; a missing file, a
    folder, a FIFO or a device is bad input (exit 2). ``keep`` reduces each record as it is read,
    so memory holds one line at a time.
    """
    from .files import MAX_JSON_DEPTH, json_int, check_json_depth, read_lines
    from .schema import OptionError

    def fail(problem: str) -> OptionError:
        return OptionError("--resume", f"{resume!r}: {problem}")

    kept: list[Any] = []
    for line in read_lines(resume, fail):
        check_json_depth(line, fail, 2 * MAX_JSON_DEPTH)  # bad input (exit 2), not a line to skip
        try:
            rec = json.loads(line, parse_int=json_int)
        except (ValueError, RecursionError):  # JSONDecodeError, a huge integer: not a record
            continue
        if isinstance(rec, dict) and isinstance(rec.get("file"), str):
            kept.append(keep(rec))
    return kept


def done_files(resume: str) -> set[str]:
    """Files already reported in a previous sweep's JSON lines (:func:`resumed_records`) whose line re-checks:
    its words agree, it names the digest its file has now, and its document is what flowcert derives from
    that file (:mod:`flowcert.sweeplines`, :func:`flowcert.recheck.recheck_document`, within the re-check budget);
    a forged, stale or over-budget line is run again."""
    from .errors import ParamError
    from .recheck import recheck_document

    def trusted(rec: SweepLine) -> str | None:
        try:
            check = recheck_document(rec, origin=resume)
        except ParamError:  # over the re-check budget: not re-checked, so not trusted (its file is run again)
            return None
        return rec["file"] if not check.refused and not check.unread else None

    return {f for f in resumed_records(resume, trusted) if f is not None}


def check_jobs(jobs: int) -> None:
    """``--jobs`` is bad input above :func:`flowcert.limits.max_jobs` (checked before any work)."""
    from .errors import OptionError
    from .limits import LIMITS, max_jobs

    if jobs < 1:
        raise OptionError("--jobs", f"must be at least 1, got {jobs}")
    if jobs > max_jobs(10**9):
        raise OptionError("--jobs", f"{jobs} exceeds {max_jobs(10**9)}, {LIMITS['sweep:jobs_per_core']} per core "
                                    "(flowcert.limits.LIMITS['sweep:jobs_per_core'])")


def verify_file(system: str, path: str, simulate: bool = False, index: int = 0,
                reference: bool = False) -> SweepLine:
    """Verify one parameter file; never raises. The JSON line of the sweep (JSON-safe); ``reference``: its
    document names the file and the SHA-256 of its bytes instead of copying the parameters
    (:func:`flowcert.documents.verify_document`)."""
    from .certificates import core
    from .documents import plain, verify_document
    from .errors import InputError

    core.clear_memo()  # memoisation is per parameter set: bounded memory in long-lived workers
    t0 = time.perf_counter()
    from .sweeplines import file_digest

    rec: SweepLine = {"file": path, "index": index, "status": "ok", "exit_code": 0, "result": None, "error": None,
                           "provenance": None, "sha256": file_digest(path)}
    try:
        rec["result"] = plain(verify_document(system, path, simulate=simulate, reference=reference))
        rec["provenance"] = rec["result"].get("provenance")
    except InputError as exc:
        rec.update(status="bad_input", exit_code=2, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - one set's failure is its own line
        rec.update(status="internal_error", exit_code=1, error=f"{type(exc).__name__}: {exc}")
    rec["seconds"] = time.perf_counter() - t0
    return rec


def _serial(system: str, files: list[tuple[int, str]], simulate: bool, reference: bool) -> Iterator[SweepLine]:
    for i, f in files:
        yield verify_file(system, f, simulate, i, reference)


def _local(system: str, files: list[tuple[int, str]], simulate: bool, jobs: int,
           reference: bool) -> Iterator[SweepLine]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # fork after importing what the system needs: workers start warm (spawn re-imports sympy,
    # scipy and cvxpy in every worker, seconds each); elsewhere, the platform's default
    linux = sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
    if linux:
        _warm(system)
    context = multiprocessing.get_context("fork" if linux else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_single_thread) as pool:
        futures = {pool.submit(verify_file, system, f, simulate, i, reference): (i, f) for i, f in files}
        try:
            for fut in as_completed(futures):
                i, f = futures[fut]
                try:
                    yield fut.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: still one line for this set
                    yield {"file": f, "index": i, "status": "internal_error", "exit_code": 1, "result": None,
                           "error": f"worker failed: {type(exc).__name__}: {exc}", "seconds": None,
                           "provenance": None}
        except BaseException:  # SIGINT, SIGTERM, a closed stdout: stop the workers now, not after the queue
            pool.shutdown(wait=False, cancel_futures=True)
            for child in multiprocessing.active_children():
                child.kill()
            raise


def _warm(system: str) -> None:
    """Import the modules verifying ``system`` needs (its ``warm_modules``), once, in the parent of forked workers."""
    import importlib

    from .systems import get_system

    for name in get_system(system).warm_modules:
        importlib.import_module(name)


def _single_thread() -> None:
    """Worker initializer: one BLAS/OpenMP thread per process (the processes are the parallelism).

    The libraries are loaded already (forked workers inherit them), so their pools are resized
    with :mod:`threadpoolctl` and ``torch.set_num_threads``; environment variables cover the rest.
    """
    from threadpoolctl import threadpool_limits

    import signal

    # the parent answers SIGINT/SIGTERM (and stops the workers); a worker just ends
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    threadpool_limits(1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _dask(system: str, files: list[tuple[int, str]], simulate: bool, address: str,
          reference: bool) -> Iterator[SweepLine]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as exc:
        from .errors import InputError

        raise InputError("--scheduler: dask.distributed is not installed (pip install 'flowcert[dask]')") from exc
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError, ValueError) as exc:
        from .errors import InputError

        raise InputError(f"--scheduler: cannot connect to {address!r}: {exc}") from None
    try:
        futures = {}
        for i, f in files:
            fut = client.submit(verify_file, system, str(Path(f).resolve()), simulate, i, reference, pure=False)
            futures[fut] = (i, f)
        for fut in as_completed(list(futures)):
            i, f = futures[fut]
            try:
                yield _named(fut.result(), f)
            except Exception as exc:  # noqa: BLE001 - a worker died: still one line for this set
                yield {"file": f, "index": i, "status": "internal_error", "exit_code": 1, "result": None,
                       "error": f"worker failed: {type(exc).__name__}: {exc}", "seconds": None,
                       "provenance": None}
    finally:
        client.close()


class Progress:
    """The sweep's progress bar on a terminal's stderr (:func:`flowcert.progress.bar`; nothing when
    stderr is not a TTY), counting the sets that failed."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        from .progress import bar

        self.done, self.failed = 0, 0
        self.bar = bar(total, desc="sets", enabled=None if enabled else False, stream=stream)

    def update(self, rec: SweepLine) -> None:
        self.done += 1
        self.failed += rec["status"] != "ok"
        self.bar.set_postfix_str(f"{self.failed} failed", refresh=False)
        self.bar.update(1)
        if self.done >= self.bar.total:
            self.bar.close()


def run(system: str, paths: Sequence[str], *, simulate: bool = False, jobs: int = 1, scheduler: str | None = None,
        resume: str | None = None, progress: bool = True, out: TextIO | None = None,
        labels: Mapping[str, tuple[str, Any]] | None = None, reference: bool = False) -> int:
    """Run a sweep and write one JSON line per parameter set to ``out``; returns the exit code.

    ``labels`` maps a file actually read to ``(file, provenance)`` reported in its line (``pretrained
    verify`` reads its exports from a temporary folder and reports the final names); with labels,
    ``--resume`` skips a file only when the previous line names the same file *and* the same
    provenance (a line about another model or prompt is never taken for this one). ``reference``: each
    line's document names its parameter file (the reported name) and the file's SHA-256 instead of copying
    the parameters (``pretrained verify``).
    """
    from .limits import max_jobs

    check_jobs(jobs)  # bad input before any work, whichever command started the sweep
    out = out or sys.stdout
    files = expand(paths)
    shown = {f: labels[f] for f in files if f in labels} if labels else {}
    if resume and shown:
        previous = set(resumed_records(resume, lambda rec: (rec["file"], _key(rec.get("provenance")))))
        todo = [(i, f) for i, f in enumerate(files) if (shown.get(f, (f, None))[0],
                                                         _key(shown.get(f, (f, None))[1])) not in previous]
    else:
        skip = done_files(resume) if resume else set()
        todo = [(i, f) for i, f in enumerate(files) if shown.get(f, (f, None))[0] not in skip]
    runner: Iterable[SweepLine]
    if scheduler:
        runner = _dask(system, todo, simulate, scheduler, reference)
    elif jobs > 1 and len(todo) > 1:

        runner = _local(system, todo, simulate, min(jobs, max_jobs(len(todo))), reference)
    else:
        runner = _serial(system, todo, simulate, reference)
    bar = Progress(len(todo), sys.stderr, progress)
    code = 0
    for rec in runner:
        if rec["file"] in shown:
            actual, (name, rec["provenance"]) = rec["file"], shown[rec["file"]]
            rec = _named(rec, name)
            if rec.get("error"):
                rec["error"] = rec["error"].replace(actual, rec["file"])
        out.write(json.dumps(rec, allow_nan=False) + "\n")
        out.flush()
        bar.update(rec)
        code = 1 if rec["exit_code"] == 1 else (code or rec["exit_code"])
    return code


def _named(rec: SweepLine, name: str) -> SweepLine:
    """``rec`` reported under the file name ``name`` (a line's ``file``, and its document's parameter
    reference, where it has one, name the same file)."""
    from .documents import REF_KEY, params_reference

    doc = rec.get("result")
    if isinstance(doc, dict) and params_reference(doc.get("params")) is not None:
        rec["result"] = {**doc, "params": {**doc["params"], REF_KEY: name}}
    return {**rec, "file": name}


def _key(provenance: Any) -> str:
    """A hashable form of a provenance record (canonical JSON)."""
    return json.dumps(provenance, sort_keys=True)


def is_sweep(paths: Sequence[str], jobs: int | None, scheduler: str | None, resume: str | None) -> bool:
    """True unless the command names one file and no sweep option (then the contract's one document)."""
    return len(paths) != 1 or Path(paths[0]).is_dir() or jobs is not None or scheduler is not None or resume is not None

