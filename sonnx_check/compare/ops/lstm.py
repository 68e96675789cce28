"""LSTM's comparison facts (rules/LSTM.toml names them): its bound (propagated by the kernel module's
``run_bounds``) and the predicates of its known departures: gates that give numbers where SONNX is NaN
(onnxruntime), and the peephole input P ignored (OpenVINO)."""

from __future__ import annotations

import numpy as np

from sonnx_check.compare.judging.known_departures import DivergenceCase, none
from sonnx_check.compare.judging.tolerance import AccuracyError, NodeData, Rule, RuleResult
from sonnx_check.compare.ops import kernel_function as _kernel_function
from sonnx_check.compare.ops import kernel_module_function


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


BOUND = Rule(
    "step-by-step propagated bound: γ_(n+2)·Σ|a·b| per gate sum, 1 ulp + Lipschitz per activation, "
    "u per + and ×",
    "derived: lstm.md's recurrence as a composition of the profile's operators; \"Activation functions "
    'required accuracy is 1 ULP"',
    _lstm,
)


def number_where_nan(case: DivergenceCase) -> np.ndarray:
    if case.actual.dtype.kind != "f":
        return none(case)
    return np.isnan(case.expected) & ~np.isnan(case.actual)


_P = 7  # the peephole input's position


def peepholes_ignored(case: DivergenceCase) -> np.ndarray:
    """The elements that equal, within LSTM's propagated bound, the SONNX recurrence recomputed with P = 0
    (the same special value where not finite). Explains nothing where the node has no P, P is all zeros (the
    runtime's reading is then the text's), or the recomputation cannot be made."""
    from sonnx_check import reference  # as reduced_precision.py: the kernels load with the comparison
    from sonnx_check.compare.ops.reduced_precision import special_or_within

    operands = [None if v is None else np.asarray(v) for v in case.inputs]
    peepholes = operands[_P] if len(operands) > _P else None
    if case.actual.dtype.kind != "f" or peepholes is None or not np.any(peepholes != 0):
        return none(case)
    run_bounds = kernel_module_function(case.node.op_type, "run_bounds")
    if run_bounds is None:
        return none(case)
    zeroed = [*operands[:_P], np.zeros_like(peepholes), *operands[_P + 1 :]]
    try:
        pairs = run_bounds(case.node, zeroed)
    except reference.ReferenceError:
        return none(case)
    if case.output_position >= len(pairs):
        return none(case)
    value, bound = pairs[case.output_position]
    if value is None or np.shape(value) != case.actual.shape:
        return none(case)
    return special_or_within(case.actual, np.asarray(value), np.asarray(bound, np.float64))
