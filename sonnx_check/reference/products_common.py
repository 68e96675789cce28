"""Shared machinery of the sum-of-products kernels (Conv, MatMul, Gemm): the exact value of
``Y[b, i, j] = sum_k L[b, i, k] * R[b, k, j] (+ bias[b, i, j])``, rounded once to the output type.

Each kernel of the group reduces its operator to such a stacked matrix product (Conv through an im2col of the
zero-padded input) and calls ``Products(...).rounded()``. The result is the exact real value of the sum,
rounded to nearest, ties to even, in the output type: the kernel's own error is at most half an ulp of the
output type (so within 1 ulp of the exact result), for every finite result, overflow to +-inf and underflow to
subnormals or +-0 included. How, in tiers; each element leaves at the first tier that proves its value:

1. Tier 1, (a) an approximation with a rigorous bound E on its error:
   - float16/float32 operands: every product is exact in float64 (24 + 24 <= 53 bits), so one float64 BLAS
     product plus the bias errs by at most gamma_(K+1) * (sum|l*r| + |bias|), u = 2^-53, whatever the order
     of summation (blocked, FMA). sum|l*r| is bounded by Cauchy-Schwarz (row norm times column norm), one
     pass over each operand instead of a second product (Conv: from window sums of X squared), or is the
     caller's abs_sum (the fused calls).
   - float64 operands: the Ozaki error-free splitting. Each row of L and each column of R is scaled by a power
     of two to below 1 and cut into S slices of beta = floor((53 - ceil(log2 K)) / 2) bits. The product of two
     slices has K terms that are integer multiples of one power of two and whose sum stays below 2^53 of it,
     so the BLAS computes every slice product EXACTLY, in any order. The slice products with s + t <= S + 1
     are added in double-double; the truncation (remainders and omitted pairs) is at most
     K * 2^(-S*beta) * (3 + S^2) in the scaled units, the double-double addition 4 * pieces^2 * u^2 *
     sum|piece|. S makes the bound about 2^-20 of an ulp of a typical result.
   (b) certification: where the whole interval [approx - E, approx + E] rounds to one value of the
       output type (bit for bit, sign of zero included), that value is the correctly rounded result; a
       zero only where the interval lies on one side of 0 (an exact zero takes its sign from its terms).
2. Tier 2, in bulk, when tier 1 leaves many elements (the edge data: zeros, signed zeros, ties,
   subnormals), over the whole output with matrix products on the rows and columns those elements touch
   (``products_bulk.BulkSettlement``): sums whose products are all zero (counted by a 0/1 product; a zero
   row or column needs none) are the bias or a signed zero, -0 exactly when no k has sign(l) = sign(r)
   (counted by one product of the sign bits); for float16/float32, sums whose float64 evaluation is provably
   exact in any order (every product a multiple of 2^(eL_i + eR_j), the lowest set bits of row i and
   column j, and the sum of magnitudes below 2^53 of that unit) are the float64 product itself, rounded
   once.
3. Tier 3: the rest (a result within E of a rounding boundary, heavy cancellation) is recomputed from its
   own terms, gathered per element: vectorised, sums whose float64 evaluation is provably exact (as in
   tier 2, per element), then a pairwise double-double sum of the exact products (Dekker's TwoProduct for
   float64) with its own certificate; then, one element at a time, math.fsum (correctly rounded; for a
   narrower type the sign of the remainder decides a midpoint) or exact integers (each float is m * 2^e),
   rounded by :func:`round_dyadic`. Random data leaves about one element in 3000 here (near a midpoint).

The BLAS is trusted only to compute each element as a sum of its K products in some order (OpenBLAS and MKL
do; no Strassen-like scheme): the bounds of tier 1 hold for any order, and the Ozaki slice products, the exact
sums of tiers 2 and 3 and the integer counts below are exact in any order.

Special values follow IEEE 754 on the terms of the sum (the float sections of the texts): a term is NaN when a
factor is NaN or it is 0 * inf; the sum is NaN when a term is NaN or when it holds both +inf and -inf terms,
otherwise +-inf when it holds an infinite term (or an infinite bias). Finite operands never make an infinite
term: a finite sum overflows to +-inf only when its exact value rounds beyond the largest finite value. They
are decided in products_special.py, with exact integer counts, so no BLAS NaN handling is relied upon. An
exact zero sum is -0 when every term (and the bias) is -0, +0 otherwise (the IEEE sum of its terms, in any
order); an empty sum is +0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sonnx_check.reference import constant_cache
from sonnx_check.reference.exact_sums import (
    F64,
    TINY,
    U,
    _all_finite,
    _certify_double,
    _certify_rounding,
    _exact_terms,
    _norms,
    _scale,
    _split,
    batch_rows,
    ceil_log2,
    gamma,
    two_sum,
)
from sonnx_check.reference.magnitude_ranges import least_positive
from sonnx_check.reference.products_bulk import BulkSettlement, ColumnUnits
from sonnx_check.reference.products_special import special_values, take_cols, take_rows

_CHUNK = 1 << 21  # gathered terms per vectorised step of tier 3 (float64 words)
# Tier 2 runs when tier 1 leaves at least this many elements: fewer (the near-ties of random data, about 1 in
# 3000) are cheaper gathered one by one in tier 3, which has the same zero and exactness tests per element.
_BULK = 256


def _in_bulk(pending: int, size: int) -> bool:
    """Whether tier 2 settles the ``pending`` elements of an output of ``size``: many of them, or a quarter of
    a small output (a block of a wide Gemm, 167 columns of VGG's 25088-long rows, left whole by signed-zero
    data and a zero bias: tier 3 would gather 25088 terms per element). Both tiers give the same values."""
    return pending >= _BULK or (pending > 0 and 4 * pending >= size)


def abs_sum(
    left: np.ndarray,
    right: np.ndarray,
    bias: np.ndarray | None,
    dtype: np.dtype,
    *,
    finite: bool | None = None,
    absolute: bool = False,
    wide: bool | None = None,
    zero: bool = False,
) -> np.ndarray:
    """A rigorous upper bound, in float64, of ``s = sum_k |L[i,k] * R[k,j]| (+ |bias|)`` for every element,
    above s by at most a relative 2 gamma_(K+2) of the working precision (+ (K+1) float64 subnormals for
    float64 data): the quantity the sum-of-products accuracy bound gamma_n * sum|a*b| multiplies. L (BL, M,
    K), R (BR, K, P) and the bias hold values of ``dtype`` (in any float type; ``absolute``: L and R are
    already their magnitudes, in the working type; ``zero``: the caller knows an operand is all +-0 and
    finite). +inf where a term involves a non-finite operand, or where s is beyond the float64 range (an
    upper bound still).

    The working type is float64 for float64 operands. For float16/float32 operands it is float32 only where
    ``float32_suffices`` (no subnormal operand, no product below the normal range, no partial sum near
    overflow), float64 elsewhere (``wide``: the caller's verdict of ``float32_suffices``, which it then must
    hold; None: decided here from the magnitudes). A float32 BLAS slows down by two orders of magnitude on
    subnormals (a microcode assist per operation), while in float64 every product of two float32 values is
    exact (48 bits, between 2^-298 and 2^256): only the additions round; on normal data float32 is twice as
    fast, so both are used.

    Why it is an upper bound: with unit roundoff u of the working type, the terms t_k = |l_k| |r_k| are
    non-negative, so in any summation order, with or without FMA, each rounding to nearest of a product or
    a partial sum x gives at least x (1 - u), as long as no product underflows (sums of non-negative numbers
    never do; float64 data: a product that underflows loses at most tiny/2, tiny the smallest float64
    subnormal). So the BLAS result s^ >= (1 - u)^K s - K tiny/2, i.e. s <= (s^ + K tiny/2) / (1 - u)^K <=
    (s^ + K tiny/2)(1 + gamma_K). The result is s^ (1 + 2 gamma_(K+2)) (+ (K+1) tiny for float64 data) (+
    |bias| (1 + 2^-52)) in float64: the margin over (1 + gamma_K) covers the float64 roundings of those
    operations, so the result is at least s. The float64 products of float32 values are exact (the
    margin is then generous: only K - 1 additions round)."""
    narrow = np.dtype(dtype) != F64
    width = _column_width(left, right)
    if width is not None:
        return _blocked_abs_sum(left, right, bias, dtype, width, finite, absolute, wide, zero)
    sources: tuple[np.ndarray, np.ndarray] | None = None  # the operands whose magnitudes are taken here
    if not absolute:
        if narrow:
            sources = (left, right)
            left, right, known_finite, whole = narrow_magnitudes(left, right)
            wide = whole if wide is None else wide
            finite = known_finite if finite is None else finite  # the same test, already made
        else:
            left, right = (
                np.abs(np.asarray(left, dtype=np.float64)),
                np.abs(np.asarray(right, dtype=np.float64)),
            )
    shape = (max(left.shape[0], right.shape[0]), left.shape[1], right.shape[2])
    if zero:  # every product is +-0: no product to take
        total = np.zeros(shape)
    elif finite or (finite is None and _all_finite(left) and _all_finite(right)):
        total = _magnitude_product(left, right, narrow, wide, sources)
    else:  # +inf where a row of L or a column of R (of the element's batch) holds a non-finite operand;
        # the product's type is chosen on the finite rows and columns (``wide`` judged all of them)
        bad = (~np.isfinite(left)).any(axis=2)[:, :, None] | (~np.isfinite(right)).any(axis=1)[:, None, :]
        if bad.shape[0] == 1:  # the product on the finite rows and columns only
            rows, cols = np.flatnonzero(~bad[0].all(axis=1)), np.flatnonzero(~bad[0].all(axis=0))
            total = np.full(shape, np.inf)
            if rows.size and cols.size:
                block_l, block_r = take_rows(left, rows, shape[1]), take_cols(right, cols, shape[2])
                total[0][np.ix_(rows, cols)] = _magnitude_product(block_l, block_r, narrow, None)[0]
        else:
            left = np.where(np.isfinite(left), left, 0)
            right = np.where(np.isfinite(right), right, 0)
            total = _magnitude_product(left, right, narrow, None)
        total[np.broadcast_to(bad, total.shape)] = np.inf
    if total.shape != shape:
        total = np.broadcast_to(total, shape).copy()
    if bias is not None:
        with np.errstate(over="ignore", invalid="ignore"):  # a non-finite bias: +inf
            total += np.abs(np.asarray(bias, dtype=np.float64)) * (1.0 + 2.0 * U)
        if not finite:
            total[np.isnan(total)] = np.inf
    return total


# The most of R's magnitudes taken at once by ``abs_sum`` (bytes, in float64): a wide weight (VGG's 25088 x
# 4096 classifier: 392 MiB in float32, 784 MiB as float64 magnitudes) is taken by blocks of its columns, its
# type chosen on the whole. Each element's sum is the same K products as in one product, a rigorous upper
# bound either way; the BLAS's order of additions, hence the last bits, can depend on the product's column
# count (OpenBLAS: its tail columns). Blocks of 64-column multiples keep the whole's bits where the columns
# are whole groups (VGG's 4096: 167-column blocks changed them); otherwise they may differ within gamma_K.
_ABS_BLOCK_BYTES = 32 * 2**20
_ABS_BLOCK_COLUMNS = 64


def _column_width(left: np.ndarray, right: np.ndarray) -> int | None:
    """R's columns per block of ``abs_sum``, None for R taken whole (small, or a batched product)."""
    if left.ndim != 3 or right.ndim != 3 or left.shape[0] != 1 or right.shape[0] != 1:
        return None
    width = _ABS_BLOCK_BYTES // (8 * max(right.shape[1], left.shape[1], 1))
    width = max(_ABS_BLOCK_COLUMNS, width - width % _ABS_BLOCK_COLUMNS)
    return None if width >= right.shape[2] else width


def _blocked_abs_sum(
    left: np.ndarray,
    right: np.ndarray,
    bias: np.ndarray | None,
    dtype: np.dtype,
    width: int,
    finite: bool | None,
    absolute: bool,
    wide: bool | None,
    zero: bool,
) -> np.ndarray:
    """``abs_sum`` of unbatched operands by blocks of R's columns: every choice (the working type, whether
    all is finite, the finite rows and columns) made on the whole operands as ``abs_sum`` makes it, then
    each block's product; a block's float64 magnitudes are kept as the whole's would be (``sources``)."""
    narrow = np.dtype(dtype) != F64
    k, p = right.shape[1], right.shape[2]
    blocks = [slice(start, min(start + width, p)) for start in range(0, p, width)]
    working = np.float32 if narrow else np.float64
    given_left, given_right = left, right
    if not absolute:
        left = np.abs(np.asarray(left, dtype=working))

    def magnitudes(cols: slice) -> np.ndarray:
        block = given_right[:, :, cols]
        return block if absolute else np.abs(np.asarray(block, dtype=working))

    if narrow and not absolute:
        magnitudes_left = left  # what narrow_magnitudes keeps the range of (the same values)
        left_range = constant_cache.derived_from_view(
            given_left, "magnitude range", lambda: magnitude_range(magnitudes_left)
        )
        right_range = constant_cache.derived_from_view(
            given_right, "magnitude range", lambda: _blocks_range(magnitudes, blocks, None)
        )
        known_finite = bool(left_range[1] < np.inf and right_range[1] < np.inf)
        finite = known_finite if finite is None else finite
        if wide is None:
            wide = not float32_suffices(left_range, right_range, k)
    # as abs_sum: a None ``finite`` is looked at here, and a NaN from the bias is +inf unless it was given
    all_finite = finite
    if all_finite is None:
        all_finite = _all_finite(left) and all(_all_finite(magnitudes(cols)) for cols in blocks)
    shape = (1, left.shape[1], p)
    total = np.zeros(shape) if zero else np.full(shape, np.inf)
    if all_finite and not zero:
        if narrow and wide is None:  # magnitudes given: judged on the whole (as _magnitude_product does)
            wide = left.dtype == F64 or right.dtype == F64
            wide = wide or not float32_suffices(
                magnitude_range(left), _blocks_range(magnitudes, blocks, None), k
            )
        for cols in blocks:
            sources = None if absolute or not narrow else (given_left, given_right[:, :, cols])
            total[:, :, cols] = _magnitude_product(left, magnitudes(cols), narrow, wide, sources)
    elif not zero:  # +inf where a row of L or a column of R is not finite; the type chosen on the finite ones
        rows = np.flatnonzero(np.isfinite(left).all(axis=2)[0])
        finite_cols = [np.flatnonzero(np.isfinite(magnitudes(cols)).all(axis=1)[0]) for cols in blocks]
        if rows.size and any(c.size for c in finite_cols):
            block_l = take_rows(left, rows, shape[1])
            wide_here = not narrow or left.dtype == F64 or right.dtype == F64
            if narrow and not wide_here:
                right_range = _blocks_range(magnitudes, blocks, finite_cols)
                wide_here = not float32_suffices(magnitude_range(block_l), right_range, k)
            for cols, chosen in zip(blocks, finite_cols, strict=True):
                if chosen.size:
                    block_r = take_cols(magnitudes(cols), chosen, cols.stop - cols.start)
                    product = _magnitude_product(block_l, block_r, narrow, wide_here)[0]
                    total[0, :, cols][np.ix_(rows, chosen)] = product
    if bias is not None:
        bias64 = np.broadcast_to(np.asarray(bias), shape)
        for cols in blocks:
            with np.errstate(over="ignore", invalid="ignore"):  # a non-finite bias: +inf
                total[:, :, cols] += np.abs(np.asarray(bias64[:, :, cols], dtype=np.float64)) * (
                    1.0 + 2.0 * U
                )
        if not finite:
            total[np.isnan(total)] = np.inf
    return total


def _blocks_range(
    magnitudes: Callable[[slice], np.ndarray], blocks: list[slice], chosen: list[np.ndarray] | None
) -> tuple[float, float]:
    """``magnitude_range`` of R's magnitudes taken by blocks of columns (``chosen``: only those columns of
    each block): the least positive of the blocks' least positive values, the largest of their largest, NaN
    for both where a block holds a NaN (as the whole's minimum and maximum are then)."""
    lows, highs = [], []
    for index, cols in enumerate(blocks):
        block = magnitudes(cols)
        if chosen is not None:
            block = block[:, :, chosen[index]]
        low, high = magnitude_range(block)
        lows.append(low)
        highs.append(high)
    if any(np.isnan(high) for high in highs):
        return float("nan"), float("nan")
    positive = [low for low in lows if low > 0]
    return (min(positive) if positive else 0.0), (max(highs) if highs else 0.0)


def narrow_magnitudes(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """For float16/float32 operands: |L| and |R| in float32, whether every operand is finite, and whether
    ``abs_sum`` needs float64 for them (``wide``: not ``float32_suffices``): one look at each range."""
    given_left, given_right = left, right
    left = np.abs(np.asarray(left, dtype=np.float32))
    right = np.abs(np.asarray(right, dtype=np.float32))
    # a weight's range is the same on every dataset: kept while the weight lives (an exact min and max)
    left_range = constant_cache.derived_from_view(
        given_left, "magnitude range", lambda: magnitude_range(left)
    )
    right_range = constant_cache.derived_from_view(
        given_right, "magnitude range", lambda: magnitude_range(right)
    )
    finite = bool(left_range[1] < np.inf and right_range[1] < np.inf)  # NaN compares false
    return left, right, finite, not float32_suffices(left_range, right_range, left.shape[-1])


def magnitude_range(a: np.ndarray) -> tuple[float, float]:
    """The least positive and the largest value of float32 magnitudes (non-negative, sign bits clear), 0 for
    no positive one; the largest is inf or NaN where one is. The minimum itself where it is positive, else
    from the bit patterns, which order non-negative floats as their values."""
    a = np.asarray(a, dtype=np.float32)
    if a.size == 0:
        return 0.0, 0.0
    low, high = float(a.min()), float(a.max())
    if low != 0:  # positive, or NaN with a NaN high
        return low, high
    return least_positive(a), high


def float32_suffices(left: tuple[float, float], right: tuple[float, float], k: int) -> bool:
    """Whether the float32 product of magnitudes with these ranges (``magnitude_range``) is fast and in range:
    every operand and every non-zero product normal (no microcode assists, no underflow), and K times the
    largest product below 2^126 (no partial sum near overflow, in any order)."""
    (low_l, high_l), (low_r, high_r) = left, right
    if high_l == 0 or high_r == 0:  # every product is zero
        return True
    normal = 2.0**-126
    return bool(
        low_l >= normal and low_r >= normal and low_l * low_r >= normal and k * high_l * high_r <= 2.0**126
    )


def _magnitude_product(
    left: np.ndarray,
    right: np.ndarray,
    narrow: bool,
    wide: bool | None,
    sources: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """``_abs_products`` of finite magnitudes in the type ``abs_sum`` says: float64 for float64 data; for
    float16/float32 data float32 where ``float32_suffices`` (``wide`` False, or None and judged here on
    these magnitudes; magnitudes given in float64 are taken in float64), else the float64 products.
    ``sources``: the float16/float32 operands ``left`` and ``right`` are the float32 magnitudes of, whose
    float64 magnitudes a weight keeps (``_wide_magnitudes``)."""
    if not narrow:
        left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
        return _abs_products(left, right, "float64")
    if wide is None:
        wide = left.dtype == F64 or right.dtype == F64
        wide = wide or not float32_suffices(magnitude_range(left), magnitude_range(right), left.shape[2])
    if not wide:
        left, right = np.asarray(left, dtype=np.float32), np.asarray(right, dtype=np.float32)
        return _abs_products(left, right, "float32")
    if sources is not None:
        left, right = _wide_magnitudes(left, sources[0]), _wide_magnitudes(right, sources[1])
    return _abs_products(np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64), "exact")


def _wide_magnitudes(magnitudes: np.ndarray, source: np.ndarray) -> np.ndarray:
    """The float64 form of ``magnitudes`` (|source| in float32), kept with a weight ``source`` within the
    cache's allowance (a large form: VGG-16's classifier weight takes 784 MiB, converted on each edge
    dataset otherwise). The same array either way: the same conversion of the same values."""
    return constant_cache.derived_from_view(
        source, "float64 magnitudes", lambda: np.asarray(magnitudes, dtype=np.float64), large=True
    )


def _abs_products(left: np.ndarray, right: np.ndarray, route: str) -> np.ndarray:
    """``abs_sum`` of finite magnitudes, without the bias: the working-type product rounded up. ``route``:
    "float64" (float64 data), "exact" (float64 products of float32 values: none rounds or underflows) or
    "float32" (only where ``float32_suffices``: no product underflows, no partial sum overflows)."""
    k = left.shape[2]
    with np.errstate(over="ignore"):
        total = np.matmul(left, right)
    u = 2.0**-24 if route == "float32" else U
    with np.errstate(over="ignore"):  # beyond the float64 range: +inf, an upper bound still
        total = np.multiply(total, 1.0 + 2.0 * (k + 2) * u / (1.0 - (k + 2) * u), dtype=np.float64)
        if route == "float64":  # float64 products can underflow: (K + 1) of its smallest subnormals
            total += (k + 1) * TINY
    return total


def _finite_part(a: np.ndarray) -> np.ndarray:
    """``a`` with its non-finite values set to zero: ``a`` itself where a constant has none."""
    if constant_cache.immutable(a) and constant_cache.derived(a, "finite", lambda: _all_finite(a)):
        return a
    return np.where(np.isfinite(a), a, 0.0)


class Products:
    """One stacked product ``L @ R (+ bias)``: L of shape (BL, M, K), R of shape (BR, K, P), BL and BR equal
    or 1; bias broadcastable to (B, M, P) or None. The operands are float64 arrays holding the exact values of
    the operator's inputs (of type ``dtype``); the result is of type ``dtype``.

    ``magnitude``: an upper bound of sum|l*r| + |bias| per element the caller already has (abs_sum; tier 1
    then needs no Cauchy-Schwarz norms). ``norms``: the Cauchy-Schwarz norms (BL, M) and (BR, P) when the
    caller computes them more cheaply than from L and R (Conv, from window sums of X squared). ``zero``: the
    caller knows one operand is all +-0 (finite), so tier 1 needs no product. ``column_units``: tier 2's
    lowest set bits of R's columns, when the caller has them more cheaply (products_bulk.ColumnUnits);
    ``specials``: ``special_values``' (where, values) the same way (None: not known, taken here), and
    ``finite_right``: R with its non-finite values zeros."""

    def __init__(
        self,
        left: np.ndarray,
        right: np.ndarray,
        bias: np.ndarray | None,
        dtype: np.dtype,
        *,
        finite: bool | None = None,
        magnitude: np.ndarray | None = None,
        norms: tuple[np.ndarray, np.ndarray] | None = None,
        zero: bool = False,
        column_units: ColumnUnits | None = None,
        specials: Callable[[], tuple[np.ndarray, np.ndarray] | None] | None = None,
        finite_right: Callable[[], np.ndarray] | None = None,
    ) -> None:
        if left.ndim != 3 or right.ndim != 3 or left.shape[2] != right.shape[1]:
            raise ValueError(f"product of {left.shape} and {right.shape}")
        self.left = np.asarray(left, dtype=np.float64)
        self.right = np.asarray(right, dtype=np.float64)
        self.dtype = np.dtype(dtype)
        self.batch = max(left.shape[0], right.shape[0])
        self.m, self.k = left.shape[1:]
        self.p = right.shape[2]
        self.shape = (self.batch, self.m, self.p)
        self.bias = None if bias is None else np.broadcast_to(np.asarray(bias, dtype=np.float64), self.shape)
        self.finite = finite  # True / False when the caller knows whether every operand is finite, else None
        self.magnitude = magnitude
        self.norms = norms
        self.zero = zero  # the caller knows an operand is all +-0: every product is +-0
        self.column_units = column_units
        self.specials, self.finite_right = specials, finite_right

    # -- the result ---------------------------------------------------------------------------------------
    def rounded(self) -> np.ndarray:
        """The exact result, rounded once to ``dtype``."""
        if self.finite or (
            self.finite is None
            and _all_finite(self.left)
            and _all_finite(self.right)
            and (self.bias is None or _all_finite(self.bias))
        ):
            return self._rounded_finite(None)
        left, right, bias = self.left, self.right, self.bias
        found = None if self.specials is None else self.specials()
        where, values = special_values(left, right, bias, self.shape) if found is None else found
        if where.all():
            return values.astype(self.dtype)
        # The other elements have only finite terms: the finite problem with the non-finite operands set to
        # zero gives them (a finite constant, a model's W, kept as it is: its cached forms still apply); the
        # special elements are skipped by every tier past the first.
        left = _finite_part(left)
        right = _finite_part(right) if self.finite_right is None else self.finite_right()
        bias = None if bias is None else np.where(np.isfinite(bias), bias, 0.0)
        finite = Products(left, right, bias, self.dtype, finite=True, magnitude=self.magnitude,
                          column_units=self.column_units)  # fmt: skip
        result = finite._rounded_finite(where)
        result[where] = values[where].astype(self.dtype)
        return result

    # -- finite operands ----------------------------------------------------------------------------------
    def _rounded_finite(self, skip: np.ndarray | None) -> np.ndarray:
        """The correctly rounded result where every term is finite (``skip``: elements decided elsewhere)."""
        if self.k == 0:  # an empty sum is +0; +0 + bias is the bias, and +0 for a bias of -0
            zero = np.zeros(self.shape)
            return (zero if self.bias is None else zero + self.bias).astype(self.dtype)
        if self.dtype == F64:
            result, certified = self._ozaki()
            approx = result
        else:
            result, certified, approx = self._float64_accumulation()
        if skip is not None:
            certified |= skip
        pending = np.logical_not(certified, out=certified)
        if _in_bulk(int(np.count_nonzero(pending)), pending.size):
            BulkSettlement(self, self._sum_bound).settle(result, approx, pending)
        left_over = np.flatnonzero(pending)
        if left_over.size:
            result.reshape(-1)[left_over] = self._exact_elements(left_over)
        return result

    def _float64_accumulation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tier 1 for float16/float32 operands: products exact in float64, one rounding per addition. Returns
        the rounded result, where it is certified, and the float64 approximation (for tier 2)."""
        if self.zero:  # a float64 sum of +-0 terms is +-0, whatever the order (tier 2 gives the sign)
            approx = np.zeros(self.shape)
        else:
            approx = np.matmul(self.left, self.right)
        if approx.shape != self.shape:
            approx = np.broadcast_to(approx, self.shape).copy()
        # gamma_(K+1) * (sum|products| + |bias|), inflated for the float64 roundings of the norms, plus room
        # for the float64 roundings of approx +- bound (|approx| <= the same sum).
        factor = gamma(self.k + 1) * (1.0 + 4.0 * (self.k + 4) * U) + 2.0**-49
        bias = self.bias
        # the bound of rows start to stop, the batches laid end to end (exact_sums.BoundRows)
        if self.magnitude is not None:
            magnitude = np.broadcast_to(self.magnitude, self.shape)

            def bound(start: int, stop: int, out: np.ndarray) -> None:
                np.multiply(batch_rows(magnitude, start, stop), factor, out=out)

        else:
            rows, cols = self._norms()
            rows = np.broadcast_to(rows * factor, self.shape[:2])[:, :, None]  # (B, M, 1)
            m = self.m

            def bound(start: int, stop: int, out: np.ndarray) -> None:
                # each row's column norms are its batch's (cols: one row, or one per batch)
                c = cols[0] if len(cols) == 1 else cols[np.arange(start, stop) // m]
                np.multiply(batch_rows(rows, start, stop), c, out=out)
                if bias is not None:
                    out += np.abs(batch_rows(bias, start, stop)) * factor

        if self.bias is not None:
            approx += self.bias
        result, certified = _certify_rounding(approx, bound, self.dtype)
        return result, certified, approx

    def _norms(self) -> tuple[np.ndarray, np.ndarray]:
        if self.norms is None:
            self.norms = _norms(self.left, self.right)
        return self.norms

    def _sum_bound(self, index: tuple[np.ndarray, ...]) -> np.ndarray:
        """An upper bound of sum|l*r| + |bias| on a block of the output (an np.ix_ index): the caller's
        magnitude, or the norms' product inflated for their float64 roundings."""
        if self.magnitude is not None:
            return np.broadcast_to(self.magnitude, self.shape)[index]
        rows, cols = self._norms()
        _, row_index, col_index = index
        total = rows[:, row_index[0, :, 0], None] * cols[:, None, col_index[0, 0, :]]
        total = total * (1.0 + 4.0 * (self.k + 4) * U)
        if self.bias is not None:
            total = total + np.abs(self.bias[index]) * (1.0 + 4.0 * U)
        return total

    def _ozaki(self) -> tuple[np.ndarray, np.ndarray]:
        """Tier 1 for float64 operands: error-free slices (see the module docstring)."""
        k = self.k
        left_scale, left, left_exact = _scale(self.left, axis=2)
        right_scale, right, right_exact = _scale(self.right, axis=1)
        beta = (53 - ceil_log2(k)) // 2
        if beta < 8:
            raise ValueError(f"sum of {k} products: too many terms for the error-free splitting")
        slices = -(-(78 + ceil_log2(k) // 2) // beta)
        left_slices, right_slices = _split(left, beta, slices), _split(right, beta, slices)
        pairs = sorted(
            ((s, t) for s in range(slices) for t in range(slices) if s + t <= slices - 1),
            key=lambda st: -(st[0] + st[1]),
        )  # smallest first
        hi = np.zeros(self.shape)
        lo = np.zeros(self.shape)
        magnitude = np.zeros(self.shape)
        for s, t in pairs:
            piece = np.matmul(left_slices[s], right_slices[t])  # exact
            hi, err = two_sum(hi, piece)
            lo += err
            magnitude += np.abs(piece)
        del left_slices, right_slices
        hi, lo = two_sum(hi, lo)
        bound: np.ndarray = (
            k * 2.0 ** (-slices * beta) * (3 + slices * slices) + 4 * len(pairs) ** 2 * U * U * magnitude
        )
        exponent = np.broadcast_to(left_scale + right_scale, self.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            hi, lo = np.ldexp(hi, exponent), np.ldexp(lo, exponent)
            bound = np.ldexp(bound, exponent) * (1.0 + 2.0**-40) + 4 * TINY  # + the roundings of subnormals
            if self.bias is not None:
                hi, carry = two_sum(hi, self.bias)
                lo = lo + carry
                bound += 2 * U * np.abs(lo)
                hi, lo = two_sum(hi, lo)
        certified = _certify_double(hi, lo, bound)  # never a zero: its sign comes from its terms
        certified &= np.broadcast_to(left_exact[:, :, None] & right_exact[:, None, :], self.shape)
        return hi, certified

    # -- tier 3 -------------------------------------------------------------------------------------------
    def _exact_elements(self, flat: np.ndarray) -> np.ndarray:
        """The correctly rounded values of some elements (flat indices), from their own terms."""
        out = np.empty(flat.size, dtype=self.dtype)
        chunk = max(1, _CHUNK // max(self.k, 1))
        for start in range(0, flat.size, chunk):
            index = flat[start : start + chunk]
            b, i, j = np.unravel_index(index, self.shape)
            left = self.left[b if self.left.shape[0] > 1 else 0, i, :]
            if self.right.shape[0] == 1:  # row by row: each row's picks share cache lines
                right = np.take(self.right[0], j, axis=1).T
            else:
                right = self.right[b, :, j]
            bias = None if self.bias is None else self.bias[b, i, j]
            out[start : start + chunk] = _exact_terms(left, right, bias, self.dtype)
        return out
