"""Max reference kernel (SONNX, based on Max-13), written from seed 002 and
docs/readings.md#max-broadcasting-nan-and-signed-zero.

Inputs broadcast numpy-style to one output shape; NaN is absorbing (``numpy.maximum`` propagates it); the
order puts +0 above -0, which ``numpy.maximum`` does not guarantee, so the zeros of the result are settled
at the end from the inputs themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.shapes import NotBroadcastable, broadcast_shape

# Seed 002 type sections (bfloat16, listed by the older seed 000, is not in the profile).
PROFILE_DTYPES = (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64,
)  # fmt: skip


def maximum(arrays: Sequence[np.ndarray], *, max_elements: int | None = None) -> np.ndarray:
    """Element-wise maximum of one or more arrays of one profile type, broadcast together."""
    if not arrays:
        raise ReferenceError("Max without inputs")
    # Max is idempotent: an input repeated (one tensor wired many times) is folded in once.
    arrays = list({id(a): a for a in map(np.asarray, arrays)}.values())
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        names = sorted(str(d) for d in dtypes)
        raise ReferenceError(f"Max inputs of different types {names}: SONNX requires one type (GR3)")
    if arrays[0].dtype.type not in PROFILE_DTYPES:
        raise OutsideProfileError(f"Max on {arrays[0].dtype}: not a type of the profile (Max.types)")
    try:
        shape = broadcast_shape([a.shape for a in arrays])
    except NotBroadcastable as exc:
        raise ReferenceError(f"Max inputs are not broadcastable: {exc}") from None
    ensure_within_budget("Max output Y", shape, max_elements)
    result = np.empty(shape, dtype=arrays[0].dtype)
    if len(arrays) == 1:
        result[...] = arrays[0]
        return result
    np.maximum(arrays[0], arrays[1], out=result)
    for other in arrays[2:]:
        np.maximum(result, other, out=result)
    if result.dtype.kind == "f":
        _settle_signed_zeros(result, arrays)
    return result


def _settle_signed_zeros(result: np.ndarray, arrays: Sequence[np.ndarray]) -> None:
    """Where the maximum is a zero, it is +0 if any input is +0 there and -0 otherwise (the other inputs are
    negative there). Only zero positions are revisited, so inputs without zeros cost one comparison."""
    zeros = np.flatnonzero(result.reshape(-1) == 0)
    if zeros.size == 0:
        return
    shape = result.shape or (1,)  # a 0-d result is indexed as one element
    where = np.unravel_index(zeros, shape)
    positive_zero = np.zeros(zeros.size, dtype=bool)
    for array in arrays:
        values = np.broadcast_to(array, result.shape).reshape(shape)[where]
        positive_zero |= (values == 0) & ~np.signbit(values)
    result.reshape(-1)[zeros] = np.where(positive_zero, 0.0, -0.0).astype(result.dtype)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    present = [a for a in inputs if a is not None]
    if len(present) != len(inputs):
        raise ReferenceError("Max with an empty input name")
    return [maximum(present, max_elements=max_elements)]
