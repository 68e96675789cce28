"""The block-by-block evaluation of the Softmax and BatchNormalization bounds (reference/fast_bounds.py) gives
every bound value bit for bit as the rules' whole-tensor formula (the path taken without it), so a verdict can
never differ: checked on hard data (huge and tiny magnitudes, subnormals, near-tolerance actual values, and
the special values the fast path hands back to the formula)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.reference import batchnormalization as bn_kernel
from sonnx_check.reference import fast_bounds
from sonnx_check.reference import softmax as softmax_kernel


def _both(node, inputs, expected) -> tuple:
    """The Tolerance with the fast path and without it (the rule's whole-tensor formula, evaluated at once:
    neither the block-by-block functions nor the deferred form)."""
    bound = accuracy.bound_for(node.op_type, expected.dtype)
    fast = bound.evaluate(node, inputs, expected)
    fast.allowed  # noqa: B018 - a deferred bound computes its values on first use
    whole = dataclasses.replace(bound, rule=dataclasses.replace(bound.rule, deferred=None))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast_bounds, "softmax", lambda data: None)
        patch.setattr(fast_bounds, "batch_normalization", lambda data: None)
        slow = whole.evaluate(node, inputs, expected)
        assert slow.deferred is None
    return fast, slow


def _same_tolerance(fast, slow, expected: np.ndarray) -> None:
    a = np.broadcast_to(np.asarray(fast.allowed, dtype=np.float64), expected.shape)
    b = np.broadcast_to(np.asarray(slow.allowed, dtype=np.float64), expected.shape)
    same_bits = (a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))
    assert same_bits.all(), (a[~same_bits][:5], b[~same_bits][:5])
    ea = np.broadcast_to(np.asarray(fast.exact, dtype=bool), expected.shape)
    eb = np.broadcast_to(np.asarray(slow.exact, dtype=bool), expected.shape)
    assert np.array_equal(ea, eb)
    assert fast.text == slow.text


def _near_tolerance_actuals(expected: np.ndarray, allowed: np.ndarray) -> list[np.ndarray]:
    """Runtime outputs at the edge of the bound: expected +- allowed rounded to the type, and one step out."""
    dtype = expected.dtype
    with np.errstate(all="ignore"):
        e = expected.astype(np.float64)
        edge = (e + allowed).astype(dtype)
        return [edge, np.nextafter(edge, dtype.type(np.inf)), (e - allowed).astype(dtype), expected]


def _same_verdicts(fast, slow, expected: np.ndarray) -> None:
    allowed = np.broadcast_to(np.asarray(slow.allowed, dtype=np.float64), expected.shape)
    for actual in _near_tolerance_actuals(expected, allowed):
        masks_fast, _, _ = accuracy.outcome_masks(expected, actual, fast, expected.dtype)
        masks_slow, _, _ = accuracy.outcome_masks(expected, actual, slow, expected.dtype)
        for outcome in accuracy.OUTCOMES:
            assert np.array_equal(masks_fast[outcome], masks_slow[outcome]), outcome


_HARD_FLOATS = st.one_of(
    st.floats(-1e4, 1e4, width=32).map(float),
    # huge spreads: d far beyond the exp range, n large
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.floats(-1.1754943508222875e-38, 1.1754943508222875e-38, width=32, allow_subnormal=True),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 88.7, -103.9, 1.4e-45, -1.4e-45, 3.4028235e38]),
)


_HARD_HALVES = st.one_of(
    st.floats(-100, 100, width=16),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.floats(-float(np.float16(6.1035e-05)), float(np.float16(6.1035e-05)), width=16, allow_subnormal=True),
)


def _draw(data, shape, dtype) -> np.ndarray:
    if dtype == np.float16:
        return data.draw(hnp.arrays(np.float16, shape, elements=_HARD_HALVES))
    return data.draw(hnp.arrays(np.float32, shape, elements=_HARD_FLOATS))


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float16]),
    rows=st.integers(1, 5),
    n=st.integers(1, 70),
)
def test_softmax_bound_is_bit_for_bit_the_formula(data, dtype, rows, n) -> None:
    x = _draw(data, (rows, n), dtype)
    node = h.make_node("Softmax", ["X"], ["Y"], axis=1)
    with np.errstate(all="ignore"):
        (expected,) = softmax_kernel.run(node, [x], None)
    fast, slow = _both(node, [x], expected)
    _same_tolerance(fast, slow, expected)
    _same_verdicts(fast, slow, expected)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), special=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_softmax_special_values_take_the_formula(data, special) -> None:
    """NaN, +inf, -inf (a row of -inf only too): the fast path declines, the formula decides, as before."""
    x = data.draw(hnp.arrays(np.float32, (3, 8), elements=st.floats(-50, 50, width=32)))
    x[data.draw(st.integers(0, 2)), data.draw(st.integers(0, 7))] = special
    x[2, :] = -np.inf
    node = h.make_node("Softmax", ["X"], ["Y"], axis=1)
    (expected,) = softmax_kernel.run(node, [x], None)
    fast, slow = _both(node, [x], expected)
    _same_tolerance(fast, slow, expected)


def test_softmax_bound_over_many_blocks() -> None:
    """Rows spread over several blocks, a long row (the pairwise sum of one row), a 3-D tensor."""
    rng = np.random.default_rng(3)
    for shape, late_nan in [
        ((300, 1000), False),
        ((2, 70_000), False),
        ((4, 5, 3000), False),
        ((300, 1000), True),
    ]:
        x = (rng.standard_normal(shape) * 30).astype(np.float32)
        if late_nan:  # the fast path declines in its last block: the formula decides the whole tensor
            x[-1, -1] = np.nan
        node = h.make_node("Softmax", ["X"], ["Y"], axis=len(shape) - 1)
        (expected,) = softmax_kernel.run(node, [x], None)
        fast, slow = _both(node, [x], expected)
        _same_tolerance(fast, slow, expected)


def test_the_fast_path_is_taken_on_finite_data() -> None:
    """What makes the comparison faster: finite float32 data reduced over the last axis, and every
    BatchNormalization of float32, do not reach the whole-tensor formula."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 10)).astype(np.float32)
    node = h.make_node("Softmax", ["X"], ["Y"], axis=1)
    (expected,) = softmax_kernel.run(node, [x], None)
    fmt = accuracy.float_format(np.float32)
    data = accuracy.NodeData(node, [x], expected, fmt, {"axis": 1})
    assert fast_bounds.softmax(data) is not None
    inputs = [x.reshape(4, 10, 1)] + [rng.standard_normal(10).astype(np.float32) for _ in range(4)]
    inputs[4] = np.abs(inputs[4])
    bn = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])
    (expected,) = bn_kernel.run(bn, inputs, None)
    assert fast_bounds.batch_normalization(accuracy.NodeData(bn, inputs, expected, fmt, {})) is not None


def test_softmax_on_another_axis_takes_the_formula() -> None:
    x = np.random.default_rng(4).standard_normal((6, 7, 5)).astype(np.float32)
    node = h.make_node("Softmax", ["X"], ["Y"], axis=1)
    (expected,) = softmax_kernel.run(node, [x], None)
    fast, slow = _both(node, [x], expected)
    _same_tolerance(fast, slow, expected)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float16]),
    shape=st.sampled_from([(3,), (2, 3), (2, 3, 5), (1, 2, 4, 4), (2, 1, 3, 3)]),
    epsilon=st.sampled_from([1e-5, 1e-3, 1e-30]),
)
def test_batch_normalization_bound_is_bit_for_bit_the_formula(data, dtype, shape, epsilon) -> None:
    channels = shape[1] if len(shape) > 1 else 1
    if len(shape) == 1:
        shape = (3,)
    x = _draw(data, shape, dtype)
    params = [_draw(data, (channels,), dtype) for _ in "sbm"]
    var = np.abs(_draw(data, (channels,), dtype))
    inputs = [x, *params, var]
    node = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"], epsilon=epsilon)
    with np.errstate(all="ignore"):
        (expected,) = bn_kernel.run(node, inputs, None)
    fast, slow = _both(node, inputs, expected)
    _same_tolerance(fast, slow, expected)
    _same_verdicts(fast, slow, expected)


def test_batch_normalization_with_special_values_and_overflow() -> None:
    """NaN and infinities in X, an output overflowing to inf (the magnitude's largest finite value)."""
    x = np.array([[[np.nan, np.inf, -np.inf, 3e38]], [[1.0, -2.0, 0.0, -0.0]]], dtype=np.float32)
    params = [np.array([v], dtype=np.float32) for v in (1e4, 3e38, 0.5)]
    var = np.array([1e-3], dtype=np.float32)
    node = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])
    with np.errstate(all="ignore"):
        (expected,) = bn_kernel.run(node, [x, *params, var], None)
    assert np.isinf(expected).any()
    fast, slow = _both(node, [x, *params, var], expected)
    _same_tolerance(fast, slow, expected)


def test_batch_normalization_over_many_blocks() -> None:
    rng = np.random.default_rng(5)
    shape = (3, 16, 40, 40)
    inputs = [rng.standard_normal(shape).astype(np.float32)]
    inputs += [rng.standard_normal(16).astype(np.float32) for _ in range(3)]
    inputs += [np.abs(rng.standard_normal(16)).astype(np.float32)]
    node = h.make_node("BatchNormalization", ["X", "S", "B", "M", "V"], ["Y"])
    (expected,) = bn_kernel.run(node, inputs, None)
    fast, slow = _both(node, inputs, expected)
    _same_tolerance(fast, slow, expected)
