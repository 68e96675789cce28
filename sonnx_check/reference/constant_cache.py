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
  least-recently-used policy would keep none of the large ones);
- the derived arrays are returned read-only, so no caller can alter what the next one gets.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

# ResNet-18's Conv weights take about 135 MiB in float64 and as float32 magnitudes: about half are kept
LIMIT_BYTES = 64 << 20

_lock = threading.Lock()
_entries: dict[int, _Entry] = {}
# the arrays derived here, by id (checked against the weak reference)
_frozen: dict[int, weakref.ref[np.ndarray]] = {}
_kept_bytes = 0


class _Entry:
    __slots__ = ("source", "values", "nbytes", "__weakref__")

    def __init__(self, array: np.ndarray) -> None:
        key = id(array)

        def forget(_: weakref.ref[np.ndarray]) -> None:
            _forget(key, self)

        self.source = weakref.ref(array, forget)
        self.values: dict[Hashable, Any] = {}
        self.nbytes = 0


def _forget(key: int, entry: _Entry) -> None:
    global _kept_bytes
    with _lock:
        if _entries.get(key) is entry:
            del _entries[key]
            _kept_bytes -= entry.nbytes


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


def derived(array: np.ndarray, name: Hashable, compute: Callable[[], Any]) -> Any:
    """``compute()``, a function of ``array``'s values only, kept under ``name`` for an immutable array."""
    global _kept_bytes
    if not isinstance(array, np.ndarray) or not immutable(array):
        return compute()
    key = id(array)
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry.source() is array and name in entry.values:
            return entry.values[name]
    value = compute()
    size = value.nbytes if isinstance(value, np.ndarray) else 0
    if isinstance(value, np.ndarray):
        _freeze(value)
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry.source() is not array:
            if entry is not None:  # a dead array's entry whose callback has not run yet
                _kept_bytes -= entry.nbytes
            entry = _entries[key] = _Entry(array)
        if _kept_bytes + size <= LIMIT_BYTES:
            entry.values[name] = value
            entry.nbytes += size
            _kept_bytes += size
    return value


def _freeze(value: np.ndarray) -> None:
    """Read-only at every level (a reshaped result's base too), and known as immutable while it lives."""
    node: object = value
    while isinstance(node, np.ndarray):
        node.flags.writeable = False
        node = node.base
    key = id(value)

    def unfreeze(ref: weakref.ref[np.ndarray]) -> None:
        _unfreeze(key, ref)

    with _lock:
        _frozen[key] = weakref.ref(value, unfreeze)


def _unfreeze(key: int, ref: weakref.ref[np.ndarray]) -> None:
    with _lock:
        if _frozen.get(key) is ref:
            del _frozen[key]


def clear() -> None:
    """Drop every entry (tests)."""
    global _kept_bytes
    with _lock:
        _entries.clear()
        _kept_bytes = 0


def derived_from_view(array: np.ndarray, name: Hashable, compute: Callable[[], Any]) -> Any:
    """``derived`` for a view of an immutable array (a transposed or expanded weight, a new view object on
    every call): kept on the array the view's memory belongs to, under ``name`` and the view's geometry
    (type, shape, strides, offset), which with that array's values determine the view's values."""
    if not isinstance(array, np.ndarray) or not immutable(array):
        return compute()
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is array:
        return derived(array, name, compute)
    offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return derived(root, (name, array.dtype.str, array.shape, array.strides, offset), compute)
