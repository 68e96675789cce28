"""The run's own options are declared once (run_options.py), as the comparison's are (settings.py): the
command's click options, --help's sections and ``cli.run``'s one argument come from the declaration; which
options name the runtime under test (and so ask for --compare) is declared with them; the runtimes are one
list (issue 28 item 3)."""

from __future__ import annotations

import dataclasses
import typing

import click
import pytest
from click.testing import CliRunner

from sonnx_check import run_options
from sonnx_check import settings as declared
from sonnx_check.cli import SECTIONS, main
from sonnx_check.run_options import RUN_OPTIONS, RunArguments


def _params() -> dict[str, click.Parameter]:
    return {p.name: p for p in main.params if p.name}


@pytest.mark.parametrize("option", RUN_OPTIONS, ids=lambda o: o.name)
def test_each_declared_run_option_is_a_click_option_with_its_help(option: run_options.RunOption) -> None:
    param = _params()[option.name]
    assert isinstance(param, click.Option)
    assert set(option.flags) == set(param.opts)
    assert param.help == option.help
    assert param.is_flag == (option.kind == "flag") and param.multiple == (option.kind == "multiple")
    assert option.name in dict(SECTIONS)[option.section]


def test_every_click_parameter_is_declared_somewhere() -> None:
    known = {"paths", "version", "help", *run_options.BY_NAME, *declared.flag_parameters()}
    assert set(_params()) <= known
    listed = [name for _, names in SECTIONS for name in names]
    assert len(listed) == len(set(listed)), "an option listed in two sections"
    assert set(_params()) - {"paths"} <= set(listed)


def test_run_arguments_fields_are_typed_and_declared() -> None:
    hints = typing.get_type_hints(RunArguments)
    fields = [f.name for f in dataclasses.fields(RunArguments)]
    assert fields == ["paths", *(o.name for o in RUN_OPTIONS), "compared"]
    assert all(hints[name] is not typing.Any for name in fields)


def test_run_arguments_from_click_split_the_runs_and_the_comparisons(monkeypatch) -> None:
    """main hands run() one RunArguments holding exactly what click parsed."""
    seen: list[RunArguments] = []
    monkeypatch.setattr("sonnx_check.cli.run", lambda args: seen.append(args) or 0)
    result = CliRunner().invoke(
        main, ["-q", "--select", "GR1", "--seed", "3", "--maxpool-nan", "nan-absorbing", "m"]
    )
    assert result.exit_code == 0, result.output
    [args] = seen
    assert args.paths == ("m",) and args.quiet is True and args.select == ("GR1",) and args.color == "auto"
    assert args.compared["seed"] == 3 and args.compared["reading"] == (("MaxPool.nan", "nan-absorbing"),)
    assert "maxpool_nan" not in args.compared and "quiet" not in args.compared


NAMING = [o for o in declared.OPTIONS if o.implies_compare]
GIVEN = {"ort_provider": ("CUDAExecutionProvider",), "runtime": "openvino", "runtime_option": (("K", "V"),)}
GIVEN |= {"runtime_command": "run-it", "outputs": "saved"}


def test_the_options_naming_the_runtime_are_declared() -> None:
    assert sorted(o.parameter for o in NAMING) == sorted(GIVEN)


@pytest.mark.parametrize("option", NAMING, ids=lambda o: o.name)
def test_naming_the_runtime_asks_for_a_comparison_unless_no_compare(option: declared.Option) -> None:
    given = {option.parameter: GIVEN[option.parameter]}
    assert declared.cli_values({"compare": None, **given})["compare"] is True
    assert declared.cli_values({"compare": False, **given})["compare"] is False
    assert declared.cli_values({"compare": None})["compare"] is None


def test_show_settings_says_a_named_runtime_enables_the_comparison(tmp_path) -> None:
    result = CliRunner().invoke(main, ["--isolated", "--show-settings", "--runtime", "openvino"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("compare.enabled")]
    assert "true" in line and "command line" in line


def test_the_runtimes_are_one_list() -> None:
    from sonnx_check.compare.runtimes import engines

    assert tuple(engines.ENGINES) == declared.RUNTIMES
    assert engines.DEFAULT == declared.RUNTIMES[0]
