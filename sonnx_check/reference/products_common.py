"""Shared machinery of the sum-of-products kernels (Conv, MatMul, Gemm): the exact value of
``Y[b, i, j] = sum_k L[b, i, k] * R[b, k, j] (+ bias[b, i, j])``, rounded once to the output type.

Each kernel of the group reduces its operator to such a stacked matrix product (Conv through an im2col of the
zero-padded input) and calls ``Products(...).rounded()``. The result is the exact real value of the sum,
rounded to nearest, ties to even, in the output type: the kernel's own error is at most half an ulp of the
output type (so within 1 ulp of the exact result), for every finite result, overflow to +-inf and underflow to
subnormals or +-0 included. How, in tiers; each element leaves at the first tier that proves its value:

1. An approximation with a rigorous bound E on its error.
   - float16/float32 operands: every product is exact in float64 (24 + 24 <= 53 bits), so one float64 BLAS
     product plus the bias errs by at most gamma_(K+1) * (sum|l*r| + |bias|), u = 2^-53, whatever the order
     of summation (blocked, FMA). sum|l*r| is bounded by Cauchy-Schwarz (row norm times column norm), one
     pass over each operand instead of a second product.
   - float64 operands: the Ozaki error-free splitting. Each row of L and each column of R is scaled by a power
     of two to below 1 and cut into S slices of beta = floor((53 - ceil(log2 K)) / 2) bits. The product of two
     slices has K terms that are integer multiples of one power of two and whose sum stays below 2^53 of it,
     so the BLAS computes every slice product EXACTLY, in any order. The slice products with s + t <= S + 1
     are added in double-double; the truncation (remainders and omitted pairs) is at most
     K * 2^(-S*beta) * (3 + S^2) in the scaled units, the double-double addition 4 * pieces^2 * u^2 *
     sum|piece|. S makes the bound about 2^-20 of an ulp of a typical result.
2. Certification: where the whole interval [approx - E, approx + E] rounds to one value of the output type
   (bit for bit, sign of zero included), that value is the correctly rounded result.
3. The rest (a result within E of a rounding boundary, a zero, heavy cancellation) is recomputed from its own
   terms, gathered per element: a zero row of L or zero column of R settles at once (the sum is the bias, or
   a signed zero); then, vectorised, sums whose float64 evaluation is provably exact (the products have at
   most 53 significant bits and stay below 2^53 times their common lowest bit: small integers, ties, halves,
   zeros), then a pairwise double-double sum of the exact products (Dekker's TwoProduct for float64) with
   its own certificate; then, one element at a time, math.fsum (correctly rounded; for a narrower type the
   sign of the remainder decides a midpoint) or exact integers (each float is m * 2^e), rounded by
   :func:`round_dyadic`.

The BLAS is trusted only to compute each element as a sum of its K products in some order (OpenBLAS and MKL
do; no Strassen-like scheme): the bounds of tier 1 hold for any order, and the Ozaki slice products and the
0/1 counts below are exact in any order.

Special values follow IEEE 754 on the terms of the sum (the float sections of the texts): a term is NaN when a
factor is NaN or it is 0 * inf; the sum is NaN when a term is NaN or when it holds both +inf and -inf terms,
otherwise +-inf when it holds an infinite term (or an infinite bias). Finite operands never make an infinite
term: a finite sum overflows to +-inf only when its exact value rounds beyond the largest finite value. These
are counted with 0/1 matrix products, so no BLAS NaN handling is relied upon. An exact zero sum is -0 when
every term (and the bias) is -0, +0 otherwise (the IEEE sum of its terms, in any order); an empty sum is +0.
"""

from __future__ import annotations

import math

import numpy as np

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
FLOAT_DTYPES = (F16, F32, F64)
U = 2.0**-53  # unit roundoff of float64
TINY = 2.0**-1074  # smallest positive float64
_CHUNK = 1 << 21  # gathered terms per vectorised step of tier 3 (float64 words)

# precision p, minimum normal exponent, maximum exponent of each output format
_FORMATS = {F16: (11, -14, 15), F32: (24, -126, 127), F64: (53, -1022, 1023)}


def gamma(n: int) -> float:
    """gamma_n = n*u / (1 - n*u) for float64, the bound of a sum of n terms (Higham, Lemma 3.1)."""
    return n * U / (1.0 - n * U)


def ceil_log2(n: int) -> int:
    return max(0, (n - 1).bit_length())


def round_dyadic(numerator: int, exponent: int, dtype: np.dtype) -> float:
    """``numerator * 2**exponent`` rounded to nearest, ties to even, in ``dtype``, as a Python float (exactly
    representable in ``dtype``), +-inf beyond its range, +-0 below half its smallest subnormal."""
    precision, emin, emax = _FORMATS[np.dtype(dtype)]
    negative = numerator < 0
    a = -numerator if negative else numerator
    if a == 0:
        return -0.0 if negative else 0.0
    top = a.bit_length() - 1 + exponent  # the value lies in [2^top, 2^(top+1))
    quantum = max(top, emin) - (precision - 1)  # exponent of the ulp at that value
    if exponent >= quantum:
        mantissa = a << (exponent - quantum)
    else:
        shift = quantum - exponent
        mantissa = a >> shift
        rest = a - (mantissa << shift)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and mantissa & 1):
            mantissa += 1
    if mantissa and mantissa.bit_length() - 1 + quantum > emax:
        value = math.inf
    else:
        value = math.ldexp(mantissa, quantum)  # exact: mantissa <= 2^precision
    return -value if negative else value


def mantissa_exponent(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integers m (int64, |m| < 2^53) and e with a = m * 2^e exactly (m = 0 for zeros); finite input."""
    fraction, exponent = np.frexp(np.asarray(a, dtype=np.float64))
    return (fraction * 2.0**53).astype(np.int64), exponent.astype(np.int64) - 53


def significant_bits(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For integer mantissas m (|m| in [2^52, 2^53) or 0): the number of significant bits once the trailing
    zeros are removed, and the number of trailing zeros (53 for 0)."""
    magnitude = np.abs(m)
    lowest = magnitude & -magnitude
    trailing = np.frexp(lowest.astype(np.float64))[1].astype(np.int64) - 1
    trailing[magnitude == 0] = 53
    return 53 - trailing, trailing


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s + e = a + b exactly, s = fl(a + b) (Knuth; no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def abs_sum(
    left: np.ndarray,
    right: np.ndarray,
    bias: np.ndarray | None,
    dtype: np.dtype,
    *,
    finite: bool | None = None,
) -> np.ndarray:
    """An upper bound, in float64, of ``sum_k |L[i,k] * R[k,j]| (+ |bias|)`` for every element, tight to a
    relative 2(K+2)u of the operands' type: the quantity the sum-of-products accuracy bound gamma_n * sum|a*b|
    multiplies. L (BL, M, K), R (BR, K, P) and the bias hold values of ``dtype`` (in any float type, signs
    ignored). +inf where a term involves a non-finite operand.

    float16/float32 operands: a float32 product of non-negative terms is at least (1 - gamma_(K+1)) times the
    exact sum (float32 u), less at most 2^-149 per underflowed product; it is computed in float64 only where
    float32 overflows. float64 operands: the same in float64."""
    narrow = np.dtype(dtype) != F64
    work = np.float32 if narrow else np.float64
    left, right = np.abs(np.asarray(left, dtype=work)), np.abs(np.asarray(right, dtype=work))
    k = left.shape[2]
    shape = (max(left.shape[0], right.shape[0]), left.shape[1], right.shape[2])
    nonfinite = None
    if not finite and not (_all_finite(left) and _all_finite(right)):
        nonfinite = (~np.isfinite(left)).any(axis=2)[:, :, None] | (~np.isfinite(right)).any(axis=1)[
            :, None, :
        ]
        left = np.where(np.isfinite(left), left, 0)
        right = np.where(np.isfinite(right), right, 0)
    with np.errstate(over="ignore"):
        total = np.matmul(left, right).astype(np.float64)
    if narrow and not _all_finite(total):  # a float32 overflow: the float64 product instead
        total = np.matmul(left.astype(np.float64), right.astype(np.float64))
        narrow = False
    if total.shape != shape:
        total = np.broadcast_to(total, shape).copy()
    u, tiny = (2.0**-24, 2.0**-149) if narrow else (U, TINY)
    with np.errstate(over="ignore"):  # beyond the float64 range the bound is +inf, which is an upper bound
        total *= 1.0 + 2.0 * (k + 2) * u / (1.0 - (k + 2) * u)
        total += (k + 1) * tiny
        if bias is not None:
            total += np.abs(np.asarray(bias, dtype=np.float64)) * (1.0 + 2.0 * U)
    if nonfinite is not None:
        total[np.broadcast_to(nonfinite, shape)] = np.inf
    if bias is not None and not finite:
        total[~np.isfinite(np.broadcast_to(bias, shape))] = np.inf
    return total


class Products:
    """One stacked product ``L @ R (+ bias)``: L of shape (BL, M, K), R of shape (BR, K, P), BL and BR equal
    or 1; bias broadcastable to (B, M, P) or None. The operands are float64 arrays holding the exact values of
    the operator's inputs (of type ``dtype``); the result is of type ``dtype``."""

    def __init__(
        self,
        left: np.ndarray,
        right: np.ndarray,
        bias: np.ndarray | None,
        dtype: np.dtype,
        *,
        finite: bool | None = None,
        magnitude: np.ndarray | None = None,
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
        self.finite = finite  # True when the caller knows every operand is finite (saves a pass over them)
        # an upper bound of sum|l*r| + |bias| per element the caller already has (abs_sum): tier 1 of float16
        # and float32 then needs no Cauchy-Schwarz norms
        self.magnitude = magnitude

    # -- the result ---------------------------------------------------------------------------------------
    def rounded(self) -> np.ndarray:
        """The exact result, rounded once to ``dtype``."""
        left, right, bias = self.left, self.right, self.bias
        special = None
        if not self.finite and not (
            _all_finite(left) and _all_finite(right) and (bias is None or _all_finite(bias))
        ):
            special = self._special_values()
            left = np.where(np.isfinite(left), left, 0.0)
            right = np.where(np.isfinite(right), right, 0.0)
            bias = None if bias is None else np.where(np.isfinite(bias), bias, 0.0)
        finite = Products(left, right, bias, self.dtype, finite=True)
        result = finite._rounded_finite()
        if special is not None:
            where, values = special
            result[where] = values[where].astype(self.dtype)
        return result

    # -- special values -----------------------------------------------------------------------------------
    def _special_values(self) -> tuple[np.ndarray, np.ndarray]:
        """Where the sum is NaN or +-inf by the IEEE rules on its terms, and those values."""
        left, right = self.left, self.right
        with np.errstate(invalid="ignore"):
            inf_l, inf_r = np.isinf(left), np.isinf(right)
            pos_l, neg_l, pos_r, neg_r = left > 0, left < 0, right > 0, right < 0

            def count(*pairs: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
                total = np.zeros(self.shape)
                for a, b in pairs:
                    total = total + np.matmul(a.astype(np.float64), b.astype(np.float64))
                return total

            nan = np.isnan(left).any(axis=2)[:, :, None] | np.isnan(right).any(axis=1)[:, None, :]
            nan = nan | (count((inf_l, right == 0), (left == 0, inf_r)) > 0)
            finite_pos_l, finite_neg_l = pos_l & ~inf_l, neg_l & ~inf_l
            pinf_r, ninf_r = inf_r & pos_r, inf_r & neg_r
            pinf_l, ninf_l = inf_l & pos_l, inf_l & neg_l
            pos_inf = (
                count((pinf_l, pos_r), (ninf_l, neg_r), (finite_pos_l, pinf_r), (finite_neg_l, ninf_r)) > 0
            )
            neg_inf = (
                count((pinf_l, neg_r), (ninf_l, pos_r), (finite_pos_l, ninf_r), (finite_neg_l, pinf_r)) > 0
            )
            nan = np.broadcast_to(nan, self.shape)
            if self.bias is not None:
                nan = nan | np.isnan(self.bias)
                pos_inf = pos_inf | (self.bias == np.inf)
                neg_inf = neg_inf | (self.bias == -np.inf)
        nan = nan | (pos_inf & neg_inf)
        values = np.where(nan, np.nan, np.where(pos_inf, np.inf, -np.inf))
        return nan | pos_inf | neg_inf, values

    # -- finite operands ----------------------------------------------------------------------------------
    def _rounded_finite(self) -> np.ndarray:
        if self.k == 0:  # an empty sum is +0; +0 + bias is the bias, and +0 for a bias of -0
            zero = np.zeros(self.shape)
            return (zero if self.bias is None else zero + self.bias).astype(self.dtype)
        if self.dtype == F64:
            result, certified = self._ozaki()
        else:
            result, certified = self._float64_accumulation()
        left_over = np.flatnonzero(~certified)
        if left_over.size:
            result.reshape(-1)[left_over] = self._exact_elements(left_over)
        return result

    def _float64_accumulation(self) -> tuple[np.ndarray, np.ndarray]:
        """Tier 1 for float16/float32 operands: products exact in float64, one rounding per addition."""
        approx = np.matmul(self.left, self.right)
        if approx.shape != self.shape:
            approx = np.broadcast_to(approx, self.shape).copy()
        # gamma_(K+1) * (sum|products| + |bias|), inflated for the float64 roundings of the norms, plus room
        # for the float64 roundings of approx +- bound (|approx| <= the same sum).
        factor = gamma(self.k + 1) * (1.0 + 4.0 * (self.k + 4) * U) + 2.0**-49
        if self.magnitude is not None:
            bound = np.broadcast_to(self.magnitude, self.shape) * factor
            if self.bias is not None:
                approx += self.bias
            zero_lines = None
        else:
            rows, cols = _norms(self.left, self.right)
            bound = (rows * factor)[:, :, None] * cols[:, None, :]
            if self.bias is not None:
                approx += self.bias
                bound += np.abs(self.bias) * factor
            zero_lines = (rows != 0, cols != 0)
        result, certified = _certify_single(approx, bound, self.dtype)
        self._settle_zero_lines(result, certified, zero_lines)
        return result, certified

    def _settle_zero_lines(
        self, result: np.ndarray, certified: np.ndarray, nonzero_lines: tuple[np.ndarray, np.ndarray] | None
    ) -> None:  # (BL, M) and (BR, P): False exactly where L's row / R's column holds only zeros
        """Exact zeros of the cheapest kind, without gathering their terms: a zero row of L (a kernel of
        zeros) or a zero column of R (a window of zeros, padding included) makes every product a zero, so
        the sum is the bias, and with a zero bias -0 exactly when every term is -0 (the signs of the zeros
        against the signs of the other operand). The others stay uncertified for tier 3."""
        zero_result = result == 0
        certified &= ~zero_result  # a zero result: its sign comes from its terms
        if not zero_result.any():
            return
        if nonzero_lines is None:  # exact tests (float64 squares of tiny values would underflow)
            nonzero_lines = ((self.left != 0).any(axis=2), (self.right != 0).any(axis=1))
        zero_rows, zero_cols = ~nonzero_lines[0], ~nonzero_lines[1]
        if not (zero_rows.any() or zero_cols.any()):
            return
        # every term of (i, j) is -0 when L's row i is all +0 and R's column j all negative-signed, or the
        # reverse, or (zero column) R's column j is all +0 and L's row i all negative-signed, ...
        sign_l = np.signbit(self.left)
        sign_r = np.signbit(self.right)
        l_all_neg, l_all_pos = sign_l.all(axis=2), ~sign_l.any(axis=2)  # (BL, M)
        r_all_neg, r_all_pos = sign_r.all(axis=1), ~sign_r.any(axis=1)  # (BR, P)
        zero_terms = zero_rows[:, :, None] | zero_cols[:, None, :]
        negative = (l_all_pos[:, :, None] & r_all_neg[:, None, :]) | (
            l_all_neg[:, :, None] & r_all_pos[:, None, :]
        )
        # "every k has opposite signs" is decided when one side has one sign throughout: then the other must
        # have the opposite sign throughout. Mixed signs on both sides stay for tier 3.
        decided = (l_all_neg | l_all_pos)[:, :, None] | (r_all_neg | r_all_pos)[:, None, :]
        bias = self.bias
        settle = np.broadcast_to(zero_terms & decided, self.shape)
        if bias is not None:
            settle = settle & (bias == 0)
            negative = negative & np.signbit(bias)
        if settle.any():
            values = np.where(np.broadcast_to(negative, self.shape), -0.0, 0.0).astype(self.dtype)
            result[settle] = values[settle]
            certified |= settle
        nonzero_bias = np.broadcast_to(zero_terms, self.shape) & (bias != 0 if bias is not None else False)
        if np.any(nonzero_bias):  # the sum is exactly the bias
            result[nonzero_bias] = bias[nonzero_bias].astype(self.dtype)
            certified |= nonzero_bias

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
        bound = k * 2.0 ** (-slices * beta) * (3 + slices * slices) + 4 * len(pairs) ** 2 * U * U * magnitude
        exponent = np.broadcast_to(left_scale + right_scale, self.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            hi, lo = np.ldexp(hi, exponent), np.ldexp(lo, exponent)
            bound = np.ldexp(bound, exponent) * (1.0 + 2.0**-40) + 4 * TINY  # + the roundings of subnormals
            if self.bias is not None:
                hi, t = two_sum(hi, self.bias)
                lo = lo + t
                bound += 2 * U * np.abs(lo)
                hi, lo = two_sum(hi, lo)
        certified = _certify_double(hi, lo, bound)
        certified &= np.broadcast_to(left_exact[:, :, None] & right_exact[:, None, :], self.shape)
        # exact zero tests: float64 squares of tiny values would underflow
        self._settle_zero_lines(hi, certified, None)
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
            right = self.right[b if self.right.shape[0] > 1 else 0, :, j]
            bias = None if self.bias is None else self.bias[b, i, j]
            out[start : start + chunk] = _exact_terms(left, right, bias, self.dtype)
        return out


def _all_finite(a: np.ndarray) -> bool:
    return bool(np.isfinite(a).all())


def _norms(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sqrt(sum_k L[i,k]^2) per row (BL, M) and sqrt(sum_k R[k,j]^2) per column (BR, P): their product
    bounds sum_k |L[i,k] R[k,j]| (Cauchy-Schwarz) at the cost of one pass over each operand."""
    return np.sqrt(np.einsum("bmk,bmk->bm", left, left)), np.sqrt(np.einsum("bkp,bkp->bp", right, right))


def _certify_single(approx: np.ndarray, bound: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The rounding of the exact value y, known to lie in [approx - bound, approx + bound], where both ends
    round to the same value of ``dtype`` (float16 or float32): numpy's float64 -> float16/float32 conversion
    rounds to nearest even. ``bound`` must include room for the float64 roundings of approx +- bound (2^-49
    |approx| is plenty); it is overwritten."""
    with np.errstate(over="ignore"):
        low = (approx - bound).astype(dtype)
        np.add(approx, bound, out=bound)
        high = bound.astype(dtype)
    kind = f"u{dtype.itemsize}"
    return low, low.view(kind) == high.view(kind)


def _certify_double(hi: np.ndarray, lo: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Whether every value of [hi + lo - bound, hi + lo + bound] rounds (to nearest, float64) to hi: strictly
    inside the half-gaps to hi's neighbours, with margins for the float64 arithmetic of the test itself."""
    with np.errstate(over="ignore", invalid="ignore"):
        up = np.nextafter(hi, np.inf) - hi
        down = hi - np.nextafter(hi, -np.inf)
        widened = bound * (1.0 + 2.0**-40) + np.abs(lo) * 2.0**-50 + TINY
        return np.isfinite(hi) & (lo + widened < up / 2) & (lo - widened > -down / 2) & (hi != 0)


def _scale(a: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2^-e times ``a`` per row (axis 2) or column (axis 1) with all magnitudes below 1, e, and whether the
    scaling was exact (it is not only when a row spans more than the whole float64 range)."""
    peak = np.max(np.abs(a), axis=axis, keepdims=True)
    exponent = np.frexp(peak)[1].astype(np.int64)  # peak < 2^exponent
    scaled = np.ldexp(a, -exponent)
    exact = np.all(np.ldexp(scaled, exponent) == a, axis=axis)
    return exponent, scaled, exact


def _split(a: np.ndarray, beta: int, count: int) -> list[np.ndarray]:
    """``count`` slices of ``a`` (|a| < 1): slice s (from 0) holds integer multiples of 2^-(s+1)beta of
    magnitude at most 2^-s*beta; the remainder left out is at most 2^-count*beta (error-free extraction of
    Rump, Ogita and Oishi)."""
    rest = a.copy()
    slices = []
    for s in range(1, count + 1):
        sigma = 2.0 ** (53 - s * beta)
        piece = (rest + sigma) - sigma
        rest -= piece
        slices.append(piece)
    return slices


def _exact_terms(left: np.ndarray, right: np.ndarray, bias: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """sum_k left[f,k] * right[f,k] (+ bias[f]) correctly rounded to ``dtype``, for the finite float64 terms
    of F elements: a certified pairwise double-double sum first; for what it leaves (zeros, extreme
    cancellations, terms beyond the float64 range), the exact float64 sum where it is provably exact, then
    math.fsum or integers one element at a time."""
    count = left.shape[0]
    out = np.empty(count, dtype=dtype)
    terms, fits = _error_free_products(left, right, dtype)
    if bias is not None:
        terms = np.concatenate([terms, bias[:, None]], axis=1)
    done = np.zeros(count, dtype=bool)
    if fits.any():
        hi, lo, bound = _pairwise_double_double(terms[fits])
        if dtype == F64:
            values, certified = hi, _certify_double(hi, lo, bound)
        else:
            values, certified = _certify_single(hi + lo, bound + 2.0**-49 * np.abs(hi + lo), dtype)
            certified &= (hi != 0) & np.isfinite(hi)
        where = np.flatnonzero(fits)[certified]
        out[where] = values[certified].astype(dtype)
        done[where] = True
    rest = np.flatnonzero(~done)
    if rest.size == 0:
        return out
    left, right, terms, fits = left[rest], right[rest], terms[rest], fits[rest]
    bias = None if bias is None else bias[rest]
    ml, el = mantissa_exponent(left)
    mr, er = mantissa_exponent(right)
    exact, value = _exact_in_float64(left, right, bias, ml, el, mr, er)
    zero = exact & (value == 0)
    out[rest[exact]] = value[exact].astype(dtype)
    if zero.any():
        negative = _all_negative_zero(left[zero], right[zero], None if bias is None else bias[zero])
        out[rest[zero]] = np.where(negative, -0.0, 0.0).astype(dtype)
    for n in np.flatnonzero(~exact):
        bias_n = None if bias is None else float(bias[n])
        result = _fsum_rounded(terms[n].tolist(), dtype) if fits[n] else None
        if result is None:  # products or partial sums out of the float64 range: integers
            result = _integer_rounded(ml[n], el[n], mr[n], er[n], bias_n, dtype)
        if result is EXACT_ZERO:
            negative = _all_negative_zero(
                left[n : n + 1], right[n : n + 1], None if bias is None else bias[n : n + 1]
            )
            result = -0.0 if negative[0] else 0.0
        out[rest[n]] = result
    return out


def _exact_in_float64(
    left: np.ndarray,
    right: np.ndarray,
    bias: np.ndarray | None,
    ml: np.ndarray,
    el: np.ndarray,
    mr: np.ndarray,
    er: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, whether the float64 sum of the products (+ bias) is exact, and that sum: true when every
    product has at most 53 significant bits and the sum of their magnitudes stays below 2^53 times their
    common lowest bit (no partial sum can then round), or when there is no nonzero term."""
    nonzero = (ml != 0) & (mr != 0)
    bits_l, zeros_l = significant_bits(ml)
    bits_r, zeros_r = significant_bits(mr)
    unit = np.where(nonzero, el + zeros_l + er + zeros_r, np.iinfo(np.int64).max)  # lowest bit per product
    lowest = unit.min(axis=1)
    short = np.all(~nonzero | (bits_l + bits_r <= 53), axis=1)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        products = left * right
        total = np.abs(products).sum(axis=1)
        value = products.sum(axis=1)
        no_term = ~nonzero.any(axis=1)
        if bias is not None:
            mb, eb = mantissa_exponent(bias)
            bias_unit = np.where(mb != 0, eb + significant_bits(mb)[1], np.iinfo(np.int64).max)
            lowest = np.minimum(lowest, bias_unit)
            total = total + np.abs(bias)
            value = value + bias
            no_term &= bias == 0
        total *= 1.0 + (left.shape[1] + 2) * 2.0**-52
        limit = np.ldexp(1.0, np.clip(lowest, -2000, 2000) + 53)
        exact = short & (lowest >= -1074) & np.isfinite(total) & (total <= limit)
    return exact | no_term, value


def _error_free_products(
    left: np.ndarray, right: np.ndarray, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Floats whose exact sum, per row, is sum_k left*right: the products themselves for float16/float32
    operands (exact in float64), the pairs of Dekker's TwoProduct for float64 operands; and, per row,
    whether they are exact (False where a float64 product or its error term leaves the float64 range:
    a nonzero product below 2^-969, or an operand of 2^995 or more)."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        products = left * right
        if dtype != F64:
            return products, np.ones(len(products), dtype=bool)
        magnitude = np.abs(products)
        in_range = ((magnitude >= 2.0**-969) | (left == 0) | (right == 0)) & (magnitude < np.inf)
        in_range &= (np.abs(left) < 2.0**995) & (np.abs(right) < 2.0**995)
        fits = np.all(in_range, axis=1)
        left_hi, left_lo = _veltkamp(left)
        right_hi, right_lo = _veltkamp(right)
        errors = (
            (left_hi * right_hi - products) + left_hi * right_lo + left_lo * right_hi
        ) + left_lo * right_lo
    return np.concatenate([products, np.where(fits[:, None], errors, 0.0)], axis=1), fits


def _pairwise_double_double(terms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of finite float64 terms: hi + lo with |hi + lo - sum| <= bound. Adjacent partial sums are
    added with TwoSum level by level (a tree, vectorised over rows and pairs); the exact errors of every level
    are summed in float64, whose rounding is the whole error: at most gamma_n * sum|errors|."""
    hi = terms
    errors = []
    with np.errstate(over="ignore", invalid="ignore"):
        while hi.shape[1] > 1:
            if hi.shape[1] % 2:
                hi = np.concatenate([hi, np.zeros((hi.shape[0], 1))], axis=1)
            hi, err = two_sum(hi[:, 0::2], hi[:, 1::2])
            errors.append(err)
        hi = hi[:, 0]
        if not errors:
            return hi, np.zeros_like(hi), np.zeros_like(hi)
        every = np.concatenate(errors, axis=1)
        lo = every.sum(axis=1)
        bound = gamma(every.shape[1] + 1) * np.abs(every).sum(axis=1) * (1.0 + 2.0**-40)
        hi, tail = two_sum(hi, lo)  # exact
        ok = np.isfinite(hi) & np.isfinite(bound)
    return np.where(ok, hi, np.nan), tail, np.where(ok, bound, np.inf)


def _veltkamp(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a = hi + lo exactly, each with at most 26 significant bits (no overflow: |a| < 2^995)."""
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


EXACT_ZERO = object()  # a sum that is exactly zero: its sign comes from its terms, not from a rounding


def _fsum_rounded(terms: list[float], dtype: np.dtype) -> object:
    """The sum of ``terms``, exact floats, rounded to ``dtype``: math.fsum is correctly rounded to float64;
    to a narrower type the rounding of that float64 is the rounding of the exact sum except when it falls on
    a midpoint of the narrower type (or on its overflow threshold), where the sign of the remainder decides.
    None when fsum overflows, EXACT_ZERO for an exact zero."""
    try:
        first = math.fsum(terms)
    except OverflowError:
        return None
    if not math.isfinite(first):
        return None
    if first == 0:  # the terms are exact and their sum a multiple of 2^-1074: exactly zero
        return EXACT_ZERO
    if dtype == F64:
        return first
    with np.errstate(over="ignore"):
        rounded = np.float64(first).astype(dtype)
    if float(rounded) == first:
        return first
    finite_max = float(np.finfo(dtype).max)
    if math.isinf(rounded):
        threshold = finite_max + 2.0 ** (_FORMATS[dtype][2] - _FORMATS[dtype][0])  # max + half its ulp
        lower, upper = math.copysign(finite_max, first), math.copysign(math.inf, first)
        midpoint = math.copysign(threshold, first)
    else:
        other = np.nextafter(rounded, dtype.type(math.copysign(math.inf, first - float(rounded))))
        if not np.isfinite(other):
            return float(rounded)
        lower, upper = sorted((float(rounded), float(other)))
        midpoint = (lower + upper) / 2
    if first != midpoint:
        return float(rounded)
    remainder = math.fsum([*terms, -first])
    if remainder > 0:
        return upper
    if remainder < 0:
        return lower
    return float(rounded)  # a true tie: to even, as the conversion does


def _integer_rounded(
    ml: np.ndarray, el: np.ndarray, mr: np.ndarray, er: np.ndarray, bias: float | None, dtype: np.dtype
) -> object:
    """sum_k (ml*2^el) * (mr*2^er) (+ bias) in Python integers, rounded to ``dtype`` (EXACT_ZERO for 0)."""
    keep = np.flatnonzero((ml != 0) & (mr != 0))
    parts = list(zip(ml[keep].tolist(), mr[keep].tolist(), (el[keep] + er[keep]).tolist(), strict=True))
    if bias:
        mb, eb = mantissa_exponent(np.array([bias]))
        parts.append((int(mb[0]), 1, int(eb[0])))
    base = min((e for _, _, e in parts), default=0)
    numerator = sum((a * b) << (e - base) for a, b, e in parts)
    return EXACT_ZERO if numerator == 0 else round_dyadic(numerator, base, dtype)


def _all_negative_zero(left: np.ndarray, right: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """For exact zero sums: whether every term (and the bias) is -0, which makes the IEEE sum -0."""
    zero_term = (left == 0) | (right == 0)
    negative = np.all(zero_term & (np.signbit(left) ^ np.signbit(right)), axis=1) & (left.shape[1] > 0)
    if bias is not None:
        negative &= (bias == 0) & np.signbit(bias)
    return negative
