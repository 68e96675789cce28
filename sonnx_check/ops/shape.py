"""Shape rule that the shared vocabulary cannot state (ops/shape/shape.md): Y is 1-D, of the length start and
end select. Its int64 type is the vocabulary's type rule (rules/Shape.toml)."""

from __future__ import annotations

from collections.abc import Iterator

from sonnx_check.checks.attributes import get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation


def _length(rank: int, start: int | None, end: int | None) -> int:
    """The number of dimensions start:end selects, clamped as the text states (end omitted: the rank)."""
    s = 0 if start is None else start + rank if start < 0 else start
    s = min(max(s, 0), rank)
    e = rank if end is None else end + rank if end < 0 else end
    e = min(e, rank)
    return max(e - s, 0)


def output_length(view: ModelView, index: int) -> Iterator[Violation]:
    inputs, outputs = view.inputs[index], view.outputs[index]
    if not inputs or not outputs or not outputs[0]:
        return
    x = view.type_of(inputs[0])
    declared = view.declared.get(outputs[0])
    if x is None or x.shape is None or declared is None or declared.shape is None:
        return
    attrs = view.attributes(index)
    start, end = get_int(attrs, "start"), get_int(attrs, "end")
    if ("start" in attrs and start is None) or ("end" in attrs and end is None):
        return  # a wrong-typed attribute is MODEL.onnx's finding
    name = outputs[0]
    length = _length(len(x.shape), start, end)
    if len(declared.shape) != 1 or (declared.static_shape is not None and declared.static_shape[0] != length):
        yield Violation(
            f"Y '{name}' is declared {list(declared.shape)}; X has rank {len(x.shape)}, and start={start}, "
            f"end={end} select {length} dimension(s): SONNX Shape requires Y to be 1-D of shape [{length}]",
            tensor=name,
            actual=list(declared.shape),
            expected=[length],
        )
