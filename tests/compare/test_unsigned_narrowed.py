"""UNSIGNED-AS-INT32: uint32/uint64 computed on the low 32 bits read as int32, sign-extended back (OpenVINO),
is explained under that ID and an ordinary wrong value is not (numpy emulation)."""

from __future__ import annotations

import numpy as np
import pytest
from behaviours_unsigned import unsigned_case
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import known_departures, match_known

ID = "UNSIGNED-AS-INT32"


def _entry():
    [entry] = [e for e in known_departures() if e.id == ID]
    return entry


def test_a_sum_beyond_int32_is_explained():
    found = unsigned_case()
    assert found.actual[0] == 18446744072414584321  # 3e9 + 1, measured
    assert {m.entry.id: m.explained for m in match_known(found)}[ID] == int(np.count_nonzero(found.mismatch))


@pytest.mark.parametrize("op", ["Less", "Max"])
def test_a_signed_comparison_of_uint32_is_explained(op):
    a = np.array([3_000_000_000, 5, 2**31, 1], np.uint32)
    b = np.array([1, 6, 7, 2**32 - 1], np.uint32)
    found = unsigned_case(op, a, b)
    assert np.count_nonzero(found.mismatch) > 0
    assert np.array_equal(_entry().explains(found), found.mismatch)


def test_an_ordinary_wrong_value_stays_unexplained():
    found = unsigned_case()
    actual = found.actual.copy()
    actual[2] = np.uint64(11)  # 7 + 3 = 10 in either reading
    planted = with_actual(found, actual)
    assert planted.mismatch[2] and not _entry().explains(planted)[2]


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(np.uint64, 6, elements=st.integers(0, 2**64 - 1)),
    hnp.arrays(np.uint64, 6, elements=st.integers(0, 2**64 - 1)),
)
def test_every_element_the_emulation_changes_is_explained(a, b):
    found = unsigned_case("Add", a, b)
    assert np.array_equal(_entry().explains(found), found.mismatch)
