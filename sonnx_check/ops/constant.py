"""Constant rules that the shared vocabulary cannot state (ops/constant/constant.md): the value is defined,
and C's declared type and shape are the value's. The type set is a vocabulary entry of rules/Constant.toml.

A Constant carries its value in exactly one of several alternative attributes (ONNX); sparse_value is
GR1's finding (the text's R2 restates it), and two value attributes at once are MODEL.onnx's.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from sonnx_check.view import ModelView, elem_type_name
from sonnx_check.violation import Violation

_A = onnx.AttributeProto
_T = onnx.TensorProto

# The dense forms of the value, with the element type and rank of the tensor each denotes (None: the
# tensor attribute carries both).
_DENSE = {
    "value": None,
    "value_float": (_T.FLOAT, False),
    "value_floats": (_T.FLOAT, True),
    "value_int": (_T.INT64, False),
    "value_ints": (_T.INT64, True),
    "value_string": (_T.STRING, False),
    "value_strings": (_T.STRING, True),
}
_EXPECTED_KIND = {
    "value": _A.TENSOR,
    "value_float": _A.FLOAT,
    "value_floats": _A.FLOATS,
    "value_int": _A.INT,
    "value_ints": _A.INTS,
    "value_string": _A.STRING,
    "value_strings": _A.STRINGS,
}


def value_defined(view: ModelView, index: int) -> Iterator[Violation]:
    attrs = view.attributes(index)
    if "sparse_value" in attrs or any(name in attrs for name in _DENSE):
        return
    yield Violation(
        "no value attribute; SONNX Constant requires its value to be defined (attribute value)",
        attribute="value",
        expected="value",
    )


def _value_type(attrs: dict[str, onnx.AttributeProto]) -> tuple[int, tuple[int, ...]] | None:
    """(element type, shape) of the tensor the node's single dense value attribute denotes, or None."""
    present = [name for name in _DENSE if name in attrs]
    if len(present) != 1 or "sparse_value" in attrs:
        return None  # none (R1), several (MODEL.onnx) or sparse (GR1)
    (name,) = present
    a = attrs[name]
    if a.type != _EXPECTED_KIND[name]:
        return None  # a wrong-typed attribute is MODEL.onnx's finding
    if name == "value":
        return a.t.data_type, tuple(a.t.dims)
    dense = _DENSE[name]
    assert dense is not None  # only "value" has none, handled above
    elem, listed = dense
    if not listed:
        return elem, ()
    values = a.floats if name == "value_floats" else a.ints if name == "value_ints" else a.strings
    return elem, (len(values),)


def output_like_value(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    if not outputs or not outputs[0]:
        return
    name = outputs[0]
    declared = view.declared.get(name)
    value = _value_type(view.attributes(index))
    if declared is None or value is None:
        return
    elem, shape = value
    if declared.elem_type and declared.elem_type != elem:
        yield Violation(
            f"C '{name}' is declared {declared.type_name}; the value attribute is {elem_type_name(elem)} and "
            "SONNX Constant requires C to have its type",
            tensor=name,
            actual=declared.type_name,
            expected=elem_type_name(elem),
        )
    if declared.static_shape is not None and declared.static_shape != shape:
        yield Violation(
            f"C '{name}' is declared {list(declared.static_shape)}; the value attribute is {list(shape)} and "
            "SONNX Constant requires C to have its shape",
            tensor=name,
            actual=list(declared.static_shape),
            expected=list(shape),
        )
