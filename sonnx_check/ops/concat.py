"""Concat rules that the shared vocabulary cannot state (ops/concat/concat.md): the number of inputs, their
ranks and shapes, and Y's shape. The other Concat rules are vocabulary entries of rules/Concat.toml.

Each rule reads only what it needs and stays silent when it is unknown (a missing shape is GRAPH.shapes'
finding, a wrong-typed attribute MODEL.onnx's, an invalid axis Concat.axis.C1's), so one defect gives one
finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

_MAX_INPUTS = 2**31 - 1


def _rank(view: ModelView, name: str) -> int | None:
    tt = view.type_of(name)
    return len(tt.shape) if tt is not None and tt.shape is not None else None


def _inputs(view: ModelView, index: int) -> list[str]:
    return [n for n in view.inputs[index] if n]


def _axis(view: ModelView, index: int, rank: int) -> int | None:
    """The concatenation axis, normalised, or None when it is unreadable or outside [-r, r-1]."""
    axis = get_int(view.attributes(index), "axis")
    if axis is None or not -rank <= axis < rank:
        return None
    return axis + rank if axis < 0 else axis


def _static_inputs(view: ModelView, index: int) -> list[tuple[str, tuple[int, ...]]] | None:
    """(name, static shape) of every input, or None when one is unknown or the ranks differ (X.C2)."""
    shapes = []
    for name in _inputs(view, index):
        shape = view.shape_of(name)
        if shape is None:
            return None
        shapes.append((name, shape))
    if not shapes or len({len(s) for _, s in shapes}) > 1:
        return None
    return shapes


def input_count(view: ModelView, index: int) -> Iterator[Violation]:
    count = len(_inputs(view, index))
    if not 1 <= count <= _MAX_INPUTS:
        yield Violation(
            f"{count} input tensor(s); SONNX Concat requires between 1 and 2^31-1 inputs",
            actual=count,
            expected=[1, _MAX_INPUTS],
        )


def inputs_same_rank(view: ModelView, index: int) -> Iterator[Violation]:
    ranks = {}
    for name in _inputs(view, index):
        r = _rank(view, name)
        if r is not None:
            ranks[name] = r
    if len(set(ranks.values())) > 1:
        listing = ", ".join(f"'{n}' has rank {r}" for n, r in ranks.items())
        first = next(iter(ranks.values()))
        yield Violation(
            f"{listing}; SONNX Concat requires every input to have the same rank",
            tensor=next(n for n, r in ranks.items() if r != first),
            actual=ranks,
        )


def inputs_same_shape_off_axis(view: ModelView, index: int) -> Iterator[Violation]:
    shapes = _static_inputs(view, index)
    if shapes is None:
        return
    axis = _axis(view, index, len(shapes[0][1]))
    if axis is None:
        return
    first_name, first = shapes[0]
    for name, shape in shapes[1:]:
        differing = [j for j in range(len(first)) if j != axis and shape[j] != first[j]]
        if differing:
            j = differing[0]
            yield Violation(
                f"input '{name}' is {list(shape)} and input '{first_name}' is {list(first)}: they differ on "
                f"axis {j}; SONNX Concat requires the same size on every axis but the concatenation axis "
                f"{axis}",
                tensor=name,
                actual=list(shape),
                expected=[d if k != axis else shape[k] for k, d in enumerate(first)],
            )


def _declared_y(view: ModelView, index: int) -> tuple[str, tuple[int | str | None, ...]] | None:
    outputs = view.outputs[index]
    if not outputs or not outputs[0]:
        return None
    declared = view.declared.get(outputs[0])
    if declared is None or declared.shape is None:
        return None
    return outputs[0], declared.shape


def output_rank(view: ModelView, index: int) -> Iterator[Violation]:
    y = _declared_y(view, index)
    inputs = _inputs(view, index)
    if y is None or not inputs:
        return
    r = _rank(view, inputs[0])
    name, shape = y
    if r is not None and len(shape) != r:
        yield Violation(
            f"Y '{name}' is declared with rank {len(shape)}; the inputs have rank {r} and SONNX Concat "
            "requires Y to have the same rank",
            tensor=name,
            actual=len(shape),
            expected=r,
        )


def _static_y(
    view: ModelView, index: int
) -> tuple[str, tuple[int, ...], list[tuple[str, tuple[int, ...]]], int] | None:
    """Y's name and declared static shape, the inputs' static shapes and the axis, when all are known and
    consistent in rank (otherwise the rank rules report)."""
    y = _declared_y(view, index)
    shapes = _static_inputs(view, index)
    if y is None or shapes is None:
        return None
    name, shape = y
    declared = view.declared[name].static_shape
    if declared is None or len(declared) != len(shapes[0][1]):
        return None
    axis = _axis(view, index, len(declared))
    if axis is None:
        return None
    return name, declared, shapes, axis


def output_shape_off_axis(view: ModelView, index: int) -> Iterator[Violation]:
    known = _static_y(view, index)
    if known is None:
        return
    name, declared, shapes, axis = known
    first_name, first = shapes[0]
    differing = [j for j in range(len(first)) if j != axis and declared[j] != first[j]]
    if differing:
        yield Violation(
            f"Y '{name}' is declared {list(declared)} and input '{first_name}' is {list(first)}: they differ "
            f"on axis {differing[0]}; SONNX Concat requires Y to have the inputs' size on every axis but the "
            f"concatenation axis {axis}",
            tensor=name,
            actual=list(declared),
            expected=[d if k != axis else declared[k] for k, d in enumerate(first)],
        )


def output_axis_size(view: ModelView, index: int) -> Iterator[Violation]:
    known = _static_y(view, index)
    if known is None:
        return
    name, declared, shapes, axis = known
    total = sum(shape[axis] for _, shape in shapes)
    if declared[axis] != total:
        sizes = " + ".join(str(shape[axis]) for _, shape in shapes)
        yield Violation(
            f"Y '{name}' has size {declared[axis]} on the concatenation axis {axis}; the inputs' sizes on "
            f"that axis sum to {total} ({sizes})",
            tensor=name,
            actual=declared[axis],
            expected=total,
        )
