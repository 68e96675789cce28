"""BatchNormalization's faster paths (issue 31: DenseNet-121's edge battery) give the bits of the kernel as it
was, kept in batchnorm_oracle.py: the channel factors in integers instead of Fractions, signed zeros
certified in the float16/float32 blocks instead of decided exactly one by one, the gathered operands
indexed by channel, the special values of channels with finite parameters from scale * X. Over NaN,
infinities, signed zeros, subnormals and the largest values."""

from __future__ import annotations

import struct

import batchnorm_oracle as oracle
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import batchnorm_factors
from sonnx_check.reference.batchnormalization import batch_normalization

F16, F32, F64 = (np.finfo(t) for t in (np.float16, np.float32, np.float64))
EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 0.1, 1e-5, 2.0**-60, 2.0**60,
    float(F16.smallest_subnormal), float(F16.tiny), float(F16.max),
    float(F32.smallest_subnormal), float(F32.tiny), float(F32.max), -float(F32.max),
    float(F64.smallest_subnormal), float(F64.tiny), float(F64.max), -float(F64.smallest_subnormal),
]  # fmt: skip
NONFINITE = [
    np.nan,
    -np.nan,
    struct.unpack("<d", struct.pack("<Q", 0x7FF8_1000_0000_0000))[0],
    np.inf,
    -np.inf,
]  # NaNs of either sign, a payload
_any = st.one_of(st.sampled_from(EDGES + NONFINITE), st.floats(allow_subnormal=True))
_variance = st.one_of(
    st.sampled_from([v for v in EDGES if not v < 0] + [np.nan, np.inf]),
    st.floats(min_value=0.0, allow_subnormal=True),
)
_epsilon = st.one_of(
    st.sampled_from([1e-5, 1e-3, 0.1, float(F32.smallest_subnormal), float(F32.max)]),
    st.floats(min_value=float(F32.smallest_subnormal), max_value=float(F32.max), width=32),
)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}").tobytes()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_any, _variance), min_size=1, max_size=12), st.data(), _epsilon)
def test_the_integer_channel_factors_are_the_fraction_ones(pairs, data, eps):
    # repeated pairs too: the factors of a pair are computed once per call
    pairs = pairs + data.draw(st.lists(st.sampled_from(pairs), max_size=6))
    scale, var = (np.array(column, dtype=np.float64) for column in zip(*pairs, strict=True))
    hi, lo = batchnorm_factors.exact_channel_factors(scale, var, eps)
    old_hi, old_lo = oracle.exact_channel_factors(scale, var, eps)
    assert _bits(hi) == _bits(old_hi) and _bits(lo) == _bits(old_lo)


def _values(dtype: np.dtype, variance: bool = False) -> st.SearchStrategy[float]:
    info = np.finfo(dtype)
    edges = [v for v in EDGES if abs(v) <= float(info.max)] + NONFINITE
    finite = st.floats(-1e4, 1e4, width=info.bits)
    values = st.one_of(st.sampled_from(edges), finite)
    return values.filter(lambda v: not v < 0) if variance else values


_SHAPES = st.sampled_from([(5,), (3, 2), (2, 3, 4), (2, 3, 2, 2), (1, 4, 3, 1, 2)])


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), _SHAPES, st.booleans(), st.data(), _epsilon)
def test_the_kernel_gives_the_bits_it_gave(dtype, shape, transposed, data, eps):
    dtype = np.dtype(dtype)
    channels = shape[1] if len(shape) >= 2 else 1
    x = data.draw(hnp.arrays(dtype, shape, elements=_values(dtype)))
    if transposed and len(shape) >= 3:  # a view that is not contiguous
        x = np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    param_type = data.draw(st.sampled_from([dtype, np.dtype(np.float32)]))
    scale, b, mean = (
        data.draw(hnp.arrays(param_type, (channels,), elements=_values(param_type))) for _ in range(3)
    )
    var = data.draw(hnp.arrays(param_type, (channels,), elements=_values(param_type, variance=True)))
    y = batch_normalization(x, scale, b, mean, var, epsilon=eps)
    assert y.dtype == dtype
    assert _bits(y) == _bits(oracle.batch_normalization(x, scale, b, mean, var, eps))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_results_below_the_smallest_subnormal_keep_the_exact_sign(dtype):
    """The edge battery's pattern that took DenseNet-121's exact decisions: scale, mean and B the smallest
    subnormal, so k(X - mean) + B is a few hundredths of it, on either side of 0, or a tie."""
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([[-0.95, -1.0, -0.5, 0.0, 2.0, -3.0, -1.5]], dtype=dtype).reshape(1, 1, 7)
    params = [np.array([v], dtype=dtype) for v in (tiny, tiny, tiny, 1.0)]
    y = batch_normalization(x, *params, epsilon=1e-5)
    assert _bits(y) == _bits(oracle.batch_normalization(x, *params, 1e-5))
    assert np.signbit(y.reshape(-1)[[0, 1]]).tolist() == [False, False]  # +0: the exact value is positive


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([np.float16, np.float32]), st.data())
def test_tiny_results_of_either_sign_round_as_before(dtype, data):
    dtype = np.dtype(dtype)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    pick = st.sampled_from([tiny, -tiny, 2 * tiny, 3 * tiny, 0.0, -0.0])
    scale, b, mean = (np.array([data.draw(pick)], dtype=dtype) for _ in range(3))
    var = np.array([data.draw(st.sampled_from([1.0, 0.25, 4.0, 0.0]))], dtype=dtype)
    x = data.draw(hnp.arrays(dtype, (1, 1, 6), elements=st.floats(-3, 3, width=16)))
    y = batch_normalization(x, scale, b, mean, var, epsilon=1e-5)
    assert _bits(y) == _bits(oracle.batch_normalization(x, scale, b, mean, var, 1e-5))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_special_values_beside_channels_of_nonfinite_parameters(dtype):
    """Channels of finite parameters (scale 0, -0, 2, -2: NaN from 0 * inf, infinities of either sign) and
    channels with an infinite or NaN parameter, X non-finite or not, NaNs of either sign."""
    row = [np.inf, -np.inf, np.nan, -np.nan, 1.0, -0.0]
    x = np.array([[row] * 6] * 2, dtype=dtype)
    scale = np.array([0.0, -0.0, 2.0, -2.0, np.inf, 1.0], dtype=dtype)
    b = np.array([1.0, 0.0, -1.0, 0.5, 0.0, 0.0], dtype=dtype)
    mean = np.array([0.0, 1.0, 0.0, -3.0, 0.0, np.nan], dtype=dtype)
    var = np.array([1.0, 0.0, 4.0, 1.0, 1.0, 1.0], dtype=dtype)
    y = batch_normalization(x, scale, b, mean, var, epsilon=1e-5)
    assert _bits(y) == _bits(oracle.batch_normalization(x, scale, b, mean, var, 1e-5))
    assert _bits(y[:, 0, :4]) == _bits(np.array([[np.nan] * 4] * 2, dtype=dtype))  # the one NaN
    x = x[..., :4]  # NaN and infinities only: Y is the special values alone
    y = batch_normalization(x, scale, b, mean, var, epsilon=1e-5)
    assert y.flags.c_contiguous and _bits(y) == _bits(
        oracle.batch_normalization(x, scale, b, mean, var, 1e-5)
    )


def test_an_empty_x_with_nonfinite_parameters_is_empty():
    x = np.zeros((1, 2, 0), dtype=np.float64)
    params = [np.array([np.inf, 1.0])] * 3 + [np.array([1.0, 1.0])]
    assert batch_normalization(x, *params).shape == (1, 2, 0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_an_x_of_zeros_equal_to_the_mean_gives_signed_zeros_or_b(dtype, zero):
    """The edge battery's zero datasets on an untrained network's parameters (mean 0, B 0 or not): every
    element is an exact zero product, decided on the whole tensor rather than gathered."""
    x = np.full((2, 4, 3), zero, dtype=dtype)
    scale = np.array([1.0, -1.0, 0.0, -0.0], dtype=dtype)
    b = np.array([0.0, -0.0, -0.0, 2.5], dtype=dtype)
    mean = np.array([0.0, 0.0, -0.0, 0.0], dtype=dtype)
    var = np.ones(4, dtype=dtype)
    y = batch_normalization(x, scale, b, mean, var, epsilon=1e-5)
    assert _bits(y) == _bits(oracle.batch_normalization(x, scale, b, mean, var, 1e-5))
