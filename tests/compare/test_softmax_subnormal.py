"""SOFTMAX-SUBNORMAL-RANGE-LOST: a float32 Softmax giving values near FLT_MIN where SONNX's result is
subnormal or 0 (tract) is explained under that ID; an ordinary wrong value is not (numpy emulation)."""

from __future__ import annotations

import numpy as np
from behaviours_softmax_subnormal import subnormal_case
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import known_departures, match_known

ID = "SOFTMAX-SUBNORMAL-RANGE-LOST"


def _entry():
    [entry] = [e for e in known_departures() if e.id == ID]
    return entry


def test_the_measured_slice_is_explained():
    found = subnormal_case()
    assert np.count_nonzero(found.mismatch) >= 4
    assert {m.entry.id: m.explained for m in match_known(found)}[ID] == int(np.count_nonzero(found.mismatch))


def test_a_wrong_normal_value_stays_unexplained():
    found = subnormal_case()
    actual = found.actual.copy()
    actual[0, 7] = actual[0, 7] * np.float32(0.5)  # x - M = -1: a normal result, halved
    planted = with_actual(found, actual)
    assert planted.mismatch[0, 7] and not _entry().explains(planted)[0, 7]


def test_a_value_far_above_flt_min_where_the_result_is_subnormal_stays_unexplained():
    found = subnormal_case()
    actual = found.actual.copy()
    actual[0, 5] = np.float32(1e-30)
    assert not _entry().explains(with_actual(found, actual))[0, 5]


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float32, (1, 8), elements=st.floats(-130, 0, width=32)))
def test_every_element_the_emulation_changes_is_explained(x):
    found = subnormal_case(x)
    assert np.array_equal(_entry().explains(found), found.mismatch)
