"""Reshape reference kernel (SONNX, based on Reshape-25), written from ops/reshape/reshape.md.

Y[i] = X[index(offset(i, Y_shape), X_shape)] (Informal specification): X's elements in row-major order laid
into the shape S gives, bit for bit. A 0 in S copies X's dimension at the same index when allowzero = 0 and
is an empty dimension when allowzero = 1; one -1 is inferred so that X and Y hold as many elements.

Refused, under the declaration's rule IDs, rather than guessed: allowzero not 0 or 1 (allowzero.C1), S not
a 1-D int64 tensor (Reshape.types, S.rank), a value below -1 or several -1 (allowzero.C3, S.C1), with
allowzero = 0 a 0 past X's rank (allowzero.C2) or a -1 when X has an empty dimension (allowzero.C3), with
allowzero = 1 a 0 together with a -1, or a 0 when X has no empty dimension (allowzero.C3, as the
declaration reads it: an empty Y only from an empty X), and sizes that do not match (X.C1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.movement_common import (
    attributes,
    fresh,
    index_values,
    int_attribute,
    require_declared_type,
    required_input,
)

ONNX_DEFAULT_ALLOWZERO = 0


def output_shape(x_shape: Sequence[int], s: Sequence[int], allowzero: int) -> tuple[int, ...]:
    """The shape S gives for X, or OutsideProfileError naming the rule S breaks."""
    if allowzero not in (0, 1):
        raise OutsideProfileError(f"Reshape with allowzero={allowzero}: 0 or 1 (Reshape.allowzero.C1)")
    below = [v for v in s if v < -1]
    if below:
        raise OutsideProfileError(
            f"Reshape S={list(s)} holds {below[0]}: values are -1, 0 or sizes (Reshape.allowzero.C3)"
        )
    if s.count(-1) > 1:
        raise OutsideProfileError(f"Reshape S={list(s)} holds several -1 (Reshape.S.C1)")
    x_empty = 0 in x_shape
    if allowzero == 0:
        missing = [i for i, v in enumerate(s) if v == 0 and i >= len(x_shape)]
        if missing:
            raise OutsideProfileError(
                f"Reshape S={list(s)} with allowzero=0: the 0 at index {missing[0]} copies no dimension of X "
                f"(rank {len(x_shape)}) (Reshape.allowzero.C2)"
            )
        if -1 in s and x_empty:
            raise OutsideProfileError(
                f"Reshape S={list(s)} infers a dimension of an empty X {list(x_shape)} (Reshape.allowzero.C3)"
            )
        dims = [x_shape[i] if v == 0 else v for i, v in enumerate(s)]
    else:
        if 0 in s and -1 in s:
            raise OutsideProfileError(
                f"Reshape S={list(s)} with allowzero=1 mixes 0 and -1 (Reshape.allowzero.C3)"
            )
        if 0 in s and not x_empty:
            raise OutsideProfileError(
                f"Reshape S={list(s)} with allowzero=1 gives an empty Y from a non-empty X {list(x_shape)} "
                "(Reshape.allowzero.C3)"
            )
        dims = list(s)
    size = math.prod(x_shape)
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)  # > 0: no 0 may stand beside a -1 here
        if size % known:
            raise OutsideProfileError(
                f"Reshape S={list(s)}: X of {size} elements cannot be split by {known} (Reshape.X.C1)"
            )
        dims[dims.index(-1)] = size // known
    if math.prod(dims) != size:
        raise OutsideProfileError(
            f"Reshape S={list(s)} gives {dims} ({math.prod(dims)} elements) for X of {size} (Reshape.X.C1)"
        )
    return tuple(dims)


def reshape(
    x: np.ndarray, s: np.ndarray, *, allowzero: int = 0, max_elements: int | None = None
) -> np.ndarray:
    x, s = np.asarray(x), np.asarray(s)
    require_declared_type("Reshape", "X", x)
    require_declared_type("Reshape", "S", s)
    if s.ndim != 1:
        raise OutsideProfileError(f"Reshape S of rank {s.ndim}: S is a 1-D tensor (Reshape.S.rank)")
    shape = output_shape(x.shape, index_values(s), allowzero)
    ensure_within_budget("Reshape output Y", shape, max_elements)
    return fresh(x.reshape(shape))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Reshape", inputs, 0, "X")
    s = required_input("Reshape", inputs, 1, "S (shape)")
    allowzero = int_attribute(attributes(node), "allowzero", ONNX_DEFAULT_ALLOWZERO)
    return [reshape(x, s, allowzero=allowzero, max_elements=max_elements)]  # type: ignore[arg-type]
