"""Deliberately naive readings of Conv, MatMul, Gemm and BatchNormalization, written apart from the kernels
(no shared code): per-element Python loops, exact rational arithmetic (fractions.Fraction) or 100-digit
decimals, the literal X_p and W_d of conv2.md (the padding and the dilation zeros built as actual zeros), the
IEEE special values decided term by term, and the rounding to the output type decided by comparing exact
distances to the neighbouring values."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np


# -- rounding ------------------------------------------------------------------------------------------------
def _pattern(value: np.generic) -> int:
    return int(np.array(value).view(f"u{value.dtype.itemsize}"))


def round_to(q: Fraction | Decimal, dtype: type) -> float:
    """q rounded to nearest, ties to even, in ``dtype``: +-inf at or beyond max + half an ulp, the sign of q
    on a zero result. Candidates come from numpy; the choice between them is made with exact distances."""
    q = Fraction(q)
    kind = np.dtype(dtype).type
    info = np.finfo(dtype)
    half_ulp_of_max = Fraction(2) ** (int(info.maxexp) - int(info.nmant) - 2)
    if abs(q) >= Fraction(float(info.max)) + half_ulp_of_max:
        return math.inf if q > 0 else -math.inf
    try:
        guess = float(q)
    except OverflowError:
        guess = float(info.max) if q > 0 else -float(info.max)
    with np.errstate(over="ignore"):
        centre = kind(guess)
    if np.isinf(centre):
        centre = kind(float(info.max) if q > 0 else -float(info.max))
    candidates = [centre]
    with np.errstate(over="ignore"):
        for _ in range(2):  # two neighbours on each side: numpy's own rounding may be off by one
            candidates += [np.nextafter(candidates[-1], kind(np.inf))]
        for _ in range(2):
            candidates += [np.nextafter(candidates[0] if _ == 0 else candidates[-1], kind(-np.inf))]
    finite = [c for c in candidates if np.isfinite(c)]
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - q), _pattern(c) % 2))
    value = float(best)
    if value == 0:
        return (0.0 if q > 0 else -0.0) if q != 0 else 0.0
    return value


# -- sums of products ----------------------------------------------------------------------------------------
def naive_sum(pairs: list[tuple[float, float]], bias: float | None, dtype: type) -> float:
    """sum of a*b (+ bias) by the IEEE rules on each term, the finite ones exactly, rounded once."""
    nan = pos_inf = neg_inf = False
    for a, b in pairs:
        if math.isnan(a) or math.isnan(b):
            nan = True
        elif math.isinf(a) or math.isinf(b):
            if a == 0 or b == 0:
                nan = True  # 0 * inf
            elif (a > 0) == (b > 0):
                pos_inf = True
            else:
                neg_inf = True
    if bias is not None:
        nan |= math.isnan(bias)
        pos_inf |= bias == math.inf
        neg_inf |= bias == -math.inf
    if nan or (pos_inf and neg_inf):
        return math.nan
    if pos_inf or neg_inf:
        return math.inf if pos_inf else -math.inf
    total = sum((Fraction(a) * Fraction(b) for a, b in pairs), Fraction(0))
    if bias is not None:
        total += Fraction(bias)
    if total != 0:
        return round_to(total, dtype)
    # an exact zero: the IEEE sum of its terms; -0 only when every term (and the bias) is -0
    signs = [math.copysign(1.0, a) * math.copysign(1.0, b) < 0 for a, b in pairs]
    every_term_negative_zero = bool(pairs) and all(
        (a == 0 or b == 0) and negative for (a, b), negative in zip(pairs, signs, strict=True)
    )
    if bias is not None:
        every_term_negative_zero = every_term_negative_zero and bias == 0 and math.copysign(1.0, bias) < 0
    return -0.0 if every_term_negative_zero else 0.0


def naive_conv(x, w, b, strides, pads, dilations, group, holes_are_operands=True):
    """The formula of conv2.md on X_p (zeros added around X) and W_d (zeros inserted into W)."""
    n, channels, height, width = x.shape
    out_channels, w_channels, kh, kw = w.shape
    extent = (dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1)
    xp = np.zeros((n, channels, height + pads[0] + pads[2], width + pads[1] + pads[3]), dtype=x.dtype)
    xp[:, :, pads[0] : pads[0] + height, pads[1] : pads[1] + width] = x
    wd = np.zeros((out_channels, w_channels, *extent), dtype=w.dtype)
    wd[:, :, :: dilations[0], :: dilations[1]] = w
    out_h = (xp.shape[2] - extent[0]) // strides[0] + 1
    out_w = (xp.shape[3] - extent[1]) // strides[1] + 1
    y = np.zeros((n, out_channels, out_h, out_w), dtype=x.dtype)
    for image in range(n):
        for c in range(out_channels):
            for m in range(out_h):
                for q in range(out_w):
                    pairs = []
                    inputs = range(channels) if group == 1 else [c]
                    for i in inputs:
                        for j in range(extent[0]):
                            for z in range(extent[1]):
                                if not holes_are_operands and (j % dilations[0] or z % dilations[1]):
                                    continue
                                pairs.append((
                                    float(xp[image, i, m * strides[0] + j, q * strides[1] + z]),
                                    float(wd[c, 0 if group > 1 else i, j, z]),
                                ))  # fmt: skip
                    bias = None if b is None else float(b[c])
                    y[image, c, m, q] = naive_sum(pairs, bias, x.dtype)
    return y


def naive_matmul(a, b):
    m, n = a.shape
    p = b.shape[1]
    y = np.zeros((m, p), dtype=a.dtype)
    if a.dtype.kind in "iu":
        bits = a.dtype.itemsize * 8
        for i in range(m):
            for j in range(p):
                total = sum(int(a[i, k]) * int(b[k, j]) for k in range(n)) % (1 << bits)
                if a.dtype.kind == "i" and total >= 1 << (bits - 1):
                    total -= 1 << bits
                y[i, j] = total
        return y
    for i in range(m):
        for j in range(p):
            y[i, j] = naive_sum([(float(a[i, k]), float(b[k, j])) for k in range(n)], None, a.dtype)
    return y


def naive_gemm(a, b, c):
    m, n = a.shape
    p = b.shape[1]
    y = np.zeros((m, p), dtype=a.dtype)
    for i in range(m):
        for j in range(p):
            y[i, j] = naive_sum([(float(a[i, k]), float(b[k, j])) for k in range(n)], float(c[i, j]), a.dtype)
    return y


def naive_abs_sum(pairs: list[tuple[float, float]], bias: float | None) -> Fraction:
    total = sum((abs(Fraction(a) * Fraction(b)) for a, b in pairs), Fraction(0))
    return total + (abs(Fraction(bias)) if bias is not None else 0)


# -- BatchNormalization ------------------------------------------------------------------------------------
def naive_batch_normalization(x, scale, b, mean, var, epsilon):
    """Per element: IEEE evaluation in the text's order where a special value is involved (Python floats:
    the inputs are small enough that no finite intermediate overflows), otherwise the exact value to 100
    digits, rounded to X's type."""
    eps = float(np.float32(epsilon))
    y = np.zeros(x.shape, dtype=x.dtype)
    for index in np.ndindex(*x.shape):
        c = index[1] if x.ndim >= 2 else 0
        xv, s, bb, m, v = float(x[index]), float(scale[c]), float(b[c]), float(mean[c]), float(var[c])
        finite = all(math.isfinite(t) for t in (xv, s, bb, m, v))
        if not finite or s == 0 or xv == m:
            with np.errstate(all="ignore"):
                quotient = (xv - m) / math.sqrt(v + eps) if not math.isnan(v + eps) else math.nan
                try:
                    product = s * quotient
                except (OverflowError, ValueError):
                    product = math.nan
                value = product + bb
            if math.isfinite(value) and value != 0:
                value = round_to(Fraction(value), x.dtype)  # the bias itself (a zero product)
            y[index] = value
            continue
        with localcontext() as context:
            context.prec = 100
            a = Decimal(s) * (Decimal(xv) - Decimal(m))
            exact = a / (Decimal(v) + Decimal(eps)).sqrt() + Decimal(bb)
        y[index] = round_to(exact, x.dtype) if exact != 0 else 0.0
    return y
