"""The survey's text table never breaks a departure ID or an operator's name (issue 29's survey printed
"MAXPOOL-INDEX-ZERO-FOR-EMPTY-WIN" / "DOW"), on an 80-column terminal and piped, within 80 columns."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from sonnx_check.compare.judging.known_departures import known_departures
from sonnx_check.compare.survey.results import ConfigurationRow, OperatorSurvey, Survey
from sonnx_check.report.styled import PlainConsole
from sonnx_check.report.survey_text import render_survey

IDS = sorted({d.id for d in known_departures()})
LONGEST = max(IDS, key=len)
OPERATORS = ["BatchNormalization", "MaxPool", "Conv", "Sigmoid"]


def _survey(by_operator: dict[str, list[str]], count: int) -> Survey:
    operators = [
        OperatorSurvey(
            op_type,
            [
                ConfigurationRow(
                    "float", "float", "k", "compared", elements=count, departures=dict.fromkeys(ids, count)
                )
            ],
        )
        for op_type, ids in by_operator.items()
    ]
    return Survey({"name": "openvino"}, "openvino", {}, operators)


def _table_lines(console: Console | PlainConsole, survey: Survey) -> list[str]:
    with console.capture() as captured:
        render_survey(console, survey, "out")
    lines = captured.get().splitlines()
    return lines[1 : next(i for i, line in enumerate(lines) if line.startswith("survey:"))]


def _terminal() -> Console:
    return Console(file=io.StringIO(), width=80, color_system=None)


def test_the_longest_id_beside_the_longest_operator_is_whole_on_80_columns() -> None:
    assert LONGEST == "BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL"  # 37 characters: the case that needs the room
    survey = _survey({"BatchNormalization": ["MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW", LONGEST]}, 1234567)
    for console in (_terminal(), PlainConsole()):
        table = _table_lines(console, survey)
        assert all(len(line) <= 80 for line in table), "\n".join(table)
        assert any("BatchNormalization" in line for line in table)
        for departure in ("MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW", LONGEST):
            assert any(departure in line for line in table), "\n".join(table)
        assert any("1234567" in line for line in table)


def test_a_table_with_room_keeps_its_full_headers() -> None:
    table = _table_lines(_terminal(), _survey({"MaxPool": ["MAXPOOL-NAN-POSITIONAL"]}, 2688))
    assert table[0].split() == ["operator", "elements", "unexpl", "departure", "explains"]
    assert "MaxPool  " in table[2]  # two spaces part the columns


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(OPERATORS), st.lists(st.sampled_from(IDS), min_size=1, max_size=4), min_size=1
    ),
    st.integers(min_value=1, max_value=9_999_999),
)
def test_every_id_appears_whole_within_80_columns(by_operator: dict[str, list[str]], count: int) -> None:
    table = _table_lines(_terminal(), _survey(by_operator, count))
    assert all(len(line) <= 80 for line in table), "\n".join(table)
    for op_type, ids in by_operator.items():
        assert any(op_type in line for line in table)
        for departure in ids:
            assert any(departure in line for line in table), "\n".join(table)
