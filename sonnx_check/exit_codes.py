"""The command's exit codes (docs/rule-ids.md#exit-codes): 0 conforms, 1 findings at or above the failing
severity (``--fail-on``; never with ``--exit-zero``), 2 usage or configuration error, unreadable model,
refused output, or a run interrupted by SIGINT/SIGTERM, 3 internal error. With ``--fix`` the code describes
the fixed models (like ``ruff check --fix``: 1 when violations remain after fixing);
``--exit-non-zero-on-fix`` also makes it 1 when a fixed model was written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check.findings import ModelResult, Severity

if TYPE_CHECKING:
    from sonnx_check.config import Settings

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def exit_code(
    results: list[ModelResult], internal_errors: list[str], fail_on: Severity = Severity.ERROR
) -> int:
    if internal_errors:
        return EXIT_INTERNAL
    if any(r.load_error for r in results):
        return EXIT_USAGE
    failing = any(f.waived is None and f.severity.rank >= fail_on.rank for r in results for f in r.findings)
    return EXIT_FINDINGS if failing else EXIT_OK


def final_code(
    results: list[ModelResult], internal_errors: list[str], settings: Settings, user_error: bool, fixed: bool
) -> int:
    """``fixed``: --exit-non-zero-on-fix and a fixed model was written (the original still violates)."""
    code = exit_code(results, internal_errors, settings.fail_on)
    if code == EXIT_FINDINGS and settings.exit_zero:
        code = EXIT_OK
    if user_error and code != EXIT_INTERNAL:
        code = EXIT_USAGE  # a refused --fix output outranks findings, as an unreadable model does
    if fixed and code == EXIT_OK:
        code = EXIT_FINDINGS
    return code
