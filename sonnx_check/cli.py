"""The ``sonnx-check`` command: wires options to functions, prints, and sets the exit code.

Exit codes (rules.md): 0 conforms, 1 findings at or above the failing severity, 2 usage error or unreadable
model, 3 internal error.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click
from rich.console import Console

from sonnx_check import __version__
from sonnx_check.errors import UsageError, UserError
from sonnx_check.findings import ModelResult, Severity

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
FORMATS = ("text", "json")
OPT_LEVELS = ("default", "disable", "basic", "extended", "all")


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _parse_shapes(values: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for value in values:
        name, sep, dims = value.rpartition("=")
        try:
            parsed = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            parsed = ()
        if not sep or not name or not parsed or any(d < 0 for d in parsed):
            raise UsageError(f"--shape {value!r}: expected NAME=D1,D2,... with non-negative integers")
        shapes[name] = parsed
    return shapes


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Rule IDs or globs to check (comma-separated; default: all).",
)
@click.option(
    "--ignore", multiple=True, metavar="RULES", help="Rule IDs or globs not to check (comma-separated)."
)
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=str), help="Write the report to FILE."
)
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no coverage.")
@click.option("--list-rules", is_flag=True, help="List the rule catalogue and exit.")
@click.option("--explain", metavar="ID", help="Explain one rule (ID or alias) and exit.")
@click.option(
    "--compare",
    is_flag=True,
    help="Run the model in onnxruntime and diff it against the SONNX reference kernels.",
)
@click.option(
    "--inputs",
    "inputs",
    multiple=True,
    metavar="random|edge|PATH",
    help="Comparison inputs (repeatable; default: random and edge). PATH: .npz or test_data_set folder.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random comparison inputs.")
@click.option(
    "--ort-opt-level",
    type=click.Choice(OPT_LEVELS),
    default="default",
    show_default=True,
    help="onnxruntime graph optimisation level ('default' keeps the runtime's own, as deployed).",
)
@click.option(
    "--shape", "shapes", multiple=True, metavar="NAME=D1,D2,...", help="Static shape for a dynamic input."
)
@click.option(
    "--max-elements",
    type=click.IntRange(min=1),
    default=100_000_000,
    show_default=True,
    help="Refuse comparison tensors larger than this many elements.",
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
    ignore: tuple[str, ...],
    output_format: str,
    output: str | None,
    quiet: bool,
    list_rules: bool,
    explain: str | None,
    compare: bool,
    inputs: tuple[str, ...],
    seed: int,
    ort_opt_level: str,
    shapes: tuple[str, ...],
    max_elements: int,
    show_traceback: bool,
) -> int:
    from sonnx_check import catalogue as cat
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
    selected = cat.expand(_split(select)) if select else set(cat.catalogue())
    selected -= cat.expand(_split(ignore))
    _refuse_model_as_output(output, paths)
    compare_options = _compare_options(inputs, seed, ort_opt_level, shapes, max_elements) if compare else None

    results, internal_errors = _check_all(paths, frozenset(selected), compare_options, show_traceback)
    _write_report(results, output_format, output, quiet, stdout)
    for message in internal_errors:
        click.echo(message, err=True)
    return exit_code(results, internal_errors)


def _check_all(
    paths: tuple[str, ...], selected: frozenset[str], compare_options: object, show_traceback: bool
) -> tuple[list[ModelResult], list[str]]:
    from sonnx_check.engine import InternalError, check_file, load_failure
    from sonnx_check.loading import discover

    results: list[ModelResult] = []
    internal: list[str] = []
    for target in discover(paths):
        if target.error:
            results.append(load_failure(target.path, target.error))
            continue
        try:
            result = check_file(target.path, selected)
            if compare_options is not None and not result.load_error:
                _compare_into(result, compare_options, selected)
        except UserError as exc:
            result = load_failure(target.path, str(exc).removeprefix(f"{target.path}: "))
        except InternalError as exc:
            internal.append(_internal_message(exc, show_traceback))
            continue
        except Exception as exc:  # noqa: BLE001 - any other crash is a bug: one paragraph, exit 3
            internal.append(_internal_message(exc, show_traceback, target.path))
            continue
        results.append(result)
    return results, internal


def _compare_into(result: ModelResult, options: object, selected: frozenset[str]) -> None:
    from sonnx_check.compare import compare_model

    outcome = compare_model(Path(result.path), options)  # type: ignore[arg-type]
    result.findings.extend(f for f in outcome.findings if f.rule in selected)
    result.comparison = outcome.comparison


def _compare_options(
    inputs: tuple[str, ...], seed: int, opt_level: str, shapes: tuple[str, ...], max_elements: int
) -> object:
    from sonnx_check.compare import CompareOptions

    return CompareOptions(
        datasets=tuple(inputs) if inputs else ("random", "edge"),
        seed=seed,
        ort_opt_level=opt_level,
        shapes=_parse_shapes(shapes),
        max_elements=max_elements,
    )


def _internal_message(exc: BaseException, show_traceback: bool, path: str | None = None) -> str:
    where = f" while checking {path}" if path else ""
    text = (
        f"sonnx-check: internal error{where}: {exc}. This is a bug in sonnx-check, not in your model; "
        "please report it with the model if you can (rerun with --show-traceback for details)."
    )
    if show_traceback:
        text += "\n" + "".join(traceback.format_exception(exc))
    return text


def _refuse_model_as_output(output: str | None, paths: tuple[str, ...]) -> None:
    if output is None:
        return
    target = os.path.realpath(output)
    if output.endswith(".onnx") or any(os.path.realpath(p) == target for p in paths):
        raise UsageError(f"--output {output}: refusing to write a report over a model file")


def _write_report(
    results: list[ModelResult], output_format: str, output: str | None, quiet: bool, stdout: Console
) -> None:
    if output_format == "json":
        from sonnx_check.report import json_report

        text = json_report.render(results)
        if output:
            _write_text(output, text)
        else:
            click.echo(text, nl=False)
        return
    from sonnx_check.report import text as text_report

    if output:
        with open(output, "w", encoding="utf-8") as handle:
            text_report.render(
                Console(file=handle, no_color=True, width=160, soft_wrap=True), results, quiet=quiet
            )
    else:
        text_report.render(stdout, results, quiet=quiet)
    for result in results:
        if result.load_error and (output or not sys.stdout.isatty()):
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
