"""Conv.R2 (auto_pad): VALID / SAME_UPPER / SAME_LOWER rewritten as auto_pad NOTSET with explicit pads.

The same rewrite as MaxPool.R3 (fix/maxpool.py), under the same condition: X's shape is static and ONNX
and onnxruntime compute the same padding from it, so the fixed node pads exactly as the original did and
computes the same sums in the same order. onnxruntime (``conv_attributes.h``) pads SAME with the undilated
kernel and no clamp at zero, and refuses a dilated kernel with SAME outright; ONNX uses the dilated kernel
and clamps: where they differ (a dilation above 1, a stride larger than the kernel) the node is left to a
person. The kernel is W's spatial shape (or kernel_shape when written). Conv-1 defines SAME by another
rule ("the output size matches the input"), so only Conv-11 and later are rewritten.
"""

from __future__ import annotations

from sonnx_check.checks.attributes import get_ints, get_str
from sonnx_check.fix.constants import Constants
from sonnx_check.fix.maxpool import Refuse, ints_or, same_pads, static_x
from sonnx_check.fix.nodes import attributes_of, set_attribute
from sonnx_check.fix.outcome import NotFixed, Rewrite

RULE = "Conv.R2"
FIRST_SAME_VERSION = 11  # Conv-11 defines SAME as ONNX's shape inference computes it


def conv_explicit_pads(constants: Constants, index: int) -> Rewrite | NotFixed:
    view = constants.view
    node, ref = view.nodes[index], view.refs[index]
    attrs = attributes_of(node)
    auto_pad = get_str(attrs, "auto_pad")
    try:
        if auto_pad not in ("VALID", "SAME_UPPER", "SAME_LOWER"):
            raise Refuse(f"auto_pad={auto_pad!r} is not a value ONNX defines (Conv.auto_pad.C1's finding)")
        kernel = _kernel(constants, index)
        n = len(kernel)
        strides = ints_or(node, "strides", [1] * n)
        dilations = ints_or(node, "dilations", [1] * n)
        if len(strides) != n or len(dilations) != n or min(strides) <= 0 or min(dilations) <= 0:
            raise Refuse("strides or dilations do not hold one positive value per spatial axis")
        x_shape = static_x(view, index, n, "auto_pad's padding depends on it")
        pads = [0] * (2 * n)
        if auto_pad != "VALID":
            version = view.opset_version(index)
            if version is not None and version < FIRST_SAME_VERSION:
                raise Refuse(f"Conv-{version} defines SAME padding by another rule; upgrade the opset first")
            for axis in range(n):
                pads[axis], pads[axis + n] = same_pads(
                    auto_pad, x_shape[2 + axis], kernel[axis], strides[axis], dilations[axis], axis
                )
    except Refuse as exc:
        return NotFixed(RULE, str(exc), ref)
    set_attribute(node, "auto_pad", "NOTSET")
    set_attribute(node, "pads", pads)
    return Rewrite(
        RULE,
        f"auto_pad={auto_pad!r} replaced by auto_pad='NOTSET' with pads={pads} "
        f"(the padding it computes for X of shape {list(x_shape)})",
        ref,
    )


def _kernel(constants: Constants, index: int) -> list[int]:
    node = constants.view.nodes[index]
    written = get_ints(attributes_of(node), "kernel_shape")
    if written:
        return written
    w = constants.shape(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if w is None or len(w) < 3:
        raise Refuse("W's shape is not static, so the kernel is not known")
    return list(w[2:])
