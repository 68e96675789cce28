"""Test models for the comparison: the seed 003 MaxPool examples and a few small graphs, built with
onnx.helper. Expected values are the seed's, with the errata of docs/readings.md#errata-in-the-examples
applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from seed_data import REAL_8X8, REAL_8X8_INDICES

OPSET = 22
_NP_TO_ONNX = {
    np.dtype(np.float32): T.FLOAT,
    np.dtype(np.float64): T.DOUBLE,
    np.dtype(np.float16): T.FLOAT16,
    np.dtype(np.int8): T.INT8,
    np.dtype(np.uint8): T.UINT8,
    np.dtype(np.int16): T.INT16,
    np.dtype(np.int32): T.INT32,
    np.dtype(np.int64): T.INT64,
}


def elem(dtype: np.dtype | type) -> int:
    return _NP_TO_ONNX[np.dtype(dtype)]


def finish(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="sonnx-check-tests")
    model.ir_version = 10  # onnxruntime 1.19+ reads IR 10
    return model


def maxpool_node(
    x: str,
    outputs: Sequence[str],
    name: str,
    *,
    kernel: Sequence[int] = (2, 2),
    pads: Sequence[int] = (0, 0, 0, 0),
    strides: Sequence[int] = (1, 1),
    dilations: Sequence[int] = (1, 1),
) -> onnx.NodeProto:
    """A MaxPool node with every attribute explicit (SONNX R2)."""
    return h.make_node(
        "MaxPool", [x], list(outputs), name=name, auto_pad="NOTSET", ceil_mode=0, dilations=list(dilations),
        kernel_shape=list(kernel), pads=list(pads), storage_order=0, strides=list(strides),
    )  # fmt: skip


def maxpool(
    x_shape: Sequence[int | str],
    dtype: np.dtype | type = np.float32,
    *,
    kernel: Sequence[int] = (3, 3),
    pads: Sequence[int] = (0, 0, 0, 0),
    strides: Sequence[int] = (1, 1),
    dilations: Sequence[int] = (1, 1),
    indices: bool = True,
    name: str = "p",
    x_name: str = "X",
) -> onnx.ModelProto:
    """One MaxPool node, opset 22, every attribute explicit (SONNX R2), outputs Y (+ Indices)."""
    outputs = ["Y", "Indices"] if indices else ["Y"]
    node = maxpool_node(x_name, outputs, name, kernel=kernel, pads=pads, strides=strides, dilations=dilations)
    out_info = [h.make_tensor_value_info("Y", elem(dtype), None)]
    if indices:
        out_info.append(h.make_tensor_value_info("Indices", T.INT64, None))
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info(x_name, elem(dtype), list(x_shape))], out_info
    )
    return finish(graph)


def max_model(
    shapes: Sequence[Sequence[int]], dtype: np.dtype | type = np.float32, opset: int = 13
) -> onnx.ModelProto:
    names = [f"a{i}" for i in range(len(shapes))]
    node = h.make_node("Max", names, ["Y"], name="m")
    inputs = [h.make_tensor_value_info(n, elem(dtype), list(s)) for n, s in zip(names, shapes, strict=True)]
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("Y", elem(dtype), None)])
    return finish(graph, opset)


def cos_then_maxpool(channels: int = 2) -> onnx.ModelProto:
    """Two nodes, one without a reference kernel (Cos: outside the profile, so the reference will never
    have one): per-node localisation and partial coverage."""
    cos = h.make_node("Cos", ["X"], ["R"], name="c")
    pool = maxpool_node("R", ["Y"], "p")
    graph = h.make_graph(
        [cos, pool],
        "g",
        [h.make_tensor_value_info("X", T.FLOAT, [1, channels, 4, 4])],
        [h.make_tensor_value_info("Y", T.FLOAT, None)],
    )
    return finish(graph)


def chain(op_type: str, count: int, shape: Sequence[int], *, all_outputs: bool = False) -> onnx.ModelProto:
    """``count`` chained ``op_type`` nodes on float32 ``x`` (Max also takes ``x`` as its second input): the
    shape of a model whose every tensor is within --max-elements while all of them together are not."""
    nodes = []
    for i in range(count):
        inputs = ["x" if i == 0 else f"t{i - 1}"] + (["x"] if op_type == "Max" else [])
        nodes.append(h.make_node(op_type, inputs, [f"t{i}"], name=f"{op_type.lower()}{i}"))
    outputs = [f"t{i}" for i in range(count)] if all_outputs else [f"t{count - 1}"]
    graph = h.make_graph(
        nodes, "chain", [h.make_tensor_value_info("x", T.FLOAT, list(shape))],
        [h.make_tensor_value_info(name, T.FLOAT, list(shape)) for name in outputs],
    )  # fmt: skip
    return finish(graph, 13)


def matmul_chain(count: int = 100, size: int = 2048) -> onnx.ModelProto:
    """``count`` chained MatMuls of ``size`` x ``size``, each squaring the previous result: a model of a
    few hundred bytes that keeps onnxruntime busy for tens of seconds (about 17 GFLOP per MatMul), and whose
    session is created at once (no weight to prepack)."""
    nodes = [
        h.make_node("MatMul", [f"m{i - 1}" if i else "x"] * 2, [f"m{i}"], name=f"mm{i}") for i in range(count)
    ]
    graph = h.make_graph(
        nodes, "chain", [h.make_tensor_value_info("x", T.FLOAT, [size, size])],
        [h.make_tensor_value_info(f"m{count - 1}", T.FLOAT, [size, size])],
    )  # fmt: skip
    return finish(graph, 13)


def save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    path = folder / name
    onnx.save(model, str(path))
    return path


@dataclass(frozen=True)
class SeedExample:
    name: str
    x: np.ndarray  # N x C x H x W
    kernel: tuple[int, int]
    pads: tuple[int, int, int, int]
    y: np.ndarray
    indices: np.ndarray

    def model(self, *, indices: bool = True) -> onnx.ModelProto:
        return maxpool(self.x.shape, self.x.dtype, kernel=self.kernel, pads=self.pads, indices=indices)


def _t(rows: list[list[float]], dtype: type) -> np.ndarray:
    return np.array(rows, dtype=dtype).reshape(1, 1, len(rows), len(rows[0]))


INF = float("inf")


def _from_indices(x: np.ndarray, indices: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    idx = _t(indices, np.int64)
    return x.reshape(-1)[idx], idx


def seed_examples() -> list[SeedExample]:
    """Every MaxPool example of seed 003 (int8 Example 4 with the corrected Indices[1,0] = 0)."""
    out: list[SeedExample] = []

    def add(name: str, x: np.ndarray, kernel, pads, indices: list[list[int]]) -> None:
        y, idx = _from_indices(x, indices)
        y = np.where(np.isnan(y), -np.inf, y).astype(x.dtype) if x.dtype.kind == "f" else y
        out.append(SeedExample(name, x, tuple(kernel), tuple(pads), y, idx))

    add("real-8x8", _t(REAL_8X8, np.float32), (3, 3), (0, 0, 0, 0), REAL_8X8_INDICES)
    add(
        "float-1",
        _t(
            [
                [1.70792822, 1.59383029, 2.22933891],
                [1.39774388, 2.03411151, 3.15139065],
                [2.81201102, 5.85721996, 3.55039159],
            ],
            np.float64,
        ),
        (2, 2),
        (0, 0, 0, 0),
        [[4, 5], [7, 7]],
    )
    add(
        "float-2",
        _t(
            [
                [2.41529657, 0.12586645, 5.17877496],
                [5.82770299, 3.77328965, 3.51988829],
                [1.40679595, 3.95043140, -1.37421443],
            ],
            np.float64,
        ),
        (2, 2),
        (1, 0, 1, 0),
        [[0, 2], [3, 2], [3, 7], [7, 7]],
    )
    add(
        "float-3",
        _t(
            [[-INF, -INF, 4.56432533], [-INF, -INF, 2.55354471], [2.83691720, 3.46789489, 5.23979851]],
            np.float64,
        ),
        (2, 2),
        (0, 0, 0, 0),
        [[0, 2], [7, 8]],
    )
    add(
        "float-4",
        _t(
            [
                [-INF, 9.57875561, 4.56432533],
                [2.72844928, 3.54234851, 2.55354471],
                [2.83691720, 3.46789489, 5.23979851],
            ],
            np.float64,
        ),
        (2, 2),
        (1, 1, 1, 1),
        [[0, 1, 1, 2], [3, 1, 1, 2], [6, 4, 8, 8], [6, 7, 8, 8]],
    )
    add(
        "int-1",
        _t([[-12, -13, 5], [-14, -15, 6], [7, 8, -1]], np.int8),
        (2, 2),
        (0, 0, 0, 0),
        [[0, 5], [7, 7]],
    )
    add(
        "int-2",
        _t([[-128, -128, 5], [-128, -128, 6], [7, 8, -1]], np.int8),
        (2, 2),
        (0, 0, 0, 0),
        [[0, 5], [7, 7]],
    )
    add(
        "int-3",
        _t([[1, 2, 0], [0, 3, 5], [-2, 5, 6]], np.int8),
        (2, 2),
        (0, 1, 1, 1),
        [[0, 4, 5, 5], [3, 7, 8, 8], [6, 7, 8, 8]],
    )
    add(
        "int-4",
        _t([[-128, -127, 5], [-128, -127, 6], [7, 8, -128]], np.int8),
        (2, 2),
        (1, 1, 1, 1),
        [[0, 1, 2, 2], [0, 1, 5, 5], [6, 7, 7, 5], [6, 7, 7, 8]],
    )
    add(
        "uint8-5",
        _t([[0, 1, 5], [1, 1, 6], [7, 8, 0]], np.uint8),
        (2, 2),
        (1, 1, 1, 1),
        [[0, 1, 2, 2], [3, 1, 5, 5], [6, 7, 7, 5], [6, 7, 7, 8]],
    )
    return out


def example(name: str) -> SeedExample:
    return next(e for e in seed_examples() if e.name == name)
