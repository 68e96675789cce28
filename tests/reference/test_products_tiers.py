"""The sum-of-products kernels' fast paths (products_common): the bulk tier 2 (zero-term sums and their
signs, provably exact float64 sums), the special values counted by matrix products, and the abs-sum's
upper bound, each against the naive readings of naive_products.py (exact Fractions, IEEE term by term) on
the data the per-node edge battery feeds them: NaN, infinities, extremes, signed zeros, ties, subnormals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from naive_products import naive_abs_sum, naive_conv, naive_gemm, naive_matmul
from test_kernels_products import conv_cases, matrices

from sonnx_check.compare.inputs.datasets import FLOAT_PATTERNS
from sonnx_check.reference import products_common
from sonnx_check.reference.conv import conv, conv_abs, conv_with_abs
from sonnx_check.reference.gemm import gemm, gemm_abs
from sonnx_check.reference.matmul import matmul, matmul_abs

FLOATS = (np.float16, np.float32, np.float64)


# -- tier 2 on the properties of test_kernels_products ------------------------------------------------------
@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(case=conv_cases())
def test_conv_with_the_bulk_tier_is_the_exact_sum_rounded_once(case) -> None:
    x, w, b, attrs = case
    with np.errstate(all="ignore"):
        expected = naive_conv(x, w, b, **attrs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(products_common, "_BULK", 1)  # tier 2 for every element tier 1 leaves (normally 256)
        assert_identical(conv(x, w, b, **attrs), expected)
        assert_identical(conv_with_abs(x, w, b, **attrs)[0], expected)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(case=matrices(bias=True))
def test_matmul_and_gemm_with_the_bulk_tier(case) -> None:
    a, b, c = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(products_common, "_BULK", 1)
        assert_identical(matmul(a, b), naive_matmul(a, b))
        assert_identical(gemm(a, b, c), naive_gemm(a, b, c))


# -- the edge datasets, at sizes where tier 2 runs by itself ------------------------------------------------
def _edge(pattern: str, dtype: type, shape: tuple[int, ...], seed: int) -> np.ndarray:
    return FLOAT_PATTERNS[pattern](np.dtype(dtype), shape, np.random.default_rng(seed))


@pytest.mark.slow
@pytest.mark.parametrize("pattern", sorted(FLOAT_PATTERNS))
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_conv_on_every_edge_dataset_matches_the_naive_reading(pattern, dtype) -> None:
    """X of the edge pattern with random W, then W of the pattern with random X, and both: every output,
    24 x 6 x 6 of 36 terms each (tier 2 runs on the signed zeros, 864 outputs)."""
    rng = np.random.default_rng(5)
    x_edge = _edge(pattern, dtype, (1, 4, 6, 6), 1)
    w_edge = _edge(pattern, dtype, (24, 4, 3, 3), 2)
    x_random = rng.standard_normal((1, 4, 6, 6)).astype(dtype)
    w_random = (rng.standard_normal((24, 4, 3, 3)) * 0.25).astype(dtype)
    b = rng.standard_normal(24).astype(dtype)
    attrs = {"strides": (1, 1), "pads": (1, 1, 1, 1), "dilations": (1, 1), "group": 1}
    for x, w, bias in ((x_edge, w_random, None), (x_random, w_edge, b), (x_edge, w_edge, None)):
        with np.errstate(all="ignore"):
            expected = naive_conv(x, w, bias, **attrs)
        assert_identical(conv(x, w, bias, **attrs), expected)


@pytest.mark.parametrize("pattern", sorted(FLOAT_PATTERNS))
def test_depthwise_dilated_conv_on_every_edge_dataset_matches_the_naive_reading(pattern) -> None:
    """A depthwise convolution (batched products of one row each) with strides, dilations (holes under
    infinities) and a bias, on 2 x 16 x 7 x 7 outputs."""
    rng = np.random.default_rng(6)
    x = _edge(pattern, np.float32, (2, 16, 9, 9), 3)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w[::3] = _edge(pattern, np.float32, (6, 1, 3, 3), 4)
    b = np.where(rng.random(16) < 0.5, -0.0, 0.0).astype(np.float32)
    attrs = {"strides": (1, 2), "pads": (2, 1, 1, 2), "dilations": (2, 1), "group": 16}
    with np.errstate(all="ignore"):
        expected = naive_conv(x, w, b, **attrs)
    assert_identical(conv(x, w, b, **attrs), expected)


def test_signed_zero_sums_in_bulk_take_the_sign_of_every_term() -> None:
    """300 outputs whose terms are all zeros: -0 exactly where every term is -0 (the sign bits of both
    factors differ at every k), the bias decides when it is non-zero, -0 + -0 bias stays -0."""
    rng = np.random.default_rng(11)
    a = np.where(rng.random((20, 8)) < 0.5, -0.0, 0.0).astype(np.float32)
    b = np.where(rng.random((8, 15)) < 0.5, -1.0, 1.0).astype(np.float32)
    b[:, :5] = np.where(rng.random((8, 5)) < 0.5, -0.0, 0.0)  # zero columns too
    a[:4] = -0.0  # rows of one sign
    expected = naive_matmul(a, b)
    assert np.signbit(expected).any() and not np.signbit(expected).all()
    assert_identical(matmul(a, b), expected)
    for c in (np.zeros((20, 15), np.float32), -np.zeros((20, 15), np.float32), rng.standard_normal((20, 15))):
        c = c.astype(np.float32)
        assert_identical(gemm(a, b, c), naive_gemm(a, b, c))


@pytest.mark.parametrize("dtype", FLOATS)
def test_ties_and_exact_cancellations_in_bulk(dtype) -> None:
    """Small integers and halves: many sums fall exactly on a midpoint of float16 or cancel to 0, which
    only the exact tiers decide; 40 x 30 outputs, each against the exact Fraction sum."""
    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    a = (rng.integers(-64, 64, (40, 24)) / 2).astype(dtype)
    b = rng.integers(-32, 32, (24, 30)).astype(dtype)
    b[:, :10] = b[:, 10:20]  # equal columns against opposite rows: exact zeros
    a[:20, 12:] = -a[:20, :12]
    b[12:, :10] = b[:12, :10]
    assert_identical(matmul(a, b), naive_matmul(a, b))


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_are_counted_exactly(dtype) -> None:
    """Infinities of both signs in both operands, zeros against them and NaN rows and columns, on a size
    where the counts run over sub-blocks (the NaN rows and columns are decided without them)."""
    rng = np.random.default_rng(13)
    a = rng.standard_normal((12, 9)).astype(dtype)
    b = rng.standard_normal((9, 10)).astype(dtype)
    a[rng.random(a.shape) < 0.1] = np.inf
    a[rng.random(a.shape) < 0.1] = -np.inf
    a[rng.random(a.shape) < 0.15] = 0.0
    b[rng.random(b.shape) < 0.08] = -np.inf
    b[rng.random(b.shape) < 0.1] = 0.0
    a[3, 4] = np.nan
    b[2, 7] = np.nan
    c = rng.standard_normal((12, 10)).astype(dtype)
    c[0, 0], c[1, 1] = np.inf, np.nan
    with np.errstate(all="ignore"):
        assert_identical(matmul(a, b), naive_matmul(a, b))
        assert_identical(gemm(a, b, c), naive_gemm(a, b, c))


# -- the abs-sum is a rigorous upper bound ---------------------------------------------------------------
def _check_upper_bound(
    got: float, pairs: list[tuple[float, float]], bias: float | None, u: float, terms: int | None = None
) -> None:
    """``got`` is at least the exact sum, and above it by at most 8 (K + 3) u relative plus K + 2 float32
    subnormals (K: the terms the kernel sums, padding and holes included)."""
    want = naive_abs_sum(pairs, bias)
    assert Fraction(got) >= want, (got, float(want))
    terms = len(pairs) if terms is None else terms
    slack = Fraction(8 * (terms + 3)) * Fraction(u)
    assert Fraction(got) <= want * (1 + slack) + Fraction(terms + 2) * Fraction(2.0**-149)


def _extremes(dtype: type) -> st.SearchStrategy:
    """Values at the ends of the type's range, where a float32 sum of magnitudes overflows or its products
    underflow, and ordinary ones that cancel."""
    info = np.finfo(dtype)
    low = float(info.smallest_subnormal)
    values = [float(info.max), -float(info.max), float(info.max) / 3, low, -low, float(info.tiny), 0.5, -0.5,
              1.0, -1.0, 3.0, -0.0, 0.0]  # fmt: skip
    width = {np.float16: 16, np.float32: 32, np.float64: 64}[dtype]
    return st.one_of(st.sampled_from(values), st.floats(width=width, allow_nan=False, allow_infinity=False))


@st.composite
def extreme_matrices(draw):
    dtype = draw(st.sampled_from(FLOATS))
    m, n, p = draw(st.integers(1, 3)), draw(st.integers(1, 40)), draw(st.integers(1, 3))
    values = _extremes(dtype).map(dtype)
    a = draw(hnp.arrays(dtype, (m, n), elements=values))
    b = draw(hnp.arrays(dtype, (n, p), elements=values))
    c = draw(hnp.arrays(dtype, (m, p), elements=values))
    return a, b, c


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(extreme_matrices())
def test_abs_sums_bound_the_exact_sum_at_the_extremes(case) -> None:
    a, b, c = case
    u = 2.0**-24 if a.dtype != np.float64 else 2.0**-53
    with np.errstate(over="ignore"):
        bounds = {False: matmul_abs(a, b), True: gemm_abs(a, b, c)}
    for with_c, bound in bounds.items():
        for (i, j), got in np.ndenumerate(bound):
            pairs = [(float(a[i, k]), float(b[k, j])) for k in range(a.shape[1])]
            if math.isinf(got):  # only beyond the float64 range
                assert naive_abs_sum(pairs, float(c[i, j]) if with_c else None) > Fraction(1.79e308)
                continue
            _check_upper_bound(got, pairs, float(c[i, j]) if with_c else None, u)


def test_abs_sum_upper_bounds_underflowing_and_overflowing_float32_products() -> None:
    """Products below half the smallest float32 subnormal round to 0 in a float32 product, which the slack
    of (K + 1) subnormals covers; sums beyond the float32 range are taken in float64; cancelling terms count
    with their magnitudes."""
    tiny = np.float32(2.0**-149)
    k = 50
    bound = matmul_abs(np.full((1, k), tiny), np.full((k, 1), np.float32(0.5)))[0, 0]
    assert Fraction(bound) >= k * Fraction(2) ** -150
    top = np.finfo(np.float32).max
    bound = matmul_abs(np.array([[top, top, -top]]), np.array([[2.0], [2.0], [-2.0]], np.float32))[0, 0]
    assert Fraction(bound) >= 6 * Fraction(float(top))
    x = np.ones((1, 1, 4, 4), np.float32)
    w = np.array([1.0, -1.0], np.float32).reshape(2, 1, 1, 1) * np.ones((2, 1, 3, 3), np.float32)
    assert (conv_abs(x, w, pads=(1, 1, 1, 1))[0, :, 1, 1] >= 9).all()  # |1 * 1| nine times, either sign


@settings(max_examples=60, deadline=None)
@given(case=conv_cases(specials=False))
def test_conv_abs_bounds_the_exact_sum(case) -> None:
    x, w, b, attrs = case
    bound = conv_abs(x, w, b, **attrs)
    u = 2.0**-24 if x.dtype != np.float64 else 2.0**-53
    (s0, s1), (d0, d1), pads = attrs["strides"], attrs["dilations"], attrs["pads"]
    for (image, c, m, q), got in np.ndenumerate(bound):
        pairs = []
        for i in range(x.shape[1]) if attrs["group"] == 1 else [c]:
            for j in range(w.shape[2]):
                for z in range(w.shape[3]):
                    row, col = m * s0 + j * d0 - pads[0], q * s1 + z * d1 - pads[1]
                    if 0 <= row < x.shape[2] and 0 <= col < x.shape[3]:
                        pairs.append(
                            (float(x[image, i, row, col]), float(w[c, 0 if attrs["group"] > 1 else i, j, z]))
                        )
        if math.isinf(got):
            continue  # beyond float64 (float64 data only)
        terms = w.shape[1] * (d0 * (w.shape[2] - 1) + 1) * (d1 * (w.shape[3] - 1) + 1)
        _check_upper_bound(got, pairs, None if b is None else float(b[c]), u, terms)
