"""Generated from the declarations, with numpy warnings as errors: every operator's reference kernel, for each
type its declaration accepts, runs every edge pattern a comparison feeds it (the generic ones of the type and
the operator's own) and either returns outputs of the declared types or refuses with a one-line reason; and a
type outside the declaration is refused, never computed. A kernel that crashes, warns (an overflow numpy
reports on a user's terminal) or answers for a type the profile does not have fails here, whichever operator
it is: nothing in this file names one."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper

from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.inputs import datasets
from sonnx_check.profile import TYPE_NAMES, Operator, profile_operators
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.errors import ReferenceError as Refusal
from sonnx_check.reference.execute import run_node

OPERATORS = profile_operators()
KERNELS = sorted(op for op in OPERATORS if OPERATORS[op].kernel)
NAMES = {proto: name for name, proto in TYPE_NAMES.items()}
BUDGET = 10**6  # elements: a comparison always runs the kernels under a budget
# Types a refused-type probe may use, first one the operator does not declare wins.
OUTSIDE = ["bool", "complex64", "complex128"]
Fed = list[tuple[int, np.dtype, tuple[int, ...]]]  # (input position, dtype, shape) of the inputs given data


def _numpy(proto: int) -> np.dtype | None:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(proto))
    except (KeyError, TypeError, ValueError):
        return None
    return dtype if dtype.kind in "biufc" else None  # no string, no packed 4-bit or 2-bit storage


def _actuals(op: Operator, side: str) -> list[tuple[str, dict[str, Any]]]:
    """(role, example tensor) per actual of the example, a variadic role expanded."""
    tensors = op.example["tensors"]
    params = op.inputs if side == "input" else op.outputs
    found = []
    for param in params:
        value = tensors.get(param.name)
        for tensor in value if isinstance(value, list) else [value] if value is not None else []:
            found.append((param.name, tensor))
    return found


def _typed_roles(op: Operator) -> set[str]:
    """The roles that share the first actual's type in the example: they take each declared type together."""
    actuals = _actuals(op, "input") or _actuals(op, "output")
    first = actuals[0][1]["type"]
    return {role for role, t in _actuals(op, "input") + _actuals(op, "output") if t["type"] == first}


def _declared_types(op: Operator) -> list[int]:
    if not _actuals(op, "input"):  # Constant: its attribute, not a declared type, decides the output's
        return [TYPE_NAMES[_actuals(op, "output")[0][1]["type"]]]
    roles = _typed_roles(op)
    shared = frozenset.intersection(*(op.types.get(role, frozenset()) for role in roles))
    return sorted(t for t in shared if _numpy(t) is not None)


def _node(op: Operator, proto: int) -> tuple[onnx.NodeProto, Fed, dict[int, np.ndarray]]:
    """The example node with the shared roles of type ``proto``; which positions take edge data (``fed``) and
    the fixed values the example gives (a shape, axes: the model's constants)."""
    roles, ins = _typed_roles(op), []
    fed: Fed = []
    fixed: dict[int, np.ndarray] = {}
    for position, (role, tensor) in enumerate(_actuals(op, "input")):
        name = f"{role}_{position}"
        ins.append(name)
        dtype = _numpy(proto if role in roles else TYPE_NAMES[tensor["type"]])
        assert dtype is not None
        if "value" in tensor and role not in roles:
            fixed[position] = np.array(tensor["value"], dtype).reshape(tensor["shape"])
        else:
            fed.append((position, dtype, tuple(tensor["shape"])))
    outs = [f"{role}_{i}" for i, (role, _) in enumerate(_actuals(op, "output"))]
    return helper.make_node(op.op_type, ins, outs, **op.example.get("attributes", {})), fed, fixed


def _datasets(op: Operator, node: onnx.NodeProto, fed: Fed, fixed: dict) -> Iterator[tuple[str, list]]:
    width = len(node.input)
    for pattern in datasets.edge_pattern_names([dtype for _, dtype, _ in fed]) if fed else ["none"]:
        rng = np.random.default_rng(7)
        arrays: list[np.ndarray | None] = [fixed.get(i) for i in range(width)]
        for position, dtype, shape in fed:
            arrays[position] = datasets.edge_array(pattern, dtype, shape, rng, position)
        yield pattern, arrays
    for pattern in edge_values.specific_names(op.op_type):
        built = edge_values.build_specific(pattern, node, fed, np.random.default_rng(7))
        if built is not None:
            yield pattern, [built.get(i, fixed.get(i)) for i in range(width)]


def _run(node: onnx.NodeProto, arrays: list[np.ndarray | None]) -> list[np.ndarray]:
    return run_node(node, arrays, max_elements=BUDGET)


CASES = [(op, NAMES[t]) for op in KERNELS for t in _declared_types(OPERATORS[op])]


@pytest.mark.parametrize(("op_type", "type_name"), CASES)
def test_every_declared_type_runs_every_edge_pattern_or_refuses_with_a_reason(op_type: str, type_name: str):
    op = OPERATORS[op_type]
    node, fed, fixed = _node(op, TYPE_NAMES[type_name])
    roles, computed = _typed_roles(op), 0
    warnings.simplefilter("error")  # building the data and running the kernel: a numpy warning fails
    for pattern, arrays in _datasets(op, node, fed, fixed):
        try:
            outputs = _run(node, arrays)
        except Refusal as refusal:
            reason = str(refusal)
            assert reason and "\n" not in reason, f"{pattern}: a refusal names its reason on one line"
            continue
        computed += 1
        for output, (role, tensor) in zip(outputs, _actuals(op, "output"), strict=False):
            expected = _numpy(TYPE_NAMES[type_name] if role in roles else TYPE_NAMES[tensor["type"]])
            assert output.dtype == expected, f"{pattern}: {role} is {output.dtype}, declared {expected}"
    example_type = (_actuals(op, "input") or _actuals(op, "output"))[0][1]["type"]
    if type_name == example_type:
        assert computed, "the declaration's own example type computes on no edge pattern at all"


@pytest.mark.parametrize("op_type", [op for op in KERNELS if _actuals(OPERATORS[op], "input")])
def test_a_type_outside_the_declaration_is_refused(op_type: str) -> None:
    op = OPERATORS[op_type]
    declared = frozenset.union(*(op.types.get(role, frozenset()) for role in _typed_roles(op)))
    outside = next(TYPE_NAMES[name] for name in OUTSIDE if TYPE_NAMES[name] not in declared)
    node, fed, fixed = _node(op, outside)
    arrays = [fixed.get(i) for i in range(len(node.input))]
    for position, dtype, shape in fed:
        arrays[position] = np.ones(shape, dtype)
    warnings.simplefilter("error")
    with pytest.raises(OutsideProfileError):
        _run(node, arrays)
