"""The kinds of values options take: how a configured value is read and checked (naming the file and the
key), how click parses the flag (built when the command is: click loads late), how the command line's value
becomes the settings value, and CompareOptions' own check of a value. ``settings.py`` declares each option
with these; a new kind of value goes here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonnx_check.key_value import key_value
from sonnx_check.sizes import parse_size

if TYPE_CHECKING:
    from sonnx_check.config.reader import Reader

GENERATED_INPUTS = ("random", "edge")

ClickType = Callable[[], Any]  # builds the click parameter type when the command is built
ConfigReader = Callable[
    ["Reader", Any, str, Path], Any
]  # reader, configured value, dotted key, file's folder


# -- command-line values -------------------------------------------------------------------------------------


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


def merge_shapes(configured: Any, given: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The file's shapes, each replaced by the command line's for the same input."""
    shapes = dict(configured)
    shapes.update(given)
    return tuple(shapes.items())


def no_limit_if_zero(value: Any) -> Any:
    return value or None


# -- configuration readers: (reader, value, dotted key, the configuration file's folder) -> value ----------


def read_boolean(r: Reader, value: Any, key: str, base: Path) -> bool:
    return r.boolean(value, key)


def read_choice(choices: tuple[str, ...]) -> ConfigReader:
    return lambda r, value, key, base: r.choice(value, key, choices)


def read_integer(minimum: int) -> ConfigReader:
    return lambda r, value, key, base: r.integer(value, key, minimum)


def read_string(r: Reader, value: Any, key: str, base: Path) -> str:
    """A non-empty string (a command, a provider's name, a path) without a NUL byte (no file name or
    program argument can hold one: the system call would fail)."""
    if not isinstance(value, str) or not value.strip():
        raise r.fail(key, f"expected a non-empty string, got {value!r}")
    if "\x00" in value:
        raise r.fail(key, "contains a NUL byte")
    return value


def read_path(r: Reader, value: Any, key: str, base: Path) -> str:
    """A path; a relative one is relative to the configuration file's folder, not to the cwd."""
    text = read_string(r, value, key, base)
    return text if os.path.isabs(text) else str(base / text)


def read_inputs(r: Reader, value: Any, key: str, base: Path) -> tuple[str, ...]:
    inputs = r.strings(value, key)
    if not inputs:
        raise r.fail(key, "must not be empty (random, edge, or a path)")
    if any("\x00" in i for i in inputs):
        raise r.fail(key, "a path contains a NUL byte")
    # A dataset path in the configuration is relative to the configuration file, not to the cwd.
    return tuple(i if i in GENERATED_INPUTS or os.path.isabs(i) else str(base / i) for i in inputs)


def read_timeout(r: Reader, value: Any, key: str, base: Path) -> float | None:
    """Seconds (a number >= 0), where 0 and "none" mean no limit."""
    if isinstance(value, str) and value.lower() == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise r.fail(key, f'expected a number of seconds >= 0, or "none", got {value!r}')
    return float(value) or None


def read_size(r: Reader, value: Any, key: str, base: Path) -> int | None:
    try:
        return parse_size(value) or None
    except ValueError as exc:
        raise r.fail(key, str(exc)) from None


def read_shapes(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not isinstance(value, dict):
        raise r.fail(key, "expected a table of input name = [dims]")
    r.entries(value, key)
    parsed = []
    for name, dims in value.items():
        dims_key = f'{key}."{name}"'
        if not isinstance(dims, list) or not dims:
            raise r.fail(dims_key, "expected a non-empty list of integers >= 0")
        r.entries(dims, dims_key)
        parsed.append((name, tuple(r.integer(d, dims_key, 0) for d in dims)))
    return tuple(parsed)


def read_accuracy(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, str], ...]:
    """Operator = bound text; the bound's syntax and the operator's class are checked when a comparison
    starts (compare/judging/bounds.py), so reading a configuration imports nothing of the comparison."""
    from sonnx_check.profile import profile_operators

    if not isinstance(value, dict):
        raise r.fail(key, 'expected a table of operator = "bound" (e.g. Tanh = "2 ulp")')
    r.entries(value, key)
    for op_type, bound in value.items():
        if op_type not in profile_operators():
            raise r.fail(f"{key}.{op_type}", "not an operator with a SONNX specification")
        if not isinstance(bound, str):
            raise r.fail(f"{key}.{op_type}", f'expected a bound such as "2 ulp" or "1e-6 rel", got {bound!r}')
    return tuple(sorted(value.items()))


def read_readings(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, str], ...]:
    """A table "OPERATOR.KEY" = "VALUE" of the operators' declared readings (operator_readings.py). Written
    unquoted, ``MaxPool.nan = "..."`` is TOML's nested table: both spellings are read."""
    from sonnx_check import operator_readings

    if not isinstance(value, dict):
        raise r.fail(
            key, 'expected a table of "OPERATOR.KEY" = "VALUE" (e.g. "MaxPool.nan" = "nan-absorbing")'
        )
    r.entries(value, key)
    chosen: dict[str, str] = {}
    for name, raw in value.items():
        entries = raw.items() if isinstance(raw, dict) else [(None, raw)]
        for sub, given in entries:
            full = name if sub is None else f"{name}.{sub}"
            if not isinstance(given, str):
                raise r.fail(f'{key}."{full}"', f"expected one of the reading's values, got {given!r}")
            problem = operator_readings.value_problem(full, given)
            if problem is not None:
                raise r.fail(f'{key}."{full}"', problem)
            chosen[full] = given
    return tuple(sorted(chosen.items()))


def readings_from_cli(values: Any) -> tuple[tuple[str, str], ...]:
    """The parsed ``--reading`` pairs, checked against the declared readings (a name given twice keeps its
    last value)."""
    from sonnx_check import operator_readings

    return operator_readings.check(values, "--reading")


def merge_readings(configured: Any, given: Any) -> tuple[tuple[str, str], ...]:
    """The configuration's readings with the command line's on top."""
    return tuple(sorted({**dict(configured), **dict(given)}.items()))


def readings_json(chosen: Any) -> dict[str, str]:
    """Every declared reading's value by name, as ``compare.reading`` would state it."""
    from sonnx_check import operator_readings

    return dict(operator_readings.Readings(tuple(chosen)).items())


def readings_record(chosen: Any) -> dict[str, str]:
    """Every declared reading's value under its record name (``maxpool_nan``), as the evidence records it."""
    from sonnx_check import operator_readings

    return operator_readings.Readings(tuple(chosen)).settings_json()


def readings_for_compare(chosen: Any) -> Any:
    from sonnx_check import operator_readings

    return operator_readings.Readings(tuple(chosen))


def split_providers(values: Any) -> tuple[str, ...]:
    """``--ort-provider A,B --ort-provider C`` as (A, B, C), each once."""
    names = (name.strip() for value in values for name in str(value).split(","))
    return tuple(dict.fromkeys(name for name in names if name))


def read_providers(r: Reader, value: Any, key: str, base: Path) -> tuple[str, ...]:
    providers = split_providers(r.strings(value, key))
    if not providers:
        raise r.fail(key, "must name at least one execution provider")
    return providers


_MAX_RUNTIME_OPTIONS = 64


def runtime_options_from_cli(values: Any) -> tuple[tuple[str, str], ...]:
    """The parsed ``--runtime-option`` pairs, a key given twice keeping its last value."""
    return tuple(dict(values).items())


def merge_runtime_options(configured: Any, given: Any) -> tuple[tuple[str, str], ...]:
    """The configuration's options with the command line's on top (a key of both: the command line's)."""
    return tuple({**dict(configured), **dict(given)}.items())


def read_runtime_options(r: Reader, value: Any, key: str, base: Path) -> tuple[tuple[str, str], ...]:
    """A table KEY = value (a string, number or boolean, handed to the runtime as text)."""
    if not isinstance(value, dict):
        raise r.fail(key, 'expected a table of KEY = "VALUE" (e.g. INFERENCE_PRECISION_HINT = "f32")')
    r.entries(value, key)
    out = []
    for name, raw in value.items():
        if isinstance(raw, bool):
            raw = "true" if raw else "false"
        if not isinstance(raw, str | int | float):
            raise r.fail(f"{key}.{name}", f"expected a string, number or boolean, got {raw!r}")
        parsed = key_value(f"{name}={raw}")
        if isinstance(parsed, str):
            raise r.fail(f"{key}.{name}", parsed)
        out.append(parsed)
    return tuple(out)


# -- checks of a value CompareOptions is given (the Python API): the message, or None --------------------


def check_providers(value: Any) -> str | None:
    return None if value else "--ort-provider: name at least one execution provider"


def check_command(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return None
    return "--runtime-command: the command is empty"


def check_runtime(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda value: (
        None
        if value is None or value in choices
        else f"--runtime {value!r}: expected one of {', '.join(choices)}"
    )


def check_runtime_options(value: Any) -> str | None:
    if not isinstance(value, tuple | list):
        return f"--runtime-option {value!r}: expected a sequence of (KEY, VALUE) pairs"
    if len(value) > _MAX_RUNTIME_OPTIONS:
        return f"--runtime-option: {len(value)} options; at most {_MAX_RUNTIME_OPTIONS}"
    for pair in value:
        parsed = key_value(f"{pair[0]}={pair[1]}") if isinstance(pair, tuple) and len(pair) == 2 else None
        if not isinstance(parsed, tuple):
            return f"--runtime-option {pair!r}: {parsed or 'expected a (KEY, VALUE) pair of strings'}"
    return None


def check_choice(flag: str, choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda value: (
        None if value in choices else f"{flag} {value!r}: expected one of {', '.join(choices)}"
    )


def check_max_elements(value: Any) -> str | None:
    return None if value >= 1 else f"--max-elements {value}: must be at least 1"


def check_timeout(value: Any) -> str | None:
    return None if value is None or value > 0 else f"--timeout {value}: must be more than 0 seconds"


def check_max_memory(value: Any) -> str | None:
    return None if value is None or value >= 2**20 else f"--max-memory {value}: must be at least 1 MiB"


# -- click parameter types (built when the command is) ----------------------------------------------------


def click_choice(choices: tuple[str, ...]) -> ClickType:
    def build() -> Any:
        import click

        return click.Choice(choices)

    return build


def click_int_range(minimum: int) -> ClickType:
    def build() -> Any:
        import click

        return click.IntRange(min=minimum)

    return build


def click_int() -> Any:
    return int


def click_seconds() -> Any:
    from sonnx_check.cli_types import Seconds

    return Seconds()


def click_text() -> Any:
    from sonnx_check.cli_types import Text

    return Text()


def click_key_value() -> Any:
    from sonnx_check.cli_types import KeyValue

    return KeyValue()


def click_size() -> Any:
    from sonnx_check.cli_types import Size

    return Size()
