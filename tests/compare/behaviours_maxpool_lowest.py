"""Numpy emulation of MAXPOOL-INDEX-ZERO-FOR-LOWEST-WINDOW (OpenVINO 2026.4.1, /tmp/v29_repro_maxpool_idx.py
in verify29's report): each window starts at (lowest finite value, index 0) and moves on a strictly greater
element only."""

from __future__ import annotations

import numpy as np
from models import maxpool
from test_known_operators import crafted

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase


def lowest_start_indices(x: np.ndarray) -> np.ndarray:
    """Indices of a 2x2, stride 2 MaxPool over (1, 1, H, W) as the runtime computes them."""
    dtype = x.dtype
    lowest = np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min
    height, width = x.shape[2] // 2, x.shape[3] // 2
    found = np.zeros((1, 1, height, width), np.int64)
    for i in range(height):
        for j in range(width):
            best, index = lowest, 0
            for di in range(2):
                for dj in range(2):
                    r, c = 2 * i + di, 2 * j + dj
                    if x[0, 0, r, c] > best:
                        best, index = x[0, 0, r, c], r * x.shape[3] + c
            found[0, 0, i, j] = index
    return found


def lowest_window_case(dtype: type = np.float32) -> DivergenceCase:
    low = np.finfo(dtype).min if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
    x = np.arange(16).astype(dtype).reshape(1, 1, 4, 4)
    x[0, 0, 0:2, 2:4] = low  # window (0, 1): the lowest value only
    x[0, 0, 2:4, 0:2] = low  # window (1, 0) too
    return indices_case(x)


def indices_case(x: np.ndarray) -> DivergenceCase:
    """The Indices of a 2x2, stride 2 MaxPool of ``x``: SONNX's against the emulated runtime's."""
    model = maxpool(x.shape, x.dtype, kernel=(2, 2), strides=(2, 2))
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[1])
    found = crafted(model, [x], expected, lowest_start_indices(x))
    return DivergenceCase(found.node, 1, found.expected, found.actual, found.mismatch, found.inputs)
