"""The vectorised kernels against the naive per-element reading (naive.py), over dtypes, strides, dilations,
asymmetric pads, ties, NaN, +-inf and +-0, and Max broadcasting with 1 to 5 inputs."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from naive import naive_max, naive_maxpool

from sonnx_check.reference import ReferenceError
from sonnx_check.reference.max import maximum
from sonnx_check.reference.maxpool import PoolParams, maxpool

FLOAT_POOL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 5e-324, -5e-324, 1e-40, 65504.0, -65504.0]


def _pool_for(dtype: np.dtype) -> list:
    """Few distinct values, so windows hold many ties, and every special value of the type."""
    if dtype.kind == "f":
        info = np.finfo(dtype)
        return [dtype.type(v) for v in FLOAT_POOL] + [info.max, info.min, info.smallest_subnormal]
    info = np.iinfo(dtype)
    return [dtype.type(v) for v in (info.min, info.min + 1, 0, 1, 2, info.max)]


@st.composite
def pooling_cases(draw, dtypes=(np.float16, np.float32, np.float64, np.int8, np.uint8)):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    # pads.C2: each pad smaller than the dilated kernel; begin and end drawn independently (asymmetric).
    pads = tuple(draw(st.integers(0, extent[axis % 2] - 1)) for axis in range(4))
    shape = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 3)),
        draw(st.integers(max(1, extent[0] - pads[0] - pads[2]), 7)),
        draw(st.integers(max(1, extent[1] - pads[1] - pads[3]), 7)),
    )
    x = draw(hnp.arrays(dtype, shape, elements=st.sampled_from(_pool_for(dtype))))
    return x, PoolParams(kernel, strides, dilations, pads)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(pooling_cases())
def test_maxpool_matches_the_naive_reading(case) -> None:
    x, params = case
    expected = naive_maxpool(x, params.kernel, params.strides, params.dilations, params.pads)
    if expected is None:  # a window of padding only (dilation > 1): no value is defined, the kernel refuses
        try:
            maxpool(x, params)
        except ReferenceError as exc:
            assert "only of padding" in str(exc)
            return
        raise AssertionError("a window made only of padding was not refused")
    y, indices = maxpool(x, params)
    assert_identical(indices, expected[1])
    assert_identical(y, expected[0])
    y_only, none = maxpool(x, params, with_indices=False)
    assert none is None
    assert_identical(y_only, expected[0])


@settings(max_examples=100, deadline=None)
@given(pooling_cases(dtypes=(np.float32,)))
def test_maxpool_y_is_the_element_indices_designates_or_minus_infinity_for_nan(case) -> None:
    x, params = case
    try:
        y, indices = maxpool(x, params)
    except ReferenceError:
        return
    picked = x.reshape(-1)[indices]
    assert_identical(y, np.where(np.isnan(picked), np.float32(-np.inf), picked))


@st.composite
def max_cases(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.uint8, np.int64])))
    count = draw(st.integers(1, 5))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=3, max_side=4)).input_shapes
    elements = st.sampled_from(_pool_for(dtype))
    return [draw(hnp.arrays(dtype, shape, elements=elements)) for shape in shapes]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(max_cases())
def test_max_matches_the_naive_reading(arrays) -> None:
    assert_identical(maximum(arrays), naive_max(arrays))


@settings(max_examples=100, deadline=None)
@given(max_cases())
def test_max_does_not_depend_on_the_order_of_its_inputs(arrays) -> None:
    assert_identical(maximum(arrays), maximum(arrays[::-1]))
