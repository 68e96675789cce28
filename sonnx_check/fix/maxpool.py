"""MaxPool.R3 (auto_pad) and MaxPool.R4 (ceil_mode): rewrite to explicit padding with the same output.

Both rewrites need X's static shape, and both are applied only where the ONNX definition and onnxruntime's
implementation agree on the padding and on the output size, so the fixed model computes, element for
element, what the original computed in either. Where they disagree (a dilated kernel with SAME padding, a
last window starting in the end padding) the choice belongs to a person, and the node is left as it is.

ONNX (``convPoolShapeInference``): SAME total padding = max(0, (ceil(in/s) - 1)*s + dil*(k-1)+1 - in),
split with the extra cell at the end (SAME_UPPER) or at the beginning (SAME_LOWER). onnxruntime
(``pool_attributes.h``): the same with the undilated kernel and no clamp at zero. Every resulting pad must
stay smaller than the kernel: onnxruntime refuses the model otherwise and SONNX (pads.C2) forbids it.
"""

from __future__ import annotations

from onnx import NodeProto

from sonnx_check.checks.attributes import get_ints, get_str
from sonnx_check.fix.nodes import attributes_of, set_attribute
from sonnx_check.fix.outcome import NotFixed, Rewrite
from sonnx_check.shapes import dilated_extent
from sonnx_check.view import ModelView


class Refuse(Exception):
    """Why a node is left to a person (one line)."""


def explicit_pads(view: ModelView, index: int) -> Rewrite | NotFixed:
    """R3: auto_pad VALID / SAME_UPPER / SAME_LOWER -> auto_pad NOTSET with the pads it stands for."""
    node = view.nodes[index]
    ref = view.refs[index]
    auto_pad = get_str(attributes_of(node), "auto_pad")
    try:
        kernel, strides, dilations, _ = _geometry(node)
        x_shape = static_x(view, index, len(kernel), "auto_pad's padding depends on it")
        n = len(kernel)
        pads = [0] * (2 * n)
        if auto_pad != "VALID":
            for axis in range(n):
                pads[axis], pads[axis + n] = same_pads(
                    auto_pad or "", x_shape[2 + axis], kernel[axis], strides[axis], dilations[axis], axis
                )
        _check_pads(pads, kernel)
    except Refuse as exc:
        return NotFixed("MaxPool.R3", str(exc), ref)
    set_attribute(node, "auto_pad", "NOTSET")
    set_attribute(node, "pads", pads)
    return Rewrite(
        "MaxPool.R3",
        f"auto_pad={auto_pad!r} replaced by auto_pad='NOTSET' with pads={pads} "
        f"(the padding it computes for X of shape {list(x_shape)})",
        ref,
    )


def floor_mode(view: ModelView, index: int) -> Rewrite | NotFixed:
    """R4: ceil_mode=1 -> ceil_mode=0 with the end padding that keeps every output window."""
    node = view.nodes[index]
    ref = view.refs[index]
    try:
        auto_pad = get_str(attributes_of(node), "auto_pad")
        if auto_pad not in (None, "NOTSET"):
            raise Refuse(f"auto_pad={auto_pad!r} computes the padding; MaxPool.R3 must be fixed first")
        kernel, strides, dilations, pads = _geometry(node)
        n = len(kernel)
        x_shape = static_x(view, index, n, "the output size of ceil_mode depends on it")
        new_pads = list(pads)
        sizes = []
        for axis in range(n):
            extra, size = _floor_equivalent(
                x_shape[2 + axis],
                kernel[axis],
                strides[axis],
                dilations[axis],
                pads[axis],
                pads[axis + n],
                axis,
            )
            new_pads[axis + n] += extra
            sizes.append(size)
        _check_pads(new_pads, kernel)
    except Refuse as exc:
        return NotFixed("MaxPool.R4", str(exc), ref)
    set_attribute(node, "ceil_mode", 0)
    set_attribute(node, "pads", new_pads)
    change = f"pads {pads} -> {new_pads}" if new_pads != pads else f"pads {pads} unchanged"
    return Rewrite(
        "MaxPool.R4",
        f"ceil_mode=1 replaced by ceil_mode=0, {change} "
        f"(same output size {sizes} for X of shape {list(x_shape)})",
        ref,
    )


def _geometry(node: NodeProto) -> tuple[list[int], list[int], list[int], list[int]]:
    kernel = get_ints(attributes_of(node), "kernel_shape")
    if not kernel or min(kernel) <= 0:
        raise Refuse("kernel_shape is missing or invalid")
    n = len(kernel)
    strides = ints_or(node, "strides", [1] * n)
    dilations = ints_or(node, "dilations", [1] * n)
    pads = ints_or(node, "pads", [0] * (2 * n))
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise Refuse("strides, dilations or pads do not have one value per spatial axis")
    if min(strides) <= 0 or min(dilations) <= 0 or min(pads) < 0:
        raise Refuse("strides, dilations or pads hold invalid values")
    return kernel, strides, dilations, pads


def ints_or(node: NodeProto, name: str, default: list[int]) -> list[int]:
    if not any(a.name == name for a in node.attribute):
        return default
    value = get_ints(attributes_of(node), name)
    if value is None:
        raise Refuse(f"attribute {name} is not a list of integers")
    return value


def static_x(view: ModelView, index: int, n_spatial: int, why: str) -> tuple[int, ...]:
    node = view.nodes[index]
    shape = view.shape_of(node.input[0]) if node.input else None
    if shape is None or len(shape) != n_spatial + 2:
        raise Refuse(f"X's shape is not static ({why}); declare a static input shape first")
    return shape


def same_pads(
    auto_pad: str, size: int, kernel: int, stride: int, dilation: int, axis: int
) -> tuple[int, int]:
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise Refuse(f"auto_pad={auto_pad!r} is not a value ONNX defines (MaxPool.auto_pad.C1)")
    out = -(-size // stride)
    onnx_total = max(0, (out - 1) * stride + dilated_extent(kernel, dilation) - size)
    ort_total = (out - 1) * stride + kernel - size
    if onnx_total != ort_total:
        raise Refuse(
            f"on spatial axis {axis}, ONNX pads {onnx_total} in total and onnxruntime {ort_total} "
            "(dilated kernel or stride larger than the kernel); choose the explicit pads by hand"
        )
    small, big = onnx_total // 2, onnx_total - onnx_total // 2
    return (small, big) if auto_pad == "SAME_UPPER" else (big, small)


def _floor_equivalent(
    size: int, kernel: int, stride: int, dilation: int, begin: int, end: int, axis: int
) -> tuple[int, int]:
    """(extra end padding, output size) so that floor mode gives ceil mode's output size on one axis."""
    extent = dilated_extent(kernel, dilation)
    span = size + begin + end
    if span < extent:
        raise Refuse(f"on spatial axis {axis} the padded input is smaller than the kernel")
    out = -(-(span - extent) // stride) + 1
    if (out - 1) * stride >= size + begin:
        # ONNX drops a last window that starts in the end padding; onnxruntime versions differ on it.
        raise Refuse(
            f"on spatial axis {axis} the last ceil_mode window starts in the end padding, where ONNX and "
            "onnxruntime versions disagree on the output size; choose the padding by hand"
        )
    return max(0, (out - 1) * stride + extent - span), out


def _check_pads(pads: list[int], kernel: list[int]) -> None:
    n = len(kernel)
    for i, pad in enumerate(pads):
        if pad >= kernel[i % n]:
            raise Refuse(
                f"the explicit pads would be {pads}: pad {pad} is not smaller than the kernel "
                f"{kernel[i % n]} (onnxruntime refuses such a model and SONNX pads.C2 forbids it)"
            )
