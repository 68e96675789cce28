"""UNSIGNED-AS-INT32 (declared at the end of rules/Add.toml): a runtime that reads uint32 and uint64 data
as int32 (their low 32 bits' pattern), computes signed as its 32-bit kernels do and sign-extends the result
back (OpenVINO 2026.4.1 measured: uint64 3e9 + 1 gives 2^64 - 1294967295, a uint64 Reshape of 2^32 - 1
gives 2^64 - 1; Div divides in float32; uint32 Max, Less and ArgMax compare signed)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, none
from sonnx_check.compare.ops import int32_kernels

_UNSIGNED = (np.dtype(np.uint32), np.dtype(np.uint64))


def unsigned_as_int32(case: DivergenceCase) -> np.ndarray:
    """The element equals the node computed on the data's low 32 bits read as int32 (by the runtime's
    32-bit kernel: int32_kernels), sign-extended back, where SONNX computes on the unsigned values."""
    operands = int32_kernels.narrowed_operands(case.node, list(case.inputs), _UNSIGNED)
    if operands is None or case.actual.dtype.kind not in "iub":
        return none(case)
    found = int32_kernels.explains_32_bit(case.node, operands, case.actual, case.output_position)
    return none(case) if found is None else found
