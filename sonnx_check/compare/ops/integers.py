"""The integer arithmetic a runtime narrows (rules/Add.toml declares the departures, for Add, Sub, Mul, Div,
Less and Max): 8-bit results saturated instead of wrapped, 64-bit integers computed in 32 bits, uint32
compared and divided as int32. Each predicate recomputes the node with the SONNX kernel on the operands as
the runtime reads them, so an element is explained only when it equals that computation."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, as_output, input_value, none

_WIDE = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


def _recomputed(case: DivergenceCase, convert: Callable[[np.ndarray], np.ndarray]) -> np.ndarray | None:
    """The node's output computed by the SONNX kernel on ``convert``ed operands (None: it refuses them)."""
    from sonnx_check import reference

    operands: list[np.ndarray | None] = []
    for position in range(len(case.inputs)):
        value = input_value(case, position)
        operands.append(None if value is None else convert(value))
    try:
        outputs: Sequence[np.ndarray | None] = reference.run_node(case.node, operands)
    except reference.ReferenceError:
        return None
    result = outputs[case.output_position] if case.output_position < len(outputs) else None
    if result is None or np.shape(result) != case.actual.shape:
        return None
    return np.asarray(result)


def saturating_8_bit(case: DivergenceCase) -> np.ndarray:
    """int8/uint8 Add, Sub and Mul: the exact result clamped to the type's range, where SONNX wraps around
    modulo 2^8."""
    dtype = case.actual.dtype
    a, b = input_value(case, 0), input_value(case, 1)
    operation = _WIDE.get(case.node.op_type)
    if dtype not in (np.int8, np.uint8) or operation is None or a is None or b is None:
        return none(case)
    info = np.iinfo(dtype)
    try:
        exact = np.broadcast_to(operation(a.astype(np.int64), b.astype(np.int64)), case.actual.shape)
    except ValueError:
        return none(case)
    return case.actual.astype(np.int64) == np.clip(exact, info.min, info.max)


def wide_as_32_bit(case: DivergenceCase) -> np.ndarray:
    """int64/uint64 operands read as 32-bit integers (their low 32 bits) and the operation done there: the
    element equals that result widened back, where SONNX computes in 64 bits."""
    dtype = case.actual.dtype
    operand = input_value(case, 0)
    if operand is None or operand.dtype not in (np.int64, np.uint64):
        return none(case)
    narrow = np.int32 if operand.dtype == np.int64 else np.uint32
    computed = _recomputed(case, lambda v: v.astype(narrow) if v.dtype == operand.dtype else v)
    if computed is None:
        return none(case)
    if dtype == np.bool_:
        return case.actual == computed
    return case.actual == computed.astype(dtype)


def unsigned_as_signed(case: DivergenceCase) -> np.ndarray:
    """uint32 operands read as int32 (the same bits) for Less and Div: the element equals the signed
    comparison, or the signed quotient computed in float32 and truncated (its bits as uint32), where SONNX
    compares and divides the unsigned values."""
    operand = input_value(case, 0)
    if operand is None or operand.dtype != np.uint32:
        return none(case)
    if case.actual.dtype == np.bool_:
        computed = _recomputed(case, lambda v: v.view(np.int32) if v.dtype == np.uint32 else v)
        return none(case) if computed is None else case.actual == computed
    divisor = input_value(case, 1)
    if case.node.op_type != "Div" or divisor is None or divisor.dtype != np.uint32:
        return none(case)
    # Div: the int32 readings divided in float32 and truncated (OpenVINO measured: 2^31 / 3 gives
    # -715827904 as int32, 3579139392 as uint32)
    with np.errstate(all="ignore"):
        quotient = operand.view(np.int32).astype(np.float32) / divisor.view(np.int32).astype(np.float32)
        truncated = np.trunc(quotient).astype(np.float64)
        fits = np.isfinite(truncated) & (truncated >= -(2.0**31)) & (truncated < 2.0**31)
        computed = np.where(fits, truncated, 0).astype(np.int64).astype(np.int32).view(np.uint32)
    shaped = as_output(computed, case)
    return none(case) if shaped is None else fits & (case.actual == shaped)
