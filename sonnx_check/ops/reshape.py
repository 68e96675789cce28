"""Reshape rules that the shared vocabulary cannot state (ops/reshape/reshape.md): the values of a constant
shape S under the allowzero rules, and the sizes and shape of Y. The other Reshape rules are vocabulary
entries of rules/Reshape.toml.

The value rules read S only when it is a constant (an embedded initializer or a Constant node), and stay
silent when what they need is unknown; the output rule stays silent when S breaks a value rule, so one
defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import prod

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _shape_values(view: ModelView, index: int) -> tuple[str, list[int]] | None:
    """S's name and values when S is a 1-D integer constant."""
    inputs = view.inputs[index]
    if len(inputs) < 2 or not inputs[1]:
        return None
    values = view.int_list(inputs[1])
    return None if values is None else (inputs[1], values)


def _allowzero(view: ModelView, index: int) -> int | None:
    """allowzero (0 when absent, as ONNX applies it; GR4 reports the absence), None when not 0 or 1."""
    attrs = view.attributes(index)
    if "allowzero" not in attrs:
        return 0
    value = get_int(attrs, "allowzero")
    return value if value in (0, 1) else None


def _x_shape(view: ModelView, index: int) -> tuple[int, ...] | None:
    inputs = view.inputs[index]
    return view.shape_of(inputs[0]) if inputs and inputs[0] else None


def _x_rank(view: ModelView, index: int) -> int | None:
    inputs = view.inputs[index]
    tt = view.type_of(inputs[0]) if inputs and inputs[0] else None
    return len(tt.shape) if tt is not None and tt.shape is not None else None


def _many_inferred(values: list[int]) -> bool:
    return values.count(-1) > 1


def _copies_missing_axis(values: list[int], allowzero: int | None, rank: int | None) -> list[int]:
    if allowzero != 0 or rank is None:
        return []
    return [i for i, v in enumerate(values) if v == 0 and i >= rank]


def _domain_problem(values: list[int], allowzero: int | None, x_shape: tuple[int, ...] | None) -> str | None:
    """Why S's values break allowzero.C3, or None."""
    below = [v for v in values if v < -1]
    if below:
        return f"value {below[0]} is below -1 (only -1, 0 and positive sizes are meaningful)"
    if allowzero is None:
        return None
    x_is_empty = None if x_shape is None else 0 in x_shape
    if allowzero == 0:
        if -1 in values and x_is_empty:
            return (
                f"-1 is used while X {list(x_shape or ())} has a dimension of size 0 (the inferred "
                "dimension would divide by 0)"
            )
        return None
    if 0 in values and -1 in values:
        return "with allowzero=1, 0 (an empty dimension) and -1 (an inferred dimension) cannot go together"
    if 0 in values and x_is_empty is False:
        return f"with allowzero=1, 0 makes Y empty while X {list(x_shape or ())} has no dimension of size 0"
    return None


def one_inferred_dimension(view: ModelView, index: int) -> Iterator[Violation]:
    s = _shape_values(view, index)
    if s is not None and _many_inferred(s[1]):
        name, values = s
        yield Violation(
            f"S '{name}' = {values} holds -1 {values.count(-1)} times; SONNX Reshape allows at most one "
            "inferred dimension",
            tensor=name,
            actual=values,
        )


def copied_dimensions_exist(view: ModelView, index: int) -> Iterator[Violation]:
    s = _shape_values(view, index)
    rank = _x_rank(view, index)
    if s is None:
        return
    name, values = s
    bad = _copies_missing_axis(values, _allowzero(view, index), rank)
    if bad:
        yield Violation(
            f"S '{name}' = {values} has 0 at index {bad[0]}, which copies dimension {bad[0]} of X, but X has "
            f"rank {rank}; with allowzero=0 a 0 may only copy an existing dimension",
            tensor=name,
            actual=values,
        )


def shape_values_in_domain(view: ModelView, index: int) -> Iterator[Violation]:
    s = _shape_values(view, index)
    if s is None:
        return
    name, values = s
    problem = _domain_problem(values, _allowzero(view, index), _x_shape(view, index))
    if problem is not None:
        yield Violation(f"S '{name}' = {values}: {problem}", tensor=name, actual=values)


def _target(values: list[int], allowzero: int, x_shape: tuple[int, ...]) -> tuple[list[int], int]:
    """The dimensions S gives (-1 left as is) and the product of the known ones."""
    dims = [x_shape[i] if v == 0 and allowzero == 0 else v for i, v in enumerate(values)]
    return dims, prod(d for d in dims if d != -1)


def sizes_match(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    x_shape = _x_shape(view, index)
    y_name = outputs[0] if outputs and outputs[0] else None
    declared = view.declared.get(y_name) if y_name else None
    y_shape = declared.static_shape if declared is not None else None
    if x_shape is None:
        return
    x_size = prod(x_shape)
    s = _shape_values(view, index)
    allowzero = _allowzero(view, index)
    if s is None or allowzero is None:
        if y_shape is not None and prod(y_shape) != x_size:
            yield Violation(
                f"Y '{y_name}' is declared {list(y_shape)} ({prod(y_shape)} elements); X {list(x_shape)} has "
                f"{x_size}: SONNX Reshape requires the same number of elements",
                tensor=y_name,
                actual=prod(y_shape),
                expected=x_size,
            )
        return
    name, values = s
    if (
        _many_inferred(values)
        or _copies_missing_axis(values, allowzero, len(x_shape))
        or _domain_problem(values, allowzero, x_shape) is not None
    ):
        return  # S.C1, allowzero.C2 or allowzero.C3 reports S
    dims, known = _target(values, allowzero, x_shape)
    if -1 in dims:
        if known == 0 or x_size % known:
            yield Violation(
                f"X {list(x_shape)} has {x_size} elements, which S '{name}' = {values} cannot hold: the "
                f"other dimensions make {known}, which does not divide {x_size}",
                tensor=name,
                actual=values,
            )
            return
        dims[dims.index(-1)] = x_size // known
    elif known != x_size:
        yield Violation(
            f"S '{name}' = {values} gives {dims} ({known} elements); X {list(x_shape)} has {x_size}: SONNX "
            "Reshape requires the same number of elements",
            tensor=name,
            actual=known,
            expected=x_size,
        )
        return
    if y_shape is not None and list(y_shape) != dims:
        yield Violation(
            f"Y '{y_name}' is declared {list(y_shape)}; X {list(x_shape)} reshaped by S = {values} "
            f"(allowzero={allowzero}) gives {dims}",
            tensor=y_name,
            actual=list(y_shape),
            expected=dims,
        )
