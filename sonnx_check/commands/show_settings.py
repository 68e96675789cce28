"""``--show-settings``: the settings a model would be checked with, and where each came from (the default,
the configuration file, the command line), as ``ruff check --show-settings`` prints them; nothing is checked.

One block per path given (the nearest configuration of each model applies), or one for the working directory.
A value is printed as TOML writes it (``fail-on = "error"``), under the key the configuration file uses, so a
line can be copied into ``[tool.sonnx-check]``. Values read from a configuration are untrusted: every line is
display-sanitised and guarded (no line may start a GitHub workflow command).
"""

from __future__ import annotations

import json
from typing import Any

import click

from sonnx_check import sanitise
from sonnx_check import settings as declared
from sonnx_check.config import Configurations


def show_settings(configs: Configurations, paths: tuple[str, ...]) -> None:
    blocks = [_block(configs, path) for path in paths] if paths else [_block(configs, None)]
    text = "\n".join(blocks)
    click.echo(sanitise.guard_lines("\n".join(sanitise.display(line, 4000) for line in text.splitlines())))


def _block(configs: Configurations, path: str | None) -> str:
    cli: Any = configs.cli
    file = configs.file_for(path) if path is not None else configs.run_file
    settings = configs.settings_for(path) if path is not None else configs.run
    where = f"file {file.path}" if file is not None else ""
    rows: list[tuple[str, Any, str]] = []

    def source(on_cli: bool, in_file: bool) -> str:
        return "command line" if on_cli else (where if in_file else "default")

    def given(value: Any) -> bool:
        return value is not None and value != () and value is not False

    chosen = _selection_source(cli, file, where)
    every = list(_catalogue())
    if 2 * len(settings.selected) > len(every):  # most rules: written as ALL minus the rest
        rows.append(("select", ["ALL"], chosen))
        rows.append(("ignore", [rule for rule in every if rule not in settings.selected], chosen))
    else:
        rows.append(("select", [rule for rule in every if rule in settings.selected], chosen))
    rows.append(
        (
            "per-model-ignores",
            {pattern: sorted(rules) for pattern, rules in settings.per_model_ignores},
            source(False, bool(settings.per_model_ignores)),
        )
    )
    rows.append(
        ("waivers", [w.origin or w.rule for w in settings.waivers], source(False, bool(settings.waivers)))
    )
    rows.append(("exclude", list(settings.exclude), source(False, bool(settings.exclude))))
    # the run-wide settings are the run's configuration's (the working directory's), whatever the model's
    run = configs.run_file
    run_where = f"file {run.path}" if run is not None else ""

    def run_source(on_cli: bool, in_file: bool) -> str:
        return "command line" if on_cli else (run_where if in_file else "default")

    rows.append(
        ("fail-on", settings.fail_on.value, run_source(given(cli.fail_on), bool(run and run.fail_on)))
    )
    in_run = bool(run and run.output_format)
    rows.append(("format", settings.output_format, run_source(given(cli.output_format), in_run)))
    rows.append(("jobs", settings.jobs, run_source(given(cli.jobs), bool(run and run.jobs is not None))))
    in_run = bool(run and run.respect_gitignore is not None)
    rows.append(("respect-gitignore", settings.respect_gitignore, run_source(False, in_run)))
    configured = file.compare if file is not None else {}
    for option in declared.OPTIONS:
        on_cli = bool(option.flag) and option.given(getattr(cli, option.parameter, option.cli_default))
        if option.config_key is None:  # a command-line flag only (--export-suite ...)
            key = f"# {option.flag.split('/')[0]}"
        else:
            key = f"compare.{option.config_key}"
        value = option.to_json(getattr(settings.compare, option.name))
        rows.append((key, value, source(on_cli, option.name in configured)))
    head = f"settings for {path}" if path is not None else "settings for the working directory"
    config = file.path if file is not None else "none (defaults)"
    lines = [f"# {head}; configuration: {config}"]
    width = min(COMMENT_COLUMN, max(len(f"{key} = {_toml(value)}") for key, value, _ in rows))
    for key, value, origin in rows:
        lines.append(f"{key} = {_toml(value)}".ljust(width) + f"  # {origin}")
    return "\n".join(lines)


COMMENT_COLUMN = 48  # where the sources line up (a longer line keeps two spaces before its own)


def _selection_source(cli: Any, file: Any, where: str) -> str:
    layers = []
    if file is not None and (file.select is not None or file.extend_select or file.ignore):
        layers.append(where)
    if cli.select or cli.extend_select or cli.ignore:
        layers.append("command line")
    return " then ".join(layers) if layers else "default"


def _catalogue() -> dict[str, object]:
    from sonnx_check.catalogue import catalogue

    return catalogue()  # type: ignore[return-value]


def _toml(value: Any) -> str:
    """A value as TOML writes it (JSON's strings, numbers and arrays are TOML's; None has no TOML form)."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


__all__ = ["show_settings"]
