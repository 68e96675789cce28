"""Deliberately naive, per-element implementations of the SONNX semantics, written separately from the
kernels (no shared code, not even the output-size formula) so the property tests compare two readings of
the specification."""

from __future__ import annotations

import itertools
import math

import numpy as np


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def naive_maxpool(x, kernel, strides, dilations, pads):
    """Returns (Y, Indices), or None when some window holds no element of X."""
    n, c, h, w = x.shape
    out_h = (h + pads[0] + pads[2] - (dilations[0] * (kernel[0] - 1) + 1)) // strides[0] + 1
    out_w = (w + pads[1] + pads[3] - (dilations[1] * (kernel[1] - 1) + 1)) // strides[1] + 1
    y = np.zeros((n, c, out_h, out_w), dtype=x.dtype)
    indices = np.zeros((n, c, out_h, out_w), dtype=np.int64)
    for b, ch, m, q in itertools.product(range(n), range(c), range(out_h), range(out_w)):
        best_key, best_value, best_index = None, None, None
        for i, j in itertools.product(range(kernel[0]), range(kernel[1])):
            row = m * strides[0] + i * dilations[0] - pads[0]
            col = q * strides[1] + j * dilations[1] - pads[1]
            if not (0 <= row < h and 0 <= col < w):
                continue  # padding is never selected
            value = x[b, ch, row, col].item()
            # "any NaN value in X_p is considered as -inf"; Max_F's order (+0 > -0) for floats
            key = _order_key(-math.inf if _is_nan(value) else value)
            if best_key is None or key > best_key:  # strictly greater: the first of equals stays
                best_key, best_value, best_index = key, x[b, ch, row, col], ((b * c + ch) * h + row) * w + col
        if best_key is None:
            return None
        y[b, ch, m, q] = -np.inf if _is_nan(best_value.item()) else best_value
        indices[b, ch, m, q] = best_index
    return y, indices


def _order_key(value):
    """+inf > positive > +0 > -0 > negative > -inf (seed 002)."""
    return (value, not math.copysign(1.0, value) < 0) if isinstance(value, float) else (value, True)


def naive_max(arrays):
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    out = np.zeros(shape, dtype=arrays[0].dtype)
    for index in np.ndindex(*shape):
        values = []
        for a in arrays:
            aligned = index[len(index) - a.ndim :]
            values.append(
                a[tuple(0 if size == 1 else k for k, size in zip(aligned, a.shape, strict=True))].item()
            )
        if any(_is_nan(v) for v in values):
            out[index] = np.nan  # NaN is absorbing
        else:
            out[index] = max(values, key=_order_key)
    return out
