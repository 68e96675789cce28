"""The Conv reference's fast paths against their plain forms, bit for bit (issue 31). Its im2col is one copy
of a strided view of X_p: the values of the former copy per tap. Tier 2's lowest set bits (products_bulk): a
Conv's per-column units from a windowed minimum over X, and a constant W's per-row units kept, against the
plain path over the im2col and the weight (EfficientNet-b0's depthwise Convs on the tie-checkerboard spent
their time taking them over the im2col, T times larger than X). Each is the minimum of the same exact
values; the kernels' outputs with and without the fast paths are compared on special values, signed zeros
and subnormals."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_products import naive_conv
from test_kernels_products import conv_cases

from sonnx_check.compare.inputs.datasets import FLOAT_PATTERNS
from sonnx_check.reference import constant_cache, conv_special, products_bulk, products_common
from sonnx_check.reference.conv import ConvParams, _Plan, conv
from sonnx_check.reference.exact_sums import lowest_bit_exponent
from sonnx_check.reference.products_special import special_values


def _plan(x, w, b, attrs) -> _Plan:
    params = ConvParams(attrs["strides"], attrs["pads"], attrs["dilations"], attrs["group"])
    return _Plan(x, w, b, params, None)


def _columns_tap_by_tap(plan: _Plan, image: int, dtype: type, absolute: bool) -> np.ndarray:
    """The im2col as it was built: X_p, then one copy per tap."""
    _, height, width = plan.x.shape[1:]
    xp = np.zeros(plan.padded, dtype=dtype)
    inside = xp[:, plan.pads[0] : plan.pads[0] + height, plan.pads[1] : plan.pads[1] + width]
    inside[...] = np.abs(plan.x[image]) if absolute else plan.x[image]
    rows, cols = plan.taps
    (s0, s1), (oh, ow) = plan.strides, plan.out
    columns = np.empty((xp.shape[0], len(rows), len(cols), oh, ow), dtype=dtype)
    for a, i in enumerate(rows):
        for c, j in enumerate(cols):
            columns[:, a, c] = xp[:, i : i + s0 * (oh - 1) + 1 : s0, j : j + s1 * (ow - 1) + 1 : s1]
    taps = len(rows) * len(cols)
    return columns.reshape(-1, taps, oh * ow) if plan.depthwise else columns.reshape(1, -1, oh * ow)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(conv_cases(), st.booleans())
def test_a_convs_im2col_is_the_copy_tap_by_tap(case, holes_are_operands) -> None:
    x, w, b, attrs = case
    params = ConvParams(attrs["strides"], attrs["pads"], attrs["dilations"], attrs["group"])
    plan = _Plan(x, w, b, params, None, holes_are_operands)
    for image in range(x.shape[0]):
        for dtype, absolute in ((np.float64, False), (np.float32, True), (np.float64, True)):
            with np.errstate(all="ignore"):  # float64 X in float32: the kernel never asks it
                expected = _columns_tap_by_tap(plan, image, dtype, absolute)
                got = plan.columns(image, dtype, absolute)
            assert got.shape == expected.shape
            assert_identical(got, expected)


@st.composite
def _pointwise_cases(draw):
    """1x1 kernels of stride 1 (EfficientNet's expansions and projections), padded or not, standard or
    depthwise, dilated or not: their im2col is X_p itself, taken without a copy."""
    x, w, b, attrs = draw(conv_cases())
    w = np.asarray(w[:, :, :1, :1])
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    return x, w, b, {**attrs, "strides": (1, 1), "dilations": dilations}


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_pointwise_cases())
def test_a_pointwise_convs_im2col_is_x_p_itself_and_its_result_the_exact_sum(case) -> None:
    x, w, b, attrs = case
    plan = _plan(x, w, b, attrs)
    for image in range(x.shape[0]):
        for dtype, absolute in ((np.float64, False), (np.float32, True)):
            with np.errstate(all="ignore"):
                assert_identical(
                    plan.columns(image, dtype, absolute), _columns_tap_by_tap(plan, image, dtype, absolute)
                )
    with np.errstate(all="ignore"):
        expected = naive_conv(x, w, b, **attrs)
    assert_identical(conv(x, w, b, **attrs), expected)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(conv_cases())
def test_a_convs_column_units_are_those_of_its_im2col_with_non_finite_values_as_zeros(case) -> None:
    x, w, b, attrs = case
    plan = _plan(x, w, b, attrs)
    for image in range(x.shape[0]):
        columns = plan.columns(image)
        finite = np.where(np.isfinite(columns), columns, 0.0)
        np.testing.assert_array_equal(plan.column_units(image), lowest_bit_exponent(finite).min(axis=1))


def _plain_units(self, cols: np.ndarray) -> np.ndarray:
    return lowest_bit_exponent(self.right[:, :, cols]).min(axis=1)


def _plain_rows(self, rows: np.ndarray) -> np.ndarray:
    return lowest_bit_exponent(self.left[:, rows, :]).min(axis=2)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(conv_cases())
def test_conv_through_tier_2_is_the_same_with_and_without_the_fast_units(case) -> None:
    x, w, b, attrs = case
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        patch.setattr(products_common, "_BULK", 1)  # tier 2 for every element tier 1 leaves
        fast = conv(x, w, b, **attrs)
        patch.setattr(products_bulk.BulkSettlement, "_column_units_of", _plain_units)
        patch.setattr(products_bulk.BulkSettlement, "_row_units", _plain_rows)
        assert_identical(fast, conv(x, w, b, **attrs))


def _constant(a: np.ndarray) -> np.ndarray:
    """A read-only array over bytes, as a model's decoded weight: what constant_cache keeps forms of."""
    return np.frombuffer(a.tobytes(), dtype=a.dtype).reshape(a.shape)


@pytest.mark.parametrize("pattern", sorted(FLOAT_PATTERNS))
@pytest.mark.parametrize("group", [1, 6])
def test_a_constant_weight_gives_the_same_bits_on_every_edge_dataset_as_a_fresh_one(pattern, group) -> None:
    """The row units and the finite sub-problem's W are kept with a constant W across the datasets: the
    outputs are those of the same W given as a writable array (nothing kept), dataset after dataset."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((6, 6 // group, 3, 3)) * 0.3).astype(np.float32)
    w[0, 0, 0, 0] = 0.0
    held = _constant(w)
    attrs = {"strides": (1, 1), "pads": (1, 1, 1, 1), "dilations": (1, 1), "group": group}
    constant_cache.clear()
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        patch.setattr(products_common, "_BULK", 1)
        for seed in range(3):
            x = FLOAT_PATTERNS[pattern](np.dtype(np.float32), (1, 6, 5, 5), np.random.default_rng(seed))
            assert_identical(conv(x, held, None, **attrs), conv(x, w.copy(), None, **attrs))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(conv_cases(), st.booleans())
def test_a_convs_special_values_from_x_are_those_of_its_im2col(case, holes_are_operands) -> None:
    """conv_special against products_special on the im2col (NaN, infinities of either sign, zeros and
    signed zeros of W and of the bias, the dilation's holes as operands or not), where W is finite."""
    x, w, b, attrs = case
    params = ConvParams(attrs["strides"], attrs["pads"], attrs["dilations"], attrs["group"])
    plan = _Plan(x, w, b, params, None, holes_are_operands)
    for image in range(x.shape[0]):
        found = conv_special.special_values(plan, image)
        if not np.isfinite(w).all():
            assert found is None
            continue
        right = plan.columns(image)
        shape = (max(plan.left.shape[0], right.shape[0]), plan.left.shape[1], right.shape[2])
        bias = None if plan.bias is None else np.broadcast_to(plan.bias, shape)
        where, values = special_values(plan.left, right, bias, shape)
        assert found is not None
        np.testing.assert_array_equal(found[0], where)
        assert_identical(found[1][where], values[where])
        finite = np.where(np.isfinite(right), right, 0.0)
        assert_identical(plan.columns(image, finite=True), finite)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(conv_cases())
def test_conv_on_special_values_is_the_same_through_the_general_path(case) -> None:
    x, w, b, attrs = case
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        fast = conv(x, w, b, **attrs)
        patch.setattr(conv_special, "special_values", lambda plan, image: None)
        patch.setattr(_Plan, "columns", _columns_without_finite)
        assert_identical(fast, conv(x, w, b, **attrs))


_plain_columns = _Plan.columns


def _columns_without_finite(self, image, dtype=np.float64, absolute=False, finite=False):  # type: ignore[no-untyped-def]
    """The finite problem's im2col as Products.rounded makes it from the whole im2col."""
    columns = _plain_columns(self, image, dtype, absolute)
    return np.where(np.isfinite(columns), columns, 0.0) if finite else columns
