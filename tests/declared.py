"""Models built from the operator declarations (rules/<Op>.toml): the conforming example each declaration
states, and, for every rule, a violating variant derived from the rule's vocabulary kind (or stated in the
entry as ``violating = { ... }`` where a kind cannot derive one, as for code checks).

An override may set ``attributes``, drop ``remove_attributes``, merge ``tensors`` (per role: type, shape,
value; a list for a variadic role replaces it), or drop optional inputs with ``remove``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from builders import model
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.catalogue import RuleEntry
from sonnx_check.profile import TYPE_NAMES, Operator
from sonnx_check.view import resolve_schema

Override = Mapping[str, Any]
_STRANGE_TYPES = ("bfloat16", "bool", "string", "complex64", "int8", "uint64", "double", "float")


def opset_for(op: Operator) -> int:
    """An opset that resolves the operator to a version the profile accepts (22 where it does)."""
    latest = onnx.defs.onnx_opset_version()
    for opset in (op.example.get("opset"), 22, *range(latest, 0, -1)):
        if opset is None:
            continue
        schema = resolve_schema(op.op_type, "", opset)
        if schema is not None and schema.since_version in op.equivalent_versions:
            return opset
    raise AssertionError(f"no opset resolves {op.op_type} to one of {op.equivalent_versions}")


def _array(spec: Mapping[str, Any]) -> np.ndarray:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(TYPE_NAMES[spec["type"]])
    shape = tuple(spec["shape"])
    value = spec["value"]
    if isinstance(value, list):
        return np.array(value).astype(dtype).reshape(shape)
    return np.full(shape, value).astype(dtype)


def merged(op: Operator, override: Override | None) -> dict[str, Any]:
    """The example with ``override`` applied (deep copies: declarations are shared)."""
    example = copy.deepcopy(dict(op.example))
    override = override or {}
    attributes = {**example.get("attributes", {}), **override.get("attributes", {})}
    for name in override.get("remove_attributes", ()):
        attributes.pop(name, None)
    tensors = example.get("tensors", {})
    for role, change in override.get("tensors", {}).items():
        if isinstance(change, list) or not isinstance(tensors.get(role), dict):
            tensors[role] = copy.deepcopy(change)
        else:
            tensors[role] = {**tensors[role], **change}
    for role in override.get("remove", ()):
        tensors.pop(role, None)
    return {"attributes": attributes, "tensors": tensors, "opset": example.get("opset")}


def build(op: Operator, override: Override | None = None) -> onnx.ModelProto:
    spec = merged(op, override)
    tensors = spec["tensors"]
    graph_inputs, initializers, graph_outputs = [], [], []

    def bind(role: str, variadic: bool, output: bool) -> list[str]:
        given = tensors.get(role)
        if given is None:
            return [""]
        items = given if isinstance(given, list) else [given]
        names = [f"{role}_{i}" for i in range(len(items))] if variadic else [role]
        for name, item in zip(names, items, strict=True):
            info = h.make_tensor_value_info(name, TYPE_NAMES[item["type"]], item["shape"])
            if output:
                graph_outputs.append(info)
            elif "value" in item:
                initializers.append(numpy_helper.from_array(_array(item), name))
            else:
                graph_inputs.append(info)
        return names

    inputs = [n for p in op.inputs for n in bind(p.name, p.variadic, False)]
    outputs = [n for p in op.outputs for n in bind(p.name, p.variadic, True)]
    while inputs and not inputs[-1]:
        inputs.pop()
    while outputs and not outputs[-1]:
        outputs.pop()
    node = h.make_node(op.op_type, inputs, outputs, name=op.op_type.lower(), **spec["attributes"])
    return model([node], graph_inputs, graph_outputs, initializers=initializers, opset=opset_for(op))


# -- violating variants derived from the vocabulary --------------------------------------------------------
def _tensor_roles(op: Operator, roles: list[str]) -> list[str]:
    return [r for r in roles if r in op.example.get("tensors", {})]


def _first_item(op: Operator, role: str) -> dict[str, Any]:
    given = op.example["tensors"][role]
    return copy.deepcopy(given[0] if isinstance(given, list) else given)


def _retyped(item: dict[str, Any], type_name: str) -> dict[str, Any]:
    item = dict(item, type=type_name)
    if "value" in item and type_name in ("bool", "string"):
        item["value"] = 1 if type_name == "bool" else "a"
    return item


def _set(op: Operator, role: str, item: dict[str, Any]) -> dict[str, Any]:
    given = op.example["tensors"][role]
    if isinstance(given, list):
        return {role: [item, *copy.deepcopy(given[1:])]}
    return {role: item}


def _reshaped(item: dict[str, Any], shape: list[int]) -> dict[str, Any]:
    item = dict(item, shape=shape)
    if isinstance(item.get("value"), list):
        flat = np.array(item["value"]).ravel()
        item["value"] = np.resize(flat, int(np.prod(shape))).tolist()
    return item


def _out_of_list(values: list[Any], among: list[Any] | None) -> Any:
    if among:
        return next(v for v in among if v not in values)
    if all(isinstance(v, str) for v in values):
        return "BOGUS"
    if all(isinstance(v, int) for v in values):
        return max(values) + 7
    return 12345.5


def derived_violation(op: Operator, entry: RuleEntry) -> Override:
    ((kind, params),) = entry.check.items()
    attributes = op.example.get("attributes", {})
    if kind == "same_shape":
        role = _tensor_roles(op, list(params))[-1]
        item = _first_item(op, role)
        shape = list(item["shape"]) or [1]
        return {"tensors": _set(op, role, _reshaped(item, [*shape[:-1], shape[-1] + 1]))}
    if kind == "broadcast_output":
        item = _first_item(op, params["output"])
        return {"tensors": {params["output"]: _reshaped(item, [*item["shape"][:-1], item["shape"][-1] + 1])}}
    if kind == "broadcastable":
        roles = _tensor_roles(op, list(params))
        tensors: dict[str, Any] = {}
        shapes = iter(([2, 3], [4, 3]))
        for role in roles:
            given = op.example["tensors"][role]
            items = copy.deepcopy(given if isinstance(given, list) else [given])
            items = [_reshaped(i, next(shapes, [3])) for i in items]
            tensors[role] = items if isinstance(given, list) else items[0]
        return {"tensors": tensors}
    if kind == "rank":
        role = params["role"] if isinstance(params["role"], str) else params["role"][0]
        item = _first_item(op, role)
        r = len(item["shape"])
        wanted = r + 1 if "max" in params or "equals" in params else max(params["min"] - 1, 0)
        shape = [1] * (wanted - r) + item["shape"] if wanted > r else item["shape"][r - wanted :]
        return {"tensors": _set(op, role, _reshaped(item, shape))}
    if kind == "scalar":
        role = list(params)[0]
        return {"tensors": _set(op, role, _reshaped(_first_item(op, role), [1]))}
    if kind == "present":
        return {"remove": [list(params)[0]]}
    if kind == "types":
        role, allowed = next(iter(op.types.items()))
        strange = next(t for t in _STRANGE_TYPES if TYPE_NAMES[t] not in allowed)
        return {"tensors": _set(op, role, _retyped(_first_item(op, role), strange))}
    if kind == "same_type":
        role = _tensor_roles(op, list(params))[-1]
        item = _first_item(op, role)
        allowed = op.types.get(role, frozenset(TYPE_NAMES.values()))
        other = next(
            (t for t, code in TYPE_NAMES.items() if code in allowed and t != item["type"]),
            next(t for t in _STRANGE_TYPES if t != item["type"]),
        )
        return {"tensors": _set(op, role, _retyped(item, other))}
    if kind == "attribute_in":
        return {"attributes": {params["attribute"]: _out_of_list(params["values"], params.get("among"))}}
    if kind == "attribute_range":
        if "min" in params:
            low = params["min"]
            return {"attributes": {params["attribute"]: low - 1 if isinstance(low, int) else low - 0.5}}
        if "max" in params:
            return {"attributes": {params["attribute"]: params["max"] + 1}}
        return {"attributes": {params["attribute"]: float("inf")}}
    if kind in ("ints_positive", "ints_non_negative"):
        values = list(attributes[params])
        values[0] = 0 if kind == "ints_positive" else -1
        return {"attributes": {params: values}}
    if kind == "length_per_spatial_axis":
        return {"attributes": {params["attribute"]: [*attributes[params["attribute"]], 1]}}
    if kind == "axis_in_range":
        r = len(_first_item(op, params["role"])["shape"])
        return {"attributes": {params["attribute"]: r + 1}}
    if kind == "attributes_explicit":
        return {"remove_attributes": [sorted(attributes)[-1]]}
    if kind == "constant_values":
        item = _first_item(op, params["role"])
        bad = {"nonzero": 0, "non_negative": -1, "positive": 0, "finite": float("inf")}.get(params["require"])
        if params["require"] == "not_minimum":
            bad = int(np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(TYPE_NAMES[item["type"]])).min)
        return {"tensors": _set(op, params["role"], dict(item, value=bad))}
    raise AssertionError(f"{entry.id}: kind {kind!r} derives no violation; state one as violating = {{...}}")


def violating_override(op: Operator, entry: RuleEntry) -> Override:
    return entry.raw.get("violating") or derived_violation(op, entry)
