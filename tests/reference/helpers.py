"""Exact comparison and one-node models for the reference tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper as h
from onnx import numpy_helper

ELEM = {
    np.dtype(np.float16): onnx.TensorProto.FLOAT16,
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.float64): onnx.TensorProto.DOUBLE,
    np.dtype(np.int8): onnx.TensorProto.INT8,
    np.dtype(np.uint8): onnx.TensorProto.UINT8,
}


def bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of ``a`` (so +0 and -0 differ), every NaN folded into one pattern."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return a
    canonical = np.where(np.isnan(a), np.array(np.nan, dtype=a.dtype), a)
    return canonical.view(f"u{a.dtype.itemsize}")


def assert_identical(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(bits(actual), bits(expected))


def maxpool_node_model(x: np.ndarray, kernel, pads, strides=(1, 1), dilations=(1, 1)) -> onnx.ModelProto:
    node = h.make_node(
        "MaxPool", ["X"], ["Y", "Indices"], auto_pad="NOTSET", ceil_mode=0, dilations=list(dilations),
        kernel_shape=list(kernel), pads=list(pads), storage_order=0, strides=list(strides),
    )  # fmt: skip
    elem = ELEM[x.dtype]
    graph = h.make_graph(
        [node],
        "seed",
        [h.make_tensor_value_info("X", elem, x.shape)],
        [
            h.make_tensor_value_info("Y", elem, None),
            h.make_tensor_value_info("Indices", onnx.TensorProto.INT64, None),
        ],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])


def max_node_model(*arrays: np.ndarray, as_initializer: int | None = None) -> onnx.ModelProto:
    names = [f"A{k}" for k in range(len(arrays))]
    elem = onnx.helper.np_dtype_to_tensor_dtype(arrays[0].dtype)
    inputs = [
        h.make_tensor_value_info(n, elem, a.shape)
        for k, (n, a) in enumerate(zip(names, arrays, strict=True))
        if k != as_initializer
    ]
    inits = (
        [numpy_helper.from_array(arrays[as_initializer], names[as_initializer])]
        if as_initializer is not None
        else []
    )
    graph = h.make_graph(
        [h.make_node("Max", names, ["Y"])],
        "max",
        inputs,
        [h.make_tensor_value_info("Y", elem, None)],
        initializer=inits,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
