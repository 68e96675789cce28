"""BatchNormalization reference kernel (SONNX, inference mode, based on BatchNormalization-15), written from
ops/batchnormalization/batch_normalization.md (real and float sections; the accuracy note it links,
batchnorm_acc.md, is not in the published texts).

    Y[n, c, d...] = scale[c] * (X[n, c, d...] - input_mean[c]) / sqrt(input_var[c] + epsilon) + B[c]

C = dX1, or 1 when X is 1-D; epsilon is a float attribute, so its value is the float32 it carries (1e-5 is
1.0000000000000000818e-05 as float32). X and Y share a type; scale and B share one; input_mean and
input_var share one; the three may differ (the float section's type constraints, ONNX T/T1/T2).

Accuracy: the exact real value of the formula, rounded once to Y's type (correctly rounded: the kernel's own
error is at most half an ulp). How: per channel, k = scale / sqrt(input_var + epsilon) is computed exactly to
~120 bits in integers and kept as a float64 pair; per element, float64 arithmetic with a rigorous error bound
for float16/float32 results (k*(X - mean) + B: at most 3.1u|k(X - mean)| + u|Y|), double-double arithmetic
(TwoSum, Dekker's TwoProduct) for float64 results (at most 2^-100|k(X - mean)|); the interval around the
approximation is certified to round to one value, and the rare elements it is not (a result near a rounding
boundary, heavy cancellation between k(X - mean) and B) are decided exactly: with rational arithmetic, y is
compared with the midpoints around its candidate rounding through squares (sign(A/sqrt(q) - D) from A^2 and
D^2 q), so no square root is ever approximated there.

Special values follow IEEE 754 evaluated in the text's order, scale * ((X - mean) / sqrt(var + eps)) + B, on
exact intermediate values: NaN from any NaN, inf - inf, inf / inf, 0 * inf, inf - inf again at "+ B"; an
infinite variance makes the quotient +-0 (sign of X - mean); X - mean = 0 is -0 only for X = -0 and mean = +0;
an exact zero Y is -0 only when scale * quotient is -0 and B is -0 (it is +0 after an exact cancellation).
A finite result overflows to +-inf only when the exact value rounds beyond the largest finite value.

Data constraint: input_var >= 0 (BatchNormalization.input_var.C2, real section C2 and float section C3, so
for every type): a negative variance (including -inf) raises DataConstraintError with the number of negative
elements; a NaN variance is not "negative" (as the static check reads it) and gives NaN.
Refused (OutsideProfileError / ReferenceError, each naming its rule): training mode or the running_mean /
running_var outputs (BatchNormalization.R1), epsilon <= 0 or NaN (epsilon.C1), parameters that are not 1-D of
C elements (scale.C1), a type outside float16/float/double or mixed types within a pair (types, scale.C2,
input_mean.C2). Vectorised over the tensor; the only loop runs over channels (k) and over the rare elements of
the exact decision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import onnx

from sonnx_check.reference.batchnorm_factors import channel_factors
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import DataConstraintError, OutsideProfileError, ReferenceError
from sonnx_check.reference.exact_sums import (
    F64,
    FLOAT_DTYPES,
    TINY,
    U,
    _certify_double,
    _veltkamp,
    two_sum,
)

DEFAULT_EPSILON = 1e-5


def batch_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    input_mean: np.ndarray,
    input_var: np.ndarray,
    *,
    epsilon: float = DEFAULT_EPSILON,
    max_elements: int | None = None,
) -> np.ndarray:
    """Y of inference-mode BatchNormalization, correctly rounded to X's type."""
    x = np.asarray(x)
    params = [np.asarray(p) for p in (scale, b, input_mean, input_var)]
    _check(x, params)
    eps = float(np.float32(epsilon))
    if not eps > 0:
        raise ReferenceError(
            f"BatchNormalization with epsilon={epsilon}: must be > 0 (BatchNormalization.epsilon.C1)"
        )
    if math.isinf(eps):  # k = scale / sqrt(input_var + inf) = 0: the exact factors assume a finite one
        raise ReferenceError(
            f"BatchNormalization with epsilon={epsilon}: the reference computes a finite epsilon"
        )
    negative = int(np.count_nonzero(params[3] < 0))
    if negative:
        raise DataConstraintError("BatchNormalization.input_var.C2", "input_var", negative)
    ensure_within_budget("BatchNormalization output Y", x.shape, max_elements)
    shape = (1, -1) + (1,) * (x.ndim - 2) if x.ndim >= 2 else (-1,)
    s, bias, mean, var = (p.astype(np.float64).reshape(shape) for p in params)
    xs = x.astype(np.float64) if x.dtype == F64 else x  # float16/float32: converted block by block
    k_hi, k_lo = channel_factors(params[0], params[3], eps)
    k_hi, k_lo = k_hi.reshape(shape), k_lo.reshape(shape)
    finite = all(np.isfinite(a).all() for a in (xs, s, bias, mean, var))
    with np.errstate(all="ignore"):
        if not finite:  # NaN and infinities anywhere: the special values of the whole tensor first
            special, special_values = _special_elements(xs, s, bias, mean, var)
            if special.all():  # an X of NaN and infinities only (edge datasets): nothing else to compute
                return special_values.astype(x.dtype)
        if x.dtype == F64:
            y = np.empty(x.shape, dtype=x.dtype)
            value, certified = _double_double(xs, mean, bias, k_hi, k_lo)
            y[...] = value
        else:
            y, certified = _single_blocks(x, mean, bias, k_hi)
        if not finite:
            y[special] = special_values[special].astype(x.dtype)
            certified |= special
        left = np.flatnonzero(~certified)
        if left.size == 0:
            return y
        inner, channels = int(np.prod(x.shape[2:])), s.size
        # The rest: where scale * quotient is an exact zero, Y is B or a signed zero; the others are decided
        # exactly. Element by element, on the gathered elements or, when they are most of X (an X of zeros
        # equal to the mean), on the whole tensor with the parameters broadcast, which spares the gathers.
        flat = y.reshape(-1)
        if 2 * left.size >= x.size:
            undecided = ~certified
            special, _, product_zero, zero_sign = _special_values(xs, s, bias, mean, var, finite)
            zero_value = np.where(zero_sign & np.signbit(bias), -0.0, 0.0)
            decided = undecided & product_zero & ~special
            y[decided] = np.where(bias != 0, bias, zero_value)[decided].astype(x.dtype)
            rest = np.flatnonzero(undecided & ~product_zero & ~special)
        else:
            channel = (left // inner) % channels  # the parameters' index of each element
            xs_left = xs.reshape(-1)[left].astype(np.float64)
            s_left, bias_left, mean_left, var_left = (a.reshape(-1)[channel] for a in (s, bias, mean, var))
            special, _, product_zero, zero_sign = _special_values(
                xs_left, s_left, bias_left, mean_left, var_left, finite
            )
            product_zero = product_zero & ~special
            zero_value = np.where(zero_sign & np.signbit(bias_left), -0.0, 0.0)
            exact = np.where(bias_left != 0, bias_left, zero_value)
            flat[left[product_zero]] = exact[product_zero].astype(x.dtype)
            rest = left[~product_zero & ~special]
    channel = (rest // inner) % channels
    columns = [
        a.tolist() for a in [xs.reshape(-1)[rest]] + [a.reshape(-1)[channel] for a in (s, bias, mean, var)]
    ]
    for n, xn, sn, bn, mn, vn in zip(rest.tolist(), *columns, strict=True):
        flat[n] = _exact(float(xn), float(sn), float(bn), float(mn), float(vn), eps, x.dtype)
    return y


_BLOCK = 1 << 15  # elements per block of the float16/float32 path: its temporaries stay in cache


def _single_blocks(
    x: np.ndarray, mean: np.ndarray, bias: np.ndarray, k_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """float16/float32 results: k*(x - mean) + B in float64 with its rigorous error bound (at most
    3.1u|k(x - mean)| + u|y|, k_hi within 2^-104 of k), certified to round to one value of X's type; over
    blocks of rows (one channel of one batch item each) that stay in the processor's cache. Returns Y and the
    certified mask (False also where the approximation is not finite, or rounds to a zero whose sign the
    interval leaves open)."""
    shape = x.shape
    inner = int(np.prod(shape[2:])) if x.ndim > 2 else 1
    channels = mean.size
    rows = np.ascontiguousarray(x).reshape(-1, inner)
    mean_r, bias_r, k_r = (np.broadcast_to(a.reshape(-1), (channels,)) for a in (mean, bias, k_hi))
    channel_of_row = np.arange(rows.shape[0]) % channels
    y = np.empty(rows.shape, dtype=x.dtype)
    certified = np.empty(rows.shape, dtype=bool)
    step = max(1, _BLOCK // inner)
    kind = f"u{x.dtype.itemsize}"
    for first in range(0, rows.shape[0], step):
        c = channel_of_row[first : first + step, None]
        p = rows[first : first + step].astype(np.float64)
        p -= mean_r[c]
        p *= k_r[c]
        approx = p + bias_r[c]
        bound = np.abs(p, out=p)
        bound *= 3.1 * U
        bound += 2.0**-49 * np.abs(approx)
        bound += 8 * TINY
        low = approx - bound  # _certify_single's test, with the interval's ends kept for the zeros
        value = low.astype(x.dtype)
        np.add(approx, bound, out=bound)
        ok = value.view(kind) == bound.astype(x.dtype).view(kind)
        ok &= np.isfinite(approx)
        zero = value == 0
        if zero.any():  # a zero when the interval lies on one side of 0: y is a nonzero real of that side
            ok[zero] &= (low[zero] > 0) | (bound[zero] < 0)
        y[first : first + step] = value
        certified[first : first + step] = ok
    return y.reshape(shape), certified.reshape(shape)


def _check(x: np.ndarray, params: list[np.ndarray]) -> None:
    if x.ndim < 1:
        raise ReferenceError(
            "BatchNormalization of a scalar X: X has rank 1 or more (BatchNormalization.X.C2)"
        )
    for name, a in zip(("X", "scale", "B", "input_mean", "input_var"), (x, *params), strict=True):
        if a.dtype not in FLOAT_DTYPES:
            raise OutsideProfileError(
                f"BatchNormalization {name} of {a.dtype}: not a type of the profile "
                "(BatchNormalization.types)"
            )
    if params[0].dtype != params[1].dtype:
        raise OutsideProfileError(
            f"BatchNormalization scale of {params[0].dtype} and B of {params[1].dtype}: "
            "one type (BatchNormalization.scale.C2)"
        )
    if params[2].dtype != params[3].dtype:
        raise OutsideProfileError(
            f"BatchNormalization input_mean of {params[2].dtype} and input_var of {params[3].dtype}: "
            "one type (BatchNormalization.input_mean.C2)"
        )
    channels = x.shape[1] if x.ndim >= 2 else 1
    for name, a in zip(("scale", "B", "input_mean", "input_var"), params, strict=True):
        if a.shape != (channels,):
            raise ReferenceError(
                f"BatchNormalization {name} of shape {list(a.shape)}: a 1-D tensor of C = {channels} "
                "elements (BatchNormalization.scale.C1)"
            )


def _sqrt_fraction(t: Fraction, bits: int) -> Fraction:
    """A rational within a relative 2^-(bits-1) below sqrt(t), t > 0 (an integer square root, scaled)."""
    shift = bits - (t.numerator.bit_length() - t.denominator.bit_length()) // 2
    if shift >= 0:
        return Fraction(math.isqrt((t.numerator << (2 * shift)) // t.denominator), 1 << shift)
    return Fraction(math.isqrt(t.numerator // (t.denominator << (-2 * shift))) << -shift)


def _to_float(q: Fraction) -> float:
    """float(q), correctly rounded (int / int true division), +-inf beyond the float64 range."""
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _double_double(
    x: np.ndarray, mean: np.ndarray, bias: np.ndarray, k_hi: np.ndarray, k_lo: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """float64 results: k*(x - mean) + B in double-double, certified to round to one float64."""
    d_hi, d_lo = two_sum(x, -mean)
    p_hi = k_hi * d_hi
    kh, kl = _veltkamp(k_hi)
    dh, dl = _veltkamp(d_hi)
    p_err = ((kh * dh - p_hi) + kh * dl + kl * dh) + kl * dl
    p_lo = p_err + (k_hi * d_lo + k_lo * d_hi)
    y_hi, t = two_sum(p_hi, bias)
    y_lo = t + p_lo
    bound = 2.0**-100 * np.abs(p_hi) + 2 * U * np.abs(y_lo) + 16 * TINY
    y_hi, y_lo = two_sum(y_hi, y_lo)
    fits = (np.abs(k_hi) < 2.0**995) & (np.abs(d_hi) < 2.0**995) & np.isfinite(y_hi)
    return y_hi, _certify_double(y_hi, y_lo, bound) & fits


def _special_elements(
    x: np.ndarray, s: np.ndarray, b: np.ndarray, m: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where Y is NaN or +-inf over the whole tensor, and those values there: ``_special_values`` in fewer
    passes. In a channel of finite parameters only a non-finite X gives one, and it is scale * X in float64
    (NaN from a NaN or from 0 * inf, else an infinity of the sign of scale times X's; every NaN made the
    kernel's one NaN); the rows (one channel of one batch item each) of a channel with a non-finite
    parameter take ``_special_values``."""
    if x.size == 0:
        return np.zeros(x.shape, dtype=bool), np.zeros(x.shape)
    channels = s.size
    s, b, m, v = (a.reshape(-1) for a in (s, b, m, v))
    rows = x.reshape(-1, int(np.prod(x.shape[2:])))
    special = ~np.isfinite(rows)
    values = np.multiply(rows, s[np.arange(rows.shape[0]) % channels, None], dtype=np.float64)
    np.putmask(values, np.isnan(values), np.nan)  # one NaN, whatever X's payload or 0 * inf's sign
    regular = np.isfinite(s) & np.isfinite(b) & np.isfinite(m) & np.isfinite(v)
    if not regular.all():
        others = np.flatnonzero(~regular[np.arange(rows.shape[0]) % channels])
        c = (others % channels)[:, None]
        special[others], values[others], _, _ = _special_values(
            rows[others].astype(np.float64), s[c], b[c], m[c], v[c], False
        )
    return special.reshape(x.shape), values.reshape(x.shape)


def _special_values(
    x: np.ndarray, s: np.ndarray, b: np.ndarray, m: np.ndarray, v: np.ndarray, finite: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(where Y is NaN or +-inf, those values, where scale * quotient is an exact zero, its sign)."""
    shape = np.broadcast_shapes(x.shape, s.shape, b.shape, m.shape, v.shape)
    xm_zero = x == m  # exact: both finite here, or equal infinities (handled as NaN below)
    xm_negative_zero = np.signbit(x) & ~np.signbit(m)  # -0 - (+0) = -0; every other zero difference is +0
    if finite:
        product_zero = np.broadcast_to((s == 0) | xm_zero, shape)
        quotient_negative = np.where(xm_zero, xm_negative_zero, x < m)
        zero_sign = np.broadcast_to(np.signbit(s) ^ quotient_negative, shape)
        nothing = np.zeros(shape, dtype=bool)
        return nothing, np.zeros(shape), product_zero, zero_sign
    nan = np.isnan(x) | np.isnan(s) | np.isnan(b) | np.isnan(m) | np.isnan(v)
    xm_inf = np.isinf(x) | np.isinf(m)
    xm_nan = np.isinf(x) & np.isinf(m) & (x == m)
    xm_neg = np.where(np.isinf(x), x < 0, np.where(np.isinf(m), m > 0, x < m))  # sign of x - m (nonzero)
    den_inf = np.isinf(v)
    q_nan = nan | xm_nan | (xm_inf & den_inf)
    q_inf = xm_inf & ~q_nan
    q_zero = ~q_nan & ~q_inf & (den_inf | xm_zero)
    q_negative = np.where(xm_zero & ~xm_inf, xm_negative_zero, xm_neg)
    sq_nan = q_nan | (np.isinf(s) & q_zero) | (q_inf & (s == 0))
    sq_inf = ~sq_nan & (np.isinf(s) | q_inf)
    sq_negative = np.signbit(s) ^ q_negative
    sq_zero = ~sq_nan & ~sq_inf & ((s == 0) | q_zero)
    y_nan = sq_nan | (sq_inf & np.isinf(b) & (sq_negative != (b < 0)))
    y_inf = ~y_nan & (sq_inf | np.isinf(b))
    y_inf_negative = np.where(sq_inf, sq_negative, b < 0)
    special = np.broadcast_to(y_nan | y_inf, shape)
    values = np.broadcast_to(np.where(y_nan, np.nan, np.where(y_inf_negative, -np.inf, np.inf)), shape)
    product_zero = np.broadcast_to(sq_zero & ~np.isinf(b), shape)
    return special, values, product_zero, np.broadcast_to(sq_negative, shape)


# -- the exact decision, one element at a time ------------------------------------------------------------
def _exact(x: float, s: float, b: float, m: float, v: float, eps: float, dtype: np.dtype) -> float:
    """The correctly rounded y = A / sqrt(q) + B for one element with finite operands, A = s*(x - m) != 0:
    candidates from a float64 estimate, decided by exact comparisons with the midpoints around them."""
    a = Fraction(s) * (Fraction(x) - Fraction(m))
    q = Fraction(v) + Fraction(eps)
    bias = Fraction(b)

    def compare(t: Fraction) -> int:
        """sign(y - t) without a square root: y - t = A/sqrt(q) - D with D = t - B."""
        d = t - bias
        if a > 0 and d <= 0:
            return 1
        if a < 0 and d >= 0:
            return -1
        gap = a * a - d * d * q
        sign = (gap > 0) - (gap < 0)
        return sign if a > 0 else -sign

    if compare(Fraction(0)) == 0:
        return 0.0  # an exact cancellation: +0
    bits = 64
    while True:  # |A| / sqrt(q) to enough bits that the estimate of y is good to ~2^-60 of itself
        root = _sqrt_fraction(a * a / q, bits)
        value = (root if a > 0 else -root) + bias
        if value != 0 and abs(value) > root * Fraction(2) ** (62 - bits):  # root's error < root 2^(2-bits)
            break
        bits *= 2
    estimate = _to_float(value)
    kind = np.dtype(dtype).type
    with np.errstate(over="ignore"):
        candidate = kind(estimate)
    return _round_by_comparison(candidate, compare, dtype)


def _round_by_comparison(candidate: np.generic, compare: Callable[[Fraction], int], dtype: np.dtype) -> float:
    """Walk from ``candidate`` to the rounding of y, given sign(y - t) for any rational t (y != 0)."""
    kind = np.dtype(dtype).type
    while True:
        with np.errstate(over="ignore"):  # the neighbour of the largest finite value is an infinity
            above = np.nextafter(candidate, kind(np.inf))
            below = np.nextafter(candidate, kind(-np.inf))
        upper_mid, lower_mid = _midpoint(candidate, above, dtype), _midpoint(below, candidate, dtype)
        if upper_mid is not None and compare(upper_mid) > 0:
            candidate = above
            if np.isinf(candidate):  # beyond the overflow threshold
                return float(candidate)
            continue
        if lower_mid is not None and compare(lower_mid) < 0:
            candidate = below
            if np.isinf(candidate):
                return float(candidate)
            continue
        break
    for mid, other in ((upper_mid, above), (lower_mid, below)):
        if mid is not None and compare(mid) == 0:  # a tie: to even (an infinity counts as even)
            even = np.isinf(other) or (int(np.array(other).view(f"u{np.dtype(dtype).itemsize}")) % 2 == 0)
            candidate = other if even else candidate
            break
    if candidate == 0:
        return -0.0 if compare(Fraction(0)) < 0 else 0.0
    return float(candidate)


def _midpoint(low: np.generic, high: np.generic, dtype: np.dtype) -> Fraction | None:
    """The exact midpoint of two adjacent values of ``dtype``; the overflow threshold (max + half an ulp) when
    one is infinite; None beyond the infinities."""
    if np.isinf(low) and np.isinf(high):
        return None
    if np.isinf(high) or np.isinf(low):
        finite = low if np.isinf(high) else high
        if np.isinf(finite):
            return None
        info = np.finfo(dtype)
        half_ulp = Fraction(2) ** (int(info.maxexp) - int(info.nmant) - 2)
        return Fraction(float(finite)) + (half_ulp if np.isinf(high) else -half_ulp)
    return (Fraction(float(low)) + Fraction(float(high))) / 2


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("training_mode", 0) != 0 or len([o for o in node.output if o]) > 1:
        raise OutsideProfileError(
            "BatchNormalization in training mode (training_mode=1 or running_mean/running_var outputs): "
            "SONNX specifies inference mode only (BatchNormalization.R1)"
        )
    present = [a for a in inputs if a is not None]
    if len(inputs) != 5 or len(present) != 5:
        raise ReferenceError("BatchNormalization needs X, scale, B, input_mean and input_var")
    x, scale, b, mean, var = present
    return [
        batch_normalization(
            x, scale, b, mean, var, epsilon=attrs.get("epsilon", DEFAULT_EPSILON), max_elements=max_elements
        )
    ]
