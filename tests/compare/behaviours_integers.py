"""Numpy emulation of OpenVINO 2026.4.1's integer kernels (CPU plugin, measured with /tmp scripts against the
installed runtime and by benchmarks/probe_departures.py): written here from the measurements, apart from the
predicates, so a test compares two independent readings of the behaviour.

- int64, uint32 and uint64 data: the low 32 bits read as int32, the node computed there, the int32 result
  sign-extended (uint64 too) or its bits (uint32).
- int32 Relu, Div and Pow: in float32, truncated, NaN or out of range -> -2^31; MatMul: float32 sums,
  clamped to [-2^31, 2^31 - 128].
- int8: saturated; Sub is a + sat(-b).
"""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase

INT32_MIN = -(2**31)


def low_int32(value: np.ndarray) -> np.ndarray:
    return (value.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)


def widened(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An int32 result at ``dtype``: sign-extended to 64 bits, its bits for uint32."""
    wide = np.asarray(result).astype(np.int32).astype(np.int64)
    if dtype == np.uint64:
        return wide.view(np.uint64)
    if dtype == np.uint32:
        return wide.astype(np.int32).view(np.uint32)
    return wide.astype(dtype)


def to_int32(values: np.ndarray) -> np.ndarray:
    """float32 -> int32 as x86's cvttss2si: truncation, NaN and out of range -> INT32_MIN."""
    out = np.full(values.shape, INT32_MIN, np.int64)
    for index, v in np.ndenumerate(values.astype(np.float64)):
        if np.isfinite(v) and -(2.0**31) <= v < 2.0**31:
            out[index] = int(v)
    return out


def float32_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sequential float32 sums of float32 products, clamped to float32's range below 2^31."""
    x, y = a.astype(np.float32), b.astype(np.float32)
    out = np.zeros((x.shape[0], y.shape[1]), np.int64)
    for i in range(x.shape[0]):
        for j in range(y.shape[1]):
            total = np.float32(0)
            for k in range(x.shape[1]):
                total = np.float32(total + np.float32(x[i, k] * y[k, j]))
            out[i, j] = int(np.clip(np.float64(total), INT32_MIN, 2**31 - 128))
    return out


def int32_kernel(op: str, operands: list[np.ndarray], attrs: dict | None = None) -> np.ndarray:
    """The node on int32 operands as the runtime computes it (int64 holding the int32 result, or bool, or
    ArgMax's indices)."""
    with np.errstate(all="ignore"):
        if op == "Relu":
            return to_int32(np.maximum(operands[0].astype(np.float32), np.float32(0)))
        if op == "Div":
            return to_int32(operands[0].astype(np.float32) / operands[1].astype(np.float32))
        if op == "Pow":
            return to_int32(np.power(operands[0].astype(np.float32), operands[1].astype(np.float32)))
        if op == "MatMul":
            return float32_matmul(operands[0], operands[1])
        if op in ("Abs", "Neg"):  # two's complement: -(-2^31) = -2^31
            return (np.abs if op == "Abs" else np.negative)(operands[0]).astype(np.int64)
    node = node_model(op, operands, attrs).graph.node[0]
    return np.asarray(reference.run_node(node, operands)[0])


def narrowed_case(
    op: str, operands: list[np.ndarray], attrs: dict | None = None, data: tuple[int, ...] = (0,)
) -> DivergenceCase:
    """The node's SONNX result against the emulated runtime's: the ``data`` operands read as int32."""
    model = node_model(op, operands, attrs)
    expected = np.asarray(reference.run_node(model.graph.node[0], operands)[0])
    narrow = [low_int32(v) if k in data else v for k, v in enumerate(operands)]
    computed = int32_kernel(op, narrow, attrs)
    actual = computed.astype(expected.dtype) if expected.dtype.kind in "b" or op == "ArgMax" else None
    if actual is None:
        actual = widened(computed, expected.dtype)
    return crafted(model, operands, expected, actual)


def int32_case(op: str, operands: list[np.ndarray]) -> DivergenceCase:
    """int32 operands, the runtime's float32 kernel against SONNX."""
    model = node_model(op, operands)
    expected = np.asarray(reference.run_node(model.graph.node[0], operands)[0])
    actual = int32_kernel(op, operands).astype(np.int32)
    return crafted(model, operands, expected, actual)


def int8_sub_case(a: np.ndarray, b: np.ndarray) -> DivergenceCase:
    """int8 Sub as a + sat(-b), saturated (-128 - (-128) = -1)."""
    model = node_model("Sub", [a, b])
    expected = np.asarray(reference.run_node(model.graph.node[0], [a, b])[0])
    negated = np.clip(-b.astype(np.int64), -128, 127)
    actual = np.clip(a.astype(np.int64) + negated, -128, 127).astype(np.int8)
    return crafted(model, [a, b], expected, actual)


def relu_int32_case() -> DivergenceCase:
    """int32 Relu through float32 (the catalogue's case): 16777217 -> 16777216, 2^31 - 1 -> -2^31."""
    return int32_case("Relu", [np.array([16777217, 5, -3, 2**31 - 1, 16777219, 7], np.int32)])
