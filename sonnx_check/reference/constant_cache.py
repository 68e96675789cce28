"""Forms of an immutable operand derived once and reused while it lives: a model's Conv weights meet the
kernels once per dataset of a comparison (W in float64, |W|, its finiteness), the same array each time.

Safe by construction:
- only arrays that can never change are cached: read-only views down to an immutable ``bytes`` object (what
  ``onnx.numpy_helper.to_array`` returns for raw tensor data); any other array is derived afresh every time;
- the entry is found by ``id`` but holds the array only through a weak reference and is used only while that
  reference still gives that very object, so a different array (even one reusing a dead array's id) never
  hits it; the entry goes when its array is garbage collected;
- memory is bounded: at most ``LIMIT_BYTES`` of derived arrays in total; beyond it values are derived
  without being kept (first come, first kept: the datasets of a comparison cycle through every node, so a
  least-recently-used policy would keep none of the large ones). A large form (``large=True``: a big
  weight's float64 magnitudes, 784 MiB for VGG-16's classifier, kept block by block) is kept only within
  an ``allowance`` that the caller has planned in its memory budget, and is dropped when it ends;
- the derived arrays are returned read-only, so no caller can alter what the next one gets.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

# ResNet-18's Conv weights take about 135 MiB in float64 and as float32 magnitudes: about half are kept
LIMIT_BYTES = 64 << 20

_lock = threading.Lock()
# A weak reference's callback runs when its array dies, which a garbage collection can make happen at any
# allocation, also while this thread holds _lock: the callbacks only queue their work, done under the lock.
_dead: deque[Callable[[], None]] = deque()
_entries: dict[int, _Entry] = {}
# the arrays derived here, by id (checked against the weak reference)
_frozen: dict[int, weakref.ref[np.ndarray]] = {}
_kept_bytes = 0
# large forms: kept only within ``allowance`` (its bytes), dropped at its end
_large_limit = 0
_large_bytes = 0


class _Entry:
    __slots__ = ("source", "values", "nbytes", "large", "__weakref__")

    def __init__(self, array: np.ndarray) -> None:
        key = id(array)

        def forget(_: weakref.ref[np.ndarray]) -> None:
            _queue(lambda: _forget(key, self))

        self.source = weakref.ref(array, forget)
        self.values: dict[Hashable, Any] = {}
        self.nbytes = 0
        self.large: dict[Hashable, int] = {}  # the large forms among values, and their bytes


def _queue(work: Callable[[], None]) -> None:
    """A callback's work: done now if the lock is free, else by whoever takes it next (this thread may hold
    it: a collection inside the locked section)."""
    _dead.append(work)
    if _lock.acquire(blocking=False):
        try:
            while _dead:
                _dead.popleft()()
        finally:
            _lock.release()


@contextmanager
def _locked() -> Iterator[None]:
    """The lock, once the queued callbacks' work is done."""
    with _lock:
        while _dead:
            _dead.popleft()()
        yield


def _forget(key: int, entry: _Entry) -> None:  # under the lock
    global _kept_bytes, _large_bytes
    if _entries.get(key) is entry:
        del _entries[key]
        _kept_bytes -= entry.nbytes
        _large_bytes -= sum(entry.large.values())


def immutable(array: np.ndarray) -> bool:
    """Whether nothing can ever change the array's values: read-only at every level down to a ``bytes``, or
    an array this cache derived (read-only at every level, held by nobody else writable)."""
    ref = _frozen.get(id(array))
    if ref is not None and ref() is array:
        return True
    node: object = array
    while isinstance(node, np.ndarray):
        if node.flags.writeable:
            return False
        node = node.base
    return isinstance(node, bytes)


def derived(array: np.ndarray, name: Hashable, compute: Callable[[], Any], *, large: bool = False) -> Any:
    """``compute()``, a function of ``array``'s values only, kept under ``name`` for an immutable array
    (``large``: within the current ``allowance`` rather than ``LIMIT_BYTES``)."""
    global _kept_bytes, _large_bytes
    if not isinstance(array, np.ndarray) or not immutable(array):
        return compute()
    key = id(array)
    with _locked():
        entry = _entries.get(key)
        if entry is not None and entry.source() is array and name in entry.values:
            return entry.values[name]
    value = compute()
    size = value.nbytes if isinstance(value, np.ndarray) else 0
    if isinstance(value, np.ndarray):
        _freeze(value)
    with _locked():
        entry = _entries.get(key)
        if entry is None or entry.source() is not array:
            if (
                entry is not None
            ):  # a dead array's entry whose callback has not run yet (it will find it gone)
                del _entries[key]
                _kept_bytes -= entry.nbytes
                _large_bytes -= sum(entry.large.values())
            entry = _entries[key] = _Entry(array)
        if large:
            if _large_bytes + size <= _large_limit:
                entry.values[name] = value
                entry.large[name] = size
                _large_bytes += size
        elif _kept_bytes + size <= LIMIT_BYTES:
            entry.values[name] = value
            entry.nbytes += size
            _kept_bytes += size
    return value


@contextmanager
def allowance(nbytes: int) -> Iterator[None]:
    """Keep large forms (``derived(..., large=True)``) up to ``nbytes`` in all while the block runs (memory
    its caller has planned for them); they are dropped when it ends, whoever still holds their arrays."""
    global _large_limit
    with _locked():
        _large_limit = max(0, nbytes)
    try:
        yield
    finally:
        with _locked():
            _large_limit = 0
        _drop_large()


def _drop_large() -> None:
    global _large_bytes
    dropped = []  # released after the lock
    with _locked():
        for entry in _entries.values():
            for name, size in entry.large.items():
                dropped.append(entry.values.pop(name, None))
                _large_bytes -= size
            entry.large.clear()
    del dropped


def _freeze(value: np.ndarray) -> None:
    """Read-only at every level (a reshaped result's base too), and known as immutable while it lives."""
    node: object = value
    while isinstance(node, np.ndarray):
        node.flags.writeable = False
        node = node.base
    key = id(value)

    def unfreeze(ref: weakref.ref[np.ndarray]) -> None:
        _queue(lambda: _unfreeze(key, ref))

    with _locked():
        _frozen[key] = weakref.ref(value, unfreeze)


def _unfreeze(key: int, ref: weakref.ref[np.ndarray]) -> None:  # under the lock
    if _frozen.get(key) is ref:
        del _frozen[key]


def clear() -> None:
    """Drop every entry (tests)."""
    global _kept_bytes, _large_bytes
    with _locked():
        _entries.clear()
        _kept_bytes = 0
        _large_bytes = 0


def derived_from_view(
    array: np.ndarray, name: Hashable, compute: Callable[[], Any], *, large: bool = False
) -> Any:
    """``derived`` for a view of an immutable array (a transposed or expanded weight, a new view object on
    every call): kept on the array the view's memory belongs to, under ``name`` and the view's geometry
    (type, shape, strides, offset), which with that array's values determine the view's values."""
    if not isinstance(array, np.ndarray) or not immutable(array):
        return compute()
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is array:
        return derived(array, name, compute, large=large)
    offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return derived(root, (name, array.dtype.str, array.shape, array.strides, offset), compute, large=large)
