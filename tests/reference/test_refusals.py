"""What the reference refuses, and that it refuses before allocating: a ReferenceError with the reason, which
the comparison reports as RUNTIME.not-compared."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import max_node_model, maxpool_node_model
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.reference import nan_policy
from sonnx_check.reference.maxpool import PoolParams, maxpool


def _maxpool_node(**attrs) -> onnx.NodeProto:
    base = {"kernel_shape": [2, 2], "pads": [0, 0, 0, 0], "strides": [1, 1], "dilations": [1, 1]}
    base.update(attrs)
    return h.make_node("MaxPool", ["X"], ["Y"], **{k: v for k, v in base.items() if v is not None})


def test_evaluate_names_every_operator_without_a_kernel() -> None:
    graph = h.make_graph(
        [
            h.make_node("Transpose", ["X"], ["A"]),
            h.make_node("Cast", ["A"], ["B"], to=1),
            h.make_node("Transpose", ["B"], ["Y"]),
            h.make_node("Custom", ["Y"], ["Z"], domain="com.vendor"),
        ],
        "g",
        [h.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [1])],
        [h.make_tensor_value_info("Z", onnx.TensorProto.FLOAT, [1])],
    )
    with pytest.raises(reference.UnsupportedOperatorError) as caught:
        reference.evaluate(h.make_model(graph), {"X": np.zeros(1, np.float32)})
    assert caught.value.ops == ["Cast", "Transpose", "com.vendor.Custom"]
    assert "no SONNX reference kernel for Cast, Transpose, com.vendor.Custom" in str(caught.value)


def test_evaluate_names_a_missing_graph_input() -> None:
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(reference.ReferenceError, match="no value given for graph input.*X"):
        reference.evaluate(maxpool_node_model(x, (2, 2), (0, 0, 0, 0)), {})


def test_max_budget_is_checked_before_the_output_is_allocated() -> None:
    # Views of 10^12 elements that occupy no memory: allocating the output would fail with MemoryError.
    a = np.broadcast_to(np.float32(1), (10**6, 1))
    b = np.broadcast_to(np.float32(2), (1, 10**6))
    with pytest.raises(
        reference.BudgetExceededError,
        match="Max output Y would hold 1000000000000 elements, over the budget of 1000",
    ):
        reference.run_node(h.make_node("Max", ["a", "b"], ["y"]), [a, b], max_elements=1000)


def test_maxpool_budget_is_checked_before_the_output_is_allocated() -> None:
    x = np.broadcast_to(np.float32(0), (10**4, 10**4, 10, 10))
    with pytest.raises(
        reference.BudgetExceededError, match="MaxPool output Y would hold 8100000000 elements"
    ):
        reference.run_node(_maxpool_node(), [x], max_elements=10**6)


def test_initializers_over_the_budget_are_refused_before_decoding() -> None:
    a = np.zeros(100, np.float32)
    model = max_node_model(a, a.copy(), as_initializer=1)
    with pytest.raises(reference.BudgetExceededError, match="initializer 'A1'"):
        reference.evaluate(model, {"A0": a}, max_elements=10)


@pytest.mark.parametrize(
    ("attrs", "reason"),
    [
        ({"auto_pad": "SAME_UPPER"}, "auto_pad='SAME_UPPER'"),
        ({"ceil_mode": 1}, "ceil_mode=1"),
        ({"storage_order": 1}, "storage_order=1"),
        ({"kernel_shape": [2], "pads": [0, 0], "strides": [1], "dilations": [1]}, "1 spatial axes"),
        ({"kernel_shape": None}, "without kernel_shape"),
        ({"strides": [0, 1]}, "out of their domain"),
    ],
)
def test_maxpool_outside_the_profile_is_refused_not_guessed(attrs, reason) -> None:
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(reference.ReferenceError, match=reason.replace("(", r"\(")):
        reference.run_node(_maxpool_node(**attrs), [x])


def test_maxpool_with_absent_attributes_uses_the_onnx_defaults() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (y,) = reference.run_node(h.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2]), [x])
    np.testing.assert_array_equal(y[0, 0], [[5, 6, 7], [9, 10, 11], [13, 14, 15]])


def test_maxpool_window_made_only_of_padding_is_refused() -> None:
    # X of height 2, kernel 2, dilation 3, pads 1: pads.C2 holds, yet the only window taps two padding rows.
    x = np.zeros((1, 1, 2, 2), np.float32)
    node = _maxpool_node(dilations=[3, 1], pads=[1, 0, 1, 0])
    with pytest.raises(reference.ReferenceError, match="only of padding"):
        reference.run_node(node, [x])


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint16, np.bool_])
def test_maxpool_types_outside_the_profile_are_refused(dtype) -> None:
    with pytest.raises(reference.OutsideProfileError, match="MaxPool.types"):
        reference.run_node(_maxpool_node(), [np.zeros((1, 1, 2, 2), dtype)])


def test_max_refuses_mixed_types_and_non_broadcastable_shapes() -> None:
    node = h.make_node("Max", ["a", "b"], ["y"])
    with pytest.raises(reference.ReferenceError, match="different types"):
        reference.run_node(node, [np.zeros(2, np.float32), np.zeros(2, np.float64)])
    with pytest.raises(reference.ReferenceError, match="not broadcastable"):
        reference.run_node(node, [np.zeros(2, np.float32), np.zeros(3, np.float32)])
    with pytest.raises(reference.OutsideProfileError, match="Max.types"):
        reference.run_node(node, [np.zeros(2, np.bool_), np.zeros(2, np.bool_)])


def test_control_flow_and_custom_domains_have_no_kernel() -> None:
    custom = h.make_node("Max", ["a"], ["y"], domain="com.vendor")
    with pytest.raises(reference.UnsupportedOperatorError, match="com.vendor.Max"):
        reference.run_node(custom, [np.zeros(1, np.float32)])


def test_max_of_100000_inputs_runs() -> None:
    arrays = [np.full(3, k, np.int32) for k in range(100_000)]
    node = h.make_node("Max", [f"a{k}" for k in range(100_000)], ["y"])
    (y,) = reference.run_node(node, arrays)
    np.testing.assert_array_equal(y, [99_999] * 3)


def test_the_nan_reading_is_an_argument_of_the_kernel_and_of_run_node() -> None:
    """The MaxPool NaN reading is passed, never a module global: the kernel and run_node take it, and the
    default is seed 003's."""
    x = np.array([1.0, np.nan, 3.0, np.nan], np.float32).reshape(1, 1, 2, 2)
    params = PoolParams((2, 2), (1, 1), (1, 1), (0, 0, 0, 0))
    y, indices = maxpool(x, params)
    assert (y.item(), indices.item()) == (3.0, 2)
    y, indices = maxpool(x, params, nan_reading=nan_policy.NAN_ABSORBING)
    assert np.isnan(y.item()) and indices.item() == 1
    node = h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    assert reference.run_node(node, [x])[0].item() == 3.0
    absorbing = reference.Readings(((nan_policy.READING, nan_policy.NAN_ABSORBING),))
    assert np.isnan(reference.run_node(node, [x], readings=absorbing)[0].item())
    assert not hasattr(nan_policy, "MAXPOOL_NAN")
