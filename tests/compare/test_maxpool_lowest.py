"""MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW: Indices 0 for a window whose maximum is the type's lowest finite
value is explained under that ID, for float and the 8-bit integers, and only those elements are."""

from __future__ import annotations

import numpy as np
import pytest
from behaviours_maxpool_lowest import indices_case, lowest_window_case
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import known_departures, match_known

ID = "MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW"


def _entry():
    [entry] = [e for e in known_departures() if e.id == ID]
    return entry


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8])
def test_windows_of_the_lowest_value_are_explained(dtype):
    found = lowest_window_case(dtype)
    assert np.count_nonzero(found.mismatch) == 2  # the two windows of the lowest value; index 0 elsewhere
    assert {m.entry.id: m.explained for m in match_known(found)}[ID] == 2


def test_an_index_zero_for_a_window_above_the_lowest_value_stays_unexplained():
    found = lowest_window_case(np.float32)
    actual = found.actual.copy()
    actual[0, 0, 1, 1] = 0  # window (1, 1) holds 10, 11, 14, 15: its index is 15
    planted = with_actual(found, actual)
    assert planted.mismatch[0, 0, 1, 1] and not _entry().explains(planted)[0, 0, 1, 1]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int8, (1, 1, 4, 4), elements=st.sampled_from([-128, -128, -128, -5, 0, 7])))
def test_every_index_the_lowest_start_changes_is_explained_and_no_other(x):
    case = indices_case(x)
    assert np.array_equal(_entry().explains(case), case.mismatch)
