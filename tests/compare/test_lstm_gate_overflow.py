"""LSTM-GATE-SUM-OVERFLOW (issue 29): a gate sum whose positive and negative terms both overflow the type
gives NaN in a runtime summing in its own order (OpenVINO adds Wb + Rb first). Emulated in numpy
(behaviours_lstm.presummed_bias_lstm, whose NaN pattern is OpenVINO 2026.4.1's on this case): the NaN it
reaches are explained, and a NaN anywhere else stays unexplained."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from behaviours_lstm import overflow_case, overflow_inputs
from test_known_operators import raw_mismatch

from sonnx_check.compare.judging.known_departures import by_id

ENTRY = by_id("LSTM-GATE-SUM-OVERFLOW")


def _with_nan_at(case, *where):
    actual = case.actual.copy()
    for index in where:
        actual[index] = np.nan
    return replace(case, actual=actual, mismatch=raw_mismatch(case.expected, actual))


@pytest.mark.parametrize("position", [0, 1, 2])
def test_exactly_the_nan_the_overflowing_gate_reaches_are_explained(position: int):
    case = overflow_case(position=position)
    assert np.isnan(case.actual).any() and not np.isnan(case.expected).any()
    assert np.array_equal(ENTRY.explains(case), np.isnan(case.actual))


def test_where_the_nan_starts_in_y():
    """Row 0: unit 0 at step 1 (its input gate), every unit from step 2; row 1 never."""
    nan = np.isnan(overflow_case().actual)[:, 0]  # (steps, batch, hidden)
    assert not nan[0].any() and nan[1, 0].tolist() == [True, False, False] and nan[2:, 0].all()
    assert not nan[:, 1].any()


@pytest.mark.parametrize(
    "where",
    [(0, 0, 1, 0), (4, 0, 1, 2), (0, 0, 0, 0), (1, 0, 0, 1)],
    ids=["other-row", "other-row-last-step", "before-the-overflow", "other-unit-at-its-step"],
)
def test_a_nan_the_overflow_does_not_reach_stays_unexplained(where):
    case = _with_nan_at(overflow_case(), where)
    assert not ENTRY.explains(case)[where]
    assert ENTRY.explains(case)[np.isnan(overflow_case().actual)].all()


def test_nothing_is_explained_when_no_gate_sum_can_overflow_both_ways():
    inputs = overflow_inputs()
    inputs[3][0, 0] = inputs[3][0, 12] = -1.0  # Wb and Rb of unit 0's input gate: no negative overflow
    case = overflow_case(inputs)
    assert not np.isnan(case.actual).any()
    planted = _with_nan_at(case, (3, 0, 0, 0))
    assert not ENTRY.explains(planted).any()


def test_an_infinite_operand_is_not_claimed():
    """With an infinite input SONNX's own sum may be NaN or infinite: not this behaviour's."""
    inputs = overflow_inputs()
    inputs[0][1, 0, 0] = -np.inf
    case = overflow_case(inputs)
    planted = _with_nan_at(case, (1, 0, 0, 0))
    if planted.mismatch[1, 0, 0, 0]:
        assert not ENTRY.explains(planted)[1, 0, 0, 0]
