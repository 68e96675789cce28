"""Numpy emulations of the runtime behaviours issue 29's table names (OpenVINO 2026.4.1, tract 0.23.9), each
applied to a small crafted case: the SONNX result from the reference kernel, the runtime's from the
emulation. ``BEHAVIOURS`` maps each departure ID to its case; test_known.py's table-wide checks use them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from models import maxpool
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase, Upstream

F32 = np.finfo(np.float32)
SUBNORMAL = np.float32(1e-40)


def run(model, inputs, position: int = 0) -> np.ndarray:
    return np.asarray(reference.run_node(model.graph.node[0], inputs)[position])


def case_of(model, inputs, emulate: Callable[..., np.ndarray], position: int = 0) -> DivergenceCase:
    expected = run(model, inputs, position)
    with np.errstate(all="ignore"):
        actual = np.asarray(emulate(*inputs)).astype(expected.dtype)
    found = crafted(model, inputs, expected, actual)
    return DivergenceCase(found.node, position, found.expected, found.actual, found.mismatch, found.inputs)


# -- the emulations -----------------------------------------------------------------------------------------
def c_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a > b ? a : b: a NaN fails the comparison, equal zeros keep b."""
    return np.where(a > b, a, b)


def relu_runtime(x: np.ndarray) -> np.ndarray:
    return c_max(x, np.zeros_like(x))  # max(x, +0): NaN -> +0, -0 -> +0


def first_wins_max(*operands: np.ndarray) -> np.ndarray:
    """Max keeping the first of equal operands and skipping NaN (x > best ? x : best, best starting at the
    first number)."""
    best = operands[0].copy()
    for other in operands[1:]:
        take = (other > best) | np.isnan(best)
        best = np.where(take, other, best)
    return best


def clip_runtime(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """min(max(x, low), high) with the bound kept on ties and NaN: x > low ? x : low, then x < high."""
    raised = np.where(x > low, x, low)
    return np.where(raised < high, raised, high)


def argmax_nan_ignored(x: np.ndarray, select_last: bool) -> np.ndarray:
    out = np.zeros(x.shape[0], np.int64)
    for row in range(x.shape[0]):
        best, index = -np.inf, 0
        for k, value in enumerate(x[row]):
            if value > best or (select_last and value == best and value > -np.inf):
                best, index = value, k
        out[row] = index
    return out.reshape(-1, 1)


def softmax_runtime(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum with a NaN counted as +inf in the maximum: in a slice holding +inf or NaN,
    exp(x - inf) = 0 at the numbers and NaN at the +inf and NaN elements (OpenVINO 2026.4.1 measured)."""
    poisoned = (np.isnan(x) | np.isposinf(x)).any(axis=1, keepdims=True)
    top = np.where(poisoned, np.inf, np.max(x, axis=1, keepdims=True))
    e = np.exp(x - top)
    return np.where(poisoned, e, e / np.sum(e, axis=1, keepdims=True))


def conv_skipping_padding(x: np.ndarray, w: np.ndarray, pads: int) -> np.ndarray:
    """A direct 2-D convolution (stride 1, one channel) that visits only the real taps."""
    kh, kw = w.shape[2:]
    out_h, out_w = x.shape[2] + 2 * pads - kh + 1, x.shape[3] + 2 * pads - kw + 1
    y = np.zeros((1, 1, out_h, out_w), np.float64)
    for i in range(out_h):
        for j in range(out_w):
            total = 0.0
            for a in range(kh):
                for b in range(kw):
                    r, c = i + a - pads, j + b - pads
                    if 0 <= r < x.shape[2] and 0 <= c < x.shape[3]:
                        total += float(x[0, 0, r, c]) * float(w[0, 0, a, b])
            y[0, 0, i, j] = total
    return y.astype(x.dtype)


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """Round to nearest even bfloat16 by way of float64 arithmetic (independent of the predicate's bits)."""
    v = values.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.floor(np.log2(np.abs(v)))
        step = 2.0 ** (exponent - 7)
        rounded = np.where(v == 0, v, np.round(v / step) * step)  # np.round: ties to even
    return rounded.astype(np.float32)


TRACT_SIGMOID_PLATEAUS = np.array([0x34F00000, 0x3F7FFFF8], np.uint32).view(np.float32)  # measured, 0.23.9


def tract_sigmoid(x: np.ndarray) -> np.ndarray:
    """The plateaus below -14.5 (and for NaN) and above 14.33, an absolute error of 1e-7 between."""
    low, high = TRACT_SIGMOID_PLATEAUS
    y = (1 / (1 + np.exp(-x.astype(np.float64))) + 1e-7).astype(np.float32)
    return np.where(np.isnan(x) | (x < -14.5), low, np.where(x > 14.33, high, y))


def tract_tanh(x: np.ndarray) -> np.ndarray:
    top = float(np.float32(0.9999994))
    return np.clip(np.tanh(np.where(np.isnan(x), -np.inf, x).astype(np.float64)), -top, top).astype(
        np.float32
    )


# -- the cases ---------------------------------------------------------------------------------------------
def _relu_nan() -> DivergenceCase:
    x = np.array([np.nan, 1.0, -2.0, np.nan, 0.0], np.float32)
    return case_of(node_model("Relu", [x]), [x], relu_runtime)


def _relu_negative_zero() -> DivergenceCase:
    x = np.array([-0.0, 1.0, -0.0, -3.0], np.float32)
    return case_of(node_model("Relu", [x]), [x], relu_runtime)


def _maxpool_empty_window() -> DivergenceCase:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0:2, 2:4] = -np.inf  # window 1: all -inf
    x[0, 0, 2:4, 0:2] = [[np.nan, -np.inf], [-np.inf, np.nan]]  # window 2: NaN and -inf
    model = maxpool((1, 1, 4, 4), kernel=(2, 2), strides=(2, 2))

    def indices(x: np.ndarray) -> np.ndarray:
        found = run(model, [x], 1).copy()
        found[0, 0, 0, 1] = found[0, 0, 1, 0] = 0
        return found

    return case_of(model, [x], indices, position=1)


def _max_nan_dropped() -> DivergenceCase:
    a = np.array([np.nan, 1.0, np.nan, 4.0], np.float32)
    b = np.array([2.0, np.nan, np.nan, 3.0], np.float32)
    return case_of(node_model("Max", [a, b]), [a, b], first_wins_max)


def float64_max() -> DivergenceCase:
    a = np.array([1 + 2.0**-40, 1e300, 3.0, -1e300])
    b = np.array([0.5, 2.0, 1.0, -2.0])

    def narrowed(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # a saturating conversion, as OpenVINO's
        top = float(F32.max)
        return np.maximum(np.clip(a, -top, top).astype(np.float32), np.clip(b, -top, top).astype(np.float32))

    return case_of(node_model("Max", [a, b]), [a, b], narrowed)


def _clip_nan() -> DivergenceCase:
    inputs = [
        np.array([np.nan, 0.5, 3.0, np.nan], np.float32),
        np.array(-1.0, np.float32),
        np.array(1.0, np.float32),
    ]
    return case_of(node_model("Clip", inputs), inputs, clip_runtime)


def _clip_zero_bound() -> DivergenceCase:
    inputs = [
        np.array([-0.0, 0.5, -2.0, -0.0], np.float32),
        np.array(0.0, np.float32),
        np.array(1.0, np.float32),
    ]

    def runtime(x, low, high):  # the bound on ties: x > low ? x : low
        return clip_runtime(x, low, high)

    return case_of(node_model("Clip", inputs), inputs, runtime)


def _argmax_nan_ignored() -> DivergenceCase:
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, np.nan], [1.0, 2.0, 3.0]], np.float32)
    model = node_model("ArgMax", [x], {"axis": 1, "keepdims": 1, "select_last_index": 0})
    return case_of(model, [x], lambda x: argmax_nan_ignored(x, False))


def _argmax_all_neg_inf() -> DivergenceCase:
    x = np.array([[-np.inf, -np.inf, -np.inf], [1.0, 3.0, 3.0]], np.float32)
    model = node_model("ArgMax", [x], {"axis": 1, "keepdims": 1, "select_last_index": 1})
    return case_of(
        model, [x], lambda x: argmax_nan_ignored(x, True) * (~np.isneginf(x).all(axis=1, keepdims=True))
    )


def _div_reciprocal() -> DivergenceCase:
    rng = np.random.default_rng(7)
    a = rng.uniform(-10, 10, 64).astype(np.float32)
    b = rng.uniform(0.1, 10, 64).astype(np.float32)
    return case_of(node_model("Div", [a, b]), [a, b], lambda a, b: a * (np.float32(1) / b))


def _exp_nan() -> DivergenceCase:
    x = np.array([np.nan, 0.0, 1.0, np.nan], np.float32)
    model = node_model("Exp", [x])
    return case_of(model, [x], lambda x: np.where(np.isnan(x), np.inf, run(model, [x])))


def _softmax_inf_slice() -> DivergenceCase:
    x = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 2.0], [1.0, 2.0, 3.0]], np.float32)
    model = node_model("Softmax", [x], {"axis": 1})
    return case_of(
        model, [x], lambda x: np.where(np.arange(3)[:, None] == 2, run(model, [x]), softmax_runtime(x))
    )


def _conv_padding() -> DivergenceCase:
    x = np.ones((1, 1, 3, 3), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    w[0, 0, 0, 0] = np.inf  # meets the padding in the first row and column of Y
    attrs = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [3, 3], "pads": [1] * 4}
    model = node_model("Conv", [x, w], {**attrs, "strides": [1, 1]})
    return case_of(model, [x, w], lambda x, w: conv_skipping_padding(x, w, 1))


def _int8_saturating() -> DivergenceCase:
    a = np.array([127, 100, -100, 5], np.int8)
    b = np.array([1, 100, -100, 5], np.int8)
    return case_of(node_model("Add", [a, b]), [a, b], lambda a, b: np.clip(a.astype(int) + b, -128, 127))


def _int64_as_int32() -> DivergenceCase:
    a = np.array([2**33 + 1, 5, 7], np.int64)
    b = np.array([1, 2**31 - 1, 8], np.int64)
    return case_of(node_model("Add", [a, b]), [a, b], lambda a, b: a.astype(np.int32) + b.astype(np.int32))


def uint32_less() -> DivergenceCase:
    a = np.array([2**31 + 5, 2**32 - 1, 3], np.uint32)
    b = np.array([1, 2, 4], np.uint32)
    return case_of(node_model("Less", [a, b]), [a, b], lambda a, b: a.view(np.int32) < b.view(np.int32))


def _bfloat16_matmul() -> DivergenceCase:
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 16)).astype(np.float32)
    b = rng.standard_normal((16, 3)).astype(np.float32)
    return case_of(
        node_model("MatMul", [a, b]), [a, b], lambda a, b: to_bfloat16(to_bfloat16(a) @ to_bfloat16(b))
    )


def _subnormal_matmul() -> DivergenceCase:
    a = np.array([[-np.inf, 1.0], [SUBNORMAL, 1.0], [2.0, 3.0]], np.float32)
    b = np.array([[SUBNORMAL], [1.0]], np.float32)

    def flushed(a, b):
        return np.where(np.abs(a) < F32.tiny, 0, a) @ np.where(np.abs(b) < F32.tiny, 0, b)

    return case_of(node_model("MatMul", [a, b]), [a, b], flushed)


def _tract_sigmoid() -> DivergenceCase:
    x = np.array([-np.inf, np.nan, -16.0, 0.0, 5.0, 20.0, np.inf], np.float32)
    return case_of(node_model("Sigmoid", [x]), [x], tract_sigmoid)


def _tract_tanh() -> DivergenceCase:
    x = np.array([-np.inf, np.nan, -9.0, 0.5, 10.0, np.inf], np.float32)
    return case_of(node_model("Tanh", [x]), [x], tract_tanh)


def _widened_chain() -> DivergenceCase:
    """Add(Mul(a, b), c) in float16, the product kept in float32 by the runtime."""
    rng = np.random.default_rng(5)
    a, b, c = (rng.uniform(-4, 4, 32).astype(np.float16) for _ in range(3))
    mul = node_model("Mul", [a, b])
    product = run(mul, [a, b])
    add = node_model("Add", [product, c])
    wide = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(np.float16)
    found = case_of(add, [product, c], lambda *_: wide)
    producer = Upstream(mul.graph.node[0], 0, [a, b])
    return replace(found, upstream=lambda k: producer if k == 0 else None)


def _batchnorm_folded() -> DivergenceCase:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    params = [np.array([v], np.float32) for v in (3.7, -1.5, 0.3, 0.02)]  # scale, bias, mean, var
    attrs = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [3, 3], "pads": [0] * 4}
    conv = node_model("Conv", [x, w], {**attrs, "strides": [1, 1]})
    c = run(conv, [x, w])
    bn = node_model(
        "BatchNormalization", [c, *params], {"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0}
    )
    scale, bias, mean, var = (float(p[0]) for p in params)
    s = scale / np.sqrt(var + float(np.float32(1e-5)))
    folded_w, folded_b = (w * s).astype(np.float32), np.float32(bias - mean * s)
    folded = np.zeros((1, 1, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            folded[0, 0, i, j] = (
                np.sum(x[0, 0, i : i + 3, j : j + 3] * folded_w[0, 0], dtype=np.float32) + folded_b
            )
    found = case_of(bn, [c, *params], lambda *_: folded)
    producer = Upstream(conv.graph.node[0], 0, [x, w])
    return replace(found, upstream=lambda k: producer if k == 0 else None)


BEHAVIOURS: dict[str, Callable[[], DivergenceCase]] = {
    "RELU-NAN-TO-ZERO": _relu_nan,
    "RELU-NEGATIVE-ZERO-TO-POSITIVE": _relu_negative_zero,
    "MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW": _maxpool_empty_window,
    "MAX-NAN-DROPPED": _max_nan_dropped,
    "CLIP-NAN-TO-LOWER-BOUND": _clip_nan,
    "CLIP-ZERO-BOUND-SIGN": _clip_zero_bound,
    "ARGMAX-NAN-IGNORED": _argmax_nan_ignored,
    "ARGMAX-ALL-NEG-INF-FIRST-INDEX": _argmax_all_neg_inf,
    "DIV-RECIPROCAL": _div_reciprocal,
    "EXP-NAN-TO-INFINITY": _exp_nan,
    "SOFTMAX-INF-SLICE-ONE-HOT": _softmax_inf_slice,
    "CONV-PADDING-TAPS-SKIPPED": _conv_padding,
    "INT8-SATURATING-ARITHMETIC": _int8_saturating,
    "INT64-AS-INT32": _int64_as_int32,
    "BFLOAT16-INFERENCE": _bfloat16_matmul,
    "SUBNORMAL-OPERANDS-AS-ZERO": _subnormal_matmul,
    "SIGMOID-CLAMPED-RATIONAL": _tract_sigmoid,
    "TANH-CLAMPED-RATIONAL": _tract_tanh,
    "FLOAT16-WIDENED-CHAIN": _widened_chain,
    "BATCHNORM-FOLDED-INTO-CONV": _batchnorm_folded,
}

# verify29: appended (the catalogue entry of rules/Max.toml's end)
from behaviours_float64 import float64_saturated_add  # noqa: E402

BEHAVIOURS["FLOAT64-AS-SATURATED-FLOAT32"] = float64_saturated_add
from behaviours_maxpool_lowest import lowest_window_case  # noqa: E402

BEHAVIOURS["MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW"] = lowest_window_case
from behaviours_softmax_subnormal import subnormal_case  # noqa: E402

BEHAVIOURS["SOFTMAX-SUBNORMAL-RANGE-LOST"] = subnormal_case
from behaviours_unsigned import unsigned_case  # noqa: E402

BEHAVIOURS["UNSIGNED-AS-INT32"] = unsigned_case
from behaviours_integers import relu_int32_case  # noqa: E402

BEHAVIOURS["INTEGER-IN-FLOAT32"] = relu_int32_case
from behaviours_tract_activations import leaky_relu_case  # noqa: E402

BEHAVIOURS["LEAKYRELU-ZERO-TIMES-ALPHA"] = leaky_relu_case
from behaviours_conv_channel_pad import read_only_case  # noqa: E402

BEHAVIOURS["BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL"] = read_only_case
from behaviours_lstm import peepholes_case  # noqa: E402

BEHAVIOURS["LSTM-PEEPHOLES-IGNORED"] = peepholes_case
from behaviours_lstm import overflow_case  # noqa: E402

BEHAVIOURS["LSTM-GATE-SUM-OVERFLOW"] = overflow_case
from behaviours_float16_rational import sigmoid_case, tanh_case  # noqa: E402

BEHAVIOURS["SIGMOID-FLOAT16-RATIONAL"] = sigmoid_case
BEHAVIOURS["TANH-FLOAT16-RATIONAL"] = tanh_case
