"""UNSIGNED-AS-INT32 (declared at the end of rules/Add.toml): a runtime that reads uint32 and uint64
operands as int32 (their low 32 bits' pattern), computes signed and sign-extends the result back (OpenVINO
2026.4.1 measured: uint64 3e9 + 1 gives 2^64 - 1294967295; uint64 Div divides in float32; uint32 Max
compares signed). INT64-AS-INT32 reads uint64 as uint32, which explains none of these elements."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, input_value, none


def _as_int32(value: np.ndarray) -> np.ndarray:
    if value.dtype == np.uint64:
        return (value & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    if value.dtype == np.uint32:
        return value.view(np.int32)
    return value


def _widened(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An int32 result sign-extended to ``dtype``'s width and read with its bits."""
    if dtype == np.uint64:
        return result.astype(np.int64).view(np.uint64)
    if dtype == np.uint32:
        return result.astype(np.int32).view(np.uint32)
    return result.astype(dtype)


def unsigned_as_int32(case: DivergenceCase) -> np.ndarray:
    """The element equals the node computed on the operands' low 32 bits read as int32 (a quotient in float32,
    truncated), sign-extended back, where SONNX computes on the unsigned values."""
    from sonnx_check import reference

    operands = [input_value(case, k) for k in range(len(case.inputs))]
    if any(v is None for v in operands) or not any(
        v.dtype in (np.uint32, np.uint64) for v in operands if v is not None
    ):
        return none(case)
    narrow = [_as_int32(v) for v in operands if v is not None]
    with np.errstate(all="ignore"):
        if case.node.op_type == "Div":
            quotient = np.trunc(narrow[0].astype(np.float32) / narrow[1].astype(np.float32)).astype(
                np.float64
            )
            fits = np.isfinite(quotient) & (quotient >= -(2.0**31)) & (quotient < 2.0**31)
            computed = np.where(fits, quotient, 0).astype(np.int64).astype(np.int32)
        else:
            try:
                outputs = reference.run_node(case.node, narrow)
            except reference.ReferenceError:
                return none(case)
            computed = np.asarray(outputs[case.output_position])
            fits = np.ones(computed.shape, dtype=bool)
    if computed.shape != case.actual.shape:
        return none(case)
    if case.actual.dtype == np.bool_:
        return np.asarray(case.actual == computed)
    return fits & (case.actual == _widened(computed, case.actual.dtype))
