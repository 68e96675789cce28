"""Numpy emulation of BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL (OpenVINO 2026.4.1 in bfloat16 inference,
benchmarks/probe_conv_channel_pad.py): the convolution on bfloat16-rounded operands, each real pixel of a
window also multiplying a zero weight by the next pixel's first channel (the open slot of an odd channel
count), except in the last output column."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase
from sonnx_check.compare.ops.reduced_precision import round_to_bfloat16

ATTRIBUTES = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1}


def openvino_bfloat16_conv(x: np.ndarray, w: np.ndarray, pad: int, stride: int) -> np.ndarray:
    xb, wb = round_to_bfloat16(x).astype(np.float64), round_to_bfloat16(w).astype(np.float64)
    kernel, (height, width) = w.shape[2], x.shape[2:]
    padded = np.pad(xb, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out_h, out_w = (height + 2 * pad - kernel) // stride + 1, (width + 2 * pad - kernel) // stride + 1
    y = np.zeros((x.shape[0], w.shape[0], out_h, out_w))
    with np.errstate(all="ignore"):
        for i in range(out_h):
            for j in range(out_w):
                rows, cols = slice(i * stride, i * stride + kernel), slice(j * stride, j * stride + kernel)
                y[:, :, i, j] = np.einsum("nchw,ochw->no", padded[:, :, rows, cols], wb)
                if x.shape[1] % 2 == 0 or j == out_w - 1:
                    continue
                for r in range(i * stride - pad, i * stride - pad + kernel):
                    for q in range(j * stride - pad, j * stride - pad + kernel):
                        if 0 <= r < height and 0 <= q and q + 1 < width:  # the open slot: zero weight
                            y[:, :, i, j] += 0.0 * xb[:, 0, r, q + 1][:, None]
    return y.astype(np.float32)


def conv_case(x: np.ndarray, w: np.ndarray, pad: int = 1, stride: int = 1) -> DivergenceCase:
    kernel = w.shape[2]
    attrs = {**ATTRIBUTES, "kernel_shape": [kernel, kernel], "pads": [pad] * 4, "strides": [stride] * 2}
    model = node_model("Conv", [x, w], attrs)
    expected = np.asarray(reference.run_node(model.graph.node[0], [x, w])[0])
    actual = openvino_bfloat16_conv(x, w, pad, stride).astype(expected.dtype)  # float16: rounded once
    return crafted(model, [x, w], expected, actual)


def channel_pad_case() -> DivergenceCase:
    """Three channels, an infinity in the first at (2, 3) and, away from it, a value beyond bfloat16's range
    in the third (+inf in bfloat16: BFLOAT16-INFERENCE's, not the read's)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (1, 3, 6, 8)).astype(np.float32)
    x[0, 0, 2, 3] = np.inf
    x[0, 2, 0, 7] = np.finfo(np.float32).max  # rounds to +inf in bfloat16: only BFLOAT16-INFERENCE's
    w = rng.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32)
    return conv_case(x, w)


def read_only_case() -> DivergenceCase:
    """``channel_pad_case`` with the read's NaN alone (the other elements SONNX's, no bfloat16 rounding): what
    the catalogue-wide checks of test_known.py expect of a behaviour's case."""
    found = channel_pad_case()
    read = np.isnan(found.actual) & ~np.isnan(found.expected)
    actual = np.where(read, np.float32(np.nan), found.expected).astype(np.float32)
    return DivergenceCase(found.node, 0, found.expected, actual, read, list(found.inputs))
