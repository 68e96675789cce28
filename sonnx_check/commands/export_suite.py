"""``--export-suite DIR``: the conformance suite of the models that loaded (compare/suite/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check.messages import say
from sonnx_check.report.summary import is_internal

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.discovery import Target
    from sonnx_check.findings import ModelResult


def check_suite_target(folder: str) -> None:
    """A UsageError when ``folder`` cannot receive a new suite (checked before any model is read)."""
    from sonnx_check.compare.suite import check_target  # the comparison package: only when asked

    check_target(folder)


def run_export_suite(
    folder: str, targets: list[Target], results: list[ModelResult], per_model: list[Settings]
) -> list[str]:
    """Each model that loaded, with its own comparison settings; one error line per model not exported."""
    from sonnx_check.compare.suite import export_suite, options_for

    models = [
        (t.path, options_for(s.compare))
        for t, r, s in zip(targets, results, per_model, strict=True)
        if not r.load_error and not is_internal(r)
    ]
    import os
    import shlex

    from sonnx_check.errors import UserError

    try:
        export = export_suite(folder, models)
    except UserError as exc:  # a full or read-only disk: nothing written, the reports still are
        return [f"--export-suite {exc}"]
    script = shlex.quote(os.path.join(folder, "run_suite.py"))
    say(
        f"suite: {export.cases} case(s) of {len(models)} model(s) written to {folder}; "
        f"run it with: python {script} {shlex.quote(str(folder))}"
    )
    return export.errors
