"""Known onnxruntime divergences on the operators beyond Max and MaxPool.

Two halves. Crafted cases (no onnxruntime): each entry explains its own case and not a neighbouring mismatch
it does not account for (``CRAFTED`` also feeds test_known.py's table-wide checks). Live cases: a small
single-node model run in the installed onnxruntime, at the default and the disabled optimisation level; the
behaviour must still be there (else the test skips: onnxruntime follows the text on this version, so the
entry is not "seen" there) and every element the comparison calls a divergence must be explained by the
entry. CI runs them on onnxruntime 1.21.0 and on the newest release.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from sonnx_check import reference
from sonnx_check.compare import CompareOptions, compare_model
from sonnx_check.compare.judging.diff import Outcome
from sonnx_check.compare.judging.known_departures import (
    KNOWN,
    DivergenceCase,
    KnownDivergence,
    by_id,
    match_known,
)
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import merge
from sonnx_check.config.departures import covered_ids
from sonnx_check.findings import Severity

F32 = np.finfo(np.float32)
F64 = np.finfo(np.float64)
OPSET = 22
CONV_3X3 = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [3, 3], "pads": [0] * 4}
CONV_3X3["strides"] = [1, 1]
BN = {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0}
GEMM = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
NEW_IDS = (
    "SIGMOID-FLOAT-ABSOLUTE-ERROR",
    "SIGMOID-DOUBLE-CANCELLATION",
    "TANH-FLOAT-RATIONAL-MLAS",
    "TANH-DOUBLE-SATURATION-ERROR",
    "RANGE-ACCUMULATES",
    "ARGMAX-NAN-POSITIONAL",
    "SOFTMAX-ALL-NEG-INF-NAN",
    "PARTIAL-SUM-OVERFLOW",
    "NEGATIVE-ZERO-SUM-AS-POSITIVE",
    "BATCHNORM-FOLDED-OVERFLOW",
    "WHERE-LOSES-NEGATIVE-ZERO",
    "CLIP-CROSSED-BOUNDS-KEEPS-NAN",
    "POW-INTEGER-THROUGH-DOUBLE",
    "CONV-DILATION-HOLES-SKIPPED",
    "LSTM-NAN-GATES-NUMERIC",
)


def node_model(
    op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict | None = None
) -> onnx.ModelProto:
    """One node, opset 22; an input given as None is an omitted optional input. The output's type is left to
    onnxruntime's inference (as localise.py does)."""
    names = [f"i{k}" if value is not None else "" for k, value in enumerate(inputs)]
    declared = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape))
        for name, value in zip(names, inputs, strict=True)
        if value is not None
    ]
    node = helper.make_node(op_type, names, ["y"], name="n", **(attrs or {}))
    graph = helper.make_graph([node], "g", declared, [onnx.ValueInfoProto(name="y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def raw_mismatch(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Bit-level difference (NaN = NaN, the sign of zero compared), before any accuracy bound."""
    if expected.dtype.kind != "f":
        return expected != actual
    same = (expected == actual) & (np.signbit(expected) == np.signbit(actual))
    return ~(same | (np.isnan(expected) & np.isnan(actual)))


def crafted(
    model: onnx.ModelProto, inputs: Sequence[np.ndarray | None], expected, actual, mismatch=None
) -> DivergenceCase:
    expected, actual = np.asarray(expected), np.asarray(actual)
    mask = raw_mismatch(expected, actual) if mismatch is None else np.asarray(mismatch)
    return DivergenceCase(model.graph.node[0], 0, expected, actual, mask, list(inputs))


def explained(divergence_id: str, case: DivergenceCase) -> np.ndarray:
    return by_id(divergence_id).explains(case)


# -- crafted cases: what each entry explains, and what it does not --------------------------------------


def _sigmoid_float_case() -> DivergenceCase:
    x = np.array([-5.0, -17.962, -20.0, 1.0], np.float32)
    expected = np.array([6.6928510e-03, 1.581512e-08, 2.0611537e-09, 0.7310586], np.float32)
    # onnxruntime's values, measured on 1.21.0 and 1.32.0
    actual = np.array([6.6929162e-03, 1.1920929e-07, 0.0, 0.7310586], np.float32)
    return crafted(node_model("Sigmoid", [x]), [x], expected, actual)


def _sigmoid_double_case() -> DivergenceCase:
    x = np.array([-10.0, -36.8, -100.0, 2.0])
    expected = np.array(
        [4.5397868702434395e-05, 1.0422287910437e-16, 3.720075976020836e-44, 0.8807970779778823]
    )
    on_grid = np.round(expected[0] * 2.0**53 + 1) / 2.0**53  # a multiple of 2^-53, one step from SONNX's
    actual = np.array([on_grid, 0.0, 0.0, 0.8807970779778823])
    return crafted(node_model("Sigmoid", [x]), [x], expected, actual)


def _tanh_float_case() -> DivergenceCase:
    x = np.array([-8.9862, 8.5, 0.5], np.float32)
    expected = np.array([-0.99999994, 0.99999994, 0.46211716], np.float32)
    actual = np.array([-1.0000002, 1.0000001, 0.46211716], np.float32)
    return crafted(node_model("Tanh", [x]), [x], expected, actual)


def _tanh_double_case() -> DivergenceCase:
    x = np.array([-13.8579, 17.8, 0.5])
    expected = np.array([-0.9999999999980786, 0.9999999999999993, 0.46211715726000974])
    actual = np.array([-0.9999999999980786 - 8 * 2.0**-53, 1.0, 0.46211715726000974])
    return crafted(node_model("Tanh", [x]), [x], expected, actual)


def _range_inputs(dtype=np.float32) -> list[np.ndarray]:
    return [np.array(-3.3, dtype), np.array(7.0, dtype), np.array(0.001, dtype)]


def _range_case() -> DivergenceCase:
    inputs = _range_inputs()
    expected = reference.run_node(node_model("Range", inputs).graph.node[0], inputs)[0]
    terms = np.full(expected.shape, inputs[2], np.float32)
    terms[0] = inputs[0]
    actual = np.add.accumulate(terms, dtype=np.float32)
    return crafted(node_model("Range", inputs), inputs, expected, actual)


def _argmax_case() -> DivergenceCase:
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, np.nan], [1.0, 2.0, 3.0]], np.float32)
    model = node_model("ArgMax", [x], {"axis": 1, "keepdims": 1, "select_last_index": 0})
    expected = np.array([[1], [0], [2]], np.int64)
    actual = np.array([[2], [0], [2]], np.int64)
    return crafted(model, [x], expected, actual)


def _softmax_case() -> DivergenceCase:
    x = np.array([[-np.inf] * 3, [1.0, 2.0, 3.0]], np.float32)
    model = node_model("Softmax", [x], {"axis": 1})
    expected = np.array([[0.0, 0.0, 0.0], [0.09003057, 0.24472848, 0.66524094]], np.float32)
    actual = expected.copy()
    actual[0] = np.nan
    return crafted(model, [x], expected, actual)


def _sum_overflow_case() -> DivergenceCase:
    a = np.array([[F32.max, F32.max], [1.0, 2.0]], np.float32)
    b = np.array([[2.0, 1.0], [-2.0, 1.0]], np.float32)
    expected = np.array([[0.0, np.inf], [-2.0, 3.0]], np.float32)
    actual = np.array([[np.nan, np.inf], [-2.0, 3.0]], np.float32)
    return crafted(node_model("MatMul", [a, b]), [a, b], expected, actual)


DILATED = {**CONV_3X3, "kernel_shape": [2, 2], "dilations": [2, 2]}


def _dilation_inputs() -> list[np.ndarray | None]:
    """+inf at row 1, column 0 of a 4 x 3 X: under a hole of the first window (rows 0 and 2 are its taps), a
    tap of the second."""
    x = np.ones((1, 1, 4, 3), np.float32)
    x[0, 0, 1, 0] = np.inf
    return [x, np.ones((1, 1, 2, 2), np.float32), None]


def _dilation_case() -> DivergenceCase:
    inputs = _dilation_inputs()
    expected = np.array([np.nan, np.inf], np.float32).reshape(1, 1, 2, 1)
    actual = np.array([4.0, np.inf], np.float32).reshape(1, 1, 2, 1)
    return crafted(node_model("Conv", inputs, DILATED), inputs, expected, actual)


def _zero_sum_case() -> DivergenceCase:
    a = np.array([[-0.0, -0.0, -0.0], [1.0, -0.0, 2.0]], np.float32)
    b = np.ones((3, 2), np.float32)
    expected = np.array([[-0.0, -0.0], [3.0, 3.0]], np.float32)
    actual = np.array([[0.0, 0.0], [3.0, 3.0]], np.float32)
    return crafted(node_model("MatMul", [a, b]), [a, b], expected, actual)


def _batchnorm_inputs() -> list[np.ndarray]:
    x = np.array([[[0.5, -0.5, 0.0]], [[1.0, 2.0, 3.0]], [[F32.max, 1.0, 0.0]]], np.float32).transpose(
        1, 0, 2
    )
    scale = np.array([np.inf, 1.0, 2.0], np.float32)
    bias = np.zeros(3, np.float32)
    mean = np.array([0.0, 0.0, F32.max], np.float32)
    var = np.array([1.0, 1.0, 1.0], np.float32)
    return [np.ascontiguousarray(x), scale, bias, mean, var]


def _batchnorm_case() -> DivergenceCase:
    inputs = _batchnorm_inputs()
    model = node_model("BatchNormalization", inputs, BN)
    expected = reference.run_node(model.graph.node[0], inputs)[0]
    actual = expected.copy()
    actual[0, 0, :] = np.nan  # scale = +inf: every element of the channel
    actual[0, 2, 0] = np.nan  # X = mean = max: X * s overflows where the exact result is 0
    return crafted(model, inputs, expected, actual)


def _where_inputs(dtype=np.float32) -> list[np.ndarray]:
    condition = np.array([True, True, False, False])
    x = np.array([-0.0, 1.0, -0.0, 2.0], dtype)
    y = np.array([5.0, 6.0, 7.0, -0.0], dtype)
    return [condition, x, y]


def _where_case() -> DivergenceCase:
    inputs = _where_inputs()
    expected = np.array([-0.0, 1.0, 7.0, -0.0], np.float32)
    actual = np.array([0.0, 1.0, 7.0, -0.0], np.float32)
    return crafted(node_model("Where", inputs), inputs, expected, actual)


def _clip_inputs(dtype=np.float32) -> list[np.ndarray]:
    return [np.array([np.nan, 0.5, -np.inf, np.nan], dtype), np.array(1.0, dtype), np.array(-1.0, dtype)]


def _clip_case() -> DivergenceCase:
    inputs = _clip_inputs()
    expected = np.full(4, -1.0, np.float32)
    actual = np.array([np.nan, -1.0, -1.0, np.nan], np.float32)
    return crafted(node_model("Clip", inputs), inputs, expected, actual)


def _pow_inputs() -> list[np.ndarray]:
    base = np.array([3, -1, 2, 7], np.int64)
    exponent = np.array([39, 2**63 - 1, 62, 2], np.int64)
    return [base, exponent]


def _pow_case() -> DivergenceCase:
    inputs = _pow_inputs()
    expected = np.array([4052555153018976267, -1, 2**62, 49], np.int64)
    actual = np.array([4052555153018976256, 1, 2**62, 49], np.int64)
    return crafted(node_model("Pow", inputs), inputs, expected, actual)


LSTM = {"hidden_size": 4, "direction": "forward"}


def _lstm_inputs(fill: float = np.nan) -> list[np.ndarray | None]:
    rng = np.random.default_rng(3)
    x = np.full((3, 1, 3), fill, np.float32)
    x[0] = 0.5  # the first step is finite: its outputs are numbers in both
    w = rng.standard_normal((1, 16, 3)).astype(np.float32)
    r = rng.standard_normal((1, 16, 4)).astype(np.float32)
    return [x, w, r, np.zeros((1, 32), np.float32)]  # with B: without it onnxruntime keeps the NaN


def _lstm_case() -> DivergenceCase:
    inputs = _lstm_inputs()
    model = node_model("LSTM", inputs, LSTM)
    expected = reference.run_node(model.graph.node[0], inputs)[0]
    assert np.isnan(expected[1:]).all() and np.isfinite(expected[0]).all()
    actual = expected.copy()
    actual[1:] = 0.25  # numbers where SONNX is NaN
    return crafted(model, inputs, expected, actual)


CRAFTED: dict[str, Callable[[], DivergenceCase]] = {
    "SIGMOID-FLOAT-ABSOLUTE-ERROR": _sigmoid_float_case,
    "SIGMOID-DOUBLE-CANCELLATION": _sigmoid_double_case,
    "TANH-FLOAT-RATIONAL-MLAS": _tanh_float_case,
    "TANH-DOUBLE-SATURATION-ERROR": _tanh_double_case,
    "RANGE-ACCUMULATES": _range_case,
    "ARGMAX-NAN-POSITIONAL": _argmax_case,
    "SOFTMAX-ALL-NEG-INF-NAN": _softmax_case,
    "PARTIAL-SUM-OVERFLOW": _sum_overflow_case,
    "NEGATIVE-ZERO-SUM-AS-POSITIVE": _zero_sum_case,
    "BATCHNORM-FOLDED-OVERFLOW": _batchnorm_case,
    "WHERE-LOSES-NEGATIVE-ZERO": _where_case,
    "CLIP-CROSSED-BOUNDS-KEEPS-NAN": _clip_case,
    "POW-INTEGER-THROUGH-DOUBLE": _pow_case,
    "CONV-DILATION-HOLES-SKIPPED": _dilation_case,
    "LSTM-NAN-GATES-NUMERIC": _lstm_case,
}


def test_every_new_entry_has_a_crafted_and_a_live_case():
    assert set(CRAFTED) == set(NEW_IDS) == {case.divergence_id for case in LIVE}
    assert set(NEW_IDS) <= {entry.id for entry in KNOWN}


@pytest.mark.parametrize("divergence_id", NEW_IDS)
def test_entry_explains_exactly_its_crafted_mismatches(divergence_id: str):
    case = CRAFTED[divergence_id]()
    assert case.mismatch.any()
    assert np.array_equal(explained(divergence_id, case), case.mismatch)


@pytest.mark.parametrize("divergence_id", NEW_IDS)
def test_entry_is_bound_to_its_operators(divergence_id: str):
    case = CRAFTED[divergence_id]()
    entry = by_id(divergence_id)
    other = "Relu" if "Relu" not in entry.operators else "Abs"
    moved = DivergenceCase(
        node_model(other, [case.expected]).graph.node[0],
        0,
        case.expected,
        case.actual,
        case.mismatch,
        case.inputs,
    )
    assert not entry.explains(moved).any()
    if entry.outputs is None:  # every output of the operator (LSTM's Y, Y_h, Y_c)
        return
    assert not entry.explains(
        DivergenceCase(case.node, 1, case.expected, case.actual, case.mismatch, case.inputs)
    ).any()


@pytest.mark.parametrize("divergence_id", NEW_IDS)
def test_entry_does_not_explain_a_wrong_value_beside_it(divergence_id: str):
    """The crafted case plus one ordinary wrong value in a clean element: that element stays unexplained."""
    case = CRAFTED[divergence_id]()
    clean = np.flatnonzero(~case.mismatch.reshape(-1))
    assert clean.size, "each crafted case keeps a clean element"
    actual = case.actual.copy()
    flat = actual.reshape(-1)
    index = int(clean[-1])
    if actual.dtype.kind in "iu":
        flat[index] = flat[index] + 7
    elif np.isfinite(flat[index]):
        flat[index] = flat[index] + 0.25 * (abs(flat[index]) + 1)
    else:
        flat[index] = 3.0  # an ordinary number where SONNX has a special value
    wrong = crafted_like(case, actual)
    mask = explained(divergence_id, wrong)
    assert not mask.reshape(-1)[index]
    assert np.array_equal(mask, case.mismatch)


def crafted_like(case: DivergenceCase, actual: np.ndarray) -> DivergenceCase:
    return DivergenceCase(
        case.node, 0, case.expected, actual, raw_mismatch(case.expected, actual), case.inputs
    )


def test_entries_need_their_inputs_where_the_behaviour_depends_on_them():
    for divergence_id in (
        "RANGE-ACCUMULATES",
        "ARGMAX-NAN-POSITIONAL",
        "SOFTMAX-ALL-NEG-INF-NAN",
        "PARTIAL-SUM-OVERFLOW",
        "BATCHNORM-FOLDED-OVERFLOW",
        "WHERE-LOSES-NEGATIVE-ZERO",
        "CLIP-CROSSED-BOUNDS-KEEPS-NAN",
        "POW-INTEGER-THROUGH-DOUBLE",
        "CONV-DILATION-HOLES-SKIPPED",
    ):
        case = CRAFTED[divergence_id]()
        blind = DivergenceCase(case.node, 0, case.expected, case.actual, case.mismatch, ())
        assert not explained(divergence_id, blind).any(), divergence_id


def test_sigmoid_float_explains_only_small_absolute_errors_below_one_half():
    x = np.array([-5.0, -17.962, -1.0, 1.0], np.float32)
    model = node_model("Sigmoid", [x])
    expected = np.array([6.6928510e-03, 1.581512e-08, 0.2689414, 0.7310586], np.float32)
    actual = np.array([6.6938510e-03, -1e-9, 0.26894143, 0.73105866], np.float32)  # 1e-6 off, < 0, ..., x > 0
    wrong = crafted(model, [x], expected, actual)
    assert explained("SIGMOID-FLOAT-ABSOLUTE-ERROR", wrong).tolist() == [False, False, True, False]
    doubles = crafted(model, [x.astype(np.float64)], expected.astype(np.float64), np.zeros(4))
    assert not explained("SIGMOID-FLOAT-ABSOLUTE-ERROR", doubles).any()


def test_sigmoid_double_explains_only_results_on_the_cancellation_grid():
    x = np.array([-10.0, -10.0, -40.0])
    expected = np.array([4.5397868702434395e-05, 4.5397868702434395e-05, 4.248354255291589e-18])
    actual = np.array([4.5397868702434395e-05 * (1 + 2.0**-40), 4.54e-05, 0.0])  # off the grid, far, on it
    case = crafted(node_model("Sigmoid", [x]), [x], expected, actual)
    assert explained("SIGMOID-DOUBLE-CANCELLATION", case).tolist() == [False, False, True]


def test_tanh_explains_neither_sign_flips_nor_larger_errors_nor_small_arguments():
    x = np.array([3.0, 3.0, 0.1], np.float32)
    expected = np.array([0.9950548, 0.9950548, 0.09966799], np.float32)
    actual = np.array([-0.9950548, 0.9950548 + 2.0**-19, 0.09966799 + 2.0**-24], np.float32)
    case = crafted(node_model("Tanh", [x]), [x], expected, actual)
    assert not explained("TANH-FLOAT-RATIONAL-MLAS", case).any()
    x64 = x.astype(np.float64)
    e64 = np.tanh(x64)
    a64 = np.array([-e64[0], e64[1] + 2.0**-46, e64[2] + 2.0**-53])
    case = crafted(node_model("Tanh", [x64]), [x64], e64, a64)
    assert not explained("TANH-DOUBLE-SATURATION-ERROR", case).any()


def test_range_explains_only_the_exact_accumulated_value():
    case = _range_case()
    actual = case.actual.copy()
    actual[5000] = np.nextafter(actual[5000], np.float32(np.inf))  # one ulp off the accumulation
    mask = explained("RANGE-ACCUMULATES", crafted_like(case, actual))
    others = case.mismatch.copy()
    others[5000] = False
    assert not mask[5000] and np.array_equal(mask, others)
    ints = [np.array(0, np.int32), np.array(10, np.int32), np.array(3, np.int32)]
    int_case = crafted(
        node_model("Range", ints), ints, np.array([0, 3, 6, 9], np.int32), np.array([0, 3, 6, 8], np.int32)
    )
    assert not explained("RANGE-ACCUMULATES", int_case).any()


def test_argmax_explains_only_slices_holding_nan():
    case = _argmax_case()
    actual = case.actual.copy()
    actual[2, 0] = 0  # the row without NaN
    mask = explained("ARGMAX-NAN-POSITIONAL", crafted_like(case, actual))
    assert mask.ravel().tolist() == [True, False, False]
    flat_model = node_model("ArgMax", [case.inputs[0]], {"axis": 1, "keepdims": 0, "select_last_index": 1})
    flat = crafted(flat_model, case.inputs, np.array([1, 2, 2]), np.array([2, 0, 1]))
    assert explained("ARGMAX-NAN-POSITIONAL", flat).tolist() == [True, True, False]


def test_softmax_explains_only_nan_in_slices_of_only_minus_infinity():
    x = np.array([[-np.inf, -np.inf, 0.0], [-np.inf] * 3], np.float32)
    expected = np.array([[0.0, 0.0, 1.0], [0.0] * 3], np.float32)
    actual = np.array([[np.nan, 0.0, 1.0], [0.5, np.nan, np.nan]], np.float32)
    case = crafted(node_model("Softmax", [x], {"axis": 1}), [x], expected, actual)
    assert explained("SOFTMAX-ALL-NEG-INF-NAN", case).tolist() == [[False] * 3, [False, True, True]]


def test_sum_overflow_explains_only_nonfinite_results_of_overflowing_magnitudes():
    a = np.array([[1.0, 2.0], [np.inf, 1.0], [F32.max, F32.max]], np.float32)
    b = np.array([[2.0], [-2.0]], np.float32)
    expected = np.array([[-2.0], [np.inf], [0.0]], np.float32)
    actual = np.array(
        [[np.nan], [np.nan], [1.0]], np.float32
    )  # small sum; an infinite operand; finite result
    case = crafted(node_model("MatMul", [a, b]), [a, b], expected, actual)
    assert not explained("PARTIAL-SUM-OVERFLOW", case).any()
    half = [np.minimum(np.abs(v), 60000).astype(np.float16) for v in (a, b)]
    half_case = crafted(
        node_model("MatMul", half), half, expected.astype(np.float16), np.full((3, 1), np.nan, np.float16)
    )
    assert not explained("PARTIAL-SUM-OVERFLOW", half_case).any()


def test_sum_overflow_in_double_and_in_conv():
    a = np.array([[F64.max, F64.max, 1.0]])
    b = np.array([[2.0], [-2.0], [1.0]])
    case = crafted(node_model("MatMul", [a, b]), [a, b], np.array([[1.0]]), np.array([[np.inf]]))
    assert explained("PARTIAL-SUM-OVERFLOW", case).tolist() == [[True]]
    x = np.full((1, 1, 3, 3), F32.min, np.float32)
    w = np.array([1, 1, 1, 1, -1, -1, -1, -1, 0.5], np.float32).reshape(1, 1, 3, 3)
    model = node_model("Conv", [x, w, None], CONV_3X3)
    half_lowest, minus_inf = (
        np.full((1, 1, 1, 1), F32.min / 2, np.float32),
        np.full((1, 1, 1, 1), -np.inf, np.float32),
    )
    conv = crafted(model, [x, w, None], half_lowest, minus_inf)
    assert explained("PARTIAL-SUM-OVERFLOW", conv).tolist() == [[[[True]]]]
    small = [np.ones_like(x), w, None]
    quiet = crafted(model, small, np.array([[[[0.5]]]], np.float32), np.array([[[[np.nan]]]], np.float32))
    assert not explained("PARTIAL-SUM-OVERFLOW", quiet).any()


def test_sum_overflow_follows_the_sign_of_the_terms_that_can_overflow():
    """Every partial sum lies between -N and P (the sums of the negative and of the positive products): +inf
    needs P beyond the largest finite value, -inf needs N, NaN both; 0.6 max - 0.6 max overflows in no
    order although sum |a b| does."""
    b = np.array([[1.0], [-0.25]], np.float32)
    a = np.full((3, 2), F32.max * np.float32(0.9), np.float32)
    expected = np.array([[F32.max * 0.675]] * 3, np.float32)
    actual = np.array([[np.inf], [-np.inf], [np.nan]], np.float32)
    case = crafted(node_model("MatMul", [a, b]), [a, b], expected, actual)
    assert explained("PARTIAL-SUM-OVERFLOW", case).ravel().tolist() == [
        False,
        False,
        False,
    ]  # P = 0.9 max: no room
    a2 = np.full((3, 2), F32.max * np.float32(0.5), np.float32)
    b2 = np.array([[4.0], [-1.0]], np.float32)  # P = 2 max, N = max / 2
    case = crafted(node_model("MatMul", [a2, b2]), [a2, b2], expected, actual)
    assert explained("PARTIAL-SUM-OVERFLOW", case).ravel().tolist() == [True, False, False]
    a3 = np.full((1, 2), F32.max * np.float32(0.6), np.float32)
    b3 = np.array([[1.0], [-1.0]], np.float32)  # P = N = 0.6 max, sum |a b| = 1.2 max
    case = crafted(
        node_model("MatMul", [a3, b3]), [a3, b3], np.zeros((1, 1), np.float32), np.full((1, 1), np.nan)
    )
    assert not explained("PARTIAL-SUM-OVERFLOW", case).any()


def test_sum_overflow_is_judged_element_by_element_beside_a_nan_operand():
    a = np.array([[F32.max, F32.max], [np.nan, 1.0]], np.float32)
    b = np.array([[2.0], [-2.0]], np.float32)
    expected = np.array([[0.0], [np.nan]], np.float32)
    actual = np.array([[np.nan], [np.inf]], np.float32)  # the second: not this behaviour (a NaN operand)
    case = crafted(node_model("MatMul", [a, b]), [a, b], expected, actual)
    assert explained("PARTIAL-SUM-OVERFLOW", case).ravel().tolist() == [True, False]


def test_zero_sum_sign_explains_plus_zero_for_minus_zero_only():
    case = _zero_sum_case()
    reverse = crafted(
        node_model("Gemm", case.inputs), case.inputs, np.abs(case.expected), -np.abs(case.actual)
    )
    assert not explained("NEGATIVE-ZERO-SUM-AS-POSITIVE", reverse).any()
    conv = crafted(node_model("Conv", case.inputs), case.inputs, case.expected, case.actual)
    assert np.array_equal(explained("NEGATIVE-ZERO-SUM-AS-POSITIVE", conv), case.mismatch)


def test_batchnorm_explains_nonfinite_results_only_where_the_folded_form_overflows():
    case = _batchnorm_case()
    actual = case.actual.copy()
    actual[0, 1, 0] = np.nan  # an ordinary channel
    actual[0, 2, 1] = 3.0  # a finite wrong value in the overflowing channel
    mask = explained("BATCHNORM-FOLDED-OVERFLOW", crafted_like(case, actual))
    assert mask[0, 0].tolist() == [True, True, False]  # X = 0: NaN on both sides (0 * inf)
    assert not mask[0, 1].any() and mask[0, 2].tolist() == [True, False, False]


def test_where_explains_only_the_lost_minus_zero_of_x():
    inputs = _where_inputs()
    expected = np.array([-0.0, 1.0, -0.0, -0.0], np.float32)
    actual = np.array([0.0, 0.0, 0.0, 0.0], np.float32)  # X's -0 lost (explained); others are not this
    inputs[1][2] = 7.0
    inputs[2][2] = -0.0
    case = crafted(node_model("Where", inputs), inputs, expected, actual)
    assert explained("WHERE-LOSES-NEGATIVE-ZERO", case).tolist() == [True, False, False, False]


def test_clip_explains_nan_only_with_crossed_numeric_bounds():
    case = _clip_case()
    for low, high in ((-1.0, 1.0), (np.nan, -1.0), (1.0, np.nan)):
        inputs = [case.inputs[0], np.array(low, np.float32), np.array(high, np.float32)]
        other = crafted(node_model("Clip", inputs), inputs, np.full(4, -1.0, np.float32), case.actual)
        assert not explained("CLIP-CROSSED-BOUNDS-KEEPS-NAN", other).any(), (low, high)
    actual = case.actual.copy()
    actual[1] = np.nan  # NaN where X is a number
    assert explained("CLIP-CROSSED-BOUNDS-KEEPS-NAN", crafted_like(case, actual)).tolist() == [
        True,
        False,
        False,
        True,
    ]


def test_integer_pow_explains_only_the_double_computation():
    base = np.array([3, 3, 2, 2], np.int32)
    exponent = np.array([20, 20, 31, 5], np.int32)
    expected = np.array([-808182895, -808182895, -(2**31), 32], np.int32)  # wrap-around
    actual = np.array([-(2**31), 5, -(2**31), 33], np.int32)  # the double path's minimum, then two others
    case = crafted(node_model("Pow", [base, exponent]), [base, exponent], expected, actual)
    assert explained("POW-INTEGER-THROUGH-DOUBLE", case).tolist() == [True, False, False, False]
    floats = [base.astype(np.float32), exponent.astype(np.float32)]
    float_case = crafted(
        node_model("Pow", floats), floats, expected.astype(np.float32), actual.astype(np.float32)
    )
    assert not explained("POW-INTEGER-THROUGH-DOUBLE", float_case).any()


def test_new_entries_record_the_versions_they_were_seen_in():
    for divergence_id in NEW_IDS:
        entry = by_id(divergence_id)
        assert entry.seen_in_version("1.21.0") and entry.seen_in_version("1.32.0"), divergence_id
        assert entry.seen_in and all(
            line.startswith(("onnxruntime 1.", "openvino ", "tract ")) for line in entry.seen_in
        )
        assert entry.explanation and "onnxruntime/" in entry.explanation  # the source it comes from


def test_no_two_new_entries_claim_the_same_crafted_elements():
    """Among onnxruntime's entries; a behaviour first measured in another runtime may describe an element
    of these too (ARGMAX-NAN-IGNORED: [1, NaN, 3] gives 2), and is then listed beside (test_behaviours)."""
    for divergence_id in NEW_IDS:
        case = CRAFTED[divergence_id]()
        others = [
            m.entry.id for m in match_known(case) if m.entry.id != divergence_id and m.entry.id in NEW_IDS
        ]
        assert others == [], (divergence_id, others)


# -- live: the installed onnxruntime --------------------------------------------------------------------

LEVELS = {"disabled": "ORT_DISABLE_ALL", "default": "ORT_ENABLE_ALL"}


@dataclass(frozen=True)
class Live:
    divergence_id: str
    op_type: str
    build: Callable[[], list[np.ndarray | None]]
    attrs: dict = field(default_factory=dict)
    # whether onnxruntime's output shows the behaviour; default: the comparison finds a divergence
    shows: Callable[[np.ndarray, np.ndarray, OutputRecord], bool] | None = None
    x86_only: bool = False


def _both_signs(values: np.ndarray) -> np.ndarray:
    return np.concatenate([-values[::-1], values])


def _nonfinite_where_finite(expected: np.ndarray, actual: np.ndarray, _record: OutputRecord) -> bool:
    return bool((np.isfinite(expected) & ~np.isfinite(actual)).any())


def _plus_zero_for_minus_zero(expected: np.ndarray, actual: np.ndarray, _record: OutputRecord) -> bool:
    return bool(((expected == 0) & np.signbit(expected) & (actual == 0) & ~np.signbit(actual)).any())


LIVE = (
    Live(
        "SIGMOID-FLOAT-ABSOLUTE-ERROR",
        "Sigmoid",
        lambda: [
            np.array([-1.0, -2.5, -5.0, -10.0, -17.962, -18.0, -20.0, -30.0, -50.0, 1.0, 3.0], np.float32)
        ],
    ),
    Live(
        "SIGMOID-DOUBLE-CANCELLATION",
        "Sigmoid",
        lambda: [np.array([-1.0, -2.0, -5.0, -10.0, -17.0, -20.0, -36.8, -40.0, -100.0, 0.5, 2.0])],
    ),
    Live(
        "TANH-FLOAT-RATIONAL-MLAS",
        "Tanh",
        lambda: [_both_signs(np.linspace(2.0, 9.5, 20001, dtype=np.float32))],
    ),
    Live("TANH-DOUBLE-SATURATION-ERROR", "Tanh", lambda: [_both_signs(np.linspace(2.0, 19.0, 20001))]),
    Live("RANGE-ACCUMULATES", "Range", _range_inputs),
    Live(
        "ARGMAX-NAN-POSITIONAL",
        "ArgMax",
        lambda: [np.array([[1, np.nan, 3], [np.nan, 5, np.nan], [1, 3, np.nan], [1, 2, 3]], np.float32)],
        {"axis": 1, "keepdims": 1, "select_last_index": 0},
    ),
    Live(
        "SOFTMAX-ALL-NEG-INF-NAN",
        "Softmax",
        lambda: [np.array([[-np.inf] * 4, [1, 2, 3, 4], [-np.inf, 0, -np.inf, 1]], np.float32)],
        {"axis": 1},
    ),
    Live(
        "PARTIAL-SUM-OVERFLOW",
        "Conv",
        lambda: [
            np.full((1, 1, 3, 3), F32.min, np.float32),
            np.array([1, 1, 1, 1, -1, -1, -1, -1, 0.5], np.float32).reshape(1, 1, 3, 3),
            None,
        ],
        CONV_3X3,
        _nonfinite_where_finite,
    ),
    Live(
        "NEGATIVE-ZERO-SUM-AS-POSITIVE",
        "MatMul",
        lambda: [np.full((2, 3), -0.0, np.float32), np.array([[1, 2], [3, 4], [5, 6]], np.float32)],
        shows=_plus_zero_for_minus_zero,
    ),
    Live("BATCHNORM-FOLDED-OVERFLOW", "BatchNormalization", _batchnorm_inputs, BN),
    Live("WHERE-LOSES-NEGATIVE-ZERO", "Where", _where_inputs),
    Live("CLIP-CROSSED-BOUNDS-KEEPS-NAN", "Clip", _clip_inputs),
    Live(
        "POW-INTEGER-THROUGH-DOUBLE",
        "Pow",
        lambda: [np.array([3, -1, 2, 7], np.int64), np.array([39, 2**63 - 1, 62, 2], np.int64)],
        x86_only=True,
    ),
    Live("CONV-DILATION-HOLES-SKIPPED", "Conv", _dilation_inputs, DILATED),
    Live("LSTM-NAN-GATES-NUMERIC", "LSTM", _lstm_inputs, LSTM),
)
# More shapes of the same behaviours, checked the same way.
MORE_LIVE = (
    Live("LSTM-NAN-GATES-NUMERIC", "LSTM", lambda: _lstm_inputs(np.inf), LSTM),
    Live("LSTM-NAN-GATES-NUMERIC", "LSTM", lambda: _lstm_inputs(-np.inf), LSTM),
    Live(
        "PARTIAL-SUM-OVERFLOW",
        "Conv",
        lambda: [
            np.full((1, 1, 3, 3), F32.min, np.float32),
            np.array([1, -1, 1, -1, 1, -1, 1, -1, 0.5], np.float32).reshape(1, 1, 3, 3),
            None,
        ],
        CONV_3X3,
        _nonfinite_where_finite,
    ),
    Live(
        "PARTIAL-SUM-OVERFLOW",
        "MatMul",
        lambda: [np.array([[F32.max, F32.max], [1, 2]], np.float32), np.array([[2, 1], [-2, 1]], np.float32)],
        shows=_nonfinite_where_finite,
    ),
    Live(
        "PARTIAL-SUM-OVERFLOW",
        "Gemm",
        lambda: [np.array([[F64.max, F64.max]]), np.array([[2.0], [-2.0]]), np.zeros((1, 1))],
        GEMM,
        _nonfinite_where_finite,
    ),
    Live(
        "NEGATIVE-ZERO-SUM-AS-POSITIVE",
        "Conv",
        lambda: [np.full((1, 2, 4, 4), -0.0, np.float32), np.ones((2, 2, 3, 3), np.float32), None],
        CONV_3X3,
        _plus_zero_for_minus_zero,
    ),
    Live(
        "NEGATIVE-ZERO-SUM-AS-POSITIVE",
        "Gemm",
        lambda: [np.full((2, 3), -0.0), np.ones((3, 2)), np.full((2, 2), -0.0)],
        GEMM,
        _plus_zero_for_minus_zero,
    ),
    Live(
        "ARGMAX-NAN-POSITIONAL",
        "ArgMax",
        lambda: [np.array([[1, np.nan, 3], [np.nan, 5, np.nan], [np.nan, np.nan, 1], [1, 2, 3]])],
        {"axis": 1, "keepdims": 0, "select_last_index": 1},
    ),
    Live("WHERE-LOSES-NEGATIVE-ZERO", "Where", lambda: _where_inputs(np.float64)),
    Live("CLIP-CROSSED-BOUNDS-KEEPS-NAN", "Clip", lambda: _clip_inputs(np.float16)),
    Live("RANGE-ACCUMULATES", "Range", lambda: [np.array(1.0), np.array(2.0), np.array(1e-5)]),
    Live(
        "POW-INTEGER-THROUGH-DOUBLE",
        "Pow",
        lambda: [np.array([3, 2, -3], np.int32), np.array([20, 31, 21], np.int32)],
        x86_only=True,
    ),
)


def run_live(case: Live, level: str) -> tuple[np.ndarray, np.ndarray, OutputRecord, DivergenceCase]:
    """onnxruntime and the reference on one single-node model; the comparison as localise.merge makes it
    (accuracy bound included) and the raw, bit-level case."""
    ort = pytest.importorskip("onnxruntime")
    inputs = case.build()
    model = node_model(case.op_type, inputs, case.attrs)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feed = {f"i{k}": value for k, value in enumerate(inputs) if value is not None}
    actual = np.asarray(session.run(None, feed)[0])
    node = model.graph.node[0]
    expected = np.asarray(reference.run_node(node, inputs)[0])
    record = OutputRecord("y", 0)
    merge(record, "live", node, 0, expected, actual, inputs)
    return expected, actual, record, crafted(model, inputs, expected, actual)


def _ort_version() -> str:
    return pytest.importorskip("onnxruntime").__version__


def _ids(cases: Sequence[Live]) -> list[str]:
    return [f"{c.divergence_id}-{c.op_type}-{k}" for k, c in enumerate(cases)]


@pytest.mark.live_ort
@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize("case", LIVE + MORE_LIVE, ids=_ids(LIVE + MORE_LIVE))
def test_live_behaviour_is_still_explained(case: Live, level: str):
    if case.x86_only and platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the out-of-range conversion measured is x86-64's")
    expected, actual, record, raw = run_live(case, level)
    entry: KnownDivergence = by_id(case.divergence_id)
    shows = case.shows(expected, actual, record) if case.shows else record.mismatches > 0
    if not shows:
        pytest.skip(f"onnxruntime {_ort_version()} follows the text here: {case.divergence_id} not seen")
    assert entry.explains(raw).any()
    assert record.outcome in (Outcome.MATCH, Outcome.DIFFERS)
    assert record.unexplained == 0, (
        f"{record.unexplained} of {record.mismatches} differing elements unexplained"
    )
    if record.mismatches:  # under its ID or one refining it (each element under the more specific one)
        assert set(covered_ids({case.divergence_id})) & set(record.known)


@pytest.mark.live_ort
def test_live_range_miscount_is_a_shape_difference_no_entry_explains():
    """1.21.0 counts Range(0.1, 1000, 0.1) float32 from L - S rounded in float32: 10000 elements where the
    text's K is 9999. The comparison reports the shapes and matches nothing against the table."""
    ort = pytest.importorskip("onnxruntime")
    inputs = [np.array(0.1, np.float32), np.array(1000.0, np.float32), np.array(0.1, np.float32)]
    model = node_model("Range", inputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    actual = session.run(None, {f"i{k}": v for k, v in enumerate(inputs)})[0]
    expected = reference.run_node(model.graph.node[0], inputs)[0]
    if actual.shape == expected.shape:
        pytest.skip(f"onnxruntime {ort.__version__} counts {actual.size} elements, as the text does")
    assert (actual.size, expected.size) == (10000, 9999)
    record = OutputRecord("y", 0)
    merge(record, "live", model.graph.node[0], 0, expected, actual, inputs)
    assert record.outcome is Outcome.SHAPE_MISMATCH and record.known == {}
    assert record.detail.startswith("shape differs: onnxruntime (10000), SONNX (9999)")


@pytest.mark.live_ort
def test_live_known_divergence_is_still_reported_as_a_divergence(tmp_path: Path):
    x = np.array([[-np.inf] * 4, [1, 2, 3, 4]], np.float32)
    path = tmp_path / "softmax.onnx"
    onnx.save(node_model("Softmax", [x], {"axis": 1}), str(path))
    dataset = str(tmp_path / "x.npz")
    np.savez(dataset, i0=x)
    result = compare_model(str(path), CompareOptions(datasets=(dataset,)))
    [finding] = [
        f
        for f in result.findings
        if f.rule == "RUNTIME.divergence"
        and any(d.get("name") == dataset for d in f.data.get("datasets", []))
    ]  # the comparison in the model; the node's edge battery may add findings of its own
    assert finding.severity is Severity.ERROR
    assert finding.data["mismatches"] == 4 and finding.data["unexplained"] == 0
    [known] = finding.data["known_divergence"]
    assert known["id"] == "SOFTMAX-ALL-NEG-INF-NAN" and known["explained"] == 4
    assert known["seen_in_this_version"] is True
    assert "known onnxruntime divergence SOFTMAX-ALL-NEG-INF-NAN" in finding.message
    assert result.comparison["status"] == "diverges"


@pytest.mark.live_ort
def test_live_integer_division_of_the_minimum_by_minus_one_surfaces_as_a_crash(tmp_path: Path):
    """Div int32 of -2^31 by -1 ends onnxruntime's worker (SIGFPE on x86-64). No output exists to match
    against the table: the comparison reports RUNTIME.not-compared naming the signal, never a divergence."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the division trap is x86-64's")
    a = np.array([np.iinfo(np.int32).min, 7], np.int32)
    b = np.array([-1, 2], np.int32)
    path = tmp_path / "div.onnx"
    onnx.save(node_model("Div", [a, b]), str(path))
    np.savez(tmp_path / "x.npz", i0=a, i1=b)
    result = compare_model(str(path), CompareOptions(datasets=(str(tmp_path / "x.npz"),)))
    crashes = [f for f in result.findings if f.rule == "RUNTIME.not-compared" and "SIGFPE" in f.message]
    if not crashes:
        pytest.skip(f"onnxruntime {_ort_version()} did not trap on INT_MIN / -1 here")
    assert not any("known_divergence" in f.data for f in result.findings)
    assert not any(f.rule == "RUNTIME.divergence" for f in result.findings)


def test_sum_overflow_follows_the_signs_of_gemms_alpha_and_beta():
    """Gemm with alpha = -1: [max, max] . [1, 1] gives terms of -max, so -inf is explained and +inf is not;
    with beta = -1 too, a C of max is a negative term as well."""
    a = np.array([[F32.max, F32.max]], np.float32)
    b = np.array([[1.0], [1.0]], np.float32)
    c = np.zeros((1, 1), np.float32)
    model = node_model("Gemm", [a, b, c], {**GEMM, "alpha": -1.0})
    for value in (-np.inf, np.inf):
        case = crafted(model, [a, b, c], np.array([[-F32.max]], np.float32), np.array([[value]], np.float32))
        assert explained("PARTIAL-SUM-OVERFLOW", case).any() == (value == -np.inf), value
    one = [a[:, :1], b[:1], np.array([[F32.max]], np.float32)]
    model = node_model("Gemm", one, {**GEMM, "beta": -1.0, "alpha": -1.0})
    lowest, minus_inf = np.array([[-F32.max]], np.float32), np.array([[-np.inf]], np.float32)
    assert explained("PARTIAL-SUM-OVERFLOW", crafted(model, one, lowest, minus_inf)).tolist() == [[True]]
