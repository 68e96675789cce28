"""Conv's own comparison facts (rules/Conv.toml names them): the predicates of its known runtime departures
over dilation holes and padding. Its bound and its other departures are the products'
(compare/ops/products.py, compare/ops/reduced_precision.py)."""

from __future__ import annotations

import numpy as np
import onnx

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none
from sonnx_check.shapes import window_output_spatial


def dilation_holes_skipped(case: DivergenceCase) -> np.ndarray:
    """NaN in SONNX's result only because a hole of the dilated kernel (an operand 0) meets an infinite or
    NaN X: the same convolution with the holes skipped is not NaN there, and neither is onnxruntime's."""
    from sonnx_check.reference import ReferenceError as KernelRefusal
    from sonnx_check.reference.conv import conv

    x, w, b = input_value(case, 0), input_value(case, 1), input_value(case, 2)
    dilations = list(attribute(case.node, "dilations", [1, 1]))
    if case.actual.dtype.kind != "f" or x is None or w is None or max(dilations, default=1) <= 1:
        return none(case)
    try:
        skipped = conv(
            x, w, b, strides=list(attribute(case.node, "strides", [1, 1])),
            pads=list(attribute(case.node, "pads", [0, 0, 0, 0])), dilations=dilations,
            group=int(attribute(case.node, "group", 1)), holes_are_operands=False,
        )  # fmt: skip
    except KernelRefusal:
        return none(case)
    if skipped.shape != case.expected.shape:
        return none(case)
    return np.isnan(case.expected) & ~np.isnan(skipped) & ~np.isnan(case.actual)


def _padding_skipped(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, node: onnx.NodeProto
) -> np.ndarray | None:
    """The convolution in float64 with the zero padding's taps left out of the sum (each padded tap of a
    window is skipped, not multiplied: no 0 * inf). None outside the 2-D explicit-padding case."""
    strides = list(attribute(node, "strides", [1, 1]))
    pads = list(attribute(node, "pads", [0, 0, 0, 0]))
    dilations = list(attribute(node, "dilations", [1, 1]))
    group = int(attribute(node, "group", 1))
    auto_pad = attribute(node, "auto_pad", b"NOTSET")
    if x.ndim != 4 or w.ndim != 4 or len(pads) != 4 or auto_pad not in (b"NOTSET", "NOTSET"):
        return None
    channels, out_channels = x.shape[1], w.shape[0]
    if group < 1 or channels % group or out_channels % group or w.shape[1] != channels // group:
        return None
    kh, kw = w.shape[2:]
    out_h, out_w = window_output_spatial(x.shape[2:], (kh, kw), strides, dilations, pads)
    if out_h <= 0 or out_w <= 0:
        return None
    widths = ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3]))
    padded = np.pad(x.astype(np.float64), widths)
    real = np.pad(np.ones(x.shape[2:], dtype=bool), widths[2:], constant_values=False)
    y = np.zeros((x.shape[0], out_channels, out_h, out_w))
    per_in, per_out = channels // group, out_channels // group
    with np.errstate(all="ignore"):
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilations[0], i * dilations[0] + (out_h - 1) * strides[0] + 1, strides[0])
                cols = slice(j * dilations[1], j * dilations[1] + (out_w - 1) * strides[1] + 1, strides[1])
                patch, taken = padded[:, :, rows, cols], real[rows, cols]
                for g in range(group):
                    ins, outs = slice(g * per_in, (g + 1) * per_in), slice(g * per_out, (g + 1) * per_out)
                    term = np.einsum("ncij,mc->nmij", patch[:, ins], w[outs, :, i, j].astype(np.float64))
                    y[:, outs] += np.where(taken, term, 0.0)
        if b is not None:
            y += b.astype(np.float64).reshape(1, -1, 1, 1)
    return y


def padding_taps_skipped(case: DivergenceCase) -> np.ndarray:
    """NaN in SONNX's result only because a zero of the padding meets an infinite or NaN weight (0 * inf):
    the same convolution with the padded taps skipped is not NaN there, and neither is the runtime's."""
    x, w, b = input_value(case, 0), input_value(case, 1), input_value(case, 2)
    if case.actual.dtype.kind != "f" or x is None or w is None:
        return none(case)
    if not any(attribute(case.node, "pads", [0, 0, 0, 0])):
        return none(case)
    skipped = _padding_skipped(x, w, b, case.node)
    if skipped is None or skipped.shape != case.expected.shape:
        return none(case)
    return np.isnan(case.expected) & ~np.isnan(skipped) & ~np.isnan(case.actual)
