"""The data-movement group's kernels (Concat, Constant, Flatten, Reshape, Shape, Slice, Unsqueeze, Range,
ArgMax, Softmax) against the naive readings of naive_movement.py: bit for bit for the exact operators, over
every type their sections allow (bool, string and bfloat16 included where they do) with random bit
patterns (NaN payloads, -0, subnormals); exact correct rounding for float Range; within 1 ulp of a
70-digit result for Softmax (and the correctly rounded value away from midpoints); the special values;
every refusal under its rule ID; the element budget checked before allocating; and whole graphs through
``reference.evaluate``."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from naive_movement import (
    NAN,
    Invalid,
    distance_to_midpoint,
    naive_argmax,
    naive_concat,
    naive_flatten,
    naive_range,
    naive_reshape,
    naive_shape,
    naive_slice,
    naive_softmax_exact,
    naive_unsqueeze,
    neighbours,
    round_nearest,
)
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check import reference
from sonnx_check.reference import BudgetExceededError, OutsideProfileError, ReferenceError
from sonnx_check.reference.argmax import argmax
from sonnx_check.reference.concat import concat
from sonnx_check.reference.flatten import flatten
from sonnx_check.reference.range import range_
from sonnx_check.reference.reshape import reshape
from sonnx_check.reference.shape import shape
from sonnx_check.reference.slice import slice_
from sonnx_check.reference.softmax import softmax
from sonnx_check.reference.unsqueeze import unsqueeze

NUMERIC = [
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64,
]  # fmt: skip
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
STRING = np.dtype(object)
CONCAT_TYPES = [*NUMERIC, BFLOAT16, np.bool_, STRING]  # concat.md, slice.md
RESHAPE_TYPES = [*NUMERIC, np.bool_, STRING, np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)]
UNSQUEEZE_TYPES = [*NUMERIC, np.bool_, STRING]
FLOATS = [np.float16, np.float32, np.float64]


# --- arrays ----------------------------------------------------------------------------------------------


def _random_array(draw, dtype, shape) -> np.ndarray:
    """Arrays of ``dtype`` from random bit patterns (every NaN payload, -0, subnormals), random text for
    strings, random truth values for bool."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == STRING:
        words = draw(st.lists(st.text(max_size=3), min_size=count, max_size=count))
        out = np.empty(count, dtype=object)
        out[:] = words
        return out.reshape(shape)
    if dtype == np.bool_:
        return np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), bool).reshape(shape)
    if dtype in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4)):
        low, high = (-8, 7) if dtype == np.dtype(ml_dtypes.int4) else (0, 15)
        values = draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
        return np.array(values, dtype=dtype).reshape(shape)
    size = dtype.itemsize
    raw = draw(st.binary(min_size=count * size, max_size=count * size))
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Same type, same shape, same elements bit for bit (NaN payloads and the sign of zero included)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype == STRING:
        assert actual.tolist() == expected.tolist()
    elif actual.dtype.kind in "fV" or actual.dtype in (BFLOAT16,):
        view = f"u{actual.dtype.itemsize}"
        np.testing.assert_array_equal(actual.view(view), expected.view(view))
    else:
        np.testing.assert_array_equal(actual, expected)


shapes = st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple)


# --- Concat ----------------------------------------------------------------------------------------------


@st.composite
def concat_cases(draw):
    dtype = draw(st.sampled_from(CONCAT_TYPES))
    rank = draw(st.integers(1, 4))
    base = draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    axis = draw(st.integers(0, rank - 1))
    arrays = []
    for _ in range(draw(st.integers(1, 4))):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 3))
        arrays.append(_random_array(draw, dtype, tuple(shape)))
    return arrays, axis


@settings(max_examples=150, deadline=None)
@given(concat_cases())
def test_concat_matches_the_naive_reading(case) -> None:
    arrays, axis = case
    assert_same(concat(arrays, axis=axis), naive_concat(arrays, axis))


# --- Flatten ---------------------------------------------------------------------------------------------


@st.composite
def flatten_cases(draw):
    shape = draw(shapes)
    x = _random_array(draw, draw(st.sampled_from(NUMERIC)), shape)
    return x, draw(st.integers(-len(shape), len(shape)))


@settings(max_examples=100, deadline=None)
@given(flatten_cases())
def test_flatten_matches_the_naive_reading(case) -> None:
    x, axis = case
    assert_same(flatten(x, axis=axis), naive_flatten(x, axis))


# --- Reshape ---------------------------------------------------------------------------------------------


@st.composite
def reshape_cases(draw):
    x_shape = draw(shapes)
    x = _random_array(draw, draw(st.sampled_from(RESHAPE_TYPES)), x_shape)
    size = int(np.prod(x_shape, dtype=np.int64))
    if draw(st.booleans()):  # a valid target shape, then some of its entries replaced by 0 or -1
        target = []
        rest = size
        for _ in range(draw(st.integers(0, 4))):
            divisors = [d for d in range(1, 7) if rest % d == 0] if rest else [0, 1, 2]
            target.append(draw(st.sampled_from(divisors)))
            rest = rest // target[-1] if target[-1] else rest
        if size and rest != 1:
            target.append(rest)
        s = [draw(st.sampled_from([v, 0, -1])) if draw(st.integers(0, 3)) == 0 else v for v in target]
    else:  # anything: the kernel refuses exactly when the naive reading of the rules does
        s = draw(st.lists(st.integers(-2, 4), max_size=5))
    return x, s, draw(st.sampled_from([0, 1, 0, 1, 2]))


@settings(max_examples=300, deadline=None)
@given(reshape_cases())
def test_reshape_matches_the_naive_reading_and_refuses_what_it_refuses(case) -> None:
    x, s, allowzero = case
    s_array = np.array(s, dtype=np.int64)
    try:
        expected = naive_reshape(x, s, allowzero)
    except Invalid as rule:
        with pytest.raises(OutsideProfileError, match=f"Reshape.{rule}"):
            reshape(x, s_array, allowzero=allowzero)
        return
    assert_same(reshape(x, s_array, allowzero=allowzero), expected)


# --- Shape -----------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    shapes,
    st.sampled_from(CONCAT_TYPES),
    st.integers(-7, 7) | st.sampled_from([-500, 500]),
    st.none() | st.integers(-7, 7) | st.sampled_from([-1000, 1000]),
)
def test_shape_matches_the_naive_reading(dims, dtype, start, end) -> None:
    x = np.zeros(dims, dtype=dtype)
    assert_same(shape(x, start=start, end=end), naive_shape(list(dims), start, end))


# --- Slice -----------------------------------------------------------------------------------------------


@st.composite
def slice_cases(draw):
    """Valid parameters by construction (starts and ends in either sign, steps of either sign), then, one
    time in three, one entry replaced by anything: the naive reading decides which rule it breaks."""
    dtype = draw(st.sampled_from(CONCAT_TYPES))
    x_shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    r = len(x_shape)
    axes = [a - r if draw(st.booleans()) else a for a in draw(st.permutations(range(r)))]
    starts, ends, steps = [], [], []
    for a in axes:
        d = x_shape[a]
        step = draw(st.sampled_from([1, 2, 3, 7, -1, -2, -3, -7]))
        first = draw(st.integers(0, d - 1))
        if step > 0:
            stop = draw(st.integers(first + 1, d))  # E' in (S', d]
            end = stop - d if stop < d and draw(st.booleans()) else stop
        else:
            stop = draw(st.integers(-1, first - 1))  # E' in [-1, S')
            end = -d - 1 if stop == -1 else (stop - d if draw(st.booleans()) else stop)
        starts.append(first - d if draw(st.booleans()) else first)
        ends.append(end)
        steps.append(step)
    params = [starts, ends, axes, steps]
    if draw(st.integers(0, 2)) == 0:
        which, entry = draw(st.integers(0, 3)), draw(st.integers(0, r - 1))
        params[which][entry] = draw(st.integers(-7, 7))
    if draw(st.integers(0, 9)) == 0:  # an empty axis of X: no start is valid on it
        x_shape = (*x_shape[:-1], 0)
    x = _random_array(draw, dtype, x_shape)
    itype = draw(st.sampled_from([np.int32, np.int64]))
    return x, [np.array(v, dtype=itype) for v in params]


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(slice_cases())
def test_slice_matches_the_naive_reading_and_refuses_what_it_refuses(case) -> None:
    x, params = case
    try:
        expected = naive_slice(x, *(p.tolist() for p in params))
    except Invalid as rule:
        with pytest.raises(OutsideProfileError, match=f"Slice.{rule}"):
            slice_(x, *params)
        return
    assert_same(slice_(x, *params), expected)


def test_slice_reverses_an_axis_down_to_its_first_element() -> None:
    x = np.arange(5, dtype=np.float32)
    params = [np.array([v], np.int64) for v in (-1, -6, 0, -1)]  # E = -d-1: past element 0 going down
    np.testing.assert_array_equal(slice_(x, *params), [4, 3, 2, 1, 0])
    params = [np.array([v], np.int64) for v in (4, -1, 0, -2)]  # E = -1 is the last element: E' = 4
    with pytest.raises(OutsideProfileError, match="Slice.Y.C2"):
        slice_(x, *params)


def test_slice_figure_example_has_the_shape_the_text_states() -> None:
    """slice.md's figure: X 5 x 6, A [0, 1], S [0, 1], E [4, 6], K [1, 2] gives Y of shape (4, 3) (the figure
    holds the values, which the text does not print; the formula gives them)."""
    x = np.arange(30, dtype=np.float64).reshape(5, 6)
    params = [np.array(v, np.int64) for v in ([0, 1], [4, 6], [0, 1], [1, 2])]
    y = slice_(x, *params)
    np.testing.assert_array_equal(y, x[0:4, 1:6:2])
    assert y.shape == (4, 3)


# --- Unsqueeze -------------------------------------------------------------------------------------------


@st.composite
def unsqueeze_cases(draw):
    x_shape = draw(st.lists(st.integers(0, 3), max_size=3).map(tuple))
    x = _random_array(draw, draw(st.sampled_from(UNSQUEEZE_TYPES)), x_shape)
    n = draw(st.integers(0, 3))
    r_y = len(x_shape) + n
    axes = draw(st.lists(st.integers(-r_y - 1, r_y), min_size=n, max_size=n))
    return x, axes


@settings(max_examples=200, deadline=None)
@given(unsqueeze_cases())
def test_unsqueeze_matches_the_naive_reading_and_refuses_what_it_refuses(case) -> None:
    x, axes = case
    a = np.array(axes, dtype=np.int64)
    try:
        expected = naive_unsqueeze(x, axes)
    except Invalid as rule:
        with pytest.raises(OutsideProfileError, match=f"Unsqueeze.{rule}"):
            unsqueeze(x, a)
        return
    assert_same(unsqueeze(x, a), expected)


# --- Range -----------------------------------------------------------------------------------------------


@st.composite
def int_range_cases(draw):
    dtype = np.dtype(draw(st.sampled_from([np.int16, np.int32, np.int64])))
    info = np.iinfo(dtype)
    bound = st.integers(int(info.min), int(info.max)) | st.sampled_from(
        [int(info.min), int(info.max), 0, -1, 1]
    )
    s, lim = draw(bound), draw(bound)
    smallest = max(1, -(-abs(lim - s) // 60))  # at most 60 elements
    magnitude = draw(st.integers(smallest, int(info.max)) | st.just(smallest))
    d = magnitude if draw(st.booleans()) else -magnitude
    return [dtype.type(v) for v in (s, lim, d)]


@settings(max_examples=200, deadline=None)
@given(int_range_cases())
def test_integer_range_is_exact(case) -> None:
    s, lim, d = case
    assert_same(range_(s, lim, d), naive_range(s, lim, d, s.dtype))


@st.composite
def float_range_cases(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    width = 32 if dtype == np.float32 else 64
    finite = st.floats(allow_nan=False, allow_infinity=False, width=width, allow_subnormal=True)
    s = draw(finite)
    d = draw(finite.filter(lambda v: v != 0))
    k = draw(st.integers(0, 40))
    # L near S + k D (exactly representable or not): K is then about k.
    with np.errstate(all="ignore"):
        near = np.float64(s) + k * np.float64(d)
        lim = draw(st.sampled_from([near, np.nextafter(near, np.inf), np.nextafter(near, -np.inf)]))
        values = [dtype.type(v) for v in (s, lim, d)]
    assume(all(np.isfinite(values)))
    return values


@settings(max_examples=300, deadline=None)
@given(float_range_cases())
def test_float_range_is_the_exact_value_rounded_once(case) -> None:
    s, lim, d = case
    s_, lim_, d_ = (Fraction(float(v)) for v in (s, lim, d))
    assume(max(math.ceil((lim_ - s_) / d_), 0) <= 200)
    assert_same(range_(s, lim, d), naive_range(s, lim, d, s.dtype))


@pytest.mark.parametrize(
    ("dtype", "start", "limit", "delta"),
    [
        # S + i D on a midpoint between two floats: the ties go to the even significand.
        (np.float32, 2.0**24, 2.0**24 + 8, 1.0),
        (np.float32, 2.0**24 + 2, 2.0**24 - 6, -1.0),
        (np.float64, 2.0**53, 2.0**53 + 8, 1.0),
        (np.float64, 1e-300, 6.0, 1.0 + 2.0**-52),  # 3 D is a midpoint; S breaks the tie upwards
        (np.float64, -1e-300, 6.0, 1.0 + 2.0**-52),  # and downwards
        # subnormal results, exactly
        (np.float64, 5e-324, 1e-322, 5e-324),
        (np.float64, -1e-310, 1e-310, 3e-311),
        (np.float32, 1e-45, 3e-44, 2e-45),
        # a float quotient (L - S) / D that would round to an integer: K is exact
        (np.float64, 0.0, 1.0, 0.1),
        (np.float64, 0.1, 1.0, 0.1),
        (np.float32, 0.0, 1.0, 0.1),
        # -0 is S itself at Y[0]; the other exact zeros are +0
        (np.float64, -0.0, 3.0, 1.0),
        (np.float64, -2.0, 1.0, 1.0),
        # a span wider than the largest float
        (np.float64, -1.7e308, 1.7e308, 1e308),
        (np.float32, -3.4e38, 3.4e38, 1e38),
    ],
)
def test_float_range_edge_cases(dtype, start, limit, delta) -> None:
    values = [dtype(v) for v in (start, limit, delta)]
    assert_same(range_(*values), naive_range(*values, np.dtype(dtype)))


def test_float_range_is_not_a_repeated_addition() -> None:
    s, d = np.float32(0.1), np.float32(0.1)
    y = range_(s, np.float32(100.0), d)
    repeated = np.cumsum(np.r_[s, np.full(y.size - 1, d)], dtype=np.float32)
    assert (y != repeated).any()  # the accumulation drifts; the kernel gives S + i D rounded once
    assert y[-1] == round_nearest(Fraction(float(s)) + (y.size - 1) * Fraction(float(d)), np.float32)


def test_float64_range_of_a_million_elements_is_fast_enough() -> None:
    start = time.perf_counter()
    y = range_(np.float64(0.0), np.float64(1.0), np.float64(1e-6))
    assert time.perf_counter() - start < 5
    # The double 1e-6 is below 10^-6: (L - S) / D = 1000000.00000000004..., so K = 1000001 (a float
    # quotient rounds to 1000000.0 and drops the last element), and 10^6 D, just below 1, rounds to 1.0.
    assert y.size == 1_000_001 and y[-1] == 1.0 == round_nearest(10**6 * Fraction(1e-6), np.float64)
    assert y[-2] == round_nearest(999_999 * Fraction(1e-6), np.float64)


# --- ArgMax ----------------------------------------------------------------------------------------------

_ARGMAX_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0, 5e-324]


@st.composite
def argmax_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(NUMERIC)))
    x_shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    if dtype.kind == "f":
        pool = [dtype.type(v) for v in _ARGMAX_FLOATS] + [np.finfo(dtype).max, np.finfo(dtype).min]
    else:
        info = np.iinfo(dtype)
        pool = [dtype.type(v) for v in (info.min, info.max, 0, 1, 2)]
    count = int(np.prod(x_shape))
    x = np.array(draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count)), dtype).reshape(
        x_shape
    )
    return x, draw(st.integers(0, len(x_shape) - 1)), draw(st.integers(0, 1)), draw(st.integers(0, 1))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(argmax_cases())
def test_argmax_matches_the_naive_reading(case) -> None:
    x, axis, keepdims, last = case
    assert_same(
        argmax(x, axis=axis, keepdims=keepdims, select_last_index=last), naive_argmax(x, axis, keepdims, last)
    )


def test_argmax_nan_has_priority_and_zeros_tie() -> None:
    x = np.array([[1.0, np.nan, np.inf, np.nan], [-0.0, 0.0, -1.0, -0.0], [-np.inf] * 4], np.float32)
    assert argmax(x, axis=1, keepdims=0, select_last_index=0).tolist() == [1, 0, 0]
    assert argmax(x, axis=1, keepdims=0, select_last_index=1).tolist() == [3, 3, 3]


# --- Softmax ---------------------------------------------------------------------------------------------


def _check_softmax(x: np.ndarray, axis: int, y: np.ndarray) -> None:
    """Special values exactly; every other element one of the two floats bracketing the exact value, and
    the nearest one unless the exact value lies within 2^-20 ulp of a midpoint."""
    exact = naive_softmax_exact(x, axis)
    assert y.dtype == x.dtype and y.shape == x.shape
    for index in np.ndindex(*x.shape):
        value, got = exact[index], y[index]
        if isinstance(value, str) and value == NAN:
            assert np.isnan(got), (index, got)
            continue
        below, above = neighbours(value, x.dtype)
        assert got in (below, above), (index, float(value), got)
        assert not np.signbit(got), (index, got)  # results are >= 0; zeros are +0
        if distance_to_midpoint(value, x.dtype) > Fraction(1, 2**20):
            assert got == round_nearest(value, x.dtype), (index, float(value), got)


_SOFTMAX_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]


@st.composite
def softmax_cases(draw):
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    x_shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    width = {np.float16: 16, np.float32: 32, np.float64: 64}[dtype.type]
    scale = draw(st.sampled_from([1.0, 30.0, 1000.0]))
    finite = st.floats(-scale, scale, width=width) | st.floats(
        allow_nan=False, allow_infinity=False, width=width
    )
    special = st.sampled_from(_SOFTMAX_SPECIALS)
    count = int(np.prod(x_shape))
    values = draw(st.lists(st.one_of(finite, finite, finite, special), min_size=count, max_size=count))
    x = np.array(values, dtype=dtype).reshape(x_shape)
    return x, draw(st.integers(0, len(x_shape) - 1))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(softmax_cases())
def test_softmax_is_within_one_ulp_and_correctly_rounded_away_from_midpoints(case) -> None:
    x, axis = case
    _check_softmax(x, axis, softmax(x, axis=axis))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_special_values_as_the_float_section_states(dtype) -> None:
    rows = np.array(
        [
            [1.0, 2.0, np.inf],  # +inf: every element NaN
            [np.nan, 1.0, 2.0],  # NaN: every element NaN
            [-np.inf, -np.inf, -np.inf],  # -inf only: every element 0 (second case)
            [-np.inf, 0.0, 0.0],  # -inf beside finite values: 0, the others share
            [-np.inf, np.inf, 1.0],  # +inf wins over -inf: NaN
        ],
        dtype=dtype,
    )
    y = softmax(rows, axis=1)
    assert np.isnan(y[0]).all() and np.isnan(y[1]).all() and np.isnan(y[4]).all()
    assert_same(y[2], np.zeros(3, dtype))
    assert_same(y[3], np.array([0.0, 0.5, 0.5], dtype))


def test_softmax_double_reaches_the_subnormal_range_rounded_once() -> None:
    x = np.array([0.0, -700.0, -720.5, -740.25, -744.4, -745.1, -745.2, -800.0, -1e308, -np.inf], np.float64)
    y = softmax(x, axis=0)
    _check_softmax(x, 0, y)
    assert y[1] > 0 and y[4] > 0 and y[-3] == 0 and y[-1] == 0


def test_softmax_double_of_a_long_row_is_correctly_rounded() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 20.0, (3, 200))
    _check_softmax(x, 1, softmax(x, axis=1))


def test_softmax_float32_values_of_the_text() -> None:
    """Float Example 1 of softmax.md: [9.5, 35.7] gives about [4.182965147e-12, 0.9999999999958]."""
    y = softmax(np.array([9.5, 35.7], np.float32), axis=0)
    assert y.tolist() == [np.float32(4.182965116120907e-12), np.float32(1.0)]


# --- running nodes: attributes, defaults and refusals -----------------------------------------------------


def _run(op: str, inputs, outputs=("Y",), **attrs):
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    return reference.run_node(h.make_node(op, names, list(outputs), **attrs), list(inputs))


def test_absent_attributes_take_the_onnx_defaults() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (y,) = _run("Flatten", [x])  # axis 1
    assert y.shape == (2, 12)
    (y,) = _run("Shape", [x])  # start 0, end = rank
    assert y.tolist() == [2, 3, 4] and y.dtype == np.int64
    (y,) = _run("Shape", [x], start=-2)
    assert y.tolist() == [3, 4]
    (y,) = _run("ArgMax", [x])  # axis 0, keepdims 1, select_last_index 0
    assert y.shape == (1, 3, 4) and (y == 1).all()
    (y,) = _run("Reshape", [x, np.array([0, -1], np.int64)])  # allowzero 0: the 0 copies dX0
    assert y.shape == (2, 12)


def test_constant_forms() -> None:
    tensor = numpy_helper.from_array(np.array([[-0.0, np.nan], [np.inf, 1.5]], np.float16))
    (c,) = _run("Constant", [], outputs=["C"], value=tensor)
    assert_same(c, numpy_helper.to_array(tensor))
    (c,) = _run("Constant", [], outputs=["C"], value_floats=[1.5, -2.0])
    assert_same(c, np.array([1.5, -2.0], np.float32))
    (c,) = _run("Constant", [], outputs=["C"], value_int=7)
    assert_same(c, np.array(7, np.int64))
    node = h.make_node("Constant", [], ["C"])
    node.attribute.append(h.make_attribute("value_ints", [], attr_type=onnx.AttributeProto.INTS))
    (c,) = reference.run_node(node, [])
    assert_same(c, np.array([], np.int64))


def _refusal(call, rule: str) -> None:
    with pytest.raises(OutsideProfileError, match=rule.replace(".", r"\.")):
        call()


F = np.zeros((2, 3), np.float32)
I64 = np.int64


@pytest.mark.parametrize(
    ("call", "rule"),
    [
        (lambda: concat([], axis=0), "Concat.X.C1"),
        (lambda: concat([F, F.astype(np.float64)], axis=0), "Concat.Y.C4"),
        (lambda: concat([F.astype(np.complex64)], axis=0), "Concat.types"),
        (lambda: concat([F, F], axis=-1), "Concat.R1"),
        (lambda: concat([F, F[None]], axis=0), "Concat.X.C2"),
        (lambda: concat([F, F], axis=2), "Concat.axis.C1"),
        (lambda: concat([F, F.T], axis=0), "Concat.X.C3"),
        (lambda: _run("Constant", [], outputs=["C"]), "Constant.R1"),
        (lambda: _run("Constant", [], outputs=["C"], value_strings=["a"]), "Constant.types"),
        (
            lambda: _run("Constant", [], outputs=["C"], value=numpy_helper.from_array(np.array([True]))),
            "Constant.types",
        ),
        (
            lambda: _run(
                "Constant",
                [],
                outputs=["C"],
                sparse_value=h.make_sparse_tensor(
                    numpy_helper.from_array(np.array([1.0], np.float32)),
                    numpy_helper.from_array(np.array([0], np.int64)),
                    [2],
                ),
            ),
            "Constant.R2",
        ),
        (lambda: flatten(F, axis=3), "Flatten.axis.C1"),
        (lambda: flatten(F.astype(bool), axis=1), "Flatten.types"),
        (lambda: reshape(F, np.array([6], np.int64), allowzero=2), "Reshape.allowzero.C1"),
        (lambda: reshape(F, np.array([6], np.int32)), "Reshape.types"),
        (lambda: reshape(F, np.array([[6]], np.int64)), "Reshape.S.rank"),
        (lambda: reshape(F, np.array([-1, -1], np.int64)), "Reshape.S.C1"),
        (lambda: reshape(F, np.array([2, 3, 0], np.int64)), "Reshape.allowzero.C2"),
        (lambda: reshape(F, np.array([-2, -3], np.int64)), "Reshape.allowzero.C3"),
        (lambda: reshape(np.zeros((0, 3)), np.array([-1, 3], I64)), "Reshape.allowzero.C3"),
        (lambda: reshape(F, np.array([0, -1], I64), allowzero=1), "Reshape.allowzero.C3"),  # the text's Ex. 3
        (lambda: reshape(F, np.array([0, 6], I64), allowzero=1), "Reshape.allowzero.C3"),
        (lambda: reshape(F, np.array([4, -1], I64)), "Reshape.X.C1"),
        (lambda: reshape(F, np.array([7], I64)), "Reshape.X.C1"),
        (lambda: shape(F.astype(np.complex64)), "Shape.types"),
        (lambda: _run("Slice", [F, *[np.array([0, 0], I64)] * 2]), "Slice.R1"),
        (lambda: _run("Slice", [F, *[np.array([0, 0], I64)] * 3]), "Slice.R3"),
        (lambda: slice_(np.float32(1), *[np.array([], I64)] * 4), "Slice.X.C3"),
        (lambda: slice_(F, *[np.array([0], I64)] * 4), "Slice.R2"),
        (lambda: slice_(F, *[np.array([0, 1], I64)] * 3, np.array([1, 1], np.int32)), "Slice.R10"),
        (lambda: slice_(F, *[np.array([0, 1], np.int16)] * 4), "Slice.types"),
        (lambda: slice_(F, np.array([[0, 0]], I64), *[np.array([[1, 1]], I64)] * 3), "Slice.S.rank"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 0], [1, 1], [0, 2], [1, 1]))), "Slice.A.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 0], [1, 1], [0, -2], [1, 1]))), "Slice.A.C3"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 0], [1, 1], [0, 1], [1, 0]))), "Slice.K.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 3], [1, 3], [0, 1], [1, 1]))), "Slice.S.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, -4], [1, 3], [0, 1], [1, 1]))), "Slice.S.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 0], [1, 4], [0, 1], [1, 1]))), "Slice.E.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 2], [1, 3], [0, 1], [1, -1]))), "Slice.E.C2"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 2], [1, 1], [0, 1], [1, 1]))), "Slice.R6"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 0], [1, 2], [0, 1], [1, -1]))), "Slice.R7"),
        (lambda: slice_(F, *(np.array(v, I64) for v in ([0, 1], [1, 1], [0, 1], [1, 1]))), "Slice.Y.C2"),
        (
            lambda: slice_(np.zeros((0, 2)), *(np.array(v, I64) for v in ([0, 0], [0, 1], [0, 1], [1, 1]))),
            "Slice.S.C2",
        ),
        (lambda: unsqueeze(F, np.array([0, 4], I64)), "Unsqueeze.A.C1"),
        (lambda: unsqueeze(F, np.array([0, -4], I64)), "Unsqueeze.A.C2"),
        (lambda: unsqueeze(F, np.array([1, 1], I64)), "Unsqueeze.A.C2"),
        (lambda: unsqueeze(F, np.array(0, I64)), "Unsqueeze.A.rank"),
        (lambda: unsqueeze(F, np.array([0], np.int32)), "Unsqueeze.types"),
        (lambda: unsqueeze(F.astype(BFLOAT16), np.array([0], I64)), "Unsqueeze.types"),
        (lambda: range_(I64(0), I64(4), I64(0)), "Range.D.C1"),
        (lambda: range_(np.float32(0), np.float32(4), np.float32(-0.0)), "Range.D.C1"),
        (lambda: range_(np.array([0], I64), I64(4), I64(1)), "Range.S.rank"),
        (lambda: range_(np.int8(0), np.int8(4), np.int8(1)), "Range.types"),
        (lambda: range_(np.float16(0), np.float16(4), np.float16(1)), "Range.types"),
        (lambda: range_(I64(0), np.int32(4), I64(1)), "GR3"),
        (lambda: range_(np.float64(0), np.float64(np.inf), np.float64(1)), "real values only"),
        (lambda: range_(np.float64(np.nan), np.float64(1), np.float64(1)), "real values only"),
        (lambda: argmax(F, axis=-1, keepdims=1, select_last_index=0), "ArgMax.R4"),
        (lambda: argmax(F, axis=2, keepdims=1, select_last_index=0), "ArgMax.axis.C2"),
        (lambda: argmax(F, axis=0, keepdims=2, select_last_index=0), "ArgMax.keepdims.C1"),
        (lambda: argmax(F, axis=0, keepdims=1, select_last_index=-1), "ArgMax.select_last_index.C1"),
        (lambda: argmax(np.zeros((2, 0)), axis=1, keepdims=1, select_last_index=0), "ArgMax.R5"),
        (lambda: argmax(F.astype(BFLOAT16), axis=0, keepdims=1, select_last_index=0), "ArgMax.types"),
        (lambda: argmax(F.astype(bool), axis=0, keepdims=1, select_last_index=0), "ArgMax.types"),
        (lambda: softmax(F, axis=-1), "Softmax.R1"),
        (lambda: _run("Softmax", [F]), "Softmax.R1"),  # ONNX's default axis, -1
        (lambda: softmax(F, axis=2), "Softmax.axis.C2"),
        (lambda: softmax(np.float32(1.0), axis=0), "Softmax.axis.C2"),
        (lambda: softmax(F.astype(np.int32), axis=0), "Softmax.types"),
        (lambda: softmax(F.astype(BFLOAT16), axis=0), "Softmax.types"),
    ],
)
def test_outside_the_profile_is_refused_under_the_rule_id(call, rule) -> None:
    _refusal(call, rule)


def test_missing_inputs_and_attributes_are_reference_errors() -> None:
    with pytest.raises(ReferenceError, match="Concat without attribute axis"):
        _run("Concat", [F])
    with pytest.raises(ReferenceError, match="Reshape without input S"):
        _run("Reshape", [F])
    with pytest.raises(ReferenceError, match="several value attributes"):
        _run("Constant", [], outputs=["C"], value_int=1, value_float=1.0)


# --- the element budget ----------------------------------------------------------------------------------

BIG = np.broadcast_to(np.float32(0), (10**5, 10**5))  # 10^10 elements that occupy no memory


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda b: concat([BIG, BIG], axis=0, max_elements=b), "Concat output Y"),
        (lambda b: flatten(BIG, axis=1, max_elements=b), "Flatten output Y"),
        (lambda b: reshape(BIG, np.array([-1], I64), max_elements=b), "Reshape output Y"),
        (lambda b: unsqueeze(BIG, np.array([0], I64), max_elements=b), "Unsqueeze output Y"),
        (
            lambda b: slice_(
                BIG, *(np.array(v, I64) for v in ([0, 0], [-1, -1], [0, 1], [1, 1])), max_elements=b
            ),
            "Slice output Y",
        ),
        (lambda b: argmax(BIG, axis=0, keepdims=1, select_last_index=0, max_elements=b), "ArgMax"),
        (lambda b: softmax(BIG, axis=1, max_elements=b), "Softmax output Y"),
        (lambda b: range_(I64(0), I64(10**12), I64(1), max_elements=b), "Range output Y"),
        (
            lambda b: range_(np.float64(0), np.float64(1), np.float64(1e-300), max_elements=b),
            "Range output Y",
        ),
        (
            lambda b: reference.run_node(
                h.make_node(
                    "Constant",
                    [],
                    ["C"],
                    value=h.make_tensor("v", onnx.TensorProto.FLOAT, [2000], [0.0] * 2000),
                ),
                [],
                max_elements=b,
            ),
            "Constant output C",
        ),
    ],
)
def test_the_budget_is_checked_before_allocating(call, what) -> None:
    with pytest.raises(BudgetExceededError, match=what):
        call(1000)


# --- whole graphs -----------------------------------------------------------------------------------------


def test_a_graph_of_movement_operators_evaluates_end_to_end() -> None:
    """X -> Shape[0:1] -> Concat with a Constant -1 -> Reshape X -> Softmax(axis 1) -> ArgMax, beside an
    Unsqueeze, a Slice and a Range: the shapes flow from node to node as the texts state them."""
    nodes = [
        h.make_node("Shape", ["X"], ["batch"], start=0, end=1),
        h.make_node("Constant", [], ["minus_one"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        h.make_node("Concat", ["batch", "minus_one"], ["target"], axis=0),
        h.make_node("Reshape", ["X", "target"], ["flat"], allowzero=0),
        h.make_node("Softmax", ["flat"], ["probs"], axis=1),
        h.make_node("ArgMax", ["probs"], ["best"], axis=1, keepdims=0, select_last_index=0),
        h.make_node("Unsqueeze", ["best", "zero"], ["best_2d"]),
        h.make_node("Slice", ["probs", "starts", "ends", "axes", "steps"], ["reversed"]),
        h.make_node("Range", ["r_start", "r_limit", "r_delta"], ["positions"]),
        h.make_node("Flatten", ["reversed"], ["reversed_flat"], axis=0),
    ]
    initializers = [
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "starts"),
        numpy_helper.from_array(np.array([2, -13], np.int64), "ends"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "axes"),
        numpy_helper.from_array(np.array([1, -1], np.int64), "steps"),
        numpy_helper.from_array(np.array(0.5, np.float32), "r_start"),
        numpy_helper.from_array(np.array(2.0, np.float32), "r_limit"),
        numpy_helper.from_array(np.array(0.25, np.float32), "r_delta"),
    ]
    graph = h.make_graph(
        nodes,
        "movement",
        [h.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [2, 3, 4])],
        [
            h.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None)
            for n in ("best_2d", "reversed_flat", "positions")
        ],  # fmt: skip
        initializer=initializers,
    )
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = reference.evaluate(h.make_model(graph), {"X": x})
    assert out["best_2d"].tolist() == [[11, 11]]
    probs = softmax(x.reshape(2, 12), axis=1)
    assert_same(out["reversed_flat"], probs[:, ::-1].reshape(1, 24))
    assert_same(out["positions"], np.arange(0.5, 2.0, 0.25, dtype=np.float32))
