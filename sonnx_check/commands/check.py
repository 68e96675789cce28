"""Checking the models of a run: which to process (``--fix`` skips its own outputs), one ``run_all`` per
configuration, a result for every model (an internal error stays in the reports as a finding), and what
the run says on stderr about them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sonnx_check.discovery import FIXED_SUFFIX, Discovery, Target
from sonnx_check.errors import UsageError
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.messages import say
from sonnx_check.report.summary import INTERNAL_RULE

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.fix.outcome import FixOutcome
    from sonnx_check.report.outputs import Output
    from sonnx_check.runner import ModelOutcome


def run_groups(targets: list[Target], per_model: list[Settings]) -> list[ModelOutcome]:
    """One run_all per configuration (each model is checked with its own), outcomes in input order."""
    from sonnx_check.runner import run_all

    groups: dict[int, list[int]] = {}
    for i, settings in enumerate(per_model):
        groups.setdefault(id(settings), []).append(i)
    outcomes: list[ModelOutcome | None] = [None] * len(targets)
    for indices in groups.values():
        done = run_all([targets[i] for i in indices], per_model[indices[0]])
        for i, outcome in zip(indices, done, strict=True):
            outcomes[i] = outcome
    return outcomes  # type: ignore[return-value]


def targets_to_process(
    found: Discovery, settings: Settings, fix_output: str | None, outputs: list[Output]
) -> list[Target]:
    """The models to process. With --fix, an earlier output (*.fixed.onnx) named on the command line is
    checked but not fixed again (that would write *.fixed.fixed.onnx); a folder scan skips it."""
    if settings.fix is None:
        return found.targets
    for path, why in found.skipped:
        if why == "it is a --fix output":
            say(f"note: {path}: skipped, it is a --fix output")
    fixable = []
    for target in found.targets:
        if target.error is None and target.path.endswith(FIXED_SUFFIX):
            say(f"note: {target.path}: checked, not fixed again (it is a --fix output)")
        else:
            fixable.append(target)
    if fix_output is not None:
        if len(fixable) != 1:
            raise UsageError(f"--fix-output {fix_output}: needs exactly one model, got {len(fixable)}")
        if not fix_output.endswith(".onnx"):
            raise UsageError(f"--fix-output {fix_output}: the fixed model's name must end in .onnx")
        for out in outputs:
            if out.path is not None and os.path.abspath(out.path) == os.path.abspath(fix_output):
                raise UsageError(f"--fix-output {fix_output}: is also the report's {out.option.split()[0]}")
    return found.targets


def say_nothing_checked(found: Discovery) -> None:
    """A run that was given paths and checks no model says so and why: a pre-commit hook that reports
    "Passed" on a commit whose every model was skipped must not look like a check that ran."""
    reasons = sorted({why for _, why in found.skipped})
    detail = f": every path given was skipped ({'; '.join(reasons)})" if reasons else ""
    say(f"warning: 0 models checked{detail}")


def internal_result(path: str, outcome: ModelOutcome) -> ModelResult:
    """A model whose check failed inside sonnx-check stays in every report, as an error finding naming the
    cause: a report that silently drops a model reads as a pass for it (and a SARIF upload would close its
    alerts)."""
    paragraph = (outcome.internal_error or "internal error").partition("\nTraceback (most recent call")[0]
    cause = paragraph.removeprefix("sonnx-check: ")
    message = f"the model could not be checked: {cause}"
    return ModelResult(path=path, findings=[Finding(INTERNAL_RULE, message, Severity.ERROR)])


def say_how_to_commit_fixes(fixes: list[FixOutcome | None]) -> None:
    """--exit-non-zero-on-fix (the pre-commit hook's mode) fails a run whose fixed model may well conform:
    without this the user sees "conforms ... 0 error(s)" and a failed hook, and no next step."""
    for fix in fixes:
        if fix is None or fix.output is None:
            continue
        import shlex  # only when --fix wrote a model: not part of every run's start-up

        move = f"mv {shlex.quote(fix.output)} {shlex.quote(fix.source)} && git add {shlex.quote(fix.source)}"
        say(
            f"{fix.source}: a fixed model was written to {fix.output}; the original still violates and fails "
            f"this run: replace it with the fixed one and stage it ({move}), then commit again"
        )
