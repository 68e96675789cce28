"""Unsqueeze reference kernel (SONNX, based on Unsqueeze-25), written from ops/unsqueeze/unsqueeze.md.

Y has rank rY = rX + len(A) and X's shape with a 1 inserted at every axis of A', the axes of A normalised
(a + rY when negative, the output rank, as the text's constraints and the declaration read the note's
"a + rA") and sorted; X's elements are copied in row-major order, bit for bit (Informal specification).
Exact: no arithmetic on the elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.movement_common import fresh, index_values, require_declared_type, required_input


def output_shape(x_shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    rank_y = len(x_shape) + len(axes)
    bad = [a for a in axes if not -rank_y <= a < rank_y]
    if bad:
        raise OutsideProfileError(
            f"Unsqueeze axes {list(axes)} on X of rank {len(x_shape)}: {bad[0]} is not in "
            f"[{-rank_y}, {rank_y - 1}] (Unsqueeze.A.C1)"
        )
    normalised = [a + rank_y if a < 0 else a for a in axes]
    if len(set(normalised)) != len(normalised):
        raise OutsideProfileError(f"Unsqueeze axes {list(axes)} designate one axis twice (Unsqueeze.A.C2)")
    dims = iter(x_shape)
    inserted = set(normalised)
    return tuple(1 if j in inserted else next(dims) for j in range(rank_y))


def unsqueeze(x: np.ndarray, axes: np.ndarray, *, max_elements: int | None = None) -> np.ndarray:
    x, axes = np.asarray(x), np.asarray(axes)
    require_declared_type("Unsqueeze", "X", x)
    require_declared_type("Unsqueeze", "A", axes)
    if axes.ndim != 1:
        raise OutsideProfileError(f"Unsqueeze A of rank {axes.ndim}: A is a 1-D tensor (Unsqueeze.A.rank)")
    shape = output_shape(x.shape, index_values(axes))
    ensure_within_budget("Unsqueeze output Y", shape, max_elements)
    return fresh(x.reshape(shape))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Unsqueeze", inputs, 0, "X")
    axes = required_input("Unsqueeze", inputs, 1, "A (axes)")
    return [unsqueeze(x, axes, max_elements=max_elements)]
