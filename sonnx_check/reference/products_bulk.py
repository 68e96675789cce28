"""Tier 2 of the sum-of-products kernels (products_common.py's docstring has the three tiers): when tier 1
leaves many elements undecided (the edge data: zeros, signed zeros, ties, subnormals), they are settled over
the whole output with matrix products on the rows and columns those elements touch, not gathered one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from sonnx_check.reference import constant_cache
from sonnx_check.reference.exact_sums import F64, lowest_bit_exponent
from sonnx_check.reference.products_special import count_type, take_cols, take_rows

SumBound = Callable[[tuple[np.ndarray, ...]], np.ndarray]
# (BR, P): per column of R, the exponent of its lowest set bit (+inf: all zeros), non-finite values counted
# as zeros (tier 2 runs on the finite problem); a caller that has it more cheaply than from R (Conv: a
# windowed minimum over X, T times smaller than its im2col)
ColumnUnits = Callable[[], np.ndarray]


class Operands(Protocol):
    """What tier 2 reads of a ``Products``."""

    left: np.ndarray
    right: np.ndarray
    bias: np.ndarray | None
    dtype: np.dtype
    shape: tuple[int, int, int]
    k: int
    column_units: ColumnUnits | None


class BulkSettlement:
    """Tier 2 on the operands of one ``products_common.Products`` (``L @ R (+ bias)``: L of shape (BL, M, K),
    R of shape (BR, K, P), the bias broadcast to the output's shape (B, M, P) or None). ``sum_bound`` gives
    an upper bound of sum|l*r| + |bias| on a block of the output (an np.ix_ index)."""

    def __init__(self, products: Operands, sum_bound: SumBound) -> None:
        self.left, self.right, self.bias = products.left, products.right, products.bias
        self.dtype, self.shape, self.k = products.dtype, products.shape, products.k
        self.batch, self.m, self.p = products.shape
        self._sum_bound = sum_bound
        self._column_units = products.column_units

    def settle(self, result: np.ndarray, approx: np.ndarray, pending: np.ndarray) -> None:
        """Tier 2, vectorised over the whole output with matrix products over the rows and columns the
        pending elements touch (a boolean mask, cleared where an element is decided).

        (a) Sums whose products are all zero: their approximation is exactly the bias (0 without one), since
        a float64 sum of zeros is exact, so only those are candidates. Where a row of L or a column of R
        is all zero there is no non-zero product; elsewhere a 0/1 product counts them. Where there is
        none the sum is the bias exactly, or, for a zero bias, a signed zero: -0 exactly when every term
        (and the bias) is -0, i.e. no k has sign(l) = sign(r) (a zero term's sign is the exclusive or of
        its factors' signs), counted as K - sum_k sl - sum_k sr + 2 sum_k sl sr with sl, sr the sign bits.
        (b) float16/float32: sums the float64 product computed exactly. Each product l*r is an integer
        multiple of 2^(eL_i + eR_j), eL_i the exponent of the lowest set bit over row i of L, eR_j over
        column j of R, so every partial sum in any order (FMA included) is a multiple of that unit (or of the
        bias's) of magnitude at most sum|l*r| + |bias|; below 2^53 units each is representable and none
        rounds: the approximation IS the exact sum, and its conversion to the type the correct rounding.
        An exact zero there has a non-zero term, so it is +0."""
        bias = self.bias
        candidate = pending & (approx == (0.0 if bias is None else bias))
        if candidate.any():
            zero_terms = candidate & ~self._any_nonzero_product(candidate)
            signed = zero_terms
            if bias is not None:
                np.copyto(result, bias, where=zero_terms & (bias != 0), casting="same_kind")  # exact
                signed = zero_terms & (bias == 0)
            if signed.any():  # -0 + -0 = -0: every term -0, and the bias (if any) -0
                negative = ~self._any_equal_signs(signed)
                if bias is not None:
                    negative &= np.signbit(bias)
                np.copyto(result, np.where(negative, -0.0, 0.0).astype(self.dtype), where=signed)
            pending &= ~zero_terms
        if self.dtype != F64 and pending.any():
            exact = pending & self._exact_float64_sums(pending)
            with np.errstate(over="ignore"):
                np.copyto(result, approx, where=exact, casting="same_kind")  # one rounding; +0 for an exact 0
            pending &= ~exact

    def _block(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        """The rows of L and columns of R the elements of ``mask`` touch, and their index into the output."""
        index = self._index(mask)
        rows, cols = index[1][0, :, 0], index[2][0, 0]
        return take_rows(self.left, rows, self.m), take_cols(self.right, cols, self.p), index

    def _index(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """The np.ix_ index of the rows and columns the elements of ``mask`` touch."""
        rows = np.flatnonzero(mask.any(axis=(0, 2)))
        cols = np.flatnonzero(mask.any(axis=(0, 1)))
        return np.ix_(np.arange(self.batch), rows, cols)

    def _any_nonzero_product(self, mask: np.ndarray) -> np.ndarray:
        """Where some k has l != 0 and r != 0 (only meaningful inside ``mask``)."""
        left, right, index = self._block(mask)
        nonzero_l, nonzero_r = left != 0, right != 0
        found = nonzero_l.any(axis=2)[:, :, None] & nonzero_r.any(axis=1)[:, None, :]
        if found.any():  # a zero row or column settles the others without a product
            found = found & (np.matmul(nonzero_l.astype(np.float32), nonzero_r.astype(np.float32)) > 0)
        return self._embed(found, index)

    def _any_equal_signs(self, mask: np.ndarray) -> np.ndarray:
        """Where some k has signbit(l) = signbit(r) (only meaningful inside ``mask``)."""
        left, right, index = self._block(mask)
        work = count_type(self.k)
        # L is often a model's constant W: its sign bits and their counts are kept (constant_cache)
        sign_l = constant_cache.derived(left, ("sign bits", work), lambda: np.signbit(left).astype(work))
        count_l = constant_cache.derived(sign_l, "row sums", lambda: sign_l.sum(axis=2, dtype=np.int64))
        sign_r = np.signbit(right)
        both = np.matmul(sign_l, sign_r.astype(work)).astype(np.int64)  # exact counts
        equal = self.k - count_l[:, :, None] - sign_r.sum(axis=1)[:, None, :] + 2 * both
        return self._embed(equal > 0, index)

    def _exact_float64_sums(self, mask: np.ndarray) -> np.ndarray:
        """Tier 2 (b): where the float64 evaluation of the sum is provably exact (inside ``mask``)."""
        index = self._index(mask)
        rows, cols = index[1][0, :, 0], index[2][0, 0]
        unit = self._row_units(rows)[:, :, None] + self._column_units_of(cols)[:, None, :]  # +inf: no term
        if self.bias is not None:
            unit = np.minimum(unit, lowest_bit_exponent(self.bias[index]))
        total = self._sum_bound(index)
        limit = np.ldexp(1.0, np.minimum(unit, 960.0).astype(np.int64) + 53)  # no term: 2^1013, no limit
        return self._embed((unit >= -1074) & (total < limit), index)

    def _row_units(self, rows: np.ndarray) -> np.ndarray:
        """The exponent of the lowest set bit of each row of L in ``rows`` (the minimum over its row, an exact
        value): a constant L's (a model's W) kept for every row, the others' taken on those rows."""
        left = self.left
        if not constant_cache.immutable(left):
            return lowest_bit_exponent(take_rows(left, rows, self.m)).min(axis=2)
        every = constant_cache.derived(left, "row units", lambda: lowest_bit_exponent(left).min(axis=2))
        return every if rows.size == self.m else every[:, rows]

    def _column_units_of(self, cols: np.ndarray) -> np.ndarray:
        """The same for the columns ``cols`` of R: the caller's (``column_units``) or from R."""
        if self._column_units is not None:
            every = self._column_units()
            return every if cols.size == self.p else every[:, cols]
        return lowest_bit_exponent(take_cols(self.right, cols, self.p)).min(axis=1)

    def _embed(self, block: np.ndarray, index: tuple[np.ndarray, ...]) -> np.ndarray:
        if index[1].size == self.m and index[2].size == self.p:  # the whole output: no scatter
            return np.broadcast_to(block, self.shape)
        full = np.zeros(self.shape, dtype=bool)
        full[index] = np.broadcast_to(block, full[index].shape)
        return full
