"""Numpy emulations of SIGMOID-FLOAT16-RATIONAL and TANH-FLOAT16-RATIONAL: tract 0.23.9's float16 Sigmoid and
Tanh kernels (a clamped rational approximation, every operation rounded to float16), written out here step by
step, apart from the package's own evaluation."""

from __future__ import annotations

import numpy as np
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase

H = np.float16


def _clamped(x: np.ndarray, bound: float) -> np.ndarray:
    limit = H(np.float32(bound))
    return np.where(np.isnan(x), x, np.minimum(np.maximum(x, -limit), limit)).astype(H)


@np.errstate(all="ignore")  # a NaN of X goes through every step
def float16_sigmoid(x: np.ndarray) -> np.ndarray:
    x = _clamped(x.astype(H), 6.92)
    x2 = (x * x).astype(H)
    p = (x2 * H(-0.0000124702)).astype(H) + H(0.00400222)
    p = (x2 * p).astype(H) + H(0.249895)
    p = (p * x).astype(H)
    q = (x2 * H(0.098734)).astype(H) + H(1.0)
    return ((p / q).astype(H) + H(0.5)).astype(H)


@np.errstate(all="ignore")
def float16_tanh(x: np.ndarray) -> np.ndarray:
    x = _clamped(x.astype(H), 3.84)
    x2 = (x * x).astype(H)
    p = (x2 * H(0.082654955)).astype(H) + H(0.99963124)
    p = (p * x).astype(H)
    q = (x2 * H(0.0065383179)).astype(H) + H(0.41401828)
    q = (x2 * q).astype(H) + H(1.0)
    return (p / q).astype(H)


# inputs where the kernels depart from SONNX (the plateaus, a few ulps in the middle) and where they agree
SIGMOID_X = np.array([-np.inf, -10.0, -3.0, 0.0, 0.5, 1.957, 4.098, 10.0, np.inf, np.nan], H)
TANH_X = np.array([-np.inf, -3.832, -0.5, 0.0, 0.03436, 0.5, 2.0, 3.832, np.inf, np.nan], H)


def _case(op_type: str, x: np.ndarray, kernel) -> DivergenceCase:  # type: ignore[no-untyped-def]
    model = node_model(op_type, [x])
    expected = np.asarray(reference.run_node(model.graph.node[0], [x])[0])
    return crafted(model, [x], expected, kernel(x))


def sigmoid_case() -> DivergenceCase:
    return _case("Sigmoid", SIGMOID_X, float16_sigmoid)


def tanh_case() -> DivergenceCase:
    return _case("Tanh", TANH_X, float16_tanh)
