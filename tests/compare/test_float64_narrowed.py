"""FLOAT64-AS-SATURATED-FLOAT32: a runtime computing float64 nodes in float32 with saturating conversions
(OpenVINO) is explained under that ID, element by element, and nothing else is (numpy emulation; neither
OpenVINO nor tract needed)."""

from __future__ import annotations

import numpy as np
from behaviours_float64 import case, float64_saturated_add, narrowed_runtime
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_known import with_actual

from sonnx_check.compare.judging.known_departures import known_departures, match_known

ID = "FLOAT64-AS-SATURATED-FLOAT32"
DOUBLES = hnp.arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True, width=64),
        st.sampled_from([np.inf, -np.inf, 1e300, -1e300, 5e-324, -0.0]),
    ),
)


def _explained(found) -> dict[str, int]:
    return {m.entry.id: m.explained for m in match_known(found)}


def test_infinities_read_as_the_largest_float32_are_explained():
    found = float64_saturated_add()
    assert found.actual[0] == -np.finfo(np.float32).max and found.expected[0] == -np.inf
    assert _explained(found)[ID] == int(np.count_nonzero(found.mismatch)) == 3


def test_exp_of_infinity_written_as_the_largest_float32_is_explained():
    found = case("Exp", np.array([np.inf, 1.0, -np.inf, 0.1]))
    assert found.actual[0] == np.finfo(np.float32).max
    assert _explained(found)[ID] == int(np.count_nonzero(found.mismatch))


def test_minus_infinity_over_minus_infinity_computed_as_one_is_explained():
    found = case("Div", np.array([-np.inf, 1.0]), np.array([-np.inf, 3.0]))
    assert found.actual[0] == 1.0 and np.isnan(found.expected[0])
    assert _explained(found)[ID] == int(np.count_nonzero(found.mismatch)) == 2


def test_a_float32_node_is_not_explained():
    found = case("Neg", np.array([np.inf, 1.5]))
    narrow = found.__class__(
        found.node,
        0,
        found.expected.astype(np.float32),
        found.actual.astype(np.float32),
        found.mismatch,
        [np.asarray(v).astype(np.float32) for v in found.inputs],
    )  # the same values in a float32 node: a saturated -inf there is an ordinary wrong value
    clean = with_actual(narrow, np.array([-np.finfo(np.float32).max, -1.5], np.float32))
    assert ID not in _explained(clean)


@settings(max_examples=60, deadline=None)
@given(DOUBLES)
def test_every_element_the_emulation_changes_is_explained(x):
    found = case("Neg", x)
    assert _explained(found).get(ID, 0) == int(np.count_nonzero(found.mismatch))


@settings(max_examples=60, deadline=None)
@given(DOUBLES, st.integers(0, 11))
def test_a_value_beyond_float32_precision_of_the_narrowed_result_stays_unexplained(x, k):
    k %= x.size
    found = case("Add", x, np.ones_like(x))
    actual = narrowed_runtime("Add", x, np.ones_like(x))
    if not np.isfinite(actual[k]):
        return
    actual[k] = actual[k] + max(1.0, abs(actual[k]) * 2.0**-10)  # 2^13 float32 ulps away, or more
    planted = with_actual(found, actual)
    assert planted.mismatch[k]
    [entry] = [e for e in known_departures() if e.id == ID]
    assert not entry.explains(planted)[k]
