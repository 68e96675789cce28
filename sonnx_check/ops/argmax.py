"""ArgMax rules that the shared vocabulary cannot state (ops/argmax/argmax.md): axis below the rank of X
(a negative axis is ArgMax.R4's finding), a non-empty reduced axis, and Y's shape from axis and keepdims.
The other ArgMax rules are vocabulary entries of rules/ArgMax.toml.

Each rule reads only what it needs and stays silent when it is unknown (a wrong-typed attribute is
MODEL.onnx's finding, a missing shape GRAPH.shapes'), so one defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _x_rank(view: ModelView, index: int) -> int | None:
    inputs = view.inputs[index]
    if not inputs or not inputs[0]:
        return None
    tt = view.type_of(inputs[0])
    return len(tt.shape) if tt is not None and tt.shape is not None else None


_DEFAULTS = {"axis": 0, "keepdims": 1}


def _attribute(view: ModelView, index: int, name: str) -> int | None:
    """An int attribute; the ONNX default (axis=0, keepdims=1) when it is absent (ArgMax.R1 reports that),
    None when it is unreadable (MODEL.onnx reports that)."""
    attrs = view.attributes(index)
    return _DEFAULTS[name] if name not in attrs else get_int(attrs, name)


def _axis(view: ModelView, index: int, rank: int) -> int | None:
    """The reduced axis in [0, rank), reading a negative one as ONNX does; None when unreadable or out of
    range (ArgMax.R4 and ArgMax.axis.C2 report those)."""
    axis = _attribute(view, index, "axis")
    if axis is None or not -rank <= axis < rank:
        return None
    return axis + rank if axis < 0 else axis


def axis_below_rank(view: ModelView, index: int) -> Iterator[Violation]:
    axis = _attribute(view, index, "axis")
    if axis is None or axis < 0:
        return
    rank = _x_rank(view, index)
    if rank is not None and axis >= rank:
        yield Violation(
            f"axis={axis} is not an axis of X '{view.inputs[index][0]}' of rank {rank}; "
            f"SONNX ArgMax requires axis < {rank}",
            attribute="axis",
            actual=axis,
            expected=f"< {rank}",
        )


def reduced_axis_not_empty(view: ModelView, index: int) -> Iterator[Violation]:
    inputs = view.inputs[index]
    shape = view.shape_of(inputs[0]) if inputs and inputs[0] else None
    if shape is None:
        return
    axis = _axis(view, index, len(shape))
    if axis is not None and shape[axis] == 0:
        yield Violation(
            f"X '{inputs[0]}' of shape {list(shape)} has size 0 along axis {axis}; SONNX ArgMax "
            "requires at least one element along the reduced axis",
            tensor=inputs[0],
            actual=list(shape),
        )


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    inputs, outputs = view.inputs[index], view.outputs[index]
    if not inputs or not inputs[0] or not outputs or not outputs[0]:
        return
    declared = view.declared.get(outputs[0])
    x_shape = view.shape_of(inputs[0])
    if declared is None or declared.static_shape is None or x_shape is None:
        return
    keepdims = _attribute(view, index, "keepdims")
    axis = _axis(view, index, len(x_shape))
    if axis is None or keepdims not in (0, 1):
        return
    expected = (
        (*x_shape[:axis], 1, *x_shape[axis + 1 :]) if keepdims else (*x_shape[:axis], *x_shape[axis + 1 :])
    )
    if declared.static_shape != expected:
        yield Violation(
            f"Y '{outputs[0]}' is declared {list(declared.static_shape)}; X's shape {list(x_shape)} with "
            f"axis={axis} and keepdims={keepdims} gives {list(expected)}",
            tensor=outputs[0],
            actual=list(declared.static_shape),
            expected=list(expected),
        )
