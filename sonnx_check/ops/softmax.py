"""Softmax rule that the shared vocabulary cannot state (ops/softmax/softmax.md): axis below the rank of X,
judged for a non-negative axis only (a negative axis is Softmax.R1's finding, so one defect gives one
finding). The other Softmax rules are vocabulary entries of rules/Softmax.toml.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def axis_below_rank(view: ModelView, index: int) -> Iterator[Violation]:
    inputs = view.inputs[index]
    attrs = view.attributes(index)
    # Absent means ONNX's default -1: GR4 reports the absence, and a negative axis is Softmax.R1's finding.
    axis = get_int(attrs, "axis")
    if axis is None or axis < 0 or not inputs or not inputs[0]:
        return
    tt = view.type_of(inputs[0])
    if tt is None or tt.shape is None:
        return
    rank = len(tt.shape)
    if axis >= rank:
        yield Violation(
            f"axis={axis} is not an axis of X '{inputs[0]}' of rank {rank}; SONNX Softmax requires "
            f"axis < {rank}",
            attribute="axis",
            actual=axis,
            expected=f"< {rank}",
        )
