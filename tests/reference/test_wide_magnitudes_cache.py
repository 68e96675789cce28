"""A weight's float64 magnitudes, which the sum-of-products bound takes on subnormal or extreme data, are
kept with the weight across datasets within the allowance its caller planned (issue 31: VGG-16's
classifier weight, 784 MiB in float64, was converted again on every edge dataset), and dropped when the
allowance ends. The bound is the same, bit for bit, kept or not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import numpy_helper

from sonnx_check.reference import constant_cache, products_common
from sonnx_check.reference.gemm import gemm_abs

_edge = st.sampled_from([0.0, -0.0, 1e-45, -3e-42, 2.0**-126, 0.5, -1.0, 3.0, 3e38, -2e38, 1e-20, 7.0])


@pytest.fixture(autouse=True)
def _empty_cache():
    constant_cache.clear()
    yield
    constant_cache.clear()


def _weight(values: np.ndarray) -> np.ndarray:
    """As the battery holds a model's weight: decoded from the initializer's bytes, read-only."""
    return numpy_helper.to_array(numpy_helper.from_array(values))


def _conversions(monkeypatch) -> list[tuple[int, ...]]:
    """The float64 magnitude forms computed for a weight (their shapes; the data's are not kept)."""
    made: list[tuple[int, ...]] = []

    def counted(magnitudes: np.ndarray, source: np.ndarray) -> np.ndarray:
        def compute() -> np.ndarray:
            if not source.flags.writeable or source.shape[-1] == 5:
                made.append(magnitudes.shape)
            return np.asarray(magnitudes, dtype=np.float64)

        return constant_cache.derived_from_view(source, "float64 magnitudes", compute, large=True)

    monkeypatch.setattr(products_common, "_wide_magnitudes", counted)
    return made


def _datasets() -> list[np.ndarray]:
    return [np.full((1, 12), v, np.float32) for v in (1e-40, 3e38, -2e38, 1e-44)]


def test_within_an_allowance_a_weights_float64_magnitudes_are_made_once(monkeypatch) -> None:
    made = _conversions(monkeypatch)
    w = _weight(np.linspace(-1, 1, 12 * 5, dtype=np.float32).reshape(5, 12))
    with constant_cache.allowance(8 * w.size):
        for a in _datasets():
            gemm_abs(a, w.T, None)  # transB: a new view of the weight on each call
    assert made == [(1, 12, 5)]
    made.clear()
    gemm_abs(_datasets()[0], w.T, None)  # the allowance ended: dropped, and not kept again
    gemm_abs(_datasets()[0], w.T, None)
    assert made == [(1, 12, 5), (1, 12, 5)]


def test_without_room_or_for_a_writable_weight_nothing_is_kept(monkeypatch) -> None:
    made = _conversions(monkeypatch)
    values = np.linspace(-1, 1, 12 * 5, dtype=np.float32).reshape(5, 12)
    w = _weight(values)
    with constant_cache.allowance(8 * w.size - 1):  # one byte short
        for a in _datasets()[:2]:
            gemm_abs(a, w.T, None)
    writable = values.copy()
    with constant_cache.allowance(2**30):
        for a in _datasets()[:2]:
            gemm_abs(a, writable.T, None)
    assert len(made) == 4


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_bound_is_the_same_kept_or_not(data: st.DataObject) -> None:
    k, p = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 6))
    w = _weight(data.draw(hnp.arrays(np.float32, (p, k), elements=_edge)))
    datasets = [data.draw(hnp.arrays(np.float32, (2, k), elements=_edge)) for _ in range(3)]
    constant_cache.clear()
    fresh = [gemm_abs(a, w.T, None) for a in datasets]
    with constant_cache.allowance(2**20):
        kept = [gemm_abs(a, w.T, None) for a in datasets]
    for x, y in zip(fresh, kept, strict=True):
        np.testing.assert_array_equal(x.view(np.uint64), y.view(np.uint64))
