"""lowest_bit_exponent (tier 2's units) from frexp of the lowest set bit gives the bit fields' figures, bit
for bit, in float16, float32 and float64, zeros, subnormals, powers of two, infinities and NaN included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference.exact_sums import _lowest_bit_fields, lowest_bit_exponent


def _same(values: np.ndarray) -> None:
    with np.errstate(invalid="ignore"):
        expected = _lowest_bit_fields(values.astype(np.float64))
    got = lowest_bit_exponent(values)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_float64_values(values: np.ndarray) -> None:
    _same(values)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 40), elements=st.floats(width=32)))
def test_float32_values(values: np.ndarray) -> None:
    _same(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40))
def test_float64_bit_patterns(patterns: list[int]) -> None:
    _same(np.array(patterns, dtype=np.uint64).view(np.float64))


def test_every_float16_and_the_float32_edges() -> None:
    _same(np.arange(2**16, dtype=np.uint16).view(np.float16))
    edges = [0, 1, 2, 3, 0x007FFFFF, 0x00800000, 0x00800001, 0x3F800000, 0x3F800001, 0x7F7FFFFF, 0x7F800000,
             0x7FC00000, 0x7F800001, 0xFFFFFFFF]  # fmt: skip
    patterns = np.array(edges + [e | 0x80000000 for e in edges], dtype=np.uint32)
    _same(patterns.view(np.float32))
    # a strided view (a window of X) as well as a contiguous array
    _same(np.linspace(-3, 3, 64, dtype=np.float32)[::3])
