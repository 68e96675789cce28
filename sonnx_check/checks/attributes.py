"""Reading node attributes defensively: a wrong-typed attribute is MODEL.onnx's finding, so operator rules
treat it as unreadable (None) instead of crashing or double-reporting."""

from __future__ import annotations

from collections.abc import Mapping

import onnx

_A = onnx.AttributeProto


Attributes = Mapping[str, onnx.AttributeProto]


def get_int(attrs: Attributes, name: str) -> int | None:
    a = attrs.get(name)
    return a.i if a is not None and a.type == _A.INT else None


def get_ints(attrs: Attributes, name: str) -> list[int] | None:
    a = attrs.get(name)
    return a.ints[:] if a is not None and a.type == _A.INTS else None  # a new list (slicing: one C call)


def get_float(attrs: Attributes, name: str) -> float | None:
    a = attrs.get(name)
    return a.f if a is not None and a.type == _A.FLOAT else None


def get_str(attrs: Attributes, name: str) -> str | None:
    a = attrs.get(name)
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
