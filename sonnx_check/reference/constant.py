"""Constant reference kernel (SONNX, based on Constant-13), written from ops/constant/constant.md.

C[i] = value[i] (Informal specification, every section): the tensor the attribute holds, bit for bit (the
float section keeps -0, the infinities and NaN). Following the declaration's reading of Constant.R1, the
dense ONNX shorthands value_float, value_floats, value_int and value_ints denote exactly the float or int64
scalar or 1-D tensor a ``value`` attribute would hold, and are accepted; value_string(s) give strings, which
the text does not list (Constant.types), and sparse_value is a sparse tensor (Constant.R2, GR1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.movement_common import attributes, require_declared_type

_VALUE_ATTRIBUTES = (
    "value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings",
    "sparse_value",
)  # fmt: skip


def constant_from_tensor(tensor: onnx.TensorProto, *, max_elements: int | None = None) -> np.ndarray:
    """The array a ``value`` tensor attribute holds; its size is checked before it is decoded."""
    ensure_within_budget("Constant output C", tuple(tensor.dims), max_elements)
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise ReferenceError("Constant whose value is stored as external data: not read by the reference")
    try:
        array = numpy_helper.to_array(tensor)
    except (ValueError, TypeError) as exc:
        raise ReferenceError(f"Constant value cannot be decoded: {exc}") from None
    require_declared_type("Constant", "C", array)
    return np.array(array, copy=True)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    if any(a is not None for a in inputs):
        raise ReferenceError("Constant takes no input")
    attrs = attributes(node)
    given = [name for name in _VALUE_ATTRIBUTES if name in attrs]
    if not given:
        raise OutsideProfileError("Constant without a value attribute (Constant.R1)")
    if len(given) > 1:
        raise ReferenceError(f"Constant with several value attributes {given}: ONNX requires exactly one")
    name = given[0]
    value = attrs[name]
    if name == "sparse_value":
        raise OutsideProfileError(
            "Constant with a sparse_value: sparse tensors are not supported (Constant.R2, GR1)"
        )
    if name in ("value_string", "value_strings"):
        raise OutsideProfileError(
            f"Constant with {name}: strings are not a type of the profile (Constant.types)"
        )
    if name == "value":
        return [constant_from_tensor(value, max_elements=max_elements)]
    # The shorthands: a scalar (value_float / value_int) or a 1-D tensor (value_floats / value_ints).
    dtype = np.float32 if name.startswith("value_float") else np.int64
    values = list(value) if name.endswith("s") else value
    ensure_within_budget("Constant output C", np.shape(values), max_elements)
    return [np.array(values, dtype=dtype)]
