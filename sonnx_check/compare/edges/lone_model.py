"""The edge battery's configurations as one small model: each configuration an independent node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Configuration(Protocol):
    """What of battery.Configuration the model needs (named here: battery imports this module)."""

    @property
    def node(self) -> onnx.NodeProto: ...
    @property
    def fed(self) -> tuple[tuple[int, np.dtype, tuple[int, ...]], ...]: ...
    @property
    def held(self) -> Mapping[int, np.ndarray]: ...
    @property
    def held_meta(self) -> Mapping[int, Any]: ...
    @property
    def held_from(self) -> Mapping[int, str]:  # held inputs that are the source model's initializers
        ...


def input_name(number: int, position: int) -> str:
    return f"c{number}_in{position}"


def output_name(number: int, position: int) -> str:
    return f"c{number}_out{position}"


def held_name(number: int, position: int) -> str:
    return f"c{number}_held{position}"


def configurations_model(
    source: onnx.ModelProto, batch: Sequence[Configuration], *, by_reference: bool = False
) -> onnx.ModelProto:
    """The batch's configurations as independent nodes of one model: fed inputs are graph inputs, held
    ones initializers; outputs carry only a name (onnxruntime infers their types). ``by_reference``: the
    held inputs that are initializers of ``source`` are left out, for a runner that takes them from its
    copy of ``source`` (``source_initializers`` names them)."""
    graph = onnx.GraphProto(name="sonnx-check node edges")
    for number, config in enumerate(batch):
        node = onnx.NodeProto()
        node.CopyFrom(config.node)
        node.name, node.doc_string = f"configuration {number}", ""
        del node.input[:], node.output[:]
        fed = {position: (dtype, shape) for position, dtype, shape in config.fed}
        for position, name in enumerate(config.node.input):
            if not name:
                node.input.append("")
            elif position in config.held_meta:
                held = held_name(number, position)
                if not (by_reference and position in config.held_from):
                    graph.initializer.append(numpy_helper.from_array(config.held[position], held))
                node.input.append(held)
            else:
                dtype, shape = fed[position]
                element = helper.np_dtype_to_tensor_dtype(dtype)
                graph.input.append(
                    helper.make_tensor_value_info(input_name(number, position), element, shape)
                )
                node.input.append(input_name(number, position))
        for k, name in enumerate(config.node.output):
            node.output.append(output_name(number, k) if name else "")
            if name:
                graph.output.append(onnx.ValueInfoProto(name=output_name(number, k)))
        graph.node.append(node)
    model = onnx.ModelProto(ir_version=source.ir_version, graph=graph)
    model.opset_import.extend(source.opset_import)
    return model


def source_initializers(batch: Sequence[Configuration]) -> dict[str, str]:
    """The initializers ``configurations_model(by_reference=True)`` leaves out: its name -> the source's."""
    return {
        held_name(number, position): name
        for number, config in enumerate(batch)
        for position, name in config.held_from.items()
    }
