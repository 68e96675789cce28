"""The survey's configurations, built from the operator declarations (rules/<Op>.toml via profile.py).

For each profile operator: one configuration per element type it declares for its data input (the input
admitting the most types; its output for an operator without inputs), on the declaration's example
(``[operator.example]``: attributes, shapes, the values of its integer parameters), and a few attribute
variants the text's own examples give (``[[operator.spec_example]]``: ArgMax's ``select_last_index = 1``,
LeakyRelu's alpha), on the first float type. A role follows the surveyed type where its declaration admits
it (Where's condition stays bool, ArgMax's Y int64). The reference runs each once on random data: the
values the edge battery observes a configuration from, as it observes a model's node in context.

Types numpy does not hold (bfloat16, string, the 2- and 4-bit integers, complex) are listed as not surveyed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from sonnx_check import reference
from sonnx_check.compare.inputs.datasets import random_array, seeded
from sonnx_check.errors import first_line
from sonnx_check.profile import TYPE_NAMES, Operator
from sonnx_check.view import resolve_schema

# the element types the survey runs, in the order its tables show them
SURVEYED_TYPES = (
    "float",
    "float16",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
)
_FIRST_FLOATS = ("float", "double", "float16")
ATTRIBUTE_VARIANTS = 3  # at most this many attribute variants per operator, from the text's examples
_IR_VERSION = 10


@dataclass
class Variant:
    """One configuration of the survey: an operator on one element type, with the example's attributes or
    a variant of them."""

    op_type: str
    type_name: str
    label: str  # "float", "float, select_last_index=1": what the tables show
    attributes: dict[str, Any]
    tensors: dict[str, Any]  # role -> {type, shape, value?} (a list for a variadic role)
    node: onnx.NodeProto = field(default_factory=onnx.NodeProto)
    inputs: list[np.ndarray | None] = field(default_factory=list)
    outputs: list[np.ndarray | None] = field(default_factory=list)


@dataclass
class OperatorPlan:
    """An operator's survey: its model (one node per variant), the variants the reference ran, and what
    was left out and why (type or variant -> reason)."""

    op_type: str
    opset: int | None
    variants: list[Variant] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    model: onnx.ModelProto | None = None


def primary_role(op: Operator) -> str | None:
    """The role whose types the survey walks: the input admitting the most types (the data, not Where's
    condition or Slice's starts), the first on a tie; the first output of an operator without inputs."""
    typed = [p.name for p in op.inputs if op.types.get(p.name)]
    if typed:
        return max(typed, key=lambda role: len(op.types[role]))  # max keeps the first of equals
    return next((p.name for p in op.outputs if op.types.get(p.name)), None)


def declared_type_names(op: Operator, role: str) -> list[str]:
    codes = op.types.get(role, frozenset())
    return [name for name, code in TYPE_NAMES.items() if code in codes]


def opset_for(op: Operator) -> int | None:
    """An opset resolving the operator to a version the profile accepts (22 where it does)."""
    latest = onnx.defs.onnx_opset_version()
    for opset in (op.example.get("opset"), 22, *range(latest, 0, -1)):
        if opset is None:
            continue
        schema = resolve_schema(op.op_type, "", int(opset))
        if schema is not None and schema.since_version in op.equivalent_versions:
            return int(opset)
    return None


def _retyped(op: Operator, tensors: Mapping[str, Any], type_name: str) -> dict[str, Any]:
    """The example's tensors with every role that admits ``type_name`` set to it."""
    out: dict[str, Any] = {}
    code = TYPE_NAMES[type_name]
    for role, given in tensors.items():
        follows = code in op.types.get(role, frozenset())
        items = copy.deepcopy(given if isinstance(given, list) else [given])
        if follows:
            for item in items:
                item["type"] = type_name
                if "value" in item and type_name == "bool":
                    item["value"] = 1
        out[role] = items if isinstance(given, list) else items[0]
    return out


def _array(item: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(TYPE_NAMES[item["type"]]))
    shape = tuple(int(d) for d in item["shape"])
    if "value" not in item and dtype.kind in "iu":
        # small positive integers: no division by zero, no negative exponent (data the profile excludes);
        # the battery replaces them by edge values where they are data
        return rng.integers(1, 4, size=shape).astype(dtype)
    if "value" not in item:
        return random_array(dtype, shape, rng)
    value = item["value"]
    with np.errstate(over="ignore", invalid="ignore"):
        if isinstance(value, list):
            return (
                np.array(value, dtype=np.float64 if dtype.kind == "f" else None).astype(dtype).reshape(shape)
            )
        return np.full(shape, value).astype(dtype)


def _node(op: Operator, variant: Variant, number: int, rng: np.random.Generator) -> None:
    """Fill ``variant.node`` and its input values (inputs named per variant: one model holds them all)."""
    names: list[str] = []
    values: list[np.ndarray | None] = []
    for param in op.inputs:
        given = variant.tensors.get(param.name)
        if given is None:
            names.append("")
            values.append(None)
            continue
        items = given if isinstance(given, list) else [given]
        for k, item in enumerate(items):
            names.append(f"v{number}_{param.name}" + (f"_{k}" if param.variadic else ""))
            values.append(_array(item, rng))
    while names and not names[-1]:
        names.pop()
        values.pop()
    outputs = [f"v{number}_{p.name}" if p.name in variant.tensors else "" for p in op.outputs]
    while outputs and not outputs[-1]:
        outputs.pop()
    variant.node = helper.make_node(
        op.op_type, names, outputs, name=f"{op.op_type} {variant.label}", **variant.attributes
    )
    variant.inputs = values


def _attribute_variants(op: Operator, primary_type: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(attributes, tensors) of the text's examples whose attributes differ from the declared example's,
    on the example's tensors where they fit, else the text example's own shapes (tried in that order)."""
    base = dict(op.example.get("attributes", {}))
    seen = {json.dumps(base, sort_keys=True, default=str)}
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for example in op.spec_examples:
        attributes = {**base, **dict(example.get("attributes", {}))}
        if not all(isinstance(v, (int, float, str, list)) for v in attributes.values()):
            continue  # a tensor attribute (Constant's value): the example's own
        key = json.dumps(attributes, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        own = {role: dict(item) for role, item in dict(example.get("inputs", {})).items()}
        for role, item in own.items():
            if not _integer_parameter(op, role):
                item.pop("value", None)
        example_tensors = dict(op.example.get("tensors", {}))
        fitted = {**example_tensors, **{r: i for r, i in own.items() if r not in example_tensors}}
        found.append((attributes, fitted))
        found.append((attributes, {**example_tensors, **own}))
    return found


def _integer_parameter(op: Operator, role: str) -> bool:
    codes = op.types.get(role, frozenset())
    integers = {
        TYPE_NAMES[n] for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    }
    return bool(codes) and codes <= integers


def plan_operator(
    op: Operator,
    *,
    seed: int,
    max_elements: int,
    readings: reference.Readings,
    types: Sequence[str] | None = None,
) -> OperatorPlan:
    """The operator's variants, each run once by the reference on random data (``types``: only those)."""
    plan = OperatorPlan(op.op_type, opset_for(op))
    role = primary_role(op)
    if role is None or plan.opset is None:
        plan.left_out["*"] = "its declaration gives no type or no ONNX version to survey"
        return plan
    declared = declared_type_names(op, role)
    for name in declared:
        if name not in SURVEYED_TYPES:
            plan.left_out[name] = "not surveyed: numpy holds no such element type"
    wanted = [t for t in SURVEYED_TYPES if t in declared and (types is None or t in types)]
    example_tensors = dict(op.example.get("tensors", {}))
    attributes = dict(op.example.get("attributes", {}))
    candidates: list[Variant] = [
        Variant(op.op_type, t, t, attributes, _retyped(op, example_tensors, t)) for t in wanted
    ]
    first_float = next((t for t in _FIRST_FLOATS if t in wanted), wanted[0] if wanted else None)
    if first_float is not None:
        added: set[str] = set()
        for variant_attributes, tensors in _attribute_variants(op, first_float):
            changed = {k: v for k, v in variant_attributes.items() if attributes.get(k) != v}
            label = first_float + ", " + ", ".join(f"{k}={_shown(v)}" for k, v in sorted(changed.items()))
            if label in added or len(added) >= ATTRIBUTE_VARIANTS:
                continue
            variant = Variant(op.op_type, first_float, label, variant_attributes,
                              _retyped(op, tensors, first_float))  # fmt: skip
            if _run(op, variant, len(plan.variants) + len(candidates), seed, max_elements, readings) is None:
                added.add(label)
                candidates.append(variant)
    for variant in candidates:
        if variant.node.op_type:  # already run (an attribute variant)
            plan.variants.append(variant)
            continue
        problem = _run(op, variant, len(plan.variants), seed, max_elements, readings)
        if problem is None:
            plan.variants.append(variant)
        else:
            plan.left_out[variant.label] = f"not surveyed: the reference cannot run it ({problem})"
    for number, variant in enumerate(plan.variants):  # input names by final position in the model
        _rename(variant, number)
    plan.model = _model(plan)
    return plan


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "[" + ",".join(_shown(v) for v in value) + "]"
    return str(value)


def _run(
    op: Operator, variant: Variant, number: int, seed: int, max_elements: int, readings: reference.Readings
) -> str | None:
    """Build the variant's node and run the reference on it: None, or why it cannot run."""
    rng = seeded(seed, "survey", op.op_type, variant.label)
    try:
        _node(op, variant, number, rng)
        results = reference.run_node(
            variant.node, variant.inputs, max_elements=max_elements, readings=readings
        )
    except reference.ReferenceError as exc:
        variant.node = onnx.NodeProto()
        return first_line(exc)
    except (ValueError, TypeError, KeyError, OverflowError) as exc:  # a declaration's value the type lacks
        variant.node = onnx.NodeProto()
        return first_line(exc)
    variant.outputs = [None if r is None else np.asarray(r) for r in results]
    return None


def _rename(variant: Variant, number: int) -> None:
    node = variant.node
    for names in (node.input, node.output):
        for k, name in enumerate(names):
            if name:
                names[k] = f"v{number}_" + name.split("_", 1)[1]


def _model(plan: OperatorPlan) -> onnx.ModelProto:
    """One model holding every variant's node, its inputs typed graph inputs (no initializer: the battery
    keeps an integer parameter's value because its declaration types it as one, and gives edge values to
    everything else)."""
    graph = onnx.GraphProto(name=f"sonnx-check survey {plan.op_type}")
    for variant in plan.variants:
        graph.node.append(variant.node)
        for name, value in zip(variant.node.input, variant.inputs, strict=False):
            if name and value is not None:
                element = helper.np_dtype_to_tensor_dtype(value.dtype)
                graph.input.append(helper.make_tensor_value_info(name, element, list(value.shape)))
        graph.output.extend(onnx.ValueInfoProto(name=n) for n in variant.node.output if n)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", plan.opset or 22)])
    model.ir_version = _IR_VERSION
    return model
