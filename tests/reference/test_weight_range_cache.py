"""A weight's magnitude range (least positive, largest |w|) is taken once per weight, not on every dataset
(issue 31: VGG-16's Gemm weights were scanned again by every edge dataset), with the same bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import numpy_helper

from sonnx_check.reference import constant_cache, products_common
from sonnx_check.reference.gemm import gemm_abs, gemm_with_abs


@pytest.fixture(autouse=True)
def _empty_cache():
    constant_cache.clear()
    yield
    constant_cache.clear()


def _weight(values: np.ndarray) -> np.ndarray:
    """As the battery holds a model's weight: decoded from the initializer's bytes, read-only."""
    return numpy_helper.to_array(numpy_helper.from_array(values))


def _counting(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = products_common.magnitude_range

    def counted(a: np.ndarray) -> tuple[float, float]:
        calls.append(a.size)
        return original(a)

    monkeypatch.setattr(products_common, "magnitude_range", counted)
    return calls


def test_a_weights_range_is_taken_once_over_datasets_through_new_views(monkeypatch) -> None:
    calls = _counting(monkeypatch)
    w = _weight(np.linspace(-1, 1, 12 * 5, dtype=np.float32).reshape(5, 12))
    for a in (
        np.full((1, 12), 1e-40, np.float32),
        np.ones((1, 12), np.float32),
        np.zeros((1, 12), np.float32),
    ):
        gemm_abs(a, w.T, None)  # a new transposed view each time, as Gemm's transB gives it
    assert calls.count(w.size) == 1 and calls.count(12) == 3  # the data's range: every time


def test_a_writable_weight_or_another_view_is_never_served_the_kept_range(monkeypatch) -> None:
    calls = _counting(monkeypatch)
    values = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    w = _weight(values)
    a = np.ones((1, 3), np.float32)
    gemm_abs(a, w, None)
    gemm_abs(a, w, None)
    gemm_abs(a[:, :2], w[:2], None)  # another view of the same bytes: its own range
    writable = values.copy()
    gemm_abs(a, writable, None)
    writable[0, 0] = 0.0  # changed: a kept range would now be wrong
    gemm_abs(a, writable, None)
    assert calls.count(12) == 3 and calls.count(8) == 1


_floats = st.one_of(
    st.floats(width=32, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 3.4e38, float("inf")]),
)


@settings(max_examples=60, deadline=None)
@given(
    w=hnp.arrays(np.float32, st.tuples(st.integers(1, 6), st.integers(1, 6)), elements=_floats),
    rows=st.lists(st.lists(_floats, min_size=6, max_size=6), min_size=1, max_size=4),
)
def test_kept_and_fresh_ranges_give_identical_outputs_and_bounds(w, rows) -> None:
    """Every dataset of a configuration (one row of A each) against one weight, the weight's range kept
    after the first: the outputs and sum |a b| bounds are bit for bit those of a fresh computation."""
    held = _weight(w)
    for row in rows:
        a = np.array([row[: w.shape[0]]], dtype=np.float32)
        kept_y, kept_abs = gemm_with_abs(a, held, None)  # the range kept from the first row on
        fresh_y, fresh_abs = gemm_with_abs(a, w.copy(), None)  # a writable copy: never kept
        assert kept_y.tobytes() == fresh_y.tobytes()
        assert kept_abs.tobytes() == fresh_abs.tobytes()
        assert gemm_abs(a, held.T.T, None).tobytes() == fresh_abs.tobytes()
