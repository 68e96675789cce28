"""Numpy emulations of tract 0.23.9's activations beyond float32 (benchmarks/probe_tract_activations.py
measures them): LeakyRelu as ``x > 0 ? x : alpha * x`` (the zeros go through the product), and float16
Sigmoid and Tanh as the float32 approximation rounded to float16."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase


def case_of(model, inputs, emulate) -> DivergenceCase:  # behaviours.py's (which imports this module)
    expected = np.asarray(reference.run_node(model.graph.node[0], inputs)[0])
    with np.errstate(all="ignore"):
        actual = np.asarray(emulate(*inputs)).astype(expected.dtype)
    return crafted(model, inputs, expected, actual)


SIGNED_ZEROS = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan]


def tract_leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    a = x.dtype.type(np.float32(alpha))
    with np.errstate(all="ignore"):
        return np.where(x > 0, x, a * x)


def leaky_relu_case(alpha: float = float("nan"), dtype: type = np.float32) -> DivergenceCase:
    x = np.array(SIGNED_ZEROS, dtype)
    model = node_model("LeakyRelu", [x], {"alpha": alpha})
    return case_of(model, [x], lambda v: tract_leaky_relu(v, alpha))


def float16_sigmoid_case() -> DivergenceCase:
    from behaviours import tract_sigmoid

    x = np.array([-np.inf, np.nan, -20.0, -16.0, -9.0, 0.0, 5.0, 20.0, np.inf], np.float16)
    return case_of(node_model("Sigmoid", [x]), [x], lambda v: tract_sigmoid(v.astype(np.float32)))


def float16_tanh_case() -> DivergenceCase:
    from behaviours import tract_tanh

    x = np.array([-np.inf, np.nan, -9.0, 0.5, 10.0, np.inf, np.nan], np.float16)
    return case_of(node_model("Tanh", [x]), [x], lambda v: tract_tanh(v.astype(np.float32)))
