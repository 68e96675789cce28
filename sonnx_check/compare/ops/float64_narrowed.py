"""FLOAT64-AS-SATURATED-FLOAT32 (rules/Max.toml declares it for every operator with a float64 type): a
runtime with no float64 kernels converts float64 tensors to float32 on load, saturating (OpenVINO's CPU plugin
measured: -inf and -1e300 both become -3.4028235e38, NaN stays NaN), computes the node in float32 and converts
its outputs back, saturating again (Exp(+inf) = 3.4028235e38). SONNX computes in binary64."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, known_departures, none
from sonnx_check.compare.ops.div import same_floats

_LARGEST = float(np.finfo(np.float32).max)
# Operators whose float32 result is exact given the narrowed operands: the runtime's element must be the
# narrowed recomputation bit for bit. The others round in float32 (a kernel of its own, another summation
# order), so their element may lie a few float32 ulps from the recomputation.
_EXACT = frozenset(
    {
        "Abs",
        "Neg",
        "Relu",
        "Max",
        "MaxPool",
        "Concat",
        "Flatten",
        "Reshape",
        "Unsqueeze",
        "Slice",
        "Less",
        "Where",
        "Clip",
        "ArgMax",
        "Pad",
        "Shape",
    }
)
_ID = "FLOAT64-AS-SATURATED-FLOAT32"
_ROUNDING_ULPS = 64.0  # float32 ulps of slack for a rounding operator: far below binary64's own differences


def saturated(values: np.ndarray) -> np.ndarray:
    """float64 values as the runtime reads them: NaN kept, everything else clipped to float32's finite range
    (infinities included) and rounded to float32."""
    with np.errstate(invalid="ignore", over="ignore"):
        clipped = np.where(np.isnan(values), values, np.clip(values, -_LARGEST, _LARGEST))
    return clipped.astype(np.float32)


def _narrowed_inputs(case: DivergenceCase) -> list[np.ndarray] | None:
    """The node's inputs as the runtime reads them (float64 ones saturated to float32); None when no input is
    float64 or one is unknown."""
    inputs = list(case.inputs)
    if any(value is None for value in inputs) or not any(np.asarray(v).dtype == np.float64 for v in inputs):
        return None
    return [saturated(np.asarray(v)) if np.asarray(v).dtype == np.float64 else np.asarray(v) for v in inputs]


def _in_float32_behaviours(case: DivergenceCase) -> np.ndarray:
    """Elements another of the operator's departures explains in the float32 computation the runtime does
    (OpenVINO's Exp(NaN) = +inf, a float32 partial sum overflowing), its result then saturated back: the
    node's float32 case is rebuilt from the saturated inputs, the runtime's element read in float32, where
    +-3.4028235e38 may be an infinity saturated on the way out. Only elements those departures do not explain
    in the float64 case itself: a runtime computing in binary64 (onnxruntime's MaxPool returning the other
    zero) is not said to narrow. An integer output (MaxPool's Indices) is compared as the runtime gave it,
    against the reference's on the saturated operands: -1e300 read as -3.4028235e38, float32's lowest, is
    the window OpenVINO designates by its channel's first element."""
    from sonnx_check import reference

    inputs = _narrowed_inputs(case)
    integral = case.actual.dtype.kind in "iu"  # MaxPool's Indices, ArgMax: read as they are
    if inputs is None or not (integral or case.actual.dtype == np.float64):
        return none(case)
    entries = [e for e in known_departures() if e.id != _ID and case.node.op_type in e.operators]
    wanted = case.mismatch.copy()
    for entry in entries:
        wanted &= ~entry.explains(case)
    if not wanted.any():
        return wanted
    try:
        outputs = reference.run_node(case.node, list(inputs))
    except reference.ReferenceError:
        return none(case)
    if case.output_position >= len(outputs) or np.shape(outputs[case.output_position]) != case.actual.shape:
        return none(case)
    if integral:
        expected = np.asarray(outputs[case.output_position]).astype(case.actual.dtype)
        mismatch = case.actual != expected
        narrowed = DivergenceCase(case.node, case.output_position, expected, case.actual, mismatch, inputs)
        found = none(case)
        for entry in entries:
            found = found | entry.explains(narrowed)
        return found & wanted
    expected = np.asarray(outputs[case.output_position]).astype(np.float32)
    with np.errstate(over="ignore"):  # a runtime's value beyond float32 reads as inf: none is explained
        read = case.actual.astype(np.float32)
    at_limit = np.abs(read) == np.float32(_LARGEST)
    found = none(case)
    for actual in (read, np.where(at_limit, np.copysign(np.float32(np.inf), read), read)):
        with np.errstate(invalid="ignore"):
            same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
            mismatch = ~(same | (np.isnan(actual) & np.isnan(expected)))
        narrowed = DivergenceCase(case.node, case.output_position, expected, actual, mismatch, inputs)
        for entry in entries:
            found = found | entry.explains(narrowed)
    return found & wanted


def _narrowed_result(case: DivergenceCase) -> np.ndarray | None:
    """The node recomputed by the reference on the narrowed operands, its float32 output saturated and widened
    back to the output's type (None when no operand is float64, one is unknown or the reference refuses)."""
    from sonnx_check import reference

    narrowed = _narrowed_inputs(case)
    if narrowed is None:
        return None
    try:
        outputs = reference.run_node(case.node, narrowed)
    except reference.ReferenceError:
        return None
    if case.output_position >= len(outputs):
        return None
    computed = np.asarray(outputs[case.output_position])
    if computed.dtype == np.float32:
        computed = saturated(computed.astype(np.float64)).astype(np.float64)
    if computed.shape != case.actual.shape:
        return None
    return computed.astype(case.actual.dtype)


def float64_as_saturated_float32(case: DivergenceCase) -> np.ndarray:
    """The element equals the node computed in float32 on saturated operands, its result saturated and
    widened back (bit for bit for an exact operator; for one that rounds, a float32 value within 64 float32
    ulps of it), where SONNX's float64 result differs."""
    computed = _narrowed_result(case)
    if computed is None:
        return none(case)
    actual = case.actual
    if actual.dtype.kind != "f":
        same = np.asarray(actual == computed)
        return same | _in_float32_behaviours(case) if (case.mismatch & ~same).any() else same
    same = same_floats(actual, computed)
    if case.node.op_type not in _EXACT:
        with np.errstate(invalid="ignore", over="ignore"):
            scale = np.maximum(np.abs(computed), float(np.finfo(np.float32).tiny))
            slack = _ROUNDING_ULPS * np.float64(np.finfo(np.float32).eps) * scale
            # a float32 result widened: a value with bits below float32's precision was computed in binary64
            as_float32 = actual == actual.astype(np.float32).astype(np.float64)
            near = np.abs(actual - computed) <= slack
            same |= np.isfinite(actual) & np.isfinite(computed) & as_float32 & near
    left = case.mismatch & ~same
    return same | _in_float32_behaviours(case) if left.any() else same
