"""tract's activations the survey left unexplained (issue 29): LEAKYRELU-ZERO-TIMES-ALPHA (the zeros of X
through alpha * X) and float16 Sigmoid and Tanh as the float32 clamped rational approximation rounded
(SIGMOID-CLAMPED-RATIONAL, TANH-CLAMPED-RATIONAL) or, on the CPUs where tract runs them, as its float16
kernels (SIGMOID-FLOAT16-RATIONAL, TANH-FLOAT16-RATIONAL): exactly the emulated elements are explained, a
planted wrong one is not; and, where tract is installed, every float16 input's divergence is explained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from behaviours_float16_rational import float16_sigmoid, float16_tanh
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


KERNELS = [
    ("Sigmoid", "SIGMOID-CLAMPED-RATIONAL", "SIGMOID-FLOAT16-RATIONAL", float16_sigmoid),
    ("Tanh", "TANH-CLAMPED-RATIONAL", "TANH-FLOAT16-RATIONAL", float16_tanh),
]
EVERY_FLOAT16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


@pytest.mark.parametrize(("op_type", "float32_id", "float16_id", "kernel"), KERNELS)
def test_real_tract_float16_on_every_float16_input_is_explained(
    tmp_path: Path, op_type: str, float32_id: str, float16_id: str, kernel: object
) -> None:
    """tract rounds its float32 result to float16 on some CPUs and runs a float16 kernel on others (the same
    version): whichever ran here, every float16 input's divergence is explained, by the kernel's own ID."""
    x = EVERY_FLOAT16
    actual = _tract_float16(op_type, x, tmp_path)
    model = node_model(op_type, [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    case = crafted(model, [x], expected, actual)
    assert case.mismatch.any()
    assert not (case.mismatch & ~explained_mask(case)).any()
    if by_id(float16_id).explains(case)[case.mismatch].all():
        assert (actual.view(np.uint16) == kernel(x).view(np.uint16)).all()  # type: ignore[operator]
        return  # the float16 kernel ran: every element is its evaluation, bit for bit
    assert by_id(float32_id).explains(case)[np.isnan(x)].all()  # NaN: the float32 plateau rounded


@pytest.mark.parametrize(("op_type", "float32_id", "float16_id", "kernel"), KERNELS)
def test_the_float16_kernel_is_explained_bit_for_bit_and_one_ulp_off_is_not(
    op_type: str, float32_id: str, float16_id: str, kernel: object
) -> None:
    """On every float16 input: the float16 kernel's results are explained under its ID, each departing
    element moved by one ulp is not (by that ID)."""
    x = EVERY_FLOAT16
    model = node_model(op_type, [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    actual = kernel(x)  # type: ignore[operator]
    case = crafted(model, [x], expected, actual)
    assert case.mismatch.sum() > 20_000
    assert by_id(float16_id).explains(case)[case.mismatch].all()
    with np.errstate(all="ignore"):
        off = np.where(case.mismatch, np.nextafter(actual, np.float16(np.inf)), actual).astype(np.float16)
    moved = crafted(model, [x], expected, off)
    assert not (by_id(float16_id).explains(moved) & case.mismatch & (off != actual)).any()


def test_either_cpus_lower_sigmoid_plateau_is_explained_for_nan_and_nothing_between() -> None:
    """tract 0.23.9's float32 Sigmoid gives -inf and NaN 4.4703484e-7 on one CPU and 2^-21 on another: both
    are the approximation's plateau; a value between them for a NaN is not."""
    x = np.array([np.nan, -np.inf, np.nan], np.float32)
    model = node_model("Sigmoid", [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    for low in (0x34F00000, 0x35000000):
        plateau = np.array([low] * 3, np.uint32).view(np.float32)
        case = crafted(model, [x], expected, plateau)
        assert by_id("SIGMOID-CLAMPED-RATIONAL").explains(case).all()
    between = np.array([0x34F80000] * 3, np.uint32).view(np.float32)
    explained = by_id("SIGMOID-CLAMPED-RATIONAL").explains(crafted(model, [x], expected, between))
    assert explained.tolist() == [False, True, False]  # -inf: within 2^-21 of 0; NaN: no plateau
