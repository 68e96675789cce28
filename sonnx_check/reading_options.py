"""The operators' readings on the command line and in the configuration: one option, ``--reading
OP.KEY=VALUE`` (``compare.reading``, declared in settings.py), and the older flag or key a declared reading
keeps as its alias (``--maxpool-nan``, ``compare.maxpool-nan``; operator_readings.py reads the declarations).
Nothing here imports a kernel or the comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sonnx_check import operator_readings
from sonnx_check.errors import UsageError
from sonnx_check.operator_readings import ReadingDeclaration

if TYPE_CHECKING:
    from sonnx_check.config.reader import Reader


def reading_aliases() -> list[ReadingDeclaration]:
    """The declared readings that keep an older flag or key (``--maxpool-nan``), in catalogue order."""
    return [r for r in operator_readings.declared().values() if r.flag or r.config_key]


def alias_parameter(reading: ReadingDeclaration) -> str:
    """The click parameter of a reading's older flag (``--maxpool-nan``: ``maxpool_nan``)."""
    assert reading.flag is not None
    return reading.flag.lstrip("-").replace("-", "_")


def alias_parameters() -> list[str]:
    return [alias_parameter(r) for r in reading_aliases() if r.flag]


def alias_config_keys() -> list[str]:
    return [r.config_key for r in reading_aliases() if r.config_key is not None]


def fold_aliases(values: Mapping[str, Any]) -> dict[str, Any]:
    """Click's values with each older reading flag (``--maxpool-nan X``) folded into --reading's pairs (as
    ``MaxPool.nan=X``); the same reading given both ways with two values is a usage error."""
    out = dict(values)
    pairs = list(out.get("reading", ()))
    for reading in reading_aliases():
        if not reading.flag:
            continue
        value = out.pop(alias_parameter(reading), None)
        if value is None:
            continue
        other = [given for name, given in pairs if name == reading.name and given != value]
        if other:
            raise UsageError(
                f"{reading.flag} {value} and --reading {reading.name}={other[0]} choose two values: give one"
            )
        pairs.insert(0, (reading.name, value))
    out["reading"] = tuple(pairs)
    return out


def read_config_aliases(r: Reader, table: Mapping[str, Any], out: dict[str, Any], prefix: str) -> None:
    """A reading's older key in the table (``maxpool-nan = "..."``) read into ``out["readings"]`` (the
    ``reading`` table's values); the same reading given both ways with two values is the file's error."""
    for reading in reading_aliases():
        if reading.config_key is None or reading.config_key not in table:
            continue
        key = f"{prefix}.{reading.config_key}"
        value = r.choice(table[reading.config_key], key, reading.choices)
        chosen = dict(out.get("readings", ()))
        if chosen.get(reading.name, value) != value:
            other = chosen[reading.name]
            raise r.fail(key, f'{value!r} and reading."{reading.name}" = {other!r}: give one of them')
        chosen[reading.name] = value
        out["readings"] = tuple(sorted(chosen.items()))


def readings_help() -> str:
    """The declared readings, their values and defaults, for --reading's help."""
    declared = operator_readings.declared().items()
    listed = "; ".join(f"{name}={'|'.join(r.choices)} (default {r.default})" for name, r in declared)
    return (listed or "none declared") + "."


def alias_options() -> list[Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """The click options of the readings' older flags, in catalogue order."""
    import click

    return [
        click.option(
            reading.flag,
            alias_parameter(reading),
            default=None,
            type=click.Choice(reading.choices),
            help=f"{reading.help} Same as --reading {reading.name}=VALUE.",
        )
        for reading in reading_aliases()
        if reading.flag is not None
    ]
