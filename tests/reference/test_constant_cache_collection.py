"""A weight's cached forms are forgotten when it dies, which a garbage collection can make happen at any
allocation, also inside the cache's own locked section: that must not deadlock (it did: a comparison hung in
Gemm's bound when a collection ran while a new entry was being made)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from sonnx_check.reference import constant_cache


def _frozen(values: np.ndarray) -> np.ndarray:
    return np.frombuffer(values.tobytes(), dtype=values.dtype)  # read-only down to bytes: cacheable


def test_an_array_collected_while_the_cache_is_locked_is_forgotten_without_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    constant_cache.clear()
    doomed = _frozen(np.arange(4.0))
    constant_cache.derived(doomed, "sum", lambda: 6.0)
    cycle: list[object] = [doomed]
    cycle.append(cycle)  # only a collection frees it
    del doomed, cycle
    entry_class = constant_cache._Entry

    class CollectingEntry(entry_class):  # type: ignore[misc, valid-type]
        def __init__(self, array: np.ndarray) -> None:
            super().__init__(array)
            gc.collect()  # as an allocation inside the locked section may

    monkeypatch.setattr(constant_cache, "_Entry", CollectingEntry)
    other = _frozen(np.ones(3))
    done: list[float] = []
    worker = threading.Thread(
        target=lambda: done.append(constant_cache.derived(other, "sum", lambda: float(other.sum()))),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=30)
    assert done == [3.0], "the cache deadlocked on a collection inside its lock"
    assert constant_cache.derived(other, "sum", lambda: -1.0) == 3.0  # kept, and the dead entry forgotten
    constant_cache.clear()
