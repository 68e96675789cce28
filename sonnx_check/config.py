"""``[tool.sonnx-check]`` in ``pyproject.toml``, merged with the command line into one Settings object.

Configuration is resolved once, before any model is read, so that a typo in a CI configuration stops the run
with exit code 2 instead of silently checking less. Every error names the file and the dotted key
(``pyproject.toml: tool.sonnx-check.waivers[2].reason: ...``) so it can be found without reading code.

Precedence: command-line flags, then the configuration file, then the defaults below. Rule selection is
layered like ruff's: each layer (file, then command line) may reset the selection with ``select``, then adds
``extend-select`` and removes ``ignore``; ``per-model-ignores`` and waivers come last. A selection that ends
up empty is an error: a run that checks nothing must not report every model as conforming.

Each model is checked with its own configuration (``Configurations``): the nearest ``pyproject.toml`` with a
``[tool.sonnx-check]`` table upward from the model, so that running from a parent folder keeps a project's
waivers; ``--config`` names one file for every model. What concerns the run as a whole (``format``,
``fail-on``, ``jobs``, ``respect-gitignore``) comes from ``--config`` or the file found from the working
directory.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sonnx_check import toml_limits
from sonnx_check.errors import UsageError, first_line
from sonnx_check.findings import Severity
from sonnx_check.globs import Glob, GlobError

FORMATS = ("text", "json", "sarif", "github", "junit", "gitlab")
OPT_LEVELS = ("default", "disable", "basic", "extended", "all")
FAIL_ON = ("error", "warning")
DEFAULT_MAX_ELEMENTS = 100_000_000
TABLE = "tool.sonnx-check"

TOP_KEYS = (
    "select",
    "extend-select",
    "ignore",
    "per-model-ignores",
    "fail-on",
    "format",
    "jobs",
    "compare",
    "waivers",
    "exclude",
    "respect-gitignore",
)
COMPARE_KEYS = (
    "enabled", "inputs", "seed", "ort-opt-level", "shapes", "max-elements", "timeout", "max-memory",
    "accuracy", "node-edges", "maxpool-nan",
)  # fmt: skip
DEFAULT_TIMEOUT = 300.0
# reference/nan_policy.READINGS, repeated here so that reading a configuration imports no kernel
MAXPOOL_NAN_READINGS = ("nan-as-negative-infinity", "nan-absorbing")
# compare.DEFAULT_MAX_MEMORY, repeated here so that reading a configuration imports no runtime
DEFAULT_MAX_MEMORY = 4 << 30
_SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20}
_SIZE_UNITS["g"] = 1 << 30
WAIVER_KEYS = ("rule", "models", "node", "op_type", "known", "reason")
KNOWN_WAIVER_RULE = "RUNTIME.divergence"  # the one rule a waiver may narrow to known departures (``known``)
_KNOWN_ID = re.compile(r"[A-Z][A-Z0-9]*(-[A-Z0-9]+)+")


class ConfigError(UsageError):
    """A configuration file that cannot be used: the message names the file and the key."""


# -- settings ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiver:
    """A justified exception: findings of ``rules`` in models matching ``models`` (and, when given, at the
    node named ``node`` or of type ``op_type``) stay in every report, marked waived, and do not fail."""

    rule: str  # as written, for messages
    rules: frozenset[str]  # canonical IDs the pattern expands to
    models: tuple[str, ...]
    reason: str
    node: tuple[str, ...] = ()
    op_type: tuple[str, ...] = ()
    # IDs of known onnxruntime departures (compare/known.py): the waiver then covers a RUNTIME.divergence only
    # when every differing element is explained by one of them
    known: tuple[str, ...] = ()
    origin: str = ""  # "pyproject.toml: tool.sonnx-check.waivers[1]"


@dataclass(frozen=True)
class CompareSettings:
    enabled: bool = False
    inputs: tuple[str, ...] = ("random",)
    node_edges: bool = True  # every node configuration also run alone on edge values
    maxpool_nan: str = "nan-as-negative-infinity"  # the MaxPool NaN reading (seed 003's, or "nan-absorbing")
    seed: int = 0
    ort_opt_level: str = "default"
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    max_elements: int = DEFAULT_MAX_ELEMENTS
    timeout: float | None = DEFAULT_TIMEOUT  # seconds onnxruntime may run per model; None: no limit
    max_memory: int | None = DEFAULT_MAX_MEMORY  # bytes one model's comparison may use; None: no limit
    accuracy: tuple[tuple[str, str], ...] = ()  # operator -> a bound tighter than its annex's


@dataclass(frozen=True)
class FixSettings:
    """``--fix``: where the fixed model goes (None: beside the original, as NAME.fixed.onnx)."""

    output: str | None = None


@dataclass(frozen=True)
class Settings:
    """Everything a run needs, resolved once. Plain data, so it crosses process boundaries (``--jobs``)."""

    selected: frozenset[str]
    root: str  # folder that relative model globs are matched against (the config file's folder, or cwd)
    config_file: str | None = None
    per_model_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    waivers: tuple[Waiver, ...] = ()
    fail_on: Severity = Severity.ERROR
    output_format: str = "text"
    jobs: int = 1
    compare: CompareSettings = field(default_factory=CompareSettings)
    fix: FixSettings | None = None
    exit_zero: bool = False
    statistics: bool = False
    show_traceback: bool = False
    exclude: tuple[str, ...] = ()  # model globs a folder scan skips (relative to ``root``)
    respect_gitignore: bool = True

    def rules_for(self, model_path: str) -> frozenset[str]:
        """The rules to run on one model: the selection minus the per-model ignores that match it."""
        ignored: set[str] = set()
        for pattern, rules in self.per_model_ignores:
            if model_matches(pattern, model_path, self.root):
                ignored |= rules
        return self.selected - ignored

    def waivers_for(self, model_path: str) -> tuple[Waiver, ...]:
        return tuple(
            w for w in self.waivers if any(model_matches(p, model_path, self.root) for p in w.models)
        )


@dataclass(frozen=True)
class CliOptions:
    """What the command line said; None (or empty) means "not given", so the configuration decides."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str | None = None
    output_format: str | None = None
    jobs: int | None = None
    compare: bool | None = None
    inputs: tuple[str, ...] = ()
    node_edges: bool | None = None
    maxpool_nan: str | None = None
    seed: int | None = None
    ort_opt_level: str | None = None
    shapes: tuple[str, ...] = ()
    max_elements: int | None = None
    fix: FixSettings | None = None
    exit_zero: bool = False
    statistics: bool = False
    show_traceback: bool = False
    timeout: float | None = None  # seconds; 0 means no limit (None: not given)
    max_memory: int | None = None  # bytes; 0 means no limit (None: not given)


# -- model globs ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _glob(pattern: str) -> Glob:
    """A model glob matched on the whole '/'-separated path (case-sensitive), never by backtracking."""
    return Glob(pattern, strict=False)


def _normalise(path: str) -> str:
    text = path.replace(os.sep, "/")
    while text.startswith("./"):
        text = text[2:]
    return re.sub("/+", "/", text)


def model_matches(pattern: str, model_path: str, root: str) -> bool:
    """Whether a model glob matches a model: against the path as given, against the path relative to
    ``root`` (the configuration file's folder), and, for a pattern without '/', against the file name."""
    glob = _glob(_normalise(pattern))
    candidates = [_normalise(model_path)]
    try:
        relative = os.path.relpath(os.path.abspath(model_path), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        relative = ""
    if relative and not relative.startswith(".."):
        candidates.append(_normalise(relative))
    if "/" not in pattern:
        candidates.append(os.path.basename(model_path))
    return any(glob.matches(c) for c in candidates)


# -- discovery and reading --------------------------------------------------------------------------------


def find_config(start: str | os.PathLike[str]) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.sonnx-check]`` table, from ``start`` upwards (a
    pyproject.toml without the table belongs to another tool and is passed over, as ruff does)."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and _read_table(path, _display_path(path, str(start))) is not None:
            return path
    return None


def _read_table(path: Path, shown: str) -> dict[str, Any] | None:
    """The file's ``[tool.sonnx-check]`` table, or None. The file may be hostile (it comes with the models
    of a pull request): its size and shape are bounded (toml_limits.py) before it is parsed, and whatever
    goes wrong while parsing is one configuration error naming the file."""
    raw = _read_bounded(path, shown)
    text = _decode(raw, shown)
    shape = toml_limits.problem(text)
    if shape is not None:
        raise ConfigError(f"{shown}: refused: {shape}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown}: invalid TOML: {exc}") from None
    except (RecursionError, MemoryError, ValueError) as exc:  # bounded above; never a crash regardless
        raise ConfigError(f"{shown}: invalid TOML: {type(exc).__name__}: {first_line(exc)}") from None
    tool = data.get("tool")
    if not isinstance(tool, dict) or "sonnx-check" not in tool:
        return None
    table = tool["sonnx-check"]
    if not isinstance(table, dict):
        raise ConfigError(f"{shown}: {TABLE} must be a table")
    return table


def _read_bounded(path: Path, shown: str) -> bytes:
    """At most MAX_BYTES of a regular file; never a FIFO or a device (opening one could block for ever)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    with open(descriptor, "rb", closefd=True) as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ConfigError(f"{shown}: not a regular file")
        try:
            raw = handle.read(toml_limits.MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > toml_limits.MAX_BYTES:
        raise ConfigError(f"{shown}: refused: larger than {toml_limits.MAX_BYTES >> 20} MiB")
    return raw


def _decode(raw: bytes, shown: str) -> str:
    """TOML is UTF-8. A byte-order mark is dropped (editors on Windows add one); a file saved as UTF-16
    (PowerShell's default redirection) is one error line that says what to do, not a traceback."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{shown}: is UTF-16 text; TOML files must be UTF-8 (save it again as UTF-8)")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{shown}: is not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x}); TOML files must be UTF-8"
        ) from None


def load_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``[tool.sonnx-check]`` table of a file named by ``--config`` (which must have one)."""
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"--config {path}: no such file")
    if not file.is_file():
        raise ConfigError(f"--config {path}: not a file")
    table = _read_table(file, str(path))
    if table is None:
        raise ConfigError(f"{path}: no [{TABLE}] table")
    return table


# -- validation -------------------------------------------------------------------------------------------


class _Reader:
    """Type checks that name the file and the dotted key of what is wrong."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.file}: {key}: {problem}")

    def unknown_keys(self, table: Mapping[str, Any], allowed: Sequence[str], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(allowed)})"
                raise self.fail(f"{prefix}.{key}", f"unknown key{hint}")

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "expected a list of strings")
        return tuple(value)

    def globs(self, patterns: Iterable[str], key: str) -> tuple[str, ...]:
        """Model globs, each compiled once here so that a broken one is this key's error, not a crash or a
        silently empty match later."""
        for pattern in patterns:
            try:
                Glob(_normalise(pattern))
            except GlobError as exc:
                raise self.fail(key, f"invalid glob {pattern!r}: {exc}") from None
        return tuple(patterns)

    def string_or_strings(self, value: Any, key: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        return self.strings(value, key)

    def choice(self, value: Any, key: str, choices: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, value: Any, key: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"expected an integer >= {minimum}, got {value!r}")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def rules(self, patterns: Iterable[str], key: str) -> frozenset[str]:
        from sonnx_check.catalogue import expand

        try:
            return frozenset(expand(list(patterns)))
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None


@dataclass(frozen=True)
class FileConfig:
    """A validated ``[tool.sonnx-check]`` table."""

    path: str  # as shown in messages and reports
    folder: str = ""  # absolute folder of the file: relative model globs and dataset paths start here
    select: frozenset[str] | None = None
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    per_model_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    fail_on: str | None = None
    output_format: str | None = None
    jobs: int | None = None
    compare: dict[str, Any] = field(default_factory=dict)
    waivers: tuple[Waiver, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None


def parse_table(table: Mapping[str, Any], file: str, folder_of: str | None = None) -> FileConfig:
    """Validate every key; the first problem raises a ConfigError naming it."""
    r = _Reader(file)
    r.unknown_keys(table, TOP_KEYS, TABLE)
    key = f"{TABLE}."
    folder = str(Path(folder_of or Path(file).parent).resolve())
    config = FileConfig(path=file, folder=folder)
    if "select" in table:
        config = replace(config, select=r.rules(r.strings(table["select"], key + "select"), key + "select"))
    if "extend-select" in table:
        k = key + "extend-select"
        config = replace(config, extend_select=r.rules(r.strings(table["extend-select"], k), k))
    if "ignore" in table:
        config = replace(config, ignore=r.rules(r.strings(table["ignore"], key + "ignore"), key + "ignore"))
    if "per-model-ignores" in table:
        config = replace(config, per_model_ignores=_per_model_ignores(r, table["per-model-ignores"]))
    if "fail-on" in table:
        config = replace(config, fail_on=r.choice(table["fail-on"], key + "fail-on", FAIL_ON))
    if "format" in table:
        config = replace(config, output_format=r.choice(table["format"], key + "format", FORMATS))
    if "jobs" in table:
        config = replace(config, jobs=r.integer(table["jobs"], key + "jobs", 0))
    if "compare" in table:
        config = replace(config, compare=_compare_table(r, table["compare"], Path(folder)))
    if "waivers" in table:
        config = replace(config, waivers=_waivers(r, table["waivers"]))
    if "exclude" in table:
        exclude = r.strings(table["exclude"], key + "exclude")
        config = replace(config, exclude=r.globs(exclude, key + "exclude"))
    if "respect-gitignore" in table:
        k = key + "respect-gitignore"
        config = replace(config, respect_gitignore=r.boolean(table["respect-gitignore"], k))
    return config


def _per_model_ignores(r: _Reader, value: Any) -> tuple[tuple[str, frozenset[str]], ...]:
    key = f"{TABLE}.per-model-ignores"
    if not isinstance(value, dict):
        raise r.fail(key, 'expected a table of model glob = [rules], e.g. "legacy/**" = ["GR4"]')
    entries = []
    for pattern, rules in value.items():
        entry_key = f'{key}."{pattern}"'
        r.globs([pattern], entry_key)
        entries.append((pattern, r.rules(r.strings(rules, entry_key), entry_key)))
    return tuple(entries)


def _compare_table(r: _Reader, value: Any, base: Path) -> dict[str, Any]:
    key = f"{TABLE}.compare"
    if not isinstance(value, dict):
        raise r.fail(key, "expected a table ([tool.sonnx-check.compare])")
    r.unknown_keys(value, COMPARE_KEYS, key)
    out: dict[str, Any] = {}
    if "enabled" in value:
        out["enabled"] = r.boolean(value["enabled"], f"{key}.enabled")
    if "inputs" in value:
        inputs = r.strings(value["inputs"], f"{key}.inputs")
        if not inputs:
            raise r.fail(f"{key}.inputs", "must not be empty (random, edge, or a path)")
        # A dataset path in the configuration is relative to the configuration file, not to the cwd.
        out["inputs"] = tuple(
            i if i in ("random", "edge") or os.path.isabs(i) else str(base / i) for i in inputs
        )
    if "node-edges" in value:
        out["node_edges"] = r.boolean(value["node-edges"], f"{key}.node-edges")
    if "maxpool-nan" in value:
        out["maxpool_nan"] = r.choice(value["maxpool-nan"], f"{key}.maxpool-nan", MAXPOOL_NAN_READINGS)
    if "seed" in value:
        out["seed"] = r.integer(value["seed"], f"{key}.seed", 0)
    if "ort-opt-level" in value:
        out["ort_opt_level"] = r.choice(value["ort-opt-level"], f"{key}.ort-opt-level", OPT_LEVELS)
    if "max-elements" in value:
        out["max_elements"] = r.integer(value["max-elements"], f"{key}.max-elements", 1)
    if "timeout" in value:
        out["timeout"] = _timeout(r, value["timeout"], f"{key}.timeout")
    if "max-memory" in value:
        try:
            out["max_memory"] = parse_size(value["max-memory"]) or None
        except ValueError as exc:
            raise r.fail(f"{key}.max-memory", str(exc)) from None
    if "accuracy" in value:
        out["accuracy"] = _accuracy_table(r, value["accuracy"], f"{key}.accuracy")
    if "shapes" in value:
        shapes = value["shapes"]
        if not isinstance(shapes, dict):
            raise r.fail(f"{key}.shapes", "expected a table of input name = [dims]")
        parsed = []
        for name, dims in shapes.items():
            dims_key = f'{key}.shapes."{name}"'
            if not isinstance(dims, list) or not dims:
                raise r.fail(dims_key, "expected a non-empty list of integers >= 0")
            parsed.append((name, tuple(r.integer(d, dims_key, 0) for d in dims)))
        out["shapes"] = tuple(parsed)
    return out


def parse_size(value: Any) -> int:
    """A memory size: bytes as an integer, or text such as "512MiB", "4 GiB", "none" (0: no limit)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 4GiB or 512MiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected a size >= 0, got {value}")
        return value
    text = str(value).strip().lower()
    if text == "none":
        return 0
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text)
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"expected a size such as 4GiB or 512MiB (units B, KiB, MiB, GiB), got {value!r}")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def _accuracy_table(r: _Reader, value: Any, key: str) -> tuple[tuple[str, str], ...]:
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


def _timeout(r: _Reader, value: Any, key: str) -> float | None:
    """Seconds (a number >= 0), where 0 and "none" mean no limit."""
    if isinstance(value, str) and value.lower() == "none":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise r.fail(key, f'expected a number of seconds >= 0, or "none", got {value!r}')
    return float(value) or None


def _waivers(r: _Reader, value: Any) -> tuple[Waiver, ...]:
    key = f"{TABLE}.waivers"
    if not isinstance(value, list) or not all(isinstance(w, dict) for w in value):
        raise r.fail(key, "expected an array of tables ([[tool.sonnx-check.waivers]])")
    waivers = []
    for number, raw in enumerate(value, start=1):
        wkey = f"{key}[{number}]"
        r.unknown_keys(raw, WAIVER_KEYS, wkey)
        reason = raw.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise r.fail(f"{wkey}.reason", "required: every waiver states why the finding is acceptable")
        if "rule" not in raw:
            raise r.fail(f"{wkey}.rule", "required: the rule ID (or glob) the waiver covers")
        if not isinstance(raw["rule"], str):
            raise r.fail(f"{wkey}.rule", f"expected a string, got {raw['rule']!r}")
        if "models" not in raw:
            raise r.fail(f"{wkey}.models", 'required: a model glob ("**" for every model)')
        models = r.globs(r.string_or_strings(raw["models"], f"{wkey}.models"), f"{wkey}.models")
        if not models:
            raise r.fail(f"{wkey}.models", "must not be empty")
        rules = r.rules([raw["rule"]], f"{wkey}.rule")
        known: tuple[str, ...] = ()
        if "known" in raw:
            known = r.string_or_strings(raw["known"], f"{wkey}.known")
            if rules != {KNOWN_WAIVER_RULE}:
                raise r.fail(
                    f"{wkey}.known",
                    f'names known onnxruntime departures: only with rule = "{KNOWN_WAIVER_RULE}"',
                )
            bad = [k for k in known if not _KNOWN_ID.fullmatch(k)]
            if not known or bad:
                got = repr(bad[0]) if bad else "an empty list"
                raise r.fail(
                    f"{wkey}.known", f"expected the ID of a known departure (as ORT-MAXPOOL-NAN), got {got}"
                )
        waivers.append(
            Waiver(
                rule=raw["rule"],
                rules=rules,
                models=models,
                reason=" ".join(reason.split()),
                node=r.string_or_strings(raw["node"], f"{wkey}.node") if "node" in raw else (),
                op_type=r.string_or_strings(raw["op_type"], f"{wkey}.op_type") if "op_type" in raw else (),
                known=known,
                origin=f"{r.file}: {wkey}",
            )
        )
    return tuple(waivers)


# -- resolution -------------------------------------------------------------------------------------------


def _cli_rules(patterns: Sequence[str], option: str) -> frozenset[str]:
    from sonnx_check.catalogue import expand

    parts = [p.strip() for value in patterns for p in value.split(",") if p.strip()]
    try:
        return frozenset(expand(parts))
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _cli_shapes(values: Sequence[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
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


def load(config: str | None, isolated: bool, cwd: str | None = None) -> FileConfig | None:
    """The configuration in force: ``--config``, else the nearest pyproject.toml, else none."""
    if isolated:
        if config is not None:
            raise UsageError("--config and --isolated exclude each other")
        return None
    if config is not None:
        return parse_table(load_table(config), config)
    found = find_config(cwd or os.getcwd())
    if found is None:
        return None
    shown = _display_path(found, cwd or os.getcwd())
    table = _read_table(found, shown)
    assert table is not None  # find_config only returns files with the table
    return parse_table(table, shown, str(found.parent))


def _display_path(path: Path, cwd: str) -> str:
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return str(path)
    return relative if len(relative) < len(str(path)) else str(path)


def _selection(cli: CliOptions, file: FileConfig | None) -> frozenset[str]:
    """The rules the layers select; an empty selection is a usage error naming the layer that emptied it."""
    from sonnx_check.catalogue import catalogue

    selected: frozenset[str] = frozenset(catalogue())
    if file is not None:
        if file.select is not None:
            selected = file.select
        selected = (selected | file.extend_select) - file.ignore
        if not selected and not cli.select:
            key = "select" if file.select is not None and not file.select | file.extend_select else "ignore"
            raise ConfigError(
                f"{file.path}: {TABLE}.{key}: selects no rule, so nothing would be checked "
                "(see sonnx-check --list-rules)"
            )
    if cli.select:
        selected = _cli_rules(cli.select, "--select")
        if not selected:
            raise UsageError('--select: selects no rule, so nothing would be checked (e.g. --select "GR*")')
    selected = (selected | _cli_rules(cli.extend_select, "--extend-select")) - _cli_rules(
        cli.ignore, "--ignore"
    )
    if not selected:
        raise UsageError("--ignore: removes every selected rule, so nothing would be checked")
    return selected


def resolve(cli: CliOptions, file: FileConfig | None, cwd: str | None = None) -> Settings:
    """Merge the configuration file and the command line (command line wins)."""
    selected = _selection(cli, file)
    file_compare = file.compare if file is not None else {}
    shapes = dict(file_compare.get("shapes", ()))
    shapes.update(_cli_shapes(cli.shapes))
    if cli.timeout is not None:
        timeout = cli.timeout or None
    else:
        timeout = file_compare.get("timeout", DEFAULT_TIMEOUT)
    compare = CompareSettings(
        enabled=cli.compare if cli.compare is not None else file_compare.get("enabled", False),
        inputs=tuple(cli.inputs) or file_compare.get("inputs", CompareSettings.inputs),
        node_edges=cli.node_edges
        if cli.node_edges is not None
        else file_compare.get("node_edges", CompareSettings.node_edges),
        maxpool_nan=cli.maxpool_nan or file_compare.get("maxpool_nan", CompareSettings.maxpool_nan),
        seed=cli.seed if cli.seed is not None else file_compare.get("seed", 0),
        ort_opt_level=cli.ort_opt_level or file_compare.get("ort_opt_level", "default"),
        shapes=tuple(shapes.items()),
        max_elements=cli.max_elements or file_compare.get("max_elements", DEFAULT_MAX_ELEMENTS),
        timeout=timeout,
        max_memory=(cli.max_memory or None)
        if cli.max_memory is not None
        else file_compare.get("max_memory", DEFAULT_MAX_MEMORY),
        accuracy=file_compare.get("accuracy", ()),
    )
    fail_on = cli.fail_on or (file.fail_on if file else None) or "error"
    jobs = cli.jobs if cli.jobs is not None else (file.jobs if file and file.jobs is not None else 1)
    root = file.folder if file is not None else os.path.abspath(cwd or os.getcwd())
    gitignore = file.respect_gitignore if file is not None and file.respect_gitignore is not None else True
    return Settings(
        selected=selected,
        root=root,
        config_file=file.path if file is not None else None,
        per_model_ignores=file.per_model_ignores if file is not None else (),
        waivers=file.waivers if file is not None else (),
        fail_on=Severity(fail_on),
        output_format=cli.output_format or (file.output_format if file else None) or "text",
        jobs=jobs or (os.cpu_count() or 1),
        compare=compare,
        fix=cli.fix,
        exit_zero=cli.exit_zero,
        statistics=cli.statistics,
        show_traceback=cli.show_traceback,
        exclude=file.exclude if file is not None else (),
        respect_gitignore=gitignore,
    )


# -- one configuration per model --------------------------------------------------------------------------


class Configurations:
    """The configuration of each model and of the run.

    ``--config FILE`` applies to every model, ``--isolated`` to none. Otherwise a model gets the nearest
    ``pyproject.toml`` with a ``[tool.sonnx-check]`` table from its own folder upwards, else the one found
    from the working directory (``run_file``). Every file is read and validated once; each distinct file
    gives one Settings, whose run-wide fields (format, fail-on, jobs, .gitignore) are the run's."""

    def __init__(
        self, cli: CliOptions, config: str | None = None, isolated: bool = False, cwd: str | None = None
    ) -> None:
        self.cli = cli
        self.cwd = cwd or os.getcwd()
        self.fixed = config is not None or isolated  # one file (or none) for every model
        self.run_file = load(config, isolated, self.cwd)
        self.run = resolve(cli, self.run_file, self.cwd)
        self._found: dict[str, FileConfig | None] = {}  # folder -> nearest file with the table
        self._files: dict[str, FileConfig] = {}  # absolute path -> the file, parsed once
        self._read: set[str] = set()  # every pyproject.toml looked into, with the table or without
        if self.run_file is not None:
            self._files[self._key(self.run_file)] = self.run_file
            self._read.add(self._key(self.run_file))
        self._settings: dict[str | None, Settings] = {}

    @staticmethod
    def _key(file: FileConfig) -> str:
        return str((Path(file.folder) / os.path.basename(file.path)).resolve())

    def file_for(self, model_path: str) -> FileConfig | None:
        if self.fixed:
            return self.run_file
        found = self._nearest(os.path.dirname(os.path.abspath(model_path)))
        return found if found is not None else self.run_file

    def settings_for(self, model_path: str) -> Settings:
        file = self.file_for(model_path)
        key = None if file is None else self._key(file)
        if key not in self._settings:
            own = resolve(self.cli, file, self.cwd)
            self._settings[key] = replace(
                own,
                output_format=self.run.output_format,
                fail_on=self.run.fail_on,
                jobs=self.run.jobs,
                respect_gitignore=self.run.respect_gitignore,
            )
        return self._settings[key]

    def read_files(self) -> list[str]:
        """The absolute path of every configuration file this run read (--output refuses to write over
        them): the files in force, and the pyproject.toml files looked into on the way up."""
        return sorted(self._read)

    def excluded(self, path: str, is_dir: bool) -> str | None:
        """Why a folder scan skips ``path``: an ``exclude`` pattern of the configuration that governs it."""
        settings = self.settings_for(path)
        for pattern in settings.exclude:
            if model_matches(pattern.rstrip("/"), path, settings.root):
                return f'excluded by {settings.config_file}: exclude "{pattern}"'
        return None

    def _nearest(self, folder: str) -> FileConfig | None:
        visited = []
        current = folder
        found: FileConfig | None = None
        while True:  # iterative: a model may sit a thousand folders deep
            if current in self._found:
                found = self._found[current]
                break
            visited.append(current)
            candidate = Path(current) / "pyproject.toml"
            if candidate.is_file():
                found = self._parse(candidate)
                if found is not None:
                    break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in visited:
            self._found[seen] = found
        return found

    def _parse(self, candidate: Path) -> FileConfig | None:
        key = str(candidate.resolve())
        self._read.add(key)
        if key not in self._files:
            shown = _display_path(candidate, self.cwd)
            table = _read_table(candidate, shown)
            if table is None:
                return None
            self._files[key] = parse_table(table, shown, str(candidate.parent))
        return self._files[key]
