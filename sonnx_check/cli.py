"""The ``sonnx-check`` command: wires options to functions, prints, and sets the exit code.

Exit codes (rules.md): 0 conforms, 1 findings at or above the failing severity (``--fail-on``; never with
``--exit-zero``), 2 usage or configuration error, unreadable model, or a refused ``--fix`` output, 3 internal
error. With ``--fix`` the code describes the fixed models (like ``ruff check --fix``: 1 when violations
remain after fixing).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click
from rich.console import Console

from sonnx_check import __version__
from sonnx_check.config import FAIL_ON, FORMATS, OPT_LEVELS, CliOptions, FixSettings, Settings
from sonnx_check.errors import UsageError, UserError
from sonnx_check.findings import ModelResult, Severity

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome
    from sonnx_check.loading import Target

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
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
    help="Read [tool.sonnx-check] from FILE (default: the nearest pyproject.toml that has it, from the "
    "working directory upwards).",
)
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
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
@click.option("--list-rules", is_flag=True, help="List the rule catalogue and exit.")
@click.option("--explain", metavar="ID", help="Explain one rule (ID or alias) and exit.")
@click.option(
    "--compare/--no-compare",
    default=None,
    help="Run the model in onnxruntime and diff it against the SONNX reference kernels.",
)
@click.option(
    "--inputs",
    "inputs",
    multiple=True,
    metavar="random|edge|PATH",
    help="Comparison inputs (repeatable; default: random and edge). PATH: .npz or test_data_set folder.",
)
@click.option(
    "--seed", type=int, default=None, metavar="N", help="Seed of the random comparison inputs (default 0)."
)
@click.option(
    "--ort-opt-level",
    type=click.Choice(OPT_LEVELS),
    default=None,
    help="onnxruntime graph optimisation level ('default', the default, keeps the runtime's own, as "
    "deployed).",
)
@click.option(
    "--shape", "shapes", multiple=True, metavar="NAME=D1,D2,...", help="Static shape for a dynamic input."
)
@click.option(
    "--max-elements",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Refuse comparison tensors larger than this many elements (default 100000000).",
)
@click.option("--show-traceback", is_flag=True, help="Show Python tracebacks of internal errors.")
@click.version_option(__version__, "--version", prog_name="sonnx-check")
def main(**options: object) -> None:
    """Check ONNX models against the SONNX safety-related profile.

    PATHS are model files or folders (searched recursively for *.onnx).
    """
    try:
        code = run(**options)  # type: ignore[arg-type]
    except UserError as exc:
        click.echo(f"sonnx-check: error: {exc}", err=True)
        code = EXIT_USAGE
    sys.exit(code)


def run(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_path: str | None,
    isolated: bool,
    output_format: str | None,
    output: str | None,
    quiet: bool,
    statistics: bool,
    fail_on: str | None,
    exit_zero: bool,
    jobs: int | None,
    fix: bool,
    fix_output: str | None,
    list_rules: bool,
    explain: str | None,
    compare: bool | None,
    inputs: tuple[str, ...],
    seed: int | None,
    ort_opt_level: str | None,
    shapes: tuple[str, ...],
    max_elements: int | None,
    show_traceback: bool,
) -> int:
    from sonnx_check import config
    from sonnx_check.explain import explain as explain_rule
    from sonnx_check.explain import list_rules as list_catalogue

    stdout = Console(highlight=False, soft_wrap=True)
    if list_rules:
        list_catalogue(stdout)
        return EXIT_OK
    if explain:
        explain_rule(stdout, explain)
        return EXIT_OK
    if not paths:
        raise UsageError("no model given (usage: sonnx-check [OPTIONS] PATHS...; see --help)")
    if fix_output is not None and not fix:
        raise UsageError("--fix-output needs --fix")
    cli = CliOptions(
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        fail_on=fail_on,
        output_format=output_format,
        jobs=jobs,
        compare=compare,
        inputs=inputs,
        seed=seed,
        ort_opt_level=ort_opt_level,
        shapes=shapes,
        max_elements=max_elements,
        fix=FixSettings(output=fix_output) if fix else None,
        exit_zero=exit_zero,
        statistics=statistics,
        show_traceback=show_traceback,
    )
    settings = config.resolve(cli, config.load(config_path, isolated))
    _refuse_model_as_output(output, paths)
    targets = _targets(paths, settings, fix_output, output)

    from sonnx_check.runner import run_all

    outcomes = run_all(targets, settings)
    results = [o.result for o in outcomes if o.result is not None]
    fixes = [o.fix for o in outcomes if o.result is not None] if settings.fix is not None else None
    internal_errors = [o.internal_error for o in outcomes if o.internal_error]
    user_errors = [o.user_error for o in outcomes if o.user_error]

    _write_report(results, fixes, settings, output, quiet, stdout)
    for message in user_errors:
        click.echo(f"sonnx-check: error: {message}", err=True)
    for message in internal_errors:
        click.echo(message, err=True)
    code = exit_code(results, internal_errors, settings.fail_on)
    if code == EXIT_FINDINGS and settings.exit_zero:
        code = EXIT_OK
    if user_errors and code != EXIT_INTERNAL:
        code = EXIT_USAGE  # a refused --fix output outranks findings, as an unreadable model does
    return code


def _targets(
    paths: Sequence[str], settings: Settings, fix_output: str | None, output: str | None
) -> list[Target]:
    """The models to process. With --fix, earlier outputs (*.fixed.onnx) are skipped: fixing them again would
    write *.fixed.fixed.onnx, and reading one while another worker rewrites it would race."""
    from sonnx_check.fix import FIXED_SUFFIX
    from sonnx_check.loading import discover

    targets = discover(paths)
    if settings.fix is None:
        return targets
    kept = []
    for target in targets:
        if target.error is None and target.path.endswith(FIXED_SUFFIX):
            click.echo(f"sonnx-check: note: {target.path}: skipped, it is a --fix output", err=True)
        else:
            kept.append(target)
    if fix_output is not None:
        if len(kept) != 1:
            raise UsageError(f"--fix-output {fix_output}: needs exactly one model, got {len(kept)}")
        if not fix_output.endswith(".onnx"):
            raise UsageError(f"--fix-output {fix_output}: the fixed model's name must end in .onnx")
        if output is not None and os.path.abspath(output) == os.path.abspath(fix_output):
            raise UsageError(f"--fix-output {fix_output}: is also the report's --output")
    return kept


def _refuse_model_as_output(output: str | None, paths: tuple[str, ...]) -> None:
    if output is None:
        return
    target = os.path.realpath(output)
    if output.endswith(".onnx") or any(os.path.realpath(p) == target for p in paths):
        raise UsageError(f"--output {output}: refusing to write a report over a model file")


def render_report(
    results: list[ModelResult],
    fixes: list[FixOutcome | None] | None,
    settings: Settings,
    *,
    quiet: bool = False,
) -> str:
    """The report in a machine format (everything but text, which rich prints to a console)."""
    fmt = settings.output_format
    if fmt == "json":
        from sonnx_check.report import json_report

        return json_report.render(
            results,
            fixes=fixes,
            statistics=settings.statistics,
            config_file=settings.config_file,
            fail_on=settings.fail_on,
        )
    if fmt == "sarif":
        from sonnx_check.report import sarif

        return sarif.render(results)
    if fmt == "github":
        from sonnx_check.report import github

        return github.render(results, fixes=fixes, quiet=quiet)
    if fmt == "junit":
        from sonnx_check.report import junit

        return junit.render(results, fail_on=settings.fail_on)
    raise AssertionError(f"no renderer for {fmt}")


def _write_report(
    results: list[ModelResult],
    fixes: list[FixOutcome | None] | None,
    settings: Settings,
    output: str | None,
    quiet: bool,
    stdout: Console,
) -> None:
    fmt = settings.output_format
    if fmt == "text":
        from sonnx_check.report import text as text_report

        options = {"quiet": quiet, "fixes": fixes, "statistics": settings.statistics}
        if output:
            try:
                with open(output, "w", encoding="utf-8") as handle:
                    console = Console(file=handle, no_color=True, width=160, soft_wrap=True)
                    text_report.render(console, results, **options)
            except OSError as exc:
                raise UsageError(f"--output {output}: {exc.strerror or exc}") from None
        else:
            text_report.render(stdout, results, **options)
    else:
        text = render_report(results, fixes, settings, quiet=quiet)
        if output:
            _write_text(output, text)
        else:
            click.echo(text, nl=False)
        if settings.statistics and fmt != "json":
            # Machine formats stay parseable on stdout; the counts go to the log.
            from sonnx_check.report.text import render_statistics

            render_statistics(Console(stderr=True, highlight=False, soft_wrap=True), results)
    for result in results:
        if result.load_error and (output or fmt != "text" or not sys.stdout.isatty()):
            click.echo(f"sonnx-check: error: {result.path}: {result.findings[0].message}", err=True)


def _write_text(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"--output {path}: {exc.strerror or exc}") from None


def exit_code(
    results: list[ModelResult], internal_errors: list[str], fail_on: Severity = Severity.ERROR
) -> int:
    if internal_errors:
        return EXIT_INTERNAL
    if any(r.load_error for r in results):
        return EXIT_USAGE
    failing = any(f.waived is None and f.severity.rank >= fail_on.rank for r in results for f in r.findings)
    return EXIT_FINDINGS if failing else EXIT_OK
