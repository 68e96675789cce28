"""Regenerate the committed sample models, byte for byte.

Run: python sample_models/generate.py [--out DIR]     (default: this folder)

Conforming models (exit 0) and one small model per kind of violation; ``expected.toml`` lists the rule IDs
sonnx-check reports on each (tests/test_samples.py keeps both honest). Everything here is built with
onnx.helper from fixed values: no randomness, no timestamps, so the output never drifts. The real
framework exports in ``torch/`` come from ``export_torch.py`` instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
OPSET = 22
IR_VERSION = 10  # opset 22 needs no newer IR, and onnxruntime 1.21 (the oldest supported) reads IR 10
MAXPOOL_EXPLICIT = {
    "auto_pad": "NOTSET",
    "ceil_mode": 0,
    "dilations": [1, 1],
    "kernel_shape": [3, 3],
    "pads": [1, 1, 1, 1],
    "storage_order": 0,
    "strides": [2, 2],
}


def tensor(name: str, shape: Sequence[int | str] | None, elem: int = T.FLOAT) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def build(
    name: str,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    value_info: Sequence[onnx.ValueInfoProto] = (),
    initializers: Sequence[onnx.TensorProto] = (),
    opset: int = OPSET,
    extra_opsets: Sequence[tuple[str, int]] = (),
) -> onnx.ModelProto:
    graph = h.make_graph(
        nodes, name, inputs, outputs, initializer=list(initializers), value_info=list(value_info)
    )
    imports = [h.make_opsetid("", opset), *(h.make_opsetid(domain, v) for domain, v in extra_opsets)]
    model = h.make_model(graph, opset_imports=imports, producer_name="sonnx-check sample_models/generate.py")
    model.producer_version = "1"
    model.ir_version = IR_VERSION
    return model


def maxpool(x_shape, y_shape, *, name: str = "maxpool", elem: int = T.FLOAT, **attrs) -> onnx.ModelProto:
    """One MaxPool; ``attrs`` override MAXPOOL_EXPLICIT (None removes an attribute)."""
    merged = {k: v for k, v in {**MAXPOOL_EXPLICIT, **attrs}.items() if v is not None}
    node = h.make_node("MaxPool", ["X"], ["Y"], name="pool", **merged)
    return build(name, [node], [tensor("X", x_shape, elem)], [tensor("Y", y_shape, elem)])


def weights(name: str, shape: Sequence[int]) -> onnx.TensorProto:
    """Small deterministic weights: a ramp in [-0.5, 0.5), nothing random."""
    count = int(np.prod(shape))
    values = (np.arange(count, dtype=np.float32) % 17) / 17.0 - 0.5
    return numpy_helper.from_array(values.reshape(shape), name)


def conv(name: str, x: str, w: str, b: str, y: str, kernel: int) -> onnx.NodeProto:
    pad = kernel // 2
    return h.make_node(
        "Conv", [x, w, b], [y], name=name, auto_pad="NOTSET", dilations=[1, 1], group=1,
        kernel_shape=[kernel, kernel], pads=[pad] * 4, strides=[1, 1],
    )  # fmt: skip


# -- conforming --------------------------------------------------------------------------------------------


def small_cnn() -> onnx.ModelProto:
    """Conv -> Relu -> MaxPool (Y and Indices) -> Conv -> Relu -> Max with the pooled skip -> Flatten -> Gemm:
    profile operators only, every attribute explicit, every tensor declared with a static shape."""
    nodes = [
        conv("conv1", "image", "conv1.w", "conv1.b", "conv1", 3),
        h.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        h.make_node("MaxPool", ["relu1"], ["pool1", "pool1.indices"], name="pool1", **MAXPOOL_EXPLICIT),
        conv("conv2", "pool1", "conv2.w", "conv2.b", "conv2", 3),
        h.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        h.make_node("Max", ["relu2", "pool1"], ["skip"], name="skip"),
        h.make_node("Flatten", ["skip"], ["flat"], name="flatten", axis=1),
        h.make_node(
            "Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=0
        ),
    ]
    initializers = [
        weights("conv1.w", [8, 3, 3, 3]), weights("conv1.b", [8]),
        weights("conv2.w", [8, 8, 3, 3]), weights("conv2.b", [8]),
        weights("fc.w", [8 * 8 * 8, 10]), weights("fc.b", [1, 10]),  # draft Gemm: no transB, C is m x p
    ]  # fmt: skip
    value_info = [
        tensor("conv1", [1, 8, 16, 16]), tensor("relu1", [1, 8, 16, 16]), tensor("pool1", [1, 8, 8, 8]),
        tensor("conv2", [1, 8, 8, 8]), tensor("relu2", [1, 8, 8, 8]), tensor("skip", [1, 8, 8, 8]),
        tensor("flat", [1, 512]),
    ]  # fmt: skip
    outputs = [tensor("logits", [1, 10]), tensor("pool1.indices", [1, 8, 8, 8], T.INT64)]
    return build(
        "small_cnn", nodes, [tensor("image", [1, 3, 16, 16])], outputs,
        value_info=value_info, initializers=initializers,
    )  # fmt: skip


def residual_cnn() -> onnx.ModelProto:
    """The operators of an image classifier: Conv -> Relu -> MaxPool -> BatchNormalization, a residual block
    (Conv -> Relu -> Conv, Add with the block input) -> Relu -> Flatten -> Gemm -> Softmax. Every attribute
    explicit, every tensor declared; the Add's operands have one shape (SONNX Add does not broadcast)."""
    pool = {**MAXPOOL_EXPLICIT}
    nodes = [
        conv("stem", "image", "stem.w", "stem.b", "stem", 3),
        h.make_node("Relu", ["stem"], ["stem.relu"], name="stem.relu"),
        h.make_node("MaxPool", ["stem.relu"], ["pool"], name="pool", **pool),
        h.make_node(
            "BatchNormalization", ["pool", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["bn"], name="bn",
            epsilon=1e-5, momentum=0.9, training_mode=0,
        ),
        conv("block.conv1", "bn", "block.conv1.w", "block.conv1.b", "block.conv1", 3),
        h.make_node("Relu", ["block.conv1"], ["block.relu1"], name="block.relu1"),
        conv("block.conv2", "block.relu1", "block.conv2.w", "block.conv2.b", "block.conv2", 3),
        h.make_node("Add", ["block.conv2", "bn"], ["block.add"], name="block.add"),
        h.make_node("Relu", ["block.add"], ["block.out"], name="block.relu2"),
        h.make_node("Flatten", ["block.out"], ["flat"], name="flatten", axis=1),
        h.make_node(
            "Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", alpha=1.0, beta=1.0, transA=0, transB=0
        ),
        h.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
    ]  # fmt: skip
    channels = np.arange(8, dtype=np.float32)
    initializers = [
        weights("stem.w", [8, 3, 3, 3]), weights("stem.b", [8]),
        numpy_helper.from_array(1.0 + channels / 16, "bn.scale"),
        numpy_helper.from_array(channels / 32, "bn.bias"),
        numpy_helper.from_array(channels / 8 - 0.5, "bn.mean"),
        numpy_helper.from_array(0.5 + channels / 8, "bn.var"),
        weights("block.conv1.w", [8, 8, 3, 3]), weights("block.conv1.b", [8]),
        weights("block.conv2.w", [8, 8, 3, 3]), weights("block.conv2.b", [8]),
        weights("fc.w", [8 * 8 * 8, 10]), weights("fc.b", [1, 10]),  # draft Gemm: no transB, C is m x p
    ]  # fmt: skip
    value_info = [
        tensor("stem", [1, 8, 16, 16]), tensor("stem.relu", [1, 8, 16, 16]), tensor("pool", [1, 8, 8, 8]),
        tensor("bn", [1, 8, 8, 8]), tensor("block.conv1", [1, 8, 8, 8]), tensor("block.relu1", [1, 8, 8, 8]),
        tensor("block.conv2", [1, 8, 8, 8]), tensor("block.add", [1, 8, 8, 8]),
        tensor("block.out", [1, 8, 8, 8]), tensor("flat", [1, 512]), tensor("logits", [1, 10]),
    ]  # fmt: skip
    return build(
        "residual_cnn", nodes, [tensor("image", [1, 3, 16, 16])], [tensor("probabilities", [1, 10])],
        value_info=value_info, initializers=initializers,
    )  # fmt: skip


def as_float16(model: onnx.ModelProto, name: str) -> onnx.ModelProto:
    """The same graph in float16: every float tensor declared float16, every float weight rounded to it."""
    converted = onnx.ModelProto()
    converted.CopyFrom(model)
    converted.graph.name = name
    graph = converted.graph
    for info in [*graph.input, *graph.output, *graph.value_info]:
        if info.type.tensor_type.elem_type == T.FLOAT:
            info.type.tensor_type.elem_type = T.FLOAT16
    for initializer in graph.initializer:
        if initializer.data_type == T.FLOAT:
            values = numpy_helper.to_array(initializer).astype(np.float16)
            initializer.CopyFrom(numpy_helper.from_array(values, initializer.name))
    return converted


def residual_cnn_float16() -> onnx.ModelProto:
    """residual_cnn in float16. onnxruntime computes it in float32 and rounds the residual Add's chain
    (BatchNormalization, Conv -> Relu -> Conv) once where SONNX rounds every node: FLOAT16-WIDENED-CHAIN."""
    return as_float16(residual_cnn(), "residual_cnn_float16")


def max_broadcast() -> onnx.ModelProto:
    node = h.make_node("Max", ["A", "B", "C"], ["Y"], name="max")
    inputs = [tensor("A", [2, 3, 4]), tensor("B", [3, 1]), tensor("C", [4])]
    return build("max_broadcast", [node], inputs, [tensor("Y", [2, 3, 4])])


def maxpool_explicit() -> onnx.ModelProto:
    node = h.make_node("MaxPool", ["X"], ["Y", "Indices"], name="pool", **MAXPOOL_EXPLICIT)
    outputs = [tensor("Y", [1, 4, 8, 8]), tensor("Indices", [1, 4, 8, 8], T.INT64)]
    return build("maxpool_explicit", [node], [tensor("X", [1, 4, 16, 16])], outputs)


def external_weights() -> tuple[onnx.ModelProto, dict]:
    """Max(X, W) with W in a side file, as exporters write large models; checked without reading it."""
    node = h.make_node("Max", ["X", "W"], ["Y"], name="max")
    model = build(
        "external_weights", [node], [tensor("X", [1, 4, 8, 8])], [tensor("Y", [1, 4, 8, 8])],
        initializers=[weights("W", [1, 4, 8, 8])],
    )  # fmt: skip
    return model, {"location": "external_weights.onnx.data"}


# -- one violation each ------------------------------------------------------------------------------------


def maxpool_1d() -> onnx.ModelProto:
    return maxpool(
        [1, 1, 8], [1, 1, 6], name="maxpool_1d", kernel_shape=[3], pads=[0, 0], strides=[1], dilations=[1]
    )


def maxpool_missing_attributes() -> onnx.ModelProto:
    """What the TorchScript exporter writes: auto_pad and storage_order left to their defaults."""
    return maxpool(
        [1, 1, 16, 16], [1, 1, 8, 8], name="maxpool_missing_attributes", auto_pad=None, storage_order=None
    )


def maxpool_auto_pad_same() -> onnx.ModelProto:
    return maxpool(
        [1, 1, 16, 16], [1, 1, 8, 8], name="maxpool_auto_pad_same", auto_pad="SAME_UPPER", pads=None
    )


def maxpool_ceil_mode() -> onnx.ModelProto:
    """X of 16, kernel 3, stride 2: floor mode gives 7, ceil mode 8 (declared as ceil mode computes it)."""
    return maxpool([1, 1, 16, 16], [1, 1, 8, 8], name="maxpool_ceil_mode", ceil_mode=1, pads=[0, 0, 0, 0])


def maxpool_storage_order() -> onnx.ModelProto:
    return maxpool([1, 1, 16, 16], [1, 1, 8, 8], name="maxpool_storage_order", storage_order=1)


def maxpool_pads_too_large() -> onnx.ModelProto:
    return maxpool([1, 1, 16, 16], [1, 1, 10, 10], name="maxpool_pads_too_large", pads=[3, 3, 3, 3])


def maxpool_wrong_output_shape() -> onnx.ModelProto:
    """Y declared with seed 003's printed formula (divisor strides + 1) instead of the corrected one."""
    return maxpool([1, 1, 16, 16], [1, 1, 5, 5], name="maxpool_wrong_output_shape")


def maxpool_empty_window() -> onnx.ModelProto:
    """X of height 2, kernel 2, dilation 3, pads 1: pads.C2 holds, yet the only window taps padding only."""
    return maxpool(
        [1, 1, 2, 4], [1, 1, 1, 3], name="maxpool_empty_window",
        kernel_shape=[2, 2], dilations=[3, 1], pads=[1, 0, 1, 0], strides=[1, 1],
    )  # fmt: skip


def max_not_broadcastable() -> onnx.ModelProto:
    node = h.make_node("Max", ["A", "B"], ["Y"], name="max")
    return build(
        "max_not_broadcastable",
        [node],
        [tensor("A", [2, 3]), tensor("B", [4, 3, 2])],
        [tensor("Y", [4, 3, 3])],
    )


def max_bfloat16() -> onnx.ModelProto:
    node = h.make_node("Max", ["A", "B"], ["Y"], name="max")
    inputs = [tensor("A", [4], T.BFLOAT16), tensor("B", [4], T.BFLOAT16)]
    return build("max_bfloat16", [node], inputs, [tensor("Y", [4], T.BFLOAT16)])


def conv_grouped() -> onnx.ModelProto:
    """A grouped convolution that is neither standard (group 1) nor depthwise (group = channels)."""
    node = h.make_node(
        "Conv", ["X", "W", "B"], ["Y"], name="conv", auto_pad="NOTSET", dilations=[1, 1], group=2,
        kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
    )  # fmt: skip
    return build(
        "conv_grouped", [node], [tensor("X", [1, 4, 8, 8])], [tensor("Y", [1, 4, 8, 8])],
        initializers=[weights("W", [4, 2, 3, 3]), weights("B", [4])],
    )  # fmt: skip


def add_broadcast() -> onnx.ModelProto:
    """A per-channel bias added by broadcasting, as exporters write it: SONNX Add needs one shape."""
    node = h.make_node("Add", ["X", "bias"], ["Y"], name="add")
    return build(
        "add_broadcast",
        [node],
        [tensor("X", [1, 4, 8, 8])],
        [tensor("Y", [1, 4, 8, 8])],
        initializers=[weights("bias", [1, 4, 1, 1])],
    )


def softmax_axis_out_of_range() -> onnx.ModelProto:
    node = h.make_node("Softmax", ["X"], ["Y"], name="softmax", axis=2)
    return build("softmax_axis", [node], [tensor("X", [1, 10])], [tensor("Y", [1, 10])])


def integer_division_by_zero() -> onnx.ModelProto:
    """Integer Div by a constant holding a zero (the int section forbids it; float division is defined)."""
    divisor = numpy_helper.from_array(np.array([1, 2, 0, 4], dtype=np.int32), "B")
    node = h.make_node("Div", ["A", "B"], ["C"], name="div")
    return build(
        "integer_division_by_zero",
        [node],
        [tensor("A", [4], T.INT32)],
        [tensor("C", [4], T.INT32)],
        initializers=[divisor],
    )


def operator_outside_profile() -> onnx.ModelProto:
    node = h.make_node("HardSwish", ["X"], ["Y"], name="hardswish")
    return build("operator_outside_profile", [node], [tensor("X", [1, 4])], [tensor("Y", [1, 4])])


def custom_domain() -> onnx.ModelProto:
    node = h.make_node("Max", ["A", "B"], ["Y"], name="vendor_max", domain="com.vendor")
    return build(
        "custom_domain", [node], [tensor("A", [4]), tensor("B", [4])], [tensor("Y", [4])],
        extra_opsets=[("com.vendor", 1)],
    )  # fmt: skip


def control_flow() -> onnx.ModelProto:
    def branch(name: str, op: str) -> onnx.GraphProto:
        node = h.make_node(op, ["A", "B"], [f"{name}_y"], name=f"{name}_node")
        return h.make_graph([node], name, [], [tensor(f"{name}_y", [4])])

    node = h.make_node(
        "If", ["cond"], ["Y"], name="if", then_branch=branch("then", "Max"), else_branch=branch("else", "Max")
    )
    inputs = [tensor("cond", [], T.BOOL), tensor("A", [4]), tensor("B", [4])]
    return build("control_flow", [node], inputs, [tensor("Y", [4])])


def dead_node() -> onnx.ModelProto:
    nodes = [
        h.make_node("Max", ["A", "B"], ["Y"], name="used"),
        h.make_node("Max", ["A", "B"], ["unused"], name="dead"),
    ]
    return build(
        "dead_node",
        nodes,
        [tensor("A", [4]), tensor("B", [4])],
        [tensor("Y", [4])],
        value_info=[tensor("unused", [4])],
    )


def dynamic_shape() -> onnx.ModelProto:
    node = h.make_node("Max", ["A", "B"], ["Y"], name="max")
    return build(
        "dynamic_shape", [node], [tensor("A", ["batch", 4]), tensor("B", [4])], [tensor("Y", ["batch", 4])]
    )


def old_opset() -> onnx.ModelProto:
    """Max-6 requires equal shapes (no broadcasting): not the semantics SONNX specifies (based on Max-13)."""
    node = h.make_node("Max", ["A", "B"], ["Y"], name="max")
    return build("old_opset", [node], [tensor("A", [4]), tensor("B", [4])], [tensor("Y", [4])], opset=7)


def invalid_onnx() -> onnx.ModelProto:
    """Readable, but onnx.checker rejects it: a node input that is neither a graph input nor produced."""
    node = h.make_node("Max", ["A", "missing"], ["Y"], name="max")
    return build("invalid_onnx", [node], [tensor("A", [4])], [tensor("Y", [4])])


def external_data_outside() -> tuple[onnx.ModelProto, dict]:
    """Weights whose location climbs out of the model's folder: reported, never followed."""
    model, _ = external_weights()
    model.graph.name = "external_data_outside"
    return model, {"location": "../outside.bin", "write": False}


SAMPLES: dict[str, Callable[[], onnx.ModelProto | tuple[onnx.ModelProto, dict]]] = {
    "conforming/small_cnn.onnx": small_cnn,
    "conforming/residual_cnn.onnx": residual_cnn,
    "conforming/residual_cnn_float16.onnx": residual_cnn_float16,
    "conforming/max_broadcast.onnx": max_broadcast,
    "conforming/maxpool_explicit.onnx": maxpool_explicit,
    "conforming/external_weights.onnx": external_weights,
    "violating/maxpool_1d.onnx": maxpool_1d,
    "violating/maxpool_missing_attributes.onnx": maxpool_missing_attributes,
    "violating/maxpool_auto_pad_same.onnx": maxpool_auto_pad_same,
    "violating/maxpool_ceil_mode.onnx": maxpool_ceil_mode,
    "violating/maxpool_storage_order.onnx": maxpool_storage_order,
    "violating/maxpool_pads_too_large.onnx": maxpool_pads_too_large,
    "violating/maxpool_wrong_output_shape.onnx": maxpool_wrong_output_shape,
    "violating/maxpool_empty_window.onnx": maxpool_empty_window,
    "violating/max_not_broadcastable.onnx": max_not_broadcastable,
    "violating/max_bfloat16.onnx": max_bfloat16,
    "violating/conv_grouped.onnx": conv_grouped,
    "violating/add_broadcast.onnx": add_broadcast,
    "violating/softmax_axis_out_of_range.onnx": softmax_axis_out_of_range,
    "violating/integer_division_by_zero.onnx": integer_division_by_zero,
    "violating/operator_outside_profile.onnx": operator_outside_profile,
    "violating/custom_domain.onnx": custom_domain,
    "violating/control_flow.onnx": control_flow,
    "violating/dead_node.onnx": dead_node,
    "violating/dynamic_shape.onnx": dynamic_shape,
    "violating/old_opset.onnx": old_opset,
    "violating/invalid_onnx.onnx": invalid_onnx,
    "violating/external_data_outside.onnx": external_data_outside,
}


def write(relative: str, made: onnx.ModelProto | tuple[onnx.ModelProto, dict], out: Path) -> None:
    path = out / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    model, external = made if isinstance(made, tuple) else (made, None)
    if external is not None:
        data = _move_initializers_to(model, external["location"])
        if external.get("write", True):
            (path.parent / external["location"]).write_bytes(data)
    path.write_bytes(model.SerializeToString(deterministic=True))


def _move_initializers_to(model: onnx.ModelProto, location: str) -> bytes:
    """Point every initializer at ``location`` (offsets in declaration order) and return the bytes that
    file must hold; the .onnx keeps only the references."""
    data = bytearray()
    for initializer in model.graph.initializer:
        raw = initializer.raw_data
        initializer.data_location = T.EXTERNAL
        for key, value in (("location", location), ("offset", str(len(data))), ("length", str(len(raw)))):
            entry = initializer.external_data.add()
            entry.key, entry.value = key, value
        data += raw
        initializer.ClearField("raw_data")
    return bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: %(default)s)")
    args = parser.parse_args()
    for relative, make in SAMPLES.items():
        made = make()
        write(relative, made, args.out)
        print(relative)


if __name__ == "__main__":
    main()
