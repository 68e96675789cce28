"""``--add-waivers``: adopting sonnx-check on a repository that already has findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check.errors import UsageError
from sonnx_check.exit_codes import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from sonnx_check.findings import ModelResult
from sonnx_check.messages import say
from sonnx_check.report.summary import is_internal

if TYPE_CHECKING:
    from sonnx_check.config import Settings
    from sonnx_check.discovery import Target


def run_add_waivers(
    targets: list[Target], results: list[ModelResult], per_model: list[Settings], internal_errors: list[str]
) -> int:
    from sonnx_check.baseline import add_waivers

    checked = [
        (t.path, r, s.config_file, s.root)
        for t, r, s in zip(targets, results, per_model, strict=True)
        if not r.load_error and not is_internal(r)
    ]
    try:
        added = add_waivers(checked, default_file="pyproject.toml")
    except OSError as exc:
        raise UsageError(f"--add-waivers: {exc.strerror or exc}") from None
    for line in added.unwaivable:
        say(f"warning: cannot be waived by name (not UTF-8 or unnamed): {line}")
    for file, count in added.files.items():
        say(
            f"added {count} waiver skeleton(s) to {file}: write each reason (why the finding is acceptable); "
            "until then the configuration is refused"
        )
    if not added.files:
        say("no finding to waive")
    if internal_errors:
        return EXIT_INTERNAL
    return EXIT_USAGE if any(r.load_error for r in results) else EXIT_OK
