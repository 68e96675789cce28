"""Every example of seed 003 (MaxPool) and the Max order of seed 002, through ``evaluate`` on a model, with
the corrected values of docs/readings.md#errata-in-the-examples (int8 Example 4: Indices[1,0] = 0; 8x8
example: 4.81748948)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import assert_identical, max_node_model, maxpool_node_model
from seed_data import REAL_8X8, REAL_8X8_INDICES, REAL_8X8_Y

from sonnx_check import reference

INF = np.inf

# (name, dtype, X, pads, Y, Indices); kernel 2x2, strides 1, dilations 1 throughout seed 003's type sections.
# fmt: off
EXAMPLES = [
    ("float-1", np.float64,
     [[1.70792822, 1.59383029, 2.22933891],
      [1.39774388, 2.03411151, 3.15139065],
      [2.81201102, 5.85721996, 3.55039159]],
     (0, 0, 0, 0),
     [[2.03411151, 3.15139065], [5.85721996, 5.85721996]],
     [[4, 5], [7, 7]]),
    ("float-2", np.float64,
     [[2.41529657, 0.12586645, 5.17877496],
      [5.82770299, 3.77328965, 3.51988829],
      [1.40679595, 3.95043140, -1.37421443]],
     (1, 0, 1, 0),
     [[2.41529657, 5.17877496], [5.82770299, 5.17877496], [5.82770299, 3.95043140], [3.95043140, 3.95043140]],
     [[0, 2], [3, 2], [3, 7], [7, 7]]),
    ("float-3", np.float64,
     [[-INF, -INF, 4.56432533], [-INF, -INF, 2.55354471], [2.83691720, 3.46789489, 5.23979851]],
     (0, 0, 0, 0),
     [[-INF, 4.56432533], [3.46789489, 5.23979851]],
     [[0, 2], [7, 8]]),
    ("float-4", np.float64,
     [[-INF, 9.57875561, 4.56432533],
      [2.72844928, 3.54234851, 2.55354471],
      [2.83691720, 3.46789489, 5.23979851]],
     (1, 1, 1, 1),
     [[-INF, 9.57875561, 9.57875561, 4.56432533], [2.72844928, 9.57875561, 9.57875561, 4.56432533],
      [2.83691720, 3.54234851, 5.23979851, 5.23979851], [2.83691720, 3.46789489, 5.23979851, 5.23979851]],
     [[0, 1, 1, 2], [3, 1, 1, 2], [6, 4, 8, 8], [6, 7, 8, 8]]),
    ("int8-1", np.int8, [[-12, -13, 5], [-14, -15, 6], [7, 8, -1]], (0, 0, 0, 0),
     [[-12, 6], [8, 8]], [[0, 5], [7, 7]]),
    ("int8-2", np.int8, [[-128, -128, 5], [-128, -128, 6], [7, 8, -1]], (0, 0, 0, 0),
     [[-128, 6], [8, 8]], [[0, 5], [7, 7]]),
    ("int8-3", np.int8, [[1, 2, 0], [0, 3, 5], [-2, 5, 6]], (0, 1, 1, 1),
     [[1, 3, 5, 5], [0, 5, 6, 6], [-2, 5, 6, 6]], [[0, 4, 5, 5], [3, 7, 8, 8], [6, 7, 8, 8]]),
    # Erratum: the seed prints Indices[1,0] = 3; X[0,0] and X[1,0] are both -128 and the first wins.
    ("int8-4", np.int8, [[-128, -127, 5], [-128, -127, 6], [7, 8, -128]], (1, 1, 1, 1),
     [[-128, -127, 5, 5], [-128, -127, 6, 6], [7, 8, 8, 6], [7, 8, 8, -128]],
     [[0, 1, 2, 2], [0, 1, 5, 5], [6, 7, 7, 5], [6, 7, 7, 8]]),
    ("uint8-5", np.uint8, [[0, 1, 5], [1, 1, 6], [7, 8, 0]], (1, 1, 1, 1),
     [[0, 1, 5, 5], [1, 1, 6, 6], [7, 8, 8, 6], [7, 8, 8, 0]],
     [[0, 1, 2, 2], [3, 1, 5, 5], [6, 7, 7, 5], [6, 7, 7, 8]]),
]
# fmt: on


def _nchw(rows, dtype) -> np.ndarray:
    return np.array(rows, dtype=dtype)[None, None]


@pytest.mark.parametrize(
    ("name", "dtype", "x", "pads", "y", "indices"), EXAMPLES, ids=[e[0] for e in EXAMPLES]
)
def test_seed_003_examples(name, dtype, x, pads, y, indices) -> None:
    x_array = _nchw(x, dtype)
    out = reference.evaluate(maxpool_node_model(x_array, (2, 2), pads), {"X": x_array})
    assert_identical(out["Indices"], _nchw(indices, np.int64))
    assert_identical(out["Y"], _nchw(y, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_seed_003_real_8x8_example(dtype) -> None:
    x = _nchw(REAL_8X8, dtype)
    out = reference.evaluate(maxpool_node_model(x, (3, 3), (0, 0, 0, 0)), {"X": x})
    assert_identical(out["Indices"], _nchw(REAL_8X8_INDICES, np.int64))
    assert_identical(out["Y"], _nchw(REAL_8X8_Y, dtype))
    assert_identical(out["Y"], x.reshape(-1)[out["Indices"]])  # Y is exactly the element Indices designates


def test_seed_003_int8_example_4_differs_from_the_printed_erratum() -> None:
    x = _nchw(EXAMPLES[7][2], np.int8)
    out = reference.evaluate(maxpool_node_model(x, (2, 2), (1, 1, 1, 1)), {"X": x})
    assert out["Indices"][0, 0, 1, 0] == 0  # the seed prints 3


def test_flat_indices_count_batch_and_channel() -> None:
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    out = reference.evaluate(maxpool_node_model(x, (2, 2), (0, 0, 0, 0), strides=(2, 2)), {"X": x})
    assert out["Indices"][1, 2, 0, 0] == ((1 * 3 + 2) * 4 + 1) * 4 + 1
    assert_identical(out["Y"], x.reshape(-1)[out["Indices"]])


@pytest.mark.parametrize(
    ("window", "y", "index"),
    [
        ([np.nan, -INF, -INF, -INF], -INF, 0),  # NaN counts as -inf; the first real element is the index
        ([-INF, np.nan, 1.0, np.nan], 1.0, 2),
        ([np.nan, np.nan, np.nan, np.nan], -INF, 0),
        ([0.0, -0.0, -1.0, -2.0], 0.0, 0),  # Max_F: +0 > -0, so +0 and Indices at the first +0
        ([-0.0, 0.0, -1.0, -2.0], 0.0, 1),
        ([-0.0, -1.0, -0.0, 0.0], 0.0, 3),
        ([-0.0, -1.0, -0.0, -2.0], -0.0, 0),  # zeros all -0: the first
        ([-1.0, 0.0, 0.0, -0.0], 0.0, 1),  # equal +0: the first stays
        ([0.0, -0.0, 0.0, -1.0], 0.0, 0),  # a -0 between two +0 does not displace the first
        ([INF, np.nan, INF, 1.0], INF, 0),
    ],
)
def test_nan_and_signed_zero_windows(window, y, index) -> None:
    """Y and Indices, and Y alone (the kernel's other path): the same value, bit for bit."""
    x = np.array(window, dtype=np.float32).reshape(1, 1, 2, 2)
    out = reference.evaluate(maxpool_node_model(x, (2, 2), (0, 0, 0, 0)), {"X": x})
    assert_identical(out["Y"], np.full((1, 1, 1, 1), y, dtype=np.float32))
    assert out["Indices"].item() == index
    (alone,) = reference.run_node(
        onnx.helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], pads=[0, 0, 0, 0]), [x]
    )
    assert_identical(alone, out["Y"])


def test_a_padded_window_of_minus_infinity_gives_minus_infinity_not_the_lowest_finite_value() -> None:
    x = np.full((1, 16, 4, 4), -INF, dtype=np.float32)
    out = reference.evaluate(maxpool_node_model(x, (3, 3), (1, 1, 1, 1)), {"X": x})
    assert np.all(out["Y"] == -INF)
    assert out["Indices"].min() >= 0


# -- Max (seed 002: +inf > positive > +0 > -0 > negative > -inf; NaN absorbing) ----------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (0.0, -0.0, 0.0),
        (-0.0, 0.0, 0.0),  # seed 002 notes onnxruntime may return -0 here; the profile says +0
        (-0.0, -0.0, -0.0),
        (-0.0, -1.0, -0.0),
        (np.nan, 1.0, np.nan),
        (1.0, np.nan, np.nan),
        (-INF, np.nan, np.nan),
        (INF, -INF, INF),
        (-INF, -3.0, -3.0),
    ],
)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_max_order_of_seed_002(a, b, expected, dtype) -> None:
    left, right = np.array([a], dtype=dtype), np.array([b], dtype=dtype)
    out = reference.evaluate(max_node_model(left, right), {"A0": left, "A1": right})
    assert_identical(out["Y"], np.array([expected], dtype=dtype))


def test_max_broadcasts_numpy_style_and_reads_initializers() -> None:
    a = np.array([[1, 5, 3]], dtype=np.int32)
    b = np.array([[4], [2]], dtype=np.int32)
    c = np.array(3, dtype=np.int32)
    out = reference.evaluate(max_node_model(a, b, c, as_initializer=2), {"A0": a, "A1": b})
    assert_identical(out["Y"], np.array([[4, 5, 4], [3, 5, 3]], dtype=np.int32))


def test_max_of_one_input_is_a_copy() -> None:
    a = np.array([-0.0, np.nan, 2.0], dtype=np.float32)
    out = reference.evaluate(max_node_model(a), {"A0": a})
    assert_identical(out["Y"], a)
    assert out["Y"] is not a
