"""Running nodes and whole graphs on the reference kernels."""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from sonnx_check import stop
from sonnx_check.profile import profile_operators
from sonnx_check.reference import constant_cache
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError, ReferenceError, UnsupportedOperatorError
from sonnx_check.reference.nan_policy import DEFAULT, Readings
from sonnx_check.view import subgraph_attributes

Kernel = Callable[[onnx.NodeProto, Sequence["np.ndarray | None"], "int | None"], list[np.ndarray]]


# Operators outside the profile that the comparison still runs, as exact operators (GRAPH.operator reports
# them statically; they have no declaration to name their kernel): each module states its reading.
OUTSIDE_PROFILE = {"Identity": "reference.identity:run"}


@functools.lru_cache(maxsize=1)
def kernels() -> dict[str, Kernel]:
    """Operators of the default ONNX domain with a reference kernel: the declarations name them
    (``kernel = "reference.max:run"`` in rules/<Op>.toml), so no table is kept here, except for the few
    operators outside the profile (``OUTSIDE_PROFILE``)."""
    declared = {op.op_type: op.kernel for op in profile_operators().values() if op.kernel}
    table = {}
    for op_type, kernel in {**OUTSIDE_PROFILE, **declared}.items():
        module, _, name = kernel.partition(":")
        table[op_type] = getattr(importlib.import_module(f"sonnx_check.{module}"), name)
    return table


def supported_ops() -> frozenset[str]:
    return frozenset(kernels())


def _kernel_for(node: onnx.NodeProto) -> Kernel | None:
    if node.domain not in ("", "ai.onnx"):
        return None
    if subgraph_attributes(node):
        return None  # control flow is outside the profile and is not executed
    return kernels().get(node.op_type)


def _label(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


@functools.cache
def _takes_readings(kernel: Kernel) -> bool:
    """Whether a kernel depends on a reading the user chooses (MaxPool's NaN): it then has a ``readings``
    parameter; every other kernel keeps the signature (node, inputs, max_elements)."""
    return "readings" in inspect.signature(kernel).parameters


@functools.cache
def _declared_attribute_types(op_type: str) -> Mapping[str, int]:
    """The type ONNX declares for each attribute of a default-domain operator (the same in every version of
    the profile's operators)."""
    try:
        schema = onnx.defs.get_schema(op_type)
    except onnx.defs.SchemaError:
        return {}
    # pybind's enum converts with int() (AttributeProto's numbers); onnx's stub does not declare __int__
    return {name: int(a.type) for name, a in schema.attributes.items()}  # type: ignore[call-overload]


def _check_attribute_types(node: onnx.NodeProto) -> None:
    """An attribute of another type than its operator declares (dilations given as one int) has no
    semantics to compute: refused here, before a kernel reads it (the static rules report it). The
    comparison meets such a node before any runtime refuses the model when it learns a size from the
    reference (compare/revealed_sizes.py)."""
    declared = _declared_attribute_types(node.op_type)
    for attribute in node.attribute:
        expected = declared.get(attribute.name)
        if expected is not None and attribute.type != expected:
            given = onnx.AttributeProto.AttributeType.Name(attribute.type)
            wanted = onnx.AttributeProto.AttributeType.Name(expected)
            raise OutsideProfileError(
                f"{node.op_type}: attribute '{attribute.name}' is {given}, the operator declares {wanted}"
            )


def run_node(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    *,
    max_elements: int | None = None,
    readings: Readings = DEFAULT,
) -> list[np.ndarray]:
    """The node's outputs in order (one per non-empty output name the operator defines), under the
    specification readings ``readings`` (the defaults: seed 003's)."""
    stop.check()  # a comparison runs kernels node after node: the place a recorded signal stops it
    kernel = _kernel_for(node)
    if kernel is None:
        raise UnsupportedOperatorError([_label(node)])
    _check_attribute_types(node)
    if _takes_readings(kernel):
        return kernel(node, inputs, max_elements, readings=readings)  # type: ignore[call-arg]
    return kernel(node, inputs, max_elements)


def run_node_with_abs(
    node: onnx.NodeProto,
    inputs: Sequence[np.ndarray | None],
    *,
    max_elements: int | None = None,
    readings: Readings = DEFAULT,
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """``run_node``, and sum |a b| (+ |c|) of a sum-of-products node (Conv, MatMul, Gemm: its kernel module
    has ``run_with_abs``) whose float inputs are all finite and whose two factors (inputs 0 and 1) are not
    all zeros, None otherwise. On such data the node usually differs from a runtime in the last bits, so its
    bound is then evaluated: the kernel gives that sum with the outputs more cheaply than its ``run_abs``
    after them (same values: both are the module's abs_sum). An all-zero factor makes every product zero
    (the result is exact, no bound is asked); an all-zero bias (the exports' Conv B) does not. A choice of
    cost only: the outputs and the sum are the same either way."""
    kernel = _kernel_for(node)
    together = None if kernel is None else getattr(sys.modules.get(kernel.__module__), "run_with_abs", None)
    if (
        together is None
        or _takes_readings(kernel)
        or not all(
            v.dtype.kind == "f" and _finite(v) and (position > 1 or _not_all_zero(v))
            for position, v in enumerate(inputs)
            if v is not None
        )
    ):
        return run_node(node, inputs, max_elements=max_elements, readings=readings), None
    stop.check()
    outputs, magnitude = together(node, inputs, max_elements)
    return outputs, magnitude


def _finite(value: np.ndarray) -> bool:
    """Whether every value is finite; kept for a model's constant (constant_cache)."""
    return constant_cache.derived(value, "finite", lambda: bool(np.isfinite(value).all()))


def _not_all_zero(value: np.ndarray) -> bool:
    """Whether one value is not zero (NaN counts as not zero); kept for a model's constant."""
    return constant_cache.derived(value, "not all zero", lambda: bool(value.any()))


def evaluate(
    model: onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    *,
    max_elements: int | None = None,
    readings: Readings = DEFAULT,
) -> dict[str, np.ndarray]:
    """Every graph output by name, computed by the reference kernels from ``inputs`` (graph inputs by name;
    initializers come from the model and may be overridden by an input of the same name)."""
    graph = model.graph
    missing_kernels = [_label(n) for n in graph.node if _kernel_for(n) is None]
    if missing_kernels:
        raise UnsupportedOperatorError(missing_kernels)
    values: dict[str, np.ndarray] = {}
    for tensor in graph.initializer:
        ensure_within_budget(f"initializer '{tensor.name}'", tensor.dims, max_elements)
        values[tensor.name] = numpy_helper.to_array(tensor)
    values.update({name: np.asarray(value) for name, value in inputs.items()})
    absent = [i.name for i in graph.input if i.name not in values]
    if absent:
        raise ReferenceError(f"no value given for graph input(s) {', '.join(absent)}")
    for index, node in enumerate(graph.node):
        unknown = [name for name in node.input if name and name not in values]
        if unknown:
            raise ReferenceError(
                f"node {index} ({node.name or node.op_type}) reads '{unknown[0]}' before any node computes it"
            )
        feeds = [values[n] if n else None for n in node.input]
        outputs = run_node(node, feeds, max_elements=max_elements, readings=readings)
        for name, value in zip(node.output, outputs, strict=False):
            if name:
                values[name] = value
    unproduced = [o.name for o in graph.output if o.name not in values]
    if unproduced:
        raise ReferenceError(f"graph output(s) {', '.join(unproduced)} are computed by no node")
    return {o.name: values[o.name] for o in graph.output}
