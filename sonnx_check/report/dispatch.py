"""A run's reports: rendering each format from one record of the run (``RunReport``), printing or writing
each, the statistics and the one-line summary on stderr, and GitHub Actions' step summary.

Model strings are display-sanitised before any reporter sees them (JSON gets the exact-string flavour).
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from sonnx_check import sanitise
from sonnx_check.errors import UserError
from sonnx_check.findings import ModelResult
from sonnx_check.messages import say
from sonnx_check.report.console import colour_kept, stdout_console
from sonnx_check.report.outputs import EVIDENCE, HTML, Output
from sonnx_check.report.styled import PlainConsole
from sonnx_check.report.summary import is_internal, summarise

if TYPE_CHECKING:
    from rich.console import Console

    from sonnx_check.config import Settings
    from sonnx_check.evidence.identity import ModelIdentity
    from sonnx_check.fix.outcome import FixOutcome


@dataclass
class RunReport:
    results: list[ModelResult]
    fixes: list[FixOutcome | None] | None
    settings: Settings
    quiet: bool
    model_configs: list[str | None]
    configuration: str
    unused: list[dict[str, Any]]
    seconds: float
    timestamp: str
    per_model: list[Settings] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    started_utc: datetime.datetime | None = None
    sources: list[str] = field(default_factory=list)  # the model each result stands for (--fix: the original)
    _display: tuple[list[ModelResult], list[FixOutcome | None] | None] | None = None
    _record: dict[str, Any] | None = None
    _identities: dict[str, ModelIdentity] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The evidence record (built once: --evidence and the HTML report share it)."""
        if self._record is None:
            from sonnx_check.evidence.record import RunFacts, build

            facts = RunFacts(self.argv, self.started_utc or datetime.datetime.now(datetime.UTC), self.seconds)
            per_model = self.per_model or [self.settings] * len(self.results)
            self._record = build(self.results, per_model, facts, self._identities, self.sources or None)
        return self._record

    def identities(self) -> dict[str, ModelIdentity]:
        """Each model's identity (its file's and external data's sha256), for SARIF, JUnit and the step
        summary; hashed once per run."""
        from sonnx_check.evidence.identity import model_identity

        per_model = self.per_model or [self.settings] * len(self.results)
        for result, settings in zip(self.results, per_model, strict=True):
            if result.path not in self._identities:  # bounded by the model's --timeout (identity.py)
                self._identities[result.path] = model_identity(result.path, timeout=settings.compare.timeout)
        return self._identities

    def display(self) -> tuple[list[ModelResult], list[FixOutcome | None] | None]:
        """Results for people (every format but JSON), sanitised once."""
        if self._display is None:
            self._display = sanitise.for_display(self.results, self.fixes)
        return self._display


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
    """The report as text in one format. ``console``: the text format's destination (stdout), whose
    colour and terminal width the rendering follows; None renders plain text for a file."""
    settings = report.settings
    if fmt == EVIDENCE:
        from sonnx_check.evidence.record import render as render_record

        return render_record(report.record())
    if fmt == HTML:
        from sonnx_check.report import html

        return html.render(report.record())
    if fmt == "json":
        from sonnx_check.report import json_report

        results, fixes = sanitise.for_data(report.results, report.fixes)
        return json_report.render(
            results,
            fixes=fixes,
            statistics=settings.statistics,
            config_file=settings.config_file,
            fail_on=settings.fail_on,
            model_configs=report.model_configs,
            unused=report.unused,
        )
    results, fixes = report.display()
    if fmt == "text":
        from sonnx_check.report import text as text_report

        target = console or PlainConsole()
        with target.capture() as captured:
            text_report.render(
                target,
                results,
                quiet=report.quiet,
                fixes=fixes,
                statistics=settings.statistics,
                configuration=report.configuration,
            )
        return sanitise.guard_lines(captured.get())
    if fmt == "sarif":
        from sonnx_check.report import sarif

        return sarif.render(
            results,
            identities=_shown_identities(report),
            invocation=sarif.invocation(
                report.argv,
                report.started_utc or datetime.datetime.now(datetime.UTC),
                report.seconds,
                succeeded=not any(r.load_error or is_internal(r) for r in report.results),
            ),
        )
    if fmt == "github":
        from sonnx_check.report import github

        return github.render(results, fixes=fixes, quiet=report.quiet)
    if fmt == "junit":
        from sonnx_check.report import junit

        return junit.render(
            results,
            fail_on=settings.fail_on,
            seconds=report.seconds,
            timestamp=report.timestamp,
            identities=_shown_identities(report),
        )
    if fmt == "gitlab":
        from sonnx_check.report import gitlab

        return gitlab.render(results)
    raise AssertionError(f"no renderer for {fmt}")


def _shown_identities(report: RunReport) -> dict[str, ModelIdentity]:
    """Identities keyed by the display-sanitised path the reporters see."""
    return {sanitise.DISPLAY.path(path): ident for path, ident in report.identities().items()}


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
    results, _ = report.display()
    to_terminal = main.path is None and main.fmt == "text" and sys.stdout.isatty()
    for result in results:
        if result.load_error and not to_terminal:
            say(f"error: {result.path}: {result.findings[0].message}")
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
        identities=_shown_identities(report),
    )
    try:
        if is_in_place(path):  # a FIFO or a descriptor: written into, never replaced
            write_output(path, text)
        else:  # the runner's own file, appended to by every step
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        say(f"warning: GITHUB_STEP_SUMMARY {path}: {exc.strerror or exc}; no step summary written")
