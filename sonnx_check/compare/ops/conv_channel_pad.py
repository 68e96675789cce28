"""BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL (declared in rules/Conv.toml): OpenVINO's CPU plugin in bfloat16
inference (its default on a CPU with AVX-512 BF16 or AMX) pairs a Conv's input channels for its bfloat16
dot products; with an odd channel count (3, 5, 7: an RGB first layer) the pair left open takes a zero weight
and reads the value that follows in memory, the first channel of the next pixel. A value that is not finite
in bfloat16 there (NaN, +-inf, or a float32 above 3.3961e38, which rounds to infinity) makes 0 * inf = NaN
in every output whose window holds the pixel before it. Measured (benchmarks/probe_conv_channel_pad.py,
OpenVINO 2026.4.1): exactly those outputs, over kernels 3 and 5, strides 1 and 2, pads 0 to 2, batches 1
and 2, 3, 5 and 7 channels, float32 and float16 models, except in the last output column (computed without
the read). A 1x1 kernel with stride 1 and no padding runs over the plane as one row: the last pixel of a
row reads the next row's first, and one input channel reads its neighbour too (measured with 1, 3, 5 and 7
channels, batches 1 and 2)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, attribute, input_value, none
from sonnx_check.compare.ops.reduced_precision import recomputed, round_to_bfloat16

_READ_TYPES = (np.dtype(np.float32), np.dtype(np.float16))  # a float16 model runs in bfloat16 too


def _box_any(
    mask: np.ndarray, rows: tuple[np.ndarray, np.ndarray], cols: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """For an N x H x W boolean ``mask``: whether any element lies in rows [r0, r1) x cols [c0, c1), for
    every (r0, r1) of ``rows`` and (c0, c1) of ``cols`` (N x len(rows) x len(cols)); empty: False."""
    counts = np.zeros((mask.shape[0], mask.shape[1] + 1, mask.shape[2] + 1), np.int64)
    counts[:, 1:, 1:] = mask.cumsum(axis=1).cumsum(axis=2)
    r0, r1 = (v[:, None] for v in rows)
    c0, c1 = (v[None, :] for v in cols)
    total = counts[:, r1, c1] - counts[:, r0, c1] - counts[:, r1, c0] + counts[:, r0, c0]
    return (total > 0) & (r1 > r0) & (c1 > c0)


def _window_bounds(out: int, stride: int, pad: int, kernel: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The real positions [start, end) of each output position's window along one axis."""
    first = np.arange(out) * stride - pad
    return np.clip(first, 0, size), np.clip(first + kernel, 0, size)


def next_pixel_read(case: DivergenceCase) -> np.ndarray:
    """float32 or float16 Conv, one group, no dilation, an odd number (3 or more) of input channels: NaN at
    an output whose window holds a pixel followed, in its row, by a first-channel value not finite in
    bfloat16, except in the last output column, where the convolution on bfloat16 operands is not NaN by
    itself. A 1x1 kernel, stride 1, no padding (any odd channel count, 1 included): the pixel followed in
    the plane (the next row's first after a row's last), all but the plane's last pixel."""
    x, w = input_value(case, 0), input_value(case, 1)
    actual = case.actual
    if (
        x is None
        or w is None
        or actual.dtype not in _READ_TYPES
        or x.ndim != 4
        or w.ndim != 4
        or actual.ndim != 4
    ):
        return none(case)
    channels = x.shape[1]
    pads = list(attribute(case.node, "pads", [0, 0, 0, 0]))
    strides = list(attribute(case.node, "strides", [1, 1]))
    dilations = list(attribute(case.node, "dilations", [1, 1]))
    auto_pad = attribute(case.node, "auto_pad", b"NOTSET")
    # a 1x1 kernel, stride 1, no padding runs over the plane as one row of pixels (measured: the last pixel
    # of a row reads the next row's first); there one channel reads its neighbour too
    pointwise = tuple(w.shape[2:]) == (1, 1) and list(pads) == [0, 0, 0, 0] and list(strides) == [1, 1]
    if (
        channels < (1 if pointwise else 3) or channels % 2 == 0 or int(attribute(case.node, "group", 1)) != 1
        or dilations != [1, 1] or len(pads) != 4 or len(strides) != 2 or auto_pad not in (b"NOTSET", "NOTSET")
    ):  # fmt: skip
        return none(case)
    height, width = x.shape[2:]
    out_h, out_w = actual.shape[2:]
    with np.errstate(invalid="ignore"):
        not_finite = ~np.isfinite(round_to_bfloat16(x[:, 0].astype(np.float32)))
    if pointwise:
        if (out_h, out_w) != (height, width):
            return none(case)
        flat = not_finite.reshape(x.shape[0], -1)
        reach = np.zeros_like(flat)
        reach[:, :-1] = flat[:, 1:]  # each pixel reads the next one in memory, but the plane's last
        reach = reach.reshape(not_finite.shape)
    else:
        rows = _window_bounds(out_h, strides[0], pads[0], w.shape[2], height)
        start, end = _window_bounds(out_w, strides[1], pads[1], w.shape[3], width)
        # each real pixel of the window reads the next pixel's first channel: columns [start + 1, end + 1)
        following = (np.minimum(start + 1, width), np.minimum(end + 1, width))
        reach = _box_any(not_finite, rows, following)
        reach[:, :, -1] = False  # the last output column does not read past its window
    candidates = np.isnan(actual) & reach[:, None, :, :]
    if not candidates.any():
        return candidates
    # the read's NaN only: where the convolution on bfloat16 operands is NaN by itself, the NaN is
    # BFLOAT16-INFERENCE's (or an overflow's), not this read's
    widened = [None if v is None else np.asarray(v).astype(np.float32) for v in case.inputs]
    found = recomputed(replace(case, inputs=widened), round_to_bfloat16, (0, 1))
    if found is None:
        return none(case)
    return candidates & ~np.isnan(found[0])
