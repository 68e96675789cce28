"""How a runtime's output is judged against the reference in the exported suite: the accuracy class, the
allowed difference per element, the non-finite results the readings accept, and the readings' words.

The same bound ``--compare`` uses (compare/judging/bounds.py: ``bound_for(...).evaluate(node, inputs,
expected)``),
written as data a runner without sonnx-check can apply:

- ``allowed`` (float64, the output's shape): the largest |actual - expected| accepted per element, 0 where the
  comparison is bit for bit (the sign of zero compared); an infinity counts as 2^(emax+1) of the output type.
- ``nonfinite`` (int8 bit set, the output's shape): where an infinity or NaN the bound's readings accept
  stands against a different reference value: 1 = +inf, 2 = -inf, 4 = NaN (sum of products, readings (c)
  intermediate overflow and (d) product overflow; Gemm's alternative evaluations). A finite value of Gemm
  with C not read (beta = 0) against a NaN reference is accepted by ``--compare`` only.
- a subnormal reference flushed to zero by the runtime is accepted for every class but exact (as
  ``outcome_masks`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.judging.tolerance import OVERFLOW_NEG, OVERFLOW_POS
from sonnx_check.operator_readings import Readings
from sonnx_check.profile import profile_operators

NOT_JUDGED = "not-judged"  # end to end through inexact operators: no bound is defined for the sum
POSITIVE_INFINITY, NEGATIVE_INFINITY, NAN = 1, 2, 4
_EXACT_WORDS = "exact: bit for bit, NaN = NaN (payload and sign ignored), sign of zero compared"
_FLUSH_WORDS = "a subnormal reference value flushed to ±0 by the runtime is accepted"
_SUM_OF_PRODUCTS_WORDS = (
    "sums of products read as IEEE 754 evaluation in the output type in any order: (b) the sign of a zero "
    "result is not compared; (c) an infinity (NaN where both signs can) is accepted where a partial sum can "
    "overflow (nonfinite bits 1, 2, 4); (d) NaN is accepted against a reference ±inf where finite terms of "
    "the other sign can overflow (bit 4); Gemm with alpha or beta other than 1: the infinities and NaN of "
    "alpha applied to an operand, a product or the sum and of C not read when beta = 0 (bits 1, 2, 4)"
)


@dataclass(frozen=True)
class Judgement:
    """One output on one dataset. ``allowed`` None: bit for bit (exact class, or an integer output)."""

    accuracy_class: str
    text: str
    readings: tuple[str, ...]
    allowed: np.ndarray | None = None
    nonfinite: np.ndarray | None = None

    @property
    def uniform(self) -> float | None:
        """The allowed difference when it is the same for every element (then no bound file is needed)."""
        if self.allowed is None:
            return 0.0
        flat = self.allowed.reshape(-1)
        if flat.size == 0:
            return 0.0
        first = flat[0]
        same = bool(np.all(flat == first)) or bool(np.all(np.isnan(flat)))
        return float(first) if same else None


def exact(text: str = _EXACT_WORDS, readings: tuple[str, ...] = ()) -> Judgement:
    return Judgement(accuracy.EXACT, text, readings)


def not_judged(why: str) -> Judgement:
    return Judgement(NOT_JUDGED, why, ())


def node_readings(op_type: str, chosen: Readings) -> tuple[str, ...]:
    """The readings of the texts a node's reference values rest on (printed in every case that has one)."""
    return tuple(
        f"{reading.label} '{value}': {reading.words(value)}" for reading, value in chosen.of(op_type)
    )


def judge_output(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    expected: np.ndarray,
    override: str | None,
    readings: Readings,
) -> Judgement:
    """The judgement of output ``expected`` of ``node`` run by the reference on ``inputs``, as
    ``localise.merge`` makes it."""
    texts = node_readings(node.op_type, readings)
    expected = np.asarray(expected)
    if expected.dtype.kind != "f" or node.op_type not in profile_operators():
        return exact(readings=texts)
    try:
        bound = accuracy.bound_for(node.op_type, expected.dtype, override)
    except accuracy.AccuracyError as exc:  # an inexact operator without a bound: nothing to judge with
        return not_judged(f"no accuracy bound: {exc}")
    if bound.accuracy == accuracy.EXACT:
        return exact(readings=texts)
    tolerance = bound.evaluate(node, inputs, expected)
    shape = expected.shape
    allowed = np.array(np.broadcast_to(np.asarray(tolerance.allowed, dtype=np.float64), shape))
    exact_mask = np.broadcast_to(np.asarray(tolerance.exact, dtype=bool), shape)
    allowed[exact_mask] = 0.0
    nonfinite = _nonfinite(expected, tolerance, exact_mask)
    words = [*texts, _FLUSH_WORDS]
    if bound.accuracy == accuracy.SUM_OF_PRODUCTS:
        words.append(_SUM_OF_PRODUCTS_WORDS)
    return Judgement(bound.accuracy, tolerance.text, tuple(words), allowed, nonfinite)


def _nonfinite(
    expected: np.ndarray, tolerance: accuracy.Tolerance, exact_mask: np.ndarray
) -> np.ndarray | None:
    """Readings (c) and (d) per element, as ``outcome_masks`` applies them to a runtime's infinity or NaN."""
    codes = np.zeros(expected.shape, dtype=np.int8)
    e = expected.astype(np.float64)
    flat_codes = codes.reshape(-1)
    if tolerance.overflow is not None:
        flat = np.flatnonzero(~exact_mask & ~np.isnan(e))
        if flat.size:
            signs = tolerance.overflow.signs(flat)
            positive = (signs & OVERFLOW_POS) > 0
            negative = (signs & OVERFLOW_NEG) > 0
            flat_codes[flat] |= np.where(positive, POSITIVE_INFINITY, 0).astype(np.int8)
            flat_codes[flat] |= np.where(negative, NEGATIVE_INFINITY, 0).astype(np.int8)
            flat_codes[flat] |= np.where(positive & negative, NAN, 0).astype(np.int8)
    if tolerance.opposite is not None:
        flat = np.flatnonzero(np.isinf(e))
        if flat.size:
            reached = tolerance.opposite.reachable(flat, e.reshape(-1)[flat] > 0)
            flat_codes[flat[reached]] |= NAN
    if tolerance.alternatives is not None:  # Gemm's alpha and beta placed elsewhere (their bits are these)
        flat = np.flatnonzero(~exact_mask)
        if flat.size:
            flat_codes[flat] |= tolerance.alternatives.nonfinite(flat).astype(np.int8)
    return codes if codes.any() else None
