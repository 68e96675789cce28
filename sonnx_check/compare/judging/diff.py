"""Element-wise comparison of one onnxruntime tensor against the SONNX reference tensor.

Max and MaxPool are exact operators: the reference result is the answer bit for bit, so the default comparison
is exact. The comparison follows onnxruntime's own test comparator (``test/util/compare_ortvalue.cc``) so its
results read the way onnxruntime developers expect: result classes match / differs / shape mismatch / type
mismatch / not supported, NaN equal to NaN at the same place, infinities of the same sign equal, integers
exact, and a message naming the first differing index, both values, their bit patterns and "K of N differ".
Unlike that comparator, a difference only in the sign of zero is a mismatch of its own class: SONNX specifies
the sign of a zero result (Max(+0, -0) = +0), and bit-exact evidence must not hide it.

Tolerances (``Tolerance``) exist so that inexact operators can be compared later without restructuring; only
the exact comparison is implemented and used today.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_BITS_KEY, DEPRECATED_RUNTIME_KEY
from sonnx_check.runtime_names import DEFAULT_RUNTIME

# Object-dtype differences are exact but slow; beyond this many mismatches integers are diffed in float64.
_EXACT_INT_DIFF_LIMIT = 1_000_000
_CHUNK = 1 << 18  # elements compared at a time


class Outcome(enum.StrEnum):
    """The result class of one comparison (compare_ortvalue.cc: SUCCESS, RESULT_DIFFERS, SHAPE_MISMATCH,
    TYPE_MISMATCH, NOT_SUPPORT)."""

    MATCH = "match"
    DIFFERS = "differs"
    SHAPE_MISMATCH = "shape-mismatch"
    TYPE_MISMATCH = "type-mismatch"
    NOT_SUPPORTED = "not-supported"

    @property
    def severity_rank(self) -> int:
        """Orders outcomes when several datasets are merged: the worst one describes the output."""
        return _OUTCOME_RANK[self]


_OUTCOME_RANK = {
    Outcome.MATCH: 0,
    Outcome.DIFFERS: 1,
    Outcome.NOT_SUPPORTED: 2,
    Outcome.SHAPE_MISMATCH: 3,
    Outcome.TYPE_MISMATCH: 4,
}


class MismatchClass(enum.StrEnum):
    """Why one element pair differs. Counted separately because they have different causes: a NaN where the
    reference has a number (or the reverse) is a NaN-policy question, a zero of the other sign is an ordering
    question, anything else is a wrong value."""

    VALUE = "value"
    NAN_POSITION = "nan-position"
    SIGNED_ZERO = "signed-zero"


@dataclass(frozen=True)
class Tolerance:
    """How far apart two floating-point elements may be and still match: ``|a - e| <= atol + rtol * |e|`` or
    at most ``ulp`` units in the last place. The default is exact. Integer and boolean tensors are always
    compared exactly, whatever the tolerance."""

    atol: float = 0.0
    rtol: float = 0.0
    ulp: int = 0

    @property
    def exact(self) -> bool:
        return self.atol == 0.0 and self.rtol == 0.0 and self.ulp == 0


EXACT = Tolerance()
Tolerances = Tolerance | Mapping[str, Tolerance]  # one for all, or per numpy dtype name ("float32", ...)


def tolerance_for(dtype: np.dtype, tolerances: Tolerances = EXACT) -> Tolerance:
    """The tolerance that applies to elements of ``dtype``: exact for anything that is not floating point."""
    if dtype.kind != "f":
        return EXACT
    if isinstance(tolerances, Tolerance):
        return tolerances
    return tolerances.get(dtype.name, EXACT)


@dataclass(frozen=True)
class ElementPair:
    """One differing element: where it is and both values, shown as text that round-trips (shortest repr of
    the dtype) and as raw bits, because -FLT_MAX and -inf, or +0 and -0, only differ visibly in the bits."""

    index: tuple[int, ...]
    actual: str
    actual_bits: str
    expected: str
    expected_bits: str
    kind: MismatchClass

    def index_text(self) -> str:
        return "[" + ",".join(str(i) for i in self.index) + "]"

    def describe(self, runtime: str = DEFAULT_RUNTIME) -> str:
        """``runtime``: how the runtime under test is named (its description's label)."""
        return (
            f"first at {self.index_text()}: {runtime} {self.actual} ({self.actual_bits}), "
            f"SONNX {self.expected} ({self.expected_bits})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "index": list(self.index),
            "runtime": self.actual,
            "runtime_bits": self.actual_bits,
            DEPRECATED_RUNTIME_KEY: self.actual,  # deprecated: "runtime" (kept for one release)
            DEPRECATED_RUNTIME_BITS_KEY: self.actual_bits,
            "sonnx": self.expected,
            "sonnx_bits": self.expected_bits,
            "class": self.kind.value,
        }


@dataclass(frozen=True)
class TensorDiff:
    """The comparison of one actual (the runtime under test's) tensor with one expected (SONNX reference)
    tensor."""

    outcome: Outcome
    total: int
    mismatches: int
    classes: Mapping[MismatchClass, int]
    first: ElementPair | None
    max_abs_diff: float | None  # over differing pairs where both values are finite; None if there are none
    expected_dtype: str
    actual_dtype: str
    expected_shape: tuple[int, ...]
    actual_shape: tuple[int, ...]
    detail: str = ""  # the reason for a shape/type mismatch or an unsupported type
    mask: np.ndarray | None = field(default=None, repr=False, compare=False)  # True where elements differ

    @property
    def matches(self) -> bool:
        return self.outcome is Outcome.MATCH

    def detail_for(self, runtime: str) -> str:
        """The reason for a shape/type mismatch (or an unsupported type), naming the runtime under test."""
        if self.outcome is Outcome.TYPE_MISMATCH:
            return f"type differs: {runtime} {self.actual_dtype}, SONNX {self.expected_dtype}"
        if self.outcome is Outcome.SHAPE_MISMATCH:
            return (
                f"shape differs: {runtime} {_shape_text(self.actual_shape)}, "
                f"SONNX {_shape_text(self.expected_shape)}"
            )
        return self.detail

    def summary(self, runtime: str = DEFAULT_RUNTIME) -> str:
        """One line in compare_ortvalue's style: the count, the classes present, the first difference."""
        if self.outcome is not Outcome.DIFFERS:
            return self.detail_for(runtime) or "all elements match"
        text = f"{self.mismatches} of {self.total} elements differ"
        present = [f"{n} {c.value}" for c, n in self.classes.items() if n]
        if present:
            text += f" ({', '.join(present)})"
        if self.first is not None:
            text += "; " + self.first.describe(runtime)
        return text


def compare_arrays(
    expected: np.ndarray,
    actual: np.ndarray,
    tolerances: Tolerances = EXACT,
    accepted: np.ndarray | None = None,
) -> TensorDiff:
    """Compare ``actual`` (the runtime's tensor) with ``expected`` (the reference's). ``accepted``: the
    elements an operator's accuracy bound accepts (within it, or a flushed subnormal, which is reported as
    its own class): they do not differ."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    base: dict[str, Any] = {
        "expected_dtype": expected.dtype.name,
        "actual_dtype": actual.dtype.name,
        "expected_shape": tuple(int(d) for d in expected.shape),
        "actual_shape": tuple(int(d) for d in actual.shape),
    }
    no_classes = dict.fromkeys(MismatchClass, 0)
    if expected.dtype != actual.dtype:
        detail = f"type differs: runtime {actual.dtype.name}, SONNX {expected.dtype.name}"
        return TensorDiff(
            Outcome.TYPE_MISMATCH, expected.size, 0, no_classes, None, None, detail=detail, **base
        )
    if expected.shape != actual.shape:
        detail = f"shape differs: runtime {_shape_text(actual.shape)}, SONNX {_shape_text(expected.shape)}"
        return TensorDiff(
            Outcome.SHAPE_MISMATCH, expected.size, 0, no_classes, None, None, detail=detail, **base
        )
    if expected.dtype.kind not in "biuf":
        detail = f"elements of type {expected.dtype.name} cannot be compared"
        return TensorDiff(
            Outcome.NOT_SUPPORTED, expected.size, 0, no_classes, None, None, detail=detail, **base
        )

    tolerance = tolerance_for(expected.dtype, tolerances)
    mask, classes = _mismatches(expected, actual, tolerance)
    if accepted is not None:
        mask &= ~accepted
        classes = _recount(expected, actual, mask)
    return _from_mask(expected, actual, mask, classes, base)


def diff_of(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray) -> TensorDiff:
    """The comparison of two arrays of one dtype and shape whose differing elements are known (``mask``:
    what ``compare_arrays(..., accepted=...)`` computes when an accuracy bound accepts the others)."""
    base = {
        "expected_dtype": expected.dtype.name,
        "actual_dtype": actual.dtype.name,
        "expected_shape": tuple(int(d) for d in expected.shape),
        "actual_shape": tuple(int(d) for d in actual.shape),
    }
    return _from_mask(expected, actual, mask, _recount(expected, actual, mask), base)


def _from_mask(
    expected: np.ndarray,
    actual: np.ndarray,
    mask: np.ndarray,
    classes: dict[MismatchClass, int],
    base: dict[str, Any],
) -> TensorDiff:
    count = int(np.count_nonzero(mask))
    if count == 0:
        return TensorDiff(Outcome.MATCH, expected.size, 0, classes, None, None, mask=mask, **base)
    first = _first_pair(expected, actual, mask)
    return TensorDiff(
        Outcome.DIFFERS,
        expected.size,
        count,
        classes,
        first,
        _max_abs_diff(expected, actual, mask, count),
        mask=mask,
        **base,
    )


def _chunks(*arrays: np.ndarray) -> Iterator[tuple[slice, list[np.ndarray]]]:
    """The arrays, flattened, ``_CHUNK`` elements at a time: the comparison's temporaries (a dozen per
    element) stay a few MB however large the tensor is."""
    flat = [a.reshape(-1) for a in arrays]
    for start in range(0, flat[0].size, _CHUNK):
        where = slice(start, start + _CHUNK)
        yield where, [a[where] for a in flat]


def _mismatches(
    expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance
) -> tuple[np.ndarray, dict[MismatchClass, int]]:
    mask = np.empty(expected.size, dtype=bool)
    classes = dict.fromkeys(MismatchClass, 0)
    for where, (e, a) in _chunks(expected, actual):
        if expected.dtype.kind == "f":
            mask[where], counts = _float_mismatches(e, a, tolerance)
        else:
            mask[where] = e != a
            counts = {MismatchClass.VALUE: int(np.count_nonzero(mask[where]))}
        for cls, n in counts.items():
            classes[cls] += n
    return mask.reshape(expected.shape), classes


def _float_mismatches(
    expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance
) -> tuple[np.ndarray, dict[MismatchClass, int]]:
    e_nan = np.isnan(expected)
    a_nan = np.isnan(actual)
    nan_position = e_nan ^ a_nan
    with np.errstate(invalid="ignore"):
        equal = expected == actual  # +0 == -0, inf == inf of the same sign, NaN never equal
    signed_zero = equal & (expected == 0) & (np.signbit(expected) != np.signbit(actual))
    close = (equal & ~signed_zero) | (e_nan & a_nan)
    if not tolerance.exact:
        close |= _within_tolerance(expected, actual, tolerance)
    mask = ~close
    classes = {
        MismatchClass.VALUE: int(np.count_nonzero(mask & ~nan_position & ~signed_zero)),
        MismatchClass.NAN_POSITION: int(np.count_nonzero(nan_position)),
        MismatchClass.SIGNED_ZERO: int(np.count_nonzero(mask & signed_zero)),
    }
    return mask, classes


def _recount(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray) -> dict[MismatchClass, int]:
    """The classes of the elements left in ``mask`` (after an accuracy bound accepted some)."""
    if expected.dtype.kind != "f":
        return {**dict.fromkeys(MismatchClass, 0), MismatchClass.VALUE: int(np.count_nonzero(mask))}
    e, a = expected[mask], actual[mask]
    nan_position = np.isnan(e) ^ np.isnan(a)
    signed_zero = (e == a) & (np.signbit(e) != np.signbit(a))
    counts = dict.fromkeys(MismatchClass, 0)
    counts[MismatchClass.VALUE] = int(np.count_nonzero(~nan_position & ~signed_zero))
    counts[MismatchClass.NAN_POSITION] = int(np.count_nonzero(nan_position))
    counts[MismatchClass.SIGNED_ZERO] = int(np.count_nonzero(signed_zero))
    return counts


def _within_tolerance(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance) -> np.ndarray:
    """The hook for inexact operators (atol/rtol as in compare_ortvalue.cc, plus ULP distance).

    Not implemented yet on purpose: every operator sonnx-check compares today is exact, and an untested
    tolerance path must not be able to turn a divergence into a match."""
    raise NotImplementedError(f"tolerance-based comparison is not implemented yet ({tolerance})")


def _first_pair(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray) -> ElementPair:
    flat = int(np.argmax(mask.reshape(-1)))  # argmax of a boolean array: the first True, row-major
    index = tuple(int(i) for i in np.unravel_index(flat, mask.shape))
    e = expected.reshape(-1)[flat : flat + 1]
    a = actual.reshape(-1)[flat : flat + 1]
    return ElementPair(
        index=index,
        actual=format_value(a[0]),
        actual_bits=bit_pattern(a),
        expected=format_value(e[0]),
        expected_bits=bit_pattern(e),
        kind=_classify(e[0], a[0]),
    )


def _classify(expected: np.generic, actual: np.generic) -> MismatchClass:
    if np.issubdtype(type(expected), np.floating):
        if bool(np.isnan(expected)) != bool(np.isnan(actual)):
            return MismatchClass.NAN_POSITION
        if expected == actual and expected == 0:
            return MismatchClass.SIGNED_ZERO
    return MismatchClass.VALUE


def format_value(value: np.generic) -> str:
    """The shortest text that reads back as the same value of the same dtype (numpy's str of a scalar)."""
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    return str(value)


def bit_pattern(one_element: np.ndarray) -> str:
    """The raw bits of a one-element array, as fixed-width hex (two's complement for signed integers)."""
    size = one_element.dtype.itemsize
    unsigned = one_element.view(np.dtype(f"u{size}"))
    return f"0x{int(unsigned[0]):0{2 * size}x}"


def _max_abs_diff(expected: np.ndarray, actual: np.ndarray, mask: np.ndarray, count: int) -> float | None:
    if expected.dtype.kind == "b":
        return None
    if expected.dtype.kind in "iu" and count <= _EXACT_INT_DIFF_LIMIT:
        e, a = expected[mask], actual[mask]  # at most the limit's worth of elements
        return float(max(abs(int(x) - int(y)) for x, y in zip(e.tolist(), a.tolist(), strict=True)))
    largest: float | None = None
    for _, (e_all, a_all, m) in _chunks(expected, actual, mask):
        if not m.any():
            continue
        e64 = e_all[m].astype(np.float64)
        a64 = a_all[m].astype(np.float64)
        finite = np.isfinite(e64) & np.isfinite(a64)
        if not finite.any():
            continue
        with np.errstate(over="ignore"):
            # inf when two finite float64 values are further apart than DBL_MAX (e.g. -DBL_MAX vs DBL_MAX)
            value = float(np.max(np.abs(e64[finite] - a64[finite])))
        largest = value if largest is None else max(largest, value)
    return largest


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"
