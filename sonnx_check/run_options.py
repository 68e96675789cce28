"""Every option of a run that is not the comparison's, declared once (the comparison's are in settings.py).

Each ``RunOption`` is the one place an option is written: its flags, its kind (a flag, a value, a repeatable
value), click's type, its help and the section of ``--help`` it is listed in. The click options of
``sonnx-check`` are generated from ``RUN_OPTIONS``, in this order, and ``RunArguments`` holds what the command
line gave, one typed field per option (written out so that mypy sees each field; ``_check_fields`` refuses,
at import, a field without an option or an option without a field). ``cli.run`` takes one RunArguments.

Adding an option: append a RunOption (its place in its section of --help is its place here), add its field
to RunArguments, and read it where the run needs it (``arguments.<name>``). Nothing here imports the
comparison.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sonnx_check import settings as declared
from sonnx_check.config.table import FAIL_ON, FORMATS

RULES = "Rules"
REPORTS = "Reports"
EXIT = "Exit code"
FILES = "Files and configuration"
FIXING = "Fixing (--fix)"
ADOPTING = "Adopting"
SURVEYING = "Surveying a runtime"
RUNNING = "Running"
INFORMATION = "Information"
# the sections of --help, in order; the comparison's section lists settings.OPTIONS
SECTION_TITLES = (RULES, REPORTS, EXIT, FILES, FIXING, ADOPTING, declared.COMPARE_SECTION, SURVEYING, RUNNING)


def _choice(choices: tuple[str, ...]) -> Callable[[], Any]:
    def build() -> Any:
        import click

        return click.Choice(choices)

    return build


def _file() -> Any:
    import click

    return click.Path(dir_okay=False, path_type=str)


def _jobs() -> Any:
    import click

    return click.IntRange(min=0)


@dataclass(frozen=True)
class RunOption:
    """One option of a run: ``name`` is its click parameter and its RunArguments field."""

    name: str
    flags: tuple[str, ...]  # ("--output", "-o")
    section: str
    help: str
    kind: Literal["flag", "value", "multiple"] = "value"
    click: Callable[[], Any] | None = None  # click's parameter type (None: a string)
    metavar: str | None = None
    default: Any = None  # a value's default (a flag's is False, a repeatable value's ())
    show_default: bool = False

    def decorator(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        import click

        extra: dict[str, Any] = {"help": self.help}
        if self.kind == "flag":
            extra["is_flag"] = True
        elif self.kind == "multiple":
            extra["multiple"] = True
        if self.click is not None:
            extra["type"] = self.click()
        if self.metavar is not None:
            extra["metavar"] = self.metavar
        if self.default is not None:
            extra["default"] = self.default
        if self.show_default:
            extra["show_default"] = True
        return click.option(*self.flags, self.name, **extra)


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption(
        "select",
        ("--select",),
        RULES,
        "Rule IDs or globs to check (comma-separated; replaces the configured selection; default: all).",
        "multiple",
        metavar="RULES",
    ),
    RunOption(
        "extend_select",
        ("--extend-select",),
        RULES,
        "Rule IDs or globs to check in addition.",
        "multiple",
        metavar="RULES",
    ),
    RunOption(
        "ignore",
        ("--ignore",),
        RULES,
        "Rule IDs or globs not to check (comma-separated).",
        "multiple",
        metavar="RULES",
    ),
    RunOption(
        "config_path",
        ("--config",),
        FILES,
        "Read [tool.sonnx-check] from FILE for every model (default: for each model, the nearest "
        "pyproject.toml that has it, from the model's folder upwards, else from the working directory).",
        click=_file,
        metavar="FILE",
    ),
    RunOption("isolated", ("--isolated",), FILES, "Ignore every configuration file.", "flag"),
    RunOption(
        "show_settings",
        ("--show-settings",),
        FILES,
        "Print the settings each model given (else the working directory) would be checked with, and "
        "where each came from (default, file, command line); check nothing.",
        "flag",
    ),
    RunOption(
        "force_exclude",
        ("--force-exclude",),
        FILES,
        "Skip files named on the command line that the configuration's exclude matches (.gitignore and "
        "*.fixed.onnx apply to folder scans only); the pre-commit hook passes it.",
        "flag",
    ),
    RunOption(
        "output_format",
        ("--format",),
        REPORTS,
        "Report format (default: the configured one, else text).",
        click=_choice(FORMATS),
    ),
    RunOption("output", ("--output", "-o"), REPORTS, "Write the report to FILE.", click=_file),
    RunOption(
        "output_formats",
        ("--output-format",),
        REPORTS,
        "Also write a report in FORMAT to PATH (repeatable), e.g. sarif:results.sarif junit:results.xml; "
        "html:report.html writes the reviewer's report (needs the [report] extra).",
        "multiple",
        metavar="FORMAT:PATH",
    ),
    RunOption(
        "evidence",
        ("--evidence",),
        REPORTS,
        "Write the evidence record (JSON): model and data hashes, environment, configuration, every rule's "
        "verdict at every node, the comparison's datasets and margins.",
        click=_file,
        metavar="PATH",
    ),
    RunOption(
        "mask",
        ("--mask",),
        REPORTS,
        "Replace VALUE by *** wherever a command line is recorded (repeatable; also one value per line "
        "of $SONNX_CHECK_MASK). Option values and assignments named like token, password, secret, key or "
        "auth, and URL passwords, are always masked.",
        "multiple",
        metavar="VALUE",
    ),
    RunOption("quiet", ("--quiet", "-q"), REPORTS, "Print findings only: no summary, no coverage.", "flag"),
    RunOption(
        "verbose",
        ("--verbose", "-v"),
        REPORTS,
        "Also say on stderr which models were found and skipped (and why), the configuration each is "
        "checked with, and how long each step took.",
        "flag",
    ),
    RunOption(
        "color",
        ("--color",),
        REPORTS,
        "Colour the text report: auto follows the terminal, NO_COLOR and FORCE_COLOR; always and never "
        "override them.",
        click=_choice(("auto", "always", "never")),
        default="auto",
        show_default=True,
    ),
    RunOption("statistics", ("--statistics",), REPORTS, "Show the number of findings per rule.", "flag"),
    RunOption(
        "fail_on",
        ("--fail-on",),
        EXIT,
        "Lowest severity that fails the run (default: the configured one, else error).",
        click=_choice(FAIL_ON),
    ),
    RunOption(
        "exit_zero",
        ("--exit-zero",),
        EXIT,
        "Exit 0 even when findings fail (errors still exit 2 or 3).",
        "flag",
    ),
    RunOption(
        "jobs",
        ("--jobs", "-j"),
        RUNNING,
        "Check N models at a time in separate processes (0: one per CPU; default 1). Findings, order, "
        "exit code and reports are a serial run's; only the recorded command line and times differ (SARIF "
        "invocations, the evidence record's run, HTML and JUnit times).",
        click=_jobs,
        metavar="N",
    ),
    RunOption(
        "fix",
        ("--fix",),
        FIXING,
        "Write NAME.fixed.onnx beside each model with the semantics-preserving rewrites applied, and "
        "report the fixed model.",
        "flag",
    ),
    RunOption(
        "diff",
        ("--diff",),
        FIXING,
        "Print what --fix would rewrite, model by model, as a unified diff of the graph; write nothing.",
        "flag",
    ),
    RunOption(
        "unsafe_fixes",
        ("--unsafe-fixes",),
        FIXING,
        "With --fix or --diff: also the unsafe rewrites, which change a name or a stored weight (each "
        "such rule's fix text says so; --explain ID).",
        "flag",
    ),
    RunOption(
        "fix_output",
        ("--fix-output",),
        FIXING,
        "With --fix and one model: write the fixed model to PATH instead.",
        click=_file,
        metavar="PATH",
    ),
    RunOption(
        "exit_non_zero_on_fix",
        ("--exit-non-zero-on-fix",),
        FIXING,
        "With --fix: exit 1 when a fixed model was written, even if it conforms (the original still "
        "violates the profile until it is replaced).",
        "flag",
    ),
    RunOption(
        "add_waivers",
        ("--add-waivers",),
        ADOPTING,
        "Adopting on an existing repository: append a waiver skeleton for every profile finding to the "
        "configuration, with an empty reason that must be filled in before the next run.",
        "flag",
    ),
    RunOption("list_rules", ("--list-rules",), INFORMATION, "List the rule catalogue and exit.", "flag"),
    RunOption(
        "aliases",
        ("--aliases",),
        INFORMATION,
        "With --list-rules: also list each rule's aliases (the IDs of the SONNX texts it answers to).",
        "flag",
    ),
    RunOption(
        "explain", ("--explain",), INFORMATION, "Explain one rule (ID or alias) and exit.", metavar="ID"
    ),
    RunOption(
        "survey",
        ("--survey",),
        SURVEYING,
        "Survey the runtime under test, no model needed: every profile operator's edge battery, as a "
        "conformance table; exit 1 on an unexplained divergence (docs/survey.md).",
        "flag",
    ),
    RunOption(
        "survey_output",
        ("--survey-output",),
        SURVEYING,
        "With --survey: the new (or empty) folder for survey.json, survey.html and the reproducers "
        "(default: sonnx-survey).",
        metavar="DIR",
    ),
    RunOption(
        "show_traceback", ("--show-traceback",), RUNNING, "Show Python tracebacks of internal errors.", "flag"
    ),
)

BY_NAME: Mapping[str, RunOption] = {option.name: option for option in RUN_OPTIONS}


@dataclass(frozen=True)
class RunArguments:
    """What the command line gave: the models, one field per RunOption (in RUN_OPTIONS order), and the
    comparison's options as click parsed them (settings.cli_values makes them CliOptions' fields)."""

    paths: tuple[str, ...]
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    config_path: str | None = None
    isolated: bool = False
    show_settings: bool = False
    force_exclude: bool = False
    output_format: str | None = None
    output: str | None = None
    output_formats: tuple[str, ...] = ()
    evidence: str | None = None
    mask: tuple[str, ...] = ()
    quiet: bool = False
    verbose: bool = False
    color: str = "auto"
    statistics: bool = False
    fail_on: str | None = None
    exit_zero: bool = False
    jobs: int | None = None
    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    fix_output: str | None = None
    exit_non_zero_on_fix: bool = False
    add_waivers: bool = False
    list_rules: bool = False
    aliases: bool = False
    explain: str | None = None
    survey: bool = False
    survey_output: str | None = None
    show_traceback: bool = False
    compared: Mapping[str, Any] = field(default_factory=dict)  # click parameter -> value (settings.py)

    @classmethod
    def from_click(cls, values: Mapping[str, Any]) -> RunArguments:
        """Click's parameters of the command: the run's by name, the rest the comparison's."""
        own = {name: values[name] for name in ("paths", *BY_NAME) if name in values}
        compared = {name: value for name, value in values.items() if name not in own}
        return cls(**own, compared=declared.cli_values(compared))


def _check_fields() -> None:
    fields = [f.name for f in dataclasses.fields(RunArguments)]
    if fields != ["paths", *BY_NAME, "compared"]:
        raise TypeError(
            f"RunArguments' fields {fields} are not the declared run options, in RUN_OPTIONS order"
        )


_check_fields()


def click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate the command with one click option per RunOption, in RUN_OPTIONS order."""
    for option in reversed(RUN_OPTIONS):
        command = option.decorator()(command)
    return command


def sections() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The sections of --help with the click parameters each lists (the comparison's from settings.py; the
    version and help options under Information)."""
    out = []
    for title in SECTION_TITLES:
        if title == declared.COMPARE_SECTION:
            out.append((title, declared.flag_parameters()))
        else:
            out.append((title, tuple(o.name for o in RUN_OPTIONS if o.section == title)))
    information = tuple(o.name for o in RUN_OPTIONS if o.section == INFORMATION)
    out.append((INFORMATION, (*information, "version", "help")))
    return tuple(out)
