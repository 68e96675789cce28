"""Numpy emulation of FLOAT64-AS-SATURATED-FLOAT32 (OpenVINO 2026.4.1's CPU plugin, measured by
/tmp repro in verify29's report: Abs(-inf) = 3.4028235e38, Exp(+inf) = 3.4028235e38, -inf / -inf = 1):
float64 operands clipped to float32's finite range (infinities too, NaN kept), the node computed in float32,
its result clipped again and widened."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase

TOP = float(np.finfo(np.float32).max)


def saturate(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(values), values, np.clip(values, -TOP, TOP)).astype(np.float32)


def narrowed_runtime(op: str, *operands: np.ndarray) -> np.ndarray:
    """What the runtime gives for a float64 node ``op``: float32 arithmetic on saturated operands."""
    small = [saturate(np.asarray(v, np.float64)) for v in operands]
    with np.errstate(all="ignore"):
        if op == "Add":
            result = small[0] + small[1]
        elif op == "Neg":
            result = -small[0]
        elif op == "Exp":
            result = np.exp(small[0])
        elif op == "Div":
            result = small[0] / small[1]
        else:
            raise ValueError(op)
    return saturate(result.astype(np.float64)).astype(np.float64)


def case(op: str, *operands: np.ndarray) -> DivergenceCase:
    model = node_model(op, list(operands))
    expected = np.asarray(reference.run_node(model.graph.node[0], list(operands))[0])
    found = crafted(model, list(operands), expected, narrowed_runtime(op, *operands))
    return DivergenceCase(found.node, 0, found.expected, found.actual, found.mismatch, found.inputs)


def float64_saturated_add() -> DivergenceCase:
    a = np.array([-np.inf, 1e300, 1 + 2.0**-30, 0.25, 2.0])
    b = np.array([1.0, 1.0, 0.0, 1e-320, 3.0])
    return case("Add", a, b)
