"""GR4 / MaxPool.R2: write every attribute left to its default with the value the default stands for.

A default is only written when its value is certain: the schema's ``default_value`` of the version the node
resolves to, or, for the convolution and pooling family, the defaults ONNX documents in prose (stride and
dilation 1, zero padding, the kernel from the weights). An attribute whose absence has a meaning of its own
(Split's ``num_outputs``, Shape's ``end``, ConvTranspose's ``output_shape``) is left to a person.
"""

from __future__ import annotations

import onnx
from onnx import helper

from sonnx_check.checks.attributes import get_ints, get_str
from sonnx_check.fix.axes import AXIS_OPS, input_rank, non_negative
from sonnx_check.fix.nodes import attributes_of
from sonnx_check.fix.outcome import NotFixed, Rewrite
from sonnx_check.view import ModelView

_A = onnx.AttributeProto
# Operators whose spatial attributes have the documented (prose) defaults below.
SPATIAL_OPS = frozenset(
    {"AveragePool", "Conv", "ConvInteger", "ConvTranspose", "DeformConv", "LpPool", "MaxPool", "QLinearConv"}
)
# Operators whose input 1 is a weight tensor W of shape (M, C/group, k1, k2, ...) that fixes kernel_shape.
WEIGHTED_OPS = {"Conv": 1, "ConvInteger": 1, "ConvTranspose": 1, "DeformConv": 1, "QLinearConv": 3}


def fill_defaults(view: ModelView, index: int, rule: str) -> tuple[Rewrite | None, list[NotFixed]]:
    """Add every missing attribute of node ``index`` whose default is certain; report the others."""
    node = view.nodes[index]
    ref = view.refs[index]
    schema = view.schema(index)
    if schema is None:
        return None, [NotFixed(rule, "the operator's schema is unknown, so its defaults are too", ref)]
    present = {a.name for a in node.attribute}
    added: list[str] = []
    left: list[NotFixed] = []
    for name in sorted(n for n in schema.attributes if n not in present):
        value = _default(view, index, schema.attributes[name])
        if isinstance(value, str):
            left.append(NotFixed(rule, f"attribute {name} not written: {value}", ref))
            continue
        note = _non_negative_axis(view, index, value)
        node.attribute.append(value)
        added.append(f"{name}={_show(value)}{note}")
    if not added:
        return None, left
    version = f"{schema.name}-{schema.since_version}"
    return Rewrite(rule, f"set {', '.join(added)} (the defaults of {version}, now explicit)", ref), left


def _non_negative_axis(view: ModelView, index: int, value: _A) -> str:
    """Write a negative default axis (Softmax's -1) in the non-negative form the profile asks for
    (fix/axes.py), so that making the default explicit does not create a Softmax.R1 finding. Returns the
    note for the report ('' when the value is written as it is)."""
    node = view.nodes[index]
    if value.name != "axis" or value.type != _A.INT or value.i >= 0:
        return ""
    if node.op_type not in AXIS_OPS or view.domain(index):
        return ""
    rank = input_rank(view, index)
    new = non_negative(value.i, rank) if isinstance(rank, int) else None
    if new is None:
        return ""
    default, value.i = value.i, new
    return f" (ONNX's {default} for an input of rank {rank})"


def _default(view: ModelView, index: int, schema_attribute: onnx.defs.OpSchema.Attribute) -> _A | str:
    """The attribute to add, or why none can be."""
    node = view.nodes[index]
    name = schema_attribute.name
    default = schema_attribute.default_value
    if default is not None and default.type != _A.UNDEFINED:
        attribute = _A()
        attribute.CopyFrom(default)
        attribute.name = name
        return attribute
    if node.op_type not in SPATIAL_OPS or view.domain(index):
        return "it has no default value (its absence has a meaning of its own); set it by hand"
    if name == "kernel_shape":
        kernel = _kernel_from_weights(view, index)
        if kernel is None:
            return "the kernel comes from the weights, whose shape is not static"
        return helper.make_attribute(name, kernel)
    n = _spatial_axes(view, index)
    if n is None:
        return "the number of spatial axes is unknown (no kernel_shape and no static shape for X)"
    if name in ("strides", "dilations"):
        return helper.make_attribute(name, [1] * n)
    if name == "output_padding":
        return helper.make_attribute(name, [0] * n)
    if name == "pads":
        auto_pad = get_str(attributes_of(node), "auto_pad")
        if auto_pad not in (None, "NOTSET"):
            return f"auto_pad={auto_pad!r} computes the padding from X's shape (pads must stay absent)"
        return helper.make_attribute(name, [0] * (2 * n))
    return "it has no default value (its absence has a meaning of its own); set it by hand"


def _kernel_from_weights(view: ModelView, index: int) -> list[int] | None:
    node = view.nodes[index]
    position = WEIGHTED_OPS.get(node.op_type)
    if position is None or len(node.input) <= position or not node.input[position]:
        return None
    shape = view.shape_of(node.input[position])
    return list(shape[2:]) if shape is not None and len(shape) > 2 else None


def _spatial_axes(view: ModelView, index: int) -> int | None:
    node = view.nodes[index]
    kernel = get_ints(attributes_of(node), "kernel_shape")
    if kernel:
        return len(kernel)
    weights = _kernel_from_weights(view, index)
    if weights is not None:
        return len(weights)
    x_shape = view.shape_of(node.input[0]) if node.input else None
    return len(x_shape) - 2 if x_shape is not None and len(x_shape) > 2 else None


def _show(attribute: _A) -> str:
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", errors="replace"))
    if isinstance(value, onnx.TensorProto):
        return f"tensor {value.name or ''}".strip()
    return repr(value)
