"""Helpers shared by the reference kernels of the data-movement group (Concat, Constant, Flatten, Reshape,
Shape, Slice, Unsqueeze, Range, ArgMax, Softmax): reading attributes with their ONNX defaults, refusing a
type the operator's declaration does not list, turning index tensors into Python integers, and the
error-free transformations (TwoSum, Dekker's TwoProduct) and double-double arithmetic that Range and
Softmax use to compute their ideal result.

Double-double numbers are pairs of float64 arrays ``(hi, lo)`` with ``hi = RN(hi + lo)``; every operation
below is vectorised over arrays and keeps about 104 bits (relative error a few units of 2^-104 per
operation, Joldes, Muller & Popescu, "Tight and rigorous error bounds for basic building blocks of
double-word arithmetic", ACM TOMS 2017). numpy evaluates each ufunc separately and rounds each result to
nearest even: no contraction into FMA can occur, which TwoSum and TwoProduct need.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import onnx

from sonnx_check.profile import TYPE_NAMES, profile_operators
from sonnx_check.reference.double_double import dd_add, dd_mul, fast_two_sum, split, two_prod, two_sum  # noqa: F401 - re-exported
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError

_TYPE_NAME_OF = {code: name for name, code in TYPE_NAMES.items()}


# --- attributes and inputs -------------------------------------------------------------------------------


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes by name, as Python values (ints, lists, TensorProto...)."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def int_attribute(attrs: Mapping[str, Any], name: str, default: int | None) -> int | None:
    """An integer attribute, or ``default`` when absent (the ONNX default of the operator version; the
    static rules report an absent attribute the profile wants explicit)."""
    if name not in attrs:
        return default
    value = attrs[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise ReferenceError(f"attribute {name} is not an integer: {value!r}")
    return value


def required_input(op: str, inputs: Sequence[np.ndarray | None], position: int, name: str) -> np.ndarray:
    if len(inputs) <= position or inputs[position] is None:
        raise ReferenceError(f"{op} without input {name}")
    return np.asarray(inputs[position])


def type_name(array: np.ndarray) -> str:
    """The ONNX name of the array's element type ("float", "string", "bfloat16"...)."""
    dtype = np.asarray(array).dtype
    if dtype.kind in "USO":
        return "string"
    try:
        code = onnx.helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, ValueError, TypeError):
        return str(dtype)
    return _TYPE_NAME_OF.get(code, str(dtype))


def require_declared_type(op: str, role: str, array: np.ndarray) -> str:
    """Refuse an element type that the operator's declaration (rules/<Op>.toml, the text's type sections)
    does not list for ``role``; return the type's name."""
    name = type_name(array)
    allowed = profile_operators()[op].types.get(role)
    if allowed is not None and TYPE_NAMES.get(name) not in allowed:
        raise OutsideProfileError(f"{op} {role} of type {name}: not a type of the profile ({op}.types)")
    return name


def index_values(array: np.ndarray) -> list[int]:
    """The values of an integer index tensor as Python integers (no wrap-around in later arithmetic)."""
    return [int(v) for v in np.asarray(array).reshape(-1).tolist()]


def fresh(array: np.ndarray) -> np.ndarray:
    """A contiguous copy the caller owns: a kernel never returns a view of its input."""
    return np.array(array, copy=True, order="C")


# --- error-free transformations and double-double arithmetic --------------------------------------------


def dd_div(ah: np.ndarray, al: np.ndarray, bh: np.ndarray, bl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Double-double division (QD's accurate_div): three quotient digits, each remainder computed in
    double-double."""
    q1 = ah / bh
    ph, pl = dd_mul(bh, bl, q1, np.zeros_like(q1))
    rh, rl = dd_add(ah, al, -ph, -pl)
    q2 = rh / bh
    ph, pl = dd_mul(bh, bl, q2, np.zeros_like(q2))
    rh, rl = dd_add(rh, rl, -ph, -pl)
    q3 = rh / bh
    q1, q2 = fast_two_sum(q1, q2)
    return dd_add(q1, q2, q3, np.zeros_like(q3))


def _dd_constant(value: Fraction) -> tuple[float, float]:
    hi = float(value)  # float(Fraction) is correctly rounded
    return hi, float(value - Fraction(hi))


def _ln2() -> Fraction:
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return Fraction(decimal.Decimal(2).ln())


LN2_HI, LN2_LO = _dd_constant(_ln2())
_TAYLOR_DEGREE = 9
_INVERSE_FACTORIALS = [_dd_constant(Fraction(1, math.factorial(n))) for n in range(_TAYLOR_DEGREE + 1)]
_SQUARINGS = 10


def dd_exp(dh: np.ndarray, dl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """exp(dh + dl) for finite arguments with |dh| <= 800, as ``(mh, ml, k)``: exp = (mh + ml) * 2^k with
    mh + ml in [0.7, 1.5), so the scaling by 2^k is left to the caller (no underflow inside).

    Reduction: k = rint(d / ln 2), r = d - k ln2 in double-double (TwoProduct makes k * LN2_HI exact; the
    LN2_LO term leaves an absolute error below 2^-95), |r| <= 0.35; s = r / 2^10; e^s - 1 by its Taylor
    polynomial of degree 9 (remainder below 2^-125 relative); then 10 squarings e^(2s) - 1 = m (m + 2),
    which keep the small quantity e^s - 1 so no digit cancels. Relative error of the result: below 2^-88
    (about 40 double-double operations of 2^-104 each, amplified 2^10 by the squarings).
    """
    k = np.rint(dh / LN2_HI)
    ph, pl = two_prod(k, np.full_like(k, LN2_HI))
    rh, rl = two_sum(dh, -ph)
    rl = rl + ((dl - pl) - k * LN2_LO)
    rh, rl = fast_two_sum(rh, rl)
    scale = 2.0**-_SQUARINGS
    sh, sl = rh * scale, rl * scale
    zero = np.zeros_like(sh)
    qh = np.full_like(sh, _INVERSE_FACTORIALS[_TAYLOR_DEGREE][0])
    ql = np.full_like(sh, _INVERSE_FACTORIALS[_TAYLOR_DEGREE][1])
    for n in range(_TAYLOR_DEGREE - 1, 0, -1):
        qh, ql = dd_mul(qh, ql, sh, sl)
        ch, cl = _INVERSE_FACTORIALS[n]
        qh, ql = dd_add(qh, ql, zero + ch, zero + cl)
    mh, ml = dd_mul(qh, ql, sh, sl)  # e^s - 1
    for _ in range(_SQUARINGS):
        th, tl = dd_add(mh, ml, zero + 2.0, zero)
        mh, ml = dd_mul(mh, ml, th, tl)
    mh, ml = dd_add(mh, ml, zero + 1.0, zero)
    return mh, ml, k


def dd_pairwise_sum(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The double-double sum along the last axis (kept with size 1), by a pairwise tree: the loop runs over
    the log2(n) levels, never over elements."""
    while hi.shape[-1] > 1:
        if hi.shape[-1] % 2:
            pad = [(0, 0)] * (hi.ndim - 1) + [(0, 1)]
            hi, lo = np.pad(hi, pad), np.pad(lo, pad)
        hi, lo = dd_add(hi[..., 0::2], lo[..., 0::2], hi[..., 1::2], lo[..., 1::2])
    return hi, lo


_SMALLEST_NORMAL_64 = 2.0**-1022


def dd_scaled_to_float64(qh: np.ndarray, ql: np.ndarray, k: np.ndarray) -> np.ndarray:
    """RN((qh + ql) * 2^k) for non-negative double-double values (qh = RN(qh + ql)), rounded once, the
    subnormal range included: where the result is below 2^-1021 it is rounded to a multiple of 2^-1074
    directly (scaling a rounded qh would round twice)."""
    normal = np.ldexp(qh, k.astype(np.int64))
    low = normal < 2 * _SMALLEST_NORMAL_64
    if not low.any():
        return normal
    shift = (k[low] + 1074).astype(np.int64)
    zh = np.ldexp(qh[low], shift)  # exact: shift >= -80 for the values the kernels pass
    zl = np.ldexp(ql[low], shift)
    n = np.rint(zh)
    a = zh - n  # exact (|a| <= 1/2 and zh < 2^53)
    n = n + ((a == 0.5) & (zl > 0)) - ((a == -0.5) & (zl < 0))
    normal[low] = np.ldexp(n, -1074)
    return normal


def round_to_odd(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """RO(s + err) for s = RN(s + err) (a TwoSum pair): s when exact or already odd, else the neighbour of
    s towards err. Rounding RO_53 once more to nearest in a format of p <= 51 bits (float32, float16) gives
    the correctly rounded value of s + err (Boldo & Melquiond 2008)."""
    s = np.array(s, dtype=np.float64, copy=True)
    bits = s.view(np.uint64)
    move = (err != 0) & ((bits & np.uint64(1)) == 0)
    s[move] = np.nextafter(s[move], np.where(err[move] > 0, np.inf, -np.inf))
    return s
