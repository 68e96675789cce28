"""General restrictions GR1-GR4, applied to every node (SONNX general_restrictions.md)."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import onnx
from onnx import defs

from sonnx_check.checks.attributes import default_text
from sonnx_check.checks.graph import declared_tensors
from sonnx_check.view import ModelView, elem_type_name
from sonnx_check.violation import Violation
from sonnx_check.vocabulary import refined_ops

_SPARSE_ATTRIBUTES = (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS)

# Constant's attributes are alternatives (exactly one of value, value_float, ...), not defaults.
GR4_EXEMPT = frozenset({"Constant"})


def no_sparse_tensors(view: ModelView) -> Iterator[Violation]:
    for sparse in view.graph.sparse_initializer:
        name = sparse.values.name or sparse.indices.name
        yield Violation(f"sparse initializer '{name}': sparse tensors are not supported", tensor=name)
    for index, node in enumerate(view.nodes):
        for attribute in node.attribute:
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
    for name, node, role in declared_tensors(view):
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


@functools.lru_cache(maxsize=1024)
def _type_groups(schema: defs.OpSchema) -> tuple[tuple[str, tuple[int, ...], tuple[int, ...], bool], ...]:
    """For each type variable shared by several formal parameters: (variable, input positions, output
    positions, whether the last input is variadic and homogeneous)."""
    groups = []
    for constraint in schema.type_constraints:
        var = constraint.type_param_str
        ins = tuple(i for i, p in enumerate(schema.inputs) if p.type_str == var)
        outs = tuple(i for i, p in enumerate(schema.outputs) if p.type_str == var)
        variadic = (
            bool(schema.inputs) and schema.inputs[-1].option == defs.OpSchema.FormalParameterOption.Variadic
        )
        if len(ins) + len(outs) > 1 or (variadic and ins and ins[-1] == len(schema.inputs) - 1):
            groups.append((var, ins, outs, variadic))
    return tuple(groups)


def _actual_positions(formal: tuple[int, ...], n_formal: int, n_actual: int, variadic: bool) -> list[int]:
    positions = [p for p in formal if p < n_actual]
    if variadic and formal and formal[-1] == n_formal - 1:
        positions.extend(range(n_formal, n_actual))
    return positions


def no_implicit_conversion(view: ModelView, index: int) -> Iterator[Violation]:
    schema = view.schema(index)
    if schema is None or (not view.domain(index) and view.nodes[index].op_type in refined_ops("GR3")):
        return
    node = view.nodes[index]
    for var, ins, outs, variadic in _type_groups(schema):
        names = [node.input[p] for p in _actual_positions(ins, len(schema.inputs), len(node.input), variadic)]
        names += [node.output[p] for p in outs if p < len(node.output)]
        typed = {}
        for name in names:
            tt = view.type_of(name) if name else None
            if tt is not None and tt.elem_type:
                typed[name] = tt.elem_type
        if len(set(typed.values())) > 1:
            listing = ", ".join(f"'{n}': {elem_type_name(t)}" for n, t in typed.items())
            yield Violation(
                f"tensors bound to type {var} have different types ({listing}); "
                "SONNX forbids implicit type conversion",
                actual={n: elem_type_name(t) for n, t in typed.items()},
            )


def no_default_values(view: ModelView, index: int) -> Iterator[Violation]:
    node = view.nodes[index]
    if node.op_type in GR4_EXEMPT or (not view.domain(index) and node.op_type in refined_ops("GR4")):
        return
    schema = view.schema(index)
    if schema is None:
        return
    yield from missing_attributes(view, index, schema, only_defaulted=True)


@functools.lru_cache(maxsize=1024)
def _attribute_defaults(schema: defs.OpSchema) -> tuple[tuple[str, str | None], ...]:
    """Every attribute of a schema, sorted, with the default its absence stands for: read once per schema
    (the binding builds a new dict of attributes on each access)."""
    return tuple((name, default_text(attribute)) for name, attribute in sorted(schema.attributes.items()))


def missing_attributes(
    view: ModelView, index: int, schema: defs.OpSchema, *, only_defaulted: bool = False
) -> Iterator[Violation]:
    """Shared by GR4 and the operator rules that refine it (MaxPool.R2): one finding naming the attributes
    of the resolved operator version that the node leaves out.

    GR4 forbids *default values*, so with ``only_defaulted`` an attribute counts only when its absence means
    a default value (a schema default or one ONNX documents in prose); an optional attribute whose absence
    means "not used" (Shape's end, Split's num_outputs) is not a default. MaxPool.R2 asks for every attribute.
    """
    present = view.attributes(index)
    missing = [
        (name, default)
        for name, default in _attribute_defaults(schema)
        if name not in present and not (only_defaulted and default is None)
    ]
    if not missing:
        return
    names = [name for name, _ in missing]
    applied = "; ".join(f"{n}={d}" if d is not None else f"{n}: no default" for n, d in missing)
    scope = "every attribute" if not only_defaulted else "every attribute that has a default"
    yield Violation(
        f"attribute(s) {', '.join(names)} not set explicitly; SONNX requires {scope} of "
        f"{schema.name}-{schema.since_version} to be set (defaults applied: {applied})",
        attribute=names[0],
        actual=names,
    )
