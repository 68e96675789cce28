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

from sonnx_check import __version__, blas_threads, masking, run_options, stop  # noqa: F401 - blas_threads: before numpy loads
from sonnx_check import settings as declared
from sonnx_check.commands.check import (
    internal_result,
    run_groups,
    say_how_to_commit_fixes,
    say_nothing_checked,
    targets_to_process,
)
from sonnx_check.config import CliOptions, Configurations, FixSettings
from sonnx_check.errors import RunInterrupted, UsageError, UserError
from sonnx_check.exit_codes import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, exit_code, final_code  # noqa: F401
from sonnx_check.messages import say, say_internal
from sonnx_check.report.dispatch import configuration_label, write_reports, write_step_summary
from sonnx_check.report.outputs import parse_outputs, prepare_outputs
from sonnx_check.report.run_report import RunReport
from sonnx_check.report.summary import is_internal
from sonnx_check.run_options import RunArguments

ARGV_KEY = "sonnx_check.argv"

# --help: options grouped by purpose (click has no groups; the command formats them itself), as declared
SECTIONS = run_options.sections()
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
@run_options.click_options
@declared.click_options
@click.version_option(__version__, "--version", prog_name="sonnx-check")
def main(**options: Any) -> None:
    """Check ONNX models against the SONNX safety-related profile.

    PATHS are model files or folders (searched recursively for *.onnx).
    """
    try:
        code = run(RunArguments.from_click(options))
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


def run(args: RunArguments) -> int:
    """One run of the command, from what the command line gave; its exit code."""
    stop.check()  # a signal that arrived while the command was being imported
    masking.use(args.mask)  # before anything records a command line
    from sonnx_check.report.console import choose_colour

    choose_colour(args.color)
    started = time.monotonic()
    started_utc = datetime.datetime.now(datetime.UTC)
    timestamp = started_utc.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")
    if args.aliases and not args.list_rules:
        raise UsageError("--aliases needs --list-rules")
    if args.list_rules or args.explain:
        from sonnx_check.commands.catalogue import show_catalogue

        show_catalogue(args.list_rules, args.explain, args.output_format, args.aliases)
        return EXIT_OK
    if args.survey_output is not None and not args.survey:
        raise UsageError("--survey-output needs --survey")
    if args.survey and args.paths:
        raise UsageError("--survey takes no model: it surveys the runtime itself (docs/survey.md)")
    if not args.paths and not args.show_settings and not args.survey:
        raise UsageError("no model given (usage: sonnx-check [OPTIONS] PATHS...; see --help)")
    if args.fix_output is not None and not args.fix:
        raise UsageError("--fix-output needs --fix")
    if args.diff and args.fix_output is not None:
        raise UsageError("--fix-output: --diff writes nothing")
    fix = args.fix or args.diff  # --diff previews --fix (as ruff check --diff does)
    if args.unsafe_fixes and not fix:
        raise UsageError("--unsafe-fixes needs --fix or --diff")
    if args.add_waivers and (args.isolated or fix):
        other = "--isolated" if args.isolated else "--fix"
        raise UsageError(f"--add-waivers writes into the configuration: not with {other}")
    from sonnx_check.inputs_option import check_inputs_source

    for source in args.compared["inputs"]:
        check_inputs_source(source)
    if args.compared["export_suite"] is not None:
        from sonnx_check.commands.export_suite import check_suite_target

        # a non-empty folder is refused before any model is read
        check_suite_target(args.compared["export_suite"])
    cli = CliOptions(
        select=args.select,
        extend_select=args.extend_select,
        ignore=args.ignore,
        fail_on=args.fail_on,
        output_format=args.output_format,
        jobs=args.jobs,
        fix=FixSettings(output=args.fix_output, preview=args.diff, unsafe=args.unsafe_fixes) if fix else None,
        exit_zero=args.exit_zero,
        statistics=args.statistics,
        show_traceback=args.show_traceback,
        **args.compared,
    )
    configs = Configurations(cli, args.config_path, args.isolated)
    if args.show_settings:
        from sonnx_check.commands.show_settings import show_settings as print_settings

        print_settings(configs, args.paths)
        return EXIT_OK
    settings = configs.run
    if args.survey:
        from sonnx_check.commands.survey import run_survey_from_settings

        return run_survey_from_settings(settings.compare, args.survey_output, quiet=args.quiet)
    if settings.compare.enabled or settings.compare.export_inputs is not None:
        from sonnx_check.compare.runtimes.startup import check_runtime_settings

        check_runtime_settings(settings.compare)  # a provider or a command that cannot work: exit 2 at once
    outputs = parse_outputs(settings.output_format, args.output, args.output_formats, args.evidence)

    from sonnx_check.discovery import discover

    found = discover(
        args.paths,
        exclude=configs.excluded,
        respect_gitignore=settings.respect_gitignore,
        force_exclude=args.force_exclude,
    )
    targets = targets_to_process(found, settings, args.fix_output, outputs)
    if not targets:
        say_nothing_checked(found)
    per_model = [configs.settings_for(t.path) for t in targets]
    if args.verbose:
        from sonnx_check.commands.verbose import say_found

        say_found(found, targets, per_model, time.monotonic() - started)
    if settings.compare.export_inputs is not None:  # write what --outputs compares; check nothing
        from sonnx_check.compare.export_run import export_run

        return export_run(targets, per_model, settings.compare.export_inputs, say)
    prepare_outputs(outputs, targets, configs, per_model)
    stop.check()

    from sonnx_check import progress

    progress.start(len(targets), quiet=args.quiet)  # on stderr, only when it is a terminal
    try:
        outcomes = run_groups(targets, per_model)
    finally:
        progress.stop()
    if args.verbose:
        say(f"verbose: checked {len(targets)} model(s) in {time.monotonic() - started:.1f} s")
    results = [
        o.result if o.result is not None else internal_result(t.path, o)
        for t, o in zip(targets, outcomes, strict=True)
    ]
    fixes = [o.fix for o in outcomes] if settings.fix is not None else None
    internal_errors = [o.internal_error for o in outcomes if o.internal_error]
    user_errors = [o.user_error for o in outcomes if o.user_error]
    if args.compared["export_suite"] is not None:
        from sonnx_check.commands.export_suite import run_export_suite

        user_errors += run_export_suite(args.compared["export_suite"], targets, results, per_model)

    if args.add_waivers:
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
        quiet=args.quiet,
        model_configs=[s.config_file for s in per_model],
        configuration=configuration_label(per_model, args.isolated),
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
    if args.exit_non_zero_on_fix and wrote_fix and not args.quiet:
        say_how_to_commit_fixes(fixes or [])
    return final_code(
        results, internal_errors, settings, bool(user_errors), args.exit_non_zero_on_fix and wrote_fix
    )


def _argv() -> list[str]:
    """The arguments as given on the command line (after the program's name)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ARGV_KEY not in ctx.meta:
        ctx = ctx.parent
    return list(ctx.meta[ARGV_KEY]) if ctx is not None else sys.argv[1:]
