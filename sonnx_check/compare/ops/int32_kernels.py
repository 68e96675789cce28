"""A node as a runtime with 32-bit integer kernels computes it (OpenVINO 2026.4.1's CPU plugin, measured by
benchmarks/probe_departures.py): the shared arithmetic of INT64-AS-INT32, UNSIGNED-AS-INT32 and
INTEGER-IN-FLOAT32 (rules/Add.toml, rules/Div.toml).

Relu, Div, Pow and MatMul are computed in float32 on the int32 operands and converted back: Relu, Div and
Pow truncate and give INT32_MIN for a NaN or out-of-range value (the x86 conversion: 2^31 - 1 -> 2^31 ->
-2147483648), MatMul clamps to [-2^31, 2^31 - 128] (the largest float32 below 2^31). Every other operator
is computed exactly on int32, wrapping as SONNX wraps. The int32 result is then written at the output's
width: sign-extended to 64 bits (uint64 too: 2^32 - 1 read as -1 gives 2^64 - 1), its bits for uint32,
its low 16 bits for int16/uint16 (an 8-bit result saturates: INT8-SATURATING-ARITHMETIC)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

IN_FLOAT32 = frozenset({"Relu", "Div", "Pow", "MatMul"})
_INT32_MIN = -(2**31)
_MATMUL_TOP = 2**31 - 128  # float32's largest value below 2^31
_WRAPPING = {"Abs": np.abs, "Neg": np.negative}


def _truncated(values: np.ndarray) -> np.ndarray:
    """float32 values truncated to int32 as x86's conversion does: NaN and out of range -> INT32_MIN."""
    wide = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        fits = np.isfinite(wide) & (wide >= -(2.0**31)) & (wide < 2.0**31)
        return np.where(fits, np.trunc(np.where(fits, wide, 0.0)), _INT32_MIN).astype(np.int64)


def _matmul_range(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The int32 results a float32 MatMul can give in any summation order: the exact sum of the
    float32-rounded products' +- gamma_(k+1) times the sum of their magnitudes, clamped as converted."""
    if a.ndim < 1 or b.ndim < 1:
        return None
    x, y = a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
    try:
        exact = np.matmul(x, y)
        magnitude = np.matmul(np.abs(x), np.abs(y))
    except ValueError:
        return None
    k = a.shape[-1]
    unit = 2.0**-24
    gamma = (k + 1) * unit / (1 - (k + 1) * unit)
    low, high = exact - gamma * magnitude, exact + gamma * magnitude
    return np.clip(low, _INT32_MIN, _MATMUL_TOP), np.clip(high, _INT32_MIN, _MATMUL_TOP)


def float32_result(node: onnx.NodeProto, operands: Sequence[np.ndarray]) -> np.ndarray | None:
    """Relu, Div or Pow computed in float32 on int32 operands and truncated: the int32 results (as int64);
    None for another operator or operands that do not broadcast."""
    with np.errstate(all="ignore"):
        try:
            if node.op_type == "Relu" and len(operands) == 1:
                value = np.maximum(operands[0].astype(np.float32), np.float32(0))
                return _truncated(value)
            if node.op_type == "Div" and len(operands) == 2:
                value = operands[0].astype(np.float32) / operands[1].astype(np.float32)
                return _truncated(value)
            if node.op_type == "Pow" and len(operands) == 2:  # powf (measured: 7^11 = 1977326720)
                value = np.power(operands[0].astype(np.float32), operands[1].astype(np.float32))
                return _truncated(value)
        except ValueError:
            return None
    return None


def explains_32_bit(
    node: onnx.NodeProto, operands: Sequence[np.ndarray], actual: np.ndarray, output_position: int
) -> np.ndarray | None:
    """Where ``actual`` (the runtime's output at its own type) equals the node computed as a 32-bit
    kernel computes it on ``operands`` (already int32 where the runtime narrows them), written back at
    ``actual``'s width. None: the reference refuses the operands or the result does not have the shape."""
    from sonnx_check import reference

    if node.op_type == "MatMul" and len(operands) == 2:
        bounds = _matmul_range(operands[0], operands[1])
        if bounds is None or bounds[0].shape != actual.shape:
            return None
        read = _read_back(actual)
        if read is None:
            return None
        value, fits = read
        representable = value.astype(np.float32).astype(np.int64) == value
        return fits & representable & (value >= np.ceil(bounds[0])) & (value <= np.floor(bounds[1]))
    if node.op_type in IN_FLOAT32 and actual.dtype.kind in "iu":
        computed = float32_result(node, operands)
        if computed is None or computed.shape != actual.shape:
            return None
        return np.asarray(actual == written(computed, actual.dtype))
    if node.op_type in _WRAPPING and len(operands) == 1 and operands[0].dtype == np.int32:
        # Abs and Neg of -2^31 wrap to -2^31 (measured), a value SONNX's own int32 domain excludes
        computed = _WRAPPING[node.op_type](operands[0]).astype(np.int64)
        if computed.shape != actual.shape:
            return None
        return np.asarray(actual == written(computed, actual.dtype))
    try:
        outputs = reference.run_node(node, list(operands))
    except reference.ReferenceError:
        return None
    if output_position >= len(outputs) or outputs[output_position] is None:
        return None
    computed = np.asarray(outputs[output_position])
    if computed.shape != actual.shape:
        return None
    if actual.dtype == np.bool_ or computed.dtype.kind not in "iu":
        return np.asarray(actual == computed)
    return np.asarray(actual == written(computed.astype(np.int64), actual.dtype))


def written(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An int32 result (held as int64) written at ``dtype``'s width: sign-extended to 64 bits, its bits for
    32, its low bits for 16, saturated for 8."""
    as_int32 = value.astype(np.int64).astype(np.int32)
    kind = np.dtype(dtype)
    if kind == np.uint64:
        return as_int32.astype(np.int64).view(np.uint64)
    if kind == np.int64:
        return as_int32.astype(np.int64)
    if kind.itemsize == 1:
        info = np.iinfo(kind)
        return np.clip(as_int32.astype(np.int64), info.min, info.max).astype(kind)
    return as_int32.astype(kind)  # 32 bits: the same bits; 16 bits: the low ones (numpy wraps)


def _read_back(actual: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The int32 value each element of ``actual`` is the writing of (as int64), and where it is one."""
    if actual.dtype.kind not in "iu":
        return None
    if actual.dtype == np.uint64:
        signed = actual.view(np.int64)
    elif actual.dtype == np.uint32:
        signed = actual.view(np.int32).astype(np.int64)
    else:
        signed = actual.astype(np.int64)
    fits = (signed >= _INT32_MIN) & (signed < 2**31)
    return signed, fits


def parameter_positions(node: onnx.NodeProto, count: int) -> set[int]:
    """Input positions the declaration types as integers only (a shape, axes, starts): a runtime reads
    those as values, not as data its kernels narrow."""
    from sonnx_check.profile import TYPE_NAMES, profile_operators

    operator = profile_operators().get(node.op_type)
    if operator is None:
        return set()
    names = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    integers = {TYPE_NAMES[n] for n in names}
    held: set[int] = set()
    for param in operator.inputs:
        types = operator.types.get(param.name)
        if types and types <= integers:
            held |= set(range(param.position, count)) if param.variadic else {param.position}
    return held


def narrowed_operands(
    node: onnx.NodeProto, operands: Sequence[np.ndarray | None], kinds: tuple[np.dtype, ...]
) -> list[np.ndarray] | None:
    """The node's data operands of the dtypes ``kinds`` read as int32 (``as_int32``), the others as given;
    None when an operand is unknown or no data operand has one of those dtypes."""
    if any(v is None for v in operands):
        return None
    parameters = parameter_positions(node, len(operands))
    data = [k for k in range(len(operands)) if k not in parameters]
    if not any(np.asarray(operands[k]).dtype in kinds for k in data):
        return None
    return [
        as_int32(np.asarray(v)) if k in data and np.asarray(v).dtype in kinds else np.asarray(v)
        for k, v in enumerate(operands)
    ]


def as_int32(value: np.ndarray) -> np.ndarray:
    """An integer operand as a runtime with 32-bit kernels reads it: its low 32 bits as int32 (64-bit and
    uint32 values); narrower types and other kinds unchanged."""
    if value.dtype in (np.int64, np.uint64):
        return (value.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    if value.dtype == np.uint32:
        return value.view(np.int32)
    return value
