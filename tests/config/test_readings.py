"""An operator's reading of the specification (issue 28): declared in its catalogue file, chosen with
``--reading OP.KEY=VALUE`` or ``compare.reading``, the older ``--maxpool-nan``/``compare.maxpool-nan`` kept
as aliases with the same effect, a bad name or value refused in one line that lists what is accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clikit import conforming_maxpool, run_cli, save, write_pyproject
from hypothesis import given, settings
from hypothesis import strategies as st

from sonnx_check import operator_readings, settings_handover
from sonnx_check.errors import UsageError
from sonnx_check.operator_readings import ReadingDeclaration, Readings
from sonnx_check.reference import nan_policy

ABSORBING = nan_policy.NAN_ABSORBING


def _compared(folder: Path, args: list[str], config: str | None = None) -> tuple[dict, dict, str]:
    """The JSON report's reference record, the evidence record's compare settings and the text report of a
    comparison of a conforming MaxPool model run in ``folder``."""
    save(conforming_maxpool(), folder / "m.onnx")
    where = ["--isolated"]
    if config is not None:
        write_pyproject(folder, config)
        where = []
    report, evidence = folder / "report.json", folder / "evidence.json"
    outputs = ["--output-format", f"json:{report}", "--evidence", str(evidence)]
    result = run_cli([*where, "--compare", "--no-node-edges", *outputs, *args, "m.onnx"], cwd=folder)
    assert result.code in (0, 1), result.stderr
    reference = json.loads(report.read_text())["models"][0]["comparison"]["reference"]
    compare_settings = json.loads(evidence.read_text())["models"][0]["comparison"]["settings"]
    return reference, compare_settings, result.stdout


CHOSEN = {
    "--reading": (["--reading", f"MaxPool.nan={ABSORBING}"], None),
    "--maxpool-nan": (["--maxpool-nan", ABSORBING], None),
    "compare.reading": ([], f'[tool.sonnx-check.compare]\nreading = {{ "MaxPool.nan" = "{ABSORBING}" }}\n'),
    "compare.reading unquoted": (
        [],
        f'[tool.sonnx-check.compare]\nreading = {{ MaxPool.nan = "{ABSORBING}" }}\n',
    ),
    "compare.maxpool-nan": ([], f'[tool.sonnx-check.compare]\nmaxpool-nan = "{ABSORBING}"\n'),
}


@pytest.mark.slow
def test_every_way_of_choosing_the_reading_gives_the_same_reports(tmp_path: Path) -> None:
    seen = {}
    for label, (args, config) in CHOSEN.items():
        folder = tmp_path / label.replace(" ", "-")
        folder.mkdir()
        reference, compare_settings, text = _compared(folder, args, config)
        assert reference["maxpool_nan"] == ABSORBING, label
        assert reference["maxpool_nan_reading"] == operator_readings.declared()["MaxPool.nan"].words(
            ABSORBING
        )
        assert compare_settings["maxpool_nan"] == ABSORBING, label
        assert f"MaxPool NaN reading: {ABSORBING}" in text, label
        seen[label] = (reference, compare_settings)
    assert len({json.dumps(v, sort_keys=True) for v in seen.values()}) == 1


def test_the_default_is_the_declared_one_and_recorded(tmp_path: Path) -> None:
    reference, compare_settings, _ = _compared(tmp_path, [])
    default = operator_readings.declared()["MaxPool.nan"].default
    assert default == nan_policy.NAN_AS_NEGATIVE_INFINITY
    assert reference["maxpool_nan"] == compare_settings["maxpool_nan"] == default


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("MaxPool.nan=absorbing", "--reading: MaxPool.nan 'absorbing': expected one of "
         "nan-as-negative-infinity, nan-absorbing"),
        ("MaxPool.nans=nan-absorbing", "--reading: MaxPool has no reading 'nans' (its readings: nan)"),
        ("Conv.nan=nan-absorbing", "--reading: no reading is declared for 'Conv' "
         "(declared readings: MaxPool.nan)"),
        ("nan=nan-absorbing", "--reading: 'nan': expected OPERATOR.KEY (declared readings: MaxPool.nan)"),
    ],
)  # fmt: skip
def test_a_bad_reading_on_the_command_line_is_one_line_and_exit_2(
    tmp_path: Path, given: str, message: str
) -> None:
    save(conforming_maxpool(), tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--compare", "--reading", given, "m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('reading = { "MaxPool.nan" = "absorbing" }', 'tool.sonnx-check.compare.reading."MaxPool.nan": '
         "MaxPool.nan 'absorbing': expected one of nan-as-negative-infinity, nan-absorbing"),
        ('reading = { "Relu.nan" = "x" }', 'tool.sonnx-check.compare.reading."Relu.nan": no reading is '
         "declared for 'Relu' (declared readings: MaxPool.nan)"),
        ("reading = { MaxPool.nan = 1 }", "expected one of the reading's values, got 1"),
        ('reading = "MaxPool.nan=nan-absorbing"', "tool.sonnx-check.compare.reading: expected a table"),
        ('maxpool-nan = "absorbing"', "tool.sonnx-check.compare.maxpool-nan: expected one of "
         "nan-as-negative-infinity, nan-absorbing, got 'absorbing'"),
        ('maxpool-nan = "nan-absorbing"\nreading = { "MaxPool.nan" = "nan-as-negative-infinity" }',
         "tool.sonnx-check.compare.maxpool-nan: 'nan-absorbing' and reading.\"MaxPool.nan\" = "
         "'nan-as-negative-infinity': give one of them"),
        ('readings = { "MaxPool.nan" = "nan-absorbing" }', "unknown key (did you mean 'reading'?)"),
    ],
)  # fmt: skip
def test_a_bad_reading_in_the_configuration_names_the_file_and_key(
    tmp_path: Path, body: str, message: str
) -> None:
    save(conforming_maxpool(), tmp_path / "m.onnx")
    write_pyproject(tmp_path, f"[tool.sonnx-check.compare]\n{body}\n")
    result = run_cli(["m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert result.stderr.startswith("sonnx-check: error: pyproject.toml: "), result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_reading_without_a_value_is_clicks_usage_error(tmp_path: Path) -> None:
    """As --runtime-option's: click refuses the syntax before anything runs."""
    result = run_cli(["--isolated", "--compare", "--reading", "MaxPool.nan", "m.onnx"], cwd=tmp_path)
    assert result.code == 2 and "'MaxPool.nan': expected KEY=VALUE" in result.stderr


def test_the_older_flag_and_reading_choosing_two_values_is_refused(tmp_path: Path) -> None:
    save(conforming_maxpool(), tmp_path / "m.onnx")
    args = [
        "--isolated",
        "--compare",
        "--maxpool-nan",
        ABSORBING,
        "--reading",
        "MaxPool.nan=nan-as-negative-infinity",
    ]
    result = run_cli([*args, "m.onnx"], cwd=tmp_path)
    assert result.code == 2
    assert "--maxpool-nan nan-absorbing and --reading MaxPool.nan=nan-as-negative-infinity" in result.stderr


def test_the_command_line_reading_wins_over_the_configuration(tmp_path: Path) -> None:
    config = '[tool.sonnx-check.compare]\nreading = { "MaxPool.nan" = "nan-absorbing" }\n'
    reference, _, _ = _compared(tmp_path, ["--reading", "MaxPool.nan=nan-as-negative-infinity"], config)
    assert reference["maxpool_nan"] == nan_policy.NAN_AS_NEGATIVE_INFINITY


def test_help_lists_the_reading_its_values_and_the_older_flag() -> None:
    result = run_cli(["--help"], env={"COLUMNS": "200"})
    text = "".join(result.stdout.split())  # click wraps at hyphens and spaces alike
    assert "--readingOP.KEY=VALUE" in text
    assert "MaxPool.nan=nan-as-negative-infinity|nan-absorbing(defaultnan-as-negative-infinity)" in text
    assert "--maxpool-nan[nan-as-negative-infinity|nan-absorbing]" in text
    assert "Sameas--readingMaxPool.nan=VALUE." in text


def test_the_kernel_implements_the_declared_values() -> None:
    declaration = operator_readings.declared()[nan_policy.READING]
    assert declaration.choices == nan_policy.READINGS
    assert declaration.default == nan_policy.NAN_AS_NEGATIVE_INFINITY


# -- a second reading needs only its declaration ---------------------------------------------------------

SECOND = ReadingDeclaration(
    op_type="Softmax",
    key="rows",
    values=(("text", "as the text says"), ("other", "as another text says")),
    default="text",
    help="Softmax's rows.",
    label="Softmax rows reading",
    record="softmax_rows",
)


@pytest.fixture
def second_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    both = {**operator_readings.declared(), "Softmax.rows": SECOND}
    monkeypatch.setattr(operator_readings, "declared", lambda: both)


def test_a_second_declared_reading_is_accepted_resolved_and_recorded(second_reading: None) -> None:
    from sonnx_check.config import CliOptions, resolve

    cli = CliOptions(reading=(("Softmax.rows", "other"), ("MaxPool.nan", ABSORBING)))
    compare = resolve(cli, None).compare
    readings = settings_handover.compare_arguments(compare)["readings"]
    assert readings["Softmax.rows"] == "other" and readings["MaxPool.nan"] == ABSORBING
    assert settings_handover.report_json(compare)["softmax_rows"] == "other"
    assert readings.records()["softmax_rows_reading"] == "as another text says"
    assert [(r.label, v) for r, v in readings.of("Softmax")] == [("Softmax rows reading", "other")]
    with pytest.raises(UsageError, match="Softmax.rows 'none': expected one of text, other"):
        resolve(CliOptions(reading=(("Softmax.rows", "none"),)), None)


# -- the mapping the kernels receive -----------------------------------------------------------------------

NAMES = st.sampled_from(sorted(operator_readings.declared()))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(NAMES, st.sampled_from(nan_policy.READINGS)), max_size=6))
def test_a_reading_given_several_times_keeps_its_last_value(pairs: list[tuple[str, str]]) -> None:
    readings = Readings(tuple(pairs))
    last = dict(pairs)
    for name, declaration in operator_readings.declared().items():
        assert readings[name] == last.get(name, declaration.default)
    # a default chosen explicitly is the same choice as none
    assert readings == Readings(
        tuple((n, v) for n, v in last.items() if v != nan_policy.NAN_AS_NEGATIVE_INFINITY)
    )


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=20), st.text(max_size=20))
def test_an_undeclared_reading_is_refused_with_what_is_accepted(name: str, value: str) -> None:
    declaration = operator_readings.declared().get(name)
    if declaration is not None and value in declaration.choices:
        return
    with pytest.raises(UsageError) as caught:
        Readings(((name, value),))
    message = str(caught.value)
    assert "\n" not in message
    assert "MaxPool.nan" in message or "expected one of" in message or "its readings: nan" in message


def test_the_python_api_takes_the_readings_as_a_mapping() -> None:
    from sonnx_check.compare import CompareOptions

    options = CompareOptions(readings={"MaxPool.nan": ABSORBING})
    assert options.readings == Readings((("MaxPool.nan", ABSORBING),))
    assert options.readings["MaxPool.nan"] == ABSORBING
    assert CompareOptions().readings["MaxPool.nan"] == nan_policy.NAN_AS_NEGATIVE_INFINITY
    with pytest.raises(UsageError, match="readings: MaxPool.nan 'x': expected one of"):
        CompareOptions(readings={"MaxPool.nan": "x"})
    with pytest.raises(UsageError, match="readings: expected a mapping"):
        CompareOptions(readings=3)  # type: ignore[arg-type]  # the wrong type on purpose
