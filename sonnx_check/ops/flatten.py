"""Flatten rule that the shared vocabulary cannot state (ops/flatten/flatten.md): Y's shape. The other Flatten
rules are vocabulary entries of rules/Flatten.toml."""

from __future__ import annotations

from collections.abc import Iterator
from math import prod

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    inputs, outputs = view.inputs[index], view.outputs[index]
    if not inputs or not outputs or not outputs[0]:
        return
    name = outputs[0]
    declared = view.declared.get(name)
    x_shape = view.shape_of(inputs[0])
    axis = get_int(view.attributes(index), "axis")
    if declared is None or declared.static_shape is None or x_shape is None or axis is None:
        return
    r = len(x_shape)
    if not -r <= axis <= r:
        return  # axis.C1's finding
    cut = axis + r if axis < 0 else axis
    expected = (prod(x_shape[:cut]), prod(x_shape[cut:]))
    if declared.static_shape != expected:
        yield Violation(
            f"Y '{name}' is declared {list(declared.static_shape)}; X {list(x_shape)} flattened at axis "
            f"{axis} gives {list(expected)}",
            tensor=name,
            actual=list(declared.static_shape),
            expected=list(expected),
        )
