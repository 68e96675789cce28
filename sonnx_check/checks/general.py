"""General restrictions GR1-GR4 (SONNX general_restrictions.md).

They restrict "all operators of the SONNX profile": a node whose operator is outside the profile
(GRAPH.operator or GRAPH.domain already rejects it) gets no GR finding, which would only repeat that verdict
in other words and invite a --fix of a node that has to go anyway. What is not a node's (sparse
initializers, graph inputs and outputs) is always checked."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import onnx
from onnx import defs

from sonnx_check.checks.explicit_attributes import missing_attributes
from sonnx_check.checks.graph import declared_tensors
from sonnx_check.profile import listed_operators, profile_operators
from sonnx_check.view import ModelView, elem_type_name
from sonnx_check.violation import Violation
from sonnx_check.vocabulary import refined_ops

_SPARSE_ATTRIBUTES = (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS)

# Constant's attributes are alternatives (exactly one of value, value_float, ...), not defaults.
GR4_EXEMPT = frozenset({"Constant"})


@functools.lru_cache(maxsize=1)
def _profile_op_types() -> frozenset[str]:
    """Every operator of the profile: specified, or listed by REQ OP 000 without a text yet."""
    return frozenset(profile_operators()) | listed_operators()


def in_profile(view: ModelView, index: int) -> bool:
    """Whether node ``index``'s operator is one the general restrictions apply to."""
    return not view.domain(index) and view.op_types[index] in _profile_op_types()


def no_sparse_tensors(view: ModelView) -> Iterator[Violation]:
    for sparse in view.graph.sparse_initializer:
        name = sparse.values.name or sparse.indices.name
        yield Violation(f"sparse initializer '{name}': sparse tensors are not supported", tensor=name)
    for index, attributes in enumerate(view.attribute_lists):
        if not in_profile(view, index):
            continue
        for attribute in attributes:
            if attribute.type in _SPARSE_ATTRIBUTES:
                yield Violation(
                    f"attribute '{attribute.name}' holds a sparse tensor",
                    node=index,
                    attribute=attribute.name,
                )
    for name, declared in view.declared.items():
        if declared.sparse:
            yield Violation(f"tensor '{name}' is declared as a sparse tensor", tensor=name)


def explicit_types(view: ModelView) -> Iterator[Violation]:
    graph_outputs = set(view.graph_outputs)
    for name, node, role in declared_tensors(view):
        if node is not None and not in_profile(view, node) and name not in graph_outputs:
            continue  # the output of an operator outside the profile: GRAPH.operator's finding says it all
        declared = view.declared.get(name)
        if declared is not None and declared.elem_type != 0:
            continue
        inferred = view.inferred.get(name)
        hint = f" (type inference gives {inferred.type_name})" if inferred and inferred.elem_type else ""
        yield Violation(
            f"{role} '{name}' has no declared element type{hint}",
            node=node,
            tensor=name,
            expected=inferred.type_name if inferred and inferred.elem_type else None,
        )


TypeGroup = tuple[str, tuple[int, ...], tuple[int, ...], int | None]
_VARIADIC = defs.OpSchema.FormalParameterOption.Variadic


@functools.lru_cache(maxsize=1024)
def _type_groups(schema: defs.OpSchema) -> tuple[TypeGroup, ...]:
    """For each type variable shared by several formal parameters: (variable, input positions, output
    positions, the position from which every further actual input is bound to it when the last formal
    input is variadic and of this variable, else None). Read once per schema: each access to a schema's
    inputs builds its formal parameters anew."""
    groups = []
    formal_inputs, formal_outputs = schema.inputs, schema.outputs
    variadic = bool(formal_inputs) and formal_inputs[-1].option == _VARIADIC
    for constraint in schema.type_constraints:
        var = constraint.type_param_str
        ins = tuple(i for i, p in enumerate(formal_inputs) if p.type_str == var)
        outs = tuple(i for i, p in enumerate(formal_outputs) if p.type_str == var)
        variadic_tail = variadic and bool(ins) and ins[-1] == len(formal_inputs) - 1
        if len(ins) + len(outs) > 1 or variadic_tail:
            groups.append((var, ins, outs, len(formal_inputs) if variadic_tail else None))
    return tuple(groups)


@functools.lru_cache(maxsize=4096)
def _bound_type_groups(
    schema: defs.OpSchema, n_inputs: int, n_outputs: int
) -> tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]:
    """_type_groups for a node of ``n_inputs`` inputs and ``n_outputs`` outputs: (variable, the positions of
    the actual inputs and outputs bound to it), a variadic input's extra actuals included."""
    groups = []
    for var, ins, outs, variadic_from in _type_groups(schema):
        inputs = [p for p in ins if p < n_inputs]
        if variadic_from is not None:
            inputs += range(variadic_from, n_inputs)
        groups.append((var, tuple(inputs), tuple(p for p in outs if p < n_outputs)))
    return tuple(groups)


def no_implicit_conversion(view: ModelView, index: int) -> Iterator[Violation]:
    schema = view.schema(index)
    if schema is None or not in_profile(view, index) or view.op_types[index] in refined_ops("GR3"):
        return
    inputs, outputs = view.inputs[index], view.outputs[index]
    for var, input_positions, output_positions in _bound_type_groups(schema, len(inputs), len(outputs)):
        typed = {}
        for names, positions in ((inputs, input_positions), (outputs, output_positions)):
            for position in positions:
                name = names[position]
                tt = view.type_of(name) if name else None
                if tt is not None and tt.elem_type:
                    typed[name] = tt.elem_type
        if len(typed) > 1 and len(set(typed.values())) > 1:
            listing = ", ".join(f"'{n}': {elem_type_name(t)}" for n, t in typed.items())
            yield Violation(
                f"tensors bound to type {var} have different types ({listing}); "
                "SONNX forbids implicit type conversion",
                actual={n: elem_type_name(t) for n, t in typed.items()},
            )


def no_default_values(view: ModelView, index: int) -> Iterator[Violation]:
    op_type = view.op_types[index]
    if op_type in GR4_EXEMPT or not in_profile(view, index) or op_type in refined_ops("GR4"):
        return
    schema = view.schema(index)
    if schema is None:
        return
    yield from missing_attributes(view, index, schema, only_defaulted=True)
