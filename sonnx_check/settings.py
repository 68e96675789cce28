"""Every comparison option, declared once.

Each ``Option`` below is the one place an option is written: its command-line flag, type, default and help
(the click option of ``sonnx-check --help`` is generated from it), its key in ``[tool.sonnx-check.compare]``
with the check of a configured value (``config`` reads it through ``read``), how the command line and the
file combine, its field in ``CompareSettings`` (one typed field per option), the field that records it
in the evidence record's ``compare`` settings (``report``), and the keyword that hands it to
``compare.CompareOptions`` (``compare_arg``).

Adding an option:

1. Append an ``Option`` to ``OPTIONS`` (its place there is its place in ``--help`` and in the evidence JSON).
   Give ``flag`` (or "" when it is configuration-only; a boolean is a pair, "--x/--no-x", so that "not
   given" leaves the configuration's value), ``config_key`` (or None when it is command-line
   only), ``default``, ``help``, and ``read`` (a configured value -> the settings value; raise through the
   reader so the error names the file and the key: ``option_kinds`` has ``read_string``, ``read_path``,
   ``read_boolean``, ``read_choice(...)``, ``read_integer(minimum)``, ...; a new kind of value goes there).
   ``click`` says how click parses the flag (None: a string); ``from_cli`` turns the parsed value into the
   settings value when they differ (0 meaning "no limit"); ``check`` is CompareOptions' own check of a
   value from the Python API. ``trust`` says what a *discovered* configuration file (one found beside the
   models, which may come with them in a pull request) may do with the key: see ``TRUST`` below; an option
   that runs a program or reads or writes outside the file's folder is never ``"any"``.
2. Add its field to ``CompareSettings`` (its type; the default stays in the Option), and, when it has a flag,
   to ``config/resolution.CliOptions`` (the command line's value, None or () when not given).
3. Use it: ``settings.compare.<name>`` wherever the run needs it, and a keyword of ``CompareOptions`` named
   ``compare_arg`` (None when the comparison does not take it).
4. Add its property to ``compare_settings`` in ``schemas/evidence.schema.json`` (``report`` is the field;
   ``tests/structure/test_settings_declared.py`` says what is missing) and a line to README/CHANGELOG.

Nothing here imports click, the configuration package or the comparison: reading a configuration stays
cheap, and the static path loads no comparison code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonnx_check import option_kinds as kinds
from sonnx_check import reading_options, runtime_names
from sonnx_check.option_kinds import GENERATED_INPUTS, ClickType, ConfigReader  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from sonnx_check.config.reader import Reader

COMPARE_TABLE = "tool.sonnx-check.compare"
COMPARE_SECTION = "Comparing with onnxruntime (--compare)"  # the options' section of --help

OPT_LEVELS = runtime_names.OPT_LEVELS
# compare/edges/extents.EXTENTS, repeated here so that reading a configuration imports no comparison
NODE_EDGES_EXTENTS = ("reduced", "full")
DEFAULT_MAX_ELEMENTS = 100_000_000
DEFAULT_TIMEOUT = 300.0
# compare.DEFAULT_MAX_MEMORY, repeated here so that reading a configuration imports no runtime
DEFAULT_MAX_MEMORY = 4 << 30
DEFAULT_PROVIDER = runtime_names.DEFAULT_PROVIDER  # compare.runtimes.onnxruntime.session.PROVIDER
# the runtimes built in (--runtime NAME): one list, which compare/runtimes/engines.ENGINES follows
RUNTIMES = runtime_names.RUNTIMES


# What a configuration file found by discovery (not named by --config) may set: such a file may come with the
# models (a pull request adds a pyproject.toml beside them), so it is as untrusted as they are. A file named
# by --config, and the command line, may set everything. docs/untrusted.md shows this table.
TRUST_ANY = "any"  # a policy of the project (rules, waivers, seeds): anything the key accepts
# Data files are not accepted from a discovered file at all: a path inside its folder can still be a link (or
# hold links) to any file, whose values would reach the reports, and saved outputs stand in for the runtime.
TRUST_GENERATED = "generated"  # datasets: only the generated ones (random, edge), no file
TRUST_TIGHTEN = "tighten"  # a limit: at most the default, never "no limit" (a hostile file cannot lift it)
TRUST_EXPLICIT = "explicit"  # runs a program, or reaches outside the tree: command line or --config only
TRUST_CPUS = "cpus"  # a number of processes: at most the CPUs (a hostile file cannot fork thousands)
TRUST = {
    TRUST_ANY: "yes",
    TRUST_GENERATED: "only the generated datasets (random, edge), no file",
    TRUST_TIGHTEN: "only a value at most the default",
    TRUST_EXPLICIT: "no: command line or --config FILE only",
    TRUST_CPUS: "yes, at most the number of CPUs (more is taken as that many)",
}


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
    help_more: Callable[[], str] | None = None  # the help's end, read when --help is built (the readings)
    read: ConfigReader | None = None  # a configured value -> the settings value (None: no configuration key)
    click: ClickType | None = None  # click's parameter type (None: a string, or a flag for a boolean pair)
    metavar: str | None = None
    multiple: bool = False  # a repeatable flag: () means not given
    from_cli: Callable[[Any], Any] = _same  # the parsed command-line value -> the settings value
    merge: Callable[[Any, Any], Any] | None = None  # (file's value, command line's) -> value; None: CLI wins
    report: str | None = "same"  # field in the evidence record's compare settings ("same": ``name``)
    # the settings value as several fields of the evidence record's compare settings (in the place of report)
    report_spread: Callable[[Any], dict[str, Any]] | None = None
    to_json: Callable[[Any], Any] = _same  # the settings value as recorded in JSON
    compare_arg: str | None = "same"  # CompareOptions keyword ("same": ``name``; None: not passed)
    to_compare: Callable[[Any], Any] = _same  # the settings value as CompareOptions takes it
    cli_name: str = "same"  # the click parameter and CliOptions field ("same": ``name``)
    # a flag of the default runtime's own (--ort-opt-level): the key of its --runtime-option this value is
    # handed to the comparison as (compare_arguments), when that runtime is the one run
    runtime_option: str | None = None
    to_runtime_option: Callable[[Any], str] = str
    # CompareOptions' own check of a value (the Python API reaches it without the command line or a file):
    # the error message, or None when the value is valid
    check: Callable[[Any], str | None] | None = None
    trust: str = TRUST_ANY  # what a discovered configuration file may set (TRUST); only with a config_key
    # names the runtime under test: given on the command line, it asks for --compare (unless --no-compare)
    implies_compare: bool = False
    why: str = ""  # why the trust is limited ("runs a program"), for the error and docs/untrusted.md

    @property
    def shown_help(self) -> str:
        """The help --help shows."""
        return self.help + (self.help_more() if self.help_more is not None else "")

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


# -- the declaration --------------------------------------------------------------------------------------

OPTIONS: tuple[Option, ...] = (
    Option(
        "enabled",
        "--compare/--no-compare",
        "enabled",
        False,
        help="Run the model in onnxruntime and diff it against the SONNX reference kernels.",
        read=kinds.read_boolean,
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
        read=kinds.read_inputs,
        metavar="random|edge|PATH",
        multiple=True,
        from_cli=tuple,
        to_json=list,
        compare_arg="datasets",
        trust=TRUST_GENERATED,
        why="reads data files",
    ),
    Option(
        "node_edges",
        "--node-edges/--no-node-edges",
        "node-edges",
        True,
        help="Also run every distinct node configuration alone on edge values (NaN, ±inf, ±0, extremes, "
        "ties, subnormals, the operator's own), in onnxruntime and in the reference (default: on).",
        read=kinds.read_boolean,
    ),
    Option(
        "node_edges_extent",
        "--node-edges-extent",
        "node-edges-extent",
        NODE_EDGES_EXTENTS[0],
        help="The shapes the node battery runs at: reduced (the default: every window kind and edge pattern "
        "phase kept, docs/comparison.md) or full (the model's own shapes).",
        read=kinds.read_choice(NODE_EDGES_EXTENTS),
        click=kinds.click_choice(NODE_EDGES_EXTENTS),
        check=kinds.check_choice("--node-edges-extent", NODE_EDGES_EXTENTS),
    ),
    Option(
        "readings",
        "--reading",
        "reading",
        (),
        help="A reading of the specification where its texts differ, chosen as OPERATOR.KEY=VALUE "
        "(repeatable); the operators declare theirs (docs/readings.md): ",
        help_more=reading_options.readings_help,
        read=kinds.read_readings,
        click=kinds.click_key_value,
        metavar="OP.KEY=VALUE",
        multiple=True,
        from_cli=kinds.readings_from_cli,
        merge=kinds.merge_readings,
        report=None,  # recorded as each reading's own field (report_spread)
        report_spread=kinds.readings_record,
        to_json=kinds.readings_json,
        to_compare=kinds.readings_for_compare,
        cli_name="reading",
    ),
    Option(
        "seed",
        "--seed",
        "seed",
        0,
        help="Seed of the random comparison inputs (default 0).",
        read=kinds.read_integer(0),
        click=kinds.click_int,
        metavar="N",
    ),
    Option(
        "ort_opt_level",
        "--ort-opt-level",
        "ort-opt-level",
        "default",
        help="onnxruntime graph optimisation level ('default', the default, keeps the runtime's own, as "
        "deployed).",
        read=kinds.read_choice(OPT_LEVELS),
        click=kinds.click_choice(OPT_LEVELS),
        check=kinds.check_choice("--ort-opt-level", OPT_LEVELS),
        compare_arg=None,
        runtime_option=runtime_names.OPT_LEVEL_KEY,
    ),
    Option(
        "shapes",
        "--shape",
        "shapes",
        (),
        help="Static shape for a dynamic input.",
        read=kinds.read_shapes,
        metavar="NAME=D1,D2,...",
        multiple=True,
        from_cli=kinds.parse_cli_shapes,
        merge=kinds.merge_shapes,
        to_json=lambda shapes: {name: list(dims) for name, dims in shapes},
        to_compare=dict,
    ),
    Option(
        "max_elements",
        "--max-elements",
        "max-elements",
        DEFAULT_MAX_ELEMENTS,
        help="Refuse comparison tensors larger than this many elements (default 100000000).",
        read=kinds.read_integer(1),
        click=kinds.click_int_range(1),
        metavar="N",
        check=kinds.check_max_elements,
        trust=TRUST_TIGHTEN,
        why="is a limit",
    ),
    Option(
        "max_memory",
        "--max-memory",
        "max-memory",
        DEFAULT_MAX_MEMORY,
        help="Memory one model's comparison may use beyond the model (its external weights count), e.g. "
        "512MiB (default 4GiB; 0: no limit).",
        read=kinds.read_size,
        click=kinds.click_size,
        metavar="SIZE",
        from_cli=kinds.no_limit_if_zero,
        check=kinds.check_max_memory,
        trust=TRUST_TIGHTEN,
        why="is a limit",
    ),
    Option(
        "timeout",
        "--timeout",
        "timeout",
        DEFAULT_TIMEOUT,
        help="Stop onnx's checker, the static rules and onnxruntime after SECONDS each per model "
        "(default 300; 0 or 'none': no limit).",
        read=kinds.read_timeout,
        click=kinds.click_seconds,
        metavar="SECONDS",
        from_cli=kinds.no_limit_if_zero,
        check=kinds.check_timeout,
        trust=TRUST_TIGHTEN,
        why="is a limit",
    ),
    Option(
        "ort_providers",
        "--ort-provider",
        "ort-providers",
        (DEFAULT_PROVIDER,),
        help="onnxruntime execution provider(s), in order of preference (repeatable or comma-separated; "
        "default CPUExecutionProvider); checked against the installed onnxruntime.",
        read=kinds.read_providers,
        metavar="NAME",
        multiple=True,
        from_cli=kinds.split_providers,
        to_json=list,
        check=kinds.check_providers,
        cli_name="ort_provider",
        implies_compare=True,
        compare_arg=None,
        runtime_option=runtime_names.PROVIDERS_KEY,
        to_runtime_option=",".join,
    ),
    Option(
        "runtime",
        "--runtime",
        "runtime",
        None,  # onnxruntime, unless --runtime-command or --outputs names another runtime
        help="The runtime under test, run in sonnx-check's worker process: onnxruntime (default), openvino "
        'or tract (pip install "sonnx-check[openvino]", "sonnx-check[tract]"; docs/runtimes.md).',
        read=kinds.read_choice(RUNTIMES),
        click=kinds.click_choice(RUNTIMES),
        metavar="NAME",
        check=kinds.check_runtime(RUNTIMES),
        implies_compare=True,
    ),
    Option(
        "runtime_options",
        "--runtime-option",
        "runtime-options",
        (),
        help="KEY=VALUE handed to the runtime (repeatable): OpenVINO's CPU properties (e.g. "
        "INFERENCE_PRECISION_HINT=f32), onnxruntime's session configuration entries, tract's transform.",
        read=kinds.read_runtime_options,
        click=kinds.click_key_value,
        metavar="KEY=VALUE",
        multiple=True,
        from_cli=kinds.runtime_options_from_cli,
        merge=kinds.merge_runtime_options,
        to_json=dict,
        check=kinds.check_runtime_options,
        cli_name="runtime_option",
        trust=TRUST_EXPLICIT,
        why="configures how the runtime loads and runs the model (files, libraries, threads)",
        implies_compare=True,
    ),
    Option(
        "runtime_command",
        "--runtime-command",
        "runtime-command",
        None,
        help="Test another runtime: run 'CMD MODEL INPUT_DIR OUTPUT_DIR', which writes "
        "test_data_set_N/output_K.pb (docs/runtime-contract.md).",
        read=kinds.read_string,
        click=kinds.click_text,
        metavar="CMD",
        check=kinds.check_command,
        trust=TRUST_EXPLICIT,
        why="runs a program",
        implies_compare=True,
    ),
    Option(
        "saved_outputs",
        "--outputs",
        "outputs",
        None,
        help="Compare the outputs a runtime wrote earlier into the folders --export-inputs DIR wrote.",
        read=kinds.read_path,
        click=kinds.click_text,
        metavar="DIR",
        cli_name="outputs",
        trust=TRUST_EXPLICIT,
        why="puts saved outputs in the place of the runtime under test",
        implies_compare=True,
    ),
    Option(
        "export_inputs",
        "--export-inputs",
        None,  # an action, not a setting of the project
        None,
        help="Write each model with the tensors a comparison reads exposed, and its datasets, under DIR, for "
        "--outputs; compare nothing.",
        click=kinds.click_text,
        metavar="DIR",
        report=None,
        compare_arg=None,
    ),
    Option(
        "accuracy",
        "",  # a table per operator: configuration only
        "accuracy",
        (),
        read=kinds.read_accuracy,
        to_json=dict,
        to_compare=dict,
    ),
    Option(
        "export_suite",
        "--export-suite",
        None,  # a folder written once per run: command line only
        None,
        help="Write a conformance suite to take away into the new (or empty) folder DIR: every model and "
        "node configuration as ONNX backend test cases whose expected outputs are the SONNX reference's, "
        "with per-element bounds and run_suite.py (no onnxruntime needed to write it).",
        click=kinds.click_text,
        metavar="DIR",
        report=None,  # an output of the run, not a setting of the comparison
        compare_arg=None,  # compare/suite/ reads it, the comparison does not
    ),
)

BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}
CONFIG_KEYS: tuple[str, ...] = tuple(o.config_key for o in OPTIONS if o.config_key is not None)


# -- what derives from it ---------------------------------------------------------------------------------


def _declared(name: str) -> Any:
    """The field of option ``name``, with its declared default (a default is written once: in OPTIONS)."""
    return dataclasses.field(default=BY_NAME[name].default)


@dataclass(frozen=True)
class CompareSettings:
    """The comparison's settings, resolved: one field per declared Option, in OPTIONS order. Written out (not
    generated) so that mypy sees each field's type; ``_check_fields`` refuses a field that is not an Option
    (or an Option with no field) at import, and tests/structure/test_settings_declared.py checks each
    declared default against the field's type."""

    enabled: bool = _declared("enabled")
    inputs: tuple[str, ...] = _declared("inputs")  # "random", "edge" or a path
    node_edges: bool = _declared("node_edges")
    node_edges_extent: str = _declared("node_edges_extent")  # one of NODE_EDGES_EXTENTS
    readings: tuple[tuple[str, str], ...] = _declared("readings")  # ("MaxPool.nan", value): those given
    seed: int = _declared("seed")
    ort_opt_level: str = _declared("ort_opt_level")  # one of OPT_LEVELS
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = _declared("shapes")  # (input name, dims)
    max_elements: int = _declared("max_elements")
    max_memory: int | None = _declared("max_memory")  # bytes; None: no limit
    timeout: float | None = _declared("timeout")  # seconds; None: no limit
    ort_providers: tuple[str, ...] = _declared("ort_providers")
    runtime: str | None = _declared("runtime")  # one of RUNTIMES; None: onnxruntime (or the command's)
    runtime_options: tuple[tuple[str, str], ...] = _declared("runtime_options")  # (key, value), in order
    runtime_command: str | None = _declared("runtime_command")
    saved_outputs: str | None = _declared("saved_outputs")
    export_inputs: str | None = _declared("export_inputs")
    accuracy: tuple[tuple[str, str], ...] = _declared("accuracy")  # (operator, accuracy)
    export_suite: str | None = _declared("export_suite")


def _check_fields() -> None:
    fields = [f.name for f in dataclasses.fields(CompareSettings)]
    if fields != [o.name for o in OPTIONS]:
        raise TypeError(f"CompareSettings' fields {fields} are not the declared options, in OPTIONS order")


_check_fields()


def read_config(r: Reader, table: Mapping[str, Any], base: Path, discovered: bool = True) -> dict[str, Any]:
    """A ``[tool.sonnx-check.compare]`` table's values by option name (the keys present only). Unknown keys
    are refused by the caller (``CONFIG_KEYS``). A ``discovered`` file (not named by --config) may set each
    key only as far as its ``trust`` allows; beyond that, the key is this file's configuration error."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        if option.config_key is not None and option.config_key in table:
            assert option.read is not None, option.name
            key = f"{COMPARE_TABLE}.{option.config_key}"
            raw = table[option.config_key]
            if discovered and option.trust == TRUST_EXPLICIT:  # refused before its value is even looked at
                raise r.fail(key, _untrusted(option, "not accepted from a discovered configuration file"))
            value = option.read(r, raw, key, base)
            if discovered:
                problem = _beyond_trust(option, raw, value, base)
                if problem is not None:
                    raise r.fail(key, _untrusted(option, problem))
            out[option.name] = value
    reading_options.read_config_aliases(r, table, out, COMPARE_TABLE)
    return out


def config_keys() -> tuple[str, ...]:
    """Every key ``[tool.sonnx-check.compare]`` accepts: the declared options' and the older keys of the
    operators' readings (``maxpool-nan``)."""
    older = reading_options.alias_config_keys()
    out: list[str] = []
    for key in CONFIG_KEYS:
        out += [key, *older] if key == BY_NAME["readings"].config_key else [key]
    return tuple(out)


def _untrusted(option: Option, problem: str) -> str:
    flag = option.flag.split("/")[0] or "--config FILE"
    return (
        f"{problem}: the key {option.why} and a file found beside the models may come with them; give it on "
        f"the command line ({flag}) or in a file named by --config (docs/untrusted.md)"
    )


def _beyond_trust(option: Option, raw: Any, value: Any, base: Path) -> str | None:
    """Why a discovered file may not set ``value``, or None."""
    if option.trust == TRUST_GENERATED:
        texts = [raw] if isinstance(raw, str) else [t for t in raw if t not in kinds.GENERATED_INPUTS]
        if texts:
            return "a discovered configuration file may name only generated datasets (random, edge), no file"
    elif option.trust == TRUST_TIGHTEN:
        if value is None:
            return "a discovered configuration file may not lift the limit"
        if value > option.default:
            default = option.default
            return f"a discovered configuration file may not raise the limit above its default ({default})"
    return None


def resolve(cli: Any, configured: Mapping[str, Any]) -> CompareSettings:
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


def flag_parameters() -> tuple[str, ...]:
    """The click parameters of the comparison's options, in --help order (a reading's older flag after
    --reading)."""
    out: list[str] = []
    for option in OPTIONS:
        if option.flag:
            out.append(option.parameter)
        if option.name == "readings":
            out += reading_options.alias_parameters()
    return tuple(out)


def cli_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Click's values of the comparison's options as CliOptions takes them: the readings' older flags folded
    into --reading, and ``compare`` True when an option that names the runtime under test was given (and
    neither --compare nor --no-compare was)."""
    out = reading_options.fold_aliases(values)
    if out.get("compare") is None:
        if any(o.implies_compare and out.get(o.parameter) for o in OPTIONS):
            out["compare"] = True
    return out


def click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate the command with one click option per declared option that has a flag, in OPTIONS order,
    and the older flag of each declared reading after --reading."""
    import click

    for option in reversed([o for o in OPTIONS if o.flag]):
        if option.name == "readings":
            for alias in reversed(reading_options.alias_options()):
                command = alias(command)
        extra: dict[str, Any] = {"default": None, "help": option.shown_help}
        if option.multiple:
            extra = {"multiple": True, "help": option.shown_help}
        if option.click is not None:
            extra["type"] = option.click()
        if option.metavar is not None:
            extra["metavar"] = option.metavar
        command = click.option(option.flag, option.parameter, **extra)(command)
    return command
