"""The IEEE 754 special values of a Conv's sums (products_special.special_values, for the Conv reference):
the same counts, taken from masks of X instead of its im2col.

Where W is finite (a model's weights), a term is special only through X: NaN where X_p is NaN in the window
(the NaN operand poisons its column), and where an infinite X_p meets a zero weight (0 * inf, the dilation's
holes included); +-inf by the signs of the infinite terms, NaN when both occur. products_special counts them
with matrix products of small integers over float64 tests of the whole im2col (NaN, infinity, copysign: T
times X's size); here the tests run once on X, and the products take the im2col of a float32 map of X's
infinities (+-1), one strided copy. The counts are exact integers in either evaluation, so the values are
the same, bit for bit (tests/reference/test_conv_fast_paths.py holds them equal). A W that is not finite
(operator-level evidence) takes the general path, which also counts W's infinities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from sonnx_check.reference import constant_cache
from sonnx_check.reference.products_special import count_type, kept_signs, no_zero, with_bias


class Plan(Protocol):
    """What is read of a Conv's plan (conv._Plan)."""

    # read-only: the plan may compute them (properties)
    @property
    def x(self) -> np.ndarray: ...
    @property
    def w(self) -> np.ndarray: ...
    @property
    def left(self) -> np.ndarray: ...
    @property
    def bias(self) -> np.ndarray | None: ...
    @property
    def depthwise(self) -> bool: ...

    def padded_map(
        self, image: int, dtype: type, fill: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> np.ndarray: ...

    def gathered(self, padded: np.ndarray) -> np.ndarray: ...

    def over_windows(self, ufunc: np.ufunc, padded: np.ndarray) -> np.ndarray: ...


def special_values(plan: Plan, image: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(where, values) of products_special.special_values for one image's products, None where W is not
    finite (the caller takes the general path)."""
    w = plan.w
    if not constant_cache.derived(w, "finite", lambda: bool(np.isfinite(w).all())):
        return None
    left = plan.left  # (BL, M, K)
    nan_map = plan.padded_map(image, np.bool_, np.isnan)
    nan_cols = plan.over_windows(np.logical_or, nan_map)  # (C, OH, OW): a NaN in the window
    nan_cols = (
        nan_cols.reshape(nan_cols.shape[0], -1) if plan.depthwise else nan_cols.any(axis=0).reshape(1, -1)
    )
    infinities = plan.padded_map(image, count_type(left.shape[2]), _infinite_signs)
    shape = (max(left.shape[0], nan_cols.shape[0]), left.shape[1], nan_cols.shape[1])
    nan = np.broadcast_to(nan_cols[:, None, :], shape)
    pos_inf = neg_inf = np.zeros(shape, dtype=bool)
    if infinities.any():
        t = plan.gathered(infinities)  # (BR, K, P): +-1 on the infinities, as products_special's t
        s = kept_signs(left)  # sign(W) in the counts' type, kept with W
        b = np.matmul(s, t)
        counts = plan.over_windows(np.add, np.abs(infinities))  # (C, OH, OW): the window's infinities
        counts = counts.reshape(counts.shape[0], -1) if plan.depthwise else counts.sum(axis=0).reshape(1, -1)
        column_counts = counts[:, None, :]
        if no_zero(s):  # every infinity of a column makes an infinite term, none times a zero
            a = np.broadcast_to(column_counts, b.shape)
        else:
            a = np.matmul(np.abs(s), np.abs(t))
            nan = nan | ((column_counts - a) > 0)  # 0 * inf
        pos_inf, neg_inf = np.broadcast_to((a + b) > 0, shape), np.broadcast_to((a - b) > 0, shape)
    bias = None if plan.bias is None else np.broadcast_to(plan.bias, shape)
    return with_bias(nan, pos_inf, neg_inf, bias)


def _infinite_signs(x: np.ndarray) -> np.ndarray:
    """+1 on +inf, -1 on -inf, 0 elsewhere (NaN included: its window is NaN already)."""
    return np.where(np.isinf(x), np.sign(x), 0)
