"""run_node_with_abs on the exports' Conv and Gemm, whose bias is all zeros: the kernel gives the sum
|a b| (+ |c|) with the outputs (the judging then needs no run_abs of its own), the same bits as run_abs, and
the same outputs as run_node; an all-zero factor still gives none (every product is zero: no bound asked)."""

from __future__ import annotations

import numpy as np
from helpers import assert_identical
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.reference import conv as conv_module
from sonnx_check.reference import gemm as gemm_module

_CONV = h.make_node("Conv", ["X", "W", "B"], ["Y"], pads=[1, 1, 1, 1])
_GEMM = h.make_node("Gemm", ["A", "B", "C"], ["Y"], transB=1)

# finite float32 values with signed zeros, subnormals and ties' neighbours among them
_VALUES = st.one_of(
    st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 1.0, -1.0, 0.5, 3.0, 2.0**-126, 2.0**100]),
    st.floats(-1e3, 1e3, width=32),
)


def _zero_bias(size: int, negative: bool) -> np.ndarray:
    return np.full(size, -0.0 if negative else 0.0, dtype=np.float32)


@settings(max_examples=40, deadline=None)
@given(
    x=hnp.arrays(np.float32, (1, 2, 4, 4), elements=_VALUES),
    w=hnp.arrays(np.float32, (3, 2, 3, 3), elements=_VALUES),
    negative=st.booleans(),
)
def test_conv_with_a_zero_bias_gives_run_abs_and_run_node(
    x: np.ndarray, w: np.ndarray, negative: bool
) -> None:
    inputs = [x, w, _zero_bias(3, negative)]
    outputs, magnitude = reference.run_node_with_abs(_CONV, inputs)
    assert_identical(outputs[0], reference.run_node(_CONV, inputs)[0])
    if not x.any() or not w.any():
        assert magnitude is None
    else:
        assert magnitude is not None
        assert_identical(magnitude, conv_module.run_abs(_CONV, inputs, None))


@settings(max_examples=40, deadline=None)
@given(
    a=hnp.arrays(np.float32, (3, 5), elements=_VALUES),
    b=hnp.arrays(np.float32, (4, 5), elements=_VALUES),
    negative=st.booleans(),
)
def test_gemm_with_a_zero_bias_gives_run_abs_and_run_node(
    a: np.ndarray, b: np.ndarray, negative: bool
) -> None:
    inputs = [a, b, _zero_bias(4, negative)]
    outputs, magnitude = reference.run_node_with_abs(_GEMM, inputs)
    assert_identical(outputs[0], reference.run_node(_GEMM, inputs)[0])
    if not a.any() or not b.any():
        assert magnitude is None
    else:
        assert magnitude is not None
        assert_identical(magnitude, gemm_module.run_abs(_GEMM, inputs, None))


def test_a_non_finite_bias_still_gives_no_sum() -> None:
    """Non-finite data leave the sum to run_abs on demand, the bias included."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    bias = np.array([0.0, np.inf, 0.0], dtype=np.float32)
    outputs, magnitude = reference.run_node_with_abs(_CONV, [x, w, bias])
    assert magnitude is None
    assert_identical(outputs[0], reference.run_node(_CONV, [x, w, bias])[0])
