"""Numpy emulation of UNSIGNED-AS-INT32 (OpenVINO 2026.4.1, /tmp/v29_repro_ov_uint64.py in verify29's
report): unsigned operands' low 32 bits read as int32, the operation done signed, the result sign-extended."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase


def low_int32(v: np.ndarray) -> np.ndarray:
    return (v.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)


def signed_runtime(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = low_int32(a), low_int32(b)
    if op == "Add":
        result = (x + y).astype(np.int32)
    elif op == "Less":
        return x < y
    elif op == "Max":
        result = np.maximum(x, y).astype(np.int32)
    else:
        raise ValueError(op)
    return (
        result.astype(np.int64).view(np.uint64).astype(a.dtype)
        if a.dtype == np.uint64
        else result.view(np.uint32)
    )


def unsigned_case(
    op: str = "Add", a: np.ndarray | None = None, b: np.ndarray | None = None
) -> DivergenceCase:
    if a is None or b is None:
        a = np.array([3_000_000_000, 2**40 + 5, 7, 15964169583016759020], np.uint64)
        b = np.array([1, 2, 3, 1], np.uint64)
    model = node_model(op, [a, b])
    expected = np.asarray(reference.run_node(model.graph.node[0], [a, b])[0])
    found = crafted(model, [a, b], expected, signed_runtime(op, a, b))
    return DivergenceCase(found.node, 0, found.expected, found.actual, found.mismatch, found.inputs)
