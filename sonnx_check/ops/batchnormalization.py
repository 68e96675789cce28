"""BatchNormalization rules that the shared vocabulary cannot state (ops/batchnormalization/
batch_normalization.md): inference mode only, epsilon > 0 and the per-channel parameters' shape. The other
rules are vocabulary entries of rules/BatchNormalization.toml.

Each rule stays silent when what it needs is unknown (a missing shape is GRAPH.shapes' finding, a wrong-typed
attribute MODEL.onnx's), so one defect gives one finding.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from sonnx_check.checks.attributes import get_float, get_int
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

_PARAMETERS = ("scale", "B", "input_mean", "input_var")


def inference_mode(view: ModelView, index: int) -> Iterator[Violation]:
    outputs = view.outputs[index]
    mode = get_int(view.attributes(index), "training_mode")
    if mode is not None and mode != 0:
        yield Violation(
            f"training_mode={mode}; SONNX BatchNormalization specifies inference mode only (training_mode=0)",
            attribute="training_mode",
            actual=mode,
            expected=0,
        )
    extra = [name for name in outputs[1:] if name]
    if extra:
        yield Violation(
            f"output(s) {', '.join(repr(n) for n in extra)} (running_mean, running_var) are given; they "
            "exist in training mode only, and SONNX BatchNormalization has the single output Y",
            tensor=extra[0],
            actual=extra,
        )


def epsilon_positive(view: ModelView, index: int) -> Iterator[Violation]:
    epsilon = get_float(view.attributes(index), "epsilon")
    if epsilon is not None and not epsilon > 0:
        shown = "NaN" if math.isnan(epsilon) else repr(epsilon)
        yield Violation(
            f"epsilon={shown}; SONNX BatchNormalization requires epsilon > 0 (it keeps the denominator "
            "sqrt(input_var + epsilon) away from zero)",
            attribute="epsilon",
            actual=epsilon,
            expected="> 0",
        )


def parameters_per_channel(view: ModelView, index: int) -> Iterator[Violation]:
    inputs = view.inputs[index]
    x = view.shape_of(inputs[0]) if inputs and inputs[0] else None
    if x is None or len(x) == 0:
        return  # unknown (GRAPH.shapes) or rank 0 (BatchNormalization.X.C2)
    channels = x[1] if len(x) >= 2 else 1
    for role, name in zip(_PARAMETERS, inputs[1:], strict=False):
        shape = view.shape_of(name) if name else None
        if shape is not None and shape != (channels,):
            yield Violation(
                f"{role} '{name}' has shape {list(shape)}; X '{inputs[0]}' has {channels} channel(s), so "
                f"SONNX BatchNormalization requires a 1-D {role} of {channels} element(s)",
                tensor=name,
                actual=list(shape),
                expected=[channels],
            )
