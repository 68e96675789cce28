"""Accuracy-aware comparison: how far a runtime's output may stray from the SONNX reference, and what it did.

The accuracy annexes (``spec/sonnx/ops/*/*_acc.md``, ``guidelines/accuracy.md``) do not fix one accuracy; they
bound the error an implementation *introduces*, and leave the reference algorithm to the implementor
(docs/profile-decisions.md#accuracy-classes). So every comparison here says which bound it used. The API:

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
    judge(expected, actual, bound, dtype) -> Judged   classify and the divergent elements (not accepted) of
                    a float output in one pass, bit for bit theirs (judging.py; a deferred bound's values
                    are computed only where its floor does not decide)

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
  n u / (1 - n u), n the number of terms; sound for any summation order, blocked or FMA
  (docs/profile-decisions.md#accuracy-classes; matmul_acc.md, whose own formula assumes the naive order). sum
  |a b| (+ |c|) is the kernel module's ``run_abs``: one float32 product of the magnitudes, rounded up to a
  rigorous upper bound (``_abs_sum``, compare/ops/products.py, the bound Conv, Gemm and MatMul declare).
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
  (d) an infinite term meeting an overflowed one (issue 17;
      docs/readings.md#sums-of-products-in-floating-point): the reference takes special values from the exact
      products, so FLT_MAX * 1.3631 + (-inf) is -inf; an IEEE 754 evaluation rounding that product to float32
      gets +inf, and NaN. Both are the text's semantics: NaN against a reference +-inf is within where finite
      terms of the other sign can overflow, as a product or a partial sum (``OppositeRoom``), counted apart as
      ``product-overflow``. Under an override too (it is the text's value, not an error).
  (e) Gemm with alpha or beta other than 1 (issue 29; docs/readings.md#gemm-attributes-in-the-draft): alpha
      applied to an operand, to each product or to the sum, beta to C or, when 0, C not read; every IEEE
      evaluation of these is the text's. Where the reference or the runtime is not finite, the runtime's
      value is accepted where one of them gives it (``Tolerance.alternatives``, compare/ops/
      gemm_evaluations.py), counted apart as ``alternative-evaluation``. Under an override too.
- transcendental / composite: one documented formula per operator (its declared bound, ``bound = ...`` in
  the ``[comparison]`` table of rules/<Op>.toml, a ``Rule`` in compare/ops/<op>.py), the annex's own where
  it gives one (Tanh: the most permissive of its reference algorithms), derived where it does not: each
  derivation names the reference algorithm, counts its IEEE 754 roundings (accuracy.md: each introduces at
  most u|r|, or u * min-normalized below the normal range) and takes the one hypothesis the annexes state on
  an elementary function (tanh_acc.md: exp has a 2 eps relative accuracy on [-1, 0], (2 + n/2) eps on
  [-2^n, -1], 2.5 eps on [0, 1], (2 + (n+1)/2) eps on [1, 2^n]).

**Overrides** tighten, never loosen: the effective bound is min(override, annex) element by element (so the
annex's bound stays the outer limit of every finding), and an override of an exact or correctly rounded
operator, which has no tighter bound, is refused.

u = 2^-p (p = 11, 24, 53 for float16, float, double), eps = 2u, min-normalized the smallest normal number.

The engines this module puts together: floats.py (formats, ulp, gamma, the exp hypothesis), tolerance.py (the
data a bound sees and the evaluated bound), outcomes.py (the classification), facts.py (the declarations'
references, resolved when a comparison runs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check.compare.judging.element_outcomes import (
    ALTERNATIVE,
    BEYOND,
    DIVERGENT,
    FLUSHED,
    MATCH,
    OUTCOMES,
    OVERFLOW,
    PRODUCT_OVERFLOW,
    SPECIAL,
    WITHIN,
    Classification,
    Instance,
    classify,
    outcome_masks,
)
from sonnx_check.compare.judging.elements import judge
from sonnx_check.compare.judging.floats import Format, exp_relative_error, float_format, gamma, ulp
from sonnx_check.compare.judging.tolerance import (
    AccuracyError,
    DeferredBound,
    NodeData,
    OppositeRoom,
    OverflowRoom,
    Rule,
    RuleResult,
    Tolerance,
    attributes,
)
from sonnx_check.compare.ops import facts
from sonnx_check.profile import profile_operators

__all__ = [  # the API above, wherever its engine lives
    "ALTERNATIVE", "BEYOND", "CLASSES", "CORRECTLY_ROUNDED", "DIVERGENT", "EXACT", "FLUSHED", "MATCH",
    "OUTCOMES", "OVERFLOW", "PRODUCT_OVERFLOW", "SPECIAL", "SUM_OF_PRODUCTS", "TRANSCENDENTAL", "WITHIN",
    "AccuracyError", "Bound", "Classification", "Format", "Instance", "NodeData", "OppositeRoom",
    "OverflowRoom", "Override", "Rule", "RuleResult", "Tolerance", "accuracy_class", "bound_for",
    "check_override", "classify", "compare_node", "exp_relative_error", "float_format", "gamma", "judge",
    "outcome_masks", "parse_override", "ulp",
]  # fmt: skip

EXACT = "exact"
CORRECTLY_ROUNDED = "correctly-rounded"
SUM_OF_PRODUCTS = "sum-of-products"
TRANSCENDENTAL = "transcendental"
CLASSES = (EXACT, CORRECTLY_ROUNDED, SUM_OF_PRODUCTS, TRANSCENDENTAL)


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
        data = NodeData(node, list(inputs), expected, float_format(self.dtype), attributes(node), abs_sum)
        if self.override is None and self.rule.deferred is not None:
            deferred = self._deferred(data)
            if deferred is not None:
                return deferred
        return self._evaluated(data)

    def _evaluated(self, data: NodeData) -> Tolerance:
        """The bound on every element of one node's output."""
        expected = data.expected
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
        # reading (d) and the alternative evaluations are the text's IEEE semantics, not an error bound: they
        # hold under an override too (a finite value of an alternative within the smaller bound)
        alternatives = data.alternatives
        if alternatives is not None and self.override is not None:
            override, fmt = self.override, data.fmt
            alternatives = alternatives.tightened(lambda magnitude: override.introduced(magnitude, fmt))
        return Tolerance(allowed, exact, text, overflow, data.opposite, alternatives=alternatives)

    def _deferred(self, data: NodeData) -> Tolerance | None:
        """The bound as a floor and a way to compute its values where needed (``DeferredBound``), for a rule
        that has one and data it applies to (no override: the user's bound is evaluated everywhere). The
        values are ``_evaluated``'s bit for bit: the same operations element by element (the rule's
        deferred form promises that for the introduced error); no element is exact there."""
        assert self.rule.deferred is not None
        with np.errstate(all="ignore"):
            found = self.rule.deferred(data)
        if found is None:
            return None
        expected, fmt, reference_ulps, introduced_at = data.expected, data.fmt, self.reference_ulps, found.at

        def at(flat: np.ndarray | None) -> np.ndarray:
            if flat is not None and flat.size == 0:
                return np.empty(0)
            with np.errstate(all="ignore"):
                introduced = introduced_at(flat)
            undefined = np.isnan(introduced)
            if undefined.any():
                introduced = np.where(undefined, np.inf, introduced)
            e = expected if flat is None else expected.reshape(-1)[flat]
            allowed = ulp(e, fmt)
            allowed *= reference_ulps
            allowed += introduced
            return allowed.reshape(expected.shape) if flat is None else allowed

        text = f"{self.rule.formula}{found.detail} ({self.rule.source})"
        text = f"{text} + {reference_ulps:g} ulp for the reference's rounding"
        # allowed = ulp * reference_ulps + introduced >= introduced (adding a non-negative term rounds to no
        # less, and a NaN introduced error is +inf): the rule's floor is a floor of allowed as it is
        deferred = DeferredBound(found.floor, at, found.unit)
        return Tolerance(None, False, text, data.overflow, data.opposite, deferred, data.alternatives)


def bound_for(op_type: str, dtype: np.dtype | type | str, override: str | Override | None = None) -> Bound:
    """The bound of ``op_type`` for outputs of ``dtype``, from its declared accuracy class and, for the
    sum-of-products and transcendental/composite classes, its declared bound. ``override`` (text or parsed)
    tightens it; it is refused for an exact or correctly rounded operator, and ignored for integer and boolean
    outputs (always exact)."""
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
    rule = facts.bound(op_type)  # its declaration's bound (rules/<Op>.toml, [comparison])
    if rule is None:
        raise AccuracyError(f"{op_type}: no accuracy bound is defined for its class {accuracy!r}")
    return Bound(op_type, dtype, accuracy, rule, parsed, rule.reference_ulps)


def accuracy_class(op_type: str, dtype: np.dtype | type | str | None = None) -> str:
    """The declared class (``accuracy = ...`` in rules/<Op>.toml); for float outputs, ``float_accuracy``
    of its ``[comparison]`` where it declares one: Range declares exact, which holds for its int section,
    but its float section's value is the text's formula S + i*D evaluated in the type (range.md gives no
    accuracy: "(-- IGNORE --)"), which rounds: composite there."""
    op = profile_operators().get(op_type)
    if op is None or not getattr(op, "accuracy", None):
        raise AccuracyError(f"{op_type}: not an operator of the profile with a declared accuracy class")
    declared = op.float_accuracy() if dtype is not None and np.dtype(dtype).kind == "f" else op.accuracy
    if declared not in CLASSES:
        raise AccuracyError(f"{op_type}: unknown accuracy class {declared!r} in rules/{op_type}.toml")
    return declared


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


def compare_node(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    expected: np.ndarray,
    actual: np.ndarray,
    override: str | Override | None = None,
) -> Classification:
    """bound_for + evaluate + classify for one output of one node (its dtype is the reference's; a float
    output is classified in one pass, judging.judge)."""
    expected = np.asarray(expected)
    tolerance = bound_for(node.op_type, expected.dtype, override).evaluate(node, inputs, expected)
    if expected.dtype.kind == "f":
        return judge(expected, actual, tolerance, expected.dtype).classification
    return classify(expected, actual, tolerance, expected.dtype)


# -- the classes without a formula of their own -----------------------------------------------------------
def _no_rule(data: NodeData) -> RuleResult:  # pragma: no cover - exact classes never evaluate a rule
    return np.zeros(()), True, ""


_EXACT_RULE = Rule(
    "exact (bit for bit, NaN = NaN, sign of zero compared)",
    "docs/profile-decisions.md#accuracy-classes",
    _no_rule,
)
_CORRECTLY_ROUNDED_RULE = Rule(
    "correctly rounded (the IEEE 754 result, error ≤ u·|exact|, bit for bit)",
    'accuracy.md: "the introduced error is less or equal than |r|×ε/2 = |r|×u"; div_acc.md',
    _no_rule,
)
