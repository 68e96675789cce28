"""Merging the configuration files and the command line into one Settings per model.

Precedence: command-line flags, then the configuration file, then the defaults (``settings.py`` for the
comparison's). Rule selection is layered like ruff's: each layer (file, then command line) may reset the
selection with ``select``, then adds ``extend-select`` and removes ``ignore``; ``per-model-ignores`` and
waivers come last. A selection that ends up empty is an error: a run that checks nothing must not report
every model as conforming.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sonnx_check import settings as declared
from sonnx_check.config.files import display_path, find_config, load_table, read_table
from sonnx_check.config.model_globs import model_matches
from sonnx_check.config.reader import TABLE, ConfigError
from sonnx_check.config.resolved import FixSettings, Settings
from sonnx_check.config.table import FileConfig, parse_table
from sonnx_check.errors import UsageError
from sonnx_check.findings import Severity
from sonnx_check.sanitise import display


@dataclass(frozen=True)
class CliOptions:
    """What the command line said; None (or empty) means "not given", so the configuration decides.

    The run's own options, then one field per declared comparison option that has a flag (settings.py), named
    by its ``parameter`` and holding click's value (``from_cli`` makes it the settings value). Written out so
    that mypy sees the fields; ``_check_fields`` refuses, at import, a comparison field that is not a flagged
    Option in OPTIONS order, or a default other than the Option's ``cli_default``."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str | None = None
    output_format: str | None = None
    jobs: int | None = None
    fix: FixSettings | None = None  # None without --fix
    exit_zero: bool = False
    statistics: bool = False
    show_traceback: bool = False
    # the comparison's flags (settings.OPTIONS with a flag)
    compare: bool | None = None
    inputs: tuple[str, ...] = ()
    node_edges: bool | None = None
    node_edges_extent: str | None = None
    reading: tuple[tuple[str, str], ...] = ()  # (OP.KEY, VALUE) as given, older flags folded in
    seed: int | None = None
    ort_opt_level: str | None = None
    shapes: tuple[str, ...] = ()  # NAME=D1,D2,... as given
    max_elements: int | None = None
    max_memory: int | None = None  # bytes; 0: no limit
    timeout: float | None = None  # seconds; 0: no limit
    ort_provider: tuple[str, ...] = ()  # each may list several, comma-separated
    runtime: str | None = None
    runtime_option: tuple[tuple[str, str], ...] = ()  # (KEY, VALUE) as given
    runtime_command: str | None = None
    outputs: str | None = None
    export_inputs: str | None = None
    export_suite: str | None = None


_RUN_FIELDS = 10  # CliOptions' fields before the comparison's


def _check_fields() -> None:
    compared = dataclasses.fields(CliOptions)[_RUN_FIELDS:]
    flagged = [o for o in declared.OPTIONS if o.flag]
    if [(f.name, f.default) for f in compared] != [(o.parameter, o.cli_default) for o in flagged]:
        raise TypeError(
            "CliOptions' comparison fields are not the declared options with a flag, in OPTIONS order"
        )


_check_fields()


def _cli_rules(patterns: Sequence[str], option: str) -> frozenset[str]:
    from sonnx_check.catalogue import expand

    parts = [p.strip() for value in patterns for p in value.split(",") if p.strip()]
    try:
        return frozenset(expand(parts))
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None


def load(config: str | None, isolated: bool, cwd: str | None = None) -> FileConfig | None:
    """The configuration in force: ``--config``, else the nearest pyproject.toml, else none."""
    if isolated:
        if config is not None:
            raise UsageError("--config and --isolated exclude each other")
        return None
    if config is not None:
        return parse_table(load_table(config), config, discovered=False)  # named by the user: trusted
    found = find_config(cwd or os.getcwd())
    if found is None:
        return None
    shown = display_path(found, cwd or os.getcwd())
    table = read_table(found, shown)
    assert table is not None  # find_config only returns files with the table
    return parse_table(table, shown, str(found.parent))


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
    if file is not None:
        for pattern, rules in file.per_model_ignores:
            if not selected - rules:
                raise ConfigError(_emptied(file.path, pattern, "the models it matches"))
    compare = declared.resolve(cli, file.compare if file is not None else {})
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


def _emptied(file: str, pattern: str, what: str) -> str:
    if not pattern.startswith('"'):
        pattern = f'"{display(pattern)}"'
    return (
        f"{file}: {TABLE}.per-model-ignores.{pattern}: removes every selected rule from {what}, so nothing "
        "would be checked there (to skip models, use exclude)"
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
        """The model's settings. A model the per-model ignores leave with no rule is this configuration's
        error, as an empty selection is: a model checked against nothing must not be reported conforming."""
        settings = self._settings_of(model_path)
        if not settings.rules_for(model_path):
            ignores = [
                p for p, _ in settings.per_model_ignores if model_matches(p, model_path, settings.root)
            ]
            shown = " + ".join(f'"{display(p)}"' for p in ignores[:3]) + (
                " + ..." if len(ignores) > 3 else ""
            )
            raise ConfigError(_emptied(settings.config_file or "", shown, f"model {display(model_path)}"))
        return settings

    def _settings_of(self, model_path: str) -> Settings:
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
        settings = self._settings_of(path)
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
            shown = display_path(candidate, self.cwd)
            table = read_table(candidate, shown)
            if table is None:
                return None
            self._files[key] = parse_table(table, shown, str(candidate.parent))
        return self._files[key]
