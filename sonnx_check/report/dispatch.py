"""A run's reports: rendering each format from one record of the run (``RunReport``), printing or writing
each, the statistics and the one-line summary on stderr, and GitHub Actions' step summary.

Model strings are display-sanitised before any reporter sees them (JSON gets the exact-string flavour).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from sonnx_check import sanitise
from sonnx_check.errors import UserError
from sonnx_check.messages import say
from sonnx_check.report.console import colour_kept, stdout_console
from sonnx_check.report.outputs import Output
from sonnx_check.report.run_report import RunReport
from sonnx_check.report.styled import PlainConsole
from sonnx_check.report.summary import summarise

if TYPE_CHECKING:
    from rich.console import Console

    from sonnx_check.config import Settings


def configuration_label(per_model: list[Settings], isolated: bool) -> str:
    if isolated:
        return "none (--isolated)"
    counts: dict[str | None, int] = {}
    for settings in per_model:
        counts[settings.config_file] = counts.get(settings.config_file, 0) + 1
    if not counts:
        return "none"
    names = {name: name if name is not None else "none found (defaults)" for name in counts}
    if len(counts) == 1:
        return next(iter(names.values()))
    return ", ".join(f"{names[name]} ({n} model(s))" for name, n in counts.items())


def render_report(report: RunReport, fmt: str, *, console: Console | PlainConsole | None = None) -> str:
    """The report as text in one format (the registry: report/formats/). ``console``: the text format's
    destination (stdout), whose colour and terminal width the rendering follows; None renders plain text
    for a file."""
    from sonnx_check.report.formats import format_module

    try:
        module = format_module(fmt)
    except KeyError:
        raise AssertionError(f"no renderer for {fmt}") from None
    return module.render(report, console)


def write_reports(report: RunReport, outputs: list[Output]) -> list[str]:
    """Print or write every report; the reports that could not be written, as error messages (the others
    are still written, and the run still reports its internal errors before exiting 2)."""
    from sonnx_check.output_target import write_output

    main = outputs[0]
    written: list[Output] = []
    failures: list[str] = []
    for out in outputs:
        if out.path is None:
            console = stdout_console() if out.fmt == "text" else None
            click.echo(render_report(report, out.fmt, console=console), nl=False, color=colour_kept(console))
            continue
        try:
            write_output(out.path, render_report(report, out.fmt))
            written.append(out)
        except OSError as exc:
            failures.append(f"{out.option}: {exc.strerror or exc}")
        except UserError as exc:  # the target changed kind since the run started
            failures.append(f"{out.option}: {str(exc).removeprefix(out.path + ': ')}")
    if report.settings.statistics and main.fmt not in ("json", "text"):
        # Machine formats stay parseable on stdout; the counts go to the log.
        from sonnx_check.report.text import render_statistics

        results, _ = report.display()
        errors = PlainConsole()
        with errors.capture() as captured:
            render_statistics(errors, results)
        click.echo(sanitise.guard_lines(captured.get()), nl=False, err=True)
    if main.path is not None and not report.quiet and main in written:
        files = ", ".join(f"{o.path} ({o.fmt})" for o in written)
        say(f"{summarise(report.results).line()}; report(s): {files}")
    elif written and not report.quiet:
        say("report(s): " + ", ".join(f"{o.path} ({o.fmt})" for o in written))
    to_terminal = main.path is None and main.fmt == "text" and sys.stdout.isatty()
    for result in report.results:
        if result.load_error and not to_terminal:
            # this result alone, sanitised as for display: a JSON report's run need not sanitise the
            # comparison records a second time (DenseNet-121: 0.2 s of CPU)
            shown = sanitise.DISPLAY.result(result)
            say(f"error: {shown.path}: {shown.findings[0].message}")
    return failures


def write_step_summary(report: RunReport) -> None:
    """GitHub Actions: append a Markdown summary to the job's page when ``$GITHUB_STEP_SUMMARY`` is set."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from sonnx_check.report import step_summary

    results, _ = report.display()
    from sonnx_check.output_target import is_in_place, write_output

    text = step_summary.render(
        results,
        configuration=report.configuration,
        fail_on=report.settings.fail_on,
        identities=report.shown_identities(),
    )
    try:
        if is_in_place(path):  # a FIFO or a descriptor: written into, never replaced
            write_output(path, text)
        else:  # the runner's own file, appended to by every step (a link there is not followed)
            write_output(path, text, append=True)
    except OSError as exc:
        say(f"warning: GITHUB_STEP_SUMMARY {path}: {exc.strerror or exc}; no step summary written")
    except UserError as exc:  # a link, a folder, a socket (output_target.refusal_text)
        say(f"warning: GITHUB_STEP_SUMMARY {exc}; no step summary written")
