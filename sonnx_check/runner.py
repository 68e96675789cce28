"""The per-model pipeline (check, compare, waive, fix, re-check) and its serial or parallel execution.

Each model is processed by one call of ``process(target, settings)``, a plain function of plain data, so
``--jobs N`` can run it in worker processes and gather the outcomes in input order: the report of a parallel
run is byte-identical to the serial one.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sonnx_check.config import Settings
from sonnx_check.errors import UserError
from sonnx_check.findings import ModelResult
from sonnx_check.loading import Target

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome


@dataclass(frozen=True)
class ModelOutcome:
    """What one model produced: its result for the report, or the internal error that prevented it, plus
    the --fix outcome and any user error to print (a refused --fix output path)."""

    result: ModelResult | None
    internal_error: str | None = None
    fix: FixOutcome | None = None
    user_error: str | None = None


def run_all(targets: Sequence[Target], settings: Settings) -> list[ModelOutcome]:
    """Process every target, in parallel when ``settings.jobs > 1``, and return outcomes in input order."""
    if settings.jobs <= 1 or len(targets) <= 1:
        return [process(t, settings) for t in targets]
    workers = min(settings.jobs, len(targets))
    outcomes: list[ModelOutcome] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(process, t, settings) for t in targets]
        for target, future in zip(targets, futures, strict=True):
            try:
                outcomes.append(future.result())
            except BrokenProcessPool as exc:
                # A worker died (a crash in native code, or the memory limit): a bug to report, not a pass.
                outcomes.append(
                    ModelOutcome(None, internal_message(exc, settings.show_traceback, target.path))
                )
    return outcomes


def process(target: Target, settings: Settings) -> ModelOutcome:
    """Check one model and, with --fix, write and re-check its fixed version."""
    from sonnx_check.engine import load_failure
    from sonnx_check.waivers import apply_waivers

    if target.error:
        return ModelOutcome(load_failure(target.path, target.error))
    rules = settings.rules_for(target.path)
    waivers = settings.waivers_for(target.path)
    try:
        checked, compare_error = _check(target.path, rules, settings)
    except _Internal as exc:
        return ModelOutcome(None, exc.message)
    result = apply_waivers(checked, waivers)
    if compare_error is not None:
        # The static findings stand; the comparison could not start for a reason the user can fix.
        return ModelOutcome(result, user_error=f"{target.path}: {compare_error}")
    if settings.fix is None or result.load_error:
        return ModelOutcome(result)
    return _fix(target.path, result, rules, settings)


class _Internal(Exception):
    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def _check(path: str, rules: frozenset[str], settings: Settings) -> tuple[ModelResult, str | None]:
    """The model's result, and the reason its comparison could not start (a user error, e.g. a dynamic
    input without --shape), which must not hide the static findings."""
    from sonnx_check.engine import InternalError, check_file, load_failure

    try:
        result = check_file(path, rules)
        if not settings.compare.enabled or result.load_error:
            return result, None
        try:
            _compare_into(result, settings, rules)
        except UserError as exc:
            return result, str(exc).removeprefix(f"{path}: ")
        return result, None
    except UserError as exc:
        return load_failure(path, str(exc).removeprefix(f"{path}: ")), None
    except InternalError as exc:
        raise _Internal(internal_message(exc, settings.show_traceback)) from exc
    except Exception as exc:  # noqa: BLE001 - any other crash is a bug: one paragraph, exit 3
        raise _Internal(internal_message(exc, settings.show_traceback, path)) from exc


def _compare_into(result: ModelResult, settings: Settings, rules: frozenset[str]) -> None:
    from sonnx_check.compare import CompareOptions, compare_model

    options = CompareOptions(
        datasets=settings.compare.inputs,
        seed=settings.compare.seed,
        ort_opt_level=settings.compare.ort_opt_level,
        shapes=dict(settings.compare.shapes),
        max_elements=settings.compare.max_elements,
        timeout=settings.compare.timeout,
    )
    outcome = compare_model(Path(result.path), options)
    result.findings.extend(f for f in outcome.findings if f.rule in rules)
    result.comparison = outcome.comparison


def _fix(path: str, result: ModelResult, rules: frozenset[str], settings: Settings) -> ModelOutcome:
    """Fix, then re-check the fixed model with the same rules; its findings are what still needs a person."""
    from sonnx_check.fix import fix_file
    from sonnx_check.waivers import apply_waivers

    assert settings.fix is not None
    try:
        outcome = fix_file(path, result.findings, output=settings.fix.output)
    except UserError as exc:  # a refused output path, or a model that changed under our feet
        return ModelOutcome(result, user_error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash while rewriting is a bug: one paragraph, exit 3
        return ModelOutcome(None, internal_message(exc, settings.show_traceback, path))
    if outcome.output is None:
        return ModelOutcome(result, fix=outcome)
    # The fixed model stands in for the original: configuration is matched against the original's path.
    try:
        rechecked, compare_error = _check(outcome.output, rules, settings)
    except _Internal as exc:
        return ModelOutcome(None, exc.message, fix=outcome)
    rechecked = apply_waivers(rechecked, settings.waivers_for(path))
    user_error = f"{outcome.output}: {compare_error}" if compare_error else None
    return ModelOutcome(rechecked, fix=outcome, user_error=user_error)


def internal_message(exc: BaseException, show_traceback: bool, path: str | None = None) -> str:
    where = f" while checking {path}" if path else ""
    text = (
        f"sonnx-check: internal error{where}: {exc}. This is a bug in sonnx-check, not in your model; "
        "please report it with the model if you can (rerun with --show-traceback for details)."
    )
    if show_traceback:
        text += "\n" + "".join(traceback.format_exception(exc))
    return text
