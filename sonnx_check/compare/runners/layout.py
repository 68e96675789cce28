"""Stand-in for compare/backend_layout.py (helper i19-suite) until it lands: the three calls the command and
saved-outputs runners make on backend-test folders."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

MAX_OUTPUT_BYTES = 2**34  # a TensorProto claiming more is not read


def write_inputs(folder: Path, values: Sequence[tuple[str, np.ndarray]]) -> None:
    folder.mkdir(mode=0o700)
    for position, (name, value) in enumerate(values):
        tensor = numpy_helper.from_array(np.asarray(value), name)
        (folder / f"input_{position}.pb").write_bytes(tensor.SerializeToString())


def read_inputs(folder: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    out = {}
    for position, name in enumerate(names):
        tensor = onnx.TensorProto.FromString((folder / f"input_{position}.pb").read_bytes())
        out[name] = numpy_helper.to_array(tensor)
    return out


def read_output(path: Path, declared: onnx.ValueInfoProto) -> tuple[str | None, np.ndarray | None]:
    """(problem, value): the problem a sentence fragment ("is missing", "is not a TensorProto: ...")."""
    if not path.is_file():
        return "is missing", None
    try:
        tensor = onnx.TensorProto.FromString(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        return f"is not a TensorProto ({type(exc).__name__})", None
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return "refers to external data, which is not read", None
    kind = declared.type.tensor_type
    if kind.elem_type and tensor.data_type != kind.elem_type:
        return (
            f"has type {_type_name(tensor.data_type)} where the model declares {_type_name(kind.elem_type)}",
            None,
        )
    if kind.HasField("shape") and all(d.HasField("dim_value") for d in kind.shape.dim):
        expected = [d.dim_value for d in kind.shape.dim]
        if list(tensor.dims) != expected:
            return f"has shape {list(tensor.dims)} where the model's shape is {expected}", None
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return f"has type {_type_name(tensor.data_type)}, which is not a tensor type sonnx-check reads", None
    if any(d < 0 for d in tensor.dims) or math.prod(tensor.dims) * itemsize > MAX_OUTPUT_BYTES:
        return f"claims an impossible shape {list(tensor.dims)}", None
    try:
        return None, numpy_helper.to_array(tensor)
    except Exception as exc:  # noqa: BLE001 - data that does not match its dims
        return f"cannot be read as a tensor ({type(exc).__name__}: {str(exc)[:200]})", None


def _type_name(data_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"#{data_type}"
