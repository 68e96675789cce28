"""Numpy emulation of the MaxPool Indices a runtime gives when it starts each window at (the type's lowest
finite value, the first element of the window's (batch, channel) plane) and moves on a strictly greater
element only: OpenVINO 2026.4.1 and tract 0.23.9 (benchmarks/probe_maxpool_indices.py measures both). The
windows of the lowest value are MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW's, those of -inf or NaN only
MAXPOOL-INDEX-ZERO-FOR-EMPTY-WINDOW's."""

from __future__ import annotations

import numpy as np
from models import maxpool
from test_known_operators import crafted

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase


def lowest_start_indices(x: np.ndarray) -> np.ndarray:
    """Indices of a 2x2, stride 2 MaxPool over (N, C, H, W) as the runtime computes them."""
    dtype = x.dtype
    lowest = np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min
    batch, channels = x.shape[:2]
    height, width = x.shape[2] // 2, x.shape[3] // 2
    found = np.zeros((batch, channels, height, width), np.int64)
    for n in range(batch):
        for ch in range(channels):
            plane_start = (n * channels + ch) * x.shape[2] * x.shape[3]
            for i in range(height):
                for j in range(width):
                    best, index = lowest, plane_start
                    for di in range(2):
                        for dj in range(2):
                            r, c = 2 * i + di, 2 * j + dj
                            if x[n, ch, r, c] > best:
                                best, index = x[n, ch, r, c], plane_start + r * x.shape[3] + c
                    found[n, ch, i, j] = index
    return found


def lowest_window_case(dtype: type = np.float32, batch: int = 1, channels: int = 1) -> DivergenceCase:
    """Windows (0, 1) and (1, 0) of every plane hold the lowest value only."""
    low = np.finfo(dtype).min if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
    x = np.tile(np.arange(16).astype(dtype).reshape(1, 1, 4, 4), (batch, channels, 1, 1))
    x[:, :, 0:2, 2:4] = low  # window (0, 1): the lowest value only
    x[:, :, 2:4, 0:2] = low  # window (1, 0) too
    return indices_case(x)


def indices_case(x: np.ndarray) -> DivergenceCase:
    """The Indices of a 2x2, stride 2 MaxPool of ``x``: SONNX's against the emulated runtime's."""
    model = maxpool(x.shape, x.dtype, kernel=(2, 2), strides=(2, 2))
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[1])
    found = crafted(model, [x], expected, lowest_start_indices(x))
    return DivergenceCase(found.node, 1, found.expected, found.actual, found.mismatch, found.inputs)
