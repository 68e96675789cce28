"""The integer arithmetic a runtime narrows (rules/Add.toml and rules/Div.toml declare the departures): 8-bit
results saturated instead of wrapped, int64 computed in 32 bits, int32 Relu, Div, Pow and MatMul computed in
float32 (uint32 and uint64 read as int32: unsigned_narrowed.py). Each predicate recomputes the node on the
operands as the runtime reads them (compare/ops/int32_kernels.py), so an element is explained only when it
equals that computation."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none
from sonnx_check.compare.ops import int32_kernels

_8_BIT = (np.int8, np.uint8)


def _exact_8_bit(case: DivergenceCase, a: np.ndarray, b: np.ndarray | None) -> np.ndarray | None:
    """The node's exact result on the 8-bit operands (int64), before any wrap or clamp: None for an
    operator without one here."""
    x = a.astype(np.int64)
    op = case.node.op_type
    if op == "Neg":
        return -x
    if op == "Abs":
        return np.abs(x)
    if b is None:
        return None
    y = b.astype(np.int64)
    if op == "Add":
        return x + y
    if op == "Mul":
        return x * y
    if op == "Sub":
        if a.dtype == np.int8:  # a + sat(-b), measured: -128 - (-128) = -1, 5 - (-128) = 5 + 127
            return np.clip(x + np.clip(-y, -128, 127), -128, 127)
        return x - y
    if op == "Div":
        with np.errstate(all="ignore"):
            quotient = np.trunc(x.astype(np.float64) / np.where(y == 0, 1, y))
        return np.where(y == 0, 0, quotient).astype(np.int64)  # 0: SONNX excludes a zero divisor
    return None


def saturating_8_bit(case: DivergenceCase) -> np.ndarray:
    """int8/uint8 Add, Sub, Mul, Neg, Abs and Div: the exact result clamped to the type's range, where SONNX
    wraps around modulo 2^8 (int8 Sub adds the saturated negation of b: -128 - (-128) = -1)."""
    dtype = case.actual.dtype
    a, b = input_value(case, 0), input_value(case, 1)
    if dtype not in _8_BIT or a is None or a.dtype != dtype:
        return none(case)
    try:
        exact = _exact_8_bit(case, a, b)
    except ValueError:  # operands that do not broadcast
        return none(case)
    if exact is None:
        return none(case)
    info = np.iinfo(dtype)
    shaped = as_output(np.clip(exact, info.min, info.max), case)
    if shaped is None:
        return none(case)
    return np.asarray(case.actual.astype(np.int64) == shaped)


def wide_as_32_bit(case: DivergenceCase) -> np.ndarray:
    """int64 data read as int32 (its low 32 bits) and the node computed there as the runtime's 32-bit
    kernel does (exactly, or in float32 for Relu, Div, Pow and MatMul), its result sign-extended back,
    where SONNX computes in 64 bits. Integer parameters (a shape, starts, axes) are read as they are."""
    operands = int32_kernels.narrowed_operands(case.node, list(case.inputs), (np.dtype(np.int64),))
    if operands is None or case.actual.dtype.kind not in "iub":
        return none(case)
    found = int32_kernels.explains_32_bit(case.node, operands, case.actual, case.output_position)
    return none(case) if found is None else found


def integer_in_float32(case: DivergenceCase) -> np.ndarray:
    """int32, int16 or uint16 Relu, Div, Pow and MatMul computed in float32 on the operands and converted back
    (truncated, INT32_MIN when out of range; MatMul clamped), written at the output's width, where SONNX
    computes on the integers."""
    kinds = (np.dtype(np.int32), np.dtype(np.int16), np.dtype(np.uint16))
    operands = [input_value(case, k) for k in range(len(case.inputs))]
    if (
        case.node.op_type not in int32_kernels.IN_FLOAT32
        or case.actual.dtype not in kinds
        or any(v is None or v.dtype not in kinds for v in operands)
    ):
        return none(case)
    found = int32_kernels.explains_32_bit(
        case.node, [v for v in operands if v is not None], case.actual, case.output_position
    )
    return none(case) if found is None else found
