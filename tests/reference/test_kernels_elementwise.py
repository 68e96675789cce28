"""The element-wise reference kernels against the naive per-element reading (naive_elementwise.py), over every
type of their sections, small shapes and the special values (NaN, +-inf, +-0, subnormals, type extremes,
ties); the inexact ones are checked to be the correctly rounded value of the exact or 60-digit result (so
within half an ulp, and a fortiori within 1 ulp); and what they refuse."""

from __future__ import annotations

import math
from fractions import Fraction

import naive_elementwise as naive
import numpy as np
import onnx
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.reference.abs import absolute
from sonnx_check.reference.add import add
from sonnx_check.reference.clip import clip
from sonnx_check.reference.div import div
from sonnx_check.reference.elementwise_common import BFLOAT16, DataConstraintError, round_scaled
from sonnx_check.reference.exp import exp
from sonnx_check.reference.leakyrelu import leaky_relu
from sonnx_check.reference.less import less
from sonnx_check.reference.log import log
from sonnx_check.reference.mul import mul
from sonnx_check.reference.neg import negative
from sonnx_check.reference.pow import power
from sonnx_check.reference.relu import relu
from sonnx_check.reference.sigmoid import sigmoid
from sonnx_check.reference.sqrt import sqrt
from sonnx_check.reference.sub import sub
from sonnx_check.reference.tanh import tanh
from sonnx_check.reference.where import where

FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]
SIGNED = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UNSIGNED = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
FEW = settings(max_examples=60, deadline=None)
MANY = settings(max_examples=120, deadline=None)


def _float_pool(dtype: np.dtype) -> list:
    info = np.finfo(dtype)
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, 1.5, -1.5, 0.1, -7.25]
    values += [info.max, info.min, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal]
    values += [1 + info.eps, 1 - info.epsneg, info.tiny * 3]
    return [dtype.type(v) for v in values]


def float_elements(dtype: np.dtype, low: float | None = None, high: float | None = None):
    """Special values of the type, and any float of it (or any in [low, high])."""
    width = 8 * dtype.itemsize
    if low is None:
        anywhere = st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    else:
        anywhere = st.floats(min_value=low, max_value=high, width=width, allow_subnormal=True)
    return st.one_of(st.sampled_from(_float_pool(dtype)), anywhere).map(dtype.type)


def int_elements(dtype: np.dtype):
    info = np.iinfo(dtype)
    pool = [info.min, info.min + 1, -1, 0, 1, 2, 3, info.max - 1, info.max]
    pool = [v for v in pool if info.min <= v <= info.max]
    return st.one_of(st.sampled_from(pool), st.integers(int(info.min), int(info.max))).map(dtype.type)


def elements(dtype: np.dtype):
    return float_elements(dtype) if dtype.kind == "f" else int_elements(dtype)


@st.composite
def arrays(draw, dtypes, count=1, element_strategy=None):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(SHAPES)
    strategy = element_strategy(dtype) if element_strategy else elements(dtype)
    return [draw(hnp.arrays(dtype, shape, elements=strategy)) for _ in range(count)]


def assert_correctly_rounded(result: np.ndarray, exact_of, inputs: list[np.ndarray]) -> None:
    """Where the exact result is a finite non-zero real, the kernel's float is within half an ulp of it."""
    for index in np.ndindex(*result.shape):
        exact = exact_of(*(a[index].item() for a in inputs))
        value = result[index]
        if exact is None or not np.isfinite(value) or exact == 0:
            continue
        assert naive.ulps_apart(value, exact, result.dtype) <= Fraction(1, 2), (index, value, float(exact))


# -- exact operators ---------------------------------------------------------------------------------------


@MANY
@given(arrays(FLOATS + SIGNED + UNSIGNED))
def test_abs_matches_the_naive_reading(case) -> None:
    (x,) = case
    if x.dtype in SIGNED:
        x = np.where(x == np.iinfo(x.dtype).min, x.dtype.type(0), x)  # Abs.X.C2, tested as a refusal
    assert_identical(absolute(x), naive.elementwise(naive.abs_, x.dtype, x))


@MANY
@given(arrays(FLOATS + SIGNED + UNSIGNED))
def test_neg_matches_the_naive_reading(case) -> None:
    (a,) = case
    if a.dtype.kind == "f":
        expected = naive.elementwise(naive.neg_float, a.dtype, a)
    else:
        expected = naive.elementwise(lambda v: naive.wrap(-v, a.dtype), a.dtype, a)
    assert_identical(negative(a), expected)


def test_neg_flips_the_sign_bit_of_every_float_and_bfloat16() -> None:
    a = np.array([0.0, -0.0, np.inf, -np.inf, 1.5, -2.0], np.float32)
    np.testing.assert_array_equal(np.signbit(negative(a)), ~np.signbit(a))
    bf16 = a.astype(BFLOAT16)
    out = negative(bf16)
    assert out.dtype == bf16.dtype
    np.testing.assert_array_equal(out.view(np.uint16), bf16.view(np.uint16) ^ 0x8000)
    nan = np.array([np.nan], np.float64)
    assert np.signbit(negative(nan)) != np.signbit(nan)


@MANY
@given(arrays(FLOATS + SIGNED))
def test_relu_matches_the_naive_reading(case) -> None:
    (x,) = case
    assert_identical(relu(x), naive.elementwise(naive.relu, x.dtype, x))


def test_relu_keeps_minus_zero_and_nan_payloads() -> None:
    x = np.array([-0.0, 0.0, -1.0, np.nan], np.float32)
    x[3] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0]
    y = relu(x)
    assert np.signbit(y[0]) and not np.signbit(y[1]) and not np.signbit(y[2])
    assert y.view(np.uint32)[3] == 0x7FC00123


@MANY
@given(st.data())
def test_where_matches_the_naive_reading(data) -> None:
    x, y = data.draw(arrays(FLOATS + SIGNED + UNSIGNED, count=2))
    condition = data.draw(hnp.arrays(np.bool_, x.shape))
    z = where(condition, x, y)
    assert_identical(z, naive.elementwise(naive.where, x.dtype, condition, x, y))
    if x.dtype.kind == "f":  # bit for bit, NaN payloads included
        np.testing.assert_array_equal(
            z.view(f"u{x.dtype.itemsize}"), np.where(condition, x, y).view(f"u{x.dtype.itemsize}")
        )


@MANY
@given(arrays(FLOATS + SIGNED + UNSIGNED, count=2))
def test_less_matches_the_naive_reading(case) -> None:
    a, b = case
    assert_identical(less(a, b), naive.elementwise(naive.less, np.bool_, a, b))


@MANY
@given(st.data())
def test_clip_matches_the_naive_reading(data) -> None:
    (x,) = data.draw(arrays(FLOATS + SIGNED + UNSIGNED))
    strategy = elements(x.dtype)
    low, high = np.array(data.draw(strategy)), np.array(data.draw(strategy))
    expected = naive.elementwise(
        lambda v: naive.clip(v, low.item(), high.item(), x.dtype.kind == "f"), x.dtype, x
    )
    assert_identical(clip(x, low, high), expected)


@pytest.mark.parametrize(
    ("low", "high", "x", "y"),
    [
        (0.0, -0.0, [-1.0, -0.0, 0.0, 0.5, np.nan], [0.0, -0.0, 0.0, -0.0, np.nan]),  # the text's note
        (np.nan, np.nan, [-np.inf, 0.0, np.inf, np.nan], [-np.inf, 0.0, np.inf, np.nan]),  # Example 4
        (-1.0, np.nan, [-np.inf, 0.0, np.inf, np.nan], [-1.0, 0.0, np.inf, np.nan]),  # Example 3
        (2.0, 1.0, [np.nan, 0.0, 5.0], [1.0, 1.0, 1.0]),  # L > M gives M, NaN included
    ],
)
def test_clip_bounds_zero_signs_and_nan(low, high, x, y) -> None:
    for dtype in FLOATS:
        out = clip(np.array(x, dtype), np.array(low, dtype), np.array(high, dtype))
        assert_identical(out, np.array(y, dtype))


# -- correctly rounded operators ---------------------------------------------------------------------------

ARITHMETIC = {"add": add, "sub": sub, "mul": mul, "div": div}


@MANY
@given(st.sampled_from(sorted(ARITHMETIC)), arrays(FLOATS + SIGNED + UNSIGNED, count=2))
def test_arithmetic_matches_the_naive_reading(op, case) -> None:
    a, b = case
    if op == "div" and a.dtype.kind in "iu":
        b = np.where(b == 0, b.dtype.type(1), b)  # Div.B.C3, tested as a refusal
    with np.errstate(all="ignore"):
        expected = naive.elementwise(lambda x, y: naive.arithmetic(op, x, y, a.dtype), a.dtype, a, b)
    assert_identical(ARITHMETIC[op](a, b), expected)


@MANY
@given(st.sampled_from(sorted(ARITHMETIC)), arrays(FLOATS, count=2))
def test_float_arithmetic_is_correctly_rounded(op, case) -> None:
    a, b = case
    ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}
    ops["div"] = lambda x, y: x / y if y else None

    def exact(x, y):
        if not (math.isfinite(x) and math.isfinite(y)):
            return None
        return ops[op](Fraction(x), Fraction(y))

    assert_correctly_rounded(ARITHMETIC[op](a, b), exact, [a, b])


@pytest.mark.parametrize(
    ("a", "b", "c"),
    [
        (-35, 3, -11), (35, -3, -11), (-35, -3, 11), (7, 7, 1), (-1, 2, 0), (-128, -1, -128), (-128, 1, -128),
        (127, -1, -127), (-128, 3, -42),
    ],
)  # fmt: skip
def test_integer_div_truncates_toward_zero_and_wraps_the_one_overflow(a, b, c) -> None:
    out = div(np.array([a], np.int8), np.array([b], np.int8))
    assert out.dtype == np.int8 and out.item() == c


def test_integer_wrap_around_examples() -> None:
    i8 = lambda *v: np.array(v, np.int8)  # noqa: E731
    assert_identical(add(i8(-6, 100, -100), i8(-3, 100, -100)), i8(-9, -56, 56))
    assert_identical(sub(i8(-6, 10, 10), i8(-3, 100, -120)), i8(-3, -90, -126))
    assert_identical(mul(i8(-6, -9, -9, 9), i8(-3, 100, -100, 100)), i8(18, 124, -124, -124))
    i64 = np.array([np.iinfo(np.int64).max], np.int64)
    assert add(i64, i64).item() == -2
    assert mul(np.array([2**40], np.int64), np.array([2**40], np.int64)).item() == 0


@MANY
@given(arrays(FLOATS))
def test_sqrt_matches_the_naive_reading_and_is_correctly_rounded(case) -> None:
    (x,) = case
    y = sqrt(x)
    assert_identical(y, naive.elementwise(lambda v: naive.sqrt(v, x.dtype), x.dtype, x))
    exact_square = lambda v: Fraction(v) if math.isfinite(v) and v > 0 else None  # noqa: E731
    for index in np.ndindex(*x.shape):  # y**2 brackets x: y is the float nearest sqrt(x)
        v = exact_square(x[index].item())
        if v is not None and np.isfinite(y[index]):
            r = Fraction(y[index].item())
            t = y.dtype.type
            up = Fraction(np.nextafter(y[index], t(np.inf)).item())
            down = Fraction(np.nextafter(y[index], t(-np.inf)).item())
            assert ((r + down) / 2) ** 2 <= v <= ((r + up) / 2) ** 2


@MANY
@given(st.data())
def test_leaky_relu_matches_the_naive_reading(data) -> None:
    (x,) = data.draw(arrays(FLOATS))
    alpha = float(
        np.float32(
            data.draw(
                st.one_of(st.sampled_from([0.01, 0.2, 0.0, -0.0, -np.inf, np.nan, 3.0]), st.floats(width=32))
            )
        )
    )
    expected = naive.elementwise(lambda v: naive.leaky_relu(v, alpha, x.dtype), x.dtype, x)
    assert_identical(leaky_relu(x, alpha=alpha), expected)


def test_leaky_relu_of_float16_rounds_the_exact_product_once() -> None:
    # float32(0.01) times a float16: the exact product rounded to float16, not alpha rounded first.
    x = np.array([-3.0, -65504.0, -6e-8], np.float16)
    alpha = float(np.float32(0.01))
    expected = [naive.round_to(Fraction(alpha) * Fraction(v.item()), np.float16) for v in x]
    assert_identical(leaky_relu(x, alpha=alpha), np.array(expected, np.float16))


# -- transcendental operators: correctly rounded -----------------------------------------------------------

RANGES = {  # the inputs whose results are neither saturated nor special, per output type
    "exp": {np.float16: (-18.0, 12.0), np.float32: (-105.0, 90.0), np.float64: (-746.0, 710.0)},
    "sigmoid": {np.float16: (-18.0, 12.0), np.float32: (-105.0, 20.0), np.float64: (-746.0, 40.0)},
    "tanh": {np.float16: (-5.0, 5.0), np.float32: (-10.0, 10.0), np.float64: (-20.0, 20.0)},
    "log": {np.float16: (0.0, 65504.0), np.float32: (0.0, 2.0**127), np.float64: (0.0, 2.0**1023)},
}
KERNELS = {"exp": exp, "sigmoid": sigmoid, "tanh": tanh, "log": log}
EXACT = {
    "exp": lambda v: naive.exact_exp(v) if math.isfinite(v) and abs(v) < 1200 else None,
    "sigmoid": lambda v: naive.exact_sigmoid(v) if math.isfinite(v) and abs(v) < 1200 else None,
    "tanh": lambda v: naive.exact_tanh(v) if math.isfinite(v) and v != 0 else None,
    "log": lambda v: naive.exact_log(v) if math.isfinite(v) and v > 0 and v != 1 else None,
}


@st.composite
def transcendental_cases(draw):
    op = draw(st.sampled_from(sorted(KERNELS)))
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    low, high = RANGES[op][dtype.type]
    in_range = draw(st.booleans())
    strategy = float_elements(dtype, low, high) if in_range else float_elements(dtype)
    return op, draw(hnp.arrays(dtype, draw(SHAPES), elements=strategy))


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(transcendental_cases())
def test_transcendental_kernels_match_the_naive_reading_and_are_correctly_rounded(case) -> None:
    op, x = case
    y = KERNELS[op](x)
    expected = naive.elementwise(lambda v: getattr(naive, op)(v, x.dtype), x.dtype, x)
    assert_identical(y, expected)
    assert_correctly_rounded(y, EXACT[op], [x])


@pytest.mark.parametrize(
    ("op", "x", "y"),
    [
        ("exp", [np.inf, np.nan, -np.inf, -0.0, 0.0, -788.0, -1e4],
         [np.inf, np.nan, 0.0, 1.0, 1.0, 0.0, 0.0]),
        ("log", [np.inf, np.nan, -np.inf, -0.0, 0.0, 1.0, -1.0],
         [np.inf, np.nan, np.nan, -np.inf, -np.inf, 0.0, np.nan]),
        ("sigmoid", [np.inf, np.nan, -np.inf, 0.0, -0.0, -788.0, -1e4],
         [1.0, np.nan, 0.0, 0.5, 0.5, 0.0, 0.0]),
        ("tanh", [np.inf, np.nan, -np.inf, 0.0, -0.0, 1e-30, -1e-30],
         [1.0, np.nan, -1.0, 0.0, -0.0, 1e-30, -1e-30]),
        ("sqrt", [np.inf, np.nan, -np.inf, -0.0, 0.0, -1.0], [np.inf, np.nan, np.nan, -0.0, 0.0, np.nan]),
    ],
)  # fmt: skip
def test_special_values_of_the_float_sections(op, x, y) -> None:
    kernel = {**KERNELS, "sqrt": sqrt}[op]
    for dtype in FLOATS:
        with np.errstate(all="ignore"):
            assert_identical(kernel(np.array(x, dtype)), np.array(y, dtype))


def test_exp_overflows_where_the_rounded_value_does_around_the_text_thresholds() -> None:
    """The text's X_max (float16 11.09375, float 88.72283935546875, double 709.782712893384): the float16
    and float values are already past ln(max), so e**X_max rounds to +inf and the float below does not;
    the double value is below ln(max) and its successor overflows."""
    for dtype, x_max in ((np.float16, 11.09375), (np.float32, 88.72283935546875)):
        x = np.array([x_max], dtype)
        assert np.isinf(exp(x)).all() and np.isfinite(exp(np.nextafter(x, dtype(0)))).all()
    x = np.array([709.782712893384, np.nextafter(709.782712893384, 800)])
    assert np.isfinite(exp(x)[0]) and np.isinf(exp(x)[1])


def test_exp_and_sigmoid_underflow_gradually() -> None:
    x = np.array([-745.0, -744.0, -740.0, -708.5], np.float64)
    assert_identical(exp(x), np.array([naive.exp(v, np.float64) for v in x]))
    assert exp(x)[1] == 5e-324 * round(float(naive.exact_exp(-744.0) / Fraction(5e-324)))
    assert_identical(sigmoid(x), np.array([naive.sigmoid(v, np.float64) for v in x]))
    f32 = np.array([-100.0, -103.0, -104.0], np.float32)
    assert_identical(exp(f32), np.array([naive.exp(v.item(), np.float32) for v in f32], np.float32))


# -- the rounding core of the transcendental kernels -------------------------------------------------------

SCALES = {  # exponents k that put (hi + lo) * 2**k around the subnormals, the smallest normal and overflow
    np.float16: st.integers(-27, -12) | st.integers(14, 16),
    np.float32: st.integers(-152, -124) | st.integers(126, 128),
    np.float64: st.integers(-1077, -1020) | st.integers(1021, 1024),
}


@st.composite
def scaled_dd(draw):
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    k = draw(SCALES[dtype.type])
    mantissa_bits = np.finfo(dtype).nmant
    # hi in [1, 2): a float of the output type, or one of its midpoints (a tie when lo is 0), or anything
    grid = draw(st.integers(0, 2**mantissa_bits - 1))
    hi = draw(
        st.sampled_from(
            [
                1 + grid / 2**mantissa_bits,
                1 + (grid + 0.5) / 2**mantissa_bits,
                draw(st.floats(1, 2, exclude_max=True)),
            ]
        )
    )
    half_ulp = math.ulp(hi) / 2
    lo = draw(st.sampled_from([0.0, half_ulp, -half_ulp, draw(st.floats(-half_ulp, half_ulp))]))
    if lo == half_ulp and (np.array(hi).view(np.uint64) & 1) == 1:
        lo = -lo  # a normalised pair: hi is the nearest double to hi + lo, the even one on a tie
    sign = draw(st.sampled_from([1.0, -1.0]))
    return dtype, sign * hi, sign * lo, k


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(scaled_dd())
def test_round_scaled_is_the_correct_rounding_of_a_double_double(case) -> None:
    dtype, hi, lo, k = case
    result = round_scaled(np.array([hi]), np.array([lo]), k, dtype)
    exact = (Fraction(hi) + Fraction(lo)) * Fraction(2) ** k
    assert_identical(result, np.array([naive.round_to(exact, dtype)], dtype))


def test_undecided_elements_are_recomputed_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the certified interval widened to 2**-12, most elements are undecided and go through the
    kernels' decimal / Fraction fall-back: the results stay the correctly rounded ones."""
    from sonnx_check.reference import elementwise_common

    monkeypatch.setattr(elementwise_common, "CERTIFIED_RELATIVE_ERROR", 2.0**-12)
    rng = np.random.default_rng(5)
    for dtype in FLOATS:
        x = (rng.standard_normal(40) * 4).astype(dtype)
        for op in ("exp", "sigmoid", "tanh"):
            expected = naive.elementwise(lambda v, op=op, t=dtype: getattr(naive, op)(v, t), dtype, x)
            assert_identical(KERNELS[op](x), expected)
        positive = np.abs(x) + dtype.type(0.5)
        assert_identical(
            log(positive), naive.elementwise(lambda v, t=dtype: naive.log(v, t), dtype, positive)
        )
        b = np.concatenate([np.round(x[:20]), np.round(x[20:]) + 0.5]).astype(dtype)
        expected = naive.elementwise(lambda u, v, t=dtype: naive.pow_(u, v, t), dtype, positive, b)
        assert_identical(power(positive, b), expected)


# -- Pow ---------------------------------------------------------------------------------------------------


def _exponents(dtype: np.dtype):
    small = st.integers(-12, 12).map(float) | st.integers(-12, 12).map(lambda n: n + 0.5)
    return st.one_of(float_elements(dtype), small.map(dtype.type), float_elements(dtype, -60.0, 60.0))


def _bases(dtype: np.dtype):
    return st.one_of(
        float_elements(dtype), float_elements(dtype, -20.0, 20.0), st.integers(-30, 30).map(dtype.type)
    )


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(st.data())
def test_float_pow_matches_the_naive_table_and_is_correctly_rounded(data) -> None:
    dtype = np.dtype(data.draw(st.sampled_from(FLOATS)))
    shape = data.draw(SHAPES)
    a = data.draw(hnp.arrays(dtype, shape, elements=_bases(dtype)))
    b = data.draw(hnp.arrays(dtype, shape, elements=_exponents(dtype)))
    c = power(a, b)
    with np.errstate(all="ignore"):
        expected = naive.elementwise(lambda x, y: naive.pow_(x, y, dtype), dtype, a, b)
    assert_identical(c, expected)

    def exact(x, y):
        if not (math.isfinite(x) and math.isfinite(y)) or x == 0 or (x < 0 and y != math.floor(y)):
            return None
        if abs(y * math.log(abs(x))) > 1150:
            return None
        magnitude = naive.exact_pow(x, y)
        return -magnitude if x < 0 and naive._is_odd(y) else magnitude

    assert_correctly_rounded(c, exact, [a, b])


@pytest.mark.parametrize(
    ("dtype", "a", "b"),
    [
        (np.float16, 3.0, 7.0),  # 2187: a float16 midpoint, ties to even 2188
        (np.float32, 11.0, 7.0),  # 19487171: a float midpoint
        (np.float32, 4097.0, 2.0),  # 16785409: a float midpoint
        (np.float64, 134217727.0, 2.0),  # (2**27 - 1)**2: a double midpoint
        (np.float64, 68718952449.0, 1.5),  # (2**18 - 1)**3: a double midpoint through a square root
        (np.float64, 25.0, 11.5),  # 5**23, found by hypothesis
        (np.float64, 3 * 2.0**-215, 5.0),  # 243 * 2**-1075: a midpoint between two subnormals
        (np.float64, -3 * 2.0**-215, 5.0),  # negative: the even neighbour too
        (np.float32, -11.0, 7.0),
    ],
)
def test_pow_results_that_are_exactly_midpoints_round_to_even(dtype, a, b) -> None:
    c = power(np.array([a], dtype), np.array([b], dtype))
    exact = Fraction(abs(a)) ** int(b) if b == int(b) else Fraction(math.isqrt(int(a))) ** int(2 * b)
    exact = -exact if a < 0 and int(b) % 2 else exact
    assert c.item() == naive.round_to(exact, dtype)
    neighbours = [Fraction(np.nextafter(c, dtype(s * np.inf)).item()) for s in (1, -1)]
    assert any(exact == (Fraction(c.item()) + n) / 2 for n in neighbours)  # a tie indeed
    bits = int(c.view(f"u{np.dtype(dtype).itemsize}")[0])
    assert bits % 2 == 0  # the even neighbour


def test_pow_special_table_examples_and_precedences() -> None:
    a = np.array([1.0, np.nan, -2.0, -2.0, -1.0, 0.5, -0.0, -0.0, 0.0, -np.inf, -np.inf, -8.0], np.float32)
    b = np.array(
        [np.nan, 0.0, np.inf, -np.inf, np.inf, -np.inf, -3.0, 3.0, -np.inf, 3.0, -3.0, 1 / 3], np.float32
    )
    c = np.array(
        [1.0, 1.0, np.inf, 0.0, 1.0, np.inf, -np.inf, -0.0, np.inf, -np.inf, -0.0, np.nan], np.float32
    )
    assert_identical(power(a, b), c)


@MANY
@given(st.data())
def test_integer_pow_matches_the_naive_reading(data) -> None:
    dtype = np.dtype(data.draw(st.sampled_from([np.int32, np.int64])))
    shape = data.draw(SHAPES)
    a = data.draw(hnp.arrays(dtype, shape, elements=int_elements(dtype)))
    b = data.draw(hnp.arrays(dtype, shape, elements=st.one_of(st.integers(0, 70), st.integers(0, 2**31 - 1))))
    expected = naive.elementwise(lambda x, y: naive.wrap(pow(x, y, 1 << 64), dtype), dtype, a, b)
    assert_identical(power(a, b), expected)


# -- refusals ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "dtype", "values", "rule", "role", "count"),
    [
        ("Div", np.int32, ([1, 2, 3], [0, 5, 0]), "Div.B.C3", "B", 2),
        ("Div", np.uint8, ([1, 2, 3], [1, 0, 1]), "Div.B.C3", "B", 1),
        ("Abs", np.int8, ([-128, 5, -128, -128],), "Abs.X.C2", "X", 3),
        ("Abs", np.int64, ([np.iinfo(np.int64).min],), "Abs.X.C2", "X", 1),
        ("Pow", np.int64, ([2, 2, 2], [1, -1, -5]), "Pow.B.C3", "B", 2),
    ],
)
def test_data_constraints_are_refused_under_their_rule(op, dtype, values, rule, role, count) -> None:
    arrays_ = [np.array(v, dtype) for v in values]
    names = ["A", "B"] if len(arrays_) == 2 else ["X"]
    node = h.make_node(op, names, ["Y"])
    with pytest.raises(DataConstraintError) as caught:
        reference.run_node(node, arrays_)
    error = caught.value
    assert (error.rule, error.tensor_role, error.count) == (rule, role, count)
    assert isinstance(error, reference.ReferenceError)
    assert isinstance(error, getattr(reference.errors, "DataConstraintError", reference.ReferenceError))
    assert f"({rule})" in str(error)


def test_data_constraints_of_the_real_section_do_not_apply_to_floats() -> None:
    with np.errstate(all="ignore"):
        assert_identical(
            div(np.array([1.0, -1.0, 0.0]), np.array([0.0, 0.0, -0.0])), np.array([np.inf, -np.inf, np.nan])
        )
        assert np.isnan(log(np.array([-1.0], np.float32))).all()
        assert np.isnan(sqrt(np.array([-1.0], np.float16))).all()
    assert power(np.array([2.0]), np.array([-1.0])).item() == 0.5
    assert absolute(np.array([-128], np.int16)).item() == 128


BINARY = ["Add", "Sub", "Mul", "Div", "Less", "Pow"]


@pytest.mark.parametrize("op", BINARY)
def test_binary_operators_refuse_broadcasting_and_mixed_types(op) -> None:
    node = h.make_node(op, ["A", "B"], ["C"])
    with pytest.raises(reference.OutsideProfileError, match=rf"does not broadcast \({op}.A.C1\)"):
        reference.run_node(node, [np.ones((2, 3), np.float32), np.ones((3,), np.float32)])
    with pytest.raises(reference.OutsideProfileError, match=rf"\({op}.A.C1\)"):
        reference.run_node(node, [np.ones((2, 1), np.float32), np.ones((2, 1, 1), np.float32)])
    with pytest.raises(reference.OutsideProfileError, match=rf"different types.*\({op}.A.C2\)"):
        reference.run_node(node, [np.ones(2, np.float32), np.ones(2, np.float64)])
    with pytest.raises(reference.OutsideProfileError, match=rf"\({op}.types\)"):
        reference.run_node(node, [np.ones(2, np.bool_), np.ones(2, np.bool_)])


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        ("Relu", np.uint8), ("Exp", np.int32), ("Log", np.int64), ("Sqrt", np.int8), ("Sigmoid", np.bool_),
        ("Tanh", np.int16), ("LeakyRelu", np.int32), ("Abs", np.bool_), ("Neg", np.bool_), ("Pow", np.int8),
        ("Pow", np.uint32), ("Exp", np.complex64),
    ],
)  # fmt: skip
def test_types_outside_the_sections_are_refused(op, dtype) -> None:
    inputs = [np.zeros(2, dtype)] * (2 if op == "Pow" else 1)
    node = h.make_node(op, ["A", "B"][: len(inputs)], ["C"])
    with pytest.raises(reference.OutsideProfileError, match=rf"\({op}.types\)"):
        reference.run_node(node, inputs)


def test_where_refusals() -> None:
    node = h.make_node("Where", ["c", "x", "y"], ["z"])
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(reference.OutsideProfileError, match=r"\(Where.condition.C1\)"):
        reference.run_node(node, [np.ones((1, 2), bool), x, x])
    with pytest.raises(reference.OutsideProfileError, match=r"\(Where.types\)"):
        reference.run_node(node, [np.ones((2, 2), np.uint8), x, x])
    with pytest.raises(reference.OutsideProfileError, match=r"\(Where.condition.C2\)"):
        reference.run_node(node, [np.ones((2, 2), bool), x, x.astype(np.float64)])


def test_clip_refusals() -> None:
    x = np.zeros(3, np.float32)
    scalar = np.array(1.0, np.float32)
    with pytest.raises(reference.OutsideProfileError, match=r"without its bound M \(max\).*\(Clip.bounds\)"):
        reference.run_node(h.make_node("Clip", ["x", "l"], ["y"]), [x, scalar])
    with pytest.raises(reference.OutsideProfileError, match=r"L \(min\).*\(Clip.bounds\)"):
        reference.run_node(h.make_node("Clip", ["x", "", "m"], ["y"]), [x, None, scalar])
    with pytest.raises(reference.OutsideProfileError, match=r"\(Clip.L.C1\)"):
        reference.run_node(h.make_node("Clip", ["x", "l", "m"], ["y"]), [x, np.ones(1, np.float32), scalar])
    with pytest.raises(reference.OutsideProfileError, match=r"\(Clip.X.C2\)"):
        reference.run_node(h.make_node("Clip", ["x", "l", "m"], ["y"]), [x, np.array(1.0), scalar])


@pytest.mark.parametrize("op", ["Abs", "Neg", "Relu", "Exp", "Log", "Sqrt", "Sigmoid", "Tanh", "LeakyRelu"])
def test_unary_budget_is_checked_before_the_output_is_allocated(op) -> None:
    x = np.broadcast_to(np.float32(1), (10**6, 10**6))  # 10**12 elements that occupy no memory
    with pytest.raises(
        reference.BudgetExceededError, match=f"{op} output . would hold 1000000000000 elements"
    ):
        reference.run_node(h.make_node(op, ["X"], ["Y"]), [x], max_elements=1000)


@pytest.mark.parametrize("op", BINARY + ["Where", "Clip"])
def test_binary_budget_is_checked_before_the_output_is_allocated(op) -> None:
    big = np.broadcast_to(np.float32(1), (10**6, 10**6))
    inputs = {
        "Where": [np.broadcast_to(True, big.shape), big, big],
        "Clip": [big, np.float32(0), np.float32(1)],
    }
    inputs = [np.asarray(v) for v in inputs.get(op, [big, big])]
    with pytest.raises(reference.BudgetExceededError, match="would hold 1000000000000 elements"):
        reference.run_node(h.make_node(op, ["a", "b", "c"][: len(inputs)], ["y"]), inputs, max_elements=1000)


def test_integer_data_constraints_are_checked_after_the_budget() -> None:
    b = np.broadcast_to(np.int32(0), (10**6, 10**6))
    with pytest.raises(reference.BudgetExceededError):
        div(b, b, max_elements=1000)
    with pytest.raises(DataConstraintError, match="4 element"):
        div(b[:2, :2], b[:2, :2], max_elements=4)


# -- whole models ------------------------------------------------------------------------------------------


def test_a_model_of_element_wise_operators_runs_end_to_end() -> None:
    f = onnx.TensorProto.FLOAT
    nodes = [
        h.make_node("Mul", ["X", "X"], ["sq"]),
        h.make_node("Sqrt", ["sq"], ["a"]),
        h.make_node("Neg", ["a"], ["n"]),
        h.make_node("LeakyRelu", ["n"], ["l"], alpha=0.5),
        h.make_node("Sigmoid", ["l"], ["s"]),
        h.make_node("Less", ["s", "half"], ["c"]),
        h.make_node("Where", ["c", "s", "X"], ["w"]),
        h.make_node("Clip", ["w", "lo", "hi"], ["Y"]),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("X", f, [4])],
        [h.make_tensor_value_info("Y", f, [4])],
        initializer=[
            onnx.numpy_helper.from_array(np.full(4, 0.5, np.float32), "half"),
            onnx.numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
            onnx.numpy_helper.from_array(np.array(0.4, np.float32), "hi"),
        ],
    )
    x = np.array([-2.0, 0.0, 3.0, np.nan], np.float32)
    out = reference.evaluate(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), {"X": x})["Y"]
    s = sigmoid(np.array([-1.0, 0.0, -1.5, np.nan], np.float32))
    expected = np.array([min(s[0], np.float32(0.4)), 0.0, min(s[2], np.float32(0.4)), np.nan], np.float32)
    assert_identical(out, expected)


def test_leaky_relu_without_alpha_takes_the_onnx_default() -> None:
    (y,) = reference.run_node(h.make_node("LeakyRelu", ["X"], ["Y"]), [np.array([-100.0], np.float32)])
    assert y.item() == np.float32(np.float32(0.01).item() * -100.0)
