"""Softmax.R1, ArgMax.R4, Concat.R1: a negative axis written as the non-negative axis it names.

ONNX reads an axis a in [-r, -1] as a + r (counted from the back), r being the rank of the input, so writing
a + r renames the same axis: the node computes the same thing, and onnxruntime normalises the attribute the
same way before any kernel runs. Only these three rules forbid a negative axis; Flatten, Slice and Unsqueeze
accept one (their ranges include negatives), so nothing is rewritten there. The rank must be known (declared
or inferred); an axis outside [-r, -1] is another rule's finding (axis.C1/C2) and is left to a person.
"""

from __future__ import annotations

from sonnx_check.checks.attributes import get_int
from sonnx_check.fix.nodes import attributes_of, set_attribute
from sonnx_check.fix.outcome import NotFixed, Rewrite
from sonnx_check.view import ModelView

# Rule -> the operator whose axis it holds non-negative. A rule whose axis counts another rank (an output's,
# as Unsqueeze's does) would need its own rank here: hence a list, not every attribute_range rule found.
AXIS_RULES = {"Softmax.R1": "Softmax", "ArgMax.R4": "ArgMax", "Concat.R1": "Concat"}
AXIS_OPS = frozenset(AXIS_RULES.values())


def input_rank(view: ModelView, index: int) -> int | str:
    """The rank the axis counts: X's (every input's, for Concat), or why it is not known."""
    node = view.nodes[index]
    names = list(node.input) if node.op_type == "Concat" else list(node.input[:1])
    ranks = set()
    for name in names:
        tt = view.type_of(name) if name else None
        if tt is not None and tt.shape is not None:
            ranks.add(len(tt.shape))
    if len(ranks) > 1:
        return f"the inputs have different ranks {sorted(ranks)} ({node.op_type}.X.C2's finding)"
    if not ranks:
        return "the rank of the input is not known (declare its shape)"
    return ranks.pop()


def non_negative(axis: int, rank: int) -> int | None:
    """The non-negative form of ``axis`` for a tensor of ``rank``, or None when it names no axis."""
    return axis + rank if -rank <= axis < 0 else None


def non_negative_axis(view: ModelView, index: int, rule: str) -> Rewrite | NotFixed:
    node, ref = view.nodes[index], view.refs[index]
    axis = get_int(attributes_of(node), "axis")
    if axis is None or axis >= 0:
        return NotFixed(rule, "axis is not a negative integer", ref)
    rank = input_rank(view, index)
    if isinstance(rank, str):
        return NotFixed(rule, rank, ref)
    new = non_negative(axis, rank)
    if new is None:
        reason = f"axis={axis} names no axis of a rank-{rank} input; choose the axis by hand"
        return NotFixed(rule, reason, ref)
    set_attribute(node, "axis", new)
    return Rewrite(rule, f"axis={axis} replaced by axis={new}, the same axis of a rank-{rank} input", ref)
