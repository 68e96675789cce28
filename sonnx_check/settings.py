"""Every comparison option, declared once.

Each ``Option`` below is the one place an option is written: its command-line flag, type, default and help
(the click option of ``sonnx-check --help`` is generated from it), its key in ``[tool.sonnx-check.compare]``
with the check of a configured value (``config`` reads it through ``read``), how the command line and the
file combine, its field in ``CompareSettings`` (generated: one field per option), the field that records it
in the evidence record's ``compare`` settings (``report``), and the keyword that hands it to
``compare.CompareOptions`` (``compare_arg``).

Adding an option:

1. Append an ``Option`` to ``OPTIONS`` (its place there is its place in ``--help`` and in the evidence JSON).
   Give ``flag`` (or "" when it is configuration-only; a boolean is a pair, "--x/--no-x", so that "not
   given" leaves the configuration's value), ``config_key`` (or None when it is command-line
   only), ``default``, ``help``, and ``read`` (a configured value -> the settings value; raise through the
   reader so the error names the file and the key: ``read_string``, ``read_path``, ``_read_boolean``,
   ``_read_choice(...)``, ``_read_integer(minimum)`` or one of your own). ``click`` says how click parses
   the flag (None: a string); ``from_cli`` turns the parsed value into the settings value when they differ
   (0 meaning "no limit"); ``check`` is CompareOptions' own check of a value from the Python API.
2. Use it: ``settings.compare.<name>`` wherever the run needs it, and a keyword of ``CompareOptions`` named
   ``compare_arg`` (None when the comparison does not take it).
3. Add its property to ``compare_settings`` in ``schemas/evidence.schema.json`` (``report`` is the field;
   ``tests/structure/test_settings_declared.py`` says what is missing) and a line to README/CHANGELOG.

Nothing here imports click, the configuration package or the comparison: reading a configuration stays
cheap, and the static path loads no comparison code.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonnx_check.sizes import parse_size

if TYPE_CHECKING:
    from sonnx_check.config.reader import Reader

COMPARE_TABLE = "tool.sonnx-check.compare"
COMPARE_SECTION = "Comparing with onnxruntime (--compare)"  # the options' section of --help

OPT_LEVELS = ("default", "disable", "basic", "extended", "all")
# reference/nan_policy.READINGS, repeated here so that reading a configuration imports no kernel
MAXPOOL_NAN_READINGS = ("nan-as-negative-infinity", "nan-absorbing")
DEFAULT_MAX_ELEMENTS = 100_000_000
DEFAULT_TIMEOUT = 300.0
# compare.DEFAULT_MAX_MEMORY, repeated here so that reading a configuration imports no runtime
DEFAULT_MAX_MEMORY = 4 << 30
GENERATED_INPUTS = ("random", "edge")

ClickType = Callable[[], Any]  # builds the click parameter type when the command is built (click loads late)
ConfigReader = Callable[
    ["Reader", Any, str, Path], Any
]  # reader, configured value, dotted key, file's folder


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Option:
    """One comparison option. ``name`` is the CompareSettings field and, unless ``cli_name`` says
    otherwise, the click parameter and the CliOptions field; see the module's docstring for how to add
    one."""

    name: str
    flag: str  # "--seed", "--compare/--no-compare" (a boolean pair); "": not on the command line
    config_key: str | None  # key in [tool.sonnx-check.compare]; None: not in the configuration
    default: Any  # the settings value when neither the command line nor the file gives one
    help: str = ""
    read: ConfigReader | None = None  # a configured value -> the settings value (None: no configuration key)
    click: ClickType | None = None  # click's parameter type (None: a string, or a flag for a boolean pair)
    metavar: str | None = None
    multiple: bool = False  # a repeatable flag: () means not given
    from_cli: Callable[[Any], Any] = _same  # the parsed command-line value -> the settings value
    merge: Callable[[Any, Any], Any] | None = None  # (file's value, command line's) -> value; None: CLI wins
    report: str | None = "same"  # field in the evidence record's compare settings ("same": ``name``)
    to_json: Callable[[Any], Any] = _same  # the settings value as recorded in JSON
    compare_arg: str | None = "same"  # CompareOptions keyword ("same": ``name``; None: not passed)
    to_compare: Callable[[Any], Any] = _same  # the settings value as CompareOptions takes it
    cli_name: str = "same"  # the click parameter and CliOptions field ("same": ``name``)
    # CompareOptions' own check of a value (the Python API reaches it without the command line or a file):
    # the error message, or None when the value is valid
    check: Callable[[Any], str | None] | None = None

    @property
    def parameter(self) -> str:
        return self.name if self.cli_name == "same" else self.cli_name

    @property
    def report_field(self) -> str | None:
        return self.name if self.report == "same" else self.report

    @property
    def compare_keyword(self) -> str | None:
        return self.name if self.compare_arg == "same" else self.compare_arg

    @property
    def cli_default(self) -> Any:
        """What CliOptions holds when the command line does not give the option."""
        return () if self.multiple else None

    def given(self, cli_value: Any) -> bool:
        return cli_value is not None and cli_value != ()


# -- values -----------------------------------------------------------------------------------------------


def parse_cli_shapes(values: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``--shape NAME=D1,D2,...`` (repeatable) as (name, dims) pairs."""
    from sonnx_check.errors import UsageError

    shapes = []
    for value in values:
        name, sep, dims = value.rpartition("=")
        try:
            parsed = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            parsed = ()
        if not sep or not name or not parsed or any(d < 0 for d in parsed):
            raise UsageError(f"--shape {value!r}: expected NAME=D1,D2,... with non-negative integers")
        shapes.append((name, parsed))
    return tuple(shapes)


def _merge_shapes(configured: Any, given: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The file's shapes, each replaced by the command line's for the same input."""
    shapes = dict(configured)
    shapes.update(given)
    return tuple(shapes.items())


def _no_limit_if_zero(value: Any) -> Any:
    return value or None


# -- configuration readers: (reader, value, dotted key, the configuration file's folder) -> value ----------


def _read_boolean(r: Reader, value: Any, key: str, base: Path) -> bool:
    return r.boolean(value, key)


def _read_choice(choices: tuple[str, ...]) -> ConfigReader:
    return lambda r, value, key, base: r.choice(value, key, choices)


def _read_integer(minimum: int) -> ConfigReader:
    return lambda r, value, key, base: r.integer(value, key, minimum)


def read_string(r: Reader, value: Any, key: str, base: Path) -> str:
    """A non-empty string (a command, a provider's name)."""
    if not isinstance(value, str) or not value.strip():
        raise r.fail(key, f"expected a non-empty string, got {value!r}")
    return value


def read_path(r: Reader, value: Any, key: str, base: Path) -> str:
    """A path; a relative one is relative to the configuration file's folder, not to the cwd."""
    text = read_string(r, value, key, base)
    return text if os.path.isabs(text) else str(base / text)


def _read_inputs(r: Reader, value: Any, key: str, base: Path) -> tuple[str, ...]:
    inputs = r.strings(value, key)
    if not inputs:
        raise r.fail(key, "must not be empty (random, edge, or a path)")
    # A dataset path in the configuration is relative to the configuration file, not to the cwd.
    return tuple(i if i in GENERATED_INPUTS or os.path.isabs(i) else str(base / i) for i in inputs)


def _read_timeout(r: Reader, value: Any, key: str, base: Path) -> float | None:
    """Seconds (a number >= 0), where 0 and "none" mean no limit."""
    if isinstance(value, str) and value.lower() == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise r.fail(key, f'expected a number of seconds >= 0, or "none", got {value!r}')
    return float(value) or None


def _read_size(r: Reader, value: Any, key: str, base: Path) -> int | None:
    try:
        return parse_size(value) or None
    except ValueError as exc:
        raise r.fail(key, str(exc)) from None


def _read_shapes(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not isinstance(value, dict):
        raise r.fail(key, "expected a table of input name = [dims]")
    parsed = []
    for name, dims in value.items():
        dims_key = f'{key}."{name}"'
        if not isinstance(dims, list) or not dims:
            raise r.fail(dims_key, "expected a non-empty list of integers >= 0")
        parsed.append((name, tuple(r.integer(d, dims_key, 0) for d in dims)))
    return tuple(parsed)


def _read_accuracy(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, str], ...]:
    """Operator = bound text; the bound's syntax and the operator's class are checked when a comparison
    starts (compare/accuracy.py), so reading a configuration imports nothing of the comparison."""
    from sonnx_check.profile import profile_operators

    if not isinstance(value, dict):
        raise r.fail(key, 'expected a table of operator = "bound" (e.g. Tanh = "2 ulp")')
    for op_type, bound in value.items():
        if op_type not in profile_operators():
            raise r.fail(f"{key}.{op_type}", "not an operator with a SONNX specification")
        if not isinstance(bound, str):
            raise r.fail(f"{key}.{op_type}", f'expected a bound such as "2 ulp" or "1e-6 rel", got {bound!r}')
    return tuple(sorted(value.items()))


# -- checks of a value CompareOptions is given (the Python API): the message, or None --------------------


def _check_choice(flag: str, choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda value: (
        None if value in choices else f"{flag} {value!r}: expected one of {', '.join(choices)}"
    )


def _check_max_elements(value: Any) -> str | None:
    return None if value >= 1 else f"--max-elements {value}: must be at least 1"


def _check_timeout(value: Any) -> str | None:
    return None if value is None or value > 0 else f"--timeout {value}: must be more than 0 seconds"


def _check_max_memory(value: Any) -> str | None:
    return None if value is None or value >= 2**20 else f"--max-memory {value}: must be at least 1 MiB"


# -- click parameter types (built when the command is) ----------------------------------------------------


def _click_choice(choices: tuple[str, ...]) -> ClickType:
    def build() -> Any:
        import click

        return click.Choice(choices)

    return build


def _click_int_range(minimum: int) -> ClickType:
    def build() -> Any:
        import click

        return click.IntRange(min=minimum)

    return build


def _click_int() -> Any:
    return int


def _click_seconds() -> Any:
    from sonnx_check.cli_types import Seconds

    return Seconds()


def _click_size() -> Any:
    from sonnx_check.cli_types import Size

    return Size()


# -- the declaration --------------------------------------------------------------------------------------

OPTIONS: tuple[Option, ...] = (
    Option(
        "enabled",
        "--compare/--no-compare",
        "enabled",
        False,
        help="Run the model in onnxruntime and diff it against the SONNX reference kernels.",
        read=_read_boolean,
        report=None,  # the record's compare settings exist only when the comparison is enabled
        compare_arg=None,
        cli_name="compare",
    ),
    Option(
        "inputs",
        "--inputs",
        "inputs",
        ("random",),
        help="Model-level comparison inputs (repeatable; default: random). "
        "PATH: .npz or test_data_set folder.",
        read=_read_inputs,
        metavar="random|edge|PATH",
        multiple=True,
        from_cli=tuple,
        to_json=list,
        compare_arg="datasets",
    ),
    Option(
        "node_edges",
        "--node-edges/--no-node-edges",
        "node-edges",
        True,
        help="Also run every distinct node configuration alone on edge values (NaN, ±inf, ±0, extremes, "
        "ties, subnormals, the operator's own), in onnxruntime and in the reference (default: on).",
        read=_read_boolean,
    ),
    Option(
        "maxpool_nan",
        "--maxpool-nan",
        "maxpool-nan",
        MAXPOOL_NAN_READINGS[0],
        help="MaxPool's NaN reading: seed 003's 'NaN counts as -inf' (nan-as-negative-infinity, the default) "
        "or the working group's later NaN-absorbing text.",
        read=_read_choice(MAXPOOL_NAN_READINGS),
        click=_click_choice(MAXPOOL_NAN_READINGS),
        check=_check_choice("--maxpool-nan", MAXPOOL_NAN_READINGS),
    ),
    Option(
        "seed",
        "--seed",
        "seed",
        0,
        help="Seed of the random comparison inputs (default 0).",
        read=_read_integer(0),
        click=_click_int,
        metavar="N",
    ),
    Option(
        "ort_opt_level",
        "--ort-opt-level",
        "ort-opt-level",
        "default",
        help="onnxruntime graph optimisation level ('default', the default, keeps the runtime's own, as "
        "deployed).",
        read=_read_choice(OPT_LEVELS),
        click=_click_choice(OPT_LEVELS),
        check=_check_choice("--ort-opt-level", OPT_LEVELS),
    ),
    Option(
        "shapes",
        "--shape",
        "shapes",
        (),
        help="Static shape for a dynamic input.",
        read=_read_shapes,
        metavar="NAME=D1,D2,...",
        multiple=True,
        from_cli=parse_cli_shapes,
        merge=_merge_shapes,
        to_json=lambda shapes: {name: list(dims) for name, dims in shapes},
        to_compare=dict,
    ),
    Option(
        "max_elements",
        "--max-elements",
        "max-elements",
        DEFAULT_MAX_ELEMENTS,
        help="Refuse comparison tensors larger than this many elements (default 100000000).",
        read=_read_integer(1),
        click=_click_int_range(1),
        metavar="N",
        check=_check_max_elements,
    ),
    Option(
        "max_memory",
        "--max-memory",
        "max-memory",
        DEFAULT_MAX_MEMORY,
        help="Memory one model's comparison may use beyond the model (its external weights count), e.g. "
        "512MiB (default 4GiB; 0: no limit).",
        read=_read_size,
        click=_click_size,
        metavar="SIZE",
        from_cli=_no_limit_if_zero,
        check=_check_max_memory,
    ),
    Option(
        "timeout",
        "--timeout",
        "timeout",
        DEFAULT_TIMEOUT,
        help="Stop onnx's checker, the static rules and onnxruntime after SECONDS each per model "
        "(default 300; 0 or 'none': no limit).",
        read=_read_timeout,
        click=_click_seconds,
        metavar="SECONDS",
        from_cli=_no_limit_if_zero,
        check=_check_timeout,
    ),
    Option(
        "accuracy",
        "",  # a table per operator: configuration only
        "accuracy",
        (),
        read=_read_accuracy,
        to_json=dict,
        to_compare=dict,
    ),
)

BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}
CONFIG_KEYS: tuple[str, ...] = tuple(o.config_key for o in OPTIONS if o.config_key is not None)


# -- what derives from it ---------------------------------------------------------------------------------

CompareSettings = dataclasses.make_dataclass(
    "CompareSettings",
    [(o.name, Any, dataclasses.field(default=o.default)) for o in OPTIONS],
    frozen=True,
)
CompareSettings.__module__ = __name__  # pickled by name for --jobs workers
CompareSettings.__doc__ = "The comparison's settings, resolved: one field per declared Option."


def read_config(r: Reader, table: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """A ``[tool.sonnx-check.compare]`` table's values by option name (the keys present only). Unknown keys
    are refused by the caller (``CONFIG_KEYS``)."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        if option.config_key is not None and option.config_key in table:
            assert option.read is not None, option.name
            out[option.name] = option.read(
                r, table[option.config_key], f"{COMPARE_TABLE}.{option.config_key}", base
            )
    return out


def resolve(cli: Any, configured: Mapping[str, Any]) -> Any:
    """The CompareSettings: for each option the command line's value (``cli``: an object with one attribute
    per option, () or None when not given), else the configured one, else the default."""
    values = {}
    for option in OPTIONS:
        value = configured.get(option.name, option.default)
        given = getattr(cli, option.parameter, option.cli_default) if option.flag else option.cli_default
        if option.given(given):
            from_cli = option.from_cli(given)
            value = option.merge(value, from_cli) if option.merge is not None else from_cli
        values[option.name] = value
    return CompareSettings(**values)


def report_json(settings: Any) -> dict[str, Any]:
    """The options as the evidence record's ``compare`` settings state them."""
    return {
        o.report_field: o.to_json(getattr(settings, o.name)) for o in OPTIONS if o.report_field is not None
    }


def compare_arguments(settings: Any) -> dict[str, Any]:
    """The keywords of ``compare.CompareOptions`` for these settings."""
    return {
        o.compare_keyword: o.to_compare(getattr(settings, o.name))
        for o in OPTIONS
        if o.compare_keyword is not None
    }


def compare_problem(options: Any) -> str | None:
    """The first declared check a CompareOptions value fails (its message), or None."""
    for option in OPTIONS:
        if option.check is not None and option.compare_keyword is not None:
            problem = option.check(getattr(options, option.compare_keyword))
            if problem is not None:
                return problem
    return None


def click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate the command with one click option per declared option that has a flag, in OPTIONS order."""
    import click

    for option in reversed([o for o in OPTIONS if o.flag]):
        extra: dict[str, Any] = {"default": None, "help": option.help}
        if option.multiple:
            extra = {"multiple": True, "help": option.help}
        if option.click is not None:
            extra["type"] = option.click()
        if option.metavar is not None:
            extra["metavar"] = option.metavar
        command = click.option(option.flag, option.parameter, **extra)(command)
    return command
