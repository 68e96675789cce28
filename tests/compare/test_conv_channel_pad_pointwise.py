"""BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL on a 1x1 kernel, stride 1, no padding (issue 29): OpenVINO 2026.4.1
in bfloat16 inference runs such a Conv over the plane as one row of pixels, so the open channel slot of
each pixel reads the next pixel in memory, the last of a row reading the next row's first, and one input
channel reads it too (benchmarks/probe_conv_channel_pad.py's 1x1 rows: every NaN and no other with 1, 3,
5 and 7 channels). Emulated in numpy here; a NaN elsewhere stays unexplained."""

from __future__ import annotations

import numpy as np
import pytest
from behaviours_conv_channel_pad import ATTRIBUTES
from test_known import with_actual
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase, by_id
from sonnx_check.compare.ops.reduced_precision import round_to_bfloat16

ID = "BFLOAT16-CHANNEL-PAD-READS-NEXT-PIXEL"


def _openvino_pointwise(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The 1x1 convolution on bfloat16 operands, each pixel also adding 0 times the first channel of the
    pixel after it in the plane (odd channel counts), the plane's last pixel excepted."""
    xb, wb = round_to_bfloat16(x).astype(np.float64), round_to_bfloat16(w).astype(np.float64)
    y = np.einsum("nchw,oc->nohw", xb, wb[:, :, 0, 0])
    if x.shape[1] % 2:
        flat = xb[:, 0].reshape(x.shape[0], -1)
        following = np.zeros_like(flat)
        following[:, :-1] = flat[:, 1:]
        with np.errstate(invalid="ignore"):
            y = y + (0.0 * following).reshape(x.shape[0], 1, *x.shape[2:])
    return y.astype(np.float32)


def _case(channels: int) -> DivergenceCase:
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, (2, channels, 4, 5)).astype(np.float32)
    x[0, 0, 2, 0] = np.inf  # read by the last pixel of row 1: the row wraps
    x[1, 0, 1, 3] = np.nan
    x[1, 0, 0, 0] = -np.inf  # the plane's first pixel: no pixel before it reads it
    w = rng.uniform(-1, 1, (3, channels, 1, 1)).astype(np.float32)
    attrs = {**ATTRIBUTES, "kernel_shape": [1, 1], "pads": [0] * 4, "strides": [1, 1]}
    model = node_model("Conv", [x, w], attrs)
    expected = np.asarray(reference.run_node(model.graph.node[0], [x, w])[0])
    return crafted(model, [x, w], expected, _openvino_pointwise(x, w))


@pytest.mark.parametrize("channels", [1, 3])
def test_the_next_pixel_in_the_plane_is_read_and_explained(channels):
    found = _case(channels)
    read = np.isnan(found.actual) & ~np.isnan(found.expected)
    assert read[0, :, 1, 4].all() and read[1, :, 1, 2].all()  # the row's last pixel; the NaN's left neighbour
    assert read.sum() == 2 * 3
    assert (by_id(ID).explains(found) == read).all()


def test_a_nan_elsewhere_stays_unexplained():
    found = _case(3)
    actual = found.actual.copy()
    actual[0, 1, 3, 3] = np.nan  # its next pixel is finite
    planted = with_actual(found, actual)
    assert planted.mismatch[0, 1, 3, 3] and not by_id(ID).explains(planted)[0, 1, 3, 3]
