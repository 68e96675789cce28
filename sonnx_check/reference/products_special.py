"""The IEEE 754 special values of sums of products (products_common): where ``sum_k L[b,i,k] * R[b,k,j]
(+ bias)`` is NaN or +-inf by the rules of the float sections applied to its terms, decided without relying
on any NaN handling of the BLAS.

A term is NaN when a factor is NaN or it is 0 * inf; the sum is NaN when a term is NaN or when it holds both
+inf and -inf terms, otherwise +-inf when it holds an infinite term (or an infinite bias). A NaN operand
decides its whole row or column at once; the infinite terms of the other rows and columns are counted exactly
with two matrix products of small integers per operand holding an infinity (``infinite_terms``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sonnx_check.reference import constant_cache


def special_values(
    left: np.ndarray, right: np.ndarray, bias: np.ndarray | None, shape: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Where the sum is NaN or +-inf by the IEEE rules on its terms, and those values. A NaN operand
    poisons its row or column; the infinite terms of the others are counted exactly with matrix products
    of small integers (``infinite_terms``), over the rows and columns no NaN has decided already. L
    (BL, M, K), R (BR, K, P), the bias broadcast to ``shape`` = (B, M, P) or None."""
    # L is often a model's constant W (all finite, known once for all its datasets): no NaN, no infinity
    left_finite = constant_cache.derived(left, "finite", lambda: bool(np.isfinite(left).all()))
    nan_rows = np.zeros(left.shape[:2], dtype=bool) if left_finite else np.isnan(left).any(axis=2)  # (BL, M)
    nan_cols = np.isnan(right).any(axis=1)  # (BR, P)
    nan = np.broadcast_to(nan_rows[:, :, None] | nan_cols[:, None, :], shape)
    pos_inf, neg_inf = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    rows = np.flatnonzero(~nan_rows.all(axis=0))
    cols = np.flatnonzero(~nan_cols.all(axis=0))
    if rows.size and cols.size:
        block_l = take_rows(left, rows, shape[1])
        block_r = take_cols(right, cols, shape[2])
        inf_l = np.zeros((1, 1, 1), dtype=bool) if left_finite else np.isinf(block_l)
        inf_r = np.isinf(block_r)
        if inf_l.any() or inf_r.any():
            counts: Sequence[np.ndarray | int] = [0, 0, 0]  # NaN terms (0 * inf), +inf terms, -inf terms
            if inf_r.any():
                signs = kept_signs(left) if block_l is left else None
                counts = _add(counts, infinite_terms(block_l, block_r, inf_r, signs))
            if inf_l.any():  # the same with the roles of L and R exchanged (transposed)
                swapped = infinite_terms(
                    block_r.transpose(0, 2, 1), block_l.transpose(0, 2, 1), inf_l.transpose(0, 2, 1)
                )
                counts = _add(counts, [c.transpose(0, 2, 1) for c in swapped])
            nan_terms, pos_terms, neg_terms = (np.asarray(c) > 0 for c in counts)
            if rows.size == shape[1] and cols.size == shape[2]:
                nan = nan | nan_terms
                pos_inf, neg_inf = np.broadcast_to(pos_terms, shape), np.broadcast_to(neg_terms, shape)
            else:
                nan = nan.copy()
                index = np.ix_(np.arange(shape[0]), rows, cols)
                nan[index] |= np.broadcast_to(nan_terms, nan[index].shape)
                pos_inf[index] = np.broadcast_to(pos_terms, pos_inf[index].shape)
                neg_inf[index] = np.broadcast_to(neg_terms, neg_inf[index].shape)
    return with_bias(nan, pos_inf, neg_inf, bias)


def with_bias(
    nan: np.ndarray, pos_inf: np.ndarray, neg_inf: np.ndarray, bias: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The special outputs (mask, values) once the bias is added to the sums' NaN and infinities: a NaN
    bias or infinities of both signs give NaN, an infinite one its sign."""
    if bias is not None:
        nan = nan | np.isnan(bias)
        pos_inf = pos_inf | (bias == np.inf)
        neg_inf = neg_inf | (bias == -np.inf)
    nan = nan | (pos_inf & neg_inf)
    values = np.where(nan, np.nan, np.where(pos_inf, np.inf, -np.inf))
    return nan | pos_inf | neg_inf, values


def take_rows(a: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Rows ``rows`` of a stacked matrix (all of them: no copy)."""
    return a if rows.size == count else a[:, rows, :]


def take_cols(a: np.ndarray, cols: np.ndarray, count: int) -> np.ndarray:
    return a if cols.size == count else a[:, :, cols]


def count_type(k: int) -> type:
    """A type whose matrix products of small integers (|entries| <= 1, K terms) are exact: every partial
    sum is an integer of magnitude at most K, exact in float32 below 2^24."""
    return np.float32 if k < 1 << 24 else np.float64


def kept_signs(left: np.ndarray) -> np.ndarray:
    """sign(L) for ``infinite_terms``, kept for a constant L (a model's W meets every edge dataset)."""
    return constant_cache.derived(left, "count signs", lambda: _count_signs(left))


def no_zero(s: np.ndarray) -> bool:
    """Whether signs ``s`` hold no zero (nor NaN): every infinity then makes an infinite term; kept."""
    return bool(constant_cache.derived(s, "no zero", lambda: bool(s.all())))


def _count_signs(left: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        s = np.sign(left).astype(count_type(left.shape[2]))  # -1, 0, 1, NaN for NaN (1e-300 is 1)
    np.copyto(s, 0, where=np.isnan(s))  # NaN operands: their rows are NaN already
    return s


def infinite_terms(
    left: np.ndarray, right: np.ndarray, inf_r: np.ndarray, signs: np.ndarray | None = None
) -> list[np.ndarray]:
    """Counts, per element, of the terms l * r with r = +-inf: NaN ones (l = 0), +inf ones, -inf ones (NaN
    operands excluded; their rows and columns are NaN already). With s = sign(l) and t = sign(r) on the
    infinite r (0 elsewhere): A = |s| @ |t| counts the infinite terms, B = s @ t their sign balance, so
    (A + B) / 2 are +inf, (A - B) / 2 are -inf, and the infinities of R's column less A are times a zero.

    Where L holds no zero (nor NaN), |s| = 1 and A is the column's count of infinities: one product.
    ``signs``: s when the caller has it."""
    work = count_type(left.shape[2])
    s = _count_signs(left) if signs is None else signs
    with np.errstate(invalid="ignore", over="ignore"):
        magnitude: np.ndarray = inf_r.astype(work)
        t = np.copysign(magnitude, right, dtype=work)  # +-1 on the infinities (the cast keeps signs)
    b = np.matmul(s, t)
    column_counts = magnitude.sum(axis=1)[:, None, :]
    # no zero (nor NaN) in L: every infinity of a column makes an infinite term
    if no_zero(s):
        a = np.broadcast_to(column_counts, b.shape)
        zeros = np.zeros(b.shape, dtype=work)
    else:
        a = np.matmul(np.abs(s), magnitude)
        zeros = column_counts - a
    return [zeros, a + b, a - b]


def _add(total: Sequence[np.ndarray | int], parts: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [t + p for t, p in zip(total, parts, strict=True)]
