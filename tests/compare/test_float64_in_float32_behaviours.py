"""FLOAT64-AS-SATURATED-FLOAT32 composed with the runtime's own float32 behaviours (issue 29): OpenVINO
computes a float64 node in float32, where its float32 departures happen too, and saturates the result on
the way out (Exp(NaN) = +inf written as 3.4028235e38; a MatMul whose fused float32 partial sum overflows
to -inf, written as -3.4028235e38, where SONNX's binary64 sum is NaN or +inf). Measured on OpenVINO
2026.4.1 (--survey's reproducers); emulated in numpy here. An ordinary wrong element stays unexplained."""

from __future__ import annotations

import numpy as np
import pytest
from behaviours_float64 import TOP, saturate
from test_known import with_actual
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import by_id

ID = "FLOAT64-AS-SATURATED-FLOAT32"


def _case(op: str, inputs: list[np.ndarray], actual: np.ndarray):
    model = node_model(op, inputs)
    expected = np.asarray(reference.run_node(model.graph.node[0], inputs)[0])
    return crafted(model, inputs, expected, actual)


def _exp_nan_to_infinity(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        small = saturate(x)
        result = np.where(np.isnan(small), np.float32(np.inf), np.exp(small))
    return saturate(result.astype(np.float64)).astype(np.float64)


def _fused_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 sums with fused multiply-adds (each product exact, one rounding per step), saturated back."""
    x, y = saturate(a).astype(np.float64), saturate(b).astype(np.float64)
    out = np.zeros((x.shape[0], y.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                total = np.float32(0)
                for k in range(x.shape[1]):
                    total = np.float32(np.float64(total) + x[i, k] * y[k, j])
                out[i, j] = total
    return saturate(out).astype(np.float64)


def test_exp_of_nan_written_as_the_largest_float32_is_explained():
    x = np.array([np.nan, 1.0, -np.inf, 0.5, np.nan])
    found = _case("Exp", [x], _exp_nan_to_infinity(x))
    assert found.actual[0] == TOP and np.isnan(found.expected[0])  # OpenVINO: 3.4028234663852886e+38
    assert by_id(ID).explains(found)[found.mismatch].all()


def test_a_float32_partial_sum_overflowing_is_explained():
    # the survey's MatMul double case (edge/specials-mix): SONNX gives NaN or +inf, OpenVINO -3.4028235e38
    a = np.array([[5.90293386, -np.inf, -np.inf], [-np.inf, -np.inf, -2.83424201]])
    b = np.array([[6.14676651, -np.inf, -np.inf, -np.inf], [-np.inf, -8.3440234, -np.inf, -np.inf],
                  [-np.inf, -np.inf, -8.3440234, -np.inf]])  # fmt: skip
    found = _case("MatMul", [a, b], _fused_matmul(a, b))
    assert found.actual[0, 1] == -TOP and found.expected[0, 1] != -TOP
    assert by_id(ID).explains(found)[found.mismatch].all()


@pytest.mark.parametrize("op", ["Exp", "MatMul"])
def test_an_ordinary_wrong_element_stays_unexplained(op):
    if op == "Exp":
        x = np.array([np.nan, 1.0, 2.0])
        found = _case(op, [x], _exp_nan_to_infinity(x))
        k = (1,)
    else:
        a = np.array([[5.9, -np.inf], [1.0, 2.0]])
        b = np.array([[6.1, -np.inf], [-np.inf, -8.3]])
        found = _case(op, [a, b], _fused_matmul(a, b))
        k = (1, 0)
    actual = found.actual.copy()
    actual[k] = 3.0
    planted = with_actual(found, actual)
    assert planted.mismatch[k] and not by_id(ID).explains(planted)[k]


def test_a_binary64_quotient_one_ulp_off_is_not_narrowing():
    # tract's float64 Div as a * (1 / b): 7 / 10 one float64 ulp off, far within 64 float32 ulps of the
    # narrowed quotient but not a float32 value: DIV-RECIPROCAL's, not FLOAT64-AS-SATURATED-FLOAT32's
    a, b = np.array([7.0, 1.0]), np.array([10.0, 3.0])
    found = _case("Div", [a, b], a * (1 / b))
    assert found.mismatch[0]
    assert not by_id(ID).explains(found)[0]
    assert by_id("DIV-RECIPROCAL").explains(found)[0]
