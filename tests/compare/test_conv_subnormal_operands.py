"""SUBNORMAL-OPERANDS-AS-ZERO in Conv (issue 29): tract 0.23.9 reads a Conv's subnormal operands as zero, as
it does MatMul's (measured without sonnx-check: -inf * 1.4e-45 in a window gives NaN where SONNX gives
-inf; 3.4e38 * -1.4e-45 + 1 gives 1 where SONNX gives 0.9999995). Without Conv in the entry, the NaN of
benchmarks/runtime_conformance.py's tract CNNs was named BFLOAT16-INFERENCE, a behaviour tract does not
have. Emulated in numpy here; a wrong element stays unexplained."""

from __future__ import annotations

import numpy as np
from test_known import with_actual
from test_known_operators import crafted, node_model

from sonnx_check import reference
from sonnx_check.compare.judging.known_departures import DivergenceCase, by_id

ID = "SUBNORMAL-OPERANDS-AS-ZERO"
SMALLEST = np.float32(1.401298464324817e-45)
ATTRIBUTES = {"auto_pad": "NOTSET", "dilations": [1, 1], "group": 1, "kernel_shape": [2, 2],
              "pads": [0, 0, 0, 0], "strides": [1, 1]}  # fmt: skip


def _flushed(values: np.ndarray) -> np.ndarray:
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(values) < tiny, np.float32(0), values).astype(np.float32)


def _case() -> DivergenceCase:
    x = np.array([[[[-np.inf, 1.0, 3.4e38], [2.0, SMALLEST, 1.0], [0.5, 0.25, 2.0]]]], np.float32)
    w = np.array([[[[SMALLEST, 1.0], [1.0, 1.0]]], [[[-SMALLEST, 0.5], [1.0, 1.0]]]], np.float32)
    model = node_model("Conv", [x, w], ATTRIBUTES)
    expected = np.asarray(reference.run_node(model.graph.node[0], [x, w])[0])
    with np.errstate(invalid="ignore"):
        actual = np.asarray(reference.run_node(model.graph.node[0], [_flushed(x), _flushed(w)])[0])
    return crafted(model, [x, w], expected, actual.astype(np.float32))


def test_a_conv_reading_subnormals_as_zero_is_explained():
    found = _case()
    assert np.isnan(found.actual[0, 0, 0, 0]) and found.expected[0, 0, 0, 0] == -np.inf
    assert found.mismatch.sum() >= 2
    assert by_id(ID).explains(found)[found.mismatch].all()


def test_a_wrong_element_stays_unexplained():
    found = _case()
    actual = found.actual.copy()
    actual[0, 1, 1, 1] += np.float32(0.5)
    planted = with_actual(found, actual)
    assert planted.mismatch[0, 1, 1, 1] and not by_id(ID).explains(planted)[0, 1, 1, 1]
