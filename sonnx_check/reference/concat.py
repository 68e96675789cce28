"""Concat reference kernel (SONNX, based on Concat-13), written from ops/concat/concat.md.

Y[i_0, ..., i_a, ..., i_{r-1}] = X_k[i_0, ..., i_a - s_k, ..., i_{r-1}] with s_k the summed sizes of the
inputs before X_k along the axis a (Informal specification): the inputs laid one after the other along the
axis, every element copied bit for bit (NaN payloads, signed zeros, strings, bool). Exact: no arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.movement_common import attributes, int_attribute, require_declared_type, type_name


def concat(inputs: Sequence[np.ndarray], *, axis: int, max_elements: int | None = None) -> np.ndarray:
    """The concatenation of one or more arrays of one profile type along ``axis`` (0 <= axis < rank)."""
    arrays = [np.asarray(a) for a in inputs]
    if not arrays:
        raise OutsideProfileError("Concat without inputs: the text requires 1 to 2^31-1 (Concat.X.C1)")
    names = {type_name(a) for a in arrays}
    if len(names) > 1:
        raise OutsideProfileError(f"Concat inputs of different types {sorted(names)} (Concat.Y.C4)")
    for a in arrays:
        require_declared_type("Concat", "X", a)
    if axis < 0:
        raise OutsideProfileError(
            f"Concat with axis={axis}: the profile takes a non-negative axis (Concat.R1)"
        )
    ranks = {a.ndim for a in arrays}
    if len(ranks) > 1:
        raise OutsideProfileError(
            f"Concat inputs of ranks {sorted(ranks)}: one rank is required (Concat.X.C2)"
        )
    rank = ranks.pop()
    if axis >= rank:
        raise OutsideProfileError(f"Concat with axis={axis} on inputs of rank {rank} (Concat.axis.C1)")
    first = arrays[0].shape
    for k, a in enumerate(arrays):
        if any(a.shape[j] != first[j] for j in range(rank) if j != axis):
            raise OutsideProfileError(
                f"Concat input {k} of shape {list(a.shape)} differs from input 0 {list(first)} off the axis "
                f"{axis} (Concat.X.C3)"
            )
    shape = list(first)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    ensure_within_budget("Concat output Y", shape, max_elements)
    dtype = arrays[0].dtype
    out = np.empty(shape, dtype=dtype)
    offset = 0
    for a in arrays:  # one block copy per input
        index = [slice(None)] * rank
        index[axis] = slice(offset, offset + a.shape[axis])
        out[tuple(index)] = a
        offset += a.shape[axis]
    return out


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    if any(a is None for a in inputs):
        raise ReferenceError("Concat with an empty input name")
    axis = int_attribute(attributes(node), "axis", None)
    if axis is None:
        raise ReferenceError("Concat without attribute axis (required by ONNX and by the text)")
    return [concat(inputs, axis=axis, max_elements=max_elements)]  # type: ignore[arg-type]
