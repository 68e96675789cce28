"""Conv, MatMul, Gemm and BatchNormalization kernels against the naive exact readings (naive_products.py),
bit for bit: every kernel claims the correctly rounded result, so "within 1 ulp" is checked as "equal to the
exact value rounded once", sign of zero and NaN included. Also: the |a*b| sums of the accuracy bound, the
refusals, the element budget, the ONNX defaults of absent attributes, and the MaxPool Y-only path."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from naive import naive_maxpool
from naive_products import (
    naive_abs_sum,
    naive_batch_normalization,
    naive_conv,
    naive_gemm,
    naive_matmul,
    round_to,
)
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.reference import conv as conv_module
from sonnx_check.reference import nan_policy
from sonnx_check.reference.batchnormalization import batch_normalization
from sonnx_check.reference.conv import conv, conv_abs, conv_with_abs
from sonnx_check.reference.errors import DataConstraintError
from sonnx_check.reference.exact_sums import round_dyadic
from sonnx_check.reference.gemm import gemm, gemm_abs
from sonnx_check.reference.matmul import matmul, matmul_abs
from sonnx_check.reference.maxpool import PoolParams, maxpool

FLOATS = (np.float16, np.float32, np.float64)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0]


def _pool(dtype, specials: bool) -> st.SearchStrategy:
    """Values that make ties, cancellations, rounding boundaries, subnormals and overflow likely: small
    integers, powers of two around the type's epsilon and range ends, and arbitrary floats of the type."""
    info = np.finfo(dtype)
    eps = float(info.eps)
    chosen = [1.0, -1.0, 2.0, -3.0, 0.5, 1.0 + eps, -(1.0 + eps), eps / 2, -eps / 2, eps, 3.0 * eps,
              float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.tiny),
              float(info.max), -float(info.max), float(info.max) / 2, 0.0, -0.0]  # fmt: skip
    if specials:
        chosen += SPECIAL
    width = {np.float16: 16, np.float32: 32, np.float64: 64}[dtype]
    arbitrary = st.floats(width=width, allow_nan=specials, allow_infinity=specials, allow_subnormal=True)
    return st.one_of(st.sampled_from([dtype(v) for v in chosen]), arbitrary.map(dtype))


@st.composite
def conv_cases(draw, specials: bool = True):
    dtype = draw(st.sampled_from(FLOATS))
    channels = draw(st.integers(1, 3))
    depthwise = channels > 1 and draw(st.booleans())
    group = channels if depthwise else 1
    out_channels = channels if depthwise else draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(4))
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    height = draw(st.integers(max(1, extent[0] - pads[0] - pads[2]), 5))
    width = draw(st.integers(max(1, extent[1] - pads[1] - pads[3]), 5))
    values = _pool(dtype, specials)
    x = draw(hnp.arrays(dtype, (draw(st.integers(1, 2)), channels, height, width), elements=values))
    w = draw(hnp.arrays(dtype, (out_channels, 1 if depthwise else channels, *kernel), elements=values))
    b = draw(st.none() | hnp.arrays(dtype, (out_channels,), elements=values))
    return x, w, b, {"strides": strides, "pads": pads, "dilations": dilations, "group": group}


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(conv_cases())
def test_conv_is_the_exact_sum_rounded_once(case) -> None:
    x, w, b, attrs = case
    with np.errstate(all="ignore"):
        expected = naive_conv(x, w, b, **attrs)
    assert_identical(conv(x, w, b, **attrs), expected)


@settings(max_examples=40, deadline=None)
@given(conv_cases())
def test_conv_dilation_zeros_as_structure_is_one_switch(case) -> None:
    x, w, b, attrs = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv_module, "DILATION_ZEROS_ARE_OPERANDS", False)
        with np.errstate(all="ignore"):
            expected = naive_conv(x, w, b, **attrs, holes_are_operands=False)
        assert_identical(conv(x, w, b, **attrs), expected)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(conv_cases(specials=False))
def test_conv_abs_bounds_the_sum_of_absolute_products(case) -> None:
    x, w, b, attrs = case
    bound = conv_abs(x, w, b, **attrs)
    y, fused = conv_with_abs(x, w, b, **attrs)
    assert_identical(y, conv(x, w, b, **attrs))
    np.testing.assert_array_equal(fused, bound)
    exact = _abs_sums_of_conv(x, w, b, attrs)
    u = 2.0**-24 if x.dtype != np.float64 else 2.0**-53
    terms = _terms_of_conv(w, attrs)
    for got, want in zip(bound.reshape(-1), exact.reshape(-1), strict=True):
        if math.isinf(got):
            assert want > Fraction(float(np.finfo(np.float64).max)) / 2 or not math.isfinite(float(want))
            continue
        assert Fraction(got) >= want
        assert Fraction(got) <= want * (1 + Fraction(8 * (terms + 2)) * Fraction(u)) + Fraction(2.0**-140)


def _terms_of_conv(w, attrs) -> int:
    """Terms per output element: the dilated kernel over W's input channels (holes and padding included)."""
    extent = [d * (k - 1) + 1 for k, d in zip(w.shape[2:], attrs["dilations"], strict=True)]
    return w.shape[1] * extent[0] * extent[1]


def _abs_sums_of_conv(x, w, b, attrs):
    """sum |X_p W_d| + |B| exactly, through the naive conv's own loops on |x|, |w|, |b| in Fractions."""
    n, channels, height, width = x.shape
    (s0, s1), (d0, d1), pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    kh, kw = w.shape[2:]
    out_h = (height + pads[0] + pads[2] - (d0 * (kh - 1) + 1)) // s0 + 1
    out_w = (width + pads[1] + pads[3] - (d1 * (kw - 1) + 1)) // s1 + 1
    out = np.empty((n, w.shape[0], out_h, out_w), dtype=object)
    for index in np.ndindex(*out.shape):
        image, c, m, q = index
        pairs = []
        for i in range(channels) if attrs["group"] == 1 else [c]:
            for j in range(kh):
                for z in range(kw):
                    row, col = m * s0 + j * d0 - pads[0], q * s1 + z * d1 - pads[1]
                    if 0 <= row < height and 0 <= col < width:
                        pairs.append(
                            (float(x[image, i, row, col]), float(w[c, 0 if attrs["group"] > 1 else i, j, z]))
                        )
        out[index] = naive_abs_sum(pairs, None if b is None else float(b[c]))
    return out


@st.composite
def matrices(draw, dtypes=FLOATS, specials: bool = True, bias: bool = False):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    m, n, p = draw(st.integers(1, 4)), draw(st.integers(0, 5)), draw(st.integers(1, 4))
    if dtype.kind == "f":
        values = _pool(dtype.type, specials)
    else:
        info = np.iinfo(dtype)
        values = st.one_of(st.sampled_from([info.min, info.max, 0, 1, -1 if info.min < 0 else 2]),
                           st.integers(int(info.min), int(info.max))).map(dtype.type)  # fmt: skip
    a = draw(hnp.arrays(dtype, (m, n), elements=values))
    b = draw(hnp.arrays(dtype, (n, p), elements=values))
    c = draw(hnp.arrays(dtype, (m, p), elements=values)) if bias else None
    return a, b, c


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(matrices(dtypes=(*FLOATS, np.int32, np.int64, np.uint32, np.uint64)))
def test_matmul_is_the_exact_sum_rounded_once_or_wraps_around(case) -> None:
    a, b, _ = case
    assert_identical(matmul(a, b), naive_matmul(a, b))


@settings(max_examples=150, deadline=None)
@given(matrices(bias=True))
def test_gemm_is_the_exact_sum_plus_c_rounded_once(case) -> None:
    a, b, c = case
    assert_identical(gemm(a, b, c), naive_gemm(a, b, c))


@settings(max_examples=60, deadline=None)
@given(matrices(specials=False, bias=True))
def test_matmul_and_gemm_abs_bound_the_sum_of_absolute_products(case) -> None:
    a, b, c = case
    u = 2.0**-24 if a.dtype != np.float64 else 2.0**-53
    for with_c, bound in ((False, matmul_abs(a, b)), (True, gemm_abs(a, b, c))):
        for (i, j), got in np.ndenumerate(bound):
            want = naive_abs_sum([(float(a[i, k]), float(b[k, j])) for k in range(a.shape[1])],
                                 float(c[i, j]) if with_c else None)  # fmt: skip
            if math.isinf(got):
                continue  # only where float64 overflows
            assert Fraction(got) >= want
            assert Fraction(got) <= want * (1 + Fraction(8 * (a.shape[1] + 3)) * Fraction(u)) + Fraction(
                2.0**-140
            )


@pytest.mark.parametrize("dtype", FLOATS)
def test_large_products_are_correctly_rounded_and_cancellations_exact(dtype) -> None:
    """Sizes the naive reading is too slow for: compared with the exact sums of a few elements, and a
    cancellation built so that every output is exactly zero or a value far below the terms."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 300)).astype(dtype)
    b = rng.standard_normal((300, 30)).astype(dtype)
    y = matmul(a, b)
    for i, j in [(0, 0), (3, 7), (39, 29), (17, 2)]:
        exact = sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(300))
        assert y[i, j] == dtype(round_to(exact, dtype))
    twin = np.concatenate([a, -a], axis=1)
    doubled = np.concatenate([b, b], axis=0)
    assert_identical(matmul(twin, doubled), np.zeros((40, 30), dtype=dtype))
    shifted = doubled.copy()
    shifted[-1] = shifted[-1] + shifted[-1] * np.finfo(dtype).eps  # one term a hair off: tiny, exact results
    got = matmul(twin, shifted)
    for i, j in [(0, 0), (5, 5)]:
        exact = sum(Fraction(float(twin[i, k])) * Fraction(float(shifted[k, j])) for k in range(600))
        assert got[i, j] == dtype(round_to(exact, dtype)), (got[i, j], float(exact))


def test_conv_benchmark_shape_matches_exact_sums() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 9, 9), dtype=np.float32)
    w = rng.standard_normal((4, 8, 3, 3), dtype=np.float32)
    y = conv(x, w, pads=(1, 1, 1, 1))
    for c, m, q in [(0, 0, 0), (3, 8, 8), (2, 4, 5)]:
        exact = Fraction(0)
        for i in range(8):
            for j in range(3):
                for z in range(3):
                    row, col = m + j - 1, q + z - 1
                    if 0 <= row < 9 and 0 <= col < 9:
                        exact += Fraction(float(x[0, i, row, col])) * Fraction(float(w[c, i, j, z]))
        assert y[0, c, m, q] == np.float32(round_to(exact, np.float32))


def test_special_values_of_the_texts_examples_and_of_padding() -> None:
    inf, nan = np.inf, np.nan
    a = np.array([[inf, -inf, nan], [nan, inf, -inf]], np.float32)
    assert np.isnan(matmul(a, np.ones((3, 2), np.float32))).all()  # matmul.md float Example 2
    a = np.array([[inf, inf], [nan, inf]], np.float32)
    b = np.array([[1, 2, 3, 4], [4, 5, 6, 7]], np.float32)
    y = matmul(a, b)  # Example 3
    assert np.isposinf(y[0]).all() and np.isnan(y[1]).all()
    # a padded zero times an infinite weight is NaN; inside, inf * 1 is inf (onnxruntime 1.32.0 agrees)
    x = np.ones((1, 1, 3, 3), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = inf
    y = conv(x, w, pads=(1, 1, 1, 1))[0, 0]
    assert np.isnan(y[0]).all() and np.isnan(y[:, 0]).all() and np.isposinf(y[1:, 1:]).all()
    # finite terms never make an infinite term: 2^100 * 2^100 twice, less the same, is exactly 0 in float32
    big = np.float32(2.0**100)
    assert_identical(matmul(np.array([[big, -big]]), np.array([[big], [big]])), np.zeros((1, 1), np.float32))
    assert np.isposinf(matmul(np.array([[big, big]]), np.array([[big], [big]])))[0, 0]


def test_zero_sums_take_the_sign_of_their_terms() -> None:
    x = np.zeros((1, 2, 3, 3), np.float32)
    w = -np.ones((2, 1, 3, 3), np.float32)
    y = conv(x, w, group=2)  # every term +0 * -1 = -0
    assert np.signbit(y).all()
    assert not np.signbit(conv(x, w, np.zeros(2, np.float32), group=2)).any()  # -0 + (+0) = +0
    assert np.signbit(conv(x, w, -np.zeros(2, np.float32), group=2)).all()
    assert np.signbit(conv(x, w, group=2, pads=(1, 0, 0, 1))).all()  # padded +0 * -1 is -0 too
    one = np.ones((1, 1), np.float64)
    assert not np.signbit(matmul(np.array([[1.0, -1.0]]), np.array([[1.0], [1.0]])))  # cancellation: +0
    assert not np.signbit(matmul(np.zeros((1, 0)), np.zeros((0, 1))))  # an empty sum: +0
    assert np.signbit(gemm(np.array([[-0.0]]), one, -np.zeros((1, 1))))


def test_round_dyadic_against_numpy_and_fractions() -> None:
    rng = np.random.default_rng(3)
    for dtype in FLOATS:
        for _ in range(300):
            numerator = int(rng.integers(-(2**62), 2**62)) * int(rng.integers(1, 2**40))
            exponent = int(rng.integers(-1200, 1000))
            value = Fraction(numerator) * Fraction(2) ** exponent
            assert math.copysign(1, got := round_dyadic(numerator, exponent, dtype)) == math.copysign(
                1, want := round_to(value, dtype)
            ) and (got == want), (dtype, numerator, exponent)


# -- BatchNormalization ------------------------------------------------------------------------------------
@st.composite
def batchnorm_cases(draw):
    x_type, p_type, s_type = (draw(st.sampled_from(FLOATS)) for _ in range(3))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    channels = shape[1] if rank >= 2 else 1
    small = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-3, -2.5, np.nan, np.inf, -np.inf]),
                      st.floats(-100, 100, width=16))  # fmt: skip
    x = draw(hnp.arrays(x_type, shape, elements=small.map(x_type)))
    scale, b = (draw(hnp.arrays(s_type, (channels,), elements=small.map(s_type))) for _ in range(2))
    mean = draw(hnp.arrays(p_type, (channels,), elements=small.map(p_type)))
    variances = st.one_of(
        st.sampled_from([0.0, -0.0, 1.0, 4.0, 2.25, np.inf, np.nan]), st.floats(0, 100, width=16)
    )
    var = draw(hnp.arrays(p_type, (channels,), elements=variances.map(p_type)))
    epsilon = draw(st.sampled_from([1e-5, 1e-3, 0.25, float(np.finfo(np.float32).smallest_subnormal)]))
    return x, scale, b, mean, var, epsilon


@settings(max_examples=150, deadline=None)
@given(batchnorm_cases())
def test_batchnorm_is_the_exact_formula_rounded_once(case) -> None:
    x, scale, b, mean, var, epsilon = case
    expected = naive_batch_normalization(x, scale, b, mean, var, epsilon)
    assert_identical(batch_normalization(x, scale, b, mean, var, epsilon=epsilon), expected)


def test_batchnorm_exact_cancellation_is_positive_zero() -> None:
    # var + eps = 3.75 + 0.25 = 4: the quotient is rational, 2 * (3 - 2) / 2 - 1 is exactly 0
    for dtype in FLOATS:
        one = np.ones(1, dtype)
        y = batch_normalization(
            np.array([3.0, -1.0], dtype), 2 * one, -one, 2 * one, 3.75 * one, epsilon=0.25
        )
        assert_identical(y, np.array([0.0, -4.0], dtype))


def test_batchnorm_hard_roundings_match_the_exact_decision() -> None:
    """Results within a hair of a rounding boundary go through the exact comparison."""
    rng = np.random.default_rng(11)
    for dtype in FLOATS:
        x = rng.standard_normal((4, 3, 50)).astype(dtype)
        scale, mean = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
        var = np.abs(rng.standard_normal(3)).astype(dtype)
        eps = float(np.float32(1e-5))
        b = (
            -(scale.astype(np.float64) * (x[0, :, 0] - mean) / np.sqrt(var.astype(np.float64) + eps))
        ).astype(dtype)
        got = batch_normalization(x, scale, b, mean, var)
        assert_identical(got[:1, :, :5], naive_batch_normalization(x[:1, :, :5], scale, b, mean, var, 1e-5))


def test_batchnorm_negative_variance_is_a_data_constraint() -> None:
    x = np.zeros((1, 3, 2), np.float32)
    one = np.ones(3, np.float32)
    with pytest.raises(DataConstraintError) as caught:
        batch_normalization(x, one, one, one, np.array([1.0, -1.0, -np.inf], np.float32))
    error = caught.value
    assert (error.rule, error.tensor_role, error.count) == ("BatchNormalization.input_var.C2", "input_var", 2)
    assert isinstance(error, reference.ReferenceError)
    assert "input_var breaks BatchNormalization.input_var.C2 at 2 element(s)" in str(error)
    y = batch_normalization(
        x, one, one, one, np.array([1.0, np.nan, -0.0], np.float32)
    )  # NaN and -0 are not < 0
    assert np.isnan(y[0, 1]).all() and np.isfinite(y[0, 2]).all()


# -- nodes, defaults, refusals, budget ---------------------------------------------------------------------
def test_nodes_run_with_onnx_defaults_for_absent_attributes() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    (y,) = reference.run_node(h.make_node("Conv", ["X", "W"], ["Y"]), [x, w])
    assert_identical(y, conv(x, w))
    (y,) = reference.run_node(h.make_node("Conv", ["X", "W", ""], ["Y"], pads=[1, 1, 1, 1]), [x, w, None])
    assert_identical(y, conv(x, w, pads=(1, 1, 1, 1)))
    a, b, c = (rng.standard_normal(s).astype(np.float64) for s in ((2, 3), (3, 4), (2, 4)))
    (y,) = reference.run_node(h.make_node("Gemm", ["A", "B", "C"], ["Y"]), [a, b, c])
    assert_identical(y, gemm(a, b, c))
    (y,) = reference.run_node(
        h.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=1.0, beta=1.0, transA=0), [a, b, c]
    )
    assert_identical(y, gemm(a, b, c))
    params = [np.ones(2, np.float32)] * 4
    (y,) = reference.run_node(
        h.make_node("BatchNormalization", ["X", "s", "B", "m", "v"], ["Y"]), [x, *params]
    )
    assert_identical(y, batch_normalization(x, *params, epsilon=1e-5))


REFUSED = [
    ("Conv", {"auto_pad": "SAME_UPPER"}, "Conv.R2"),
    ("Conv", {"group": 2}, "Conv.R3"),
    ("Conv", {"kernel_shape": [2, 3]}, "Conv.kernel_shape.C2"),
    ("Conv", {"strides": [0, 1]}, "Conv.strides.C1"),
    ("BatchNormalization", {"training_mode": 1}, "BatchNormalization.R1"),
    ("BatchNormalization", {"epsilon": 0.0}, "BatchNormalization.epsilon.C1"),
]


@pytest.mark.parametrize(("op", "attrs", "rule"), REFUSED)
def test_attributes_outside_the_profile_are_refused(op, attrs, rule) -> None:
    inputs = {
        "Conv": [np.zeros((1, 4, 5, 5), np.float32), np.zeros((4, 4, 3, 3), np.float32)],
        "Gemm": [np.zeros((2, 3)), np.zeros((3, 4)), np.zeros((2, 4))],
        "BatchNormalization": [np.zeros((1, 2, 2), np.float32)] + [np.ones(2, np.float32)] * 4,
    }[op]
    names = [f"i{k}" for k in range(len(inputs))]
    with pytest.raises(reference.ReferenceError, match=rule.replace(".", r"\.")):
        reference.run_node(h.make_node(op, names, ["Y"], **attrs), inputs)


def test_shapes_and_types_outside_the_profile_are_refused() -> None:
    f = np.float32
    cases = [
        (lambda: conv(np.zeros((1, 2, 3), f), np.zeros((1, 2, 1), f)), "Conv.R1"),
        (lambda: conv(np.zeros((1, 2, 3, 3), np.int32), np.zeros((1, 2, 1, 1), np.int32)), "Conv.types"),
        (lambda: conv(np.zeros((1, 2, 3, 3), f), np.zeros((1, 2, 1, 1), np.float64)), "Conv.X.float.C2"),
        (lambda: conv(np.zeros((1, 2, 3, 3), f), np.zeros((4, 1, 1, 1), f), group=2), "Conv.depthwise"),
        (lambda: conv(np.zeros((1, 2, 3, 3), f), np.zeros((1, 3, 1, 1), f)), "Conv.X.C2"),
        (lambda: conv(np.zeros((1, 2, 3, 3), f), np.zeros((1, 2, 1, 1), f), np.zeros(2, f)), "Conv.B.C1"),
        (lambda: conv(np.zeros((1, 2, 3, 3), f), np.zeros((1, 2, 5, 1), f)), "Conv.strides.C2"),
        (lambda: matmul(np.zeros((2, 2, 2), f), np.zeros((2, 2), f)), "MatMul.R1"),
        (lambda: matmul(np.zeros((2, 3), f), np.zeros((2, 2), f)), "MatMul.A.C2"),
        (lambda: matmul(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8)), "MatMul.types"),
        (lambda: matmul(np.zeros((2, 2), f), np.zeros((2, 2), np.float64)), "MatMul.types"),
        (lambda: gemm(np.zeros((2, 2), f), np.zeros((2, 2), f), np.zeros(3, f)), "does not broadcast"),
        (lambda: gemm(np.zeros((2, 2), np.int32), np.zeros((2, 2), np.int32), np.zeros((2, 2), np.int32)),
         "Gemm.types"),
        (lambda: batch_normalization(np.zeros((1, 2)), *[np.ones(1)] * 4), "BatchNormalization.scale.C1"),
        (lambda: batch_normalization(np.zeros(2, f), np.ones(1, f), np.ones(1), np.ones(1), np.ones(1)),
         "BatchNormalization.scale.C2"),
        (lambda: batch_normalization(np.zeros(2, np.int32), *[np.ones(1)] * 4), "BatchNormalization.types"),
    ]  # fmt: skip
    for call, rule in cases:
        with pytest.raises(reference.ReferenceError, match=rule.replace(".", r"\.")):
            call()


def test_budget_is_checked_before_allocating() -> None:
    x = np.broadcast_to(np.float32(0), (4, 256, 512, 512))
    w = np.broadcast_to(np.float32(0), (64, 256, 3, 3))
    with pytest.raises(reference.BudgetExceededError, match="Conv output Y"):
        reference.run_node(h.make_node("Conv", ["X", "W"], ["Y"]), [x, w], max_elements=10**6)
    with pytest.raises(reference.BudgetExceededError, match="Conv im2col"):
        conv(x, w, max_elements=10**8)
    a = np.broadcast_to(np.float32(0), (10**5, 2))
    with pytest.raises(reference.BudgetExceededError, match="MatMul output Y"):
        matmul(a, np.zeros((2, 10**5), np.float32), max_elements=10**6)


# -- MaxPool, Y only ---------------------------------------------------------------------------------------
def test_maxpool_y_only_zero_ties_take_the_first_zero_of_the_window() -> None:
    """Kernel 3, stride 2, pads 1: the centre offset, which every window reads, starts the fold; the zero of
    a window of zeros must still be the first one in row-major order, not the centre's."""
    x = np.zeros((1, 1, 5, 5), np.float32)
    x[0, 0, 1, 1] = -0.0  # the first element of window (1, 1), whose centre x[2, 2] is -0 too
    x[0, 0, 2, 2] = -0.0
    params = PoolParams((3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    y, indices = maxpool(x, params)
    y_only, _ = maxpool(x, params, with_indices=False)
    assert_identical(y_only, y)
    x = -np.zeros((1, 1, 5, 5), np.float32)
    x[0, 0, 0, 0] = 0.0
    assert_identical(maxpool(x, params, with_indices=False)[0], maxpool(x, params)[0])
    assert not np.signbit(maxpool(x, params, with_indices=False)[0][0, 0, 0, 0])
    assert np.signbit(maxpool(x, params, with_indices=False)[0][0, 0, 1, 1])


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_maxpool_y_only_follows_the_nan_reading_argument(data) -> None:
    x = data.draw(
        hnp.arrays(
            np.float32, (1, 2, 5, 6), elements=st.sampled_from([np.nan, 1.0, -1.0, 0.0, -0.0, -np.inf])
        )
    )
    params = PoolParams((2, 3), (2, 1), (1, 2), (1, 0, 0, 1))
    expected = naive_maxpool(x, params.kernel, params.strides, params.dilations, params.pads)
    assume(expected is not None)
    assert_identical(maxpool(x, params, with_indices=False)[0], expected[0])
    absorbing = nan_policy.NAN_ABSORBING
    y_only = maxpool(x, params, with_indices=False, nan_reading=absorbing)[0]
    y_indices = maxpool(x, params, nan_reading=absorbing)[0]
    assert_identical(y_only, y_indices)


def test_fsum_rounding_to_narrow_types_decides_midpoints_by_the_remainder() -> None:
    """The per-element fallback: math.fsum's float64, then a midpoint of the narrower type (or its overflow
    threshold) settled by the sign of what fsum rounded away."""
    from sonnx_check.reference.exact_sums import EXACT_ZERO, _fsum_rounded

    rng = np.random.default_rng(2)
    for dtype in (np.float16, np.float32):
        info = np.finfo(dtype)
        ulp_max = 2.0 ** (int(info.maxexp) - int(info.nmant) - 1)
        centres = [1.0 + float(info.eps) / 2, -(1.0 + 1.5 * float(info.eps)), float(info.max) + ulp_max / 2,
                   3.0 * float(info.smallest_subnormal) / 2, float(info.max) - ulp_max / 2]  # fmt: skip
        for centre in centres:
            for tail in (0.0, 2.0**-70, -(2.0**-70), 2.0**-1000, -(2.0**-1000)):
                for split in (0.25, 0.5, 3.0):
                    terms = [centre * split, centre * (1 - split), tail]
                    want = round_to(sum(map(Fraction, terms), Fraction(0)), dtype)
                    got = _fsum_rounded(terms, np.dtype(dtype))
                    assert got is not EXACT_ZERO and math.copysign(1, got) == math.copysign(1, want)
                    assert got == want, (dtype, terms, got, want)
        for _ in range(200):
            terms = (rng.standard_normal(6) * 2.0 ** rng.integers(-30, 30, 6)).tolist()
            terms.append(-sum(terms[:-1]))
            got = _fsum_rounded(terms, np.dtype(dtype))
            want = sum(map(Fraction, terms), Fraction(0))
            assert got is EXACT_ZERO if want == 0 else got == round_to(want, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_batchnorm_ties_and_overflow_thresholds_are_decided_exactly(dtype) -> None:
    """Y exactly on a midpoint (ties to even) or on the overflow threshold (ties to inf), with mean of
    another type (T2) so that X - mean can be any float64: var + eps = 1, so the quotient is X - mean."""
    info = np.finfo(dtype)
    eps = 0.25
    var = np.array([0.75, 0.75])
    one, zero = np.ones(2, dtype), np.zeros(2, dtype)
    half_ulp_max = 2.0 ** (int(info.maxexp) - int(info.nmant) - 2)
    top = float(info.max)
    for mean, expected in [
        (-float(info.eps) / 2, [1.0, 1.0]),  # 1 + eps/2: a tie, to the even 1
        (-1.5 * float(info.eps), [1.0 + 2 * float(info.eps), 1.0 + 2 * float(info.eps)]),  # tie, up to even
        (-half_ulp_max, [np.inf, np.inf]),  # max + half an ulp: a tie, to inf
        (-half_ulp_max * (1 - 2.0**-40), [top, top]),  # just below the threshold
    ]:
        x = np.array([[1.0, 1.0]], dtype) if abs(mean) < 1 else np.array([[top, top]], dtype)
        if dtype == np.float64 and abs(mean) >= 1:
            continue  # float64 means cannot hold max + half an ulp apart from max
        got = batch_normalization(x, one, zero, np.array([mean, mean]), var, epsilon=eps)
        assert_identical(got, np.array([expected], dtype))


def test_batchnorm_extreme_factors_and_subnormal_results() -> None:
    x = np.array([[1.0, 3.0], [2.0, -1.0]])
    big = batch_normalization(x, np.array([1e300, -1e300]), np.zeros(2), np.zeros(2), np.array([1e-300, 0.0]))
    assert_identical(big, naive_batch_normalization(x, np.array([1e300, -1e300]), np.zeros(2), np.zeros(2),
                                                    np.array([1e-300, 0.0]), 1e-5))  # fmt: skip
    tiny = np.array([2.0**-1070, 3.0])
    scale = np.array([2.0**-5, 2.0**-1073])
    got = batch_normalization(
        np.array([[1.0, 1.0]]), scale, -tiny * 0, np.zeros(2), np.array([0.0, 0.0]), epsilon=0.25
    )
    assert_identical(got, naive_batch_normalization(np.array([[1.0, 1.0]]), scale, -tiny * 0, np.zeros(2),
                                                    np.zeros(2), 0.25))  # fmt: skip


def test_abs_sums_are_infinite_where_a_term_is_not_finite() -> None:
    a = np.array([[1.0, np.inf], [1.0, 2.0]], np.float32)
    b = np.array([[1.0, 0.0], [np.nan, 1.0]], np.float32)
    bound = matmul_abs(a, b)
    assert np.isposinf(bound[[0, 0, 1], [0, 1, 0]]).all() and bound[1, 1] == pytest.approx(2.0)
    bound = gemm_abs(
        np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), np.array([[1, np.inf], [2, 3]], np.float32)
    )
    assert np.isposinf(bound[0, 1]) and np.isfinite(bound[[0, 1, 1], [0, 0, 1]]).all()


def test_matmul_nodes() -> None:
    a = np.array([[2**31 - 1, 2], [-3, 4]], np.int32)
    (y,) = reference.run_node(h.make_node("MatMul", ["A", "B"], ["Y"]), [a, a])
    assert_identical(y, naive_matmul(a, a))
    with pytest.raises(reference.ReferenceError, match="needs inputs A and B"):
        reference.run_node(h.make_node("MatMul", ["A", ""], ["Y"]), [a, None])
    with pytest.raises(reference.OutsideProfileError, match="integer products are exact"):
        matmul_abs(a, a)


def test_node_level_abs_sums_match_the_functions() -> None:
    from sonnx_check.reference import conv as conv_kernel
    from sonnx_check.reference import gemm as gemm_kernel
    from sonnx_check.reference import matmul as matmul_kernel

    rng = np.random.default_rng(9)
    x, w, b = (rng.standard_normal(s).astype(np.float16) for s in ((1, 3, 5, 5), (3, 1, 2, 2), (3,)))
    node = h.make_node("Conv", ["X", "W", "B"], ["Y"], group=3, dilations=[2, 1], pads=[1, 0, 0, 1])
    got = conv_kernel.run_abs(node, [x, w, b], None)
    np.testing.assert_array_equal(got, conv_abs(x, w, b, group=3, dilations=(2, 1), pads=(1, 0, 0, 1)))
    a, bb, c = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 4), (2, 4)))
    matmul_node = h.make_node("MatMul", ["A", "B"], ["Y"])
    np.testing.assert_array_equal(matmul_kernel.run_abs(matmul_node, [a, bb], None), matmul_abs(a, bb))
    gemm_node = h.make_node("Gemm", ["A", "B", "C"], ["Y"], transA=0)
    np.testing.assert_array_equal(gemm_kernel.run_abs(gemm_node, [a, bb, c], None), gemm_abs(a, bb, c))
    transposed = h.make_node("Gemm", ["A", "B", "C"], ["Y"], transA=1, transB=1)
    np.testing.assert_array_equal(gemm_kernel.run_abs(transposed, [a.T, bb.T, c], None), gemm_abs(a, bb, c))


@settings(max_examples=60, deadline=None)
@given(matrices(bias=True))
def test_fused_kernel_and_bound_equal_the_separate_ones(case) -> None:
    from sonnx_check.reference.gemm import gemm_with_abs
    from sonnx_check.reference.matmul import matmul_with_abs

    a, b, c = case
    y, bound = matmul_with_abs(a, b)
    assert_identical(y, matmul(a, b))
    np.testing.assert_array_equal(bound, matmul_abs(a, b))
    y, bound = gemm_with_abs(a, b, c)
    assert_identical(y, gemm(a, b, c))
    np.testing.assert_array_equal(bound, gemm_abs(a, b, c))


@settings(max_examples=40, deadline=None)
@given(conv_cases())
def test_fused_conv_with_special_values_equals_the_separate_calls(case) -> None:
    from sonnx_check.reference import conv as conv_kernel

    x, w, b, attrs = case
    node = h.make_node("Conv", ["X", "W", "B"] if b is not None else ["X", "W"], ["Y"],
                       **{k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()})  # fmt: skip
    inputs = [x, w] + ([b] if b is not None else [])
    (y,), bound = conv_kernel.run_with_abs(node, inputs, None)
    assert_identical(y, conv(x, w, b, **attrs))
    np.testing.assert_array_equal(bound, conv_kernel.run_abs(node, inputs, None))


# -- Gemm beyond the draft: transpositions, scaling, a broadcast or absent C (ONNX's Gemm) -----------------
GEMM_ATTRIBUTES = st.fixed_dictionaries(
    {
        "transA": st.integers(0, 1),
        "transB": st.integers(0, 1),
        "alpha": st.sampled_from([1.0, 1.0, -1.0, 0.5, 3.0, 0.1, -2.5, 0.0]),
        "beta": st.sampled_from([1.0, 1.0, 0.25, -1.0, 0.3, 0.0]),
    }
)


def _exact_gemm(a, b, c, attrs):
    """alpha sum a b + beta c exactly (Fractions, finite operands), per element, and sum of |terms|."""
    alpha, beta = Fraction(float(np.float32(attrs["alpha"]))), Fraction(float(np.float32(attrs["beta"])))
    m, n, p = a.shape[0], a.shape[1], b.shape[1]
    values, magnitudes = np.empty((m, p), object), np.empty((m, p), object)
    for i in range(m):
        for j in range(p):
            terms = [alpha * Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(n)]
            if c is not None:
                terms.append(beta * Fraction(float(c[i, j])))
            values[i, j] = sum(terms, Fraction(0))
            magnitudes[i, j] = sum((abs(t) for t in terms), Fraction(0))
    return values, magnitudes


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    matrices(specials=False, bias=True), GEMM_ATTRIBUTES, st.sampled_from(["full", "row", "scalar", "none"])
)
def test_gemm_computes_every_attribute_onnx_allows_within_its_stated_error(case, attrs, c_form) -> None:
    """transA/transB choose the operands; alpha = beta = 1 is correctly rounded (bit for bit); other scalings
    are within half an ulp plus the error ``bound_terms`` states (gamma_3 in float64 of sum |terms|)."""
    a, b, c = case
    c = {"full": c, "row": c[:1], "scalar": c[:1, :1].reshape(()), "none": None}[c_form]
    node = h.make_node("Gemm", ["A", "B", "C"] if c is not None else ["A", "B"], ["Y"], **attrs)
    inputs = [a.T if attrs["transA"] else a, b.T if attrs["transB"] else b] + ([c] if c is not None else [])
    (y,) = reference.run_node(node, inputs)
    full = None if c is None else np.broadcast_to(c, (a.shape[0], b.shape[1]))
    if attrs["alpha"] == 1.0 and (attrs["beta"] == 1.0 or c is None):
        want = naive_gemm(a, b, full) if full is not None else naive_matmul(a, b)
        assert_identical(y, want)
        return
    exact, magnitude = _exact_gemm(a, b, full, attrs)
    from sonnx_check.reference import gemm as gemm_kernel

    stated = gemm_kernel.bound_terms(node, inputs)
    info = np.finfo(a.dtype)
    for (i, j), got in np.ndenumerate(y):
        want = round_to(exact[i, j], a.dtype)
        if float(got) == float(want):
            continue
        assert math.isfinite(float(got)) or abs(exact[i, j]) >= Fraction(float(info.max)), (i, j, got, want)
        if not math.isfinite(float(got)):
            continue
        ulp = (
            Fraction(float(np.spacing(np.abs(got)))) if got != 0 else Fraction(float(info.smallest_subnormal))
        )
        allowed = ulp / 2 + Fraction(stated.reference_relative) * magnitude[i, j]
        allowed += Fraction(stated.reference_absolute)
        assert abs(Fraction(float(got)) - exact[i, j]) <= allowed, (i, j, got, want)


def test_scaled_float64_gemm_is_exact_where_float64_would_overflow() -> None:
    """alpha * S with S beyond the float64 range but the result within it, and alpha * S + beta * c with
    alpha * S overflowing: the element is computed in integers, not given as +-inf or NaN."""
    top = np.finfo(np.float64).max
    a, b = np.array([[top, top]]), np.array([[1.0], [1.0]])
    (y,) = reference.run_node(h.make_node("Gemm", ["A", "B"], ["Y"], alpha=0.25), [a, b])
    assert y[0, 0] == top / 2
    c = np.array([[-top]])
    (y,) = reference.run_node(h.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=0.75, beta=1.0), [a, b, c])
    assert y[0, 0] == top / 2
    (y,) = reference.run_node(h.make_node("Gemm", ["A", "B", "C"], ["Y"], alpha=0.0, beta=0.5), [a, b, c])
    assert y[0, 0] == -top / 2
    # non-finite operands keep IEEE 754 on the formula: alpha = 0 times an infinite sum is NaN
    (y,) = reference.run_node(
        h.make_node("Gemm", ["A", "B"], ["Y"], alpha=0.0), [np.array([[np.inf]]), b[:1]]
    )
    assert np.isnan(y[0, 0])


def test_torch_linear_gemm_is_computed() -> None:
    """nn.Linear's export: transB=1 and a bias of shape [p] (Gemm.R2 and R3 are static warnings only)."""
    rng = np.random.default_rng(3)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((2, 5), (3, 5), (3,)))
    node = h.make_node("Gemm", ["X", "W", "B"], ["Y"], alpha=1.0, beta=1.0, transB=1)
    (y,) = reference.run_node(node, [x, w, bias])
    assert_identical(y, naive_gemm(x, w.T.copy(), np.broadcast_to(bias, (2, 3)).copy()))


def test_run_node_with_abs_gives_the_outputs_and_the_kernels_sum_of_magnitudes() -> None:
    """The battery's one pass (issue 21): on finite data not all zeros, a sum-of-products node's outputs are
    run_node's and its sum |a b| (+ |c|) is its kernel module's run_abs, bit for bit; elsewhere no sum (the
    bound is then computed on demand), and any other operator has none."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    node = h.make_node("Conv", ["X", "W", "B"], ["Y"], pads=[1, 1, 1, 1])
    outputs, magnitude = reference.run_node_with_abs(node, [x, w, b])
    assert_identical(outputs[0], reference.run_node(node, [x, w, b])[0])
    assert magnitude is not None
    np.testing.assert_array_equal(magnitude, conv_module.run_abs(node, [x, w, b], None))
    for data in (np.where(x > 0, np.inf, x), np.zeros_like(x)):
        outputs, magnitude = reference.run_node_with_abs(node, [data, w, b])
        assert magnitude is None
        assert_identical(outputs[0], reference.run_node(node, [data, w, b])[0])
    relu = h.make_node("Relu", ["X"], ["Y"])
    assert reference.run_node_with_abs(relu, [x])[1] is None
