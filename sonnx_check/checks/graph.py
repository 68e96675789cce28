"""Graph-level rules: the operator set, domains, control flow, and the structure of the dataflow graph
(SONNX graph.md restrictions, REQ-TO-000, REQ-GR-000, REQ-FO-020)."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator

import onnx

from sonnx_check.profile import listed_operators, profile_operators
from sonnx_check.view import CONTROL_FLOW_OPS, ModelView, TensorType, resolve_schema
from sonnx_check.violation import Violation

LATEST_KNOWN_OPSET = onnx.defs.onnx_opset_version()


# The per-node rules below are written as one pass over the nodes: they do a dictionary lookup per node, and
# a generator call per node would cost more than the lookup on 100k-node models.


def operator_in_profile(view: ModelView) -> Iterator[Violation]:
    profile, listed = profile_operators(), listed_operators()
    for index, op_type in enumerate(view.op_types):
        if view.domain(index) or op_type in profile:
            continue  # a custom-domain operator is GRAPH.domain's finding
        if op_type in listed:
            yield Violation(
                f"operator {op_type} is listed by the SONNX profile (REQ OP 000) but has no published "
                "specification yet, so there are no exact semantics to check it against",
                node=index,
                actual=op_type,
                data={"profile_status": "listed-unspecified"},
            )
        else:
            yield Violation(
                f"operator {op_type} is not in the SONNX profile (not listed by REQ OP 000, "
                "no published specification)",
                node=index,
                actual=op_type,
                data={"profile_status": "outside"},
            )


def default_domain(view: ModelView) -> Iterator[Violation]:
    for index in range(len(view.nodes)):
        domain = view.domain(index)
        if domain:
            yield Violation(
                f"operator domain '{domain}' is not the default ONNX domain; "
                "custom operators are outside the SONNX profile",
                node=index,
                actual=domain,
                expected="",
            )


def no_control_flow(view: ModelView) -> Iterator[Violation]:
    for index, op_type in enumerate(view.op_types):
        subgraphs = view.subgraph_attributes(index)
        if subgraphs or op_type in CONTROL_FLOW_OPS:
            detail = f" (subgraph attributes: {', '.join(subgraphs)})" if subgraphs else ""
            yield Violation(
                f"control flow and subgraphs are not in the SONNX profile{detail}; "
                "subgraphs are not checked further",
                node=index,
                attribute=subgraphs[0] if subgraphs else None,
            )


def operator_version(view: ModelView, index: int) -> Iterator[Violation]:
    if view.domain(index):
        return
    problem = _version_problem(view.op_types[index], view.opset_version(index))
    if problem is not None:
        message, actual, expected = problem
        yield Violation(message, actual=actual, expected=list(expected))


@functools.lru_cache(maxsize=1024)
def _version_problem(op_type: str, imported: int | None) -> tuple[str, int, tuple[int, ...]] | None:
    """(message, actual, expected) when a default-domain node of ``op_type`` under opset ``imported`` is not
    of a version the profile specifies, else None: the same for every node of an operator, so decided once."""
    spec = profile_operators().get(op_type)
    if spec is None:
        return None
    if imported is not None and imported > LATEST_KNOWN_OPSET:
        # onnx resolves a too-new opset to the newest version it knows, which may not be what the model means.
        return (
            f"the model imports opset {imported}, newer than the installed onnx knows (opset "
            f"{LATEST_KNOWN_OPSET}), so the version of {op_type} it means cannot be determined",
            imported,
            spec.equivalent_versions,
        )
    schema = None if imported is None else resolve_schema(op_type, "", imported)
    if schema is None:
        return None
    version = schema.since_version
    if version in spec.equivalent_versions:
        return None
    basis = "" if spec.stated else " (the specification states no version; this is the assumed basis)"
    same = ", ".join(str(v) for v in spec.equivalent_versions)
    return (
        f"resolves to {op_type}-{version} (opset "
        f"{imported}), whose semantics differ from {op_type}-{spec.spec_version} "
        f"that the SONNX specification is written for{basis}; versions with the same semantics: {same}",
        version,
        spec.equivalent_versions,
    )


def acyclic(view: ModelView) -> Iterator[Violation]:
    remaining = _nodes_on_cycles(view)
    if remaining:
        shown = ", ".join(view.refs[i].label() for i in remaining[:5])
        more = f" and {len(remaining) - 5} more" if len(remaining) > 5 else ""
        yield Violation(
            f"the graph has a cycle through {len(remaining)} node(s): {shown}{more}",
            node=remaining[0],
            actual=remaining,
        )


def _nodes_on_cycles(view: ModelView) -> list[int]:
    """Kahn's algorithm over node-to-node edges; what never becomes ready lies on (or behind) a cycle."""
    if _in_order(view):
        return []  # every edge points forward: no cycle, and no graph of node-to-node edges to build
    indegree = [0] * len(view.nodes)
    successors: list[list[int]] = [[] for _ in view.nodes]
    for consumer, names in enumerate(view.inputs):
        for name in set(names):
            for producer in view.producers.get(name, ()):
                successors[producer].append(consumer)
                indegree[consumer] += 1
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    while ready:
        for nxt in successors[ready.popleft()]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return [i for i, d in enumerate(indegree) if d > 0]


def _in_order(view: ModelView) -> bool:
    """Whether every node reads only what earlier nodes produce (or the graph provides): the order ONNX
    requires and exporters write, decided in one pass."""
    producers = view.producers
    for consumer, names in enumerate(view.inputs):
        for name in names:
            for producer in producers.get(name, ()):
                if producer >= consumer:
                    return False
    return True


def single_assignment(view: ModelView) -> Iterator[Violation]:
    for name, producers in view.producers.items():
        is_source = name in view.graph_input_names or name in view.initializers
        if len(producers) > 1 or is_source:
            what = "graph input or initializer" if is_source else ""
            writers = ", ".join(view.refs[i].label() for i in producers)
            also = f" and it is also a {what}" if what else ""
            yield Violation(
                f"tensor '{name}' is assigned more than once: by {writers}{also}",
                node=producers[-1],
                tensor=name,
            )


def inputs_defined(view: ModelView) -> Iterator[Violation]:
    for index, names in enumerate(view.inputs):
        for name in names:
            if name and not view.is_defined(name):
                yield Violation(
                    f"reads tensor '{name}', which no node produces and which is "
                    "neither a graph input nor an initializer",
                    node=index,
                    tensor=name,
                )


def no_dead_nodes(view: ModelView) -> Iterator[Violation]:
    # A walk over nodes, from the producers of the graph outputs to the producers of their inputs: one
    # lookup per input read, and no set of tensor names (it would hold every tensor of a large model).
    live = [False] * len(view.nodes)
    pending = [producer for name in view.graph_outputs for producer in view.producers.get(name, ())]
    while pending:
        index = pending.pop()
        if live[index]:
            continue
        live[index] = True
        for name in view.inputs[index]:
            pending.extend(view.producers.get(name, ()))  # an empty name has no producer: it ends there
    for index, is_live in enumerate(live):
        if not is_live:
            yield Violation(
                "does not contribute to any graph output",
                node=index,
            )


def has_outputs(view: ModelView) -> Iterator[Violation]:
    if not view.graph_outputs:
        yield Violation(
            f"the graph declares no output, so it computes nothing ({len(view.nodes)} node(s), "
            f"{len(view.graph_inputs)} input(s))",
            actual=0,
        )


def static_explicit_shapes(view: ModelView) -> Iterator[Violation]:
    for name, node, role in declared_tensors(view):
        declared = view.declared.get(name)
        if declared is not None and declared.static_shape is not None:
            continue  # every dimension a size: the common case, decided without a look at each dimension
        problem = _shape_problem(declared)
        if problem is None:
            continue
        inferred = view.inferred.get(name)
        hint = inferred.static_shape if inferred is not None else None
        suffix = f"; shape inference gives {list(hint)}" if hint is not None else ""
        yield Violation(
            f"{role} '{name}' {problem}{suffix}",
            node=node,
            tensor=name,
            actual=list(declared.shape) if declared is not None and declared.shape is not None else None,
            expected=list(hint) if hint is not None else None,
        )


def _shape_problem(declared: TensorType | None) -> str | None:
    if declared is None or declared.shape is None:
        return "has no declared shape"
    for axis, dim in enumerate(declared.shape):
        if isinstance(dim, str):
            return f"has a symbolic dimension '{dim}' at axis {axis}"
        if dim is None:
            return f"has an unknown dimension at axis {axis}"
        if dim < 0:
            return f"has a negative dimension {dim} at axis {axis}"
    return None


def declared_tensors(view: ModelView) -> list[tuple[str, int | None, str]]:
    """Every tensor the profile requires to be declared: graph inputs, graph outputs, node outputs, as
    (name, producing node or None, how to call it in a message). Listed once for GR2 and GRAPH.shapes."""
    return view.shared("declared_tensors", lambda: list(_declared_tensors(view)))


def _declared_tensors(view: ModelView) -> Iterator[tuple[str, int | None, str]]:
    seen: set[str] = set()
    for name in view.graph_inputs:
        if name not in view.initializers and name not in seen:
            seen.add(name)
            yield name, None, "graph input"
    for index, names in enumerate(view.outputs):
        for name in names:
            if name and name not in seen:
                seen.add(name)
                yield name, index, "output"
    for name in view.graph_outputs:
        if name not in seen:
            seen.add(name)
            yield name, None, "graph output"
