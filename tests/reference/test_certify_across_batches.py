"""Tier 1's rounding certificate taken in blocks of rows across the batches of a stacked product (issue 31:
EfficientNet-b0's depthwise Convs are one batch per channel, one row each, and a block per row spent the
certificate's time in Python). Every element's operations are its own, so the values are the same as one
batch at a time, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import exact_sums
from sonnx_check.reference.products_common import Products

_values = st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 0.5, -0.5, 1.0, -1.0, 3.0, 1.5, 2.0**-126, 0.1, -7.25])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 7),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_a_stacked_product_rounds_as_its_batches_one_by_one(
    batch: int, m: int, k: int, p: int, with_bias: bool, with_magnitude: bool, data: st.DataObject
) -> None:
    left = data.draw(hnp.arrays(np.float32, (batch, m, k), elements=_values))
    right = data.draw(hnp.arrays(np.float32, (batch, k, p), elements=_values))
    bias = data.draw(hnp.arrays(np.float32, (batch, m, 1), elements=_values)) if with_bias else None
    magnitude = None
    if with_magnitude:  # an upper bound of sum |l r| + |bias|, as abs_sum gives it
        magnitude = np.abs(left.astype(np.float64)) @ np.abs(right.astype(np.float64)) * (1 + 2.0**-40)
        if bias is not None:
            magnitude = magnitude + np.abs(bias.astype(np.float64)) * (1 + 2.0**-40)

    def product(b: slice) -> np.ndarray:
        return Products(
            left[b].astype(np.float64),
            right[b].astype(np.float64),
            None if bias is None else bias[b].astype(np.float64),
            np.dtype(np.float32),
            magnitude=None if magnitude is None else magnitude[b],
        ).rounded()

    whole = product(slice(None))
    alone = np.concatenate([product(slice(b, b + 1)) for b in range(batch)])
    np.testing.assert_array_equal(_bits(whole), _bits(alone))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 4), st.integers(1, 9), st.data())
def test_the_certificate_is_each_elements_own(batch: int, m: int, p: int, data: st.DataObject) -> None:
    """Blocks of rows that span batches (a small chunk forces several per batch and several batches per
    block) give each element the interval test on its own approximation and bound."""
    shape = (batch, m, p)
    approx = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-4, 4, width=64)))
    bound = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(0, 1e-6, width=64)))
    chunk = data.draw(st.integers(1, 3 * p))
    original = exact_sums._CERTIFY_CHUNK
    try:
        exact_sums._CERTIFY_CHUNK = chunk
        low, certified = exact_sums._certify_rounding(approx, bound.copy(), np.dtype(np.float32))
    finally:
        exact_sums._CERTIFY_CHUNK = original
    expected_low = (approx - bound).astype(np.float32)
    high = (approx + bound).astype(np.float32)
    same = _bits(expected_low) == _bits(high)
    one_side = (approx - bound > 0) | (approx + bound < 0)
    expected = same & ((expected_low != 0) | one_side)
    np.testing.assert_array_equal(_bits(low), _bits(expected_low))
    np.testing.assert_array_equal(certified, expected)
