"""The operators a model computes its sizes with that the reference has no kernel for (Cast, Gather,
Transpose, Squeeze, Concat, NonZero...), run by onnx's own evaluator while a dataset's sizes are learnt
(revealed_sizes.py), so a size computed through them is learnt too.

Their values only size the plan, they are never compared. onnx's evaluator checks no budget, so each
output's size is bounded from the inputs' shapes (and, where it is their values, from those: Expand's
shape, Tile's repeats) and checked against --max-elements before the operator runs; an operator whose
output cannot be bounded that way (Resize, Pad, control flow, another domain) is not run, and the sizes
past it stay unknown."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

from sonnx_check.reference.errors import BudgetExceededError, ReferenceError
from sonnx_check.shapes import NotBroadcastable, broadcast_shape

Inputs = Sequence["np.ndarray | None"]

_SAME_SIZE = frozenset(
    {"Cast", "CastLike", "Floor", "Ceil", "Round", "Neg", "Abs", "Sign", "Not", "Reciprocal", "Identity",
     "Sqrt", "Exp", "Log", "Relu", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Split",
     "Slice", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ArgMax", "ArgMin", "TopK",
     "IsNaN", "IsInf", "CumSum"}
)  # fmt: skip
# at most the first input's size (Reshape, Slice, TopK...: never more elements than their data)
_BROADCAST = frozenset(
    {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Min", "Max", "Equal", "Less", "LessOrEqual", "Greater",
     "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift", "Sum", "Mean"}
)  # fmt: skip


def _first(inputs: Inputs) -> int:
    return int(inputs[0].size) if inputs and inputs[0] is not None else 0


def _broadcast(inputs: Inputs) -> int:
    return math.prod(broadcast_shape([v.shape for v in inputs if v is not None]))


def _gather(node: onnx.NodeProto, inputs: Inputs) -> int:
    data, indices = inputs[0], inputs[1]
    if data is None or indices is None:
        raise IndexError("Gather without its data or indices")
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    axis = axis + data.ndim if axis < 0 else axis
    kept = math.prod(d for i, d in enumerate(data.shape) if i != axis) if data.ndim else 1
    return int(indices.size) * kept


def _values(value: np.ndarray | None) -> list[int]:
    """An integer input's values (a shape, repeats), as Python ints (their product is exact); at most 64
    of them (a rank beyond that is no model's, and a product over millions of values is no bound)."""
    if value is None or value.dtype.kind not in "iu" or value.size > 64:
        raise ReferenceError("a size operand that is not an integer tensor of at most 64 values")
    return [max(int(v), 0) for v in value.reshape(-1)]


def _bounds(op_type: str) -> Callable[[onnx.NodeProto, Inputs], int] | None:
    """How large the operator's largest output can be, given its inputs: None when it is not run here."""
    if op_type in _SAME_SIZE:
        return lambda node, inputs: _first(inputs)
    if op_type in _BROADCAST:
        return lambda node, inputs: _broadcast(inputs)
    bounded: dict[str, Callable[[onnx.NodeProto, Inputs], int]] = {
        "Shape": lambda node, inputs: len(inputs[0].shape) if inputs[0] is not None else 0,
        "Size": lambda node, inputs: 1,
        "Concat": lambda node, inputs: sum(int(v.size) for v in inputs if v is not None),
        "Gather": _gather,
        "NonZero": lambda node, inputs: max(
            _first(inputs) * (inputs[0].ndim if inputs[0] is not None else 0), 1
        ),
        "Expand": lambda node, inputs: math.prod(
            broadcast_shape([inputs[0].shape if inputs[0] is not None else (), _values(inputs[1])])
        ),
        "Tile": lambda node, inputs: _first(inputs) * math.prod(_values(inputs[1])),
        "ConstantOfShape": lambda node, inputs: math.prod(_values(inputs[0])),
        "Constant": lambda node, inputs: 0,  # its value is in the model already
    }
    return bounded.get(op_type)


def run_for_size(
    node: onnx.NodeProto,
    inputs: Inputs,
    max_elements: int | None,
    opsets: Mapping[str, int],
) -> list[np.ndarray] | None:
    """The node's outputs by onnx's evaluator, after checking their bound against ``max_elements``
    (BudgetExceededError); None when the operator is not one run here. ReferenceError when it fails."""
    if node.domain not in ("", "ai.onnx"):
        return None
    bound = _bounds(node.op_type)
    if bound is None:
        return None
    try:
        elements = bound(node, inputs)
    except NotBroadcastable as exc:
        raise ReferenceError(f"{node.op_type}: {exc}") from None
    except IndexError as exc:
        raise ReferenceError(f"{node.op_type}: an input it needs is missing") from exc
    if max_elements is not None and elements > max_elements:
        raise BudgetExceededError(f"{node.op_type}'s output", elements, max_elements)
    from onnx.reference import ReferenceEvaluator  # slow to import: only for models that need it

    feeds = {
        name: value for name, value in zip(node.input, inputs, strict=False) if name and value is not None
    }
    try:
        evaluator = ReferenceEvaluator(node, opsets={"": opsets.get("", helper.VERSION_TABLE[-1][2])})
        outputs = evaluator.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - what onnx's evaluator cannot compute stops the learning there
        raise ReferenceError(f"onnx's evaluator could not run {node.op_type}: {exc}") from None
    return [np.asarray(value) for value in outputs]
