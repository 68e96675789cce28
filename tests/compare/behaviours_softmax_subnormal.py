"""Numpy emulation of SOFTMAX-SUBNORMAL-RANGE-LOST (tract 0.23.9, /tmp/v29_repro_tract_softmax.py in
verify29's report): an exponential that stops at the normal range, results near FLT_MIN instead of
subnormals."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase

TINY = np.finfo(np.float32).tiny


def lost_subnormals(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, every result below FLT_MIN replaced by a value in [0.4, 0.7]·FLT_MIN,
    as tract gives them (the measured 9.7e-39 to 1.7e-38)."""
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(axis=-1, keepdims=True))
    y = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    garbage = np.float32(TINY) * np.float32(0.4) + np.float32(TINY) * np.float32(0.3) * (
        np.arange(y.size) % 2
    )
    return np.where(y < TINY, garbage.reshape(y.shape), y).astype(np.float32)


def subnormal_case(x: np.ndarray | None = None) -> DivergenceCase:
    if x is None:
        x = np.array([[0.0, -87.0, -88.0, -95.0, -100.0, -103.0, -120.0, -1.0]], np.float32)
    model = node_model("Softmax", [x], {"axis": 1})
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    found = crafted(model, [x], expected, lost_subnormals(x))
    return DivergenceCase(found.node, 0, found.expected, found.actual, found.mismatch, found.inputs)
