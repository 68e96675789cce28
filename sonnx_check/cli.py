"""The ``sonnx-check`` command: wires options to functions, prints, and sets the exit code.

Exit codes (rules.md): 0 conforms, 1 findings at or above the failing severity (``--fail-on``; never with
``--exit-zero``), 2 usage or configuration error, unreadable model, refused output, or a run interrupted by
SIGINT/SIGTERM, 3 internal error. With ``--fix`` the code describes the fixed models (like ``ruff check
--fix``: 1 when violations remain after fixing); ``--exit-non-zero-on-fix`` also makes it 1 when a fixed
model was written (the pre-commit hook passes it, so a commit never passes on a fix it did not include).

Everything printed goes through ``sanitise``: model strings are display-sanitised before any reporter sees
them (JSON gets the exact-string flavour), and every stderr line is one line that cannot be a GitHub
workflow command.
"""

from __future__ import annotations

import datetime
import io
import mmap
import os
import shlex
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from sonnx_check import __version__, blas_threads, sanitise, stop  # noqa: F401 - blas_threads: before numpy loads
from sonnx_check import settings as declared
from sonnx_check.config import FAIL_ON, FORMATS, CliOptions, FixSettings, Settings
from sonnx_check.discovery import FIXED_SUFFIX, Discovery, Target
from sonnx_check.errors import RunInterrupted, UsageError, UserError
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.report.summary import INTERNAL_RULE, is_internal, summarise

if TYPE_CHECKING:
    from sonnx_check.config import Configurations
    from sonnx_check.evidence.identity import ModelIdentity
    from sonnx_check.fix.outcome import FixOutcome
    from sonnx_check.runner import ModelOutcome

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
HTML, EVIDENCE = "html", "evidence"  # never the main report (--output-format html:PATH, --evidence PATH)
ARGV_KEY = "sonnx_check.argv"
UNWRAPPED = 100_000  # console width when not a terminal: a CI log line is never split

# --help: options grouped by purpose (click has no groups; the command formats them itself).
SECTIONS = (
    ("Rules", ("select", "extend_select", "ignore")),
    ("Reports", ("output_format", "output", "output_formats", "evidence", "quiet", "statistics")),
    ("Exit code", ("fail_on", "exit_zero")),
    ("Files and configuration", ("config_path", "isolated", "force_exclude")),
    ("Fixing (--fix)", ("fix", "fix_output", "exit_non_zero_on_fix")),
    ("Adopting", ("add_waivers",)),
    (declared.COMPARE_SECTION, tuple(o.parameter for o in declared.OPTIONS if o.flag)),
    ("Running", ("jobs", "show_traceback")),
    ("Information", ("list_rules", "explain", "version", "help")),
)
EPILOG = """\
Examples:
  sonnx-check models/                          check every model under models/ (.gitignore respected)
  sonnx-check --compare model.onnx             also diff onnxruntime against the SONNX reference kernels
  sonnx-check --format github --output-format sarif:sonnx-check.sarif models/
                                               CI: annotations, a SARIF file (and, on GitHub Actions,
                                               a step summary) in one run
  sonnx-check --fix --exit-non-zero-on-fix model.onnx
                                               write model.fixed.onnx; exit 1 when a fix was written
  sonnx-check --explain MaxPool.R4             what a rule checks, why, and how to fix it

Exit codes:
  0  every model conforms (no finding at or above --fail-on)
  1  findings at or above --fail-on (0 with --exit-zero), or a fix written with --exit-non-zero-on-fix
  2  usage or configuration error, a model that could not be read, a refused output, or a run
     interrupted by SIGINT or SIGTERM
  3  internal error (a bug in sonnx-check): one paragraph, the traceback with --show-traceback
"""


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
        formatter.write_paragraph()
        for text in EPILOG.splitlines():  # laid out by hand: click would re-wrap the columns
            formatter.write(f"{'':>{formatter.current_indent}}{text}\n" if text else "\n")


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
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no coverage.")
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
    help="Check N models at a time in separate processes (0: one per CPU; default 1). Output is identical "
    "to a serial run.",
)
@click.option(
    "--fix",
    is_flag=True,
    help="Write NAME.fixed.onnx beside each model with the semantics-preserving rewrites applied, and "
    "report the fixed model.",
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
@click.option("--explain", metavar="ID", help="Explain one rule (ID or alias) and exit.")
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


def say(message: str) -> None:
    """One stderr line ``sonnx-check: MESSAGE``, whatever model strings the message embeds."""
    click.echo(sanitise.line(f"sonnx-check: {message}"), err=True)


def say_internal(message: str) -> None:
    """An internal error: its paragraph as one line (an exception's text may hold line breaks and model
    strings), then, with --show-traceback, the traceback line by line."""
    paragraph, marker, traceback = message.partition("\nTraceback (most recent call last):")
    click.echo(sanitise.line(paragraph), err=True)
    if marker:
        for text in (marker.strip() + traceback).splitlines():
            click.echo(sanitise.line(text), err=True)


@dataclass(frozen=True)
class Output:
    """One report: its format and file (None: stdout). ``option`` names it in error messages."""

    fmt: str
    path: str | None
    option: str


def run(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_path: str | None,
    isolated: bool,
    force_exclude: bool,
    output_format: str | None,
    output: str | None,
    output_formats: tuple[str, ...],
    evidence: str | None,
    quiet: bool,
    statistics: bool,
    fail_on: str | None,
    exit_zero: bool,
    jobs: int | None,
    fix: bool,
    fix_output: str | None,
    exit_non_zero_on_fix: bool,
    add_waivers: bool,
    list_rules: bool,
    explain: str | None,
    show_traceback: bool,
    **compared: Any,  # one value per declared comparison option (settings.py), by its parameter name
) -> int:
    from sonnx_check import config

    stop.check()  # a signal that arrived while the command was being imported
    started = time.monotonic()
    started_utc = datetime.datetime.now(datetime.UTC)
    timestamp = started_utc.astimezone().replace(tzinfo=None).isoformat(timespec="seconds")
    if list_rules or explain:
        from sonnx_check.explain import explain as explain_rule  # rich's tables: only for these two
        from sonnx_check.explain import list_rules as list_catalogue

        if not list_rules:
            _print(stdout_console(), lambda console: explain_rule(console, explain))
        elif output_format == "json":
            from sonnx_check.explain import rules_json

            click.echo(rules_json(), nl=False)
        elif output_format in (None, "text"):
            _print(stdout_console(), list_catalogue)
        else:
            raise UsageError(f"--list-rules prints text or json, not {output_format}")
        return EXIT_OK
    if not paths:
        raise UsageError("no model given (usage: sonnx-check [OPTIONS] PATHS...; see --help)")
    if fix_output is not None and not fix:
        raise UsageError("--fix-output needs --fix")
    if add_waivers and (isolated or fix):
        other = "--isolated" if isolated else "--fix"
        raise UsageError(f"--add-waivers writes into the configuration: not with {other}")
    from sonnx_check.inputs_option import check_inputs_source

    for source in compared["inputs"]:
        check_inputs_source(source)
    cli = CliOptions(
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        fail_on=fail_on,
        output_format=output_format,
        jobs=jobs,
        fix=FixSettings(output=fix_output) if fix else None,
        exit_zero=exit_zero,
        statistics=statistics,
        show_traceback=show_traceback,
        **compared,
    )
    configs = config.Configurations(cli, config_path, isolated)
    settings = configs.run
    outputs = _outputs(settings.output_format, output, output_formats, evidence)

    from sonnx_check.discovery import discover

    found = discover(
        paths,
        exclude=configs.excluded,
        respect_gitignore=settings.respect_gitignore,
        force_exclude=force_exclude,
    )
    targets = _targets(found, settings, fix_output, outputs)
    if not targets:
        _say_nothing_checked(found)
    per_model = [configs.settings_for(t.path) for t in targets]
    _prepare_outputs(outputs, targets, configs, per_model)
    stop.check()

    outcomes = _run_groups(targets, per_model)
    results = [
        o.result if o.result is not None else internal_result(t.path, o)
        for t, o in zip(targets, outcomes, strict=True)
    ]
    fixes = [o.fix for o in outcomes] if settings.fix is not None else None
    internal_errors = [o.internal_error for o in outcomes if o.internal_error]
    user_errors = [o.user_error for o in outcomes if o.user_error]

    if add_waivers:
        return _add_waivers(targets, results, per_model, internal_errors)

    from sonnx_check.waivers import unused_entries

    checked = [
        (t.path, r, s)
        for t, r, s in zip(targets, results, per_model, strict=True)
        if not r.load_error and not is_internal(r)
    ]
    unused = unused_entries(checked, scanned_folder=found.scanned_folder)
    report = _Report(
        results=results,
        fixes=fixes,
        settings=settings,
        quiet=quiet,
        model_configs=[s.config_file for s in per_model],
        configuration=_configuration_label(per_model, isolated),
        unused=[u.to_json() for u in unused],
        seconds=time.monotonic() - started,
        timestamp=timestamp,
        per_model=per_model,
        argv=_argv(),
        started_utc=started_utc,
        sources=[t.path for t in targets],
    )
    stop.check()  # interrupted: no report, rather than reports of a run the user stopped
    unwritten = _write_reports(report, outputs)
    user_errors += unwritten
    for message in user_errors:
        say(f"error: {message}")
    for message in internal_errors:
        say_internal(message)
    for entry in unused:
        say(f"warning: {entry.line()}")
    _step_summary(report)
    wrote_fix = any(f is not None and f.output is not None for f in fixes or ())
    if exit_non_zero_on_fix and wrote_fix and not quiet:
        _say_how_to_commit_fixes(fixes or [])
    return _final_code(
        results, internal_errors, settings, bool(user_errors), exit_non_zero_on_fix and wrote_fix
    )


def _add_waivers(
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


def _say_how_to_commit_fixes(fixes: list[FixOutcome | None]) -> None:
    """--exit-non-zero-on-fix (the pre-commit hook's mode) fails a run whose fixed model may well conform:
    without this the user sees "conforms ... 0 error(s)" and a failed hook, and no next step."""
    for fix in fixes:
        if fix is None or fix.output is None:
            continue
        move = f"mv {shlex.quote(fix.output)} {shlex.quote(fix.source)} && git add {shlex.quote(fix.source)}"
        say(
            f"{fix.source}: a fixed model was written to {fix.output}; the original still violates and fails "
            f"this run: replace it with the fixed one and stage it ({move}), then commit again"
        )


def _final_code(
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


def internal_result(path: str, outcome: ModelOutcome) -> ModelResult:
    """A model whose check failed inside sonnx-check stays in every report, as an error finding naming the
    cause: a report that silently drops a model reads as a pass for it (and a SARIF upload would close its
    alerts)."""
    paragraph = (outcome.internal_error or "internal error").partition("\nTraceback (most recent call")[0]
    cause = paragraph.removeprefix("sonnx-check: ")
    message = f"the model could not be checked: {cause}"
    return ModelResult(path=path, findings=[Finding(INTERNAL_RULE, message, Severity.ERROR)])


# -- what to check ----------------------------------------------------------------------------------------


def _run_groups(targets: list[Target], per_model: list[Settings]) -> list[ModelOutcome]:
    """One run_all per configuration (each model is checked with its own), outcomes in input order."""
    from sonnx_check.runner import run_all

    groups: dict[int, list[int]] = {}
    for i, settings in enumerate(per_model):
        groups.setdefault(id(settings), []).append(i)
    outcomes: list[ModelOutcome | None] = [None] * len(targets)
    for indices in groups.values():
        done = run_all([targets[i] for i in indices], per_model[indices[0]])  # type: ignore[arg-type]
        for i, outcome in zip(indices, done, strict=True):
            outcomes[i] = outcome
    return outcomes  # type: ignore[return-value]


def _targets(
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


def _say_nothing_checked(found: Discovery) -> None:
    """A run that was given paths and checks no model says so and why: a pre-commit hook that reports
    "Passed" on a commit whose every model was skipped must not look like a check that ran."""
    reasons = sorted({why for _, why in found.skipped})
    detail = f": every path given was skipped ({'; '.join(reasons)})" if reasons else ""
    say(f"warning: 0 models checked{detail}")


# -- where reports go -------------------------------------------------------------------------------------


def _argv() -> list[str]:
    """The arguments as given on the command line (after the program's name)."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ARGV_KEY not in ctx.meta:
        ctx = ctx.parent
    return list(ctx.meta[ARGV_KEY]) if ctx is not None else sys.argv[1:]


def _outputs(
    main_format: str, output: str | None, specs: Sequence[str], evidence: str | None = None
) -> list[Output]:
    """The main report (``--format``/``--output``, stdout by default), then each ``--output-format``, then
    the evidence record. ``-`` is stdout, which one report at most may take."""
    from sonnx_check.output_target import STDOUT

    outputs = [Output(main_format, None if output == STDOUT else output, f"--output {output}")]
    file_formats = (*FORMATS, HTML)
    for spec in specs:
        fmt, sep, path = spec.partition(":")
        if not sep or fmt not in file_formats or not path:
            raise UsageError(
                f"--output-format {spec}: expected FORMAT:PATH with FORMAT one of {', '.join(file_formats)}"
            )
        if fmt == HTML:
            from sonnx_check.report.html import missing_extra

            missing = missing_extra()
            if missing:
                raise UsageError(f"--output-format {spec}: {missing}")
        outputs.append(Output(fmt, None if path == STDOUT else path, f"--output-format {spec}"))
    if evidence is not None:
        outputs.append(Output(EVIDENCE, None if evidence == STDOUT else evidence, f"--evidence {evidence}"))
    on_stdout = [out for out in outputs if out.path is None]
    if len(on_stdout) > 1:
        first = on_stdout[0].option if output is not None else "the main report (--format)"
        raise UsageError(f"{on_stdout[1].option}: stdout already carries {first}")
    seen: dict[str, Output] = {}
    for out in outputs:
        if out.path is None:
            continue
        real = os.path.realpath(out.path)
        if real in seen:
            raise UsageError(f"{out.option}: the same file as {seen[real].option}")
        seen[real] = out
    return outputs


def _prepare_outputs(
    outputs: list[Output], targets: list[Target], configs: Configurations, per_model: list[Settings]
) -> None:
    """Before anything is checked: refuse a report over any file the run reads (a model, its external
    data, a configuration file, a comparison input), and create missing folders, so a typo does not cost a
    whole run."""
    read: dict[str, str] = {}
    for settings in {id(s): s for s in per_model}.values():
        if settings.compare.enabled:
            for name in settings.compare.inputs:
                if name not in ("random", "edge"):
                    read[os.path.realpath(name)] = "a comparison input"
    for file in configs.read_files():
        read[os.path.realpath(file)] = "a configuration file"
    for target in targets:
        read[os.path.realpath(target.path)] = "a model file"
    from sonnx_check.output_target import is_in_place, refusal

    for out in outputs:
        if out.path is None:
            continue
        problem = refusal(out.path)
        if problem is not None:
            raise UsageError(f"{out.option}: {problem}")
        real = os.path.realpath(out.path)
        if out.path.endswith(".onnx") or read.get(real) == "a model file":
            raise UsageError(f"{out.option}: refusing to write a report over a model file")
        what = read.get(real) or _inside_dataset(real, read) or _external_data_of(real, targets)
        if what is not None:
            raise UsageError(f"{out.option}: refusing to write a report over {what} this run reads")
        if is_in_place(out.path):
            continue  # a FIFO, a device or a descriptor: written into, never created or replaced
        folder = os.path.dirname(os.path.abspath(out.path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"{out.option}: cannot create the folder {folder}: {exc.strerror or exc}"
            ) from None


def _inside_dataset(real: str, read: dict[str, str]) -> str | None:
    for path, what in read.items():
        if what == "a comparison input" and real.startswith(path + os.sep):
            return "a comparison input"
    return None


def _external_data_of(real: str, targets: list[Target]) -> str | None:
    """Whether an existing file is the external data of a model of the run. A location is relative to its
    model's folder, so only models in a folder above the file can name it, and only if the file's name
    appears in the model's bytes (a cheap scan before parsing)."""
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return None
    except OSError:
        return None
    needle = os.path.basename(real).encode("utf-8", "surrogateescape")
    for target in targets:
        if target.error is not None:
            continue
        model = os.path.realpath(target.path)
        folder = os.path.dirname(model)
        if not real.startswith(folder + os.sep) or not _contains(model, needle):
            continue
        for location in _locations(model):
            try:
                if os.path.realpath(os.path.join(folder, location)) == real:
                    return f"the external data of {target.path}"
            except ValueError:  # a NUL in the location
                continue
    return None


def _contains(path: str, needle: bytes) -> bool:
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
            return False  # never open a FIFO or a device
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(needle) >= 0
    except (OSError, ValueError):
        return False


def _locations(path: str) -> list[str]:
    from sonnx_check.errors import ModelLoadError
    from sonnx_check.loading import external_tensors, read_model

    try:
        model = read_model(path)
    except ModelLoadError:
        return []
    locations = []
    for tensor in external_tensors(model):
        for entry in tensor.external_data:
            if entry.key == "location" and isinstance(entry.value, str):
                locations.append(entry.value)
    return locations


# -- rendering --------------------------------------------------------------------------------------------


@dataclass
class _Report:
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

        for result in self.results:
            if result.path not in self._identities:
                self._identities[result.path] = model_identity(result.path)
        return self._identities

    def display(self) -> tuple[list[ModelResult], list[FixOutcome | None] | None]:
        """Results for people (every format but JSON), sanitised once."""
        if self._display is None:
            self._display = sanitise.for_display(self.results, self.fixes)
        return self._display


def _configuration_label(per_model: list[Settings], isolated: bool) -> str:
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


def render_report(report: _Report, fmt: str, *, console: Console | None = None) -> str:
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

        target = console or Console(
            file=io.StringIO(), color_system=None, width=UNWRAPPED, soft_wrap=True, highlight=False
        )
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


def _shown_identities(report: _Report) -> dict[str, ModelIdentity]:
    """Identities keyed by the display-sanitised path the reporters see."""
    return {sanitise.DISPLAY.path(path): ident for path, ident in report.identities().items()}


def _write_reports(report: _Report, outputs: list[Output]) -> list[str]:
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
        errors = Console(file=io.StringIO(), color_system=None, width=UNWRAPPED, soft_wrap=True)
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


def _step_summary(report: _Report) -> None:
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


def stdout_console() -> Console:
    """stdout as rich sees it: colour and wrapping on a terminal; piped (CI logs, ``| tee``), plain and
    never wrapped, so a rule ID or node name is never split across lines. The community conventions
    decide colour whatever stdout is: ``NO_COLOR`` (no-color.org) turns it off, ``FORCE_COLOR``
    (force-color.org; CI logs render colour) turns it on when piped, still unwrapped; NO_COLOR wins."""
    no_color = bool(os.environ.get("NO_COLOR"))
    forced = bool(os.environ.get("FORCE_COLOR")) and not no_color
    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=True, no_color=no_color, force_terminal=True)
    return Console(
        highlight=False,
        soft_wrap=True,
        width=UNWRAPPED,
        force_terminal=forced,
        no_color=no_color,
        color_system="standard" if forced else None,
    )


def colour_kept(console: Console | None) -> bool | None:
    """click.echo strips colour codes when stdout is not a terminal: keep them when the console chose to
    write colour (FORCE_COLOR); None leaves click's own rule."""
    return True if console is not None and console.color_system is not None and not console.no_color else None


def _print(console: Console, render: Any) -> None:
    with console.capture() as captured:
        render(console)
    click.echo(sanitise.guard_lines(captured.get()), nl=False, color=colour_kept(console))


def exit_code(
    results: list[ModelResult], internal_errors: list[str], fail_on: Severity = Severity.ERROR
) -> int:
    if internal_errors:
        return EXIT_INTERNAL
    if any(r.load_error for r in results):
        return EXIT_USAGE
    failing = any(f.waived is None and f.severity.rank >= fail_on.rank for r in results for f in r.findings)
    return EXIT_FINDINGS if failing else EXIT_OK
