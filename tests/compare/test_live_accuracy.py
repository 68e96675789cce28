"""No false positive on a correct runtime: the installed onnxruntime's inexact operators on random data stay
within their annexes' bounds (CI runs this on the oldest supported onnxruntime and on the newest).

A finding here is either a real departure of a new onnxruntime (look at it, then declare it in the operator's
rules/<Op>.toml, [[comparison.departure]]) or a bound that is too tight (the default bounds are the annexes'
most permissive ones: the operator's declared bound, compare/ops/<op>.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded

pytest.importorskip("onnxruntime")

RANDOM = CompareOptions(datasets=("random",), node_edges=False)
SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"


def _weights(name: str, shape: tuple[int, ...], dtype: type, seed: int) -> onnx.TensorProto:
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return numpy_helper.from_array(values, name)


def _single(node: onnx.NodeProto, inputs, output_shape, elem, initializers=(), opset: int = 17):
    graph = h.make_graph(
        [node],
        "g",
        inputs,
        [h.make_tensor_value_info(node.output[0], elem, output_shape)],
        list(initializers),
    )
    return h.make_model(
        graph, opset_imports=[h.make_opsetid("", opset)], ir_version=8
    )  # onnxruntime 1.21: IR <= 10


def conv(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node(
        "Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
        dilations=[1, 1], group=1, auto_pad="NOTSET",
    )  # fmt: skip
    weights = [_weights("w", (16, 16, 3, 3), dtype, 1), _weights("b", (16,), dtype, 2)]
    return _single(
        node, [h.make_tensor_value_info("x", elem, [1, 16, 20, 20])], [1, 16, 20, 20], elem, weights
    )


def matmul(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node("MatMul", ["a", "b"], ["y"])
    inputs = [h.make_tensor_value_info("a", elem, [64, 96])]
    return _single(node, inputs, [64, 48], elem, [_weights("b", (96, 48), dtype, 3)])


def gemm(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=1.0, beta=1.0, transA=0, transB=0)
    weights = [_weights("b", (96, 48), dtype, 4), _weights("c", (32, 48), dtype, 5)]
    return _single(node, [h.make_tensor_value_info("a", elem, [32, 96])], [32, 48], elem, weights)


def softmax(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node("Softmax", ["x"], ["y"], axis=1)
    return _single(node, [h.make_tensor_value_info("x", elem, [256, 10])], [256, 10], elem)


def exp(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node("Exp", ["x"], ["y"])
    return _single(node, [h.make_tensor_value_info("x", elem, [64, 64])], [64, 64], elem)


def batchnorm(dtype: type, elem: int) -> onnx.ModelProto:
    node = h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5, momentum=0.9,
                       training_mode=0)  # fmt: skip
    rng = np.random.default_rng(6)
    params = [
        numpy_helper.from_array(rng.uniform(0.5, 2, 8).astype(dtype), "s"),
        numpy_helper.from_array(rng.standard_normal(8).astype(dtype), "b"),
        numpy_helper.from_array(rng.standard_normal(8).astype(dtype), "m"),
        numpy_helper.from_array(rng.uniform(0.1, 3, 8).astype(dtype), "v"),
    ]
    x = h.make_tensor_value_info("x", elem, [2, 8, 10, 10])
    return _single(node, [x], [2, 8, 10, 10], elem, params, opset=15)


BUILDERS = {"Conv": conv, "MatMul": matmul, "Gemm": gemm, "Softmax": softmax, "Exp": exp,
            "BatchNormalization": batchnorm}  # fmt: skip
TYPES = {"float": (np.float32, T.FLOAT), "double": (np.float64, T.DOUBLE)}


@pytest.mark.parametrize("type_name", list(TYPES))
@pytest.mark.parametrize("op_type", list(BUILDERS))
def test_a_correct_runtime_on_random_data_is_within_every_bound(op_type: str, type_name: str) -> None:
    dtype, elem = TYPES[type_name]
    result = compare_loaded(BUILDERS[op_type](dtype, elem), RANDOM)

    if result.comparison["status"] == "not-compared":  # the CPU provider lacks some double kernels (Conv)
        pytest.skip(f"{op_type} {type_name}: {result.comparison.get('reason', '')}")
    [node] = result.comparison["nodes"]
    assert not [f.message for f in result.findings if f.rule == "RUNTIME.divergence"]
    [output] = node["outputs"]
    assert output["accuracy"]["margin"] <= 1


@pytest.mark.parametrize("sample", ["conforming/small_cnn.onnx", "conforming/residual_cnn.onnx"])
def test_the_sample_cnns_compare_every_node_without_a_divergence_on_random_data(sample: str) -> None:
    result = compare_loaded(onnx.load(SAMPLES / sample), RANDOM)

    assert not [f.message for f in result.findings if f.rule.startswith("RUNTIME.")]
    assert all(n["status"] == "match" for n in result.comparison["nodes"])
