"""Accuracy-aware comparison: how far a runtime's output may stray from the SONNX reference, and what it did.

The accuracy annexes (``spec/sonnx/ops/*/*_acc.md``, ``guidelines/accuracy.md``) do not fix one accuracy; they
bound the error an implementation *introduces*, and leave the reference algorithm to the implementor
(profile.md section 4). So every comparison here says which bound it used. The API:

    parse_override(text: str) -> Override                     "2 ulp", "1e-6 rel", "1e-7 abs"; AccuracyError
    check_override(op_type: str, override: Override) -> None  AccuracyError where nothing is tighter
    bound_for(op_type: str, dtype, override: str | Override | None = None) -> Bound
    Bound.evaluate(node, inputs, expected) -> Tolerance       the bound on one node's data, per element
    classify(expected, actual, bound: Tolerance, dtype) -> Classification
    compare_node(node, inputs, expected, actual, override=None) -> Classification     the three at once
    Classification: counts[outcome], first[outcome] (an Instance), max_ratio (the margin), worst, max_ulps,
                    bound (the text used), divergent (beyond + special), as_dict() (JSON-safe)
    outcome_masks(expected, actual, bound, dtype) -> (masks, |a - e|, allowed)   MATCH | WITHIN | FLUSHED is
                    what a caller accepts; WITHIN includes the intermediate overflows (OVERFLOW, a subset)

**What a bound is.** ``introduced`` is the annex's bound on |runtime - exact| (the exact real result of the
operator on the node's inputs), per element, in the output type's units. The reference kernels compute the
exact result rounded once to the output type (within half an ulp of it; Softmax within one ulp), so a
runtime that respects the annex is within ``introduced + reference error`` of the reference: that sum is the
``allowed`` difference, and an element beyond it is beyond the annex's bound *provably*, whatever the
reference's own rounding. Two exceptions, where no slack is given: the elements a special-value rule of the
text decides (Exp(-inf) = +0, Y = X for LeakyRelu's non-negative X, Y[0] = S for Range, ...), compared bit for
bit; and the exact and correctly rounded classes, whose result is unique (the reference *is* it).

**The classes** (``accuracy = ...`` in rules/<Op>.toml; integer and boolean outputs are always exact):

- exact: bit for bit, NaN = NaN (payload and sign ignored), sign of zero compared.
- correctly rounded (float Add, Sub, Mul, Div, Sqrt): the IEEE 754 result, round to nearest even: error
  <= u|exact| (accuracy.md, IEEE-754 implementations; div_acc.md). The reference computes that value, so the
  runtime must equal it bit for bit, sign of zero included (IEEE 754 defines it).
- sum of products (MatMul, Gemm, Conv): gamma_n * sum_k |a_k b_k| (+ |c| for a bias), gamma_n =
  n u / (1 - n u), n the number of terms; sound for any summation order, blocked or FMA (profile.md section 4;
  matmul_acc.md, whose own formula assumes the naive order). sum |a b| (+ |c|) is the kernel module's
  ``run_abs``: one float32 product of the magnitudes, rounded up to a rigorous upper bound (``_abs_sum``).
  Two readings complete it (decided for issue 11; the README's "How sonnx-check reads the specification"):
  (b) the sign of a zero result is not compared: the annex bounds an error on the real result, and a real
      zero has no sign, so -0 against +0 is within the bound (as for every class that is not exact or
      correctly rounded; the kernels still return the IEEE sign of the text's sum, -0 only when every term
      is -0, which a runtime starting its accumulators at +0 does not reproduce).
  (c) intermediate overflow: the bound is the one of an implementation in the output type in any summation
      order (the most permissive reading). Such an implementation may overflow a partial sum where the
      exact result is finite, but only where the positive terms, or the negative ones, can sum beyond the
      largest finite value (within gamma_n), which sum |a b| and the reference bracket: there an infinity of
      that sign (a NaN where both can) is within the bound, counted apart as ``intermediate-overflow``;
      elsewhere an infinity or a NaN against a finite result is a special-value mismatch. Not under an
      override (it bounds |runtime - exact| for every element).
  (d) an infinite term meeting an overflowed one (issue 17; semantics.md, "Sums of products in floating
      point"): the reference takes special values from the exact products, so FLT_MAX * 1.3631 + (-inf) is
      -inf; an IEEE 754 evaluation rounding that product to float32 gets +inf, and NaN. Both are the
      text's semantics: NaN against a reference +-inf is within where finite terms of the other sign can
      overflow, as a product or a partial sum (``OppositeRoom``), counted apart as ``product-overflow``.
      Under an override too (it is the text's value, not an error).
- transcendental / composite: one documented formula per operator (``_RULES`` below), the annex's own where
  it gives one (Tanh: the most permissive of its reference algorithms), derived where it does not: each
  derivation names the reference algorithm, counts its IEEE 754 roundings (accuracy.md: each introduces at
  most u|r|, or u * min-normalized below the normal range) and takes the one hypothesis the annexes state on
  an elementary function (tanh_acc.md: exp has a 2 eps relative accuracy on [-1, 0], (2 + n/2) eps on
  [-2^n, -1], 2.5 eps on [0, 1], (2 + (n+1)/2) eps on [1, 2^n]).

**Overrides** tighten, never loosen: the effective bound is min(override, annex) element by element (so the
annex's bound stays the outer limit of every finding), and an override of an exact or correctly rounded
operator, which has no tighter bound, is refused.

u = 2^-p (p = 11, 24, 53 for float16, float, double), eps = 2u, min-normalized the smallest normal number.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx

from sonnx_check.profile import profile_operators
from sonnx_check.reference import execute, fast_bounds

EXACT = "exact"
CORRECTLY_ROUNDED = "correctly-rounded"
SUM_OF_PRODUCTS = "sum-of-products"
TRANSCENDENTAL = "transcendental"
CLASSES = (EXACT, CORRECTLY_ROUNDED, SUM_OF_PRODUCTS, TRANSCENDENTAL)

# Outcomes of one element, in the order a report lists them.
MATCH = "exact-match"  # bit for bit (NaN = NaN)
WITHIN = "within-bound"
# within by reading (c) (sum of products): an infinity, or a NaN, where an implementation in the output type
# may overflow in some summation order; its elements are in the WITHIN mask of ``outcome_masks`` (the callers
# accept that mask) and are counted apart so that a report shows them
OVERFLOW = "intermediate-overflow"
# within by reading (d) (sum of products): a NaN where the reference is +-inf from an infinite term, because
# an IEEE 754 evaluation rounding each product (or a partial sum) to the output type may overflow finite
# terms of the other sign to the other infinity (inf - inf); also a part of the WITHIN mask, counted apart
PRODUCT_OVERFLOW = "product-overflow"
BEYOND = "beyond-bound"
SPECIAL = "special-value"  # NaN vs number, +-inf mismatch, sign of zero where the text fixes it
FLUSHED = "flushed-subnormal"  # reference subnormal, runtime +-0, and that is beyond the bound
OUTCOMES = (MATCH, WITHIN, OVERFLOW, PRODUCT_OVERFLOW, BEYOND, SPECIAL, FLUSHED)
DIVERGENT = (BEYOND, SPECIAL)  # what RUNTIME.divergence reports


class AccuracyError(ValueError):
    """An override that cannot be used, or an operator without a bound; the message is one line."""


# -- floating-point formats ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Format:
    """The parameters of one IEEE 754 binary format that the bounds use."""

    dtype: np.dtype
    precision: int  # p, significand bits including the implicit one
    emin: int  # exponent of the smallest normal number
    emax: int

    @property
    def u(self) -> float:
        """Unit roundoff 2^-p (eps / 2)."""
        return 2.0**-self.precision

    @property
    def min_normal(self) -> float:
        return 2.0**self.emin

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.precision + 1)


def float_format(dtype: np.dtype | type) -> Format:
    info = np.finfo(dtype)
    return Format(np.dtype(dtype), int(info.nmant) + 1, int(info.minexp), int(info.maxexp) - 1)


def ulp(values: np.ndarray, fmt: Format) -> np.ndarray:
    """The spacing of ``fmt`` at each |value| (float64): 2^(e - p + 1) with 2^e <= |value| < 2^(e+1), the
    subnormal spacing 2^(emin - p + 1) at zero and below the normal range, the spacing at the largest finite
    value for +-inf and NaN. From the float64 exponent field: no frexp/ldexp pass over the data."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    field = np.bitwise_and(bits, np.uint64(0x7FF << 52))  # the exponent field alone (no sign): a new array
    np.clip(field, np.uint64((fmt.emin + 1023) << 52), np.uint64((fmt.emax + 1023) << 52), out=field)
    shift = np.uint64((fmt.precision - 1) << 52)
    if fmt.emin + 1023 > fmt.precision - 1:  # every spacing is a normal float64 (float16, float32)
        field -= shift
        return field.view(np.float64)
    low = field <= shift  # a float64 subnormal spacing (float64 values below 2^-970)
    exponent = (field[low] >> np.uint64(52)).astype(np.int64) - 1023 - (fmt.precision - 1)
    field[low] = shift + np.uint64(1 << 52)  # placeholder, overwritten below
    out = (field - shift).view(np.float64)
    out[low] = np.ldexp(1.0, exponent)
    return out


def gamma(n: int | np.ndarray, u: float) -> float | np.ndarray:
    """gamma_n = n u / (1 - n u) (Higham, Lemma 3.1), +inf where n u >= 1 (no bound exists)."""
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(n * u < 1, n * u / (1 - n * u), np.inf)
    return g if g.ndim else float(g)


def exp_relative_error(x: np.ndarray, fmt: Format) -> np.ndarray:
    """tanh_acc.md's hypothesis on exp, the relative error err_rel(exp(x)): 2 eps on [-1, 0], (2 + n/2) eps on
    [-2^n, -1], 2.5 eps on [0, 1], (2 + (n+1)/2) eps on [1, 2^n], n the smallest integer >= 0 that holds |x|
    (the interval of the text that is the tightest for x; larger n bound it too, more loosely)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    n = _ceil_log2(a)
    n *= 0.5
    n += 2.0  # 2 + n/2: every term is a multiple of 1/2 below 2**10, so the sums below are exact
    value = np.where(a <= 1, 2.0, n)
    value += np.where(x <= 0, 0.0, 0.5)  # positive x (and NaN): 2.5, or 2 + (n + 1)/2
    value *= 2.0 * fmt.u
    return value


def _ceil_log2(a: np.ndarray) -> np.ndarray:
    """The smallest integer n >= 0 with a <= 2^n (0 for a <= 1, 1023 for inf and NaN). From the float64
    fields of max(a, 1): the exponent, plus one unless the significand is exactly 1 (frexp is slow)."""
    a = np.asarray(a, dtype=np.float64)
    bits = np.maximum(a, 1.0).view(np.int64)
    n = (bits >> 52) - 1023
    n += (bits & ((1 << 52) - 1)) != 0
    return np.where(np.isfinite(a), n, 1023).astype(np.float64)


# -- overrides --------------------------------------------------------------------------------------------
_UNITS = {"ulp": "ulp", "ulps": "ulp", "rel": "rel", "abs": "abs"}
_OVERRIDE = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")
_EXAMPLES = "e.g. '2 ulp', '1e-6 rel' or '1e-7 abs'"


@dataclass(frozen=True)
class Override:
    """A user's bound on |runtime - exact|: ``value`` ulps of the output type at the result, ``value`` times
    max(|result|, min-normalized) (the annexes' relative form, div_acc.md and tanh_acc.md), or ``value`` in
    the output's units."""

    value: float
    unit: str  # "ulp" | "rel" | "abs"

    @property
    def text(self) -> str:
        return f"{self.value:g} {self.unit}"

    def introduced(self, magnitude: np.ndarray, fmt: Format) -> np.ndarray:
        if self.unit == "ulp":
            return self.value * ulp(magnitude, fmt)
        if self.unit == "rel":
            return self.value * np.maximum(magnitude, fmt.min_normal)
        return np.full(np.shape(magnitude), self.value)


def parse_override(text: str) -> Override:
    """The configuration's bound for one operator. Syntax: a non-negative decimal number and a unit, ulp
    (or ulps), rel or abs, case-insensitive, spaces optional: "2 ulp", "0.5ulp", "1e-6 rel", "1e-7 abs"."""
    if not isinstance(text, str) or not text.strip():
        raise AccuracyError(f"empty accuracy bound: write a number and a unit, {_EXAMPLES}")
    match = _OVERRIDE.match(text)
    if match is None:
        raise AccuracyError(f"accuracy bound {text!r}: not a number followed by a unit ({_EXAMPLES})")
    number, unit = match.group(1), match.group(2).lower()
    if not unit:
        raise AccuracyError(f"accuracy bound {text!r}: no unit (use ulp, rel or abs)")
    if unit not in _UNITS:
        raise AccuracyError(f"accuracy bound {text!r}: unknown unit {match.group(2)!r} (use ulp, rel or abs)")
    value = float(number)
    if value < 0 or not math.isfinite(value):
        raise AccuracyError(f"accuracy bound {text!r}: the number must be finite and not negative")
    return Override(value, _UNITS[unit])


# -- evaluated bounds and outcomes ------------------------------------------------------------------------
@dataclass(frozen=True)
class Tolerance:
    """A bound evaluated on one node's data. ``allowed``: the largest |actual - expected| accepted per
    element (float64, broadcastable to the output), introduced error plus the reference's own rounding;
    ``exact``: where the comparison is bit for bit, sign of zero included (a scalar or a boolean array);
    ``text``: the bound as a report prints it."""

    allowed: np.ndarray | float
    exact: np.ndarray | bool
    text: str
    # sum of products without an override, reading (c): which infinities an implementation in the output
    # type may reach by an intermediate overflow (evaluated only where the runtime returned one)
    overflow: OverflowRoom | None = None
    # sum of products, reading (d): where an IEEE evaluation may meet an infinite term with an overflowed one
    # of the other sign (evaluated only where the runtime returned NaN against an infinite reference)
    opposite: OppositeRoom | None = None


OVERFLOW_POS, OVERFLOW_NEG = 1, 2  # the infinities an intermediate overflow may give; both: NaN too


@dataclass(frozen=True)
class OverflowRoom:
    """Reading (c) for one node's output: sum |a b| (+ |c|) (an upper bound, broadcastable to the output),
    the reference, and gamma_n of the output type. ``signs`` says, per element, which infinities an
    implementation in the output type may reach by overflowing a partial sum."""

    total: np.ndarray
    expected: np.ndarray
    gamma: float
    fmt: Format

    def signs(self, flat: np.ndarray) -> np.ndarray:
        """OVERFLOW_POS | OVERFLOW_NEG per element of ``flat`` (indices into the output), 0 for none.

        With S = sum |a b| (+ |c|) and y the exact result, the positive terms sum to P = (S + y)/2 and the
        negative ones to N = (S - y)/2. Every value such an implementation computes, product or partial sum,
        in any order, is within a factor 1 + gamma_n of a sum of terms of the element (Higham's model), so
        its exact value is at most P (1 + gamma_n) and at least -N (1 + gamma_n): +inf is reachable only
        where P (1 + gamma_n) reaches the largest finite value, -inf only where N (1 + gamma_n) does, and
        NaN (+inf + -inf) only where both do. Once a partial sum is infinite no finite result follows, so
        nothing else changes. y is bracketed by the reference (correctly rounded: within half an ulp; an
        infinite reference is at least the largest finite value), S by its upper bound, so the test errs on
        the side of accepting. Only where the terms are finite: S finite, or S beyond float64 (float64
        data) with a finite reference; where an operand is infinite or NaN the result is the text's special
        value, compared bit for bit."""
        total = np.broadcast_to(self.total, self.expected.shape).reshape(-1)[flat]
        e = self.expected.reshape(-1)[flat].astype(np.float64)
        top = float(np.finfo(self.fmt.dtype).max)
        with np.errstate(invalid="ignore", over="ignore"):
            half = 0.5 * ulp(e, self.fmt)
            y_high = np.where(np.isfinite(e), e + half, np.where(e > 0, np.inf, -top))
            y_low = np.where(np.isfinite(e), e - half, np.where(e > 0, top, -np.inf))
            positive = (total + y_high) / 2 * (1 + self.gamma) >= top
            negative = (total - y_low) / 2 * (1 + self.gamma) >= top
        applicable = (np.isfinite(total) | np.isfinite(e)) & ~np.isnan(e)
        signs = np.where(positive, OVERFLOW_POS, 0) + np.where(negative, OVERFLOW_NEG, 0)
        return np.where(applicable, signs, 0).astype(np.int8)


@dataclass
class OppositeRoom:
    """Reading (d) for one node's output. Where the reference is +-inf because of an infinite term (an
    operand +-inf; the text's exact-product reading), an IEEE 754 evaluation that rounds each finite product
    to the output type, or fuses it, in any order, gives the same infinity, or NaN when finite terms of the
    other sign overflow, as a product or as a partial sum, to the other infinity: FLT_MAX * 1.3631 rounds to
    +inf, and +inf + -inf is NaN. Such a value is within P (1 + gamma_n) of the sum P of the positive finite
    terms (N for the negative ones; Higham's model, as in reading (c)), so NaN is accepted against +inf where
    N (1 + gamma_n) reaches the largest finite value and against -inf where P (1 + gamma_n) does. ``sums``
    gives (P, N), upper bounds over the whole output (the kernel module's ``run_signed_sums``), computed once
    and only when needed."""

    sums: Callable[[], tuple[np.ndarray, np.ndarray]]
    shape: tuple[int, ...]
    gamma: float
    fmt: Format
    _cache: tuple[np.ndarray, np.ndarray] | None = None

    def reachable(self, flat: np.ndarray, positive_reference: np.ndarray) -> np.ndarray:
        """Per element of ``flat`` (indices into the output): whether NaN is an IEEE outcome, given the sign
        of its infinite reference."""
        if self._cache is None:
            positive, negative = self.sums()
            self._cache = (
                np.broadcast_to(positive, self.shape).reshape(-1),
                np.broadcast_to(negative, self.shape).reshape(-1),
            )
        positive, negative = self._cache
        other = np.where(positive_reference, negative[flat], positive[flat])
        top = float(np.finfo(self.fmt.dtype).max)
        with np.errstate(over="ignore", invalid="ignore"):
            return other * (1 + self.gamma) >= top


@dataclass(frozen=True)
class Instance:
    """One element: its index in the output, both values, the allowed difference and |diff| / allowed."""

    index: tuple[int, ...]
    expected: float | int | bool
    actual: float | int | bool
    allowed: float
    ratio: float

    def as_dict(self) -> dict[str, object]:
        return {
            "index": list(self.index),
            "expected": _json_number(self.expected),
            "actual": _json_number(self.actual),
            "allowed": _json_number(self.allowed),
            "ratio": _json_number(self.ratio),
        }


@dataclass(frozen=True)
class Classification:
    """The outcome of every element of one output. ``max_ratio`` is the margin: the largest |actual -
    expected| / allowed over the elements that are not special-value mismatches (0.0 when they all match; at
    most 1.0 when all are within; +inf for a difference where nothing is allowed). ``max_ulps``: the largest
    difference in ulps of the output type at the reference value."""

    counts: Mapping[str, int]
    first: Mapping[str, Instance]
    max_ratio: float
    worst: Instance | None
    max_ulps: float
    bound: str
    size: int = field(default=0)

    @property
    def divergent(self) -> int:
        """Elements RUNTIME.divergence reports: beyond the bound or special-value mismatches."""
        return sum(self.counts[o] for o in DIVERGENT)

    def as_dict(self) -> dict[str, object]:
        """JSON-safe (non-finite numbers as the strings "nan", "inf", "-inf")."""
        return {
            "bound": self.bound,
            "elements": self.size,
            "counts": dict(self.counts),
            "first": {k: v.as_dict() for k, v in self.first.items()},
            "max_ratio": _json_number(self.max_ratio),
            "worst": None if self.worst is None else self.worst.as_dict(),
            "max_ulps": _json_number(self.max_ulps),
        }


def _json_number(v: float | int | bool) -> float | int | bool | str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


# -- the data a rule sees ---------------------------------------------------------------------------------
@dataclass
class NodeData:
    """One node's inputs and reference output, as float64, with what every rule needs."""

    node: onnx.NodeProto
    inputs: list[np.ndarray | None]
    expected: np.ndarray
    fmt: Format
    attrs: dict[str, object]
    abs_sum: np.ndarray | None = None  # sum |a b| (+ |c|) when the caller has it (sum of products)
    overflow: OverflowRoom | None = None  # set by the sum-of-products rule (Tolerance.overflow)
    opposite: OppositeRoom | None = None  # set by the sum-of-products rule (Tolerance.opposite)

    @functools.cached_property
    def magnitude(self) -> np.ndarray:
        """|exact| as the bounds use it: |reference| plus the reference's half ulp (an upper bound), the
        largest finite value for an infinite reference (the least an overflowed exact value can be); NaN for
        NaN. Computed once per node (the rule and an override both read it), in place."""
        e = np.abs(self.expected, dtype=np.float64)
        out = ulp(e, self.fmt)
        out *= 0.5
        out += e  # +inf stays +inf, NaN stays NaN
        infinite = np.isinf(out)
        if infinite.any():
            # an overflowed reference: the exact value is at least the largest finite value
            out[infinite & np.isinf(e)] = float(np.finfo(self.fmt.dtype).max)
        return out

    def x(self, k: int = 0) -> np.ndarray:
        value = self.inputs[k] if k < len(self.inputs) else None
        if value is None:
            raise AccuracyError(f"{self.node.op_type}: input {k} is absent, the bound needs it")
        return np.asarray(value).astype(np.float64)


# A rule returns the introduced-error bound per element (float64, broadcastable to the output), the mask of
# elements a special-value rule of the text decides (compared bit for bit), and the detail of its text.
RuleResult = tuple[np.ndarray, np.ndarray | bool, str]


@dataclass(frozen=True)
class Rule:
    formula: str  # the bound, as the report prints it
    source: str  # the annex sentence or the derivation it comes from
    evaluate: Callable[[NodeData], RuleResult]


# -- the bound of one operator ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Bound:
    """The bound of one operator for one output type, before any data: ``evaluate`` computes it on a node."""

    op_type: str
    dtype: np.dtype
    accuracy: str  # one of CLASSES
    rule: Rule
    override: Override | None = None
    reference_ulps: float = 0.5  # the reference kernel's own error bound, in ulps of the output

    @property
    def text(self) -> str:
        """The bound without data (evaluate adds the node's numbers, such as n)."""
        base = f"{self.rule.formula} ({self.rule.source})"
        return base if self.override is None else f"{self.override.text} (override; at most {base})"

    def evaluate(
        self,
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray | None],
        expected: np.ndarray,
        abs_sum: np.ndarray | None = None,
    ) -> Tolerance:
        """The bound on one node's data. ``abs_sum``: sum |a b| (+ |c|) of a sum-of-products node when the
        caller has it already (the kernel module's ``run_with_abs`` gives the reference and it together,
        cheaper than ``run`` then ``run_abs``); it must be that rigorous upper bound."""
        expected = np.asarray(expected)
        if self.accuracy in (EXACT, CORRECTLY_ROUNDED) or self.dtype.kind != "f":
            return Tolerance(0.0, True, self.text)
        data = NodeData(node, list(inputs), expected, float_format(self.dtype), _attributes(node), abs_sum)
        with np.errstate(all="ignore"):  # overflow to inf and 0 * inf are part of the formulas' domains
            introduced, exact, detail = self.rule.evaluate(data)
        introduced = np.broadcast_to(np.asarray(introduced, dtype=np.float64), expected.shape)
        undefined = np.isnan(introduced)
        if undefined.any():
            introduced = np.where(undefined, np.inf, introduced)  # an undefined bound flags nothing
        text = f"{self.rule.formula}{detail} ({self.rule.source})"
        if self.override is not None:
            tighter = self.override.introduced(data.magnitude, data.fmt)
            introduced = np.minimum(introduced, tighter)
            text = f"{self.override.text} (override; at most {text})"
        allowed = ulp(expected, data.fmt)  # a new array: the reference's own rounding, then the bound added
        allowed *= self.reference_ulps
        allowed += introduced
        if np.any(exact):
            allowed = np.where(exact, 0.0, allowed)
        # an override bounds |runtime - exact| for every element: an overflowed result is beyond it
        overflow = data.overflow if self.override is None else None
        text = f"{text} + {self.reference_ulps:g} ulp for the reference's rounding"
        # reading (d) is the text's IEEE semantics, not an error bound: it holds under an override too
        return Tolerance(allowed, exact, text, overflow, data.opposite)


def bound_for(op_type: str, dtype: np.dtype | type | str, override: str | Override | None = None) -> Bound:
    """The bound of ``op_type`` for outputs of ``dtype``, from its declared accuracy class and, for the
    transcendental/composite class, its formula. ``override`` (text or parsed) tightens it; it is refused
    for an exact or correctly rounded operator, and ignored for integer and boolean outputs (always exact)."""
    dtype = np.dtype(dtype)
    accuracy = accuracy_class(op_type, dtype)
    parsed = parse_override(override) if isinstance(override, str) else override
    if parsed is not None:
        check_override(op_type, parsed)
    if dtype.kind != "f":
        return Bound(op_type, dtype, EXACT, _EXACT_RULE)
    if accuracy == EXACT:
        return Bound(op_type, dtype, EXACT, _EXACT_RULE)
    if accuracy == CORRECTLY_ROUNDED:
        return Bound(op_type, dtype, CORRECTLY_ROUNDED, _CORRECTLY_ROUNDED_RULE)
    if accuracy == SUM_OF_PRODUCTS:
        return Bound(op_type, dtype, SUM_OF_PRODUCTS, _SUM_OF_PRODUCTS_RULE, parsed)
    rule = _RULES.get(op_type)
    if rule is None:
        raise AccuracyError(f"{op_type}: no accuracy bound is defined for its class {accuracy!r}")
    return Bound(op_type, dtype, TRANSCENDENTAL, rule, parsed, _REFERENCE_ULPS.get(op_type, 0.5))


def accuracy_class(op_type: str, dtype: np.dtype | type | str | None = None) -> str:
    """The declared class (``accuracy = ...`` in rules/<Op>.toml), with one refinement: Range declares
    exact, which holds for its int section, but its float section's value is the text's formula S + i*D
    evaluated in the type (range.md gives no accuracy: "(-- IGNORE --)"), which rounds: composite there."""
    op = profile_operators().get(op_type)
    if op is None or not getattr(op, "accuracy", None):
        raise AccuracyError(f"{op_type}: not an operator of the profile with a declared accuracy class")
    if op_type == "Range" and dtype is not None and np.dtype(dtype).kind == "f":
        return TRANSCENDENTAL
    if op.accuracy not in CLASSES:
        raise AccuracyError(f"{op_type}: unknown accuracy class {op.accuracy!r} in rules/{op_type}.toml")
    return op.accuracy


def check_override(op_type: str, override: Override) -> None:
    """Refuse an override where no tighter bound exists (checked when the configuration is read): an
    operator whose float section is exact or correctly rounded. (Its integer section is exact anyway.)"""
    accuracy = accuracy_class(op_type, np.float32)
    if accuracy == EXACT:
        raise AccuracyError(
            f"accuracy bound {override.text!r} for {op_type}: {op_type} is exact (bit for bit), "
            "no bound applies"
        )
    if accuracy == CORRECTLY_ROUNDED:
        raise AccuracyError(
            f"accuracy bound {override.text!r} for {op_type}: {op_type} is correctly rounded, "
            "nothing is tighter than the correctly rounded result"
        )


def _attributes(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


# -- classification ---------------------------------------------------------------------------------------
def classify(
    expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str
) -> Classification:
    """Class every element of one output (same shape), count them, keep the first of each class and the
    margin. Order of precedence: exact match, special-value mismatch, within the bound, flushed subnormal,
    beyond. A +-inf against a finite value is a special-value mismatch, except against the largest finite
    value of the same sign where the bound allows it (+-inf standing for +-2^(emax+1), ``_distance``): an
    exact value at the overflow threshold, which a rounding error may put on either side."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if np.dtype(dtype).kind != "f":
        if expected.shape != actual.shape:
            raise ValueError(f"shapes differ: expected {list(expected.shape)}, actual {list(actual.shape)}")
        return _classify_exact(expected, actual, bound.text)
    masks, diff, allowed = outcome_masks(expected, actual, bound, dtype)
    fmt = float_format(np.dtype(dtype))
    skip = masks[MATCH] | masks[SPECIAL] | masks[OVERFLOW] | masks[PRODUCT_OVERFLOW]  # no finite error
    ratio = _ratio(diff, allowed, skip)
    max_ulps = _max_ulps(diff, expected.astype(np.float64), fmt, skip)
    return _summary(masks, expected, actual, allowed, ratio, max_ulps, bound.text)


def outcome_masks(
    expected: np.ndarray, actual: np.ndarray, bound: Tolerance, dtype: np.dtype | type | str
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The outcome of every element of a float output, as one boolean mask per outcome, with |a - e| and
    the allowed difference (the comparison marks the divergent elements from the masks). The masks are
    disjoint except OVERFLOW, a part of WITHIN: a caller accepting MATCH | WITHIN | FLUSHED accepts the
    intermediate overflows reading (c) allows; ``classify`` counts them apart."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        raise ValueError(f"shapes differ: expected {list(expected.shape)}, actual {list(actual.shape)}")
    fmt = float_format(np.dtype(dtype))
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    allowed = np.broadcast_to(np.asarray(bound.allowed, dtype=np.float64), e.shape)
    exact = np.broadcast_to(np.asarray(bound.exact, dtype=bool), e.shape)
    nan_e, nan_a = np.isnan(e), np.isnan(a)
    same = (nan_e & nan_a) | ((e == a) & (np.signbit(e) == np.signbit(a)))
    infinite = bool(np.isinf(e).any() or np.isinf(a).any())
    diff = _distance(e, a, fmt) if infinite else np.abs(a - e)
    with np.errstate(invalid="ignore"):
        within = (diff <= allowed) & ~same
    special = nan_e ^ nan_a
    if infinite:
        overflow = _edge_of_range(e, a, fmt) & within & ~exact
        special |= _inf_mismatch(e, a) & ~overflow
    special |= exact & (e == 0) & (a == 0) & (np.signbit(e) != np.signbit(a))
    overflowed = _overflowed(e, a, bound, ~same & ~exact & ~nan_e)
    special &= ~overflowed
    opposite = _opposite_overflow(e, bound, special & nan_a & np.isinf(e))
    special &= ~opposite
    within &= ~special
    within |= overflowed | opposite
    flushed = ~same & ~special & ~within & (e != 0) & (np.abs(e) < fmt.min_normal) & (a == 0)
    beyond = ~same & ~special & ~within & ~flushed
    masks = {MATCH: same, WITHIN: within, OVERFLOW: overflowed, PRODUCT_OVERFLOW: opposite}
    masks.update({BEYOND: beyond, SPECIAL: special, FLUSHED: flushed})
    return masks, diff, allowed


def _overflowed(e: np.ndarray, a: np.ndarray, bound: Tolerance, candidates: np.ndarray) -> np.ndarray:
    """Reading (c): the candidates where the runtime returned an infinity, or a NaN, that an implementation
    in the output type may reach by overflowing a partial sum (``Tolerance.overflow``)."""
    reached = np.zeros(e.shape, dtype=bool)
    if bound.overflow is None:
        return reached
    flat = np.flatnonzero(candidates & ~np.isfinite(a))
    if flat.size:
        signs = bound.overflow.signs(flat)
        value = a.reshape(-1)[flat]
        positive, negative = (signs & OVERFLOW_POS) > 0, (signs & OVERFLOW_NEG) > 0
        with np.errstate(invalid="ignore"):
            hit = (
                ((value > 0) & positive) | ((value < 0) & negative) | (np.isnan(value) & positive & negative)
            )
        reached.reshape(-1)[flat[hit]] = True
    return reached


def _opposite_overflow(e: np.ndarray, bound: Tolerance, candidates: np.ndarray) -> np.ndarray:
    """Reading (d): the candidates (runtime NaN, reference +-inf) where an IEEE evaluation in the output type
    may give NaN (``Tolerance.opposite``)."""
    reached = np.zeros(e.shape, dtype=bool)
    if bound.opposite is None:
        return reached
    flat = np.flatnonzero(candidates)
    if flat.size:
        hit = bound.opposite.reachable(flat, e.reshape(-1)[flat] > 0)
        reached.reshape(-1)[flat[hit]] = True
    return reached


def _distance(e: np.ndarray, a: np.ndarray, fmt: Format) -> np.ndarray:
    """|a - e|, an infinity standing for +-2^(emax+1), the first value beyond the largest finite one (computed
    as (2^emax - |x|) + 2^emax, which does not overflow near the top of float64); NaN where either is NaN."""
    half = 2.0**fmt.emax
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(a - e)
        d = np.where(np.isinf(e) & np.isfinite(a), (half - np.copysign(1.0, e) * a) + half, d)
        d = np.where(np.isinf(a) & np.isfinite(e), (half - np.copysign(1.0, a) * e) + half, d)
        return np.where(np.isinf(a) & (a == e), 0.0, d)


def _inf_mismatch(e: np.ndarray, a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return (np.isinf(e) | np.isinf(a)) & (e != a) & ~np.isnan(e) & ~np.isnan(a)


def _edge_of_range(e: np.ndarray, a: np.ndarray, fmt: Format) -> np.ndarray:
    """An infinity against the largest finite value of the same sign: the one inf/finite pair a rounding
    error can explain (an exact value near the overflow threshold, on either side of it)."""
    top = float(np.finfo(fmt.dtype).max)
    with np.errstate(invalid="ignore"):
        return ((np.isinf(e) & (np.abs(a) == top)) | (np.isinf(a) & (np.abs(e) == top))) & (
            np.signbit(e) == np.signbit(a)
        )


def _ratio(diff: np.ndarray, allowed: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """|diff| / allowed; 0 where both are 0 or the element is skipped, +inf for a difference where nothing
    is allowed."""
    compared = ~skip & (diff > 0)  # NaN differences are never > 0
    ratio = np.zeros(diff.shape)
    np.divide(diff, allowed, out=ratio, where=compared & (allowed > 0))
    ratio[compared & (allowed <= 0)] = np.inf
    return ratio


def _max_ulps(diff: np.ndarray, e: np.ndarray, fmt: Format, skip: np.ndarray) -> float:
    """The largest |diff| in ulps of the output type at the reference value, over the compared elements."""
    where = np.flatnonzero(~skip & (diff > 0))
    if where.size == 0:
        return 0.0
    return float(np.max(diff.reshape(-1)[where] / ulp(e.reshape(-1)[where], fmt)))


def _classify_exact(expected: np.ndarray, actual: np.ndarray, text: str) -> Classification:
    """Integer and boolean outputs: equal or beyond (nothing is allowed); max_ulps is the largest |difference|
    (the ulp of an integer is 1), in float64."""
    same = expected == actual
    none = np.zeros_like(same)
    masks = {o: none for o in OUTCOMES}
    masks.update({MATCH: same, BEYOND: ~same})
    ratio = np.where(same, 0.0, np.inf)
    differences = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    largest = float(differences.max()) if differences.size else 0.0
    return _summary(masks, expected, actual, np.zeros(expected.shape), ratio, largest, text)


def _summary(
    masks: dict[str, np.ndarray],
    expected: np.ndarray,
    actual: np.ndarray,
    allowed: np.ndarray,
    ratio: np.ndarray,
    max_ulps: float,
    text: str,
) -> Classification:
    def instance(flat: int) -> Instance:
        index = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
        return Instance(
            # a tuple index, not .flat: numpy's flat iterator refuses arrays of rank above 32
            index, expected[index].item(), actual[index].item(), float(allowed[index]), float(ratio[index]),
        )  # fmt: skip

    masks = {**masks, WITHIN: masks[WITHIN] & ~masks[OVERFLOW] & ~masks[PRODUCT_OVERFLOW]}  # counted apart
    counts = {o: int(np.count_nonzero(masks[o])) for o in OUTCOMES}
    first = {o: instance(int(np.argmax(masks[o].reshape(-1)))) for o in OUTCOMES if counts[o]}
    worst = None
    max_ratio = float(ratio.max()) if ratio.size else 0.0
    if max_ratio > 0:
        worst = instance(int(np.argmax(ratio.reshape(-1))))
    return Classification(counts, first, max_ratio, worst, max_ulps, text, int(expected.size))


def compare_node(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    expected: np.ndarray,
    actual: np.ndarray,
    override: str | Override | None = None,
) -> Classification:
    """bound_for + evaluate + classify for one output of one node (its dtype is the reference's)."""
    expected = np.asarray(expected)
    tolerance = bound_for(node.op_type, expected.dtype, override).evaluate(node, inputs, expected)
    return classify(expected, actual, tolerance, expected.dtype)


# -- the classes without a formula of their own -----------------------------------------------------------
def _no_rule(data: NodeData) -> RuleResult:  # pragma: no cover - exact classes never evaluate a rule
    return np.zeros(()), True, ""


_EXACT_RULE = Rule("exact (bit for bit, NaN = NaN, sign of zero compared)", "profile.md section 4", _no_rule)
_CORRECTLY_ROUNDED_RULE = Rule(
    "correctly rounded (the IEEE 754 result, error ≤ u·|exact|, bit for bit)",
    'accuracy.md: "the introduced error is less or equal than |r|×ε/2 = |r|×u"; div_acc.md',
    _no_rule,
)


# -- sum of products --------------------------------------------------------------------------------------
def _sum_of_products(data: NodeData) -> RuleResult:
    """gamma_n (sum |a_k b_k| + |c|) + n u min-normalized, n the number of terms of one output element.

    Higham's bound for a dot product holds for any summation order, with or without FMA, which a blocked
    BLAS needs (profile.md section 4); matmul_acc.md's own formula, ((1+u)^2 ((1+u)^n - 1)/u - n)|A||B| with
    the matrix maxima |A| and |B|, assumes the naive order. The last term covers the underflow of the
    products (at most u min-normalized each; the bound above assumes none). sum |a b| (+ |c|) is the kernel
    module's ``run_abs`` (``_abs_sum``), a rigorous upper bound. Also records the intermediate overflows of
    reading (c) (``OverflowRoom``), evaluated only where a runtime returns an infinity or a NaN."""
    n = _term_count(data)
    total = _abs_sum(data)
    terms = _kernel_function(data, "bound_terms")  # an operator whose terms are scaled (Gemm's alpha, beta)
    if terms is None:
        g = float(gamma(n, data.fmt.u))
        introduced = total * g
        introduced += n * data.fmt.u * data.fmt.min_normal
    else:
        stated = terms(data.node, data.inputs)
        g = float(gamma(stated.roundings, data.fmt.u))
        introduced = total * (g + stated.reference_relative)
        introduced += stated.underflow_units * data.fmt.u * data.fmt.min_normal * (1 + g)
        introduced += stated.reference_absolute
        n = stated.roundings
    data.overflow = OverflowRoom(total, data.expected, g, data.fmt)
    signed = _kernel_function(data, "run_signed_sums")
    if signed is not None:
        node, inputs = data.node, list(data.inputs)
        data.opposite = OppositeRoom(lambda: signed(node, inputs), data.expected.shape, g, data.fmt)
    return introduced, False, f" with n = {n}"


def _term_count(data: NodeData) -> int:
    op = data.node.op_type
    has_bias = len(data.inputs) > 2 and data.inputs[2] is not None and np.asarray(data.inputs[2]).size > 0
    if op == "Conv":
        w = np.asarray(data.inputs[1])
        return int(np.prod(w.shape[1:])) + int(has_bias)  # C/group * kH * kW (+ the bias)
    a = np.asarray(data.inputs[0])
    inner = a.shape[0] if op == "Gemm" and data.attrs.get("transA", 0) else a.shape[-1]
    return int(inner) + int(op == "Gemm" and has_bias)


def _abs_sum(data: NodeData) -> np.ndarray:
    """An upper bound of sum |a_k b_k| (+ |c|) per output element (float64): ``run_abs`` of the module that
    holds the operator's declared kernel (reference/conv.py, matmul.py, gemm.py). One float32 product of
    the magnitudes for float16/float32 data (float64 for float64 data, or where float32 overflows), rounded
    up by 2 gamma_(K+2) of its own precision plus (K+1) times its smallest subnormal for the products that
    underflow (products_common.abs_sum says why that is an upper bound in any summation order); +inf where
    a term involves a non-finite operand. About ten times cheaper than the reference kernel on |A|, |B|,
    |C|, which certifies every rounding; an upper bound only loosens the bound, by at most that factor."""
    if data.abs_sum is not None:
        return np.asarray(data.abs_sum, dtype=np.float64)
    run_abs = _kernel_function(data, "run_abs")
    if run_abs is None:
        raise AccuracyError(f"{data.node.op_type}: its kernel has no run_abs for the sum-of-products bound")
    return np.asarray(run_abs(data.node, data.inputs, None), dtype=np.float64)


def _kernel_function(data: NodeData, name: str) -> Callable | None:
    """A function of the module that holds the operator's declared kernel (reference/conv.py, ...)."""
    kernel = execute.kernels().get(data.node.op_type)
    return getattr(sys.modules.get(getattr(kernel, "__module__", ""), None), name, None)


_SUM_OF_PRODUCTS_RULE = Rule(
    "γ_n·Σ|a·b| (+|c|)",
    "matmul_acc.md, Error Introduction (IEEE-754), for any summation order (profile.md section 4)",
    _sum_of_products,
)


# -- transcendental and composite -------------------------------------------------------------------------
def _exp(data: NodeData) -> RuleResult:
    """err_rel(exp(x)) * max(|Y|, min-normalized): tanh_acc.md's hypothesis on exp, taken as Exp's bound
    (exp_acc.md gives only the propagated error). min-normalized below the normal range, where a relative
    claim means nothing, as div_acc.md and tanh_acc.md bound it. Exact: the float section's rules, NaN,
    -inf -> +0, +inf -> +inf, and X > X_max = ln(largest finite value) -> +inf."""
    x = data.x()
    introduced = exp_relative_error(x, data.fmt) * np.maximum(data.magnitude, data.fmt.min_normal)
    with np.errstate(invalid="ignore"):
        overflow = x > math.log(float(np.finfo(data.fmt.dtype).max))
    return introduced, ~np.isfinite(x) | overflow, ""


def _tanh(data: NodeData) -> RuleResult:
    """tanh_acc.md's bound for its last reference algorithm, (exp(X) - exp(-X)) / (exp(X) + exp(-X)), the
    most permissive of the four it derives (its constants 17 and 8.5 exceed the 8 / 9 and 4 / 4.5 of the
    others, and the bound grows with them), so a finding is beyond every bound the annex derives; it also
    exceeds the correctly rounded u * max(tanh|x|, min-normalized). With w = e^(-2|x|) and n = 0 for |x| <= 1,
    else the smallest integer with |x| <= 2^n:

        u/(1 + 2w) * ((2 + (17+n)(1+u)w - 2w^2) / ((1+w)(1-u) - (8.5+n/2)u(1+u)w) * (1+u) + 1 - w)

    (the text's formula; its Unit Verification code writes (1+2w)(1-u) in the denominator and n as the
    exponent of x, both tighter). The annex restricts that algorithm to |x| <= 1e7; beyond, w = 0 and the
    bound is ~3u, which every algorithm shares. Exact: NaN, +-inf -> +-1."""
    x = data.x()
    u = data.fmt.u
    n = _ceil_log2(np.abs(x))
    w = np.exp(-2.0 * np.abs(x))
    numerator = 2 + (17 + n) * (1 + u) * w - 2 * w * w
    denominator = (1 + w) * (1 - u) - (8.5 + n / 2) * u * (1 + u) * w
    introduced = u / (1 + 2 * w) * (numerator / denominator * (1 + u) + 1 - w)
    return introduced, ~np.isfinite(x), ""


def _sigmoid(data: NodeData) -> RuleResult:
    """Derived for the algorithm of sigmoid_acc.md's Note ("the minimal precision algorithm shall split the
    X domain so that only negative exponents are computed": 1/(1 + exp(-X)) for X >= 0, exp(X)/(1 + exp(X))
    otherwise; sigmoid_acc.md states no introduced error), with t = exp(-|X|) of relative error E =
    err_rel(exp(-|X|)) (tanh_acc.md's hypothesis) and one rounding u per + and /:
      X >= 0: yhat/y = (1+d2)/((1+theta)(1+d1)) with |theta| = |t dE/(1+t)| <= E/2 (t <= 1);
      X < 0:  yhat/y = (1+dE)(1+d2)/((1+theta)(1+d1)).
    So |Y - exact| <= ((1+E)^[X<0] (1+u) / ((1-E/2)(1-u)) - 1) * max(|Y|, min-normalized).
    Exact: NaN, -inf -> +0, +inf -> 1."""
    x = data.x()
    u = data.fmt.u
    e = exp_relative_error(-np.abs(x), data.fmt)
    growth = np.where(x < 0, 1 + e, 1.0) * (1 + u) / ((1 - e / 2) * (1 - u)) - 1
    return growth * np.maximum(data.magnitude, data.fmt.min_normal), ~np.isfinite(x), ""


def _log_terms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|k ln 2| and |ln m| for x = m 2^k, m in [sqrt(1/2), sqrt(2)) (x > 0 finite; anything for others)."""
    with np.errstate(all="ignore"):
        fraction, exponent = np.frexp(x)  # x = f 2^e, f in [0.5, 1)
        low = fraction < math.sqrt(0.5)
        m = np.where(low, 2 * fraction, fraction)
        k = np.where(low, exponent - 1, exponent).astype(np.float64)
        return np.abs(k) * math.log(2.0), np.abs(np.log(m))


def _log_introduced(x: np.ndarray, magnitude: np.ndarray, fmt: Format) -> np.ndarray:
    u = fmt.u
    k_ln2, ln_m = _log_terms(x)
    return (1 + u) * (gamma(2, u) * k_ln2 + 4 * u * ln_m) + u * magnitude + u * fmt.min_normal


def _log(data: NodeData) -> RuleResult:
    """Derived (log_acc.md gives only the propagated error) for the usual reference algorithm x = m 2^k,
    m in [sqrt(1/2), sqrt(2)), ln x = k ln 2 + ln m: ln 2 rounded and k ln 2 rounded (gamma_2), ln m with a
    relative error 2 eps = 4u on the reduced interval (tanh_acc.md's hypothesis on exp, "a 2 eps accuracy in
    the interval [-1, 0]", taken for ln on its own), one rounding for the sum (u):

        (1+u)(gamma_2 |k ln 2| + 4u |ln m|) + u |Y| + u min-normalized

    Exact: the float section's rules, NaN, X < 0 -> NaN, +-0 -> -inf, +inf -> +inf."""
    x = data.x()
    introduced = _log_introduced(x, data.magnitude, data.fmt)
    return introduced, ~(np.isfinite(x) & (x > 0)), ""


def _pow(data: NodeData) -> RuleResult:
    """Derived (pow_acc.md gives only the propagated error, from d(A^B)/dB = A^B ln A) for the naive reference
    algorithm exp(B ln|A|) in the output type, the most permissive usual one: ln|A| within Log's bound L
    (above), z = B ln|A| rounded once, so |zhat - z| <= Dz = |B| L + u|B|(|ln A| + L); exp(zhat) of relative
    error E = err_rel(exp) at |z| + Dz (tanh_acc.md; its positive branch, the larger):

        (e^Dz (1 + E) - 1) * max(|C|, min-normalized)

    Integer powers by repeated multiplication (B = 2, 3) and sqrt for B = 0.5 are within it. Exact: the
    float section's special-value table (B = +-0, A = 1, NaN, A or B infinite, A = +-0, A = -1, negative A
    with a non-integer B)."""
    a, b = data.x(0), data.x(1)
    u, fmt = data.fmt.u, data.fmt
    with np.errstate(all="ignore"):
        magnitude_a = np.abs(a)
        ln_a = np.abs(np.log(magnitude_a))
        log_bound = _log_introduced(magnitude_a, ln_a, fmt)
        dz = np.abs(b) * log_bound + u * np.abs(b) * (ln_a + log_bound)
        z = np.abs(b) * ln_a
        growth = np.exp(dz) * (1 + exp_relative_error(z + dz, fmt)) - 1
        special = (b == 0) | (a == 1) | np.isnan(a) | np.isnan(b) | np.isinf(a) | np.isinf(b)
        special |= (a == 0) | (a == -1) | ((a < 0) & (b != np.round(b)))
    return growth * np.maximum(data.magnitude, fmt.min_normal), special, ""


def _leaky_relu(data: NodeData) -> RuleResult:
    """Y = X where X is not negative (leakyrelu.md's float section, -0 and NaN included): exact there. Where
    X < 0, Y = alpha X: alpha (a float attribute) rounded to the output type, or the product formed in a wider
    type and rounded, then one IEEE 754 multiplication (accuracy.md, Example 4: |x||y|u): at most two
    roundings, gamma_2 * max(|alpha X|, min-normalized). leakyrelu_acc.md gives only the propagated error."""
    x = data.x()
    alpha = float(np.float32(data.attrs.get("alpha", 0.01)))
    negative = x < 0
    with np.errstate(all="ignore"):
        product = np.maximum(np.abs(alpha * x), data.fmt.min_normal)
    return np.where(negative, gamma(2, data.fmt.u) * product, 0.0), ~negative, ""


def _softmax(data: NodeData) -> RuleResult:
    """Derived (softmax.md links a softmax_acc.md that is not published) for the text's formula, Y[i] =
    e^(X[i] - M) / sum_j e^(X[j] - M): with d_j = X[j] - M rounded (u|d_j|), t_j = exp(d_j) of relative error
    E_j = err_rel(exp(d_j)) (tanh_acc.md), each term is within e_j = (1 + E_j) e^(u|d_j|) - 1 of e^(d_j); the
    sum of the n terms, in any order, within gamma_(n-1) of the sum of the computed terms, itself within
    eta = sum_j Y[j] e_j of the exact sum (the weights are the outputs); the division, even as a reciprocal
    and a product, two roundings:

        ((1 + e_i)(1+u)^2 / ((1 - eta)(1 - gamma_(n-1))) - 1) * max(|Y[i]|, min-normalized)

    Exact: the float section's rules, a slice holding NaN or +inf (all NaN) and X[i] = -inf (+0)."""
    if (fast := fast_bounds.softmax(data)) is not None:  # the same values, block by block (issue 21)
        return fast
    x = data.x()
    axis = int(data.attrs.get("axis", -1)) % max(x.ndim, 1)
    fmt, u = data.fmt, data.fmt.u
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        poisoned = (np.isnan(x) | (x == np.inf)).any(axis=axis, keepdims=True)
        top = np.max(np.where(finite, x, -np.inf), axis=axis, keepdims=True)
        d = np.where(finite, np.abs(x - top), 0.0)
        term = (1 + exp_relative_error(-d, fmt)) * np.exp(u * d) - 1
        weights = np.where(finite, np.abs(data.expected.astype(np.float64)), 0.0)
        eta = (1 + 2 * u) * np.sum(weights * term, axis=axis, keepdims=True)
        g = gamma(x.shape[axis] - 1, u)
        growth = (1 + term) * (1 + u) ** 2 / ((1 - eta) * (1 - g)) - 1
        growth = np.where((eta < 1) & (g < 1), growth, np.inf)
    exact = np.broadcast_to(poisoned, x.shape) | (x == -np.inf)
    return growth * np.maximum(data.magnitude, fmt.min_normal), exact, f" with n = {x.shape[axis]}"


def _batch_normalization(data: NodeData) -> RuleResult:
    """Derived (batch_normalization.md links a batchnorm_acc.md that is not published) for the two usual
    algorithms: the text's order, scale * (X - mean) / sqrt(var + eps) + B, six roundings (sqrt halves the
    one under it), within gamma_6 |k (X - mean)| + u|Y| with k = scale / sqrt(var + eps); and the folded one
    of the runtimes, X * k + (B - mean * k), within gamma_5 (|k X| + |k mean| + |B|) + u|Y|. One more rounding
    for parameters of another type than Y (the T/T1/T2 of the float section), and one u min-normalized per
    rounding for results below the normal range:

        gamma_7 (|k X| + |k mean| + |B|) + u |Y| + 7u min-normalized"""
    if (fast := fast_bounds.batch_normalization(data)) is not None:  # the same values, block by block
        return fast
    x = data.x(0)
    scale, bias, mean, var = (data.x(k) for k in range(1, 5))
    shape = [1] * x.ndim
    if x.ndim > 1:
        shape[1] = x.shape[1]
    eps = float(np.float32(data.attrs.get("epsilon", 1e-5)))
    with np.errstate(all="ignore"):
        k = (scale / np.sqrt(var + eps)).reshape(shape)
        terms = np.abs(k * x) + np.abs(k * mean.reshape(shape)) + np.abs(bias.reshape(shape))
    u, fmt = data.fmt.u, data.fmt
    introduced = gamma(7, u) * terms + u * data.magnitude + 7 * u * fmt.min_normal
    return introduced, False, ""


def _range(data: NodeData) -> RuleResult:
    """The text's formula Y[i] = S + i * D (range.md, "Numerical Accuracy (-- IGNORE --)") evaluated in the
    type: i * D rounded, then + S rounded (or one fused rounding): |Y[i] - exact| <= gamma_2 (|S| + i|D|),
    plus 2u min-normalized below the normal range. Exact: Y[0] = S. An implementation that accumulates
    Y[i] = Y[i-1] + D drifts beyond it (about i u (|S| + i|D|))."""
    start, delta = float(data.x(0)), float(data.x(2))
    i = np.arange(data.expected.size, dtype=np.float64).reshape(data.expected.shape)
    u = data.fmt.u
    introduced = gamma(2, u) * (abs(start) + i * abs(delta)) + 2 * u * data.fmt.min_normal
    return introduced, i == 0, ""


def _lstm(data: NodeData) -> RuleResult:
    """The draft states only "activation functions required accuracy is 1 ULP". Its reading here
    (reference/lstm.py): the recurrence as the composition of the profile's operators, each within its own
    accuracy in the runtime and correctly rounded in the reference; ``run_bounds`` propagates, step by step,
    rigorous absolute bounds on their distance (sums of products at gamma_(n+2), activations within 1 ulp
    and their Lipschitz constants, one rounding per + and *, cross terms included). The output is found
    among Y, Y_h, Y_c by its bits (the larger bound where two are identical)."""
    run_bounds = _kernel_function(data, "run_bounds")
    if run_bounds is None:
        raise AccuracyError("LSTM: its kernel has no run_bounds")
    expected = data.expected
    found = None
    for value, bound in run_bounds(data.node, data.inputs):
        if value is not None and value.shape == expected.shape and value.dtype == expected.dtype:
            same = (value == expected) | (np.isnan(value) & np.isnan(expected))
            if np.all(same & (np.signbit(value) == np.signbit(expected))):
                found = bound if found is None else np.maximum(found, bound)
    if found is None:
        return np.full(expected.shape, np.inf), False, ""
    steps = data.x(0).shape[1 if data.attrs.get("layout", 0) else 0]
    return found, False, f" over {steps} step(s)"


_EXP_HYPOTHESIS = (
    'tanh_acc.md: "let us suppose that the exp function has a 2ε accuracy in the interval [−1, 0]" …'
)
_RULES: dict[str, Rule] = {
    "Exp": Rule("err_rel(exp(x))·max(|Y|, min-normalized)", _EXP_HYPOTHESIS, _exp),
    "Tanh": Rule(
        "u/(1+2w)·((2+(17+n)(1+u)w−2w²)/((1+w)(1−u)−(8.5+n/2)u(1+u)w)·(1+u)+1−w), w = e^(−2|x|)",
        "tanh_acc.md, bound of its most permissive reference algorithm, (exp(X)−exp(−X))/(exp(X)+exp(−X))",
        _tanh,
    ),
    "Sigmoid": Rule(
        "((1+E)^[x<0]·(1+u)/((1−E/2)(1−u))−1)·max(|Y|, min-normalized), E = err_rel(exp(−|x|))",
        "derived: sigmoid_acc.md's split algorithm with " + _EXP_HYPOTHESIS,
        _sigmoid,
    ),
    "Log": Rule(
        "(1+u)(γ_2·|k·ln2| + 4u·|ln m|) + u·|Y|, x = m·2^k",
        "derived: k·ln2 + ln m with ln m at 2ε, the hypothesis of " + _EXP_HYPOTHESIS,
        _log,
    ),
    "Pow": Rule(
        "(e^Δz·(1+err_rel(exp))−1)·max(|C|, min-normalized), z = B·ln|A|",
        "derived: exp(B·ln|A|) in the type, with Log's bound and " + _EXP_HYPOTHESIS,
        _pow,
    ),
    "LeakyRelu": Rule(
        "γ_2·max(|α·X|, min-normalized) for X < 0, exact otherwise",
        'derived: accuracy.md Example 4, "|IE(f)| ≤ |x|×|y|×u", α rounded to the type',
        _leaky_relu,
    ),
    "Softmax": Rule(
        "((1+e_i)(1+u)²/((1−η)(1−γ_(n−1)))−1)·max(|Y|, min-normalized)",
        "derived: softmax.md's e^(X−M)/Σe^(X−M) with " + _EXP_HYPOTHESIS,
        _softmax,
    ),
    "BatchNormalization": Rule(
        "γ_7·(|k·X| + |k·mean| + |B|) + u·|Y|, k = scale/√(var+ε)",
        "derived: batch_normalization.md's formula, text order or folded, accuracy.md's u per rounding",
        _batch_normalization,
    ),
    "LSTM": Rule(
        "step-by-step propagated bound: γ_(n+2)·Σ|a·b| per gate sum, 1 ulp + Lipschitz per activation, "
        "u per + and ×",
        "derived: lstm.md's recurrence as a composition of the profile's operators; \"Activation functions "
        'required accuracy is 1 ULP"',
        _lstm,
    ),
    "Range": Rule(
        "γ_2·(|S| + i·|D|)",
        "derived: range.md's Y[i] = S + i·D evaluated in the type, accuracy.md's u per rounding",
        _range,
    ),
}

# The reference kernels' own error, in ulps of the output: half an ulp (correctly rounded) except Softmax,
# whose float16/float32 path is within 0.5 ulp + 2^-21 ulp (reference/softmax.py): the 1 ulp.
_REFERENCE_ULPS = {"Softmax": 1.0}
