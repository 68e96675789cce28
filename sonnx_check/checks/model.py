"""Model-level rules: the model is valid ONNX (REQ-FO-000) and its external data stays in its folder."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import onnx

from sonnx_check.loading import external_data_issues
from sonnx_check.view import ModelView
from sonnx_check.violation import Violation

# onnx.checker names the node of a schema error in a trailing context line ...
_CONTEXT = re.compile(r"==> Context: Bad node spec for node\. Name: (.*?) OpType: (\S+)")
# ... and strict shape inference joins one "(op_type:X, node name: Y): [Kind] message" per failing node.
_EXTERNAL_DATA_MESSAGE = "Data of TensorProto"
_INFERENCE = re.compile(r"\(op_type:(\S+?), node name: (.*?)\): (\[\w+\] .*?)(?=\s*\(op_type:|\Z)", re.S)


def valid_onnx(view: ModelView) -> Iterator[Violation]:
    try:
        # The full check infers shapes strictly inside onnx's C++ code, with no copy of the model (the Python
        # infer_shapes round trip serialises every weight twice). The view infers again, leniently, only if a
        # rule asks for a tensor the model does not declare: never for a fully declared model. The proto form
        # keeps weights unread: they are not loaded for static checks.
        if view.external_tensors:
            # The proto form resolves external-data locations against the working directory; the path form
            # resolves them against the model's folder (and only stats them, never opens them).
            onnx.checker.check_model(view.path, full_check=True)
        else:
            onnx.checker.check_model(view.model, full_check=True)
    except onnx.checker.ValidationError as exc:
        if _EXTERNAL_DATA_MESSAGE in str(exc) and external_data_issues(view.model, Path(view.path).parent):
            return  # MODEL.external-data reports the location, with the reason
        yield from _violations(view, str(exc))
    except onnx.shape_inference.InferenceError as exc:
        yield from _violations(view, str(exc))
    except (ValueError, RuntimeError) as exc:
        yield Violation(f"onnx.checker could not check the model: {_one_line(str(exc))}")


def _violations(view: ModelView, text: str) -> Iterator[Violation]:
    inference = list(_INFERENCE.finditer(text))
    if inference:
        for match in inference:
            op_type, name, message = match.groups()
            yield Violation(
                f"onnx.checker (full check): {_one_line(message)}", node=_node_index(view, name, op_type)
            )
        return
    context = _CONTEXT.search(text)
    node = _node_index(view, context.group(1), context.group(2)) if context else None
    headline = text.split("==> Context:")[0]
    yield Violation(f"onnx.checker: {_one_line(headline)}", node=node)


def _node_index(view: ModelView, name: str, op_type: str) -> int | None:
    name = name.strip()
    for i, node in enumerate(view.nodes):
        if node.op_type == op_type and node.name == name:
            return i
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def external_data_inside_folder(view: ModelView) -> Iterator[Violation]:
    if not view.external_tensors:
        return  # most models: no external data to look for
    for issue in external_data_issues(view.model, Path(view.path).parent):
        yield Violation(
            f"external data of tensor '{issue.tensor}' at {issue.location!r} {issue.problem}",
            tensor=issue.tensor,
            actual=issue.location,
        )
