"""The float16/float32 fast path of Exp, Log, Sigmoid and Tanh: float64 arithmetic with a proven error bound,
a per-element certificate, and the double-double path for what the certificate cannot decide. Correct
rounding stays a guarantee: every result here is compared bit for bit with the double-double kernel (itself
certified, and checked against 100-digit decimal arithmetic in test_kernels_elementwise.py)."""

from __future__ import annotations

from fractions import Fraction

import naive_elementwise as naive
import numpy as np
import pytest
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sonnx_check.reference import exp as exp_module
from sonnx_check.reference import fast_float
from sonnx_check.reference import log as log_module
from sonnx_check.reference import sigmoid as sigmoid_module
from sonnx_check.reference import tanh as tanh_module

MODULES = {"exp": exp_module, "log": log_module, "sigmoid": sigmoid_module, "tanh": tanh_module}
KERNEL = {
    "exp": exp_module.exp,
    "log": log_module.log,
    "sigmoid": sigmoid_module.sigmoid,
    "tanh": tanh_module.tanh,
}
EXACT = {
    "exp": naive.exact_exp,
    "log": naive.exact_log,
    "sigmoid": naive.exact_sigmoid,
    "tanh": naive.exact_tanh,
}
FAST = {
    "exp": (fast_float.exp_fast, fast_float.EXP_ERROR),
    "log": (fast_float.log_fast, fast_float.LOG_ERROR),
    "sigmoid": (fast_float.sigmoid_fast, fast_float.SIGMOID_ERROR),
    "tanh": (fast_float.tanh_fast, fast_float.TANH_ERROR),
}


def _double_double(op: str, x: np.ndarray) -> np.ndarray:
    return MODULES[op]._exact_chunk(x.reshape(-1), x.dtype).reshape(x.shape)


@pytest.mark.parametrize("op", sorted(MODULES))
def test_every_float16_is_the_double_double_result(op: str) -> None:
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        assert_identical(KERNEL[op](x), _double_double(op, x))


HARD = {  # float32 inputs around what is hard: saturation, the overflow and underflow thresholds, 1 for Log
    "exp": [(-104.5, -86.0), (86.0, 89.0), (-1e-6, 1e-6), (-20.0, 20.0)],
    "sigmoid": [(-104.5, -86.0), (15.0, 18.5), (-1e-6, 1e-6), (-20.0, 20.0)],
    "tanh": [(-10.0, -8.0), (8.0, 10.0), (-0.07, 0.07), (-3.0, 3.0)],
    "log": [(0.98, 1.02), (0.0, 1e-38), (1e30, 3e38), (0.5, 2.0)],
}


@st.composite
def hard_float32(draw):
    op = draw(st.sampled_from(sorted(MODULES)))
    low, high = draw(st.sampled_from(HARD[op]))
    low, high = float(np.float32(low)), float(np.float32(high))
    elements = st.floats(low, high, width=32) | st.floats(width=32)
    return op, draw(hnp.arrays(np.float32, st.integers(1, 300), elements=elements))


@settings(max_examples=200, deadline=None)
@given(hard_float32())
def test_float32_results_are_the_double_double_results_on_hard_ranges(case) -> None:
    op, x = case
    with np.errstate(all="ignore"):
        assert_identical(KERNEL[op](x), _double_double(op, x))


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(MODULES))
def test_near_halfway_float32_results_are_correctly_rounded(op: str) -> None:
    """Inputs whose exact result is within a few 2**-40 of a midpoint between two float32 (found by a
    search over 2**22 inputs with the fast path itself): exactly those the certificate must send on."""
    rng = np.random.default_rng(7)
    low, high = HARD[op][3]
    x = rng.uniform(low, high, 1 << 22).astype(np.float32)
    fast, _ = FAST[op]
    p = fast(x.astype(np.float64))
    bits = np.abs(p).view(np.uint64) & np.uint64((1 << 29) - 1)
    distance = np.abs(bits.astype(np.int64) - (1 << 28))
    hardest = x[np.argsort(distance)[:24]]
    y = KERNEL[op](hardest)
    for value, result in zip(hardest, y, strict=True):
        expected = naive.round_to(EXACT[op](float(value)), np.float32)
        assert np.float32(expected).tobytes() == result.tobytes(), (op, value)


@st.composite
def near_midpoints(draw):
    """A double within a few thousand units of a midpoint between two floats of the narrow type (or in its
    subnormal and overflow ranges), and the type."""
    dtype = np.dtype(draw(st.sampled_from([np.float16, np.float32])))
    info = np.finfo(dtype)
    exponent = draw(st.integers(int(info.minexp) - int(info.nmant) - 2, int(info.maxexp) + 1))
    significand = draw(st.integers(1 << info.nmant, (2 << info.nmant) - 1))
    midpoint = (Fraction(2 * significand + 1, 2 << info.nmant)) * Fraction(2) ** exponent
    offset = draw(st.integers(-5000, 5000))
    p = float(midpoint) * (1 + offset * 2.0**-52)
    return dtype, (-p if draw(st.booleans()) else p), draw(st.sampled_from([2.0**-50, 2.0**-46, 2.0**-40]))


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(near_midpoints())
def test_a_decided_element_rounds_like_every_value_of_its_error_interval(case) -> None:
    dtype, p, error = case
    y, undecided = fast_float.narrow_certified(np.array([p]), dtype, error)
    if undecided[0]:
        return
    for end in (Fraction(p) * (1 - Fraction(error)), Fraction(p) * (1 + Fraction(error))):
        expected = naive.round_to(end, dtype)
        assert np.array([expected], dtype).tobytes() == y.tobytes(), (p, end)


def test_the_certificate_sends_few_elements_on() -> None:
    x = np.random.default_rng(3).standard_normal(1 << 18).astype(np.float32) * 5
    for op, (fast, error) in FAST.items():
        v = np.abs(x) if op == "log" else x
        v = v[v != 0]
        _, undecided = fast_float.narrow_certified(fast(v.astype(np.float64)), np.dtype(np.float32), error)
        assert np.count_nonzero(undecided) <= 64, op


def test_the_stored_tables_are_the_derived_ones() -> None:
    """fast_float_tables.py stores the tables' doubles (start-up time); derived again here in 60-digit
    arithmetic, every bit must agree."""
    from sonnx_check.reference import fast_float_tables as tables

    for stored, derived in (
        (tables.floats(tables.EXP_TABLE), tables.derive_exp_table()),
        (tables.floats(tables.LOG_C), tables.derive_log_c()),
    ):
        assert np.array_equal(stored.view(np.uint64), np.array(derived).view(np.uint64))
    assert np.array_equal(fast_float._TABLE, tables.floats(tables.EXP_TABLE))
    assert np.array_equal(fast_float._LOG_C, tables.floats(tables.LOG_C))
