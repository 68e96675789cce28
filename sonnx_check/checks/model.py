"""Model-level rules: the model is valid ONNX (REQ-FO-000), its external data stays in its folder and is
committed with it."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import onnx

from sonnx_check.checker_verdict import CheckerVerdict
from sonnx_check.external_data import external_data_issues, judge, shown
from sonnx_check.findings import Severity
from sonnx_check.git_index import GitTimedOut, data_files_state
from sonnx_check.isolation import Crashed, TimedOut, call_isolated
from sonnx_check.view import ModelView, PhaseTimedOut
from sonnx_check.violation import Violation

# onnx.checker names the node of a schema error in a trailing context line ...
_CONTEXT = re.compile(r"==> Context: Bad node spec for node\. Name: (.*?) OpType: (\S+)")
# ... and strict shape inference joins one "(op_type:X, node name: Y): [Kind] message" per failing node.
_EXTERNAL_DATA_MESSAGES = ("Data of TensorProto", "external TensorProto")
# The key of an external-data entry (onnx.proto: TensorProto.external_data), as it stands in the file's bytes.
_EXTERNAL_LOCATION_KEY = b"location"
_INFERENCE = re.compile(r"\(op_type:(\S+?), node name: (.*?)\): (\[\w+\] .*?)(?=\s*\(op_type:|\Z)", re.S)


def onnx_verdict(model: onnx.ModelProto | bytes | str, timeout: float | None = None) -> CheckerVerdict:
    """onnx's full check of a parsed model, of its serialised bytes, or of the file at a path, in a child
    process: a crash of onnx's native code on a hostile model is that model's finding, not the run's end,
    and so is a check still running after ``timeout`` seconds (onnx's checker is quadratic on If nodes
    that read outer names: minutes for a 2 MB model)."""
    # onnx builds its operator-schema registry on first use (about 9 ms); built here, the forked child
    # inherits it instead of building its own, and the rule checks need it next anyway.
    onnx.defs.has("Abs")
    result = call_isolated(lambda: json.dumps(_checked(model)), timeout=timeout)
    if isinstance(result, Crashed):
        return CheckerVerdict("crashed", result.cause)
    if isinstance(result, TimedOut):
        return CheckerVerdict("timeout", f"{result.seconds:g}")
    kind, message = json.loads(result)
    return CheckerVerdict(kind, message)


def _checked(model: onnx.ModelProto | bytes | str) -> tuple[str | None, str]:
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as exc:
        return "validation", str(exc)
    except onnx.shape_inference.InferenceError as exc:
        return "inference", str(exc)
    except (ValueError, RuntimeError) as exc:
        return "unchecked", str(exc)
    return None, ""


def verdict_before_parse(skeleton: bytes, timeout: float | None = None) -> CheckerVerdict | None:
    """onnx's verdict on the bytes the static check is about to parse (see ModelFile.skeleton_bytes), so
    that its C++ model and the Python parse never hold memory at once; None when the verdict must wait for
    the parse: external-data locations resolve against the model's folder only in the path form, and bytes
    that never mention the key of an external-data location hold no location to resolve."""
    if _EXTERNAL_LOCATION_KEY in skeleton:
        return None
    with in_memory_file(skeleton) as path:
        # onnx checks a file in place but copies a model given as bytes before inferring its shapes: at 100k
        # nodes the copy is 40 % of the check's time and 220 MB.
        if path is not None:
            verdict = onnx_verdict(path, timeout)
            if path not in verdict.message:
                return verdict
    # no in-memory files here, or a message that names one instead of the model
    return onnx_verdict(skeleton, timeout)


@contextmanager
def in_memory_file(data: bytes) -> Iterator[str | None]:
    """A path that reads as ``data``, held in memory only (never on disk, gone when the block ends), or None
    where the system has no such files (anything but Linux with /proc)."""
    try:
        fd = os.memfd_create("sonnx-check-skeleton", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        yield None
        return
    try:
        path: str | None = f"/proc/self/fd/{fd}"
        try:
            with open(fd, "wb", closefd=False) as handle:
                handle.write(data)
        except OSError:  # no room for the bytes (a memory limit): onnx reads them from memory instead
            path = None
        yield path if path is not None and os.path.isfile(path) else None
    finally:
        os.close(fd)


def valid_onnx(view: ModelView) -> Iterator[Violation]:
    verdict = view.checker_verdict
    if verdict is None:
        # The full check infers shapes strictly inside onnx's C++ code, with no copy of the model (the
        # Python infer_shapes round trip serialises every weight twice). The view infers again, leniently,
        # only if a rule asks for a tensor the model does not declare: never for a fully declared model.
        # The proto form keeps weights unread: they are not loaded for static checks. The path form
        # resolves external-data locations against the model's folder (and only stats them, never opens
        # them); the proto form would resolve them against the working directory.
        started = time.monotonic()
        verdict = onnx_verdict(view.path if view.external_tensors else view.model, view.time_limit)
        if view.deadline is not None:  # the checker has a --timeout of its own, not taken from the rules'
            view.deadline += time.monotonic() - started
    if verdict.kind is None:
        return
    if verdict.kind == "validation":
        folder = Path(view.path).parent
        about_external_data = any(m in verdict.message for m in _EXTERNAL_DATA_MESSAGES)
        if about_external_data and external_data_issues(view.model, folder):
            return  # MODEL.external-data reports the location, with the reason
        yield from _violations(view, verdict.message)
    elif verdict.kind == "inference":
        yield from _violations(view, verdict.message)
    elif verdict.kind == "timeout":
        yield Violation(
            f"onnx.checker was stopped at the --timeout of {verdict.message} s, so the model's validity is "
            "not established; the other rules and models were still checked",
            data={"phase": "onnx.checker", "timeout": float(verdict.message)},
        )
    elif verdict.kind == "crashed":
        yield Violation(
            f"onnx.checker crashed on this model ({verdict.message}), so its validity is not established; "
            "the other rules and models were still checked"
        )
    elif not (view.external_tensors and external_data_issues(view.model, Path(view.path).parent)):
        # onnx cannot read a model whose external-data entries are not text: MODEL.external-data says why
        yield Violation(f"onnx.checker could not check the model: {_one_line(verdict.message)}")


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
            f"external data of tensor '{issue.tensor}' at {shown(issue.location)} {issue.problem}",
            tensor=issue.tensor,
            actual=issue.location,
        )


def external_data_committed(view: ModelView) -> Iterator[Violation]:
    if not view.external_tensors:
        return
    folder = Path(view.path).parent
    segments = judge(view.external_tensors, folder)[1]  # MODEL.external-data reports the others
    files = sorted({segment.path for segment in segments})
    try:
        state = data_files_state(view.path, files, view.deadline) if files else None
    except GitTimedOut as exc:
        if exc.git is not None:
            raise PhaseTimedOut(f"asking git ({exc.git}) what its index holds") from None
        raise PhaseTimedOut(
            f"hashing {shown(os.path.basename(exc.path))} to compare it with git's index"
        ) from None
    if state is None:
        return  # not in git, or the model itself is not tracked: nothing is being committed
    if state.unjudged is not None:
        yield Violation(
            f"not judged: {state.unjudged}; whether the commit holds the model's weights is unknown "
            "(docs/untrusted.md)",
            severity=Severity.WARNING,
            data={"unjudged": state.unjudged},
        )
        return
    base = os.path.realpath(folder)
    for path in files:
        name = os.path.relpath(path, base)
        staged = shown(os.path.join(os.path.dirname(view.path), name))  # as the model was named
        if path in state.untracked:
            yield Violation(
                f"external data file {shown(name)} is not in git's index: the commit would hold the model "
                f"without its weights (git add -- {staged})",
                actual=name,
            )
        elif path in state.modified:
            yield Violation(
                f"external data file {shown(name)} has changes that are not staged: the commit would hold "
                f"other weights than the ones checked (git add -- {staged})",
                actual=name,
            )
