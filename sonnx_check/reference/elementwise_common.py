"""Shared machinery of the element-wise reference kernels (Abs, Neg, Relu, LeakyRelu, Exp, Log, Sqrt, Sigmoid,
Tanh, Add, Sub, Mul, Div, Pow, Less, Where, Clip).

What is here:

* ``DataConstraintError``: the actual data break a constraint that a type section states on the data (integer
  Div by zero, Abs of the minimum integer, a negative integer exponent of Pow). It names the rule so the
  comparison can report it under that ID.
* The refusals every element-wise kernel shares: a type outside the operator's sections, operands of
  different types, operands of different shapes (SONNX element-wise operators do not broadcast).
* Double-double ("dd") arithmetic on numpy arrays: a value is the unevaluated sum ``hi + lo`` of two float64
  with ``|lo| <= ulp(hi)/2``, built from error-free transformations (TwoSum, Dekker's split and TwoProduct).
  It carries about 106 bits, which the transcendental kernels use to compute the exact real result to a
  relative error far below 2**-80 (``double_double`` and ``double_double_functions``, re-exported here).
* Rounding a dd value times 2**K to float16, float or double correctly (round to nearest, ties to even,
  subnormals and overflow included), and the *certificate*: the value is rounded at both ends of its error
  interval, and every element whose two roundings differ (the exact result may lie on either side of a
  rounding boundary) is recomputed from a Fraction or 100-digit decimal by the kernel's ``exact`` function.
  With that, the transcendental kernels return the correctly rounded result; see ``resolve_undecided``.

All loops run over chunks of elements (bounded temporaries) or over the rare undecided elements, never over
every element.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import overload

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.double_double import (  # noqa: F401 - re-exported
    dd_add,
    dd_div,
    dd_mul,
    dd_mul_d,
    fast_two_sum,
    split,
    two_prod,
    two_sum,
)
from sonnx_check.reference.double_double_functions import (  # noqa: F401 - re-exported
    EXP_ARG_LIMIT,
    exp_scaled,
    expm1_dd,
    log_dd,
)
from sonnx_check.reference.errors import DataConstraintError, OutsideProfileError, ReferenceError

# -- type sets --------------------------------------------------------------------------------------------

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
SIGNED = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))
UNSIGNED = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
INTEGERS = SIGNED + UNSIGNED
BFLOAT16 = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(onnx.TensorProto.BFLOAT16))
BOOL = np.dtype(np.bool_)

# Elements processed at once by the chunked kernels: temporaries stay small (a few MB) whatever the tensor.
CHUNK = 1 << 16


def raise_if_any(mask: np.ndarray, *, op: str, rule: str, role: str, what: str, shape: Sequence[int]) -> None:
    """Raise ``DataConstraintError`` when ``mask`` (one flag per element of ``role``) holds any True."""
    count = int(np.count_nonzero(mask))
    if count:
        first = np.unravel_index(int(np.argmax(mask.reshape(-1))), tuple(shape) or (1,))
        first_index = tuple(int(i) for i in first)[: len(shape)]
        raise DataConstraintError(
            rule,
            role,
            count,
            f"{op}: {count} element(s) of {role} {what}, first at index {list(first_index)}: "
            f"outside the domain the text states for the data ({rule})",
            first_index,
        )


# -- refusals shared by the element-wise kernels -----------------------------------------------------------


def type_name(dtype: np.dtype) -> str:
    try:
        return onnx.helper.tensor_dtype_to_string(onnx.helper.np_dtype_to_tensor_dtype(dtype)).split(".")[-1]
    except (KeyError, ValueError, TypeError):
        return str(dtype)


@overload
def operands(op: str, inputs: Sequence[np.ndarray | None], names: Sequence[str]) -> list[np.ndarray]: ...


@overload
def operands(
    op: str, inputs: Sequence[np.ndarray | None], names: Sequence[str], *, optional: Sequence[str]
) -> list[np.ndarray | None]: ...


# Without ``optional`` every input is required, so every value returned is an array (the first overload).
def operands(
    op: str, inputs: Sequence[np.ndarray | None], names: Sequence[str], *, optional: Sequence[str] = ()
) -> list[np.ndarray] | list[np.ndarray | None]:
    """The node's inputs by formal name; a required input that is absent or an extra input is refused."""
    if len(inputs) > len(names):
        raise ReferenceError(
            f"{op} takes at most {len(names)} input(s) ({', '.join(names)}), got {len(inputs)}"
        )
    values = [np.asarray(v) if v is not None else None for v in inputs]
    values += [None] * (len(names) - len(values))
    for name, value in zip(names, values, strict=True):
        if value is None and name not in optional:
            raise ReferenceError(f"{op} without its input {name}")
    return values


def require_types(op: str, arrays: dict[str, np.ndarray], allowed: Iterable[np.dtype], rule: str) -> np.dtype:
    """Every array is of one of the ``allowed`` types (the operator's type sections)."""
    allowed = tuple(allowed)
    for name, array in arrays.items():
        if array.dtype not in allowed:
            raise OutsideProfileError(
                f"{op} with {name} of type {type_name(array.dtype)}: not a type of the operator's sections "
                f"({rule})"
            )
    return next(iter(arrays.values())).dtype


def require_same_type(op: str, arrays: dict[str, np.ndarray], rule: str) -> np.dtype:
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        shown = ", ".join(f"{n} {type_name(d)}" for n, d in dtypes.items())
        raise OutsideProfileError(
            f"{op} with operands of different types ({shown}): SONNX requires one type, no implicit "
            f"conversion ({rule})"
        )
    return next(iter(dtypes.values()))


def require_same_shape(op: str, arrays: dict[str, np.ndarray], rule: str) -> tuple[int, ...]:
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        shown = ", ".join(f"{n} {list(s)}" for n, s in shapes.items())
        raise OutsideProfileError(
            f"{op} with operands of different shapes ({shown}): SONNX {op} does not broadcast ({rule})"
        )
    return next(iter(shapes.values()))


def new_output(
    op: str, role: str, shape: Sequence[int], dtype: np.dtype, max_elements: int | None
) -> np.ndarray:
    ensure_within_budget(f"{op} output {role}", shape, max_elements)
    return np.empty(shape, dtype=dtype)


def flat(a: np.ndarray) -> np.ndarray:
    """A 1-D row-major view of ``a`` (a copy only when ``a`` is not contiguous)."""
    return np.ascontiguousarray(a).reshape(-1)


def chunked(out: np.ndarray, fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    """``out[...] = fn(*arrays)`` over row-major chunks of ``CHUNK`` elements (arrays of out's shape)."""
    target = out.reshape(-1)
    sources = [flat(a) for a in arrays]
    with np.errstate(all="ignore"):
        for start in range(0, target.size, CHUNK):
            stop = min(start + CHUNK, target.size)
            target[start:stop] = fn(*(s[start:stop] for s in sources))
    return out


# -- exact float helpers -----------------------------------------------------------------------------------


def float_bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of a float array, as unsigned integers of the same width."""
    return a.view(f"u{a.dtype.itemsize}")


def is_integral(b: np.ndarray) -> np.ndarray:
    """Finite floats holding an integer value."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(b) & (np.floor(b) == b)


def is_odd_integer(b: np.ndarray) -> np.ndarray:
    """Finite floats holding an odd integer (every float of magnitude 2**53 or more is even)."""
    with np.errstate(invalid="ignore"):
        return is_integral(b) & (np.fmod(np.abs(b), 2.0) == 1.0)


# -- rounding a dd value to an IEEE format -----------------------------------------------------------------

# Relative half-width of the error interval the certificate checks. Every dd result of this module has a
# derived relative error below 2**-88 (Pow's exponent of magnitude up to 2000 costs 11 bits of the 2**-98):
# the margin is 2**8.
CERTIFIED_RELATIVE_ERROR = 2.0**-80

_TINY64 = np.finfo(np.float64).tiny  # 2**-1022


def round_scaled(hi: np.ndarray, lo: np.ndarray, k: np.ndarray | int, dtype: np.dtype) -> np.ndarray:
    """(hi + lo) * 2**k rounded to ``dtype`` (float16, float or double): round to nearest, ties to even,
    gradual underflow and overflow to infinity, as IEEE 754 requires of a correctly rounded operation.
    (hi, lo) is a normalised dd (|lo| <= ulp(hi)/2) of magnitude between 2**-900 and 2**900."""
    k = np.asarray(k, dtype=np.int64)
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            # RN(hi + lo) is the correctly rounded dd value; scaling by 2**k is exact while the result is
            # normal, and overflows to infinity exactly when the correctly rounded value does.
            y = np.ldexp(hi + lo, k)
            sub = np.abs(y) <= _TINY64  # 2**-1022 itself may be a second rounding of a smaller value
            if sub.any():
                y[sub] = _round_subnormal64(hi[sub], lo[sub], np.broadcast_to(k, hi.shape)[sub])
            return y
        # Round to odd in binary64, then to the narrower format: binary64 has at least 2 more bits than
        # float (24) and float16 (11), so the second rounding is the correct rounding of hi + lo. Values
        # below 2**-1000 become 0 in both formats whatever is lost here.
        # (Only lo's sign matters, so lo is not scaled: lo * 2**k could underflow to 0. Below 2**-1022 the
        # value is 0 with hi's sign in both formats: no nudge there.)
        z = np.ldexp(hi, k)
        even = (float_bits(z) & 1) == 0
        nudge = (lo != 0) & even & np.isfinite(z) & (np.abs(z) >= _TINY64)
        if nudge.any():
            z[nudge] = np.nextafter(z[nudge], np.where(lo[nudge] > 0, np.inf, -np.inf))
        return z.astype(dtype)


def _round_subnormal64(hi: np.ndarray, lo: np.ndarray, k: np.ndarray) -> np.ndarray:
    """(hi + lo) * 2**k, at most 2**-1022, rounded to the multiple of 2**-1074 nearest (ties to even)."""
    sign = np.where(np.signbit(hi), -1.0, 1.0)
    hi, lo = np.abs(hi), lo * sign
    t = np.ldexp(hi, k + 1074)  # the value in units of 2**-1074: at most about 2**52, scaled exactly
    low = np.ldexp(lo, k + 1074)  # |low| <= ulp(t)/2
    n0 = np.floor(t)
    d = ((t - n0) - 0.5) + low  # t - n0 and the subtraction of 0.5 are exact; the sum's sign is exact
    odd = np.fmod(n0, 2.0) == 1.0
    # d == 0 is a tie (to even) when low is exact; when low underflowed to 0, lo's sign decides
    up = (d > 0) | ((d == 0) & np.where((low == 0) & (lo != 0), lo > 0, odd))
    return sign * np.ldexp(n0 + up, -1074)


def round_certified(
    hi: np.ndarray, lo: np.ndarray, k: np.ndarray | int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """The rounded value and the mask of the elements whose rounding the error bound cannot decide: the two
    ends of [v(1 - E), v(1 + E)] (E = CERTIFIED_RELATIVE_ERROR) round differently, so a rounding boundary
    (a midpoint between two floats, or the overflow threshold) may lie between v and the exact result."""
    result = round_scaled(hi, lo, k, dtype)
    with np.errstate(all="ignore"):
        delta = hi * CERTIFIED_RELATIVE_ERROR
        up = round_scaled(*two_sum(hi, lo + delta), k, dtype)
        down = round_scaled(*two_sum(hi, lo - delta), k, dtype)
    return result, float_bits(up) != float_bits(down)


def round_fraction(value: Fraction, dtype: np.dtype) -> np.generic:
    """A rational rounded to ``dtype`` exactly (nearest, ties to even, subnormals, overflow to infinity)."""
    info = np.finfo(dtype)
    if value == 0:
        return dtype.type(0.0)
    sign = -1 if value < 0 else 1
    a = abs(value)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2**e <= a < 2**(e+2)
    if Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    quantum = max(e, info.minexp) - info.nmant  # spacing of the floats around a (or of the subnormals)
    scaled = a / Fraction(2) ** quantum
    n = scaled.numerator // scaled.denominator
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n * Fraction(2) ** quantum >= Fraction(2) ** info.maxexp:
        return dtype.type(sign * math.inf)
    return dtype.type(sign * float(n * Fraction(2) ** quantum))


def resolve_undecided(
    result: np.ndarray, undecided: np.ndarray, exact: Callable[..., Fraction], *args: np.ndarray
) -> None:
    """Recompute, in place, the elements the certificate left undecided: ``exact`` gives the result as a
    Fraction (exactly, or from 100-digit decimal arithmetic) for the arguments at that element."""
    for i in np.flatnonzero(undecided):
        result[i] = round_fraction(exact(*(a[i].item() for a in args)), result.dtype)


def high_precision() -> decimal.Context:
    """The decimal context of the fall-back computations: 100 significant digits (about 332 bits)."""
    ctx = decimal.Context(prec=100, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    ctx.traps[decimal.Inexact] = False
    ctx.traps[decimal.Rounded] = False
    return ctx


# -- binary operators --------------------------------------------------------------------------------------


def binary_operands(
    op: str, a: np.ndarray, b: np.ndarray, allowed: Iterable[np.dtype]
) -> tuple[np.ndarray, np.ndarray, np.dtype, tuple[int, ...]]:
    """A and B of one type of the operator's sections and one shape (``<Op>.A.C2``, ``<Op>.types``,
    ``<Op>.A.C1``: the rule IDs of Add, Sub, Mul, Div, Less and Pow)."""
    a, b = np.asarray(a), np.asarray(b)
    require_same_type(op, {"A": a, "B": b}, f"{op}.A.C2")
    dtype = require_types(op, {"A": a, "B": b}, allowed, f"{op}.types")
    shape = require_same_shape(op, {"A": a, "B": b}, f"{op}.A.C1")
    return a, b, dtype, shape


def correctly_rounded(
    op: str, a: np.ndarray, b: np.ndarray, ufunc: np.ufunc, max_elements: int | None
) -> np.ndarray:
    """C = a (op) b for Add, Sub, Mul and Div on float or integer arrays.

    Float types: IEEE 754 binary64 arithmetic is correctly rounded; for float16 and float the operation is
    done in binary64 and rounded once to the type, which is the correctly rounded result too: binary64 has
    more than 2p + 2 bits for p = 11 and 24 (Figueroa), so the double rounding is innocuous, subnormal
    results included. Special values follow IEEE 754 (inf - inf = NaN, x/0 = +-inf, 0/0 = NaN, signed zeros).
    Integer types (Add, Sub, Mul): numpy's integer arithmetic wraps modulo 2**n, as the int sections state."""
    a, b, dtype, shape = binary_operands(op, a, b, FLOATS + INTEGERS)
    c = new_output(op, "C", shape, dtype, max_elements)
    if dtype == np.float64 or dtype in INTEGERS:
        with np.errstate(all="ignore"):
            ufunc(a, b, out=c)
        return c
    return chunked(c, lambda x, y: ufunc(x.astype(np.float64), y.astype(np.float64)).astype(dtype), a, b)


def chunked_unary(op: str, x: np.ndarray, chunk: Callable[[np.ndarray, np.dtype], np.ndarray],
                  max_elements: int | None) -> np.ndarray:  # fmt: skip
    """The frame every float-only unary kernel shares: check X's type, reserve Y within the element budget,
    and fill it chunk by chunk with ``chunk(x_chunk, dtype)``."""
    x = np.asarray(x)
    dtype = require_types(op, {"X": x}, FLOATS, f"{op}.types")
    y = new_output(op, "Y", x.shape, dtype, max_elements)
    return chunked(y, lambda v: chunk(v, dtype), x)
