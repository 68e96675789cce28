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


EMPTY = "MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW"


def _explained(entry_id: str, case) -> np.ndarray:
    [entry] = [e for e in known_departures() if e.id == entry_id]
    return entry.explains(case)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8])
def test_the_index_kept_is_the_first_element_of_the_windows_own_plane(dtype):
    # OpenVINO and tract keep c*H*W (n*C*H*W + c*H*W), not 0, for the lowest windows of channel c: the 4x4
    # planes of a (2, 3, 4, 4) X start at 0, 16, ..., 80
    found = lowest_window_case(dtype, batch=2, channels=3)
    assert found.actual[1, 2, 0, 1] == found.actual[1, 2, 1, 0] == 80
    assert np.count_nonzero(found.mismatch) == 12
    assert np.array_equal(_entry().explains(found), found.mismatch)


def test_an_index_zero_in_another_plane_stays_unexplained():
    found = lowest_window_case(np.float32, batch=1, channels=2)
    actual = found.actual.copy()
    actual[0, 1, 0, 1] = 0  # channel 1's lowest window: the runtime's index is 16, 0 lies in channel 0
    planted = with_actual(found, actual)
    assert planted.mismatch[0, 1, 0, 1] and not _entry().explains(planted)[0, 1, 0, 1]
    assert _entry().explains(planted)[0, 1, 1, 0]


def test_empty_windows_of_every_plane_are_explained_and_the_lowest_ones_apart():
    x = np.tile(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), (2, 2, 1, 1))
    x[:, :, 0:2, 2:4] = -np.inf  # window (0, 1): all -inf
    x[:, :, 2:4, 0:2] = [[np.nan, -np.inf], [-np.inf, np.nan]]  # window (1, 0): NaN and -inf
    x[1, 1, 2:4, 2:4] = np.finfo(np.float32).min  # window (1, 1) of the last plane: the lowest value
    case = indices_case(x)
    empty, lowest = _explained(EMPTY, case), _explained(ID, case)
    assert np.count_nonzero(case.mismatch) == 9
    assert np.array_equal(empty, case.mismatch & ~lowest) and np.count_nonzero(lowest) == 1
    assert not (empty & lowest).any()


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        (2, 2, 4, 4),
        elements=st.sampled_from([-np.inf, -np.inf, np.nan, float(np.finfo(np.float32).min), -1.0, 0.5]),
    )
)
def test_every_index_the_start_value_changes_is_explained_by_the_two_entries_and_no_other(x):
    case = indices_case(x)
    explained = _explained(EMPTY, case) | _explained(ID, case)
    assert np.array_equal(explained, case.mismatch)
