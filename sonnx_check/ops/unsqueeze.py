"""Unsqueeze rules that the shared vocabulary cannot state (ops/unsqueeze/unsqueeze.md): the values of a
constant axes tensor A and Y's shape. The other Unsqueeze rules are vocabulary entries of
rules/Unsqueeze.toml.

The rules read A only when it is a constant (an embedded initializer or a Constant node); the output rule
stays silent when A breaks A.C1 or A.C2, so one defect gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _axes(view: ModelView, index: int) -> tuple[str, list[int]] | None:
    """A's name and values when A is a 1-D integer constant."""
    inputs = view.inputs[index]
    if len(inputs) < 2 or not inputs[1]:
        return None
    values = view.int_list(inputs[1])
    return None if values is None else (inputs[1], values)


def _x_rank(view: ModelView, index: int) -> int | None:
    inputs = view.inputs[index]
    tt = view.type_of(inputs[0]) if inputs and inputs[0] else None
    return len(tt.shape) if tt is not None and tt.shape is not None else None


def _out_of_range(axes: list[int], out_rank: int) -> list[int]:
    return [a for a in axes if not -out_rank <= a < out_rank]


def _repeated(axes: list[int], out_rank: int) -> list[int]:
    normalised = [a + out_rank if a < 0 else a for a in axes if -out_rank <= a < out_rank]
    return sorted({a for a in normalised if normalised.count(a) > 1})


def axes_in_range(view: ModelView, index: int) -> Iterator[Violation]:
    a = _axes(view, index)
    rank = _x_rank(view, index)
    if a is None or rank is None:
        return
    name, axes = a
    out_rank = rank + len(axes)
    bad = _out_of_range(axes, out_rank)
    if bad:
        yield Violation(
            f"A '{name}' = {axes} holds {bad[0]}, outside [{-out_rank}, {out_rank - 1}] for Y of rank "
            f"{out_rank} (rank of X {rank} + {len(axes)} inserted axes)",
            tensor=name,
            actual=axes,
            expected=[-out_rank, out_rank - 1],
        )


def axes_unique(view: ModelView, index: int) -> Iterator[Violation]:
    a = _axes(view, index)
    rank = _x_rank(view, index)
    if a is None or rank is None:
        return
    name, axes = a
    repeated = _repeated(axes, rank + len(axes))
    if repeated:
        yield Violation(
            f"A '{name}' = {axes} designates axis {repeated[0]} of Y more than once (negative axes count "
            "from the end of Y); SONNX Unsqueeze requires every axis once",
            tensor=name,
            actual=axes,
        )


def output_shape(view: ModelView, index: int) -> Iterator[Violation]:
    inputs, outputs = view.inputs[index], view.outputs[index]
    a = _axes(view, index)
    x_shape = view.shape_of(inputs[0]) if inputs and inputs[0] else None
    name = outputs[0] if outputs and outputs[0] else None
    declared = view.declared.get(name) if name else None
    if a is None or x_shape is None or declared is None or declared.static_shape is None:
        return
    _, axes = a
    out_rank = len(x_shape) + len(axes)
    if _out_of_range(axes, out_rank) or _repeated(axes, out_rank):
        return  # A.C1 or A.C2's finding
    inserted = {ax + out_rank if ax < 0 else ax for ax in axes}
    dims = iter(x_shape)
    expected = [1 if k in inserted else next(dims) for k in range(out_rank)]
    if list(declared.static_shape) != expected:
        yield Violation(
            f"Y '{name}' is declared {list(declared.static_shape)}; X {list(x_shape)} with 1s inserted at "
            f"axes {sorted(inserted)} gives {expected}",
            tensor=name,
            actual=list(declared.static_shape),
            expected=expected,
        )
