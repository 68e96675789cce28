"""A stand-in for ``sonnx_check.reference`` while the real kernels are being written (tests only).

conftest.py installs it only when the real package cannot be imported, so the comparison tests run against
the real kernels as soon as they land. Written from semantics.md (NaN as -inf in MaxPool, first tie wins,
full flat Indices, padding never selected; Max: NaN absorbing, +0 > -0), deliberately small and slow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx


class ReferenceError(Exception):  # noqa: A001 - the real module's name
    pass


class UnsupportedOperatorError(ReferenceError):
    def __init__(self, ops: Sequence[str]) -> None:
        self.ops = list(ops)
        super().__init__(f"no SONNX reference kernel for {', '.join(self.ops)}")


class BudgetExceededError(ReferenceError):
    pass


def supported_ops() -> frozenset[str]:
    return frozenset({"Max", "MaxPool"})


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _check_budget(size: int, max_elements: int | None) -> None:
    if max_elements is not None and size > max_elements:
        raise BudgetExceededError(f"{size} elements exceed the budget of {max_elements}")


def maxpool(x: np.ndarray, kernel, strides, pads, dilations) -> tuple[np.ndarray, np.ndarray]:
    n, c, h, w = x.shape
    oh = (h + pads[0] + pads[2] - (dilations[0] * (kernel[0] - 1) + 1)) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - (dilations[1] * (kernel[1] - 1) + 1)) // strides[1] + 1
    keyed = np.where(np.isnan(x), -np.inf, x) if x.dtype.kind == "f" else x
    best = np.zeros((n, c, oh, ow), dtype=x.dtype)
    index = np.full((n, c, oh, ow), -1, dtype=np.int64)
    have = np.zeros((n, c, oh, ow), dtype=bool)
    planes = (np.arange(n * c, dtype=np.int64) * h * w).reshape(n, c, 1, 1)
    for kh in range(kernel[0]):
        rows = np.arange(oh) * strides[0] + kh * dilations[0] - pads[0]
        for kw in range(kernel[1]):
            cols = np.arange(ow) * strides[1] + kw * dilations[1] - pads[1]
            valid = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < w))[None, :]
            rc = np.clip(rows, 0, h - 1)[:, None]
            cc = np.clip(cols, 0, w - 1)[None, :]
            value = keyed[:, :, rc, cc]
            take = valid & (~have | (value > best))
            best = np.where(take, value, best)
            index = np.where(take, planes + rc * w + cc, index)
            have |= valid
    y = x.reshape(-1)[np.clip(index, 0, None)].reshape(index.shape)
    if x.dtype.kind == "f":
        y = np.where(np.isnan(y), np.array(-np.inf, dtype=x.dtype), y).astype(x.dtype)
    return y, index


def _max(inputs: Sequence[np.ndarray]) -> np.ndarray:
    result = inputs[0]
    for other in inputs[1:]:
        merged = np.maximum(result, other)
        if merged.dtype.kind == "f":
            a, b = np.broadcast_arrays(result, other)
            zeros = (a == 0) & (b == 0)
            merged = np.where(zeros, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), merged).astype(
                merged.dtype
            )
        result = merged
    return np.asarray(result)


def run_node(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], *, max_elements: int | None = None
) -> list[np.ndarray]:
    if node.op_type not in supported_ops():
        raise UnsupportedOperatorError([node.op_type])
    if node.op_type == "Max":
        arrays = [np.asarray(i) for i in inputs if i is not None]
        _check_budget(int(np.prod(np.broadcast_shapes(*(a.shape for a in arrays)))), max_elements)
        return [_max(arrays)]
    a = _attrs(node)
    x = np.asarray(inputs[0])
    _check_budget(x.size, max_elements)
    y, i = maxpool(
        x,
        list(a["kernel_shape"]),
        list(a.get("strides", [1, 1])),
        list(a.get("pads", [0] * 4)),
        list(a.get("dilations", [1, 1])),
    )
    return [y, i][: len(node.output)]


def evaluate(
    model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], *, max_elements: int | None = None
) -> dict[str, np.ndarray]:
    values: dict[str, np.ndarray] = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update(inputs)
    missing = sorted({n.op_type for n in model.graph.node if n.op_type not in supported_ops()})
    if missing:
        raise UnsupportedOperatorError(missing)
    for node in model.graph.node:
        outs = run_node(node, [values[n] if n else None for n in node.input], max_elements=max_elements)
        for name, value in zip(node.output, outs, strict=False):
            if name:
                values[name] = value
    return {o.name: values[o.name] for o in model.graph.output}
