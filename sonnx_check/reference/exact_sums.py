"""Exact arithmetic for the sum-of-products kernels (products_common): the float formats, the rounding of
a dyadic value to a type, error-free transformations, and tier 3 and the certificates (each element's sum
recomputed from its own terms until its correctly rounded value is proven). Pure functions on numbers; the
tiers that decide which elements need them are in products_common."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
FLOAT_DTYPES = (F16, F32, F64)
U = 2.0**-53  # unit roundoff of float64
TINY = 2.0**-1074  # smallest positive float64

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


def lowest_bit_exponent(a: np.ndarray) -> np.ndarray:
    """For finite values: e with 2^e the lowest set bit of |a| (every a is an integer multiple of 2^e), as
    float64; +inf for zeros. The lowest set bit's own value is |a| less |a| with that bit of its pattern
    cleared (exact: a power of two), or |a| itself where the mantissa field is zero (a power of two, or 0),
    and frexp gives its exponent: half the passes of the bit fields (``_lowest_bit_fields``, which
    non-finite values keep). float16/float32 values are taken in float32: the same values, half the
    bytes."""
    a = np.asarray(a)
    narrow = a.dtype in (F16, F32)
    work, unsigned, field = (np.float32, np.uint32, 23) if narrow else (np.float64, np.uint64, 52)
    magnitude = np.abs(np.asarray(a, dtype=work))
    bits = magnitude.view(unsigned)
    with np.errstate(invalid="ignore"):  # inf - inf, NaN: replaced below
        low = magnitude - (bits & (bits - unsigned(1))).view(work)
    np.copyto(low, magnitude, where=(bits & unsigned((1 << field) - 1)) == 0)
    exponent = np.frexp(low)[1].astype(np.float64)
    exponent -= 1
    exponent[magnitude == 0] = np.inf
    odd = ~np.isfinite(magnitude)
    if odd.any():
        with np.errstate(invalid="ignore"):  # a float32 NaN's payload, widened
            exponent[odd] = _lowest_bit_fields(magnitude[odd])
    return exponent


def _lowest_bit_fields(a: np.ndarray) -> np.ndarray:
    """``lowest_bit_exponent`` from the bit fields of float64 values (any value: what an infinity or a NaN
    gives is kept as it was)."""
    bits = np.ascontiguousarray(np.abs(a), dtype=np.float64).view(np.uint64)
    field = bits >> np.uint64(52)
    mantissa = bits & np.uint64((1 << 52) - 1)
    mantissa = np.where(field > 0, mantissa | np.uint64(1 << 52), mantissa)
    lowest = mantissa & (~mantissa + np.uint64(1))  # the lowest set bit, a power of two below 2^53
    shift = (lowest.astype(np.float64).view(np.uint64) >> np.uint64(52)).astype(np.int64) - 1023
    exponent = (np.maximum(field, np.uint64(1)).astype(np.int64) - 1075 + shift).astype(np.float64)
    exponent[mantissa == 0] = np.inf
    return exponent


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


_CERTIFY_CHUNK = 1 << 14  # elements per step of _certify_rounding: its temporaries stay in the L2 cache

# fills ``out`` (stop - start rows, P) with the bound of the output's rows start to stop, counted over the
# batches laid end to end (row r is row r % M of batch r // M)
BoundRows = Callable[[int, int, np.ndarray], None]


def batch_rows(array: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows start to stop of a (B, M, ...) array, its batches laid end to end (``BoundRows``' rows): a view
    within one batch, else gathered."""
    m = array.shape[1]
    if m and start // m == (stop - 1) // m:
        b = start // m
        return array[b, start - b * m : stop - b * m]
    b, i = divmod(np.arange(start, stop), max(m, 1))
    return array[b, i]


def _certify_rounding(
    approx: np.ndarray, bound: np.ndarray | BoundRows, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """``_certify_single`` for the sums of products, where a zero result is certified only when the whole
    interval lies on one side of 0 (then it is the signed zero of that side): an exact zero takes its sign
    from its terms, which tier 2 counts. approx (B, M, P); the interval is approx +- bound, ``bound`` an
    array of approx's shape or a function that gives it a block of rows at a time (``BoundRows``). Rows in
    blocks of about ``_CERTIFY_CHUNK`` elements, across batches (a depthwise Conv is B = channels batches of
    one row each: a block per row would spend its time in Python); every element's operations are its own,
    so the blocking changes no value."""
    batch, m, p = approx.shape
    if isinstance(bound, np.ndarray):
        array = np.broadcast_to(bound, approx.shape)

        def bound(start: int, stop: int, out: np.ndarray) -> None:
            np.copyto(out, batch_rows(array, start, stop))

    low = np.empty(approx.shape, dtype=dtype)
    certified = np.empty(approx.shape, dtype=bool)
    rows = batch * m
    flat_approx = approx.reshape(rows, p)
    flat_low, flat_certified = low.reshape(rows, p), certified.reshape(rows, p)
    kind = f"u{np.dtype(dtype).itemsize}"
    step = max(1, min(rows, _CERTIFY_CHUNK // max(p, 1)))
    high = np.empty((step, p), dtype=dtype)
    width, end = np.empty((step, p)), np.empty((step, p))
    with np.errstate(over="ignore"):
        for start in range(0, rows, step):
            stop = min(start + step, rows)
            n = stop - start
            a, w, e, h = flat_approx[start:stop], width[:n], end[:n], high[:n]
            lo, c = flat_low[start:stop], flat_certified[start:stop]
            bound(start, stop, w)
            np.subtract(a, w, out=e)
            np.copyto(lo, e, casting="same_kind")
            np.add(a, w, out=w)
            np.copyto(h, w, casting="same_kind")
            np.equal(lo.view(kind), h.view(kind), out=c)
            zero = c & (lo == 0)
            if zero.any():
                c[zero] = (e[zero] > 0) | (w[zero] < 0)
    return low, certified


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
        with np.errstate(over="ignore"):  # the next value beyond the largest finite one: inf, checked below
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
