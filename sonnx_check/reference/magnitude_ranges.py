"""The least positive of float32 magnitudes, exact and a block at a time (products_common.magnitude_range:
the range that chooses float32 or float64 for a bound's sum of |products|)."""

from __future__ import annotations

import numpy as np

_RANGE_BLOCK = 1 << 22  # elements looked at at once by least_positive


def least_positive(a: np.ndarray) -> float:
    """The least positive value of float32 magnitudes holding no NaN (+inf counts), 0 for none: exact, so
    taken a block at a time along the longest axis (a large weight, often a transposed view, is neither
    copied nor offset whole)."""
    axis = int(np.argmax(a.shape))
    step = max(1, _RANGE_BLOCK // max(1, a.size // a.shape[axis]))
    least = 0xFFFFFFFF
    for start in range(0, a.shape[axis], step):
        index = [slice(None)] * a.ndim
        index[axis] = slice(start, start + step)
        # non-negative floats order as their bit patterns; less one, a zero wraps to the largest pattern:
        # the least positive's pattern less one is the minimum, without gathering the positive values
        bits = np.asarray(a[tuple(index)], dtype=np.float32).view(np.uint32)
        least = min(least, int((bits - np.uint32(1)).min()))
    pattern = np.array((least + 1) & 0xFFFFFFFF, dtype=np.uint32)  # all zeros: the largest wraps to 0
    value = float(pattern.view(np.float32))
    return value if value > 0 else 0.0  # +0 for no positive value (a stray -0 included)
