"""The readings of the specification a comparison may choose, declared by the operators they belong to.

Where the texts an operator rests on differ (seed 003's MaxPool counts a NaN as -inf, the working group's
later text makes it absorbing), its catalogue file declares the choice once, as a ``[[reading]]`` table:
its key, the values and what each means, the default, the help, and the name reports record it under.
Everything else follows from that declaration: ``--reading OP.KEY=VALUE`` and ``compare.reading`` accept it
(settings.py), the kernel receives the chosen values as one ``Readings`` (``readings["MaxPool.nan"]``), and
every report records it. A second reading is a new table and the kernel code that reads it, no wiring.

Nothing here imports a kernel or the comparison: the command line and the configuration check a reading
without loading either.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sonnx_check.errors import UsageError

REQUIRED_KEYS = ("key", "default", "help", "label", "record", "values")


@dataclass(frozen=True)
class ReadingDeclaration:
    """One operator's reading, as its ``[[reading]]`` table declares it."""

    op_type: str
    key: str  # "nan": the reading is named "MaxPool.nan"
    values: tuple[tuple[str, str], ...]  # (value, what it means), in the declared order
    default: str
    help: str
    label: str  # how text reports name it: "MaxPool NaN reading"
    record: str  # the field the JSON reports and the evidence record hold it in: "maxpool_nan"
    flag: str | None = None  # an older flag kept as an alias of --reading NAME=VALUE: "--maxpool-nan"
    config_key: str | None = None  # its older key in [tool.sonnx-check.compare]: "maxpool-nan"

    @property
    def name(self) -> str:
        return f"{self.op_type}.{self.key}"

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.values)

    def words(self, value: str) -> str:
        """What ``value`` means, in the declaration's words."""
        return dict(self.values)[value]


def _declaration(stem: str, op_type: str, raw: Mapping[str, object]) -> ReadingDeclaration:
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        raise ValueError(f"{stem}.toml: a [[reading]] lacks {', '.join(missing)}")
    values = raw["values"]
    if not isinstance(values, Mapping) or not values:
        raise ValueError(f"{stem}.toml: reading {raw['key']}: values must be a table of value = meaning")
    declaration = ReadingDeclaration(
        op_type=op_type,
        key=str(raw["key"]),
        values=tuple((str(value), str(words)) for value, words in values.items()),
        default=str(raw["default"]),
        help=str(raw["help"]).strip(),
        label=str(raw["label"]),
        record=str(raw["record"]),
        flag=None if raw.get("flag") is None else str(raw["flag"]),
        config_key=None if raw.get("config_key") is None else str(raw["config_key"]),
    )
    if declaration.default not in declaration.choices:
        raise ValueError(f"{stem}.toml: reading {declaration.key}: default is not one of its values")
    return declaration


@functools.lru_cache(maxsize=1)
def declared() -> Mapping[str, ReadingDeclaration]:
    """Every declared reading by name ("MaxPool.nan"), in catalogue order."""
    from sonnx_check.catalogue import catalogue_files

    out: dict[str, ReadingDeclaration] = {}
    for stem, data in catalogue_files():
        readings = data.get("reading", [])
        if readings and "operator" not in data:
            raise ValueError(f"{stem}.toml: a [[reading]] belongs to an operator's declaration")
        for raw in readings:
            declaration = _declaration(stem, data["operator"]["op_type"], raw)
            if declaration.name in out:
                raise ValueError(f"{stem}.toml: reading {declaration.name} is declared twice")
            out[declaration.name] = declaration
    return out


def value_problem(name: str, value: object) -> str | None:
    """Why ``name = value`` is not a declared reading and one of its values (one line listing what is
    accepted), or None."""
    readings = declared()
    if name not in readings:
        op_type, dot, key = name.partition(".")
        known = ", ".join(readings) or "none"
        if not dot or not key:
            return f"{name!r}: expected OPERATOR.KEY (declared readings: {known})"
        for_op = [r.key for r in readings.values() if r.op_type == op_type]
        if for_op:
            return f"{op_type} has no reading {key!r} (its readings: {', '.join(for_op)})"
        return f"no reading is declared for {op_type!r} (declared readings: {known})"
    declaration = readings[name]
    if value not in declaration.choices:
        return f"{name} {value!r}: expected one of {', '.join(declaration.choices)}"
    return None


def check(entries: Iterable[tuple[str, str]], source: str) -> tuple[tuple[str, str], ...]:
    """``entries`` (name, value) checked, as a sorted tuple, a name given twice keeping its last value;
    UsageError (``source``: what gave them, e.g. "--reading") on the first that is not declared."""
    chosen: dict[str, str] = {}
    for name, value in entries:
        problem = value_problem(name, value)
        if problem is not None:
            raise UsageError(f"{source}: {problem}")
        chosen[name] = value
    return tuple(sorted(chosen.items()))


@dataclass(frozen=True)
class Readings:
    """The readings a run chose, handed to the kernels that depend on one (``execute.run_node(...,
    readings=...)``): ``readings["MaxPool.nan"]`` is the value chosen, else the declared default. ``chosen``
    keeps only the values that differ from the defaults, so two equal choices compare equal."""

    chosen: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        given = dict(self.chosen)
        if not given:
            object.__setattr__(self, "chosen", ())
            return
        checked = check(given.items(), "readings")
        defaults = {name: r.default for name, r in declared().items()}
        object.__setattr__(self, "chosen", tuple((n, v) for n, v in checked if defaults[n] != v))

    def __getitem__(self, name: str) -> str:
        for chosen, value in self.chosen:
            if chosen == name:
                return value
        return declared()[name].default

    def items(self) -> list[tuple[str, str]]:
        """Every declared reading's (name, value), in catalogue order."""
        return [(name, self[name]) for name in declared()]

    def settings_json(self) -> dict[str, str]:
        """Each reading's value under its declared record name ({"maxpool_nan": ...}), as the settings of a
        report state them."""
        return {r.record: self[name] for name, r in declared().items()}

    def records(self) -> dict[str, str]:
        """Each reading's value and its meaning ({"maxpool_nan": ..., "maxpool_nan_reading": ...}), as the
        reports' reference record states them."""
        out: dict[str, str] = {}
        for name, r in declared().items():
            out[r.record] = self[name]
            out[f"{r.record}_reading"] = r.words(self[name])
        return out

    def of(self, op_type: str) -> list[tuple[ReadingDeclaration, str]]:
        """The readings of operator ``op_type`` with their values, in declaration order."""
        return [(r, self[name]) for name, r in declared().items() if r.op_type == op_type]


DEFAULT = Readings()
