"""A bound evaluated on one node's data (``Tolerance``), the data a bound sees (``NodeData``) and an
operator's bound as its declaration names it (``Rule``): the shapes shared by the accuracy engine
(accuracy.py), the classification (outcomes.py) and the operators' bounds (compare/ops/<op>.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import onnx

from sonnx_check.compare.judging.floats import Format, ulp
from sonnx_check.reference.fast_bounds import DeferredRule


class AccuracyError(ValueError):
    """An override that cannot be used, or an operator without a bound; the message is one line."""


@dataclass(frozen=True, eq=False)
class Tolerance:
    """A bound evaluated on one node's data. ``allowed``: the largest |actual - expected| accepted per
    element (float64, broadcastable to the output), introduced error plus the reference's own rounding;
    ``exact``: where the comparison is bit for bit, sign of zero included (a scalar or a boolean array);
    ``text``: the bound as a report prints it. ``values`` is ``allowed`` as given; a ``deferred`` bound
    gives None there and computes ``allowed`` only when something reads it (the judging needs it only at
    the elements its certified floor does not decide: compare/judging/elements.py)."""

    values: np.ndarray | float | None
    exact: np.ndarray | bool
    text: str
    # sum of products without an override, reading (c): which infinities an implementation in the output
    # type may reach by an intermediate overflow (evaluated only where the runtime returned one)
    overflow: OverflowRoom | None = None
    # sum of products, reading (d): where an IEEE evaluation may meet an infinite term with an overflowed one
    # of the other sign (evaluated only where the runtime returned NaN against an infinite reference)
    opposite: OppositeRoom | None = None
    deferred: DeferredBound | None = None
    # other evaluations of the text an operator admits (Gemm's alpha and beta), asked at non-finite values
    alternatives: AlternativeRoom | None = None

    @functools.cached_property
    def allowed(self) -> np.ndarray | float:
        """The allowed difference of every element (computed once, on first use, for a deferred bound)."""
        if self.deferred is not None:
            return self.deferred.at(None)
        assert self.values is not None
        return self.values


@dataclass(frozen=True)
class DeferredBound:
    """An operator's bound evaluated where the judging needs it (compare/judging/elements.py). ``floor(where,
    out)``: a proven lower bound of the allowed values, positive, at a slice of whole rows of ``unit``
    elements (as the output lies in memory) or at flat indices, valid where the reference is finite (so
    |actual - expected| at most that is within the bound whatever its exact value); ``at(flat)``: the
    allowed values, float64, at the flat indices ``flat`` of the output, bit for bit what the whole-tensor
    evaluation gives there; ``at(None)``: all of them, in the output's shape."""

    floor: Callable[[slice | np.ndarray, np.ndarray | None], np.ndarray]
    at: Callable[[np.ndarray | None], np.ndarray]
    unit: int = 1


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


class AlternativeRoom(Protocol):
    """Evaluations of the text other than the reference's that an operator admits element by element (Gemm:
    alpha and beta applied to an operand, to the product or to the sum, and C not read when beta = 0;
    compare/ops/gemm_evaluations.py). Asked only where the reference or the runtime is not finite and
    neither the bound nor readings (c) and (d) accept the runtime's value."""

    def admits(self, flat: np.ndarray, actual: np.ndarray) -> np.ndarray:
        """Per element of ``flat`` (indices into the output), whether ``actual`` (the runtime's values
        there) is what one of these evaluations gives: the same infinity or NaN, or a finite value within
        the bound of that evaluation's own exact result."""
        ...

    def nonfinite(self, flat: np.ndarray) -> np.ndarray:
        """Per element of ``flat``, the non-finite values these evaluations reach, as int8 bits:
        OVERFLOW_POS (+inf) | OVERFLOW_NEG (-inf) | 4 (NaN)."""
        ...

    def tightened(self, introduced: Callable[[np.ndarray], np.ndarray]) -> AlternativeRoom:
        """The same evaluations under a configured bound: ``introduced(magnitude)`` bounds the error of a
        finite value, with the annex's bound, the smaller of the two (as ``Bound`` applies an override)."""
        ...


# -- the data a rule sees ---------------------------------------------------------------------------------
@dataclass
class NodeData:
    """One node's inputs and reference output, as float64, with what every rule needs."""

    node: onnx.NodeProto
    inputs: list[np.ndarray | None]
    expected: np.ndarray
    fmt: Format
    attrs: dict[str, Any]  # onnx.helper.get_attribute_value's, by attribute name
    abs_sum: np.ndarray | None = None  # sum |a b| (+ |c|) when the caller has it (sum of products)
    overflow: OverflowRoom | None = None  # set by the sum-of-products rule (Tolerance.overflow)
    opposite: OppositeRoom | None = None  # set by the sum-of-products rule (Tolerance.opposite)
    alternatives: AlternativeRoom | None = None  # set by an operator's rule (Tolerance.alternatives)

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

    reference_ulps: float = 0.5  # the reference kernel's own error bound, in ulps of the output
    # the same bound, evaluated only where needed (Tolerance.deferred), for the data it applies to
    deferred: Callable[[NodeData], DeferredRule | None] | None = None

    def __call__(self, data: NodeData) -> RuleResult:
        return self.evaluate(data)


def attributes(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
