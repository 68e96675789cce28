"""GRAPH.function: a model-local function is not a SONNX profile operator, least of all one that shadows one.

ONNX lets a model define functions (ModelProto.functions) that its nodes call like operators. A function
in the default domain named like a standard operator is ambiguous: onnxruntime runs its built-in operator,
onnx's inliner expands the function's body. A default-domain function ``Relu`` whose body is ``Neg`` reads as
a profile Relu to every rule that looks at the main graph, so each function is a finding of its own, named,
with its body's operators; its external data is judged by MODEL.external-data like the main graph's.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from sonnx_check.external_data import text
from sonnx_check.view import ModelView, normalise_domain, resolve_schema
from sonnx_check.violation import Violation

_BODY_SHOWN = 8  # operators of a body named in the message; the data lists them all


def local_functions(view: ModelView) -> Iterator[Violation]:
    functions = view.model.functions
    if not functions:
        return
    callers: dict[tuple[str, str], list[int]] = {}
    for index, key in enumerate(zip(view.domains, view.op_types, strict=True)):
        callers.setdefault(key, []).append(index)  # bytes never match a function
    for function in functions:
        yield _finding(view, function, callers)


def _finding(
    view: ModelView, function: onnx.FunctionProto, callers: dict[tuple[str, str], list[int]]
) -> Violation:
    name, domain = text(function.name), normalise_domain(text(function.domain))
    label = f"{domain}::{name}" if domain else name
    body = [_operator(node) for node in function.node]
    more = f" and {len(body) - _BODY_SHOWN} more" if len(body) > _BODY_SHOWN else ""
    shown = ", ".join(body[:_BODY_SHOWN]) + more
    called = callers.get((domain, name), [])
    shadowed = _shadowed(view, name, domain)
    if shadowed:
        message = (
            f"the model defines a local function '{label}' that shadows the standard operator {name} "
            f"(body: {shown or 'empty'}): onnxruntime runs the built-in {name}, onnx's inliner the "
            "function's body, so the nodes that call it do not compute one defined function"
        )
    else:
        message = (
            f"the model defines a local function '{label}' (body: {shown or 'empty'}): a model-local "
            "function is not an operator of the SONNX profile"
        )
    message += f"; called by {len(called)} node(s) of the main graph" if called else "; not called"
    return Violation(
        message,
        node=called[0] if called else None,
        actual=label,
        data={
            "function": name,
            "domain": domain,
            "body": body,
            "shadows_standard_operator": shadowed,
            "callers": len(called),
        },
    )


def _operator(node: onnx.NodeProto) -> str:
    domain = normalise_domain(text(node.domain))
    return f"{domain}::{text(node.op_type)}" if domain else text(node.op_type)


def _shadowed(view: ModelView, name: str, domain: str) -> bool:
    """Whether an operator schema of the same name and domain exists at the model's opset (or any
    opset, when the model imports none for that domain): then a runtime may ignore the function."""
    version = view.opsets.get(domain) or onnx.defs.onnx_opset_version()
    try:
        return resolve_schema(name, domain, version) is not None or onnx.defs.has(name, domain)
    except Exception:  # noqa: BLE001 - a name onnx cannot look up (NUL bytes) names no operator
        return False
