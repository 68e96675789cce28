"""Reading node attributes defensively: a wrong-typed attribute is MODEL.onnx's finding, so operator rules
treat it as unreadable (None) instead of crashing or double-reporting."""

from __future__ import annotations

import onnx

_A = onnx.AttributeProto


def find(node: onnx.NodeProto, name: str) -> onnx.AttributeProto | None:
    for attribute in node.attribute:
        if attribute.name == name:
            return attribute
    return None


def get_int(node: onnx.NodeProto, name: str) -> int | None:
    a = find(node, name)
    return a.i if a is not None and a.type == _A.INT else None


def get_ints(node: onnx.NodeProto, name: str) -> list[int] | None:
    a = find(node, name)
    return list(a.ints) if a is not None and a.type == _A.INTS else None


def get_str(node: onnx.NodeProto, name: str) -> str | None:
    a = find(node, name)
    if a is None or a.type != _A.STRING:
        return None
    return a.s.decode("utf-8", errors="replace")


# Defaults that ONNX documents in prose rather than in the schema (the schema has no default_value for them).
DOCUMENTED_DEFAULTS = {
    "dilations": "1 along each spatial axis",
    "strides": "1 along each spatial axis",
    "pads": "0 at the beginning and end of each spatial axis",
    "kernel_shape": "inferred from the weights",
}


def default_text(schema_attribute: onnx.defs.OpSchema.Attribute) -> str | None:
    """The default an absent attribute takes, as the user would write it, or None when none is known."""
    default = schema_attribute.default_value
    if default is None or default.type == _A.UNDEFINED:
        return DOCUMENTED_DEFAULTS.get(schema_attribute.name)
    value = onnx.helper.get_attribute_value(default)
    if isinstance(value, bytes):
        return repr(value.decode("utf-8", errors="replace"))
    return repr(value)
