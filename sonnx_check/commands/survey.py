"""``--survey``: the conformance survey of the runtime under test (compare/survey/), no model needed.

Writes the table on stdout and, into a new folder (``--survey-output``, refused when it exists and is not
empty: nothing is ever replaced), ``survey.json``, ``survey.html`` (with the ``[report]`` extra) and
``reproducers/`` (one ONNX backend test case per unexplained divergence).

Exit status: 0 when no divergence is unexplained, 1 when one is, 2 for a usage error (a folder that cannot
be written, a runtime that cannot run at all, an unknown operator or type), as for a check."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sonnx_check import sanitise
from sonnx_check.errors import UsageError
from sonnx_check.exit_codes import EXIT_FINDINGS, EXIT_OK
from sonnx_check.messages import say

if TYPE_CHECKING:
    from sonnx_check.compare.options import CompareOptions
    from sonnx_check.compare.survey.results import Survey

DEFAULT_OUTPUT = "sonnx-survey"
JSON_FILE, HTML_FILE = "survey.json", "survey.html"


def check_survey_target(path: str) -> None:
    """A UsageError (one line) when ``path`` cannot receive a new survey; checked before anything runs."""
    from sonnx_check.compare.inputs.backend_layout import refusal

    problem = refusal(path)
    if problem is not None:
        raise UsageError(f"--survey-output {sanitise.line(path)}: {problem}")


def run_survey_command(
    options: CompareOptions,
    output: str = DEFAULT_OUTPUT,
    *,
    operators: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    console: Any = None,
    quiet: bool = False,
) -> int:
    """Survey the runtime ``options`` name (``--runtime-command``, else onnxruntime; any runtime the runner
    factory builds), print the table, write the files; the exit status."""
    from sonnx_check import progress
    from sonnx_check.compare.inputs.backend_layout import TargetNotEmpty, new_folder
    from sonnx_check.compare.runtimes.base import RunnerUnavailable
    from sonnx_check.compare.survey import SurveyRequest, run_survey, surveyed_operators
    from sonnx_check.compare.survey.configurations import SURVEYED_TYPES
    from sonnx_check.report.console import print_rendered, stdout_console
    from sonnx_check.report.survey_text import render_survey

    if options.saved_outputs is not None:
        raise UsageError("--survey runs the runtime itself: --outputs (saved outputs) cannot be surveyed")
    _check_names("--survey-operators", operators, surveyed_operators())
    _check_names("--survey-types", types, list(SURVEYED_TYPES))
    check_survey_target(output)
    settings = _settings(options, operators, types)
    progress.start(len(surveyed_operators(operators)), quiet=quiet)  # on stderr, when it is a terminal
    try:
        with new_folder(output) as folder:
            request = SurveyRequest(
                options,
                folder,
                operators=operators,
                types=types,
                on_operator=_progress,
                settings=settings,
            )
            try:
                survey = run_survey(request)
            except RunnerUnavailable as exc:
                raise UsageError(f"--survey: {sanitise.line(str(exc))}") from None
            finally:
                progress.stop()
            code = EXIT_FINDINGS if survey.unexplained else EXIT_OK
            _write_files(folder, survey, code)
    except TargetNotEmpty as exc:
        raise UsageError(f"--survey-output {exc}") from None
    except OSError as exc:
        raise UsageError(f"--survey-output {sanitise.line(output)}: {exc.strerror or exc}") from None
    print_rendered(console or stdout_console(), lambda shown: render_survey(shown, survey, output))
    return code


def _progress(op_type: str, number: int, total: int) -> None:
    """``[n/total] survey Op``, and the battery's batches beneath it."""
    from sonnx_check import progress

    if number > 1:
        progress.model_done()
    progress.model(f"survey {op_type}")


def _check_names(option: str, given: Sequence[str] | None, known: Sequence[str]) -> None:
    if given is None:
        return
    unknown = [n for n in given if n not in known]
    if unknown:
        named = ", ".join(sanitise.line(n) for n in unknown)
        raise UsageError(f"{option}: {named} not surveyed (known: {', '.join(known)})")


def _settings(
    options: CompareOptions, operators: Sequence[str] | None, types: Sequence[str] | None
) -> dict[str, Any]:
    return {
        "seed": options.seed,
        **options.readings.settings_json(),
        "max_elements": options.max_elements,
        "timeout_per_operator": options.timeout,
        "accuracy": dict(sorted(options.accuracy.items())),
        "operators": list(operators) if operators is not None else "all",
        "types": list(types) if types is not None else "all",
    }


def _write_files(folder: Any, survey: Survey, code: int) -> None:
    import importlib.util

    from sonnx_check.report.survey_json import survey_json, survey_record

    folder.write_file(JSON_FILE, survey_json(survey, code).encode("utf-8"))
    if importlib.util.find_spec("jinja2") is None:  # the page needs jinja2 only (no plot)
        say(
            f"note: {os.path.join(folder.path, HTML_FILE)} not written: the HTML page needs jinja2: install "
            'the report extra (pip install "sonnx-check[report]")'
        )
        return
    from sonnx_check.report.survey_html import render_survey_html

    folder.write_file(HTML_FILE, render_survey_html(survey_record(survey, code)).encode("utf-8"))


def run_survey_from_settings(compare: Any, output: str | None, *, quiet: bool = False) -> int:
    """``--survey`` from the resolved settings (``CompareSettings``: the command line over the configuration),
    as the CLI calls it: the runtime checked first (a command that cannot be found: exit 2 at once)."""
    from sonnx_check.compare.runtimes.startup import check_runtime_settings
    from sonnx_check.compare.suite import options_for

    target = DEFAULT_OUTPUT if output is None else output
    check_survey_target(target)
    check_runtime_settings(compare)
    return run_survey_command(options_for(compare), target, quiet=quiet)
