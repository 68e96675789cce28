"""least_positive (the range choosing float32 or float64 for the bound's sum |a b|) from the bit patterns
gives the least positive value as the positive values' own minimum does, zeros, subnormals, +inf and
transposed views included, and across its blocks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import magnitude_ranges
from sonnx_check.reference.magnitude_ranges import least_positive

_MAGNITUDES = st.one_of(
    st.sampled_from([0.0, 2.0**-149, 2.0**-126, 1.0, float(np.finfo(np.float32).max), float("inf")]),
    st.floats(0, 2.0**100, width=32),
)


def _plain(a: np.ndarray) -> float:
    positive = a[a > 0]
    return float(positive.min()) if positive.size else 0.0


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=_MAGNITUDES))
def test_the_least_positive_is_the_positive_values_minimum(a: np.ndarray) -> None:
    expected = _plain(a)
    for view in (a, a.T):
        got = least_positive(view)
        assert got == expected and np.signbit(got) == np.signbit(expected)


def test_blocks_and_stray_negative_zeros(monkeypatch) -> None:
    monkeypatch.setattr(magnitude_ranges, "_RANGE_BLOCK", 4)
    a = np.zeros((3, 10), dtype=np.float32)
    assert least_positive(a) == 0.0 and not np.signbit(least_positive(-a))
    a[2, 7], a[0, 1] = 2.0**-149, 5.0
    assert least_positive(a) == 2.0**-149
    assert least_positive(np.where(a == 0, np.float32(-0.0), a)) == 2.0**-149
