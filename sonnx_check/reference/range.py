"""Range reference kernel (SONNX, based on Range-11), written from ops/range/range.md.

Y[i] = S + i * D for i in [0, K-1], K = max(ceil((L - S) / D), 0) (Informal specification, both sections).
The text states the value of every element directly, S + i * D, not a repeated addition (an implementation
that accumulates Y[i] = Y[i-1] + D rounds at every step and drifts). The kernel computes:

- K exactly, from the values of S, L and D as rational numbers (Python integers and Fractions), so a
  float quotient (L - S) / D that rounds to an integer cannot add or drop an element;
- integer types: S + i * D exactly; every element lies between S and L, so it is representable (int64
  arithmetic wraps in the intermediate product and wraps back, two's complement);
- float: the exact real value S + i * D rounded once to nearest even. For float32, S, D and i (i < 2^29)
  make i * D exact in float64, TwoSum gives S + i * D exactly as s + t, and rounding to odd on 53 bits
  then to nearest on 24 bits is correct rounding (Boldo & Melquiond, 53 >= 24 + 2). For double, the value
  is the exact integer (A + i B) / 2^k (S = A / 2^k, D = B / 2^k) divided with Python's integer true
  division, which is correctly rounded, subnormals included (a numpy object array of Python integers:
  exact, about 0.2-0.5 us per element). Y[0] is S itself, bit for bit (S + 0 * D = S in the reals; -0
  stays -0); any other exact zero is +0. The kernel's own error: none (correctly rounded).

The text defines Y for real values only: a NaN or infinite S, L or D has no K and is refused, as are
D = 0 (Range.D.C1), non-scalar inputs (Range.<T>.rank), mixed types (GR3) and types outside the sections
(Range.types).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError
from sonnx_check.reference.movement_common import require_declared_type, required_input, round_to_odd, two_sum

# Above this many elements the float32 path would lose the exactness of i * D in float64 (24 + 29 bits).
FLOAT32_MAX_ELEMENTS = 2**29


def count(start: Fraction | int, limit: Fraction | int, delta: Fraction | int) -> int:
    """K = max(ceil((L - S) / D), 0), exactly."""
    return max(math.ceil(Fraction(limit - start) / delta), 0)


def range_(
    start: np.ndarray, limit: np.ndarray, delta: np.ndarray, *, max_elements: int | None = None
) -> np.ndarray:
    values = [np.asarray(v) for v in (start, limit, delta)]
    for role, v in zip("SLD", values, strict=True):
        require_declared_type("Range", role, v)
        if v.ndim != 0:
            raise OutsideProfileError(f"Range {role} of shape {list(v.shape)}: a scalar (Range.{role}.rank)")
    if len({v.dtype for v in values}) > 1:
        raise OutsideProfileError(f"Range S, L, D of types {[str(v.dtype) for v in values]}: one type (GR3)")
    dtype = values[0].dtype
    s, lim, d = (v.item() for v in values)
    if d == 0:
        raise OutsideProfileError("Range with D = 0 (Range.D.C1)")
    if dtype.kind == "f":
        if not all(math.isfinite(v) for v in (s, lim, d)):
            raise OutsideProfileError(
                f"Range with S={s}, L={lim}, D={d}: the text defines K and Y for real values only; "
                "a NaN or an infinity has no result (no float special-value rule)"
            )
        s, lim, d = Fraction(s), Fraction(lim), Fraction(d)
    k = count(s, lim, d)
    ensure_within_budget("Range output Y", (k,), max_elements)
    if k >= 2**63:
        raise ReferenceError(f"Range of {k} elements: more than any array can hold")
    if dtype.kind in "iu":
        i = np.arange(k, dtype=np.int64)
        with np.errstate(over="ignore"):
            return (np.int64(int(s)) + i * np.int64(int(d))).astype(dtype)
    if k == 0:
        return np.empty(0, dtype=dtype)
    if dtype == np.float32:
        y = _float32_values(values[0], values[2], k)
    else:
        y = _float64_values(s, d, k)
    y[0] = values[0]  # S itself, bit for bit
    return y


def _float32_values(start: np.ndarray, delta: np.ndarray, k: int) -> np.ndarray:
    if k > FLOAT32_MAX_ELEMENTS:
        raise ReferenceError(
            f"Range of {k} float elements: the float32 kernel is exact up to 2^29 elements only"
        )
    i = np.arange(k, dtype=np.float64)
    product = i * np.float64(delta)  # exact: 24-bit D times an integer below 2^29
    s, t = two_sum(np.full(k, np.float64(start)), product)
    return round_to_odd(s, t).astype(np.float32)


def _float64_values(start: Fraction, delta: Fraction, k: int) -> np.ndarray:
    denominator = max(start.denominator, delta.denominator)  # both are powers of two
    a = start.numerator * (denominator // start.denominator)
    b = delta.numerator * (denominator // delta.denominator)
    i = np.arange(k, dtype=np.int64).astype(object)
    exact = a + i * b  # Python integers: the numerators of S + i * D over one power of two
    return (exact / denominator).astype(np.float64)  # int / int: correctly rounded


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    start = required_input("Range", inputs, 0, "S (start)")
    limit = required_input("Range", inputs, 1, "L (limit)")
    delta = required_input("Range", inputs, 2, "D (delta)")
    return [range_(start, limit, delta, max_elements=max_elements)]
