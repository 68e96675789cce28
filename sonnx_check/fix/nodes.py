"""Reading and writing a node's attributes while --fix rewrites it."""

from __future__ import annotations

import onnx
from onnx import helper


def attributes_of(node: onnx.NodeProto) -> dict[str, onnx.AttributeProto]:
    """A fresh name -> attribute map: --fix mutates nodes, so ModelView's per-node cache would go stale."""
    return {a.name: a for a in node.attribute}


def set_attribute(node: onnx.NodeProto, name: str, value: object) -> None:
    """Replace the attribute where it stands (the node reads the same in a viewer), or add it."""
    new = helper.make_attribute(name, value)
    for attribute in node.attribute:
        if attribute.name == name:
            attribute.CopyFrom(new)
            return
    node.attribute.append(new)
