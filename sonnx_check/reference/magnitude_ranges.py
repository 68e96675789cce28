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
    least: float | None = None
    for start in range(0, a.shape[axis], step):
        index = [slice(None)] * a.ndim
        index[axis] = slice(start, start + step)
        block = a[tuple(index)]
        positive = block[block > 0]
        if positive.size:
            value = float(positive.min())
            least = value if least is None else min(least, value)
    return 0.0 if least is None else least
