"""Each comparison option is declared once (sonnx_check/settings.py) and everything else derives from it:
the click option, the configuration key, the CompareSettings field, the evidence record's field and the
CompareOptions keyword. These tests are generated from the declaration, so a new option is covered by
adding it; and an option added to the command without a declaration fails here."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import click
import pytest

from sonnx_check import settings as declared
from sonnx_check import settings_handover
from sonnx_check.cli import SECTIONS, main
from sonnx_check.config import COMPARE_KEYS, CliOptions, ConfigError, parse_table
from sonnx_check.evidence.comparison import settings_json

FLAGGED = [o for o in declared.OPTIONS if o.flag]
CONFIGURED = [o for o in declared.OPTIONS if o.config_key is not None]
REPORTED = [o for o in declared.OPTIONS if o.report_field is not None]


def _click_options() -> dict[str, click.Option]:
    return {p.name: p for p in main.params if isinstance(p, click.Option) and p.name}


@pytest.mark.parametrize("option", FLAGGED, ids=lambda o: o.name)
def test_each_declared_flag_is_a_click_option_of_the_command(option: declared.Option) -> None:
    param = _click_options().get(option.parameter)
    assert param is not None, f"{option.flag} is declared but not an option of sonnx-check"
    assert set(option.flag.split("/")) == set(param.opts) | set(param.secondary_opts)
    assert param.help == option.shown_help
    assert param.multiple == option.multiple
    assert option.parameter in [f.name for f in dataclasses.fields(CliOptions)]


@pytest.mark.parametrize("option", CONFIGURED, ids=lambda o: o.name)
def test_each_declared_key_is_read_from_the_configuration(option: declared.Option, tmp_path) -> None:
    assert option.config_key in COMPARE_KEYS
    # A value no reader accepts: the error names the key, so the key is known and validated.
    with pytest.raises(ConfigError) as caught:
        parse_table({"compare": {option.config_key: [[]]}}, "pyproject.toml", str(tmp_path))
    message = str(caught.value)
    assert f"tool.sonnx-check.compare.{option.config_key}" in message
    assert "unknown key" not in message


@pytest.mark.parametrize("option", REPORTED, ids=lambda o: o.name)
def test_each_declared_option_is_a_field_of_the_evidence_record(option: declared.Option) -> None:
    recorded = settings_json(declared.CompareSettings())
    assert option.report_field in recorded
    assert recorded[option.report_field] == option.to_json(option.default)


def test_the_evidence_schema_states_exactly_the_declared_fields() -> None:
    schema = json.loads(
        resources.files("sonnx_check").joinpath("schemas/evidence.schema.json").read_text(encoding="utf-8")
    )
    properties = schema["$defs"]["compare_settings"]
    fields = [o.report_field for o in REPORTED]
    fields += [f for o in declared.OPTIONS if o.report_spread for f in o.report_spread(o.default)]
    assert set(properties["properties"]) == set(fields), "add the option to compare_settings in the schema"
    assert set(properties["required"]) == set(fields)


def test_the_configuration_accepts_no_undeclared_compare_key() -> None:
    assert set(COMPARE_KEYS) == {o.config_key for o in CONFIGURED}


def _undeclared(command: click.Command) -> list[str]:
    """Options of the command neither declared in settings.py nor listed in a run section of --help."""
    run_options = {name for title, names in SECTIONS if title != declared.COMPARE_SECTION for name in names}
    declared_names = set(declared.flag_parameters())  # the options, and the readings' older flags
    options = [p.name for p in command.params if isinstance(p, click.Option) and p.name]
    return [name for name in options if name not in run_options | declared_names]


def test_every_click_option_is_declared_or_a_run_option() -> None:
    """The comparison's options exist only in settings.py: its section of --help is the declaration."""
    assert _undeclared(main) == []
    assert set(dict(SECTIONS)[declared.COMPARE_SECTION]) == set(declared.flag_parameters())
    assert {o.parameter for o in FLAGGED} < set(declared.flag_parameters())


def test_a_comparison_option_written_in_the_command_is_caught() -> None:
    """The check above fails on the command with one option added the old way (a click decorator)."""
    command = click.Command("sonnx-check", params=[*main.params, click.Option(["--ort-session-option"])])
    assert _undeclared(command) == ["ort_session_option"]


def test_compare_options_take_every_declared_keyword() -> None:
    from sonnx_check.compare import CompareOptions

    arguments = settings_handover.compare_arguments(declared.CompareSettings())
    assert set(arguments) <= {f.name for f in dataclasses.fields(CompareOptions)}
    CompareOptions(**arguments)  # the defaults are valid comparison options


def test_settings_fields_are_the_declared_options_with_their_defaults() -> None:
    defaults = declared.CompareSettings()
    assert [f.name for f in dataclasses.fields(defaults)] == [o.name for o in declared.OPTIONS]
    for option in declared.OPTIONS:
        assert getattr(defaults, option.name) == option.default


CHECKED = [o for o in declared.OPTIONS if o.check is not None and o.compare_keyword is not None]
# the default runtime's own flags, which reach the comparison as its runtime options
AS_RUNTIME_OPTIONS = [o for o in declared.OPTIONS if o.runtime_option is not None]


@pytest.mark.parametrize("option", CHECKED, ids=lambda o: o.name)
def test_compare_options_apply_each_declared_check(option: declared.Option) -> None:
    """CompareOptions (the Python API) refuses what the declaration's check refuses, with its message."""
    from sonnx_check.compare import CompareOptions
    from sonnx_check.errors import UsageError

    assert option.check(option.default) is None
    bad = {"ort_opt_level": "max", "max_elements": 0, "max_memory": 1000}
    value = bad.get(option.name, 0)
    message = option.check(value)
    assert message is not None and message.startswith(option.flag.split("/")[0])
    with pytest.raises(UsageError) as caught:
        CompareOptions(**{option.compare_keyword: value})
    assert str(caught.value) == message


@pytest.mark.parametrize("option", AS_RUNTIME_OPTIONS, ids=lambda o: o.name)
def test_a_flag_of_the_default_runtime_is_checked_as_its_runtime_option(option: declared.Option) -> None:
    """What the flag's declared check refuses, the comparison refuses as the runtime option it becomes
    (the Python API hands runtime options directly)."""
    from sonnx_check.compare import CompareOptions
    from sonnx_check.errors import UsageError

    bad = {"ort_opt_level": "max", "ort_providers": ()}[option.name]
    assert option.check is not None and option.check(bad) is not None
    CompareOptions(runtime_options=((option.runtime_option, option.to_runtime_option(option.default)),))
    with pytest.raises(UsageError, match=f"--runtime-option {option.runtime_option}="):
        CompareOptions(runtime_options=((option.runtime_option, option.to_runtime_option(bad)),))


def test_the_declared_optimisation_levels_are_the_runtimes() -> None:
    from sonnx_check.compare.runtimes.onnxruntime import session

    assert tuple(session.OPT_LEVELS) == declared.OPT_LEVELS
