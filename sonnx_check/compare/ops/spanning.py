"""Known runtime departures that span two nodes (their declarations name these predicates): a float16
intermediate kept in float32 (the next node computes on the producer's unrounded result, rounded once),
and a BatchNormalization folded into the Conv before it. Both read the producer of an input through
``DivergenceCase.upstream`` (judging/upstream.py): in context the runtime's values, end to end SONNX's. Only
one level up: a chain of three widened nodes is explained at its second node, not its third."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sonnx_check.compare.judging.floats import gamma
from sonnx_check.compare.judging.known_departures import DivergenceCase, Upstream, attribute, none
from sonnx_check.compare.ops import kernel_module_function
from sonnx_check.compare.ops.div import same_floats
from sonnx_check.compare.ops.products import term_count


def _widened(values: Sequence[np.ndarray | None]) -> list[np.ndarray | None]:
    return [v.astype(np.float32) if v is not None and v.dtype == np.float16 else v for v in values]


def _run(node: object, inputs: Sequence[np.ndarray | None], position: int) -> np.ndarray | None:
    from sonnx_check import reference

    try:
        outputs = reference.run_node(node, list(inputs))  # type: ignore[arg-type]
    except reference.ReferenceError:
        return None
    return np.asarray(outputs[position]) if position < len(outputs) else None


def _float16_producer(case: DivergenceCase, position: int) -> Upstream | None:
    value = case.inputs[position] if position < len(case.inputs) else None
    if value is None or value.dtype != np.float16 or case.upstream is None:
        return None
    found = case.upstream(position)
    if found is None or not all(v is None or v.dtype != np.float32 for v in found.inputs):
        return None
    return found


def float16_widened_chain(case: DivergenceCase) -> np.ndarray:
    """float16: the node computed in float32 on its producer's float32 result (the producer also computed
    in float32 from its own inputs) and rounded to float16 once, where SONNX rounds each node's result to
    float16. Tried for each float16 input's producer, and for all of them at once."""
    if case.actual.dtype != np.float16 or case.upstream is None:
        return none(case)
    wide: dict[int, np.ndarray] = {}
    for position in range(len(case.inputs)):
        producer = _float16_producer(case, position)
        if producer is None:
            continue
        result = _run(producer.node, _widened(producer.inputs), producer.position)
        if result is not None and result.dtype == np.float32:
            wide[position] = result
    explained = np.zeros(case.mismatch.shape, dtype=bool)
    choices = [{k} for k in wide] + ([set(wide)] if len(wide) > 1 else [])
    for chosen in choices:
        inputs = _widened(case.inputs)
        for k in chosen:
            inputs[k] = wide[k]
        result = _run(case.node, inputs, case.output_position)
        if result is None or result.shape != case.actual.shape:
            continue
        with np.errstate(over="ignore"):
            explained |= same_floats(case.actual, result.astype(np.float16))
    return explained


def batchnorm_folded_into_conv(case: DivergenceCase) -> np.ndarray:
    """A BatchNormalization whose X is a Conv's output, computed as one convolution with the folded weights
    W' = W s and bias B' = B s + (bias - mean s), s = scale / sqrt(var + epsilon), each rounded to the type:
    the element is within gamma_(n+1) M' + n u min-normalized of the SONNX convolution on W' and B' (M' its
    sum of |terms|), or the same NaN or infinity."""
    from sonnx_check.compare.ops.reduced_precision import special_or_within

    if case.actual.dtype.kind != "f" or case.upstream is None or len(case.inputs) < 5:
        return none(case)
    conv = case.upstream(0)
    if conv is None or conv.node.op_type != "Conv" or conv.position != 0 or len(conv.inputs) < 2:
        return none(case)
    x, w = conv.inputs[0], conv.inputs[1]
    b = conv.inputs[2] if len(conv.inputs) > 2 else None
    scale, bias, mean, var = case.inputs[1:5]
    if x is None or w is None or scale is None or bias is None or mean is None or var is None:
        return none(case)
    dtype = case.actual.dtype
    epsilon = float(attribute(case.node, "epsilon", 1e-5))
    with np.errstate(all="ignore"):
        s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
        folded_w = (w.astype(np.float64) * s.reshape(-1, *([1] * (w.ndim - 1)))).astype(dtype)
        shift = bias.astype(np.float64) - mean.astype(np.float64) * s
        base = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
        folded_b = (base * s + shift).astype(dtype)
    inputs = [x, folded_w, folded_b]
    result = _run(conv.node, inputs, 0)
    magnitude_of = kernel_module_function("Conv", "run_abs")
    if result is None or magnitude_of is None or result.shape != case.actual.shape:
        return none(case)
    magnitude = np.asarray(magnitude_of(conv.node, inputs, None), np.float64)
    n = term_count(conv.node, inputs)
    u = float(np.finfo(dtype).eps) / 2
    allowed = float(gamma(n + 1, u)) * magnitude + n * u * float(np.finfo(dtype).tiny)
    return special_or_within(case.actual, result, allowed)
