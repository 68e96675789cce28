"""Edge values that only mean something to one operator, for the node edge battery (battery.py): the engine.

The generic edge patterns (datasets.py: NaN, ±inf, ±0, type extremes, ties, subnormals) fill every input the
same way. Some departures need a shape of data no generic pattern has: a Softmax row holding +inf among
finite values, a Clip whose bounds are NaN or crossed, Pow's table of special pairs, the saturation ranges
of the transcendental functions (where onnxruntime's Sigmoid and Tanh leave the annex's bounds). An operator
declares its own patterns (``[comparison.edge_patterns]`` of rules/<Op>.toml: name = builder reference, in
battery order); the builders live in compare/ops/<op>.py, and the sweep several operators share is here. Each
builder receives the node and its fed inputs (position, dtype, shape) and returns an array per position,
or None when the dataset does not apply to this node (a Clip without a max has no crossed bounds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper

from sonnx_check.compare.inputs.datasets import random_array
from sonnx_check.compare.ops import facts

Fed = Sequence[tuple[int, np.dtype, tuple[int, ...]]]  # (input position, dtype, shape)
Builder = Callable[[onnx.NodeProto, Fed, np.random.Generator], dict[int, np.ndarray] | None]

# Half-width of the linear part of a sweep: past it, every function of the group saturates or overflows
# in the type (exp overflows at 11.1 in float16, 88.7 in float32, 709.8 in float64).
_SWEEP_HALF_WIDTH = {2: 12.0, 4: 100.0, 8: 750.0}


def random_rest(fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray]:
    return {position: random_array(dtype, shape, rng) for position, dtype, shape in fed}


def first_float(fed: Fed) -> tuple[int, np.dtype, tuple[int, ...]] | None:
    return next((f for f in fed if f[1].kind == "f"), None)


def sweep(node: onnx.NodeProto, fed: Fed, rng: np.random.Generator) -> dict[int, np.ndarray] | None:
    """Half the elements log-uniform in magnitude over the whole type, half uniform over the range where
    the function is neither saturated nor overflowed, both signs."""
    first = first_float(fed)
    if first is None:
        return None
    out = random_rest(fed, rng)
    position, dtype, shape = first
    info = np.finfo(dtype)
    size = int(np.prod(shape))
    magnitude = 10.0 ** rng.uniform(np.log10(info.smallest_subnormal), np.log10(info.max), size=size)
    linear = rng.uniform(-1.0, 1.0, size=size) * _SWEEP_HALF_WIDTH.get(dtype.itemsize, 100.0)
    signs = np.where(rng.random(size=size) < 0.5, -1.0, 1.0)
    values = np.where(rng.random(size=size) < 0.5, magnitude * signs, linear)
    with np.errstate(over="ignore"):
        out[position] = values.astype(dtype).reshape(shape)
    return out


def specific_names(op_type: str) -> list[str]:
    return facts.edge_pattern_names(op_type)


def build_specific(
    name: str, node: onnx.NodeProto, fed: Fed, rng: np.random.Generator
) -> dict[int, np.ndarray] | None:
    builder = facts.edge_builder(node.op_type, name)
    return None if builder is None else builder(node, fed, rng)


def attribute_text(node: onnx.NodeProto) -> dict[str, object]:
    """The node's attributes as plain values, for the report (tensors by their shape only)."""
    out: dict[str, object] = {}
    for attribute in node.attribute:
        value = helper.get_attribute_value(attribute)
        if isinstance(value, onnx.TensorProto):
            value = f"tensor {list(value.dims)}"
        elif isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        out[attribute.name] = value if not isinstance(value, (onnx.GraphProto,)) else "graph"
    return out
