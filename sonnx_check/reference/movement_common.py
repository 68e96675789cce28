"""Helpers shared by the reference kernels of the data-movement group (Concat, Constant, Flatten, Reshape,
Shape, Slice, Unsqueeze, Range, ArgMax, Softmax): reading attributes with their ONNX defaults, refusing a
type the operator's declaration does not list, turning index tensors into Python integers, and the
double-double sums and roundings that Range and Softmax use to compute their ideal result (the arithmetic
itself is ``double_double``'s, the exp ``double_double_functions``').

Double-double numbers are pairs of float64 arrays ``(hi, lo)`` with ``hi = RN(hi + lo)``; every operation
below is vectorised over arrays and keeps about 104 bits (relative error a few units of 2^-104 per
operation, Joldes, Muller & Popescu, "Tight and rigorous error bounds for basic building blocks of
double-word arithmetic", ACM TOMS 2017). numpy evaluates each ufunc separately and rounds each result to
nearest even: no contraction into FMA can occur, which TwoSum and TwoProduct need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
