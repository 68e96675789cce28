"""The settings dataclasses are written out with a type per field, so that mypy checks every
``settings.compare.<name>`` read; the declaration (settings.OPTIONS) stays the one place an option's default
is written. These tests hold the two together: one field per declared option, in order, with the declared
default, a real type (not Any), and values of that type both by default and as the command line gives them."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import pytest

from sonnx_check import settings as declared
from sonnx_check.config import CliOptions, resolution, resolve
from sonnx_check.settings import CompareSettings


def _conforms(value: object, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` (the forms the settings use: unions, tuples, scalars)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_conforms(value, arm) for arm in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(_conforms(v, a) for v, a in zip(value, args, strict=True))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(resolution) | vars(declared))


COMPARE_HINTS = _hints(CompareSettings)
CLI_HINTS = _hints(CliOptions)
FLAGGED = [o for o in declared.OPTIONS if o.flag]


def test_compare_settings_has_one_field_per_declared_option_in_order_with_its_default() -> None:
    fields = dataclasses.fields(CompareSettings)
    assert [f.name for f in fields] == [o.name for o in declared.OPTIONS]
    assert [f.default for f in fields] == [o.default for o in declared.OPTIONS]


@pytest.mark.parametrize("option", declared.OPTIONS, ids=lambda o: o.name)
def test_each_compare_field_has_a_type_that_its_default_is_of(option: declared.Option) -> None:
    hint = COMPARE_HINTS[option.name]
    assert hint is not Any, f"CompareSettings.{option.name} is typed Any: mypy cannot check its readers"
    assert _conforms(option.default, hint), f"{option.name}: default {option.default!r} is not {hint}"


def test_cli_options_has_one_field_per_flagged_option_in_order_after_the_runs_own() -> None:
    names = [f.name for f in dataclasses.fields(CliOptions)]
    assert names[-len(FLAGGED) :] == [o.parameter for o in FLAGGED]
    assert all(CLI_HINTS[name] is not Any for name in names)


# What click hands over for each flag (a parsed, given value), by parameter.
GIVEN = {
    "compare": True,
    "inputs": ("random", "edge", "data.npz"),
    "node_edges": False,
    "node_edges_extent": declared.NODE_EDGES_EXTENTS[1],
    "reading": (("MaxPool.nan", "nan-absorbing"),),
    "seed": 7,
    "ort_opt_level": "basic",
    "shapes": ("x=1,3,8,8", "y=2"),
    "max_elements": 1000,
    "max_memory": 0,
    "timeout": 0.0,
    "ort_provider": ("CPUExecutionProvider,OtherProvider",),
    "runtime": "openvino",
    "runtime_option": (("INFERENCE_PRECISION_HINT", "f32"),),
    "runtime_command": "runtime --flag",
    "outputs": "saved",
    "export_inputs": "exported",
    "export_suite": "suite",
}


def test_every_flag_has_a_given_value_here() -> None:
    assert sorted(GIVEN) == sorted(o.parameter for o in FLAGGED)


@pytest.mark.parametrize("given", [False, True], ids=["defaults", "every-flag-given"])
def test_resolved_settings_are_of_the_declared_types(given: bool, tmp_path) -> None:
    cli = CliOptions(**GIVEN) if given else CliOptions()
    for name, value in dataclasses.asdict(cli).items():
        assert _conforms(value, CLI_HINTS[name]), f"CliOptions.{name}: {value!r} is not {CLI_HINTS[name]}"
    compare = resolve(cli, None, str(tmp_path)).compare
    assert isinstance(compare, CompareSettings)
    for option in declared.OPTIONS:
        value = getattr(compare, option.name)
        hint = COMPARE_HINTS[option.name]
        assert _conforms(value, hint), f"{option.name}: {value!r} is not {hint}"


def test_a_field_without_a_declared_option_is_refused_at_import(monkeypatch) -> None:
    extra = declared.Option("extra", "--extra", None, None)
    monkeypatch.setattr(declared, "OPTIONS", (*declared.OPTIONS, extra))
    with pytest.raises(TypeError, match="CompareSettings"):
        declared._check_fields()
    with pytest.raises(TypeError, match="CliOptions"):
        resolution._check_fields()
