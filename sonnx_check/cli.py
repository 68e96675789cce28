"""The ``sonnx-check`` command: wires options to functions, prints, and sets the exit code.

Exit codes (docs/rule-ids.md#exit-codes): 0 conforms, 1 findings at or above the failing severity
(``--fail-on``; never with ``--exit-zero``), 2 usage or configuration error, unreadable model, refused output,
or a run interrupted by SIGINT/SIGTERM, 3 internal error. With ``--fix`` the code describes the fixed models
(like ``ruff check --fix``: 1 when violations remain after fixing); ``--exit-non-zero-on-fix`` also makes it 1
when a fixed model was written (the pre-commit hook passes it, so a commit never passes on a fix it did not
include).

Everything printed goes through ``sanitise``: model strings are display-sanitised before any reporter sees
them (JSON gets the exact-string flavour), and every stderr line is one line that cannot be a GitHub
workflow command.

This module is wiring only: the options (the comparison's are declared in ``settings.py``), the order of a
run's steps, and the exit code. What each step does lives elsewhere: ``commands/`` (checking the models,
``--add-waivers``, ``--list-rules``/``--explain``, ``--export-suite``), ``report/outputs.py`` (where reports
go), ``report/dispatch.py`` (rendering and writing them), ``exit_codes.py``.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from typing import Any

import click

from sonnx_check import __version__, blas_threads, masking, stop  # noqa: F401 - blas_threads: before numpy loads
from sonnx_check import settings as declared
from sonnx_check.commands.check import (
    internal_result,
    run_groups,
    say_how_to_commit_fixes,
    say_nothing_checked,
    targets_to_process,
)
from sonnx_check.config import FAIL_ON, FORMATS, CliOptions, Configurations, FixSettings
from sonnx_check.errors import RunInterrupted, UsageError, UserError
from sonnx_check.exit_codes import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, exit_code, final_code  # noqa: F401
from sonnx_check.messages import say, say_internal
from sonnx_check.report.dispatch import configuration_label, write_reports, write_step_summary
from sonnx_check.report.outputs import parse_outputs, prepare_outputs
from sonnx_check.report.run_report import RunReport
from sonnx_check.report.summary import is_internal

ARGV_KEY = "sonnx_check.argv"

# --help: options grouped by purpose (click has no groups; the command formats them itself).
SECTIONS = (
    ("Rules", ("select", "extend_select", "ignore")),
    (
        "Reports",
        (
            "output_format",
            "output",
            "output_formats",
            "evidence",
            "mask",
            "quiet",
            "verbose",
            "statistics",
            "color",
        ),
    ),
    ("Exit code", ("fail_on", "exit_zero")),
    ("Files and configuration", ("config_path", "isolated", "force_exclude", "show_settings")),
    ("Fixing (--fix)", ("fix", "diff", "unsafe_fixes", "fix_output", "exit_non_zero_on_fix")),
    ("Adopting", ("add_waivers",)),
    (declared.COMPARE_SECTION, declared.flag_parameters()),
    ("Surveying a runtime", ("survey", "survey_output")),
    ("Running", ("jobs", "show_traceback")),
    ("Information", ("list_rules", "aliases", "explain", "version", "help")),
)
# The epilog as click lays out a definition list: each description wrapped between words to the terminal's
# width (a long command gets its description on the next line), never pre-wrapped for one width.
EXAMPLES = (
    ("sonnx-check models/", "check every model under models/ (.gitignore respected)"),
    ("sonnx-check --compare model.onnx", "also diff onnxruntime against the SONNX reference kernels"),
    (
        "sonnx-check --format github --output-format sarif:sonnx-check.sarif models/",
        "CI: annotations, a SARIF file (and, on GitHub Actions, a step summary) in one run",
    ),
    ("sonnx-check --diff model.onnx", "show what --fix would rewrite; nothing is written"),
    (
        "sonnx-check --fix --exit-non-zero-on-fix model.onnx",
        "write model.fixed.onnx; exit 1 when a fix was written",
    ),
    ("sonnx-check --explain MaxPool.R4", "what a rule checks, why, and how to fix it"),
    ("sonnx-check --survey", "every profile operator on edge values in onnxruntime: its conformance table"),
)
EXIT_CODES = (
    ("0", "every model conforms (no finding at or above --fail-on)"),
    (
        "1",
        "findings at or above --fail-on (0 with --exit-zero), or a fix written with --exit-non-zero-on-fix",
    ),
    (
        "2",
        "usage or configuration error, a model that could not be read, a refused output, or a run "
        "interrupted by SIGINT or SIGTERM",
    ),
    ("3", "internal error (a bug in sonnx-check): one paragraph, the traceback with --show-traceback"),
)


class _Command(click.Command):
    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        arguments = list(args)  # as given, for the evidence record (parsing consumes the list)
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[ARGV_KEY] = arguments
        return ctx

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records: dict[str, list[tuple[str, str]]] = {}
        section_of = {name: title for title, names in SECTIONS for name in names}
        help_option = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or isinstance(param, click.Argument):
                continue
            name = "help" if param is help_option else param.name or ""
            records.setdefault(section_of.get(name, "Other"), []).append(record)
        for title in [t for t, _ in SECTIONS] + ["Other"]:
            if title in records:
                with formatter.section(title):
                    formatter.write_dl(records[title])

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, rows in (("Examples", EXAMPLES), ("Exit codes", EXIT_CODES)):
            with formatter.section(title):
                formatter.write_dl(list(rows), col_max=40)


@click.command(
    cls=_Command,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Rule IDs or globs to check (comma-separated; replaces the configured selection; default: all).",
)
@click.option(
    "--extend-select", multiple=True, metavar="RULES", help="Rule IDs or globs to check in addition."
)
@click.option(
    "--ignore", multiple=True, metavar="RULES", help="Rule IDs or globs not to check (comma-separated)."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=str),
    metavar="FILE",
    help="Read [tool.sonnx-check] from FILE for every model (default: for each model, the nearest "
    "pyproject.toml that has it, from the model's folder upwards, else from the working directory).",
)
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings each model given (else the working directory) would be checked with, and "
    "where each came from (default, file, command line); check nothing.",
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Skip files named on the command line that the configuration's exclude matches (.gitignore and "
    "*.fixed.onnx apply to folder scans only); the pre-commit hook passes it.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="Report format (default: the configured one, else text).",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=str), help="Write the report to FILE."
)
@click.option(
    "--output-format",
    "output_formats",
    multiple=True,
    metavar="FORMAT:PATH",
    help="Also write a report in FORMAT to PATH (repeatable), e.g. sarif:results.sarif junit:results.xml; "
    "html:report.html writes the reviewer's report (needs the [report] extra).",
)
@click.option(
    "--evidence",
    type=click.Path(dir_okay=False, path_type=str),
    metavar="PATH",
    help="Write the evidence record (JSON): model and data hashes, environment, configuration, every rule's "
    "verdict at every node, the comparison's datasets and margins.",
)
@click.option(
    "--mask",
    multiple=True,
    metavar="VALUE",
    help="Replace VALUE by *** wherever a command line is recorded (repeatable; also one value per line "
    "of $SONNX_CHECK_MASK). Option values and assignments named like token, password, secret, key or "
    "auth, and URL passwords, are always masked.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no coverage.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also say on stderr which models were found and skipped (and why), the configuration each is "
    "checked with, and how long each step took.",
)
@click.option(
    "--color",
    type=click.Choice(("auto", "always", "never")),
    default="auto",
    show_default=True,
    help="Colour the text report: auto follows the terminal, NO_COLOR and FORCE_COLOR; always and never "
    "override them.",
)
@click.option("--statistics", is_flag=True, help="Show the number of findings per rule.")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON),
    default=None,
    help="Lowest severity that fails the run (default: the configured one, else error).",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings fail (errors still exit 2 or 3).")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Check N models at a time in separate processes (0: one per CPU; default 1). Findings, order, "
    "exit code and reports are a serial run's; only the recorded command line and times differ (SARIF "
    "invocations, the evidence record's run, HTML and JUnit times).",
)
@click.option(
    "--fix",
    is_flag=True,
    help="Write NAME.fixed.onnx beside each model with the semantics-preserving rewrites applied, and "
    "report the fixed model.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print what --fix would rewrite, model by model, as a unified diff of the graph; write nothing.",
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="With --fix or --diff: also the unsafe rewrites, which change a name or a stored weight (each "
    "such rule's fix text says so; --explain ID).",
)
@click.option(
    "--fix-output",
    type=click.Path(dir_okay=False, path_type=str),
    metavar="PATH",
    help="With --fix and one model: write the fixed model to PATH instead.",
)
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="With --fix: exit 1 when a fixed model was written, even if it conforms (the original still "
    "violates the profile until it is replaced).",
)
@click.option(
    "--add-waivers",
    is_flag=True,
    help="Adopting on an existing repository: append a waiver skeleton for every profile finding to the "
    "configuration, with an empty reason that must be filled in before the next run.",
)
@click.option("--list-rules", is_flag=True, help="List the rule catalogue and exit.")
@click.option(
    "--aliases",
    is_flag=True,
    help="With --list-rules: also list each rule's aliases (the IDs of the SONNX texts it answers to).",
)
@click.option("--explain", metavar="ID", help="Explain one rule (ID or alias) and exit.")
@click.option(
    "--survey",
    is_flag=True,
    help="Survey the runtime under test, no model needed: every profile operator's edge battery, as a "
    "conformance table; exit 1 on an unexplained divergence (docs/survey.md).",
)
@click.option(
    "--survey-output",
    metavar="DIR",
    help="With --survey: the new (or empty) folder for survey.json, survey.html and the reproducers "
    "(default: sonnx-survey).",
)
@declared.click_options
@click.option("--show-traceback", is_flag=True, help="Show Python tracebacks of internal errors.")
@click.version_option(__version__, "--version", prog_name="sonnx-check")
def main(**options: Any) -> None:
    """Check ONNX models against the SONNX safety-related profile.

    PATHS are model files or folders (searched recursively for *.onnx).
    """
    try:
        code = run(**options)
    except UserError as exc:
        say(f"error: {exc}")
        code = EXIT_USAGE
    except (RunInterrupted, stop.Stopped) as exc:
        say(f"interrupted ({exc.signal_name})")
        code = EXIT_USAGE
    except KeyboardInterrupt:
        say("interrupted (SIGINT)")
        code = EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more can be reported on stdout.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout again at exit
        code = EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a crash outside any model is still one paragraph, exit 3
        from sonnx_check.runner import internal_message

        say_internal(internal_message(exc, bool(options.get("show_traceback"))))
        code = EXIT_INTERNAL
    sys.exit(code)


def run(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_path: str | None,
    isolated: bool,
    force_exclude: bool,
    show_settings: bool,
    output_format: str | None,
    output: str | None,
    output_formats: tuple[str, ...],
    evidence: str | None,
    mask: tuple[str, ...],
    quiet: bool,
    verbose: bool,
    color: str,
    statistics: bool,
    fail_on: str | None,
    exit_zero: bool,
    jobs: int | None,
    fix: bool,
    diff: bool,
    unsafe_fixes: bool,
    fix_output: str | None,
    exit_non_zero_on_fix: bool,
    add_waivers: bool,
    list_rules: bool,
    aliases: bool,
    explain: str | None,
    survey: bool,
    survey_output: str | None,
    show_traceback: bool,
    **compared: Any,  # one value per declared comparison option (settings.py), by its parameter name
) -> int:
    stop.check()  # a signal that arrived while the command was being imported
    masking.use(mask)  # before anything records a command line
    from sonnx_check.report.console import choose_colour

    choose_colour(color)
    started = time.monotonic()
    started_utc = datetime.datetime.now(datetime.UTC)
    timestamp = started_utc.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")
    if aliases and not list_rules:
        raise UsageError("--aliases needs --list-rules")
    if list_rules or explain:
        from sonnx_check.commands.catalogue import show_catalogue

        show_catalogue(list_rules, explain, output_format, aliases)
        return EXIT_OK
    if survey_output is not None and not survey:
        raise UsageError("--survey-output needs --survey")
    if survey and paths:
        raise UsageError("--survey takes no model: it surveys the runtime itself (docs/survey.md)")
    if not paths and not show_settings and not survey:
        raise UsageError("no model given (usage: sonnx-check [OPTIONS] PATHS...; see --help)")
    if fix_output is not None and not fix:
        raise UsageError("--fix-output needs --fix")
    if diff and fix_output is not None:
        raise UsageError("--fix-output: --diff writes nothing")
    fix = fix or diff  # --diff previews --fix (as ruff check --diff does)
    if unsafe_fixes and not fix:
        raise UsageError("--unsafe-fixes needs --fix or --diff")
    if add_waivers and (isolated or fix):
        other = "--isolated" if isolated else "--fix"
        raise UsageError(f"--add-waivers writes into the configuration: not with {other}")
    compared = declared.fold_reading_aliases(compared)  # --maxpool-nan X is --reading MaxPool.nan=X
    from sonnx_check.inputs_option import check_inputs_source

    for source in compared["inputs"]:
        check_inputs_source(source)
    runtime_named = (
        compared["runtime"]
        or compared["runtime_option"]
        or compared["runtime_command"]
        or compared["outputs"]
        or compared["ort_provider"]
    )
    if compared["compare"] is None and runtime_named:
        compared["compare"] = True  # naming the runtime under test asks for a comparison
    if compared["export_suite"] is not None:
        from sonnx_check.commands.export_suite import check_suite_target

        check_suite_target(compared["export_suite"])  # a non-empty folder is refused before any model is read
    cli = CliOptions(
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        fail_on=fail_on,
        output_format=output_format,
        jobs=jobs,
        fix=FixSettings(output=fix_output, preview=diff, unsafe=unsafe_fixes) if fix else None,
        exit_zero=exit_zero,
        statistics=statistics,
        show_traceback=show_traceback,
        **compared,
    )
    configs = Configurations(cli, config_path, isolated)
    if show_settings:
        from sonnx_check.commands.show_settings import show_settings as print_settings

        print_settings(configs, paths)
        return EXIT_OK
    settings = configs.run
    if survey:
        from sonnx_check.commands.survey import run_survey_from_settings

        return run_survey_from_settings(settings.compare, survey_output, quiet=quiet)
    if settings.compare.enabled or settings.compare.export_inputs is not None:
        from sonnx_check.compare.runtimes.startup import check_runtime_settings

        check_runtime_settings(settings.compare)  # a provider or a command that cannot work: exit 2 at once
    outputs = parse_outputs(settings.output_format, output, output_formats, evidence)

    from sonnx_check.discovery import discover

    found = discover(
        paths,
        exclude=configs.excluded,
        respect_gitignore=settings.respect_gitignore,
        force_exclude=force_exclude,
    )
    targets = targets_to_process(found, settings, fix_output, outputs)
    if not targets:
        say_nothing_checked(found)
    per_model = [configs.settings_for(t.path) for t in targets]
    if verbose:
        from sonnx_check.commands.verbose import say_found

        say_found(found, targets, per_model, time.monotonic() - started)
    if settings.compare.export_inputs is not None:  # write what --outputs compares; check nothing
        from sonnx_check.compare.export_run import export_run

        return export_run(targets, per_model, settings.compare.export_inputs, say)
    prepare_outputs(outputs, targets, configs, per_model)
    stop.check()

    from sonnx_check import progress

    progress.start(len(targets), quiet=quiet)  # on stderr, only when it is a terminal
    try:
        outcomes = run_groups(targets, per_model)
    finally:
        progress.stop()
    if verbose:
        say(f"verbose: checked {len(targets)} model(s) in {time.monotonic() - started:.1f} s")
    results = [
        o.result if o.result is not None else internal_result(t.path, o)
        for t, o in zip(targets, outcomes, strict=True)
    ]
    fixes = [o.fix for o in outcomes] if settings.fix is not None else None
    internal_errors = [o.internal_error for o in outcomes if o.internal_error]
    user_errors = [o.user_error for o in outcomes if o.user_error]
    if compared["export_suite"] is not None:
        from sonnx_check.commands.export_suite import run_export_suite

        user_errors += run_export_suite(compared["export_suite"], targets, results, per_model)

    if add_waivers:
        from sonnx_check.commands.add_waivers import run_add_waivers

        return run_add_waivers(targets, results, per_model, internal_errors)

    from sonnx_check.waivers import unused_entries

    checked = [
        (t.path, r, s)
        for t, r, s in zip(targets, results, per_model, strict=True)
        if not r.load_error and not is_internal(r)
    ]
    unused = unused_entries(checked, scanned_folder=found.scanned_folder)
    report = RunReport(
        results=results,
        fixes=fixes,
        settings=settings,
        quiet=quiet,
        model_configs=[s.config_file for s in per_model],
        configuration=configuration_label(per_model, isolated),
        unused=[u.to_json() for u in unused],
        seconds=time.monotonic() - started,
        timestamp=timestamp,
        per_model=per_model,
        argv=_argv(),
        started_utc=started_utc,
        sources=[t.path for t in targets],
    )
    stop.check()  # interrupted: no report, rather than reports of a run the user stopped
    unwritten = write_reports(report, outputs)
    user_errors += unwritten
    for message in user_errors:
        say(f"error: {message}")
    for message in internal_errors:
        say_internal(message)
    for entry in unused:
        say(f"warning: {entry.line()}")
    write_step_summary(report)
    wrote_fix = any(f is not None and f.output is not None for f in fixes or ())
    if exit_non_zero_on_fix and wrote_fix and not quiet:
        say_how_to_commit_fixes(fixes or [])
    return final_code(
        results, internal_errors, settings, bool(user_errors), exit_non_zero_on_fix and wrote_fix
    )


def _argv() -> list[str]:
    """The arguments as given on the command line (after the program's name)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ARGV_KEY not in ctx.meta:
        ctx = ctx.parent
    return list(ctx.meta[ARGV_KEY]) if ctx is not None else sys.argv[1:]
