"""The per-model pipeline (read, check, compare, waive, fix, re-check) and its serial or parallel execution.

Each model is processed by one call of ``process(target, settings)``, a plain function of plain data, so
``--jobs N`` can run it in worker processes and gather the outcomes in input order: the report of a parallel
run is byte-identical to the serial one.

Each model file is read once (loading.ModelFile): the static check, the comparison and --fix all work from
those bytes, and the file is checked to be the same one after each phase, so a file replaced mid-run is a
load error, never a report that mixes two models.

SIGINT and SIGTERM stop the run (``run_all`` raises RunInterrupted): the handler (stop.py) records the
signal and kills the onnxruntime workers at once; the loops here and in the comparison check for it and
stop from ordinary code; the pool processes are asked to stop (they unwind, so --fix's temporary files are
removed) and killed if they do not within a few seconds. Every child also dies with its parent
(compare/children.py), so even a SIGKILLed sonnx-check leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from sonnx_check import progress, stop
from sonnx_check.children import die_with_parent, forget_inherited_workers, kill, kill_live_workers
from sonnx_check.config import Settings
from sonnx_check.discovery import FIXED_SUFFIX, Target
from sonnx_check.errors import ModelLoadError, RunInterrupted, UserError
from sonnx_check.external_data import external_tensors, judge, shown
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.loading import ModelFile, external_weights_loaded, read_model_file

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import ProcessPoolExecutor

    import onnx

    from sonnx_check.fix.outcome import FixOutcome
    from sonnx_check.view import ModelView

_POOL_GRACE = 3.0  # seconds a pool process has to unwind (remove its temporary files) before it is killed
_STOPPED_EXIT = 128 + signal.SIGTERM  # how a pool process that was stopped exits
_POLL = 0.1  # seconds between looks at the recorded signal while waiting for pool processes


@dataclass(frozen=True)
class ModelOutcome:
    """What one model produced: its result for the report, or the internal error that prevented it, plus
    the --fix outcome and any user error to print (a refused --fix output path)."""

    result: ModelResult | None
    internal_error: str | None = None
    fix: FixOutcome | None = None
    user_error: str | None = None


def run_all(targets: Sequence[Target], settings: Settings) -> list[ModelOutcome]:
    """Process every target, in parallel when ``settings.jobs > 1``, and return outcomes in input order.
    Raises RunInterrupted when SIGINT or SIGTERM stops the run, once every process it started has ended."""
    with _stopped_by_signals():
        try:
            if settings.jobs <= 1 or len(targets) <= 1:
                outcomes = []
                for target in targets:
                    stop.check()
                    progress.model(target.path)
                    outcomes.append(process(target, settings))
                    progress.model_done()
                stop.check()
                return outcomes
            return _run_parallel(targets, settings)
        except stop.Stopped as stopped:
            kill_live_workers()  # started after the signal, or not yet reaped
            raise RunInterrupted(stopped.signal_name) from None


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """The stop handler for the duration of the block, unless the command installed it already (entry.py)
    for the whole process. Outside the main thread (a library caller's thread) no handler can be
    installed, and the caller's own handling applies."""
    if stop.installed():
        yield
        return
    previous = {s: signal.getsignal(s) for s in stop.SIGNALS}
    if not stop.install():
        yield
        return
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        stop.reset()


def _run_parallel(targets: Sequence[Target], settings: Settings) -> list[ModelOutcome]:
    # Imported here: a one-model run (pre-commit, most of CI) does not pay for the pool machinery.
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    workers = min(settings.jobs, len(targets))
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_pool_context(),
        initializer=_pool_process_start,
        initargs=(os.getpid(),),
    )
    outcomes: list[ModelOutcome] = []
    try:
        futures = [pool.submit(_process_in_pool, t, settings) for t in targets]
        for target, future in zip(targets, futures, strict=True):
            while not future.done():  # a wait the recorded signal can end, not one the handler must break
                stop.check()
                wait([future], timeout=_POLL, return_when=FIRST_COMPLETED)
            stop.check()
            progress.model_done(target.path)
            try:
                outcomes.append(future.result())
            except BrokenProcessPool as exc:
                # A worker died (a crash in native code, or the memory limit): a bug to report, not a pass.
                outcomes.append(
                    ModelOutcome(None, internal_message(exc, settings.show_traceback, target.path))
                )
    except stop.Stopped:
        _end_pool(pool)
        raise
    pool.shutdown(wait=True)
    return outcomes


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork on Linux, as Python up to 3.13 does by default: the pool processes must be this process's own
    children (not a fork server's) to die with it, and forking is what keeps --jobs cheap to start."""
    import multiprocessing

    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Stop every pool process: SIGTERM (each kills its onnxruntime worker and unwinds, which removes its
    temporary files), then SIGKILL for any still there after the grace period."""
    # Python < 3.14 has no public way to end running pool processes; _processes is where they are.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.pid is not None and process.is_alive():
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + _POOL_GRACE
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.pid is not None and process.is_alive():
            kill(process.pid)  # its onnxruntime worker dies with it (PR_SET_PDEATHSIG)
            process.join()


# -- inside a pool process ----------------------------------------------------------------------------------

_in_task = False


def _pool_process_start(parent: int) -> None:
    die_with_parent(parent)
    forget_inherited_workers()
    stop.reset()
    # A Ctrl-C reaches every process of the terminal's process group; the main process decides what an
    # interrupted run does, and ends this one with SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_pool_sigterm)


def _on_pool_sigterm(signum: int, frame: FrameType | None) -> None:
    if _in_task:
        # Recorded (and the onnxruntime worker killed); the model's own code stops at its next check and
        # unwinds (removing --fix's temporary file), then _process_in_pool exits.
        stop.record(signum)
        return
    kill_live_workers()
    os._exit(_STOPPED_EXIT)  # between tasks: nothing to clean up


def _process_in_pool(target: Target, settings: Settings) -> ModelOutcome:
    global _in_task
    _in_task = True
    try:
        stop.check()
        return process(target, settings)
    except stop.Stopped:
        # Unwound: the onnxruntime worker is gone and --fix removed its temporary file. The pool would
        # otherwise report the stop as this task's result and start the next one.
        os._exit(_STOPPED_EXIT)
    finally:
        _in_task = False


# -- one model ------------------------------------------------------------------------------------------


def process(target: Target, settings: Settings) -> ModelOutcome:
    """Check one model and, with --fix, write and re-check its fixed version."""
    from sonnx_check.engine import load_failure
    from sonnx_check.waivers import apply_waivers

    if target.error:
        return ModelOutcome(load_failure(target.path, target.error))
    rules = settings.rules_for(target.path)
    waivers = settings.waivers_for(target.path)
    try:
        # An earlier --fix output named on the command line is checked, never fixed again (*.fixed.fixed.onnx)
        fixing = settings.fix is not None and not target.path.endswith(FIXED_SUFFIX)
        checked, model, compare_error = _check(target.path, rules, settings, keep=fixing)
        stop.check()
    except _Internal as exc:
        return ModelOutcome(None, exc.message)
    unsafe = settings.fix is not None and settings.fix.unsafe
    result = _mark_fixable(apply_waivers(checked, waivers), unsafe)
    if compare_error is not None:
        # The static findings stand; the comparison could not start for a reason the user can fix.
        return ModelOutcome(result, user_error=f"{target.path}: {compare_error}")
    if settings.fix is None or result.load_error or model is None:
        return ModelOutcome(result)
    return _fix(model, result, rules, settings)


def _mark_fixable(result: ModelResult, unsafe: bool = False) -> ModelResult:
    """Each finding marked with whether --fix has a rewrite for it (the fix package decides; ``unsafe``:
    --unsafe-fixes)."""
    if not result.findings:  # nothing to mark: the fix package is not even imported (start-up time)
        return result
    from dataclasses import replace

    from sonnx_check.fix import mark_fixable

    return replace(result, findings=mark_fixable(result.findings, unsafe=unsafe))


def _unmark_refused(result: ModelResult, outcome: FixOutcome) -> ModelResult:
    """The fixed model's findings that --fix just refused (a MaxPool.R4 whose input shape is not static) are
    not marked fixable: running --fix again would refuse them again."""
    from dataclasses import replace

    refused = {(n.rule, n.node.name if n.node else None, n.tensor) for n in outcome.not_fixed}

    def place(f: Finding) -> tuple[str, str | None, str | None]:
        return (f.rule, f.node.name if f.node else None, f.tensor)

    findings = [
        replace(f, fixable=False) if f.fixable and place(f) in refused else f for f in result.findings
    ]
    return replace(result, findings=findings)


class _Internal(Exception):
    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def _check(
    path: str, rules: frozenset[str], settings: Settings, *, keep: bool = False
) -> tuple[ModelResult, ModelFile | None, str | None]:
    """The model's result, the file it was read from when ``keep`` (for --fix), and the reason its
    comparison could not start (a user error, e.g. a dynamic input without --shape), which must not hide
    the static findings."""
    from sonnx_check.engine import InternalError, check_model_view, checker_verdict_before_parse, load_failure

    try:
        source = read_model_file(path)
        verdict = checker_verdict_before_parse(source, rules, settings.compare.timeout)
        # The skeleton first: once the whole model is parsed, the skeleton is that model (no second parse).
        skeleton = source.skeleton()
        whole = source.model() if settings.compare.enabled or keep else None
        source.release()  # every parse this model needs is done: the file's bytes go
        stop.check()
        # the comparison reads the static check's view of the model (one view per model and run)
        result, view = check_model_view(
            skeleton,
            path,
            rules,
            elided=source.elided,
            checker_verdict=verdict,
            timeout=settings.compare.timeout,
        )
        stop.check()
        del skeleton
        _unchanged(source)
        if whole is None or result.load_error:
            return result, None, None
        if settings.compare.enabled:
            try:
                _compare_into(result, whole, settings, rules, view)
            except UserError as exc:
                reason = str(exc).removeprefix(f"{path}: ")
                if NOT_COMPARED in rules:
                    result.findings.append(_not_started(reason))
                return result, None, reason
            _unchanged(source)
        return result, source if keep else None, None
    except ModelLoadError as exc:
        return load_failure(path, exc.cause), None, None
    except UserError as exc:
        return load_failure(path, str(exc).removeprefix(f"{path}: ")), None, None
    except InternalError as exc:
        raise _Internal(internal_message(exc, settings.show_traceback)) from exc
    except Exception as exc:  # noqa: BLE001 - any other crash is a bug: one paragraph, exit 3
        raise _Internal(internal_message(exc, settings.show_traceback, path)) from exc


NOT_COMPARED = "RUNTIME.not-compared"


def _not_started(reason: str) -> Finding:
    """The model's own report says it was not compared, and why: a reader of that model's section (or of
    its JSON, SARIF, JUnit entry) must never take the static verdict alone for a comparison that passed."""
    return Finding(
        NOT_COMPARED,
        f"the comparison did not start: {reason}",
        Severity.ERROR,
        data={"stage": "options"},
    )


def _unchanged(source: ModelFile) -> None:
    problem = source.changed()
    if problem is not None:
        raise ModelLoadError(source.path, problem)


def _compare_into(
    result: ModelResult,
    model: onnx.ModelProto,
    settings: Settings,
    rules: frozenset[str],
    view: ModelView | None = None,
) -> None:
    from sonnx_check.compare import CompareOptions, compare_loaded, refusal
    from sonnx_check.settings_handover import compare_arguments

    options = CompareOptions(**compare_arguments(settings.compare))
    # The weights of an external-data model are judged before any is read (a location outside the folder or
    # bytes the file does not hold: the comparison does not start, the static findings stand), count
    # against --max-memory, and are read for the comparison only: --fix writes the model with its
    # external-data entries as they were.
    issues, segments = judge(external_tensors(model), Path(result.path).parent)
    if issues:
        issue = issues[0]
        raise UserError(
            f"external data of tensor '{issue.tensor}' ({shown(issue.location)}) {issue.problem}; "
            "the model was not compared"
        )
    refused = refusal(model, options, sum(s.size for s in segments), view)
    if refused is not None:
        outcome = refused
    else:
        try:
            with external_weights_loaded(model, result.path):
                outcome = compare_loaded(model, options, name=result.path, view=view)
        except ModelLoadError as exc:
            raise UserError(f"{exc.cause}; the model was not compared") from None
    result.findings.extend(f for f in outcome.findings if f.rule in rules)
    result.comparison = outcome.outcome


def _fix(source: ModelFile, result: ModelResult, rules: frozenset[str], settings: Settings) -> ModelOutcome:
    """Fix, then re-check the fixed model with the same rules; its findings are what still needs a person."""
    from sonnx_check.fix import fix_model
    from sonnx_check.waivers import apply_waivers

    assert settings.fix is not None
    path = source.path
    try:
        _unchanged(source)  # the fixed model is written from what was read: that must still be the file
        # In place: nothing needs the original model after the fix, and a copy would hold the weights twice.
        outcome = fix_model(
            source.model(),
            path,
            result.findings,
            output=settings.fix.output,
            unsafe=settings.fix.unsafe,
            preview=settings.fix.preview,
        )
    except ModelLoadError as exc:
        from sonnx_check.engine import load_failure

        return ModelOutcome(load_failure(path, exc.cause))
    except UserError as exc:  # a refused output path
        return ModelOutcome(result, user_error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash while rewriting is a bug: one paragraph, exit 3
        return ModelOutcome(None, internal_message(exc, settings.show_traceback, path))
    del source
    if outcome.output is None:
        return ModelOutcome(result, fix=outcome)
    # The fixed model stands in for the original: configuration is matched against the original's path.
    stop.check()
    try:
        rechecked, _, compare_error = _check(outcome.output, rules, settings)
    except _Internal as exc:
        return ModelOutcome(None, exc.message, fix=outcome)
    rechecked = _mark_fixable(apply_waivers(rechecked, settings.waivers_for(path)), settings.fix.unsafe)
    rechecked = _unmark_refused(rechecked, outcome)
    user_error = f"{outcome.output}: {compare_error}" if compare_error else None
    return ModelOutcome(rechecked, fix=outcome, user_error=user_error)


def internal_message(exc: BaseException, show_traceback: bool, path: str | None = None) -> str:
    where = f" while checking {path}" if path else ""
    text = (
        f"sonnx-check: internal error{where}: {exc}. This is a bug in sonnx-check, not in your model; "
        "please report it with the model if you can (rerun with --show-traceback for details)."
    )
    if show_traceback:
        import traceback  # only for --show-traceback: not part of every run's start-up

        text += "\n" + "".join(traceback.format_exception(exc))
    return text
