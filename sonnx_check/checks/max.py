"""Max rules (seed 002: inputs broadcastable, Y shape consistent, types of the profile)."""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from sonnx_check.registry import Violation, node_check
from sonnx_check.shapes import NotBroadcastable, broadcast_shape
from sonnx_check.view import ModelView, elem_type_name

OP = "Max"
T = onnx.TensorProto
PROFILE_TYPES = (
    T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32, T.UINT64, T.FLOAT16, T.FLOAT, T.DOUBLE,
)  # fmt: skip


def _input_shapes(view: ModelView, index: int) -> list[tuple[int, ...]] | None:
    shapes = [view.shape_of(name) for name in view.nodes[index].input if name]
    if not shapes or any(s is None for s in shapes):
        return None
    return shapes  # type: ignore[return-value]


@node_check("Max.C1", OP)
def broadcastable(view: ModelView, index: int) -> Iterator[Violation]:
    shapes = _input_shapes(view, index)
    if shapes is None:
        return
    try:
        broadcast_shape(shapes)
    except NotBroadcastable as exc:
        yield Violation(
            f"input shapes {[list(s) for s in shapes]} are not broadcastable "
            f"(axis {-exc.axis_from_right - 1} has sizes that are neither equal nor 1)",
            actual=[list(s) for s in shapes],
        )


@node_check("Max.C2", OP)
def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    node = view.nodes[index]
    shapes = _input_shapes(view, index)
    declared = view.declared.get(node.output[0]) if node.output else None
    if shapes is None or declared is None or declared.static_shape is None:
        return
    try:
        expected = broadcast_shape(shapes)
    except NotBroadcastable:
        return  # Max.C1's finding
    if declared.static_shape != expected:
        yield Violation(
            f"Y '{node.output[0]}' is declared {list(declared.static_shape)}; "
            f"broadcasting the inputs gives {list(expected)}",
            tensor=node.output[0],
            actual=list(declared.static_shape),
            expected=list(expected),
        )


@node_check("Max.types", OP)
def profile_types(view: ModelView, index: int) -> Iterator[Violation]:
    node = view.nodes[index]
    allowed = [elem_type_name(t) for t in PROFILE_TYPES]
    offending = {}
    for name in (*node.input, *node.output[:1]):
        tt = view.type_of(name) if name else None
        if tt is not None and tt.elem_type and tt.elem_type not in PROFILE_TYPES:
            offending[name] = tt.type_name
    if offending:
        listing = ", ".join(f"'{n}' is {t}" for n, t in offending.items())
        yield Violation(
            f"{listing}; SONNX Max is specified for {', '.join(allowed)} (bfloat16 is not in the profile)",
            tensor=next(iter(offending)),
            actual=offending,
            expected=allowed,
        )
