"""The formulas that Conv, MaxPool, MatMul, Softmax and the element-wise group once each wrote for themselves
(issue 28, item 7) now have one home each; these tests hold the shared version to what the copies computed.

- ``shapes.window_output_size``: the number of window positions along an axis, counted one by one.
- ``products_signs.unsigned_products_signed_sums``: Conv's and MatMul's (P, N) are ``signed_sums`` of their
  own ``run_abs``, as their hand-written copies returned.
- Softmax's double-double path with the shared ``exp_scaled`` and ``dd_div``: bit for bit what it returned
  with its former exp (argument reduction by ln 2 and ten squarings) and division, kept below as they were.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction
from unittest import mock

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import conv as conv_kernel
from sonnx_check.reference import matmul as matmul_kernel
from sonnx_check.reference import softmax as softmax_kernel
from sonnx_check.reference.double_double import dd_add, dd_mul, fast_two_sum, two_prod, two_sum
from sonnx_check.reference.double_double_functions import exp_scaled, expm1_dd
from sonnx_check.reference.products_signs import signed_sums
from sonnx_check.shapes import window_output_size, window_output_spatial

# --- the sliding window's output size ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(1, 40),
    kernel=st.integers(1, 6),
    stride=st.integers(1, 5),
    dilation=st.integers(1, 4),
    pad_begin=st.integers(0, 6),
    pad_end=st.integers(0, 6),
)
def test_window_output_size_counts_the_windows_that_fit_in_the_padded_axis(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int
) -> None:
    extent = dilation * (kernel - 1) + 1
    padded = size + pad_begin + pad_end
    fitting = sum(1 for start in range(0, padded, stride) if start + extent <= padded)
    got = window_output_size(size, kernel, stride, dilation, pad_begin, pad_end)
    assert got == fitting or (fitting == 0 and got <= 0)
    # the formula Conv's reference kernel and its comparison predicate each wrote out
    assert got == (size + pad_begin + pad_end - (kernel - 1) * dilation - 1) // stride + 1


def test_window_output_spatial_reads_pads_as_begins_then_ends() -> None:
    assert window_output_spatial((7, 9), (3, 2), (2, 1), (1, 3), (1, 0, 0, 2)) == (3, 8)


def test_conv_and_maxpool_references_agree_with_the_static_shape() -> None:
    x = np.ones((1, 1, 9, 7), dtype=np.float32)
    y = conv_kernel.conv(
        x, np.ones((2, 1, 3, 2), np.float32), None, strides=[2, 3], pads=[1, 0, 2, 1], dilations=[2, 1]
    )
    assert y.shape == (1, 2, *window_output_spatial((9, 7), (3, 2), (2, 3), (2, 1), (1, 0, 2, 1)))


# --- signed sums of Conv and MatMul -------------------------------------------------------------------------

_SIGNED = st.floats(-1e3, 1e3, width=32) | st.sampled_from([np.inf, -np.inf, np.nan, 0.0, -0.0])


@settings(max_examples=60, deadline=None)
@given(
    a=hnp.arrays(np.float32, (3, 4), elements=_SIGNED),
    b=hnp.arrays(np.float32, (4, 2), elements=_SIGNED),
)
def test_matmul_signed_sums_are_signed_sums_of_its_run_abs(a: np.ndarray, b: np.ndarray) -> None:
    node = onnx.helper.make_node("MatMul", ["A", "B"], ["Y"])
    got = matmul_kernel.run_signed_sums(node, [a, b])
    expected = signed_sums(matmul_kernel.run_abs, node, [a, b])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    assert (got[0] >= 0).all() and (got[1] >= 0).all()


@settings(max_examples=40, deadline=None)
@given(
    x=hnp.arrays(np.float32, (1, 2, 4, 4), elements=_SIGNED),
    w=hnp.arrays(np.float32, (3, 2, 2, 2), elements=_SIGNED),
    bias=hnp.arrays(np.float32, (3,), elements=_SIGNED),
)
def test_conv_signed_sums_are_signed_sums_of_its_run_abs(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray
) -> None:
    node = onnx.helper.make_node("Conv", ["X", "W", "B"], ["Y"], pads=[1, 0, 0, 1])
    got = conv_kernel.run_signed_sums(node, [x, w, bias])
    expected = signed_sums(conv_kernel.run_abs, node, [x, w, bias])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


# --- Softmax's exp and division, before and after -----------------------------------------------------------


def _former_dd_exp(dh: np.ndarray, dl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Softmax's own exp before the dedupe (movement_common.dd_exp): k = rint(d / ln 2), a degree-9 Taylor
    polynomial of e^(r / 2^10) - 1 and ten squarings."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        ln2 = Fraction(decimal.Decimal(2).ln())
    ln2_hi = float(ln2)
    ln2_lo = float(ln2 - Fraction(ln2_hi))
    inverse_factorials = []
    for n in range(10):
        value = Fraction(1, math.factorial(n))
        inverse_factorials.append((float(value), float(value - Fraction(float(value)))))
    k = np.rint(dh / ln2_hi)
    ph, pl = two_prod(k, np.full_like(k, ln2_hi))
    rh, rl = two_sum(dh, -ph)
    rl = rl + ((dl - pl) - k * ln2_lo)
    rh, rl = fast_two_sum(rh, rl)
    sh, sl = rh * 2.0**-10, rl * 2.0**-10
    zero = np.zeros_like(sh)
    qh = np.full_like(sh, inverse_factorials[9][0])
    ql = np.full_like(sh, inverse_factorials[9][1])
    for n in range(8, 0, -1):
        qh, ql = dd_mul(qh, ql, sh, sl)
        ch, cl = inverse_factorials[n]
        qh, ql = dd_add(qh, ql, zero + ch, zero + cl)
    mh, ml = dd_mul(qh, ql, sh, sl)
    for _ in range(10):
        th, tl = dd_add(mh, ml, zero + 2.0, zero)
        mh, ml = dd_mul(mh, ml, th, tl)
    mh, ml = dd_add(mh, ml, zero + 1.0, zero)
    return mh, ml, k


def _former_dd_div(
    ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """movement_common.dd_div before the dedupe: the products by a quotient digit as full dd products."""
    q1 = ah / bh
    ph, pl = dd_mul(bh, bl, q1, np.zeros_like(q1))
    rh, rl = dd_add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = dd_mul(bh, bl, q2, np.zeros_like(q2))
    rh, rl = dd_add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = fast_two_sum(q1, q2)
    return dd_add(q1, q2, q3, np.zeros_like(q3))


def _former_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    with (
        mock.patch.object(softmax_kernel, "exp_scaled", _former_dd_exp),
        mock.patch.object(softmax_kernel, "dd_div", _former_dd_div),
    ):
        return softmax_kernel.softmax(x, axis=axis)


_ROW_VALUES = (
    st.floats(-800.0, 800.0)
    | st.floats(-5.0, 5.0)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -745.0, -746.5])
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=_ROW_VALUES),
    axis_pick=st.integers(0, 2),
)
def test_float64_softmax_is_bit_identical_with_its_former_exp_and_division(
    x: np.ndarray, axis_pick: int
) -> None:
    axis = axis_pick % x.ndim
    got = softmax_kernel.softmax(x, axis=axis)
    former = _former_softmax(x, axis)
    np.testing.assert_array_equal(got.view(np.uint64), former.view(np.uint64))


def test_float64_softmax_is_bit_identical_on_a_large_spread_of_rows() -> None:
    rng = np.random.default_rng(28)
    x = np.concatenate([rng.normal(0, s, (200, 64)) for s in (1e-3, 1.0, 30.0, 300.0)])
    got = softmax_kernel.softmax(x, axis=1)
    np.testing.assert_array_equal(got.view(np.uint64), _former_softmax(x, 1).view(np.uint64))


def test_former_exp_and_shared_exp_agree_far_below_the_rounding() -> None:
    """The two exps differ only in their last bits (relative 2^-88 against 2^-98), which is why Softmax's
    rounded output does not move."""
    d = -np.linspace(0.0, 745.0, 20001)
    mh, ml, k = exp_scaled(d, np.zeros_like(d))
    fh, fl, fk = _former_dd_exp(d, np.zeros_like(d))
    new = np.ldexp(mh, k) + np.ldexp(ml, k)
    old = np.ldexp(fh, fk.astype(np.int64)) + np.ldexp(fl, fk.astype(np.int64))
    normal = new > 2.0**-1000
    assert (np.abs(new - old)[normal] <= 2.0**-80 * new[normal]).all()


def test_expm1_shares_exp_scaled_s_value_away_from_zero() -> None:
    x = np.array([-50.0, -3.0, -0.5, 0.25, 2.0, 40.0])
    eh, el = expm1_dd(x, np.zeros_like(x))
    mh, ml, k = exp_scaled(x, np.zeros_like(x))
    one_less = dd_add(np.ldexp(mh, k), np.ldexp(ml, k), -np.ones_like(mh), np.zeros_like(mh))
    np.testing.assert_array_equal(eh, one_less[0])
    np.testing.assert_array_equal(el, one_less[1])
