"""tract's activations the survey left unexplained (issue 29): LEAKYRELU-ZERO-TIMES-ALPHA (the zeros of X
through alpha * X) and float16 Sigmoid and Tanh as the float32 clamped rational approximation rounded
(SIGMOID-CLAMPED-RATIONAL, TANH-CLAMPED-RATIONAL): exactly the emulated elements are explained, a planted
wrong one is not; and, where tract is installed, every float16 input's divergence is explained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from behaviours_tract_activations import (
    SIGNED_ZEROS,
    float16_sigmoid_case,
    float16_tanh_case,
    leaky_relu_case,
    tract_leaky_relu,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_known import with_actual
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import by_id, explained_mask

LEAKY = "LEAKYRELU-ZERO-TIMES-ALPHA"
ALPHAS = [float("nan"), float("-inf"), float("inf"), -0.5, -2.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_the_zeros_through_alpha_are_explained_and_nothing_else(alpha: float, dtype: type) -> None:
    case = leaky_relu_case(alpha, dtype)
    zeros = np.array(SIGNED_ZEROS, dtype) == 0
    assert np.array_equal(case.mismatch, zeros)  # NaN, or the other zero for a negative alpha
    assert np.array_equal(by_id(LEAKY).explains(case), zeros)


def test_a_positive_alpha_changes_nothing() -> None:
    case = leaky_relu_case(0.25)
    assert not case.mismatch.any()


@pytest.mark.parametrize("planted", [1.0, 0.0, float("inf")])
def test_another_value_at_a_zero_stays_unexplained(planted: float) -> None:
    case = leaky_relu_case(-0.5)  # X[0] = +0: the product is -0, SONNX +0
    actual = case.actual.copy()
    actual[0] = planted if planted != 0.0 else -0.0  # -0 is the product: planted only for 1 and inf
    found = with_actual(case, actual)
    assert found.mismatch[0]
    assert bool(by_id(LEAKY).explains(found)[0]) is (planted == 0.0)


def test_a_nan_at_a_zero_under_a_finite_alpha_stays_unexplained() -> None:
    case = leaky_relu_case(-0.5)
    actual = case.actual.copy()
    actual[1] = np.nan
    assert not explained_mask(with_actual(case, actual))[1]


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float32, st.integers(1, 10), elements=st.sampled_from(SIGNED_ZEROS)),
    st.sampled_from([*ALPHAS, 0.01, 3.0, 0.0, -0.0]),
)
def test_every_element_the_product_changes_is_explained_and_no_other(x: np.ndarray, alpha: float) -> None:
    model = node_model("LeakyRelu", [x], {"alpha": alpha})
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    case = crafted(model, [x], expected, tract_leaky_relu(x, alpha))
    assert np.array_equal(by_id(LEAKY).explains(case), case.mismatch)


@pytest.mark.parametrize(
    ("divergence_id", "make"),
    [("SIGMOID-CLAMPED-RATIONAL", float16_sigmoid_case), ("TANH-CLAMPED-RATIONAL", float16_tanh_case)],
)
def test_float16_as_the_float32_approximation_rounded_is_explained(divergence_id, make) -> None:
    case = make()
    assert case.mismatch.any()
    assert np.array_equal(by_id(divergence_id).explains(case) & case.mismatch, case.mismatch)


def test_float16_values_beyond_the_rounded_approximation_stay_unexplained() -> None:
    sigmoid = float16_sigmoid_case()  # X = -inf, NaN, -20, ...: tract's 4.77e-7 (float16 0x0008)
    actual = sigmoid.actual.copy()
    actual[0] = np.float16(2 * 4.77e-7)  # twice the plateau for -inf
    actual[1] = 0.0  # NaN read as 0, not the plateau
    found = with_actual(sigmoid, actual)
    assert not by_id("SIGMOID-CLAMPED-RATIONAL").explains(found)[:2].any()
    tanh = float16_tanh_case()  # X = -inf, NaN, ...: Tanh(NaN) = -1 in float16
    actual = tanh.actual.copy()
    actual[1] = np.float16(-0.99)
    assert not by_id("TANH-CLAMPED-RATIONAL").explains(with_actual(tanh, actual))[1]


def _tract_float16(op_type: str, x: np.ndarray, folder: Path) -> np.ndarray:
    """tract's own float16 result (no sonnx-check runtime in between)."""
    tract = pytest.importorskip("tract")
    model = node_model(op_type, [x])
    model.graph.output[0].CopyFrom(onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, x.shape))
    onnx.save(model, folder / "model.onnx")
    runnable = tract.onnx().load(str(folder / "model.onnx")).into_model().into_runnable()
    return np.asarray(runnable.run([x])[0].to_numpy())


@pytest.mark.parametrize(
    ("op_type", "divergence_id"), [("Sigmoid", "SIGMOID-CLAMPED-RATIONAL"), ("Tanh", "TANH-CLAMPED-RATIONAL")]
)
def test_real_tract_float16_on_every_float16_input_is_explained(
    tmp_path: Path, op_type: str, divergence_id: str
) -> None:
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    actual = _tract_float16(op_type, x, tmp_path)
    model = node_model(op_type, [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    case = crafted(model, [x], expected, actual)
    assert case.mismatch.any()
    assert not (case.mismatch & ~explained_mask(case)).any()
    assert by_id(divergence_id).explains(case)[np.isnan(x)].all()  # NaN: the plateau rounded
